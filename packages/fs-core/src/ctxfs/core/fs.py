"""``Fs``: one opened backend with its own plugin manager."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Self

from anyio.abc import AsyncResource

from ctxfs.core.backend import Backend
from ctxfs.core.context import Context
from ctxfs.core.filecontext import DEFAULT_LOCK_TIMEOUT, FileContextPlugin
from ctxfs.core.plugins import PluginHost, create_plugin_manager
from ctxfs.core.text import KnownEncodings, TextOptions

__all__ = ["FILE_CONTEXT_PLUGIN", "Fs"]

FILE_CONTEXT_PLUGIN = "ctxfs.file_context"
"""The registration name of the built-in file-context plugin."""


class Fs(AsyncResource):
    """A backend, the plugins that watch over it, and the contexts working on it.

    An anyio ``AsyncResource``: leaving ``async with fs:`` closes the backend.
    Each ``Fs`` has its own plugin manager; nothing is global.

    Args:
        backend: The store.
        plugins: Plugin objects to register after the entry-point plugins.
        load_entrypoints: Whether to load plugins from entry point group ``ctxfs.plugins``.
        lock_timeout: Seconds a mutation waits for its locks before failing ``Busy``.
        text_options: Read limits, encodings and the like (:class:`TextOptions`).

    """

    def __init__(
        self,
        backend: Backend,
        *,
        plugins: Iterable[object] = (),
        load_entrypoints: bool = True,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        text_options: TextOptions | None = None,
    ) -> None:
        self.backend = backend
        self.text_options = text_options if text_options is not None else TextOptions()
        self.known_encodings = KnownEncodings()
        self.file_context = FileContextPlugin(backend, lock_timeout=lock_timeout)
        self.plugin_manager = create_plugin_manager(
            builtins=[(self.file_context, FILE_CONTEXT_PLUGIN)],
            plugins=plugins,
            load_entrypoints=load_entrypoints,
        )
        self.hooks = PluginHost(self.plugin_manager)

    async def __aenter__(self) -> Self:
        """Open the backend (a remote one checks its store here), then return this ``Fs``."""
        try:
            await self.backend.__aenter__()
        except BaseException:
            await self.backend.aclose()
            raise
        return self

    def context(self, *, owner: str, workspace: str | None = None) -> Context:
        """Return an execution context for *owner*; its ``.fs`` is the seam to hand out."""
        return Context(self, owner=owner, workspace=workspace)

    async def aclose(self) -> None:
        """Close the backend."""
        await self.backend.aclose()

    def __repr__(self) -> str:
        return f"Fs({self.backend!r})"
