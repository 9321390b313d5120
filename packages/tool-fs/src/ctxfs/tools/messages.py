"""The JSON-RPC messages the MCP servers refuse before the SDK reads them (stdio and HTTP alike).

A message whose id is neither a string nor an integer (the SDK would take it for a notification
and answer nothing), and over HTTP a body that is JSON but no single JSON-RPC message (a batch,
``null``), get ``-32600`` Invalid Request with id null.
"""

from __future__ import annotations

from typing import Final

import pydantic_core
from mcp.types import INVALID_REQUEST, ErrorData, JSONRPCError, jsonrpc_message_adapter
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BAD_ID", "NOT_A_MESSAGE", "OneMessage", "has_bad_id", "request_id"]

BAD_ID: Final = ErrorData(
    code=INVALID_REQUEST, message="Invalid Request: the id must be a string or an integer"
)
NOT_A_MESSAGE: Final = ErrorData(
    code=INVALID_REQUEST, message="Invalid Request: the body is not one JSON-RPC message"
)


NOT_JSON: Final = ErrorData(
    code=INVALID_REQUEST, message="Unsupported Media Type: Content-Type must be application/json"
)


def request_id(value: object) -> str | int | None:
    """*value* (parsed JSON) as a request's id: a string or an integer; else None."""
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def has_bad_id(message: object) -> bool:
    """Whether *message* (parsed JSON) is an object whose id is neither a string nor an integer."""
    return isinstance(message, dict) and "id" in message and request_id(message["id"]) is None


class OneMessage:
    """ASGI middleware: a POST body must be one JSON-RPC message with a usable id.

    A POST whose Content-Type is not JSON is refused at once (HTTP 415, as the SDK would,
    before it holds a session's place); a body longer than *max_body_bytes*, or one that
    does not parse, goes on to *app*, which answers it.
    """

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a POST that is not JSON (415), or no one JSON-RPC message (400); pass the rest."""
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        content_type = Headers(scope=scope).get("content-type", "")
        if "application/json" not in (
            part.strip() for part in content_type.split(";")[0].split(",")
        ):
            await _answer(NOT_JSON, 415)(scope, receive, send)  # (as the SDK splits the header)
            return
        received: list[Message] = []
        size, more = 0, True
        while more and size <= self.max_body_bytes:
            message = await receive()
            received.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            more = message.get("more_body", False)
        if received[-1]["type"] == "http.disconnect":
            return  # the client left before its body ended: no one to answer
        if not more and size <= self.max_body_bytes:
            refusal = _refusal(b"".join(m.get("body", b"") for m in received))
            if refusal is not None:
                await _answer(refusal, 400)(scope, receive, send)
                return

        async def replayed() -> Message:
            return received.pop(0) if received else await receive()

        await self.app(scope, replayed, send)


def _answer(error: ErrorData, status: int) -> Response:
    """The HTTP answer refusing a request with JSON-RPC *error* (id null)."""
    body = JSONRPCError(jsonrpc="2.0", id=None, error=error)
    json = body.model_dump_json(by_alias=True, exclude_unset=True)
    return Response(json, status, media_type="application/json")


def _refusal(body: bytes) -> ErrorData | None:
    try:
        message = pydantic_core.from_json(body)
    except ValueError:
        return None  # (the SDK's parse error)
    if has_bad_id(message):
        return BAD_ID
    try:
        jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError:
        return NOT_A_MESSAGE
    return None
