"""Cross-process locks: ``flock`` on lock files in a private state directory, outside the root.

Lock files are never unlinked (that would split their waiters across two inodes). Keys are
:attr:`Location.key <ctxfs.core.Location.key>` (one for every spelling and root above a file),
hashed into a fixed number of buckets per kind. Within a process a bucket's ``flock`` is shared by
its different keys (a move meets its own buckets again) while holders of one key exclude each other.
An acquisition polls ``LOCK_NB`` on its own descriptor with capped backoff, so a cancelled wait
acquires nothing; closing the descriptor releases, and a forked child closes the ones it inherited.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import stat
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ctxfs.core import InvalidArgument, Unavailable
from ctxfs.core.kit import acquire_with_backoff

__all__ = ["BUCKETS", "LockDirectory", "default_state_dir", "unusable_state_dir"]

BUCKETS: Final = 4096
"""Lock files per kind, for every workspace of one state directory."""


def default_state_dir() -> Path:
    """``$CTXFS_STATE_DIR``, else ``$XDG_STATE_HOME/ctxfs``, else ``~/.local/state/ctxfs``."""
    configured = os.environ.get("CTXFS_STATE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ctxfs"


def unusable_state_dir(state_dir: Path, error: OSError) -> Unavailable:
    """The refusal of a state directory that cannot be used (*error*: why)."""
    return Unavailable(
        f"the state directory {state_dir} cannot be used: {error.strerror or error}",
        retryable=False,
        hint="Point CTXFS_STATE_DIR (or state_dir) at a directory this user can write.",
    )


class LockDirectory:
    """The lock files of one state directory, shared by every workspace that uses it."""

    def __init__(self, state_dir: Path) -> None:
        locks = state_dir / "locks"
        locks.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.fd = os.open(locks, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        info = os.fstat(self.fd)
        if info.st_uid != os.geteuid() or info.st_mode & 0o022:
            os.close(self.fd)
            raise InvalidArgument(
                f"the lock directory {locks} must be owned by this user and writable only by it"
            )
        self._identity = (info.st_dev, info.st_ino)
        self._locks = locks
        self._closed = False

    def file_name(self, kind: str, key: str) -> str:
        """The lock file holding *key*'s lock of *kind* (``"mutation"`` or ``"cas"``)."""
        digest = hashlib.sha256(key.encode(errors="surrogateescape"))
        return f"{kind}-{int.from_bytes(digest.digest()[:8]) % BUCKETS:04d}.lock"

    @asynccontextmanager
    async def hold(self, kind: str, key: str, *, timeout: float) -> AsyncIterator[None]:
        """Hold *key*'s lock of *kind*; raise ``Busy`` once *timeout* seconds have passed."""
        name = self.file_name(kind, key)
        where = (*self._identity, name)
        fd = self._open(name)
        mine = False  # whether fd became the bucket's (then its last holder closes it)

        def attempt(_: bool) -> bool:
            nonlocal mine
            with _HELD_GUARD:
                bucket = _BUCKETS.get(where)
                if bucket is not None:  # held by this process: shared, unless for this key
                    if key in bucket.keys:
                        return False
                    bucket.keys.add(key)
                    return True
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return False
                _BUCKETS[where] = _Bucket(fd=fd, keys={key})
                mine = True
                return True

        try:
            await acquire_with_backoff(attempt, timeout=timeout, what=key)
        finally:
            if not mine:  # it raises only before an attempt succeeds
                _close(fd)
        try:
            yield
        finally:
            _leave(where, key)

    def _open(self, name: str) -> int:
        if self._closed:  # (its descriptor's number may be another file's now)
            raise Unavailable(
                f"the lock directory {self._locks} was closed with its workspace",
                retryable=False,
                hint="The workspace was closed; open it again to go on.",
            )
        fd = os.open(
            name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=self.fd
        )
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(fd)
            raise InvalidArgument(f"lock file {name} was tampered with (not a lone regular file)")
        with _HELD_GUARD:
            _HELD.add(fd)
        return fd

    def close(self) -> None:
        """Close the directory (held locks are released as their holders leave); once only.

        A lock asked for after is ``unavailable``.
        """
        if not self._closed:
            self._closed = True
            os.close(self.fd)


@dataclass
class _Bucket:
    """A lock file this process holds: the descriptor holding it, and the keys it holds for."""

    fd: int
    keys: set[str]


def _leave(where: tuple[int, int, str], key: str) -> None:
    """Let go of *key* in the bucket *where*; the last key out releases the ``flock``."""
    with _HELD_GUARD:
        bucket = _BUCKETS.get(where)
        if bucket is None:  # forgotten at fork
            return
        bucket.keys.discard(key)
        if bucket.keys:
            return
        del _BUCKETS[where]
    _close(bucket.fd)


def _close(fd: int) -> None:
    with _HELD_GUARD:
        _HELD.discard(fd)
    os.close(fd)  # releases the flock; never LOCK_UN, which a forked child could share


_HELD: set[int] = set()
_BUCKETS: dict[tuple[int, int, str], _Bucket] = {}
"""The lock files this process holds, by (directory device, inode, name)."""
_HELD_GUARD = threading.Lock()


def _forget_inherited_locks() -> None:
    global _HELD_GUARD  # noqa: PLW0603 - another thread may have held it at fork time
    _HELD_GUARD = threading.Lock()
    for fd in list(_HELD):
        with contextlib.suppress(OSError):
            os.close(fd)  # the parent's descriptor keeps its lock
    _HELD.clear()
    _BUCKETS.clear()


os.register_at_fork(after_in_child=_forget_inherited_locks)
