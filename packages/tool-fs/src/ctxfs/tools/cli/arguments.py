"""The ``ctxfs`` command line: its commands and their options."""

from __future__ import annotations

import argparse
from typing import Final

from ctxfs.tools import __version__
from ctxfs.tools.cli.commands import call, demo
from ctxfs.tools.cli.serve import serve
from ctxfs.tools.definitions import CommonOptions

__all__ = ["parser"]


def parser() -> argparse.ArgumentParser:
    """The parser of the ``ctxfs`` command line; each command sets ``run``."""
    command_line = argparse.ArgumentParser(
        prog="ctxfs", description="Safe file tools for LLM agents, over local disk or a store."
    )
    command_line.add_argument("--version", action="version", version=f"ctxfs {__version__}")
    command_line.add_argument(
        "-v", "--verbose", action="store_true", help="log to stderr in detail"
    )
    commands = command_line.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve_command = commands.add_parser("serve", help="serve the tools as an MCP server")
    _store_options(serve_command, roots=True)
    serve_command.add_argument(
        "--transport", choices=["stdio", "http"], default="stdio", help="default: stdio"
    )
    serve_command.add_argument(
        "--tools",
        type=_names,
        metavar="NAMES",
        help="offer only these tools, comma-separated (e.g. read,edit,grep); default: all",
    )
    serve_command.add_argument(
        "--tool-prefix",
        default="",
        metavar="PREFIX",
        help="put PREFIX before every tool's name (fs_: fs_read), so that a client's other "
        "servers cannot offer the same names",
    )
    serve_command.add_argument(
        "--host", default="127.0.0.1", help="HTTP address (default: 127.0.0.1)"
    )
    serve_command.add_argument(
        "--port", type=int, default=8000, help="HTTP port (default: 8000; 0: any free port)"
    )
    serve_command.add_argument(
        "--max-message-bytes",
        type=_message_bytes,
        default=4 << 20,
        metavar="N",
        help="the longest message a client may send, a line or a body (default: 4 MiB)",
    )
    http = serve_command.add_argument_group(
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
    serve_command.set_defaults(run=serve)

    call_command = commands.add_parser("call", help="run one tool call and print its result")
    _store_options(call_command)
    call_command.add_argument("tool", help="read, write, edit, list_dir, glob or grep")
    call_command.add_argument(
        "arguments", help='the arguments as JSON, e.g. \'{"file_path": "a.txt"}\''
    )
    call_command.add_argument(
        "--json", action="store_true", help="print the structured result instead"
    )
    call_command.set_defaults(run=call, tools=None, tool_prefix="")

    demo_command = commands.add_parser("demo", help="two scripted agents on a throw-away workspace")
    demo_command.add_argument("--keep", action="store_true", help="keep the workspace afterwards")
    demo_command.set_defaults(run=demo)
    return command_line


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
        "share what they saw, two clients do not, nor two servers one client runs at once; "
        "name one where a wrapper such as uvx or npx starts each), for HTTP serve 'mcp' (then "
        "each token's principal)",
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
    command.add_argument(
        "--sessions",
        metavar="URL",
        help="where the session memory (the contents the owner saw and wrote, its steps: "
        "stale diffs, undo) lives, as --observations; same default (its own file)",
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


def _names(text: str) -> frozenset[str]:
    names = frozenset(name.strip() for name in text.split(",")) - {""}
    if not names:
        raise argparse.ArgumentTypeError("name at least one tool")
    return names


def _message_bytes(text: str) -> int:
    number = _positive(text)
    if number > MAX_MESSAGE_BYTES:
        raise argparse.ArgumentTypeError(f"{text} is more than {MAX_MESSAGE_BYTES} (1 GiB)")
    return number


MAX_MESSAGE_BYTES: Final = 1 << 30


def _positive(text: str) -> int:
    number = int(text)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return number
