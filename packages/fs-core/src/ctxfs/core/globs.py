"""Glob patterns over root-relative paths, shared by the search tools and the path policies.

``*`` and ``?`` match within one path segment, ``**`` across any number of
segments, ``[...]`` is a class (``[!...]`` negated). A pattern without ``/``
matches a name at any depth, as in ``.gitignore``; one with ``/`` matches the
whole path below where the search starts.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ctxfs.core.errors import InvalidArgument

__all__ = ["glob_matcher", "relative_to"]


@lru_cache(maxsize=256)
def glob_matcher(pattern: str) -> re.Pattern[str]:
    """Compile *pattern* to a regular expression to ``fullmatch`` paths with.

    Raises:
        InvalidArgument: The pattern is empty or has an unclosed ``[``.

    """
    if not pattern or pattern.strip("/") == "":
        raise InvalidArgument("the glob pattern is empty", details={"field": "pattern"})
    anchored = "/" in pattern.strip("/")
    segments = pattern.strip("/").split("/")
    parts: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
            continue
        parts.append(_segment(segment, pattern) + ("" if last else "/"))
    body = "".join(parts)
    return re.compile(body if anchored else f"(?:.*/)?{body}", re.DOTALL)


def _segment(segment: str, pattern: str) -> str:
    out, index = [], 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
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
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            index = close
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def relative_to(path: str, root: str) -> str:
    """*path* below directory *root*, both canonical."""
    return path[len(root) + 1 :] if root else path
