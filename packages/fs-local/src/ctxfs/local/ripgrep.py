"""ripgrep as fs-local's search engine, confined to the root by Landlock.

``rg`` (from the ``ripgrep`` wheel, or ``$PATH``) walks and reads with its own ignore rules, in a
child process that Landlock lets read the root's tree and the files it needs to start, nothing else
(:mod:`ctxfs.local.landlock`): no link, nor a directory swapped for one mid-walk, leads it outside.
Where the binary, Landlock or ripgrep's understanding of the pattern is missing, the caller's own
walk runs. A glob becomes ignore rules ripgrep reads from memory (``/dev/fd``); a line too long to
give is found again by a second run (:mod:`ctxfs.local.longlines`).
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import re
import selectors
import shutil
import stat
import subprocess
import sysconfig
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Final

import anyio.to_thread

from ctxfs.core import FileLines, FileMatches, FileSearch, LineSearch, glob_matcher
from ctxfs.core.kit import IGNORE_FILES, RESERVED_PREFIX, listing_work
from ctxfs.local.landlock import ReadOnlyBeneath, landlock_abi, start_confined
from ctxfs.local.longlines import cut_lines

log = logging.getLogger(__name__)

__all__ = ["NOT_UTF8", "Ripgrep", "find_ripgrep", "names_beyond_ascii"]

_LIBRARY: Final = re.compile(rb"(/\S+) \(0x[0-9a-f]+\)")
_SEARCHED: Final = re.compile(rb"^(\d+) files searched$", re.MULTILINE)
_NUMBERED: Final = re.compile(rb"(\d+)[:-]")
_OFFSET: Final = re.compile(rb"(\d+):(\d+):")
_VERBOSE: Final = re.compile(r"\(\?[a-zA-Z]*x")
_SPACED_REPEAT: Final = re.compile(r"\{\s")
_ESCAPED_ALIKE: Final = frozenset("wWdDsSbBAntrfvxuUpP")
"""The letters Python and Rust both read, escaped, the same way (outside a class)."""
_OMITTED: Final = (b"[Omitted long matching line]", b"[Omitted long context line]")
_STEP: Final = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
_TAIL: Final = r"[\x80-\xBF]"
_NO_TAIL: Final = r"(?:[^\x80-\xBF]|$)"
_UTF8_CHARACTER: Final = (  # a character's bytes (RFC 3629): ASCII, then 2, 3 and 4 bytes long
    r"[\x00-\x7F]",
    rf"[\xC2-\xDF]{_TAIL}",
    rf"\xE0[\xA0-\xBF]{_TAIL}",
    rf"[\xE1-\xEC\xEE\xEF]{_TAIL}{_TAIL}",
    rf"\xED[\x80-\x9F]{_TAIL}",
    rf"\xF0[\x90-\xBF]{_TAIL}{_TAIL}",
    rf"[\xF1-\xF3]{_TAIL}{_TAIL}{_TAIL}",
    rf"\xF4[\x80-\x8F]{_TAIL}{_TAIL}",
)
_NO_UTF8_CHARACTER: Final = (  # bytes where a character begins that begin no character's bytes
    r"[\x80-\xC1\xF5-\xFF]",
    rf"[\xC2-\xDF]{_NO_TAIL}",
    r"\xE0(?:[^\xA0-\xBF]|$)",
    rf"\xE0[\xA0-\xBF]{_NO_TAIL}",
    rf"[\xE1-\xEC\xEE\xEF]{_NO_TAIL}",
    rf"[\xE1-\xEC\xEE\xEF]{_TAIL}{_NO_TAIL}",
    r"\xED(?:[^\x80-\x9F]|$)",
    rf"\xED[\x80-\x9F]{_NO_TAIL}",
    r"\xF0(?:[^\x90-\xBF]|$)",
    rf"\xF0[\x90-\xBF]{_NO_TAIL}",
    rf"\xF0[\x90-\xBF]{_TAIL}{_NO_TAIL}",
    rf"[\xF1-\xF3]{_NO_TAIL}",
    rf"[\xF1-\xF3]{_TAIL}{_NO_TAIL}",
    rf"[\xF1-\xF3]{_TAIL}{_TAIL}{_NO_TAIL}",
    r"\xF4(?:[^\x80-\x8F]|$)",
    rf"\xF4[\x80-\x8F]{_NO_TAIL}",
    rf"\xF4[\x80-\x8F]{_TAIL}{_NO_TAIL}",
)
_BEYOND_ASCII_ESCAPE: Final = re.compile(r"\\(?:x[89a-fA-F]|x\{|u|U|N\{)")


def names_beyond_ascii(pattern: str) -> bool:
    r"""Whether *pattern* (Python's syntax) names a character beyond ASCII.

    Itself, or escaped (``\xe9``, ``\u00e9``, ``\N{...}``).
    """
    return not pattern.isascii() or _BEYOND_ASCII_ESCAPE.search(pattern) is not None


NOT_UTF8: Final = f"(?-u:^(?:{'|'.join(_UTF8_CHARACTER)})*(?:{'|'.join(_NO_UTF8_CHARACTER)}))"
"""A line that is not UTF-8, in ripgrep's syntax (bytes): its longest UTF-8 start, then bytes
that begin no character."""


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

    def arguments(self, search: FileSearch, *, ignore_file: str | None = None) -> list[str]:
        """The command line for *search* (run with the root as working directory).

        *ignore_file* holds the rules of :func:`_glob_rules` for ``search.glob``.
        """
        args = [self.binary, "--no-config", "--no-messages", "--null", "--no-ignore-global"]
        args += [
            "--no-require-git",
            "--crlf",
            "--stats" if search.pattern is not None else "--files",
        ]
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
        # one glob (each costs a match per path); hidden names are skipped anyway unless asked
        skipped = sorted(name for name in search.skip_dirs if search.hidden or name[:1] != ".")
        if skipped:
            args += ["--glob", "!{" + ",".join(map(_escaped, skipped)) + "}/"]
        if search.hidden:  # temporary files (else skipped as hidden)
            args += ["--glob", f"!{_escaped(RESERVED_PREFIX)}*"]
        if search.names is not None:  # a file type: unlike --glob, it keeps the ignore rules
            args += [f"--type-add=ctxfsnames:{name}" for name in search.names]
            args.append("--type=ctxfsnames")
        if ignore_file is not None:  # ignore rules, weaker than the tree's own
            args.append(f"--ignore-file={ignore_file}")
        if not search.hidden:
            args += ["--glob", "!.*"]  # (a type or a rule that keeps a name admits hidden names)
        args += ["--", search.path or "."]
        return args

    def line_arguments(self, search: LineSearch) -> list[str]:
        """The command line for *search*: matching and context lines, long ones omitted."""
        args = ["--no-context-separator", f"--max-columns={search.max_line_chars}"]
        if search.before:
            args.append(f"--before-context={search.before}")
        if search.after:
            args.append(f"--after-context={search.after}")
        return self._named_files(search, args)

    def first_match_arguments(self, search: LineSearch) -> list[str]:
        """The command line for where each matching line's first match is (a byte offset)."""
        # no match text: each comes omitted (--replace would shift the offsets after it)
        return self._named_files(search, ["--byte-offset", "--only-matching", "--max-columns=1"])

    def _named_files(self, search: LineSearch, args: list[str]) -> list[str]:
        args = [
            self.binary,
            "--no-config",
            "--no-messages",
            "--null",
            "--no-heading",
            "--crlf",
            *args,
        ]
        args += ["--with-filename", "--line-number", "--no-ignore", "--hidden"]
        if search.max_count is not None:
            args.append(f"--max-count={search.max_count}")
        if search.ignore_case:
            args.append("--ignore-case")
        return [*args, "--regexp", search.pattern, "--", *search.paths]

    async def lines(
        self, root: Path, root_fd: int, search: LineSearch, *, opened: dict[str, int]
    ) -> FileLines | None:
        """Run *search* beneath the root on the files *opened* (path: descriptor).

        ripgrep reads each through ``/dev/fd/N``, so a path swapped since cannot lead it
        elsewhere. None if ripgrep refuses the pattern, or would read it otherwise.
        """
        if not _read_alike(search.pattern):
            return None
        names = {f"/dev/fd/{fd}": path for path, fd in opened.items()}
        search, fds = replace(search, paths=tuple(names)), tuple(opened.values())
        ran = await self._run(
            root, root_fd, self.line_arguments(search), search.seconds, pass_fds=fds
        )
        if ran is None or ran[1]:
            return None if ran is None else FileLines(lines={}, complete=False)
        found, long = _lines(ran[0], search.paths)
        if long:  # lines ripgrep omitted: cut here, around where it says each match is
            long_search = replace(search, paths=tuple(sorted(long)))
            arguments = self.first_match_arguments(long_search)
            ran = await self._run(root, root_fd, arguments, search.seconds, pass_fds=fds)
            if ran is None or ran[1]:
                return None if ran is None else FileLines(lines={}, complete=False)
            for name, firsts in _first_matches(ran[0], long_search.paths).items():
                cut = await anyio.to_thread.run_sync(cut_lines, opened[names[name]], firsts, search)
                if cut is not None:
                    found[name] = cut
        if found:  # a lone \r breaks a line for ctxfs, not for ripgrep: such files are read here
            paths = tuple(sorted(found))
            arguments = self._lone_cr_arguments(paths)
            ran = await self._run(root, root_fd, arguments, search.seconds, pass_fds=fds)
            if ran is None or ran[1]:
                return None if ran is None else FileLines(lines={}, complete=False)
            for listed in ran[0].split(b"\0"):
                found.pop(os.fsdecode(listed), None)
        return FileLines(lines={names[name]: lines for name, lines in found.items()})

    def _lone_cr_arguments(self, paths: tuple[str, ...]) -> list[str]:
        r"""The command line naming which of *paths* hold a ``\r`` that ends no ``\r\n``."""
        args = [self.binary, "--no-config", "--no-messages", "--null", "--files-with-matches"]
        args += ["--no-ignore", "--hidden", "--regexp", r"\r[^\n]"]  # (not --crlf: it refuses \r)
        return [*args, "--", *paths]

    async def search(
        self, root: Path, root_fd: int, search: FileSearch, *, directory_fd: int | None = None
    ) -> FileMatches | None:
        """Run *search* beneath the root (*root_fd*); None if ripgrep refuses the pattern.

        Or would read it otherwise than Python does (:func:`_read_alike`). Stopped at
        ``search.seconds``, the answer covers the files it finished. With *directory_fd*
        (``search.path``, open), ripgrep may read only beneath it, and the ignore files above it.
        """
        if search.pattern is not None and not _read_alike(search.pattern):
            return None
        rules = None if search.glob is None else _in_memory(_glob_rules(search.path, search.glob))
        try:
            ignore_file = None if rules is None else f"/dev/fd/{rules}"
            ran = await self._run(
                root,
                root_fd if directory_fd is None else directory_fd,
                self.arguments(search, ignore_file=ignore_file),
                search.seconds,
                pass_fds=() if rules is None else (rules,),
                found_so_far=search.found_so_far,
                above=None if directory_fd is None else (root_fd, search.path),
            )
        finally:
            if rules is not None:
                os.close(rules)
        if ran is None:
            return None
        output, timed_out = ran
        parsed = functools.partial(_parsed, output, search, prefix="" if search.path else "./")
        found = await listing_work(output.count(b"\0"), parsed)  # (a NUL ends each name)
        return replace(found, complete=not timed_out) if timed_out else found

    async def _run(
        self,
        root: Path,
        beneath_fd: int,
        arguments: list[str],
        seconds: float | None,
        *,
        pass_fds: tuple[int, ...] = (),
        found_so_far: Callable[[int], None] | None = None,
        above: tuple[int, str] | None = None,
    ) -> tuple[bytes, bool] | None:
        """Ripgrep's output, and whether it was killed at *seconds*; None: pattern refused.

        It may read beneath *beneath_fd* only, and with *above* (the root's descriptor and a
        directory in it) the ignore files above that directory. A refused pattern is
        ripgrep's "error" status with no output, or one too long to pass; a cancelled caller
        kills it.
        """
        try:
            process = await anyio.to_thread.run_sync(
                self._start, root, beneath_fd, arguments, pass_fds, above
            )
        except OSError as error:  # a pattern too long for a command line (128 KiB), or
            if error.errno != errno.E2BIG:  # ripgrep cannot start here: searched in-process
                log.warning("ripgrep could not start (%s); the search runs in-process", error)
            return None
        try:
            output, timed_out = await anyio.to_thread.run_sync(
                _finish, process, seconds, found_so_far, abandon_on_cancel=True
            )
        finally:
            if process.poll() is None:
                process.kill()  # cancelled: the abandoned thread's wait then ends at once
        if process.returncode == 2 and not output and not timed_out:
            return None
        return output, timed_out

    def _start(
        self,
        root: Path,
        beneath_fd: int,
        arguments: list[str],
        pass_fds: tuple[int, ...],
        above: tuple[int, str] | None,
    ) -> subprocess.Popen[bytes]:
        devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)  # the confined thread may not
        readable = [] if above is None else _ignore_files_above(*above)
        try:
            rules = ReadOnlyBeneath(beneath_fd, files=self.startup_files, file_fds=readable)
        finally:
            for fd in readable:
                os.close(fd)
        try:
            return start_confined(
                rules,
                lambda: subprocess.Popen(
                    arguments,
                    cwd=root,  # were it swapped, the rules still allow only the root's tree
                    stdin=devnull,
                    stdout=subprocess.PIPE,
                    stderr=devnull,
                    pass_fds=pass_fds,
                ),
            )
        finally:
            rules.close()
            os.close(devnull)


def _finish(
    process: subprocess.Popen[bytes],
    seconds: float | None,
    found_so_far: Callable[[int], None] | None = None,
) -> tuple[bytes, bool]:
    """Ripgrep's output, read as it comes, and whether it had to be stopped at *seconds*.

    *found_so_far* is told the number of records (NULs) so far after each read.
    """
    assert process.stdout is not None
    deadline = None if seconds is None else time.monotonic() + seconds
    chunks, records, timed_out = [], 0, False
    with selectors.DefaultSelector() as waiting:
        waiting.register(process.stdout, selectors.EVENT_READ)
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                process.kill()  # what it wrote before is still read, to its end
                deadline, timed_out = None, True
            elif not waiting.select(left):
                continue
            chunk = os.read(process.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            if found_so_far is not None:
                records += chunk.count(b"\0")
                found_so_far(records)
    process.stdout.close()
    process.wait()
    return b"".join(chunks), timed_out


def _read_alike(pattern: str) -> bool:
    r"""Whether ripgrep surely reads *pattern* as Python's ``regex`` does.

    Not with verbose mode (spaces in a class differ), a class's set operations (``&&``,
    ``--``, ``~~``) or a class inside a class, nor an escaped letter or digit Rust reads
    otherwise (``\<``, ``\z``, ``\N``...), nor a NUL or a lone surrogate (no command line
    holds them), nor a brace before a space (``a{ 1}``: text to Python, a repeat to Rust).
    """
    if _VERBOSE.search(pattern) or "\0" in pattern or not _utf8(pattern):
        return False
    if _SPACED_REPEAT.search(pattern):
        return False
    at, in_class = 0, False
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            escaped = pattern[at + 1 : at + 2]
            if (escaped.isalnum() and escaped not in _ESCAPED_ALIKE) or escaped in "<>":
                return False
            at += 2
            continue
        if in_class and (char == "[" or pattern[at : at + 2] in ("&&", "--", "~~")):
            return False
        if char == "[" and not in_class:
            in_class = True
            at += 1 + (pattern[at + 1 : at + 2] == "^")
            at += pattern[at : at + 1] == "]"  # a "]" first is one of the class's characters
            continue
        in_class = in_class and char != "]"
        at += 1
    return True


def _utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _parsed(output: bytes, search: FileSearch, *, prefix: str) -> FileMatches:
    r"""The ``path\0count\r\n`` records ripgrep printed (or ``path\0`` names), then its stats.

    Split on NUL first, so a name holding a line break keeps it.
    """
    counts: dict[str, int] = {}
    if search.pattern is None:  # a listing may hold 100,000 names: no work per name here
        text = os.fsdecode(output)
        if prefix:  # every name ends in NUL: the prefix follows one, or starts the text
            text = ("\0" + text).replace("\0" + prefix, "\0")[1:]
        counts = dict.fromkeys(text.split("\0"), 0)
        counts.pop("", None)
        return FileMatches(counts=counts, searched=len(counts))
    records = output.split(b"\0")
    path, rest = records[0], b""
    for record in records[1:]:
        number, _, rest = record.partition(b"\n")
        number = number.removesuffix(b"\r")  # (--crlf ends its own lines so too)
        if not number.isdigit():
            break
        counts[os.fsdecode(path).removeprefix(prefix)] = int(number)
        path = rest
    found = _SEARCHED.search(rest if len(records) > 1 else output)
    return FileMatches(counts=counts, searched=int(found.group(1)) if found else len(counts))


def _lines(
    output: bytes, paths: tuple[str, ...]
) -> tuple[dict[str, list[tuple[int, str]]], set[str]]:
    r"""The ``path\0number:text`` (``-`` for context) records, by path, in order.

    A file with a binary-file notice or text that is not UTF-8 is left out; one with a line
    ripgrep omitted (too long) too, but named apart (the second value).
    """
    found: dict[str, list[tuple[int, str]]] = {path: [] for path in paths}
    unanswered: set[str] = set()
    long: set[str] = set()
    for record in output.split(b"\n"):
        raw, nul, rest = record.partition(b"\0")
        if not nul:
            text = os.fsdecode(raw)
            unanswered.update(p for p in paths if text.startswith(f"{p}:"))  # "p: binary file"
            continue
        path, numbered = os.fsdecode(raw), _NUMBERED.match(rest)
        if path not in found or numbered is None:
            continue
        line = rest[numbered.end() :].removesuffix(b"\r")
        try:
            text = line.decode()
        except UnicodeDecodeError:
            unanswered.add(path)
            continue
        if line in _OMITTED:
            long.add(path)
        number = int(numbered.group(1))
        found[path].append((number, text.removeprefix("\ufeff") if number == 1 else text))
    left_out = unanswered | long
    return {path: lines for path, lines in found.items() if path not in left_out}, long - unanswered


def _first_matches(output: bytes, paths: tuple[str, ...]) -> dict[str, dict[int, int]]:
    r"""From ``path\0number:offset:`` records (one per match), each line's first match."""
    found: dict[str, dict[int, int]] = {path: {} for path in paths}
    for record in output.split(b"\n"):
        raw, nul, rest = record.partition(b"\0")
        path, numbered = os.fsdecode(raw), _OFFSET.match(rest)
        if nul and path in found and numbered is not None:
            found[path].setdefault(int(numbered.group(1)), int(numbered.group(2)))
    return found


def _ignore_files_above(root_fd: int, directory: str) -> list[int]:
    """The ignore files in the root and below it down to *directory*'s parent, open (``O_PATH``).

    Each step is taken without following a link, and only regular files are kept: what a
    link would lead to (outside the root, maybe) is never offered to ripgrep.
    """
    found: list[int] = []
    parts = directory.split("/")[:-1]
    here = os.dup(root_fd)
    try:
        for depth in range(len(parts) + 1):
            for name in IGNORE_FILES:  # (what ripgrep reads in each directory above)
                fd = _opened_beneath(here, name, os.O_PATH | os.O_CLOEXEC)
                if fd is not None and stat.S_ISREG(os.fstat(fd).st_mode):
                    found.append(fd)
                elif fd is not None:
                    os.close(fd)
            below = _opened_beneath(here, parts[depth], _STEP) if depth < len(parts) else None
            if below is None:
                break
            os.close(here)
            here = below
    except BaseException:
        for fd in found:
            os.close(fd)
        raise
    finally:
        os.close(here)
    return found


def _opened_beneath(directory_fd: int, relative: str, flags: int) -> int | None:
    """*relative* opened beneath *directory_fd* with *flags*, no link followed (None: it cannot)."""
    *steps, name = relative.split("/")
    here = os.dup(directory_fd)
    try:
        for step in steps:
            below = os.open(step, _STEP | os.O_NOFOLLOW, dir_fd=here)
            os.close(here)
            here = below
        return os.open(name, flags | os.O_NOFOLLOW, dir_fd=here)
    except OSError:  # missing, not a directory, a link: none there
        return None
    finally:
        os.close(here)


def _glob_rules(directory: str, glob: str) -> bytes:
    """Ignore-file rules that leave only what *glob* may match below *directory*.

    They keep the files the glob's :meth:`~GlobMatcher.outline` matches and the directories on
    the way, no more; the tree's own ignore files rank higher.
    """
    rules = ["*"]
    for segments in glob_matcher(glob).outline(below=directory):
        # the directories on the way: up to the first "**", which takes every one below
        deep = segments.index("**") + 1 if "**" in segments else len(segments) - 1
        rules += [f"!/{'/'.join(segments[:end])}/" for end in range(1, deep + 1)]
        rules.append(f"!/{'/'.join(segments)}")
    return ("\n".join(dict.fromkeys(rules)) + "\n").encode()


def _in_memory(data: bytes) -> int:
    """A file in memory holding *data* (a descriptor, closed on exec unless passed)."""
    fd = os.memfd_create("ctxfs-rules")
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        raise
    return fd


def _escaped(name: str) -> str:
    """*name* as a literal in one of ripgrep's globs."""
    return re.sub(r"([*?\[\]{},\\!])", r"\\\1", name)
