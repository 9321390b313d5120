"""MCP over streamable HTTP: who may call, from where, and how many sessions each may hold.

:func:`http_app` is the Starlette app ``ctxfs serve --transport http`` runs: bearer :class:`Tokens`,
each naming its principal (whom :class:`~ctxfs.tools.mcpserver.McpTools` makes the owner of the
request's observations); allowed Host and Origin headers, checked on every bind address (DNS
rebinding); and :class:`~ctxfs.tools.httpsessions.SessionLimits` around the SDK's session
manager. Tokens never reach a log.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import os
import re
import secrets
import stat
from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mcp.server import Server
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    BearerAuthBackend,
    RequireAuthMiddleware,
)
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route
from starlette.types import ASGIApp

from ctxfs.tools.httpsessions import SessionEnded, SessionLimits
from ctxfs.tools.messages import OneMessage

__all__ = [
    "HttpOptions",
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
            text = Path(path).read_text(encoding="utf-8-sig")  # (an editor's BOM: not a name)
            mode = os.stat(path).st_mode
        except (OSError, UnicodeDecodeError) as error:
            raise TokenFileError(f"cannot read the token file {path}: {error}") from None
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning("the token file %s can be read by other users (chmod 600 it)", path)
        pairs: list[tuple[str, str]] = []
        seen: dict[str, int] = {}
        for number, line in enumerate(text.split("\n"), start=1):  # (only \n ends a line)
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
