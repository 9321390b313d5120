"""ctxfs.tools.notebooks: a notebook rendered for a model, and one cell edited in place."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfs.core import ErrorCode, FsError, InvalidArgument, NoChange
from ctxfs.tools.notebooks import (
    CellEdit,
    CellType,
    EditMode,
    NotANotebook,
    edit_notebook,
    render_notebook,
)
from ctxfs.tools.notebooks.jsontext import array_elements, object_members, skip_space
from tests.conftest import examples

ESCAPED = re.compile(r"(?<!\\)(?:\\\\)*\\u(?!00[0-7])[0-9a-fA-F]{4}")
"""A ``\\u`` escape of a character beyond ASCII, in JSON text."""
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF"


def code(
    cell_id: str | None, source: Any, *outputs: dict[str, Any], count: int | None = 1
) -> dict[str, Any]:
    cell: dict[str, Any] = {
        "cell_type": "code",
        "execution_count": count,
        "metadata": {},
        "outputs": list(outputs),
        "source": source,
    }
    if cell_id is not None:
        cell["id"] = cell_id
    return cell


def markdown(cell_id: str | None, source: Any) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": "markdown", "metadata": {}, "source": source}
    if cell_id is not None:
        cell["id"] = cell_id
    return cell


def notebook(*cells: dict[str, Any], minor: int = 5) -> dict[str, Any]:
    return {
        "cells": list(cells),
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": minor,
    }


@dataclass(frozen=True)
class Style:
    """A way to write a notebook: json.dumps's options, then the file's line ending and BOM."""

    indent: int | str | None = 1
    sort_keys: bool = True
    ensure_ascii: bool = False
    crlf: bool = False
    bom: bool = False
    separators: tuple[str, str] | None = None

    def dumps(self, content: dict[str, Any]) -> bytes:
        text = (
            json.dumps(
                content,
                indent=self.indent,
                sort_keys=self.sort_keys,
                ensure_ascii=self.ensure_ascii,
                separators=self.separators,
            )
            + "\n"
        )
        if self.crlf:
            text = text.replace("\n", "\r\n")
        return ("\ufeff" if self.bom else "").encode() + text.encode()


NBFORMAT = Style()
STYLES = [
    NBFORMAT,
    Style(indent=2),
    Style(indent=4, sort_keys=False),
    Style(indent="\t", sort_keys=False),
    Style(ensure_ascii=True),
    Style(indent=2, ensure_ascii=True, sort_keys=False),
    Style(crlf=True),
    Style(indent=4, crlf=True, bom=True, sort_keys=False),
    Style(indent=None, sort_keys=False),
    Style(indent=None, separators=(",", ":")),
]

SAMPLE = notebook(
    markdown("intro", ["# Überschrift\n", "naïve café — 日本語 ✓\n", '"quotes" and \\backslash']),
    code("load", ["import numpy as np\n", "x = np.arange(3)"], count=1),
    code("plot", "plt.plot(x)\n", count=2),
    markdown("end", []),
)


def cell_spans(data: bytes) -> tuple[str, list[tuple[int, int]]]:
    """The text of a notebook file (BOM and all) and each cell's character span in it."""
    text = data.decode("utf-8")
    start = skip_space(text, 1 if text.startswith("\ufeff") else 0)
    members, _ = object_members(text, start)
    (cells,) = [member for member in members if member.key == "cells"]
    elements, _ = array_elements(text, cells.value.start)
    return text, [(span.start, span.end) for span in elements]


def edit(
    data: bytes, mode: str, cell_id: str | None = None, source: str = "", kind: str | None = None
) -> bytes:
    made = edit_notebook(
        data,
        CellEdit(
            mode=EditMode(mode),
            cell_id=cell_id,
            source=source,
            cell_type=None if kind is None else CellType(kind),
        ),
        make_id=lambda taken: "0a1b2c3d",
    )
    return made.data


# -- the scanner -------------------------------------------------------------------------


@pytest.mark.parametrize("style", STYLES, ids=repr)
def test_the_spans_found_are_the_cells(style: Style) -> None:
    text, spans = cell_spans(style.dumps(SAMPLE))
    assert [json.loads(text[start:end]) for start, end in spans] == SAMPLE["cells"]


# -- edits: what changes, and every other byte --------------------------------------------


@pytest.mark.parametrize("style", STYLES, ids=repr)
def test_a_replaced_source_changes_only_that_value(style: Style) -> None:
    data = style.dumps(SAMPLE)
    text, spans = cell_spans(data)
    new = edit(data, "replace", "load", "import pandas as pd\nprint('ü')\n")
    expected = json.loads(json.dumps(SAMPLE))
    expected["cells"][1]["source"] = ["import pandas as pd\n", "print('ü')\n"]
    new_text = new.decode()
    assert json.loads(new_text.removeprefix("\ufeff")) == expected
    start, end = spans[1]
    assert new_text.startswith(text[:start])
    assert new_text.endswith(text[end:])
    if style.separators is None:  # a layout json.dumps writes on its own: the same bytes
        assert new == style.dumps(expected)


@pytest.mark.parametrize("style", STYLES, ids=repr)
@pytest.mark.parametrize(("after", "index"), [(None, 0), ("load", 2), ("end", 4)])
def test_an_inserted_cell_takes_the_layout_of_the_file(
    style: Style, after: str | None, index: int
) -> None:
    data = style.dumps(SAMPLE)
    text, spans = cell_spans(data)
    new = edit(data, "insert", after, "def f():\n    return 'é'\n", "code")
    expected = json.loads(json.dumps(SAMPLE))
    cell = code("0a1b2c3d", ["def f():\n", "    return 'é'\n"], count=None)
    if not style.sort_keys:  # a new cell's keys come in the order of its neighbours'
        cell = {key: cell[key] for key in SAMPLE["cells"][max(index - 1, 0)] if key in cell} | cell
    expected["cells"].insert(index, cell)
    new_text = new.decode()
    assert json.loads(new_text.removeprefix("\ufeff")) == expected
    at = spans[index - 1][1] if index else spans[0][0]
    assert new_text.startswith(text[:at])
    assert new_text.endswith(text[at:])
    if style.separators is None:
        assert new == style.dumps(expected)


@pytest.mark.parametrize("style", STYLES, ids=repr)
@pytest.mark.parametrize("index", [0, 1, 3])
def test_a_deleted_cell_leaves_the_others_as_they_were(style: Style, index: int) -> None:
    data = style.dumps(SAMPLE)
    text, spans = cell_spans(data)
    cell_id = SAMPLE["cells"][index]["id"]
    new_text = edit(data, "delete", cell_id).decode()
    expected = json.loads(json.dumps(SAMPLE))
    del expected["cells"][index]
    assert json.loads(new_text.removeprefix("\ufeff")) == expected
    assert new_text.startswith(text[: spans[index - 1][1] if index else spans[0][0]])
    assert new_text.endswith(text[spans[index + 1][0] if index < 3 else spans[3][1] :])
    if style.separators is None:
        assert new_text.encode() == style.dumps(expected)


@pytest.mark.parametrize("style", STYLES, ids=repr)
def test_the_last_cell_deleted_and_one_inserted_into_none(style: Style) -> None:
    one = notebook(markdown("only", "alone"))
    emptied = edit(style.dumps(one), "delete", "only")
    assert emptied == style.dumps(notebook())
    again = edit(emptied, "insert", None, "back", "markdown")
    restored = notebook(markdown("0a1b2c3d", ["back"]))
    assert json.loads(again.decode().removeprefix("\ufeff")) == restored
    if style.separators is None:  # keys as nbformat sorts them: no neighbour to follow
        assert again == replace(style, sort_keys=True).dumps(restored)


def test_a_change_of_type_drops_or_starts_the_outputs_of_code() -> None:
    data = NBFORMAT.dumps(SAMPLE)
    to_markdown = json.loads(edit(data, "replace", "load", "# now prose", "markdown"))
    assert to_markdown["cells"][1] == markdown("load", ["# now prose"])
    to_code = json.loads(edit(data, "replace", "intro", "x = 1", "code"))
    assert to_code["cells"][0] == code("intro", ["x = 1"], count=None)
    assert edit(data, "replace", "intro", "x = 1", "code") == NBFORMAT.dumps(to_code)


def test_a_replaced_code_cell_keeps_its_outputs() -> None:
    stream = {"name": "stdout", "output_type": "stream", "text": ["0 1 2\n"]}
    data = NBFORMAT.dumps(notebook(code("c", "print(x)", stream, count=7)))
    made = edit_notebook(data, CellEdit(cell_id="c", source="print(x + 1)"))
    assert (made.kept_outputs, made.cell_type, made.previous_type) == (1, "code", "code")
    cell = json.loads(made.data)["cells"][0]
    assert (cell["outputs"], cell["execution_count"], cell["source"]) == (
        [stream],
        7,
        "print(x + 1)",
    )


def test_a_cell_the_file_left_untyped_is_replaced_only_with_a_type() -> None:
    untyped = markdown("m", "# Title")
    del untyped["cell_type"]
    data = NBFORMAT.dumps(notebook(untyped))
    with pytest.raises(InvalidArgument, match="cell m has no cell_type") as caught:
        edit_notebook(data, CellEdit(cell_id="m", source="fixed"))
    assert caught.value.details == {"field": "cell_type"}
    typed = edit_notebook(data, CellEdit(cell_id="m", source="fixed", cell_type=CellType.MARKDOWN))
    assert json.loads(typed.data)["cells"][0]["cell_type"] == "markdown"


def test_a_notebook_without_ids_names_cells_by_index() -> None:
    old = notebook(markdown(None, "a"), code(None, "b"), minor=4)
    data = NBFORMAT.dumps(old)
    rendered = render_notebook(data)
    assert '<cell id="cell-0" type="markdown">' in rendered.text
    assert '<cell id="cell-1" type="code" execution_count="1">' in rendered.text
    inserted = edit_notebook(
        data, CellEdit(mode=EditMode.INSERT, cell_id="cell-0", source="c", cell_type=CellType.RAW)
    )
    assert (inserted.cell_id, inserted.index, inserted.ids) == ("cell-1", 1, False)
    cells = json.loads(inserted.data)["cells"]
    assert cells[1] == {
        "cell_type": "raw",
        "metadata": {},
        "source": "c",
    }  # no id; a string, as theirs
    replaced = json.loads(edit(inserted.data, "replace", "cell-2", "B"))
    assert replaced["cells"][2]["source"] == "B"


def test_new_ids_are_eight_hex_digits_and_new() -> None:
    data = NBFORMAT.dumps(SAMPLE)
    made = edit_notebook(data, CellEdit(mode=EditMode.INSERT, source="x", cell_type=CellType.CODE))
    assert len(made.cell_id) == 8
    int(made.cell_id, 16)
    assert made.cell_id not in {"intro", "load", "plot", "end"}


def test_an_id_names_its_cell_even_when_it_looks_like_an_index() -> None:
    data = NBFORMAT.dumps(notebook(markdown("first", "a"), markdown("cell-0", "b")))
    assert json.loads(edit(data, "delete", "cell-0"))["cells"] == [markdown("first", "a")]


@pytest.mark.parametrize(
    ("cell_edit", "field"),
    [(CellEdit(cell_id="nope", source="x"), "cell_id"),
     (CellEdit(cell_id="cell-9", source="x"), "cell_id"),
     (CellEdit(cell_id=None, source="x"), "cell_id"),
     (CellEdit(mode=EditMode.DELETE), "cell_id"),
     (CellEdit(mode=EditMode.INSERT, cell_id="load", source="x"), "cell_type")],
)  # fmt: skip
def test_a_wrong_cell_or_a_missing_type_is_a_clear_error(cell_edit: CellEdit, field: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        edit_notebook(NBFORMAT.dumps(SAMPLE), cell_edit, path="nb.ipynb")
    assert caught.value.details["field"] == field
    if field == "cell_id" and cell_edit.cell_id:
        assert caught.value.details["known_ids"] == ["intro", "load", "plot", "end"]
        assert "intro, load, plot, end" in caught.value.hint


def test_the_same_source_again_is_no_change() -> None:
    with pytest.raises(NoChange):
        edit_notebook(NBFORMAT.dumps(SAMPLE), CellEdit(cell_id="plot", source="plt.plot(x)\n"))


@pytest.mark.parametrize(
    ("data", "reason"),
    [(b'{"cells": [', "json"), (b"\xff\xfe{}", "encoding"), (b"[1, 2]", "format"),
     (b'{"cells": [], "nbformat": 5}', "format"),
     (b'{"worksheets": [], "nbformat": 3}', "format"),
     (b'{"cells": [1], "nbformat": 4}', "format")],
)  # fmt: skip
def test_what_is_not_a_notebook_is_refused(data: bytes, reason: str) -> None:
    for attempt in (
        lambda: edit_notebook(data, CellEdit(mode=EditMode.DELETE, cell_id="x"), path="a.ipynb"),
        lambda: render_notebook(data, path="a.ipynb"),
    ):
        with pytest.raises(NotANotebook) as caught:
            attempt()
        assert caught.value.code is ErrorCode.INVALID_ARGUMENT
        assert caught.value.details["reason"] == reason
        assert caught.value.message.startswith("a.ipynb ")


# -- a random notebook under random edits ---------------------------------------------------

texts = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"]) | st.sampled_from('\n\r\t"\\'),
    max_size=30,
)
cells = st.lists(
    st.tuples(st.sampled_from(["code", "markdown", "raw"]), texts, st.booleans()), max_size=6
)
styles = st.builds(
    Style,
    indent=st.sampled_from([None, 1, 2, 4, "\t"]),
    sort_keys=st.booleans(),
    ensure_ascii=st.booleans(),
    crlf=st.booleans(),
    bom=st.booleans(),
)
edits = st.lists(
    st.tuples(st.sampled_from(["replace", "insert", "delete"]), st.integers(0, 10), texts,
              st.sampled_from([None, "code", "markdown", "raw"])),
    min_size=1, max_size=6,
)  # fmt: skip


def fixed_id(made: str, taken: set[str]) -> str:
    return made


def made_cell(kind: str, source: str, as_lines: bool, number: int) -> dict[str, Any]:
    value: Any = source.splitlines(keepends=True) if as_lines else source
    cell = code(f"c{number}", value) if kind == "code" else markdown(f"c{number}", value)
    cell["cell_type"] = kind
    return cell


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cells=cells, style=styles, edits=edits)
def test_random_edits_keep_the_json_valid_and_untouched_cells_byte_for_byte(
    cells: list[tuple[str, str, bool]], style: Style, edits: list[tuple[str, int, str, str | None]]
) -> None:
    content = notebook(*(made_cell(*cell, n) for n, cell in enumerate(cells)))
    data = style.dumps(content)
    for number, (mode, at, source, kind) in enumerate(edits):
        text, spans = cell_spans(data)
        model = content["cells"]
        ids = [cell["id"] for cell in model]
        if mode != "insert" and not model:
            continue
        index = at % max(len(model), 1)
        target = ids[index] if model else None
        cell_type = kind or "code" if mode == "insert" else kind
        try:
            made = edit_notebook(
                data,
                CellEdit(
                    mode=EditMode(mode),
                    cell_id=target if mode != "insert" or at % 3 else None,
                    source=source,
                    cell_type=None if cell_type is None else CellType(cell_type),
                ),
                make_id=partial(fixed_id, f"new{number}"),
            )
        except NoChange:
            continue
        assert not made.rewritten_whole
        new_text = made.data.decode()
        assert new_text.startswith("\ufeff") is style.bom
        if style.crlf:  # every line break of the file stays CRLF, and no other appears
            assert new_text.count("\n") == new_text.count("\r\n")
        else:
            assert "\r" not in new_text
        content = json.loads(new_text.removeprefix("\ufeff"))
        # the new cell laid out as json.dumps would: escaping as the file did, if it showed how
        body = text.removeprefix("\ufeff")
        shown = not body.isascii() or ESCAPED.search(body) is not None
        ways = [style.ensure_ascii] if shown else [True, False]
        laid_out = [replace(style, ensure_ascii=way) for way in ways]
        assert made.data in [way.dumps(content) for way in laid_out]
        style = next(way for way in laid_out if way.dumps(content) == made.data)
        touched = {made.index} if mode != "delete" else set()
        new_spans = cell_spans(made.data)[1]
        old_cells = [text[start:end] for start, end in spans]
        if mode == "insert":
            old_cells.insert(made.index, None)  # type: ignore[arg-type]
        elif mode == "delete":
            del old_cells[made.index]
        assert len(new_spans) == len(old_cells)
        for n, (start, end) in enumerate(new_spans):
            if n not in touched:
                assert new_text[start:end] == old_cells[n]
        data = made.data


# -- rendering ---------------------------------------------------------------------------------


def image_output(kind: str, **bundle: Any) -> dict[str, Any]:
    return {"data": bundle, "metadata": {}, "output_type": kind}


RICH = notebook(
    markdown("intro", ["# Title\n", "Some prose."]),
    code(
        "run",
        ["print('hi')\n", "1 / 0"],
        {"name": "stdout", "output_type": "stream", "text": ["hi\n", "10%\r50%\r100%\n"]},
        {"name": "stderr", "output_type": "stream", "text": "warning: careful\n"},
        image_output("execute_result", **{"text/plain": ["42"]}) | {"execution_count": 3},
        image_output(
            "display_data",
            **{
                "text/plain": "<Figure size 640x480>",
                "image/png": base64.encodebytes(PNG).decode(),
            },
        ),
        image_output("display_data", **{"image/jpeg": [base64.b64encode(JPEG).decode()]}),
        image_output("display_data", **{"text/html": "<b>bold</b>"}),
        {
            "ename": "ZeroDivisionError",
            "evalue": "division by zero",
            "output_type": "error",
            "traceback": [
                "\x1b[0;31m---------------------------------------------------------\x1b[0m",
                "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero",
            ],
        },
        count=3,
    ),
    {"cell_type": "raw", "id": "raw", "metadata": {}, "source": "raw text"},
)


def test_a_notebook_renders_cells_sources_and_text_outputs() -> None:
    rendered = render_notebook(NBFORMAT.dumps(RICH), path="nb.ipynb")
    assert rendered.text == (
        "(a Jupyter notebook, nbformat 4.5, python: 3 cells)\n"
        '<cell id="intro" type="markdown">\n'
        "# Title\nSome prose.\n"
        "</cell>\n"
        '<cell id="run" type="code" execution_count="3">\n'
        "print('hi')\n1 / 0\n"
        '<output type="stream" name="stdout">\nhi\n100%\n</output>\n'
        '<output type="stream" name="stderr">\nwarning: careful\n</output>\n'
        '<output type="execute_result">\n42\n</output>\n'
        '<output type="display_data">\n<Figure size 640x480>\n[image 1: image/png, attached]\n'
        "</output>\n"
        '<output type="display_data">\n[image 2: image/jpeg, attached]\n</output>\n'
        '<output type="display_data">\n(holds text/html: not shown as text)\n</output>\n'
        '<output type="error">\n'
        "---------------------------------------------------------\n"
        "ZeroDivisionError: division by zero\n"
        "</output>\n"
        "</cell>\n"
        '<cell id="raw" type="raw">\nraw text\n</cell>\n'
    )
    assert "\x1b" not in rendered.text
    assert [
        (image.number, image.media_type, image.data, image.cell_id) for image in rendered.images
    ] == [
        (1, "image/png", PNG, "run"),
        (2, "image/jpeg", JPEG, "run"),
    ]
    assert (rendered.cells, rendered.shown_cells, rendered.next_cell) == (3, 3, None)
    assert (rendered.nbformat, rendered.language) == ("4.5", "python")


def test_an_error_without_a_traceback_shows_its_name_and_value() -> None:
    error = {"ename": "ValueError", "evalue": "bad", "output_type": "error", "traceback": []}
    rendered = render_notebook(NBFORMAT.dumps(notebook(code("c", "x", error))))
    assert '<output type="error">\nValueError: bad\n</output>' in rendered.text


def test_a_long_output_keeps_its_beginning_and_its_end() -> None:
    lines = "".join(f"line {n}\n" for n in range(1000))
    stream = {"name": "stdout", "output_type": "stream", "text": lines}
    rendered = render_notebook(
        NBFORMAT.dumps(notebook(code("c", "x", stream))), max_output_chars=200
    )
    assert rendered.cut_outputs == 1
    assert "line 0\n" in rendered.text
    assert "line 999\n" in rendered.text
    assert "line 500\n" not in rendered.text
    assert f"[… {len(lines) - 200:,} characters of this output left out …]" in rendered.text


def test_the_budget_ends_the_text_between_cells_and_says_where_to_go_on() -> None:
    cells = [markdown(f"m{n}", f"cell number {n}\n" * 20) for n in range(50)]
    data = NBFORMAT.dumps(notebook(*cells))
    first = render_notebook(data, max_chars=2_000)
    assert first.next_cell is not None
    assert 0 < first.shown_cells == first.next_cell < 50
    assert len(first.text) <= 2_000 + 200
    assert first.text.endswith(
        f"({50 - first.next_cell} more cells after these: continue with "
        f"offset={first.next_cell + 1}, from cell m{first.next_cell})\n"
    )
    assert f"cells 1-{first.next_cell} shown" in first.text
    three = render_notebook(data, first_cell=4, max_cells=3, max_chars=1_000_000)
    assert (three.first_cell, three.shown_cells, three.next_cell) == (4, 3, 7)
    assert "cells 5-7 shown" in three.text
    rest = render_notebook(data, first_cell=first.next_cell, max_chars=1_000_000)
    assert rest.next_cell is None
    assert rest.first_cell + rest.shown_cells == 50
    assert f'<cell id="m{first.next_cell}" ' in rest.text
    with pytest.raises(InvalidArgument):
        render_notebook(data, first_cell=50)


def test_a_cell_larger_than_the_budget_is_shown_cut() -> None:
    data = NBFORMAT.dumps(notebook(markdown("big", "x" * 10_000), markdown("next", "y")))
    rendered = render_notebook(data, max_chars=1_000)
    assert (rendered.shown_cells, rendered.next_cell) == (1, 1)
    assert "(… the rest of this cell did not fit)" in rendered.text


def test_images_past_the_limit_are_only_mentioned_and_left_out_cells_attach_none() -> None:
    png = image_output("display_data", **{"image/png": base64.b64encode(PNG).decode()})
    data = NBFORMAT.dumps(notebook(*(code(f"c{n}", "plot()", png) for n in range(5))))
    rendered = render_notebook(data, max_images=3)
    assert [image.cell_id for image in rendered.images] == ["c0", "c1", "c2"]
    assert rendered.left_out_images == 2
    assert rendered.text.count("not attached, more than 3 images") == 2
    cut = render_notebook(data, max_chars=300)
    assert len(cut.images) == cut.shown_cells < 5  # only the images of the cells shown


def test_bad_base64_is_said_not_attached() -> None:
    bad = image_output("display_data", **{"image/png": "not base64!"})
    rendered = render_notebook(NBFORMAT.dumps(notebook(code("c", "x", bad))))
    assert rendered.images == ()
    assert "[image/png image: not valid base64]" in rendered.text


def test_an_empty_notebook_says_so() -> None:
    rendered = render_notebook(NBFORMAT.dumps(notebook(minor=4)))
    assert rendered.text == "(a Jupyter notebook, nbformat 4.4, with no cells)\n"
    assert (rendered.cells, rendered.next_cell) == (0, None)


def test_errors_of_the_module_are_fs_errors() -> None:
    with pytest.raises(FsError):
        render_notebook(b"not json")


def test_a_nan_in_an_output_and_metadata_in_its_own_order_survive_a_splice() -> None:
    result = image_output("execute_result", **{"application/json": {"x": float("nan")}})
    cell = code("c", "x", result)
    cell["metadata"] = {"zeta": 1, "alpha": 2}  # not sorted, in a file that sorts the rest
    data = NBFORMAT.dumps(notebook(cell)).replace(
        b'"alpha": 2,\n    "zeta": 1', b'"zeta": 1,\n    "alpha": 2'
    )
    assert b'"zeta": 1,\n    "alpha": 2' in data
    assert b"NaN" in data
    for made in (
        edit_notebook(data, CellEdit(cell_id="c", source="y")),
        edit_notebook(data, CellEdit(cell_id="c", source="y", cell_type=CellType.RAW)),
        edit_notebook(
            data, CellEdit(mode=EditMode.INSERT, cell_id="c", source="z", cell_type=CellType.CODE)
        ),
    ):
        assert not made.rewritten_whole
        assert b'"zeta": 1,\n    "alpha": 2' in made.data
    assert b"NaN" in made.data


def test_a_splice_that_does_not_read_back_is_written_whole_or_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ctxfs.tools.notebooks import cells  # noqa: PLC0415

    style = Style(indent=2, sort_keys=False, crlf=True)
    data = style.dumps(SAMPLE)
    monkeypatch.setattr(cells._Where, "replaced", lambda self, index, cell: self.text[:-9])
    made = edit_notebook(data, CellEdit(cell_id="end", source="fin"))
    assert made.rewritten_whole
    expected = json.loads(json.dumps(SAMPLE))
    expected["cells"][3]["source"] = ["fin"]
    assert made.data == style.dumps(expected)  # the layout kept, though not by a splice
    monkeypatch.setattr(cells._Where, "whole", lambda self, content: "{}")
    with pytest.raises(FsError) as caught:
        edit_notebook(data, CellEdit(cell_id="end", source="fin"))
    assert caught.value.code is ErrorCode.BACKEND_ERROR
    assert "nothing was changed" in caught.value.message


@pytest.mark.parametrize("style", [NBFORMAT, Style(ensure_ascii=True)], ids=["utf8", "ascii"])
@pytest.mark.parametrize("mode", [EditMode.REPLACE, EditMode.INSERT])
def test_an_unpaired_surrogate_is_refused(style: Style, mode: EditMode) -> None:
    # (a notebook written ASCII-only would hold it escaped: valid JSON, no Unicode)
    edit = CellEdit(mode=mode, cell_id="end", source="bad \ud800", cell_type=CellType.CODE)
    with pytest.raises(FsError) as caught:
        edit_notebook(style.dumps(SAMPLE), edit)
    assert caught.value.code is ErrorCode.ENCODING_ERROR
