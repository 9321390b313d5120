r"""Ignore files (``.gitignore`` and its kin) read as ripgrep reads them.

Each rule is a glob (:func:`~ctxfs.core.glob_matcher`'s syntax, where ``\`` makes the next
character literal) that must match the whole path of an entry relative to the directory of its
file. A rule with no slash but at its end matches a name at any depth; a leading ``/`` anchors
it to the file's directory; a trailing ``/`` matches directories only; ``!`` re-includes.
Within one file, the last rule that matches decides. A line that is no valid glob gives no rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ctxfs.core import FsError, GlobMatcher, glob_matcher

__all__ = ["IgnoreFile"]


@dataclass(frozen=True, kw_only=True)
class IgnoreRule:
    """One line of an ignore file."""

    glob: GlobMatcher
    top_only: bool
    """Anchored by a leading ``/`` with no other (nor ``**``): it matches in its directory only."""
    include: bool
    """A negation (``!``): what it matches is included."""
    directories_only: bool

    def matches(self, path: str, *, directory: bool) -> bool:
        """Whether the rule matches *path* (relative to its file's directory)."""
        return (
            (directory or not self.directories_only)
            and not (self.top_only and "/" in path)
            and self.glob.fullmatch(path)
        )


@dataclass(frozen=True, kw_only=True)
class IgnoreFile:
    """The rules of one ignore file, of a *kind* (its rank: the higher decides first)."""

    kind: int
    directory: str
    """Where the file applies: this directory and below it."""
    rules: tuple[IgnoreRule, ...]

    @classmethod
    def parse(cls, text: str, *, kind: int, directory: str) -> IgnoreFile:
        """The rules of *text*, the content of an ignore file that applies in *directory*."""
        lines = text.removeprefix("\ufeff").split("\n")
        rules = (_rule(line.removesuffix("\r")) for line in lines)
        return cls(kind=kind, directory=directory, rules=tuple(r for r in rules if r is not None))

    def verdict(self, path: str, *, directory: bool) -> bool | None:
        """Whether the last rule matching *path* (relative to the file) excludes it.

        None: no rule matches.
        """
        for rule in reversed(self.rules):
            if rule.matches(path, directory=directory):
                return not rule.include
        return None


_ESCAPED = re.compile(r"\\(.)")


def _rule(line: str) -> IgnoreRule | None:
    if line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = line.rstrip()
    include = anchored = False
    if line.startswith(("\\!", "\\#")):
        line = line[1:]
    else:
        if line.startswith("!"):
            include, line = True, line[1:]
        if line.startswith("/"):
            anchored, line = True, line[1:]
    directories_only = line.endswith("/")
    if directories_only:
        line = line[:-1].removesuffix("\\")
    braced = "{" in line  # (then the braces are expanded, undoing escapes)
    glob = _ESCAPED.sub(lambda escaped: _literal(escaped[1], braced=braced), line)
    if glob.endswith("\\"):
        return None  # a dangling escape
    try:
        matcher = glob_matcher(glob)
    except FsError:
        return None  # (ripgrep drops such a line too)
    return IgnoreRule(
        glob=matcher,
        top_only=anchored and "/" not in line and line != "**",
        include=include,
        directories_only=directories_only,
    )


def _literal(char: str, *, braced: bool) -> str:
    """*char*, escaped in the rule, as a glob that matches it alone."""
    if char in "*?[]":
        return f"[{char}]"
    if char == "\\":
        return "[\\\\]" if braced else "[\\]"
    return f"\\{char}" if braced and char in "{}," else char
