"""The workspace of ``ctxfs serve`` started without ``--root``: its client's MCP roots.

:class:`ClientRoots` asks the client for its roots (``roots/list``) once it is initialized, and
again at each ``notifications/roots/list_changed``. The first root is the workspace: its store is
opened and served in place of the one before, which is closed once the calls running on it have
finished. A request that arrives before the roots are known waits for them
(:data:`~ctxfs.tools.mcpserver.ROOTS_WAIT`). A client that offers no roots, or whose first root
cannot be opened, has every request refused saying why (:data:`~ctxfs.tools.mcpserver.NO_ROOTS`),
and the server says it once on stderr.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any
from urllib.parse import unquote_to_bytes

from anyio.abc import AsyncResource
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import ListRootsRequest, ListRootsResult, NotificationParams
from pydantic import ValidationError

from ctxfs.core import Fs
from ctxfs.tools.mcpserver import NO_ROOTS, McpTools
from ctxfs.tools.names import escaped

__all__ = ["ClientRoots"]

log = logging.getLogger(__name__)

Opener = Callable[[str], Fs]
"""Makes the store of a local directory (not yet entered)."""


class ClientRoots(AsyncResource):
    """The client's first MCP root, served by *tools* as the store *open_root* makes of it.

    Use as an async context manager around serving: it closes the store it opened.
    """

    def __init__(self, server: Server[Any], tools: McpTools, open_root: Opener) -> None:
        self.tools = tools
        self.open_root = open_root
        self.root: str | None = None  # the directory served now
        self._opened: dict[int, AsyncExitStack] = {}  # each store not yet closed, by its id
        server.add_notification_handler(
            "notifications/initialized", NotificationParams, self._initialized
        )
        server.add_notification_handler(
            "notifications/roots/list_changed", NotificationParams, self._changed
        )

    async def _initialized(
        self, request: ServerRequestContext[Any, Any], params: NotificationParams
    ) -> None:
        del params
        capabilities = request.session.client_capabilities
        if capabilities is None or capabilities.roots is None:
            await self._refuse(NO_ROOTS)
        else:
            await self._follow(request)

    async def _changed(
        self, request: ServerRequestContext[Any, Any], params: NotificationParams
    ) -> None:
        del params
        await self._follow(request)

    async def _follow(self, request: ServerRequestContext[Any, Any]) -> None:
        """Ask the client for its roots; serve the first, unless it is served already."""
        try:
            listed = await request.session.send_request(ListRootsRequest(), ListRootsResult)
        except MCPError as error:
            await self._refuse(f"no workspace: the client did not list its roots ({error.message})")
            return
        except ValidationError as error:  # (a root that is no file: URL, say)
            said = error.errors(include_url=False)[0]["msg"]
            await self._refuse(f"no workspace: the client's roots cannot be read ({said})")
            return
        if not listed.roots:
            await self._refuse("no workspace: the client lists no MCP roots")
            return
        uri = listed.roots[0].uri
        if uri.host not in (None, "", "localhost"):
            await self._refuse(
                f"no workspace: the client's first MCP root is on another host: {uri}"
            )
            return
        root = os.fsdecode(unquote_to_bytes(uri.path or "/"))  # (any bytes a name may hold)
        if root != self.root:
            await self._open(root, of=len(listed.roots))

    async def _open(self, root: str, *, of: int) -> None:
        """Serve the store of *root*, the first of the client's *of* roots, in place of any."""
        opened = AsyncExitStack()
        try:
            fs = await opened.enter_async_context(self.open_root(root))
        except Exception as error:  # the opener's to say why: the path, a policy, the store
            await self._refuse(
                f"no workspace: the client's first root {root} cannot be opened: {error}"
            )
            return
        replaced, self._opened[id(fs)], self.root = self.tools.fs, opened, root
        self.tools.use(fs)
        log.info("serving %r, the first of the client's %d MCP roots", fs.backend, of)
        await self._retire(replaced)

    async def _refuse(self, why: str) -> None:
        """Serve no store from now on: requests are refused saying *why*, as is stderr, once."""
        why = escaped(why)  # (a root's name may hold bytes that are not UTF-8)
        log.error("%s", why)
        replaced, self.root = self.tools.fs, None
        self.tools.use(None, why=why)
        await self._retire(replaced)

    async def _retire(self, replaced: Fs | None) -> None:
        """Close the store *replaced* once the calls running on it have finished."""
        if replaced is not None and (opened := self._opened.get(id(replaced))) is not None:
            await self.tools.finished(replaced)
            del self._opened[id(replaced)]
            await opened.aclose()

    async def aclose(self) -> None:
        """Close every store opened (the calls still running on them are cancelled with them)."""
        self.root = None
        opened, self._opened = list(self._opened.values()), {}
        for stack in opened:
            await stack.aclose()
