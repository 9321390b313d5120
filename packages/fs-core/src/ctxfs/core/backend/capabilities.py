"""What a backend declares it can do: :class:`Capabilities`, plain data."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ctxfs.core.errors import TooLarge

__all__ = ["Capabilities", "CasScope"]


class CasScope(enum.StrEnum):
    """Who a backend's compare-and-swap protects against.

    ``PROCESS``: writers using the same backend object in one process.
    ``HOST``: writers on one machine (a kernel lock, e.g. ``flock``).
    ``COOPERATIVE``: writers on any host that follow ctxfs's lock-file protocol.
    ``GLOBAL``: every writer of the store; the store itself enforces the condition.
    """

    PROCESS = "process"
    HOST = "host"
    COOPERATIVE = "cooperative"
    GLOBAL = "global"


@dataclass(frozen=True, kw_only=True)
class Capabilities:
    """What a backend can do, reported truthfully (probed at open where it matters)."""

    cas_scope: CasScope
    """How far conditional writes (``expect=``) are enforced."""
    range_reads: bool
    """Whether ranged reads fetch only the range (otherwise they slice a full read)."""
    real_directories: bool
    """Whether empty directories exist (False on object stores, where they are prefixes)."""
    symlinks: bool
    """Whether the store can hold symbolic links."""
    locks: bool
    """Whether :meth:`Backend.lock` gives exclusion beyond this process."""
    max_cas_size: int | None = None
    """Largest body a conditional write accepts; larger writes raise ``TooLarge``."""
    directory_moves: bool = False
    """Whether :meth:`Backend.move_directory` moves a whole directory at once (a rename);
    where False it refuses with ``IsADirectory``."""
    concurrent_reads: int = 1
    """How many files a search may read at once to hide the store's latency (an object
    store: about 16; 1 where reads are local and cheap)."""
    tree_listing: bool = False
    """Whether :meth:`Backend.list_tree` may list a whole tree at once (else it is not called)."""
    file_search: bool = False
    """Whether :meth:`Backend.search_files` has an engine of its own (else it is not called)."""
    line_search: bool = False
    """Whether :meth:`Backend.search_lines` has an engine of its own (else it is not called)."""
    kept_versions: bool = False
    """Whether the store keeps a file's earlier versions (a versioned bucket) for
    :meth:`Backend.read_version`: the session memory then keeps no copy of them."""

    def check_size(self, path: str, data: bytes) -> None:
        """Refuse *data* for *path* where it is more than one conditional write carries.

        Raises:
            TooLarge: *data* exceeds :attr:`max_cas_size`.

        """
        limit = self.max_cas_size
        if limit is not None and len(data) > limit:
            raise TooLarge(
                f"{path}: {len(data)} bytes is more than the {limit} one write here can carry",
                path=path,
                hint="Split the content into smaller files.",
                details={"size": len(data), "max_size": limit},
            )
