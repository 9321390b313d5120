"""A window of a file of hundreds of megabytes costs memory bounded by the window, not the file."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import xxhash

pytestmark = pytest.mark.slow

FILE_MB = 210
LIMIT_MB = 64

READER = textwrap.dedent(
    """
    import json, sys
    from contextlib import asynccontextmanager

    import anyio
    from ctxfs.core import Fs, MemoryBackend, ReadStream


    class OneFileOnDisk(MemoryBackend):
        '''Streams one real file from disk; everything else is the memory backend.'''

        def __init__(self, file):
            super().__init__()
            self.file = file

        @asynccontextmanager
        async def _stream(self, chunk_size):
            with open(self.file, "rb") as handle:
                async def chunks():
                    while chunk := await anyio.to_thread.run_sync(handle.read, chunk_size):
                        yield chunk
                yield ReadStream(chunks())

        def open_read(self, path, *, chunk_size):
            return self._stream(chunk_size)


    def peak_rss_kib():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


    async def main():
        ctx = Fs(OneFileOnDisk(sys.argv[1]), load_entrypoints=False).context(owner="a")
        baseline = peak_rss_kib()
        outcome = await ctx.fs.read("big.log", offset=int(sys.argv[2]), limit=50)
        print(json.dumps({
            "grown_kib": peak_rss_kib() - baseline,
            "total_lines": outcome.total_lines,
            "version": outcome.version,
            "first": outcome.text.splitlines()[0],
            "returned": outcome.returned_lines,
            "next_offset": outcome.next_offset,
        }))


    anyio.run(main)
    """
)


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int, str]]:
    path = tmp_path_factory.mktemp("large") / "big.log"
    block = "".join(
        f"{n:08d} the quick brown fox jumps over the lazy dog ✓\n" for n in range(20000)
    )
    encoded = block.encode()
    blocks = FILE_MB * (1 << 20) // len(encoded) + 1
    digest = xxhash.xxh3_128()
    with path.open("wb") as handle:
        for _ in range(blocks):
            handle.write(encoded)
            digest.update(encoded)
    yield path, blocks * 20000, "xxh3:" + digest.hexdigest()
    path.unlink()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc for VmHWM")
@pytest.mark.parametrize("offset", [1, 3_000_000])
def test_window_of_a_huge_file_has_bounded_memory(
    big_file: tuple[Path, int, str], offset: int
) -> None:
    path, lines, version = big_file
    assert path.stat().st_size >= 200 * (1 << 20)
    result = subprocess.run(
        [sys.executable, "-c", READER, str(path), str(offset)],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(result.stdout)
    assert report["grown_kib"] < LIMIT_MB * 1024, report
    assert report["total_lines"] == lines
    assert report["version"] == version
    assert report["returned"] == 50
    assert report["first"].startswith(f"{(offset - 1) % 20000:08d} the quick")
    assert report["next_offset"] == offset + 50
