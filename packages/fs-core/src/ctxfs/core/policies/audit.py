"""``AuditLedger``: one JSON line per ``ctx.fs`` operation, refusals included, written durably."""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ctxfs.core.errors import Unavailable
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
    ``error``) and ``error_code``. Keep the ledger outside the workspace. A line that
    cannot be appended fails the call ``unavailable``, saying whether the operation
    was done (``details["done"]``).

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
        try:
            await anyio.to_thread.run_sync(self._append, line.encode("utf-8", "surrogateescape"))
        except OSError as failure:
            ended = "was done" if error is None else f"failed ({error.code}: {error.message})"
            raise Unavailable(
                f"the {op.kind} of {op.path or 'the root'} {ended}, but the audit ledger "
                f"{self.path} could not record it: {failure.strerror or failure}",
                path=op.path or None,
                hint="Tell the user the audit ledger cannot be written (disk space, "
                "permissions); read the file before changing it again.",
                details={"done": error is None},
            ) from failure

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
        text = self.path.read_bytes().decode("utf-8", "surrogateescape")
        return [json.loads(line) for line in text.split("\n") if line]  # (a path may hold U+2028)
