"""``open_fs``: from a URL or a path to an ``Fs``, through the ``ctxfs.backends`` entry points.

A package provides a scheme by an entry point in group ``ctxfs.backends`` named
after it: ``factory(url: str, **options) -> Backend``. A plain path is ``file``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, Final

from ctxfs.core.backend import Backend
from ctxfs.core.errors import FsError, InvalidArgument
from ctxfs.core.fs import Fs, FsOptions

__all__ = ["BACKENDS_GROUP", "open_backend", "open_fs"]

BACKENDS_GROUP: Final = "ctxfs.backends"

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

BackendFactory = Callable[..., Backend]


def open_fs(url_or_path: str | os.PathLike[str], /, **options: Any) -> Fs:
    """Open the store at *url_or_path* and return an :class:`Fs` over it.

    ``"memory://"`` is a private in-memory store, ``"memory://name"`` one shared by
    name within the process. A plain path or ``file://`` URL is local disk
    (ctxfs-local); ``s3://bucket/prefix``, ``gs://``, ``az://`` and ``sftp://`` come
    with ctxfs-remote's extras, and ``fsspec+<protocol>://`` opens any fsspec
    filesystem (a scheme ``family+name`` falls back to ``family``'s factory). The
    :class:`~ctxfs.core.fs.FsOptions` among *options* go to :class:`Fs`; the others
    to the backend.

    Raises:
        InvalidArgument: No installed package provides the scheme, or the
            backend refused the options (the message says what to install).

    """
    mine = {name: options.pop(name) for name in FsOptions.__optional_keys__ if name in options}
    return Fs(open_backend(url_or_path, **options), **mine)


def open_backend(url_or_path: str | os.PathLike[str], **options: Any) -> Backend:
    """Return the backend for *url_or_path*, built by its scheme's factory."""
    url = os.fspath(url_or_path)
    match = _SCHEME.match(url)
    scheme = match.group(1).lower() if match else "file"
    factory = _factory(scheme)
    try:
        return factory(url, **options)
    except FsError:
        raise
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"cannot open {url!r}: {exc}") from exc


def _factory(scheme: str) -> BackendFactory:
    from importlib.metadata import entry_points  # noqa: PLC0415 - its import costs every import

    found = entry_points(group=BACKENDS_GROUP, name=scheme)
    if not found and "+" in scheme:  # a family: "fsspec+memory" is served by "fsspec"
        scheme = scheme.partition("+")[0]
        found = entry_points(group=BACKENDS_GROUP, name=scheme)
    if not found:
        known = sorted({ep.name for ep in entry_points(group=BACKENDS_GROUP)})
        raise InvalidArgument(
            f"no installed package provides the {scheme!r} scheme "
            f"(installed schemes: {', '.join(known) or 'none'})",
            hint=f"Install the package that registers {scheme!r} in the {BACKENDS_GROUP!r} "
            "entry point group, or use an installed scheme.",
            details={"scheme": scheme, "installed": known},
        )
    (entry_point, *_) = found
    try:
        factory: BackendFactory = entry_point.load()
    except ImportError as exc:
        distribution = entry_point.dist.name if entry_point.dist is not None else "its package"
        raise InvalidArgument(
            f"the backend for scheme {scheme!r} ({distribution}) cannot be imported: {exc}",
            hint=f"Reinstall {distribution} with its dependencies.",
            details={"scheme": scheme, "distribution": distribution},
        ) from exc
    return factory
