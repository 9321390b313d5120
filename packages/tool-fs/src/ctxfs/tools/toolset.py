"""``FsToolset``: a registry of tools, offered per step and run through one executor path.

A step's offer is worked out once (:meth:`FsToolset.offer`: configuration,
then every plugin's ``ctxfs_tool_exposure`` vote) and serves both the listing
and the calls of that step. :meth:`FsToolset.execute` never raises for anything
a model can do wrong, a plugin can answer or the store can do: validation
failures, unknown tools, ``FsError`` and unexpected exceptions alike come back
as error results with a stable code. Only cancellation propagates.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

from pydantic import ValidationError

from ctxfs.core import BackendError, Context, FsError, InvalidArgument
from ctxfs.tools.builtin import BUILTIN_TOOLS, ToolsetOptions
from ctxfs.tools.definitions import Exposure, ToolDefinition, openai_strict
from ctxfs.tools.results import ToolResult, error_text
from ctxfs.tools.tool import Offering, Progress, Step, Tool

__all__ = ["FsToolset", "Offer", "Provider"]

log = logging.getLogger(__name__)

Provider = Literal["generic", "openai", "anthropic"]
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
        return self.direct + (self.discovery if self.deferred else ())


class FsToolset:
    """The model-facing tools over a context's ``ctx.fs``: a registry of :class:`Tool`.

    Args:
        options: Limits and exposure (:class:`ToolsetOptions`).
        tools: The tools to start with (default: :data:`~ctxfs.tools.builtin.BUILTIN_TOOLS`);
            :meth:`register` adds more.

    Raises:
        ValueError: :attr:`ToolsetOptions.tools` names a tool that is not :attr:`selectable`.

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
        self._configured: tuple[object, Offer] | None = None
        """The offer when no plugin has a say (the configuration's alone, worked out once),
        with the configuration it was worked out from."""
        for tool in tools:
            self.register(tool)
        unknown = sorted(set(self.options.tools or ()) - set(self.selectable))
        if unknown:
            raise ValueError(
                f"no tool is named {', '.join(map(repr, unknown))} "
                f"(the tools: {', '.join(self.selectable)})"
            )

    # -- the registry ----------------------------------------------------------------------

    def register(self, tool: Tool[Any, Any]) -> None:
        """Add *tool*; it is offered, described and run like the built-in ones.

        Raises:
            ValueError: A tool of that name is registered already.

        """
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is registered already")
        self._tools[tool.name] = tool
        self._states[tool.name] = tool.new_state()
        self._configured = None

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

    async def offer(self, ctx: Context) -> Offer:
        """Work out what this step offers: configuration, then every plugin's vote.

        The strictest answer wins, so a plugin can hide but never reveal. A plugin
        that raises, or answers what is no exposure, hides the tool for the step:
        it is logged, and a call of the tool fails with the error.
        """
        if ctx.mount.hooks.asks_tool_exposure:
            return await self._offer(ctx, plugins=True)
        configuration = (self.options, tuple(self.options.exposure.items()))
        if self._configured is None or self._configured[0] != configuration:
            self._configured = (configuration, await self._offer(ctx, plugins=False))
        return self._configured[1]

    async def _offer(self, ctx: Context, *, plugins: bool) -> Offer:
        chosen = self.options.tools
        exposure: dict[str, Exposure] = {}
        failures: dict[str, FsError] = {}
        for tool in self._tools.values():
            if tool.offering is not Offering.EXPOSED:
                continue
            level = self.options.exposure.get(tool.name, Exposure.DIRECT)
            if (self.options.read_only and tool.writes) or (
                chosen is not None and tool.name not in chosen
            ):
                level = Exposure.HIDDEN
            if not plugins:
                exposure[tool.name] = level
                continue
            try:
                votes = await ctx.mount.hooks.tool_exposure(ctx, tool.name, writes=tool.writes)
            except Exception as failure:
                log.exception("a ctxfs_tool_exposure plugin failed for tool %r", tool.name)
                failures[tool.name] = _contained(
                    failure, f"could not tell whether {tool.name!r} is offered"
                )
                votes = [Exposure.HIDDEN]
            for vote in votes:
                answer, complaint = _exposure(vote)
                if complaint is not None:
                    log.error("a ctxfs_tool_exposure plugin answered badly: %s", complaint)
                    failures[tool.name] = BackendError(
                        f"could not tell whether {tool.name!r} is offered: {complaint}",
                        hint="Report this to whoever runs the tools.",
                    )
                if answer is not None and _RANK[answer] > _RANK[level]:
                    level = answer
            exposure[tool.name] = level
        discovery = tuple(
            tool.name for tool in self._tools.values() if tool.offering is Offering.DISCOVERY
        )
        return Offer(
            exposure=MappingProxyType(exposure),
            discovery=discovery,
            failures=MappingProxyType(failures),
        )

    async def plan(self, ctx: Context) -> dict[str, Exposure]:
        """The exposure of every tool in this step (:attr:`Offer.exposure`)."""
        return dict((await self.offer(ctx)).exposure)

    async def tools(self, ctx: Context, *, offer: Offer | None = None) -> list[ToolDefinition]:
        """The definitions offered in this step (with the discovery pair while any is deferred).

        Each is named as models call it: with :attr:`ToolsetOptions.tool_prefix`.
        """
        offer = offer if offer is not None else await self.offer(ctx)
        step = Step(ctx=ctx, toolset=self, offer=offer, provider="generic")
        prefix = self.options.tool_prefix
        return [
            dataclasses.replace(self._tools[name].definition(step.limits), name=prefix + name)
            for name in offer.offered
        ]

    async def definitions(
        self,
        ctx: Context,
        *,
        provider: Provider = "generic",
        openai_api: Literal["chat", "responses"] = "chat",
        anthropic_text_editor: bool = True,
        offer: Offer | None = None,
    ) -> list[dict[str, Any]]:
        """The tool JSON for *provider*, for this step.

        ``generic``: ``{"name", "description", "parameters"}`` with plain JSON
        schemas. ``openai``: function tools valid in strict mode (where a tool's
        arguments allow it), in the Chat Completions shape, or the Responses
        shape with ``openai_api="responses"``, where the Responses API's built-in
        ``apply_patch`` stands for the ``apply_patch`` function (answer its calls
        with :func:`~ctxfs.tools.answer_patch_call`). ``anthropic``: custom tools, with
        read, write, edit and list_dir advertised as Anthropic's text editor
        tool when all four are offered (unless ``anthropic_text_editor`` is false).
        """
        offer = offer if offer is not None else await self.offer(ctx)
        offered = await self.tools(ctx, offer=offer)
        prefix = self.options.tool_prefix
        if provider == "generic":
            return [
                {"name": t.name, "description": t.description, "parameters": t.input_schema}
                for t in offered
            ]
        if provider == "anthropic":
            step = Step(ctx=ctx, toolset=self, offer=offer, provider=provider)
            aliases = self._aliases(step) if anthropic_text_editor else []
            covered = {prefix + name for alias in aliases for name in alias.stands_for}
            return [alias.provider_definition(step.limits) for alias in aliases] + [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in offered
                if t.name not in covered
            ]
        if provider != "openai":
            raise ValueError(f"unknown provider {provider!r}")
        shaped: list[dict[str, Any]] = []
        if openai_api == "responses":  # its built-in tools (Chat Completions has none)
            step = Step(ctx=ctx, toolset=self, offer=offer, provider=provider)
            aliases = self._aliases(step)
            covered = {prefix + name for alias in aliases for name in alias.stands_for}
            shaped = [alias.provider_definition(step.limits) for alias in aliases]
            offered = [tool for tool in offered if tool.name not in covered]
        for tool in offered:
            function = {
                "name": tool.name,
                "description": tool.description,
                "parameters": openai_strict(tool.input_schema)
                if tool.strict
                else tool.input_schema,
                "strict": tool.strict,
            }
            shaped.append(
                {"type": "function", **function}
                if openai_api == "responses"
                else {"type": "function", "function": function}
            )
        return shaped

    def _aliases(self, step: Step) -> list[Tool[Any, Any]]:
        """The provider's own tools offered in this step: each stands for tools all offered."""
        return [
            tool
            for tool in self._tools.values()
            if tool.offering is Offering.PROVIDER
            and tool.provider == step.provider
            and set(tool.stands_for) <= set(step.offer.direct)
        ]

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

        A long call (a search) reports how far it is to *progress*, if given,
        after :attr:`ToolsetOptions.progress_seconds` and as often after that.

        *offer* is the step's (as listed); without one, it is worked out for this
        call. With ``provider="anthropic"``, *name* may also be Anthropic's text
        editor tool (``str_replace_based_edit_tool``); its commands run as the
        same ctx.fs operations. Never raises for a model's mistake, a plugin's
        answer or a store failure: those come back as error results. Only
        cancellation propagates.
        """
        try:
            offer = offer if offer is not None else await self.offer(ctx)
        except Exception as bug:
            log.exception("working out the offer failed")
            return _failure(name, _contained(bug, "could not work out which tools are offered"))
        step = Step(ctx=ctx, toolset=self, offer=offer, provider=provider, progress=progress)
        resolved = self._resolve(step, name)
        if isinstance(resolved, FsError):
            return _failure(name, resolved)
        return await self.run(step, resolved, arguments)

    def _resolve(self, step: Step, called: str) -> str | FsError:
        """The registered name of the tool a model calls *called* in *step*, or why it may not.

        A provider's own tool is called by its name, any other with the tool prefix.
        """
        if any(alias.name == called for alias in self._aliases(step)):
            return called
        offer, prefix = step.offer, self.options.tool_prefix
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
        return self._unknown(step, called)

    def _unknown(self, step: Step, called: str) -> InvalidArgument:
        offered = [self.options.tool_prefix + name for name in step.offer.offered]
        return InvalidArgument(
            f"unknown tool {called!r}; the tools offered are: {', '.join(offered)}",
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


def _contained(failure: Exception, what: str) -> FsError:
    """*failure* as an error a result can carry."""
    if isinstance(failure, FsError):
        return failure
    return BackendError(f"{what}: {failure!r}", hint="Report this to whoever runs the tools.")


def _parse(arguments: Mapping[str, Any] | str | None) -> Mapping[str, Any]:
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError as bad:
            raise InvalidArgument(f"the arguments are not valid JSON: {bad}") from None
    if not isinstance(arguments, Mapping):
        raise InvalidArgument(
            f"the arguments must be a JSON object, not {type(arguments).__name__}"
        )
    return arguments


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


def _failure(tool: str, error: FsError, target: str | None = None) -> ToolResult:
    return ToolResult.failed(tool, error, target, error_text(error))
