"""The attack corpus of the security reference, driven through the public ``ctx.fs`` API.

Every case runs with both resolvers. Escapes must be refused with a stable code,
and nothing outside the root may be read, created or changed.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import re
import socket
import stat
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ctxfs.core import (
    Context,
    ErrorCode,
    FileSearch,
    Fs,
    FsError,
    InvalidPath,
    LineSearch,
    MemoryBackend,
    NotARegularFile,
    Unavailable,
)
from ctxfs.core.kit import MAX_PATH_BYTES
from ctxfs.core.policies import CheckOuts, LeaseBook
from ctxfs.local import TEMP_PREFIX, LocalBackend
from ctxfs.local.listing import ORPHAN_SECONDS
from ctxfs.local.resolve import Resolver
from tests.local.conftest import SECRET, Layout, MakeFs

pytestmark = pytest.mark.anyio

Setup = Callable[[Layout], None]


def link(name: str, target: str | Callable[[Layout], str]) -> Setup:
    def plant(layout: Layout) -> None:
        os.symlink(target(layout) if callable(target) else target, layout.root / name)

    return plant


def links(*plants: Setup) -> Setup:
    def plant(layout: Layout) -> None:
        for one in plants:
            one(layout)

    return plant


def fifo(layout: Layout) -> None:
    os.mkfifo(layout.root / "fifo")


def unix_socket(layout: Layout) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(layout.root / "sock"))
    server.close()


def device(layout: Layout) -> None:
    os.mknod(layout.root / "dev", stat.S_IFCHR | 0o600, os.makedev(1, 3))


def hard_link(layout: Layout) -> None:
    os.link(layout.secret, layout.root / "hard")


@dataclass(frozen=True)
class Attack:
    case: str
    path: str | Callable[[Layout], str]
    codes: set[ErrorCode]
    setup: Setup | None = None
    ops: tuple[str, ...] = ("read", "write", "edit", "insert", "list", "stat")
    per_op: dict[str, set[ErrorCode]] = field(default_factory=dict)
    needs_root: bool = False


OUT, INVALID = {ErrorCode.OUTSIDE_ROOT}, {ErrorCode.INVALID_PATH}
FILE_OPS = ("read", "write", "edit", "insert")

ATTACKS = [
    Attack("01 ../secret", "../secret", OUT),
    Attack("02a a/../../secret", "a/../../secret", OUT),
    Attack("02b sub/../../secret", "sub/../../secret", OUT),
    Attack("03a ..", "..", OUT),
    Attack("03b sub/..", "sub/..", OUT),
    Attack("04 /etc/passwd", "/etc/passwd", OUT),
    Attack("05 the root's own absolute path", lambda lay: f"{lay.root}/a.txt", OUT),
    Attack("06a absolute sibling with the root as prefix", lambda lay: f"{lay.root}-evil/x", OUT),
    Attack("06b ../R-evil/x", "../R-evil/x", OUT),
    Attack("07a quote-suffixed sibling", lambda lay: f"{lay.root}'/x", OUT),
    Attack("07b tab-suffixed sibling", lambda lay: f"{lay.root}\t/x", OUT | INVALID),
    Attack("12a NUL", "a\x00b", INVALID),
    Attack("12b NUL then ..", "a\x00/../..", INVALID),
    Attack("15a windows drive", "C:\\Windows\\x", INVALID),
    Attack("15b UNC share", "\\\\server\\share\\x", INVALID),
    Attack("16 backslash escape", "..\\secret", INVALID),
    Attack("17a file URL", "file:///etc/passwd", INVALID),
    Attack("17b other scheme", "s3://other-bucket/k", INVALID),
    Attack("18 5,000-character path", "a/" * 2500, INVALID),
    Attack("19a 256-byte component", "x" * 256, INVALID),
    Attack("19b 128 emoji (512 bytes)", "😀" * 128, INVALID),
    Attack("22 symlink to the secret's absolute path", "lnk", OUT,
           link("lnk", lambda lay: str(lay.secret))),
    Attack("23 symlinked directory leading outside", "dirlnk/secret", OUT,
           link("dirlnk", lambda lay: str(lay.base))),
    Attack("24 relative symlink ../secret", "rel", OUT, link("rel", "../secret")),
    Attack("26 absolute symlink to a file inside the root", "absin", OUT,
           link("absin", lambda lay: str(lay.root / "a.txt"))),
    Attack("27 chain of symlinks leading out", "l1", OUT,
           links(link("l1", "l2"), link("l2", "../secret"))),
    Attack("28 symlink loop", "loopa", INVALID,
           links(link("loopa", "loopb"), link("loopb", "loopa"))),
    Attack("29 dangling symlink to an outside name", "dang", OUT, link("dang", "../created")),
    Attack("30 dangling symlink to an inside name", "dangin", {ErrorCode.NOT_FOUND},
           link("dangin", "created-inside"),
           per_op={"write": {ErrorCode.NOT_A_REGULAR_FILE}}),
    Attack("31 magic link through /proc", "magic", OUT,
           link("magic", lambda lay: f"/proc/self/root{lay.secret}")),
    Attack("35 hard link to an outside file", "hard", {ErrorCode.DENIED}, hard_link,
           ops=FILE_OPS),
    Attack("36/37 FIFO", "fifo", {ErrorCode.NOT_A_REGULAR_FILE}, fifo, ops=FILE_OPS),
    Attack("38 unix socket", "sock", {ErrorCode.NOT_A_REGULAR_FILE}, unix_socket, ops=FILE_OPS),
    Attack("39 device node", "dev", {ErrorCode.NOT_A_REGULAR_FILE}, device, ops=FILE_OPS,
           needs_root=True),
    Attack("40 a directory as a file", "sub", {ErrorCode.IS_DIRECTORY}, ops=FILE_OPS),
    Attack("09 the root as a file", "", INVALID, ops=FILE_OPS),
    Attack("10 trailing slash on a file", "a.txt/", INVALID, ops=FILE_OPS),
    Attack("11 a file used as a directory", "a.txt/x", {ErrorCode.NOT_A_DIRECTORY},
           ops=FILE_OPS),
]  # fmt: skip


async def attempt(ctx: Context, op: str, path: str) -> object:
    if op == "read":
        return await ctx.fs.read(path)
    if op == "write":
        return await ctx.fs.write(path, "pwned\n")
    if op == "edit":
        return await ctx.fs.edit(path, "top secret", "pwned")
    if op == "insert":
        return await ctx.fs.insert(path, 0, "pwned")
    if op == "list":
        return await ctx.fs.list(path)
    return await ctx.fs.stat(path)


@pytest.mark.parametrize("attack", ATTACKS, ids=[attack.case for attack in ATTACKS])
async def test_escape_is_refused_and_nothing_outside_changes(
    attack: Attack, layout: Layout, ctx: Context
) -> None:
    if attack.needs_root and os.geteuid() != 0:
        pytest.skip("creating a device node needs root (CI runs as root)")
    if attack.setup:
        attack.setup(layout)
    before = layout.outside()
    path = attack.path(layout) if callable(attack.path) else attack.path
    for op in attack.ops:
        with pytest.raises(FsError) as caught:
            await attempt(ctx, op, path)
        assert caught.value.code in attack.per_op.get(op, attack.codes), (op, caught.value)
        assert caught.value.hint
    assert layout.outside() == before
    assert not (layout.base / "created").exists()
    assert not (layout.root / "created-inside").exists()
    assert layout.secret.read_bytes() == SECRET


@pytest.mark.parametrize(("name", "plant"), [("fifo", fifo), ("dev", device)])
async def test_36_39_a_fifo_or_device_is_refused_without_being_opened(
    name: str, plant: Setup, ctx: Context, layout: Layout
) -> None:
    """Opening a FIFO wakes a writer waiting on it, and opening a device may act on it."""
    if name == "dev" and os.geteuid() != 0:
        pytest.skip("creating a device node needs root (CI runs as root)")
    plant(layout)
    with opens_watched(layout.root / name) as opens:
        for op in FILE_OPS:
            with pytest.raises(NotARegularFile):
                await attempt(ctx, op, name)
        assert opens() == 0
        os.close(os.open(layout.root / name, os.O_RDONLY | os.O_NONBLOCK))
        assert opens() == 1  # (the watch sees an open)


@contextlib.contextmanager
def opens_watched(path: Path) -> Iterator[Callable[[], int]]:
    """Count the opens of *path* from here on (inotify's ``IN_OPEN``; an ``O_PATH`` one is none)."""
    libc = ctypes.CDLL(None, use_errno=True)
    watch = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    assert watch >= 0, os.strerror(ctypes.get_errno())
    seen = 0

    def opens() -> int:
        nonlocal seen
        with contextlib.suppress(BlockingIOError):
            events = os.read(watch, 65536)
            for at in range(0, len(events), 16):  # no name follows an event on a watched file
                seen += bool(struct.unpack_from("iIII", events, at)[1] & _IN_OPEN)
        return seen

    try:
        assert libc.inotify_add_watch(watch, os.fsencode(path), _IN_OPEN) >= 0
        yield opens
    finally:
        os.close(watch)


_IN_OPEN = 0x20


async def test_08_equivalent_spellings_name_the_same_file(ctx: Context) -> None:
    for path in ("./a.txt", "a.txt", ".//a.txt"):
        assert (await ctx.fs.read(path)).text == "alpha\n"
    for path in ("sub//c", "sub/./c", "./sub/c"):
        assert (await ctx.fs.read(path)).text == "gamma\n"


async def test_09_empty_and_dot_list_the_root(ctx: Context) -> None:
    for path in ("", ".", "./"):
        names = [entry.name for entry in await ctx.fs.list(path)]
        assert names == ["a.txt", "crlf.txt", "sub"]


async def test_13_14_tilde_and_percent_are_literal_names(ctx: Context, layout: Layout) -> None:
    for path in ("~/.ssh/id_rsa", "%2e%2e/secret", "..%2fsecret"):
        with pytest.raises(FsError) as caught:
            await ctx.fs.read(path)
        assert caught.value.code is ErrorCode.NOT_FOUND
    await ctx.fs.write("%2e%2e/secret", "literal\n")
    assert (layout.root / "%2e%2e" / "secret").read_bytes() == b"literal\n"
    assert layout.secret.read_bytes() == SECRET


async def test_28_a_link_loop_is_refused_with_a_hint_to_avoid_it(
    ctx: Context, layout: Layout
) -> None:
    links(link("loopa", "loopb"), link("loopb", "loopa"))(layout)
    with pytest.raises(InvalidPath) as caught:
        await ctx.fs.read("loopa")
    assert caught.value.hint == "Use a path that reaches the file without these links."


class CountingResolver(Resolver):
    """The backend's own resolver, counting the opens it is asked for."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver, self.name, self.opens = resolver, resolver.name, 0

    def open(self, root_fd: int, path: str, flags: int, *, follow_symlinks: bool) -> int:
        self.opens += 1
        return self.resolver.open(root_fd, path, flags, follow_symlinks=follow_symlinks)


@pytest.mark.parametrize("parts", [1, 100, 400])
async def test_a_link_that_lengthens_itself_is_refused_in_a_few_opens(
    make_fs: MakeFs, layout: Layout, parts: int
) -> None:
    # a -> a/a/.../a: every expansion is longer; locating a/x.txt (inline, on the event
    # loop) must not follow it 40 times trying each start of an ever longer path
    os.symlink("/".join(["a"] * parts), layout.root / "a")
    fs = make_fs()
    backend = fs.backend
    assert isinstance(backend, LocalBackend)
    counting = backend.root_dir.resolver = CountingResolver(backend.root_dir.resolver)
    for attempt in (fs.context(owner="agent").fs.read, fs.context(owner="agent").fs.stat):
        with pytest.raises(InvalidPath) as caught:
            await attempt("a/x.txt")
        assert caught.value.hint == "Use a path that reaches the file without these links."
    most = 40 * (math.ceil(math.log2(MAX_PATH_BYTES)) + 2)  # hops, each halving <= 4 KB
    assert counting.opens <= 2 * most


async def test_a_path_too_long_for_the_kernel_is_refused_with_a_hint(
    ctx: Context, layout: Layout
) -> None:
    longest = ("x" * 200 + "/") * 20 + "y" * 75  # 4,095 bytes: PATH_MAX less its NUL
    with pytest.raises(InvalidPath) as caught:
        await ctx.fs.write(longest + "y", "never\n")
    assert caught.value.hint == "Use a path of at most 4095 bytes (UTF-8)."
    for path in (longest, _path_of(4096 - len(str(layout.root)))):
        # beneath the root, the kernel cannot tell the file's absolute path: not unavailable
        with pytest.raises(InvalidPath) as caught:
            await ctx.fs.write(path, "never\n")
        assert caught.value.hint == "Use a shorter path: the file system refuses one this long."
    assert not (layout.root / ("x" * 200)).exists()
    fits = _path_of(4094 - len(str(layout.root)))  # (its absolute path just fits)
    await ctx.fs.write(fits, "fits\n")
    assert (await ctx.fs.read(fits)).text == "fits\n"


def _path_of(size: int) -> str:
    """A path of *size* bytes, in names of 200 bytes or fewer."""
    names, left = [], size
    while left > 201:
        names.append("x" * 200)
        left -= 201
    return "/".join([*names, "y" * left])


async def test_20_a_255_byte_component_is_fine(ctx: Context) -> None:
    name = "é" * 127 + "x"  # 255 bytes
    await ctx.fs.write(name, "ok\n")
    assert (await ctx.fs.read(name)).text == "ok\n"


@pytest.mark.slow
async def test_21_a_thousand_levels_deep_is_bounded_and_stays_inside(
    ctx: Context, layout: Layout
) -> None:
    deep = "d/" * 1000 + "f.txt"
    with pytest.raises(FsError) as caught:
        await ctx.fs.read(deep)
    assert caught.value.code is ErrorCode.NOT_FOUND
    await ctx.fs.write(deep, "deep\n")
    assert (await ctx.fs.read(deep)).text == "deep\n"
    assert (layout.root / "d").is_dir()
    (layout.root / deep).unlink()  # remove bottom-up: a recursive rmtree would overflow
    for depth in range(1000, 0, -1):
        (layout.root / ("d/" * depth)).rmdir()


@pytest.mark.parametrize("follow", [True, False])
async def test_25_in_root_symlinks_follow_the_policy(
    make_fs: MakeFs, layout: Layout, follow: bool
) -> None:
    os.symlink("a.txt", layout.root / "r")
    os.symlink("sub", layout.root / "subdir")
    ctx = make_fs(follow_symlinks=follow).context(owner="agent")
    if follow:
        assert (await ctx.fs.read("r")).text == "alpha\n"
        assert (await ctx.fs.read("subdir/c")).text == "gamma\n"
        with pytest.raises(FsError) as caught:
            await ctx.fs.edit("r", "alpha", "changed")
        assert caught.value.code is ErrorCode.NOT_A_REGULAR_FILE
        assert "a.txt" in caught.value.hint
        await ctx.fs.write("subdir/new.txt", "through a directory link\n")
        assert (layout.root / "sub" / "new.txt").exists()
    else:
        for path in ("r", "subdir/c"):
            with pytest.raises(FsError) as caught:
                await ctx.fs.read(path)
            assert caught.value.code is ErrorCode.DENIED
        with pytest.raises(FsError):
            await ctx.fs.write("subdir/new.txt", "x\n")
    assert (layout.root / "a.txt").read_bytes() == b"alpha\n"
    assert os.readlink(layout.root / "r") == "a.txt"


async def test_33_file_swapped_for_a_symlink_after_the_read(ctx: Context, layout: Layout) -> None:
    await ctx.fs.read("a.txt")
    (layout.root / "a.txt").unlink()
    os.symlink("../secret", layout.root / "a.txt")
    for attempt_change in (
        ctx.fs.edit("a.txt", "alpha", "pwned"),
        ctx.fs.write("a.txt", "pwned\n"),
    ):
        with pytest.raises(FsError) as caught:
            await attempt_change
        assert caught.value.code is ErrorCode.OUTSIDE_ROOT
    assert layout.secret.read_bytes() == SECRET


async def test_34_parent_swapped_during_the_write_lands_inside_or_fails(
    ctx: Context, layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxfs.local import writes as local_writes  # noqa: PLC0415

    real = local_writes._write_temp
    outside = layout.base / "outside-dir"
    outside.mkdir()

    def swap_then_write(dir_fd: int, data: bytes, current: os.stat_result | None, **kw: Any) -> str:
        (layout.root / "sub").rename(layout.root / "moved")
        os.symlink(str(outside), layout.root / "sub")
        return real(dir_fd, data, current, **kw)

    await ctx.fs.read("sub/c")
    monkeypatch.setattr(local_writes, "_write_temp", swap_then_write)
    await ctx.fs.edit("sub/c", "gamma", "delta")
    assert (layout.root / "moved" / "c").read_bytes() == b"delta\n"
    assert list(outside.iterdir()) == []


async def test_41_missing_parents_are_created_inside(ctx: Context, layout: Layout) -> None:
    await ctx.fs.write("new/dir/f.txt", "x\n")
    assert (layout.root / "new" / "dir" / "f.txt").read_bytes() == b"x\n"


async def test_42_a_huge_sparse_file_is_refused_without_reading_it(
    ctx: Context, layout: Layout
) -> None:
    with (layout.root / "sparse.bin").open("wb") as handle:
        handle.truncate(100 << 30)
    with pytest.raises(FsError) as caught:
        await ctx.fs.read("sparse.bin")
    assert caught.value.code is ErrorCode.BINARY_FILE
    with pytest.raises(FsError) as caught:
        await ctx.fs.edit("sparse.bin", "a", "b")
    assert caught.value.code is ErrorCode.TOO_LARGE
    assert caught.value.details["size"] == 100 << 30


async def test_43_a_file_growing_during_a_read_gives_whole_lines(
    ctx: Context, layout: Layout
) -> None:
    import threading  # noqa: PLC0415

    target = layout.root / "growing.log"
    target.write_bytes(b"".join(b"line %08d\n" % n for n in range(200_000)))
    stop = threading.Event()

    def grow() -> None:
        with target.open("ab") as handle:
            n = 200_000
            while not stop.is_set():
                handle.write(b"line %08d\n" % n)
                handle.flush()
                n += 1

    writer = threading.Thread(target=grow)
    writer.start()
    try:
        outcome = await ctx.fs.read("growing.log", offset=150_000, limit=100)
    finally:
        stop.set()
        writer.join()
    assert outcome.total_lines >= 200_000
    lines = outcome.text.splitlines()
    assert lines == [f"line {n:08d}" for n in range(149_999, 150_099)]


async def test_44_to_49_content_cases(ctx: Context, layout: Layout) -> None:
    files = {
        "invalid.txt": "ok é\n".encode() + b"bad \xff\xfe\n" + b"target\n",
        "crlf.txt": b"one\r\ntwo\r\n",
        "mixed.txt": b"a\rb\r\nc\nlast",
        "bom.txt": b"\xef\xbb\xbfhead\ntail\n",
    }
    for name, data in files.items():
        (layout.root / name).write_bytes(data)
        await ctx.fs.read(name)
    await ctx.fs.edit("invalid.txt", "target", "goal")
    await ctx.fs.edit("crlf.txt", "two", "2")
    await ctx.fs.edit("mixed.txt", "b", "B")
    await ctx.fs.edit("bom.txt", "tail", "TAIL")
    assert (layout.root / "invalid.txt").read_bytes() == files["invalid.txt"].replace(
        b"target", b"goal"
    )
    assert (layout.root / "crlf.txt").read_bytes() == b"one\r\n2\r\n"
    assert (layout.root / "mixed.txt").read_bytes() == b"a\rB\r\nc\nlast"
    assert (layout.root / "bom.txt").read_bytes() == b"\xef\xbb\xbfhead\nTAIL\n"
    (layout.root / "binary.bin").write_bytes(b"\x00\x01\x02binary")
    for attempt_binary in (ctx.fs.read("binary.bin"), ctx.fs.edit("binary.bin", "binary", "x")):
        with pytest.raises(FsError) as caught:
            await attempt_binary
        assert caught.value.code is ErrorCode.BINARY_FILE
    (layout.root / "empty.txt").write_bytes(b"")
    read = await ctx.fs.read("empty.txt")
    assert (read.text, read.total_lines, read.version.startswith("xxh3:")) == ("", 0, True)
    with pytest.raises(FsError) as caught:
        await ctx.fs.edit("empty.txt", "anything", "x")
    assert caught.value.code is ErrorCode.NO_MATCH


async def test_50_odd_names_are_listed_but_not_created(ctx: Context, layout: Layout) -> None:
    (layout.root / "bad\nname").write_bytes(b"x\n")
    names = [entry.name for entry in await ctx.fs.list()]
    assert "bad\nname" in names
    with pytest.raises(FsError) as caught:
        await ctx.fs.write("new\nname", "x\n")
    assert caught.value.code is ErrorCode.INVALID_PATH
    await ctx.fs.write("rtl\u202etxt.exe", "shown literally\n")
    assert "rtl\u202etxt.exe" in [entry.name for entry in await ctx.fs.list()]


async def test_51_52_names_are_never_normalised(ctx: Context, layout: Layout) -> None:
    for name, text in (("café", "composed\n"), ("cafe\u0301", "decomposed\n"),
                       (".GIT", "upper\n"), (".g\u200cit", "joiner\n")):  # fmt: skip
        await ctx.fs.write(name, text)
    assert (await ctx.fs.read("café")).text == "composed\n"
    assert (await ctx.fs.read("cafe\u0301")).text == "decomposed\n"
    assert len(list(layout.root.iterdir())) == 3 + 4


async def test_53_names_that_are_not_utf8_round_trip(ctx: Context, layout: Layout) -> None:
    with open(os.path.join(os.fsencode(layout.root), b"caf\xe9.txt"), "wb") as handle:
        handle.write(b"latin-1 name\n")
    (name,) = [entry.name for entry in await ctx.fs.list() if entry.name.startswith("caf")]
    assert name == "caf\udce9.txt"
    assert (await ctx.fs.read(name)).text == "latin-1 name\n"


async def test_54_a_deleted_root_is_an_error_and_is_never_recreated(
    ctx: Context, layout: Layout
) -> None:
    import shutil  # noqa: PLC0415

    await ctx.fs.read("a.txt")
    shutil.rmtree(layout.root)
    attempts = (
        ctx.fs.read("a.txt"),
        ctx.fs.write("a.txt", "x\n"),
        ctx.fs.edit("a.txt", "alpha", "beta"),
        ctx.fs.delete("a.txt"),
        ctx.fs.list(),
        ctx.fs.search_files(FileSearch(path="", pattern="alpha")),  # (ripgrep's, where it runs)
        ctx.fs.search_files(FileSearch(path="", pattern=None)),
        ctx.fs.search_lines(LineSearch(paths=("a.txt",), pattern="alpha")),
    )
    for attempt_op in attempts:
        with pytest.raises(FsError) as caught:
            await attempt_op
        assert caught.value.code is ErrorCode.UNAVAILABLE
        assert "deleted" in caught.value.message
        assert not caught.value.retryable
    assert not layout.root.exists()


async def test_55_a_lock_file_replaced_by_a_symlink_is_refused(
    make_fs: MakeFs, layout: Layout
) -> None:
    fs = make_fs()
    backend = fs.backend
    assert isinstance(backend, LocalBackend)
    victim = layout.base / "victim"
    victim.write_bytes(b"victim\n")
    lock_dir = layout.state / "locks"
    key = (await backend.locate("a.txt")).key
    for kind in ("mutation", "cas"):
        (lock_dir / backend.locks.file_name(kind, key)).symlink_to(victim)
    ctx = fs.context(owner="agent")
    await ctx.fs.read("a.txt")
    with pytest.raises(OSError):  # noqa: PT011 - O_NOFOLLOW refuses the planted link
        await ctx.fs.edit("a.txt", "alpha", "beta")
    assert victim.read_bytes() == b"victim\n"
    assert (layout.root / "a.txt").read_bytes() == b"alpha\n"


async def test_56_orphaned_temps_are_hidden_and_reaped(ctx: Context, layout: Layout) -> None:
    orphan = layout.root / "sub" / f"{TEMP_PREFIX}99999999.deadbeefdeadbeef"
    orphan.write_bytes(b"half a write")
    abandoned = time.time() - 2 * ORPHAN_SECONDS  # (its writer is gone, and long since)
    os.utime(orphan, (abandoned, abandoned))
    # names under the prefix that no writer made are someone else's: hidden, never removed
    others = [layout.root / "sub" / f"{TEMP_PREFIX}{name}" for name in ("notes", "1.backup")]
    for other in others:
        other.write_bytes(b"mine")
    names = [entry.name for entry in await ctx.fs.list("sub")]
    assert names == ["c"]
    assert not orphan.exists()
    assert [other.read_bytes() for other in others] == [b"mine"] * 2
    with pytest.raises(FsError) as caught:
        await ctx.fs.write(f"sub/{TEMP_PREFIX}1.x", "x\n")
    assert caught.value.code is ErrorCode.INVALID_PATH
    live = layout.root / "sub" / f"{TEMP_PREFIX}{os.getpid()}.{'ca' * 8}"  # a writer at work
    live.write_bytes(b"half a write")
    for refused in (
        ctx.fs.read(f"sub/{live.name}"),
        ctx.fs.write(f"{TEMP_PREFIX}1/inside.txt", "x\n"),  # a path under the prefix
        ctx.fs.stat(f"sub/{live.name}"),
    ):
        with pytest.raises(FsError) as caught:
            await refused
        assert caught.value.code is ErrorCode.INVALID_PATH
    assert live.read_bytes() == b"half a write"
    assert not (layout.root / f"{TEMP_PREFIX}1").exists()


async def test_57_a_stale_version_is_refused_and_changes_nothing(
    make_fs: MakeFs, layout: Layout
) -> None:
    fs = make_fs()
    alice, bob = fs.context(owner="alice"), fs.context(owner="bob")
    await alice.fs.read("a.txt")
    await bob.fs.read("a.txt")
    await bob.fs.edit("a.txt", "alpha", "bravo")
    with pytest.raises(FsError) as caught:
        await alice.fs.edit("a.txt", "alpha", "charlie")
    assert caught.value.code is ErrorCode.STALE
    assert (layout.root / "a.txt").read_bytes() == b"bravo\n"


@pytest.mark.parametrize("path", ["../x", "a//b", "/x", "a/./b"])
async def test_58_object_stores_refuse_keys_lexically(path: str) -> None:
    backend = MemoryBackend()
    with pytest.raises(FsError) as caught:
        await backend.write(path, b"x", expect=None)
    assert caught.value.code in (ErrorCode.INVALID_PATH, ErrorCode.OUTSIDE_ROOT)
    assert await backend.list("") == []


def test_every_corpus_number_is_covered() -> None:
    """The 58 cases of the reference corpus each have a case or a test here (32: the race)."""
    covered: set[int] = set()
    for attack in ATTACKS:
        for number in attack.case.split()[0].split("/"):
            covered.add(int(number.rstrip("ab")))
    for name in globals():
        found = re.match(r"test_(\d\d)(_to_\d\d|(?:_\d\d)*)_", name)
        if found:
            numbers = [int(n) for n in re.findall(r"\d\d", found.group(0))]
            covered |= set(range(numbers[0], numbers[-1] + 1)) if "_to_" in name else set(numbers)
    races = (Path(__file__).parent / "test_races.py").read_text()
    if "def test_32_" in races:
        covered.add(32)
    assert covered == set(range(1, 59)), sorted(set(range(1, 59)) - covered)


async def test_a_lease_holds_for_every_spelling_of_the_leased_file(layout: Layout) -> None:
    # alice checked out config/app.ini: bob reaches it through a linked directory and a link
    # to the file, and is refused each time; nothing changes.
    (layout.root / "config").mkdir()
    (layout.root / "config" / "app.ini").write_text("a=1\n")
    os.symlink("config", layout.root / "cfglink")
    os.symlink("config/app.ini", layout.root / "applink.ini")
    leases = LeaseBook()
    leases.check_out("config/app.ini", "alice")
    backend = LocalBackend(layout.root, state_dir=layout.state)
    async with Fs(backend, plugins=[CheckOuts(leases)], load_entrypoints=False) as fs:
        bob = fs.context(owner="bob")
        for spelling in ("config/app.ini", "cfglink/app.ini", "./cfglink//app.ini", "applink.ini"):
            await bob.fs.read(spelling)
            with pytest.raises(FsError) as refused:
                await bob.fs.edit(spelling, "a=1", "a=2")
            assert refused.value.code is ErrorCode.CHECKED_OUT, spelling
    assert (layout.root / "config" / "app.ini").read_text() == "a=1\n"


async def test_a_closed_workspace_is_unavailable_never_what_its_descriptor_number_names_now(
    layout: Layout, resolver: str
) -> None:
    backend = LocalBackend(layout.root, resolver=resolver, state_dir=layout.state)
    fs = Fs(backend, load_entrypoints=False)
    ctx = fs.context(owner="agent")
    await ctx.fs.read("a.txt")
    number = backend.root_fd
    await fs.aclose()
    elsewhere = os.open(layout.base / "R-evil", os.O_RDONLY | os.O_DIRECTORY)
    if elsewhere != number:  # the freed number now names a directory outside the root
        os.dup2(elsewhere, number)
        os.close(elsewhere)
    try:
        for attempt in (
            lambda: ctx.fs.read("x"),
            lambda: ctx.fs.write("planted.txt", "planted\n"),
            lambda: ctx.fs.list(""),
            lambda: ctx.fs.stat("x"),
            lambda: ctx.fs.mkdir("made"),
        ):
            with pytest.raises(Unavailable, match="was closed"):
                await attempt()
    finally:
        os.close(number)
    assert sorted(os.listdir(layout.base / "R-evil")) == ["x"]
