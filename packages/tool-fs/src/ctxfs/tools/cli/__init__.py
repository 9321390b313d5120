"""The ``ctxfs`` command: ``serve`` the tools over MCP, ``call`` one tool, run the ``demo``.

Every failure is one line on stderr and a non-zero exit: 2 for a usage or configuration error, 1 for
a tool call that failed (its code in the line). Logs go to stderr; on ``serve --transport stdio``
stdout carries MCP only. A reader that stops early (``ctxfs demo | head -1``) ends the command
quietly, with status 141 as for a program SIGPIPE ends. Each command imports what it needs as it
runs: ``--help`` and ``--version`` load no store, no tool and no MCP SDK, and ``call`` no MCP SDK
either.
"""

from __future__ import annotations

import gc
import io
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

import anyio

from ctxfs.tools.cli.arguments import parser
from ctxfs.tools.cli.opening import STORE_PACKAGES, UsageError
from ctxfs.tools.cli.serve import MCP_BEFORE, MCP_NEEDED, serve_in_workers

__all__ = ["MCP_BEFORE", "MCP_NEEDED", "STORE_PACKAGES", "main", "run"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ctxfs`` command; return its exit status."""
    _hold_closed_standard_streams()
    command_line = parser()
    args = command_line.parse_args(argv)
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
            serve_in_workers(args) if getattr(args, "workers", 1) > 1 else anyio.run(args.run, args)
        )
    except UsageError as error:
        print(f"ctxfs: {error}", file=sys.stderr)
        return 2
    except FsError as error:
        print(f"ctxfs: error [{error.code}]: {error.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except (BrokenPipeError, BaseExceptionGroup) as error:  # (a group: while tasks ran)
        if isinstance(error, BaseExceptionGroup) and error.split(BrokenPipeError)[1] is not None:
            raise
        return _reader_gone()
    return _flushed(status)


def run() -> NoReturn:
    """The ``ctxfs`` program: :func:`main` on its command line, then exit with its status."""
    status = main()
    gc.freeze()  # the exit's last garbage collection need not walk every object of the run
    sys.exit(status)


def _hold_closed_standard_streams() -> None:
    """Open ``/dev/null`` on each of descriptors 0-2 the caller closed (``2>&-``).

    Else what the command opens first lands there (the event loop's, say) and is taken for
    a standard stream. Stdin and stdout are held read-only (a write there still fails, as to
    a closed stdout); stderr takes what is said and drops it.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            held = os.open(os.devnull, os.O_WRONLY if fd == 2 else os.O_RDONLY)
            if held != fd:
                os.dup2(held, fd)
                os.close(held)
    if sys.stderr is None:  # (the interpreter found it closed)
        sys.stderr = open(2, "w", closefd=False, errors="backslashreplace")  # noqa: SIM115
    for stream in (sys.stdout, sys.stderr):  # a terminal in Latin-1 gets é as \xe9
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def _flushed(status: int) -> int:
    """*status*, once what stdout holds is written; 141 if its reader left, 1 if it failed."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        return _reader_gone()
    except OSError as error:  # (a full disk behind stdout)
        print(f"ctxfs: cannot write to stdout: {error.strerror or error}", file=sys.stderr)
        return 1
    return status


def _reader_gone() -> int:
    """End quietly once whoever read stdout has stopped (``| head``): status 141."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush has nowhere to fail
    os.close(devnull)
    return 128 + signal.SIGPIPE
