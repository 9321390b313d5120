"""Execution contexts and ``ctx.fs``, the owner-bound seam every tool calls.

Each operation runs the same pipeline: the path is checked as a string, the
policies vote (``ctxfs_authorize``), and only then is the store touched. A
mutation then takes the locks, reads the current version, lets the checkers
vote on it, writes with the store's compare-and-swap and reports the commit;
see :mod:`ctxfs.core.hookspecs` for the order.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, aclosing, asynccontextmanager, suppress
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Final, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

from ctxfs.core.backend import (
    FileKind,
    FileLines,
    FileMatches,
    FileSearch,
    LineSearch,
    Listing,
    ListingPage,
    Location,
)
from ctxfs.core.errors import (
    AlreadyExists,
    BackendError,
    Busy,
    FsError,
    InvalidArgument,
    NotADirectory,
    NotFound,
    Stale,
    TooLarge,
)
from ctxfs.core.globs import relative_to
from ctxfs.core.outcomes import (
    BytesOutcome,
    EditOutcome,
    InsertOutcome,
    MoveOutcome,
    Operation,
    OpKind,
    PatchedFile,
    PatchOutcome,
    ReadOutcome,
    WriteOutcome,
)
from ctxfs.core.paths import join_path, normalize_path
from ctxfs.core.text import (
    AnyDocument,
    Change,
    FilePatch,
    PatchAction,
    Replacement,
    TextEncoding,
    TextOptions,
    check_edit_strings,
    check_replacements,
    decode_document,
    iter_lines,
    patch_document,
    read_window,
    replace_in_turn,
)
from ctxfs.core.versions import ABSENT, Absent, Version

if TYPE_CHECKING:
    from ctxfs.core.backend import Blob, Stat, Update
    from ctxfs.core.fs import Fs
    from ctxfs.core.observations import Observation

__all__ = ["MAX_MOVED_ENTRIES", "TEXT_WORK_INLINE_BYTES", "Context", "ContextFs"]

T = TypeVar("T")

TEXT_WORK_INLINE_BYTES: Final = 32 << 10
"""Files up to this size are decoded and changed on the event loop (a few milliseconds
at most); larger ones in a worker thread, so that other tasks keep running meanwhile."""

MAX_MOVED_ENTRIES: Final = 1000
"""Most entries (files, directories, links, at any depth) one directory move carries:
each is judged by the policies and locked while it moves."""

INLINE_REPLACEMENTS: Final = 1024
"""An edit with more matches than this, or none (its diagnosis searches the file for
the closest text), runs in a worker thread whatever the file's size."""


class Context:
    """One execution context: an owner (an agent, a session) in a workspace.

    Observations are kept per owner, so two contexts with the same owner share
    what they have read. Create contexts with :meth:`Fs.context`.
    """

    __slots__ = ("_fs", "mount", "owner", "workspace")

    def __init__(self, mount: Fs, *, owner: str, workspace: str | None = None) -> None:
        if not owner:
            raise ValueError("a context needs a non-empty owner")
        self.mount = mount
        """The :class:`Fs` this context works on."""
        self.owner = owner
        self.workspace = workspace
        self._fs = ContextFs(self)

    @property
    def fs(self) -> ContextFs:
        """File operations on behalf of this context's owner."""
        return self._fs

    def __repr__(self) -> str:
        return f"Context(owner={self.owner!r}, workspace={self.workspace!r})"


class ContextFs:
    """The file operations of one context. Failures raise ``FsError`` subclasses.

    Every operation ends by reporting itself, success or failure, through
    ``ctxfs_finished`` (an audit ledger listens there).
    """

    __slots__ = ("_ctx",)

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    async def read(
        self, path: str, *, offset: int = 1, limit: int | None = None, encoding: str | None = None
    ) -> ReadOutcome:
        """Read up to *limit* lines of a text file from 1-based line *offset*.

        The file streams through the backend: memory stays bounded by the window.
        *encoding* pins the legacy encoding of a file that is not UTF-8 (one the
        detection refused as ambiguous, say); edits of the version read keep it.

        Raises:
            NotFound, IsADirectory, BinaryFile, EncodingError, InvalidArgument
            (also for an *encoding* Python does not know), and any refusal of a policy.

        """
        ctx, mount = self._ctx, self._ctx.mount
        async with self._reported(OpKind.READ, path, file=True) as report:
            op = report.op
            await mount.hooks.authorize(ctx, op)
            options = mount.text_options.for_path(op.path)
            if encoding is not None:
                options = _pinned(options, encoding)
            async with mount.backend.open_read(op.path, chunk_size=options.chunk_size) as stream:
                window = await read_window(
                    stream,
                    offset=offset,
                    limit=limit,
                    options=options,
                    path=op.path,
                    known=mount.known_encodings if encoding is None else None,
                )
            report.after = stream.version
            if encoding is not None and window.encoding == options.legacy_encodings[0]:
                mount.known_encodings.remember(stream.version, TextEncoding(codec=window.encoding))
            await mount.hooks.observed(
                ctx,
                op,
                stream.version,
                complete=window.complete,
                lines=window.seen_lines,
                total_lines=window.total_lines,
            )
        return ReadOutcome(
            path=op.path,
            text=window.text,
            version=stream.version,
            offset=window.offset,
            returned_lines=window.returned_lines,
            total_lines=window.total_lines,
            next_offset=window.next_offset,
            partial=not window.complete,
            truncated_lines=window.truncated_lines,
            output_capped=window.output_capped,
            encoding=window.encoding,
        )

    async def read_bytes(
        self, path: str, *, offset: int = 0, length: int | None = None, observe: bool = True
    ) -> BytesOutcome:
        """Read a file's bytes, text or not: *length* bytes from *offset*, or to its end.

        An observation like :meth:`read`'s: the whole file is a complete one
        (it licenses :meth:`write` and :meth:`write_bytes` over the file), a
        range a partial one (it licenses edits, moves and deletes). With
        ``observe=False`` it is none (a look at a file's first bytes, to tell
        what it is, licenses nothing). Reading to the end holds the rest of the
        file in memory: above ``TextOptions.max_edit_bytes`` it is refused.

        Raises:
            NotFound, IsADirectory, NotARegularFile, InvalidArgument (a negative
            offset or length), TooLarge, and any refusal of a policy.

        """
        ctx, mount = self._ctx, self._ctx.mount
        if offset < 0 or (length is not None and length < 0):
            raise InvalidArgument(
                f"offset and length must not be negative ({offset}, {length})",
                details={"field": "offset" if offset < 0 else "length"},
            )
        async with self._reported(OpKind.READ, path, file=True) as report:
            op = report.op
            await mount.hooks.authorize(ctx, op)
            blob = await mount.backend.read(
                op.path,
                start=offset,
                end=None if length is None else offset + length,
                max_size=mount.text_options.max_edit_bytes if length is None else None,
            )
            complete = offset == 0 and len(blob.data) == blob.size
            report.after = blob.version
            if observe:
                await mount.hooks.observed(ctx, op, blob.version, complete=complete)
        return BytesOutcome(
            path=op.path,
            data=blob.data,
            version=blob.version,
            offset=offset,
            size=blob.size,
            complete=complete,
        )

    async def write_bytes(self, path: str, data: bytes) -> WriteOutcome:
        """Create a file, or replace one the owner has read whole, with *data* as it is.

        The same guards as :meth:`write` (a whole :meth:`read_bytes` counts as
        reading the whole file); no encoding or line ending is touched.

        Raises:
            NotObserved, Stale, Busy, IsADirectory, NotADirectory, TooLarge, and
            any refusal of a policy.

        """
        async with (
            self._reported(OpKind.WRITE, path, file=True, size=len(data)) as report,
            self._updating(report) as (update, _),
        ):
            await self._store(report, update, data)
        return WriteOutcome(
            path=report.op.path,
            version=report.stored,
            previous_version=report.before,
            created=report.before is None,
            size=len(data),
        )

    async def rewrite_bytes(self, path: str, change: Callable[[bytes], bytes]) -> WriteOutcome:
        """Replace a file the owner has read with *change* of its bytes, as one edit.

        For a change computed from the whole file (a notebook's cell spliced
        into its JSON) without reading it again, which would observe a change
        made since the owner's read instead of refusing it. The guards are
        :meth:`edit`'s, and policies judge it as an ``EDIT``: the file must
        exist and have been read (any part of it) at its current version.
        Under the mutation locks, *change* gets the bytes of that version and
        its result is stored whole, with the store's compare-and-swap. *change*
        must be pure: it may run in a worker thread for a large file, and is
        not called when a guard refuses. What it raises propagates, with
        nothing written.

        Raises:
            NotFound, NotObserved, Stale, Busy, IsADirectory, TooLarge, what
            *change* raises, and any refusal of a policy.

        """
        async with (
            self._reported(OpKind.EDIT, path, file=True) as report,
            self._updating(report) as (update, _),
        ):
            current = update.current
            if current is None:
                raise await update.missing()
            data = await _text_work(current.size, partial(change, current.data))
            await self._store(report, update, data)
        return WriteOutcome(
            path=report.op.path,
            version=report.stored,
            previous_version=report.found,
            created=False,
            size=len(data),
        )

    async def write(self, path: str, content: str) -> WriteOutcome:
        r"""Create a file, or replace one the owner has read whole, with *content*.

        A new file is UTF-8, its line endings as *content* has them. A replaced
        file keeps its encoding, BOM and dominant line ending, and unchanged
        lines keep their bytes.

        Raises:
            NotObserved, Stale, Busy, IsADirectory, NotADirectory, EncodingError,
            and any refusal of a policy.

        """
        size = await _utf8_size(content)
        async with (
            self._reported(OpKind.WRITE, path, file=True, size=size) as report,
            self._updating(report) as (update, _),
        ):
            document, change = await self._rewritten(report, update.current, content)
            await self._store(report, update, change.data, document)
        return WriteOutcome(
            path=report.op.path,
            version=report.stored,
            previous_version=report.before,
            created=report.before is None,
            size=len(change.data),
            first_line=change.first_line,
            last_line=change.last_line,
            diff=None if report.before is None else change.diff,
            total_lines=change.total_lines,
        )

    async def edit(
        self,
        path: str,
        old_string: str,
        new_string: str,
        *,
        replace_all: bool = False,
        dry_run: bool = False,
    ) -> EditOutcome:
        r"""Replace *old_string* by *new_string* in a file the owner has read.

        Matching is literal on the text with line endings folded to ``\n``;
        *old_string* must occur exactly once unless *replace_all* is set. Only
        the matched spans change; the replacement takes their line endings.
        With *dry_run*, every check runs and the outcome says what would change,
        but nothing is written and no observation changes.

        Raises:
            EmptyOldString, NoChange, NotFound, NotObserved, Stale, NoMatch,
            AmbiguousMatch, EncodingError, BinaryFile, Busy, and any refusal of a policy.

        """
        async with self._reported(OpKind.EDIT, path, file=True, dry_run=dry_run) as report:
            check_edit_strings(old_string, new_string)
            change = await self._change(
                report,
                lambda document: document.replace(old_string, new_string, replace_all=replace_all),
                costly=lambda document: (
                    document.occurrences(old_string) not in range(1, INLINE_REPLACEMENTS + 1)
                ),
            )
        return _edited(report, change)

    async def multi_edit(
        self, path: str, edits: Sequence[Replacement], *, dry_run: bool = False
    ) -> EditOutcome:
        """Apply *edits* in order to one file the owner has read, all or nothing.

        Each edit is an :meth:`edit` of the text the edits before it left; the
        file is written once, after the last. If any fails, nothing is written,
        and the error names the edit (``details["edit"]``, 0-based) and why, as
        :meth:`edit` would. *dry_run* as for :meth:`edit`.

        Raises:
            InvalidArgument (no edits), and what :meth:`edit` raises.

        """
        async with self._reported(OpKind.EDIT, path, file=True, dry_run=dry_run) as report:
            check_replacements(edits)
            options = self._ctx.mount.text_options
            change = await self._change(
                report,
                lambda document: replace_in_turn(document, edits, options),
                costly=lambda document: (
                    len(edits) > 1
                    or document.occurrences(edits[0].old_string)
                    not in range(1, INLINE_REPLACEMENTS + 1)
                ),
            )
        return _edited(report, change, edits=len(edits))

    async def insert(self, path: str, after_line: int, text: str) -> InsertOutcome:
        """Insert *text* as whole lines after line *after_line* (0 is the top of the file).

        Same guards as :meth:`edit`. The lines take the file's dominant line
        ending; a file without a final newline keeps lacking one.

        Raises:
            InvalidArgument (line out of range), NotFound, NotObserved, Stale,
            EncodingError, BinaryFile, Busy, and any refusal of a policy.

        """
        async with self._reported(OpKind.INSERT, path, file=True) as report:
            change = await self._change(report, lambda document: document.insert(after_line, text))
        return InsertOutcome(
            path=report.op.path,
            version=report.stored,
            previous_version=report.found,
            first_line=change.first_line,
            last_line=change.last_line,
            diff=change.diff,
        )

    async def delete(self, path: str) -> None:
        """Delete a file the owner has read (any window of its current version).

        Raises:
            NotFound, NotObserved, Stale, Busy, IsADirectory, and any refusal of a policy.

        """
        async with (
            self._reported(OpKind.DELETE, path, file=True) as report,
            self._updating(report, max_size=None) as (update, _),
        ):
            await update.delete()

    async def move(self, source: str, destination: str, *, overwrite: bool = False) -> MoveOutcome:
        """Move (rename) a file the owner has read, or a whole directory, to *destination*.

        A file must be observed at its current version, as for :meth:`delete`;
        the destination must not exist, or, with *overwrite*, be observed at its
        current version too. Policies judge both paths (two ``MOVE`` operations);
        both files are locked, in an order every move shares, so two opposite
        moves cannot deadlock. Missing directories of the destination are made.
        Afterwards the owner has observed the file at the destination, and no
        longer at the source.

        A directory moves whole where the backend can (``directory_moves``; see
        :meth:`_move_directory`): no observation is needed, but policies judge
        every entry below it, and every one is locked, while it moves.

        Raises:
            NotFound, NotObserved, Stale, Busy, IsADirectory (a directory, where
            the store cannot move one), AlreadyExists (the destination exists and
            *overwrite* is false), InvalidArgument (both paths name one file, the
            root, a directory into itself or with *overwrite*), TooLarge (a
            directory of more than :data:`MAX_MOVED_ENTRIES` entries), and any
            refusal of a policy.

        """
        mount = self._ctx.mount
        async with self._moving(source, destination, file=False) as (leaving, arriving):
            if not leaving.op.path or not arriving.op.path:
                raise InvalidArgument(
                    "the root cannot be moved, nor be a destination", path=leaving.op.path
                )
            for report in (leaving, arriving):
                await mount.hooks.authorize(self._ctx, report.op)
            if (await self._kind(leaving.op.path)) is FileKind.DIRECTORY:
                moved = await self._move_directory(leaving, arriving, overwrite=overwrite)
                return MoveOutcome(
                    path=leaving.op.path,
                    destination=arriving.op.path,
                    version=None,
                    directory=True,
                    moved=moved,
                )
            for spelled in (source, destination):
                normalize_path(spelled, file=True)  # a file's path: no trailing slash
            await self._move_file(leaving, arriving, overwrite=overwrite)
        return MoveOutcome(
            path=leaving.op.path,
            destination=arriving.op.path,
            version=arriving.stored,
            replaced=arriving.before,
        )

    async def apply_patch(
        self, patches: Sequence[FilePatch], *, dry_run: bool = False
    ) -> PatchOutcome:
        """Apply a patch over several files: all of it, or nothing.

        Each file's part runs under the rules of the operation it is: an added
        file is a :meth:`write` (an existing one must have been read whole), an
        updated one an edit by hunks (:func:`~ctxfs.core.text.patch_document`),
        a deleted one a :meth:`delete`; an update with ``move_to`` is a
        :meth:`move` whose destination takes the new text (an existing
        destination must have been read at its current version). Every file is
        authorized, then all are locked (in key order) and read once, and every
        check passes (each file as it must be, observed, each hunk applying)
        before anything is written. The files are then written side by side;
        if the store fails for any, what was written is put back, under the
        same locks, and the error says what the files hold now. With
        *dry_run*, the checks run and nothing is written.

        Raises:
            InvalidArgument (no files, or two parts naming one file), NotFound,
            NotObserved, Stale, NoMatch (``details["hunk"]``), EncodingError,
            BinaryFile, Busy, and any refusal of a policy. A failure after a
            write raises what the store raised, once all is put back (or
            ``BackendError`` naming what could not be).

        """
        if not patches:
            raise InvalidArgument("the patch changes no file", hint="Give at least one file.")
        async with AsyncExitStack() as stack:
            parts = [
                await stack.enter_async_context(self._patch_part(patch, dry_run))
                for patch in patches
            ]
            reports = [report for part in parts for report in part.reports]
            async with self._updating_all(reports, refuse=_refuse_missing(parts)) as opened:
                updates = iter(opened)
                for part in parts:
                    part.opened = [next(updates) for _ in part.reports]
                for part in parts:  # every check, before anything is written
                    part.change = await self._patched(part)
                if not dry_run:
                    await self._write_parts(parts)
        return PatchOutcome(files=tuple(part.outcome() for part in parts), written=not dry_run)

    @asynccontextmanager
    async def _moving(
        self, source: str, destination: str, *, file: bool, dry_run: bool = False
    ) -> AsyncIterator[tuple[_Report, _Report]]:
        """The two ``MOVE`` operations of a move, each naming the other, reported as it ends."""
        async with (
            self._reported(OpKind.MOVE, source, file=file, dry_run=dry_run) as leaving,
            self._reported(OpKind.MOVE, destination, file=file, dry_run=dry_run) as arriving,
        ):
            leaving.op = replace(leaving.op, moved_to=arriving.op.path)
            arriving.op = replace(arriving.op, moved_from=leaving.op.path)
            yield leaving, arriving

    @asynccontextmanager
    async def _patch_part(self, patch: FilePatch, dry_run: bool) -> AsyncIterator[_PatchPart]:
        """The operations of one file's part of a patch, reported however the patch ends."""
        if patch.move_to is not None and patch.action is PatchAction.UPDATE:
            async with self._moving(patch.path, patch.move_to, file=True, dry_run=dry_run) as pair:
                yield _PatchPart(patch=patch, reports=list(pair))
            return
        size = None
        if patch.action is PatchAction.ADD:
            size = await _utf8_size(patch.content or "")
        async with self._reported(
            _PATCH_KINDS[patch.action], patch.path, file=True, size=size, dry_run=dry_run
        ) as report:
            yield _PatchPart(patch=patch, reports=[report])

    async def _patched(self, part: _PatchPart) -> tuple[Change, AnyDocument] | None:
        """What *part* writes (None: a delete, or a move without hunks), checked, unwritten."""
        patch, (update, _) = part.patch, part.opened[0]
        path, current = part.reports[0].op.path, update.current
        if patch.action is PatchAction.DELETE or (patch.move_to and not patch.hunks):
            return None
        if patch.action is PatchAction.ADD:
            document, change = await self._rewritten(part.reports[0], current, patch.content or "")
            return change, document
        assert current is not None  # refused before, when missing
        located = replace(patch, path=path)

        def hunks() -> tuple[Change, AnyDocument]:
            document = self._decode(path, current)
            return patch_document(document, located), document

        return await _text_work(current.size, hunks, costly=len(patch.hunks) > 1)

    async def _write_parts(self, parts: list[_PatchPart]) -> None:
        """Write every checked part, files side by side; on a failure, put back what was written.

        Each part's writes run in a task of their own and none cancels another,
        so every write that lands is known, and undone if any part fails (or
        the patch is cancelled).
        """
        done: list[tuple[Update, Version | None]] = []  # each update, and the version it left
        failures: list[tuple[int, FsError]] = []
        stored = _stored_by(parts)

        async def write(index: int, part: _PatchPart) -> None:
            try:
                await self._write_part(part, done)
            except FsError as failure:
                failures.append((index, failure))

        try:
            async with anyio.create_task_group() as group:
                for index, part in enumerate(parts):
                    group.start_soon(write, index, part)
        except BaseException:
            with anyio.CancelScope(shield=True):
                _put_back(stored, await _undone(done, _move_sources(stored)))
            raise
        if failures:
            failure = min(failures, key=lambda pair: pair[0])[1]  # the first in the patch
            with anyio.CancelScope(shield=True):
                kept = await _undone(done, _move_sources(stored))
            _put_back(stored, kept)
            order = {update.path: n for n, part in enumerate(parts) for update, _ in part.opened}
            done.sort(key=lambda pair: order[pair[0].path])
            raise _rolled_back(failure, done, kept, what="the patch") from failure

    async def _write_part(
        self, part: _PatchPart, done: list[tuple[Update, Version | None]]
    ) -> None:
        last = part.reports[-1]
        (update, _), (there, _) = part.opened[0], part.opened[-1]
        if part.patch.action is PatchAction.DELETE:
            await update.delete()
            done.append((update, None))
        elif part.change is None:  # a move, no more
            last.after = await update.move(there)
            done += [(update, None), (there, last.after)]
        else:
            change, document = part.change
            await self._store(last, there, change.data, document)
            done.append((there, last.after))
            if there is not update:
                await update.delete()
                done.append((update, None))

    async def _kind(self, path: str) -> FileKind | None:
        """What *path* names (links followed), or None where nothing does."""
        try:
            return (await self._ctx.mount.backend.stat(path)).kind
        except (NotFound, NotADirectory):
            return None

    async def _move_file(self, leaving: _Report, arriving: _Report, *, overwrite: bool) -> None:
        """Move one file (both operations authorized already) under the mutation protocol."""

        async def refuse(updates: list[Update]) -> None:
            here, there = updates
            if here.current is None:
                raise await here.missing()
            if there.current is not None and not overwrite:
                raise AlreadyExists(
                    f"{arriving.op.path} already exists",
                    path=arriving.op.path,
                    hint="Choose another destination, or pass overwrite=true after "
                    "reading the file there.",
                )

        async with self._updating_all(
            [leaving, arriving], max_size=None, refuse=refuse, authorized=True
        ) as opened:
            (here, _), (there, _) = opened
            arriving.after = await here.move(there)

    async def _move_directory(self, leaving: _Report, arriving: _Report, *, overwrite: bool) -> int:
        """Move a directory whole (its own operations authorized); return the entries moved.

        Every entry below it (links not followed) is judged as a ``MOVE`` from its
        path and to its new one, before anything is locked; then every one is
        locked, in key order, while the backend renames the directory at once;
        then the owner's observations follow the files (:meth:`Hooks.moved`).
        """
        ctx, mount = self._ctx, self._ctx.mount
        here, there = leaving.op, arriving.op
        _check_directory_move(here, there, overwrite=overwrite)
        if not mount.backend.capabilities.directory_moves:
            await mount.backend.move_directory(here.path, there.path)  # refuses, touching nothing
        if await self._kind(there.path) is not None:
            raise AlreadyExists(
                f"{there.path} already exists",
                path=there.path,
                hint="Choose a destination that does not exist yet.",
            )
        pairs = [(here, there), *await self._moved_entries(here, there)]
        for pair in pairs[1:]:
            for op in pair:
                await mount.hooks.authorize(ctx, op)
        by_key = {op.key: op for pair in pairs for op in pair}
        async with AsyncExitStack() as stack:
            for key in sorted(by_key):
                for lock in mount.hooks.mutation_locks(ctx, by_key[key]):
                    await stack.enter_async_context(lock)
            if [pair[0].path for pair in await self._moved_entries(here, there)] != [
                pair[0].path for pair in pairs[1:]
            ]:  # an entry came or went since the policies judged them: judge again
                raise Busy(
                    f"{here.path} changed while it was being moved; nothing moved",
                    path=here.path,
                    hint="Retry the move.",
                )
            await mount.file_context.observation(ctx.owner, here.key)  # the store answers
            await mount.backend.move_directory(here.path, there.path)
            try:
                await mount.hooks.moved(ctx, pairs)
            except BaseException as failure:
                with anyio.CancelScope(shield=True):
                    await self._move_directory_back(pairs, failure)
                raise
        return len(pairs) - 1

    async def _move_directory_back(
        self, pairs: builtins.list[tuple[Operation, Operation]], failure: BaseException
    ) -> None:
        """Undo a directory move (its *pairs*) whose observers failed: raise what to tell.

        The owner's observations go back to the old keys (best effort: the store
        may be down still). A cancellation propagates as it is.
        """
        mount, (here, there) = self._ctx.mount, pairs[0]
        try:
            await mount.backend.move_directory(there.path, here.path)
        except FsError as undo:
            if not isinstance(failure, Exception):
                return
            raise BackendError(
                f"the move of {here.path} failed part way ({failure}) and could not be "
                f"undone ({undo.message}): the directory is now at {there.path}",
                path=here.path,
                hint="List both paths to see where the directory is before trying again.",
                details={"destination": there.path},
            ) from failure
        with suppress(FsError):
            await mount.file_context.follow(
                self._ctx.owner, [(new.key, old.key) for old, new in pairs]
            )
        if isinstance(failure, FsError):
            raise failure.retold(
                f"the move was not applied (nothing changed; {here.path} put back): "
                f"{failure.message}",
                restored=[here.path],
            ) from failure

    async def _moved_entries(
        self, here: Operation, there: Operation
    ) -> builtins.list[tuple[Operation, Operation]]:
        """A ``MOVE`` pair for every entry below directory *here*, bound to *there*.

        Links are not followed: a link's operations name the link itself (its
        path, resolved through the directory), never what it points to.
        """
        backend = self._ctx.mount.backend
        pairs: builtins.list[tuple[Operation, Operation]] = []
        pending = [here.path]
        while pending:
            directory = pending.pop()
            for entry in await backend.list(directory, details=False):
                relative = relative_to(entry.path, here.path)
                if len(pairs) == MAX_MOVED_ENTRIES:
                    raise _too_many(here.path)
                pairs.append(await self._entry_pair(here, there, relative, entry.kind))
                if entry.kind is FileKind.DIRECTORY:
                    pending.append(entry.path)
        return pairs

    async def _entry_pair(
        self, here: Operation, there: Operation, relative: str, kind: FileKind
    ) -> tuple[Operation, Operation]:
        """The ``MOVE`` operations of entry *relative* of directory *here*, moving to *there*."""
        backend = self._ctx.mount.backend
        old, new = join_path(here.path, relative), join_path(there.path, relative)
        if kind is FileKind.SYMLINK:  # the link itself moves: what it leads to does not
            gone = Location(resolved=join_path(here.resolved, relative), key="")
        else:
            gone = await backend.locate(old)
        come = await backend.locate(new)
        return (
            Operation(
                kind=OpKind.MOVE, path=old, moved_to=new, resolved=gone.resolved, key=gone.key
            ),
            Operation(
                kind=OpKind.MOVE, path=new, moved_from=old, resolved=come.resolved, key=come.key
            ),
        )

    async def _change(
        self,
        report: _Report,
        apply: Callable[[AnyDocument], Change],
        *,
        costly: Callable[[AnyDocument], bool] | None = None,
    ) -> Change:
        """Change the text of an existing file under the mutation protocol.

        *costly* says, cheaply, whether *apply* may take long whatever the size.
        """
        async with self._updating(report, decode=True) as (update, document):
            if update.current is None or document is None:
                raise await update.missing()
            size = update.current.size
            change = await _text_work(
                size,
                lambda: apply(document),
                # a large file is changed off the loop anyway: no need to ask
                costly=costly is not None and size <= TEXT_WORK_INLINE_BYTES and costly(document),
            )
            if not report.op.dry_run:
                await self._store(report, update, change.data, document)
        return change

    @asynccontextmanager
    async def _updating(
        self, report: _Report, *, decode: bool = False, max_size: int | Absent | None = ABSENT
    ) -> AsyncIterator[tuple[Update, AnyDocument | None]]:
        """The one mutation protocol, for every operation that changes a file.

        Authorize the operation, hold every mutation lock, read the file once
        (:meth:`Backend.open_update`), decode it if asked (a file no text
        operation can change says so before anything else), let the checkers
        vote on the version read, run the block (which stores the change
        through the update and sets ``report.after``), then report the commit,
        still under the locks.
        """
        async with self._updating_all([report], decode=decode, max_size=max_size) as [opened]:
            yield opened

    @asynccontextmanager
    async def _updating_all(
        self,
        reports: list[_Report],
        *,
        decode: bool = False,
        max_size: int | Absent | None = ABSENT,
        refuse: Callable[[list[Update]], Awaitable[None]] | None = None,
        authorized: bool = False,
    ) -> AsyncIterator[list[tuple[Update, AnyDocument | None]]]:
        """:meth:`_updating` for several files at once, yielded in *reports*' order.

        Every operation is authorized before any lock is taken; the locks, then
        the updates, are taken in the order of the files' keys, the same for
        every caller, so that two operations on the same files cannot deadlock.
        Two paths naming one file are refused (once authorized: that they do is
        not told of a path a policy refuses). *refuse* may raise on what the
        files hold, before the checkers vote. With *authorized*, the caller has
        had every operation authorized already.
        """
        ctx, mount = self._ctx, self._ctx.mount
        for report in [] if authorized else reports:
            await mount.hooks.authorize(ctx, report.op)
        named: dict[str, _Report] = {}
        for report in reports:
            if (first := named.setdefault(report.op.key, report)) is not report:
                raise InvalidArgument(
                    f"{first.op.path} and {report.op.path} are the same file",
                    path=first.op.path,
                )
        if max_size is ABSENT:
            max_size = mount.text_options.max_edit_bytes
        ordered = sorted(reports, key=lambda report: report.op.key)
        opened: dict[int, tuple[Update, AnyDocument | None]] = {}
        async with AsyncExitStack() as stack:
            for report in ordered:
                for lock in mount.hooks.mutation_locks(ctx, report.op):
                    await stack.enter_async_context(lock)
            for report in ordered:
                update = await stack.enter_async_context(
                    mount.backend.open_update(report.op.path, max_size=max_size)
                )
                current, document = update.current, None
                report.before = current.version if current is not None else None
                if decode and current is not None:
                    read = partial(self._decode, report.op.path, current)
                    document = await _text_work(current.size, read)
                opened[id(report)] = (update, document)
            if refuse is not None:
                await refuse([opened[id(report)][0] for report in reports])
            for report in reports:
                report.seen = await mount.hooks.check_version(ctx, report.op, report.before)
            yield [opened[id(report)] for report in reports]
            await self._commit(reports, [opened[id(report)][0] for report in reports])

    async def _commit(self, reports: list[_Report], updates: list[Update]) -> None:
        """Report each stored operation of *reports* (done through *updates*), or undo them all.

        A change the guard cannot record (its observation store failed), one an
        observer fails, and one cancelled meanwhile are put back, still under
        the locks, with what the owner had seen of each file: a mutation is
        stored and recorded, or leaves the files and the observations as they were.
        """
        stored = [
            (update, report)
            for update, report in zip(updates, reports, strict=True)
            if not report.op.dry_run
        ]
        ctx, mount = self._ctx, self._ctx.mount
        try:
            for _, report in stored:
                await mount.hooks.committed(ctx, report.op, report.before, report.after)
        except BaseException as failure:
            done = [(update, report.after) for update, report in stored]
            with anyio.CancelScope(shield=True):
                kept = await _undone(done, _move_sources(stored))
                _put_back(stored, kept)
                for update, report in stored:
                    if update.path not in kept:  # (best effort: the store may be down still)
                        with suppress(FsError):
                            await mount.file_context.restore(ctx.owner, report.op.key, report.seen)
            if isinstance(failure, FsError):
                raise _rolled_back(failure, done, kept, what="the change") from failure
            if kept and isinstance(failure, Exception):  # an observer's bug: say what is left
                bug = BackendError(f"an observer failed: {failure!r}", path=stored[0][0].path)
                raise _rolled_back(bug, done, kept, what="the change") from failure
            raise

    async def _store(
        self, report: _Report, update: Update, data: bytes, document: AnyDocument | None = None
    ) -> None:
        """Write *data* through *update*; for a changed text, remember its encoding by version."""
        try:
            report.after = await update.write(data)
        except AlreadyExists:
            raise Stale(
                f"{report.op.path} was created by someone else meanwhile", path=report.op.path
            ) from None
        if document is not None:
            self._ctx.mount.known_encodings.remember(report.after, document.encoding)

    async def _rewritten(
        self, report: _Report, current: Blob | None, content: str
    ) -> tuple[AnyDocument, Change]:
        """The file a write read (*current*; None: a new one) decoded, and its change to *content*.

        ``report.op.size`` is the size of *content* in bytes.
        """
        path, options = report.op.path, self._ctx.mount.text_options

        def rewrite() -> tuple[AnyDocument, Change]:
            document = (
                self._decode(path, current)
                if current is not None
                else decode_document(b"", options, path=path)
            )
            return document, document.rewrite(content)

        work = (report.op.size or 0) + (current.size if current is not None else 0)
        return await _text_work(work, rewrite)

    async def lines(
        self, path: str, *, max_line_chars: int | Absent | None = ABSENT
    ) -> AsyncGenerator[tuple[int, str]]:
        """Yield ``(number, line)`` for each line of a text file, streaming it.

        A search primitive, not a read: policies authorize it like a read, but
        it records no observation, so it never licenses a write or an edit.
        Lines longer than *max_line_chars* (default: the read cap) are cut; with
        None, whole lines are yielded, however long.
        Close the iterator (``contextlib.aclosing``) if you stop early.

        Raises:
            NotFound, IsADirectory, BinaryFile, EncodingError, and any refusal of a policy.

        """
        ctx, mount = self._ctx, self._ctx.mount
        async with self._reported(OpKind.READ, path, file=True) as report:
            await mount.hooks.authorize(ctx, report.op)
            options = mount.text_options.for_path(report.op.path)
            cap = options.max_line_chars if isinstance(max_line_chars, Absent) else max_line_chars
            async with (
                mount.backend.open_read(report.op.path, chunk_size=options.chunk_size) as stream,
                aclosing(
                    iter_lines(stream, options=options, path=report.op.path, max_line_chars=cap)
                ) as numbered,
            ):
                async for item in numbered:
                    yield item

    async def list(self, path: str = "") -> Listing:
        """List a directory (the root by default), sorted by name.

        Entries a policy hides (``ctxfs_hidden``: a denied name, or a link to
        one) are left out; so are those no path can name (counted in
        :attr:`Listing.unnamed`).
        """
        return await self._visible(path, details=True)

    async def list_page(self, path: str = "", *, first: int, count: int) -> ListingPage:
        """Entries *first* (1-based) to ``first + count - 1`` of :meth:`list`'s, and its total.

        Only the page's entries are looked at in detail (fs-local: ``stat``
        only those, and the names of an unchanged directory are not read again).
        """
        mount = self._ctx.mount
        entries = await self._visible(path, details=False)
        page = await mount.backend.details(entries[first - 1 : first - 1 + count])
        return ListingPage(entries=page, total=len(entries), unnamed=entries.unnamed)

    async def list_tree(self, path: str = "") -> Listing | None:
        """Every file below a directory, sorted by path, where the store lists a tree at once.

        None where it does not (walk it with :meth:`list`). What a policy hides
        is left out: a file, or one below a hidden directory.
        """
        ctx, mount = self._ctx, self._ctx.mount
        if not mount.backend.capabilities.tree_listing:
            return None  # nothing to authorize, nor to report: the caller lists instead
        async with self._reported(OpKind.LIST, path, file=False) as report:
            await mount.hooks.authorize(ctx, report.op)
            entries = await mount.backend.list_tree(report.op.path)
            if entries is None or not mount.hooks.hides:
                return entries
            leads = {entry.path: _with_parents(entry.path, report.op.path) for entry in entries}
            hidden = await mount.hooks.hidden(ctx, sorted({p for ps in leads.values() for p in ps}))
            return Listing(
                (entry for entry in entries if not any(p in hidden for p in leads[entry.path])),
                unnamed=entries.unnamed,
            )

    async def _visible(self, path: str, *, details: bool) -> Listing:
        ctx, mount = self._ctx, self._ctx.mount
        async with self._reported(OpKind.LIST, path, file=False) as report:
            await mount.hooks.authorize(ctx, report.op)
            entries = await mount.backend.list(report.op.path, details=details)
            if not mount.hooks.hides:
                return entries
            directory = report.op.resolved  # where the entries are, through links
            leads: dict[str, list[str]] = {}
            for entry in entries:
                leads[entry.path] = [entry.path, join_path(directory, entry.name)]
                if entry.kind is FileKind.SYMLINK:
                    with suppress(FsError):  # a link that leads nowhere it could be read
                        leads[entry.path].append((await mount.backend.locate(entry.path)).resolved)
            hidden = await mount.hooks.hidden(
                ctx, [path for paths in leads.values() for path in paths]
            )
            return Listing(
                (entry for entry in entries if not any(p in hidden for p in leads[entry.path])),
                unnamed=entries.unnamed,
            )

    async def search_files(self, search: FileSearch) -> FileMatches | None:
        """The files below ``search.path`` holding a match, by the backend's own engine.

        A search primitive, as :meth:`lines` is: authorized as a listing of the
        directory, recording no observation. None when the backend has no engine
        for it (see :meth:`Backend.search_files`): search through :meth:`list`
        and :meth:`lines` then. Paths come spelled below ``search.path`` as
        given; files a policy hides (``ctxfs_hidden``, judged on the spelling and
        on the resolved path) are left out.
        """
        ctx, mount = self._ctx, self._ctx.mount
        if not mount.backend.capabilities.file_search:
            return None  # nothing to authorize, nor to report: the caller walks instead
        async with self._reported(OpKind.LIST, search.path, file=False) as report:
            await mount.hooks.authorize(ctx, report.op)
            resolved = report.op.resolved
            found = await mount.backend.search_files(replace(search, path=resolved))
            if found is None or (report.op.path == resolved and not mount.hooks.hides):
                return found  # every path spelled as found, and nothing to hide
            if report.op.path == resolved:  # no link on the way: every path is spelled as found
                spelled = {path: (path, count) for path, count in found.counts.items()}
            else:
                spelled = {
                    join_path(report.op.path, relative_to(path, resolved)): (path, count)
                    for path, count in found.counts.items()
                }
            hidden: set[str] = set()
            if mount.hooks.hides and spelled:
                every = [p for pair in spelled.items() for p in (pair[0], pair[1][0])]
                hidden = await mount.hooks.hidden(ctx, every)
            counts = {
                path: count
                for path, (real, count) in spelled.items()
                if path not in hidden and real not in hidden
            }
            return replace(found, counts=counts)

    async def search_lines(self, search: LineSearch) -> FileLines | None:
        """The matching lines of ``search.paths``, by the backend's own engine.

        A search primitive, as :meth:`lines` is: each file is authorized like a
        read (a file refused or gone is left out), and no observation is
        recorded. None when the backend has no engine for it; a file the answer
        leaves out is to be read with :meth:`lines`. Paths come back spelled as
        given.
        """
        ctx, mount = self._ctx, self._ctx.mount
        if not mount.backend.capabilities.line_search:
            return None  # nothing to authorize, nor to report: the caller reads instead
        spelled: dict[str, str] = {}
        for path in search.paths:
            await anyio.lowlevel.checkpoint()  # many files: let a cancel land between them
            with suppress(FsError):  # refused, gone: left out, for reading to say why
                async with self._reported(OpKind.READ, path, file=True) as report:
                    await mount.hooks.authorize(ctx, report.op)
                    spelled[report.op.resolved or report.op.path] = path
        found = await mount.backend.search_lines(replace(search, paths=tuple(spelled)))
        if found is None:
            return None
        return replace(found, lines={spelled[p]: lines for p, lines in found.lines.items()})

    async def stat(self, path: str) -> Stat:
        """Return the metadata of a file or directory."""
        async with self._reported(OpKind.STAT, path, file=False) as report:
            await self._ctx.mount.hooks.authorize(self._ctx, report.op)
            return await self._ctx.mount.backend.stat(report.op.path)

    async def mkdir(self, path: str) -> None:
        """Create a directory and its missing parents."""
        async with self._reported(OpKind.MKDIR, path, file=False) as report:
            await self._ctx.mount.hooks.authorize(self._ctx, report.op)
            await self._ctx.mount.backend.mkdir(report.op.path)

    @asynccontextmanager
    async def _reported(
        self,
        kind: OpKind,
        path: str,
        *,
        file: bool,
        size: int | None = None,
        dry_run: bool = False,
    ) -> AsyncIterator[_Report]:
        """Check *path*, run the block, then report the operation however it ended.

        The operation carries what the path resolves to (:meth:`Backend.locate`).
        """
        report = _Report(op=Operation(kind=kind, path=path, size=size, dry_run=dry_run))
        mount = self._ctx.mount
        hooks = mount.hooks
        try:
            canonical = normalize_path(path, file=file)
            report.op = Operation(kind=kind, path=canonical, size=size, dry_run=dry_run)
            try:
                where = await mount.backend.locate(canonical)
            except FsError:
                # what a denied area holds (a file in the way, a link out) is not told
                await hooks.authorize(self._ctx, report.op)
                raise
            report.op = replace(report.op, resolved=where.resolved, key=where.key)
            yield report
        except FsError as error:
            await hooks.finished(self._ctx, report.op, error, report.before, report.after)
            raise
        except Exception as bug:
            failure = BackendError(f"{kind} failed unexpectedly: {bug!r}", path=report.op.path)
            await hooks.finished(self._ctx, report.op, failure, report.before, report.after)
            raise
        await hooks.finished(self._ctx, report.op, None, report.before, report.after)

    def _decode(self, path: str, blob: Blob) -> AnyDocument:
        """Decode a whole file, detecting its encoding once per version."""
        mount = self._ctx.mount
        known = mount.known_encodings.get(blob.version)
        options = mount.text_options.for_path(path)
        document = decode_document(blob.data, options, path=path, encoding=known)
        mount.known_encodings.remember(blob.version, document.encoding)
        return document


@dataclass
class _Report:
    """What an operation did, as far as it got: for ``ctxfs_finished``."""

    op: Operation
    before: Version | None = None
    after: Version | None = None
    seen: Observation | None = None
    """What the owner had seen of the file before the change (put back if it is undone)."""

    @property
    def found(self) -> Version:
        """The version the operation found (it must have found one)."""
        if self.before is None:
            raise RuntimeError("the operation found no file")  # pragma: no cover
        return self.before

    @property
    def stored(self) -> Version:
        """The version the operation stored (it must have stored one)."""
        if self.after is None:
            raise RuntimeError("the operation stored nothing")  # pragma: no cover
        return self.after


def _edited(report: _Report, change: Change, *, edits: int = 1) -> EditOutcome:
    """The outcome of an edit (or a dry run of one) that made *change*."""
    written = not report.op.dry_run
    return EditOutcome(
        path=report.op.path,
        version=report.stored if written else report.found,
        previous_version=report.found,
        replacements=change.replacements,
        first_line=change.first_line,
        last_line=change.last_line,
        stripped_line_numbers=change.stripped_line_numbers,
        diff=change.diff,
        written=written,
        edits=edits,
    )


async def _text_work(size: int, work: Callable[[], T], *, costly: bool = False) -> T:
    """Run *work* on a file of *size* bytes: inline, or in a worker thread once it is large.

    Decoding and splicing a large file (or an edit with thousands of matches, or
    the diagnosis of one without) takes long enough to stall every other task of
    the event loop (other sessions of a server); a worker thread lets them run
    meanwhile.
    """
    if size <= TEXT_WORK_INLINE_BYTES and not costly:
        return work()
    return await anyio.to_thread.run_sync(work)


async def _utf8_size(text: str) -> int:
    """The size of *text* in UTF-8 (a lone surrogate as one byte), never encoded whole."""

    def measure() -> int:
        if text.isascii():
            return len(text)
        step = 1 << 20
        return sum(
            len(text[at : at + step].encode("utf-8", "replace")) for at in range(0, len(text), step)
        )

    return await _text_work(len(text), measure)


def _check_directory_move(here: Operation, there: Operation, *, overwrite: bool) -> None:
    """Refuse a directory move that cannot be: over something, or into itself."""
    if overwrite:
        raise InvalidArgument(
            f"{here.path} is a directory; a directory never replaces anything",
            path=here.path,
            hint="Move it with overwrite=false to a path that does not exist yet.",
        )
    for source, destination in ((here.path, there.path), (here.resolved, there.resolved)):
        if destination == source or destination.startswith(f"{source}/"):
            raise InvalidArgument(
                f"{there.path} is inside {here.path}: a directory cannot move into itself",
                path=here.path,
                hint="Choose a destination outside the directory being moved.",
            )


def _too_many(path: str) -> TooLarge:
    return TooLarge(
        f"{path} holds more than {MAX_MOVED_ENTRIES} entries, more than one move may carry",
        path=path,
        hint="Move smaller parts of it (its subdirectories one by one), then the rest.",
        details={"max_entries": MAX_MOVED_ENTRIES},
    )


def _with_parents(path: str, top: str) -> list[str]:
    """*path* and each directory between it and *top* (a directory above it)."""
    paths, parent = [path], path.rpartition("/")[0]
    while parent and parent != top:
        paths.append(parent)
        parent = parent.rpartition("/")[0]
    return paths


_PATCH_KINDS: Final = {
    PatchAction.ADD: OpKind.WRITE,
    PatchAction.UPDATE: OpKind.EDIT,
    PatchAction.DELETE: OpKind.DELETE,
}
"""The operation each part of a patch is (an update with ``move_to`` is two moves)."""


@dataclass
class _PatchPart:
    """One file's part of a patch, as :meth:`ContextFs.apply_patch` works on it."""

    patch: FilePatch
    reports: list[_Report]
    """One operation, or two for a move (source, destination)."""
    opened: list[tuple[Update, AnyDocument | None]] = field(default_factory=list)
    change: tuple[Change, AnyDocument] | None = None

    def outcome(self) -> PatchedFile:
        first, last = self.reports[0], self.reports[-1]
        change = None if self.change is None else self.change[0]
        return PatchedFile(
            path=first.op.path,
            action=self.patch.action,
            version=last.after,
            previous_version=first.before,
            moved_to=last.op.path if last is not first else None,
            first_line=1 if change is None else change.first_line,
            last_line=1 if change is None else change.last_line,
            diff=None if change is None or first.before is None else change.diff,
        )


def _refuse_missing(parts: list[_PatchPart]) -> Callable[[list[Update]], Awaitable[None]]:
    """Refuse a patch that updates, moves or deletes a file that is not there."""

    async def refuse(updates: list[Update]) -> None:
        at = 0
        for part in parts:
            update, at = updates[at], at + len(part.reports)
            if part.patch.action is not PatchAction.ADD and update.current is None:
                raise await update.missing()

    return refuse


async def _undone(
    done: list[tuple[Update, Version | None]], sources: Mapping[int, Update] | None = None
) -> list[str]:
    """Undo *done* (each update, and the version it left; None: it deleted or moved the file).

    *sources* maps each destination a patch moved a file to with new text (by
    its update's id) to the update of the file's old path. Return the paths
    that could not be put back. Files moved or deleted come back first, last
    done first; then the files written are put back, but for the destination
    of a file that could not come back, which stays as the change left it: a
    file may end up at two paths, never at none.
    """
    left = {id(update): version for update, version in done}
    carried = {id(update.moved_to) for update, _ in done if update.moved_to is not None}
    steps = [(update, version) for update, version in reversed(done) if id(update) not in carried]
    kept: list[str] = []
    lost: set[int] = set()
    for update, version in steps:
        if version is not None:
            continue
        try:
            if update.moved_to is None:
                await update.undo(None)
            else:
                there = left[id(update.moved_to)]
                assert there is not None  # a move stores a version at its destination
                await update.undo_move(there)
        except FsError:
            kept += (
                [update.path] if update.moved_to is None else [update.path, update.moved_to.path]
            )
            lost.add(id(update))
    for update, version in steps:
        source = (sources or {}).get(id(update))
        if version is None:
            continue
        if source is not None and id(source) in lost:
            kept.append(update.path)  # its source did not come back: it keeps the file
            continue
        try:
            await update.undo(version)
        except FsError:
            kept.append(update.path)
    return kept


def _move_sources(stored: list[tuple[Update, _Report]]) -> dict[int, Update]:
    """For :func:`_undone`: each move's destination update (by id), and its source's update."""
    by_path = {report.op.path: update for update, report in stored}
    return {
        id(update): by_path[report.op.moved_from]
        for update, report in stored
        if report.op.moved_from is not None and report.op.moved_from in by_path
    }


def _stored_by(parts: list[_PatchPart]) -> list[tuple[Update, _Report]]:
    """Each update of a patch's *parts*, with the operation it stores for."""
    return [
        (update, report)
        for part in parts
        for (update, _), report in zip(part.opened, part.reports, strict=True)
    ]


def _put_back(stored: list[tuple[Update, _Report]], kept: list[str]) -> None:
    """After an undo: the operations whose files were put back stored nothing."""
    for update, report in stored:
        if update.path not in kept:
            report.after = None


def _rolled_back(
    failure: FsError, done: list[tuple[Update, Version | None]], kept: list[str], *, what: str
) -> FsError:
    """The error of a change undone after *failure*: what failed, and what the files hold now.

    *what* names the change (``"the patch"``).
    """
    touched = list(dict.fromkeys(update.path for update, _ in done))
    if not kept:
        put_back = f"; what it did to {', '.join(touched)} was undone" if touched else ""
        return failure.retold(
            f"{what} was not applied (nothing changed{put_back}): {failure.message}",
            restored=touched,
        )
    restored = [path for path in touched if path not in kept]
    return BackendError(
        f"{what} failed part way ({failure.message}) and could not be undone whole: "
        f"{', '.join(kept)} are as {what} left them"
        + (f"; {', '.join(restored)} were put back" if restored else ""),
        path=failure.path,
        hint="Read the files named to see their state before trying again.",
        details={"changed": kept, "restored": restored},
    )


def _pinned(options: TextOptions, encoding: str) -> TextOptions:
    try:
        return options.pinned(encoding)
    except LookupError:
        raise InvalidArgument(
            f"{encoding!r} is no encoding Python knows",
            hint="Name a codec such as cp1251, koi8-r, cp1255 or shift_jis.",
            details={"field": "encoding"},
        ) from None
