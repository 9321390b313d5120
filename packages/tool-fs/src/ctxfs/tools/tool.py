"""What a tool is: one object that declares everything about itself.

A tool holds its arguments, its result data, whether it writes, its description (from the live
limits), how it runs on ``ctx.fs`` and how its result reads. A built-in tool is a package of
:mod:`ctxfs.tools.builtin`; any tool registered in an :class:`~ctxfs.tools.FsToolset` is offered to
every provider, the MCP server and pydantic-ai::

    class CountArgs(ToolArgs):
        file_path: str = Field(description="Path of the file.")

    class CountData(ResultData):
        words: int

    class WordCount(Tool[CountArgs, CountData]):
        name = "word_count"
        summary = "Count the words of a text file."

        async def run(self, step: Step, args: CountArgs) -> CountData:
            outcome = await step.ctx.fs.read(args.file_path)
            return self.data(outcome, words=len(outcome.text.split()))

        def render(self, data: CountData, args: CountArgs) -> str:
            return f"{data.target}: {data.words} words"

    toolset = FsToolset(tools=(*BUILTIN_TOOLS, WordCount()))  # or toolset.register(...)
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ctxfs.core import Context, TextOptions
from ctxfs.tools.definitions import Exposure, ToolDefinition, input_schema, output_schema
from ctxfs.tools.names import unescaped_path
from ctxfs.tools.results import ResultData, ToolResult

if TYPE_CHECKING:
    from ctxfs.tools.builtin import ToolsetOptions
    from ctxfs.tools.offers import Offer
    from ctxfs.tools.providers import Provider
    from ctxfs.tools.toolset import FsToolset

__all__ = [
    "READS",
    "Annotations",
    "Limits",
    "Offering",
    "Ordinal",
    "Progress",
    "Step",
    "Tool",
    "ToolArgs",
]

Ordinal = Annotated[int, Field(ge=1)]
"""A 1-based position or count of an argument (``minimum: 1`` in its schema)."""

Progress = Callable[[float, float | None, str], Awaitable[None]]
"""Where a long call reports how far it is: ``(done, total or None, message)``."""

ArgsT = TypeVar("ArgsT", bound=BaseModel)
DataT = TypeVar("DataT", bound=ResultData)
OptionsT = TypeVar("OptionsT")


_PATH_FIELDS: Final = frozenset({"path", "file_path", "source_path", "destination_path"})


class ToolArgs(BaseModel):
    r"""Base of every argument model: unknown fields are errors, values are immutable.

    An optional argument sent as null takes its default: OpenAI's strict mode makes models send
    every argument, null for the ones they leave out. A path may spell bytes of a name that are not
    UTF-8 as results show them (``\xNN``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # (as ResultData)

    @model_validator(mode="before")
    @classmethod
    def _null_is_default(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {
            key: unescaped_path(value) if key in _PATH_FIELDS and isinstance(value, str) else value
            for key, value in data.items()
            if value is not None
            or key not in cls.model_fields
            or cls.model_fields[key].is_required()
        }


@dataclass(frozen=True, kw_only=True)
class Annotations:
    """What a client may assume of a tool (MCP's tool annotations)."""

    read_only: bool
    destructive: bool
    idempotent: bool


READS = Annotations(read_only=True, destructive=False, idempotent=True)
"""The annotations of a tool that only reads."""


class Offering(enum.Enum):
    """When a tool is offered."""

    EXPOSED = "exposed"
    """By its exposure: configuration, then plugins (``ctxfs_tool_exposure``)."""
    DISCOVERY = "discovery"
    """While some tool is deferred (``search_tools``, ``call_tool``)."""
    PROVIDER = "provider"
    """To one provider, in place of the tools it stands for (Anthropic's text editor)."""


@dataclass(frozen=True, kw_only=True)
class Limits:
    """The live limits a tool describes itself with and runs under."""

    text: TextOptions
    options: ToolsetOptions

    def of(self, model: type[OptionsT]) -> OptionsT:
        """A tool's own options *model*: the toolset's, which hold every built-in tool's.

        Options the toolset's do not hold (another package's tool's) are *model*'s defaults.
        """
        return self.options if isinstance(self.options, model) else model()


@dataclass(frozen=True, kw_only=True)
class Step:
    """One call in one step: who calls, on which toolset, under which offer."""

    ctx: Context
    toolset: FsToolset
    offer: Offer
    provider: Provider
    progress: Progress | None = None
    """The caller's, if it asked to hear how a long call goes."""

    @property
    def limits(self) -> Limits:
        """The limits the call runs under."""
        return Limits(text=self.ctx.opened_fs.text_options, options=self.toolset.options)

    def tool(self, name: str) -> Tool[Any, Any]:
        """The toolset's tool *name* (another tool a tool runs on the model's behalf)."""
        return self.toolset.tool(name)

    async def run_tool(self, name: str, arguments: Mapping[str, Any] | str) -> ToolResult:
        """Run tool *name* with the model's *arguments*, as its own call (errors are results).

        *arguments* is a mapping or its JSON text. For a tool that runs another on the model's
        behalf: whether the other may run is the caller's to check against :attr:`offer`.
        """
        return await self.toolset.run(self, name, arguments)


class Tool(Generic[ArgsT, DataT]):
    """A model-facing tool. Subclass it; the class attributes declare what it is.

    ``Tool[Args, Data]`` sets :attr:`arguments` and :attr:`result` where the class does not.

    Give a :attr:`summary` (or implement :meth:`description`, for a text with the limits' numbers),
    then implement :meth:`run` and :meth:`render`, or :meth:`answer` for a tool that answers with
    another tool's result.
    """

    name: ClassVar[str]
    """The name the model calls it by."""
    arguments: ClassVar[type[BaseModel]]
    """Validates the model's arguments; its JSON schema is the input schema."""
    result: ClassVar[type[ResultData]]
    """The data of a successful call; its JSON schema is the output schema."""
    writes: ClassVar[bool] = False
    """Whether the tool changes files (a read-only toolset and switches hide it)."""
    annotations: ClassVar[Annotations] = READS
    owner: ClassVar[str] = "ctxfs.tools"
    """Who provides the tool (``search_tools`` finds tools by it)."""
    strict: ClassVar[bool] = True
    """Whether OpenAI's strict mode can describe its arguments (not free-form objects)."""
    offering: ClassVar[Offering] = Offering.EXPOSED
    exposure: ClassVar[Exposure] = Exposure.DIRECT
    """Its exposure where the configuration names none (:attr:`ToolsetOptions.exposure`)."""
    provider: ClassVar[str | None] = None
    """For a provider's own tool: the provider it is offered to."""
    stands_for: ClassVar[tuple[str, ...]] = ()
    """For a provider's own tool: the tools it replaces there (all must be offered)."""

    summary: ClassVar[str] = ""
    """What the model reads about the tool, when no limit's number is in it."""
    mentions: ClassVar[tuple[str, ...]] = ()
    """The tools its description names by their names (which then take the tool prefix)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in vars(cls).get("__orig_bases__", ()):  # (its own: a subclass inherits)
            if typing.get_origin(base) is Tool:
                models = zip(("arguments", "result"), typing.get_args(base), strict=True)
                for attribute, model in models:
                    if isinstance(model, type) and attribute not in vars(cls):
                        setattr(cls, attribute, model)

    def description(self, limits: Limits) -> str:
        """What the model reads about the tool, with the numbers *limits* set (:attr:`summary`)."""
        del limits
        if not self.summary:
            raise NotImplementedError(f"{type(self).__name__} has no summary or description")
        return self.summary

    def provider_definition(self, limits: Limits) -> dict[str, Any]:
        """A provider's own tool, as its API takes it (in place of a JSON schema)."""
        raise NotImplementedError

    def page_limit(self, limits: Limits) -> int | None:
        """The default and largest ``limit`` of a paged tool, stated in its schema."""
        del limits
        return None

    def new_state(self) -> Any:
        """What the tool keeps between calls, one per toolset (``step.toolset.state(name)``)."""
        return None

    def parse(self, arguments: Mapping[str, Any]) -> ArgsT:
        """Validate the model's *arguments* (raises ``pydantic.ValidationError``)."""
        parsed: ArgsT = self.arguments.model_validate(arguments)  # type: ignore[assignment]
        return parsed

    async def run(self, step: Step, args: ArgsT) -> DataT:
        """Do the work on ``step.ctx.fs`` and return the result's data (``FsError`` on failure)."""
        raise NotImplementedError

    def render(self, data: DataT, args: ArgsT) -> str:
        """What the model reads of a successful call."""
        raise NotImplementedError

    async def answer(self, step: Step, args: ArgsT) -> ToolResult:
        """The result of a call: :meth:`run`, then :meth:`render`."""
        data = await self.run(step, args)
        return ToolResult.success(self.render(data, args), data)

    def data(self, outcome: object = None, /, **fields: Any) -> DataT:
        """The result data of *outcome*, for this tool (see :meth:`ResultData.of`)."""
        data: DataT = self.result.of(outcome, tool=self.name, **fields)  # type: ignore[assignment]
        return data

    def definition(self, limits: Limits) -> ToolDefinition:
        """The tool as offered under *limits*, before any provider's wrapping."""
        return ToolDefinition(
            name=self.name,
            description=self.description(limits),
            input_schema=input_schema(self.arguments, page_limit=self.page_limit(limits)),
            output_schema=output_schema(self.result),
            read_only=self.annotations.read_only,
            destructive=self.annotations.destructive,
            idempotent=self.annotations.idempotent,
            owner=self.owner,
            strict=self.strict,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
