"""``LocalBackend``: a directory on local disk, confined by the kernel, written atomically.

The root is opened once (:mod:`ctxfs.local.root`); every later operation starts from that
descriptor, so renaming or swapping paths cannot redirect it. Reads are in :mod:`ctxfs.local.reads`,
changes in :mod:`ctxfs.local.writes`, listings in :mod:`ctxfs.local.listing`. Versions are the
``xxh3_128`` hash of the content (no timestamp shortcut: none is provably safe).
"""

from __future__ import annotations

import builtins
import codecs
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Final, Self, TypeVar, TypeVarTuple
from urllib.parse import urlsplit

import anyio
from anyio.to_thread import run_sync

from ctxfs.core import FsError, InvalidArgument, Stale, TextOptions
from ctxfs.core.kit import (
    Backend,
    Blob,
    Capabilities,
    CasScope,
    Expect,
    FileLines,
    FileMatches,
    FileSearch,
    LineSearch,
    Listing,
    Location,
    ReadRequest,
    ReadStream,
    Stat,
    Update,
    Version,
    authorized_location,
)
from ctxfs.local import listing, reads, writes
from ctxfs.local.answers import RecentAnswers
from ctxfs.local.flocks import LockDirectory, default_state_dir, unusable_state_dir
from ctxfs.local.listing import DirectoryNames
from ctxfs.local.resolve import choose_resolver
from ctxfs.local.ripgrep import NOT_UTF8, Ripgrep, find_ripgrep, names_beyond_ascii
from ctxfs.local.root import DIR_FLAGS, TEMP_PREFIX, RootDirectory, Seen
from ctxfs.local.update import LockedUpdate

__all__ = ["TEMP_PREFIX", "LocalBackend"]

INLINE_READ_MAX: Final = 256 * 1024
"""Files up to this size are read on the event loop (see ``inline_reads``)."""

_CAS_LOCK_TIMEOUT: Final = 30.0
_ENCODING_HEAD: Final = TextOptions.detect_bytes
"""The leading bytes that tell a file's encoding (as read by default)."""
_UTF16_BOMS: Final = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_UTF32_BOMS: Final = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class LocalBackend(Backend):
    """Files under one local directory.

    Args:
        root: The directory; it must exist (it is never created).
        follow_symlinks: Follow symlinks whose targets stay inside the root (default). A write
            or edit never replaces a symlink: it is refused and names the link's target. When
            false, any symlink on a path is refused (``denied``).
        allow_hard_links: Serve files that have other names too. Off by default: a hard link
            can make a file outside the root look like one inside.
        read_hard_links: Serve such files for reading and searching only (a uv-installed
            ``.venv`` is made of them); changing one stays refused.
        resolver: ``"auto"`` (openat2 where the kernel has it), ``"openat2"`` or ``"walk"`` (the
            portable fallback). ``$CTXFS_LOCAL_RESOLVER`` sets the default.
        state_dir: Private directory for lock files, outside the root (default:
            ``$CTXFS_STATE_DIR``, else ``$XDG_STATE_HOME/ctxfs``).
        temp_max_age: Seconds after which a stray temporary file is reaped even if its writer
            may still be alive (one whose writer is gone: after
            :data:`~ctxfs.local.listing.ORPHAN_SECONDS`, if sooner).
        inline_reads: Read files of up to ``INLINE_READ_MAX`` bytes on the event loop itself
            (microseconds on a local disk, where a worker thread costs hundreds). Turn off for a
            root on a network filesystem, whose reads can stall. A change of a file that size
            runs there too where its directory is on the root's filesystem, kept in memory
            (tmpfs: its ``fsync`` waits for nothing); other writes and undos run in a worker
            thread.
        ripgrep: Search with ripgrep (:mod:`ctxfs.local.ripgrep`), confined to the root by
            Landlock, where both are available; else searches walk and read through the backend.
            Ripgrep reads bytes as UTF-8: files that are not are left to ctxfs where it may
            matter (:meth:`search_files`); for a tree of legacy text searched with ASCII
            patterns too, pass False (or name its encodings: ``encoding_overrides``).

    """

    capabilities = Capabilities(
        cas_scope=CasScope.HOST,
        range_reads=True,
        real_directories=True,
        symlinks=True,
        locks=True,
        directory_moves=True,
        file_search=True,
        line_search=True,
    )

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        follow_symlinks: bool = True,
        allow_hard_links: bool = False,
        read_hard_links: bool = False,
        resolver: str | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        temp_max_age: float = 3600.0,
        inline_reads: bool = True,
        ripgrep: bool = True,
    ) -> None:
        if not os.fspath(root):  # "" would be the working directory, whatever it is
            raise InvalidArgument(
                "the workspace root is empty", hint="Name the directory to open (. for here)."
            )
        self.root = Path(os.path.realpath(root))
        try:
            root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as error:
            raise InvalidArgument(
                f"cannot open workspace root {self.root}: {error.strerror}"
            ) from error
        self.temp_max_age = temp_max_age
        self.inline_reads = inline_reads
        opened = os.fstat(root_fd)
        device = opened.st_dev
        self.root_identity = _root_identity(root_fd, opened)
        self._memory_device = device if writes.kept_in_memory(device) else None
        self.ripgrep = ripgrep
        self._names = DirectoryNames()
        self.answers = RecentAnswers()
        try:
            self.resolver = choose_resolver(
                root_fd, resolver or os.environ.get("CTXFS_LOCAL_RESOLVER", "auto")
            )
            self.locks = _lock_directory(self.root, state_dir)
        except BaseException:
            os.close(root_fd)
            raise
        self.root_dir = RootDirectory(
            self.root,
            root_fd,
            self.resolver,
            backend=self,
            follow_symlinks=follow_symlinks,
            allow_hard_links=allow_hard_links,
            read_hard_links=read_hard_links or allow_hard_links,
        )

    @classmethod
    def from_url(cls, url: str, **options: object) -> Self:
        """Open ``file:///abs/dir`` or a plain path (relative to the working directory)."""
        parts = urlsplit(url)
        if parts.scheme.lower() == "file":
            if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
                raise InvalidArgument(f"unsupported file URL {url!r}")
            from urllib.request import url2pathname  # noqa: PLC0415 - HTTP's modules with it

            url = url2pathname(parts.path)
        return cls(url, **options)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"LocalBackend({str(self.root)!r}, resolver={self.resolver.name!r})"

    @property
    def root_fd(self) -> int:
        """The root's descriptor; ``unavailable`` once closed (:meth:`aclose`)."""
        return self.root_dir.fd

    # -- the primitives ----------------------------------------------------------------------

    async def _stat(self, path: str) -> Stat:
        return await run_sync(self.root_dir.stat, path)

    async def _locate(self, path: str) -> Location:
        return await self._inline(self.root_dir.locate, path)

    async def _read(self, path: str, request: ReadRequest) -> Blob:
        opened = partial(self.root_dir.open_file, path)
        blob = await self._open_and_read(opened, partial(reads.read_open, path, request))
        assert blob is not None  # open_file raises rather than answer None
        return blob

    @asynccontextmanager
    async def _open_read(self, path: str, chunk_size: int) -> AsyncIterator[ReadStream]:
        """Stream a file from one open descriptor, so a concurrent replace cannot tear it."""
        first_size = min(chunk_size, INLINE_READ_MAX) if self.inline_reads else chunk_size
        fd, info, first = await self._inline(reads.open_and_read, self.root_dir, path, first_size)

        async def chunks() -> AsyncIterator[bytes]:
            chunk, seen, hole_end = first, 0, 0
            while chunk:
                yield chunk
                seen += len(chunk)
                if 0 < info.st_size <= seen:
                    break  # the whole file as it was at open: no extra visit to learn of EOF
                if seen >= hole_end:
                    read = await run_sync(reads.read_at, fd, seen, chunk_size, info.st_size)
                    if isinstance(read, bytes):
                        chunk = read
                        continue
                    hole_end = seen + read
                chunk = reads.zeros(min(chunk_size, hole_end - seen))  # a hole is not read

        stream = ReadStream(chunks(), size=info.st_size)
        try:
            yield stream
        finally:
            await stream.aclose()
            os.close(fd)

    @asynccontextmanager
    async def _open_update(self, path: str, request: ReadRequest) -> AsyncIterator[Update]:
        """Read the file under its CAS lock and keep the lock until the update is done.

        A file over ``request.content_max`` is hashed, not kept in memory, and held open.
        """
        held = reads.HeldFile()
        async with self._cas_locked(path):
            try:
                opened = partial(reads.open_entry, self.root_dir, path, request.max_size)
                read = partial(reads.read_entry, path, content_max=request.content_max, held=held)
                found = await self._open_and_read(opened, read)
                current, seen = (None, Seen(None)) if found is None else found
                device = seen.directory_device  # (where the new file is written)
                in_memory = device is not None and device == self._memory_device
                inline_max = INLINE_READ_MAX if self.inline_reads and in_memory else -1
                yield LockedUpdate(
                    self, self.root_dir, path, current, seen, inline_max=inline_max, held=held
                )
            finally:
                held.close()

    async def _write(self, path: str, data: bytes, expect: Expect) -> Version:
        """Atomically replace or create a file, under the file's CAS lock."""
        async with self._cas_locked(path):
            return await run_sync(writes.write, self.root_dir, path, data, expect)

    async def _delete(self, path: str, expect: Version | None) -> None:
        """Delete a file or an empty directory, under the file's CAS lock."""
        async with self._cas_locked(path):
            await run_sync(writes.delete, self.root_dir, path, expect)

    async def _list(self, path: str) -> builtins.list[Stat]:
        """List a directory; temporary files are reaped."""
        return await run_sync(listing.list_entries, self.root_dir, path, self.temp_max_age)

    async def _list_names(self, path: str) -> Listing:
        """A directory's names and kinds, no ``stat``; kept while it is unchanged."""
        return await run_sync(
            listing.list_names, self.root_dir, self._names, path, self.temp_max_age
        )

    async def _details(self, entries: builtins.list[Stat]) -> builtins.list[Stat]:
        """``stat`` the entries (of one directory) in one worker trip."""
        if all(entry.mtime is not None for entry in entries):
            return entries
        return await run_sync(listing.details, self.root_dir, entries)

    async def _move_directory(self, source: str, destination: str) -> None:
        """Rename directory *source* to *destination* (``RENAME_NOREPLACE``), durably."""
        await run_sync(writes.move_directory, self.root_dir, source, destination)

    async def _mkdir(self, path: str) -> None:
        """Create a directory and its parents, one level at a time."""
        await run_sync(writes.mkdir, self.root_dir, path)

    async def search_files(self, search: FileSearch) -> FileMatches | None:
        """Ripgrep's answer, confined by Landlock (None where either is missing).

        Ripgrep reads bytes as UTF-8. For a search that may find text beyond ASCII (a pattern
        naming such characters, a caller with ``legacy_text``), a second run beside it names
        the files that are not UTF-8, left to the caller (:attr:`~FileMatches.unsearched`).
        Asked again while nothing below the directory has changed (the next page), an answer
        is given again without a search. Files with other names are left out unless they may
        be read.
        """
        # the first call runs the binary once (what it loads): not on the event loop
        engine = await run_sync(find_ripgrep) if self.ripgrep else None
        if engine is None:
            return None
        self.root_dir.check()  # (ripgrep starts in the root: a deleted one is said so here)
        questions = [search]
        if search.pattern is not None and (
            search.legacy_text or names_beyond_ascii(search.pattern)
        ):
            # (a pattern in ripgrep's syntax: this question never leaves fs-local)
            questions.append(
                replace(
                    search, pattern=NOT_UTF8, ignore_case=False, multiline=False, found_so_far=None
                )
            )
        answers = await self._answers(engine, questions)
        found = answers[0]
        if found is None or None in answers:
            return None
        if len(answers) > 1 and (not_utf8 := answers[1]) is not None:
            unsearched = frozenset(not_utf8.counts)
            counts = found.counts
            if unsearched:  # (100,000 counts are not copied on the loop for nothing)
                counts = {path: n for path, n in counts.items() if path not in unsearched}
            found = replace(
                found,
                counts=counts,
                unsearched=unsearched,
                complete=found.complete and not_utf8.complete,
            )
        if self.root_dir.read_hard_links or search.pattern is None:
            return found
        counts, linked = await run_sync(_single_named, self.root_fd, found.counts)
        left: dict[str, int] = {}
        if found.unsearched:
            named = dict.fromkeys(found.unsearched, 0)
            left, also = await run_sync(_single_named, self.root_fd, named)
            linked += also
        return replace(
            found,
            counts=counts,
            unsearched=frozenset(left),
            skipped={"hard_linked": linked} if linked else {},
        )

    async def _answers(
        self, engine: Ripgrep, questions: list[FileSearch]
    ) -> list[FileMatches | None]:
        """Ripgrep's answer to each of *questions* (one directory's), run side by side.

        An answer kept from before is given again while nothing it covers has changed.
        """
        directory_fd = await run_sync(self._searched_directory, questions[0].path)
        answers: list[FileMatches | BaseException | None] = [None] * len(questions)

        async def answer(index: int) -> None:
            question = questions[index]
            try:
                found = None
                if self.answers.holds(question):
                    found = await run_sync(self.answers.recall, self.root_fd, question)
                if found is None:
                    since_ns = self.answers.started()
                    found = await engine.search(
                        self.root, self.root_fd, question, directory_fd=directory_fd
                    )
                    if found is not None:
                        self.answers.remember(question, found, since_ns=since_ns)
                answers[index] = found
            except Exception as error:  # raised below as it is, not in an exception group
                answers[index] = error
                side_by_side.cancel_scope.cancel()  # (the other's answer is of no use now)

        try:
            async with anyio.create_task_group() as side_by_side:
                for index in range(1, len(questions)):
                    side_by_side.start_soon(answer, index)
                await answer(0)
        finally:
            if directory_fd is not None:
                os.close(directory_fd)
        for answered in answers:
            if isinstance(answered, BaseException):
                raise answered
        return [answered for answered in answers if not isinstance(answered, BaseException)]

    def _searched_directory(self, path: str) -> int | None:
        """Directory *path* open (as judged, if it was), for ripgrep to read only beneath it.

        None for the root, or where it cannot be opened (ripgrep then finds nothing there).
        """
        if not path:
            return None
        try:
            return self.root_dir.open(path, DIR_FLAGS)
        except Stale:
            raise
        except FsError:
            return None

    async def search_lines(self, search: LineSearch) -> FileLines | None:
        """Ripgrep's matching lines of the files, confined by Landlock (None where it cannot).

        Each file is opened here as a read opens it, and ripgrep reads that.
        """
        engine = await run_sync(find_ripgrep) if self.ripgrep else None
        if engine is None:
            return None
        self.root_dir.check()
        opened = await run_sync(_open_searchable, self.root_dir, search.paths)
        if not opened:  # none is a regular file that may be read: none to give
            return FileLines(lines={})
        try:
            return await engine.lines(self.root, self.root_fd, search, opened=opened)
        finally:
            for fd in opened.values():
                os.close(fd)

    def lock(self, key: str, *, timeout: float) -> AbstractAsyncContextManager[None]:
        """The cross-process mutation lock of the file *key* (:meth:`locate`'s key)."""
        return self.locks.hold("mutation", key, timeout=timeout)

    def lock_order(self, key: str) -> str:
        """*key*'s lock file first (other processes meet that), then the key (this one's)."""
        return f"{self.locks.file_name('mutation', key)}\0{key}"

    async def aclose(self) -> None:
        """Close the root and lock-directory descriptors; every later call is ``unavailable``."""
        with contextlib.suppress(OSError):
            self.root_dir.close()
        with contextlib.suppress(OSError):
            self.locks.close()

    # -- where blocking work runs ------------------------------------------------------------

    @asynccontextmanager
    async def _cas_locked(self, path: str) -> AsyncIterator[None]:
        """Hold the CAS lock of the file *path* resolves to (one for every spelling).

        Within a call core judged, that is the judged location (what is opened is checked
        against it); elsewhere *path* is located.
        """
        where = authorized_location(self, path) or await self._locate(path)
        async with self.locks.hold("cas", where.key, timeout=_CAS_LOCK_TIMEOUT):
            yield

    async def _inline(self, function: Callable[..., T], *args: object) -> T:
        """Run *function*, a few system calls, on the event loop where reads are inline."""
        if self.inline_reads:
            return function(*args)
        return await run_sync(function, *args)

    async def _open_and_read(
        self,
        opened: Callable[[], tuple[int, os.stat_result, *Ts] | None],
        read: Callable[[int, os.stat_result, *Ts], T],
    ) -> T | None:
        """*read* what *opened* opens (None: missing, not read); *read* closes the file.

        *opened* gives a descriptor, its ``fstat`` and what else *read* takes. On the event
        loop where reads are inline and the file is small, else in a thread.
        """
        if not self.inline_reads:

            def both() -> T | None:
                found = opened()
                return None if found is None else read(*found)

            return await run_sync(both)
        found = opened()
        if found is None:
            return None
        if found[1].st_size <= INLINE_READ_MAX:
            return read(*found)
        return await _run_owning(found[0], partial(read, *found))


def _root_identity(root_fd: int, opened: os.stat_result) -> str:
    """The root's filesystem and inode, which a rename, a bind mount or a remount keep.

    The filesystem is named by its ``f_fsid`` (ext4, XFS, Btrfs: from the filesystem's UUID;
    tmpfs: one per mount), or by its device number where it gives none.
    """
    fsid = os.fstatvfs(root_fd).f_fsid
    filesystem = f"{fsid:x}" if fsid else f"dev{opened.st_dev}"
    return f"local:{filesystem}:{opened.st_ino}"


async def _run_owning(fd: int, work: Callable[[], T]) -> T:
    """Run *work*, which closes *fd*, in a worker thread; close *fd* here only if it never ran.

    Closing it twice could close another thread's newer descriptor of the same number.
    """
    ran = False

    def run() -> T:
        nonlocal ran
        ran = True
        return work()

    try:
        return await run_sync(run)
    finally:
        if not ran:  # cancelled before a worker took it
            with contextlib.suppress(OSError):
                os.close(fd)


def _open_searchable(root: RootDirectory, paths: tuple[str, ...]) -> dict[str, int]:
    """Each path a search may read, opened as a read opens it (a FIFO's open does not wait).

    Only files ripgrep reads as ctxfs does (:func:`_read_as_utf8`); the others are read there.
    """
    opened: dict[str, int] = {}
    for path in paths:
        with contextlib.suppress(FsError):
            fd = root.open_file(path)[0]
            if _read_as_utf8(fd):
                opened[path] = fd
            else:
                os.close(fd)
    return opened


def _read_as_utf8(fd: int) -> bool:
    """Whether the file's leading bytes are UTF-8, or UTF-16 with a BOM: what ripgrep decodes.

    ctxfs reads other text in its encoding (or refuses it), where ripgrep would match bytes.
    """
    try:
        head = os.pread(fd, _ENCODING_HEAD, 0)
    except OSError:  # not a regular file: the read there says what it is
        return False
    if head.startswith(_UTF16_BOMS) and not head.startswith(_UTF32_BOMS):
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=len(head) < _ENCODING_HEAD)
    except UnicodeDecodeError:
        return False
    return True


def _single_named(root_fd: int, counts: dict[str, int]) -> tuple[dict[str, int], int]:
    """The files of *counts* with no other name, and how many had one (left out)."""
    kept, linked = {}, 0
    for path, count in counts.items():
        try:
            info = os.stat(path, dir_fd=root_fd, follow_symlinks=False)
        except OSError:
            continue  # gone since ripgrep saw it
        if info.st_nlink == 1:
            kept[path] = count
        else:
            linked += 1
    return kept, linked


def _lock_directory(root: Path, state_dir: str | os.PathLike[str] | None) -> LockDirectory:
    state = Path(os.path.realpath(state_dir or default_state_dir()))
    if state == root or root in state.parents:
        raise InvalidArgument(
            f"the state directory {state} must lie outside the root",
            hint="Point CTXFS_STATE_DIR (or state_dir) at a directory outside the root.",
        )
    try:
        return LockDirectory(state)
    except OSError as error:
        raise unusable_state_dir(state, error) from error
