"""Landlock: let a child process read beneath the root and nothing else, kernel-enforced.

Linux's Landlock (5.13+) lets an unprivileged thread give up file-system rights for itself and the
processes it starts. :func:`start_confined` confines a fresh thread that only starts the program
(``vfork``, no ``preexec_fn``) and ends, so the rest of this process is never confined.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading
from collections.abc import Callable, Sequence
from typing import Final, TypeVar

__all__ = ["ReadOnlyBeneath", "landlock_abi", "start_confined"]

_T = TypeVar("_T")

_SYSCALLS: Final = {"create_ruleset": 444, "add_rule": 445, "restrict_self": 446}
"""The same numbers on every architecture (added after the syscall tables were unified)."""
_CREATE_RULESET_VERSION: Final = 1
_RULE_PATH_BENEATH: Final = 1
_PR_SET_NO_NEW_PRIVS: Final = 38

_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ALL_V1: Final = (1 << 13) - 1  # execute .. make_sym
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_prctl = _libc.prctl


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or it is turned off)."""
    if platform.system() != "Linux":
        return 0
    version = _syscall(_SYSCALLS["create_ruleset"], None, 0, _CREATE_RULESET_VERSION)
    return max(0, int(version))


def _handled(abi: int) -> int:
    """Every file-system right this ABI knows except execute (the program must start)."""
    rights = _ALL_V1 & ~_EXECUTE
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


class ReadOnlyBeneath:
    """A Landlock rule set: read beneath *directory_fd*, and the *files* named or open; no more.

    Raises:
        OSError: The kernel has no Landlock, or a rule cannot be added.

    """

    def __init__(
        self, directory_fd: int, *, files: tuple[str, ...] = (), file_fds: Sequence[int] = ()
    ) -> None:
        abi = landlock_abi()
        if abi < 1:
            raise OSError("this kernel offers no Landlock")
        attr = _RulesetAttr(handled_access_fs=_handled(abi))
        ruleset = _syscall(_SYSCALLS["create_ruleset"], ctypes.byref(attr), ctypes.sizeof(attr), 0)
        if ruleset < 0:
            raise _error("landlock_create_ruleset")
        self.fd = int(ruleset)
        try:
            self._allow(directory_fd, _READ_FILE | _READ_DIR)
            for file_fd in file_fds:
                self._allow(file_fd, _READ_FILE)
            for path in files:
                file_fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                try:
                    self._allow(file_fd, _READ_FILE)
                finally:
                    os.close(file_fd)
        except BaseException:
            os.close(self.fd)
            raise

    def _allow(self, fd: int, rights: int) -> None:
        rule = _PathBeneathAttr(allowed_access=rights, parent_fd=fd)
        if _syscall(_SYSCALLS["add_rule"], self.fd, _RULE_PATH_BENEATH, ctypes.byref(rule), 0):
            raise _error("landlock_add_rule")

    def confine_calling_thread(self) -> None:
        """Restrict the calling thread, for good, and every process it starts.

        Raises:
            OSError: The kernel refused (nothing may then be started from this thread).

        """
        if _prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0):
            raise _error("prctl(PR_SET_NO_NEW_PRIVS)")
        if _syscall(_SYSCALLS["restrict_self"], self.fd, 0):
            raise _error("landlock_restrict_self")

    def close(self) -> None:
        """Release the rule set's descriptor."""
        os.close(self.fd)


def start_confined(rules: ReadOnlyBeneath, start: Callable[[], _T]) -> _T:
    """Call *start* (which starts a process) in a fresh thread that *rules* confine first.

    Raises:
        OSError: The thread could not be confined (*start* was not called).

    """
    outcome: list[_T] = []
    failure: list[BaseException] = []

    def confined() -> None:
        try:
            rules.confine_calling_thread()
            outcome.append(start())
        except BaseException as error:  # handed to the caller's thread
            failure.append(error)

    thread = threading.Thread(target=confined, name="ctxfs-landlock")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]


def _error(call: str) -> OSError:
    errno = ctypes.get_errno()
    return OSError(errno, f"{call}: {os.strerror(errno)}")
