"""Where the session memory keeps what agents saw and wrote, and the steps they took.

A store keeps file contents by version, per owner, and each owner's history of
steps and checkpoints (what undo and rewind put back)::

    SessionStore ............ the port (async)
    ├── MemorySessions ...... this process; bounded in bytes in all and per owner
    ├── SqliteSessions ...... a file: survives restarts, shared by the processes of a host
    └── RedisSessions ....... a Redis server: shared by every host

A content given up (a bound) is gone: a diff or an undo that needs it says so.
A store that cannot answer raises ``Unavailable``.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, TypedDict
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from ctxfs.core.errors import InvalidArgument
from ctxfs.core.observations.base import shown_url, url_count
from ctxfs.core.sessions.base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_BYTES_PER_OWNER,
    DEFAULT_MAX_IDLE_DAYS,
    DEFAULT_MAX_STEPS,
    Checkpoint,
    FileChange,
    SessionStore,
    Step,
)
from ctxfs.core.sessions.memory import MemorySessions

if TYPE_CHECKING:
    from ctxfs.core.sessions.redis_store import RedisSessions
    from ctxfs.core.sessions.sqlite_store import SqliteSessions

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_BYTES_PER_OWNER",
    "DEFAULT_MAX_IDLE_DAYS",
    "DEFAULT_MAX_STEPS",
    "Checkpoint",
    "FileChange",
    "MemorySessions",
    "RedisSessions",
    "SessionStore",
    "SqliteSessions",
    "Step",
    "open_sessions",
]


class _Bounds(TypedDict):
    max_bytes: int
    max_bytes_per_owner: int
    max_steps: int
    max_idle_days: int


def open_sessions(url: str | None) -> SessionStore:
    """The store *url* names; every store takes its bounds in the query.

    - None or ``memory:``: this process (:class:`MemorySessions`);
    - ``sqlite:///PATH``: a SQLite file (:class:`SqliteSessions`), *PATH* relative to the
      working directory; ``sqlite:////PATH`` for an absolute one;
    - ``redis://[USER:PASSWORD@]HOST[:PORT][/DB]``, ``rediss://`` or ``unix:///SOCKET``: a
      Redis server (:class:`RedisSessions`; ``ctxfs-core[redis]``), which also takes
      ``prefix=TEXT`` (default ``ctxfs:``).

    The bounds are ``max_bytes``, ``max_bytes_per_owner``, ``max_steps`` and
    ``max_idle_days`` (``memory:?max_bytes=1000000``); see :class:`SessionStore`.

    Raises:
        InvalidArgument: The URL names no store ctxfs knows, or has a bad option.
        Unavailable: The store cannot be opened.

    """
    if url is None:
        return MemorySessions()
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    count = partial(url_count, url, query, store="sessions")
    bounds = _Bounds(
        max_bytes=count("max_bytes", DEFAULT_MAX_BYTES),
        max_bytes_per_owner=count("max_bytes_per_owner", DEFAULT_MAX_BYTES_PER_OWNER),
        max_steps=count("max_steps", DEFAULT_MAX_STEPS),
        max_idle_days=count("max_idle_days", DEFAULT_MAX_IDLE_DAYS),
    )
    if parts.scheme == "memory" and not parts.netloc and not parts.path and not query:
        return MemorySessions(**bounds)
    if parts.scheme == "sqlite" and not parts.netloc and parts.path.removeprefix("/") and not query:
        from ctxfs.core.sessions.sqlite_store import SqliteSessions  # noqa: PLC0415

        return SqliteSessions(unquote(parts.path.removeprefix("/")), **bounds)
    if parts.scheme in ("redis", "rediss", "unix"):
        from ctxfs.core.sessions.redis_store import RedisSessions  # noqa: PLC0415

        prefix = query.pop("prefix", "ctxfs:")
        client_url = urlunsplit(parts._replace(query=urlencode(query)))
        return RedisSessions(client_url, prefix=prefix, **bounds)
    raise InvalidArgument(
        f"{shown_url(url)!r} names no session store"
        + (f" (or {', '.join(sorted(query))} is not one of its options)" if query else ""),
        hint="Use memory: (this process), sqlite:///PATH (the processes of this host) or "
        "redis://HOST:PORT/DB (every host); bound them with max_bytes, max_bytes_per_owner, "
        "max_steps and max_idle_days.",
        details={"sessions": shown_url(url)},
    )


def __getattr__(name: str) -> object:
    # the shared stores load on first use (redis is optional)
    if name == "RedisSessions":
        from ctxfs.core.sessions.redis_store import RedisSessions  # noqa: PLC0415

        return RedisSessions
    if name == "SqliteSessions":
        from ctxfs.core.sessions.sqlite_store import SqliteSessions  # noqa: PLC0415

        return SqliteSessions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
