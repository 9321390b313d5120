"""``list_dir``: one directory's entries, sorted, a page at a time."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field

from ctxfs.core import FileKind, normalize_path
from ctxfs.tools.results import Page, PageData, count, escape, page_footer, size, unnamed
from ctxfs.tools.tool import Limits, Ordinal, Step, Tool, ToolArgs

__all__ = ["LIST_DIR", "EntryData", "ListData", "ListDirArgs", "ListDirOptions", "ListDirTool"]


@dataclass(frozen=True, kw_only=True)
class ListDirOptions:
    """The options of ``list_dir``."""

    list_limit: int = 500


class ListDirArgs(ToolArgs):
    """Arguments of ``list_dir``."""

    path: str = ""
    offset: Ordinal | None = Field(default=None, description="First entry, 1-based.")
    limit: Ordinal | None = None


class EntryData(BaseModel):
    """One directory entry."""

    name: str
    path: str
    kind: str
    size: int | None


class ListData(PageData):
    """The data of a ``list_dir`` result."""

    entries: list[EntryData]
    unnamed: int = Field(
        default=0, description="Entries not listed: no path can name them (object keys)."
    )


class ListDirTool(Tool[ListDirArgs, ListData]):
    """List a directory."""

    name = "list_dir"

    summary = "List a directory (default: the workspace root): names sorted, with sizes."

    def page_limit(self, limits: Limits) -> int:
        return limits.of(ListDirOptions).list_limit

    async def run(self, step: Step, args: ListDirArgs) -> ListData:
        path = normalize_path(args.path)
        page = Page.of(args.offset, args.limit, step.limits.of(ListDirOptions).list_limit)
        listed = await step.ctx.fs.list_page(path, first=page.first, count=page.count)
        shown = listed.entries  # fewer than the page covers if some went since the listing
        covered = max(0, min(page.count, listed.total - page.first + 1))
        next_offset = page.next_offset(covered, listed.total)
        return self.data(
            target=path,
            entries=[EntryData.model_validate(entry, from_attributes=True) for entry in shown],
            total=listed.total,
            offset=page.first,
            next_offset=next_offset,
            truncated=next_offset is not None,
            unnamed=len(listed.unnamed),
        )

    def render(self, data: ListData, args: ListDirArgs) -> str:
        if data.total == 0:
            lines = [f"({data.target or 'the workspace root'} is empty)"]
        else:
            lines = [_entry(entry) for entry in data.entries]
            if data.next_offset is None and data.offset == 1:
                lines.append(f"({count(data.total, 'entry', 'entries')})")
            else:
                shown = len(data.entries)
                of = f"{data.total}"
                lines.append(page_footer("entries", data.offset, shown, of, data.next_offset))
        if data.unnamed:
            lines.append(unnamed(data.unnamed))
        return "\n".join(lines)


def _entry(entry: EntryData) -> str:
    name = escape(entry.name)
    if entry.kind == FileKind.DIRECTORY:
        return name + "/"
    if entry.kind == FileKind.SYMLINK:
        return name + "  (symbolic link)"
    if entry.kind == FileKind.OTHER:
        return name + "  (special file)"
    return f"{name}  ({size(entry.size or 0)})"


LIST_DIR = ListDirTool()
