r"""Ignore files (``.gitignore`` and its kin) read as ripgrep reads them.

Each rule is a glob that must match the whole path of an entry relative to the directory of its
file (by :func:`~ctxfs.core.glob_matcher`, so no rule makes matching run away). A rule with no
slash but at its end matches a name at any depth; a leading ``/`` or one inside anchors it to the
file's directory; a trailing ``/`` matches directories only; ``!`` re-includes. Outside a class,
``\`` makes the next character literal; ``{a,b}`` is either (one level, no ranges), and one
file's braces give at most :data:`MOST_ALTERNATIVES` globs in all. Within one file, the last rule
that matches decides. A line that is no valid glob gives no rule.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Final

from ctxfs.core import FsError, GlobMatcher, glob_matcher

__all__ = ["MOST_ALTERNATIVES", "IgnoreFile"]

MOST_ALTERNATIVES: Final = 256
"""The globs one ignore file's braces may give in all; a rule past them gives none."""


@dataclass(frozen=True, kw_only=True)
class IgnoreRule:
    """One line of an ignore file."""

    globs: tuple[tuple[GlobMatcher, bool], ...]
    """Its alternatives, each with whether it matches in the file's directory only (anchored,
    with no slash of its own)."""
    include: bool
    """A negation (``!``): what it matches is included."""
    directories_only: bool

    def matches(self, path: str, *, directory: bool) -> bool:
        """Whether the rule matches *path* (relative to its file's directory)."""
        if self.directories_only and not directory:
            return False
        nested = "/" in path
        return any(glob.fullmatch(path) for glob, top in self.globs if not (top and nested))


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
        rules: list[IgnoreRule] = []
        left = MOST_ALTERNATIVES
        for line in text.split("\n"):
            rule = _rule(line.removesuffix("\r"), most=left)
            if rule is not None:
                rules.append(rule)
                left -= len(rule.globs) - 1
        return cls(kind=kind, directory=directory, rules=tuple(rules))

    def verdict(self, path: str, *, directory: bool) -> bool | None:
        """Whether the last rule matching *path* (relative to the file) excludes it.

        None: no rule matches.
        """
        for rule in reversed(self.rules):
            if rule.matches(path, directory=directory):
                return not rule.include
        return None


def _rule(line: str, *, most: int) -> IgnoreRule | None:
    """The rule of *line*, unless it is none or its braces give more than *most* globs."""
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
    anchored = anchored or "/" in line
    alternatives = _alternatives(line, most=most + 1)
    try:
        globs = tuple(
            (glob_matcher(glob, braces=False), anchored and "/" not in glob and glob != "**")
            for glob in alternatives or ()
            if glob
        )
    except FsError:
        return None  # (ripgrep drops such a line too)
    if not globs:
        return None
    return IgnoreRule(globs=globs, include=include, directories_only=directories_only)


def _alternatives(line: str, *, most: int) -> list[str] | None:
    """The globs *line* stands for, escapes made classes (None: not valid, or past *most*)."""
    pieces: list[list[str]] = [[""]]  # each: the choices at that place
    group: list[str] | None = None
    at = 0
    while at < len(line):
        char, start = line[at], at
        at += 1
        if char == "\\":
            if at == len(line):
                return None  # a dangling escape
            text, at = _literal(line[at]), at + 1
        elif char == "[":
            close = line.find("]", at + (2 if line[at : at + 1] in ("!", "^") else 1))
            if close == -1:
                return None  # an unclosed class
            text, at = line[start : close + 1], close + 1  # (as written: no escapes inside)
        elif char == "{" and group is None:
            pieces.append(group := [""])
            continue
        elif char in ",}" and group is not None:
            if char == ",":
                group.append("")
            else:
                pieces.append([""])
                group = None
            continue
        elif char == "{":
            return None  # a group within a group
        else:
            text = char
        target = group if group is not None else pieces[-1]
        target[-1] += text
    if group is not None or math.prod(len(choices) for choices in pieces) > most:
        return None
    return ["".join(chosen) for chosen in itertools.product(*pieces)]


def _literal(char: str) -> str:
    """*char*, escaped in a rule, as a glob that matches it alone."""
    return f"[{char}]" if char in "*?[]\\" else char
