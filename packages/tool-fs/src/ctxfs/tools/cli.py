"""The ``ctxfs`` command: ``serve`` the tools over MCP, ``call`` one tool, run the ``demo``.

Every failure is one line on stderr and a non-zero exit: 2 for a usage or
configuration error, 1 for a tool call that failed (its code in the line).
Logs go to stderr; on ``serve --transport stdio`` stdout carries MCP only. A
reader that stops early (``ctxfs demo | head -1``) ends the command quietly,
with status 141 as for a program SIGPIPE ends. ``--root`` expands ``~`` and
``$VARIABLES`` (an MCP client's JSON configuration has no shell to do it),
``--url`` and ``--observations`` expand ``$VARIABLES``; each is refused if it
comes out empty (an unset variable must not mean the working directory).
``serve --transport http`` binds its port before it says where it serves.
Each command imports what it needs as it runs: ``--help`` and ``--version`` load
no store, no tool and no MCP SDK, and ``call`` no MCP SDK either.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib
import importlib.metadata
import itertools
import json
import logging
import os
import shlex
import signal
import socket
import sys
import urllib.parse
from collections.abc import Sequence
from contextlib import AsyncExitStack
from functools import partial
from typing import TYPE_CHECKING, Final, NoReturn, TextIO

import anyio

from ctxfs.tools import __version__
from ctxfs.tools.definitions import CommonOptions

if TYPE_CHECKING:
    from ctxfs.core import Backend, Fs
    from ctxfs.tools.httpserver import HttpOptions, Tokens
    from ctxfs.tools.toolset import FsToolset

__all__ = ["MCP_BEFORE", "MCP_NEEDED", "STORE_PACKAGES", "main", "run"]

MCP_NEEDED: Final = (2, 3)
"""The oldest ``mcp`` release ``serve`` runs on (as the ``cli`` and ``mcp`` extras require)."""
MCP_BEFORE: Final = (3,)
"""The first ``mcp`` release ``serve`` may not run on: it uses the SDK's public API alone,
which the SDK keeps within a major release (SemVer; ``tests/tools/test_sdk_public_api.py``)."""
_INSTALL: Final = "pip install 'ctxfs-tools[cli]'"
STORE_PACKAGES: Final = {
    "file": "ctxfs-local",
    "s3": "ctxfs-remote[s3]",
    "gs": "ctxfs-remote[gcs]",
    "gcs": "ctxfs-remote[gcs]",
    "az": "ctxfs-remote[azure]",
    "abfs": "ctxfs-remote[azure]",
    "sftp": "ctxfs-remote[sftp]",
    "fsspec": "ctxfs-remote",
}
"""What to install for each scheme of the ctxfs dists (named when none provides the scheme)."""

log = logging.getLogger("ctxfs")


class UsageError(Exception):
    """A command line that cannot run: said in one line, exit status 2."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ctxfs`` command; return its exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if getattr(args, "transport", None) == "http" and args.owner is None:
        args.owner = "mcp"  # over HTTP each token's principal, or this owner with --no-auth
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="ctxfs: %(levelname)s %(name)s: %(message)s",
    )
    from ctxfs.core import FsError  # noqa: PLC0415 - past --help and --version, which need none

    try:
        status: int = (
            _serve_in_workers(args)
            if getattr(args, "workers", 1) > 1
            else anyio.run(args.run, args)
        )
    except UsageError as error:
        print(f"ctxfs: {error}", file=sys.stderr)
        return 2
    except FsError as error:
        print(f"ctxfs: error [{error.code}]: {error.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_gone()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return _reader_gone()
    return status


def run() -> NoReturn:
    """The ``ctxfs`` program: :func:`main` on its command line, then exit with its status."""
    status = main()
    gc.freeze()  # the exit's last garbage collection need not walk every object of the run
    sys.exit(status)


def _reader_gone() -> int:
    """End quietly once whoever read stdout has stopped (``| head``): status 141."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush has nowhere to fail
    os.close(devnull)
    return 128 + signal.SIGPIPE


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxfs", description="Safe file tools for LLM agents, over local disk or a store."
    )
    parser.add_argument("--version", action="version", version=f"ctxfs {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr in detail")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="serve the tools as an MCP server")
    _store_options(serve, roots=True)
    serve.add_argument(
        "--transport", choices=["stdio", "http"], default="stdio", help="default: stdio"
    )
    serve.add_argument(
        "--tools",
        type=_names,
        metavar="NAMES",
        help="offer only these tools, comma-separated (e.g. read,edit,grep); default: all",
    )
    serve.add_argument(
        "--tool-prefix",
        default="",
        metavar="PREFIX",
        help="put PREFIX before every tool's name (fs_: fs_read), so that a client's other "
        "servers cannot offer the same names",
    )
    serve.add_argument("--host", default="127.0.0.1", help="HTTP address (default: 127.0.0.1)")
    serve.add_argument(
        "--port", type=int, default=8000, help="HTTP port (default: 8000; 0: any free port)"
    )
    serve.add_argument(
        "--max-message-bytes",
        type=_positive,
        default=4 << 20,
        metavar="N",
        help="the longest message a client may send, a line or a body (default: 4 MiB)",
    )
    http = serve.add_argument_group(
        "HTTP",
        "Every request needs a bearer token: from --token-file, else $CTXFS_TOKEN (principal: "
        "--owner), else one generated at start and printed on stderr.",
    )
    http.add_argument(
        "--token-file",
        metavar="FILE",
        help="tokens, one `principal token` line each (# starts a comment line)",
    )
    http.add_argument(
        "--no-auth",
        action="store_true",
        help="take requests without a token (loopback only: any local process may then "
        "read and write the workspace)",
    )
    http.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="accept this Host header too (PORT may be *); loopback names and the bind "
        "address are always accepted",
    )
    http.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="accept this Origin header too (http://HOST:PORT; PORT may be *)",
    )
    http.add_argument(
        "--max-sessions",
        type=_positive,
        metavar="N",
        help="handshake-era sessions in all (default: 1000); "
        "when full, the longest-idle session of the busiest principal ends",
    )
    http.add_argument(
        "--sessions-per-principal",
        type=_positive,
        metavar="N",
        help="sessions one principal may hold (default: 100)",
    )
    http.add_argument(
        "--session-idle",
        type=_positive,
        metavar="SECONDS",
        help="end a session idle this long (default: 1800); its observations go with it",
    )
    http.add_argument(
        "--http-responses",
        choices=["json", "sse"],
        default="json",
        help="answer each POST with one JSON body (json, the default: cheaper; a call's "
        "progress is not sent) or an event stream (sse: progress reaches clients that ask)",
    )
    http.add_argument(
        "--workers",
        type=_positive,
        default=1,
        metavar="N",
        help="worker processes behind the port (default: 1). With more, the server is "
        "stateless: a request's owner is its principal (or the name it gives in _meta), "
        "and the workers share observations through --observations (default: a SQLite "
        "file made for the run)",
    )
    serve.set_defaults(run=_serve)

    call = commands.add_parser("call", help="run one tool call and print its result")
    _store_options(call)
    call.add_argument("tool", help="read, write, edit, list_dir, glob or grep")
    call.add_argument("arguments", help='the arguments as JSON, e.g. \'{"file_path": "a.txt"}\'')
    call.add_argument("--json", action="store_true", help="print the structured result instead")
    call.set_defaults(run=_call, tools=None, tool_prefix="")

    demo = commands.add_parser("demo", help="two scripted agents on a throw-away workspace")
    demo.add_argument("--keep", action="store_true", help="keep the workspace afterwards")
    demo.set_defaults(run=_demo)
    return parser


def _store_options(command: argparse.ArgumentParser, *, roots: bool = False) -> None:
    """The options naming the store and its policies; with *roots*, the store may go unnamed."""
    where = command.add_mutually_exclusive_group(required=not roots)
    root = "a local directory (the workspace root)"
    if roots:
        root += "; with neither this nor --url, stdio serve takes the client's first MCP root"
    where.add_argument("--root", metavar="DIR", help=root)
    where.add_argument("--url", metavar="URL", help="any ctxfs store: s3://bucket/prefix, ...")
    command.add_argument(
        "--read-hard-links",
        action="store_true",
        help="with --root: read and search files that have other names too (a uv-made "
        ".venv); they stay unchangeable (a hard link may share a file with the outside)",
    )
    command.add_argument("--read-only", action="store_true", help="refuse and hide every change")
    command.add_argument(
        "--deny", action="append", default=[], metavar="PATTERN", help="refuse these paths"
    )
    command.add_argument(
        "--plugin", action="append", default=[], metavar="MODULE:NAME", help="add a plugin"
    )
    command.add_argument(
        "--owner",
        help="the owner of the observations (what counts as read); default: for call and "
        "stdio serve, the process that started ctxfs (successive processes of one client "
        "share what they saw, two clients do not; name one where a wrapper such as uvx or "
        "npx starts each), for HTTP serve 'mcp' (then each token's principal)",
    )
    command.add_argument(
        "--observations",
        metavar="URL",
        help="where observations live: sqlite:///PATH (this host's processes; a relative "
        "PATH, or sqlite:////PATH for an absolute one), redis://HOST:PORT/DB (every host), "
        "memory:// (this process only); default: for call and stdio serve, a SQLite file "
        "per root in the user's state directory ($XDG_STATE_HOME/ctxfs), so that a read "
        "licenses the next process's edit; for HTTP serve, this process only",
    )
    command.add_argument("--workspace", help="the workspace name policies see")
    command.add_argument(
        "--progress",
        type=float,
        default=CommonOptions.progress_seconds,
        metavar="SECONDS",
        help="report a search's progress once it runs this long (call: on stderr; serve: to "
        "clients that send a progress token); default: 1",
    )


def _open(args: argparse.Namespace, *, kept: bool = False) -> tuple[Fs, FsToolset]:
    """The store and the toolset the options describe (:func:`_store`, :func:`_toolset`)."""
    toolset = _toolset(args)
    return _store(args, _location(args), kept=kept), toolset


def _toolset(args: argparse.Namespace) -> FsToolset:
    """The toolset the options describe."""
    from ctxfs.tools import FsToolset, ToolsetOptions  # noqa: PLC0415

    try:
        options = ToolsetOptions(
            read_only=args.read_only,
            progress_seconds=args.progress,
            tools=args.tools,
            tool_prefix=args.tool_prefix,
        )
        return FsToolset(options)
    except ValueError as error:  # an unknown tool, a prefix no provider takes
        raise UsageError(str(error)) from None


def _store(args: argparse.Namespace, where: str, *, kept: bool = False) -> Fs:
    """The store at *where* (a directory, or a store's URL) under the options' policies.

    With *kept* (``call``, stdio ``serve``) and no ``--observations``, observations
    live in the root's own SQLite file in the user's state directory: each such
    process is one client's, and its successor must find what it saw.
    """
    from ctxfs.core import Fs, InvalidArgument, open_backend  # noqa: PLC0415

    plugins: list[object] = [_load_plugin(spec) for spec in args.plugin]
    if args.read_only or args.deny:
        from ctxfs.core.policies import PathRules  # noqa: PLC0415

        plugins.append(PathRules(deny=args.deny, read_only=["**"] if args.read_only else []))
    if args.read_hard_links and args.url is not None:
        raise UsageError("--read-hard-links is for a local --root")
    backend_options = {"read_hard_links": True} if args.read_hard_links else {}
    observations = args.observations and os.path.expandvars(args.observations)
    if observations == "":  # not this process alone: --workers would split stale protection
        raise UsageError(f"--observations {args.observations!r} is empty (an unset variable?)")
    try:
        backend = open_backend(where, **backend_options)
    except InvalidArgument as error:
        scheme = error.details.get("scheme")
        if "installed" in error.details and scheme in STORE_PACKAGES:  # no dist provides it
            what = "a directory" if scheme == "file" else f"{where.partition('://')[0]}://"
            package = STORE_PACKAGES[scheme]
            raise UsageError(
                f"opening {what} needs {package.partition('[')[0]}, which is not installed: "
                f"pip install {shlex.quote(package)}"
            ) from error
        raise
    if observations is None and kept:
        observations = _kept_observations(backend, where)
    return Fs(backend, plugins=plugins, observations=observations)


def _client_owner() -> str:
    """The owner ``call`` and stdio ``serve`` work for by default: the process that started them.

    A client that starts a process per call is one owner across them; two
    clients are two. The parent is named by its pid and start time, so a pid
    used again is another owner.
    """
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/stat", "rb") as stat:  # its 22nd field: the start time
            started = stat.read().rpartition(b")")[2].split()[19].decode()
    except (OSError, IndexError):
        started = "0"
    return f"client-{parent}-{started}"


def _kept_observations(backend: Backend, where: str) -> str:
    """The URL of the SQLite store kept for the root of *backend* (opened from *where*).

    One file per root (the directory the kernel resolves, or the store's URL),
    in ``observations/`` of the user's state directory, made private.
    """
    from ctxfs.core import sqlite_url  # noqa: PLC0415
    from ctxfs.local import LocalBackend, default_state_dir  # noqa: PLC0415

    directory = default_state_dir() / "observations"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    root = str(backend.root) if isinstance(backend, LocalBackend) else where
    name = hashlib.sha256(os.fsencode(root)).hexdigest()[:32]
    return sqlite_url(directory / f"{name}.db")


def _location(args: argparse.Namespace) -> str:
    """``--root`` or ``--url``, expanded.

    Raises:
        UsageError: It names nothing, which would open the working directory (as a
            client's configuration whose variable is empty or unset would).

    """
    local = args.root is not None
    given: str = args.root if local else args.url
    where = os.path.expandvars(given)
    if local:
        where = os.path.expanduser(where)
    parts = urllib.parse.urlsplit(where)
    if not where or (parts.scheme.lower() == "file" and not parts.path):
        raise UsageError(
            f"{'--root' if local else '--url'} {given!r} is empty (an unset variable?): "
            "give the directory or store to open"
        )
    return where


def _load_plugin(spec: str) -> object:
    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, attribute) if attribute else module
    except (ImportError, AttributeError) as error:
        raise UsageError(f"cannot load plugin {spec!r}: {error}") from error


def _check_mcp() -> None:
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
    numbers = []
    for part in version.split("."):
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            break
        numbers.append(int(digits))
    return tuple(numbers)


def _names(text: str) -> frozenset[str]:
    names = frozenset(name.strip() for name in text.split(",")) - {""}
    if not names:
        raise argparse.ArgumentTypeError("name at least one tool")
    return names


def _positive(text: str) -> int:
    number = int(text)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return number


async def _serve(args: argparse.Namespace) -> int:
    _check_mcp()
    from ctxfs.tools.mcpserver import McpTools, create_server  # noqa: PLC0415

    if args.transport == "http":
        options, generated = _http_options(args)  # refused before anything opens
        with _bound(args.host, args.port, listen=True, shared=False) as listening:
            return await _serve_http(args, options, listening, announce=True, generated=generated)
    from ctxfs.tools.stdio import serve_stdio  # noqa: PLC0415

    toolset = _toolset(args)
    named = args.root is not None or args.url is not None
    fs = _store(args, _location(args), kept=True) if named else None
    owner = args.owner or _client_owner()
    tools = McpTools(fs, toolset, owner=owner, workspace=args.workspace, per_session=False)
    server = create_server(tools)
    async with AsyncExitStack() as serving:
        if fs is None:  # the client's roots name it
            from ctxfs.tools.roots import ClientRoots  # noqa: PLC0415

            opener = partial(_store, args, kept=True)
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

    fs, toolset = _open(args)
    async with fs:
        per_session = not options.stateless  # stateless: every request is its principal's
        tools = McpTools(
            fs,
            toolset,
            owner=args.owner,
            workspace=args.workspace,
            per_session=per_session,
        )
        app = http_app(create_server(tools), options, on_session_end=tools.session_ended)
        config = uvicorn.Config(app, log_level="warning")
        if announce:
            _announce(args, options, generated, repr(fs.backend), _port_of(listening))
        await uvicorn.Server(config).serve(sockets=[listening])
    return 0


def _serve_in_workers(args: argparse.Namespace) -> int:
    """``serve --transport http --workers N``: one port, N processes, stateless, shared store.

    A port anything holds is refused, workers of a killed server too (binding with
    ``SO_REUSEPORT`` would share it with them). Without ``--observations``, the
    workers share a SQLite file in a :class:`~ctxfs.tools.workers.RunDirectory`
    (on tmpfs where there is one).
    """
    from ctxfs.core import sqlite_url  # noqa: PLC0415
    from ctxfs.tools.workers import RunDirectory, serve_forked  # noqa: PLC0415

    if args.transport != "http":
        raise UsageError("--workers is for --transport http (stdio has one client)")
    _check_mcp()
    options, generated = _http_options(args, stateless=True)
    with _bound(args.host, args.port, listen=False, shared=False) as alone:  # no one holds it
        port = _port_of(alone)
    with _bound(args.host, port, listen=False, shared=True):  # ours while workers come and go
        run = None
        if args.observations is None:
            shm = "/dev/shm"  # the run's store need not outlive it: in memory where it can be
            run = RunDirectory.make(shm if os.path.isdir(shm) else None)
            args.observations = sqlite_url(run.path / "observations.db")
        try:
            opened = anyio.run(_described, args)  # the store opens (or fails) once, before forks
            where = f"{opened} in {args.workers} workers, observations in {args.observations}"
            _announce(args, options, generated, where, port)

            def work() -> int:
                listening = _bound(args.host, port, listen=True, shared=True)
                return int(anyio.run(partial(_serve_http, args, options, listening)))

            return serve_forked(args.workers, work, shared=run)
        finally:
            if run is not None:
                run.leave()


def _bound(host: str, port: int, *, listen: bool, shared: bool) -> socket.socket:
    """A TCP socket bound to *host*:*port*, listening if *listen*; ``SO_REUSEPORT`` if *shared*.

    Each worker listens on a socket of its own, so the kernel spreads new
    connections evenly over them (one shared socket would let the first worker
    awake take a burst of them all); the parent holds one that does not listen,
    so the port stays taken. Made as TCP explicitly: asyncio turns Nagle's
    algorithm off only on sockets it can tell are TCP, and a reply written in
    two parts would otherwise wait out the client's delayed acknowledgement.

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
    fs, _ = _open(args)
    async with fs:
        return repr(fs.backend)


def _http_options(
    args: argparse.Namespace, *, stateless: bool = False
) -> tuple[HttpOptions, str | None]:
    """The HTTP options the command line asks for, and the token made for this run if any.

    Refuses what would be unsafe: no tokens off loopback, ``--no-auth`` off loopback; and
    no store named (the client's MCP roots name one over stdio only).
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


async def _call(args: argparse.Namespace) -> int:
    try:
        arguments = json.loads(args.arguments)
    except json.JSONDecodeError as error:
        raise UsageError(f"the arguments are not JSON: {error}") from error
    if not isinstance(arguments, dict):
        raise UsageError(
            f'the arguments must be a JSON object such as \'{{"file_path": "a.txt"}}\', '
            f"not {args.arguments.strip()[:40]}"
        )
    fs, toolset = _open(args, kept=True)
    async with fs:
        ctx = fs.context(owner=args.owner or _client_owner(), workspace=args.workspace)
        shown = _ProgressLine(sys.stderr)
        result = await toolset.execute(ctx, args.tool, arguments, progress=shown.update)
        shown.close()
    if args.json:
        print(json.dumps(result.structured, indent=2, ensure_ascii=False))
    elif not result.is_error:
        print(result.text)
    if result.data.error is not None:
        print(f"ctxfs: error [{result.error_code}]: {result.data.error.message}", file=sys.stderr)
        return 1
    return 0


class _ProgressLine:
    """A long call's progress on stderr: one line rewritten on a terminal, else a line each."""

    def __init__(self, stream: TextIO) -> None:
        self.stream, self.shown = stream, False
        self.terminal = stream.isatty()

    async def update(self, done: float, total: float | None, message: str) -> None:
        del done, total
        if self.terminal:
            self.stream.write(f"\rctxfs: {message}\x1b[K")
        else:
            self.stream.write(f"ctxfs: {message}\n")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown and self.terminal:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


async def _demo(args: argparse.Namespace) -> int:
    from ctxfs.tools.demo import run_demo  # noqa: PLC0415

    return await run_demo(keep=args.keep, out=sys.stdout)


if __name__ == "__main__":  # pragma: no cover
    run()
