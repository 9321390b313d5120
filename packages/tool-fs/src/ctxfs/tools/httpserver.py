"""MCP over streamable HTTP: who may call, from where, and how many sessions each may hold.

:func:`http_app` is the Starlette app ``ctxfs serve --transport http`` runs: bearer :class:`Tokens`,
each naming its principal (whom :class:`~ctxfs.tools.mcpserver.McpTools` makes the owner of the
request's observations); allowed Host and Origin headers, checked on every bind address (DNS
rebinding); and :class:`SessionLimits` around the SDK's session manager. Tokens never reach a log.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import math
import os
import re
import secrets
import stat
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.abc
from mcp.server import Server
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    BearerAuthBackend,
    RequireAuthMiddleware,
    authorization_context,
)
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.types import INTERNAL_ERROR, ErrorData, JSONRPCError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ctxfs.tools.messages import OneMessage

__all__ = [
    "HttpOptions",
    "SessionLimits",
    "TokenFileError",
    "Tokens",
    "allowed_origins_and_hosts",
    "http_app",
    "is_loopback",
    "principal_of",
]

log = logging.getLogger("ctxfs.http")

PRINCIPAL: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""A principal's name: letters, digits, ``.``, ``_``, ``-`` (so owners built on it never clash)."""
TOKEN: Final = re.compile(r"[\x21-\x7e]{16,}")
"""A token: 16 or more visible ASCII characters."""
LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")

SessionEnded = Callable[[str], Awaitable[None]]
"""Told the ID of each session that ended (:meth:`ctxfs.tools.mcpserver.McpTools.session_ended`);
it runs in the background, and the server's shutdown waits for it."""


class TokenFileError(ValueError):
    """A token file that cannot be used; the message names the line, never a token."""


class Tokens:
    """Bearer tokens, each naming the principal it authenticates.

    Implements the ``mcp`` SDK's ``TokenVerifier``: a token is compared with every configured one in
    constant time (as SHA-256 digests, so lengths leak nothing either). A principal may have several
    tokens (rotation); a token names one principal.

    Raises:
        TokenFileError: A principal's name or a token is malformed, or a token repeats.

    """

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        digests: list[tuple[str, bytes]] = []
        for principal, token in pairs:
            _check_pair(principal, token, where="")
            digests.append((principal, _digest(token)))
        if not digests:
            raise TokenFileError("no tokens")
        if len({digest for _, digest in digests}) != len(digests):
            raise TokenFileError("a token is given twice")
        self._digests = tuple(digests)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Tokens:
        """The tokens of a file: one ``principal token`` pair per line; ``#`` starts a comment line.

        Raises:
            TokenFileError: The file cannot be read, or a line is malformed.

        """
        try:
            text = Path(path).read_text(encoding="utf-8")
            mode = os.stat(path).st_mode
        except (OSError, UnicodeDecodeError) as error:
            raise TokenFileError(f"cannot read the token file {path}: {error}") from None
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning("the token file %s can be read by other users (chmod 600 it)", path)
        pairs: list[tuple[str, str]] = []
        seen: dict[str, int] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            where = f"{path}, line {number}: "
            if len(fields) != 2:  # principal and token
                raise TokenFileError(f"{where}expected `principal token`, got {len(fields)} fields")
            _check_pair(*fields, where=where)
            if fields[1] in seen:
                raise TokenFileError(f"{where}the token of line {seen[fields[1]]} again")
            seen[fields[1]] = number
            pairs.append((fields[0], fields[1]))
        if not pairs:
            raise TokenFileError(f"the token file {path} holds no `principal token` line")
        return cls(pairs)

    @classmethod
    def generate(cls, principal: str) -> tuple[Tokens, str]:
        """A fresh random token for *principal*, and the tokens holding it alone."""
        token = secrets.token_urlsafe(32)
        return cls([(principal, token)]), token

    @property
    def principals(self) -> list[str]:
        """The principals, each once, in the order given."""
        return list(dict.fromkeys(principal for principal, _ in self._digests))

    async def verify_token(self, token: str) -> AccessToken | None:
        """The principal's access token if *token* is one of ours, else None."""
        digest = _digest(token)
        found = None
        for principal, expected in self._digests:  # no early exit: every check costs the same
            if hmac.compare_digest(digest, expected):
                found = principal
        return None if found is None else AccessToken(token=token, client_id=found, scopes=[])

    def __repr__(self) -> str:
        return f"Tokens(principals={self.principals!r})"


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


def _check_pair(principal: str, token: str, *, where: str) -> None:
    # (neither field is shown: swapped, the principal's would be the token)
    if not PRINCIPAL.fullmatch(principal):
        raise TokenFileError(
            f"{where}the principal is no name of letters, digits, '.', '_' and '-' (at most 64)"
        )
    if not TOKEN.fullmatch(token):
        raise TokenFileError(f"{where}the token is not 16 or more visible ASCII characters")


def principal_of(http_request: object) -> str | None:
    """The principal a request's bearer token named, or None (no authentication)."""
    scope = getattr(http_request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    return user.access_token.client_id if isinstance(user, AuthenticatedUser) else None


# -- where requests may come from ------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """Whether binding *host* keeps the server on this machine."""
    address = _address(host)
    return host == "localhost" or (address is not None and address.is_loopback)


def allowed_origins_and_hosts(
    host: str, *, hosts: Iterable[str] = (), origins: Iterable[str] = ()
) -> TransportSecuritySettings:
    """The Host and Origin values accepted on bind address *host*.

    Always the loopback names (any port) and the bind address itself (unless it is a wildcard such
    as ``0.0.0.0``), plus *hosts*; origins are ``http://`` and ``https://`` on each accepted host,
    plus *origins*. A ``:*`` suffix means any port. Requests without an Origin header (programs, not
    browsers) pass the Origin check.
    """
    names = list(LOOPBACK_NAMES)
    bound = f"[{host}]" if ":" in host and not host.startswith("[") else host
    address = _address(host)
    if bound not in names and not (address is not None and address.is_unspecified):
        names.append(bound)
    accepted = [*(f"{name}:*" for name in names), *names, *hosts]
    plain = [name.removesuffix(":*") for name in accepted]
    allowed = [f"{scheme}://{name}:*" for name in plain for scheme in ("http", "https")]
    allowed += [f"{scheme}://{name}" for name in plain for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(dict.fromkeys(accepted)),
        allowed_origins=list(dict.fromkeys([*allowed, *origins])),
    )


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """*host* as an IP address (``[::1]`` too), or None for a name."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


# -- sessions --------------------------------------------------------------------------------------


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


class _ShortSessionIds(logging.Filter):
    """Shows a session ID in the SDK's log by its first 8 characters, as ctxfs's own log does."""

    def filter(self, record: logging.LogRecord) -> bool:
        shown = _SESSION_ID.sub(lambda found: found[0][:8] + "…", record.getMessage())
        record.msg, record.args = shown, ()
        return True


_SESSION_ID: Final = re.compile(r"\b[0-9a-f]{32}\b")
_SDK_LOGGERS: Final = ("mcp.server.streamable_http_manager", "mcp.server.streamable_http")


# -- the app ---------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class HttpOptions:
    """How ``ctxfs serve --transport http`` listens."""

    host: str = "127.0.0.1"
    tokens: Tokens | None = None
    """Who may call (None: anyone who reaches the port; loopback only)."""
    allowed_hosts: tuple[str, ...] = ()
    """Host header values accepted besides the loopback names and the bind address."""
    allowed_origins: tuple[str, ...] = ()
    """Origin header values accepted besides those of the accepted hosts."""
    max_sessions: int = 1000
    """Handshake-era sessions in all (about 60 KB each while open)."""
    sessions_per_principal: int = 100
    session_idle_seconds: float = 1800.0
    """A session with no request in flight this long is ended (and its observations go)."""
    max_body_bytes: int = 4 << 20
    json_responses: bool = True
    """Answer each POST with one JSON body, the cheaper way; a call's progress then cannot
    reach the client (False: an event stream per POST, as the SDK does by default)."""
    stateless: bool = False
    """Keep no session: every request stands alone, whatever its protocol (for several
    workers behind one port, where a session's requests could reach another worker)."""


def http_app(
    server: Server[Any], options: HttpOptions, *, on_session_end: SessionEnded | None = None
) -> Starlette:
    """The Starlette app serving *server* at ``/mcp`` under *options*.

    *on_session_end* hears the ID of each handshake-era session that ends.

    Raises:
        ValueError: *options* bind a non-loopback address without tokens.

    """
    if options.tokens is None and not is_loopback(options.host):
        raise ValueError(f"serving {options.host} (not loopback) needs tokens")
    manager = StreamableHTTPSessionManager(
        server,
        json_response=options.json_responses,
        stateless=options.stateless,
        security_settings=allowed_origins_and_hosts(
            options.host, hosts=options.allowed_hosts, origins=options.allowed_origins
        ),
        max_request_body_size=options.max_body_bytes,
        session_idle_timeout=None,  # SessionLimits ends idle sessions, and knows it did
        max_sessions=None,
    )
    for name in _SDK_LOGGERS:
        sdk_log = logging.getLogger(name)
        if not any(isinstance(known, _ShortSessionIds) for known in sdk_log.filters):
            sdk_log.addFilter(_ShortSessionIds())
    endpoint: ASGIApp = StreamableHTTPASGIApp(manager)
    sessions = None
    if not options.stateless:
        endpoint = sessions = SessionLimits(
            endpoint,
            per_principal=options.sessions_per_principal,
            max_sessions=options.max_sessions,
            idle_seconds=options.session_idle_seconds,
            on_session_end=on_session_end,
        )
    endpoint = OneMessage(endpoint, max_body_bytes=options.max_body_bytes)
    middleware: list[Middleware] = []
    if options.tokens is not None:
        endpoint = RequireAuthMiddleware(endpoint, required_scopes=[])
        middleware = [
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(options.tokens)),
            Middleware(AuthContextMiddleware),
        ]

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as running:
            await running.enter_async_context(manager.run())
            if sessions is not None:
                await running.enter_async_context(sessions.run())
            yield

    return Starlette(
        routes=[Route("/mcp", endpoint=endpoint)], middleware=middleware, lifespan=lifespan
    )
