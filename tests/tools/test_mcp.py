"""``ctxfs serve`` through the real ``mcp`` client: in memory, over stdio and over HTTP."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client, MCPDeprecationWarning, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolResult,
    ImageContent,
    ListRootsResult,
    Root,
    TextContent,
)
from pydantic import FileUrl

from ctxfs.core import ABSENT, Fs, MemoryBackend, MemoryObservations, hookimpl
from ctxfs.tools.mcpserver import NO_ROOTS, OWNER_META_KEY, McpTools, create_server
from tests.tools.conftest import DEFAULT_TOOLS
from tests.tools.media import dimensions, image, pdf
from tests.tools.served import CRLF, TOKENS, client, serve_http, stale_conflict, token_file

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's client runs its transports on asyncio


async def memory_server() -> tuple[Any, Fs]:
    fs = Fs(MemoryBackend(), load_entrypoints=False)
    await fs.backend.write("notes.md", CRLF, expect=ABSENT)
    return create_server(McpTools(fs)), fs


# -- in memory ---------------------------------------------------------------------------------


class _ExposureDown:
    @hookimpl
    def ctxfs_tool_exposure(self, ctx: object, tool: str) -> None:
        if tool == "read":
            raise RuntimeError("the exposure store is down")


async def test_a_tool_whose_offer_a_plugin_failed_to_decide_is_an_error_result() -> None:
    fs = Fs(MemoryBackend(), load_entrypoints=False, plugins=[_ExposureDown()])
    await fs.backend.write("notes.md", CRLF, expect=ABSENT)
    async with Client(create_server(McpTools(fs)), raise_exceptions=True) as client:
        result = await client.call_tool("read", {"file_path": "notes.md"})
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["error"]["code"] == "backend_error"
    assert (
        "could not tell whether 'read' is offered" in result.structured_content["error"]["message"]
    )


async def test_tools_carry_schemas_and_annotations() -> None:
    server, _ = await memory_server()
    async with Client(server, raise_exceptions=True) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(tools) == DEFAULT_TOOLS
    read, edit = tools["read"], tools["edit"]
    assert read.input_schema["required"] == ["file_path"]
    assert read.input_schema["additionalProperties"] is False
    assert read.output_schema is not None
    assert read.output_schema["properties"]["kind"]["enum"] == ["text", "image", "pdf", "notebook"]
    # A field that holds nothing is left out of the structured content: optional, never null.
    assert read.output_schema["properties"]["image"]["type"] == "object"
    assert "image" not in read.output_schema.get("required", [])
    assert "null" not in json.dumps(read.output_schema)
    # What the MCP result says itself (isError, the name called) is not said again.
    assert not {"status", "tool"} & set(read.output_schema["properties"])
    assert "status" not in read.output_schema.get("required", [])
    assert read.annotations is not None
    assert (read.annotations.read_only_hint, read.annotations.destructive_hint) == (True, False)
    assert edit.annotations is not None
    assert (edit.annotations.read_only_hint, edit.annotations.idempotent_hint) == (False, False)


async def test_error_results_meet_the_output_schema_their_tool_lists() -> None:
    server, _ = await memory_server()
    failing = {
        "read": {"file_path": "missing.md"},
        "edit": {"file_path": "notes.md", "old_string": "zzz", "new_string": "y"},
        "move": {"source_path": "missing.md", "destination_path": "b.md"},
        "grep": {"pattern": "("},
        "apply_patch": {"patch": "garbage"},
    }
    async with Client(server, raise_exceptions=True) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        for name, arguments in failing.items():
            result = await client.call_tool(name, arguments)
            schema = tools[name].output_schema
            assert result.is_error, name
            assert schema is not None
            assert schema.get("anyOf"), name  # (the success fields are required)
            assert result.structured_content is not None
            jsonschema.validate(result.structured_content, schema)  # as TypeScript clients do
            with pytest.raises(jsonschema.ValidationError):  # a success needs its fields
                jsonschema.validate({"target": "notes.md"}, schema)


async def test_two_client_sessions_are_two_owners() -> None:
    server, fs = await memory_server()
    async with (
        Client(server, mode="legacy", raise_exceptions=True) as first,
        Client(server, mode="legacy", raise_exceptions=True) as second,
    ):
        await stale_conflict(first, second)
    assert (await fs.backend.read("notes.md")).data == b"gamma\r\ngamma\r\n"


async def test_an_in_process_connection_forgets_what_its_owner_saw_when_it_ends() -> None:
    store = MemoryObservations()
    fs = Fs(MemoryBackend(), load_entrypoints=False, observations=store)
    await fs.backend.write("notes.md", CRLF, expect=ABSENT)
    async with Client(create_server(McpTools(fs)), mode="legacy", raise_exceptions=True) as client:
        assert not (await client.call_tool("read", {"file_path": "notes.md"})).is_error
        assert store.owners == 1
    assert store.owners == 0


async def test_a_stateless_client_may_name_its_owner() -> None:
    server, _ = await memory_server()
    async with Client(server, raise_exceptions=True) as client:
        edit = {"file_path": "notes.md", "old_string": "beta", "new_string": "gamma"}
        await client.call_tool("read", {"file_path": "notes.md"})
        assert not (await client.call_tool("edit", edit)).is_error  # the server's owner
        named = await client.call_tool(
            "edit",
            {**edit, "old_string": "alpha"},
            meta={OWNER_META_KEY: "b"},  # type: ignore[arg-type]
        )
        assert named.structured_content is not None
        assert named.structured_content["error"]["code"] == "not_observed"


async def test_every_failure_is_an_error_result_with_its_code() -> None:
    server, fs = await memory_server()
    async with Client(server, raise_exceptions=True) as client:
        cases = {
            "not_found": ("read", {"file_path": "missing.md"}),
            "outside_root": ("read", {"file_path": "../etc/passwd"}),
            "invalid_argument": ("edit", {"file_path": "notes.md"}),
            "not_observed": (
                "edit",
                {"file_path": "notes.md", "old_string": "a", "new_string": "b"},
            ),
        }
        for code, (tool, arguments) in cases.items():
            result = await client.call_tool(tool, arguments)
            assert result.is_error, code
            assert result.structured_content is not None
            assert result.structured_content["error"]["code"] == code
            assert result.structured_content["error"]["hint"]
    assert (await fs.backend.read("notes.md")).data == CRLF


# -- a subprocess over stdio -------------------------------------------------------------------


@pytest.fixture(params=["auto", pytest.param("legacy", marks=pytest.mark.slow)])
def era(request: pytest.FixtureRequest) -> str:
    """The client's mode: the 2026 protocol, or the initialize handshake.

    Each era's server starts a process; the quick loop speaks the current one, and the
    in-process tests above speak the handshake.
    """
    mode: str = request.param
    return mode


def stdio(root: Path | None, *options: str, own_parent: bool = False) -> StdioServerParameters:
    """``ctxfs serve --root *root* *options*``; with *own_parent*, started by a shell of its own.

    The server's default owner is the process that started it: two servers of one parent
    (successive calls of one client) are one owner, of two parents (two clients) two.
    Without *root*, the client's roots name the workspace.
    """
    where = [] if root is None else ["--root", str(root)]
    command = [sys.executable, "-m", "ctxfs.tools.cli", "serve", *where, *options]
    if own_parent:  # (two commands: the shell stays, as the server's parent)
        command = ["sh", "-c", '"$@"; exit $?', "sh", *command]
    return StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))


async def test_serve_over_stdio(workspace: Path, era: str) -> None:
    async with Client(stdio(workspace), mode=era) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == DEFAULT_TOOLS
        result = await client.call_tool("read", {"file_path": "notes.md"})
        assert result.structured_content is not None
        assert result.structured_content["content"] == "alpha\nbeta\n"
        assert result.structured_content["target"] == "notes.md"
        assert not {"status", "tool"} & set(result.structured_content)  # isError says it
        edit = {"file_path": "notes.md", "old_string": "beta", "new_string": "gamma"}
        assert not (await client.call_tool("edit", edit)).is_error
    assert (workspace / "notes.md").read_bytes() == b"alpha\r\ngamma\r\n"


@pytest.mark.slow
async def test_two_stdio_servers_on_one_root_catch_each_others_changes(
    workspace: Path, era: str
) -> None:
    async with (
        Client(stdio(workspace, own_parent=True), mode=era) as first,
        Client(stdio(workspace, own_parent=True), mode=era) as second,
    ):
        await stale_conflict(first, second)
    assert (workspace / "notes.md").read_bytes() == b"gamma\r\ngamma\r\n"


async def test_a_tool_not_offered_is_the_json_rpc_error_the_specification_names(
    workspace: Path, era: str
) -> None:
    async with Client(stdio(workspace, "--read-only"), mode=era) as client:
        for name in ("delete_everything", "write"):  # no such tool; one read-only hides
            with pytest.raises(MCPError) as refused:
                await client.call_tool(name, {"file_path": "notes.md", "content": "x"})
            assert refused.value.code == INVALID_PARAMS
            assert refused.value.message == f"Unknown tool: {name}"
        assert not (await client.call_tool("read", {"file_path": "notes.md"})).is_error
    assert (workspace / "notes.md").read_bytes() == CRLF


async def test_serve_read_only_and_deny(workspace: Path, era: str) -> None:
    (workspace / "secret").mkdir()
    (workspace / "secret" / "key").write_text("k")
    async with Client(stdio(workspace, "--read-only", "--deny", "secret"), mode=era) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == ["read", "list_dir", "glob", "grep", "search_tools", "call_tool"]
        denied = await client.call_tool("read", {"file_path": "secret/key"})
        assert denied.structured_content is not None
        assert denied.structured_content["error"]["code"] == "denied"


# -- no --root: the client's roots ---------------------------------------------------------------


async def test_without_root_the_clients_first_root_is_the_workspace_as_it_changes(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "first", tmp_path / "second dir"
    for root in (first, second):
        root.mkdir()
        (root / "notes.md").write_text(f"{root.name}\n")
    roots = [first, second]

    async def listed(context: object) -> ListRootsResult:
        del context
        return ListRootsResult(roots=[Root(uri=FileUrl(root.as_uri())) for root in roots])

    async def content(client: Client) -> str:
        result = await client.call_tool("read", {"file_path": "notes.md", "fresh": True})
        assert result.structured_content is not None, result.content
        return str(result.structured_content["content"])

    async with Client(stdio(None), mode="legacy", list_roots_callback=listed) as client:
        assert await content(client) == "first\n"  # the first of several
        roots = [second]
        with pytest.warns(MCPDeprecationWarning):  # roots are gone from the 2026 protocol
            await client.send_roots_list_changed()
        for _ in range(100):
            if await content(client) == "second dir\n":
                break
            await anyio.sleep(0.05)
        edit = {"file_path": "notes.md", "old_string": "second dir", "new_string": "edited"}
        assert not (await client.call_tool("edit", edit)).is_error
    assert (second / "notes.md").read_text() == "edited\n"
    assert (first / "notes.md").read_text() == "first\n"


HELD_PLUGIN = """
import anyio
from ctxfs.core import hookimpl

class Held:
    @hookimpl
    async def ctxfs_authorize(self, ctx, op):
        if op.path.endswith("held.txt"):
            await anyio.sleep(1.5)

HELD = Held()
"""


async def test_a_store_the_clients_roots_replace_closes_after_its_calls(tmp_path: Path) -> None:
    # A write held 1.5 s on the first root while the client names a second (whose name is not
    # UTF-8: %FF in its URI): the write ends as it would have (written there), and the second
    # root serves the calls after it.
    first, second = tmp_path / "first", tmp_path / "second \udcff"
    for root in (first, second):
        root.mkdir()
    (tmp_path / "heldplugin.py").write_text(HELD_PLUGIN)
    roots = [first]

    async def listed(context: object) -> ListRootsResult:
        del context
        return ListRootsResult(roots=[Root(uri=FileUrl(root.as_uri())) for root in roots])

    server = stdio(None, "--plugin", "heldplugin:HELD")
    server.env = {**(server.env or {}), "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()])}
    async with Client(server, mode="legacy", list_roots_callback=listed) as client:
        assert not (await client.call_tool("list_dir", {"path": "."})).is_error
        written: list[CallToolResult] = []

        async def write_held() -> None:
            arguments = {"file_path": "held.txt", "content": "kept\n"}
            written.append(await client.call_tool("write", arguments))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(write_held)
            await anyio.sleep(0.5)
            roots = [second]
            with pytest.warns(MCPDeprecationWarning):
                await client.send_roots_list_changed()
        assert not written[0].is_error, written[0].content
        arguments = {"file_path": "new.txt", "content": "there\n"}
        assert not (await client.call_tool("write", arguments)).is_error
    assert (first / "held.txt").read_text() == "kept\n"
    assert (second / "new.txt").read_text() == "there\n"


async def test_a_first_root_that_cannot_be_opened_is_refused_saying_which(tmp_path: Path) -> None:
    # A directory that is not there, named in bytes that are not UTF-8 (%FF in its URI).
    async def listed(context: object) -> ListRootsResult:
        del context
        return ListRootsResult(roots=[Root(uri=FileUrl((tmp_path / "gone \udcff").as_uri()))])

    async with Client(stdio(None), mode="legacy", list_roots_callback=listed) as client:
        for _ in range(2):  # (refused, and served on)
            with pytest.raises(MCPError) as refused:
                await client.call_tool("read", {"file_path": "a"})
            assert "first root" in refused.value.message
            assert "gone \\xff" in refused.value.message


def test_roots_that_cannot_be_read_are_refused_at_once(tmp_path: Path) -> None:
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {"roots": {}},
                        "clientInfo": {"name": "raw", "version": "1"}}}  # fmt: skip
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "read", "arguments": {"file_path": "a"}}}  # fmt: skip
    with subprocess.Popen(
        [sys.executable, "-m", "ctxfs.tools.cli", "serve"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp_path,
    ) as server:  # fmt: skip
        assert server.stdin is not None
        assert server.stdout is not None

        def send(*messages: dict[str, Any]) -> None:
            assert server.stdin is not None
            server.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in messages))
            server.stdin.flush()

        try:
            send(hello)
            json.loads(server.stdout.readline())  # the handshake's answer
            send(initialized)
            asked = json.loads(server.stdout.readline())
            assert asked["method"] == "roots/list"
            roots = {"roots": [{"uri": "https://example.com/project"}]}  # (no file: URL)
            started = time.monotonic()
            send({"jsonrpc": "2.0", "id": asked["id"], "result": roots}, call)
            refused = json.loads(server.stdout.readline())
            assert time.monotonic() - started < 5  # not the wait for roots to come (10 s)
            message = refused["error"]["message"]
            assert message.startswith("no workspace: the client's roots cannot be read")
        finally:
            server.kill()


async def test_without_root_or_client_roots_every_request_is_refused_saying_so(era: str) -> None:
    # A handshake-era client that declares no roots; a client of the 2026 protocol, which has none.
    async with Client(stdio(None), mode=era) as client:
        for request in (client.list_tools, partial(client.call_tool, "read", {"file_path": "a"})):
            with pytest.raises(MCPError) as refused:
                await request()
            assert refused.value.code == INVALID_REQUEST
            assert refused.value.message == NO_ROOTS


def test_without_root_or_client_roots_the_server_says_why_once_on_stderr(tmp_path: Path) -> None:
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "1"}}}  # fmt: skip
    started = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    served = subprocess.run(
        [sys.executable, "-m", "ctxfs.tools.cli", "serve"],
        input=b"".join(json.dumps(line).encode() + b"\n" for line in (hello, started, listing)),
        capture_output=True, timeout=60, check=True, cwd=tmp_path,
    )  # fmt: skip
    replies = [json.loads(line) for line in served.stdout.splitlines()]
    assert replies[1]["error"]["message"] == NO_ROOTS
    assert served.stderr.decode().splitlines() == [f"ctxfs: ERROR ctxfs.tools.roots: {NO_ROOTS}"]
    assert not list(tmp_path.iterdir())  # nothing was served, the working directory least


# -- a subprocess over streamable HTTP -----------------------------------------------------------


@pytest.fixture
def http_server(workspace: Path, tmp_path: Path) -> Iterator[str]:
    """``ctxfs serve --transport http`` on *workspace*; clients send alice's token."""
    with serve_http("--root", str(workspace), "--token-file", str(token_file(tmp_path))) as served:
        yield served.url


async def test_serve_over_http_keeps_sessions_apart(http_server: str, workspace: Path) -> None:
    async with (
        client(http_server, TOKENS["alice"], mode="legacy") as first,
        client(http_server, TOKENS["alice"], mode="legacy") as second,
    ):
        await stale_conflict(first, second)
    async with client(http_server, TOKENS["alice"]) as stateless:
        listed = await stateless.call_tool("list_dir", {"path": ""})
        assert listed.structured_content is not None
        assert [entry["name"] for entry in listed.structured_content["entries"]] == ["notes.md"]
    assert (workspace / "notes.md").read_bytes() == b"gamma\r\ngamma\r\n"


# -- abuse ---------------------------------------------------------------------------------------


def not_utf8_names(workspace: Path) -> None:
    """A file and a directory whose names hold bytes that are not UTF-8."""
    root = os.fsencode(workspace)
    with open(root + b"/bad\xff.txt", "wb") as file:
        file.write(b"needle\n")
    os.mkdir(root + b"/dir\xfe")
    with open(root + b"/dir\xfe/x.txt", "wb") as file:
        file.write(b"needle\n")


async def names_cross(client: Client) -> None:
    """list_dir, glob and grep show the names escaped; the bytes come back; a read by one works."""
    listed = await client.call_tool("list_dir", {"path": ""})
    assert not listed.is_error, listed.content
    assert listed.structured_content is not None
    names = [entry["name"] for entry in listed.structured_content["entries"]]
    assert names == ["bad\\xff.txt", "dir\\xfe", "notes.md"]
    raw = listed.structured_content["raw_names"]
    assert base64.b64decode(raw["bad\\xff.txt"]) == b"bad\xff.txt"
    text = listed.content[0].text  # type: ignore[union-attr]
    assert "bad\\xff.txt" in text
    assert "not UTF-8 are shown as \\xNN" in text
    globbed = await client.call_tool("glob", {"pattern": "**/*.txt"})
    assert globbed.structured_content is not None
    assert globbed.structured_content["paths"] == ["bad\\xff.txt", "dir\\xfe/x.txt"]
    assert base64.b64decode(globbed.structured_content["raw_names"]["dir\\xfe/x.txt"]) == (
        b"dir\xfe/x.txt"
    )
    found = await client.call_tool("grep", {"pattern": "needle"})
    assert found.structured_content is not None
    assert [m["path"] for m in found.structured_content["matches"]] == [
        "bad\\xff.txt",
        "dir\\xfe/x.txt",
    ]
    read = await client.call_tool("read", {"file_path": "dir\\xfe/x.txt"})
    assert read.structured_content is not None
    assert read.structured_content["content"] == "needle\n"


async def test_names_that_are_not_utf8_cross_stdio(workspace: Path, era: str) -> None:
    not_utf8_names(workspace)
    async with Client(stdio(workspace), mode=era) as client:
        await names_cross(client)


async def test_names_that_are_not_utf8_cross_http_in_both_eras(
    http_server: str, workspace: Path
) -> None:
    not_utf8_names(workspace)
    async with client(http_server, TOKENS["alice"], mode="legacy") as legacy:
        await names_cross(legacy)
    async with client(http_server, TOKENS["alice"]) as stateless:
        await names_cross(stateless)


def wire(
    *lines: bytes,
    max_message_bytes: int | None = None,
    root: Path,
    through: str = "pipes",
    ended: bool = True,
) -> list[dict[str, Any]]:
    """Send raw lines to ``ctxfs serve`` over its stdin; the replies, in order.

    *through*: ``pipes``, ``sockets`` (one for each end, as node spawns a server), ``files`` (a
    file read, a file written: worker threads serve them), or one ``socket`` for both ends.
    """
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    started = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    limit = [] if max_message_bytes is None else ["--max-message-bytes", str(max_message_bytes)]
    command = [sys.executable, "-m", "ctxfs.tools.cli", "serve", "--root", str(root), *limit]
    sent = b"\n".join([json.dumps(hello).encode(), started, *lines]) + b"\n" * ended
    if through == "pipes":
        process = subprocess.run(command, input=sent, capture_output=True, timeout=120, check=True)
        answered = process.stdout
    elif through == "files":
        (root.parent / "in").write_bytes(sent)
        with (root.parent / "in").open("rb") as stdin, (root.parent / "out").open("wb") as stdout:
            subprocess.run(command, stdin=stdin, stdout=stdout, timeout=120, check=True)
        answered = (root.parent / "out").read_bytes()
    elif through == "sockets":
        (to_server, its_in), (from_server, its_out) = socket.socketpair(), socket.socketpair()
        with (
            to_server,
            its_in,
            from_server,
            its_out,
            subprocess.Popen(command, stdin=its_in.fileno(), stdout=its_out.fileno()) as served,
        ):
            its_in.close()
            its_out.close()
            to_server.sendall(sent)
            to_server.shutdown(socket.SHUT_WR)
            answered = b"".join(iter(lambda: from_server.recv(1 << 16), b""))
            assert served.wait(120) == 0
    else:
        ours, theirs = socket.socketpair()
        with (
            ours,
            theirs,
            subprocess.Popen(command, stdin=theirs.fileno(), stdout=theirs.fileno()) as served,
        ):
            theirs.close()
            ours.sendall(sent)
            ours.shutdown(socket.SHUT_WR)
            answered = b"".join(iter(lambda: ours.recv(1 << 16), b""))
            assert served.wait(120) == 0
    return [json.loads(line) for line in answered.splitlines()][1:]


def ping(number: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": number, "method": "ping"}).encode()


def test_a_line_that_is_no_message_gets_the_json_rpc_error_and_the_server_reads_on(
    workspace: Path,
) -> None:
    replies = wire(
        b"{not json",
        ping(1),
        b'{"hello": "world"}',
        ping(2),
        b"\xff\xfe",
        b"",
        b"  ",
        ping(3),
        b'{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"_meta": {"x": "\xff"}}}',
        root=workspace,
    )  # blank lines are no messages: they get no reply; stray bytes in a request are replaced
    errors = [reply for reply in replies if "error" in reply]  # answered as they are read
    assert [error["error"]["code"] for error in errors] == [-32700, -32600, -32700]
    assert all(error["id"] is None for error in errors)
    assert sorted(reply["id"] for reply in replies if "result" in reply) == [1, 2, 3, 4]


def test_a_request_nested_too_deeply_to_read_is_answered_with_its_id(workspace: Path) -> None:
    # Valid JSON the SDK's reader refuses: answered as the parse error of request 5 (it was
    # id null, "not JSON", and the client waited for its answer for ever).
    nested = b"[" * 500 + b"]" * 500
    deep = b'{"jsonrpc": "2.0", "method": "ping", "params": {"x": %s}, "id": 5}' % nested
    replies = wire(deep, ping(6), root=workspace)
    refused = next(reply for reply in replies if "error" in reply)
    assert refused["id"] == 5
    assert refused["error"]["code"] == -32700
    assert "nests too deeply" in refused["error"]["message"]
    assert [reply["id"] for reply in replies if "result" in reply] == [6]


def test_a_lone_surrogate_escape_is_a_parse_error_saying_so(workspace: Path) -> None:
    lone = b'{"jsonrpc": "2.0", "method": "ping", "params": {"x": "a\\ud800b"}, "id": 5}'
    replies = wire(lone, ping(6), root=workspace)
    refused = next(reply for reply in replies if "error" in reply)
    assert (refused["id"], refused["error"]["code"]) == (5, -32700)
    assert "surrogate" in refused["error"]["message"] or "hex escape" in refused["error"]["message"]
    assert "nests" not in refused["error"]["message"]


@pytest.mark.parametrize("through", ["pipes", "sockets", "files", "socket"])
def test_a_request_whose_id_is_no_string_nor_integer_is_answered_invalid(
    workspace: Path, through: str
) -> None:
    odd = [b'{"jsonrpc": "2.0", "id": %s, "method": "ping"}' % i for i in (b"1.5", b"null", b"{}")]
    odd += [b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', b'{"jsonrpc": "2.0", "id": 1.0}']
    notified = b'{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}'
    replies = wire(*odd, notified, ping(7), b'{"jsonrpc": "2.0", "id": "8", "method": "ping"}',
                   root=workspace, through=through)  # fmt: skip
    errors = [reply for reply in replies if "error" in reply]
    assert [(error["id"], error["error"]["code"]) for error in errors] == [(None, -32600)] * 5
    assert "must be a string or an integer" in errors[0]["error"]["message"]
    assert sorted(str(reply["id"]) for reply in replies if "result" in reply) == ["7", "8"]


@pytest.mark.slow
@pytest.mark.parametrize("through", ["pipes", "sockets", "files", "socket"])
def test_a_line_longer_than_the_limit_is_dropped_and_answered(
    workspace: Path, through: str
) -> None:
    # 64 MiB of one line, with no newline until its end: it is never held whole (the reader
    # keeps at most the limit), and the request after it is served.
    huge = b'{"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"x": "' + b"a" * (64 << 20)
    replies = wire(huge + b'"}}', ping(1), root=workspace, through=through)
    refused, answered = sorted(replies, key=lambda reply: "result" in reply)
    assert refused["id"] == 9  # (its first bytes name it: the client hears of its request)
    assert refused["error"]["code"] == -32600
    assert "longer than 4194304 bytes" in refused["error"]["message"]
    assert answered == {"jsonrpc": "2.0", "id": 1, "result": {}}
    small = wire(
        ping(1) + b" " * 100, ping(2), max_message_bytes=64, root=workspace, through=through
    )
    assert sorted(str(reply["id"]) for reply in small) == ["1", "2"]
    # the last line, too long and with no newline: answered all the same
    unended = wire(ping(3), ping(4) + b" " * 100, max_message_bytes=64, root=workspace,
                   through=through, ended=False)  # fmt: skip
    assert sorted(str(reply["id"]) for reply in unended) == ["3", "4"]


def call(number: int, tool: str, **arguments: object) -> bytes:
    request = {"name": tool, "arguments": arguments}
    return json.dumps(
        {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": request}
    ).encode()


@pytest.mark.slow
def test_a_killed_and_restarted_stdio_server_keeps_what_its_client_read(
    workspace: Path,
) -> None:
    # By default a stdio server keeps observations in its root's SQLite file in the user's
    # state directory: the read before kill -9 licenses the edit after the restart (a client
    # that spawns a server per call works). With memory://, the restart has forgotten it.
    command = [sys.executable, "-m", "ctxfs.tools.cli", "serve", "--root", str(workspace)]
    hello = json.dumps({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}},
    }).encode()  # fmt: skip
    started = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as server:
        assert server.stdin is not None
        assert server.stdout is not None
        read = call(1, "read", file_path="notes.md")
        server.stdin.write(b"\n".join([hello, started, read]) + b"\n")
        server.stdin.flush()
        replies = [json.loads(server.stdout.readline()) for _ in range(2)]
        assert replies[1]["result"]["isError"] is False
        server.kill()
    edit = call(2, "edit", file_path="notes.md", old_string="beta", new_string="gamma")

    def restarted(*options: str) -> dict[str, Any]:
        done = subprocess.run(
            [*command, *options],
            input=b"\n".join([hello, started, edit]) + b"\n",
            capture_output=True,
            timeout=120,
            check=True,
        )
        answer: dict[str, Any] = json.loads(done.stdout.splitlines()[1])
        return answer

    forgotten = restarted("--observations", "memory://")
    assert forgotten["result"]["structuredContent"]["error"]["code"] == "not_observed"
    kept = restarted()
    assert kept["result"]["isError"] is False, kept
    assert (workspace / "notes.md").read_bytes() == b"alpha\r\ngamma\r\n"


# -- through MCP -------------------------------------------------------------------------------------------


async def test_the_new_arguments_cross_the_mcp_server() -> None:
    fs = Fs(MemoryBackend(), load_entrypoints=False)
    for path, data in {"a.py": b"x\nTODO\ny\n", "b.ts": b"TODO\n", ".hidden.py": b"TODO\n"}.items():
        await fs.context(owner="seed").fs.write(path, data.decode())
    async with Client(create_server(McpTools(fs)), raise_exceptions=True) as client:
        counted = await client.call_tool(
            "grep", {"pattern": "TODO", "output_mode": "count", "type": "py", "context": 1}
        )
        assert counted.structured_content is not None
        assert counted.structured_content["files"] == [{"path": "a.py", "count": 1}]
        shown = await client.call_tool(
            "grep", {"pattern": "TODO", "context": 1, "glob": "*.{py,ts}"}
        )
        assert shown.content[0].text.splitlines()[:5] == [  # type: ignore[union-attr]
            "a.py-1- x", "a.py:2: TODO", "a.py-3- y", "--", "b.ts:1: TODO",
        ]  # fmt: skip
        newest = await client.call_tool(
            "glob", {"pattern": "*.py", "sort": "modified", "hidden": True}
        )
        assert newest.structured_content is not None
        assert sorted(newest.structured_content["paths"]) == [".hidden.py", "a.py"]


async def test_the_workspace_tools_cross_the_mcp_server() -> None:
    server, fs = await memory_server()
    async with Client(server, raise_exceptions=True) as client:
        await client.call_tool("read", {"file_path": "notes.md"})
        edits = [
            {"old_string": "alpha", "new_string": "one"},
            {"old_string": "one\nbeta", "new_string": "one\ntwo"},
        ]
        dry = await client.call_tool(
            "multi_edit", {"file_path": "notes.md", "edits": edits, "dry_run": True}
        )
        assert dry.structured_content is not None
        assert dry.structured_content["written"] is False
        assert (await fs.backend.read("notes.md")).data == CRLF
        done = await client.call_tool("multi_edit", {"file_path": "notes.md", "edits": edits})
        assert not done.is_error
        moved = await client.call_tool(
            "move", {"source_path": "notes.md", "destination_path": "docs/notes.md"}
        )
        assert moved.structured_content is not None
        assert moved.structured_content["destination"] == "docs/notes.md"
        assert (await fs.backend.read("docs/notes.md")).data == b"one\r\ntwo\r\n"
        patch = "*** Begin Patch\n*** Update File: docs/notes.md\n@@\n one\n-two\n+2\n*** End Patch"
        patched = await client.call_tool("apply_patch", {"input": patch})
        assert patched.structured_content is not None
        assert patched.structured_content["files"][0]["action"] == "update"
        assert (await fs.backend.read("docs/notes.md")).data == b"one\r\n2\r\n"
        made = await client.call_tool("create_directory", {"path": "src/pkg"})
        assert not made.is_error
        deleted = await client.call_tool("delete", {"file_path": "docs/notes.md"})
        assert not deleted.is_error
        gone = await client.call_tool("read", {"file_path": "docs/notes.md"})
        assert gone.structured_content is not None
        assert gone.structured_content["error"]["code"] == "not_found"


# -- progress ------------------------------------------------------------------------------------


async def test_a_client_that_asks_hears_how_a_long_search_goes(workspace: Path, era: str) -> None:
    for n in range(200):
        (workspace / f"f{n:03}.txt").write_text("needle\n" * 20)
    heard: list[tuple[float, float | None, str | None]] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    # a multiline search runs ctxfs's own engine, which reports as it goes
    arguments = {"pattern": "needle", "multiline": True, "output_mode": "count"}
    async with Client(stdio(workspace, "--progress", "0"), mode=era) as client:
        result = await client.call_tool("grep", arguments, progress_callback=progress)
        assert not result.is_error
        assert heard, "no progress notification arrived"
        assert all(total == 201 for _, total, _ in heard)  # the files and notes.md
        assert [done for done, _, _ in heard] == sorted(done for done, _, _ in heard)
        assert "files searched" in str(heard[-1][2])


async def test_an_image_arrives_as_image_content_and_a_pdf_as_its_pages() -> None:
    fs = Fs(MemoryBackend(), load_entrypoints=False)
    await fs.backend.write("big.png", image((3000, 1000)), expect=ABSENT)
    await fs.backend.write("report.pdf", pdf("one", "two", "three"), expect=ABSENT)
    async with Client(create_server(McpTools(fs)), raise_exceptions=True) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        shown = await client.call_tool("read", {"file_path": "big.png"})
        pages = await client.call_tool("read", {"file_path": "report.pdf", "pages": "2-"})
    schema = tools["read"].output_schema
    assert schema is not None
    assert not shown.is_error
    text, picture = shown.content
    assert isinstance(text, TextContent)
    assert isinstance(picture, ImageContent)
    assert picture.mime_type == "image/png"
    structured = shown.structured_content
    assert structured is not None
    jsonschema.validate(structured, schema)  # what the client checks the result against
    image_data = structured["image"]
    assert dimensions(base64.b64decode(picture.data)) == ("PNG", (1568, 523))
    assert (image_data["width"], image_data["height"]) == (1568, 523)
    assert (image_data["original_width"], image_data["original_height"]) == (3000, 1000)
    assert text.text.startswith("Returned the image big.png (image/png, 3000x1000 px,")
    assert picture.data not in json.dumps(structured)
    assert pages.structured_content is not None
    jsonschema.validate(pages.structured_content, schema)
    (page_text,) = pages.content
    assert isinstance(page_text, TextContent)
    assert page_text.text == (
        "--- page 2 of 3 ---\ntwo\n--- page 3 of 3 ---\nthree\n"
        "(pages 2-3 of 3 of the PDF report.pdf; end of document)"
    )
