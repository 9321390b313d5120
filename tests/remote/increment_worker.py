"""One simulated host: its own process and its own ``Fs`` on a shared store.

``python -m tests.remote.increment_worker URL OPTIONS_JSON OWNER COUNT GO_FILE``
waits for GO_FILE to exist (so that every worker starts together), then makes
COUNT guarded increments of ``counter.txt`` through ``ctx.fs.read`` and
``ctx.fs.edit``, reading again after every ``stale``. It prints how many of its
edits were refused as stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

from ctxfs.core import Stale, open_fs


async def increment(url: str, options: dict[str, Any], owner: str, count: int, go: Path) -> int:
    stale = 0
    async with open_fs(url, load_entrypoints=False, **options) as fs:
        ctx = fs.context(owner=owner)
        while not go.exists():  # noqa: ASYNC110, ASYNC240 - a barrier across processes
            await anyio.sleep(0.005)
        done = 0
        while done < count:
            current = (await ctx.fs.read("counter.txt")).text
            try:
                await ctx.fs.edit("counter.txt", current, f"{int(current) + 1}\n")
            except Stale:
                stale += 1
                continue
            done += 1
    return stale


def main() -> None:
    url, options, owner, count, go = sys.argv[1:6]
    stale = anyio.run(increment, url, json.loads(options), owner, int(count), Path(go))
    print(json.dumps({"owner": owner, "stale": stale}))


if __name__ == "__main__":
    main()
