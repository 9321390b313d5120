r"""``PathRules``: deny and read-only rules, matched on canonical root-relative paths.

Names are compared folded (:func:`fold_name`: ``.GIT`` and ``.g\u200cit`` are
``.git``). A rule covers a path when it matches the path or an ancestor, as spelled
or as resolved (:attr:`Operation.resolved <ctxfs.core.Operation.resolved>`). What a
deny rule covers is also left out of listings and searches. Absolute patterns and
``..`` segments are refused.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ctxfs.core.errors import Denied, FsError, InvalidArgument
from ctxfs.core.globs import GlobMatcher, glob_matcher
from ctxfs.core.hookspecs import hookimpl

if TYPE_CHECKING:
    from ctxfs.core.context import Context
    from ctxfs.core.outcomes import Operation

__all__ = ["PathRules", "fold_name"]

_IGNORABLE = re.compile(
    "[\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0]"
)


def fold_name(text: str) -> str:
    """The form names are compared in: NFKC, case-folded, default-ignorables removed."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = "".join(char for char in folded if unicodedata.category(char) != "Cf")
    return _IGNORABLE.sub("", folded)


class PathRules:
    """Refuse operations on paths that match deny rules, and changes to read-only ones.

    Args:
        deny: Glob patterns (see :mod:`ctxfs.core.globs`) nothing may touch.
        read_only: Glob patterns that may be read but not changed.

    """

    def __init__(self, *, deny: Iterable[str] = (), read_only: Iterable[str] = ()) -> None:
        self.deny = [_rule(pattern) for pattern in deny]
        self.read_only = [_rule(pattern) for pattern in read_only]
        self.hides = bool(self.deny)
        """Whether these rules hide paths from listings (deny rules do)."""

    @hookimpl
    def ctxfs_authorize(self, ctx: Context, op: Operation) -> FsError | None:
        """Deny rules refuse everything; read-only rules refuse changes."""
        del ctx
        if not self.deny and not self.read_only:
            return None
        prefixes = _prefixes(op.path, op.resolved)
        rule = _covering(self.deny, prefixes)
        if rule is not None:
            return Denied(
                f"{op.path} is off limits (rule {rule!r})", path=op.path, details={"rule": rule}
            )
        if op.kind.mutates:
            rule = _covering(self.read_only, prefixes)
            if rule is not None:
                return Denied(
                    f"{op.path} is read-only (rule {rule!r})",
                    path=op.path,
                    hint="This path may be read but not changed; do not retry.",
                    details={"rule": rule},
                )
        return None

    @hookimpl
    def ctxfs_hidden(self, ctx: Context, paths: Sequence[str]) -> set[str]:
        """What a deny rule covers is left out of listings and searches, names included."""
        del ctx
        if not self.deny:
            return set()
        return {path for path in paths if _covering(self.deny, _prefixes(path))}


def _rule(pattern: str) -> tuple[str, GlobMatcher]:
    """A pattern, normalised as paths are, and its matcher.

    Raises:
        InvalidArgument: The pattern is empty, absolute or has a ``..`` segment.

    """
    segments = [segment for segment in pattern.split("/") if segment not in ("", ".")]
    if pattern.startswith("/") or ".." in segments or not segments:
        raise InvalidArgument(
            f"path rule {pattern!r} can never match a path inside the root: patterns are "
            "relative to the root, with no '..'",
            hint="Write the rule relative to the workspace root, e.g. 'secrets' or 'config/*.ini'.",
            details={"pattern": pattern},
        )
    normal = "/".join(segments)
    return normal, glob_matcher(fold_name(normal))


def _prefixes(*paths: str) -> list[list[str]]:
    """For each of *paths* (but the root), itself and its ancestors, folded (:func:`fold_name`)."""
    folded = [fold_name(path).split("/") for path in dict.fromkeys(paths) if path]
    return [
        ["/".join(segments[: depth + 1]) for depth in range(len(segments))] for segments in folded
    ]


def _covering(rules: list[tuple[str, GlobMatcher]], prefixes: list[list[str]]) -> str | None:
    """The first of *rules* that covers a path, the paths taken in turn (:func:`_prefixes`)."""
    for path_prefixes in prefixes:
        for pattern, matcher in rules:
            if any(matcher.fullmatch(prefix) for prefix in path_prefixes):
                return pattern
    return None
