"""Execution contexts and ``ctx.fs``, the owner-bound seam every tool calls.

Each operation checks its path as a string and locates it once
(:func:`~ctxfs.core.reports.reported`), lets the policies vote
(``ctxfs_authorize``), and only then touches the store; a mutation runs the
mutation protocol (:mod:`ctxfs.core.mutations`). See :mod:`ctxfs.core.hookspecs`
for the order of the hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Final

from ctxfs.core import mutations
from ctxfs.core.browsing import Browsing
from ctxfs.core.changes import changed
from ctxfs.core.directories import mkdir
from ctxfs.core.moves import move
from ctxfs.core.outcomes import (
    BytesOutcome,
    EditOutcome,
    InsertOutcome,
    MoveOutcome,
    OpKind,
    PatchOutcome,
    ReadOutcome,
    WriteOutcome,
)
from ctxfs.core.patching import apply_patch
from ctxfs.core.reads import read_bytes, read_text, saw
from ctxfs.core.reports import Report, reported
from ctxfs.core.rewinds import checkpoint, rewind, undo
from ctxfs.core.text import (
    Change,
    FilePatch,
    Replacement,
    check_edit_strings,
    check_replacements,
    replace_in_turn,
)
from ctxfs.core.textwork import rewritten, text_work, utf8_size

if TYPE_CHECKING:
    from ctxfs.core.fs import Fs
    from ctxfs.core.outcomes import ChangedFile, UndoOutcome
    from ctxfs.core.sessions import Checkpoint

__all__ = ["Context", "ContextFs"]

INLINE_REPLACEMENTS: Final = 1024
"""An edit with more matches than this, or none (its diagnosis searches the file for
the closest text), runs in a worker thread whatever the file's size."""


class Context:
    """One execution context: an owner (an agent, a session) in a workspace.

    Observations are kept per owner, so two contexts with the same owner share
    what they have read. Create contexts with :meth:`Fs.context`.
    """

    __slots__ = ("_fs", "opened_fs", "owner", "workspace")

    def __init__(self, opened_fs: Fs, *, owner: str, workspace: str | None = None) -> None:
        if not owner:
            raise ValueError("a context needs a non-empty owner")
        self.opened_fs = opened_fs
        """The :class:`Fs` this context works on (its backend, hooks and options)."""
        self.owner = owner
        self.workspace = workspace
        self._fs = ContextFs(self)

    @property
    def fs(self) -> ContextFs:
        """File operations on behalf of this context's owner."""
        return self._fs

    def forget_shown(self) -> None:
        """Forget which texts the tools showed this owner (the harness dropped them).

        Call it when earlier tool results leave the model's context (compaction):
        the tools then show a file's text again instead of saying it is unchanged.
        """
        self.opened_fs.shown.forget(self.owner)

    async def saw(self, outcome: BytesOutcome, *, whole: bool) -> None:
        """Record that the owner was shown *outcome* (of ``read_bytes(observe=False)``).

        With *whole* (and bytes that are the whole file) the observation is complete,
        else partial: for a reader that shows part of what it read (a notebook's cells,
        a PDF's pages), which allows an edit of that version but not a write over it.

        Raises:
            FsError: The path no longer locates, or the observation store failed.

        """
        await saw(self, outcome, whole=whole)

    def __repr__(self) -> str:
        return f"Context(owner={self.owner!r}, workspace={self.workspace!r})"


class ContextFs(Browsing):
    """The file operations of one context. Failures raise ``FsError`` subclasses.

    Listings, searches and :meth:`stat` come from :class:`~ctxfs.core.browsing.Browsing`.

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

        Memory stays bounded by the window (and the session memory's copy of a file
        of at most :data:`~ctxfs.core.session_memory.MAX_READ_BYTES`, read whole).
        *encoding* pins the legacy encoding of a file that is not UTF-8; edits of the
        version read keep it.

        Raises:
            NotFound, IsADirectory, BinaryFile, EncodingError: The file is missing,
                a directory, or not text in an encoding ctxfs can round-trip.
            InvalidArgument: *offset* or *limit* is below 1, or *encoding* is no codec
                Python knows.
            FsError: Any refusal of a policy.

        """
        return await read_text(self._ctx, path, offset=offset, limit=limit, encoding=encoding)

    async def read_bytes(
        self, path: str, *, offset: int = 0, length: int | None = None, observe: bool = True
    ) -> BytesOutcome:
        """Read a file's bytes, text or not: *length* bytes from *offset*, or to its end.

        Records an observation as :meth:`read` does: complete for the whole file,
        partial for a range; none with ``observe=False``. Reading to the end of a
        file larger than ``TextOptions.max_edit_bytes`` is refused.

        Raises:
            NotFound, IsADirectory, NotARegularFile: *path* names no regular file.
            InvalidArgument: *offset* or *length* is negative.
            TooLarge: The read runs to the end of a file too large to read whole.
            FsError: Any refusal of a policy.

        """
        return await read_bytes(self._ctx, path, offset=offset, length=length, observe=observe)

    async def write_bytes(self, path: str, data: bytes) -> WriteOutcome:
        """Create a file, or replace one the owner has read whole, with *data* as it is.

        The same guards as :meth:`write` (a whole :meth:`read_bytes` counts as
        reading the whole file); no encoding or line ending is touched.

        Raises:
            NotObserved, Stale: The owner has not read the current version whole.
            Busy: The file's lock was not acquired in time.
            IsADirectory, NotADirectory: *path* is a directory, or a parent of it a file.
            TooLarge: The file replaced is larger than ``TextOptions.max_edit_bytes``.
            FsError: Any refusal of a policy.

        """
        async with (
            reported(self._ctx, OpKind.WRITE, path, file=True, size=len(data)) as report,
            mutations.updating(self._ctx, report) as (update, _),
        ):
            await mutations.store(self._ctx, report, update, data)
        return WriteOutcome(
            path=report.op.path,
            version=report.stored,
            previous_version=report.before,
            created=report.before is None,
            size=len(data),
        )

    async def rewrite_bytes(self, path: str, change: Callable[[bytes], bytes]) -> WriteOutcome:
        """Replace a file the owner has read with *change* of its bytes, as one edit.

        Guarded and judged as an ``EDIT``: the file must exist and have been read
        (any part of it) at its current version. Under the mutation locks,
        *change* gets the bytes of that version; its result is stored whole.
        *change* must be pure (it may run in a worker thread, and is not called
        when a guard refuses); what it raises propagates, with nothing written.

        Raises:
            NotFound, IsADirectory: *path* names no file.
            NotObserved, Stale: The owner has not read the current version.
            Busy: The file's lock was not acquired in time.
            TooLarge: The file is larger than ``TextOptions.max_edit_bytes``.
            Exception: What *change* raises, with nothing written.
            FsError: Any refusal of a policy.

        """
        async with (
            reported(self._ctx, OpKind.EDIT, path, file=True) as report,
            mutations.updating(self._ctx, report) as (update, _),
        ):
            current = update.current
            if current is None:
                raise await update.missing()
            data = await text_work(current.size, partial(change, current.data))
            await mutations.store(self._ctx, report, update, data)
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
            NotObserved, Stale: The owner has not read the current version whole.
            Busy: The file's lock was not acquired in time.
            IsADirectory, NotADirectory: *path* is a directory, or a parent of it a file.
            EncodingError: *content* cannot be written in the file's encoding.
            FsError: Any refusal of a policy.

        """
        size = await utf8_size(content)
        async with (
            reported(self._ctx, OpKind.WRITE, path, file=True, size=size) as report,
            mutations.updating(self._ctx, report) as (update, _),
        ):
            document, change = await rewritten(
                self._ctx, report.op.path, update.current, content, size=size
            )
            await mutations.store(self._ctx, report, update, change.data, document)
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
            EmptyOldString, NoChange: *old_string* is empty, or equals *new_string*.
            NotFound, BinaryFile: *path* names no text file.
            NotObserved, Stale: The owner has not read the current version.
            NoMatch, AmbiguousMatch: *old_string* does not occur, or (without
                *replace_all*) occurs more than once.
            EncodingError: *new_string* cannot be written in the file's encoding.
            Busy: The file's lock was not acquired in time.
            FsError: Any refusal of a policy.

        """
        async with reported(self._ctx, OpKind.EDIT, path, file=True, dry_run=dry_run) as report:
            check_edit_strings(old_string, new_string)
            change = await mutations.change_text(
                self._ctx,
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
            InvalidArgument: *edits* is empty.
            FsError: What :meth:`edit` raises.

        """
        async with reported(self._ctx, OpKind.EDIT, path, file=True, dry_run=dry_run) as report:
            check_replacements(edits)
            options = self._ctx.opened_fs.text_options
            change = await mutations.change_text(
                self._ctx,
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
            InvalidArgument: *after_line* is out of range.
            NotFound, BinaryFile: *path* names no text file.
            NotObserved, Stale: The owner has not read the current version.
            EncodingError: *text* cannot be written in the file's encoding.
            Busy: The file's lock was not acquired in time.
            FsError: Any refusal of a policy.

        """
        async with reported(self._ctx, OpKind.INSERT, path, file=True) as report:
            change = await mutations.change_text(
                self._ctx, report, lambda document: document.insert(after_line, text)
            )
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
            NotFound, IsADirectory: *path* names no file.
            NotObserved, Stale: The owner has not read the current version.
            Busy: The file's lock was not acquired in time.
            FsError: Any refusal of a policy.

        """
        async with (
            reported(self._ctx, OpKind.DELETE, path, file=True) as report,
            mutations.updating(self._ctx, report, max_size=None, content=False) as (update, _),
        ):
            await update.delete()

    async def move(self, source: str, destination: str, *, overwrite: bool = False) -> MoveOutcome:
        """Move (rename) a file the owner has read, or a whole directory, to *destination*.

        A file must be observed at its current version, as for :meth:`delete`;
        the destination must not exist, or, with *overwrite*, be observed at its
        current version too. Policies judge both paths (two ``MOVE`` operations);
        both files are locked in key order. Missing directories of the
        destination are made. Afterwards the owner's observation is at the
        destination, not the source.

        A directory moves whole where the backend can (``directory_moves``): no
        observation is needed, but policies judge every entry below it, and every
        one is locked while it moves.

        Raises:
            NotFound: *source* does not exist.
            NotObserved, Stale: The owner has not read a file's current version.
            Busy: A lock was not acquired in time.
            IsADirectory: *source* is a directory, and the store cannot move one.
            AlreadyExists: *destination* exists and *overwrite* is false.
            InvalidArgument: Both paths name one file, or the root, or a directory
                would move into itself or with *overwrite*.
            TooLarge: *source* is a directory of more than
                :data:`~ctxfs.core.moves.MAX_MOVED_ENTRIES` entries.
            FsError: Any refusal of a policy.

        """
        return await move(self._ctx, source, destination, overwrite=overwrite)

    async def changed(self) -> list[ChangedFile]:
        """The files this owner saw whose current version is another, by path.

        Each says the version seen and the one there now (None: gone), and, when
        the seen version's content is kept (:mod:`ctxfs.core.sessions`), the diff
        from it. Nothing is observed: a change still needs a read (or a stale
        refusal's whole diff). A harness may list these in its reminders.

        Raises:
            Unavailable: The observation store cannot be reached.

        """
        return await changed(self._ctx)

    async def checkpoint(self, label: str | None = None) -> Checkpoint:
        """Mark this point of the owner's history, to :meth:`rewind` to; return the mark.

        Raises:
            InvalidArgument: *label* is not text.
            NotEnabled: The ``Fs`` keeps no session memory.
            Unavailable: The session store cannot be reached.

        """
        return await checkpoint(self._ctx, label)

    async def undo(
        self, steps: int = 1, *, dry_run: bool = False, newest: int | None = None
    ) -> UndoOutcome:
        """Put back what the owner's last *steps* changes did, all or nothing.

        A step is one call that changed files (a write, an edit, a move, a patch
        over several files). Each file gets back the exact bytes it held (its
        encoding, BOM and line endings; a file made again, its permission bits), a
        created file is removed, a deleted one restored, a move reversed; every file
        is authorized and locked like any change, and the undone steps leave the
        history. With *dry_run*, the checks run and nothing is written; with *newest*
        (a step's number), only while it is the owner's newest step, else ``Stale``.

        Raises:
            InvalidArgument: *steps* is no whole number from 1 to the steps kept, a
                content to put back is not kept (the store's bound), or the session
                store missed a step among them.
            Stale: A file was changed by someone else since the owner's step, or
                between two of them (or a directory to move back holds other names
                than the step moved; files changed inside it move back with it); the
                error names each (``details["changed"]``) with its diff, and nothing
                changed.
            Unavailable: The session store missed a step and cannot be told so yet.
            NotEnabled: The ``Fs`` keeps no session memory.
            FsError: Any refusal of a policy, ``Busy``, or what the store raised.

        """
        return await undo(self._ctx, steps, dry_run=dry_run, newest=newest)

    async def rewind(self, checkpoint: str, *, dry_run: bool = False) -> UndoOutcome:
        """Undo every step since *checkpoint* (an id from :meth:`checkpoint`), all or nothing.

        A step the checkpoint holds that was undone since cannot be made again:
        such a rewind is refused.

        Raises:
            InvalidArgument: No checkpoint has that id, steps since it were given up,
                a step it holds was undone since, or a content to put back is not kept.
            Stale: As for :meth:`undo`.
            NotEnabled: The ``Fs`` keeps no session memory.
            FsError: Any refusal of a policy, ``Busy``, or what the store raised.

        """
        return await rewind(self._ctx, checkpoint, dry_run=dry_run)

    async def apply_patch(
        self, patches: Sequence[FilePatch], *, dry_run: bool = False
    ) -> PatchOutcome:
        """Apply a patch over several files: all of it, or nothing.

        Each file's part runs under the rules of the operation it is: an added
        file is a :meth:`write`, an updated one an edit by hunks
        (:func:`~ctxfs.core.text.patch_document`), a deleted one a :meth:`delete`;
        an update with ``move_to`` is a :meth:`move` whose destination takes the
        new text. Every file is authorized, then all are locked (in key order)
        and read once, and every check passes before anything is written. If the
        store fails for any file, what was written is put back under the same
        locks, and the error says what the files hold. With *dry_run*, the
        checks run and nothing is written.

        Raises:
            InvalidArgument: No files, or two parts naming one file.
            NotFound, BinaryFile: A file to update or delete is missing or not text.
            NotObserved, Stale: The owner has not read a file's current version.
            NoMatch: A hunk does not apply (``details["hunk"]`` names it).
            EncodingError: An added line cannot be written in its file's encoding.
            Busy: A lock was not acquired in time.
            FsError: Any refusal of a policy; or, for a failure after a write, what
                the store raised, once all is put back (or ``BackendError`` naming what
                could not be).

        """
        return await apply_patch(self._ctx, patches, dry_run=dry_run)

    async def mkdir(self, path: str) -> None:
        """Create a directory and its missing parents.

        Where directories are real, those it made are a step of the owner's: an
        undo removes them again (if nothing else was put in them).
        """
        await mkdir(self._ctx, path)


def _edited(report: Report, change: Change, *, edits: int = 1) -> EditOutcome:
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
