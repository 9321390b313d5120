"""The extended attributes a file keeps when a write replaces it with a new inode.

A write publishes a new file (:mod:`ctxfs.local.writes`); without them, a POSIX ACL that denies
someone (``system.posix_acl_access``) would be lost, and with it the denial. Copied: the access
control lists and the ``user.`` attributes. Left to the kernel: ``security.`` (labels the kernel
gives a new file itself; file capabilities and integrity hashes, which a change of content must
drop, as it drops the setuid bits) and ``trusted.`` (the kernel's and root's own).
"""

from __future__ import annotations

import errno
import os
from typing import Final

__all__ = ["ACCESS_LISTS", "copy_xattrs"]

ACCESS_LISTS: Final = frozenset({"system.posix_acl_access", "system.nfs4_acl"})
"""Attributes that grant or deny access: one that cannot be copied fails the write."""
_COPIED: Final = ("user.", "system.")
_SKIPPED: Final = frozenset({errno.ENOTSUP, errno.EPERM, errno.EACCES})
"""What leaves an attribute that is no access list uncopied: not kept there, or not this user's to
read or give."""


def copy_xattrs(source: int, target: int) -> None:
    """Give the file open at *target* the extended attributes of the file *source* names.

    *source* may be an ``O_PATH`` descriptor (the file need not be readable: its access
    lists are read all the same). An attribute that is no access list is copied where it
    can be (not on a file system without it, nor unreadable to this user).

    Raises:
        OSError: ``EPERM``: an access list (:data:`ACCESS_LISTS`) cannot be copied; or the
            device failed (``ENOSPC``, ``EIO``). The caller must not publish the file.

    """
    where = f"/proc/self/fd/{source}"  # (the f*xattr calls refuse O_PATH descriptors)
    try:
        names = os.listxattr(where)
    except OSError as error:
        if error.errno in (errno.ENOTSUP, errno.EACCES):
            return  # a file system without them; or a file this user may not list
        raise
    for name in names:
        if not name.startswith(_COPIED):
            continue
        try:
            os.setxattr(target, name, os.getxattr(where, name))
        except OSError as error:
            if error.errno == errno.ENODATA:
                continue  # removed since it was listed
            if error.errno not in _SKIPPED:
                raise
            if name in ACCESS_LISTS:
                raise OSError(
                    errno.EPERM, f"its access control list ({name}) cannot be kept: {error}"
                ) from error
