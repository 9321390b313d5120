"""The store and the toolset a command line names, under its policies.

``--root`` expands ``~`` and ``$VARIABLES`` (an MCP client's JSON configuration has no shell to do
it), ``--url``, ``--observations`` and ``--sessions`` expand ``$VARIABLES``; each is refused if it
comes out empty (an unset variable must not mean the working directory).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import logging
import os
import shlex
import sys
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ctxfs.core import Backend, Fs, Unavailable
    from ctxfs.tools.toolset import FsToolset

__all__ = [
    "STORE_PACKAGES",
    "UsageError",
    "client_owner",
    "location",
    "opened",
    "server_owner",
    "store_of",
    "toolset_of",
]

log = logging.getLogger("ctxfs.cli")

STORE_PACKAGES: Final = {
    "file": "ctxfs-local",
    "s3": "ctxfs-remote[s3]",
    "gs": "ctxfs-remote[gcs]",
    "gcs": "ctxfs-remote[gcs]",
    "az": "ctxfs-remote[azure]",
    "abfs": "ctxfs-remote[azure]",
    "sftp": "ctxfs-remote[sftp]",
    "fsspec": "ctxfs-remote",
}
"""What to install for each scheme of the ctxfs dists (named when none provides the scheme)."""


class UsageError(Exception):
    """A command line that cannot run: said in one line, exit status 2."""


def opened(args: argparse.Namespace, *, kept: bool = False) -> tuple[Fs, FsToolset]:
    """The store and the toolset the options describe (:func:`store_of`, :func:`toolset_of`)."""
    toolset = toolset_of(args)
    return store_of(args, location(args), kept=kept), toolset


def toolset_of(args: argparse.Namespace) -> FsToolset:
    """The toolset the options describe.

    Workers answer no re-read in one line: what each showed an owner is its own (a client's
    ``forget_shown`` reaches one), so another could say "unchanged" of text the model dropped.
    """
    from ctxfs.tools import FsToolset, ToolsetOptions  # noqa: PLC0415

    try:
        options = ToolsetOptions(
            read_only=args.read_only,
            progress_seconds=args.progress,
            tools=args.tools,
            tool_prefix=args.tool_prefix,
            short_rereads=getattr(args, "workers", 1) <= 1,
        )
        return FsToolset(options)
    except ValueError as error:  # an unknown tool, a prefix no provider takes
        raise UsageError(str(error)) from None


def store_of(args: argparse.Namespace, where: str, *, kept: bool = False) -> Fs:
    """The store at *where* (a directory, or a store's URL) under the options' policies.

    With *kept* (``call``, stdio ``serve``) and no ``--observations``, observations live in the
    root's own SQLite file in the user's state directory: each such process is one client's, and its
    successor must find what it saw. The session memory (``--sessions``) lives likewise, in a file
    of its own. Such a file made by a ctxfs whose tables differ is replaced by an empty one (with a
    warning); a file the options name is refused instead.
    """
    from pluggy import PluginValidationError  # noqa: PLC0415

    from ctxfs.core import Fs, FsError, InvalidArgument, Unavailable, open_backend  # noqa: PLC0415

    plugins: list[object] = [_load_plugin(spec) for spec in args.plugin]
    if args.read_only or args.deny:
        from ctxfs.core.policies import PathRules  # noqa: PLC0415

        plugins.append(PathRules(deny=args.deny, read_only=["**"] if args.read_only else []))
    if args.read_hard_links and args.url is not None:
        raise UsageError("--read-hard-links is for a local --root")
    backend_options = {"read_hard_links": True} if args.read_hard_links else {}
    observations, sessions = _store_url(args, "observations"), _store_url(args, "sessions")
    try:
        backend = open_backend(where, **backend_options)
    except InvalidArgument as error:
        scheme = error.details.get("scheme")
        if "installed" in error.details and scheme in STORE_PACKAGES:  # no dist provides it
            what = "a directory" if scheme == "file" else f"{where.partition('://')[0]}://"
            package = STORE_PACKAGES[scheme]
            raise UsageError(
                f"opening {what} needs {package.partition('[')[0]}, which is not installed: "
                f"pip install {shlex.quote(package)}"
            ) from error
        raise
    own: set[str] = set()  # the files ctxfs chose itself
    if observations is None and kept:
        observations = _kept_store(backend, where, "observations", own)
    if sessions is None and kept:
        sessions = _kept_store(backend, where, "sessions", own)
    while True:
        try:
            return Fs(backend, plugins=plugins, observations=observations, sessions=sessions)
        except (PluginValidationError, ValueError) as error:  # a plugin pluggy cannot take
            if isinstance(error, FsError):
                raise
            lines = str(error).splitlines()  # (pluggy adds the registry's repr: a dict)
            said = "; ".join(line for line in lines if not line.startswith("{"))
            raise UsageError(f"a plugin cannot be used: {said}") from error
        except Unavailable as error:
            made_before = error.details.get("other_layout")
            if made_before not in own:
                raise
            own.remove(made_before)  # made by an earlier ctxfs: start it again
            log.warning("%s; it is replaced by an empty one", error.message)
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(made_before + suffix)


def _store_url(args: argparse.Namespace, option: str) -> str | None:
    """``--observations`` or ``--sessions`` (*option*), expanded; None: not given."""
    given: str | None = getattr(args, option)
    url = given and os.path.expandvars(given)
    if url == "":  # not this process alone: --workers would split what the workers share
        raise UsageError(f"--{option} {given!r} is empty (an unset variable?)")
    return url


def client_owner() -> str:
    """The owner ``call`` and stdio ``serve`` work for by default: the process that started them.

    A client that starts a process per call is one owner across them; two clients are two. The
    parent is named by its pid and start time, so a pid used again is another owner.
    """
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/stat", "rb") as stat:  # its 22nd field: the start time
            started = stat.read().rpartition(b")")[2].split()[19].decode()
    except (OSError, IndexError):
        started = "0"
    return f"client-{parent}-{started}"


_OWNER_BUCKETS: Final = 4096
"""Lock files of owners in the state directory at most (``owners/``)."""
_held_owners: list[int] = []
"""The locks this process holds, until it ends."""


def server_owner() -> str:
    """The owner stdio ``serve`` works for by default: :func:`client_owner`, while it is free.

    Servers a client runs one after another share what they saw; those it runs at the same
    time are distinct owners (the second gets ``-2``, ...), so that no server's read licenses
    another's change. An owner is held by a lock in the state directory until the process ends.
    """
    import fcntl  # noqa: PLC0415 - stdio serve's alone, not every command's start-up

    base = client_owner()
    directory = _state_directory("owners")
    for number in range(1, _OWNER_BUCKETS + 1):
        owner = base if number == 1 else f"{base}-{number}"
        bucket = hashlib.sha256(owner.encode()).hexdigest()[:3]  # (a clash only adds a suffix)
        try:
            fd = os.open(directory / bucket, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as error:
            raise _unusable(error) from error
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        _held_owners.append(fd)  # (released by the kernel when the process ends)
        return owner
    return f"{base}-pid{os.getpid()}"


def _state_directory(kind: str) -> Path:
    """The directory *kind* of the user's state directory, made private if missing."""
    from ctxfs.local import default_state_dir  # noqa: PLC0415

    directory = default_state_dir() / kind
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as error:
        raise _unusable(error) from error
    return directory


def _unusable(error: OSError) -> Unavailable:
    from ctxfs.local import default_state_dir  # noqa: PLC0415
    from ctxfs.local.flocks import unusable_state_dir  # noqa: PLC0415

    return unusable_state_dir(default_state_dir(), error)


def _kept_store(backend: Backend, where: str, kind: str, own: set[str]) -> str:
    """The URL of the SQLite store of *kind* kept for the root of *backend* (opened from *where*).

    One file per root (the directory the kernel resolves, or the store's URL), in ``observations/``
    (or ``sessions/``: *kind*) of the user's state directory, made private; added to *own*.
    """
    from ctxfs.core import sqlite_url  # noqa: PLC0415
    from ctxfs.local import LocalBackend  # noqa: PLC0415

    directory = _state_directory(kind)
    root = str(backend.root) if isinstance(backend, LocalBackend) else where
    kept = directory / f"{hashlib.sha256(os.fsencode(root)).hexdigest()[:32]}.db"
    own.add(str(kept))
    return sqlite_url(kept)


def location(args: argparse.Namespace) -> str:
    """``--root`` or ``--url``, expanded.

    Raises:
        UsageError: It names nothing, which would open the working directory (as a
            client's configuration whose variable is empty or unset would).

    """
    local = args.root is not None
    given: str = args.root if local else args.url
    where = os.path.expandvars(given)
    if local:
        where = os.path.expanduser(where)
    parts = urllib.parse.urlsplit(where)
    if not where or (parts.scheme.lower() == "file" and not parts.path):
        raise UsageError(
            f"{'--root' if local else '--url'} {given!r} is empty (an unset variable?): "
            "give the directory or store to open"
        )
    return where


def _load_plugin(spec: str) -> object:
    """The plugin *spec* names (``module`` or ``module:attribute``).

    What it prints as it loads goes to stderr (stdout may be the MCP wire).
    """
    module_name, _, attribute = spec.partition(":")
    try:
        with contextlib.redirect_stdout(sys.stderr):
            module = importlib.import_module(module_name)
        return getattr(module, attribute) if attribute else module
    except Exception as error:  # (any failure of the module's own code too)
        raise UsageError(f"cannot load plugin {spec!r}: {type(error).__name__}: {error}") from error
