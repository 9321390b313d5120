"""Opening a root-relative path so that the kernel, not a string check, keeps it inside the root.

:class:`Openat2Resolver` has Linux's ``openat2`` (5.6+) resolve it with ``RESOLVE_BENEATH`` and
``RESOLVE_NO_MAGICLINKS``; :class:`WalkResolver` opens one component at a time ``O_NOFOLLOW``
beneath the last, expanding symlinks itself (relative targets only, ``..`` popping its own stack
of fds, at most 40 hops). Both answer alike: with ``follow_symlinks`` a symlink whose target stays
inside the root is followed and one that leaves it is ``outside_root``; without it any symlink on
the path is ``denied``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
from abc import ABC, abstractmethod
from collections import deque
from typing import Final

from ctxfs.core import Denied, FsError, OutsideRoot, Unavailable
from ctxfs.local.oserrors import translate, translated

__all__ = ["Openat2Resolver", "Resolver", "WalkResolver", "choose_resolver"]

_MAX_SYMLINK_HOPS: Final = 40
_MAX_EAGAIN_RETRIES: Final = 128
_SYS_OPENAT2: Final = {"x86_64": 437, "aarch64": 437, "riscv64": 437, "ppc64le": 437, "s390x": 437}
_RESOLVE_NO_MAGICLINKS: Final = 0x02
_RESOLVE_NO_SYMLINKS: Final = 0x04
_RESOLVE_BENEATH: Final = 0x08


class Resolver(ABC):
    """Opens root-relative paths beneath a root directory fd."""

    name: str

    @abstractmethod
    def open(self, root_fd: int, path: str, flags: int, *, follow_symlinks: bool) -> int:
        """Open canonical *path* (``""`` is the root) beneath *root_fd* with *flags*.

        ``O_CLOEXEC`` is always added, and ``O_NOCTTY`` except to ``O_PATH`` opens
        (which openat2 refuses to combine). The caller owns the fd.

        Raises:
            OutsideRoot: The path, or a symlink on it, leads outside the root.
            Denied: A symlink is on the path and *follow_symlinks* is false.
            InvalidPath: Symlinks loop, or expand more than 40 times.
            FsError: Whatever else the kernel refused, translated.

        """


class _OpenHow(ctypes.Structure):
    _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))


class Openat2Resolver(Resolver):
    """Resolution by the kernel: ``openat2`` through ctypes."""

    name = "openat2"

    def __init__(self) -> None:
        number = _SYS_OPENAT2.get(platform.machine())
        if number is None:
            raise OSError(errno.ENOSYS, f"openat2 number unknown on {platform.machine()}")
        self._number = number
        self._syscall = ctypes.CDLL(None, use_errno=True).syscall
        self._syscall.restype = ctypes.c_long

    def open(self, root_fd: int, path: str, flags: int, *, follow_symlinks: bool) -> int:
        """Resolve *path* with ``openat2``; see :meth:`Resolver.open`."""
        how = _OpenHow(
            flags=flags | os.O_CLOEXEC | (0 if flags & os.O_PATH else os.O_NOCTTY),
            mode=0,
            resolve=_RESOLVE_BENEATH
            | _RESOLVE_NO_MAGICLINKS
            | (0 if follow_symlinks else _RESOLVE_NO_SYMLINKS),
        )
        encoded = os.fsencode(path or ".")
        for _ in range(_MAX_EAGAIN_RETRIES):  # EAGAIN: a rename raced a ".." step
            fd = self._syscall(
                ctypes.c_long(self._number),
                ctypes.c_int(root_fd),
                ctypes.c_char_p(encoded),
                ctypes.byref(how),
                ctypes.c_size_t(ctypes.sizeof(how)),
            )
            if fd >= 0:
                return int(fd)
            code = ctypes.get_errno()
            if code != errno.EAGAIN:
                raise _refusal(
                    OSError(code, os.strerror(code)), path, follow_symlinks=follow_symlinks
                )
        raise Unavailable(f"{path}: resolution kept racing with renames", path=path)

    @classmethod
    def probe(cls, root_fd: int) -> Openat2Resolver | None:
        """Return a working resolver, or None where openat2 is missing or forbidden."""
        try:
            resolver = cls()
            os.close(
                resolver.open(root_fd, "", os.O_RDONLY | os.O_DIRECTORY, follow_symlinks=False)
            )
        except (OSError, FsError):
            return None
        return resolver


class WalkResolver(Resolver):
    """Resolution one component at a time, each opened ``O_NOFOLLOW`` beneath the last."""

    name = "walk"

    def open(self, root_fd: int, path: str, flags: int, *, follow_symlinks: bool) -> int:
        """Walk *path* beneath *root_fd*; see :meth:`Resolver.open`."""
        walk = _Walk(root_fd, path, follow_symlinks=follow_symlinks)
        try:
            with translated(path):
                return walk.run(flags)
        finally:
            walk.close()


class _Walk:
    """The state of one walk: components still to visit, directories entered, hops made."""

    def __init__(self, root_fd: int, path: str, *, follow_symlinks: bool) -> None:
        self.root_fd, self.path, self.follow_symlinks = root_fd, path, follow_symlinks
        self.pending = deque(path.split("/") if path else [])
        self.entered: list[int] = []  # directory fds below the root, innermost last
        self.hops = 0

    def run(self, flags: int) -> int:
        while True:
            where = self.entered[-1] if self.entered else self.root_fd
            while self.pending and self.pending[0] in ("", "."):
                self.pending.popleft()
            if not self.pending:
                return os.open(".", flags | os.O_CLOEXEC | os.O_NOCTTY, dir_fd=where)
            name = self.pending.popleft()
            if name == "..":  # only symlink targets bring these
                if not self.entered:
                    raise self._outside()
                os.close(self.entered.pop())
                continue
            last = all(part in ("", ".") for part in self.pending)
            fd = self._open_component(name, where, flags if last else os.O_PATH | os.O_DIRECTORY)
            if fd is None:
                continue  # a symlink, replaced by its target
            if last:
                return fd
            self.entered.append(fd)

    def _open_component(self, name: str, where: int, flags: int) -> int | None:
        """Open one component without following it; expand it instead if it is a symlink."""
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY, dir_fd=where)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and self._expand(
                name, where
            ):
                return None
            raise
        if flags & os.O_PATH and stat.S_ISLNK(os.fstat(fd).st_mode):
            os.close(fd)  # O_PATH | O_NOFOLLOW opens a final symlink itself
            if self._expand(name, where):
                return None
            raise self._outside()  # it stopped being a symlink under our feet
        return fd

    def _expand(self, name: str, where: int) -> bool:
        """Queue a symlink's target in place of *name*; False if *name* is no symlink."""
        try:
            target = os.readlink(name, dir_fd=where)
        except OSError:
            return False
        if not self.follow_symlinks:
            raise _refusal(OSError(errno.ELOOP, "symlink"), self.path, follow_symlinks=False)
        self.hops += 1
        if self.hops > _MAX_SYMLINK_HOPS:
            raise _refusal(OSError(errno.ELOOP, "loop"), self.path, follow_symlinks=True)
        if target.startswith("/"):
            raise self._outside()
        self.pending.extendleft(reversed(target.split("/")))
        return True

    def _outside(self) -> OutsideRoot:
        return OutsideRoot(f"{self.path} resolves outside the workspace root", path=self.path)

    def close(self) -> None:
        for fd in self.entered:
            os.close(fd)


def choose_resolver(root_fd: int, preference: str) -> Resolver:
    """Return the resolver for *preference*: ``"auto"`` (openat2 if any), ``"openat2"``, ``"walk"``.

    Raises:
        ValueError: The preference is unknown, or ``openat2`` was demanded and is unavailable.

    """
    if preference == "walk":
        return WalkResolver()
    if preference not in ("auto", "openat2"):
        raise ValueError(f"resolver must be 'auto', 'openat2' or 'walk', not {preference!r}")
    found = Openat2Resolver.probe(root_fd)
    if found is not None:
        return found
    if preference == "openat2":
        raise ValueError("openat2 is not available on this system")
    return WalkResolver()


def _refusal(error: OSError, path: str, *, follow_symlinks: bool) -> FsError:
    if error.errno == errno.ELOOP and not follow_symlinks:
        return Denied(
            f"{path} goes through a symbolic link, and this workspace does not follow them",
            path=path,
            hint="Use the path of the link's target instead.",
        )
    return translate(error, path)
