"""Moving a directory on local disk: judged entry by entry, locked, observations carried.

The layout: ``pkg/a.py``, ``pkg/b.py``, ``pkg/sub/c.py``, ``pkg/secret.env``, a link
``pkg/keys -> ../secrets`` into a denied area, and ``secrets/key``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from ctxfs.core import Busy, Fs, NotObserved, Operation, OpKind, hookimpl
from ctxfs.core import moves as core_moves
from ctxfs.core.policies import PathRules
from ctxfs.local import LocalBackend
from ctxfs.local.flocks import LockDirectory
from ctxfs.tools import FsToolset, ToolResult

pytestmark = pytest.mark.anyio


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "R"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("a = 1\n")
    (root / "pkg" / "b.py").write_text("b = 1\n")
    (root / "pkg" / "sub" / "c.py").write_text("c = 1\n")
    (root / "pkg" / "secret.env").write_text("TOKEN=abc\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "key").write_text("TOKEN=abc\n")
    os.symlink("../secrets", root / "pkg" / "keys")
    return root


def local_fs(root: Path, **options: object) -> Fs:
    return Fs(LocalBackend(root, state_dir=root.parent / "state"), **options)  # type: ignore[arg-type]


@pytest.fixture
async def fs(root: Path) -> AsyncIterator[Fs]:
    async with local_fs(root, plugins=[PathRules(deny=["secrets"])]) as opened:
        yield opened


async def call(fs: Fs, name: str, **arguments: object) -> ToolResult:
    return await FsToolset().execute(fs.context(owner="agent"), name, arguments)


def tree(root: Path) -> dict[str, bytes | str]:
    """Every entry below *root*: a file's bytes, a link's target, a directory's mark."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.is_symlink():
            found[name] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            found[name] = "dir"
        else:
            found[name] = path.read_bytes()
    return found


async def test_a_directory_moves_whole_links_moved_not_followed(fs: Fs, root: Path) -> None:
    before = tree(root / "pkg")
    moved = await call(fs, "move", source_path="pkg", destination_path="lib/pkg")
    assert moved.error_code is None, moved.text
    assert moved.structured["moved"] == 6
    assert "TOKEN" not in moved.text
    assert not (root / "pkg").exists()
    assert tree(root / "lib" / "pkg") == before  # the link moved as a link, still "../secrets"
    assert (root / "secrets" / "key").read_text() == "TOKEN=abc\n"


async def test_each_link_moved_is_an_operation_of_its_own_key(root: Path) -> None:
    # A link's move had the empty key (the root's), and two links shared one lock and entry.
    os.symlink("a.py", root / "pkg" / "second")
    seen: list[Operation] = []

    class Judge:
        @hookimpl
        def ctxfs_authorize(self, ctx: object, op: Operation) -> None:
            seen.append(op)

    async with local_fs(root, plugins=[Judge()]) as fs:
        moved = await call(fs, "move", source_path="pkg", destination_path="lib/pkg")
    assert moved.error_code is None, moved.text
    links = {op.path: op.key for op in seen if op.path in ("pkg/keys", "pkg/second")}
    assert links == {"pkg/keys": "pkg/keys", "pkg/second": "pkg/second"}


@pytest.mark.parametrize(
    ("rules", "destination"),
    [
        ({"deny": ["pkg/secret.env"]}, "lib/pkg"),
        ({"deny": ["**/*.env"]}, "lib/pkg"),
        ({"read_only": ["pkg/sub/c.py"]}, "lib/pkg"),
        ({"read_only": ["lib/pkg/sub"]}, "lib/pkg"),
        ({"deny": ["lib/pkg/a.py"]}, "lib/pkg"),
    ],
)
async def test_one_entry_refused_refuses_the_whole_move(
    root: Path, rules: dict[str, list[str]], destination: str
) -> None:
    before = tree(root)
    async with local_fs(root, plugins=[PathRules(**rules)]) as fs:
        moved = await call(fs, "move", source_path="pkg", destination_path=destination)
    assert moved.error_code == "denied", moved.text
    assert "TOKEN" not in moved.text
    assert tree(root) == before


async def test_the_movers_observations_follow_the_files(fs: Fs, root: Path) -> None:
    agent, other = fs.context(owner="agent"), fs.context(owner="other")
    await agent.fs.read("pkg/a.py", offset=1, limit=1)
    await other.fs.read("pkg/b.py")
    await agent.fs.move("pkg", "lib/pkg")
    edited = await agent.fs.edit("lib/pkg/a.py", "a = 1", "a = 2")  # no new read needed
    assert edited.replacements == 1
    unread = await call(fs, "edit", file_path="lib/pkg/b.py", old_string="b", new_string="B")
    assert unread.error_code == "not_observed"
    with pytest.raises(NotObserved):  # the other owner read it at its old path only
        await other.fs.edit("lib/pkg/b.py", "b", "B")
    assert (root / "lib" / "pkg" / "b.py").read_text() == "b = 1\n"


async def test_a_held_lock_below_makes_the_move_wait(fs: Fs, root: Path) -> None:
    ctx = fs.context(owner="agent")
    where = await fs.backend.locate("pkg/sub/c.py")
    op = Operation(kind=OpKind.EDIT, path="pkg/sub/c.py", resolved=where.resolved, key=where.key)
    [guard, *_] = fs.hooks.mutation_locks(ctx, op)
    done = anyio.Event()

    async def move() -> None:
        await ctx.fs.move("pkg", "lib/pkg")
        done.set()

    async with anyio.create_task_group() as group:
        async with guard:  # a concurrent edit of pkg/sub/c.py, under way
            group.start_soon(move)
            await anyio.sleep(0.3)
            assert not done.is_set()
            (root / "pkg" / "sub" / "c.py").write_text("c = 2\n")  # what the edit stores
        with anyio.fail_after(10):
            await done.wait()
    assert (root / "lib" / "pkg" / "sub" / "c.py").read_text() == "c = 2\n"


async def test_a_lock_held_too_long_fails_the_move_busy_unchanged(root: Path) -> None:
    before = tree(root)
    async with local_fs(root, lock_timeout=0.2) as fs, local_fs(root, lock_timeout=5) as rival:
        ctx = fs.context(owner="agent")
        where = await rival.backend.locate("pkg/a.py")
        op = Operation(kind=OpKind.EDIT, path="pkg/a.py", resolved=where.resolved, key=where.key)
        [guard, *_] = rival.hooks.mutation_locks(ctx, op)
        async with guard:  # another process's edit (another Fs: only the flock is shared)
            with pytest.raises(Busy):
                await ctx.fs.move("pkg", "lib/pkg")
    assert tree(root) == before


async def test_too_many_entries_are_refused_with_a_hint(
    fs: Fs, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core_moves, "MAX_MOVED_ENTRIES", 3)
    moved = await call(fs, "move", source_path="pkg", destination_path="lib/pkg")
    assert moved.error_code == "too_large"
    assert "smaller parts" in (moved.structured["error"]["hint"] or "")
    assert (root / "pkg" / "a.py").exists()
    assert not (root / "lib").exists()


async def test_links_cannot_carry_a_directory_or_lead_into_itself(fs: Fs, root: Path) -> None:
    os.symlink("pkg", root / "pkglink")
    os.symlink("pkg/sub", root / "inside")
    before = tree(root)
    via_link = await call(fs, "move", source_path="pkglink", destination_path="lib")
    assert via_link.error_code == "not_a_directory", via_link.text
    into_itself = await call(fs, "move", source_path="pkg", destination_path="inside/pkg")
    assert into_itself.error_code == "invalid_argument", into_itself.text
    assert tree(root) == before


async def test_many_keys_sharing_lock_buckets_are_held_at_once(tmp_path: Path) -> None:
    locks = LockDirectory(tmp_path / "state")
    rival = LockDirectory(tmp_path / "state")
    by_bucket: dict[str, str] = {}
    one = two = ""
    for number in range(100_000):
        key = f"/k/{number}"
        one = by_bucket.setdefault(locks.file_name("mutation", key), key)
        if one != key:
            two = key
            break
    with anyio.fail_after(5):
        async with locks.hold("mutation", one, timeout=1), locks.hold("mutation", two, timeout=1):
            with pytest.raises(Busy):  # one key is still one lock, whoever asks
                async with rival.hold("mutation", two, timeout=0.1):
                    pass
        async with rival.hold("mutation", two, timeout=1):
            pass
    locks.close()
    rival.close()
