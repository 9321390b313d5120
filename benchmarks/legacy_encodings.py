"""Legacy encodings: what weighing the code pages costs, on a 10 KB and a 100 MB file.

The same Russian (and Japanese) prose is stored twice on fs-local, once in
UTF-8 and once in a legacy code page, and ``ctx.fs`` reads the same window of
each: the ratio is what detection (and, for a multibyte code page, decoding
instead of working on bytes) adds to a read. The detection alone is also
timed against ``charset-normalizer`` judging the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import charset_normalizer

from benchmarks.harness import Case, Timed
from ctxfs.core import Fs
from ctxfs.core.text import TextOptions, detect_encoding
from ctxfs.local import LocalBackend

GROUP = "Legacy encodings on fs-local"
_PROSE: Final = {
    "cp1251": (
        "Эта программа читает файлы настроек и проверяет, что все значения заданы "
        "правильно; если параметр отсутствует, используется значение по умолчанию."
    ),
    "shift_jis": (
        "このプログラムは設定ファイルを読み込み、すべての値が正しいかどうかを確認します。"
    ),
}
_LARGE: Final = 100 << 20
_SMALL: Final = 10 << 10


def _lines(codec: str, size: int) -> str:
    line = f"{{n:07d}} {_PROSE[codec]}\n"
    count = size // len(line.format(n=0).encode(codec))
    return "".join(line.format(n=n) for n in range(count))


async def cases(workdir: Path) -> list[Case]:
    """A 2,000-line window read of each legacy file against its UTF-8 twin, and detection."""
    root = workdir / "legacy"
    root.mkdir()
    for codec in _PROSE:
        for size, label in ((_SMALL, "10KB"), (_LARGE, "100MB")):
            text = _lines(codec, size)
            (root / f"{label}-{codec}.txt").write_bytes(text.encode(codec))
            (root / f"{label}-{codec}-utf8.txt").write_bytes(text.encode())
    fs = Fs(LocalBackend(root, state_dir=workdir / "legacy-state"), load_entrypoints=False)
    ctx = fs.context(owner="bench")

    def window(name: str, offset: int) -> Timed:
        async def read() -> object:
            return await ctx.fs.read(name, offset=offset, limit=2000)

        return read

    cases = []
    for codec in _PROSE:
        for label, offset, rounds in (("10KB", 1, 15), ("100MB", 500_000, 3)):
            cases.append(
                Case(
                    group=GROUP,
                    name=f"read a {label} {codec} file (baseline: the same text in UTF-8)",
                    ours=window(f"{label}-{codec}.txt", offset),
                    baseline=window(f"{label}-{codec}-utf8.txt", offset),
                    target=1.5 if label == "100MB" and codec == "cp1251" else None,
                    rounds=rounds,
                    note="" if codec == "cp1251" else "multibyte: the window decodes the text",
                )
            )
    sample = (root / "10KB-cp1251.txt").read_bytes()
    options = TextOptions()

    async def detect() -> object:
        return detect_encoding(sample, options, path="f", complete=True)

    async def normalizer() -> object:
        return charset_normalizer.from_bytes(sample).best()

    cases.append(
        Case(
            group=GROUP,
            name="detect a 10 KB cp1251 file (baseline: charset-normalizer alone)",
            ours=detect,
            baseline=normalizer,
            target=None,
        )
    )
    return cases
