"""Optional dependencies: each store's client comes with an extra of ctxfs-remote."""

from __future__ import annotations

import importlib
from types import ModuleType

from ctxfs.core import InvalidArgument

__all__ = ["require"]


def require(module: str, *, extra: str) -> ModuleType:
    """Import *module*, or explain which extra of ctxfs-remote provides it.

    Raises:
        InvalidArgument: *module* is not installed.

    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        install = f"pip install 'ctxfs-remote[{extra}]'"
        raise InvalidArgument(
            f"the {extra} backend needs {module}, which is not installed ({install})",
            hint=install,
            details={"module": module, "extra": extra},
        ) from exc
