"""``AuditLedger``: one JSON line per ``ctx.fs`` operation, refusals included, written durably."""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ctxfs.core.hookspecs import hookimpl

if TYPE_CHECKING:
    from ctxfs.core.context import Context
    from ctxfs.core.errors import FsError
    from ctxfs.core.outcomes import Operation
    from ctxfs.core.versions import Version

__all__ = ["AuditLedger"]


class AuditLedger:
    """Append a record of every operation to a JSON-lines file, ``fsync``-ed line by line.

    Each line holds ``time`` (UTC, ISO 8601), ``owner``, ``workspace``, ``op``,
    ``path``, ``before`` and ``after`` (versions), ``outcome`` (``ok`` or
    ``error``) and ``error_code``. Keep the ledger outside the workspace.

    Args:
        path: The ledger file; created (mode 0600) if missing, only ever appended to.
        durable: ``fsync`` each line before the operation is reported done.

    """

    def __init__(self, path: str | os.PathLike[str], *, durable: bool = True) -> None:
        self.path = Path(path)
        self.durable = durable
        self._guard = threading.Lock()

    @hookimpl
    async def ctxfs_finished(
        self,
        ctx: Context,
        op: Operation,
        error: FsError | None,
        before: Version | None,
        after: Version | None,
    ) -> None:
        """Record how an operation ended."""
        record = {
            "time": datetime.now(UTC).isoformat(timespec="microseconds"),
            "owner": ctx.owner,
            "workspace": ctx.workspace,
            "op": op.kind.value,
            "path": op.path,
            "before": before,
            "after": after,
            "outcome": "ok" if error is None else "error",
            "error_code": None if error is None else error.code.value,
        }
        line = json.dumps(record, ensure_ascii=False) + "\n"
        await anyio.to_thread.run_sync(self._append, line.encode("utf-8", "surrogateescape"))

    def _append(self, data: bytes) -> None:
        with self._guard:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, data)  # one write per line: appends never interleave
                if self.durable:
                    os.fsync(fd)
            finally:
                os.close(fd)

    def records(self) -> list[dict[str, object]]:
        """Every record so far, in order (for tests and tools)."""
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]
