from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from ctxfs.core import (
    ABSENT,
    Context,
    EditOutcome,
    ErrorCode,
    FsError,
    MemoryBackend,
    NoMatch,
)
from ctxfs.core.text import TextOptions, decode_document
from ctxfs.core.text.document import MAX_LISTED_LINES, strip_line_numbers
from ctxfs.core.text.edits import Replacement, replace_in_turn
from ctxfs.core.text.mismatch import MAX_DIAGNOSED_CHARS, diagnose_no_match
from tests.core.text.corpus import PARAGRAPHS

pytestmark = pytest.mark.anyio

OPTIONS = TextOptions()


FRENCH = PARAGRAPHS["french"]
"""Enough French to tell its code page (a line or two is ambiguous, so refused)."""


def edit(data: bytes, old: str, new: str, *, replace_all: bool = False) -> bytes:
    return decode_document(data, OPTIONS, path="f").replace(old, new, replace_all=replace_all).data


# -- byte fidelity ---------------------------------------------------------------------


def test_crlf_file_keeps_crlf_and_replacement_takes_it() -> None:
    data = b"one\r\ntwo\r\nthree\r\n"
    assert edit(data, "two\nthree", "2\n3\n3b") == b"one\r\n2\r\n3\r\n3b\r\n"


def test_mixed_endings_map_line_by_line() -> None:
    data = b"a\r\nb\nc\rd"
    assert edit(data, "a\nb\nc", "A\nB\nC") == b"A\r\nB\nC\rd"


def test_replacement_inside_one_line_takes_that_lines_ending() -> None:
    data = b"x = 1\ry = 2\rz = 3\r"
    assert edit(data, "y = 2", "y = 2\ny2 = 4") == b"x = 1\ry = 2\ry2 = 4\rz = 3\r"


def test_missing_final_newline_and_bom_survive() -> None:
    data = b"\xef\xbb\xbfhead\nlast"
    assert edit(data, "last", "LAST") == b"\xef\xbb\xbfhead\nLAST"


def test_invalid_bytes_elsewhere_survive() -> None:
    data = "émoji ok\n".encode() + b"bad \xff\xfe here\n" + "target é\n".encode()
    assert edit(data, "target", "goal") == data.replace(b"target", b"goal")


def test_the_diff_of_an_edit_shows_invalid_bytes_as_reads_do() -> None:
    # It showed them as \xNN escapes, which a model then copied into its next old_string.
    data = "résumé naïve\n".encode() * 20 + b"caf\xe9 ol\xc3\xa9\n"  # UTF-8, one byte damaged
    change = decode_document(data, OPTIONS, path="f").replace(" ol", " OL", replace_all=False)
    assert change.diff is not None
    assert "-caf\ufffd ol\u00e9" in change.diff
    assert "+caf\ufffd OL\u00e9" in change.diff


@pytest.mark.parametrize("codec", ["utf-8", "cp1252", "utf-16"])
def test_a_nul_is_no_text_to_write(codec: str) -> None:
    # A NUL makes a file binary to every reader (but in UTF-16 and UTF-32, where it is text).
    document = decode_document("a\nb\n".encode(codec), OPTIONS, path="f")
    if codec == "utf-16":
        assert document.replace("a", "\0", replace_all=False).data == "\0\nb\n".encode(codec)
        return
    with pytest.raises(FsError) as refused:
        document.replace("a", "x\0", replace_all=False)
    assert refused.value.code is ErrorCode.INVALID_ARGUMENT
    assert refused.value.details == {"field": "new_string"}


def test_a_nul_the_file_holds_already_may_be_matched_and_kept() -> None:
    data = b"x" * 9000 + b"\nkey=\0value\nend\n"  # (past the bytes that tell binary files)
    document = decode_document(data, OPTIONS, path="f")
    removed = document.replace("key=\0value", "key=value", replace_all=False)
    assert removed.data == data.replace(b"\0", b"")
    kept = document.replace("end", "END", replace_all=False)
    assert kept.data == data.replace(b"end", b"END")


def test_cp1252_edit_writes_cp1252() -> None:
    text = FRENCH.replace(". ", ".\r\n") + "\r\nUne idée naïve.\r\n"
    assert edit(text.encode("cp1252"), "naïve", "naïveté") == text.replace(
        "naïve", "naïveté"
    ).encode("cp1252")


def test_an_old_string_the_files_encoding_cannot_hold_is_no_match_with_the_near_one() -> None:
    # cp1252 has no arrow: old_string cannot occur, and the line it nearly matches is named.
    text = FRENCH.replace(". ", ".\r\n") + "\r\nUne idée -> naïve.\r\n"
    document = decode_document(text.encode("cp1252"), OPTIONS, path="f")
    for old in ("Une idée → naïve.", "1: Une idée → naïve."):
        with pytest.raises(FsError) as refused:
            document.replace(old, "Une idée sage.", replace_all=False)
        assert refused.value.code is ErrorCode.NO_MATCH
        assert refused.value.details["lines"] == [text.count("\n")]
    with pytest.raises(FsError) as unwritable:  # a new_string it cannot hold is still refused
        document.replace("naïve", "→", replace_all=False)
    assert unwritable.value.code is ErrorCode.ENCODING_ERROR


def test_shift_jis_edit_writes_shift_jis() -> None:
    text = "これは日本語のテキストです。\n二行目です。\n"
    result = edit(text.encode("shift_jis"), "二行目", "第二行")
    assert result == text.replace("二行目", "第二行").encode("shift_jis")


def test_utf16_edit() -> None:
    data = "α\r\nβ\r\n".encode("utf-16")
    assert edit(data, "β", "γ\nδ") == "α\r\nγ\r\nδ\r\n".encode("utf-16")


def test_replace_all_replaces_every_occurrence() -> None:
    document = decode_document(b"x\nx\ny\nx\n", OPTIONS, path="f")
    change = document.replace("x", "z", replace_all=True)
    assert change.data == b"z\nz\ny\nz\n"
    assert (change.replacements, change.first_line, change.last_line) == (3, 1, 4)


@pytest.mark.parametrize(
    ("data", "old", "new", "lines"),
    [
        (b"a\nb\nc\nd\n", "b\n", "B1\nB2\n", (2, 3)),
        (b"a\nb\nc\nd\n", "b\nc\n", "", (2, 2)),
        (b"a\nb\nc\nd\n", "c", "C", (3, 3)),
        (b"a\r\nb\r\nc\r\n", "b", "1\n2\n3", (2, 4)),
    ],
)
def test_changed_line_range(data: bytes, old: str, new: str, lines: tuple[int, int]) -> None:
    change = decode_document(data, OPTIONS, path="f").replace(old, new, replace_all=False)
    assert (change.first_line, change.last_line) == lines


# -- line-number prefixes -----------------------------------------------------------------


def test_pasted_read_line_numbers_are_stripped_and_reported() -> None:
    document = decode_document(b"def f():\n    return 1\n", OPTIONS, path="f")
    change = document.replace(
        "1 def f():\n2     return 1",
        "1 def g():\n2     return 2",
        replace_all=False,
    )
    assert change.data == b"def g():\n    return 2\n"
    assert change.stripped_line_numbers


def test_line_numbers_are_not_stripped_when_the_text_matches_as_is() -> None:
    data = b"1 literal\n"
    change = decode_document(data, OPTIONS, path="f").replace("1 literal", "x", replace_all=False)
    assert (change.data, change.stripped_line_numbers) == (b"x\n", False)


def test_content_that_starts_with_numbers_survives_stripping() -> None:
    document = decode_document(b"intro\n3 apples\n\n4 pears\n", OPTIONS, path="f")
    change = document.replace(
        "2 3 apples\n3\n4 4 pears", "2 3 plums\n3\n4 5 pears", replace_all=False
    )
    assert change.data == b"intro\n3 plums\n\n5 pears\n"
    assert change.stripped_line_numbers


def test_an_old_string_without_numbers_is_not_split_to_find_out() -> None:
    # A long old_string that is not in the file is checked for pasted numbers before the edit
    # fails: its first line settles it, and the check holds no copy of the rest.
    old_string = "no such text\n" * 1_000_000
    tracemalloc.start()
    try:
        assert strip_line_numbers(old_string) is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024, f"the check held {peak:,} bytes for {len(old_string):,} characters"


def test_new_string_keeps_numbers_that_do_not_continue_the_pasted_ones() -> None:
    document = decode_document(b"a\nb\n", OPTIONS, path="f")
    change = document.replace("2 b", "1 one\n2 two", replace_all=False)
    assert change.data == b"a\n1 one\n2 two\n"
    renumbered = decode_document(b"a\nb\n", OPTIONS, path="f").replace(
        "1 a", "5 one\n6 two", replace_all=False
    )
    assert renumbered.data == b"5 one\n6 two\nb\n"


PASTED = "pasted line-number prefixes"


@pytest.mark.parametrize(
    ("old_string", "new_string", "code", "detail"),
    [
        ("1 a\n3 b", "x", ErrorCode.NO_MATCH, ("differences", [PASTED])),
        ("7 a\n8 b", "x", ErrorCode.NO_MATCH, ("differences", [PASTED])),
        ("0 a\n1 b", "x", ErrorCode.NO_MATCH, ("differences", [PASTED])),
        ("1 a", "1 x\ny", ErrorCode.INVALID_ARGUMENT, ("field", "new_string")),
        ("1 a", "1 x\n3 y\n2 z", ErrorCode.INVALID_ARGUMENT, ("field", "new_string")),
    ],
    ids=[
        "old numbers not consecutive",
        "old numbers naming other lines",
        "old numbers from line 0",
        "new line left unnumbered",
        "new numbers running backwards",
    ],
)
def test_pasted_numbers_that_do_not_read_one_way_are_refused(
    old_string: str, new_string: str, code: ErrorCode, detail: tuple[str, object]
) -> None:
    document = decode_document(b"a\nb\n", OPTIONS, path="f")
    with pytest.raises(FsError) as caught:
        document.replace(old_string, new_string, replace_all=False)
    assert caught.value.code is code
    assert caught.value.details[detail[0]] == detail[1]


def test_pasted_numbers_around_the_same_text_are_no_change() -> None:
    document = decode_document(b"a\nb\n", OPTIONS, path="f")
    with pytest.raises(FsError) as caught:
        document.replace("1 a\n2 b", "1 a\n3 b", replace_all=False)
    assert caught.value.code is ErrorCode.NO_CHANGE


# -- insert -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "after", "text", "expected"),
    [
        (b"a\nb\n", 0, "top", b"top\na\nb\n"),
        (b"a\nb\n", 1, "mid", b"a\nmid\nb\n"),
        (b"a\nb\n", 2, "end", b"a\nb\nend\n"),
        (b"a\nb", 2, "end", b"a\nb\nend"),
        (b"a\nb", 2, "end\n", b"a\nb\nend"),
        (b"a\nb", 1, "x\ny", b"a\nx\ny\nb"),
        (b"a\r\nb\r\n", 1, "x\ny", b"a\r\nx\r\ny\r\nb\r\n"),
        (b"", 0, "first", b"first\n"),
        (b"\xef\xbb\xbfa\n", 0, "z", b"\xef\xbb\xbfz\na\n"),
    ],
)
def test_insert(data: bytes, after: int, text: str, expected: bytes) -> None:
    change = decode_document(data, OPTIONS, path="f").insert(after, text)
    assert change.data == expected
    assert change.first_line == after + 1


def test_insert_reports_the_inserted_range() -> None:
    change = decode_document(b"a\nb\n", OPTIONS, path="f").insert(1, "x\ny\nz\n")
    assert (change.first_line, change.last_line) == (2, 4)


# -- errors a model sees ---------------------------------------------------------------------

ERROR_CASES: list[tuple[str, bytes, dict[str, Any], ErrorCode, str]] = [
    ("empty old_string", b"a\n", {"old_string": "", "new_string": "x"},
     ErrorCode.EMPTY_OLD_STRING, "use write"),
    ("identical strings", b"a\n", {"old_string": "a", "new_string": "a"},
     ErrorCode.NO_CHANGE, "nothing to do"),
    ("identical after folding line endings", b"a\nb\n",
     {"old_string": "a\r\nb", "new_string": "a\nb"}, ErrorCode.NO_CHANGE, "nothing to do"),
    ("absent text", b"alpha\nbeta\n", {"old_string": "gamma", "new_string": "x"},
     ErrorCode.NO_MATCH, "read the file again"),
    ("indentation", b"def f():\n    return 1\n",
     {"old_string": "def f():\n  return 1", "new_string": "x"},
     ErrorCode.NO_MATCH, "mind the indentation"),
    ("tabs vs spaces", b"def f():\n\treturn 1\n",
     {"old_string": "    return 1", "new_string": "x"}, ErrorCode.NO_MATCH, "tabs vs spaces"),
    ("trailing whitespace", b"x = 1   \ny = 2\n",
     {"old_string": "x = 1\ny = 2", "new_string": "x"}, ErrorCode.NO_MATCH, "trailing whitespace"),
    ("curly quotes", "say “hi”\n".encode(), {"old_string": 'say "hi"', "new_string": "x"},
     ErrorCode.NO_MATCH, "curly vs straight quotes"),
    ("missing final line break", b"a\nlast", {"old_string": "last\n", "new_string": "x"},
     ErrorCode.NO_MATCH, "line endings"),
    ("escaped line breaks", b"a\nb\n", {"old_string": "a\\nb", "new_string": "x"},
     ErrorCode.NO_MATCH, "escaped line breaks"),
    ("other line-number format", b"a\nb\n", {"old_string": "1: a\n2: b", "new_string": "x"},
     ErrorCode.NO_MATCH, "pasted line-number prefixes"),
    ("decomposed accents", "café\n".encode(), {"old_string": "cafe\u0301", "new_string": "x"},
     ErrorCode.NO_MATCH, "unicode normalization"),
    ("zero-width space in the file", "name = 'ab\u200bc'\n".encode(),
     {"old_string": "name = 'abc'", "new_string": "x"}, ErrorCode.NO_MATCH, "invisible characters"),
    ("a character copied as grep shows it", b"page one\x0cpage two\n",
     {"old_string": "page one\\x0cpage two", "new_string": "x"},
     ErrorCode.NO_MATCH, "characters shown escaped"),
    ("a cut line's mark copied", b"x = [" + b"1, " * 5000 + b"]\n",
     {"old_string": "x = [1, 1,  … [line cut here; it holds 15006 bytes]", "new_string": "x"},
     ErrorCode.NO_MATCH, "cut line's mark"),
    ("invalid bytes in old_string", b"ok \xff bad\n" + "é".encode() * 3,
     {"old_string": "ok \ufffd bad", "new_string": "x"}, ErrorCode.NO_MATCH, "\ufffd markers"),
    ("ambiguous", b"x = 1\nx = 1\nx = 1\n", {"old_string": "x = 1", "new_string": "x = 2"},
     ErrorCode.AMBIGUOUS_MATCH, "set replace_all"),
    ("unencodable character", f"{FRENCH}\nCafé\n".encode("cp1252"),
     {"old_string": "Café", "new_string": "Café ✓"}, ErrorCode.ENCODING_ERROR, "cp1252"),
    ("replacement character", b"abc\n", {"old_string": "abc", "new_string": "a\ufffdc"},
     ErrorCode.ENCODING_ERROR, "do not copy"),
    ("lone surrogate", b"abc\n", {"old_string": "abc", "new_string": "a\ud800c"},
     ErrorCode.INVALID_ARGUMENT, "fix the argument"),
    ("binary file", b"\x00\x01binary", {"old_string": "binary", "new_string": "x"},
     ErrorCode.BINARY_FILE, "binary file"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "arguments", "code", "hint"),
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
async def test_each_error_has_its_code_and_an_actionable_hint(
    memory_backend: MemoryBackend,
    memory_ctx: Context,
    data: bytes,
    arguments: dict[str, Any],
    code: ErrorCode,
    hint: str,
) -> None:
    await memory_backend.write("f.txt", data, expect=ABSENT)
    if code is not ErrorCode.BINARY_FILE:
        await memory_ctx.fs.read("f.txt")
    with pytest.raises(FsError) as caught:
        await memory_ctx.fs.edit("f.txt", **arguments)
    assert caught.value.code is code
    assert hint.lower() in caught.value.hint.lower(), caught.value.hint
    assert (await memory_backend.read("f.txt")).data == data, "nothing changed"


async def test_ambiguous_match_lists_the_lines(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    await memory_backend.write("f.txt", b"x\ny\nx\nz\nx\n", expect=ABSENT)
    await memory_ctx.fs.read("f.txt")
    with pytest.raises(FsError) as caught:
        await memory_ctx.fs.edit("f.txt", "x", "w")
    assert caught.value.details == {"count": 3, "lines": [1, 3, 5]}
    assert "at lines 1, 3, 5" in caught.value.message


async def test_ambiguous_match_names_a_bounded_number_of_lines(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    await memory_backend.write("f.txt", b"x\n" * 200_000, expect=ABSENT)
    await memory_ctx.fs.read("f.txt")
    with pytest.raises(FsError) as caught:
        await memory_ctx.fs.edit("f.txt", "x", "w")
    listed = list(range(1, MAX_LISTED_LINES + 1))
    assert caught.value.details == {"count": 200_000, "lines": listed}
    assert caught.value.message.endswith(f", {MAX_LISTED_LINES} and 199980 more lines")
    assert len(caught.value.message) < 200
    await memory_backend.write("g.txt", b"x x x\n" * 30, expect=ABSENT)  # lines, not matches
    await memory_ctx.fs.read("g.txt")
    with pytest.raises(FsError) as caught:
        await memory_ctx.fs.edit("g.txt", "x", "w")
    assert caught.value.details == {"count": 90, "lines": listed}
    assert caught.value.message.endswith(f", {MAX_LISTED_LINES} and 10 more lines")


async def test_no_match_names_the_closest_lines(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    body = "".join(f"value_{n} = compute({n})\n" for n in range(50)).encode()
    await memory_backend.write("f.txt", body, expect=ABSENT)
    await memory_ctx.fs.read("f.txt")
    with pytest.raises(FsError) as caught:
        await memory_ctx.fs.edit("f.txt", "value_17 = compute(71)", "x")
    assert caught.value.code is ErrorCode.NO_MATCH
    assert 18 in caught.value.details["lines"]
    assert {"line": 18, "text": "value_17 = compute(17)"} in caught.value.details["candidates"]


def test_the_diagnosis_stops_at_its_deadline_and_says_so() -> None:
    text = "".join(f"value_{n} = compute({n})\n" for n in range(50))
    message, hint, details = diagnose_no_match(text, "value_17 = compute(71)", "f.txt", seconds=0)
    assert "the search for a near match stopped after 0 s" in message
    assert "shorter old_string" in hint
    assert details["complete"] is False
    message, _, details = diagnose_no_match(text, "value_17 = compute(71)", "f.txt")
    assert "stopped" not in message
    assert "complete" not in details


def test_an_old_string_too_long_to_diagnose_says_so() -> None:
    document = decode_document(b"short file\n", OPTIONS, path="f")
    with pytest.raises(FsError) as caught:
        document.replace("x" * (MAX_DIAGNOSED_CHARS + 1), "y", replace_all=False)
    assert caught.value.code is ErrorCode.NO_MATCH
    assert "too long to search for a near match" in caught.value.message
    assert caught.value.details["complete"] is False


def test_the_diagnosis_is_linear_in_runs_of_spaces() -> None:
    # "[ \t]+$" tried at each of 200,000 spaces is quadratic (minutes); each lens is linear.
    text = "a" + " " * 200_000 + "b\n"
    message, _, _ = diagnose_no_match(text, "a  b", "f.txt", seconds=30)
    assert "stopped" not in message


def test_a_pasted_line_number_too_long_for_an_int_is_text() -> None:
    digits = "1" * 5_000
    document = decode_document(f"{digits} x\n".encode(), OPTIONS, path="f")
    assert document.replace(f"{digits} x", "y", replace_all=False).data == b"y\n"
    with pytest.raises(FsError) as caught:
        document.replace(f"{digits} z", "y", replace_all=False)
    assert caught.value.code is ErrorCode.NO_MATCH


async def test_insert_through_ctx_fs_needs_an_observation_and_checks_range(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    await memory_backend.write("f.txt", b"a\nb", expect=ABSENT)
    with pytest.raises(FsError) as caught:
        await memory_ctx.fs.insert("f.txt", 1, "x")
    assert caught.value.code is ErrorCode.NOT_OBSERVED
    await memory_ctx.fs.read("f.txt", limit=1)
    with pytest.raises(FsError) as caught:
        await memory_ctx.fs.insert("f.txt", 3, "x")
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    assert caught.value.details == {"total_lines": 2}
    outcome = await memory_ctx.fs.insert("f.txt", 2, "c")
    assert (outcome.first_line, outcome.last_line) == (3, 3)
    assert (await memory_backend.read("f.txt")).data == b"a\nb\nc"


async def test_edit_outcome_through_ctx_fs(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    await memory_backend.write("f.txt", b"one\r\ntwo\r\n", expect=ABSENT)
    read = await memory_ctx.fs.read("f.txt")
    outcome = await memory_ctx.fs.edit("f.txt", "two", "2")
    assert isinstance(outcome, EditOutcome)
    assert (outcome.replacements, outcome.first_line, outcome.last_line) == (1, 2, 2)
    assert outcome.previous_version == read.version
    assert (await memory_backend.read("f.txt")).data == b"one\r\n2\r\n"


async def test_write_keeps_encoding_bom_and_dominant_ending(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    await memory_backend.write("f.txt", "\ufeffa\r\nb\r\nc\n".encode(), expect=ABSENT)
    await memory_ctx.fs.read("f.txt")
    await memory_ctx.fs.write("f.txt", "a\nnew\nlines\nc\n")
    assert (await memory_backend.read("f.txt")).data == "\ufeffa\r\nnew\r\nlines\r\nc\n".encode()


async def test_new_files_are_utf8_with_the_line_endings_given(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    await memory_ctx.fs.write("new.txt", "héllo\r\nworld\r\n")
    assert (await memory_backend.read("new.txt")).data == "héllo\r\nworld\r\n".encode()
    await memory_ctx.fs.write("mixed.txt", "a\nb\r\nc\rd")
    assert (await memory_backend.read("mixed.txt")).data == b"a\nb\r\nc\rd"
    with pytest.raises(FsError) as caught:
        await memory_ctx.fs.write("other.txt", "lost \ufffd data\n")
    assert caught.value.code is ErrorCode.ENCODING_ERROR
    with pytest.raises(FsError):
        await memory_backend.read("other.txt")


async def test_write_into_a_legacy_file_refuses_what_it_cannot_hold(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    data = f"{FRENCH}\n".encode("cp1252")
    await memory_backend.write("f.txt", data, expect=ABSENT)
    await memory_ctx.fs.read("f.txt")
    with pytest.raises(FsError) as caught:
        await memory_ctx.fs.write("f.txt", "日本\n")
    assert caught.value.code is ErrorCode.ENCODING_ERROR
    assert (await memory_backend.read("f.txt")).data == data


# -- regressions the properties found: a lone CR must never pair with a new LF ----------------


def test_empty_replacement_lines_after_a_cr_ending_do_not_fuse() -> None:
    result = edit(b"a\rb\nc", "a\nb\n", "\n\n")
    assert result == b"\r\n\nc"
    assert result.replace(b"\r\n", b"\n").replace(b"\r", b"\n") == b"\n\nc"


def test_insert_after_a_cr_line_does_not_fuse_with_its_first_break() -> None:
    change = decode_document(b"a\rb\nc\n", OPTIONS, path="f").insert(1, "\n\n")
    assert change.data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") == b"a\n\n\nb\nc\n"


def test_deleting_between_a_cr_and_an_lf_is_refused_not_fused() -> None:
    document = decode_document(b"x\r;\n", OPTIONS, path="f")
    with pytest.raises(FsError) as caught:
        document.replace(";", "", replace_all=False)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    assert "line break" in caught.value.hint


# -- short diffs in outcomes ------------------------------------------------------------------


async def test_outcomes_carry_a_short_diff_when_small(memory_ctx: Context) -> None:
    await memory_ctx.fs.write("a.py", "def f():\n    return 1\n\nx = 2\n")
    edited = await memory_ctx.fs.edit("a.py", "return 1", "return 42")
    assert edited.diff == "@@ -2,1 +2,1 @@\n-    return 1\n+    return 42"
    inserted = await memory_ctx.fs.insert("a.py", 2, "y = 3")
    assert inserted.diff == "@@ -2,0 +3,1 @@\n+y = 3"
    written = await memory_ctx.fs.write("a.py", "def f():\n    return 42\ny = 3\n\nx = 3\n")
    assert written.diff == "@@ -5,1 +5,1 @@\n-x = 2\n+x = 3"
    assert (written.first_line, written.last_line) == (5, 5)


async def test_a_short_diff_keeps_lines_that_start_like_its_headers(memory_ctx: Context) -> None:
    await memory_ctx.fs.write("q.sql", "select 1;\n-- old note\n++ counter\n")
    edited = await memory_ctx.fs.edit("q.sql", "-- old note\n++ counter", "-- new note")
    assert edited.diff == "@@ -2,2 +2,1 @@\n--- old note\n-++ counter\n+-- new note"


async def test_large_changes_have_no_diff(memory_ctx: Context) -> None:
    await memory_ctx.fs.write("big.txt", "".join(f"line {n}\n" for n in range(100)))
    edited = await memory_ctx.fs.edit("big.txt", "line", "LINE", replace_all=True)
    assert edited.replacements == 100
    assert edited.diff is None


def test_invalid_bytes_on_both_sides_of_a_change_do_not_join_into_a_character() -> None:
    data = "; valid: café, été, naïve\n".encode().replace(
        b";", b"\xdf;\x80", 1
    )  # 0xDF 0x80: U+07C0
    with pytest.raises(FsError) as refused:
        edit(data, ";", "")
    assert refused.value.code is ErrorCode.ENCODING_ERROR
    assert edit(data, "valid", "fine") == data.replace(b"valid", b"fine")


@pytest.mark.parametrize("old", ["1", "12\n", "  7\t"])
def test_a_bare_number_is_text_not_an_empty_numbered_line(old: str) -> None:
    # read's prefix would leave nothing: the old_string is the number itself, which the file
    # lacks (an empty text would match everywhere: this once looped, filling the memory)
    with pytest.raises(FsError) as caught:
        edit(b"two\nthree\n", old, "x")
    assert caught.value.code is ErrorCode.NO_MATCH


@pytest.mark.parametrize(
    ("data", "content", "written"),
    [
        (b"a\rb\n", "a\n\nb\n", b"a\r\r\nb\n"),  # a new empty line after a lone \r
        (
            "ééé\rb\n\udcff".encode(errors="surrogateescape"),
            "ééé\n\nb\n\ufffd",
            "ééé\r\r\nb\n\udcff".encode(errors="surrogateescape"),
        ),  # (invalid bytes: line by line)
        (b"a\rb\n", "a\nc\n", b"a\rc\n"),
    ],
)
def test_a_rewrite_never_fuses_a_kept_lone_cr_with_a_new_line_feed(
    data: bytes, content: str, written: bytes
) -> None:
    change = decode_document(data, OPTIONS, path="f").rewrite(content)
    assert change.data == written


def test_an_edit_whose_text_an_earlier_edit_changed_says_so() -> None:
    document = decode_document(b"def foo(a):\r\n    return a\r\n", OPTIONS, path="f")
    edits = [
        Replacement(old_string="def foo(a):", new_string="def foo(a, b):"),
        Replacement(old_string="def foo(a):\n    return a", new_string="..."),
    ]
    with pytest.raises(NoMatch) as refused:
        replace_in_turn(document, edits, OPTIONS)
    assert "an earlier edit of this call changed it" in refused.value.message
    assert refused.value.details == {"edit": 1, "changed_by_an_earlier_edit": True}
    missing = [edits[0], Replacement(old_string="nowhere", new_string="x")]
    with pytest.raises(NoMatch) as absent:
        replace_in_turn(document, missing, OPTIONS)
    assert "earlier edit" not in absent.value.message


def test_edits_in_turn_change_a_file_with_invalid_bytes_and_show_them_in_the_diff() -> None:
    data = "héllo wörld\n".encode() * 3 + b"bad \xff byte\nalpha\nbeta\n"
    document = decode_document(data, OPTIONS, path="f")
    edits = [
        Replacement(old_string="alpha", new_string="A"),
        Replacement(old_string="byte\nA", new_string="byte\nAA"),
    ]
    change = replace_in_turn(document, edits, OPTIONS)
    assert change.data == data.replace(b"alpha", b"AA")
    assert (change.first_line, change.last_line) == (5, 5)
    assert change.diff == "@@ -5,1 +5,1 @@\n-alpha\n+AA"


@pytest.mark.parametrize(
    ("data", "spans", "written"),
    [
        (b"a\nb", [(1, 2, [])], b"a"),
        (b"a\r\nb\r\nc", [(1, 3, [])], b"a"),
        (b"a\nb", [(0, 1, ["x"]), (1, 2, [])], b"x"),
        (b"a\nb\n", [(1, 2, [])], b"a\n"),
    ],
)
def test_removing_the_last_lines_of_a_file_without_a_final_break_adds_none(
    data: bytes, spans: list[tuple[int, int, list[str]]], written: bytes
) -> None:
    assert decode_document(data, OPTIONS, path="f").replace_lines(spans).data == written
