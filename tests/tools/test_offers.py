"""The layers that work out a step's offer, each on its own: none can reveal what another hides."""

from __future__ import annotations

import pytest

from ctxfs.core import Context, ErrorCode, Fs, MemoryBackend, hookimpl
from ctxfs.tools import BUILTIN_TOOLS, Exposure, FsToolset, ToolsetOptions
from ctxfs.tools.offers import (
    Chosen,
    Configured,
    Discovery,
    Offer,
    OfferLayer,
    ReadOnly,
    Registered,
    voted,
)

pytestmark = pytest.mark.anyio

NAMES = ("read", "write", "grep")
TOOLS = {tool.name: tool for tool in BUILTIN_TOOLS}


@pytest.fixture
def ctx() -> Context:
    return Fs(MemoryBackend(), load_entrypoints=False).context(owner="a")


def levels(offer: Offer) -> dict[str, str]:
    return {name: level.value for name, level in offer.exposure.items()}


def test_the_registry_offers_every_tool_directly_in_order() -> None:
    offer = Registered(NAMES).offer()
    assert offer.direct == NAMES
    assert (offer.deferred, offer.discovery, dict(offer.failures)) == ((), (), {})


def test_the_configuration_defers_and_hides() -> None:
    exposure = {"write": Exposure.HIDDEN, "grep": Exposure.DEFERRED, "read": Exposure.DIRECT}
    offer = Configured(Registered(NAMES), exposure).offer()
    assert levels(offer) == {"read": "direct", "write": "hidden", "grep": "deferred"}


def test_read_only_hides_the_writers_and_reveals_nothing() -> None:
    deferred = Configured(Registered(NAMES), {"grep": Exposure.HIDDEN, "read": Exposure.DEFERRED})
    offer = ReadOnly(deferred, frozenset({"write"})).offer()
    assert levels(offer) == {"read": "deferred", "write": "hidden", "grep": "hidden"}


@pytest.mark.parametrize("tools", [{"write"}, {"read", "edit", "write"}])
def test_read_only_with_tools_that_write_named_is_refused(tools: set[str]) -> None:
    with pytest.raises(ValueError, match="read-only offers no tool that writes") as refused:
        FsToolset(ToolsetOptions(read_only=True, tools=frozenset(tools)))
    assert "'read'" not in str(refused.value)
    reading = FsToolset(ToolsetOptions(read_only=True, tools=frozenset({"read", "grep"})))
    assert reading.options.tools == frozenset({"read", "grep"})  # (tools that only read: taken)


def test_a_choice_hides_the_others() -> None:
    offer = Chosen(Registered(NAMES), frozenset({"grep"})).offer()
    assert levels(offer) == {"read": "hidden", "write": "hidden", "grep": "direct"}


def test_discovery_appears_while_some_tool_is_deferred() -> None:
    names = ("search_tools", "call_tool")
    plain = Discovery(Registered(NAMES), names).offer()
    assert plain.offered == NAMES
    some = Configured(Registered(NAMES), {"grep": Exposure.DEFERRED})
    assert (Discovery(some, names).offer()).offered == ("read", "write", *names)


class Voter:
    @hookimpl
    def ctxfs_tool_exposure(self, ctx: Context, tool: str) -> object:
        if tool == "grep":
            raise RuntimeError("down")
        return {"read": "DIRECT", "write": "Deferred "}.get(tool)


async def test_votes_only_ever_tighten_and_a_failure_hides(ctx: Context) -> None:
    voting = Fs(ctx.opened_fs.backend, plugins=[Voter()], load_entrypoints=False).context(owner="a")
    hidden = Configured(Registered(NAMES), {"read": Exposure.HIDDEN})
    offer = await voted(hidden.offer(), voting, TOOLS)
    assert levels(offer) == {"read": "hidden", "write": "deferred", "grep": "hidden"}
    assert list(offer.failures) == ["grep"]
    assert offer.failures["grep"].code is ErrorCode.BACKEND_ERROR


def test_a_layer_is_any_offer_layer() -> None:
    class Nothing(OfferLayer):
        def offer(self) -> Offer:
            return Offer(exposure={})

    assert (ReadOnly(Nothing(), frozenset({"write"})).offer()).offered == ()


async def test_a_list_made_once_holds_discovery_where_a_plugin_may_defer(ctx: Context) -> None:
    # A harness that lists the tools once cannot list call_tool in the step a plugin defers
    # grep: its list holds the discovery pair wherever plugins vote, and the step decides.
    nothing_deferred = FsToolset(
        ToolsetOptions(exposure={"undo": Exposure.DIRECT, "changes": Exposure.DIRECT})
    )
    discovery = ("search_tools", "call_tool")
    assert not set(discovery) & set(nothing_deferred.fixed(ctx).offered)
    voting = Fs(ctx.opened_fs.backend, plugins=[Voter()], load_entrypoints=False).context(owner="a")
    fixed = nothing_deferred.fixed(voting)
    assert fixed.offered[-2:] == discovery
    assert fixed.exposure == nothing_deferred.configured().exposure
    step = await nothing_deferred.offer(voting)  # write deferred: the pair is the step's too
    assert step.offered[-2:] == discovery
