"""``tools/call`` answered straight from the wire, with the ``mcp`` SDK's semantics.

Per request, the SDK's server spawns a task in its dispatcher, builds a request
context and a session object, runs its middleware chain, validates the params
twice and the result twice: on a small machine that is more than ctxfs's own
work for a read. :class:`DirectCalls` answers the calls of one handshake-era
stdio connection (:func:`ctxfs.tools.stdio.serve_stdio`) itself, and keeps
what a client relies on:

- only after the SDK has answered ``initialize`` (its gate, its negotiation:
  the protocol version comes from its answer), and only a call the SDK's own
  validators accept for that version, without a task or input responses;
  anything else goes to the SDK, which answers it, errors included;
- the result is shaped by the SDK's per-version serializer;
- each call runs in a task of its own, so calls overlap as in the SDK;
  ``notifications/cancelled`` interrupts it, and a cancelled call is never
  answered; a progress token gets ``notifications/progress``;
- a call still running when the input ends (after the wait for answers the
  stdio transport grants) is answered ``Connection closed``, as by the SDK;
- while OpenTelemetry tracing is configured, or the server has middleware of
  its own, every call goes to the SDK, whose middleware records it.

Everything else (listing, ping, notifications, the modern era) is the SDK's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import anyio.abc
from mcp.server import Server
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.shared.message import SessionMessage
from mcp.types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    CallToolRequestParams,
    CallToolResult,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)
from mcp_types import methods
from opentelemetry import trace
from pydantic import ValidationError

from ctxfs.tools.tool import Progress

__all__ = ["DirectCalls", "ToolCall"]

log = logging.getLogger(__name__)

ToolCall = Callable[[CallToolRequestParams, Progress | None], Awaitable[CallToolResult]]
"""Answers one ``tools/call``: its params, and where to report progress (None: not asked)."""

_TOOLS_CALL: Final = "tools/call"
_CLOSED_WRITE_SECONDS: Final = 2.0
"""How long the ``Connection closed`` answer of a call cut short by the end may take."""


@dataclass
class _Running:
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    cancelled_by_peer: bool = False


class DirectCalls:
    """The ``tools/call`` requests of one connection, answered by *answer*.

    Args:
        answer: Runs a call (:meth:`ctxfs.tools.mcpserver.McpTools.call_direct`).
        send: Writes a message to the client.
        server: The SDK server that answers everything else (its middleware is checked).
        calls: The task group the calls run in, open while the connection is.

    """

    def __init__(
        self,
        answer: ToolCall,
        send: Callable[[SessionMessage], Awaitable[None]],
        server: Server[Any],
        calls: anyio.abc.TaskGroup,
    ) -> None:
        self._answer = answer
        self._send = send
        self._server = server
        self._calls = calls
        self._initialize: RequestId | None = None
        self._version: str | None = None
        self._running: dict[RequestId, _Running] = {}
        self._emptied: anyio.Event | None = None

    def received(self, message: JSONRPCMessage) -> bool:
        """Take *message* if it is a call answered here (True), or leave it to the SDK."""
        if isinstance(message, JSONRPCNotification):
            if message.method == "notifications/cancelled":
                self._cancel((message.params or {}).get("requestId"))
            return False
        if not isinstance(message, JSONRPCRequest):
            return False
        if message.method == "initialize" and self._version is None:
            self._initialize = message.id
            return False
        if message.method != _TOOLS_CALL or self._version is None or not self._direct():
            return False
        params = _valid_call(self._version, message.params)
        if params is None:
            return False  # the SDK answers it as it answers any bad request
        running = self._running[coerce_request_id(message.id)] = _Running()
        self._calls.start_soon(self._run, message, params, running, self._version)
        return True

    def answered(self, message: JSONRPCMessage) -> None:
        """Note an answer going out: the SDK's answer to ``initialize`` opens the direct path."""
        if (
            isinstance(message, JSONRPCResponse)
            and self._initialize is not None
            and message.id == self._initialize
        ):
            version = message.result.get("protocolVersion")
            self._version = version if isinstance(version, str) else None

    async def stop(self) -> None:
        """Cut short the calls still running; each is answered ``Connection closed``."""
        if not self._running:
            return
        self._emptied = anyio.Event()
        for running in self._running.values():
            running.scope.cancel()
        with anyio.move_on_after(_CLOSED_WRITE_SECONDS):
            await self._emptied.wait()

    def _direct(self) -> bool:
        """Whether nothing would observe the SDK's path: no tracing, no middleware of its own."""
        own = any(not isinstance(m, OpenTelemetryMiddleware) for m in self._server.middleware)
        return not own and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)

    def _cancel(self, request_id: object) -> None:
        if not isinstance(request_id, str | int):
            return
        running = self._running.get(coerce_request_id(request_id))
        if running is not None:
            running.cancelled_by_peer = True
            running.scope.cancel()

    async def _run(
        self,
        request: JSONRPCRequest,
        params: CallToolRequestParams,
        running: _Running,
        version: str,
    ) -> None:
        token = progress_token_from_params(request.params)

        async def progress(done: float, total: float | None, message: str) -> None:
            body: dict[str, Any] = {"progressToken": token, "progress": done, "message": message}
            if total is not None:
                body["total"] = total
            note = JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params=body)
            await self._deliver(note)

        reply: JSONRPCMessage | None = None
        try:
            with running.scope:
                result = await self._answer(params, progress if token is not None else None)
                dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
                body = methods.serialize_server_result(_TOOLS_CALL, version, dumped)
                reply = JSONRPCResponse(jsonrpc="2.0", id=request.id, result=body)
            if running.scope.cancelled_caught:
                reply = _closed(request.id)  # cut short by stop() (by the peer: never answered)
        except anyio.get_cancelled_exc_class():
            if not running.cancelled_by_peer:
                with anyio.move_on_after(_CLOSED_WRITE_SECONDS, shield=True):
                    await self._deliver(_closed(request.id))
            raise
        except Exception as bug:
            log.exception("tools/call failed outside the toolset")
            failure = ErrorData(code=INTERNAL_ERROR, message=f"the call failed: {bug!r}")
            reply = JSONRPCError(jsonrpc="2.0", id=request.id, error=failure)
        finally:
            key = coerce_request_id(request.id)
            if self._running.get(key) is running:
                del self._running[key]
            if not self._running and self._emptied is not None:
                self._emptied.set()
        if reply is not None and not running.cancelled_by_peer:
            await self._deliver(reply)

    async def _deliver(self, message: JSONRPCMessage) -> None:
        try:
            await self._send(SessionMessage(message))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("dropped a message for the client: the output is closed")


def _closed(request_id: RequestId) -> JSONRPCError:
    """The answer to a call the end of the connection cut short, as the SDK gives it."""
    closed = ErrorData(code=CONNECTION_CLOSED, message="Connection closed")
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=closed)


def _valid_call(version: str, params: Mapping[str, Any] | None) -> CallToolRequestParams | None:
    """The call's params, if the SDK's validators take them for *version*.

    None also for a call that asks for more than a plain call (a task, input
    responses): the SDK answers those.
    """
    try:
        methods.validate_client_request(_TOOLS_CALL, version, params)
        call = CallToolRequestParams.model_validate(params or {}, by_name=False)
    except (KeyError, ValueError, ValidationError):
        return None
    if call.task is not None or call.input_responses is not None or call.request_state is not None:
        return None
    return call
