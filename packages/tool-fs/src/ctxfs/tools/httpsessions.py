"""Handshake-era MCP sessions over HTTP, bounded: per principal, in all, and by idle time.

:class:`SessionLimits` wraps the SDK's streamable HTTP app in
:func:`~ctxfs.tools.httpserver.http_app`.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import anyio.abc
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.types import INTERNAL_ERROR, ErrorData, JSONRPCError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SessionEnded", "SessionLimits"]

log = logging.getLogger("ctxfs.http")

SessionEnded = Callable[[str], Awaitable[None]]
"""Told the ID of each session that ended (:meth:`ctxfs.tools.mcpserver.McpTools.session_ended`);
it runs in the background, and the server's shutdown waits for it."""


class SessionLimits:
    """ASGI middleware around the SDK's streamable HTTP app: sessions per principal, idle sessions.

    A request without a session ID (of the handshake era) may open a session. When its principal
    holds *per_principal* sessions already, that principal's longest-idle session is ended (or
    the request is refused with 503 if none is idle); when the server holds *max_sessions*, the
    longest-idle session of the principal holding the most is ended. A session is ended only once
    the SDK has opened the new one: a request it refuses ends none. A session with no request in
    flight (an open GET stream counts) for *idle_seconds* is ended. Sessions no principal
    authenticated (``--no-auth``) share one cap. A request of the 2026 protocol stands alone, a
    session ID or not, as the SDK serves it.

    A session is ended as its client would end it: a ``DELETE`` through the SDK's app.
    *on_session_end* hears the ID of every session that ends, however it ends. Enter :meth:`run`
    while the app serves.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        per_principal: int,
        max_sessions: int,
        idle_seconds: float,
        on_session_end: SessionEnded | None = None,
    ) -> None:
        self.app = app
        self.per_principal = per_principal
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self.on_session_end = on_session_end
        self._sessions: dict[str, _Session] = {}
        self._opening: Counter[_Principal] = Counter()
        """Requests that may open a session, by principal: they count against the caps."""
        self._admission = anyio.Lock()
        self._tasks: anyio.abc.TaskGroup | None = None

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """End idle sessions while the block runs; at its end, every session still open ends."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            tasks.start_soon(self._end_when_idle)
            try:
                yield
            finally:
                tasks.cancel_scope.cancel()
                self._tasks = None
                with anyio.CancelScope(shield=True):
                    async with anyio.create_task_group() as ending:
                        for session_id in list(self._sessions):
                            del self._sessions[session_id]
                            ending.start_soon(self._ended, session_id)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request: within its session, opening one, or (2026 protocol) alone."""
        headers = Headers(scope=scope)
        session_id = headers.get(MCP_SESSION_ID_HEADER)
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        principal = _principal(scope)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await self.app(scope, receive, send)  # the 2026 protocol: every request stands alone
        elif session_id is not None:
            await self._in_session(session_id, principal, scope, receive, send)
        else:
            await self._opening_session(principal, scope, receive, send)

    async def _in_session(
        self, session_id: str, principal: _Principal, scope: Scope, receive: Receive, send: Send
    ) -> None:
        session = self._sessions.get(session_id)
        if session is None or session.principal != principal:  # the SDK answers 404
            await self.app(scope, receive, send)
            return
        session.in_flight += 1
        try:
            status = await _answered(self.app, scope, receive, send)
        finally:
            session.in_flight -= 1
            session.idle_since = anyio.current_time()
        closed = scope["method"] == "DELETE" and status is not None and status < 400
        if (closed or status == 404) and self._sessions.pop(session_id, None) is not None:
            self._forget(session_id)  # closed by its client, or lost by the SDK

    async def _opening_session(
        self, principal: _Principal, scope: Scope, receive: Receive, send: Send
    ) -> None:
        async with self._admission:
            counted = self._has_room(principal)  # (counted against the caps while it opens)
            if counted:
                self._opening[principal] += 1
        if not counted:
            await _too_many(scope, receive, send)
            return
        opened: _Session | None = None
        refused = False

        async def watched(message: Message) -> None:
            nonlocal counted, opened, refused
            if refused:
                return  # (the body of the answer replaced)
            if message["type"] == "http.response.start" and message["status"] < 400:
                session_id = Headers(raw=message["headers"]).get(MCP_SESSION_ID_HEADER)
                if session_id is not None:  # opened: room is made now, before its client knows
                    async with self._admission:
                        self._opening[principal] -= 1
                        counted = False
                        if await self._make_room(principal):
                            opened = self._sessions[session_id] = _Session(principal, scope)
                        else:
                            refused = True
                    if refused:
                        await self._delete(session_id, scope)
                        self._forget(session_id)
                        await _too_many(scope, receive, send)
                        return
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            if counted:
                self._opening[principal] -= 1
            if opened is not None:
                opened.in_flight -= 1
                opened.idle_since = anyio.current_time()

    def _has_room(self, principal: _Principal) -> bool:
        """Whether a session of *principal* could open, once those opening before it have.

        Each opening past a cap is to end an idle session: there must be one for each.
        """
        held = self._held()
        idle = Counter(s.principal for s in self._sessions.values() if not s.in_flight)
        if held[principal] >= self.per_principal:
            return held[principal] - self.per_principal < idle[principal]
        return held.total() - self.max_sessions < idle.total()

    async def _make_room(self, principal: _Principal) -> bool:
        """Make room for a session of *principal*, ending an idle one; False if none is idle."""
        held = self._held()
        if held[principal] >= self.per_principal:
            return await self._end_idle(principal)  # the total shrinks with it
        if held.total() < self.max_sessions:
            return True
        for busiest, _ in held.most_common():
            if await self._end_idle(busiest):
                return True
        return False

    def _held(self) -> Counter[_Principal]:
        """Sessions open and opening, by principal."""
        held = Counter(session.principal for session in self._sessions.values())
        held.update(self._opening)
        return held

    def _idle(self, principal: _Principal) -> str | None:
        """The ID of *principal*'s longest-idle session (None: none is idle)."""
        idle = [
            (session.idle_since, session_id)
            for session_id, session in self._sessions.items()
            if session.principal == principal and not session.in_flight
        ]
        return min(idle)[1] if idle else None

    async def _end_idle(self, principal: _Principal) -> bool:
        """End the longest-idle session of *principal*; False if none is idle."""
        session_id = self._idle(principal)
        if session_id is None:
            return False
        log.info("ending idle session %s to make room", session_id[:8])
        await self._end(session_id)
        return True

    async def _end_when_idle(self) -> None:
        while True:
            now = anyio.current_time()
            wake = now + self.idle_seconds
            for session_id, session in list(self._sessions.items()):
                if session.in_flight:
                    continue
                expires = session.idle_since + self.idle_seconds
                if expires <= now:
                    log.info("session %s idle timeout", session_id[:8])
                    await self._end(session_id)
                else:
                    wake = min(wake, expires)
            await anyio.sleep_until(wake)

    async def _end(self, session_id: str) -> None:
        """End session *session_id* as its client would (a ``DELETE``), then forget it."""
        session = self._sessions.pop(session_id, None)
        if session is not None:
            await self._delete(session_id, session.scope)
            self._forget(session_id)

    async def _delete(self, session_id: str, opening: Scope) -> None:
        """A ``DELETE`` of *session_id* through the SDK's app, made from the *opening* request."""
        headers = [(name, value) for name, value in opening["headers"] if name == b"host"]
        scope = {
            **opening,
            "method": "DELETE",
            "headers": [*headers, (MCP_SESSION_ID_HEADER.encode(), session_id.encode())],
            "query_string": b"",
        }
        await _answered(self.app, scope, _no_body, _discard)

    def _forget(self, session_id: str) -> None:
        """Have :meth:`_ended` run for *session_id*, in the background."""
        if self._tasks is not None:
            self._tasks.start_soon(self._ended, session_id)

    async def _ended(self, session_id: str) -> None:
        if self.on_session_end is not None:
            await self.on_session_end(session_id)


_Principal = tuple[str, str | None, str | None] | None
"""Who opened a session (the SDK's authorization context), None without authentication."""


@dataclass(eq=False)
class _Session:
    principal: _Principal
    scope: Scope
    """The request that opened it: what its ``DELETE`` is made from."""
    in_flight: int = 1
    idle_since: float = math.inf


def _principal(scope: Scope) -> _Principal:
    user = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        return None
    context = authorization_context(user)
    return context["client_id"], context["issuer"], context["subject"]


async def _answered(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> int | None:
    """Run *app* for one request; the HTTP status it answered with (None if it sent none)."""
    status: int | None = None

    async def watched(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        await send(message)

    await app(scope, receive, watched)
    return status


async def _no_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _discard(message: Message) -> None:
    del message


async def _too_many(scope: Scope, receive: Receive, send: Send) -> None:
    log.warning("refusing a session: no room, and no idle session to end")
    error = ErrorData(code=INTERNAL_ERROR, message="Too many open sessions")
    body = JSONRPCError(jsonrpc="2.0", id=None, error=error)
    json = body.model_dump_json(by_alias=True, exclude_unset=True)
    await Response(json, status_code=503, media_type="application/json")(scope, receive, send)
