"""Provider projections through the real ``openai`` and ``anthropic`` SDKs, offline.

Each SDK client sends its requests to an ``httpx2.MockTransport`` that records the
JSON body and answers with a scripted model turn. That proves the tool JSON passes
the SDKs' request builders unchanged and that the calls the SDKs parse out of a
response run through ``FsToolset.execute`` (it does not prove the live APIs
accept the schemas).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx2
import pytest

from ctxfs.core import Context, Fs, NotFound, number_lines
from ctxfs.tools import FsToolset, ToolResult, ToolsetOptions
from ctxfs.tools.results import (
    anthropic_tool_result,
    openai_chat_messages,
    openai_function_call_output,
)
from tests.tools.conftest import FILE_TOOLS, Seed
from tests.tools.media import dimensions, image

if TYPE_CHECKING:
    import anthropic
    import openai

pytestmark = pytest.mark.anyio

Sent = list[dict[str, Any]]
EDITOR = "str_replace_based_edit_tool"


def fake_api(*responses: dict[str, Any]) -> tuple[httpx2.Client, Sent]:
    """An HTTP client whose server answers *responses* in order and records each request."""
    sent: Sent = []
    queue = list(responses)

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append({"path": request.url.path, "json": json.loads(request.content)})
        return httpx2.Response(200, json=queue.pop(0))

    return httpx2.Client(transport=httpx2.MockTransport(handler)), sent


# The SDKs load in the tests that drive them: every worker collects this module, and they take
# seconds to import.
def openai_client(http: httpx2.Client) -> openai.OpenAI:
    """The ``openai`` SDK's client, its requests sent to *http*."""
    import openai  # noqa: PLC0415

    return openai.OpenAI(api_key="test", base_url="http://api.invalid/v1", http_client=http)


def anthropic_client(http: httpx2.Client) -> anthropic.Anthropic:
    """The ``anthropic`` SDK's client, its requests sent to *http*."""
    import anthropic  # noqa: PLC0415

    return anthropic.Anthropic(api_key="test", base_url="http://api.invalid", http_client=http)


# -- OpenAI ------------------------------------------------------------------------------------


def chat_turn(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "done" if not calls else None}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(a)},
            }
            for i, (n, a) in enumerate(calls)
        ]
    finish = "tool_calls" if calls else "stop"
    choice = {"index": 0, "finish_reason": finish, "message": message}
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}


async def test_openai_chat_completions_sends_our_tools_unchanged_and_runs_the_calls(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("a.txt", b"hello\n")
    definitions = await tools.definitions(ctx, provider="openai")
    read_call = {"file_path": "a.txt", "offset": None, "limit": None}
    http, sent = fake_api(chat_turn(("read", read_call)), chat_turn())
    client = openai_client(http)

    messages: list[Any] = [{"role": "user", "content": "read a.txt"}]
    reply = client.chat.completions.create(model="m", messages=messages, tools=definitions)  # type: ignore[arg-type]
    message = reply.choices[0].message
    assert message.tool_calls is not None
    (call,) = message.tool_calls
    assert call.type == "function"
    result = await tools.execute(
        ctx, call.function.name, call.function.arguments, provider="openai"
    )
    assert not result.is_error
    assert result.text.startswith("1 hello\n")
    messages += [
        message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": result.text},
    ]
    final = client.chat.completions.create(model="m", messages=messages, tools=definitions)  # type: ignore[arg-type]

    assert final.choices[0].message.content == "done"
    assert sent[0]["path"] == "/v1/chat/completions"
    assert sent[0]["json"]["tools"] == definitions
    assert sent[1]["json"]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_0",
        "content": result.text,
    }


def responses_turn(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    base = {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    output: list[dict[str, Any]] = [
        {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": f"call_{i}",
            "name": n,
            "arguments": json.dumps(a),
            "status": "completed",
        }
        for i, (n, a) in enumerate(calls)
    ]
    if not calls:
        text = {"type": "output_text", "text": "done", "annotations": []}
        output = [
            {
                "type": "message",
                "id": "m",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            }
        ]
    return dict(base, output=output)


async def test_openai_responses_sends_our_tools_unchanged_and_runs_the_calls(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("src/a.py", b"x = 1\n")
    definitions = await tools.definitions(ctx, provider="openai", openai_api="responses")
    # Strict mode: the model sends every argument, null for the ones it leaves out.
    grep_call = dict.fromkeys(arguments_of(definitions, "grep")) | {"pattern": "x ="}
    http, sent = fake_api(responses_turn(("grep", grep_call)), responses_turn())
    client = openai_client(http)

    first = client.responses.create(model="m", input="find x", tools=definitions)  # type: ignore[arg-type]
    (call,) = [item for item in first.output if item.type == "function_call"]
    result = await tools.execute(ctx, call.name, call.arguments, provider="openai")
    assert not result.is_error, result.text
    assert "src/a.py:1:" in result.text
    output = {"type": "function_call_output", "call_id": call.call_id, "output": result.text}
    second = client.responses.create(
        model="m",
        previous_response_id=first.id,
        input=[output],  # type: ignore[list-item]
        tools=definitions,  # type: ignore[arg-type]
    )

    assert second.output_text == "done"
    assert sent[0]["path"] == "/v1/responses"
    assert sent[0]["json"]["tools"] == definitions
    assert sent[1]["json"]["input"] == [output]


def arguments_of(definitions: list[dict[str, Any]], name: str) -> list[str]:
    """The argument names of tool *name* in Responses-shaped definitions."""
    (tool,) = [d for d in definitions if d.get("name") == name]
    return list(tool["parameters"]["properties"])


async def test_strict_schemas_are_accepted_by_the_sdk_strict_converter(
    tools: FsToolset, ctx: Context
) -> None:
    """``openai``'s own strict-schema conversion leaves our schemas as they are."""
    import openai  # noqa: PLC0415 (see openai_client)

    for tool in await tools.definitions(ctx, provider="openai"):
        function = tool["function"]
        if not function["strict"]:
            continue
        converted = openai.pydantic_function_tool(tools.tool(function["name"]).arguments)
        sdk: dict[str, Any] = dict(converted["function"]["parameters"])
        assert set(sdk["required"]) == set(function["parameters"]["required"])
        assert sdk["additionalProperties"] is False
        assert function["parameters"]["additionalProperties"] is False


# -- Anthropic: the text editor tool --------------------------------------------------------


def messages_turn(*uses: dict[str, Any]) -> dict[str, Any]:
    """One scripted assistant message: text editor calls, or the final answer."""
    content: list[dict[str, Any]] = [
        {"type": "tool_use", "id": f"toolu_{i}", "name": EDITOR, "input": use}
        for i, use in enumerate(uses)
    ]
    return {
        "id": "msg",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "stop_sequence": None,
        "stop_reason": "tool_use" if uses else "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
        "content": content or [{"type": "text", "text": "done"}],
    }


class Conversation:
    """A Messages API loop: the SDK asks the scripted model, ctxfs runs the tool uses."""

    def __init__(
        self, tools: FsToolset, ctx: Context, definitions: list[dict[str, Any]], *turns: Any
    ) -> None:
        self.tools, self.ctx, self.definitions = tools, ctx, definitions
        http, self.sent = fake_api(*turns)
        self.client = anthropic_client(http)
        self.messages: list[Any] = [{"role": "user", "content": "tidy the workspace"}]

    def ask(self) -> anthropic.types.Message:
        return self.client.messages.create(
            model="m",
            max_tokens=1024,
            tools=self.definitions,  # type: ignore[arg-type]
            messages=self.messages,
        )

    async def step(self) -> list[dict[str, Any]]:
        """One model turn; returns the ``tool_result`` blocks sent back."""
        reply = self.ask()
        results = []
        for block in reply.content:
            if block.type != "tool_use":
                continue
            result = await self.tools.execute(
                self.ctx,
                block.name,
                block.input,
                provider="anthropic",
            )
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": block.id,
                    "content": result.text,
                    "is_error": result.is_error,
                }
            )
        self.messages += [
            {
                "role": "assistant",
                "content": [b.model_dump(exclude_none=True) for b in reply.content],
            },
            {"role": "user", "content": results},
        ]
        return results


async def test_a_scripted_text_editor_conversation_leaves_the_right_bytes(
    fs: Fs, ctx: Context, seed: Seed
) -> None:
    await seed("win.txt", b"alpha\r\nbeta\r\ngamma\r\n")
    await seed("notes.md", b"one\ntwo")
    await seed("src/app.py", b"print(1)\n")
    await seed("src/util.py", b"")
    await seed("shared.txt", b"v1\n")
    tools = FsToolset(ToolsetOptions(editor_root="/repo"))
    definitions = await tools.definitions(ctx, provider="anthropic")
    chat = Conversation(
        tools,
        ctx,
        definitions,
        messages_turn(
            {"command": "view", "path": "/repo/win.txt"},
            {"command": "view", "path": "/repo/notes.md", "view_range": [2, -1]},
        ),
        messages_turn(
            {
                "command": "str_replace",
                "path": "/repo/win.txt",
                "old_str": "beta",
                "new_str": "BETA\nbeta2",
            },
            {
                "command": "insert",
                "path": "/repo/notes.md",
                "insert_line": 2,
                "insert_text": "three",
            },
        ),
        messages_turn(
            {"command": "view", "path": "/repo/src"},
            {"command": "view", "path": "/repo/shared.txt"},
        ),
        messages_turn({"command": "create", "path": "/repo/shared.txt", "file_text": "mine\n"}),
        messages_turn(),
    )

    views = await chat.step()
    assert [r["is_error"] for r in views] == [False, False]
    assert views[0]["content"].startswith("1 alpha\n2 beta\n3 gamma\n")
    assert views[1]["content"].startswith("2 two\n")

    changes = await chat.step()
    assert [r["is_error"] for r in changes] == [False, False]
    assert "+BETA\n+beta2" in changes[0]["content"]
    assert "+three" in changes[1]["content"]
    assert (await fs.backend.read("win.txt")).data == b"alpha\r\nBETA\r\nbeta2\r\ngamma\r\n"
    assert (await fs.backend.read("notes.md")).data == b"one\ntwo\nthree"

    listing, shared = await chat.step()
    assert "app.py" in listing["content"]
    assert "util.py" in listing["content"]
    assert not listing["is_error"]
    assert shared["content"].startswith("1 v1\n")

    # A person saves shared.txt after the model viewed it and before it writes.
    current = await fs.backend.stat("shared.txt")
    await fs.backend.write("shared.txt", b"v2 by a person\n", expect=current.version)

    (create,) = await chat.step()
    assert create["is_error"] is True
    assert create["content"].startswith("Error [stale]")
    assert (await fs.backend.read("shared.txt")).data == b"v2 by a person\n"

    assert chat.ask().content[0].type == "text"
    for request in chat.sent:
        assert request["path"] == "/v1/messages"
        assert request["json"]["tools"] == definitions
    # Every request after the first ends with exactly the tool_result blocks ctxfs produced.
    produced = [views, changes, [listing, shared], [create]]
    assert [r["json"]["messages"][-1]["content"] for r in chat.sent[1:]] == produced
    assert definitions[0] == {
        "type": "text_editor_20250728",
        "name": EDITOR,
        "max_characters": ctx.opened_fs.text_options.max_output_chars,
    }


# -- Anthropic: the alias and its edges ---------------------------------------------------------

EditorCall = Callable[..., Any]


@pytest.fixture
def editor(tools: FsToolset, ctx: Context) -> EditorCall:
    async def call(**arguments: Any) -> Any:
        return await tools.execute(ctx, EDITOR, arguments, provider="anthropic")

    return call


async def test_the_editor_alias_is_only_accepted_for_anthropic(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("a.txt", b"x\n")
    for provider in ("generic", "openai"):
        result = await tools.execute(
            ctx, EDITOR, {"command": "view", "path": "a.txt"}, provider=provider
        )
        assert result.error_code == "invalid_argument"
        assert "unknown tool" in result.text
    result = await tools.execute(
        ctx, EDITOR, {"command": "view", "path": "a.txt"}, provider="anthropic"
    )
    assert result.text.startswith("1 x\n")


async def test_undo_edit_is_refused_with_a_way_forward(editor: EditorCall, seed: Seed) -> None:
    await seed("a.txt", b"x\n")
    result = await editor(command="undo_edit", path="a.txt")
    assert result.error_code == "invalid_argument"
    assert "undo_edit" in result.text
    assert "str_replace" in result.structured["error"]["hint"]


async def test_view_ranges_and_insert_arguments_are_checked(
    editor: EditorCall, ctx: Context, seed: Seed
) -> None:
    await seed("a.txt", b"1\n2\n3\n4\n")
    middle = await editor(command="view", path="a.txt", view_range=[2, 3])
    assert middle.text.startswith("2 2\n3 3\n")
    assert middle.structured["offset"] == 2
    assert middle.structured["returned_lines"] == 2
    for bad in ([0, 2], [3, 2], [2, -2]):
        refused = await editor(command="view", path="a.txt", view_range=bad)
        assert refused.error_code == "invalid_argument", bad
    no_text = await editor(command="insert", path="a.txt", insert_line=1)
    assert no_text.error_code == "invalid_argument"
    documented = await editor(command="insert", path="a.txt", insert_line=0, new_str="0")
    assert not documented.is_error, documented.text
    assert (await ctx.fs.read("a.txt")).text == "0\n1\n2\n3\n4\n"


async def test_the_editor_says_what_to_do_in_its_own_arguments(
    editor: EditorCall, ctx: Context, seed: Seed
) -> None:
    # The read and edit tools the editor runs as name offset, old_string, replace_all: the
    # model is told view_range and old_str instead, and following that works.
    await seed("big.txt", "".join(f"line {n}\n" for n in range(1, 5001)).encode())
    first = await editor(command="view", path="big.txt")
    assert first.text.endswith("continue with view_range [2001, -1])")
    assert "offset" not in first.text
    followed = await editor(command="view", path="big.txt", view_range=[2001, -1])
    assert followed.text.startswith("2001 line 2001\n")
    past = await editor(command="view", path="big.txt", view_range=[6000, 6001])
    assert "use a view_range within lines 1 to 5000" in past.text
    await seed("a.txt", b"x\nx\n")
    await editor(command="view", path="a.txt")
    ambiguous = await editor(command="str_replace", path="a.txt", old_str="x", new_str="y")
    assert ambiguous.error_code == "ambiguous_match"
    said = ambiguous.text + ambiguous.structured["error"]["hint"]
    assert "old_str" in said
    assert not {"old_string", "replace_all"} & set(re.findall(r"\w+", said))


async def test_the_editor_shows_lines_names_and_diffs_as_they_are(
    editor: EditorCall, ctx: Context, seed: Seed
) -> None:
    # Only the tools' notes are said in the editor's terms: text, names and diffs that
    # spell the other tools' arguments reach the model byte for byte.
    source = (
        "def f(old_string, new_string):\n"
        '    said = "continue with offset=40, or set replace_all"\n'
        '    told = "use an offset from 1 to 9"\n'
        "# (The line numbers pasted into old_string were ignored.)\n"
    )
    await seed("src/old_string.py", source.encode())
    view = await editor(command="view", path="src/old_string.py")
    assert view.text.startswith(number_lines(source, 1))
    listing = await editor(command="view", path="src")
    assert listing.text.startswith("old_string.py")
    copied = await editor(
        command="str_replace",
        path="src/old_string.py",
        old_str="def f(old_string, new_string):",
        new_str="def f(old_string, new_string, replace_all):",
    )
    assert not copied.is_error, copied.text
    assert copied.text.startswith("Edited src/old_string.py: ")
    assert "+def f(old_string, new_string, replace_all):" in copied.text
    missing = await editor(command="str_replace", path="src/old_string.py", old_str="nope")
    assert missing.error_code == "no_match"
    assert "src/old_string.py" in missing.structured["error"]["message"]
    assert "old_str " in missing.structured["error"]["message"]
    await seed("s", b"x\n")  # a name inside the words said of it: they are said all the same
    await editor(command="view", path="s")
    short = await editor(command="str_replace", path="s", old_str="nope", new_str="y")
    assert short.structured["error"]["message"].startswith("old_str was not found in s")


async def test_the_editor_pages_a_large_directory_with_view_range(
    editor: EditorCall, seed: Seed
) -> None:
    for number in range(600):
        await seed(f"big/f{number:03}.txt", b"x")
    first = await editor(command="view", path="big")
    assert first.text.endswith("(entries 1-500 of 600; continue with view_range [501, -1])")
    rest = await editor(command="view", path="big", view_range=[501, -1])
    assert rest.text.splitlines()[0].startswith("f500.txt")
    assert rest.text.endswith("(entries 501-600 of 600)")
    middle = await editor(command="view", path="big", view_range=[3, 4])
    assert [line.split()[0] for line in middle.text.splitlines()[:2]] == ["f002.txt", "f003.txt"]


async def test_editor_root_maps_absolute_paths_and_refuses_others(ctx: Context, seed: Seed) -> None:
    await seed("pkg/a.txt", b"x\n")
    tools = FsToolset(ToolsetOptions(editor_root="/repo/"))
    inside = await tools.execute(
        ctx, EDITOR, {"command": "view", "path": "/repo/pkg/a.txt"}, provider="anthropic"
    )
    assert inside.structured["target"] == "pkg/a.txt"
    for outside in ("/etc/passwd", "/repository/a.txt"):
        refused = await tools.execute(
            ctx, EDITOR, {"command": "view", "path": outside}, provider="anthropic"
        )
        assert refused.error_code == "outside_root", outside
        assert "/repo/" in refused.structured["error"]["hint"], outside
    climbing = await tools.execute(
        ctx, EDITOR, {"command": "view", "path": "/repo/../etc/passwd"}, provider="anthropic"
    )
    assert climbing.error_code == "outside_root"


async def test_without_the_write_tools_the_editor_gives_way_to_custom_tools(
    ctx: Context,
) -> None:
    from ctxfs.tools import Exposure  # noqa: PLC0415

    hidden = FsToolset(ToolsetOptions(exposure={"write": Exposure.HIDDEN}))
    definitions = await hidden.definitions(ctx, provider="anthropic")
    assert all("type" not in d for d in definitions)
    discovery = {"search_tools", "call_tool"}  # undo and changes are deferred
    assert {d["name"] for d in definitions} == set(FILE_TOOLS) - {"write"} | discovery
    for d in definitions:
        assert set(d) == {"name", "description", "input_schema"}
    refused = await hidden.execute(
        ctx, EDITOR, {"command": "create", "path": "a.txt", "file_text": "x"}, provider="anthropic"
    )
    assert refused.error_code == "invalid_argument"
    with pytest.raises(NotFound):
        await ctx.fs.stat("a.txt")


# -- results with an image, in each provider's shape ----------------------------------------------


async def test_an_image_result_goes_back_to_anthropic_as_a_tool_result_with_an_image_block(
    ctx: Context, seed: Seed
) -> None:
    await seed("big.png", image((2000, 500)))
    tools = FsToolset()
    definitions = await tools.definitions(ctx, provider="anthropic")
    http, sent = fake_api(messages_turn({"command": "view", "path": "big.png"}), messages_turn())
    client = anthropic_client(http)
    messages: list[Any] = [{"role": "user", "content": "look at big.png"}]
    reply = client.messages.create(model="m", max_tokens=64, tools=definitions, messages=messages)  # type: ignore[arg-type]
    (use,) = [block for block in reply.content if block.type == "tool_use"]
    result = await tools.execute(ctx, use.name, use.input, provider="anthropic")
    block = anthropic_tool_result(result, use.id)
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]},
        {"role": "user", "content": [block]},
    ]
    client.messages.create(model="m", max_tokens=64, tools=definitions, messages=messages)  # type: ignore[arg-type]

    (sent_block,) = sent[1]["json"]["messages"][-1]["content"]
    assert sent_block == block
    text, picture = sent_block["content"]
    assert (sent_block["type"], sent_block["tool_use_id"], sent_block["is_error"]) == (
        "tool_result", use.id, False,
    )  # fmt: skip
    assert text == {"type": "text", "text": result.text}
    assert picture["type"] == "image"
    assert picture["source"]["type"] == "base64"
    assert picture["source"]["media_type"] == "image/png"
    assert dimensions(base64.b64decode(picture["source"]["data"])) == ("PNG", (1568, 392))


async def test_an_image_result_goes_back_to_the_responses_api_as_input_image(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("logo.png", image((30, 20)))
    http, sent = fake_api(responses_turn())
    client = openai_client(http)
    result = await tools.execute(ctx, "read", {"file_path": "logo.png"}, provider="openai")
    item = openai_function_call_output(result, "call_0")
    client.responses.create(model="m", previous_response_id="resp_0", input=[item])  # type: ignore[list-item]

    assert sent[0]["json"]["input"] == [item]
    text, picture = item["output"]
    assert item["type"] == "function_call_output"
    assert item["call_id"] == "call_0"
    assert text == {"type": "input_text", "text": result.text}
    assert picture["type"] == "input_image"
    prefix = "data:image/png;base64,"
    assert picture["image_url"].startswith(prefix)
    assert base64.b64decode(picture["image_url"][len(prefix) :]) == result.media[0].data


async def test_chat_completions_gets_the_text_in_tool_messages_and_the_images_after(
    tools: FsToolset, ctx: Context, seed: Seed
) -> None:
    await seed("logo.png", image((30, 20)))
    await seed("a.txt", b"hello\n")
    read_image = {"file_path": "logo.png", "offset": None, "limit": None, "pages": None}
    read_text = {"file_path": "a.txt", "offset": None, "limit": None, "pages": None}
    http, sent = fake_api(chat_turn(("read", read_image), ("read", read_text)), chat_turn())
    client = openai_client(http)
    definitions = await tools.definitions(ctx, provider="openai")
    messages: list[Any] = [{"role": "user", "content": "look"}]
    reply = client.chat.completions.create(model="m", messages=messages, tools=definitions)  # type: ignore[arg-type]
    message = reply.choices[0].message
    assert message.tool_calls is not None
    answers = []
    for call in message.tool_calls:
        assert call.type == "function"
        result = await tools.execute(ctx, "read", call.function.arguments, provider="openai")
        answers.append((call.id, result))
    replies = openai_chat_messages(answers)
    messages += [message.model_dump(exclude_none=True), *replies]
    client.chat.completions.create(model="m", messages=messages, tools=definitions)  # type: ignore[arg-type]

    assert sent[1]["json"]["messages"][-3:] == replies
    first, second, images = replies
    assert first == {"role": "tool", "tool_call_id": "call_0", "content": answers[0][1].text}
    assert second == {"role": "tool", "tool_call_id": "call_1", "content": answers[1][1].text}
    assert images["role"] == "user"
    label, picture = images["content"]
    assert label == {"type": "text", "text": "The image(s) of tool call call_0:"}
    assert picture["type"] == "image_url"
    assert picture["image_url"]["url"] == answers[0][1].media[0].data_url
    assert openai_chat_messages([answers[1]]) == [second]  # no image: no user message


def test_a_result_without_media_keeps_the_plain_shapes() -> None:
    result = ToolResult.failed(
        "read", NotFound("gone.txt not found", path="gone.txt"), None, "Error"
    )
    assert anthropic_tool_result(result, "t") == {
        "type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "Error"}],
        "is_error": True,
    }  # fmt: skip
    assert openai_function_call_output(result, "c") == {
        "type": "function_call_output", "call_id": "c", "output": "Error"
    }  # fmt: skip
