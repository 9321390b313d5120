"""Tool-call overhead: ``FsToolset.execute`` on fs-local against hand-written async code.

The baseline does the same work a tool call does, minus ctxfs: for a read, read
the file, hash it, find the window and number its lines; for an edit, read,
check the match is unique, splice and write atomically. Both sides work on a
~10 KB file in the same temporary directory.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio

from benchmarks.harness import Case
from benchmarks.local_disk import baseline_edit, baseline_read
from benchmarks.text_semantics import text_of_size, toggle
from ctxfs.core import Fs, sqlite_url
from ctxfs.core.sessions import DEFAULT_MAX_STEPS
from ctxfs.local import LocalBackend
from ctxfs.tools import FsToolset, ToolResult

GROUP = "Tool-call overhead: `FsToolset.execute` on fs-local, ~10 KB file"


async def cases(workdir: Path) -> list[Case]:
    """A window read and a one-line edit as tool calls; the edit with the stores in files."""
    ours_root, base_root = workdir / "tools-ctxfs", workdir / "tools-baseline"
    kept_root = workdir / "tools-kept"
    for root in (ours_root, base_root, kept_root):
        root.mkdir()
    data = text_of_size(10_000)
    at = data.find(b"\n", len(data) // 2) + 1
    data = data[:at] + b"UNIQUE-MARKER-A\n" + data[at:]
    (ours_root / "module.txt").write_bytes(data)
    (base_root / "module.txt").write_bytes(data)
    (kept_root / "module.txt").write_bytes(data)
    fs = Fs(LocalBackend(ours_root, state_dir=workdir / "tools-state"), load_entrypoints=False)
    ctx = fs.context(owner="bench")
    tools = FsToolset()
    await tools.execute(ctx, "read", {"file_path": "module.txt"})
    lock = anyio.Lock()

    async def ours_edit(old: str, new: str) -> object:
        arguments = {"file_path": "module.txt", "old_string": old, "new_string": new}
        return await tools.execute(ctx, "edit", arguments)

    kept = Fs(
        LocalBackend(kept_root, state_dir=workdir / "tools-state"),
        load_entrypoints=False,
        observations=sqlite_url(workdir / "tools-observations.db"),
        sessions=sqlite_url(workdir / "tools-sessions.db"),
    )
    kept_ctx = kept.context(owner="bench")
    await tools.execute(kept_ctx, "read", {"file_path": "module.txt"})

    async def kept_edit(old: str, new: str) -> object:
        arguments = {"file_path": "module.txt", "old_string": old, "new_string": new}
        return await tools.execute(kept_ctx, "edit", arguments)

    kept_toggled, ours_toggled = toggle(kept_edit), toggle(ours_edit)
    for _ in range(DEFAULT_MAX_STEPS + 100):  # each edit then gives up the oldest step
        result = await kept_toggled()
        if not isinstance(result, ToolResult) or result.is_error:
            raise RuntimeError(f"an edit failed: {result}")

    return [
        Case(
            group=GROUP,
            name="read, 2,000-line window",
            ours=partial(tools.execute, ctx, "read", {"file_path": "module.txt", "fresh": True}),
            baseline=partial(baseline_read, anyio.Path(base_root / "module.txt"), 1, 2000),
            target=1.5,
            calls=20,
        ),
        Case(
            group=GROUP,
            name="edit one line",
            ours=ours_toggled,
            baseline=toggle(partial(baseline_edit, base_root / "module.txt", lock)),
            target=1.5,
            calls=20,
        ),
        Case(
            group=GROUP,
            name="edit one line, stores in SQLite files (stdio `serve`'s default)",
            ours=kept_toggled,
            baseline=ours_toggled,
            target=None,
            calls=20,
            note=(
                "baseline: the same edit with the stores in memory; ctxfs: observations and "
                "session memory each in a SQLite file, the session past its max_steps (each "
                "edit gives up the oldest step): what keeping them costs an edit"
            ),
        ),
    ]
