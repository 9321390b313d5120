"""What a walk leaves out: ignore files, hidden names and the configured directories.

The rules follow ripgrep's defaults. A walk skips:

- names starting with ``.`` (hidden), unless asked for them;
- directories named in ``ToolsetOptions.ignore`` (``.git``, ``node_modules``, ...);
- what ``.gitignore``, ``.ignore`` and ``.git/info/exclude`` exclude, unless asked
  to include ignored files. Each ignore file applies to the directory it sits in
  and below, in git's syntax (pathspec's ``GitIgnoreSpec``: negation, anchoring,
  directory-only patterns); a deeper file overrides a shallower one, and in one
  directory ``.ignore`` overrides ``.gitignore``, which overrides the
  repository's ``.git/info/exclude``. As with ripgrep's ``--no-require-git``,
  ``.gitignore`` counts outside a git repository too. A directory left out is
  not entered, so nothing below it can be included again (as in git).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ctxfs.core import relative_to

if TYPE_CHECKING:
    import pathspec

__all__ = ["IGNORE_FILES", "IgnoreRules", "WalkFilter"]

IGNORE_FILES: tuple[str, ...] = (".gitignore", ".ignore")
"""The ignore files read in each directory, weakest first."""
EXCLUDE: str = ".git/info/exclude"
"""The repository's own ignore file, read at the top of a walk."""


@dataclass(frozen=True, kw_only=True)
class WalkFilter:
    """What a walk leaves out."""

    skip_dirs: frozenset[str]
    """Directory names never entered (``ToolsetOptions.ignore``)."""
    hidden: bool = False
    """Include names starting with ``.``."""
    ignored: bool = False
    """Include what ignore files exclude (they are then not read at all)."""


@dataclass(frozen=True)
class IgnoreRules:
    """The ignore files that apply in one directory, each with the directory it sits in."""

    specs: tuple[tuple[str, pathspec.GitIgnoreSpec], ...] = ()
    """(directory, rules), weakest first."""

    def adding(self, directory: str, texts: list[str]) -> IgnoreRules:
        """These rules, then those of *texts* (ignore files of *directory*, weakest first)."""
        import pathspec  # noqa: PLC0415 - loaded by the first ignore file read

        added = [
            (directory, pathspec.GitIgnoreSpec.from_lines(text.splitlines())) for text in texts
        ]
        return IgnoreRules(self.specs + tuple(added)) if added else self

    def excludes(self, path: str, *, directory: bool) -> bool:
        """Whether the strongest rule that matches *path* excludes it (a negation includes)."""
        for base, spec in reversed(self.specs):
            relative = relative_to(path, base)
            verdict = spec.check_file(relative + "/" if directory else relative).include
            if verdict is not None:
                return verdict
        return False
