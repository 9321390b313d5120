"""``glob``: files by path pattern, sorted, with exact totals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from ctxfs.core import glob_matcher, normalize_path, relative_to
from ctxfs.core.kit import listing_work
from ctxfs.tools import walk
from ctxfs.tools.results import (
    Page,
    PageData,
    count,
    escape,
    left_out,
    page_footer,
    unnamed,
    walk_stopped,
)
from ctxfs.tools.tool import Limits, Ordinal, Step, Tool, ToolArgs
from ctxfs.tools.walk import WalkFilter, WalkOptions

__all__ = ["GLOB", "GlobArgs", "GlobData", "GlobOptions", "GlobTool"]


@dataclass(frozen=True, kw_only=True)
class GlobOptions:
    """The options of ``glob`` (its walk's: :class:`~ctxfs.tools.walk.WalkOptions`)."""

    glob_limit: int = 200


class GlobArgs(ToolArgs):
    """Arguments of ``glob``."""

    pattern: str
    path: str = ""
    sort: Literal["path", "modified"] = Field(default="path", description="modified: newest first.")
    hidden: bool = Field(default=False, description="Include hidden files.")
    include_ignored: bool = Field(default=False, description="Include what .gitignore excludes.")
    offset: Ordinal | None = Field(default=None, description="First path, 1-based.")
    limit: Ordinal | None = None


class GlobData(PageData):
    """The data of a ``glob`` result."""

    pattern: str
    paths: list[str]
    walk_truncated: bool = Field(description="Whether the directory walk hit its size limit.")
    timed_out: bool = Field(
        default=False,
        description="Whether the listing stopped at its time limit (total: at least).",
    )
    not_searched: list[str] = Field(
        default_factory=list,
        description="When the walk stopped at its size limit: the directories it did not "
        "finish (the first 100), to search with `path`.",
    )
    hidden_skipped: int = Field(default=0, description="Hidden entries left out.")
    ignored_skipped: int = Field(
        default=0, description="Entries an ignore file excludes, left out."
    )
    unnamed: int = Field(
        default=0, description="Entries not listed: no path can name them (object keys)."
    )


class GlobTool(Tool[GlobArgs, GlobData]):
    """Find files by path pattern."""

    name = "glob"

    summary = (
        "Find files by path pattern under `path` (default: the workspace root), e.g. "
        "`src/**/*.{ts,tsx}`; a pattern without / matches names at any depth (`*.py`)."
    )

    def page_limit(self, limits: Limits) -> int:
        return limits.of(GlobOptions).glob_limit

    async def run(self, step: Step, args: GlobArgs) -> GlobData:
        options = step.limits.of(WalkOptions)
        root = normalize_path(args.path)
        matcher = glob_matcher(args.pattern)
        only = WalkFilter(
            skip_dirs=options.ignore, hidden=args.hidden, ignored=args.include_ignored
        )
        if args.sort == "modified":  # the walk brings each file's time
            walked = await walk.walk(
                step.ctx, root, only=only, max_entries=options.max_walk_entries, glob=matcher
            )
        else:
            walked = await walk.files_below(
                step.ctx,
                root,
                only=only,
                max_entries=options.max_walk_entries,
                seconds=options.grep_seconds,
                glob=matcher,
            )

        def matching() -> list[str]:
            matches = matcher.fullmatch
            if root:
                found = [e for e in walked.files if matches(relative_to(e.path, root))]
            else:  # paths are relative to the root already
                found = [e for e in walked.files if matches(e.path)]
            if args.sort == "modified":  # newest first; the path breaks ties
                found.sort(key=lambda entry: (-(entry.mtime or 0.0), entry.path))
            return [entry.path for entry in found]

        paths = await listing_work(len(walked.files), matching)
        page = Page.of(args.offset, args.limit, step.limits.of(GlobOptions).glob_limit)
        shown = page.cut(paths)
        next_offset = page.next_offset(len(shown), len(paths))
        return self.data(
            target=root,
            pattern=args.pattern,
            paths=shown,
            total=len(paths),
            offset=page.first,
            next_offset=next_offset,
            truncated=next_offset is not None,
            walk_truncated=walked.truncated,
            timed_out=walked.timed_out,
            not_searched=walked.not_listed[:100],
            hidden_skipped=walked.hidden,
            ignored_skipped=walked.ignored,
            unnamed=walked.unnamed,
        )

    def render(self, data: GlobData, args: GlobArgs) -> str:
        lines = [escape(path) for path in data.paths]
        if data.total == 0:
            lines.append("(no file matches)")
        elif data.next_offset is None and data.offset == 1 and not data.timed_out:
            lines.append(f"({count(data.total, 'file')} match{'es' if data.total == 1 else ''})")
        else:
            of = f"{'at least ' if data.timed_out else ''}{data.total} matching"
            lines.append(page_footer("files", data.offset, len(data.paths), of, data.next_offset))
        if left := left_out(data.hidden_skipped, data.ignored_skipped):
            lines.append(left)
        if data.walk_truncated:
            lines.append(walk_stopped(data.not_searched))
        if data.timed_out:
            lines.append("(the listing stopped at its time limit: give a narrower path or pattern)")
        if data.unnamed:
            lines.append(unnamed(data.unnamed))
        return "\n".join(lines)


GLOB = GlobTool()
