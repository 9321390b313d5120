"""Where the file-context plugin keeps what each owner has seen.

A store maps (owner, file key) to the :class:`Observation` the owner last made
of that file; every change is one atomic read-modify-write::

    ObservationStore ............ the port (async)
    ├── MemoryObservations ...... this process; bounded in all and per owner, idle owners
    │                             give way first
    ├── SqliteObservations ...... a file: survives restarts, shared by the processes of a host
    └── RedisObservations ....... a Redis server: shared by every host; entries expire

A reader sees the latest committed update (SQLite: on this host; Redis: a single
server, not a lagging replica). A forgotten observation is never unsafe: the owner
must read again. A store that cannot answer raises ``Unavailable``.
"""

from __future__ import annotations

import os
from functools import partial
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from ctxfs.core.errors import InvalidArgument
from ctxfs.core.observations.base import (
    DEFAULT_MAX_AGE,
    DEFAULT_MAX_OBSERVATIONS,
    DEFAULT_MAX_PER_OWNER,
    LineRanges,
    Observation,
    ObservationStore,
    shown_url,
    url_count,
)
from ctxfs.core.observations.memory import MemoryObservations

if TYPE_CHECKING:
    from ctxfs.core.observations.redis_store import RedisObservations
    from ctxfs.core.observations.sqlite_store import SqliteObservations

__all__ = [
    "DEFAULT_MAX_AGE",
    "DEFAULT_MAX_OBSERVATIONS",
    "DEFAULT_MAX_PER_OWNER",
    "LineRanges",
    "MemoryObservations",
    "Observation",
    "ObservationStore",
    "RedisObservations",
    "SqliteObservations",
    "open_observations",
    "shown_url",
    "sqlite_url",
]


def open_observations(url: str | None) -> ObservationStore:
    """The store *url* names.

    - None or ``memory:``: this process (:class:`MemoryObservations`; the query may bound
      it: ``memory:?max_observations=N&max_per_owner=M``);
    - ``sqlite:///PATH``: a SQLite file (:class:`SqliteObservations`), *PATH* relative to
      the working directory; ``sqlite:////PATH`` for an absolute one (:func:`sqlite_url`);
    - ``redis://[USER:PASSWORD@]HOST[:PORT][/DB]``, ``rediss://`` (TLS) or
      ``unix:///SOCKET``: a Redis server (:class:`RedisObservations`; needs the
      ``redis`` package, ``ctxfs-core[redis]``).

    The shared stores take ``max_age=SECONDS`` in the query (how long an entry
    lasts without being renewed; default 7 days); Redis also takes
    ``prefix=TEXT`` (the start of every key ctxfs writes; default ``ctxfs:``).

    Raises:
        InvalidArgument: The URL names no store ctxfs knows, or has a bad option.
        Unavailable: The store cannot be opened.

    """
    if url is None:
        return MemoryObservations()
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    if parts.scheme == "memory" and not parts.netloc and not parts.path:
        count = partial(url_count, url, query, store="observations")
        store = MemoryObservations(
            max_observations=count("max_observations", DEFAULT_MAX_OBSERVATIONS),
            max_per_owner=count("max_per_owner", DEFAULT_MAX_PER_OWNER),
        )
        if query:
            raise InvalidArgument(
                f"{shown_url(url)!r}: the memory store takes max_observations and "
                f"max_per_owner, not {', '.join(sorted(query))}",
                details={"observations": shown_url(url)},
            )
        return store
    if parts.scheme == "sqlite" and not parts.netloc and parts.path.removeprefix("/"):
        from ctxfs.core.observations.sqlite_store import SqliteObservations  # noqa: PLC0415

        path = unquote(parts.path.removeprefix("/"))  # the slash that ends the empty host
        max_age = _max_age(url, query)
        if query:
            raise InvalidArgument(
                f"{shown_url(url)!r}: the SQLite store takes max_age, "
                f"not {', '.join(sorted(query))}",
                details={"observations": shown_url(url)},
            )
        return SqliteObservations(path, max_age=max_age)
    if parts.scheme in ("redis", "rediss", "unix"):
        from ctxfs.core.observations.redis_store import RedisObservations  # noqa: PLC0415

        max_age = _max_age(url, query)
        prefix = query.pop("prefix", "ctxfs:")
        client_url = urlunsplit(parts._replace(query=urlencode(query)))
        return RedisObservations(client_url, max_age=max_age, prefix=prefix)
    raise InvalidArgument(
        f"{shown_url(url)!r} names no observation store",
        hint="Use memory: (this process), sqlite:///PATH (the processes of this host; "
        "sqlite:////PATH for an absolute path) or "
        "redis://HOST:PORT/DB (every host).",
        details={"observations": shown_url(url)},
    )


def sqlite_url(path: str | os.PathLike[str]) -> str:
    """The URL of a SQLite store at *path* (absolute, or relative to the working directory)."""
    return f"sqlite:///{quote(os.fspath(path))}"


def _max_age(url: str, query: dict[str, str]) -> float:
    text = query.pop("max_age", None)
    if text is None:
        return DEFAULT_MAX_AGE
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise InvalidArgument(
            f"max_age={text!r} in {shown_url(url)!r} is not a positive number of seconds",
            details={"observations": shown_url(url)},
        )
    return seconds


def __getattr__(name: str) -> object:
    # the shared stores load on first use (redis is optional)
    if name == "RedisObservations":
        from ctxfs.core.observations.redis_store import RedisObservations  # noqa: PLC0415

        return RedisObservations
    if name == "SqliteObservations":
        from ctxfs.core.observations.sqlite_store import SqliteObservations  # noqa: PLC0415

        return SqliteObservations
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
