"""``FsToolset``: a registry of tools, run through one executor path.

What a step offers is worked out once (:meth:`FsToolset.offer`) and serves both the listing and the
calls of that step. :meth:`FsToolset.execute` turns every failure into an error result with a stable
code; only cancellation propagates.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

from pydantic import ValidationError

from ctxfs.core import BackendError, Context, FsError, InvalidArgument
from ctxfs.tools.builtin import BUILTIN_TOOLS, ToolsetOptions
from ctxfs.tools.definitions import Exposure, ToolDefinition
from ctxfs.tools.offers import Offer, contained, layers, voted
from ctxfs.tools.providers import OpenAiApi, Provider, ProviderTools, shaped
from ctxfs.tools.results import ToolResult, error_text
from ctxfs.tools.tool import Offering, Progress, Step, Tool

__all__ = ["MAX_NAME_CHARS", "FsToolset"]

MAX_NAME_CHARS: Final = 64
"""The longest tool name offered, its prefix included (OpenAI's and Anthropic's limit)."""

log = logging.getLogger(__name__)

_LARGEST_NUMBER: Final = 2**63 - 1
"""The largest whole number in a call's arguments (more is no position or count of a file)."""


class FsToolset:
    """The model-facing tools over a context's ``ctx.fs``: a registry of :class:`Tool`.

    Args:
        options: Limits and exposure (:class:`ToolsetOptions`).
        tools: The tools to start with (default: :data:`~ctxfs.tools.builtin.BUILTIN_TOOLS`);
            :meth:`register` adds more.

    Raises:
        ValueError: :attr:`ToolsetOptions.tools` or :attr:`~ToolsetOptions.exposure` names a tool
            that is not :attr:`selectable`.

    """

    def __init__(
        self,
        options: ToolsetOptions | None = None,
        *,
        tools: Iterable[Tool[Any, Any]] = BUILTIN_TOOLS,
    ) -> None:
        self.options = options if options is not None else ToolsetOptions()
        self._tools: dict[str, Tool[Any, Any]] = {}
        self._states: dict[str, Any] = {}
        self._aliases = ProviderTools(())
        self._configured: tuple[object, Offer] | None = None
        for tool in tools:
            self.register(tool)
        named = {*(self.options.tools or ()), *self.options.exposure}
        unknown = sorted(named - set(self.selectable))
        if unknown:
            raise ValueError(
                f"no tool is named {', '.join(map(repr, unknown))} "
                f"(the tools: {', '.join(self.selectable)}; name them without the prefix)"
            )
        if self.options.read_only and (writers := self._writers(self.options.tools or ())):
            raise ValueError(
                "read-only offers no tool that writes: leave "
                f"{', '.join(map(repr, writers))} out of the tools named"
            )

    # -- the registry ----------------------------------------------------------------------

    def register(self, tool: Tool[Any, Any]) -> None:
        """Add *tool*; it is offered, described and run like the built-in ones.

        Raises:
            ValueError: A tool of that name is registered already, its exposure is none, or
                the name (with the prefix) is longer than :data:`MAX_NAME_CHARS`.

        """
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is registered already")
        Exposure.of(tool.exposure, what=f"the tool {tool.name!r}")
        if len(self.options.tool_prefix + tool.name) > MAX_NAME_CHARS:
            raise ValueError(
                f"the tool name {self.options.tool_prefix + tool.name!r} is longer than "
                f"{MAX_NAME_CHARS} characters, which providers refuse"
            )
        self._tools[tool.name] = tool
        self._states[tool.name] = tool.new_state()
        self._configured = None
        self._aliases = ProviderTools.among(self._tools.values())

    def _writers(self, names: Iterable[str]) -> list[str]:
        """The tools among *names* that write, sorted."""
        return sorted(name for name in names if self._tools[name].writes)

    def tool(self, name: str) -> Tool[Any, Any]:
        """The registered tool *name* (``KeyError`` if there is none)."""
        return self._tools[name]

    def state(self, name: str) -> Any:
        """What tool *name* keeps between its calls in this toolset (:meth:`Tool.new_state`)."""
        return self._states[name]

    @property
    def registered(self) -> tuple[Tool[Any, Any], ...]:
        """Every registered tool, in registration order."""
        return tuple(self._tools.values())

    @property
    def selectable(self) -> tuple[str, ...]:
        """The names :attr:`ToolsetOptions.tools` may give: the tools offered by exposure."""
        return tuple(
            tool.name for tool in self._tools.values() if tool.offering is Offering.EXPOSED
        )

    # -- what a step offers -----------------------------------------------------------------

    def configured(self) -> Offer:
        """The configuration's offer, before any plugin's vote.

        A plugin may still defer or hide a tool in a step; a call of it is then refused.
        """
        configuration = (self.options, tuple(self.options.exposure.items()))
        if self._configured is None or self._configured[0] != configuration:
            self._configured = (configuration, layers(self._tools.values(), self.options).offer())
        return self._configured[1]

    def fixed(self, ctx: Context) -> Offer:
        """What a tool list made once holds: the configuration's offer (:meth:`configured`).

        Where a plugin votes on the tools (``ctxfs_tool_exposure``), it holds the discovery tools
        too, for the steps in which a plugin defers a tool; in a step that defers none, they are
        refused as any tool the step does not offer.
        """
        offer = self.configured()
        if offer.deferred or not ctx.opened_fs.hooks.asks_tool_exposure:
            return offer
        return dataclasses.replace(offer, lists_discovery=True)

    async def offer(self, ctx: Context) -> Offer:
        """Work out what this step offers: configuration, then every plugin's vote.

        The strictest answer wins, so a plugin can hide but never reveal
        (:func:`~ctxfs.tools.offers.voted`).
        """
        offer = self.configured()
        if not ctx.opened_fs.hooks.asks_tool_exposure:
            return offer
        exposed = {name: self._tools[name] for name in offer.exposure}
        return await voted(offer, ctx, exposed)

    async def plan(self, ctx: Context) -> dict[str, Exposure]:
        """The exposure of every tool in this step (:attr:`Offer.exposure`)."""
        return dict((await self.offer(ctx)).exposure)

    async def tools(self, ctx: Context, *, offer: Offer | None = None) -> list[ToolDefinition]:
        """The definitions offered in this step (with the discovery pair while any is deferred).

        Each is named as models call it: with :attr:`ToolsetOptions.tool_prefix`.
        """
        return self.listed(ctx, offer if offer is not None else await self.offer(ctx))

    def listed(self, ctx: Context, offer: Offer) -> list[ToolDefinition]:
        """The definitions *offer* holds, named as models call them (see :meth:`tools`)."""
        limits = Step(ctx=ctx, toolset=self, offer=offer, provider="generic").limits
        prefix = self.options.tool_prefix
        listed = []
        for name in offer.offered:
            tool = self._tools[name]
            defined = tool.definition(limits)
            description = _prefixed(defined.description, tool.mentions, prefix)
            listed.append(dataclasses.replace(defined, name=prefix + name, description=description))
        return listed

    async def definitions(
        self,
        ctx: Context,
        *,
        provider: Provider = "generic",
        openai_api: OpenAiApi = "chat",
        anthropic_text_editor: bool = True,
        offer: Offer | None = None,
    ) -> list[dict[str, Any]]:
        """The tool JSON for *provider*, for this step (:mod:`ctxfs.tools.providers`).

        Answer calls of the Responses API's ``apply_patch`` with
        :func:`~ctxfs.tools.answer_patch_call`; ``anthropic_text_editor=False`` offers Anthropic the
        four tools its text editor would stand for.
        """
        offer = offer if offer is not None else await self.offer(ctx)
        wanted = provider != "anthropic" or anthropic_text_editor
        return shaped(
            self.listed(ctx, offer),
            provider=provider,
            openai_api=openai_api,
            aliases=self._aliases.offered(offer, provider) if wanted else (),
            limits=Step(ctx=ctx, toolset=self, offer=offer, provider=provider).limits,
            prefix=self.options.tool_prefix,
        )

    # -- running a call ---------------------------------------------------------------------

    async def execute(
        self,
        ctx: Context,
        name: str,
        arguments: Mapping[str, Any] | str | None,
        *,
        provider: Provider = "generic",
        offer: Offer | None = None,
        progress: Progress | None = None,
    ) -> ToolResult:
        """Run tool *name* with the model's *arguments* (a mapping or a JSON string).

        *offer* is the step's (as listed); without one, it is worked out for this call. A long call
        (a search) reports to *progress*, if given, every :attr:`ToolsetOptions.progress_seconds`.
        With ``provider="anthropic"``, *name* may be Anthropic's text editor tool
        (``str_replace_based_edit_tool``). Never raises for a model's mistake, a plugin's answer or
        a store failure: those are error results. Only cancellation propagates.
        """
        try:
            offer = offer if offer is not None else await self.offer(ctx)
        except Exception as bug:
            log.exception("working out the offer failed")
            return _failure(name, contained(bug, "could not work out which tools are offered"))
        step = Step(ctx=ctx, toolset=self, offer=offer, provider=provider, progress=progress)
        resolved = self._resolve(step, name)
        if isinstance(resolved, FsError):
            return _failure(name, resolved)
        return await self.run(step, resolved, arguments)

    def _resolve(self, step: Step, called: str) -> str | FsError:
        """The registered name of the tool a model calls *called* in *step*, or why it may not.

        A provider's own tool is called by its name, any other with the tool prefix.
        """
        if any(alias.name == called for alias in self._aliases.offered(step.offer, step.provider)):
            return called
        offer, prefix, why = step.offer, self.options.tool_prefix, None
        name = called.removeprefix(prefix)
        if called.startswith(prefix):
            if name in offer.offered:
                return name
            if name in offer.failures:
                return offer.failures[name]
            if offer.exposure.get(name) is Exposure.DEFERRED:
                runner = f"{prefix}call_tool"
                return InvalidArgument(
                    f"tool {called!r} is not offered directly; run it through {runner}",
                    hint=f'Call {runner} with {{"name": "{name}", "arguments": "{{...}}"}}.',
                )
            if offer.exposure.get(name) is Exposure.HIDDEN and name in self._tools:
                why = f"tool {called!r} is not offered in this step"  # (listed once, maybe)
        own = [t for t in self._aliases.tools if t.name == called and t.provider == step.provider]
        if own:  # (listed once, by a harness, but not in this step)
            stands_for = ", ".join(prefix + name for name in own[0].stands_for)
            why = f"tool {called!r} stands for {stands_for}, which this step does not offer"
        return self._unknown(step, called, why)

    def _unknown(self, step: Step, called: str, why: str | None = None) -> InvalidArgument:
        offered = [self.options.tool_prefix + name for name in step.offer.offered]
        return InvalidArgument(
            f"{why or f'unknown tool {called!r}'}; the tools offered are: {', '.join(offered)}",
            hint="Call one of the offered tools.",
            details={"offered": offered},
        )

    async def run(
        self, step: Step, name: str, arguments: Mapping[str, Any] | str | None
    ) -> ToolResult:
        """Run registered tool *name* in *step* with the model's *arguments*; errors are results.

        Whether the tool may run is the caller's to check (:meth:`execute` does).
        """
        tool = self._tools.get(name)
        if tool is None:  # named by the offer of another toolset
            return _failure(name, self._unknown(step, name))
        target = None
        try:
            parsed = _parse(arguments)
            target = _target_of(parsed)
            return await tool.answer(step, tool.parse(parsed))
        except ValidationError as invalid:
            return _failure(name, _invalid(name, invalid), target)
        except FsError as error:
            return _failure(name, error, target)
        except Exception:
            log.exception("tool %s failed unexpectedly", name)
            unexpected = BackendError(
                f"{name} failed unexpectedly; the operation may not have happened",
                hint="Read the file again to see its state before retrying.",
            )
            return _failure(name, unexpected, target)


def _parse(arguments: Mapping[str, Any] | str | None) -> Mapping[str, Any]:
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError as bad:
            raise InvalidArgument(f"the arguments are not valid JSON: {bad}") from None
        except ValueError:  # (a number of more than 4,300 digits)
            raise InvalidArgument("the arguments hold a number too long to read") from None
        except RecursionError:
            raise InvalidArgument("the arguments nest too deeply to be read") from None
    if not isinstance(arguments, Mapping):
        raise InvalidArgument(
            f"the arguments must be a JSON object, not {type(arguments).__name__}"
        )
    for name, value in arguments.items():
        if any(abs(number) > _LARGEST_NUMBER for number in _whole_numbers(value)):
            raise InvalidArgument(
                f"{name}: a number beyond {_LARGEST_NUMBER}", details={"field": name}
            )
    return arguments


def _whole_numbers(data: object) -> Iterator[int]:
    """The whole numbers in *data*, however deep in its lists, tuples and mappings."""
    pending = [data]
    while pending:
        value = pending.pop()
        if isinstance(value, int):
            yield value
        elif isinstance(value, Mapping):
            pending.extend(value.values())
        elif isinstance(value, list | tuple):
            pending.extend(value)


def _target_of(arguments: Mapping[str, Any]) -> str | None:
    for key in ("file_path", "path"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value
    return None


def _invalid(name: str, invalid: ValidationError) -> InvalidArgument:
    problems = [
        {"field": ".".join(map(str, error["loc"])) or "(arguments)", "problem": error["msg"]}
        for error in invalid.errors(include_url=False)
    ]
    listed = "; ".join(f"{p['field']}: {p['problem']}" for p in problems)
    return InvalidArgument(
        f"invalid arguments for {name}: {listed}",
        hint="Fix the named argument(s) as the tool's schema describes, and call again.",
        details={"problems": problems, "field": problems[0]["field"] if problems else None},
    )


def _prefixed(text: str, names: tuple[str, ...], prefix: str) -> str:
    """*text* with each of the tool *names* it mentions as models call it (with *prefix*)."""
    if not prefix or not names:
        return text
    mentioned = re.compile(rf"(?<![\w`])({'|'.join(map(re.escape, names))})(?![\w`])")
    return mentioned.sub(lambda match: prefix + match.group(1), text)


def _failure(tool: str, error: FsError, target: str | None = None) -> ToolResult:
    return ToolResult.failed(tool, error, target, error_text(error))
