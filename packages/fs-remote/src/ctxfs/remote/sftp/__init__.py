"""SFTP through asyncssh, with a cooperative compare-and-swap (``cas_scope`` ``COOPERATIVE``).

SFTP has no conditional write. A writer takes a lock file with a lease beside the
file by exclusive create (:mod:`~ctxfs.remote.sftp.lease`), compares the content's
hash with the expected version under it, publishes a fsynced temporary file by
rename, and removes the lock. Writers that bypass the protocol are not stopped,
and the lease relies on the writers' clocks agreeing.
Paths stay under the root: the server resolves each one (``realpath``) and a
symbolic link leading outside is refused (a link swapped in between that check
and the use that follows is not caught). :mod:`~ctxfs.remote.sftp.client` holds
the connection, errors and confinement, :mod:`~ctxfs.remote.sftp.backend` the
backend. They import asyncssh (``ctxfs-remote[sftp]``); this module does not, so
that it can say so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from ctxfs.core.kit import require
from ctxfs.remote.retry import RETRY_OPTIONS

if TYPE_CHECKING:
    from ctxfs.remote.sftp.backend import SftpBackend

__all__ = ["SftpBackend", "open_sftp"]


def open_sftp(url: str, **options: Any) -> SftpBackend:
    """The backend for ``sftp://[user@]host[:port]/absolute/root``.

    Keyword options ``lease``, ``lease_timeout``, ``retries`` and ``deadline``
    configure the backend; the others go to ``asyncssh.connect``
    (``client_keys``, ``known_hosts``, ``password``, ...), which otherwise uses
    the SSH agent, the default keys and ``~/.ssh/known_hosts``.
    """
    require("asyncssh", install="ctxfs-remote[sftp]", needed_by="the sftp backend")
    from ctxfs.remote.sftp.backend import SftpBackend  # noqa: PLC0415 - after the check

    parts = urlsplit(url)
    if not parts.hostname:
        raise ValueError(f"{url!r} names no host (expected sftp://user@host/root)")
    names = ("lease", "lease_timeout", *RETRY_OPTIONS)
    settings = {name: options.pop(name) for name in names if name in options}
    return SftpBackend(
        parts.hostname,
        unquote(parts.path) or "/",
        port=parts.port or 22,
        username=unquote(parts.username) if parts.username else None,
        connect_options=options,
        **settings,
    )


def __getattr__(name: str) -> Any:
    if name == "SftpBackend":
        require("asyncssh", install="ctxfs-remote[sftp]", needed_by="the sftp backend")
        from ctxfs.remote.sftp.backend import SftpBackend  # noqa: PLC0415

        return SftpBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
