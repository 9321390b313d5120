"""``open_fs``: from a URL or a path to an ``Fs``, through the ``ctxfs.backends`` entry points.

A package provides a scheme by declaring an entry point in group
``ctxfs.backends`` whose name is the scheme and whose object is a factory
``factory(url: str, **options) -> Backend``. A plain path is the ``file`` scheme.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from importlib.metadata import entry_points
from typing import Any, Final

from ctxfs.core.backend import Backend
from ctxfs.core.errors import FsError, InvalidArgument
from ctxfs.core.filecontext import DEFAULT_LOCK_TIMEOUT
from ctxfs.core.fs import Fs
from ctxfs.core.text import TextOptions

__all__ = ["BACKENDS_GROUP", "open_backend", "open_fs"]

BACKENDS_GROUP: Final = "ctxfs.backends"

_PROVIDERS: Final = {
    "file": "ctxfs-local",
    "memory": "ctxfs-core",
    "s3": "ctxfs-remote[s3]",
    "gs": "ctxfs-remote[gcs]",
    "gcs": "ctxfs-remote[gcs]",
    "az": "ctxfs-remote[azure]",
    "abfs": "ctxfs-remote[azure]",
    "sftp": "ctxfs-remote[sftp]",
    "fsspec": "ctxfs-remote",
}
"""Which distribution to install for the schemes ctxfs knows of."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

BackendFactory = Callable[..., Backend]


def open_fs(
    url_or_path: str | os.PathLike[str],
    *,
    plugins: Iterable[object] = (),
    load_entrypoints: bool = True,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    text_options: TextOptions | None = None,
    **options: Any,
) -> Fs:
    """Open the store at *url_or_path* and return an :class:`Fs` over it.

    ``"memory://"`` is a private in-memory store; ``"memory://name"`` one shared
    by name within the process. A plain path or ``file://`` URL is local disk
    (ctxfs-local); ``s3://bucket/prefix``, ``gs://``, ``az://`` and ``sftp://``
    come with ctxfs-remote's extras, and ``fsspec+<protocol>://`` opens any
    fsspec filesystem. A scheme ``family+name`` falls back to the factory of
    ``family``. *options* go to the backend; the other
    keywords to :class:`Fs`.

    Raises:
        InvalidArgument: No installed package provides the scheme (the message
            names the one to install), or the backend refused the options.

    """
    backend = open_backend(url_or_path, **options)
    return Fs(
        backend,
        plugins=plugins,
        load_entrypoints=load_entrypoints,
        lock_timeout=lock_timeout,
        text_options=text_options,
    )


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
    found = entry_points(group=BACKENDS_GROUP, name=scheme)
    if not found and "+" in scheme:  # a family: "fsspec+memory" is served by "fsspec"
        scheme = scheme.partition("+")[0]
        found = entry_points(group=BACKENDS_GROUP, name=scheme)
    provider = _PROVIDERS.get(scheme)
    install = f"pip install '{provider}'" if provider else None
    if not found:
        known = sorted({ep.name for ep in entry_points(group=BACKENDS_GROUP)})
        raise InvalidArgument(
            f"no ctxfs backend is installed for scheme {scheme!r}"
            + (f"; it is provided by {provider} ({install})" if provider else "")
            + f". Installed schemes: {', '.join(known) or 'none'}",
            hint=install or "Use one of the installed schemes.",
            details={"scheme": scheme, "provider": provider, "installed": known},
        )
    (entry_point, *_) = found
    try:
        factory: BackendFactory = entry_point.load()
    except ImportError as exc:
        raise InvalidArgument(
            f"the backend for scheme {scheme!r} cannot be imported ({exc})"
            + (f"; install its dependencies with {install}" if install else ""),
            hint=install or "Install the backend's dependencies.",
            details={"scheme": scheme, "provider": provider},
        ) from exc
    return factory
