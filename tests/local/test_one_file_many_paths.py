"""One file is one file, whatever path reaches it: a link, a nested root, ``./`` and ``//``.

Locks, observations and the compare-and-swap are keyed by the file's identity
(``Backend.locate``), so writers that spell the file differently still exclude
each other, and an owner's read through one spelling licenses its edit through
another.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from ctxfs.core import Busy, Context, Fs, MemoryObservations, Stale
from ctxfs.local import LocalBackend

pytestmark = pytest.mark.anyio

CYCLES = 200


async def count_up(ctx: Context, path: str, cycles: int = CYCLES) -> int:
    """Increment the counter at *path* *cycles* times; return how many conflicts were retried."""
    retried = 0
    for _ in range(cycles):
        while True:
            current = (await ctx.fs.read(path)).text
            try:
                await ctx.fs.edit(path, current, f"{int(current) + 1}\n")
            except (Stale, Busy):
                retried += 1
                continue
            break
    return retried


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "R"
    (root / "d").mkdir(parents=True)
    (root / "d" / "c.txt").write_text("0\n")
    os.symlink("d", root / "dl")
    return root


async def race(*counters: tuple[Context, str]) -> list[int]:
    retried: list[int] = []

    async def run(ctx: Context, path: str) -> None:
        retried.append(await count_up(ctx, path))

    async with anyio.create_task_group() as group:
        for ctx, path in counters:
            group.start_soon(run, ctx, path)
    return retried


@pytest.mark.slow
async def test_two_clients_through_a_directory_link_lose_no_update(root: Path) -> None:
    fs = Fs(LocalBackend(root, state_dir=root.parent / "state"), load_entrypoints=False)
    one, two = fs.context(owner="one"), fs.context(owner="two")
    retried = await race((one, "d/c.txt"), (two, "dl/c.txt"))
    assert (root / "d" / "c.txt").read_text() == f"{2 * CYCLES}\n"
    assert sum(retried) > 0, "the two writers never actually raced"


async def test_two_servers_on_nested_roots_lose_no_update(root: Path) -> None:
    state = root.parent / "state"  # the default state directory is shared by a user's servers
    outer = Fs(LocalBackend(root, state_dir=state), load_entrypoints=False)
    inner = Fs(LocalBackend(root / "d", state_dir=state), load_entrypoints=False)
    retried = await race(
        (outer.context(owner="outer"), "./d//c.txt"), (inner.context(owner="inner"), "c.txt")
    )
    assert (root / "d" / "c.txt").read_text() == f"{2 * CYCLES}\n"
    assert sum(retried) > 0, "the two writers never actually raced"


async def test_a_read_through_one_spelling_licenses_an_edit_through_another(root: Path) -> None:
    fs = Fs(LocalBackend(root, state_dir=root.parent / "state"), load_entrypoints=False)
    reader, other = fs.context(owner="reader"), fs.context(owner="other")
    await reader.fs.read("dl/c.txt")
    await reader.fs.edit("./d/c.txt", "0", "1")  # the same file: observed
    await other.fs.read("d//c.txt")
    await other.fs.edit("dl/c.txt", "1", "2")
    with pytest.raises(Stale):  # the reader's view is stale, whatever the spelling
        await reader.fs.edit("d/c.txt", "1", "3")
    assert (root / "d" / "c.txt").read_text() == "2\n"


async def test_what_changed_names_only_files_read_in_this_root(root: Path) -> None:
    state, observations = root.parent / "state", MemoryObservations()  # (one store, two roots)
    (root / "d" / "d").mkdir()
    (root / "d" / "d" / "c.txt").write_text("another file\n")
    outer = Fs(LocalBackend(root, state_dir=state), observations=observations)
    inner = Fs(LocalBackend(root / "d", state_dir=state), observations=observations)
    await outer.context(owner="a").fs.read("d/c.txt")  # inner's c.txt, not its d/c.txt
    (root / "d" / "c.txt").write_text("changed\n")
    [changed] = await outer.context(owner="a").fs.changed()
    assert changed.path == "d/c.txt"
    assert await inner.context(owner="a").fs.changed() == []


REPLACER = """
import os, sys, time
directory, until = sys.argv[1], time.monotonic() + float(sys.argv[2])
while time.monotonic() < until:
    with open(os.path.join(directory, "tmp"), "w") as file:
        file.write("x\\n")
    os.replace(os.path.join(directory, "tmp"), os.path.join(directory, "c.txt"))
"""


@pytest.mark.slow
async def test_a_file_replaced_while_it_is_located_keeps_its_key(root: Path) -> None:
    # Every write renames a new file over the old one: the old one, still open while the
    # kernel is asked where it is, is then "deleted", and must not become another key.
    backend = LocalBackend(root, state_dir=root.parent / "state")
    expected = (await backend.locate("d/c.txt")).key
    process = await anyio.open_process([sys.executable, "-c", REPLACER, str(root / "d"), "2"])
    async with process:
        keys = set()
        while process.returncode is None:
            keys.add((await backend.locate("dl/c.txt")).key)
            keys.add((await backend.locate("d/c.txt")).key)
            with anyio.move_on_after(0):
                await process.wait()
    assert keys == {expected}
