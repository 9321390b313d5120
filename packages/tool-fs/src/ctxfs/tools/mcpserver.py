"""The tools as an MCP server, on the ``mcp`` SDK's low-level ``Server``.

A call runs as :meth:`FsToolset.execute` runs it (the low-level server validates nothing). A result
carries the model's text, any image, the structured data less what the MCP result says already
(:data:`SAID_BY_THE_RESULT`), and ``is_error``. A call of a tool the client is not offered is the
JSON-RPC error ``-32602``. The store is the one given, or the one the client's MCP roots name
(:mod:`ctxfs.tools.roots`).

A request's owner (whose observations count) is the principal its bearer token names over HTTP
(:mod:`ctxfs.tools.httpserver`), else the server's ``--owner`` (over stdio, one across restarts):

- ``principal:name`` when the client names itself in ``_meta`` as ``io.ctxfs/owner``;
- else, for a handshake-era (``initialize``) client over HTTP, a session of its own,
  ``principal/session-...``, forgotten when the session ends.

A call with ``io.ctxfs/forget_shown: true`` in its ``_meta`` (the client dropped earlier results
from its model's context) has the owner's reads show their text again.
"""

from __future__ import annotations

import itertools
import logging
import re
import secrets
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Final

import anyio
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolRequestParams,
    CallToolResult,
    ImageContent,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ctxfs.core import FsError
from ctxfs.tools import __version__
from ctxfs.tools.httpserver import principal_of
from ctxfs.tools.tool import Limits
from ctxfs.tools.toolset import FsToolset

if TYPE_CHECKING:
    from ctxfs.core import Context, Fs

__all__ = [
    "FORGET_SECONDS",
    "FORGET_SHOWN_META_KEY",
    "NO_ROOTS",
    "OWNER_META_KEY",
    "OWNER_NAME",
    "ROOTS_WAIT",
    "SAID_BY_THE_RESULT",
    "McpTools",
    "create_server",
]

log = logging.getLogger(__name__)

OWNER_META_KEY: Final = "io.ctxfs/owner"
"""The ``_meta`` key a client may name its owner with (:data:`OWNER_NAME`)."""
OWNER_NAME: Final = re.compile(r"[^\x00-\x1f\x7f]{1,128}")
"""An owner's name in ``_meta``: 1 to 128 characters, none a control character."""
FORGET_SHOWN_META_KEY: Final = "io.ctxfs/forget_shown"
"""The ``_meta`` key (true) of a call after which reads show their text again."""
SAID_BY_THE_RESULT: Final = frozenset({"status", "tool"})
"""Fields of the plain data an MCP result carries itself (``isError``; the call's name)."""
FORGET_SECONDS: Final = 5.0
"""How long forgetting what an ended session's owner saw may take."""
ROOTS_WAIT: Final = 10.0
"""How long a request waits for the store to be named (by the client's roots), at most."""
NO_ROOTS: Final = (
    "no workspace: ctxfs serve was started without --root or --url, and the client offers no "
    "MCP roots to take one from (the 2026 protocol has none): give serve --root DIR"
)


class McpTools:
    """The MCP handlers of one ``Fs``: tool listing and tool calls, one owner per session.

    Args:
        fs: The store the tools work on; None until :meth:`use` names one (``ctxfs serve``
            without ``--root``: the client's MCP roots, :mod:`ctxfs.tools.roots`).
        toolset: The tools (default: ``FsToolset()``).
        owner: The owner of requests that name no session (stateless era, stdio).
        workspace: The workspace of every context (for policies such as switches).
        per_session: Whether each handshake-era session is an owner of its own (HTTP);
            with False, every request is *owner*'s (stdio: one client per process).

    """

    def __init__(
        self,
        fs: Fs | None,
        toolset: FsToolset | None = None,
        *,
        owner: str = "mcp",
        workspace: str | None = None,
        per_session: bool = True,
    ) -> None:
        self.fs = fs
        self.toolset = toolset if toolset is not None else FsToolset()
        self.owner = owner
        self.workspace = workspace
        self.per_session = per_session
        self._session_owners: dict[object, str] = {}  # by session ID over HTTP, else connection
        self._input_schemas: dict[str, dict[str, Any]] = {}
        self._numbers = itertools.count(1)
        self._instance = secrets.token_hex(6)  # session owners of this process are its own
        self._no_store = ""  # why no store is served; empty while one may still be named
        self._named: anyio.Event | None = None  # set when use() names a store, or says why not
        self._calls: Counter[int] = Counter()  # calls in flight, by their store's id
        self._finished: dict[int, anyio.Event] = {}  # set when a store's last call ends

    async def finished(self, fs: Fs) -> None:
        """Return once no call runs on *fs* (which :meth:`use` replaced): it may be closed."""
        if self._calls[id(fs)]:
            await self._finished.setdefault(id(fs), anyio.Event()).wait()

    @contextmanager
    def _running(self, fs: Fs) -> Iterator[None]:
        self._calls[id(fs)] += 1
        try:
            yield
        finally:
            self._calls[id(fs)] -= 1
            if not self._calls[id(fs)]:
                del self._calls[id(fs)]
                if (finished := self._finished.pop(id(fs), None)) is not None:
                    finished.set()

    def use(self, fs: Fs | None, *, why: str = "") -> None:
        """Serve *fs* from now on; None: no store, and requests are refused saying *why*."""
        self.fs, self._no_store = fs, why if fs is None else ""
        if self._named is not None:
            self._named.set()
            self._named = None

    async def store(self, request: ServerRequestContext[Any, Any]) -> Fs:
        """The store *request* works on; one yet to be named is waited for (:data:`ROOTS_WAIT`).

        Raises:
            MCPError: None is served (or named in time), saying why; at once for a
                request of the 2026 protocol, whose clients offer no roots.

        """
        if self.fs is None and not self._no_store:
            if request.protocol_version in MODERN_PROTOCOL_VERSIONS:
                raise MCPError(code=INVALID_REQUEST, message=NO_ROOTS)
            self._named = self._named or anyio.Event()
            with anyio.move_on_after(ROOTS_WAIT):
                await self._named.wait()
        if self.fs is None:
            why = self._no_store or "no workspace yet: the client has not listed its MCP roots"
            raise MCPError(code=INVALID_REQUEST, message=why)
        return self.fs

    async def context(self, request: ServerRequestContext[Any, Any]) -> Context:
        """The ctx.fs context of the client behind *request* (:meth:`store` says where)."""
        fs = await self.store(request)
        return fs.context(owner=self.owner_of(request), workspace=self.workspace)

    def owner_of(self, request: ServerRequestContext[Any, Any]) -> str:
        """The owner of *request*'s observations (the rule in the module's docstring).

        Raises:
            MCPError: ``-32602`` (invalid params), for an owner name that is not :data:`OWNER_NAME`.

        """
        principal = principal_of(request.request)
        base = self.owner if principal is None else principal
        named = (request.meta or {}).get(OWNER_META_KEY)
        if named is not None:
            if not isinstance(named, str) or not OWNER_NAME.fullmatch(named):
                message = f"{OWNER_META_KEY} must be 1 to 128 characters, none a control character"
                raise MCPError(code=INVALID_PARAMS, message=message)
            return f"{base}:{named}"
        if not self.per_session or request.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return base  # stdio, or stateless: the principal (or the server's owner)
        headers = getattr(request.request, "headers", None)  # over HTTP
        session = request.lifespan_context if headers is None else headers[MCP_SESSION_ID_HEADER]
        owner = self._session_owners.get(session)
        if owner is None:
            number = next(self._numbers)
            owner = self._session_owners[session] = f"{base}/session-{self._instance}-{number}"
        return owner

    async def session_ended(self, session: object) -> None:
        """Forget what the owner of *session* saw: no one can call as it again.

        *session* is an HTTP session's ID or a connection's lifespan state (:meth:`connection`). It
        runs to its end under cancellation, for :data:`FORGET_SECONDS` at most; a store that cannot
        be reached is logged, not raised.
        """
        owner = self._session_owners.pop(session, None)
        if owner is None or self.fs is None:
            return
        self.fs.shown.forget(owner)  # what the read tool showed it (no store: at once)
        with anyio.move_on_after(FORGET_SECONDS, shield=True):
            try:
                await self.fs.forget_owner(owner)
            except FsError as error:
                log.warning("could not forget the observations of %s: %s", owner, error.message)

    @asynccontextmanager
    async def connection(self, server: Server[object]) -> AsyncIterator[object]:
        """The lifespan of *server*: the state of a connection the SDK serves alone.

        Entered for each connection the SDK serves by itself (stdio, in process), whose requests
        name it; its owner's observations go when it ends. (The HTTP session manager enters it once
        for all its sessions.)
        """
        del server
        state = object()
        try:
            yield state
        finally:
            await self.session_ended(state)

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        """The input schema of tool *name*, as listed (None: no such tool, or no store yet).

        What the SDK checks a stateless call's ``Mcp-Param-*`` headers against, made once.
        """
        schema = self._input_schemas.get(name)
        if schema is None:
            try:
                tool = self.toolset.tool(self._registered(name))
            except KeyError:
                return None
            if self.fs is None:
                return None
            limits = Limits(text=self.fs.text_options, options=self.toolset.options)
            schema = self._input_schemas[name] = tool.definition(limits).input_schema
        return schema

    async def list_tools(
        self, request: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        """The tools offered to this client now (exposure plugins may hide some)."""
        del params
        offered = await self.toolset.tools(await self.context(request))
        return ListToolsResult(
            tools=[
                Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.input_schema,
                    output_schema=_without_said(tool.output_schema),
                    annotations=ToolAnnotations(
                        read_only_hint=tool.read_only,
                        destructive_hint=tool.destructive,
                        idempotent_hint=tool.idempotent,
                        open_world_hint=False,
                    ),
                )
                for tool in offered
            ]
        )

    async def call_tool(
        self, request: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult:
        """Run one tool call; every failure is an ``is_error`` result with its code.

        Raises:
            MCPError: ``-32602`` (invalid params), for a tool this client is not
                offered, as the MCP specification has it for an unknown tool (one whose
                offer a plugin failed to decide is an error result instead).

        """
        ctx = await self.context(request)
        with self._running(ctx.opened_fs):  # (a store the client's roots replace waits for it)
            if (request.meta or {}).get(FORGET_SHOWN_META_KEY) is True:
                ctx.forget_shown()
            offer = await self.toolset.offer(ctx)
            registered = self._registered(params.name)
            if registered not in offer.offered and registered not in offer.failures:
                raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {params.name}")
            asked = (request.meta or {}).get("progress_token") is not None
            result = await self.toolset.execute(
                ctx,
                params.name,
                params.arguments or {},
                offer=offer,
                progress=request.session.report_progress if asked else None,
            )
        images = [
            ImageContent(type="image", data=part.base64_data, mime_type=part.media_type)
            for part in result.media
        ]
        return CallToolResult(
            content=[TextContent(type="text", text=result.text), *images],
            structured_content={
                name: value
                for name, value in result.structured.items()
                if name not in SAID_BY_THE_RESULT
            },
            is_error=result.is_error,
        )

    def _registered(self, name: str) -> str:
        """The registered name of the tool a client calls *name* (``""``: none can be)."""
        prefix = self.toolset.options.tool_prefix
        return name.removeprefix(prefix) if name.startswith(prefix) else ""


def _without_said(schema: dict[str, Any]) -> dict[str, Any]:
    """An output schema less :data:`SAID_BY_THE_RESULT`, that error results meet too.

    A success result holds the fields the schema requires; an error result its ``error``
    instead (clients that check ``structuredContent`` check it on errors too).
    """
    kept = {key: value for key, value in schema.items() if key not in ("properties", "required")}
    properties = schema.get("properties", {})
    kept["properties"] = {k: v for k, v in properties.items() if k not in SAID_BY_THE_RESULT}
    required = [name for name in schema.get("required", []) if name not in SAID_BY_THE_RESULT]
    return (
        {**kept, "anyOf": [{"required": required}, {"required": ["error"]}]} if required else kept
    )


def create_server(tools: McpTools, *, name: str = "ctxfs") -> Server[Any]:
    """An MCP ``Server`` answering tool listings and calls with *tools*."""
    return Server(
        name,
        version=__version__,
        instructions=(
            "File tools over one workspace. Read a file before editing it; an edit or write "
            "of a file changed since you read it fails `stale`: redo it against the change the "
            "error shows (read the file again only if it shows none)."
        ),
        lifespan=tools.connection,
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
        get_tool_input_schema=tools.input_schema,
    )
