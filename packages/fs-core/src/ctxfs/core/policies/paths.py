r"""``PathRules``: deny and read-only rules, matched on canonical root-relative paths.

Names are compared folded: NFKC, case-folded, and without default-ignorable code
points, so ``.git``, ``.GIT``, ``.g\u200cit`` and its full-width spelling are one
name for a rule. A rule covers a path when it matches the path or any of its
ancestors (so ``.git`` covers ``sub/.git/config``, ``secrets`` covers ``secrets/key``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ctxfs.core.errors import Denied, FsError
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
        self.deny = [(pattern, glob_matcher(fold_name(pattern))) for pattern in deny]
        self.read_only = [(pattern, glob_matcher(fold_name(pattern))) for pattern in read_only]

    @hookimpl
    def ctxfs_authorize(self, ctx: Context, op: Operation) -> FsError | None:
        """Deny rules refuse everything; read-only rules refuse changes."""
        del ctx
        rule = _covering(self.deny, op.path)
        if rule is not None:
            return Denied(
                f"{op.path} is off limits (rule {rule!r})", path=op.path, details={"rule": rule}
            )
        if op.kind.mutates:
            rule = _covering(self.read_only, op.path)
            if rule is not None:
                return Denied(
                    f"{op.path} is read-only (rule {rule!r})",
                    path=op.path,
                    hint="This path may be read but not changed; do not retry.",
                    details={"rule": rule},
                )
        return None


def _covering(rules: list[tuple[str, GlobMatcher]], path: str) -> str | None:
    if not rules or not path:
        return None
    segments = fold_name(path).split("/")
    prefixes = ["/".join(segments[: depth + 1]) for depth in range(len(segments))]
    for pattern, matcher in rules:
        if any(matcher.fullmatch(prefix) for prefix in prefixes):
            return pattern
    return None
