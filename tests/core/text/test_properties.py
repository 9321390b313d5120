"""Property tests: no byte outside an edited span ever changes, and edits are literal."""

from __future__ import annotations

import re

import anyio
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ctxfs.core import ABSENT, Fs, FsError, MemoryBackend
from ctxfs.core.text import AnyDocument, TextOptions, decode_document
from ctxfs.core.text.rewrite import rewrite_by_lines
from tests.conftest import examples
from tests.core.text.reference import reference_lines

OPTIONS = TextOptions()
LINE_BREAK_SPLIT = re.compile(r"(\r\n|\r|\n)")
RUN = st.text(alphabet=st.sampled_from("abcxyz  \t=;{}()'\"é日本語Ωß€😀"), min_size=0, max_size=8)
ENDING = st.sampled_from(["\n", "\r\n", "\r"])
INVALID = st.binary(min_size=1, max_size=3).map(lambda b: bytes(0x80 | (x & 0x7F) for x in b))


@st.composite
def text_files(draw: st.DrawFn) -> bytes:
    """A file: runs of text, line endings of every kind, maybe invalid bytes, a BOM, no final
    line break, in UTF-8, UTF-8 with BOM, UTF-16 or cp1252."""
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "cp1252"]))
    parts: list[bytes] = []
    for _ in range(draw(st.integers(0, 12))):
        run = draw(RUN)
        if encoding == "cp1252":
            run = run.encode("cp1252", "ignore").decode("cp1252")
        parts.append(run.encode(encoding).removeprefix(b"\xef\xbb\xbf").removeprefix(b"\xff\xfe"))
        if encoding == "utf-8" and draw(st.integers(0, 9)) == 0:
            parts.append(draw(INVALID))
        if draw(st.booleans()):
            ending = draw(ENDING).encode(encoding)
            parts.append(ending.removeprefix(b"\xef\xbb\xbf").removeprefix(b"\xff\xfe"))
    bom = {"utf-8-sig": b"\xef\xbb\xbf", "utf-16": b"\xff\xfe"}.get(encoding, b"")
    return bom + b"".join(parts)


def document_of(data: bytes) -> AnyDocument:
    try:
        return decode_document(data, OPTIONS, path="f")
    except FsError:
        assume(False)
        raise


def fold(value: str) -> str:
    return value.replace("\r\n", "\n").replace("\r", "\n")


def decoded_as(document: AnyDocument, data: bytes) -> str:
    """Decode new file bytes the way *document* was decoded (a BOM must still lead)."""
    encoding = document.encoding
    assert data.startswith(encoding.bom)
    return data[len(encoding.bom) :].decode(encoding.codec, encoding.errors)


def split_by_gaps(text: str, gaps: list[str], replacement: str) -> bool:
    """Whether text is gaps[0] R gaps[1] R ... gaps[-1], each R folding to *replacement*."""

    def walk(position: int, index: int) -> bool:
        if not text.startswith(gaps[index], position):
            return False
        position += len(gaps[index])
        if index == len(gaps) - 1:
            return position == len(text)
        for extra in range(replacement.count("\n") + 1):
            piece = text[position : position + len(replacement) + extra]
            if fold(piece) == replacement and walk(position + len(piece), index + 1):
                return True
        return False

    return walk(0, 0)


def raw_spans(raw: str, logical_starts: list[int], length: int) -> list[tuple[int, int]]:
    """Map logical spans to raw spans by walking the raw text (\\r\\n is one logical unit)."""
    to_raw, position = [], 0
    while position < len(raw):
        to_raw.append(position)
        position += 2 if raw.startswith("\r\n", position) else 1
    to_raw.append(len(raw))
    return [(to_raw[start], to_raw[start + length]) for start in logical_starts]


@settings(max_examples=examples(400), deadline=None)
@given(data=text_files(), pick=st.data(), new=RUN | st.builds("\n".join, st.lists(RUN, max_size=3)))
def test_edit_changes_only_its_spans_and_is_the_literal_replacement(
    data: bytes, pick: st.DataObject, new: str
) -> None:
    document = document_of(data)
    logical = document.logical_text
    assume(logical)
    start = pick.draw(st.integers(0, len(logical) - 1))
    end = pick.draw(st.integers(start + 1, min(len(logical), start + 12)))
    old = logical[start:end]
    assume(not any("\ud800" <= char <= "\udfff" for char in old))
    assume(old != fold(new))
    count = logical.count(old)
    try:
        change = document.replace(old, new, replace_all=count > 1)
    except FsError as error:
        assume(error.code.value == "encoding_error")  # new holds what the encoding cannot
        return
    assert change.replacements == count

    raw = document.raw_text
    starts, position = [], logical.find(old)
    while position != -1:
        starts.append(position)
        position = logical.find(old, position + len(old))
    spans = raw_spans(raw, starts, len(old))
    bounds = [0, *(bound for span in spans for bound in span), len(raw)]
    gaps = [raw[bounds[i] : bounds[i + 1]] for i in range(0, len(bounds), 2)]

    folded_new = fold(new)
    result_raw = decoded_as(document, change.data)
    assert split_by_gaps(result_raw, gaps, folded_new), "a byte outside the spans changed"
    assert fold(result_raw) == logical.replace(old, folded_new), "not the literal replacement"


@settings(max_examples=examples(300), deadline=None)
@given(data=text_files())
def test_writing_back_what_was_read_is_byte_identical(data: bytes) -> None:
    async def scenario() -> bytes | None:
        backend = MemoryBackend()
        await backend.write("f.txt", data, expect=ABSENT)
        ctx = Fs(backend, load_entrypoints=False).context(owner="a")
        try:
            outcome = await ctx.fs.read("f.txt")
        except FsError:
            return None
        assert not outcome.partial
        await ctx.fs.write("f.txt", outcome.text)
        return (await backend.read("f.txt")).data

    written = anyio.run(scenario)
    assume(written is not None)
    assert written == data


@settings(max_examples=examples(300), deadline=None)
@given(data=text_files(), pick=st.data(), inserted=st.builds("\n".join, st.lists(RUN, max_size=3)))
def test_insert_keeps_every_other_byte(data: bytes, pick: st.DataObject, inserted: str) -> None:
    document = document_of(data)
    lines = reference_lines(document.raw_text)
    after = pick.draw(st.integers(0, len(lines)))
    try:
        change = document.insert(after, inserted)
    except FsError as error:
        assume(error.code.value == "encoding_error")
        return
    new_raw = decoded_as(document, change.data)
    new_lines = reference_lines(new_raw)
    added = inserted.removesuffix("\n").split("\n")
    if after == len(lines) and lines and not lines[-1][1] and added[-1] == "":
        added = added[:-1]  # the file keeps lacking a final break: an empty last line vanishes
    contents = [content for content, _ in lines]
    assert [content for content, _ in new_lines] == contents[:after] + added + contents[after:]
    raw = document.raw_text
    head = "".join(line[0] + line[1] for line in _raw_lines(raw)[:after])
    tail = "".join(line[0] + line[1] for line in _raw_lines(raw)[after:])
    assert new_raw.startswith(head)
    assert new_raw.endswith(tail)
    assert len(new_raw) > len(raw)


def _raw_lines(raw: str) -> list[tuple[str, str]]:
    """(content, ending) pairs with the file's own endings."""
    parts = LINE_BREAK_SPLIT.split(raw)
    pairs = [(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
    if parts[-1]:
        pairs.append((parts[-1], ""))
    return pairs


@st.composite
def rewrites(draw: st.DrawFn) -> str:
    """New lines, with endings of every kind, the last maybe without one."""
    pieces = [line + draw(ENDING) for line in draw(st.lists(RUN, max_size=10))]
    unterminated: bool = draw(st.booleans())
    if pieces and unterminated:
        pieces[-1] = pieces[-1].rstrip("\r\n")
    return "".join(pieces)


def kept_around(document: AnyDocument, new: str, keep: st.DataObject) -> str:
    """*new*, between a head and a tail of the file's lines (as many as *keep* draws)."""
    lines = fold(document.raw_text).splitlines(keepends=True)
    head = keep.draw(st.integers(0, len(lines)))
    tail = keep.draw(st.integers(0, len(lines) - head))
    return "".join(lines[:head]) + new + "".join(lines[len(lines) - tail :])


@settings(max_examples=examples(500), deadline=None)
@given(data=text_files(), new=rewrites(), keep=st.data())
def test_rewrite_in_place_is_the_line_by_line_rewrite(
    data: bytes, new: str, keep: st.DataObject
) -> None:
    # The rewrite compares whole texts, not lists of lines; it must give what comparing
    # line by line gives: the same bytes, lines and diff, for new content sharing a head and
    # a tail of lines with the file, or not.
    document = document_of(data)
    assume(not document.encoding.keeps_invalid_bytes)
    assume(document.raw)  # an empty file has no ending to follow: the content keeps its own
    content = kept_around(document, new, keep)
    try:
        expected = rewrite_by_lines(document, content)
    except FsError as refused:
        with pytest.raises(type(refused)):
            document.rewrite(content)
        return
    assert document.rewrite(content) == expected


@settings(max_examples=examples(500), deadline=None)
@given(data=text_files(), new=rewrites(), keep=st.data())
def test_a_rewrite_reads_back_as_the_content_written(
    data: bytes, new: str, keep: st.DataObject
) -> None:
    # Kept lines keep their endings and new ones take the file's: a lone \r kept next to a new
    # \n must not fuse with it into one break (a line would be lost).
    document = document_of(data)
    assume(not document.encoding.keeps_invalid_bytes)
    content = kept_around(document, new, keep)
    try:
        change = document.rewrite(content)
    except FsError:
        return
    assert fold(decoded_as(document, change.data)) == fold(content)


@st.composite
def line_spans(draw: st.DrawFn, total: int) -> list[tuple[int, int, list[str]]]:
    """Spans of lines ``[start, stop)`` in order and apart, each with its new lines."""
    bounds = sorted(draw(st.lists(st.integers(0, total), min_size=2, max_size=6)))
    pairs = list(zip(bounds[::2], bounds[1::2], strict=False))
    return [(start, stop, draw(st.lists(RUN, max_size=3))) for start, stop in pairs]


@settings(max_examples=examples(400), deadline=None)
@given(data=text_files(), pick=st.data())
def test_replacing_lines_keeps_every_line_outside_the_spans(
    data: bytes, pick: st.DataObject
) -> None:
    document = document_of(data)
    raw = document.raw_text
    lines = _raw_lines(raw)
    spans = pick.draw(line_spans(len(lines)))
    assume(spans)
    model = list(spans)
    while len(model) > 1 and model[-2][1] == model[-1][0] == len(lines):  # one change at the end
        (start, _, before), (_, stop, after) = model[-2:]
        model[-2:] = [(start, stop, before + after)]
    try:
        change = document.replace_lines(spans)
    except FsError as error:
        assume(error.code.value == "encoding_error")
        return
    new_raw = decoded_as(document, change.data)
    expected: list[str] = []
    kept: list[str] = []  # the raw text of the lines between the spans, which must survive
    added_by: list[list[str]] = []  # the new lines of each span
    previous = 0
    unterminated = bool(lines) and not lines[-1][1]
    for start, stop, new in model:
        added = new[:-1] if unterminated and stop == len(lines) and new and not new[-1] else new
        # (the file keeps lacking a final break: an empty last line vanishes)
        expected += [content for content, _ in lines[previous:start]] + added
        kept.append("".join(content + ending for content, ending in lines[previous:start]))
        added_by.append(added)
        previous = stop
    expected += [content for content, _ in lines[previous:]]
    tail = "".join(content + ending for content, ending in lines[previous:])
    last_start, last_stop, last_new = model[-1]
    ends_removed = unterminated and last_start < last_stop == len(lines) and not last_new
    if ends_removed:  # the last line before loses its break (as the file did): if empty, it goes
        for index in range(len(model) - 1, -1, -1):
            if kept[index]:
                kept[index] = kept[index][: -len(lines[model[index][0] - 1][1])]
                break
            if index and added_by[index - 1]:
                break  # (a new line's break: written anew)
        if expected and not expected[-1]:
            expected.pop()
        elif expected:
            assert not reference_lines(new_raw)[-1][1], "the file gained a final line break"
    assert [content for content, _ in reference_lines(new_raw)] == expected
    assert new_raw.startswith(kept[0])
    assert new_raw.endswith(tail)
    position = 0
    for piece in kept:
        found = new_raw.find(piece, position)
        assert found != -1, "a line outside the spans changed"
        position = found + len(piece)
