"""OpenHands ACI's editor (``openhands-aci``) against ctxfs's tools, on the same ~10 KB file.

``OHEditor`` needs Python 3.12, so it runs in its own virtual environment
(``CTXFS_BENCH_ACI``, default under the system temporary directory), created on
first use with a 3.12 interpreter (``uv python find``'s, else a ``python3.12`` on
the path or under pyenv's versions) and ``openhands-aci`` from the package index.
A worker there times ``view`` and ``str_replace`` calls in its process; ctxfs's
``read`` and ``edit`` tool calls are timed the same way in this one. Each side's
samples are per-call times over batches, so the medians compare directly even
though the two sides cannot alternate.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

from benchmarks.harness import Case, Result
from benchmarks.text_semantics import text_of_size, toggle
from ctxfs.core import Fs
from ctxfs.local import LocalBackend
from ctxfs.tools import FsToolset

GROUP = "Anchor: OpenHands ACI's `OHEditor`, in process, ~10 KB file"
ACI_HOME: Final = Path(
    os.environ.get("CTXFS_BENCH_ACI", Path(tempfile.gettempdir()) / "ctxfs-bench-aci")
)
ROUNDS: Final = 15
CALLS: Final = 20

_WORKER = textwrap.dedent(
    """
    import json, sys, time
    from openhands_aci.editor.editor import OHEditor

    path, rounds, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    editor = OHEditor()
    markers = ["UNIQUE-MARKER-A", "UNIQUE-MARKER-B"]

    def view():
        editor(command="view", path=path)

    def edit():
        editor(command="str_replace", path=path, old_str=markers[0], new_str=markers[1])
        markers.reverse()

    out = {}
    for name, call in (("view", view), ("edit", edit)):
        call()
        samples = []
        for _ in range(rounds):
            started = time.perf_counter()
            for _ in range(calls):
                call()
            samples.append((time.perf_counter() - started) / calls)
        out[name] = samples
    print(json.dumps(out))
    """
)


def python_312() -> str:
    """A Python 3.12 interpreter on this machine.

    Raises:
        RuntimeError: There is none.

    """
    uv = shutil.which("uv")
    found = (
        subprocess.run([uv, "python", "find", "3.12"], capture_output=True, text=True, check=False)
        if uv is not None
        else None
    )
    candidates = [found.stdout.strip()] if found is not None and found.returncode == 0 else []
    candidates += [shutil.which("python3.12") or ""]
    candidates += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))
    for candidate in filter(None, candidates):
        probe = [candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 12)"]
        if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
            return candidate
    raise RuntimeError("no Python 3.12 here (openhands-aci needs one): install it to compare")


def aci_python() -> Path:
    """The Python of the OpenHands ACI environment, created on first use."""
    python = ACI_HOME / "bin" / "python"
    if not (ACI_HOME / ".ready").exists():
        interpreter = python_312()
        print(f"installing openhands-aci into {ACI_HOME}", file=sys.stderr)
        subprocess.run([interpreter, "-m", "venv", "--clear", str(ACI_HOME)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "openhands-aci"], check=True
        )
        (ACI_HOME / ".ready").touch()
    return python


def aci_version(python: Path) -> str:
    """The installed version of openhands-aci."""
    return subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('openhands-aci'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


async def _samples(call: Callable[[], Awaitable[object]]) -> list[float]:
    await call()
    samples = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        for _ in range(CALLS):
            await call()
        samples.append((time.perf_counter() - started) / CALLS)
    return samples


async def results(workdir: Path) -> list[Result]:
    """Both sides timed on their own copy of the same file."""
    python = aci_python()
    data = text_of_size(10_000)
    at = data.find(b"\n", len(data) // 2) + 1
    data = data[:at] + b"UNIQUE-MARKER-A\n" + data[at:]
    theirs, ours_root = workdir / "aci" / "module.py", workdir / "aci-ctxfs"
    theirs.parent.mkdir()
    ours_root.mkdir()
    theirs.write_bytes(data)
    (ours_root / "module.py").write_bytes(data)
    worker = subprocess.run(
        [str(python), "-c", _WORKER, str(theirs), str(ROUNDS), str(CALLS)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    aci = json.loads(worker.stdout)

    fs = Fs(LocalBackend(ours_root, state_dir=workdir / "aci-state"), load_entrypoints=False)
    ctx = fs.context(owner="bench")
    tools = FsToolset()

    async def read() -> object:
        return await tools.execute(ctx, "read", {"file_path": "module.py", "fresh": True})

    async def edit(old: str, new: str) -> object:
        arguments = {"file_path": "module.py", "old_string": old, "new_string": new}
        return await tools.execute(ctx, "edit", arguments)

    note = (
        f"openhands-aci {aci_version(python)} (Python 3.12, its own process); no read-before-write"
    )
    cases = (
        ("view whole file (`read` / `view`)", read, aci["view"], note),
        ("edit one line (`edit` / `str_replace`)", toggle(edit), aci["edit"], ""),
    )
    built = []
    for name, ours, baseline, text in cases:
        case = Case(group=GROUP, name=name, ours=ours, baseline=ours, target=1.0, note=text)
        built.append(Result(case=case, ours=await _samples(ours), baseline=baseline))
    return built
