"""ripgrep as fs-local's search engine, confined to the root by Landlock.

:meth:`LocalBackend.search_files` runs ``rg`` (from the ``ripgrep`` wheel, or
``$PATH``) to find the files that hold a match and count their matching lines.
ripgrep walks and reads at its own speed, with its own ignore-file rules; the
kernel keeps it beneath the root: the child process gets a Landlock rule set
that lets it read the root's tree, its own binary and the shared libraries it
loads, and nothing else (:mod:`ctxfs.local.landlock`). A link, or a directory
swapped for a link mid-walk, cannot make it open anything outside.

Used only when all of this holds: the binary is found, the kernel has Landlock,
and ripgrep understands the pattern (else the caller's own walk runs). Files are
searched as ripgrep reads them: UTF-8, or UTF-16 with a byte-order mark.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sysconfig
from dataclasses import replace
from pathlib import Path
from typing import Final

import anyio.to_thread

from ctxfs.core import FileMatches, FileSearch
from ctxfs.local.landlock import ReadOnlyBeneath, landlock_abi, start_confined

__all__ = ["Ripgrep", "find_ripgrep"]

_LIBRARY: Final = re.compile(rb"(/\S+) \(0x[0-9a-f]+\)")
_SEARCHED: Final = re.compile(rb"^(\d+) files searched$", re.MULTILINE)


@functools.cache
def find_ripgrep() -> Ripgrep | None:
    """The ripgrep this process can run confined, or None (no binary, or no Landlock)."""
    if landlock_abi() < 1:
        return None
    scripts = Path(sysconfig.get_path("scripts")) / "rg"
    binary = str(scripts) if scripts.is_file() else shutil.which("rg")
    if binary is None:
        return None
    try:
        return Ripgrep(binary)
    except OSError:
        return None


class Ripgrep:
    """One ``rg`` binary and the files it must read to start.

    Raises:
        OSError: The binary cannot be run.

    """

    def __init__(self, binary: str) -> None:
        self.binary = os.path.realpath(binary)
        traced = subprocess.run(  # what the dynamic loader maps (as ldd does)
            [self.binary],
            env={"LD_TRACE_LOADED_OBJECTS": "1"},
            capture_output=True,
            timeout=30,
            check=False,
        )
        libraries = [os.path.realpath(os.fsdecode(p)) for p in _LIBRARY.findall(traced.stdout)]
        cache = ["/etc/ld.so.cache"] if os.path.exists("/etc/ld.so.cache") else []
        self.startup_files = (self.binary, *libraries, *cache)

    def arguments(self, search: FileSearch) -> list[str]:
        """The command line for *search* (run with the root as working directory)."""
        args = [self.binary, "--no-config", "--no-messages", "--null", "--no-ignore-global"]
        args += ["--no-require-git", "--stats" if search.pattern is not None else "--files"]
        if search.pattern is not None:
            args += ["--count", "--with-filename", "--regexp", search.pattern]
        if search.ignore_case:
            args.append("--ignore-case")
        if search.multiline:
            args += ["--multiline", "--multiline-dotall"]
        if search.hidden:
            args.append("--hidden")
        if search.ignored:
            args.append("--no-ignore")
        for name in sorted(search.skip_dirs):
            args += ["--glob", f"!{_escaped(name)}/"]
        if search.names is not None:  # a file type: unlike --glob, it keeps the ignore rules
            args += [f"--type-add=ctxfsnames:{name}" for name in search.names]
            args.append("--type=ctxfsnames")
            if not search.hidden:  # ... but not the hidden one: a type admits hidden names
                args += ["--glob", "!.*"]
        args += ["--", search.path or "."]
        return args

    async def search(self, root: Path, root_fd: int, search: FileSearch) -> FileMatches | None:
        """Run *search* beneath the root (*root_fd*); None if ripgrep refuses the pattern.

        ripgrep is killed at ``search.seconds`` (the answer then covers the files
        it finished) or when the caller is cancelled.
        """
        process = await anyio.to_thread.run_sync(self._start, root, root_fd, search)
        try:
            output, timed_out = await anyio.to_thread.run_sync(
                _finish, process, search.seconds, abandon_on_cancel=True
            )
        finally:
            if process.poll() is None:
                process.kill()  # cancelled: the abandoned thread's wait then ends at once
        if process.returncode == 2 and not output and not timed_out:
            return None  # ripgrep's "error" with no output: a pattern it does not understand
        found = _parsed(output, search, prefix="" if search.path else "./")
        return replace(found, complete=not timed_out) if timed_out else found

    def _start(self, root: Path, root_fd: int, search: FileSearch) -> subprocess.Popen[bytes]:
        arguments = self.arguments(search)
        devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)  # the confined thread may not
        rules = ReadOnlyBeneath(root_fd, files=self.startup_files)
        try:
            return start_confined(
                rules,
                lambda: subprocess.Popen(
                    arguments,
                    cwd=root,  # were it swapped, the rules still allow only the root's tree
                    stdin=devnull,
                    stdout=subprocess.PIPE,
                    stderr=devnull,
                ),
            )
        finally:
            rules.close()
            os.close(devnull)


def _finish(process: subprocess.Popen[bytes], seconds: float | None) -> tuple[bytes, bool]:
    """Ripgrep's output, and whether it had to be stopped at *seconds*."""
    try:
        output, _ = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        return output, True
    return output, False


def _parsed(output: bytes, search: FileSearch, *, prefix: str) -> FileMatches:
    r"""The ``path\0count\n`` records ripgrep printed (or ``path\0`` names), then its stats.

    Split on NUL first, so a name holding a line break keeps it.
    """
    counts: dict[str, int] = {}
    if search.pattern is None:
        for raw in output.split(b"\0"):
            if raw:
                counts[_path(raw, prefix)] = 0
        return FileMatches(counts=counts, searched=len(counts))
    records = output.split(b"\0")
    path, rest = records[0], b""
    for record in records[1:]:
        number, _, rest = record.partition(b"\n")
        if not number.isdigit():
            break
        counts[_path(path, prefix)] = int(number)
        path = rest
    found = _SEARCHED.search(rest if len(records) > 1 else output)
    return FileMatches(counts=counts, searched=int(found.group(1)) if found else len(counts))


def _path(raw: bytes, prefix: str) -> str:
    text = os.fsdecode(raw)
    return text[len(prefix) :] if prefix and text.startswith(prefix) else text


def _escaped(name: str) -> str:
    """*name* as a literal in one of ripgrep's globs."""
    return re.sub(r"([*?\[\]{}\\!])", r"\\\1", name)
