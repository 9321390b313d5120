"""A workspace root beside things it must never reach, for the fs-local tests."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ctxfs.core import Context, FileSearch, Fs
from ctxfs.local import LocalBackend
from ctxfs.local.ripgrep import Ripgrep
from tests.loops import anyio_backend  # noqa: F401 - fs-local on trio with the slow set

SECRET = b"top secret\n"


@dataclass(frozen=True)
class Layout:
    """``base/R`` is the root; ``base/secret`` and ``base/R-evil/x`` lie outside it."""

    base: Path
    root: Path
    secret: Path
    state: Path

    def outside(self) -> dict[str, object]:
        """Everything outside the root: file contents, link targets, directory names."""
        seen: dict[str, object] = {}
        for directory, dirs, files in os.walk(self.base):
            here = Path(directory)
            if (
                here == self.root
                or self.root in here.parents
                or here == self.state
                or (self.state in here.parents)
            ):
                dirs.clear()
                continue
            for name in dirs + files:
                path = here / name
                if path in (self.root, self.state):
                    continue
                if path.is_symlink():
                    seen[str(path)] = ("link", os.readlink(path))
                elif path.is_file():
                    seen[str(path)] = path.read_bytes()
                else:
                    seen[str(path)] = "dir"
        return seen


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    root = tmp_path / "R"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"alpha\n")
    (root / "sub" / "c").write_bytes(b"gamma\n")
    (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (tmp_path / "R-evil").mkdir()
    (tmp_path / "R-evil" / "x").write_bytes(b"evil\n")
    (tmp_path / "secret").write_bytes(SECRET)
    return Layout(base=tmp_path, root=root, secret=tmp_path / "secret", state=tmp_path / "state")


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


MakeFs = Callable[..., Fs]


@pytest.fixture
async def make_fs(layout: Layout, resolver: str) -> AsyncIterator[MakeFs]:
    opened: list[Fs] = []

    def make(**options: object) -> Fs:
        backend = LocalBackend(
            layout.root,
            resolver=resolver,
            state_dir=layout.state,
            **options,  # type: ignore[arg-type]
        )
        fs = Fs(backend, load_entrypoints=False, lock_timeout=5.0)
        opened.append(fs)
        return fs

    yield make
    for fs in opened:
        await fs.aclose()


@pytest.fixture
def ctx(make_fs: MakeFs) -> Context:
    return make_fs().context(owner="agent")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[FileSearch]:
    """Every count pass ripgrep runs, in order."""
    runs: list[FileSearch] = []
    search = Ripgrep.search

    async def recorded(self: Ripgrep, *args: Any, **options: Any) -> Any:
        runs.append(args[-1])
        return await search(self, *args, **options)

    monkeypatch.setattr(Ripgrep, "search", recorded)
    return runs
