from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import aclosing

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxfs.core import ABSENT, BinaryFile, Context, EncodingError, InvalidArgument, MemoryBackend
from ctxfs.core.text import (
    TextOptions,
    Window,
    detect_encoding,
    format_line_number,
    iter_lines,
    number_lines,
    read_window,
    truncation_marker,
)
from ctxfs.core.versions import content_version
from tests.conftest import examples
from tests.core.text.reference import reference_lines, stream_of

pytestmark = pytest.mark.anyio

OPTIONS = TextOptions()


async def window_of(data: bytes, *, offset: int = 1, limit: int | None = None, chunk: int = 7,
                    options: TextOptions = OPTIONS) -> Window:  # fmt: skip
    return await read_window(
        stream_of(data, chunk), offset=offset, limit=limit, options=options, path="f.txt"
    )


async def test_window_counts_and_continuation() -> None:
    data = "".join(f"line {n}\n" for n in range(1, 11)).encode()
    window = await window_of(data, offset=3, limit=4)
    assert window.text == "line 3\nline 4\nline 5\nline 6\n"
    assert (window.returned_lines, window.total_lines, window.next_offset) == (4, 10, 7)
    assert not window.complete
    last = await window_of(data, offset=7, limit=100)
    assert (last.returned_lines, last.next_offset) == (4, None)


async def test_whole_file_is_complete() -> None:
    window = await window_of(b"a\r\nb\rc\nd")
    assert window.text == "a\nb\nc\nd"
    assert (window.total_lines, window.next_offset, window.complete) == (4, None, True)


async def test_empty_file() -> None:
    window = await window_of(b"")
    assert (window.text, window.total_lines, window.returned_lines) == ("", 0, 0)
    assert window.next_offset is None
    assert window.complete


async def test_offset_past_the_end_says_so_clearly() -> None:
    window = await window_of(b"a\nb\n", offset=5)
    assert (window.text, window.returned_lines, window.total_lines) == ("", 0, 2)
    assert window.next_offset is None
    assert not window.complete


async def test_bad_offset_and_limit() -> None:
    with pytest.raises(InvalidArgument, match="offset"):
        await window_of(b"a\n", offset=0)
    with pytest.raises(InvalidArgument, match="limit"):
        await window_of(b"a\n", limit=0)


async def test_long_lines_are_cut_and_marked() -> None:
    options = TextOptions(max_line_chars=10, max_output_chars=1000)
    data = b"short\n" + b"x" * 25 + b"\nend\n"
    window = await window_of(data, options=options)
    assert window.text.splitlines()[1] == "x" * 10 + " … [line cut here; it holds 25 bytes]"
    assert window.truncated_lines == (2,)
    assert not window.complete
    assert window.total_lines == 3


async def test_a_cut_never_splits_a_character() -> None:
    options = TextOptions(max_line_chars=3, max_output_chars=1000)
    window = await window_of(("é" * 40 + "\n").encode(), options=options, chunk=5)
    assert window.text.startswith("ééé …")


@pytest.mark.parametrize("chunk", [5, 7, 4096])
async def test_a_long_line_cut_in_a_character_is_no_invalid_byte(chunk: int) -> None:
    # The bytes kept of a long line end anywhere: in a character of three bytes, they made
    # valid UTF-8 read as "invalid bytes shown as \ufffd" (and read twice).
    options = TextOptions(max_line_chars=10, max_output_chars=1000)
    window = await window_of(("\u20ac" * 300 + "\nend\n").encode(), options=options, chunk=chunk)
    assert window.text.startswith("\u20ac" * 10 + " …")
    assert (window.encoding, window.misread) == ("utf-8", False)
    seen_first = TextOptions(
        max_line_chars=10, max_output_chars=1000, detect_bytes=64, sniff_bytes=64
    )
    damaged = await window_of(("\u00e9\n" * 50).encode() + b"a\xffb\n", options=seen_first)
    assert (damaged.text.endswith("a\ufffdb\n"), damaged.misread) == (True, True)


async def test_output_budget_ends_the_window_with_the_exact_next_offset() -> None:
    options = TextOptions(max_line_chars=100, max_output_chars=400)
    data = "".join(f"{n:03d} " + "y" * 40 + "\n" for n in range(1, 101)).encode()
    window = await window_of(data, options=options)
    assert window.output_capped
    shown = window.returned_lines
    assert 0 < shown < 100
    assert window.next_offset == shown + 1
    assert window.text.splitlines()[-1].startswith(f"{shown:03d} ")
    cost = sum(len(line) + 1 + len(format_line_number(n)) for n, line in
               enumerate(window.text.splitlines(), start=1))  # fmt: skip
    assert cost <= 400
    following = await window_of(data, offset=window.next_offset, options=options)
    assert following.text.splitlines()[0].startswith(f"{shown + 1:03d} ")


async def test_crlf_split_between_chunks_is_one_line_break() -> None:
    for chunk in range(1, 6):
        window = await window_of(b"ab\r\ncd\r\n\r\nef", chunk=chunk)
        assert window.text == "ab\ncd\n\nef"
        assert window.total_lines == 4


async def test_a_crlf_split_between_chunks_then_an_empty_line_keeps_every_line() -> None:
    data = b"ab\r\n\ncd\r\n\n"  # a CR ending a chunk, its LF and a break starting the next
    options = TextOptions(detect_bytes=1, sniff_bytes=1)  # (the scanner's first piece: 1 byte)
    for chunk in range(1, 6):
        for offset in range(1, 5):
            window = await window_of(data, offset=offset, chunk=chunk, options=options)
            expected = ["ab\n", "\n", "cd\n", "\n"][offset - 1 :]
            assert window.text == "".join(expected), (chunk, offset)
            assert window.total_lines == 4


async def test_utf16_with_bom_streams_in_any_chunking() -> None:
    data = "héllo\r\nwörld\r\n".encode("utf-16")
    for chunk in (1, 2, 3, 1024):
        window = await window_of(data, chunk=chunk)
        assert window.text == "héllo\nwörld\n"
        assert window.encoding == "utf-16-le with BOM"


async def test_binary_and_unknown_encodings_are_refused() -> None:
    with pytest.raises(BinaryFile):
        await window_of(b"PK\x03\x04\x00\x00binary")
    with pytest.raises(EncodingError):
        await window_of(bytes(range(0x80, 0x100)) * 4)


async def test_invalid_bytes_show_as_replacement_characters() -> None:
    window = await window_of("ok é ü\nbad \x99 byte\n".encode().replace(b"\xc2\x99", b"\x99"))
    assert window.text == "ok é ü\nbad \ufffd byte\n"


CONTROLS = "".join(map(chr, [*range(0x09), *range(0x0A, 0x20), 0x7F]))  # \t is text
lines_strategy = st.lists(
    st.tuples(
        st.text(alphabet=st.characters(codec="utf-8", exclude_characters=CONTROLS), max_size=12),
        st.sampled_from(["\n", "\r\n", "\r"]),
    ),
    max_size=30,
)  # fmt: skip


@settings(max_examples=examples(500), deadline=None)
@given(
    lines=lines_strategy,
    final_break=st.booleans(),
    offset=st.integers(1, 35),
    limit=st.integers(1, 35),
    chunk=st.integers(1, 40),
    encoding=st.sampled_from(["utf-8", "utf-8-sig", "utf-16"]),
    cap=st.integers(1, 15),
    room=st.integers(100, 260),
)
def test_window_matches_the_obvious_reference(
    lines: list[tuple[str, str]], final_break: bool, offset: int, limit: int, chunk: int,
    encoding: str, cap: int, room: int,
) -> None:  # fmt: skip
    text = "".join(content + ending for content, ending in lines)
    if lines and not final_break:
        text = text[: -len(lines[-1][1])]
    data = text.encode(encoding)
    if encoding == "utf-8" and b"\x00" in data:
        return  # a NUL makes UTF-8 content binary, by design
    head = max(chunk, 4)  # (the first piece the scanner gets is the head read to detect)
    options = TextOptions(
        max_line_chars=cap, max_output_chars=cap + room, detect_bytes=head, sniff_bytes=head
    )
    window = anyio.run(
        lambda: window_of(data, offset=offset, limit=limit, chunk=chunk, options=options)
    )
    expected = reference_lines(text)
    shown: list[str] = []
    truncated: list[int] = []
    budget, capped = cap + room, False
    for number, (content, ended) in enumerate(expected[offset - 1 : offset - 1 + limit], offset):
        shown_content = content
        if len(content) > cap:
            size, unit = (
                (len(content), "characters")
                if encoding == "utf-16"
                else (len(content.encode()), "bytes")
            )
            shown_content = content[:cap] + truncation_marker(size, unit)
            truncated.append(number)
        line = shown_content + ("\n" if ended else "")
        cost = len(line) + len(format_line_number(number))
        if cost > budget and shown:
            truncated = [n for n in truncated if n != number]
            capped = True
            break
        budget -= cost
        shown.append(line)
    assert window.text == "".join(shown)
    assert window.total_lines == len(expected)
    assert window.returned_lines == len(shown)
    assert window.truncated_lines == tuple(truncated)
    assert window.output_capped == capped
    end = offset - 1 + len(shown)
    assert window.next_offset == (end + 1 if shown and end < len(expected) else None)


async def test_ctx_fs_read_streams_and_reports_the_version(
    memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    data = "".join(f"{n}\n" for n in range(5000)).encode()
    version = await memory_backend.write("big.txt", data, expect=ABSENT)
    outcome = await memory_ctx.fs.read("big.txt", offset=4000, limit=2)
    assert outcome.text == "3999\n4000\n"
    assert (outcome.total_lines, outcome.next_offset, outcome.partial) == (5000, 4002, True)
    assert outcome.version == version == content_version(data)
    assert outcome.encoding == "utf-8"


@settings(max_examples=examples(300), deadline=None)
@given(
    lines=lines_strategy,
    final_break=st.booleans(),
    chunk=st.integers(1, 40),
    encoding=st.sampled_from(["utf-8", "utf-16"]),
    cap=st.one_of(st.integers(1, 20), st.none()),
)
def test_iter_lines_matches_the_reference(
    lines: list[tuple[str, str]], final_break: bool, chunk: int, encoding: str, cap: int | None
) -> None:
    text = "".join(content + ending for content, ending in lines)
    if lines and not final_break:
        text = text[: -len(lines[-1][1])]
    data = text.encode(encoding)

    async def collect() -> list[tuple[int, str]]:
        stream = stream_of(data, chunk)
        return [
            item async for item in iter_lines(stream, options=OPTIONS, path="f", max_line_chars=cap)
        ]

    expected = [(n, content[:cap]) for n, (content, _) in enumerate(reference_lines(text), 1)]
    assert anyio.run(collect) == expected


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r")), max_size=20),
       st.integers(min_value=1, max_value=10**6))  # fmt: skip
def test_number_lines_uses_the_one_line_number_format(lines: list[str], first: int) -> None:
    text = "".join(f"{line}\n" for line in lines)
    expected = "".join(format_line_number(n) + line + "\n" for n, line in enumerate(lines, first))
    assert number_lines(text, first) == expected


@settings(max_examples=examples(300))
@given(
    text=st.text(alphabet="ab é✓\n\r\t", max_size=300),
    limit=st.integers(1, 12),
    cap=st.integers(1, 12),
    room=st.integers(0, 60),
    encoding=st.sampled_from(["utf-8", "cp1252"]),
)
def test_a_whole_file_shown_whole_reads_as_the_scanner_reads_it(
    text: str, limit: int, cap: int, room: int, encoding: str
) -> None:
    # The shortcut for a file shown whole answers exactly as the scanner does, or stands aside.
    from ctxfs.core.text import window  # noqa: PLC0415
    from ctxfs.core.text.encodings import TextEncoding  # noqa: PLC0415
    from ctxfs.core.text.lines import BYTE_ENDINGS  # noqa: PLC0415

    try:
        data = text.encode(encoding)
    except UnicodeEncodeError:
        return
    options = TextOptions(max_line_chars=cap, max_output_chars=cap + 100 + room)
    chosen = TextEncoding(codec=encoding)
    quick = window._whole_window(data, chosen, limit, options)
    scanner = window._Scanner(BYTE_ENDINGS, chosen, 1, limit, options, unit="bytes")
    scanner.feed(data)
    if quick is not None:
        assert quick == scanner.finish()


def test_the_shortcut_is_taken_for_a_plain_whole_file() -> None:
    from ctxfs.core.text import window  # noqa: PLC0415
    from ctxfs.core.text.encodings import UTF8  # noqa: PLC0415

    data = "".join(f"line {n} ✓\n" for n in range(50)).encode()
    quick = window._whole_window(data, UTF8, 2000, OPTIONS)
    assert quick is not None
    assert (quick.text, quick.total_lines, quick.next_offset) == (data.decode(), 50, None)
    for stands_aside in (b"a\r\nb\n", b"x" * 3000 + b"\n", b""):
        assert window._whole_window(stands_aside, UTF8, 2000, OPTIONS) is None
    assert window._whole_window(data, UTF8, 49, OPTIONS) is None  # more lines than the limit


@pytest.mark.parametrize("first", [1, 4090, 4095, 4096, 123_456])
def test_numbers_made_once_and_numbers_made_per_call_join_seamlessly(first: int) -> None:
    text = "".join(f"line {n}\n" for n in range(10))
    expected = "".join(f"{first + n} line {n}\n" for n in range(10))
    assert number_lines(text, first) == expected
    assert number_lines("", first) == ""


async def test_a_version_told_by_its_bytes_is_detected_once(
    monkeypatch: pytest.MonkeyPatch, memory_backend: MemoryBackend, memory_ctx: Context
) -> None:
    from ctxfs.core.text import window  # noqa: PLC0415

    calls: list[bytes] = []

    def counted(data: bytes, *args: object, **kwargs: object) -> object:
        calls.append(data)
        return detect_encoding(data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(window, "detect_encoding", counted)
    await memory_backend.write("u.txt", "naïve\n".encode(), expect=ABSENT)
    for _ in range(3):
        assert (await memory_ctx.fs.read("u.txt")).text == "naïve\n"
    assert len(calls) == 1
    await memory_ctx.fs.write("u.txt", "naïve café\n")  # a new version: detected again
    assert (await memory_ctx.fs.read("u.txt")).text == "naïve café\n"
    await memory_ctx.fs.read("u.txt")
    assert len(calls) <= 2  # the write records its version's encoding, or the read does
    await memory_backend.write("l.txt", "Café crème, déjà vu\n".encode("cp1252"), expect=ABSENT)
    for _ in range(2):  # a legacy encoding is never taken from the record: options may differ
        with pytest.raises(EncodingError):
            await memory_ctx.fs.read("l.txt")
    assert calls[-2:] == [calls[-1]] * 2


async def test_iter_lines_stopped_early_closes_what_it_decodes_from() -> None:
    # A grep stops at its first failure; the generator decoding the stream must close with it
    # (left to the garbage collector, it raises an unraisable ResourceWarning here).
    lines = iter_lines(stream_of(b"one\ntwo\nthree\n", 4), options=OPTIONS, path="f",
                       max_line_chars=10)  # fmt: skip
    async with aclosing(lines):
        async for number, line in lines:
            assert (number, line) == (1, "one")
            break
    gc.collect()


async def test_bytes_utf16_refuses_past_the_sample_are_an_encoding_error() -> None:
    # Detection looks at the first MiB; a lone surrogate after it cannot be decoded.
    data = (
        "\ufefftext line\n".encode("utf-16-le") * 100_000 + b"\x00\xdc" + "x\n".encode("utf-16-le")
    )
    assert len(data) > OPTIONS.detect_bytes
    for collect in (
        lambda: read_window(
            stream_of(data, 1 << 16), offset=1, limit=10**9, options=OPTIONS, path="f"
        ),
        lambda: _drain(
            iter_lines(stream_of(data, 1 << 16), options=OPTIONS, path="f", max_line_chars=None)
        ),
    ):
        with pytest.raises(EncodingError) as caught:
            await collect()
        assert "is not valid utf-16" in caught.value.message


async def _drain(lines: AsyncIterator[tuple[int, str]]) -> None:
    async for _ in lines:
        pass
