"""Optional dependencies: a feature's library comes with an extra of the package that uses it."""

from __future__ import annotations

import importlib
from types import ModuleType

from ctxfs.core.errors import FsError, InvalidArgument

__all__ = ["require"]


def require(
    module: str, *, install: str, needed_by: str, error: type[FsError] = InvalidArgument
) -> ModuleType:
    """Import *module*, or say which extra brings it.

    *install* is the requirement to install (``"ctxfs-remote[s3]"``), *needed_by* the
    feature that needs it, as the message's subject (``"the s3 backend"``).

    Raises:
        FsError: *module* is not installed: an *error*, whose hint is the ``pip
            install`` line and whose details name *module* and *install*.

    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        line = f"pip install '{install}'"
        raise error(
            f"{needed_by} needs {module}, which is not installed ({line})",
            hint=line,
            details={"module": module, "install": install},
        ) from exc
