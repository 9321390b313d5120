"""``Fs``: one opened backend with its own plugin manager."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import ExitStack
from typing import Self, TypedDict, Unpack

import anyio
from anyio.abc import AsyncResource

from ctxfs.core.backend import Backend
from ctxfs.core.context import Context
from ctxfs.core.filecontext import DEFAULT_LOCK_TIMEOUT, FileContextPlugin
from ctxfs.core.observations import ObservationStore, open_observations
from ctxfs.core.plugins import FILE_CONTEXT_PLUGIN, PluginHost, create_plugin_manager
from ctxfs.core.session_memory import SessionMemory
from ctxfs.core.sessions import SessionStore, open_sessions
from ctxfs.core.shown import ShownWindows
from ctxfs.core.text import KnownEncodings, TextOptions

__all__ = ["FILE_CONTEXT_PLUGIN", "Fs", "FsOptions"]


class FsOptions(TypedDict, total=False):
    """The options of an :class:`Fs`; ``open_fs`` takes them beside the backend's own."""

    plugins: Iterable[object]
    """Plugin objects to register after the entry-point plugins."""
    load_entrypoints: bool
    """Whether to load plugins from entry point group ``ctxfs.plugins`` (default: yes)."""
    lock_timeout: float
    """Seconds a mutation waits for its locks before failing ``Busy`` (default: 10)."""
    text_options: TextOptions | None
    """Read limits, encodings and the like (:class:`TextOptions`; default: its defaults)."""
    observations: ObservationStore | str | None
    """Where observations live: a store, or its URL (``sqlite:///PATH``); default: this
    process (see :mod:`ctxfs.core.observations`). A store opened from a URL is closed
    with the ``Fs``."""
    sessions: SessionStore | str | None
    """Where the session memory keeps contents and steps: a store, or its URL
    (``sqlite:///PATH``); default: this process (see :mod:`ctxfs.core.sessions`). A store
    opened from a URL is closed with the ``Fs``."""
    session_memory: bool
    """Whether to keep what owners saw and did, for stale diffs and undo (default: yes)."""


class Fs(AsyncResource):
    """A backend, the plugins that watch over it, and the contexts working on it.

    Leaving ``async with fs:`` closes the backend. Each ``Fs`` has its own plugin
    manager; nothing is global. The guard, the file-context plugin
    (:attr:`file_context`), is registered first and asked by the host itself: no
    other plugin, block or unregistration can take it away.

    Args:
        backend: The store.
        options: See :class:`FsOptions`.

    """

    def __init__(self, backend: Backend, **options: Unpack[FsOptions]) -> None:
        self.backend = backend
        text_options = options.get("text_options")
        self.text_options = text_options if text_options is not None else TextOptions()
        self.known_encodings = KnownEncodings()
        with ExitStack() as opened:  # a store opened here is closed if a later step fails
            store = options.get("observations")
            self._owns_observations = not isinstance(store, ObservationStore)
            if not isinstance(store, ObservationStore):
                store = open_observations(store)
                opened.callback(store.close)
            self.file_context = FileContextPlugin(
                backend,
                lock_timeout=options.get("lock_timeout", DEFAULT_LOCK_TIMEOUT),
                observations=store,
            )
            self.plugin_manager = create_plugin_manager(
                builtin=[(self.file_context, FILE_CONTEXT_PLUGIN)],
                plugins=options.get("plugins", ()),
                load_entrypoints=options.get("load_entrypoints", True),
            )
            self.hooks = PluginHost(self.plugin_manager, guard=self.file_context)
            self.shown = ShownWindows()
            """The windows the tools showed each owner (:mod:`ctxfs.core.shown`)."""
            sessions = options.get("sessions")
            self._owns_sessions = not isinstance(sessions, SessionStore)
            self.session_memory: SessionMemory | None = None
            """What owners saw and did (:mod:`ctxfs.core.session_memory`); None when turned off."""
            if options.get("session_memory", True):
                if not isinstance(sessions, SessionStore):
                    sessions = open_sessions(sessions)
                    opened.callback(sessions.close)
                self.session_memory = SessionMemory(sessions, self.backend)
            opened.pop_all()

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

    async def forget_owner(self, owner: str) -> None:
        """Forget what *owner* has seen, for an owner that ended (an MCP session, an agent run).

        Nothing it read licenses a change any more: it must read a file again before
        changing it. Its observations' memory (or shared store entries) is freed at once.

        Raises:
            Unavailable: The observation store cannot be reached.

        """
        await self.file_context.forget_owner(owner)
        self.shown.forget(owner)
        if self.session_memory is not None:
            await self.session_memory.store.forget_owner(owner)

    async def aclose(self) -> None:
        """Close the backend, and the observation store if this ``Fs`` opened it."""
        try:
            await self.backend.aclose()
        finally:
            with anyio.CancelScope(shield=True):
                if self._owns_observations:
                    await self.file_context.observations.aclose()
                if self._owns_sessions and self.session_memory is not None:
                    await self.session_memory.store.aclose()

    def __repr__(self) -> str:
        return f"Fs({self.backend!r})"
