"""SFTP through asyncssh, with a cooperative compare-and-swap.

SFTP has no conditional write. ctxfs builds one from the two atomic operations
an OpenSSH server offers, for writers that follow the same protocol
(``cas_scope`` ``COOPERATIVE``):

1. take ``.ctxfs-lock.<name>`` beside the file by exclusive create; it holds a
   lease (owner and expiry). A lease past its expiry is broken by renaming it
   away (only one breaker can win the rename), so a crashed writer delays
   others by at most the lease (:mod:`~ctxfs.remote.sftp.lease`);
2. under the lock, compare the current content with the expected version
   (``xxh3:``, the version of every read); an update
   (:meth:`~ctxfs.core.Backend.open_update`) reads the file under the lock and
   so compares nothing again;
3. write ``.ctxfs-tmp.<random>``, fsync it, give it the old file's mode, and
   publish it: ``posix-rename`` to replace, plain ``rename`` (which refuses to
   clobber) to create; readers never see a partial file;
4. remove the lock, if it is still ours.

Writers that bypass the protocol (another SFTP client, a shell) are not stopped;
the lease relies on the writers' clocks agreeing to within the lease.
Paths stay under the root: besides the lexical checks, the server resolves each
path (``realpath``) and a symbolic link leading outside is refused. That check
and the use that follows are two requests, so a link swapped in between by
someone with shell access on the server is not caught.

The modules: :mod:`~ctxfs.remote.sftp.client` (the connection, errors,
confinement), :mod:`~ctxfs.remote.sftp.lease` (the lock protocol) and
:mod:`~ctxfs.remote.sftp.backend` (the backend). They import asyncssh, which
``ctxfs-remote[sftp]`` installs; this module does not, so that it can say so.
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

    Keyword options ``lease``, ``lock_timeout``, ``retries`` and ``deadline``
    configure the backend; the others go to ``asyncssh.connect``
    (``client_keys``, ``known_hosts``, ``password``, ...), which otherwise uses
    the SSH agent, the default keys and ``~/.ssh/known_hosts``.
    """
    require("asyncssh", install="ctxfs-remote[sftp]", needed_by="the sftp backend")
    from ctxfs.remote.sftp.backend import SftpBackend  # noqa: PLC0415 - after the check

    parts = urlsplit(url)
    if not parts.hostname:
        raise ValueError(f"{url!r} names no host (expected sftp://user@host/root)")
    names = ("lease", "lock_timeout", *RETRY_OPTIONS)
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
