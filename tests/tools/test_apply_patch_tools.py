"""apply_patch (the Codex patch) and the Responses API's apply_patch, through FsToolset."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxfs.core import Context, NotFound
from ctxfs.tools import FsToolset, PatchData, answer_patch_call
from tests.tools.conftest import Seed
from tests.tools.test_providers import fake_api, openai_client, responses_turn

pytestmark = pytest.mark.anyio

PATCH = """*** Begin Patch
*** Add File: docs/new.md
+# New
*** Update File: src/app.py
*** Move to: src/main.py
@@ def main():
-    print("hi")
+    print("hello")
*** Update File: src/util.py
@@
 def helper():
-    return 1
+    return 2
*** Delete File: old.txt
*** End Patch
"""

FILES = {
    "src/app.py": b'import os\r\n\r\ndef main():\r\n    print("hi")\r\n    return 0\r\n',
    "src/util.py": "# 設定ファイルを読み込みます\ndef helper():\n    return 1\n".encode(
        "shift_jis"
    ),
    "old.txt": b"obsolete\n",
}


async def stored(ctx: Context, path: str) -> bytes | None:
    try:
        return (await ctx.opened_fs.backend.read(path)).data
    except NotFound:
        return None


async def seeded(tools: FsToolset, ctx: Context, seed: Seed) -> None:
    for path, data in FILES.items():
        await seed(path, data)
        assert not (await tools.execute(ctx, "read", {"file_path": path})).is_error


async def test_a_codex_patch_adds_updates_moves_and_deletes_keeping_every_other_byte(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seeded(tools, ctx, seed)
    result = await tools.execute(ctx, "apply_patch", {"input": PATCH})
    assert not result.is_error, result.text
    assert result.text.splitlines()[:2] == [
        "Success. Updated the following files:",
        "A docs/new.md",
    ]
    assert "M src/app.py -> src/main.py (line 4)" in result.text
    assert "D old.txt" in result.text
    data = result.data_as(PatchData)
    assert [(f.path, f.action) for f in data.files] == [
        ("docs/new.md", "add"),
        ("src/app.py", "update"),
        ("src/util.py", "update"),
        ("old.txt", "delete"),
    ]
    assert result.structured["files"][1]["moved_to"] == "src/main.py"
    assert await stored(ctx, "docs/new.md") == b"# New\n"
    # CRLF and Shift-JIS: only the changed lines differ, in the file's own endings and encoding
    assert await stored(ctx, "src/main.py") == FILES["src/app.py"].replace(b"hi", b"hello")
    assert await stored(ctx, "src/util.py") == FILES["src/util.py"].replace(
        b"return 1", b"return 2"
    )
    assert await stored(ctx, "src/app.py") is None
    assert await stored(ctx, "old.txt") is None


async def test_a_patch_whose_last_hunk_fails_changes_nothing(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seeded(tools, ctx, seed)
    broken = PATCH.replace("-    return 1", "-    return 99")
    result = await tools.execute(ctx, "apply_patch", {"input": broken})
    assert result.error_code == "no_match"
    assert "hunk 1 of 1 does not apply to src/util.py" in result.text
    assert result.structured["error"]["details"]["hunk"] == 0
    for path, data in FILES.items():
        assert await stored(ctx, path) == data
    assert await stored(ctx, "docs/new.md") is None
    assert await stored(ctx, "src/main.py") is None


ALIGNED = [
    # the file, the patch's lines, the file after: the marked lines change, no other byte
    (b"def f():\n    foo()\n    bar()\nfoo()\n", "-foo()\n-bar()\n foo()", b"def f():\nfoo()\n"),
    (b"a\r\nb\na\n", "-a\n-b\n a", b"a\n"),
    (b"a  \nb\na\n", "-a\n-b\n a", b"a\n"),
    (b"a  \nb  \n", "-a\n b\n+a", b"b  \na\n"),
    (b"a\nb\r\nc\n", "-a\n b\n+a", b"b\r\na\nc\n"),
]


@pytest.mark.parametrize(("before", "hunk", "after"), ALIGNED)
async def test_a_hunk_changes_the_lines_it_marks_and_keeps_its_context_as_it_is(
    tools: FsToolset, ctx: Context, seed: Seed, before: bytes, hunk: str, after: bytes
) -> None:
    # (where a line's text comes twice in a hunk, a guessed alignment took the other one)
    await seed("f.txt", before)
    await tools.execute(ctx, "read", {"file_path": "f.txt"})
    patch = f"*** Begin Patch\n*** Update File: f.txt\n@@\n{hunk}\n*** End Patch\n"
    result = await tools.execute(ctx, "apply_patch", {"input": patch})
    assert not result.is_error, result.text
    assert await stored(ctx, "f.txt") == after


async def test_a_hunk_of_many_alike_lines_applies_as_marked(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    # (a line-alignment guess over it took minutes: 8 times longer for each doubling)
    await seed("x.txt", b"top\n" + b"x\n" * 1000)
    await tools.execute(ctx, "read", {"file_path": "x.txt"})
    lines = [("-x\n+z" if n % 2 else " x\n+y") for n in range(500)]
    patch = "*** Begin Patch\n*** Update File: x.txt\n@@ top\n" + "\n".join(lines)
    result = await tools.execute(ctx, "apply_patch", {"input": patch + "\n*** End Patch"})
    assert not result.is_error, result.text
    assert await stored(ctx, "x.txt") == b"top\n" + b"x\ny\nz\n" * 250 + b"x\n" * 500


async def test_a_move_over_a_file_is_refused_changing_nothing(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("a.txt", b"one\n")
    await seed("b.txt", b"precious\n")
    for path in ("a.txt", "b.txt"):
        await tools.execute(ctx, "read", {"file_path": path})
    patch = "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n*** End Patch"
    result = await tools.execute(ctx, "apply_patch", {"input": patch})
    assert result.error_code == "already_exists", result.text
    assert (await stored(ctx, "a.txt"), await stored(ctx, "b.txt")) == (b"one\n", b"precious\n")


async def test_a_stale_file_fails_the_patch_before_anything_is_written(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seeded(tools, ctx, seed)
    await ctx.opened_fs.backend.write("old.txt", b"changed by someone else\n", expect=None)
    result = await tools.execute(ctx, "apply_patch", {"input": PATCH})
    assert result.error_code == "stale"
    assert result.structured["error"]["details"].get("restored") is None  # nothing was written
    assert await stored(ctx, "docs/new.md") is None
    assert await stored(ctx, "src/app.py") == FILES["src/app.py"]


async def test_a_dry_run_shows_the_patch_and_writes_nothing(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seeded(tools, ctx, seed)
    result = await tools.execute(ctx, "apply_patch", {"input": PATCH, "dry_run": True})
    assert not result.is_error, result.text
    assert result.text.startswith("Dry run, nothing written.")
    assert '+    print("hello")' in result.text
    assert await stored(ctx, "docs/new.md") is None
    for path, data in FILES.items():
        assert await stored(ctx, path) == data


async def test_a_patch_that_does_not_parse_says_how_to_write_one(
    tools: FsToolset, ctx: Context
) -> None:
    result = await tools.execute(ctx, "apply_patch", {"input": "--- a/x\n+++ b/x\n"})
    assert result.error_code == "invalid_argument"
    assert "*** Begin Patch" in result.text


# -- the Responses API's built-in apply_patch ------------------------------------------------


SEPARATORS = ["\f", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
"""What ``str.splitlines`` ends a line at, and a patch must not."""


@pytest.mark.parametrize("separator", SEPARATORS, ids=[f"U+{ord(s):04X}" for s in SEPARATORS])
@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
async def test_only_newlines_end_a_patch_line(
    tools: FsToolset, ctx: Context, seed: Seed, separator: str, newline: str
) -> None:
    source = f"def a():\n    return 1\n{separator}\ndef b():\n    return {separator}2\n"
    await seed("src.py", source.encode())
    assert not (await tools.execute(ctx, "read", {"file_path": "src.py"})).is_error
    patch = newline.join(["*** Begin Patch", "*** Update File: src.py", "@@",
                          f" {separator}", " def b():", f"-    return {separator}2",
                          "+    return 3", "*** End Patch", ""])  # fmt: skip
    result = await tools.execute(ctx, "apply_patch", {"input": patch})
    assert not result.is_error, result.text
    expected = source.replace(f"return {separator}2", "return 3")
    assert await stored(ctx, "src.py") == expected.encode()


def patch_call_turn(*operations: dict[str, Any]) -> dict[str, Any]:
    """A Responses API answer whose output is one ``apply_patch_call`` per operation."""
    turn = responses_turn()
    turn["output"] = [
        {
            "type": "apply_patch_call",
            "id": f"apc_{i}",
            "call_id": f"call_{i}",
            "status": "completed",
            "operation": operation,
        }
        for i, operation in enumerate(operations)
    ]
    return turn


async def test_the_responses_apply_patch_round_trips_with_a_scripted_model(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seeded(tools, ctx, seed)
    definitions = await tools.definitions(ctx, provider="openai", openai_api="responses")
    assert {"type": "apply_patch"} in definitions
    operations = [
        {"type": "create_file", "path": "docs/new.md", "diff": "+# New\n+\n+text\n"},
        {
            "type": "update_file",
            "path": "src/app.py",
            "diff": '@@\n-    print("hi")\n+    print("yo")\n',
        },
        {"type": "delete_file", "path": "old.txt"},
        {"type": "update_file", "path": "src/util.py", "diff": "@@\n-missing line\n+x\n"},
    ]
    http, sent = fake_api(patch_call_turn(*operations), responses_turn())
    client = openai_client(http)
    from openai.types.responses import ResponseApplyPatchToolCall  # noqa: PLC0415 (see openai_client)

    first = client.responses.create(model="m", input="patch it", tools=definitions)  # type: ignore[arg-type]
    calls = [item for item in first.output if isinstance(item, ResponseApplyPatchToolCall)]
    outputs = [await answer_patch_call(tools, ctx, call.model_dump()) for call in calls]
    second = client.responses.create(
        model="m",
        previous_response_id=first.id,
        input=outputs,  # type: ignore[arg-type]
        tools=definitions,  # type: ignore[arg-type]
    )

    assert second.output_text == "done"
    assert sent[1]["json"]["input"] == outputs
    assert [(o["type"], o["call_id"], o["status"]) for o in outputs] == [
        ("apply_patch_call_output", "call_0", "completed"),
        ("apply_patch_call_output", "call_1", "completed"),
        ("apply_patch_call_output", "call_2", "completed"),
        ("apply_patch_call_output", "call_3", "failed"),
    ]
    assert "hunk 1 of 1 does not apply to src/util.py" in outputs[3]["output"]
    assert await stored(ctx, "docs/new.md") == b"# New\n\ntext\n"
    assert await stored(ctx, "src/app.py") == FILES["src/app.py"].replace(b"hi", b"yo")
    assert await stored(ctx, "old.txt") is None
    assert await stored(ctx, "src/util.py") == FILES["src/util.py"]


async def test_a_patch_call_keeps_the_guards_and_stays_an_openai_tool(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("a.txt", b"one\n")
    operation = {"type": "delete_file", "path": "a.txt"}
    unread: dict[str, Any] = {"call_id": "c", "operation": operation}
    refused = await answer_patch_call(tools, ctx, unread)
    assert refused["status"] == "failed"
    assert refused["output"].startswith("Error [not_observed]")
    assert await stored(ctx, "a.txt") == b"one\n"
    malformed = await answer_patch_call(tools, ctx, {"call_id": "c", "operation": {"type": "x"}})
    assert malformed["status"] == "failed"
    # offered to the Responses API only; elsewhere the name is not a tool
    chat = await tools.definitions(ctx, provider="openai")
    assert all(d["function"]["name"] != "apply_patch_call" for d in chat)
    other = await tools.execute(ctx, "apply_patch_call", operation)
    assert other.error_code == "invalid_argument"


async def test_the_codex_tool_schema_is_one_string_for_every_provider(
    tools: FsToolset, ctx: Context
) -> None:
    generic = {d["name"]: d for d in await tools.definitions(ctx)}
    assert generic["apply_patch"]["parameters"]["required"] == ["input"]
    chat = {d["function"]["name"]: d for d in await tools.definitions(ctx, provider="openai")}
    strict = chat["apply_patch"]["function"]
    assert strict["strict"] is True
    assert strict["parameters"]["required"] == ["input", "dry_run"]
    anthropic = [d.get("name") for d in await tools.definitions(ctx, provider="anthropic")]
    assert "apply_patch" in anthropic
    assert json.dumps(generic["apply_patch"])  # plain JSON
