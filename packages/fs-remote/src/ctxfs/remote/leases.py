"""When the lease a lock file holds ends: shared by SFTP's write locks and object-store removals."""

from __future__ import annotations

import math
import time
from typing import Any

__all__ = ["lease_expiry"]


def lease_expiry(holder: Any, lease: float) -> float:
    """When the lease *holder* (a lock file's parsed JSON) ends; a foreign or damaged one's has.

    So has one said to end later than a lease of *lease* seconds could from now (a clock
    that far ahead, or a number that large, is taken for damage), and one naming no end.
    """
    if not isinstance(holder, dict):
        return 0.0
    try:
        expires = float(holder.get("expires", 0.0))
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return expires if math.isfinite(expires) and expires <= time.time() + 2 * lease else 0.0
