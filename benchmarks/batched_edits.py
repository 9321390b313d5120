"""Batched edits on fs-local: ``multi_edit`` of ten changes against ten ``edit`` calls.

A 10 KB file holds ten marker lines; each call flips all ten (``=A`` to ``=B``
and back). ctxfs's side is one ``multi_edit`` (one read, one write, one lock);
the baseline is the same ten changes as ten ``edit`` calls, as a model without
``multi_edit`` makes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from benchmarks.harness import Case
from ctxfs.core import Context, Fs, Replacement
from ctxfs.local import LocalBackend

GROUP: Final = "Batched edits on fs-local, 10 KB file: multi_edit against separate edits"
MARKERS: Final = 10


def _text() -> str:
    filler = "".join(f"filler line {n} of the file, just text\n" for n in range(240))
    marks = "".join(f"marker{n}=A\n" for n in range(MARKERS))
    return filler[: len(filler) // 2] + marks + filler[len(filler) // 2 :]


async def _context(workdir: Path, name: str) -> Context:
    root = workdir / f"batched-{name}"
    root.mkdir()
    backend = LocalBackend(root, state_dir=workdir / f"batched-{name}-state")
    ctx = Fs(backend, load_entrypoints=False).context(owner="b")
    await ctx.fs.write("f.txt", _text())
    await ctx.fs.read("f.txt")
    return ctx


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

    return [
        Case(group=GROUP, name="10 changes to one 10 KB file", ours=multi_edit, baseline=ten_edits,
             target=0.5, rounds=15),
    ]  # fmt: skip
