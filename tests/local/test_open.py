"""fs-local is what plain paths and file:// URLs open."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxfs.core import InvalidArgument, open_fs
from ctxfs.local import LocalBackend, WalkResolver

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("spelling", ["path", "str", "url"])
async def test_plain_paths_and_file_urls_open_the_local_backend(
    tmp_path: Path, spelling: str
) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "hello.txt").write_text("hi\n")
    spellings: dict[str, str | Path] = {
        "path": tmp_path / "root",
        "str": str(tmp_path / "root"),
        "url": (tmp_path / "root").as_uri(),
    }
    target = spellings[spelling]
    async with open_fs(target, state_dir=tmp_path / "state", load_entrypoints=False) as fs:
        assert isinstance(fs.backend, LocalBackend)
        assert fs.backend.root == (tmp_path / "root").resolve()
        assert (await fs.context(owner="a").fs.read("hello.txt")).text == "hi\n"


async def test_the_environment_can_force_the_fallback_resolver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXFS_LOCAL_RESOLVER", "walk")
    async with LocalBackend(tmp_path, state_dir=tmp_path.parent / "state-walk") as backend:
        assert isinstance(backend.resolver, WalkResolver)


def test_a_missing_root_is_refused_not_created(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="cannot open workspace root"):
        open_fs(tmp_path / "missing", state_dir=tmp_path / "state")
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("empty", ["", "file://", "file://localhost"])
def test_an_empty_root_is_refused_never_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidArgument, match="the workspace root is empty"):
        open_fs(empty, state_dir=tmp_path.parent / "state-empty")


def test_remote_file_urls_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="unsupported file URL"):
        open_fs("file://otherhost/srv", state_dir=tmp_path / "state")
