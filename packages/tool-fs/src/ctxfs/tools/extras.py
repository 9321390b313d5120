"""The extras of ``ctxfs-tools``: a module that needs one says which, in one line."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["needs_extra"]


@contextmanager
def needs_extra(
    extra: str, *, module: str, distribution: str, packages: tuple[str, ...]
) -> Iterator[None]:
    """Run *module*'s imports of *packages*, which ``pip install 'ctxfs-tools[extra]'`` brings.

    Raises:
        ModuleNotFoundError: One of *packages* is not installed; the message names the
            *distribution* that brings it and the extra to install. A module missing from an
            installed package propagates as it is.

    """
    try:
        yield
    except ModuleNotFoundError as missing:
        if (missing.name or "").partition(".")[0] not in packages:
            raise
        raise ModuleNotFoundError(
            f"{module} needs {distribution}, which is not installed: "
            f"pip install 'ctxfs-tools[{extra}]'",
            name=missing.name,
        ) from None
