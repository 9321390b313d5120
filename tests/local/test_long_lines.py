"""Lines over ripgrep's cap come cut around their first match, as ctxfs's own walk cuts them.

Each case searches with ripgrep and with the walk (``ripgrep=False``, which reads
whole lines) and compares the results field by field; the file holding the long
line is not read through ``ctx.fs`` on the engine's side.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest

from ctxfs.core import ContextFs, Fs
from ctxfs.local import LocalBackend
from ctxfs.local.ripgrep import find_ripgrep
from ctxfs.tools import FsToolset
from ctxfs.tools.builtin.grep import search
from tests.tools.conftest import skip_without_ripgrep

pytestmark = pytest.mark.anyio

LONG = 3 << 19
"""Over the 1 MiB ripgrep is asked to print whole."""


def long_line(before: str, after: str, *, fill: str = "x") -> bytes:
    return (fill * (LONG // len(fill.encode())) + before + "NEEDLE" + after).encode()


CASES: dict[str, bytes] = {
    "match at the end": b"a\n" + long_line("", "") + b"\nb\n",
    "match at the start": b"NEEDLE" + b"q" * LONG + b"\n",
    "match in the middle": long_line("", "y" * LONG) + b"\n",
    "multibyte text before and after": long_line("é", "ü" * LONG, fill="é") + b"\n",
    "byte-order mark": codecs.BOM_UTF8 + b"head\n" + long_line("", "") + b"\nNEEDLE again\n",
    "CRLF": b"a\r\n" + long_line("", "tail") + b"\r\nz\r\n",
    "long context lines": b"k" * LONG + b"\n" + long_line("", "") + b"\n" + b"m" * LONG + b"\n",
    "two matches on a long line": long_line("", "NEEDLE" + "w" * 100) + b"\n",
    "long lines with short matching lines between": (
        b"NEEDLE 1\n" + b"r" * LONG + b"\nNEEDLE 3\n" + long_line("", "") + b"\nNEEDLE 5\n"
    ),
    "no line break at the end": b"start\n" + long_line("", "end"),
}


@pytest.fixture(autouse=True)
def _ripgrep() -> None:
    if find_ripgrep() is None:
        skip_without_ripgrep()


async def grep(root: Path, *, ripgrep: bool, **arguments: Any) -> dict[str, Any]:
    backend = LocalBackend(root, state_dir=f"{root}.state", ripgrep=ripgrep)
    async with Fs(backend, load_entrypoints=False) as fs:
        found = await FsToolset().execute(
            fs.context(owner="agent"), "grep", {"pattern": "NEEDLE", **arguments}
        )
    assert found.error_code is None, found.text
    return found.structured


@pytest.fixture
def unread(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths ``ctx.fs.lines`` reads (the engine's side must read none of them)."""
    read: list[str] = []
    lines = ContextFs.lines

    def recorded(self: ContextFs, path: str, **options: Any) -> AsyncGenerator[tuple[int, str]]:
        read.append(path)
        return lines(self, path, **options)

    monkeypatch.setattr(ContextFs, "lines", recorded)
    return read


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("context", [0, 1, 2])
async def test_a_long_line_comes_cut_as_the_walk_cuts_it(
    tmp_path: Path, unread: list[str], case: str, context: int
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "long.txt").write_bytes(CASES[case])
    (root / "short.txt").write_bytes(b"NEEDLE\n")
    engine = await grep(root, ripgrep=True, context=context)
    assert unread == []
    walked = await grep(root, ripgrep=False, context=context)
    assert engine == walked
    assert any(hit["cut"] for hit in engine["matches"])


async def test_a_long_line_searched_alone_comes_cut_too(tmp_path: Path, unread: list[str]) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "long.txt").write_bytes(CASES["match in the middle"])
    engine = await grep(root, ripgrep=True, path="long.txt")
    assert unread == []
    assert engine == await grep(root, ripgrep=False, path="long.txt")


@pytest.mark.parametrize(
    "data",
    [
        b"\xff\xfe" + "x".encode("utf-16-le") * LONG + "NEEDLE\n".encode("utf-16-le"),
        long_line("", "") + b"\xff bad\n",
    ],
    ids=["UTF-16", "not UTF-8"],
)
async def test_a_long_line_the_engine_cannot_cut_is_read_instead(
    tmp_path: Path, unread: list[str], data: bytes
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "long.txt").write_bytes(data)
    engine = await grep(root, ripgrep=True)
    assert unread == ["long.txt"]
    assert engine == await grep(root, ripgrep=False)


async def test_ctxfs_own_search_skips_a_line_too_long_to_hold_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "LINE_MAX_CHARS", 1 << 20)  # a 1 MiB line stands for 8 MiB
    root = tmp_path / "root"
    root.mkdir()
    (root / "long.txt").write_bytes(b"NEEDLE first\n" + CASES["match in the middle"])
    (root / "short.txt").write_bytes(b"NEEDLE\n")
    walked = await grep(root, ripgrep=False)
    assert [hit["path"] for hit in walked["matches"]] == ["short.txt"]
    assert walked["skipped"] == {"line_too_long": 1}
    backend = LocalBackend(root, state_dir=f"{root}.state", ripgrep=False)
    async with Fs(backend, load_entrypoints=False) as fs:
        found = await FsToolset().execute(fs.context(owner="a"), "grep", {"pattern": "NEEDLE"})
    assert "(1 file skipped: 1 holding a line over" in found.text
    engine = await grep(root, ripgrep=True)  # ripgrep cuts the line instead
    assert [hit["path"] for hit in engine["matches"]] == ["long.txt", "long.txt", "short.txt"]
