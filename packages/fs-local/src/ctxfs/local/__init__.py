"""ctxfs local: a local-disk backend confined to its root by the kernel.

``open_fs("/path/to/workspace")`` (or ``file:///path``) opens one::

    from ctxfs.core import open_fs

    async with open_fs("/srv/workspace") as fs:
        ctx = fs.context(owner="agent-1")
        outcome = await ctx.fs.read("README.md")

Every path resolves beneath the root's descriptor (``openat2`` with
``RESOLVE_BENEATH``, or a component-by-component ``O_NOFOLLOW`` walk), writes
are atomic and durable, and ``flock`` locks in a private state directory
exclude writers across processes. See ``docs/security.md``.
"""

from ctxfs.local.backend import TEMP_PREFIX, LocalBackend
from ctxfs.local.flocks import default_state_dir
from ctxfs.local.resolve import Openat2Resolver, Resolver, WalkResolver

__all__ = [
    "TEMP_PREFIX",
    "LocalBackend",
    "Openat2Resolver",
    "Resolver",
    "WalkResolver",
    "default_state_dir",
]
