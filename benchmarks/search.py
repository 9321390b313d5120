"""Search at repository scale: grep and glob on fs-local against ripgrep and a plain Python walk.

Trees of generated Python-like files: 10,000 files of 100 lines, then 50,000 and 100,000
of 10 lines for how time grows; 20,000 files in 100 packages of 10 modules, for searches a
glob narrows (a glob filter, a directory prefix); the project's own installed ``.venv``
(hard-linked files, read with ``read_hard_links``; ignored by the ``.gitignore`` uv puts
there, so both sides include ignored files); and one 1 GB file. ctxfs runs the tools through
``FsToolset.execute`` (fs-local, ripgrep confined by Landlock); the baselines are the same
ripgrep binary on the command line (``rg --count``, what ctxfs needs for exact totals;
``rg --files -g`` for glob; ``rg -n`` for the 1 GB file's lines) and the simplest Python
loop (``os.walk``, whole files, one compiled regular expression). The next page of a
search finds ripgrep's answer kept (the tree has not changed): it costs a ``stat`` of
each entry and the page's own lines.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Final

import anyio.to_thread

from benchmarks.harness import Case
from ctxfs.core import Fs
from ctxfs.local import LocalBackend
from ctxfs.local.ripgrep import find_ripgrep
from ctxfs.tools import FsToolset

GROUP: Final = "Search on fs-local: grep and glob against ripgrep (the same binary, alone)"
PLAIN: Final = "Search on fs-local: grep against the simplest Python loop (os.walk + re)"
WORDS: Final = ("alpha", "beta", "gamma", "delta", "import", "def", "class", "return", "self")


def tree(root: Path, *, files: int, lines: int) -> None:
    """*files* files of *lines* lines in directories of 100, one holding ``UNIQUE_NEEDLE``."""
    pick = random.Random(files).choice
    for index in range(files):
        directory = root / f"d{index // 100:04d}"
        if index % 100 == 0:
            directory.mkdir(parents=True)
        body = "".join(" ".join(pick(WORDS) for _ in range(8)) + "\n" for _ in range(lines))
        if index == files // 2:
            body += "UNIQUE_NEEDLE here\n"
        (directory / f"f{index % 100:03d}.py").write_text(body)


def packages(root: Path) -> None:
    """20,000 files of 10 lines: ``pkg{0..99}/mod{0..9}/f{0..19}.py``, one holding the needle."""
    pick = random.Random(20_000).choice
    for package in range(100):
        for module in range(10):
            directory = root / f"pkg{package}" / f"mod{module}"
            directory.mkdir(parents=True)
            for index in range(20):
                body = "".join(" ".join(pick(WORDS) for _ in range(8)) + "\n" for _ in range(10))
                if (package, module, index) == (3, 4, 7):
                    body += "UNIQUE_NEEDLE here\n"
                (directory / f"f{index:02d}.py").write_text(body)


def gigabyte(root: Path) -> None:
    """One file of 1 GiB of short lines holding ``UNIQUE_NEEDLE`` on ten of them."""
    root.mkdir(parents=True)
    line = b"alpha beta gamma delta import def class return self 0123456789\n"
    block = line * ((1 << 20) // len(line))
    with (root / "big.log").open("wb") as out:
        for index in range(1024):
            if index % 100 == 50:
                out.write(b"a line with UNIQUE_NEEDLE in it\n")
            out.write(block)


def plain_grep(root: Path, pattern: str, flags: int = 0) -> int:
    """The simplest whole-file search: every file, one regular expression, matching lines."""
    compiled, found = re.compile(pattern.encode(), flags | re.MULTILINE), 0
    for directory, _, names in os.walk(root):
        for name in names:
            data = Path(directory, name).read_bytes()
            found += sum(1 for _ in compiled.finditer(data))
    return found


async def cases(workdir: Path) -> list[Case]:
    """The search cases (none if ripgrep cannot run confined here)."""
    rg = find_ripgrep()
    if rg is None:
        return []
    small, large, huge = workdir / "search-10k", workdir / "search-50k", workdir / "search-100k"
    await anyio.to_thread.run_sync(partial(tree, small, files=10_000, lines=100))
    await anyio.to_thread.run_sync(partial(tree, large, files=50_000, lines=10))
    await anyio.to_thread.run_sync(partial(tree, huge, files=100_000, lines=10))
    one_file = workdir / "search-1gb"
    await anyio.to_thread.run_sync(partial(gigabyte, one_file))
    ours, ripgrep = partial(_ours, FsToolset()), partial(_ripgrep, rg.binary)

    def plain(root: Path, pattern: str, flags: int = 0) -> Callable[[], Awaitable[object]]:
        return partial(anyio.to_thread.run_sync, partial(plain_grep, root, pattern, flags))

    cases: list[Case] = []
    for root, label in ((small, "10k files"), (large, "50k files"), (huge, "100k files")):
        cases += [
            Case(group=GROUP, name=f"grep literal, one match, {label}",
                 ours=ours(root, "grep", pattern="UNIQUE_NEEDLE"),
                 baseline=ripgrep(root, "--count", "UNIQUE_NEEDLE"), target=2.0, rounds=7),
            Case(group=GROUP, name=f"grep regex, many matches (a page of 100), {label}",
                 ours=ours(root, "grep", pattern=r"gamma \w+ delta"),
                 baseline=ripgrep(root, "--count", r"gamma \w+ delta"), target=2.0, rounds=7),
            Case(group=GROUP, name=f"grep regex, the next page (offset 101), {label}",
                 ours=ours(root, "grep", pattern=r"gamma \w+ delta", offset=101, next_page=True),
                 baseline=ripgrep(root, "--count", r"gamma \w+ delta"), target=2.0, rounds=7),
            Case(group=GROUP, name=f"grep case-insensitive, {label}",
                 ours=ours(root, "grep", pattern="unique_needle", ignore_case=True),
                 baseline=ripgrep(root, "--count", "-i", "unique_needle"), target=2.0, rounds=7),
            Case(group=GROUP, name=f"grep with a glob filter, {label}",
                 ours=ours(root, "grep", pattern="UNIQUE_NEEDLE", glob="**/f00*.py"),
                 baseline=ripgrep(root, "--count", "-g", "**/f00*.py", "UNIQUE_NEEDLE"),
                 target=2.0, rounds=7),
            Case(group=GROUP, name=f"glob `**/f00*.py`, {label}",
                 ours=ours(root, "glob", pattern="**/f00*.py"),
                 baseline=ripgrep(root, "--files", "-g", "**/f00*.py"), target=2.0, rounds=7),
        ]  # fmt: skip
    venv = Path(__file__).resolve().parents[1] / ".venv"
    cases += [
        Case(group=GROUP, name="grep literal, the project's .venv",
             ours=ours(venv, "grep", pattern="def ctxfs_", include_ignored=True),
             baseline=ripgrep(venv, "--count", "--no-ignore", "def ctxfs_"),
             target=2.0, rounds=7),
        Case(group=GROUP, name="glob `**/*.pyi`, the project's .venv",
             ours=ours(venv, "glob", pattern="**/*.pyi", include_ignored=True),
             baseline=ripgrep(venv, "--files", "--no-ignore", "-g", "**/*.pyi"),
             target=2.0, rounds=7),
        Case(group=GROUP, name="grep literal, few matches, one 1 GB file",
             ours=ours(one_file, "grep", pattern="UNIQUE_NEEDLE"),
             baseline=ripgrep(one_file, "-n", "UNIQUE_NEEDLE"), target=2.0, rounds=5),
    ]  # fmt: skip
    cases += [
        Case(group=PLAIN, name="grep literal, one match, 10k files",
             ours=ours(small, "grep", pattern="UNIQUE_NEEDLE"),
             baseline=plain(small, "UNIQUE_NEEDLE"), target=1.0, rounds=5),
        Case(group=PLAIN, name="grep case-insensitive, 10k files",
             ours=ours(small, "grep", pattern="unique_needle", ignore_case=True),
             baseline=plain(small, "unique_needle", re.IGNORECASE), target=1.0, rounds=5),
    ]  # fmt: skip
    return [*cases, *await filtered_cases(workdir)]


async def filtered_cases(workdir: Path) -> list[Case]:
    """Searches a glob narrows, against ripgrep with the same ``-g`` (none without ripgrep).

    A glob filter (``**/mod4/*.py``: every directory, a tenth of the files) and a
    directory prefix (``pkg3/**/*.py``: one package of 100) on 20,000 files.
    """
    rg = find_ripgrep()
    if rg is None:
        return []
    root = workdir / "search-packages"
    await anyio.to_thread.run_sync(packages, root)
    ours, ripgrep = partial(_ours, FsToolset()), partial(_ripgrep, rg.binary)
    cases = []
    for glob, label in (("**/mod4/*.py", "a glob filter"), ("pkg3/**/*.py", "a directory prefix")):
        cases += [
            Case(group=GROUP, name=f"grep with {label} `{glob}`, 20k files",
                 ours=ours(root, "grep", pattern="UNIQUE_NEEDLE", glob=glob),
                 baseline=ripgrep(root, "--count", "-g", glob, "UNIQUE_NEEDLE"),
                 target=2.0, rounds=7),
            Case(group=GROUP, name=f"glob `{glob}` ({label}), 20k files",
                 ours=ours(root, "glob", pattern=glob),
                 baseline=ripgrep(root, "--files", "-g", glob), target=2.0, rounds=7),
        ]  # fmt: skip
    return cases


def _ours(
    tools: FsToolset, root: Path, tool: str, *, next_page: bool = False, **arguments: object
) -> Callable[[], Awaitable[object]]:
    """A call of *tool* on fs-local at *root*, a new search each time unless *next_page*."""
    backend = LocalBackend(root, state_dir=f"{root}.state", read_hard_links=True)
    ctx = Fs(backend, load_entrypoints=False).context(owner="bench")

    async def call() -> object:
        if not next_page:  # each call a new search: not the answer kept for a next page
            backend.answers.clear()
        result = await tools.execute(ctx, tool, arguments)
        assert result.error_code is None, result.text
        return result

    return call


def _ripgrep(binary: str, root: Path, *args: str) -> Callable[[], Awaitable[object]]:
    """The same ripgrep alone, run in *root* with *args*."""
    command = [binary, "--no-config", *args]
    return partial(anyio.to_thread.run_sync, partial(_run, command, root))


def _run(command: list[str], cwd: Path) -> bytes:
    return subprocess.run(command, cwd=cwd, capture_output=True, check=False).stdout
