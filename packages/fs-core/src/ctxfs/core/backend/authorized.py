"""What the policies judged for the call in progress, so that a backend opens nothing else.

Core locates a path (:meth:`Backend.locate`), lets the policies judge that
location, then calls the backend with the canonical path, which the backend opens
again. Where a path can lead through symbolic links, another process may swap one
in between, and the backend would reach a place no policy judged. While core runs
such a call, :func:`authorized_location` gives, for each canonical path, the
location judged; a backend with links compares what it opened with it and raises
:func:`relocated` on a difference, before it reads or changes anything.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType

from ctxfs.core.backend.files import Location
from ctxfs.core.errors import Stale

__all__ = ["authorized_location", "authorizing", "relocated"]

_AUTHORIZED: ContextVar[Mapping[str, Location]] = ContextVar(
    "ctxfs_authorized", default=MappingProxyType({})
)


@contextmanager
def authorizing(locations: Mapping[str, Location]) -> Iterator[None]:
    """Within the block (and the tasks and worker threads it starts), each path is at its location.

    *locations* maps canonical paths, as core will hand them to the backend, to the locations
    the policies judged.
    """
    token = _AUTHORIZED.set(MappingProxyType({**_AUTHORIZED.get(), **locations}))
    try:
        yield
    finally:
        _AUTHORIZED.reset(token)


def authorized_location(path: str) -> Location | None:
    """The location judged for canonical *path* by the call in progress; None outside one."""
    return _AUTHORIZED.get().get(path)


def relocated(path: str) -> Stale:
    """The refusal of *path*: it now resolves elsewhere than where it was judged."""
    return Stale(
        f"{path} changed while the call was checked: a symbolic link on it now leads elsewhere",
        path=path,
        retryable=True,
        hint="Retry the call; if this persists, another process keeps changing links there.",
    )
