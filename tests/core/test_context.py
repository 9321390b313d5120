"""``ctx.fs`` work that would stall the event loop runs beside it."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from ctxfs.core import ABSENT, Context, MemoryBackend, OpKind
from ctxfs.core.text import decode_document
from ctxfs.core.textwork import TEXT_WORK_INLINE_BYTES

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("lines", [10, TEXT_WORK_INLINE_BYTES // 16 + 1])
async def test_a_large_file_is_decoded_and_changed_off_the_event_loop(
    memory_backend: MemoryBackend, memory_ctx: Context, monkeypatch: pytest.MonkeyPatch, lines: int
) -> None:
    threads: list[int] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return decode_document(*args, **kwargs)

    monkeypatch.setattr("ctxfs.core.textwork.decode_document", spy)
    data = b"".join(b"line %010d\n" % n for n in range(lines))  # 16 bytes a line
    await memory_backend.write("big.txt", data, expect=ABSENT)
    await memory_ctx.fs.read_bytes("big.txt")  # (seen whole, for the write after the edit)
    await memory_ctx.fs.edit("big.txt", "line 0000000003\n", "line three\n")
    await memory_ctx.fs.write("big.txt", data.decode())
    large = len(data) > TEXT_WORK_INLINE_BYTES
    loop = threading.get_ident()
    assert len(threads) == 2  # the edit's decode, then the write's
    assert all((thread != loop) is large for thread in threads)
    assert (await memory_backend.read("big.txt")).data == data


async def test_every_change_reads_the_file_once_and_writes_it_once(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    await memory_backend.write("a.txt", b"one\ntwo\n", expect=ABSENT)
    await memory_ctx.fs.read("a.txt")
    changes = {
        "edit": memory_ctx.fs.edit("a.txt", "one", "uno"),
        "insert": memory_ctx.fs.insert("a.txt", 1, "between"),
        "write": memory_ctx.fs.write("a.txt", "whole\n"),
        "rewrite": memory_ctx.fs.rewrite_bytes("a.txt", lambda data: data.upper()),
        "create": memory_ctx.fs.write("b.txt", "new\n"),
        "delete": memory_ctx.fs.delete("a.txt"),
    }
    for name, change in changes.items():
        before = dict(memory_backend.calls)
        await change
        calls = {
            method: count - before.get(method, 0) for method, count in memory_backend.calls.items()
        }
        changed = {method: count for method, count in calls.items() if count}
        stored = "delete" if name == "delete" else "write"
        assert changed == {"read": 1, stored: 1}, name


async def test_a_delete_reads_any_size_while_changes_keep_the_edit_limit(
    memory_backend: MemoryBackend,
) -> None:
    from ctxfs.core import Fs, TextOptions, TooLarge  # noqa: PLC0415

    fs = Fs(memory_backend, load_entrypoints=False, text_options=TextOptions(max_edit_bytes=100))
    ctx = fs.context(owner="agent-1")
    await memory_backend.write("big.txt", b"x\n" * 1000, expect=ABSENT)
    await ctx.fs.read("big.txt", limit=1)
    with pytest.raises(TooLarge):
        await ctx.fs.edit("big.txt", "x", "y", replace_all=True)
    await ctx.fs.delete("big.txt")
    assert await memory_backend.list("") == []


@pytest.mark.parametrize("size", [10, TEXT_WORK_INLINE_BYTES + 1])
async def test_a_large_rewrite_is_computed_off_the_event_loop(
    memory_backend: MemoryBackend, memory_ctx: Context, size: int
) -> None:
    threads: list[int] = []

    def change(data: bytes) -> bytes:
        threads.append(threading.get_ident())
        return data[::-1]

    await memory_backend.write(
        "big.bin", bytes(range(256)) * (size // 256) + b"x" * (size % 256), expect=ABSENT
    )
    await memory_ctx.fs.read_bytes("big.bin", length=1)
    await memory_ctx.fs.rewrite_bytes("big.bin", change)
    assert (threads[0] != threading.get_ident()) is (size > TEXT_WORK_INLINE_BYTES)


async def test_policies_judge_a_rewrite_as_an_edit_before_the_change_runs(
    memory_backend: MemoryBackend,
) -> None:
    from ctxfs.core import Denied, Fs, Operation, hookimpl  # noqa: PLC0415

    judged: list[Operation] = []

    class Judge:
        @hookimpl
        def ctxfs_authorize(self, ctx: Context, op: Operation) -> Denied | None:
            judged.append(op)
            refused = op.path == "locked.json" and op.kind is not OpKind.READ
            return Denied("read-only here", path=op.path) if refused else None

    fs = Fs(memory_backend, plugins=[Judge()], load_entrypoints=False)
    ctx = fs.context(owner="agent-1")
    for path in ("a.json", "locked.json"):
        await memory_backend.write(path, b"{}", expect=ABSENT)
        await ctx.fs.read_bytes(path)

    def change(data: bytes) -> bytes:
        raise AssertionError("a refused rewrite must not compute its change")

    with pytest.raises(Denied):
        await ctx.fs.rewrite_bytes("locked.json", change)
    await ctx.fs.rewrite_bytes("a.json", lambda data: b"[]")
    assert [(op.kind, op.path) for op in judged if op.kind is not OpKind.READ] == [
        (OpKind.EDIT, "locked.json"),
        (OpKind.EDIT, "a.json"),
    ]


async def test_an_encoding_named_in_a_read_is_that_owners_for_its_next_edit(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    data = "hello world\nпривет\n".encode("cp1251")
    await memory_backend.write("p.txt", data, expect=ABSENT)
    other = memory_ctx.opened_fs.context(owner="other")
    await memory_ctx.fs.read("p.txt", encoding="cp1251")
    await other.fs.read("p.txt", encoding="koi8_r")  # another owner, another reading
    await memory_ctx.fs.edit("p.txt", "world", "мир")
    assert (await memory_backend.read("p.txt")).data == "hello мир\nпривет\n".encode("cp1251")
    await memory_backend.write("c.txt", "café\n".encode("cp1252"), expect=ABSENT)
    await memory_ctx.fs.read("c.txt", encoding="cp1251")  # shown as "cafй"
    assert (await memory_ctx.fs.read("c.txt")).encoding == "cp1252"  # then as detected
    await memory_ctx.fs.edit("c.txt", "café", "the")  # as the last read showed it
    assert (await memory_backend.read("c.txt")).data == b"the\n"


async def test_an_encoding_named_reaches_neither_another_owner_nor_another_path(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    data = "hello!\nПривет, как дела? Сегодня хорошая погода в Москве.\n".encode("cp1251")
    for path in ("p.txt", "same.txt"):
        await memory_backend.write(path, data, expect=ABSENT)
    other = memory_ctx.opened_fs.context(owner="other")
    await memory_ctx.fs.read("same.txt")  # as detected: cp1251
    await memory_ctx.fs.read("p.txt", encoding="koi8_r")  # the same bytes, named otherwise
    await memory_ctx.fs.edit("p.txt", "hello!", "hi!")  # ASCII: written alike in both
    await memory_ctx.fs.edit("same.txt", "hello!", "Здравствуйте!")
    assert (await memory_backend.read("same.txt")).data.startswith("Здравствуйте!".encode("cp1251"))
    assert (await other.fs.read("p.txt")).encoding == "cp1251"  # the version the edit made
    await other.fs.edit("p.txt", "hi!", "Здравствуйте!")
    assert (await memory_backend.read("p.txt")).data.startswith("Здравствуйте!".encode("cp1251"))
