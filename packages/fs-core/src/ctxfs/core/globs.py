"""Glob patterns over root-relative paths, shared by the search tools and the path policies.

``*`` and ``?`` match within one path segment, ``**`` across any number of
segments, ``[...]`` is a class (``[!...]`` negated; never ``/``), and braces
give alternatives (``*.{py,pyi}``, ``{src,tests}/**``, ``v{1..3}``; expanded by
bracex, at most :data:`MAX_ALTERNATIVES`). A pattern (each alternative) without
``/`` matches a name at any depth, as in ``.gitignore``; one with ``/`` matches
the whole path below where the search starts.

No pattern makes matching run away: segments match one by one (a regex for up
to two ``*``, else a greedy scan) and ``**`` by a table over segment pairs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum
from functools import lru_cache, partial
from typing import Final

import bracex

from ctxfs.core.errors import InvalidArgument

__all__ = ["MAX_ALTERNATIVES", "GlobMatcher", "glob_matcher", "relative_to"]

MAX_ALTERNATIVES: Final = 1000
"""The most patterns one glob's braces may expand to."""


class _Wildcard(Enum):
    """``*`` (any run of characters) or ``?`` (any one character) within a segment."""

    STAR = "*"
    ANY = "?"


_STAR: Final = _Wildcard.STAR
_ANY: Final = _Wildcard.ANY
_MOST_STARS_FOR_REGEX: Final = 2
"""Up to this many ``*`` a segment is matched by a regular expression; with more, by the scan."""

_SPECIAL: Final = re.compile(r"[\[\]\\{},:!]")
"""Characters some search engine reads specially: a segment holding one is widened to ``*``."""
_WILDCARDS: Final = re.compile(r"[*?]+")

_Token = str | _Wildcard | re.Pattern[str]  # a literal character, a wildcard, a class
_Segment = Callable[[str], object]
"""One ``/``-separated part of a pattern, other than ``**``: truthy for a name it matches."""


class GlobMatcher:
    """A compiled glob pattern (made by :func:`glob_matcher`): the alternatives its braces give."""

    __slots__ = ("alternatives", "pattern")

    def __init__(self, pattern: str, alternatives: tuple[_Alternative, ...]) -> None:
        self.pattern = pattern
        self.alternatives = alternatives

    def __repr__(self) -> str:
        return f"GlobMatcher({self.pattern!r})"

    def fullmatch(self, path: str) -> bool:
        """Whether *path* (root-relative, ``/``-separated) matches the whole pattern."""
        if len(self.alternatives) == 1:  # the usual case: one call, not a generator
            return self.alternatives[0].fullmatch(path)
        return any(alternative.fullmatch(path) for alternative in self.alternatives)

    def may_hold(self, directory: str) -> bool:
        """Whether a path below *directory* (root-relative, not the root) may match."""
        names = directory.split("/")
        return any(alternative.may_hold(names) for alternative in self.alternatives)

    def outline(self, below: str = "") -> tuple[tuple[str, ...], ...]:
        r"""The pattern widened to a form every search engine reads alike: a first filter.

        One tuple of segments per alternative, each ``**`` or a name glob of ``*``
        and plain characters (an unanchored one starts with ``**``); ``?`` and any
        segment an engine could read specially become ``*``. Every path the pattern
        matches matches one of them. With *below*, each starts with its names, widened.
        """
        base = tuple(map(_widened, below.split("/"))) if below else ()
        return tuple(base + alternative.outline() for alternative in self.alternatives)

    @property
    def widened(self) -> bool:
        """Whether :meth:`outline` keeps paths the pattern does not (``*.[ch]``: ``*``)."""
        return any(alternative.widened for alternative in self.alternatives)

    def names(self) -> tuple[str, ...] | None:
        """Globs of file *names* (as :meth:`outline`'s) every matching path's name matches.

        None when the pattern does not narrow names (``src/**``, ``*.[ch]``).
        """
        names = tuple(dict.fromkeys(segments[-1] for segments in self.outline()))
        return None if "**" in names or "*" in names else names


class _Alternative:
    """One brace-free pattern."""

    __slots__ = ("_anywhere", "_fixed", "pattern", "segments")

    def __init__(self, pattern: str, segments: tuple[_Segment | None, ...]) -> None:
        self.pattern = pattern
        self.segments = segments
        """The pattern's parts; None is ``**`` (an unanchored pattern starts with one)."""
        self._anywhere = segments[0] is None and len(segments) > 1
        rest = segments[1:] if self._anywhere else segments
        self._fixed = None if None in rest else tuple(s for s in rest if s is not None)

    def fullmatch(self, path: str) -> bool:
        """Whether *path* matches this alternative."""
        fixed = self._fixed
        if fixed is not None and len(fixed) == 1 and self._anywhere:  # "**/name": the name only
            return bool(fixed[0](path.rpartition("/")[2]))
        names = path.split("/")
        if fixed is None:
            return self._spans(names)
        if self._anywhere and len(names) > len(fixed):
            names = names[len(names) - len(fixed) :]
        return len(names) == len(fixed) and all(
            segment(name) for segment, name in zip(fixed, names, strict=True)
        )

    def may_hold(self, names: list[str]) -> bool:
        """Whether a path below the directory *names* may match this alternative."""
        for segment, name in zip(self.segments, names, strict=False):
            if segment is None:
                return True
            if not segment(name):
                return False
        return len(names) < len(self.segments)

    @property
    def widened(self) -> bool:
        """Whether :meth:`outline` widened a segment."""
        return any(_widened(segment) != segment for segment in self.pattern.strip("/").split("/"))

    def outline(self) -> tuple[str, ...]:
        """The alternative's segments, as :meth:`GlobMatcher.outline` gives them."""
        anchored = "/" in self.pattern.strip("/")
        segments = self.pattern.strip("/").split("/")
        return tuple(("**",) if not anchored else ()) + tuple(map(_widened, segments))

    def _spans(self, names: list[str]) -> bool:
        """Whether the segments, ``**`` among them, match *names*: which names each may reach.

        A ``**`` takes any names (none at least, one at least last); linear in segments times
        names, with no recursion (a pattern may hold a thousand ``**``).
        """
        count = len(names)
        reached = [True] + [False] * count  # reached[i]: the segments so far took names[:i]
        for at, segment in enumerate(self.segments):
            if segment is None:
                first = reached.index(True) if True in reached else None
                if first is None:
                    return False
                if at == len(self.segments) - 1:  # a final "**": one or more names, any
                    return first < count
                reached = [first <= i < count for i in range(count + 1)]
            else:
                reached = [False] + [reached[i] and bool(segment(names[i])) for i in range(count)]
        return reached[count]


@lru_cache(maxsize=256)
def glob_matcher(pattern: str, *, braces: bool = True) -> GlobMatcher:
    """Compile *pattern*; ``fullmatch`` a root-relative path against the result.

    Without *braces*, ``{``, ``,`` and ``}`` are plain characters.

    Raises:
        InvalidArgument: The pattern (or an alternative) is empty, has an unclosed
            ``[``, or its braces expand to more than :data:`MAX_ALTERNATIVES` patterns (or
            nest too deeply to expand).

    """
    if not pattern or pattern.strip("/") == "":
        raise InvalidArgument("the glob pattern is empty", details={"field": "pattern"})
    try:
        braced = braces and "{" in pattern
        expanded = bracex.expand(pattern, limit=MAX_ALTERNATIVES) if braced else [pattern]
    except (bracex.ExpansionLimitException, RecursionError):
        raise InvalidArgument(
            f"the glob pattern's braces give more than {MAX_ALTERNATIVES} patterns, or nest "
            "too deeply",
            hint="Use fewer or smaller brace groups, or several calls.",
            details={"field": "pattern"},
        ) from None
    alternatives = tuple(dict.fromkeys(expanded))
    if not alternatives:
        raise InvalidArgument(
            f"the glob pattern {pattern!r} expands to nothing", details={"field": "pattern"}
        )
    return GlobMatcher(pattern, tuple(_alternative(one, pattern) for one in alternatives))


def _alternative(pattern: str, whole: str) -> _Alternative:
    if not pattern or pattern.strip("/") == "":
        raise InvalidArgument(
            f"the glob pattern {whole!r} has an empty alternative", details={"field": "pattern"}
        )
    anchored = "/" in pattern.strip("/")
    segments: list[_Segment | None] = [] if anchored else [None]  # unanchored: at any depth
    segments += [
        None if segment == "**" else _compile_segment(segment, whole)
        for segment in pattern.strip("/").split("/")
    ]
    return _Alternative(pattern, tuple(segments))


def _compile_segment(segment: str, pattern: str) -> _Segment:
    tokens: list[_Token] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            if not tokens or tokens[-1] is not _STAR:  # "**" inside a segment is one "*"
                tokens.append(_STAR)
        elif char == "?":
            tokens.append(_ANY)
        elif char == "[":
            negated = segment[index + 1 : index + 2] in ("!", "^")
            close = segment.find("]", index + (3 if negated else 2))  # "]" first is literal
            if close == -1:
                raise InvalidArgument(
                    f"the glob pattern {pattern!r} has an unclosed '['",
                    details={"field": "pattern"},
                )
            body = segment[index + 1 : close]
            if body[:1] in ("!", "^"):
                body = "^/" + body[1:]  # a class stays within its segment
            try:
                literal = body.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
                tokens.append(re.compile(f"[{literal}]"))
            except re.error as error:  # a reversed range: [z-a]
                raise InvalidArgument(
                    f"the glob pattern {pattern!r} has a bad class "
                    f"{segment[index : close + 1]!r}: {error.msg}",
                    hint="Write each range in a class low to high, as in [a-z].",
                    details={"field": "pattern"},
                ) from None
            index = close
        else:
            tokens.append(char)
        index += 1
    if tokens.count(_STAR) > _MOST_STARS_FOR_REGEX:
        return partial(_scan, tuple(tokens))
    return re.compile("".join(map(_regex_of, tokens)), re.DOTALL).fullmatch


def _widened(segment: str) -> str:
    """*segment* as :meth:`GlobMatcher.outline` gives it."""
    if segment == "**":
        return segment
    if _SPECIAL.search(segment) or not segment.isprintable() or segment.strip() != segment:
        return "*"
    return _WILDCARDS.sub("*", segment)


def _regex_of(token: _Token) -> str:
    if isinstance(token, re.Pattern):
        return token.pattern
    if isinstance(token, str):
        return re.escape(token)
    return "[^/]*" if token is _STAR else "[^/]"


def _scan(tokens: tuple[_Token, ...], name: str) -> bool:
    """Whether *name* matches *tokens*: greedy, going back only to the last ``*``."""
    token_at = name_at = 0
    star_token, star_name = -1, 0  # the last "*" seen, and where its match ends so far
    while name_at < len(name):
        token = tokens[token_at] if token_at < len(tokens) else None
        if token is _STAR:
            star_token, star_name = token_at, name_at
            token_at += 1
        elif token is not None and _one_matches(token, name[name_at]):
            token_at += 1
            name_at += 1
        elif star_token >= 0:  # let the last "*" take one more character, and go on from there
            token_at, star_name = star_token + 1, star_name + 1
            name_at = star_name
        else:
            return False
    return all(token is _STAR for token in tokens[token_at:])


def _one_matches(token: _Token, char: str) -> bool:
    if isinstance(token, str):
        return token == char
    if token is _ANY:
        return char != "/"
    return isinstance(token, re.Pattern) and token.fullmatch(char) is not None


def relative_to(path: str, root: str) -> str:
    """*path* below directory *root*, both canonical."""
    return path[len(root) + 1 :] if root else path
