"""The update routine every store shares: what it hands the store's ``_put``.

A toy store keeps permissions as data (as fs-local keeps a file's mode and owner), so that
the routine's move, a patch's rollback and an undo can be seen handing them on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from ctxfs.core import (
    ABSENT,
    BackendError,
    ContextFs,
    FilePatch,
    Fs,
    Hunk,
    NotFound,
    PatchAction,
    Unavailable,
)
from ctxfs.core.kit import (
    NO_PERMISSIONS,
    Blob,
    ConditionalUpdate,
    Permissions,
    ReadRequest,
    Version,
)
from ctxfs.core.memory import MemoryBackend
from ctxfs.core.sessions import MemorySessions

pytestmark = pytest.mark.anyio


class PermissionsBackend(MemoryBackend):
    """The memory store, with each file's permissions kept beside it."""

    def __init__(self) -> None:
        super().__init__()
        self.permissions: dict[str, Permissions] = {}

    @asynccontextmanager
    async def _open_update(self, path: str, request: ReadRequest) -> AsyncIterator[KeptUpdate]:
        async with super()._open_update(path, request) as update:
            yield KeptUpdate(self, path, update.current)


class KeptUpdate(ConditionalUpdate):
    """The default update, reading and writing the file's permissions as a store keeps them."""

    backend: PermissionsBackend

    def __init__(self, backend: PermissionsBackend, path: str, current: Blob | None) -> None:
        super().__init__(backend, path, current)
        if current is not None:
            self.permissions = backend.permissions.get(path, NO_PERMISSIONS)

    async def _put(self, data: bytes, *, was: Version | None, permissions: Permissions) -> Version:
        version = await super()._put(data, was=was, permissions=permissions)
        kept = self.backend.permissions.get(self.path, NO_PERMISSIONS) if was else NO_PERMISSIONS
        given = permissions.mode is not None  # (else the file keeps its own; a new one, none)
        self.backend.permissions[self.path] = permissions if given else kept
        return version

    async def _remove(self, *, was: Version) -> None:
        await super()._remove(was=was)
        del self.backend.permissions[self.path]


RUN = Permissions(mode=0o751, owner=(7, 8))


@pytest.fixture
async def store() -> AsyncIterator[tuple[PermissionsBackend, ContextFs]]:
    """The toy store, and an agent's ``ctx.fs`` on it."""
    backend = PermissionsBackend()
    await backend.write("run.sh", b"echo one\n", expect=ABSENT)
    await backend.write("b.txt", b"b\n", expect=ABSENT)
    backend.permissions.update({"run.sh": RUN, "b.txt": NO_PERMISSIONS})
    async with Fs(backend, load_entrypoints=False, sessions=MemorySessions()) as fs:
        yield backend, fs.context(owner="agent").fs


async def test_a_move_gives_the_copy_the_files_permissions(
    store: tuple[PermissionsBackend, ContextFs],
) -> None:
    backend, agent = store
    await agent.read("run.sh")
    await agent.move("run.sh", "bin/run.sh")
    assert backend.permissions == {"bin/run.sh": RUN, "b.txt": NO_PERMISSIONS}
    await agent.undo()  # the file made anew at its old path gets them back too
    assert backend.permissions == {"run.sh": RUN, "b.txt": NO_PERMISSIONS}


async def test_a_patch_rolled_back_puts_a_deleted_file_back_with_its_permissions(
    store: tuple[PermissionsBackend, ContextFs],
) -> None:
    backend, agent = store
    for path in ("run.sh", "b.txt"):
        await agent.read(path)
    backend.faults.fail_next("write", Unavailable("the store is down"), path="b.txt")
    changed = Hunk(anchors=(), old=("b",), new=("c",))
    with pytest.raises(Unavailable) as failed:
        await agent.apply_patch(
            [
                FilePatch(action=PatchAction.DELETE, path="run.sh"),
                FilePatch(action=PatchAction.UPDATE, path="b.txt", hunks=(changed,)),
            ]
        )
    assert failed.value.details["restored"] == ["run.sh"]  # (deleted, then put back)
    assert (await backend.read("run.sh")).data == b"echo one\n"
    assert backend.permissions["run.sh"] == RUN


async def test_an_undone_delete_puts_the_file_back_with_its_permissions(
    store: tuple[PermissionsBackend, ContextFs],
) -> None:
    backend, agent = store
    await agent.read("run.sh")
    await agent.delete("run.sh")
    assert "run.sh" not in backend.permissions
    await agent.undo()
    assert backend.permissions["run.sh"] == RUN


async def test_an_update_without_the_content_read_puts_nothing_back_in_its_place() -> None:
    # a store may leave a large file's content out (content_max); the routine never puts
    # back, nor copies, the empty data it then holds
    backend = MemoryBackend()
    await backend.write("a.txt", b"alpha\n", expect=ABSENT)
    await backend.write("b.txt", b"bravo\n", expect=ABSENT)
    for path in ("a.txt", "b.txt"):
        read = await backend.read(path)
        versioned = Blob(data=b"", version=read.version, size=read.size)
        update = ConditionalUpdate(backend, path, versioned)
        if path == "a.txt":
            await update.delete()
            with pytest.raises(BackendError, match="was not read"):
                await update.undo(None)
            with pytest.raises(NotFound):
                await backend.read(path)
        else:
            async with backend.open_update("c.txt") as destination:
                with pytest.raises(BackendError, match="was not read"):
                    await update.move(destination)
            assert (await backend.read(path)).data == b"bravo\n"
            with pytest.raises(NotFound):
                await backend.read("c.txt")
