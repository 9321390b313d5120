"""``ctx.fs.apply_patch``: a patch over several files applies whole, or not at all."""

from __future__ import annotations

import pytest

from ctxfs.core import (
    ABSENT,
    AlreadyExists,
    BackendError,
    Context,
    Expect,
    FilePatch,
    Fs,
    Hunk,
    InvalidArgument,
    MemoryBackend,
    NoChange,
    NoMatch,
    NotFound,
    NotObserved,
    PatchAction,
    Stale,
    Unavailable,
)
from ctxfs.core.memory import Faults
from ctxfs.core.versions import Version

pytestmark = pytest.mark.anyio

ADD, UPDATE, DELETE = PatchAction.ADD, PatchAction.UPDATE, PatchAction.DELETE


def update(path: str, *hunks: Hunk, move_to: str | None = None) -> FilePatch:
    return FilePatch(action=UPDATE, path=path, hunks=hunks, move_to=move_to)


def hunk(old: list[str], new: list[str], *, anchors: tuple[str, ...] = ()) -> Hunk:
    return Hunk(anchors=anchors, old=tuple(old), new=tuple(new))


@pytest.fixture
async def tree(memory_backend: MemoryBackend, memory_ctx: Context) -> dict[str, bytes]:
    files = {
        "src/app.py": b"import os\n\ndef main():\n    print('hi')\n    return 0\n",
        "src/util.py": b"def helper():\n    return 1\n",
        "old.txt": b"obsolete\n",
    }
    for path, data in files.items():
        await memory_backend.write(path, data, expect=ABSENT)
        await memory_ctx.fs.read(path)
    return files


async def present(backend: MemoryBackend, path: str) -> bool:
    try:
        await backend.stat(path)
    except NotFound:
        return False
    return True


async def test_a_patch_adds_updates_moves_and_deletes_whole(
    memory_backend: MemoryBackend, memory_ctx: Context, tree: dict[str, bytes]
) -> None:
    outcome = await memory_ctx.fs.apply_patch(
        [
            FilePatch(action=ADD, path="docs/new.md", content="# New\n"),
            update("src/app.py", hunk(["    print('hi')"], ["    print('hello')"])),
            update(
                "src/util.py",
                hunk(["    return 1"], ["    return 2"], anchors=("def helper():",)),
                move_to="lib/util.py",
            ),
            FilePatch(action=DELETE, path="old.txt"),
        ]
    )
    assert (await memory_backend.read("docs/new.md")).data == b"# New\n"
    assert (await memory_backend.read("src/app.py")).data == tree["src/app.py"].replace(
        b"'hi'", b"'hello'"
    )
    assert (await memory_backend.read("lib/util.py")).data == b"def helper():\n    return 2\n"
    assert not await present(memory_backend, "src/util.py")
    assert not await present(memory_backend, "old.txt")
    added, updated, moved, deleted = outcome.files
    assert (added.action, added.previous_version, added.diff) == ("add", None, None)
    assert (updated.first_line, updated.last_line) == (4, 4)
    assert "+    print('hello')" in (updated.diff or "")
    assert (moved.path, moved.moved_to) == ("src/util.py", "lib/util.py")
    assert deleted.version is None
    assert outcome.written
    # the patch's own results count as read: the next change needs no read
    await memory_ctx.fs.edit("lib/util.py", "return 2", "return 3")
    await memory_ctx.fs.edit("docs/new.md", "New", "Newer")


async def test_a_patch_whose_last_hunk_does_not_apply_changes_nothing(
    memory_backend: MemoryBackend, memory_ctx: Context, tree: dict[str, bytes]
) -> None:
    before = dict(memory_backend.calls)
    with pytest.raises(NoMatch) as caught:
        await memory_ctx.fs.apply_patch(
            [
                FilePatch(action=ADD, path="new.txt", content="x\n"),
                FilePatch(action=DELETE, path="old.txt"),
                update(
                    "src/app.py",
                    hunk(["import os"], ["import sys"]),
                    hunk(["    return 42"], ["    return 0"]),
                ),
            ]
        )
    assert caught.value.details["hunk"] == 1
    assert caught.value.path == "src/app.py"
    assert memory_backend.calls["write"] == before.get("write", 0)
    assert memory_backend.calls["delete"] == before.get("delete", 0)
    assert not await present(memory_backend, "new.txt")
    for path, data in tree.items():
        assert (await memory_backend.read(path)).data == data


async def test_hunks_that_change_nothing_are_no_change_unless_the_file_moves(
    memory_backend: MemoryBackend, memory_ctx: Context, tree: dict[str, bytes]
) -> None:
    same = hunk(["import os"], ["import os"])
    with pytest.raises(NoChange, match=r"the hunks for src/app\.py change nothing"):
        await memory_ctx.fs.apply_patch(
            [FilePatch(action=DELETE, path="old.txt"), update("src/app.py", same)]
        )
    assert await present(memory_backend, "old.txt")
    await memory_ctx.fs.apply_patch([update("src/app.py", same, move_to="app.py")])
    assert (await memory_backend.read("app.py")).data == tree["src/app.py"]
    assert not await present(memory_backend, "src/app.py")


async def test_the_anchors_of_a_hunk_that_only_adds_lines_must_be_there(
    memory_backend: MemoryBackend, memory_ctx: Context, tree: dict[str, bytes]
) -> None:
    added = hunk([], ["    return 2"], anchors=("def no_such_function():",))
    with pytest.raises(NoMatch, match="its @@ line 'def no_such_function\\(\\):' is not"):
        await memory_ctx.fs.apply_patch([update("src/util.py", added)])
    assert (await memory_backend.read("src/util.py")).data == tree["src/util.py"]
    found = hunk([], ["# the end"], anchors=("def helper():",))
    await memory_ctx.fs.apply_patch([update("src/util.py", found)])
    assert (await memory_backend.read("src/util.py")).data == tree["src/util.py"] + b"# the end\n"


async def test_a_stale_file_fails_before_anything_is_written(
    memory_backend: MemoryBackend, memory_ctx: Context, tree: dict[str, bytes]
) -> None:
    await memory_backend.write("src/util.py", b"changed\n", expect=None)
    writes = memory_backend.calls["write"]
    with pytest.raises(Stale) as caught:
        await memory_ctx.fs.apply_patch(
            [
                update("src/app.py", hunk(["import os"], ["import sys"])),
                # the stale file's hunk would not apply either: stale is said first
                update("src/util.py", hunk(["    return 1"], ["    return 2"])),
            ]
        )
    assert caught.value.path == "src/util.py"
    assert memory_backend.calls["write"] == writes
    assert (await memory_backend.read("src/app.py")).data == tree["src/app.py"]


async def test_each_part_keeps_its_operation_s_rules(
    memory_backend: MemoryBackend, memory_ctx: Context, tree: dict[str, bytes]
) -> None:
    await memory_backend.write("unread.txt", b"secret\n", expect=ABSENT)
    attempts = [
        [FilePatch(action=ADD, path="unread.txt", content="over\n")],  # a write over it
        [FilePatch(action=DELETE, path="unread.txt")],
    ]
    for patch in attempts:
        with pytest.raises(NotObserved):
            await memory_ctx.fs.apply_patch(patch)
    moved = update("src/app.py", hunk(["import os"], ["import re"]), move_to="unread.txt")
    with pytest.raises(AlreadyExists):  # (a move never goes over a file, read or not)
        await memory_ctx.fs.apply_patch([moved])
    with pytest.raises(InvalidArgument):
        await memory_ctx.fs.apply_patch(
            [FilePatch(action=DELETE, path="old.txt"), FilePatch(action=DELETE, path="./old.txt")]
        )
    with pytest.raises(InvalidArgument):
        await memory_ctx.fs.apply_patch([])
    assert (await memory_backend.read("unread.txt")).data == b"secret\n"
    for path, data in tree.items():
        assert (await memory_backend.read(path)).data == data


async def test_a_dry_run_checks_everything_and_writes_nothing(
    memory_backend: MemoryBackend, memory_ctx: Context, tree: dict[str, bytes]
) -> None:
    writes = memory_backend.calls["write"]
    outcome = await memory_ctx.fs.apply_patch(
        [
            update("src/app.py", hunk(["import os"], ["import sys"])),
            FilePatch(action=DELETE, path="old.txt"),
        ],
        dry_run=True,
    )
    assert not outcome.written
    assert "+import sys" in (outcome.files[0].diff or "")
    assert memory_backend.calls["write"] == writes
    assert await present(memory_backend, "old.txt")
    # nothing observed changed: the real patch still applies
    await memory_ctx.fs.apply_patch([update("src/app.py", hunk(["import os"], ["import sys"]))])


async def test_a_store_failing_half_way_puts_back_what_was_written(
    memory_backend: MemoryBackend, memory_ctx: Context, tree: dict[str, bytes]
) -> None:
    memory_backend.faults.fail_next("write", Unavailable("the store is down"), path="src/util.py")
    with pytest.raises(Unavailable) as caught:
        await memory_ctx.fs.apply_patch(
            [
                FilePatch(action=ADD, path="new.txt", content="x\n"),
                FilePatch(action=DELETE, path="old.txt"),
                update("src/app.py", hunk(["import os"], ["import sys"])),
                update("src/util.py", hunk(["    return 1"], ["    return 2"])),
            ]
        )
    assert "nothing changed" in caught.value.message
    assert caught.value.details["restored"] == ["new.txt", "old.txt", "src/app.py"]
    assert not await present(memory_backend, "new.txt")
    for path, data in tree.items():
        assert (await memory_backend.read(path)).data == data
    # the files are still as the owner read them: the patch can be tried again
    await memory_ctx.fs.apply_patch([update("src/app.py", hunk(["import os"], ["import sys"]))])


async def test_a_store_bug_half_way_is_raised_as_itself_once_all_is_back(
    memory_backend: MemoryBackend, memory_ctx: Context, tree: dict[str, bytes]
) -> None:
    memory_backend.faults.fail_next("write", RuntimeError("a bug"), path="src/util.py")
    with pytest.raises(RuntimeError, match="a bug"):  # not an ExceptionGroup: as an edit does
        await memory_ctx.fs.apply_patch(
            [
                FilePatch(action=ADD, path="new.txt", content="x\n"),
                update("src/app.py", hunk(["import os"], ["import sys"])),
                update("src/util.py", hunk(["    return 1"], ["    return 2"])),
            ]
        )
    assert not await present(memory_backend, "new.txt")
    for path, data in tree.items():
        assert (await memory_backend.read(path)).data == data


async def test_a_store_bug_whose_patch_cannot_be_put_back_says_what_is_left() -> None:
    class DownOnceWritten(MemoryBackend):  # src/app.py's patch lands, then its undo fails
        async def _write(self, path: str, data: bytes, expect: Expect) -> Version:
            version = await super()._write(path, data, expect)
            self.faults.fail_next("write", Unavailable("the store is down"), path=path)
            return version

    backend = DownOnceWritten()
    ctx = Fs(backend, load_entrypoints=False).context(owner="agent")
    for path in ("app.py", "util.py"):
        await ctx.fs.write(path, "one\n")
    backend.faults = Faults()
    backend.faults.fail_next("write", RuntimeError("a bug"), path="util.py")
    with pytest.raises(BackendError) as caught:
        await ctx.fs.apply_patch(
            [update("app.py", hunk(["one"], ["two"])), update("util.py", hunk(["one"], ["two"]))]
        )
    assert "RuntimeError('a bug')" in caught.value.message
    assert caught.value.details["changed"] == ["app.py"]
    assert (await backend.read("app.py")).data == b"two\n"


async def test_a_failed_undo_says_what_each_file_holds(
    memory_backend: MemoryBackend, memory_ctx: Context, tree: dict[str, bytes]
) -> None:
    memory_backend.faults.fail_next("write", Unavailable("down"), path="src/util.py")
    # the one write old.txt sees is the one that would put it back
    memory_backend.faults.fail_next("write", Unavailable("still down"), path="old.txt")
    with pytest.raises(BackendError) as caught:
        await memory_ctx.fs.apply_patch(
            [
                update("src/app.py", hunk(["import os"], ["import sys"])),
                FilePatch(action=DELETE, path="old.txt"),
                update("src/util.py", hunk(["    return 1"], ["    return 2"])),
            ]
        )
    assert caught.value.details == {"changed": ["old.txt"], "restored": ["src/app.py"]}
    assert "old.txt is as the patch left it; src/app.py was put back" in caught.value.message
    assert not await present(memory_backend, "old.txt")
    assert (await memory_backend.read("src/app.py")).data == tree["src/app.py"]


async def test_hunks_keep_every_byte_outside_the_lines_they_change(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    crlf = b"\xef\xbb\xbfone\r\ntwo  \r\nthree\nfour\r\nfive"  # BOM, mixed endings, no final break
    sjis = "# 設定ファイルを読み込みます\nname = 'テスト'\nvalue = 1\n".encode("shift_jis")
    await memory_backend.write("crlf.txt", crlf, expect=ABSENT)
    await memory_backend.write("sjis.py", sjis, expect=ABSENT)
    for path in ("crlf.txt", "sjis.py"):
        await memory_ctx.fs.read(path)
    await memory_ctx.fs.apply_patch(
        [
            # "two" matches "two  " only loosely: the context line keeps its bytes
            update("crlf.txt", hunk(["two", "three"], ["two", "THREE", "3"])),
            update("sjis.py", hunk(["value = 1"], ["value = 'ニ'"])),
        ]
    )
    assert (await memory_backend.read("crlf.txt")).data == (
        b"\xef\xbb\xbfone\r\ntwo  \r\nTHREE\n3\nfour\r\nfive"
    )
    assert (await memory_backend.read("sjis.py")).data == (
        "# 設定ファイルを読み込みます\nname = 'テスト'\nvalue = 'ニ'\n".encode("shift_jis")
    )
    await memory_ctx.fs.apply_patch(
        [update("crlf.txt", hunk(["five"], ["five", "six"]), hunk([], ["seven"]))]
    )
    assert (await memory_backend.read("crlf.txt")).data.endswith(b"four\r\nfive\r\nsix\r\nseven")
