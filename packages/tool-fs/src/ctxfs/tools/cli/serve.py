"""``ctxfs serve``: the tools as an MCP server, over stdio or streamable HTTP.

``serve --transport http`` binds its port before it says where it serves.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import os
import re
import socket
import sys
from contextlib import AsyncExitStack
from functools import partial
from typing import TYPE_CHECKING, Final

import anyio

from ctxfs.tools.cli.opening import (
    UsageError,
    location,
    opened,
    server_owner,
    store_of,
    toolset_of,
)

if TYPE_CHECKING:
    from ctxfs.tools.httpserver import HttpOptions, Tokens

__all__ = ["MCP_BEFORE", "MCP_NEEDED", "check_mcp", "serve", "serve_in_workers"]

MCP_NEEDED: Final = (2, 3)
"""The oldest ``mcp`` release ``serve`` runs on (as the ``cli`` and ``mcp`` extras require)."""


MCP_BEFORE: Final = (3,)
"""The first ``mcp`` release ``serve`` may not run on: it uses the SDK's public API alone,
which the SDK keeps within a major release (SemVer; ``tests/tools/test_sdk_public_api.py``)."""


_INSTALL: Final = "pip install 'ctxfs-tools[cli]'"
_GRACE_SECONDS: Final = 10
"""How long a stopping HTTP server lets the requests in flight finish before it cancels them."""

log = logging.getLogger("ctxfs")


async def serve(args: argparse.Namespace) -> int:
    """Serve over stdio, or HTTP on a port bound before the store opens."""
    check_mcp()
    from ctxfs.tools.mcpserver import McpTools, create_server  # noqa: PLC0415

    if args.transport == "http":
        options, generated = _http_options(args)  # refused before anything opens
        with _bound(args.host, args.port, listen=True, shared=False) as listening:
            return await _serve_http(args, options, listening, announce=True, generated=generated)
    from ctxfs.tools.stdio import serve_stdio  # noqa: PLC0415

    toolset = toolset_of(args)
    named = args.root is not None or args.url is not None
    fs = store_of(args, location(args), kept=True) if named else None
    owner = args.owner or server_owner()
    tools = McpTools(fs, toolset, owner=owner, workspace=args.workspace, per_session=False)
    server = create_server(tools)
    async with AsyncExitStack() as serving:
        if fs is None:  # the client's roots name it
            from ctxfs.tools.roots import ClientRoots  # noqa: PLC0415

            opener = partial(store_of, args, kept=True)
            await serving.enter_async_context(ClientRoots(server, tools, opener))
            log.info("serving the client's first MCP root over stdio")
        else:
            await serving.enter_async_context(fs)
            log.info("serving %r over stdio", fs.backend)
        await serve_stdio(server, max_message_bytes=args.max_message_bytes)
    return 0


async def _serve_http(
    args: argparse.Namespace,
    options: HttpOptions,
    listening: socket.socket,
    *,
    announce: bool = False,
    generated: str | None = None,
) -> int:
    """Serve HTTP on the *listening* socket; *announce* it on stderr once the store is open.

    *generated* is the token made for this run, if one was.
    """
    import uvicorn  # noqa: PLC0415

    from ctxfs.tools.httpserver import http_app  # noqa: PLC0415
    from ctxfs.tools.mcpserver import McpTools, create_server  # noqa: PLC0415

    fs, toolset = opened(args)
    async with fs:
        per_session = not options.stateless  # stateless: every request is its principal's
        tools = McpTools(
            fs, toolset, owner=args.owner, workspace=args.workspace, per_session=per_session
        )
        app = http_app(create_server(tools), options, on_session_end=tools.session_ended)
        config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=_GRACE_SECONDS)
        if announce:
            _announce(args, options, generated, repr(fs.backend), _port_of(listening))
        await uvicorn.Server(config).serve(sockets=[listening])
    return 0


def serve_in_workers(args: argparse.Namespace) -> int:
    """``serve --transport http --workers N``: one port, N processes, stateless, shared store.

    A port anything holds is refused, workers of a killed server too (binding with ``SO_REUSEPORT``
    would share it with them). Without ``--observations`` (or ``--sessions``), the workers share a
    SQLite file in a :class:`~ctxfs.tools.workers.RunDirectory` (on tmpfs where there is one).
    """
    from ctxfs.core import shown_url, sqlite_url  # noqa: PLC0415
    from ctxfs.tools.workers import RunDirectory, serve_forked  # noqa: PLC0415

    if args.transport != "http":
        raise UsageError("--workers is for --transport http (stdio has one client)")
    for option in ("url", "observations", "sessions"):
        if (getattr(args, option) or "").partition(":")[0].lower() in ("memory", "fsspec+memory"):
            share = "a store" if option == "url" else "one (sqlite:///PATH, redis://HOST), or none"
            raise UsageError(
                f"--{option} memory:// is each worker's own, and a client's calls reach any "
                f"worker: name {share} the workers share"
            )
    check_mcp()
    options, generated = _http_options(args, stateless=True)
    with _bound(args.host, args.port, listen=False, shared=False) as alone:  # no one holds it
        port = _port_of(alone)
    with _bound(args.host, port, listen=False, shared=True):  # ours while workers come and go
        run = None
        if args.observations is None or args.sessions is None:
            shm = "/dev/shm"  # the run's stores need not outlive it: in memory where they can be
            run = RunDirectory.make(shm if os.path.isdir(shm) else None)
            if args.observations is None:
                args.observations = sqlite_url(run.path / "observations.db")
            if args.sessions is None:
                args.sessions = sqlite_url(run.path / "sessions.db")
        try:
            opened = anyio.run(_described, args)  # the store opens (or fails) once, before forks
            observations = shown_url(args.observations)
            where = f"{opened} in {args.workers} workers, observations in {observations}"
            _announce(args, options, generated, where, port)

            def work() -> int:
                listening = _bound(args.host, port, listen=True, shared=True)
                return int(anyio.run(partial(_serve_http, args, options, listening)))

            return serve_forked(args.workers, work, shared=run)
        finally:
            if run is not None:
                run.leave()


def check_mcp() -> None:
    """Refuse to serve without the MCP SDK this server is written for, saying which is there."""
    try:
        found = importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        found = None
    if found is None or not MCP_NEEDED <= _release(found) < MCP_BEFORE:
        have = "it is not installed" if found is None else f"found mcp {found}"
        needed, before = (".".join(map(str, release)) for release in (MCP_NEEDED, MCP_BEFORE))
        raise UsageError(
            f"serve needs the MCP SDK, mcp {needed} or newer, before {before} ({have}): {_INSTALL}"
        )


def _release(version: str) -> tuple[int, ...]:
    """The leading numbers of *version* (``2.3.1rc1`` is ``(2, 3, 1)``)."""
    leading = re.match(r"\d+(\.\d+)*", version)
    return tuple(map(int, leading.group().split("."))) if leading else ()


def _bound(host: str, port: int, *, listen: bool, shared: bool) -> socket.socket:
    """A TCP socket bound to *host*:*port*, listening if *listen*; ``SO_REUSEPORT`` if *shared*.

    Each worker listens on a socket of its own, so the kernel spreads new connections evenly over
    them; the parent holds one that does not listen, so the port stays taken. Made as TCP
    explicitly: asyncio turns Nagle's algorithm off only on sockets it can tell are TCP.

    Raises:
        UsageError: The port is not one, the host is unknown, or the address is taken.

    """
    where = f"{_bracketed(host)}:{port}"
    if not 0 <= port <= 65535:  # getaddrinfo would take it modulo 65536
        raise UsageError(f"cannot listen on {where}: a port is 0 to 65535")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as error:
        raise UsageError(f"cannot listen on {where}: {error.strerror}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
        if listen:
            sock.listen(2048)
    except OSError as error:
        sock.close()
        raise UsageError(f"cannot listen on {where}: {error.strerror}") from None
    return sock


def _port_of(sock: socket.socket) -> int:
    return int(sock.getsockname()[1])


def _bracketed(host: str) -> str:
    """*host* as a URL names it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


async def _described(args: argparse.Namespace) -> str:
    fs, _ = opened(args)
    async with fs:
        return repr(fs.backend)


def _http_options(
    args: argparse.Namespace, *, stateless: bool = False
) -> tuple[HttpOptions, str | None]:
    """The HTTP options the command line asks for, and the token made for this run if any.

    Refuses what would be unsafe: no tokens off loopback, ``--no-auth`` off loopback; and no store
    named (the client's MCP roots name one over stdio only).
    """
    from ctxfs.tools.httpserver import HttpOptions, TokenFileError, Tokens, is_loopback  # noqa: PLC0415

    if args.root is None and args.url is None:
        raise UsageError(
            "serve --transport http needs --root DIR or --url URL "
            "(a client's MCP roots name the workspace over stdio only)"
        )
    loopback = is_loopback(args.host)
    if args.no_auth:
        if not loopback:
            raise UsageError(f"--no-auth is for loopback only, not --host {args.host}")
        if args.token_file:
            raise UsageError("--no-auth and --token-file contradict each other")
        tokens = generated = None
    else:
        generated = None
        tokens = _configured_tokens(args)
        if tokens is None:
            if not loopback:
                raise UsageError(
                    f"--host {args.host} is not a loopback address: give the tokens clients "
                    "must send (--token-file FILE, or CTXFS_TOKEN)"
                )
            try:
                tokens, generated = Tokens.generate(args.owner)
            except TokenFileError as error:
                raise UsageError(f"--owner: {error}") from None
    limits = {
        "max_sessions": args.max_sessions,
        "sessions_per_principal": args.sessions_per_principal,
        "session_idle_seconds": args.session_idle and float(args.session_idle),
    }
    options = HttpOptions(
        host=args.host,
        tokens=tokens,
        allowed_hosts=tuple(args.allowed_host),
        allowed_origins=tuple(args.allowed_origin),
        max_body_bytes=args.max_message_bytes,
        json_responses=args.http_responses == "json",
        stateless=stateless,
        **{name: value for name, value in limits.items() if value is not None},
    )
    return options, generated


def _configured_tokens(args: argparse.Namespace) -> Tokens | None:
    from ctxfs.tools.httpserver import TokenFileError, Tokens  # noqa: PLC0415

    try:
        if args.token_file:
            return Tokens.read(os.path.expanduser(args.token_file))
        token = os.environ.get("CTXFS_TOKEN")
        if token is not None:
            return Tokens([(args.owner, token.strip())])
    except TokenFileError as error:
        source = "" if args.token_file else "CTXFS_TOKEN: "
        raise UsageError(f"{source}{error}") from None
    return None


def _announce(
    args: argparse.Namespace, options: HttpOptions, generated: str | None, served: str, port: int
) -> None:
    """Say on stderr where the server listens and what a client must send (Jupyter's way)."""
    from ctxfs.tools.httpserver import allowed_origins_and_hosts, is_loopback  # noqa: PLC0415

    where = f"http://{_bracketed(args.host)}:{port}/mcp"
    lines = [f"serving {served} on {where}"]
    if options.tokens is None:
        lines.append(
            "WARNING --no-auth: any process on this machine that can reach the port may read "
            "and write the workspace, with no token"
        )
    elif generated is not None:
        lines.append(f"clients send the header   Authorization: Bearer {generated}")
        lines.append(
            f"(a token made for this run, principal {args.owner!r}; set CTXFS_TOKEN or "
            "--token-file to choose tokens)"
        )
    else:
        lines.append(f"tokens for the principals {', '.join(options.tokens.principals)}")
    if not is_loopback(args.host):
        security = allowed_origins_and_hosts(
            args.host, hosts=options.allowed_hosts, origins=options.allowed_origins
        )
        lines.append(f"accepted Host headers: {' '.join(security.allowed_hosts)}")
        lines.append(f"accepted Origin headers: {' '.join(security.allowed_origins)}")
    for line in lines:
        print(f"ctxfs: {line}", file=sys.stderr, flush=True)
