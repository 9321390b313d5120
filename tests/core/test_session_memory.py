"""Session memory: stale refusals with their diff, ``changed()``, undo and rewind.

Proved on the memory, local and S3 backends, with the in-process, SQLite and
Redis session stores. Every undo is checked byte for byte, and every refusal
checks that no file changed.
"""

from __future__ import annotations

import errno
import itertools
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import anyio.lowlevel
import pytest

from ctxfs.core import (
    AlreadyExists,
    ContextFs,
    Denied,
    FilePatch,
    Fs,
    FsError,
    Hunk,
    InvalidArgument,
    MemoryBackend,
    NoMatch,
    NotEnabled,
    NotFound,
    NotObserved,
    Operation,
    PatchAction,
    Stale,
    Unavailable,
    UndoOutcome,
    Version,
    hookimpl,
    memory,
    open_fs,
    session_memory,
)
from ctxfs.core.policies import PathRules
from ctxfs.core.session_memory import KEPT_RECENTLY_SECONDS
from ctxfs.core.sessions import (
    DEFAULT_MAX_BYTES_PER_OWNER,
    DEFAULT_MAX_STEPS,
    Checkpoint,
    FileChange,
    MemorySessions,
    SessionStore,
    Step,
)
from ctxfs.core.text.diffs import INLINE_DIFF_LINES
from ctxfs.core.textwork import TEXT_WORK_INLINE_BYTES, text_work
from tests.remote.servers import S3

pytestmark = pytest.mark.anyio

A, B = "agent-a", "agent-b"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the Redis client and the S3 backend are asyncio's


# -- where the tests run --------------------------------------------------------------------


@dataclass
class Place:
    """A backend root and a session store; :meth:`open` opens an ``Fs`` on them (again)."""

    url: str
    sessions: SessionStore | str
    options: dict[str, Any] = field(default_factory=dict)
    backend: str = "memory"
    store: str = "memory"

    def open(self, **options: Any) -> Fs:
        return open_fs(
            self.url, load_entrypoints=False, sessions=self.sessions, **self.options, **options
        )


_COMBOS = [
    (backend, store)
    for backend in ("memory", "local", "s3")
    for store in ("memory", "sqlite", "redis")
]


@pytest.fixture(scope="session")
def s3_bucket() -> str:
    S3.require()
    return S3.create_bucket()


def make_place(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str, store: str, **bounds: Any
) -> Place:
    """The place of *backend* and *store*; the store with the *bounds* given (its defaults else)."""
    sessions: SessionStore | str
    if store == "memory":
        sessions = MemorySessions(**bounds)
    elif store == "sqlite":
        sessions = f"sqlite:///{tmp_path}/sessions.db?{urlencode(bounds)}"
    else:
        sessions = f"{request.getfixturevalue('redis_url')}&{urlencode(bounds)}"
    if backend == "memory":
        return Place(f"memory://sm-{uuid.uuid4().hex}", sessions, backend=backend, store=store)
    if backend == "local":
        root = tmp_path / "root"
        root.mkdir()
        return Place(str(root), sessions, backend=backend, store=store)
    bucket = str(request.getfixturevalue("s3_bucket"))
    options = S3.options | {"probe": False}  # moto enforces every condition (the probe's tests)
    return Place(
        S3.url(bucket, uuid.uuid4().hex[:12]), sessions, options, backend=backend, store=store
    )


_QUICK = {("memory", "memory"), ("local", "sqlite"), ("s3", "redis")}
"""Each backend and each store once in the quick loop; every pairing in the slow set."""


def _combos(combos: list[tuple[str, str]]) -> list[Any]:
    return [
        pytest.param(combo, id="-".join(combo), marks=() if combo in _QUICK else pytest.mark.slow)
        for combo in combos
    ]


@pytest.fixture(params=_combos(_COMBOS))
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    backend, store = request.param
    return make_place(request, tmp_path, backend, store)


_KEPT = [(backend, store) for backend, store in _COMBOS if store != "memory"]


@pytest.fixture(params=_combos(_KEPT))
def kept_place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """A place whose session store outlives its process (SQLite, Redis)."""
    backend, store = request.param
    return make_place(request, tmp_path, backend, store)


@pytest.fixture(params=["memory", "local"])
def local_place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """The in-process backends with the in-process store (tests of the protocol itself)."""
    return make_place(request, tmp_path, str(request.param), "memory")


@pytest.fixture
async def on_disk(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Fs, Path]]:
    """fs-local with the in-process store, and its root (to change files behind its back)."""
    place = make_place(request, tmp_path, "local", "memory")
    async with place.open() as opened:
        yield opened, Path(place.url)


@pytest.fixture
async def fs(place: Place) -> AsyncIterator[Fs]:
    async with place.open() as opened:
        yield opened


# -- helpers ----------------------------------------------------------------------------------


async def raw(fs: Fs, path: str) -> bytes | None:
    """The bytes of *path* in the store (None: absent), read past every guard."""
    try:
        return (await fs.backend.read(path)).data
    except NotFound:
        return None


async def seed(fs: Fs, files: dict[str, bytes]) -> None:
    for path, data in files.items():
        await fs.backend.write(path, data, expect=None)


async def snapshot(fs: Fs, paths: Iterable[str]) -> dict[str, bytes | None]:
    return {path: await raw(fs, path) for path in paths}


def numbered(count: int, word: str = "line") -> str:
    return "".join(f"{word} {n}\n" for n in range(count))


def update(path: str, old: list[str], new: list[str], move_to: str | None = None) -> FilePatch:
    return FilePatch(
        action=PatchAction.UPDATE,
        path=path,
        hunks=(Hunk(old=tuple(old), new=tuple(new)),),
        move_to=move_to,
    )


# -- stale refusals carry the diff ------------------------------------------------------------


async def test_a_stale_edit_shows_the_change_and_the_corrected_edit_needs_no_read(fs: Fs) -> None:
    text = numbered(20)
    await seed(fs, {"a.py": text.encode()})
    a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
    await a.read("a.py")
    await b.read("a.py")
    await b.edit("a.py", "line 3\n", "line three\n")

    with pytest.raises(Stale) as refused:
        await a.edit("a.py", "line 15\n", "line fifteen\n")
    details = refused.value.details
    assert details["diff_whole"] is True
    diff = str(details["diff"])
    assert "-line 3" in diff
    assert "+line three" in diff
    assert "+line fifteen" not in diff  # only the outside change
    assert "-line 15" not in diff
    assert await raw(fs, "a.py") == text.replace("line 3\n", "line three\n").encode()

    await a.edit("a.py", "line 15\n", "line fifteen\n")  # no read in between
    expected = text.replace("line 3\n", "line three\n").replace("line 15\n", "line fifteen\n")
    assert await raw(fs, "a.py") == expected.encode()


async def test_a_file_saved_outside_in_another_encoding_is_diffed_as_an_edit_reads_it(
    local_place: Place,
) -> None:
    async with local_place.open() as fs:
        a = fs.context(owner=A).fs
        await a.write("u.txt", "hello\nworld\n")
        await seed(fs, {"u.txt": b"hello\ncaf\xe9\nworld\n"})  # no longer UTF-8 (cp1252)
        await seed(fs, {"c.txt": "café = 1\nzwei\n".encode("cp1252")})
        await a.read("c.txt")
        await seed(fs, {"c.txt": "café = 2 \u2603\nzwei\n".encode()})  # UTF-8 now
        for path, added in (("u.txt", "+café"), ("c.txt", "+café = 2 \u2603")):
            with pytest.raises(Stale) as refused:
                await a.edit(path, "zwei" if path == "c.txt" else "world", "drei")
            assert added in str(refused.value.details["diff"]), path
        assert await a.changed() == []  # each diff, shown whole, was a read of the file now
        await a.edit("c.txt", "zwei", "drei")  # (of the UTF-8 text)
        assert await raw(fs, "c.txt") == "café = 2 \u2603\ndrei\n".encode()


async def test_a_diff_of_many_short_lines_runs_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[bool] = []

    async def recorded(size: int, work: Callable[[], Any], *, costly: bool = False) -> Any:
        asked.append(size <= TEXT_WORK_INLINE_BYTES and not costly)
        return await text_work(size, work, costly=costly)

    monkeypatch.setattr("ctxfs.core.session_memory.text_work", recorded)
    async with open_fs("memory://", load_entrypoints=False) as fs:
        a = fs.context(owner=A).fs
        cases = [
            (INLINE_DIFF_LINES // 2, "\n"),
            (INLINE_DIFF_LINES, "\n"),
            (INLINE_DIFF_LINES, "\r"),
        ]
        for lines, end in cases:  # small files all
            text, path = "".join(f"{n % 7}{end}" for n in range(lines)), f"{lines}-{ord(end)}.txt"
            await a.write(path, text)
            await seed(fs, {path: text.replace("3", "x").encode()})
            with pytest.raises(Stale):
                await a.write(path, "mine\n")
    assert asked == [True, False, False]  # (on the loop, then in a worker thread)


async def test_a_diff_shows_why_the_old_string_no_longer_matches(fs: Fs) -> None:
    text = "def total(a, b):\n    return a + b\n\nprint(total(1, 2))\n"
    await seed(fs, {"calc.py": text.encode()})
    a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
    await a.read("calc.py")
    await b.read("calc.py")
    await b.edit("calc.py", "    return a + b\n", "    return a + b + 1\n")

    with pytest.raises(Stale) as refused:
        await a.edit("calc.py", "    return a + b\n", "    return b + a\n")
    diff = str(refused.value.details["diff"])
    assert refused.value.details["diff_whole"] is True
    assert "-    return a + b\n" in diff
    assert "+    return a + b + 1" in diff

    # the diff counted as a read: the same edit is now judged on the text, and no longer matches
    with pytest.raises(NoMatch):
        await a.edit("calc.py", "    return a + b\n", "    return b + a\n")
    await a.edit("calc.py", "    return a + b + 1\n", "    return b + a + 1\n")
    assert await raw(fs, "calc.py") == text.replace("a + b\n", "b + a + 1\n").encode()


async def test_a_diff_beyond_the_bound_is_a_summary_and_no_read(fs: Fs) -> None:
    text = numbered(600)
    await seed(fs, {"big.txt": text.encode()})
    a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
    await a.read("big.txt")
    await b.read("big.txt")
    changed = "".join(f"line {n} changed\n" if n < 500 else f"line {n}\n" for n in range(600))
    await b.write("big.txt", changed)

    with pytest.raises(Stale) as refused:
        await a.edit("big.txt", "line 550\n", "line 550!\n")
    assert refused.value.details["diff_whole"] is False
    assert refused.value.details["diff"]
    with pytest.raises(Stale):  # the summary was no read: still stale
        await a.edit("big.txt", "line 550\n", "line 550!\n")
    assert await raw(fs, "big.txt") == changed.encode()
    await a.read("big.txt")
    await a.edit("big.txt", "line 550\n", "line 550!\n")
    assert await raw(fs, "big.txt") == changed.replace("line 550\n", "line 550!\n").encode()


async def test_without_session_memory_a_stale_refusal_has_no_diff(place: Place) -> None:
    async with place.open(session_memory=False) as fs:
        await seed(fs, {"a.txt": b"one\ntwo\n"})
        a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
        await a.read("a.txt")
        await b.read("a.txt")
        await b.edit("a.txt", "one", "uno")
        with pytest.raises(Stale) as refused:
            await a.edit("a.txt", "two", "dos")
        assert "diff" not in refused.value.details
        with pytest.raises(Stale):  # and nothing counted as a read
            await a.edit("a.txt", "two", "dos")
        with pytest.raises(NotEnabled):
            await a.undo()
        with pytest.raises(NotEnabled):
            await a.checkpoint()
        with pytest.raises(NotEnabled):
            await a.rewind("cp1")
        assert await raw(fs, "a.txt") == b"uno\ntwo\n"


async def test_without_session_memory_changed_lists_files_without_diffs(place: Place) -> None:
    async with place.open(session_memory=False) as fs:
        await seed(fs, {"a.txt": b"one\ntwo\n"})
        a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
        seen = (await a.read("a.txt")).version
        await b.read("a.txt")
        edited = await b.edit("a.txt", "one", "uno")
        [changed] = await a.changed()
        assert (changed.path, changed.seen, changed.current) == ("a.txt", seen, edited.version)
        assert changed.diff is None
        assert changed.diff_whole is False


# -- changed() -------------------------------------------------------------------------------


async def test_changed_lists_what_changed_since_the_owner_saw_it(fs: Fs) -> None:
    await seed(fs, {"a.txt": b"one\ntwo\n", "b.txt": b"bee\n", "c.txt": b"sea\n"})
    a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
    seen = {path: (await a.read(path)).version for path in ("a.txt", "b.txt", "c.txt")}
    await a.write("d.txt", "mine\n")  # its own change: seen
    assert await a.changed() == []

    for path in ("a.txt", "b.txt"):
        await b.read(path)
    edited = await b.edit("a.txt", "two", "deux")
    await b.delete("b.txt")

    found = {file.path: file for file in await a.changed()}
    assert set(found) == {"a.txt", "b.txt"}
    assert found["a.txt"].seen == seen["a.txt"]
    assert found["a.txt"].current == edited.version
    assert found["a.txt"].diff_whole is True
    assert "-two" in str(found["a.txt"].diff)
    assert "+deux" in str(found["a.txt"].diff)
    assert found["b.txt"].seen == seen["b.txt"]
    assert found["b.txt"].current is None
    assert await b.changed() == []  # B saw its own changes

    with pytest.raises(Stale):  # changed() observes nothing
        await a.edit("a.txt", "one", "uno")
    assert await raw(fs, "a.txt") == b"one\ndeux\n"


async def test_changed_lists_a_file_whose_directory_became_a_file_as_gone(
    on_disk: tuple[Fs, Path],
) -> None:
    fs, root = on_disk
    a = fs.context(owner=A).fs
    await a.write("d/f.txt", "mine\n")
    await a.write("g.txt", "g\n")
    (root / "d" / "f.txt").unlink()
    (root / "d").rmdir()
    (root / "d").write_text("a file where the directory was\n")
    (root / "g.txt").write_text("G\n")
    found = {file.path: file.current for file in await a.changed()}
    assert set(found) == {"d/f.txt", "g.txt"}
    assert found["d/f.txt"] is None


async def test_changed_lists_a_file_grown_past_the_bound_without_a_diff() -> None:
    async with Fs_on_memory(max_bytes_per_owner=100) as fs:
        await seed(fs, {"a.txt": b"small\n"})
        a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
        seen = (await a.read("a.txt")).version
        await b.read("a.txt")
        grown = await b.write("a.txt", "x\n" * 500)  # 1,000 bytes: more than is kept
        [changed] = await a.changed()
        assert (changed.path, changed.seen, changed.current) == ("a.txt", seen, grown.version)
        assert changed.diff is None


# -- undo and rewind, byte for byte ----------------------------------------------------------

ODD_FILES = {
    "crlf.txt": b"first\r\nsecond\r\nthird\r\n",
    "bom.txt": b"\xef\xbb\xbfwith a bom\nsecond\n",
    "legacy.txt": "\u043f\u0440\u0438\u0432\u0435\u0442\n\u043c\u0438\u0440\n".encode("cp1251"),
    "blob.bin": b"\x00\xff\xfe\x80binary\x00\n\xc3",
}


async def test_undo_puts_back_every_byte(fs: Fs) -> None:
    await seed(fs, ODD_FILES)
    a = fs.context(owner=A).fs
    await a.read("crlf.txt")
    await a.edit("crlf.txt", "second", "2nd")
    await a.read("bom.txt")
    await a.edit("bom.txt", "second", "2nd")
    await a.read("legacy.txt", encoding="cp1251")
    await a.edit("legacy.txt", "\u043c\u0438\u0440", "\u0441\u0432\u0435\u0442")
    await a.read_bytes("blob.bin")
    await a.write_bytes("blob.bin", b"\x01\x02 replaced \xff")
    after = await snapshot(fs, ODD_FILES)
    assert after["crlf.txt"] == b"first\r\n2nd\r\nthird\r\n"
    assert after["bom.txt"] == b"\xef\xbb\xbfwith a bom\n2nd\n"
    assert after[
        "legacy.txt"
    ] == "\u043f\u0440\u0438\u0432\u0435\u0442\n\u0441\u0432\u0435\u0442\n".encode("cp1251")

    last = await a.undo()
    assert last.steps == (4,)
    assert [file.path for file in last.files] == ["blob.bin"]
    assert await snapshot(fs, ODD_FILES) == {**after, "blob.bin": ODD_FILES["blob.bin"]}

    rest = await a.undo(3)
    assert rest.steps == (3, 2, 1)
    assert rest.written is True
    assert {file.path for file in rest.files} == {"crlf.txt", "bom.txt", "legacy.txt"}
    assert await snapshot(fs, ODD_FILES) == ODD_FILES
    with pytest.raises(InvalidArgument) as none_left:
        await a.undo()
    assert none_left.value.details["steps"] == 0

    await a.edit("crlf.txt", "first", "1st")  # the undo's result counts as seen
    assert await raw(fs, "crlf.txt") == b"1st\r\nsecond\r\nthird\r\n"


async def test_reads_past_the_bound_leave_what_an_undo_needs(
    place: Place, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    # 1 KB files in a bound of 8 KB: the twenty reads after the edits push out only reads.
    (tmp_path / "small").mkdir()
    bound = {"max_bytes_per_owner": 8_000}
    small = make_place(request, tmp_path / "small", place.backend, place.store, **bound)
    files = {f"f{n}.txt": numbered(100, f"f{n}").encode()[:1_000] for n in range(22)}
    async with small.open() as fs:
        await seed(fs, files)
        a = fs.context(owner=A).fs
        for path in ("f0.txt", "f1.txt"):
            await a.read(path)
            await a.edit(path, f"{path[:-4]} 7\n", "seven\n")
        for n in range(2, 22):
            await a.read(f"f{n}.txt")
        assert (await a.undo(2)).steps == (2, 1)
        assert await snapshot(fs, files) == files


async def test_undo_after_a_partial_read_puts_back_the_file(fs: Fs) -> None:
    text = numbered(50).replace("\n", "\r\n").encode()
    await seed(fs, {"part.txt": text})
    a = fs.context(owner=A).fs
    await a.read("part.txt", offset=10, limit=2)  # a window only
    await a.edit("part.txt", "line 10", "line ten")
    assert await raw(fs, "part.txt") == text.replace(b"line 10\r", b"line ten\r")
    outcome = await a.undo()
    assert [file.path for file in outcome.files] == ["part.txt"]
    assert await raw(fs, "part.txt") == text
    with pytest.raises(NotObserved, match="only part of"):  # lines 1-9 and 12-50: never shown
        await a.write("part.txt", "replaced\n")
    await a.edit("part.txt", "line 10", "line ten")  # what it saw is still a read
    await a.read("part.txt")
    await a.undo()
    await a.write("part.txt", "replaced\n")  # seen whole before the undo: whole after it
    await seed(fs, {"part.txt": text})
    await a.read("part.txt", offset=10, limit=2)
    await a.delete("part.txt")
    await a.write("part.txt", "a file of its own\n")  # (seen whole: but another file)
    await a.undo(2)
    assert await raw(fs, "part.txt") == text
    with pytest.raises(NotObserved, match="only part of"):
        await a.write("part.txt", "replaced\n")


async def test_undo_removes_created_restores_deleted_and_reverses_moves(fs: Fs) -> None:
    files = {"old.txt": b"old\r\n", "m.txt": b"moving\n\xff\n"}
    await seed(fs, files)
    a = fs.context(owner=A).fs
    await a.write("new.txt", "brand new\n")
    await a.read_bytes("old.txt")
    await a.delete("old.txt")
    await a.read_bytes("m.txt")
    await a.move("m.txt", "dir/m2.txt")
    paths = ["new.txt", "old.txt", "m.txt", "dir/m2.txt"]
    assert await snapshot(fs, paths) == {
        "new.txt": b"brand new\n",
        "old.txt": None,
        "m.txt": None,
        "dir/m2.txt": b"moving\n\xff\n",
    }

    outcome = await a.undo(3)
    assert outcome.steps == (3, 2, 1)
    assert await snapshot(fs, paths) == {**files, "new.txt": None, "dir/m2.txt": None}
    restored = {file.path: file for file in outcome.files}
    assert set(restored) == set(paths)
    assert restored["new.txt"].now is None
    assert restored["new.txt"].was is not None
    assert restored["old.txt"].was is None
    assert restored["old.txt"].now is not None
    assert restored["dir/m2.txt"].now is None
    assert restored["m.txt"].was is None


async def test_a_patch_over_several_files_is_undone_as_one_step(fs: Fs) -> None:
    files = {
        "src/app.py": b"import os\r\n\r\ndef main():\r\n    return 0\r\n",
        "src/util.py": b"def helper():\n    return 1\n",
        "old.txt": b"obsolete\n",
        "mv.py": b"x = 1\n",
    }
    await seed(fs, files)
    a = fs.context(owner=A).fs
    await a.read("src/app.py")
    await a.edit("src/app.py", "import os", "import sys")  # step 1, kept
    for path in files:
        await a.read(path)
    await a.apply_patch(
        [
            update("src/app.py", ["    return 0"], ["    return 1"]),
            update("src/util.py", ["    return 1"], ["    return 2"]),
            FilePatch(action=PatchAction.ADD, path="docs/new.md", content="# New\n"),
            FilePatch(action=PatchAction.DELETE, path="old.txt"),
            update("mv.py", ["x = 1"], ["x = 2"], move_to="lib/mv.py"),
        ]
    )
    paths = [*files, "docs/new.md", "lib/mv.py"]
    patched = await snapshot(fs, paths)
    assert patched["lib/mv.py"] == b"x = 2\n"
    assert patched["old.txt"] is None

    outcome = await a.undo()
    assert outcome.steps == (2,)
    assert {file.path for file in outcome.files} == set(paths)
    assert await snapshot(fs, paths) == {
        **files,
        "src/app.py": files["src/app.py"].replace(b"import os", b"import sys"),
        "docs/new.md": None,
        "lib/mv.py": None,
    }
    await a.undo()
    assert await snapshot(fs, paths) == {**files, "docs/new.md": None, "lib/mv.py": None}


@pytest.mark.parametrize("where", ["memory", "local"])
async def test_a_move_of_a_file_larger_than_the_bound_is_undone_from_where_it_went(
    where: str, tmp_path: Path
) -> None:
    # the file's content was never kept (larger than the owner's bound): the undo takes it
    # from where the move left it
    big = numbered(500).encode()
    sessions = MemorySessions(max_bytes_per_owner=1000)
    url = "memory://" if where == "memory" else str(tmp_path)
    async with open_fs(url, load_entrypoints=False, sessions=sessions) as fs:
        await seed(fs, {"big.txt": big, "small.txt": b"small\n"})
        a = fs.context(owner=A).fs
        await a.read_bytes("big.txt")
        await a.move("big.txt", "dir/big.txt")
        paths = ["big.txt", "dir/big.txt"]
        assert (await a.undo(dry_run=True)).written is False
        assert await snapshot(fs, paths) == {"big.txt": None, "dir/big.txt": big}
        outcome = await a.undo()
        assert await snapshot(fs, paths) == {"big.txt": big, "dir/big.txt": None}
        assert {file.path for file in outcome.files} == set(paths)
        await a.edit("big.txt", "line 0\n", "LINE 0\n")  # (the undo's result counts as seen)
        await a.move("big.txt", "moved.txt")
        with pytest.raises(InvalidArgument, match="not kept"):  # its content before the edit
            await a.undo(2)  # is nowhere now
        await a.read_bytes("small.txt")
        await a.move("small.txt", "dir/small.txt")
        await a.delete("dir/small.txt")
        await a.undo()  # small: kept, as it always was
        assert await raw(fs, "dir/small.txt") == b"small\n"


async def test_undo_removes_the_directories_a_step_made(fs: Fs) -> None:
    await seed(fs, {"keep/old.txt": b"old\n"})
    a = fs.context(owner=A).fs
    await a.mkdir("keep/new/deep")
    await a.mkdir("keep/new/deep")  # already there: no step
    await a.write("keep/new/deep/f.txt", "f\n")
    real = fs.backend.capabilities.real_directories  # else a directory is a prefix: no step
    made = ("keep/new/deep", "keep/new") if real else ()

    dry = await a.undo(2 if real else 1, dry_run=True)
    assert (dry.directories, dry.written) == (made, False)
    assert await raw(fs, "keep/new/deep/f.txt") == b"f\n"
    done = await a.undo(2 if real else 1)
    assert done.directories == made
    assert [entry.name for entry in await fs.backend.list("keep")] == ["old.txt"]
    with pytest.raises(InvalidArgument):  # nothing left to undo
        await a.undo()


async def test_a_directory_someone_else_put_a_file_in_is_kept(local_place: Place) -> None:
    async with local_place.open() as fs:
        a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
        await a.mkdir("made")
        await a.write("made/mine.txt", "mine\n")
        await a.write("new/deep/created.txt", "created\n")  # its parents are made too
        await b.write("made/theirs.txt", "theirs\n")

        dry = await a.undo(3, dry_run=True)
        assert (dry.directories, dry.kept_directories) == (("new/deep", "new"), ("made",))
        done = await a.undo(3)
        assert (done.directories, done.kept_directories) == (dry.directories, ("made",))
        assert {file.path for file in done.files} == {"made/mine.txt", "new/deep/created.txt"}
        assert [entry.name for entry in await fs.backend.list("")] == ["made"]
        assert [entry.name for entry in await fs.backend.list("made")] == ["theirs.txt"]


async def test_an_undo_over_someone_elses_change_between_the_steps_is_refused(fs: Fs) -> None:
    a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
    await a.write("m.py", "x = 1\n")
    mark = await a.checkpoint()
    await a.edit("m.py", "x = 1", "x = 2")
    await b.read("m.py")
    await b.edit("m.py", "x = 2\n", "x = 2\nB = True\n")
    await a.read("m.py")
    await a.edit("m.py", "x = 2", "x = 3")
    for call in (a.undo(2), a.rewind(mark.id), a.undo(2, dry_run=True)):
        with pytest.raises(Stale, match="changed between your steps") as refused:
            await call
        assert "+B = True" in str(refused.value.details["diff"])
        assert await raw(fs, "m.py") == b"x = 3\nB = True\n"
    await a.undo()  # the newest step alone is the owner's own
    assert await raw(fs, "m.py") == b"x = 2\nB = True\n"


async def test_an_undo_of_a_step_no_longer_the_newest_is_stale(fs: Fs) -> None:
    # A caller that chose the step to undo (the text editor's undo_edit of a file) is not
    # given another: a step the owner made meanwhile is no longer that one.
    a = fs.context(owner=A).fs
    await a.write("m.py", "x = 1\n")
    await a.edit("m.py", "x = 1", "x = 2")
    assert fs.session_memory is not None
    chosen = (await fs.session_memory.store.steps(A))[-1].number
    await a.write("other.py", "y = 1\n")
    with pytest.raises(Stale, match="no longer step") as refused:
        await a.undo(1, newest=chosen)
    assert refused.value.details["newest"] == chosen + 1
    assert (await raw(fs, "m.py"), await raw(fs, "other.py")) == (b"x = 2\n", b"y = 1\n")
    await a.undo(1, newest=chosen + 1)
    await a.undo(1, newest=chosen)
    assert await raw(fs, "m.py") == b"x = 1\n"


async def test_an_undo_that_fails_part_way_puts_nothing_back(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    place = make_place(request, tmp_path, "memory", "memory")
    async with place.open() as fs:
        a = fs.context(owner=A).fs
        await a.write("a.txt", "a 1\n")
        await a.write("b.txt", "b 1\n")
        await a.edit("a.txt", "a 1", "a 2")
        await a.edit("b.txt", "b 1", "b 2")
        backend = fs.backend
        assert isinstance(backend, MemoryBackend)
        for failure in (Unavailable("the store is down"), OSError("a backend's bug")):
            backend.faults.fail_next("write", failure, path="a.txt")  # (the second put back)
            with pytest.raises((FsError, OSError)) as failed:
                await a.undo(2)
            if isinstance(failed.value, FsError):
                assert failed.value.message.startswith("the undo was not applied (nothing changed")
            assert await snapshot(fs, ["a.txt", "b.txt"]) == {"a.txt": b"a 2\n", "b.txt": b"b 2\n"}
        assert {file.path for file in (await a.undo(2)).files} == {"a.txt", "b.txt"}
        assert await snapshot(fs, ["a.txt", "b.txt"]) == {"a.txt": b"a 1\n", "b.txt": b"b 1\n"}

        await seed(fs, {"d/f.txt": b"f\n"})
        await a.edit("b.txt", "b 1", "b 2")
        await a.read("d/f.txt")
        await a.delete("d/f.txt")
        await backend.delete("d")  # someone removes the directory left empty
        backend.faults.fail_next("write", Unavailable("down"), path="b.txt")  # (put back last)
        with pytest.raises(Unavailable, match="not applied"):
            await a.undo(2)  # d/f.txt put back (d made again), then b.txt fails: all taken back
        assert [entry.name for entry in await backend.list("")] == ["a.txt", "b.txt"]
        assert await raw(fs, "b.txt") == b"b 2\n"


async def test_an_undo_puts_back_each_file_with_its_mode(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    place = make_place(request, tmp_path, "local", "sqlite")
    root = Path(place.url)
    modes = {"run.sh": 0o755, "key.pem": 0o600, "moved.sh": 0o750, "edited.pem": 0o644}
    for name, mode in modes.items():
        (root / name).write_text(f"{name}\n")
        (root / name).chmod(mode)
    async with place.open() as fs:
        a = fs.context(owner=A).fs
        mark = await a.checkpoint()
        for name in modes:
            await a.read(name)
        await a.delete("run.sh")
        await a.delete("key.pem")
        await a.move("moved.sh", "elsewhere.sh")
        await a.edit("edited.pem", "edited", "changed")
        (root / "edited.pem").chmod(0o600)  # someone else's: the undo changes content only
        await a.rewind(mark.id)
    modes["edited.pem"] = 0o600
    for name, mode in modes.items():
        assert ((root / name).read_text(), (root / name).stat().st_mode & 0o7777) == (
            f"{name}\n",
            mode,
        ), name
    assert not (root / "elsewhere.sh").exists()


async def test_after_an_undo_its_owner_is_named_as_the_author_of_the_change(
    local_place: Place,
) -> None:
    async with local_place.open() as fs:
        a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
        await b.write("f.txt", "base\n")
        await a.read("f.txt")
        await a.edit("f.txt", "base", "mine")
        await b.read("f.txt")
        await a.undo()
        [changed] = await b.changed()
    assert (changed.path, changed.changed_by) == ("f.txt", A)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives files away: run as root (CI does)")
async def test_as_root_an_undo_and_a_moving_patch_keep_each_files_owner(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    place = make_place(request, tmp_path, "local", "sqlite")
    root = Path(place.url)
    names = ["deleted.txt", "moved.txt", "patched.txt", "edited.txt", "twice.txt"]
    ids = {name: (1201 + n, 1301 + n) for n, name in enumerate(names)}
    for name in names:
        (root / name).write_text(f"{name}\n")
        os.chown(root / name, *ids[name])

    def ids_of(name: str) -> tuple[int, int]:
        found = (root / name).stat()
        return found.st_uid, found.st_gid

    async with place.open() as fs:
        a = fs.context(owner=A).fs
        mark = await a.checkpoint()
        for name in names:
            await a.read(name)
        await a.delete("deleted.txt")
        await a.move("moved.txt", "elsewhere.txt")
        await a.apply_patch([update("patched.txt", ["patched.txt"], ["new"], "new.txt")])
        assert ids_of("new.txt") == ids["patched.txt"]  # moved and edited: its ids go with it
        await a.edit("edited.txt", "edited", "changed")
        await a.delete("twice.txt")
        await a.write("twice.txt", "root's now\n")
        await a.delete("twice.txt")  # its last step's ids are root's: the first step's win
        await a.rewind(mark.id)
    for name in names:
        assert ((root / name).read_text(), ids_of(name)) == (f"{name}\n", ids[name]), name
    assert not (root / "new.txt").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives files away: run as root (CI does)")
async def test_as_root_without_the_right_to_give_a_file_away_an_undo_puts_it_back_as_roots(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root without CAP_CHOWN, an id its namespace does not map: the file is back, root's.
    place = make_place(request, tmp_path, "local", "memory")
    root = Path(place.url)
    (root / "f.txt").write_text("f\n")
    os.chown(root / "f.txt", 1201, 1301)
    real = os.fchown

    def refused(fd: int, uid: int, gid: int) -> None:
        if (uid, gid) == (1201, 1301):
            raise PermissionError(errno.EPERM, "Operation not permitted")
        real(fd, uid, gid)

    async with place.open() as fs:
        a = fs.context(owner=A).fs
        await a.read("f.txt")
        await a.delete("f.txt")
        monkeypatch.setattr(os, "fchown", refused)
        await a.undo()
    assert (root / "f.txt").read_text() == "f\n"
    assert (root / "f.txt").stat().st_uid == 0


async def test_an_undo_puts_back_the_mode_of_a_file_the_steps_replaced(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    place = make_place(request, tmp_path, "local", "sqlite")
    root = Path(place.url)
    modes = {"run.sh": 0o755, "notes.txt": 0o600, "key.pem": 0o600}
    for name, mode in modes.items():
        (root / name).write_text(f"{name}\n")
        (root / name).chmod(mode)
    async with place.open() as fs:
        a = fs.context(owner=A).fs
        for name in modes:
            await a.read(name)
        await a.move("run.sh", "notes.txt", overwrite=True)  # notes.txt: 0755 until undone
        await a.undo()
        await a.delete("key.pem")
        await a.write("key.pem", "made again\n")  # with the default mode
        await a.undo(2)
    for name, mode in modes.items():
        assert ((root / name).read_text(), (root / name).stat().st_mode & 0o7777) == (
            f"{name}\n",
            mode,
        ), name


async def test_a_made_directory_the_store_fails_to_remove_is_kept_not_a_failed_undo(
    on_disk: tuple[Fs, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    fs, root = on_disk
    (root / "f.txt").write_text("original\n")
    a = fs.context(owner=A).fs
    await a.read("f.txt")
    await a.edit("f.txt", "original", "changed")
    await a.write("new/dir/g.txt", "g\n")
    delete = fs.backend.delete

    async def failing(path: str, *args: Any, **kwargs: Any) -> None:
        if path.startswith("new") and not path.endswith(".txt"):
            raise Unavailable("the store failed to remove it")
        await delete(path, *args, **kwargs)

    monkeypatch.setattr(fs.backend, "delete", failing)
    undone = await a.undo(2)
    assert (undone.directories, undone.kept_directories) == ((), ("new/dir", "new"))
    assert (root / "f.txt").read_text() == "original\n"
    assert not (root / "new" / "dir" / "g.txt").exists()
    assert [step.number for step in await fs.session_memory.store.steps(A)] == []  # type: ignore[union-attr]


async def test_on_a_store_that_versions_every_write_an_undo_sees_its_own_content(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # As GCS generations or Azure ETags: the same content written again is a new version.
    generations = itertools.count(1)
    monkeypatch.setattr(memory, "content_version", lambda data: Version(f"gen:{next(generations)}"))
    place = make_place(request, tmp_path, "memory", "memory")
    async with place.open() as fs:
        a = fs.context(owner=A).fs
        await a.write("a.txt", "v0\n")
        await a.edit("a.txt", "v0", "v1")
        await a.edit("a.txt", "v1", "v2")
        await a.undo()  # v1 again, under a new version
        await a.edit("a.txt", "v1", "w")
        assert (await a.undo(2)).steps == (4, 2)  # no one else changed it in between
        assert await raw(fs, "a.txt") == b"v0\n"

        await a.write("b.txt", "b 1\n")
        await a.edit("b.txt", "b 1", "b 2")
        await a.edit("a.txt", "v0", "a 2")
        backend = fs.backend
        assert isinstance(backend, MemoryBackend)
        backend.faults.fail_next("write", Unavailable("down"), path="b.txt")
        with pytest.raises(Unavailable, match="not applied"):
            await a.undo(2)  # a.txt put back, then taken back: the same content, a new version
        assert (await a.undo(2)).steps == (7, 6)
        assert await snapshot(fs, ["a.txt", "b.txt"]) == {"a.txt": b"v0\n", "b.txt": b"b 1\n"}


async def test_a_refused_undo_tells_nothing_of_a_file_the_owner_may_no_longer_read() -> None:
    rules = PathRules()
    async with open_fs("memory://", plugins=[rules], load_entrypoints=False) as fs:
        a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
        await a.write("m.py", "x = 1\n")
        await a.edit("m.py", "x = 1", "x = 2")
        await b.read("m.py")
        await b.edit("m.py", "x = 2\n", "x = 2\nTOKEN = 'secret'\n")
        await a.read("m.py")
        await a.edit("m.py", "x = 2", "x = 3")
        rules.deny = PathRules(deny=["m.py"]).deny
        for dry_run in (True, False):
            with pytest.raises(Denied):
                await a.undo(2, dry_run=dry_run)


async def test_no_rewind_makes_again_a_step_undone_since_its_checkpoint(fs: Fs) -> None:
    a = fs.context(owner=A).fs
    await a.write("f.txt", "one\n")
    early = await a.checkpoint("before two")
    await a.edit("f.txt", "one", "two")
    late = await a.checkpoint("after two")
    await a.undo()  # step 2, which the later checkpoint holds
    await a.write("g.txt", "g\n")
    for dry_run in (True, False):
        with pytest.raises(InvalidArgument, match="was undone since") as refused:
            await a.rewind(late.id, dry_run=dry_run)
        assert refused.value.details == {"undone": 2}
    assert await snapshot(fs, ["f.txt", "g.txt"]) == {"f.txt": b"one\n", "g.txt": b"g\n"}
    assert (await a.undo()).files[0].path == "g.txt"  # the record of the undo is passed by
    await a.rewind(early.id)  # nothing since it was undone before it
    assert await snapshot(fs, ["f.txt", "g.txt"]) == {"f.txt": b"one\n", "g.txt": None}
    with pytest.raises(InvalidArgument, match="only 1 step"):
        await a.undo(2)


async def test_a_made_directory_replaced_by_a_file_or_a_link_is_left_alone(
    on_disk: tuple[Fs, Path],
) -> None:
    fs, root = on_disk
    a = fs.context(owner=A).fs
    await a.mkdir("d")
    await a.mkdir("l")
    await a.write("f.txt", "mine\n")
    (root / "d").rmdir()
    (root / "d").write_text("someone else's\n")  # a file where the directory was
    (root / "other").mkdir()
    (root / "l").rmdir()
    (root / "l").symlink_to("other")  # a link to an empty directory where it was
    done = await a.undo(3)
    assert (done.directories, done.kept_directories) == ((), ())
    assert {file.path for file in done.files} == {"f.txt"}
    assert (root / "d").read_text() == "someone else's\n"
    assert (root / "l").is_symlink()
    assert (root / "other").is_dir()
    assert not (root / "f.txt").exists()
    with pytest.raises(InvalidArgument):  # the steps are undone, none is stuck
        await a.undo()


@pytest.mark.parametrize("change", ["delete", "edit"])
@pytest.mark.parametrize("dry_run", [False, True])
async def test_an_undo_through_a_link_retargeted_since_changes_no_other_file(
    on_disk: tuple[Fs, Path], change: str, dry_run: bool
) -> None:
    # The step changed release-1/notes.txt through the link: putting it back at the path as
    # spelled would write into release-2, which the owner never touched.
    fs, root = on_disk
    for release in ("release-1", "release-2"):
        (root / release).mkdir()
        (root / release / "notes.txt").write_text("one\n")
    (root / "current").symlink_to("release-1")
    a = fs.context(owner=A).fs
    await a.read("current/notes.txt")
    await (
        a.delete("current/notes.txt")
        if change == "delete"
        else a.edit("current/notes.txt", "one", "two")
    )
    (root / "release-2" / "notes.txt").write_text("one\n" if change == "delete" else "two\n")
    files = [root / release / "notes.txt" for release in ("release-1", "release-2")]
    before = [file.read_bytes() if file.exists() else None for file in files]
    (root / "current").unlink()
    (root / "current").symlink_to("release-2")
    await a.read("current/notes.txt")  # (seen: only the link stands in the way)
    with pytest.raises(Stale, match="symbolic link on the path was changed") as refused:
        await a.undo(dry_run=dry_run)
    assert refused.value.details["changed"][0]["path"] == "current/notes.txt"
    assert [file.read_bytes() if file.exists() else None for file in files] == before
    (root / "current").unlink()
    (root / "current").symlink_to("release-1")
    assert (await a.undo()).steps == (1,)  # the link back: it undoes
    assert (root / "release-1" / "notes.txt").read_text() == "one\n"


@pytest.mark.parametrize("read_again", [True, False])
async def test_an_undo_after_the_root_was_moved_puts_the_files_back_there(
    tmp_path: Path, read_again: bool
) -> None:
    # The same root under another name (renamed, mounted elsewhere) holds the same files; its
    # files as the steps left them count as seen there (the observations went with the process).
    sessions, first = f"sqlite:///{tmp_path}/sessions.db", tmp_path / "project"
    first.mkdir()
    (first / "current").mkdir()
    async with open_fs(str(first), load_entrypoints=False, sessions=sessions) as fs:
        a = fs.context(owner=A).fs
        await a.write("current/a.txt", "one\n")
        await a.edit("current/a.txt", "one", "two")
    moved = first.rename(tmp_path / "renamed")
    async with open_fs(str(moved), load_entrypoints=False, sessions=sessions) as fs:
        a = fs.context(owner=A).fs
        if read_again:
            await a.read("current/a.txt")
        assert (await a.undo()).steps == (2,)
        assert await raw(fs, "current/a.txt") == b"one\n"
        await a.edit("current/a.txt", "one", "three")  # the undo's version counts as seen


@pytest.mark.parametrize("backend", ["local", "s3"])
async def test_an_undo_refuses_a_step_made_under_another_root(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str
) -> None:
    # One session store and one owner in two roots (two projects, two prefixes of a bucket):
    # a step made in the first is not undone in the second, whose files may look the same.
    sessions = MemorySessions()
    places = []
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        places.append(make_place(request, tmp_path / name, backend, "memory"))
        places[-1].sessions = sessions
    async with places[0].open() as first, places[1].open() as second:
        await seed(first, {"README": b"v0\n"})
        await seed(second, {"README": b"v0\n", "pkg/__init__.py": b""})
        one, two = first.context(owner=A).fs, second.context(owner=A).fs
        await one.read("README")
        await one.edit("README", "v0", "v1")
        await one.write("pkg/__init__.py", "")
        await two.read("pkg/__init__.py")
        for steps in (1, 2):
            with pytest.raises(InvalidArgument, match="another root") as refused:
                await two.undo(steps)
            assert refused.value.details["elsewhere"] == [2, 1][:steps][::-1]
        assert await snapshot(second, ["README", "pkg/__init__.py"]) == {
            "README": b"v0\n",
            "pkg/__init__.py": b"",
        }
        assert (await one.undo(2)).steps == (2, 1)
        assert await snapshot(first, ["README", "pkg/__init__.py"]) == {
            "README": b"v0\n",
            "pkg/__init__.py": None,
        }


@pytest.mark.parametrize("now", ["a directory", "a FIFO", "a file for its directory"])
async def test_an_undo_where_no_file_is_now_is_refused_stale_changing_nothing(
    on_disk: tuple[Fs, Path], now: str
) -> None:
    fs, root = on_disk
    path = "d/f.txt" if now == "a file for its directory" else "f.txt"
    a = fs.context(owner=A).fs
    await a.write(path, "one\n")
    await a.edit(path, "one", "two")
    (root / path).unlink()
    if now == "a directory":
        (root / path).mkdir()
    elif now == "a FIFO":
        os.mkfifo(root / path)
    else:
        (root / "d").rmdir()
        (root / "d").write_text("someone else's\n")
    placed = os.lstat(root / path.partition("/")[0])
    with pytest.raises(Stale, match="by someone else") as refused:
        await a.undo()
    assert refused.value.details["changed"][0]["path"] == path
    left = os.lstat(root / path.partition("/")[0])
    assert (left.st_ino, left.st_mode, left.st_size) == (
        placed.st_ino,
        placed.st_mode,
        placed.st_size,
    )
    assert len(await fs.session_memory.store.steps(A)) == 2  # type: ignore[union-attr]


async def test_an_undo_of_a_file_created_in_new_directories_removes_them(fs: Fs) -> None:
    await seed(fs, {"src/app.py": b"x = 1\n"})
    a = fs.context(owner=A).fs
    await a.write("src/new/pkg/mod.py", "y = 2\n")
    await a.write("src/new/other.py", "z = 3\n")
    real = fs.backend.capabilities.real_directories
    assert (await a.undo()).directories == ()  # src/new holds mod.py's directory still
    assert (await a.undo()).directories == (("src/new/pkg", "src/new") if real else ())
    assert [entry.name for entry in await fs.backend.list("src")] == ["app.py"]


async def test_an_undone_directory_move_moves_back_only_the_tree_it_moved(
    local_place: Place,
) -> None:
    async with local_place.open() as fs:
        await seed(fs, {"d/f.txt": b"A's\n"})
        a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
        await a.move("d", "e")
        await b.move("e", "archive/e")  # someone moves it on, and makes another e
        await b.write("e/theirs.txt", "B's\n")
        for dry_run in (True, False):
            with pytest.raises(Stale, match="changed since your move"):
                await a.undo(dry_run=dry_run)
        assert await snapshot(fs, ["archive/e/f.txt", "e/theirs.txt", "d/f.txt"]) == {
            "archive/e/f.txt": b"A's\n",
            "e/theirs.txt": b"B's\n",
            "d/f.txt": None,
        }
        await a.move("archive/e", "g")
        await b.write("g/added.txt", "B's\n")  # an entry came since the move
        with pytest.raises(Stale, match="changed since your move"):
            await a.undo()
        await b.delete("g/added.txt")
        await b.move("g", "h")
        await b.write("g", "a file where the directory was\n")
        await a.read("g")
        with pytest.raises(Stale, match="no longer the directory you moved"):
            await a.undo()
        await b.delete("g")
        await b.move("h", "g")
        await a.undo()  # the tree it moved, as it moved it
        assert await snapshot(fs, ["archive/e/f.txt", "g/f.txt"]) == {
            "archive/e/f.txt": b"A's\n",
            "g/f.txt": None,
        }


class _WritesDuringTheUndo:
    """Another owner's write into the moved directory while the undo's move is authorized."""

    def __init__(self) -> None:
        self.then: Callable[[], Awaitable[object]] | None = None

    @hookimpl
    async def ctxfs_authorize(self, ctx: Any, op: Operation) -> None:
        if self.then is not None and ctx.owner == A and op.kind.value == "move":
            then, self.then = self.then, None
            await then()


async def test_an_entry_made_while_a_directory_move_is_undone_stops_it(local_place: Place) -> None:
    during = _WritesDuringTheUndo()
    async with local_place.open(plugins=[during]) as fs:
        await seed(fs, {"src/x.txt": b"x\n"})
        a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
        await a.move("src", "lib")
        during.then = lambda: b.write("lib/new.txt", "B's\n")
        with pytest.raises(Stale, match="changed since your move"):
            await a.undo()
        assert await snapshot(fs, ["lib/x.txt", "lib/new.txt", "src/x.txt"]) == {
            "lib/x.txt": b"x\n",
            "lib/new.txt": b"B's\n",
            "src/x.txt": None,
        }


class _CancelsWhenTheMoveEnds:
    """The caller's deadline passing as observers hear that a move ended."""

    scope: anyio.CancelScope | None = None

    @hookimpl
    async def ctxfs_finished(self, ctx: Any, op: Operation, error: Any) -> None:
        if self.scope is not None and op.kind.value == "move":
            self.scope.cancel()
        await anyio.lowlevel.checkpoint()


async def test_a_directory_move_undone_when_the_call_is_cancelled_ends_whole(
    local_place: Place,
) -> None:
    deadline = _CancelsWhenTheMoveEnds()
    async with local_place.open(plugins=[deadline]) as fs:
        await seed(fs, {"d/f.txt": b"x\n"})
        a = fs.context(owner=A).fs
        await a.move("d", "p/q/e")  # makes p and p/q
        with anyio.CancelScope() as deadline.scope:
            await a.undo()
        assert deadline.scope.cancelled_caught
        deadline.scope = None
        assert sorted(entry.name for entry in await fs.backend.list("")) == ["d"]
        assert await snapshot(fs, ["d/f.txt"]) == {"d/f.txt": b"x\n"}
        with pytest.raises(InvalidArgument, match="only 0 step"):
            await a.undo()  # the step went with the move back


async def test_an_undone_move_removes_the_directories_it_made(fs: Fs) -> None:
    await seed(fs, {"src/app.py": b"x = 1\n", "src/lib/util.py": b"y = 2\n"})
    a = fs.context(owner=A).fs
    await a.read("src/app.py")
    await a.move("src/app.py", "out/bin/app.py")  # a file moved where parents were missing
    real = fs.backend.capabilities.real_directories
    if fs.backend.capabilities.directory_moves:
        await a.move("src/lib", "vendor/third/lib")  # a directory likewise
        dry = await a.undo(dry_run=True)
        assert (dry.directories, dry.kept_directories) == (("vendor/third", "vendor"), ())
        assert (await a.undo()).directories == ("vendor/third", "vendor")
    made = ("out/bin", "out") if real else ()
    assert (await a.undo(dry_run=True)).directories == made
    assert (await a.undo()).directories == made
    assert await snapshot(fs, ["src/app.py", "src/lib/util.py"]) == {
        "src/app.py": b"x = 1\n",
        "src/lib/util.py": b"y = 2\n",
    }
    assert sorted(entry.name for entry in await fs.backend.list("")) == ["src"]


async def test_a_directory_move_is_not_undone_over_what_is_at_its_source_now(
    local_place: Place,
) -> None:
    async with local_place.open() as fs:
        await seed(fs, {"src/lib/util.py": b"y = 2\n"})
        a = fs.context(owner=A).fs
        await a.move("src/lib", "vendor/lib")
        await fs.backend.write("src/lib", b"someone's file\n", expect=None)
        for dry_run in (True, False):
            with pytest.raises(AlreadyExists, match="exists again"):
                await a.undo(dry_run=dry_run)
        assert await snapshot(fs, ["src/lib", "vendor/lib/util.py"]) == {
            "src/lib": b"someone's file\n",
            "vendor/lib/util.py": b"y = 2\n",
        }


async def test_a_directory_a_policy_protects_is_not_removed(local_place: Place) -> None:
    rules = PathRules()
    async with local_place.open(plugins=[rules]) as fs:
        a = fs.context(owner=A).fs
        await a.mkdir("made")
        rules.read_only = PathRules(read_only=["made"]).read_only
        with pytest.raises(Denied):
            await a.undo(dry_run=True)
        with pytest.raises(Denied):
            await a.undo()
        assert [entry.name for entry in await fs.backend.list("")] == ["made"]


async def test_two_undos_of_one_owner_at_once_undo_two_steps(fs: Fs) -> None:
    a = fs.context(owner=A).fs
    for content in ("v1\n", "v2\n", "v3\n"):
        await a.write("f.txt", content)
    outcomes: list[tuple[int, ...]] = []

    async def undo() -> None:
        outcomes.append((await a.undo()).steps)

    async with anyio.create_task_group() as both:  # (as parallel tool calls do)
        both.start_soon(undo)
        both.start_soon(undo)
    assert sorted(outcomes) == [(2,), (3,)]
    assert await raw(fs, "f.txt") == b"v1\n"


async def test_an_undo_whose_steps_the_store_fails_to_drop_says_the_files_are_back() -> None:
    class FailingDrop(MemorySessions):
        fail = True

        async def drop_steps(self, owner: str, numbers: Sequence[int]) -> None:
            if self.fail:
                self.fail = False
                raise Unavailable("the store is down")
            await super().drop_steps(owner, numbers)

    fs = Fs(MemoryBackend(), sessions=FailingDrop(), load_entrypoints=False)
    a = fs.context(owner=A).fs
    await a.write("f.txt", "one\n")
    await a.edit("f.txt", "one", "two")
    with pytest.raises(Unavailable, match="the files were put back") as failed:
        await a.undo()
    assert failed.value.details["put_back"] == ["f.txt"]
    assert await raw(fs, "f.txt") == b"one\n"
    again = await a.undo()  # the files match the steps: they are dropped, nothing written
    assert (again.steps, await raw(fs, "f.txt")) == ((2,), b"one\n")
    assert (await a.undo()).steps == (1,)


def test_two_undos_of_one_owner_in_two_threads_each_with_its_loop_undo_two_steps() -> None:
    # An Fs serves several event loops' threads: the owner's undos are held one at a time
    # across them (a lock of one loop cannot hand itself to a waiter on another).
    class SlowDrop(MemorySessions):
        async def drop_steps(self, owner: str, numbers: Sequence[int]) -> None:
            await anyio.sleep(0.2)  # (the first undo holds the owner while the other waits)
            await super().drop_steps(owner, numbers)

    fs = Fs(MemoryBackend(), sessions=SlowDrop(), load_entrypoints=False)
    a = fs.context(owner=A).fs
    outcomes: list[tuple[int, ...] | str] = []
    waits: list[float] = []

    async def write() -> None:
        for content in ("v1\n", "v2\n", "v3\n"):
            await a.write("f.txt", content)

    async def undo() -> None:
        started = time.monotonic()
        with anyio.fail_after(10):
            outcomes.append((await a.undo()).steps)
        waits.append(time.monotonic() - started)

    def in_a_thread() -> None:
        try:
            anyio.run(undo)
        except BaseException as error:  # (reported below, not lost in the thread)
            outcomes.append(repr(error))

    anyio.run(write)
    threads = [threading.Thread(target=in_a_thread) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes, key=str) == [(2,), (3,)]
    assert max(waits) < 5, "the waiter's loop slept on (told of the lock only by its own timer)"
    assert anyio.run(raw, fs, "f.txt") == b"v1\n"


@asynccontextmanager
async def one_owner_in_two_processes(
    root: Path, store: SessionStore
) -> AsyncIterator[tuple[ContextFs, ContextFs]]:
    """Owner A in two ``Fs`` on *root* sharing *store* (two processes), after three writes."""
    opened = [open_fs(str(root), sessions=store, load_entrypoints=False) for _ in range(2)]
    async with opened[0] as one, opened[1] as two:
        here, elsewhere = one.context(owner=A).fs, two.context(owner=A).fs
        for content in ("v1\n", "v2\n", "v3\n"):
            await here.write("f.txt", content)
        yield here, elsewhere


async def test_an_undo_waiting_for_the_locks_of_another_process_undoing_its_step_is_refused(
    tmp_path: Path,
) -> None:
    # The other undo drops the step before its locks go: this one, locking the file after, sees
    # the step gone (it found the file back and said it undid the same step).
    class SlowDrop(MemorySessions):
        async def drop_steps(self, owner: str, numbers: Sequence[int]) -> None:
            await anyio.sleep(0.3)  # (the first undo's drop, while the second waits)
            await super().drop_steps(owner, numbers)

    store = SlowDrop()
    async with one_owner_in_two_processes(tmp_path, store) as (here, elsewhere):
        outcomes: list[tuple[int, ...] | str] = []

        async def undo(fs: ContextFs) -> None:
            try:
                outcomes.append((await fs.undo()).steps)
            except Stale as refused:
                outcomes.append(refused.code.value)

        async with anyio.create_task_group() as both:
            both.start_soon(undo, here)
            await anyio.sleep(0.1)
            both.start_soon(undo, elsewhere)
    assert outcomes == [(3,), "stale"]
    assert (tmp_path / "f.txt").read_text() == "v2\n"
    assert [step.number for step in await store.steps(A)] == [1, 2]


async def test_an_undo_whose_step_another_process_undid_meanwhile_is_refused(
    tmp_path: Path,
) -> None:
    store = MemorySessions()
    async with one_owner_in_two_processes(tmp_path, store) as (a, same_owner_elsewhere):
        read = store.steps
        raced: list[UndoOutcome] = []

        async def history_then_the_other_undo(owner: str, *, after: int = 0) -> list[Step]:
            found = await read(owner, after=after)
            if not raced:  # (once: the other's undo reads the history too)
                raced.append(UndoOutcome(steps=(), files=(), written=False))
                raced[0] = await same_owner_elsewhere.undo()
            return found

        store.steps = history_then_the_other_undo  # type: ignore[method-assign]
        with pytest.raises(Stale, match="another call of yours"):
            await a.undo()
        store.steps = read  # type: ignore[method-assign]
    assert raced[0].steps == (3,)
    assert (tmp_path / "f.txt").read_text() == "v2\n"
    assert [step.number for step in await store.steps(A)] == [1, 2]


async def test_a_dry_run_changes_nothing_and_reports_the_same_files(fs: Fs) -> None:
    await seed(fs, {"a.txt": b"one\n", "b.txt": b"two\n"})
    a = fs.context(owner=A).fs
    await a.read("a.txt")
    await a.edit("a.txt", "one", "uno")
    await a.read("b.txt")
    await a.delete("b.txt")
    await a.write("c.txt", "three\n")
    before = await snapshot(fs, ["a.txt", "b.txt", "c.txt"])

    dry = await a.undo(3, dry_run=True)
    assert dry.written is False
    assert await snapshot(fs, ["a.txt", "b.txt", "c.txt"]) == before
    cp = await a.checkpoint()
    assert cp.step == 3  # the dry run left the history as it was

    done = await a.undo(3)
    assert done.written is True
    assert dry.steps == done.steps == (3, 2, 1)
    assert dry.files == done.files
    assert await snapshot(fs, ["a.txt", "b.txt", "c.txt"]) == {
        "a.txt": b"one\n",
        "b.txt": b"two\n",
        "c.txt": None,
    }


async def test_a_checkpoint_label_that_is_not_text_is_refused_in_every_store(fs: Fs) -> None:
    a = fs.context(owner=A).fs
    for wrong in (b"bytes", 5, ["x"]):
        with pytest.raises(InvalidArgument, match="label is text or None"):
            await a.checkpoint(wrong)  # type: ignore[arg-type]
    assert await fs.session_memory.store.checkpoints(A) == []  # type: ignore[union-attr]


async def test_a_label_in_the_form_of_a_checkpoint_id_is_refused_in_every_store(fs: Fs) -> None:
    # An id names a checkpoint before a label does: "cp1" as the label of cp2 would name cp1.
    a = fs.context(owner=A).fs
    first = await a.checkpoint()
    with pytest.raises(InvalidArgument, match="cannot look like a checkpoint's id"):
        await a.checkpoint(first.id)
    kept = await a.checkpoint("cp")  # not the form: a label like any other
    assert [mark.label for mark in await fs.session_memory.store.checkpoints(A)] == [None, "cp"]  # type: ignore[union-attr]
    assert (first.id, kept.id) == ("cp1", "cp2")


async def test_undo_of_n_steps_goes_back_n_steps(fs: Fs) -> None:
    await seed(fs, {"a.txt": b"v0\n"})
    a = fs.context(owner=A).fs
    await a.read("a.txt")
    for n in range(1, 5):
        await a.edit("a.txt", f"v{n - 1}", f"v{n}")
    for wrong in (0, -1, 1.5, "1", None, True):
        with pytest.raises(InvalidArgument, match="steps must be a whole number"):
            await a.undo(wrong)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument) as too_many:
        await a.undo(5)
    assert too_many.value.details["steps"] == 4
    assert await raw(fs, "a.txt") == b"v4\n"
    assert (await a.undo(2)).steps == (4, 3)
    assert await raw(fs, "a.txt") == b"v2\n"
    assert (await a.undo(1)).steps == (2,)
    assert await raw(fs, "a.txt") == b"v1\n"
    await a.edit("a.txt", "v1", "w")
    assert (await a.undo(2)).steps == (5, 1)
    assert await raw(fs, "a.txt") == b"v0\n"


async def test_rewind_goes_back_to_the_checkpoint_and_a_second_rewind_is_a_no_op(fs: Fs) -> None:
    await seed(fs, {"a.txt": b"a0\n", "b.txt": b"b0\r\n"})
    a = fs.context(owner=A).fs
    await a.read("a.txt")
    await a.edit("a.txt", "a0", "a1")
    cp = await a.checkpoint("before the refactor")
    assert cp.label == "before the refactor"
    assert cp.step == 1
    at_checkpoint = await snapshot(fs, ["a.txt", "b.txt", "c.txt"])
    await a.edit("a.txt", "a1", "a2")
    await a.read("b.txt")
    await a.edit("b.txt", "b0", "b1")
    await a.write("c.txt", "c\n")
    await a.move("a.txt", "moved.txt")

    with pytest.raises(InvalidArgument) as unknown:
        await a.rewind("no-such-checkpoint")
    assert cp.id in unknown.value.details["checkpoints"]

    outcome = await a.rewind(cp.id)
    assert outcome.steps == (5, 4, 3, 2)
    assert await snapshot(fs, ["a.txt", "b.txt", "c.txt"]) == at_checkpoint
    assert await raw(fs, "moved.txt") is None

    again = await a.rewind(cp.id)
    assert again.steps == ()
    assert again.files == ()
    assert await snapshot(fs, ["a.txt", "b.txt", "c.txt", "moved.txt"]) == {
        **at_checkpoint,
        "moved.txt": None,
    }
    assert (await a.undo()).steps == (1,)  # the step before the checkpoint is still there
    assert await raw(fs, "a.txt") == b"a0\n"


async def test_another_owners_change_refuses_the_whole_undo_naming_each_file(fs: Fs) -> None:
    files = {"a.txt": b"a\n", "b.txt": b"b\n", "c.txt": b"c\n", "d.txt": b"d\n"}
    await seed(fs, files)
    a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
    for path in files:
        await a.read(path)
        await a.edit(path, path[0], path[0] * 3)  # four steps
    for path in ("a.txt", "c.txt"):
        await b.read(path)
    await b.edit("a.txt", "aaa", "aaa by b")
    await b.delete("c.txt")
    before = await snapshot(fs, files)

    with pytest.raises(Stale) as refused:
        await a.undo(4)
    changed = {str(entry["path"]): entry for entry in refused.value.details["changed"]}
    assert set(changed) == {"a.txt", "c.txt"}
    assert "+aaa by b" in str(changed["a.txt"]["diff"])
    assert changed["c.txt"]["current"] is None
    assert "a.txt" in refused.value.message
    assert "c.txt" in refused.value.message
    assert "+aaa by b" in str(refused.value.details["diff"])
    assert await snapshot(fs, files) == before
    with pytest.raises(Stale):
        await a.undo(4, dry_run=True)
    assert await snapshot(fs, files) == before

    # the steps are all still there: the unchanged files undo alone
    assert (await a.undo()).steps == (4,)
    assert await raw(fs, "d.txt") == b"d\n"
    assert await snapshot(fs, ["a.txt", "b.txt", "c.txt"]) == {
        path: before[path] for path in ("a.txt", "b.txt", "c.txt")
    }


async def test_owners_never_see_or_undo_each_others_steps(fs: Fs) -> None:
    await seed(fs, {"a.txt": b"one\n", "b.txt": b"two\n"})
    a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
    await a.read("a.txt")
    await a.edit("a.txt", "one", "uno")
    mark = await a.checkpoint()
    await a.edit("a.txt", "uno", "eins")

    with pytest.raises(InvalidArgument) as nothing:
        await b.undo()
    assert nothing.value.details["steps"] == 0
    with pytest.raises(InvalidArgument):
        await b.rewind(mark.id)

    await b.read("b.txt")
    await b.edit("b.txt", "two", "dos")
    assert (await b.undo()).steps == (1,)
    assert await snapshot(fs, ["a.txt", "b.txt"]) == {"a.txt": b"eins\n", "b.txt": b"two\n"}
    memory = fs.session_memory
    assert memory is not None
    a_version = (await fs.backend.read("a.txt")).version
    assert await memory.store.content(A, a_version) == b"eins\n"
    assert await memory.store.content(B, a_version) is None  # never given to B

    assert (await a.rewind(mark.id)).steps == (2,)
    assert await raw(fs, "a.txt") == b"uno\n"
    assert await snapshot(fs, ["b.txt"]) == {"b.txt": b"two\n"}


async def test_changed_of_one_owner_knows_nothing_of_anothers(fs: Fs) -> None:
    await seed(fs, {"a.txt": b"one\n", "b.txt": b"two\n"})
    a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
    await a.read("a.txt")
    await a.edit("a.txt", "one", "uno")
    mark = await a.checkpoint()
    await a.edit("a.txt", "uno", "eins")
    assert await b.changed() == []  # B saw nothing
    await b.read("a.txt")
    assert await b.changed() == []
    await a.rewind(mark.id)
    [seen] = await b.changed()  # B's diff is from what B saw, not from A's contents
    assert seen.path == "a.txt"
    assert "-eins" in str(seen.diff)
    assert "+uno" in str(seen.diff)
    assert "one" not in str(seen.diff)
    assert await a.changed() == []


@pytest.mark.parametrize("rule", ["read_only", "deny"])
async def test_policies_judge_every_path_before_anything_changes(
    local_place: Place, rule: str
) -> None:
    rules = PathRules()
    async with local_place.open(plugins=[rules]) as fs:
        await seed(fs, {"a.txt": b"a\n", "b.txt": b"b\n"})
        a = fs.context(owner=A).fs
        await a.read("a.txt")
        await a.edit("a.txt", "a", "A")
        await a.read("b.txt")
        await a.edit("b.txt", "b", "B")
        await a.write("c.txt", "new\n")
        before = await snapshot(fs, ["a.txt", "b.txt", "c.txt"])
        setattr(
            rules, rule, getattr(PathRules(**{rule: ["b.txt"]}), rule)
        )  # the operator's new rule

        with pytest.raises(Denied):
            await a.undo(3)
        with pytest.raises(Denied):
            await a.undo(3, dry_run=True)
        assert await snapshot(fs, ["a.txt", "b.txt", "c.txt"]) == before
        assert (await a.undo()).steps == (3,)  # c.txt alone is allowed
        assert await snapshot(fs, ["a.txt", "b.txt", "c.txt"]) == {**before, "c.txt": None}
        with pytest.raises(Denied):  # the refused steps are still there, still refused
            await a.undo(2)
        assert await snapshot(fs, ["a.txt", "b.txt"]) == {"a.txt": b"A\n", "b.txt": b"B\n"}


class Audit:
    def __init__(self) -> None:
        self.committed: list[tuple[str, str, Version | None, Version | None]] = []
        self.finished: list[tuple[str, str, FsError | None]] = []

    @hookimpl
    def ctxfs_committed(
        self, ctx: Any, op: Operation, before: Version | None, after: Version | None
    ) -> None:
        self.committed.append((ctx.owner, op.path, before, after))

    @hookimpl
    def ctxfs_finished(
        self,
        ctx: Any,
        op: Operation,
        error: FsError | None,
        before: Version | None,
        after: Version | None,
    ) -> None:
        del before, after
        self.finished.append((ctx.owner, op.path, error))


async def test_the_hooks_see_the_undos_writes(local_place: Place) -> None:
    audit = Audit()
    async with local_place.open(plugins=[audit]) as fs:
        await seed(fs, {"a.txt": b"a\n", "gone.txt": b"g\n"})
        a = fs.context(owner=A).fs
        await a.read("a.txt")
        await a.read("gone.txt")
        await a.apply_patch(
            [
                update("a.txt", ["a"], ["A"]),
                FilePatch(action=PatchAction.DELETE, path="gone.txt"),
                FilePatch(action=PatchAction.ADD, path="new.txt", content="n\n"),
            ]
        )
        versions = {path: (await fs.backend.read(path)).version for path in ("a.txt", "new.txt")}
        audit.committed.clear()
        audit.finished.clear()

        outcome = await a.undo()
        now = {file.path: file.now for file in outcome.files}
        committed = {path: (owner, before, after) for owner, path, before, after in audit.committed}
        assert set(committed) == {"a.txt", "gone.txt", "new.txt"}
        assert committed["a.txt"] == (A, versions["a.txt"], now["a.txt"])
        assert committed["new.txt"] == (A, versions["new.txt"], None)
        assert committed["gone.txt"][1] is None
        assert committed["gone.txt"][2] == now["gone.txt"] is not None
        assert sorted(path for _, path, _ in audit.finished) == ["a.txt", "gone.txt", "new.txt"]
        assert all(error is None for _, _, error in audit.finished)

        audit.committed.clear()
        audit.finished.clear()
        await a.read("a.txt")
        await a.edit("a.txt", "a", "x")
        await fs.context(owner=B).fs.read("a.txt")
        await fs.context(owner=B).fs.edit("a.txt", "x", "y")
        audit.committed.clear()
        audit.finished.clear()
        with pytest.raises(Stale):
            await a.undo()
        assert audit.committed == []
        [(owner, path, error)] = audit.finished
        assert (owner, path) == (A, "a.txt")
        assert isinstance(error, Stale)


@pytest.mark.parametrize("observations", ["in-process", "sqlite"])
async def test_an_undo_survives_a_restart(
    kept_place: Place, tmp_path: Path, observations: str
) -> None:
    place = kept_place
    kept = {} if observations == "in-process" else {"observations": f"sqlite:///{tmp_path}/obs.db"}
    files = {"a.txt": b"one\r\ntwo\r\n", "b.bin": b"\xff\x00"}
    async with place.open(**kept) as fs:
        await seed(fs, files)
        a = fs.context(owner=A).fs
        await a.read("a.txt")
        await a.edit("a.txt", "one", "uno")
        mark = await a.checkpoint()
        await a.read_bytes("b.bin")
        await a.write_bytes("b.bin", b"\x01")
        await a.write("c.txt", "created\n")
        await a.edit("a.txt", "two", "dos")

    async with place.open(**kept) as fs:
        a = fs.context(owner=A).fs
        assert (await a.undo()).steps == (4,)
        assert await raw(fs, "a.txt") == b"uno\r\ntwo\r\n"

    async with place.open(**kept) as fs:
        a = fs.context(owner=A).fs
        assert (await a.rewind(mark.id)).steps == (3, 2)
        assert await snapshot(fs, ["a.txt", "b.bin", "c.txt"]) == {
            "a.txt": b"uno\r\ntwo\r\n",
            "b.bin": b"\xff\x00",
            "c.txt": None,
        }
        assert (await a.undo()).steps == (1,)
        assert await snapshot(fs, files) == files


# -- the bounds of the step history ----------------------------------------------------------


async def test_a_rewind_past_given_up_steps_is_refused_even_after_an_undo() -> None:
    """Steps given up (max_steps), then an undo: the rewind cannot reach the checkpoint."""
    async with Fs_on_memory(max_steps=3) as fs:
        await seed(fs, {f"f{n}.txt": b"0\n" for n in range(4)})
        a = fs.context(owner=A).fs
        mark = await a.checkpoint()
        for n in range(4):  # steps 1..4: step 1 (f0.txt) is given up
            await a.read(f"f{n}.txt")
            await a.edit(f"f{n}.txt", "0", "1")
        await a.undo()  # step 4
        before = await snapshot(fs, [f"f{n}.txt" for n in range(4)])
        with pytest.raises(InvalidArgument):
            await a.rewind(mark.id)  # it cannot put f0.txt back: it must say so
        assert await snapshot(fs, [f"f{n}.txt" for n in range(4)]) == before


async def test_an_owner_back_after_too_long_idle_is_told_its_steps_were_given_up() -> None:
    now = [1_000_000_000.0]
    sessions = MemorySessions(max_idle_days=1, clock=lambda: now[0])
    async with open_fs("memory://", load_entrypoints=False, sessions=sessions) as fs:
        await seed(fs, {"a.txt": b"0\n"})
        a = fs.context(owner=A).fs
        mark = await a.checkpoint()
        await a.read("a.txt")
        await a.edit("a.txt", "0", "1")  # step 1
        now[0] += 2 * 86_400
        await fs.context(owner=B).fs.read("a.txt")  # (another owner's call looks)
        with pytest.raises(InvalidArgument) as undone:
            await a.undo()
        with pytest.raises(InvalidArgument) as rewound:
            await a.rewind(mark.id)
        assert await raw(fs, "a.txt") == b"1\n"
    assert "steps up to 1 were given up" in undone.value.message
    assert "after 1 day without a call" in (undone.value.hint or "")
    assert undone.value.details["given_up"] == 1
    assert rewound.value.details == {"checkpoints": [], "given_up": 1}
    assert "after 1 day without a call" in (rewound.value.hint or "")


async def test_a_rewind_after_an_undo_is_not_refused_for_steps_never_given_up() -> None:
    async with Fs_on_memory(max_steps=2) as fs:
        await seed(fs, {"a.txt": b"0\n"})
        a = fs.context(owner=A).fs
        mark = await a.checkpoint()
        await a.read("a.txt")
        await a.edit("a.txt", "0", "1")  # step 1
        await a.undo()
        await a.edit("a.txt", "0", "2")  # step 2
        await a.edit("a.txt", "2", "3")  # step 3: nothing was given up
        assert (await a.rewind(mark.id)).steps == (3, 2)
        assert await raw(fs, "a.txt") == b"0\n"


def Fs_on_memory(  # noqa: N802 - reads as the Fs it opens
    *, max_steps: int = DEFAULT_MAX_STEPS, max_bytes_per_owner: int = DEFAULT_MAX_BYTES_PER_OWNER
) -> Fs:
    sessions = MemorySessions(max_steps=max_steps, max_bytes_per_owner=max_bytes_per_owner)
    return open_fs("memory://", load_entrypoints=False, sessions=sessions)


# -- races -----------------------------------------------------------------------------------


async def test_rewinds_racing_other_owners_edits_lose_nothing(local_place: Place) -> None:
    rounds = 30
    async with local_place.open(lock_timeout=30) as fs:
        a, b = fs.context(owner=A).fs, fs.context(owner=B).fs
        wins = {"rewind": 0, "edit": 0}
        for round_ in range(rounds):
            names = [f"r{round_}/{n}.txt" for n in range(3)]
            base = {name: f"base {name}\r\n".encode() for name in names}
            await seed(fs, base)
            for name in names:
                await a.read(name)
            mark = await a.checkpoint()
            for name in names:
                await a.edit(name, "base", "agent")
            left = await snapshot(fs, names)
            target = names[round_ % 3]
            await b.read(target)
            results: dict[str, FsError | None] = {}

            async def run(
                key: str, call: Awaitable[object], results: dict[str, FsError | None]
            ) -> None:
                try:
                    await call
                    results[key] = None
                except FsError as error:
                    results[key] = error

            calls = [
                ("rewind", a.rewind(mark.id)),
                ("edit", b.edit(target, "agent", "other")),
            ]
            async with anyio.create_task_group() as group:
                for key, call in calls[:: 1 if round_ % 2 else -1]:  # each starts first in turn
                    group.start_soon(run, key, call, results)

            final = await snapshot(fs, names)
            if results["rewind"] is None:
                assert isinstance(results["edit"], Stale), results
                assert final == base
                wins["rewind"] += 1
            else:
                assert isinstance(results["rewind"], Stale), results
                assert results["edit"] is None, results
                edited = left[target]
                assert edited is not None
                assert final == {**left, target: edited.replace(b"agent", b"other")}
                wins["edit"] += 1
        assert wins["rewind"] + wins["edit"] == rounds
        assert min(wins.values()) > 0, wins  # both orders happened


# -- what the store is asked --------------------------------------------------------------------


class ScriptedStore(MemorySessions):
    """The in-process store, counting the contents it is asked to keep and its calls that write,
    and failing or dawdling as a test sets it to."""

    def __init__(self) -> None:
        super().__init__()
        self.keeps = 0
        self.calls = 0
        self.record_failures: list[Exception | None] = []
        """What the next steps meet, one each (None: no failure); the last, every later step."""
        self.record_seconds = 0.0
        self.drop_failures: list[Exception] = []
        """Failures the next drops of steps meet, one each."""
        self.checkpoint_failures: list[Exception] = []
        """Failures the next listings of checkpoints meet, one each."""

    async def keep(self, owner: str, version: Version, data: bytes) -> bool:
        self.keeps += 1
        self.calls += 1
        return await super().keep(owner, version, data)

    async def record(
        self,
        owner: str,
        changes: Sequence[FileChange],
        *,
        at: float,
        contents: Sequence[tuple[Version, bytes]] = (),
    ) -> Step:
        self.keeps += len(contents)
        self.calls += 1
        await anyio.sleep(self.record_seconds)
        failure = self.record_failures[0] if self.record_failures else None
        if len(self.record_failures) > 1:
            del self.record_failures[0]
        if failure is not None:
            raise failure
        return await super().record(owner, changes, at=at, contents=contents)

    async def drop_steps(self, owner: str, numbers: Sequence[int]) -> None:
        if self.drop_failures:
            raise self.drop_failures.pop(0)
        await super().drop_steps(owner, numbers)

    async def checkpoints(self, owner: str) -> list[Checkpoint]:
        if self.checkpoint_failures:
            raise self.checkpoint_failures.pop(0)
        return await super().checkpoints(owner)


@pytest.mark.parametrize("failure", [Unavailable("the store is down"), TypeError("a bug")])
async def test_a_step_the_store_cannot_record_fails_no_call(
    failure: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    store = ScriptedStore()
    store.record_failures = [failure]
    async with open_fs("memory://", sessions=store, load_entrypoints=False) as fs:
        await seed(fs, {"a.txt": b"one\n"})
        a = fs.context(owner=A).fs
        await a.read("a.txt")
        await a.edit("a.txt", "one", "two")  # stored; its step is not
        assert await raw(fs, "a.txt") == b"two\n"
        assert "could not record a step" in caplog.text
        keeps = store.keeps
        await a.read("a.txt")  # the version after was never kept: a read sends it
        assert store.keeps == keeps + 1
        with pytest.raises(Unavailable, match="could not be recorded"):  # the store is down
            await a.undo()


async def test_no_undo_reaches_past_a_step_the_store_missed() -> None:
    store = ScriptedStore()
    async with open_fs("memory://", sessions=store, load_entrypoints=False) as fs:
        a = fs.context(owner=A).fs
        await a.write("f.txt", "f 1\n")
        store.record_failures = [Unavailable("down for a moment"), None]
        await a.write("g.txt", "g 1\n")  # written; its step is missed
        await a.write("h.txt", "h 1\n")  # after it: the history says a step is missing
        assert (await a.undo()).files[0].path == "h.txt"
        with pytest.raises(InvalidArgument, match="could not be recorded") as refused:
            await a.undo()  # (it would have undone f.txt, not g.txt)
        assert refused.value.details == {"unrecorded": 2}  # the mark, after step 1
        assert await snapshot(fs, ["f.txt", "g.txt", "h.txt"]) == {
            "f.txt": b"f 1\n",
            "g.txt": b"g 1\n",
            "h.txt": None,
        }


async def test_an_undo_whose_end_was_lost_is_finished_by_the_next() -> None:
    store = ScriptedStore()
    async with open_fs("memory://", sessions=store, load_entrypoints=False) as fs:
        a = fs.context(owner=A).fs
        await a.write("f.txt", "one\n")
        await a.edit("f.txt", "one", "two")
        store.drop_failures = [Unavailable("down for a moment")]
        with pytest.raises(Unavailable):
            await a.undo()  # the file is put back; the step stays
        assert await raw(fs, "f.txt") == b"one\n"
        assert [step.number for step in await store.steps(A)] == [1, 2]
        assert (await a.undo()).steps == (2,)  # the file is as it leaves it: the step goes
        assert await raw(fs, "f.txt") == b"one\n"
        assert [step.number for step in await store.steps(A)] == [1]
        await a.undo()
        assert await raw(fs, "f.txt") is None


async def test_a_change_cancelled_while_its_step_is_recorded_keeps_its_step() -> None:
    store = ScriptedStore()
    async with open_fs("memory://", sessions=store, load_entrypoints=False) as fs:
        a = fs.context(owner=A).fs
        await a.write("a.txt", "a\n")
        store.record_seconds = 0.05
        with anyio.move_on_after(0.02):
            await a.write("b.txt", "b\n")  # stored: the cancellation comes while it records
        assert [c.path for step in await store.steps(A) for c in step.changes] == ["a.txt", "b.txt"]
        await a.undo()
        assert await snapshot(fs, ["a.txt", "b.txt"]) == {"a.txt": b"a\n", "b.txt": None}


async def test_an_undo_a_checkpoint_sees_is_recorded_once_or_not_made() -> None:
    store = ScriptedStore()
    async with open_fs("memory://", sessions=store, load_entrypoints=False) as fs:
        a = fs.context(owner=A).fs
        for n in range(1, 4):
            await a.write(f"f{n}.txt", f"{n}\n")
        mark = await a.checkpoint()
        store.checkpoint_failures = [Unavailable("down for a moment")]
        with pytest.raises(Unavailable):
            await a.undo()  # asked before it changes anything: nothing changed
        assert await raw(fs, "f3.txt") == b"3\n"
        await a.undo()
        await a.undo()
        records = [step.undid for step in await store.steps(A) if step.undid is not None]
        assert records == [2]  # the second undo's record covers the first's
        assert [step.number for step in await store.steps(A) if step.undid is None] == [1]
        with pytest.raises(InvalidArgument, match="step 2, made before checkpoint"):
            await a.rewind(mark.id)


async def test_a_checkpoint_marked_while_an_undo_runs_is_not_rewound_to_silently() -> None:
    store = MemorySessions()
    async with open_fs("memory://", sessions=store, load_entrypoints=False) as fs:
        a = fs.context(owner=A).fs
        await a.write("f.txt", "one\n")
        asked = store.checkpoints
        marks: list[Checkpoint] = []

        async def marked_meanwhile(owner: str) -> list[Checkpoint]:
            found = await asked(owner)
            if not marks:  # another task of the owner marks one now, the file still there
                marks.append(await a.checkpoint("meanwhile"))
            return found

        store.checkpoints = marked_meanwhile  # type: ignore[method-assign]
        await a.undo()
        store.checkpoints = asked  # type: ignore[method-assign]
        assert await raw(fs, "f.txt") is None
        with pytest.raises(InvalidArgument, match="was undone since"):
            await a.rewind(marks[0].id)  # it would not bring back the file it saw


async def test_a_read_the_store_gave_up_at_once_is_not_sent_again_moments_later() -> None:
    store = ScriptedStore()
    store.max_bytes_per_owner = 10  # the edit's contents before and after (8 bytes) fill it
    async with open_fs("memory://", sessions=store, load_entrypoints=False) as fs:
        await seed(fs, {"a.txt": b"one\n", "b.txt": b"bee\n"})
        a = fs.context(owner=A).fs
        await a.read("a.txt")
        await a.edit("a.txt", "one", "two")
        keeps = store.keeps
        seen = [(await a.read("b.txt")).version for _ in range(3)]
        assert store.keeps == keeps + 1
        assert await store.content(A, seen[0]) is None  # given up at once: 12 bytes
        assert (await a.undo()).steps == (1,)


@pytest.mark.parametrize("window", [KEPT_RECENTLY_SECONDS, 0.0])
async def test_a_version_kept_moments_ago_is_not_sent_again_by_a_read(
    window: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_memory, "KEPT_RECENTLY_SECONDS", window)
    store = ScriptedStore()
    async with open_fs("memory://", sessions=store, load_entrypoints=False) as fs:
        await seed(fs, {"a.txt": b"one\n"})
        a = fs.context(owner=A).fs
        for _ in range(3):
            await a.read("a.txt")
        await a.edit("a.txt", "one", "two")  # before and after: always (an undo needs them)
        assert store.calls == (2 if window else 4)  # an edit: one call, its step and contents
        await a.read("a.txt")  # kept by the edit
        await fs.context(owner=B).fs.read("a.txt")  # another owner: kept for it too
        assert store.keeps == (4 if window else 7)
        assert (await a.undo()).files[0].now is not None
        assert await raw(fs, "a.txt") == b"one\n"


# -- a long session stays within the bounds --------------------------------------------------


@pytest.mark.slow
async def test_a_long_session_stays_within_its_bounds() -> None:
    store = MemorySessions(max_bytes=1_000_000, max_bytes_per_owner=200_000, max_steps=100)
    owners = [f"owner-{n}" for n in range(20)]
    paths = {owner: [f"{owner}/f{n}.txt" for n in range(10)] for owner in owners}
    started = time.monotonic()
    async with open_fs("memory://", load_entrypoints=False, sessions=store) as fs:
        for owner in owners:
            await seed(fs, {path: numbered(400, f"{path}:").encode() for path in paths[owner]})
        contexts = {owner: fs.context(owner=owner).fs for owner in owners}
        for owner in owners:
            for path in paths[owner]:
                await contexts[owner].read(path)
        most = 0
        for edit in range(500):  # 10,000 edits: every owner edits each of its files 50 times
            for owner in owners:
                path = paths[owner][edit % 10]
                line = edit // 10
                await contexts[owner].edit(path, f"{path}: {line}\n", f"{path}: {line}!\n")
            most = max(most, store.kept_bytes)
            assert store.kept_bytes <= store.max_bytes
            if edit % 50 == 49:
                for owner in owners:  # (the per-owner total is not public: read it inside)
                    assert store._owners[owner].kept_bytes <= store.max_bytes_per_owner
                    assert len(await store.steps(owner)) <= store.max_steps
        for owner in owners:
            steps = await store.steps(owner)
            assert len(steps) == 100
            assert steps[-1].number == 500
        assert most <= 1_000_000
        assert time.monotonic() - started < 120

        first = owners[0]
        before = await snapshot(fs, paths[first])
        with pytest.raises(InvalidArgument) as given_up:
            await contexts[first].undo(100)
        assert given_up.value.details["given_up"]
        assert set(given_up.value.details["given_up"]) <= set(paths[first])
        assert await snapshot(fs, paths[first]) == before
        assert len(await store.steps(first)) == 100

        last = owners[-1]  # its latest contents are the most recently kept
        path = paths[last][499 % 10]
        undone_bytes = await raw(fs, path)
        assert undone_bytes is not None
        assert (await contexts[last].undo()).steps == (500,)
        assert await raw(fs, path) == undone_bytes.replace(b": 49!\n", b": 49\n")
