"""A griffe extension for the API reference: show Sphinx roles as code.

The docstrings cross-reference with Sphinx roles (:class:`FsError`, :meth:`~Fs.context`),
which mkdocstrings renders literally; this turns each into inline code of the name a reader
would see (the last component for a ``~`` target, or the role's title before ``<...>``).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|data|attr|exc|obj|const):`(?P<target>[^`]+)`")


def _shown(match: re.Match[str]) -> str:
    target = match["target"]
    if "<" in target:  # :meth:`title <target>`
        return f"`{target.split('<', 1)[0].strip()}`"
    if target.startswith("~"):
        return f"`{target[1:].rsplit('.', 1)[-1]}`"
    return f"`{target}`"


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles in every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Show the roles of *obj*'s docstring as inline code."""
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(_shown, obj.docstring.value)
