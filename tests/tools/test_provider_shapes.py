"""Each provider's shape of the offered definitions, its own tools in place of theirs."""

from __future__ import annotations

from typing import Any

import pytest

from ctxfs.core import Context, Fs, MemoryBackend
from ctxfs.tools import BUILTIN_TOOLS, Exposure, Limits, ToolDefinition, ToolsetOptions
from ctxfs.tools.offers import Offer
from ctxfs.tools.providers import ProviderTools, shaped

ALIASES = ProviderTools.among(BUILTIN_TOOLS)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "additionalProperties": False,
}


def definition(name: str, *, strict: bool = True) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=f"{name} it",
        input_schema=SCHEMA,
        output_schema={},
        read_only=True,
        destructive=False,
        idempotent=True,
        strict=strict,
    )


def offer(*direct: str, deferred: tuple[str, ...] = ()) -> Offer:
    exposure = dict.fromkeys(direct, Exposure.DIRECT) | dict.fromkeys(deferred, Exposure.DEFERRED)
    return Offer(exposure=exposure)


@pytest.fixture
def ctx() -> Context:
    return Fs(MemoryBackend(), load_entrypoints=False).context(owner="a")


def test_a_provider_s_own_tool_needs_every_tool_it_stands_for_offered_directly() -> None:
    four = ("read", "write", "edit", "list_dir")
    assert [t.name for t in ALIASES.offered(offer(*four), "anthropic")] == [
        "str_replace_based_edit_tool"
    ]
    assert ALIASES.offered(offer(*four[:3], deferred=("list_dir",)), "anthropic") == []
    assert [t.name for t in ALIASES.offered(offer("apply_patch"), "openai")] == ["apply_patch_call"]
    assert ALIASES.offered(offer("apply_patch"), "anthropic") == []


def test_each_provider_s_shape(ctx: Context) -> None:
    limits = Limits(text=ctx.opened_fs.text_options, options=ToolsetOptions())
    offered = [definition("apply_patch"), definition("free", strict=False)]
    assert shaped(offered, provider="generic", limits=limits) == [
        {"name": "apply_patch", "description": "apply_patch it", "parameters": SCHEMA},
        {"name": "free", "description": "free it", "parameters": SCHEMA},
    ]
    (patch_call,) = ALIASES.offered(offer("apply_patch"), "openai")
    chat = shaped(offered, provider="openai", aliases=[patch_call], limits=limits)
    assert [tool["function"]["name"] for tool in chat] == ["apply_patch", "free"]  # no built-ins
    assert chat[0]["function"]["strict"] is True
    assert chat[1]["function"] == {
        "name": "free",
        "description": "free it",
        "parameters": SCHEMA,
        "strict": False,
    }
    responses = shaped(
        offered, provider="openai", openai_api="responses", aliases=[patch_call], limits=limits
    )
    assert responses[0] == {"type": "apply_patch"}
    assert [tool.get("name") for tool in responses] == [None, "free"]
    anthropic = shaped(offered, provider="anthropic", limits=limits)
    assert anthropic[1] == {"name": "free", "description": "free it", "input_schema": SCHEMA}
    with pytest.raises(ValueError, match="unknown provider 'other'"):
        shaped(offered, provider="other", limits=limits)  # type: ignore[arg-type]
