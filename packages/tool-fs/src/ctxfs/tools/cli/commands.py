"""``ctxfs call`` runs one tool call; ``ctxfs demo`` shows the main job on a scratch workspace."""

from __future__ import annotations

import argparse
import codecs
import json
import sys
from typing import TextIO

from ctxfs.tools.cli.opening import UsageError, client_owner, opened

__all__ = ["call", "demo"]


async def call(args: argparse.Namespace) -> int:
    """Run one tool call; print its text (or, with ``--json``, its structured result)."""
    try:
        arguments = json.loads(args.arguments)
    except (ValueError, RecursionError) as error:  # (a 5,000-digit number; 50,000 brackets)
        raise UsageError(f"the arguments are not JSON: {error}") from error
    if not isinstance(arguments, dict):
        raise UsageError(
            f'the arguments must be a JSON object such as \'{{"file_path": "a.txt"}}\', '
            f"not {args.arguments.strip()[:40]}"
        )
    fs, toolset = opened(args, kept=True)
    async with fs:
        ctx = fs.context(owner=args.owner or client_owner(), workspace=args.workspace)
        shown = _ProgressLine(sys.stderr)
        result = await toolset.execute(ctx, args.tool, arguments, progress=shown.update)
        shown.close()
    if args.json:  # (\u escapes where stdout cannot hold every character: still JSON)
        plain = codecs.lookup(getattr(sys.stdout, "encoding", None) or "ascii").name == "utf-8"
        shown_result = _printed(json.dumps(result.structured, indent=2, ensure_ascii=not plain))
    else:
        shown_result = result.is_error or _printed(result.text)
    failure = result.data.error
    if failure is not None:
        said = result.text.removeprefix("Error ")  # as the model reads it (names escaped)
        if not said.startswith(f"[{failure.code.value}]: "):
            said = f"[{failure.code.value}]: {failure.message}"
        line = said.partition("\n")[0] if args.json else said  # (--json: the line alone)
        print(f"ctxfs: error {line}", file=sys.stderr)
        return 1
    return 0 if shown_result else 1


def _printed(text: str) -> bool:
    """Print *text* on stdout; False, and why on stderr, where it cannot be written there."""
    if sys.stdout is None:
        why = "stdout is closed"
    else:
        try:
            print(text)
            sys.stdout.flush()
        except BrokenPipeError:
            raise  # the reader stopped early (``| head``): ended quietly by main
        except OSError as error:
            why = error.strerror or str(error)
        else:
            return True
    print(f"ctxfs: cannot write the result: {why}", file=sys.stderr)
    return False


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


async def demo(args: argparse.Namespace) -> int:
    """Run the demo; with ``--keep``, its workspace stays."""
    from ctxfs.tools.demo import run_demo  # noqa: PLC0415

    if sys.stdout is None:
        print("ctxfs: cannot show the demo: stdout is closed", file=sys.stderr)
        return 1
    try:
        return await run_demo(keep=args.keep, out=sys.stdout)
    except BrokenPipeError:
        raise  # the reader stopped early (``| head``): ended quietly by main
    except OSError as error:  # (a full disk behind stdout, say)
        print(f"ctxfs: cannot show the demo: {error.strerror or error}", file=sys.stderr)
        return 1
