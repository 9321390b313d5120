"""What an undo or a rewind refuses: files someone else changed, a history changed meanwhile.

Each check raises the refusal it names, which says what stands in the way (a file changed, with
its diff) and that nothing was put back; :class:`AlreadyBack` says instead that there is
nothing to write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

from ctxfs.core.backend import FileKind
from ctxfs.core.errors import InvalidArgument, NotADirectory, NotFound, Stale
from ctxfs.core.moves import another_tree, entries_below, kind_at, tree_version
from ctxfs.core.sessions import Step
from ctxfs.core.sessions.base import UNRECORDED

if TYPE_CHECKING:
    from ctxfs.core.backend import Update
    from ctxfs.core.context import Context
    from ctxfs.core.observations import Observation
    from ctxfs.core.reports import Report
    from ctxfs.core.rewinds import Planned
    from ctxfs.core.session_memory import SessionMemory
    from ctxfs.core.versions import Version

__all__ = [
    "AlreadyBack",
    "SeenBefore",
    "changed_file",
    "refuse_another_root",
    "refuse_another_tree",
    "refuse_changed",
    "refuse_history_changed",
    "refuse_interleaved",
    "refuse_relocated",
    "refuse_unrecorded",
    "refused",
]


SeenBefore: TypeAlias = "tuple[str, Observation | None, bool]"
"""A file's key, what the owner had seen of it before an undo, and whether a step made it anew."""


def refuse_unrecorded(steps: Sequence[Step]) -> None:
    """Refuse to undo *steps* if the owner's history misses a step among them."""
    missed = [step.number for step in steps if any(c.kind == UNRECORDED for c in step.changes)]
    if missed:
        raise InvalidArgument(
            f"changes made before step {missed[-1] + 1} could not be recorded (the session "
            "store failed then), so they cannot be undone; nothing was put back",
            hint=f"Undo only the steps after step {missed[-1]}, or restore files by hand.",
            details={"unrecorded": missed[-1]},
        )


def refuse_another_root(memory: SessionMemory, steps: Sequence[Step]) -> None:
    """Refuse to undo *steps* if one changed files under another root than this one's."""
    here = None if memory.backend is None else memory.backend.root_identity
    elsewhere = [
        step.number for step in steps if any(c.root not in (None, here) for c in step.changes)
    ]
    if elsewhere:
        raise InvalidArgument(
            f"step {elsewhere[-1]} changed files under another root than this one (the same "
            "owner working in another directory or store); nothing was put back",
            hint=f"Undo it where it was made, or undo only the steps after step {elsewhere[-1]}.",
            details={"elsewhere": elsewhere},
        )


async def refuse_another_tree(ctx: Context, there: str, moved: Version | None) -> None:
    """Refuse to move back what is at *there* unless it is the directory tree moved there."""
    try:
        now = tree_version(await entries_below(ctx, there)) if moved is not None else None
    except (NotFound, NotADirectory):
        now = None
    if now != moved or await kind_at(ctx, there) is not FileKind.DIRECTORY:
        raise another_tree(there)


async def refuse_changed(
    ctx: Context,
    memory: SessionMemory,
    entries: list[Planned],
    updates: list[Update],
    *,
    reports: list[Report],
    seen_before: list[SeenBefore] | None,
) -> None:
    """Refuse the undo if a file is not as the owner's steps left it; else observe each.

    Each is observed under the key its path has now (*reports*: the root may have moved since
    the steps), whole, for the undo to write it. What the owner had seen of each goes to
    *seen_before*, if given (put back when nothing is undone; else how complete it was is
    what the owner has seen of the file put back). Raises ``AlreadyBack`` if every file is
    as the undo leaves it already.
    """
    pairs = list(zip(entries, updates, strict=True))
    if all(_holds(update, entry.back, entry.content) for entry, update in pairs):
        raise AlreadyBack
    changed_files = []
    for entry, update in pairs:
        if _holds(update, entry.left, None):
            continue
        left = None if entry.left is None else await memory.content(ctx.owner, entry.left)
        if not _holds(update, entry.left, left):
            now, data = None, None
            if update.current is not None:
                now, data = update.current.version, update.current.data
            changed_files.append(
                await changed_file(ctx, memory, entry.path, (entry.left, left), now=now, data=data)
            )
    if changed_files:
        raise refused(
            changed_files,
            "changed since your step(s), by someone else",
            hint="Leave those files as they are, or read them and change them by hand.",
        )
    # each file is as the owner's steps left it: that is what it saw (a restart may
    # have lost its observations), so the guard lets the undo change it
    file_context = ctx.opened_fs.file_context
    for entry, update, report in zip(entries, updates, reports, strict=True):
        key = report.op.key
        if seen_before is not None:
            seen = await file_context.observation(ctx.owner, key)
            seen_before.append((key, seen, entry.replaced))
        if update.current is not None:
            await file_context.observe(
                ctx.owner, key, update.current.version, complete=True, path=entry.path
            )


async def refuse_relocated(
    ctx: Context, memory: SessionMemory, entries: list[Planned], reports: list[Report]
) -> None:
    """Refuse the undo if a path now leads to another file than the owner's steps changed.

    Within the root: the same root reached by another name (moved, mounted elsewhere,
    another host name) leads to the same files.
    """
    relocated = [
        await changed_file(ctx, memory, entry.path, (entry.left, None), now=None, data=None)
        for entry, report in zip(entries, reports, strict=True)
        if entry.resolved is not None and report.op.resolved != entry.resolved
    ]
    if relocated:
        raise refused(
            relocated,
            "now lead(s) to another file than your step(s) changed (a symbolic link on the "
            "path was changed)",
            hint="Point the link back, or change those files by hand.",
        )


def _holds(update: Update, version: Version | None, content: bytes | None) -> bool:
    """Whether the file *update* read is at *version* (None: missing), or holds *content*."""
    current = update.current
    if current is None or version is None:
        return current is None and version is None
    return current.version == version or (content is not None and current.data == content)


async def refuse_history_changed(
    ctx: Context, memory: SessionMemory, steps: Sequence[Step]
) -> None:
    """Refuse the undo unless *steps* are still the owner's last, as the history was read.

    Another call of the owner's may have undone them, or made a step, since.
    """
    oldest = min(step.number for step in steps)
    now = await memory.store.steps(ctx.owner, after=oldest - 1)
    if [step.number for step in now if step.undid is None] != [step.number for step in steps]:
        raise Stale(
            "another call of yours undid or made steps while this one was starting; "
            "nothing was put back",
            hint="Look at what changed (changes), then undo again if still needed.",
            details={"steps": [step.number for step in steps]},
        )


async def refuse_interleaved(ctx: Context, memory: SessionMemory, entries: list[Planned]) -> None:
    """Refuse the undo if another change came between the owner's steps to a file."""
    changed_files = []
    for entry in entries:
        for was, became in entry.gaps:
            data = None if became is None else await memory.content(ctx.owner, became)
            old = None if was is None or data is None else await memory.content(ctx.owner, was)
            if old is not None and old == data:
                continue  # the same content under a new version
            changed_files.append(
                await changed_file(ctx, memory, entry.path, (was, old), now=became, data=data)
            )
            break
    if changed_files:
        raise refused(
            changed_files,
            "changed between your steps, by someone else (or by a change that was not recorded)",
            hint="Undo fewer steps (those after that change), or change those files by hand.",
        )


async def changed_file(
    ctx: Context,
    memory: SessionMemory,
    path: str,
    left: tuple[Version | None, bytes | None],
    *,
    now: Version | None,
    data: bytes | None,
) -> dict[str, object]:
    """A file of a refused undo: the version (and content) *left*, the one *now*, the diff."""
    version, old = left
    diff = None if old is None or data is None else await memory.diff(ctx, path, old, data)
    return {"path": path, "left": version, "current": now, "diff": diff and diff.text}


class AlreadyBack(Exception):
    """Every file of an undo is as it leaves them already: there is nothing to write."""


def refused(changed_files: list[dict[str, object]], what: str, *, hint: str) -> Stale:
    """The refusal of an undo over *changed_files* (each as :func:`changed_file` gives it)."""
    paths = [str(changed["path"]) for changed in changed_files]
    diffs = [str(changed["diff"]) for changed in changed_files if changed["diff"]]
    return Stale(
        f"{', '.join(paths)} {what}; nothing was put back",
        path=paths[0],
        hint=hint,
        details={"changed": changed_files, "diff": "\n".join(diffs) or None},
    )
