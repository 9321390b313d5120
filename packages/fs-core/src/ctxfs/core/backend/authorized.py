"""What the policies judged for the call in progress, so that a backend opens nothing else.

Core locates a path (:meth:`Backend.locate`), lets the policies judge that
location, then calls the backend with the canonical path, which the backend opens
again. Where a path can lead through symbolic links, another process may swap one
in between, and the backend would reach a place no policy judged. While core runs
such a call, :func:`authorized_location` gives, for each backend and canonical path,
the location judged; a backend with links compares what it opened with it and raises
:func:`relocated` on a difference, before it reads or changes anything.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final

from ctxfs.core.backend.files import Location
from ctxfs.core.errors import Stale

__all__ = ["authorized_location", "authorizing", "relocated"]


@dataclass(frozen=True)
class _Judged:
    """Judged locations by (backend's id, path), in layers never changed once made.

    A new layer swallows the newer ones no larger than itself, so a call holding
    many paths (a patch of thousands of files) adds each in logarithmic time.
    """

    layers: tuple[Mapping[tuple[int, str], Location], ...] = ()

    def adding(self, more: Mapping[tuple[int, str], Location]) -> _Judged:
        layers, newest = list(self.layers), dict(more)
        while layers and len(layers[-1]) <= len(newest):
            newest = {**layers.pop(), **newest}
        return _Judged((*layers, newest))

    def get(self, key: tuple[int, str]) -> Location | None:
        for layer in reversed(self.layers):
            if (found := layer.get(key)) is not None:
                return found
        return None


_NOTHING: Final = _Judged()
_AUTHORIZED: ContextVar[_Judged] = ContextVar("ctxfs_authorized")


@contextmanager
def authorizing(backend: object, locations: Mapping[str, Location]) -> Iterator[None]:
    """Within the block (and the tasks and worker threads it starts), each path is at its location.

    *locations* maps canonical paths, as core hands them to *backend*, to the locations the
    policies judged.
    """
    judged = {(id(backend), path): location for path, location in locations.items()}
    token = _AUTHORIZED.set(_AUTHORIZED.get(_NOTHING).adding(judged))
    try:
        yield
    finally:
        _AUTHORIZED.reset(token)


def authorized_location(backend: object, path: str) -> Location | None:
    """Where the call in progress judged *backend*'s canonical *path*; None outside one."""
    return _AUTHORIZED.get(_NOTHING).get((id(backend), path))  # (it outlives the call)


def relocated(path: str) -> Stale:
    """The refusal of *path*: it now resolves elsewhere than where it was judged."""
    return Stale(
        f"{path} changed while the call was checked: a symbolic link on it now leads elsewhere",
        path=path,
        retryable=True,
        hint="Retry the call; if this persists, another process keeps changing links there.",
    )
