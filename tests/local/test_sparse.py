"""A sparse file's holes are sought past, not read, and read back exactly as zeros would."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxfs.core import Fs, content_version
from ctxfs.local import LocalBackend

pytestmark = pytest.mark.anyio

CHUNK = 1 << 20


def bytes_read() -> int:
    """Bytes this process has read through system calls so far."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


def sparse(path: Path, size: int, islands: dict[int, bytes]) -> None:
    """A file of *size* bytes that is all hole but for *islands* of data at their offsets."""
    with path.open("wb") as file:
        file.truncate(size)
        for offset, data in islands.items():
            file.seek(offset)
            file.write(data)


@pytest.mark.slow
async def test_holes_are_not_read_and_the_version_is_the_contents(tmp_path: Path) -> None:
    size = 4 << 30
    islands = {0: b"hello\n" * 2000, 3 * CHUNK + 17: b"middle\n", size - 5: b"end\n\n"}
    sparse(tmp_path / "s.txt", size, islands)
    async with Fs(LocalBackend(tmp_path), load_entrypoints=False) as fs:
        before = bytes_read()
        window = await fs.context(owner="a").fs.read("s.txt", limit=1)
        read = bytes_read() - before
    assert window.text == "hello\n"
    assert window.total_lines == 2000 + 2 + 1  # the holes hold no line breaks
    assert read < 16 * CHUNK, f"{read} bytes read of a 4 GiB file with 3 islands"


async def test_a_sparse_file_streams_the_same_bytes_as_a_dense_one(tmp_path: Path) -> None:
    size = 40 * CHUNK + 123
    head = b"text, enough to be told from binary data\n" * 400
    islands = {0: head, 2 * CHUNK - 3: b"across\n", 17 * CHUNK: b"x" * CHUNK, size - 1: b"\n"}
    sparse(tmp_path / "s.txt", size, islands)
    expected = (tmp_path / "s.txt").read_bytes()
    async with (
        Fs(LocalBackend(tmp_path), load_entrypoints=False) as fs,
        fs.backend.open_read("s.txt", chunk_size=CHUNK) as stream,
    ):
        data = b"".join([chunk async for chunk in stream])
        assert data == expected
        assert stream.version == content_version(expected)
        whole = fs.context(owner="a").fs.lines("s.txt", max_line_chars=None)
        lines = [line async for line in whole]
    shown = [number for number, line in lines if line.strip("\0")]
    assert shown == [*range(1, 401), 401, 402]
