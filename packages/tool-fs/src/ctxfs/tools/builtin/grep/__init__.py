"""``grep``: lines of text files matching a regular expression (or the files, or counts), sorted."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field, NonNegativeInt

from ctxfs.core import glob_matcher, normalize_path
from ctxfs.tools.builtin.grep import query, search
from ctxfs.tools.builtin.grep.memo import ScanMemos
from ctxfs.tools.builtin.grep.patterns import LinePattern, type_matcher
from ctxfs.tools.builtin.grep.query import OutputMode
from ctxfs.tools.results import (
    SHOWN_CHARS,
    Page,
    PageData,
    around,
    count,
    escape,
    left_out,
    page_footer,
    unnamed,
    walk_stopped,
)
from ctxfs.tools.tool import Limits, Ordinal, Step, Tool, ToolArgs
from ctxfs.tools.walk import WalkFilter, WalkOptions

__all__ = [
    "GREP",
    "GrepArgs",
    "GrepData",
    "GrepFile",
    "GrepLine",
    "GrepMatch",
    "GrepOptions",
    "GrepTool",
]


@dataclass(frozen=True, kw_only=True)
class GrepOptions:
    """The options of ``grep`` (its walk's: :class:`~ctxfs.tools.walk.WalkOptions`)."""

    grep_limit: int = 100
    grep_line_seconds: float = 1.0
    """Time a grep pattern that can backtrack may spend on one line before the call
    fails ``invalid_argument``."""


MOST_CONTEXT = 50
"""The most context lines a hit may have on each side."""


class GrepArgs(ToolArgs):
    """Arguments of ``grep``."""

    pattern: str
    path: str = ""
    glob: str | None = Field(default=None, description="Files to search, e.g. `*.py`.")
    type: str | None = Field(default=None, description="File type, e.g. `py`, `js`.")
    output_mode: OutputMode = Field(
        default=OutputMode.CONTENT,
        description="content: matching lines; files_with_matches: paths; count: matches per file.",
    )
    ignore_case: bool = False
    multiline: bool = Field(default=False, description="Let matches span lines.")
    context: NonNegativeInt | None = Field(
        default=None, le=MOST_CONTEXT, description="Lines shown around each match."
    )
    before: NonNegativeInt | None = Field(default=None, le=MOST_CONTEXT)
    after: NonNegativeInt | None = Field(default=None, le=MOST_CONTEXT)
    hidden: bool = Field(default=False, description="Include hidden files.")
    include_ignored: bool = Field(default=False, description="Include what .gitignore excludes.")
    offset: Ordinal | None = Field(default=None, description="First match (or file), 1-based.")
    limit: Ordinal | None = None


class GrepLine(BaseModel):
    """A context line."""

    line: int
    text: str


class GrepMatch(BaseModel):
    """One line that matched (multiline: the lines one match spans)."""

    path: str
    line: int
    text: str = Field(
        description="The line; a line longer than the cap only around its first match."
    )
    column: int = Field(default=1, description="1-based column where the first match starts.")
    cut: bool = Field(default=False, description="`text` is a part of a longer line.")
    text_column: int = Field(default=1, description="1-based column where `text` starts.")
    line_chars: int | None = Field(default=None, description="Length of a cut line.")
    end_line: int | None = Field(
        default=None, description="The last line a multiline match spans, when past `line`."
    )
    before: list[GrepLine] = Field(default_factory=list, description="Context lines before.")
    after: list[GrepLine] = Field(default_factory=list, description="Context lines after.")


class GrepFile(BaseModel):
    """A file that holds matches."""

    path: str
    count: int | None = Field(
        description="Its matching lines (multiline: its matches); none (absent) in "
        "`files_with_matches` mode, which stops reading a file at its first match."
    )


class GrepData(PageData):
    """The data of a ``grep`` result."""

    pattern: str
    output_mode: OutputMode = OutputMode.CONTENT
    matches: list[GrepMatch] = Field(default_factory=list, description="Content mode's page.")
    files: list[GrepFile] = Field(
        default_factory=list, description="The page of files, in the other modes."
    )
    total_exact: bool = Field(
        default=True,
        description="Whether every file was searched; if not (the search stopped once it had "
        "this page, or at its time limit), `total` and `lines_matched` are lower bounds.",
    )
    lines_matched: int = Field(
        default=0,
        description="Matching lines (multiline: matches) in every file searched; in "
        "files_with_matches mode at least (a file may be read only to its first match).",
    )
    files_searched: int | None = Field(
        description="Files searched; absent where that number would count files hidden from you."
    )
    files_skipped: int = Field(description="Files not searched: binary, undecodable or unreadable.")
    skipped: dict[str, int] = Field(
        default_factory=dict,
        description="Files not searched, by the error code that stopped them.",
    )
    hidden_skipped: int = Field(
        default=0, description="Hidden entries (names starting with .) not searched."
    )
    ignored_skipped: int = Field(
        default=0, description="Entries an ignore file excludes, not searched."
    )
    walk_truncated: bool
    not_searched: list[str] = Field(
        default_factory=list,
        description="When the walk stopped at its size limit: the directories it did not "
        "finish (the first 100), to search with `path`.",
    )
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

    summary = (
        "Search the files under `path` (default: the workspace root) for a regular "
        "expression (Python syntax), as ripgrep does."
    )

    def page_limit(self, limits: Limits) -> int:
        return limits.of(GrepOptions).grep_limit

    def new_state(self) -> ScanMemos:
        """What the pages of recent searches learned (:mod:`.memo`)."""
        return ScanMemos()

    async def run(self, step: Step, args: GrepArgs) -> GrepData:
        options, walking = step.limits.of(GrepOptions), step.limits.of(WalkOptions)
        pattern = LinePattern.compile(
            args.pattern,
            ignore_case=args.ignore_case,
            line_seconds=options.grep_line_seconds,
            multiline=args.multiline,
        )
        glob = None if args.glob is None else glob_matcher(args.glob)
        kind = None if args.type is None else type_matcher(args.type)
        filters = [matcher.fullmatch for matcher in (glob, kind) if matcher is not None]
        context = args.context or 0
        key = _search_key(args)
        memos: ScanMemos = step.toolset.state(self.name)
        memo = memos.memo(step.ctx, key)
        found = await search.grep(
            step.ctx,
            query.GrepQuery(
                pattern=pattern,
                root=args.path,
                mode=args.output_mode,
                before=context if args.before is None else args.before,
                after=context if args.after is None else args.after,
                multiline=args.multiline,
                file_filter=(lambda path: all(keep(path) for keep in filters)) if filters else None,
                filter_widened=any(m.widened for m in (glob, kind) if m is not None),
                names=None if kind is None else kind.names(),
                glob=glob,
                only=WalkFilter(
                    skip_dirs=walking.ignore, hidden=args.hidden, ignored=args.include_ignored
                ),
                max_entries=walking.max_walk_entries,
                page=(page := Page.of(args.offset, args.limit, options.grep_limit)),
                max_line_chars=step.ctx.opened_fs.text_options.max_line_chars,
                seconds=walking.grep_seconds,
                memo=memo,
                progress=_reporter(step),
                progress_seconds=step.toolset.options.progress_seconds,
            ),
        )
        shown = len(found.hits) + len(found.files)
        counted = args.output_mode is OutputMode.COUNT
        next_offset = page.next_offset(shown, found.total)
        if next_offset is None and found.complete:  # answered whole: no page will follow
            memos.forget(step.ctx, key)
        return self.data(
            target=normalize_path(args.path),
            pattern=args.pattern,
            output_mode=args.output_mode,
            matches=[_match(hit) for hit in found.hits],
            files=[
                GrepFile(path=item.path, count=item.count if counted else None)
                for item in found.files
            ],
            total=found.total,
            total_exact=found.complete,
            lines_matched=found.lines_matched,
            files_searched=found.files_searched if found.searched_told else None,
            files_skipped=sum(found.skipped.values()),
            skipped=dict(sorted(found.skipped.items())),
            hidden_skipped=found.walk.hidden,
            ignored_skipped=found.walk.ignored,
            offset=page.first,
            next_offset=next_offset,
            truncated=next_offset is not None,
            walk_truncated=found.walk.truncated,
            not_searched=found.walk.not_listed[:100],
            unnamed=found.walk.unnamed,
            timed_out=found.timed_out,
        )

    def render(self, data: GrepData, args: GrepArgs) -> str:
        lines = _listed(data)
        searched = "" if data.files_searched is None else count(data.files_searched, "file")
        if data.output_mode is OutputMode.CONTENT:
            noun, unit = "matches", ("match", "matches")
        else:
            noun, unit = "matching files", ("file", "files")
        if data.total == 0:
            lines.append(f"(no match in {searched})" if searched else "(no match)")
        elif data.next_offset is None and data.offset == 1:
            where = f" in {searched} searched" if searched else ""
            lines.append(f"({count(data.total, *unit)}{where})")
        else:
            at_least = "" if data.total_exact else "at least "
            of = f"{at_least}{data.total}" + (f" in {searched} searched" if searched else "")
            shown = len(data.matches) + len(data.files)
            lines.append(page_footer(noun, data.offset, shown, of, data.next_offset))
        if data.output_mode is OutputMode.COUNT and data.total:
            in_all = "in all" if data.total_exact else "at least, in the files searched"
            lines.append(f"({count(data.lines_matched, 'matching line')} {in_all})")
        if data.skipped:
            reasons = ", ".join(
                f"{n} {_REASONS.get(code, code)}" for code, n in data.skipped.items()
            )
            lines.append(f"({count(data.files_skipped, 'file')} skipped: {reasons})")
        if left := left_out(data.hidden_skipped, data.ignored_skipped):
            lines.append(left)
        if any(m.cut for m in data.matches):
            lines.append("(long lines are shown around their first match, … marks a cut)")
        if data.walk_truncated:
            lines.append(walk_stopped(data.not_searched))
        if data.unnamed:
            lines.append(unnamed(data.unnamed))
        if data.timed_out:
            lines.append(
                "(the search stopped at its time limit: the counts cover what it searched; "
                "give a narrower path or glob, or a simpler pattern)"
            )
        return "\n".join(lines)


def _reporter(step: Step) -> query.SearchProgress | None:
    """The search's progress, as the caller hears it (files searched, of how many)."""
    progress = step.progress
    if progress is None:
        return None

    async def report(status: query.SearchStatus) -> None:
        parts = []
        if status.searched is not None:
            of = f" of {status.files:,}" if status.files is not None else ""
            parts.append(f"{status.searched:,}{of} files searched")
        if status.matching_files is not None:
            parts.append(f"{count(status.matching_files, 'file')} with matches so far")
        if status.matching_lines is not None:
            parts.append(count(status.matching_lines, "matching line"))
        done = status.searched if status.searched is not None else status.matching_files
        await progress(done or 0, status.files, ", ".join(parts) or "searching")

    return report


def _search_key(args: GrepArgs) -> tuple[object, ...]:
    """What decides a search's items (not its page, nor its context lines)."""
    decisive = args.model_dump(exclude={"path", "offset", "limit", "context", "before", "after"})
    return ("grep", normalize_path(args.path), *decisive.values())


_REASONS = {
    "hard_linked": "hard-linked (the harness may allow reading them)",
    "binary_file": "binary",
    "not_a_regular_file": "not regular (FIFOs, sockets, devices)",
    "encoding_error": "undecodable",
    "too_large": "too large",
    "line_too_long": f"holding a line over {search.LINE_MAX_CHARS:,} characters",
}


def _match(hit: query.Hit) -> GrepMatch:
    return GrepMatch(
        path=hit.path,
        line=hit.line,
        text=hit.text,
        column=hit.column + 1,
        cut=hit.cut,
        text_column=hit.text_start + 1,
        line_chars=hit.line_chars if hit.cut else None,
        end_line=hit.end_line,
        before=[GrepLine(line=line.number, text=line.text) for line in hit.before],
        after=[GrepLine(line=line.number, text=line.text) for line in hit.after],
    )


def _listed(data: GrepData) -> list[str]:
    """The result's lines: paths, counts, or matches with their context, as ripgrep shows them.

    A matching line is ``path:line: text``, a context line ``path-line- text``; a line
    that is both is shown once, as a match, and ``--`` separates groups that are apart.
    """
    if data.output_mode is OutputMode.FILES:
        return [escape(item.path) for item in data.files]
    if data.output_mode is OutputMode.COUNT:
        return [f"{escape(item.path)}:{item.count}" for item in data.files]
    rows: dict[tuple[str, int], str | None] = {}  # None: a line inside a multiline match
    for match in data.matches:
        path = escape(match.path)
        for context in (*match.before, *match.after):
            rows.setdefault(
                (match.path, context.line), f"{path}-{context.line}- {escape(context.text)}"
            )
        if match.end_line is None:
            rows[match.path, match.line] = f"{path}:{match.line}: {_shown(match)}"
            continue
        block = [f"{path}:{match.line}-{match.end_line}:", *map(escape, match.text.split("\n"))]
        rows[match.path, match.line] = "\n".join(block)
        for inside in range(match.line + 1, match.end_line + 1):
            rows[match.path, inside] = None
    order = {path: index for index, path in enumerate(dict.fromkeys(m.path for m in data.matches))}
    grouped = any(match.before or match.after for match in data.matches)
    lines: list[str] = []
    last: tuple[str, int] | None = None
    for key in sorted(rows, key=lambda key: (order[key[0]], key[1])):
        if grouped and last is not None and (key[0] != last[0] or key[1] > last[1] + 1):
            lines.append("--")
        if (text := rows[key]) is not None:
            lines.append(text)
        last = key
    return lines


def _shown(match: GrepMatch) -> str:
    """The line as the model sees it: a few hundred characters around the match."""
    text, begin = around(match.text, match.column - match.text_column, SHOWN_CHARS)
    head = "… " if begin or match.text_column > 1 else ""
    end = match.text_column - 1 + begin + len(text)
    tail = " …" if end < (match.line_chars or len(match.text)) else ""
    return head + escape(text) + tail


GREP = GrepTool()
