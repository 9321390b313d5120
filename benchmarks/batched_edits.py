"""Batched edits on fs-local: one call against the same changes made one by one.

- ``multi_edit``: a 10 KB file holds ten marker lines; each call flips all ten
  (``=A`` to ``=B`` and back). ctxfs's side is one ``multi_edit`` (one read, one
  write, one lock); the baseline is the same ten changes as ten ``edit`` calls,
  as a model without ``multi_edit`` makes them.
- ``apply_patch``: five 10 KB files, each with one marker line; one Codex patch
  flips all five (through the tool, parsing included), against five ``edit``
  tool calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from benchmarks.harness import Case
from ctxfs.core import Context, Fs, Replacement
from ctxfs.local import LocalBackend
from ctxfs.tools import FsToolset

GROUP: Final = "Batched edits on fs-local, 10 KB files: one call against separate edits"
MARKERS: Final = 10
PATCHED_FILES: Final = 5


def _text() -> str:
    filler = "".join(f"filler line {n} of the file, just text\n" for n in range(240))
    marks = "".join(f"marker{n}=A\n" for n in range(MARKERS))
    return filler[: len(filler) // 2] + marks + filler[len(filler) // 2 :]


async def _context(workdir: Path, name: str, files: tuple[str, ...] = ("f.txt",)) -> Context:
    root = workdir / f"batched-{name}"
    root.mkdir()
    backend = LocalBackend(root, state_dir=workdir / f"batched-{name}-state")
    ctx = Fs(backend, load_entrypoints=False).context(owner="b")
    for path in files:
        await ctx.fs.write(path, _text())
        await ctx.fs.read(path)
    return ctx


def _patch(paths: tuple[str, ...], old: str, new: str) -> str:
    """A Codex patch changing ``marker4`` in each file, with a line of context each side."""
    hunks = "".join(
        f"*** Update File: {path}\n@@\n marker3=A\n-marker4={old}\n+marker4={new}\n marker5=A\n"
        for path in paths
    )
    return f"*** Begin Patch\n{hunks}*** End Patch\n"


def _flips(state: list[str]) -> list[Replacement]:
    old, new = state[0], "B" if state[0] == "A" else "A"
    state[0] = new
    return [
        Replacement(old_string=f"marker{n}={old}", new_string=f"marker{n}={new}")
        for n in range(MARKERS)
    ]


async def cases(workdir: Path) -> list[Case]:
    """The case: one multi_edit against ten edits."""
    batched, separate = await _context(workdir, "multi"), await _context(workdir, "single")
    batched_state, separate_state = ["A"], ["A"]

    async def multi_edit() -> None:
        await batched.fs.multi_edit("f.txt", _flips(batched_state))

    async def ten_edits() -> None:
        for edit in _flips(separate_state):
            await separate.fs.edit("f.txt", edit.old_string, edit.new_string)

    paths = tuple(f"pkg/m{n}.py" for n in range(PATCHED_FILES))
    tools = FsToolset()
    patched, edited = (
        await _context(workdir, "patch", paths),
        await _context(workdir, "edits", paths),
    )
    patched_state, edited_state = ["A"], ["A"]

    async def apply_patch() -> None:
        old, new = patched_state[0], "B" if patched_state[0] == "A" else "A"
        patched_state[0] = new
        result = await tools.execute(patched, "apply_patch", {"input": _patch(paths, old, new)})
        assert not result.is_error, result.text

    async def five_edits() -> None:
        old, new = edited_state[0], "B" if edited_state[0] == "A" else "A"
        edited_state[0] = new
        for path in paths:
            arguments = {
                "file_path": path,
                "old_string": f"marker4={old}",
                "new_string": f"marker4={new}",
            }
            result = await tools.execute(edited, "edit", arguments)
            assert not result.is_error, result.text

    return [
        Case(group=GROUP, name="10 changes to one 10 KB file", ours=multi_edit, baseline=ten_edits,
             target=0.5, rounds=15),
        Case(group=GROUP, name="one change in each of 5 files", ours=apply_patch,
             baseline=five_edits, target=1.0, rounds=15),
    ]  # fmt: skip
