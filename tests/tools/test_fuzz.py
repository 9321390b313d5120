"""Arbitrary JSON arguments never raise and never change a file unless the call succeeds."""

from __future__ import annotations

import json
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxfs.core import ABSENT, Fs, MemoryBackend
from ctxfs.tools import BUILTIN_TOOLS, Exposure, FsToolset, ToolResult, ToolsetOptions
from ctxfs.tools.builtin.text_editor import EditorCommand
from tests.conftest import examples
from tests.tools.test_execute import snapshot

FIELDS = sorted(
    {name for tool in BUILTIN_TOOLS for name in tool.arguments.model_fields}
    | {
        name
        for command in EditorCommand.model_fields["root"].annotation.__args__  # type: ignore[union-attr]
        for name in command.model_fields
    }
)
TOOLS = [*(tool.name for tool in BUILTIN_TOOLS), "shell", ""]
PATHS = st.sampled_from(["a.txt", "dir/b.txt", "bin.dat", "new.txt", "dir", "../x", "", "a.txt/z"])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 10**12)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | PATHS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
arguments = st.one_of(
    st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), json_values, max_size=5),
    st.fixed_dictionaries(
        {"file_path": PATHS},
        optional={
            "content": st.text(max_size=30),
            "old_string": st.sampled_from(["alpha", "", "zzz"]) | st.text(max_size=5),
            "new_string": st.text(max_size=5),
            "replace_all": json_values,
            "offset": json_values,
            "limit": json_values,
        },
    ),
    json_values,
    st.text(max_size=30),  # a JSON string, or not
)  # fmt: skip


async def scenario(name: str, args: Any) -> tuple[ToolResult, dict[str, bytes], dict[str, bytes]]:
    backend = MemoryBackend()
    for path, data in (("a.txt", b"alpha\nbeta\n"), ("dir/b.txt", b"b\n"), ("bin.dat", b"\x00x")):
        await backend.write(path, data, expect=ABSENT)
    fs = Fs(backend, load_entrypoints=False)
    ctx = fs.context(owner="fuzzer")
    await ctx.fs.read("a.txt")
    tools = FsToolset(ToolsetOptions(exposure={"grep": Exposure.DEFERRED}))
    before = await snapshot(ctx)
    result = await tools.execute(ctx, name, args)
    return result, before, await snapshot(ctx)


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(TOOLS) | st.text(max_size=10), args=arguments)
def test_any_arguments_give_a_result_and_failures_change_nothing(name: str, args: Any) -> None:
    result, before, after = anyio.run(scenario, name, args)
    assert isinstance(result, ToolResult)
    assert result.text
    json.dumps(result.structured)  # plain JSON, always
    if result.is_error:
        assert result.error_code is not None
        assert after == before, "a failed call changed the store"
    else:
        assert result.error_code is None
