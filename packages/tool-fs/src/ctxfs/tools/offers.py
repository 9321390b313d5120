"""What a step offers, worked out by layers around the registry, each only ever stricter.

:class:`Registered` offers every tool directly; :class:`Configured`, :class:`ReadOnly` and
:class:`Chosen` each wrap a layer and may defer or hide what it offers, never reveal;
:class:`Discovery` adds ``search_tools`` and ``call_tool`` while some tool is deferred. These layers
are the configuration's and need no event loop; :func:`voted` then asks the plugins
(``ctxfs_tool_exposure``) in each step, and may only tighten that offer too.
"""

from __future__ import annotations

import functools
import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final

from ctxfs.core import BackendError, Context, FsError
from ctxfs.tools.definitions import CommonOptions, Exposure
from ctxfs.tools.tool import Offering, Tool

__all__ = [
    "Chosen",
    "Configured",
    "Discovery",
    "Offer",
    "OfferLayer",
    "ReadOnly",
    "Registered",
    "contained",
    "layers",
    "voted",
]

log = logging.getLogger("ctxfs.tools.toolset")  # a step's offer is the toolset's to log

_RANK: Final = {Exposure.DIRECT: 0, Exposure.DEFERRED: 1, Exposure.HIDDEN: 2}


@dataclass(frozen=True, kw_only=True)
class Offer:
    """What one step offers: worked out once, then used to list and to run."""

    exposure: Mapping[str, Exposure]
    """The exposure of every tool offered by exposure, in registration order."""
    discovery: tuple[str, ...] = ()
    """The tools that appear while some tool is deferred."""
    failures: Mapping[str, FsError] = field(default_factory=dict)
    """Tools hidden because a plugin failed while answering for them, and why."""
    lists_discovery: bool = False
    """Whether :attr:`offered` holds the discovery tools though none is deferred: a list made
    once, for steps in which a plugin may defer a tool."""

    @functools.cached_property
    def direct(self) -> tuple[str, ...]:
        """The tools offered directly."""
        return tuple(name for name, level in self.exposure.items() if level is Exposure.DIRECT)

    @functools.cached_property
    def deferred(self) -> tuple[str, ...]:
        """The tools found through ``search_tools`` and run through ``call_tool``."""
        return tuple(name for name, level in self.exposure.items() if level is Exposure.DEFERRED)

    @functools.cached_property
    def offered(self) -> tuple[str, ...]:
        """The tools the model is offered as tools of their own."""
        return self.direct + (self.discovery if self.deferred or self.lists_discovery else ())

    def stricter(
        self, levels: Mapping[str, Exposure], failures: Mapping[str, FsError] | None = None
    ) -> Offer:
        """The offer with each tool of *levels* at the stricter of its level and that one."""
        exposure = {
            name: max(level, levels.get(name, level), key=_RANK.__getitem__)
            for name, level in self.exposure.items()
        }
        failed = MappingProxyType({**self.failures, **(failures or {})})
        return replace(self, exposure=MappingProxyType(exposure), failures=failed)


class OfferLayer(ABC):
    """Works out the offer of a step."""

    @abstractmethod
    def offer(self) -> Offer:
        """The offer this layer makes."""


@dataclass(frozen=True)
class Registered(OfferLayer):
    """Every tool offered by exposure, directly, in registration order."""

    names: tuple[str, ...]

    def offer(self) -> Offer:
        return Offer(exposure=MappingProxyType(dict.fromkeys(self.names, Exposure.DIRECT)))


@dataclass(frozen=True)
class Configured(OfferLayer):
    """*inner*'s offer, with the configured exposure per tool (else the tool's own default)."""

    inner: OfferLayer
    exposure: Mapping[str, Exposure]

    def offer(self) -> Offer:
        return self.inner.offer().stricter({n: Exposure(x) for n, x in self.exposure.items()})


@dataclass(frozen=True)
class ReadOnly(OfferLayer):
    """*inner*'s offer without the tools that write."""

    inner: OfferLayer
    writers: frozenset[str]

    def offer(self) -> Offer:
        return self.inner.offer().stricter(dict.fromkeys(self.writers, Exposure.HIDDEN))


@dataclass(frozen=True)
class Chosen(OfferLayer):
    """*inner*'s offer of the tools *names* alone."""

    inner: OfferLayer
    names: frozenset[str]

    def offer(self) -> Offer:
        offer = self.inner.offer()
        return offer.stricter({n: Exposure.HIDDEN for n in offer.exposure if n not in self.names})


async def voted(offer: Offer, ctx: Context, tools: Mapping[str, Tool[Any, Any]]) -> Offer:
    """*offer* after every plugin's ``ctxfs_tool_exposure`` vote on each of *tools* it holds.

    The strictest answer wins. A plugin that raises, or answers what is no exposure, hides the tool
    for the step: it is logged, and a call of the tool fails with the error
    (:attr:`Offer.failures`).
    """
    levels: dict[str, Exposure] = {}
    failures: dict[str, FsError] = {}
    for name in offer.exposure:
        try:
            votes = await ctx.opened_fs.hooks.tool_exposure(ctx, name, writes=tools[name].writes)
        except Exception as failure:
            log.exception(  # (its traceback once a step)
                "a ctxfs_tool_exposure plugin failed for tool %r: %r",
                name,
                failure,  # noqa: TRY401 - said where the traceback is not
                exc_info=not failures,
            )
            failures[name] = contained(failure, f"could not tell whether {name!r} is offered")
            votes = [Exposure.HIDDEN]
        answers = []
        for vote in votes:
            answer, complaint = _exposure(vote)
            if complaint is not None:
                log.error("a ctxfs_tool_exposure plugin answered badly: %s", complaint)
                failures[name] = BackendError(
                    f"could not tell whether {name!r} is offered: {complaint}",
                    hint="Report this to whoever runs the tools.",
                )
            if answer is not None:
                answers.append(answer)
        if answers:
            levels[name] = max(answers, key=_RANK.__getitem__)
    return offer.stricter(levels, failures)


@dataclass(frozen=True)
class Discovery(OfferLayer):
    """*inner*'s offer, with *names* (``search_tools``, ``call_tool``) while a tool is deferred."""

    inner: OfferLayer
    names: tuple[str, ...]

    def offer(self) -> Offer:
        return replace(self.inner.offer(), discovery=self.names)


def layers(tools: Iterable[Tool[Any, Any]], options: CommonOptions) -> OfferLayer:
    """The layers *options* call for, around the registered *tools*."""
    tools = list(tools)
    exposed = {tool.name: tool for tool in tools if tool.offering is Offering.EXPOSED}
    defaults = {name: tool.exposure for name, tool in exposed.items()}  # what a tool asks
    layer: OfferLayer = Configured(Registered(tuple(exposed)), {**defaults, **options.exposure})
    if options.read_only:
        layer = ReadOnly(layer, frozenset(name for name, tool in exposed.items() if tool.writes))
    if options.tools is not None:
        layer = Chosen(layer, frozenset(options.tools))
    discovery = tuple(tool.name for tool in tools if tool.offering is Offering.DISCOVERY)
    return Discovery(layer, discovery)


def _exposure(vote: object) -> tuple[Exposure | None, str | None]:
    """A plugin's answer as an exposure (None: no opinion), and what is wrong with it.

    Any spelling of an exposure counts; anything else hides the tool, and says why.
    """
    if vote is None or isinstance(vote, Exposure):
        return vote, None
    if isinstance(vote, str):
        try:
            return Exposure(vote.strip().lower()), None
        except ValueError:
            pass
    return Exposure.HIDDEN, f"{vote!r} is not 'direct', 'deferred', 'hidden' or None"


def contained(failure: Exception, what: str) -> FsError:
    """*failure* as an error a result can carry."""
    if isinstance(failure, FsError):
        return failure
    return BackendError(f"{what}: {failure!r}", hint="Report this to whoever runs the tools.")
