"""``grep``: lines of text files matching a regular expression, sorted, with exact totals."""

from __future__ import annotations

from pydantic import BaseModel, Field, PositiveInt

from ctxfs.core import glob_matcher, normalize_path
from ctxfs.tools import tree
from ctxfs.tools.paging import Page, PageData
from ctxfs.tools.patterns import LinePattern
from ctxfs.tools.render import (
    SHOWN_CHARS,
    WALK_TRUNCATED,
    around,
    count,
    escape,
    page_footer,
    unnamed,
)
from ctxfs.tools.tool import Limits, Step, Tool, ToolArgs

__all__ = ["GREP", "GrepArgs", "GrepData", "GrepMatch", "GrepTool"]


class GrepArgs(ToolArgs):
    """Arguments of ``grep``."""

    pattern: str = Field(description="Regular expression (Python syntax) to search for.")
    path: str = Field(
        default="", description="File or directory to search (default: the workspace root)."
    )
    glob: str | None = Field(
        default=None, description="Only search files whose path matches this glob, e.g. `*.py`."
    )
    ignore_case: bool = Field(default=False, description="Match letters of either case.")
    offset: PositiveInt | None = Field(
        default=None, description="1-based number of the first match to return (default 1)."
    )
    limit: PositiveInt | None = Field(default=None, description="How many matches at most.")


class GrepMatch(BaseModel):
    """One line that matched."""

    path: str
    line: int
    text: str = Field(
        description="The line; a line longer than the cap only around its first match."
    )
    column: int = Field(default=1, description="1-based column where the first match starts.")
    cut: bool = Field(default=False, description="`text` is a part of a longer line.")
    text_column: int = Field(default=1, description="1-based column where `text` starts.")
    line_chars: int | None = Field(default=None, description="Length of a cut line.")


class GrepData(PageData):
    """The data of a ``grep`` result."""

    pattern: str
    matches: list[GrepMatch]
    files_searched: int
    files_skipped: int = Field(description="Files not searched: binary, undecodable or unreadable.")
    walk_truncated: bool
    unnamed: int = Field(
        default=0, description="Entries not listed: no path can name them (object keys)."
    )
    timed_out: bool = Field(
        default=False,
        description="The search stopped at its time limit: totals count what it searched.",
    )


class GrepTool(Tool[GrepArgs, GrepData]):
    """Search text files."""

    name = "grep"
    arguments = GrepArgs
    result = GrepData

    def description(self, limits: Limits) -> str:
        options = limits.options
        return (
            "Search text files for a regular expression (Python syntax), line by line. "
            f"Returns `path:line: text`, sorted by path and line, at most "
            f"{options.grep_limit:,} matches per call, with exact totals and the `offset` "
            "to continue. `glob` filters files as in the glob tool; binary files are "
            f"skipped; so are these directories: {', '.join(sorted(options.ignore))}, and "
            "what a policy denies. Long lines are shown cut around their match. A search "
            f"stops after {options.grep_seconds:g} s and says what it covered. Searching does "
            "not count as reading a file before editing it."
        )

    def page_limit(self, limits: Limits) -> int:
        return limits.options.grep_limit

    async def run(self, step: Step, args: GrepArgs) -> GrepData:
        options = step.toolset.options
        pattern = LinePattern.compile(
            args.pattern, ignore_case=args.ignore_case, line_seconds=options.grep_line_seconds
        )
        if args.glob is not None:
            glob_matcher(args.glob)  # refuse a bad filter before searching
        page = Page.of(args.offset, args.limit, options.grep_limit)
        found = await tree.grep(
            step.ctx,
            pattern,
            root=args.path,
            file_glob=args.glob,
            ignore=options.ignore,
            max_entries=options.max_walk_entries,
            page=page,
            max_line_chars=step.ctx.mount.text_options.max_line_chars,
            seconds=options.grep_seconds,
        )
        next_offset = page.next_offset(len(found.hits), found.total)
        return self.data(
            target=normalize_path(args.path),
            pattern=args.pattern,
            matches=[
                GrepMatch(
                    path=hit.path,
                    line=hit.line,
                    text=hit.text,
                    column=hit.column + 1,
                    cut=hit.cut,
                    text_column=hit.text_start + 1,
                    line_chars=hit.line_chars if hit.cut else None,
                )
                for hit in found.hits
            ],
            total=found.total,
            files_searched=found.files_searched,
            files_skipped=found.files_skipped,
            offset=page.first,
            next_offset=next_offset,
            truncated=next_offset is not None,
            walk_truncated=found.walk.truncated,
            unnamed=found.walk.unnamed,
            timed_out=found.timed_out,
        )

    def render(self, data: GrepData, args: GrepArgs) -> str:
        lines = [f"{escape(m.path)}:{m.line}: {_shown(m)}" for m in data.matches]
        files = count(data.files_searched, "file")
        if data.total == 0:
            lines.append(f"(no match in {files})")
        elif data.next_offset is None and data.offset == 1:
            lines.append(f"({count(data.total, 'match', 'matches')} in {files} searched)")
        else:
            of = f"{data.total} in {files} searched"
            shown = len(data.matches)
            lines.append(page_footer("matches", data.offset, shown, of, data.next_offset))
        if data.files_skipped:
            skipped = count(data.files_skipped, "binary, undecodable or unreadable file")
            lines.append(f"({skipped} skipped)")
        if any(m.cut for m in data.matches):
            lines.append("(long lines are shown around their first match, … marks a cut)")
        if data.walk_truncated:
            lines.append(WALK_TRUNCATED)
        if data.unnamed:
            lines.append(unnamed(data.unnamed))
        if data.timed_out:
            lines.append(
                "(the search stopped at its time limit: the counts cover what it searched; "
                "give a narrower path or glob, or a simpler pattern)"
            )
        return "\n".join(lines)


def _shown(match: GrepMatch) -> str:
    """The line as the model sees it: a few hundred characters around the match."""
    text, begin = around(match.text, match.column - match.text_column, SHOWN_CHARS)
    head = "… " if begin or match.text_column > 1 else ""
    end = match.text_column - 1 + begin + len(text)
    tail = " …" if end < (match.line_chars or len(match.text)) else ""
    return head + escape(text) + tail


GREP = GrepTool()
