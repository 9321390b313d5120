"""Text that is not UTF-8 is searched as ctxfs reads it, with ripgrep as without.

Ripgrep reads bytes as UTF-8; ctxfs reads a file in its legacy encoding (detected, or named
by ``encoding_overrides``). Ripgrep gives no lines of such a file; in a directory, it leaves
such files to ctxfs where the Fs names encodings, or the pattern characters beyond ASCII.
Each case greps with ripgrep and with the walk (``ripgrep=False``) and compares the results;
each also says what must be found, so that two answers equally wrong fail.
"""

from __future__ import annotations

import codecs
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs.core import FileSearch, Fs, LineSearch, TextOptions
from ctxfs.core.policies import PathRules
from ctxfs.local import LocalBackend
from ctxfs.local.ripgrep import NOT_UTF8, find_ripgrep
from ctxfs.tools import FsToolset
from ctxfs.tools.builtin.grep.search import MOST_COUNTED_HERE
from tests.tools.conftest import skip_without_ripgrep

pytestmark = pytest.mark.anyio

FILES: dict[str, bytes] = {
    "docs/latin.txt": "le café est là\nrien\ncafé noir\n".encode("cp1252"),
    "docs/utf8.txt": "un café\n".encode(),
    "docs/sjis.txt": "ソース表示\nコード\n".encode("shift_jis"),
    "mainframe/ebcdic.txt": "hello café\nworld\n".encode("cp500"),
    "docs/damaged.txt": "naïve café, déjà vu, señor\ncafé \xff".encode().replace(
        b"\xc3\xbf", b"\xff"
    ),
}
OVERRIDES = {"**/latin.txt": "cp1252", "mainframe/*": "cp500"}


@pytest.fixture(autouse=True)
def _ripgrep() -> None:
    if find_ripgrep() is None:
        skip_without_ripgrep()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for path, data in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


async def grep(
    root: Path,
    *,
    ripgrep: bool,
    overrides: dict[str, str] = OVERRIDES,
    deny: tuple[str, ...] = (),
    **arguments: Any,
) -> dict[str, Any]:
    backend = LocalBackend(root, state_dir=f"{root}.state", ripgrep=ripgrep)
    options = TextOptions(encoding_overrides=overrides)
    plugins = [PathRules(deny=deny)] if deny else []
    async with Fs(backend, load_entrypoints=False, text_options=options, plugins=plugins) as fs:
        found = await FsToolset().execute(fs.context(owner="agent"), "grep", arguments)
    assert found.error_code is None, found.text
    return found.structured


CASES: list[tuple[str, str, int]] = [
    # pattern, the file, its matching lines
    ("café", "docs/latin.txt", 2),
    ("caf.", "docs/latin.txt", 2),
    ("rien", "docs/latin.txt", 1),
    (r"\w+é", "docs/damaged.txt", 2),
    ("表示", "docs/sjis.txt", 1),
    ("world", "mainframe/ebcdic.txt", 1),
    (r"^h\w+o\b", "mainframe/ebcdic.txt", 1),
    ("café", "docs/utf8.txt", 1),
]


@pytest.mark.parametrize("mode", ["content", "count"])
@pytest.mark.parametrize(("pattern", "path", "lines"), CASES)
async def test_ripgrep_finds_in_one_legacy_file_what_the_walk_finds(
    root: Path, mode: str, pattern: str, path: str, lines: int
) -> None:
    arguments: dict[str, Any] = {"pattern": pattern, "path": path, "output_mode": mode}
    if mode == "content":
        arguments["before"] = 1
    engine = await grep(root, ripgrep=True, **arguments)
    assert engine == await grep(root, ripgrep=False, **arguments)
    found = len(engine["matches"]) if mode == "content" else engine["files"][0]["count"]
    assert found == lines


DIRECTORY_CASES: list[tuple[str, str, dict[str, str], set[str]]] = [
    # pattern, the directory, the Fs's overrides, the files that must hold a match
    ("café", "", OVERRIDES, {*FILES} - {"docs/sjis.txt"}),
    ("café", "docs", {}, {"docs/utf8.txt", "docs/damaged.txt"}),  # (latin.txt: too short to tell)
    ("表示", "", {}, {"docs/sjis.txt"}),
    ("world", "", OVERRIDES, {"mainframe/ebcdic.txt"}),
    (r"^h\w+o\b", "mainframe", OVERRIDES, {"mainframe/ebcdic.txt"}),
    ("rien", "", OVERRIDES, {"docs/latin.txt"}),
]


@pytest.mark.parametrize("mode", ["content", "count", "files_with_matches"])
@pytest.mark.parametrize(("pattern", "path", "overrides", "holding"), DIRECTORY_CASES)
async def test_ripgrep_finds_in_a_directory_of_legacy_text_what_the_walk_finds(
    root: Path, mode: str, pattern: str, path: str, overrides: dict[str, str], holding: set[str]
) -> None:
    arguments: dict[str, Any] = {"pattern": pattern, "path": path, "output_mode": mode}
    if mode == "content":
        arguments["context"] = 1
    engine = await grep(root, ripgrep=True, overrides=overrides, **arguments)
    assert engine == await grep(root, ripgrep=False, overrides=overrides, **arguments)
    if mode == "content":
        assert {hit["path"] for hit in engine["matches"]} == holding
    else:
        assert {entry["path"] for entry in engine["files"]} == holding


async def test_a_pattern_escaping_a_character_beyond_ascii_meets_legacy_text(root: Path) -> None:
    french = "Le café est très bon à Paris, où l'été déjà commence.\n" * 20
    (root / "docs" / "long-latin.txt").write_bytes(french.encode("cp1252"))  # (long: told)
    arguments: dict[str, Any] = {"pattern": "\\xe9t\\xe9", "output_mode": "count", "path": "docs"}
    engine = await grep(root, ripgrep=True, overrides={}, **arguments)
    assert engine == await grep(root, ripgrep=False, overrides={}, **arguments)
    assert engine["files"] == [{"path": "docs/long-latin.txt", "count": 20}]


async def test_encodings_the_fs_names_make_every_pattern_meet_legacy_text(root: Path) -> None:
    ebcdic = TextOptions(legacy_encodings=("cp500",))  # (every file that is not UTF-8)
    backend = LocalBackend(root / "mainframe", state_dir=f"{root}.state", ripgrep=True)
    async with Fs(backend, load_entrypoints=False, text_options=ebcdic) as fs:
        found = await FsToolset().execute(fs.context(owner="a"), "grep", {"pattern": "world"})
    assert found.structured["total"] == 1, found.text


async def test_many_legacy_files_are_searched_by_the_walk_as_far_as_the_page(root: Path) -> None:
    for number in range(MOST_COUNTED_HERE + 1):
        (root / "docs" / f"more-{number:03}.txt").write_bytes("été\n".encode("cp1252") * 40)
    arguments: dict[str, Any] = {"pattern": "été", "output_mode": "files_with_matches", "limit": 3}
    engine = await grep(root, ripgrep=True, overrides={"**/more-*": "cp1252"}, **arguments)
    walked = await grep(root, ripgrep=False, overrides={"**/more-*": "cp1252"}, **arguments)
    assert engine == walked
    assert engine["total_exact"] is False  # (the walk stopped at its page)


async def test_a_hard_linked_legacy_file_is_skipped_as_hard_linked(root: Path) -> None:
    os.link(root / "docs" / "latin.txt", root / "latin-again.txt")
    found = await grep(root, ripgrep=True, pattern="café", output_mode="count")
    assert found["skipped"] == {"hard_linked": 2}
    assert {entry["path"] for entry in found["files"]} == {*FILES} - {
        "docs/sjis.txt",
        "docs/latin.txt",
    }


async def test_a_legacy_file_a_policy_hides_stays_hidden(root: Path) -> None:
    (root / "secret").mkdir()
    (root / "secret" / "latin.txt").write_bytes("secret café\n".encode("cp1252"))
    arguments: dict[str, Any] = {"pattern": "café", "output_mode": "count"}
    denied = await grep(root, ripgrep=True, deny=("secret",), **arguments)
    assert {entry["path"] for entry in denied["files"]} == {*FILES} - {"docs/sjis.txt"}
    assert denied["files_skipped"] == 0  # (not even as a file refused)
    shown = await grep(root, ripgrep=True, **arguments)
    assert "secret/latin.txt" in {entry["path"] for entry in shown["files"]}


@pytest.mark.parametrize(
    ("pattern", "overrides", "runs"),
    [
        ("caf", {}, ["asked"]),
        ("café", {}, ["asked", "not UTF-8"]),
        ("caf", OVERRIDES, ["asked", "not UTF-8"]),
    ],
)
async def test_only_a_search_that_may_meet_legacy_text_looks_for_it(
    root: Path, counted: list[FileSearch], pattern: str, overrides: dict[str, str], runs: list[str]
) -> None:
    await grep(root, ripgrep=True, overrides=overrides, pattern=pattern, output_mode="count")
    assert sorted("not UTF-8" if run.pattern == NOT_UTF8 else "asked" for run in counted) == runs


@pytest.mark.parametrize(
    ("data", "given"),
    [
        ("café\n".encode(), True),
        (codecs.BOM_UTF8 + "café\n".encode(), True),
        (codecs.BOM_UTF16_LE + "café\n".encode("utf-16-le"), True),
        (codecs.BOM_UTF32_LE + "café\n".encode("utf-32-le"), False),
        ("café\n".encode("cp1252"), False),
        ("café\n".encode()[:-2], False),  # cut within a character
        (b"caf\n" + b"ok\n" * (1 << 19) + b"\xe9\n", True),  # past the bytes that tell
    ],
)
async def test_the_engine_gives_the_lines_of_files_it_reads_as_ctxfs_does(
    tmp_path: Path, data: bytes, given: bool
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "file.txt").write_bytes(data)
    backend = LocalBackend(root, state_dir=tmp_path / "state")
    async with Fs(backend, load_entrypoints=False) as fs:
        search = LineSearch(paths=("file.txt",), pattern="caf")
        found = await fs.context(owner="agent").fs.search_lines(search)
    assert found is not None
    assert ("file.txt" in found.lines) is given


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(max_size=12), min_size=1, max_size=40))
def test_not_utf8_names_exactly_the_lines_that_are_not(lines: list[bytes]) -> None:
    engine = find_ripgrep()
    assert engine is not None
    lines = [line.replace(b"\n", b"n").replace(b"\0", b"z") for line in lines]
    found = subprocess.run(
        [engine.binary, "--no-config", "--line-number", "--no-filename", "--regexp", NOT_UTF8],
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        check=False,
    )
    named = {int(record.split(b":")[0]) for record in found.stdout.split(b"\n") if record}
    expected = set()
    for number, line in enumerate(lines, 1):
        try:
            line.decode()
        except UnicodeDecodeError:
            expected.add(number)
    assert named == expected
    assert found.returncode == (0 if expected else 1), os.fsdecode(found.stderr)
