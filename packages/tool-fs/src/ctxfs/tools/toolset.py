"""``FsToolset``: the file tools, offered per step and run through one executor path.

:meth:`FsToolset.execute` never raises for anything a model can do wrong or the
store can do: validation failures, unknown tools, ``FsError`` and unexpected
exceptions alike come back as error results with a stable code.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Literal

from pydantic import ValidationError

from ctxfs.core import Context, FileKind, FsError
from ctxfs.core.errors import BackendError, InvalidArgument, OutsideRoot
from ctxfs.core.globs import glob_matcher, relative_to
from ctxfs.core.paths import normalize_path
from ctxfs.tools import hookspecs, render, tree
from ctxfs.tools.arguments import (
    ARGUMENTS,
    CallToolArgs,
    EditArgs,
    GlobArgs,
    GrepArgs,
    ListDirArgs,
    ReadArgs,
    SearchToolsArgs,
    WriteArgs,
)
from ctxfs.tools.definitions import (
    Exposure,
    ToolDefinition,
    ToolsetOptions,
    describe,
    openai_strict,
)
from ctxfs.tools.editor import (
    EDITOR_NAME,
    EDITOR_TYPE,
    Create,
    Insert,
    StrReplace,
    View,
    parse_command,
)
from ctxfs.tools.results import (
    EditData,
    EntryData,
    ErrorInfo,
    GlobData,
    GrepData,
    GrepMatch,
    InsertData,
    ListData,
    ReadData,
    ResultData,
    SearchToolsData,
    ToolResult,
    WriteData,
)

__all__ = ["FsToolset", "Provider"]

log = logging.getLogger(__name__)

Provider = Literal["generic", "openai", "anthropic"]
_EDITOR_TOOLS: Final = ("read", "write", "edit", "list_dir")
_GENERIC_TOOLS: Final = ("search_tools", "call_tool")
_RANK: Final = {Exposure.DIRECT: 0, Exposure.DEFERRED: 1, Exposure.HIDDEN: 2}


class FsToolset:
    """The model-facing file tools over a context's ``ctx.fs``.

    Args:
        options: Limits and exposure (:class:`ToolsetOptions`).

    """

    def __init__(self, options: ToolsetOptions | None = None) -> None:
        self.options = options if options is not None else ToolsetOptions()
        self._handlers: dict[str, Callable[[Context, Any], Awaitable[ToolResult]]] = {
            "read": self._read,
            "write": self._write,
            "edit": self._edit,
            "list_dir": self._list,
            "glob": self._glob,
            "grep": self._grep,
        }

    # -- what the model is offered ------------------------------------------------------

    async def plan(self, ctx: Context) -> dict[str, Exposure]:
        """The exposure of every file tool in this step (configuration, then plugins)."""
        manager = ctx.mount.plugin_manager
        hookspecs.declare(manager)
        plan: dict[str, Exposure] = {}
        for name in ARGUMENTS:
            exposure = self.options.exposure.get(name, Exposure.DIRECT)
            for vote in manager.hook.ctxfs_tool_exposure(ctx=ctx, tool=name):
                answer = await vote if inspect.isawaitable(vote) else vote
                if answer is not None and _RANK[Exposure(answer)] > _RANK[exposure]:
                    exposure = Exposure(answer)
            plan[name] = exposure
        return plan

    async def tools(self, ctx: Context) -> list[ToolDefinition]:
        """The definitions offered directly in this step (with the generic pair if needed)."""
        plan = await self.plan(ctx)
        names = [name for name, exposure in plan.items() if exposure is Exposure.DIRECT]
        if Exposure.DEFERRED in plan.values():
            names += list(_GENERIC_TOOLS)
        return [describe(name, ctx.mount.text_options, self.options) for name in names]

    async def definitions(
        self,
        ctx: Context,
        *,
        provider: Provider = "generic",
        openai_api: Literal["chat", "responses"] = "chat",
        anthropic_text_editor: bool = True,
    ) -> list[dict[str, Any]]:
        """The tool JSON for *provider*, for this step.

        ``generic``: ``{"name", "description", "parameters"}`` with plain JSON
        schemas. ``openai``: function tools valid in strict mode, in the Chat
        Completions shape, or the Responses shape with ``openai_api="responses"``.
        ``anthropic``: custom tools, with read, write, edit and list_dir
        advertised as Anthropic's text editor tool when all four are offered
        (unless ``anthropic_text_editor`` is false).
        """
        offered = await self.tools(ctx)
        if provider == "generic":
            return [
                {"name": t.name, "description": t.description, "parameters": t.input_schema}
                for t in offered
            ]
        if provider == "anthropic":
            return self._anthropic(ctx, offered, text_editor=anthropic_text_editor)
        if provider != "openai":
            raise ValueError(f"unknown provider {provider!r}")
        shaped = []
        for tool in offered:
            strict = tool.name != "call_tool"  # its free-form arguments cannot be strict
            function = {
                "name": tool.name,
                "description": tool.description,
                "parameters": openai_strict(tool.input_schema) if strict else tool.input_schema,
                "strict": strict,
            }
            shaped.append(
                {"type": "function", **function}
                if openai_api == "responses"
                else {"type": "function", "function": function}
            )
        return shaped

    def _anthropic(
        self, ctx: Context, offered: list[ToolDefinition], *, text_editor: bool
    ) -> list[dict[str, Any]]:
        names = {tool.name for tool in offered}
        typed = text_editor and names.issuperset(_EDITOR_TOOLS)
        shaped: list[dict[str, Any]] = []
        if typed:
            shaped.append(
                {
                    "type": EDITOR_TYPE,
                    "name": EDITOR_NAME,
                    "max_characters": ctx.mount.text_options.max_output_chars,
                }
            )
        shaped += [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in offered
            if not (typed and t.name in _EDITOR_TOOLS)
        ]
        return shaped

    # -- running a call ---------------------------------------------------------------------

    async def execute(
        self,
        ctx: Context,
        name: str,
        arguments: Mapping[str, Any] | str | None,
        *,
        provider: Provider = "generic",
    ) -> ToolResult:
        """Run tool *name* with the model's *arguments* (a mapping or a JSON string).

        With ``provider="anthropic"``, *name* may also be Anthropic's text editor
        tool (``str_replace_based_edit_tool``); its commands run as the same
        ctx.fs operations. Never raises for a model's mistake or a store
        failure: those come back as error results. Only cancellation propagates.
        """
        plan = await self.plan(ctx)
        offered = [n for n, e in plan.items() if e is Exposure.DIRECT]
        if Exposure.DEFERRED in plan.values():
            offered += list(_GENERIC_TOOLS)
        if (
            name == EDITOR_NAME
            and provider == "anthropic"
            and set(offered).issuperset(_EDITOR_TOOLS)
        ):
            return await self._run(ctx, name, arguments, plan)
        if name in _GENERIC_TOOLS and name in offered:
            return await self._run(ctx, name, arguments, plan)
        exposure = plan.get(name)
        if exposure is Exposure.DEFERRED:
            return _failure(
                name,
                InvalidArgument(
                    f"tool {name!r} is not offered directly; run it through call_tool",
                    hint=f'Call call_tool with {{"name": "{name}", "arguments": {{...}}}}.',
                ),
            )
        if exposure is not Exposure.DIRECT:
            return _failure(
                name,
                InvalidArgument(
                    f"unknown tool {name!r}; the tools offered are: {', '.join(offered)}",
                    hint="Call one of the offered tools.",
                    details={"offered": offered},
                ),
            )
        return await self._run(ctx, name, arguments, plan)

    async def _run(
        self,
        ctx: Context,
        name: str,
        arguments: Mapping[str, Any] | str | None,
        plan: Mapping[str, Exposure],
    ) -> ToolResult:
        target = None
        try:
            parsed = _parse(arguments)
            target = _target_of(parsed)
            return await self._dispatch(ctx, name, parsed, plan)
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

    async def _dispatch(
        self, ctx: Context, name: str, arguments: Mapping[str, Any], plan: Mapping[str, Exposure]
    ) -> ToolResult:
        if name == EDITOR_NAME:
            return await self._editor(ctx, parse_command(arguments))
        if name == "search_tools":
            return self._search(ctx, SearchToolsArgs.model_validate(arguments), plan)
        if name == "call_tool":
            call = CallToolArgs.model_validate(arguments)
            if plan.get(call.name) is not Exposure.DEFERRED:
                deferred = [n for n, e in plan.items() if e is Exposure.DEFERRED]
                raise InvalidArgument(
                    f"call_tool runs only tools found with search_tools; {call.name!r} is not one",
                    hint="Search with search_tools and pass one of the names it returns.",
                    details={"field": "name", "deferred": deferred},
                )
            return await self._run(ctx, call.name, call.arguments, plan)
        handler = self._handlers[name]
        return await handler(ctx, ARGUMENTS[name].model_validate(arguments))

    async def _read(self, ctx: Context, args: ReadArgs) -> ToolResult:
        most = ctx.mount.text_options.default_limit
        limit = min(args.limit or most, most)
        outcome = await ctx.fs.read(args.file_path, offset=args.offset or 1, limit=limit)
        data = ReadData(
            status="ok",
            tool="read",
            target=outcome.path,
            content=outcome.text,
            version=outcome.version,
            offset=outcome.offset,
            returned_lines=outcome.returned_lines,
            total_lines=outcome.total_lines,
            next_offset=outcome.next_offset,
            partial=outcome.partial,
            truncated_lines=list(outcome.truncated_lines),
            output_capped=outcome.output_capped,
            encoding=outcome.encoding,
        )
        return _success(render.read_text(outcome), data)

    async def _write(self, ctx: Context, args: WriteArgs) -> ToolResult:
        outcome = await ctx.fs.write(args.file_path, args.content)
        lines = len(args.content.splitlines())
        data = WriteData(
            status="ok",
            tool="write",
            target=outcome.path,
            created=outcome.created,
            version=outcome.version,
            previous_version=outcome.previous_version,
            size=outcome.size,
            first_line=outcome.first_line,
            last_line=outcome.last_line,
            diff=outcome.diff,
        )
        return _success(render.write_text(outcome, lines=lines), data)

    async def _edit(self, ctx: Context, args: EditArgs) -> ToolResult:
        outcome = await ctx.fs.edit(
            args.file_path, args.old_string, args.new_string, replace_all=args.replace_all
        )
        data = EditData(
            status="ok",
            tool="edit",
            target=outcome.path,
            replacements=outcome.replacements,
            replace_all=args.replace_all,
            version=outcome.version,
            previous_version=outcome.previous_version,
            first_line=outcome.first_line,
            last_line=outcome.last_line,
            stripped_line_numbers=outcome.stripped_line_numbers,
            diff=outcome.diff,
        )
        return _success(render.edit_text(outcome), data)

    async def _list(self, ctx: Context, args: ListDirArgs) -> ToolResult:
        path = normalize_path(args.path)
        entries = await ctx.fs.list(path)
        first, count = _page(args.offset, args.limit, self.options.list_limit)
        page = entries[first - 1 : first - 1 + count]
        following = first + len(page)
        next_offset = following if following <= len(entries) else None
        data = ListData(
            status="ok",
            tool="list_dir",
            target=path,
            entries=[
                EntryData(name=entry.name, path=entry.path, kind=entry.kind.value, size=entry.size)
                for entry in page
            ],
            total=len(entries),
            offset=first,
            next_offset=next_offset,
            truncated=next_offset is not None,
        )
        text = render.list_text(
            path, page, total=len(entries), first=first, next_offset=next_offset
        )
        return _success(text, data)

    async def _glob(self, ctx: Context, args: GlobArgs) -> ToolResult:
        root = normalize_path(args.path)
        matcher = glob_matcher(args.pattern)
        walked = await tree.walk(
            ctx, root, ignore=self.options.ignore, max_entries=self.options.max_walk_entries
        )
        paths = [e.path for e in walked.files if matcher.fullmatch(relative_to(e.path, root))]
        first, count = _page(args.offset, args.limit, self.options.glob_limit)
        page = paths[first - 1 : first - 1 + count]
        following = first + len(page)
        next_offset = following if following <= len(paths) else None
        data = GlobData(
            status="ok",
            tool="glob",
            target=root,
            pattern=args.pattern,
            paths=page,
            total=len(paths),
            offset=first,
            next_offset=next_offset,
            truncated=next_offset is not None,
            walk_truncated=walked.truncated,
        )
        text = render.glob_text(
            page,
            total=len(paths),
            first=first,
            next_offset=next_offset,
            walk_truncated=walked.truncated,
        )
        return _success(text, data)

    async def _grep(self, ctx: Context, args: GrepArgs) -> ToolResult:
        pattern = tree.LinePattern.compile(
            args.pattern,
            ignore_case=args.ignore_case,
            line_seconds=self.options.grep_line_seconds,
        )
        if args.glob is not None:
            glob_matcher(args.glob)  # refuse a bad filter before searching
        first, count = _page(args.offset, args.limit, self.options.grep_limit)
        found = await tree.grep(
            ctx,
            pattern,
            root=args.path,
            file_glob=args.glob,
            ignore=self.options.ignore,
            max_entries=self.options.max_walk_entries,
            first=first,
            count=count,
            max_line_chars=ctx.mount.text_options.max_line_chars,
        )
        following = first + len(found.hits)
        next_offset = following if following <= found.total else None
        data = GrepData(
            status="ok",
            tool="grep",
            target=normalize_path(args.path),
            pattern=args.pattern,
            matches=[GrepMatch(path=p, line=n, text=t) for p, n, t in found.hits],
            total=found.total,
            files_searched=found.files_searched,
            files_skipped=found.files_skipped,
            offset=first,
            next_offset=next_offset,
            truncated=next_offset is not None,
            walk_truncated=found.walk.truncated,
        )
        text = render.grep_text(
            found.hits,
            total=found.total,
            files=found.files_searched,
            first=first,
            next_offset=next_offset,
            skipped=found.files_skipped,
            walk_truncated=found.walk.truncated,
        )
        return _success(text, data)

    async def _editor(
        self, ctx: Context, command: View | Create | StrReplace | Insert
    ) -> ToolResult:
        """One text-editor command, as the ctx.fs operation it stands for."""
        path = self._editor_path(command.path)
        if isinstance(command, View):
            if (await ctx.fs.stat(path)).kind is FileKind.DIRECTORY:
                return await self._list(ctx, ListDirArgs(path=path))
            offset, limit = _view_range(command.view_range)
            return await self._read(ctx, ReadArgs(file_path=path, offset=offset, limit=limit))
        if isinstance(command, Create):
            return await self._write(ctx, WriteArgs(file_path=path, content=command.file_text))
        if isinstance(command, StrReplace):
            edit = EditArgs(file_path=path, old_string=command.old_str, new_string=command.new_str)
            return await self._edit(ctx, edit)
        if command.text is None:
            raise InvalidArgument(
                "insert needs the text to insert, as insert_text (or new_str)",
                details={"field": "insert_text"},
            )
        outcome = await ctx.fs.insert(path, command.insert_line, command.text)
        data = InsertData(
            status="ok",
            tool="insert",
            target=outcome.path,
            version=outcome.version,
            previous_version=outcome.previous_version,
            first_line=outcome.first_line,
            last_line=outcome.last_line,
            diff=outcome.diff,
        )
        return _success(render.insert_text(outcome), data)

    def _editor_path(self, path: str) -> str:
        """Map an absolute path under ``editor_root`` to a root-relative one."""
        if self.options.editor_root is None or not path.startswith("/"):
            return path
        root = self.options.editor_root.rstrip("/")
        if path != root and not path.startswith(root + "/"):
            raise OutsideRoot(
                f"{path!r} is outside the workspace {root}/",
                path=path,
                hint=f"Use a path under {root}/.",
            )
        return path[len(root) :].lstrip("/")

    def _search(
        self, ctx: Context, args: SearchToolsArgs, plan: Mapping[str, Exposure]
    ) -> ToolResult:
        words = [word for word in re.split(r"\W+", args.query.lower()) if word]
        found = []
        for name, exposure in plan.items():
            if exposure is not Exposure.DEFERRED:
                continue
            tool = describe(name, ctx.mount.text_options, self.options)
            haystack = " ".join(
                [tool.name, tool.description, tool.owner, json.dumps(tool.input_schema)]
            ).lower()
            score = sum(haystack.count(word) for word in words)
            if score or not words:
                found.append((score, tool))
        found.sort(key=lambda item: (-item[0], item[1].name))
        summaries = [
            {
                "name": tool.name,
                "owner": tool.owner,
                "description": tool.description,
                "arguments": {
                    field: spec.get("description", "")
                    for field, spec in tool.input_schema["properties"].items()
                },
                "required": tool.input_schema.get("required", []),
            }
            for _, tool in found
        ]
        lines = [
            f"{s['name']}({', '.join(s['arguments'])}): {s['description']}" for s in summaries
        ] or ["(no tool matches; try other words)"]
        data = SearchToolsData(status="ok", tool="search_tools", tools=summaries)
        return _success("\n".join(lines), data)


def _view_range(view_range: tuple[int, int] | None) -> tuple[int | None, int | None]:
    """The read offset and limit of a text-editor ``view_range`` (end -1: to the end)."""
    if view_range is None:
        return None, None
    start, end = view_range
    if start < 1 or (end != -1 and end < start):
        raise InvalidArgument(
            f"view_range {list(view_range)} is not [start, end] with 1 <= start <= end, "
            "or end -1 for the end of the file",
            details={"field": "view_range"},
        )
    return start, None if end == -1 else end - start + 1


def _page(offset: int | None, limit: int | None, most: int) -> tuple[int, int]:
    """The 1-based first item and the item count of a page."""
    return offset or 1, min(limit or most, most)


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


def _success(text: str, data: ResultData) -> ToolResult:
    return ToolResult(is_error=False, text=text, data=data.model_dump(mode="json"))


def _failure(tool: str, error: FsError, target: str | None = None) -> ToolResult:
    data = ResultData(
        status="error", tool=tool, target=error.path or target, error=ErrorInfo.of(error)
    )
    return ToolResult(
        is_error=True,
        text=render.error_text(error),
        data=data.model_dump(mode="json"),
        error_code=error.code,
    )
