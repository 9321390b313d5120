from __future__ import annotations

import gc
import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pluggy
import pytest

from ctxfs.core import (
    Fs,
    FsOptions,
    InvalidArgument,
    MemoryBackend,
    Unavailable,
    hookimpl,
    open_backend,
    open_fs,
    sqlite_url,
)
from ctxfs.core.sessions import sqlite_store
from ctxfs.core.sessions.sqlite_store import SqliteSessions
from tests.conftest import InstallDist

pytestmark = pytest.mark.anyio


async def test_memory_url_opens_a_private_store() -> None:
    async with open_fs("memory://", load_entrypoints=False) as one:
        await one.context(owner="a").fs.write("x.txt", "1\n")
        async with open_fs("memory://", load_entrypoints=False) as two:
            assert await two.context(owner="a").fs.list() == []
    assert isinstance(one, Fs)
    assert isinstance(one.backend, MemoryBackend)


async def test_named_memory_stores_are_shared_within_the_process() -> None:
    url = f"memory://shared-{uuid.uuid4().hex}"
    one = open_fs(url, load_entrypoints=False)
    two = open_fs(url, load_entrypoints=False)
    await one.context(owner="a").fs.write("x.txt", "1\n")
    names = [entry.name for entry in await two.context(owner="b").fs.list()]
    assert names == ["x.txt"]


def test_unknown_scheme_lists_what_is_installed() -> None:
    with pytest.raises(InvalidArgument) as caught:
        open_backend("nosuch://thing")
    assert "no installed package provides the 'nosuch' scheme" in str(caught.value)
    assert "memory" in caught.value.details["installed"]
    assert "'ctxfs.backends' entry point group" in caught.value.hint


def test_core_keeps_no_table_of_install_hints() -> None:
    from ctxfs.core import registry  # noqa: PLC0415

    assert not hasattr(registry, "_PROVIDERS")  # hints live with the backends' entry points


def test_backend_whose_dependencies_are_missing_names_its_distribution(
    install_dist: InstallDist,
) -> None:
    install_dist(
        "ctxfs-broken",
        modules={"ctxfs_broken_backend": "import not_installed_anywhere\n"},
        entry_points={"ctxfs.backends": {"broken": "ctxfs_broken_backend:factory"}},
    )
    with pytest.raises(InvalidArgument) as caught:
        open_backend("broken://x")
    assert "the backend for scheme 'broken' (ctxfs-broken) cannot be imported" in str(caught.value)
    assert "not_installed_anywhere" in str(caught.value)
    assert caught.value.hint == "Reinstall ctxfs-broken with its dependencies."


def test_backend_options_reach_the_factory_and_bad_ones_are_invalid_arguments(
    install_dist: InstallDist,
) -> None:
    install_dist(
        "ctxfs-echo",
        modules={
            "ctxfs_echo_backend": """
                from ctxfs.core import MemoryBackend

                def factory(url, *, label):
                    backend = MemoryBackend()
                    backend.label = (url, label)
                    return backend
            """
        },
        entry_points={"ctxfs.backends": {"echo": "ctxfs_echo_backend:factory"}},
    )
    backend = open_backend("echo://where", label="L")
    assert backend.label == ("echo://where", "L")  # type: ignore[attr-defined]
    with pytest.raises(InvalidArgument, match="unexpected keyword"):
        open_backend("echo://where", colour="red")


def test_memory_url_refuses_query_strings() -> None:
    with pytest.raises(InvalidArgument):
        open_backend("memory://x?y=1")


def test_plain_paths_use_the_file_scheme(monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxfs.core import registry  # noqa: PLC0415

    seen: list[str] = []

    def factory_of(scheme: str) -> registry.BackendFactory:
        seen.append(scheme)
        return lambda url: MemoryBackend()

    monkeypatch.setattr(registry, "_factory", factory_of)
    open_backend("/some/dir")
    open_backend("relative/dir")
    open_backend("FILE:///abs")
    assert seen == ["file", "file", "file"]


class _Typo:
    @hookimpl
    def ctxfs_authorise(self) -> None: ...


def _not_sqlite(directory: Path) -> str:
    (directory / "sessions.db").write_bytes(b"not SQLite " * 1000)
    return sqlite_url(directory / "sessions.db")


@pytest.mark.parametrize(
    ("later", "refusal"),
    [
        (lambda _: {"sessions": "nosuch://store"}, InvalidArgument),
        (lambda directory: {"sessions": _not_sqlite(directory)}, Unavailable),
        (lambda _: {"plugins": [_Typo()]}, pluggy.PluginValidationError),
    ],
    ids=["a bad sessions URL", "a sessions file that is not SQLite", "a bad plugin"],
)
def test_an_fs_that_fails_to_be_made_closes_the_stores_it_opened(
    later: Callable[[Path], FsOptions], refusal: type[Exception], tmp_path: Path
) -> None:
    """No file stays open until the collector comes (a SQLite store holds reference cycles)."""
    options = later(tmp_path)
    options["load_entrypoints"] = False
    options["observations"] = sqlite_url(tmp_path / "observations.db")
    gc.disable()
    try:
        with pytest.raises(refusal):
            Fs(MemoryBackend(), **options)
        assert (tmp_path / "observations.db").exists()
        assert not _open_under(tmp_path)
    finally:
        gc.enable()


def test_a_sqlite_session_store_that_fails_to_be_made_closes_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*_: object) -> None:
        raise Unavailable("the owners could not be adopted")

    monkeypatch.setattr(sqlite_store, "_adopt", refused)
    gc.disable()
    try:
        with pytest.raises(Unavailable, match="adopted"):
            SqliteSessions(tmp_path / "sessions.db")
        assert not _open_under(tmp_path)
    finally:
        gc.enable()


def _open_under(directory: Path) -> set[str]:
    """The files under *directory* this process holds open."""
    opened = {os.readlink(fd) for fd in Path("/proc/self/fd").iterdir() if fd.exists()}
    return {name for name in opened if name.startswith(f"{directory}/")}
