"""``ctxfs serve --transport http``: tokens, owners per principal, Host/Origin, session caps.

Every server is a real subprocess; every client the real ``mcp`` client or raw HTTP.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from ctxfs.core import Fs, MemoryBackend
from ctxfs.tools.httpserver import (
    TokenFileError,
    Tokens,
    allowed_origins_and_hosts,
    is_loopback,
)
from ctxfs.tools.httpsessions import SessionLimits
from ctxfs.tools.mcpserver import OWNER_META_KEY, McpTools, create_server
from ctxfs.tools.messages import OneMessage
from tests.tools.served import (
    CRLF,
    LEGACY,
    TOKENS,
    Served,
    client,
    eventually,
    initialize,
    post,
    read_in_session,
    running,
    serve_http,
    stale_conflict,
    token_file,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

EDIT = {"file_path": "notes.md", "old_string": "beta", "new_string": "gamma"}


def two_workers(workspace: Path, tmp_path: Path) -> list[str]:
    """``serve`` options: *workspace*, a token file in *tmp_path*, and two workers."""
    return ["--root", str(workspace), "--token-file", str(token_file(tmp_path)), "--workers", "2"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's client runs its transports on asyncio


@pytest.fixture
def served(workspace: Path, tmp_path: Path) -> Iterator[Served]:
    """``ctxfs serve --transport http`` on *workspace*, with alice's and bob's tokens."""
    with serve_http("--root", str(workspace), "--token-file", str(token_file(tmp_path))) as running:
        yield running


def code_of(result: object) -> str | None:
    structured = getattr(result, "structured_content", None) or {}
    error = structured.get("error")
    return None if error is None else str(error["code"])


# -- who is calling ------------------------------------------------------------------------------


async def test_two_tokens_are_two_owners_on_the_current_protocol(
    served: Served, workspace: Path
) -> None:
    assert served.banner[1] == "ctxfs: tokens for the principals alice, bob"
    async with (
        client(served.url, TOKENS["alice"]) as alice,
        client(served.url, TOKENS["bob"]) as bob,
    ):
        await stale_conflict(alice, bob)
    assert (workspace / "notes.md").read_bytes() == b"gamma\r\ngamma\r\n"


async def test_one_token_is_one_owner_unless_agents_name_themselves(
    served: Served, workspace: Path
) -> None:
    async with (
        client(served.url, TOKENS["alice"]) as first,
        client(served.url, TOKENS["alice"]) as second,
    ):
        await first.call_tool("read", {"file_path": "notes.md"})
        assert code_of(await second.call_tool("edit", EDIT)) is None  # same owner
        named = await second.call_tool(
            "edit",
            {**EDIT, "old_string": "alpha"},
            meta={OWNER_META_KEY: "agent-2"},  # type: ignore[arg-type]
        )
        assert code_of(named) == "not_observed"


async def test_naming_another_principals_owner_gets_none_of_its_observations(
    served: Served, workspace: Path
) -> None:
    # bob reads, as himself and as "x"; alice claims both names: neither is bob's.
    async with (
        client(served.url, TOKENS["alice"]) as alice,
        client(served.url, TOKENS["bob"]) as bob,
    ):
        await bob.call_tool("read", {"file_path": "notes.md"})
        await bob.call_tool("read", {"file_path": "notes.md"}, meta={OWNER_META_KEY: "x"})  # type: ignore[arg-type]
        for name in ("bob", "x", "bob:x", "../bob", "bob/session-1"):
            refused = await alice.call_tool("edit", EDIT, meta={OWNER_META_KEY: name})  # type: ignore[arg-type]
            assert code_of(refused) == "not_observed", name
        assert code_of(await alice.call_tool("edit", EDIT)) == "not_observed"
    assert (workspace / "notes.md").read_bytes() == CRLF


@pytest.mark.parametrize("name", ["", "a" * 129, "agent\x00", "agent\n2", 7])
async def test_an_owner_name_out_of_bounds_is_refused(
    served: Served, workspace: Path, name: object
) -> None:
    # 1 to 128 characters, none a control character: the server keeps every name it is given
    async with client(served.url, TOKENS["alice"]) as alice:
        meta = {OWNER_META_KEY: name}
        with pytest.raises(MCPError, match="must be 1 to 128 characters") as refused:
            await alice.call_tool("read", {"file_path": "notes.md"}, meta=meta)  # type: ignore[arg-type]
        assert refused.value.error.code == INVALID_PARAMS
        longest = {OWNER_META_KEY: "é" * 128}
        read = await alice.call_tool("read", {"file_path": "notes.md"}, meta=longest)  # type: ignore[arg-type]
        assert code_of(read) is None


async def test_handshake_era_sessions_stay_owners_of_their_own(
    served: Served, workspace: Path
) -> None:
    async with (
        client(served.url, TOKENS["alice"], mode="legacy") as first,
        client(served.url, TOKENS["alice"], mode="legacy") as second,
    ):
        await stale_conflict(first, second)
    assert (workspace / "notes.md").read_bytes() == b"gamma\r\ngamma\r\n"


async def test_a_sessions_observations_go_when_it_ends(workspace: Path, tmp_path: Path) -> None:
    # In a SQLite store, where the test can see them: a session closed by its client, and one
    # that idles out, leave nothing behind; the principal's own observations stay.
    database = tmp_path / "observations.db"
    options = [
        "--root", str(workspace), "--token-file", str(token_file(tmp_path)),
        "--observations", f"sqlite:///{database}", "--session-idle", "1",
    ]  # fmt: skip

    def owners() -> list[str]:
        with sqlite3.connect(database) as db:
            return sorted(row[0].decode() for row in db.execute("SELECT owner FROM observations"))

    with serve_http(*options) as served:
        async with client(served.url, TOKENS["alice"], mode="legacy") as closed:
            assert code_of(await closed.call_tool("read", {"file_path": "notes.md"})) is None
            assert [owner.split("-")[0] for owner in owners()] == ["alice/session"]
        for _ in range(50):  # the client's DELETE ends the session
            if not owners():
                break
            await anyio.sleep(0.1)
        assert owners() == []
        async with client(served.url, TOKENS["bob"]) as stateless:  # the principal's own
            assert code_of(await stateless.call_tool("read", {"file_path": "notes.md"})) is None
        opened = post(served.url, initialize(), token=TOKENS["alice"])
        session = opened.headers["mcp-session-id"]
        answer = read_in_session(served.url, TOKENS["alice"], session, "notes.md")
        assert answer.status_code == 200, answer.text
        assert len(owners()) == 2
        await anyio.sleep(2.5)  # idle past --session-idle 1: ended, and forgotten
        assert owners() == ["bob"]


@pytest.mark.parametrize(("mode", "content_type"), [(None, "application/json"),
                                                   ("sse", "text/event-stream")])  # fmt: skip
def test_a_post_is_answered_with_one_json_body_unless_sse_is_asked(
    workspace: Path, tmp_path: Path, mode: str | None, content_type: str
) -> None:
    chosen = [] if mode is None else ["--http-responses", mode]
    tokens = str(token_file(tmp_path))
    with serve_http("--root", str(workspace), "--token-file", tokens, *chosen) as served:
        opened = post(served.url, initialize(), token=TOKENS["alice"])
        assert opened.headers["content-type"].startswith(content_type)
        session = opened.headers["mcp-session-id"]
        answer = read_in_session(served.url, TOKENS["alice"], session, "notes.md")
        assert answer.headers["content-type"].startswith(content_type)
        body = answer.text if mode is None else answer.text.split("data: ", 1)[1]
        assert json.loads(body)["result"]["structuredContent"]["content"] == "alpha\nbeta\n"


async def test_workers_behind_one_port_share_observations_and_stop_together(
    workspace: Path, tmp_path: Path
) -> None:
    # Two workers, stateless: whichever worker answers, a principal's read licenses its edit
    # and another's is stale; clients of both eras work. SIGTERM ends every worker, and the
    # run's store goes with them.
    options = two_workers(workspace, tmp_path)
    with serve_http(*options) as served:
        store = run_store_of(served.banner[0])
        workers = forked_workers(served.process.pid)
        for era in (None, "legacy"):
            (workspace / "notes.md").write_bytes(CRLF)
            for _ in range(3):  # new connections each time: both workers take some
                async with (
                    client(served.url, TOKENS["alice"], mode=era) as alice,
                    client(served.url, TOKENS["bob"], mode=era) as bob,
                ):
                    await stale_conflict(alice, bob)
                (workspace / "notes.md").write_bytes(CRLF)
        os.kill(workers[0], signal.SIGKILL)  # a worker dies: another takes its place
        for _ in range(100):
            replaced = children_of(served.process.pid)
            if len(replaced) == 2 and workers[0] not in replaced:
                break
            await anyio.sleep(0.1)
        assert len(replaced) == 2
        assert workers[0] not in replaced
        workers = replaced
        async with client(served.url, TOKENS["alice"]) as alice:
            assert code_of(await alice.call_tool("read", {"file_path": "notes.md"})) is None
        served.process.terminate()
        assert served.process.wait(timeout=20) == 0
        assert not any(map(running, workers))
        assert not store.exists()


def children_of(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def forked_workers(supervisor: int) -> list[int]:
    """The *supervisor*'s two workers, once both are forked (its banner comes as they are)."""
    assert eventually(lambda: len(children_of(supervisor)) == 2), children_of(supervisor)
    return children_of(supervisor)


def test_the_workers_banner_names_a_shared_store_without_its_password(
    workspace: Path, tmp_path: Path, redis_url: str
) -> None:
    secret = redis_url.replace("redis://", "redis://someone:S3CRET-PW@", 1)
    options = [*two_workers(workspace, tmp_path), "--observations", secret]
    with serve_http(*options) as served:
        assert "observations in redis://someone:***@" in served.banner[0]
        assert "S3CRET-PW" not in "\n".join(served.banner)


def test_workers_are_refused_where_they_cannot_serve(workspace: Path) -> None:
    refused = subprocess.run(
        [sys.executable, "-m", "ctxfs.tools.cli", "serve", "--root", str(workspace),
         "--workers", "2"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert refused.returncode == 2
    assert "--workers is for --transport http" in refused.stderr


def test_workers_die_with_a_killed_supervisor_and_remove_the_run_store(
    workspace: Path, tmp_path: Path
) -> None:
    # kill -9 of the supervisor: its workers end, the port is free, the run's store is gone.
    options = two_workers(workspace, tmp_path)
    with serve_http(*options) as served:
        store = run_store_of(served.banner[0])
        assert store.is_dir()
        workers = forked_workers(served.process.pid)
        try:
            served.process.kill()
            served.process.wait(timeout=10)
            assert eventually(lambda: not any(map(running, workers))), "orphaned workers"
            assert eventually(lambda: port_is_free(served.url)), "the port is still held"
            assert eventually(lambda: not store.exists()), f"{store} is left behind"
        finally:
            for pid in workers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_port_still_held_by_other_workers_is_refused(workers: str, workspace: Path) -> None:
    # Orphaned workers of a killed server hold the port with SO_REUSEPORT, which would let a
    # new server share it (and split the connections between two stores).
    with socket.socket() as orphan:
        orphan.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        orphan.bind(("127.0.0.1", 0))
        orphan.listen()
        port = orphan.getsockname()[1]
        said = refused("--root", str(workspace), "--port", str(port), "--workers", workers)
    assert said == f"ctxfs: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_the_run_store_of_a_run_killed_whole_is_reclaimed_at_the_next_start(
    workspace: Path, tmp_path: Path
) -> None:
    options = two_workers(workspace, tmp_path)
    with serve_http(*options) as served:
        left = run_store_of(served.banner[0])
        workers = forked_workers(served.process.pid)
        served.process.send_signal(signal.SIGSTOP)  # it starts no worker in their place
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        served.process.kill()
        served.process.wait(timeout=10)
    assert left.is_dir()  # every process of the run was killed: none could remove it
    with serve_http(*options) as restarted:
        assert run_store_of(restarted.banner[0]) != left
        assert not left.exists()


def test_port_0_serves_on_a_free_port_and_says_which(workspace: Path) -> None:
    command = [sys.executable, "-m", "ctxfs.tools.cli", "serve", "--transport", "http",
               "--root", str(workspace), "--port", "0"]  # fmt: skip
    with subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    ) as server:
        try:
            assert server.stderr is not None
            said = re.fullmatch(
                r"ctxfs: serving .* on http://127\.0\.0\.1:(\d+)/mcp\n", server.stderr.readline()
            )
            assert said is not None
            assert int(said.group(1)) != 0
            assert not port_is_free(f"http://127.0.0.1:{said.group(1)}/mcp")
        finally:
            server.terminate()


def run_store_of(banner: str) -> Path:
    """The directory of the SQLite store a ``--workers`` banner names."""
    said = re.search(r"observations in sqlite:///(\S+)/observations\.db", banner)
    assert said is not None, banner
    return Path(said.group(1))


def port_is_free(url: str) -> bool:
    """Whether a server could bind the port of *url* now (it could not share it)."""
    address = urlsplit(url)
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address.hostname, address.port))
        except OSError:
            return False
    return True


def test_a_session_answers_only_the_token_that_opened_it(served: Served, workspace: Path) -> None:
    opened = post(served.url, initialize(), token=TOKENS["alice"])
    session = opened.headers["mcp-session-id"]
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"mcp_session_id": session, "mcp_protocol_version": LEGACY}
    assert post(served.url, ping, token=TOKENS["alice"], **headers).status_code == 200
    assert post(served.url, ping, token=TOKENS["bob"], **headers).status_code == 404
    assert post(served.url, ping, token=TOKENS["alice"], **headers).status_code == 200
    assert served.process.stderr is not None
    assert select.select([served.process.stderr], [], [], 10)[0], "the refusal is logged"
    logged = served.next_line()
    assert "credential does not match" in logged
    assert session not in logged  # (the SDK's own log too names a session by 8 characters)
    assert f"{session[:8]}…" in logged


# -- tokens ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer wrong-token-0123456789",
        f"Bearer {TOKENS['alice']}x",
        f"Bearer {TOKENS['alice'][:-1]}",
        f"Basic {TOKENS['alice']}",
        f"Bearer  {TOKENS['alice']}",
    ],
)
def test_a_request_without_the_right_token_gets_401(
    authorization: str | None, served: Served, workspace: Path
) -> None:
    sent = {} if authorization is None else {"authorization": authorization}
    for message in (initialize(), {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}):
        answer = post(served.url, message, **sent)
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith("Bearer ")
        assert "mcp-session-id" not in answer.headers
    assert post(served.url, initialize(), token=TOKENS["bob"]).status_code == 200


async def test_without_a_configured_token_one_is_made_and_printed(workspace: Path) -> None:
    with serve_http("--root", str(workspace), "--owner", "me") as served:
        said = re.fullmatch(
            r"ctxfs: clients send the header +Authorization: Bearer (\S+)", served.banner[1]
        )
        assert said is not None, served.banner
        token = said.group(1)
        assert len(token) >= 32
        assert "principal 'me'" in served.next_line()
        async with client(served.url, token) as authorized:
            assert code_of(await authorized.call_tool("read", {"file_path": "notes.md"})) is None
        assert post(served.url, initialize()).status_code == 401
    with serve_http("--root", str(workspace)) as again:  # a new token every run
        assert token not in again.banner[1]


async def test_ctxfs_token_names_the_owner_principal(workspace: Path) -> None:
    token = "from-the-environment-0123"
    with serve_http(
        "--root", str(workspace), "--owner", "ci", env={"CTXFS_TOKEN": token}
    ) as served:
        assert served.banner[1] == "ctxfs: tokens for the principals ci"
        assert token not in "\n".join(served.banner)
        async with client(served.url, token) as authorized:
            assert code_of(await authorized.call_tool("read", {"file_path": "notes.md"})) is None


def refused(*options: str, env: dict[str, str] | None = None) -> str:
    """Run ``serve --transport http`` expecting exit 2; its one line on stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "ctxfs.tools.cli", "serve", "--transport", "http", *options],
        check=False, capture_output=True, text=True, timeout=60,
        env=None if env is None else {**os.environ, **env},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    return done.stderr.strip()


BAD_TOKEN_FILES = {
    "alice\n": "expected `principal token`, got 1 fields",
    "alice tok en-0123456789abcdef\n": "got 3 fields",
    "al:ice secret-token-0123456789\n": "line 1: the principal is no name of letters",
    "alice short\n": "line 1: the token is not 16 or more visible ASCII characters",
    "secret-token-0123456789abcdef alice\n": "line 1: the token is not 16 or more",  # swapped
    "S3cret+Tok/0123456789= alice\n": "line 1: the principal is no name",  # swapped
    "alice same-token-0123456789\nbob same-token-0123456789\n": "the token of line 1 again",
    "# nothing but comments\n\n": "holds no `principal token` line",
    "alice secret-token-0123456789\u2028bob other-token-0123456789\n": "got 4 fields",
}


@pytest.mark.parametrize(("text", "said"), BAD_TOKEN_FILES.items())
def test_a_malformed_token_file_is_refused_by_line_without_showing_tokens(
    text: str, said: str, workspace: Path, tmp_path: Path
) -> None:
    path = tmp_path / "tokens"
    path.write_text(text)
    line = refused("--root", str(workspace), "--token-file", str(path))
    assert said in line
    for word in text.split():
        if len(word) >= 16:
            assert word not in line


def test_unsafe_bindings_are_refused(workspace: Path, tmp_path: Path) -> None:
    root = ["--root", str(workspace)]
    assert "not a loopback address: give the tokens" in refused(*root, "--host", "0.0.0.0")
    assert "loopback only" in refused(*root, "--host", "0.0.0.0", "--no-auth")
    assert "contradict" in refused(*root, "--no-auth", "--token-file", str(token_file(tmp_path)))
    assert "CTXFS_TOKEN" in refused(*root, env={"CTXFS_TOKEN": "short"})
    assert "--owner: the principal is no name" in refused(*root, "--owner", "a b")
    assert "cannot read the token file" in refused(*root, "--token-file", str(tmp_path / "none"))


def test_a_server_with_no_store_named_is_refused() -> None:
    assert refused() == (
        "ctxfs: serve --transport http needs --root DIR or --url URL "
        "(a client's MCP roots name the workspace over stdio only)"
    )


async def test_no_auth_is_loud_and_takes_requests_without_a_token(workspace: Path) -> None:
    with serve_http("--root", str(workspace), "--no-auth") as served:
        assert "WARNING --no-auth" in served.banner[1]
        async with Client(served.url) as anonymous:
            assert code_of(await anonymous.call_tool("read", {"file_path": "notes.md"})) is None


def test_a_client_gone_before_its_body_ends_is_no_error(workspace: Path, tmp_path: Path) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    with serve_http("--root", str(workspace), "--token-file", str(token_file(tmp_path))) as served:
        host, port = served.url.removeprefix("http://").partition("/")[0].split(":")
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Bearer {TOKENS['alice']}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        for cut in (1, len(body) // 2):
            with socket.create_connection((host, int(port))) as gone:
                gone.sendall(head.encode() + body[:-cut])
            time.sleep(0.2)
    assert "Traceback" not in served.said
    assert "ERROR" not in served.said


def test_a_token_file_an_editor_began_with_a_bom_is_read(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_bytes(b"\xef\xbb\xbfalice secret-token-0123456789\r\nbob other-token-0123456789\r\n")
    assert Tokens.read(path).principals == ["alice", "bob"]


def test_tokens_are_compared_whole_and_name_their_principal() -> None:
    tokens = Tokens([("a", "a" * 16), ("b", "b" * 16), ("a", "c" * 20)])
    assert tokens.principals == ["a", "b"]

    async def principal(token: str) -> str | None:
        found = await tokens.verify_token(token)
        return None if found is None else found.client_id

    assert anyio.run(principal, "c" * 20) == "a"
    assert anyio.run(principal, "b" * 16) == "b"
    for wrong in ("a" * 15, "a" * 17, "", "b" * 16 + " ", "A" * 16):
        assert anyio.run(principal, wrong) is None
    with pytest.raises(TokenFileError):
        Tokens([])
    with pytest.raises(TokenFileError):
        Tokens([("a", "x" * 16), ("b", "x" * 16)])
    assert "a" * 16 not in repr(tokens)


# -- where requests come from ---------------------------------------------------------------------


def test_loopback_and_the_checked_hosts_and_origins() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"]))
    assert not any(map(is_loopback, ["0.0.0.0", "10.0.0.1", "::", "example.com"]))
    wildcard = allowed_origins_and_hosts("0.0.0.0", hosts=["files.example:8000"])
    assert "0.0.0.0:*" not in wildcard.allowed_hosts
    assert "files.example:8000" in wildcard.allowed_hosts
    assert "http://files.example:8000" in wildcard.allowed_origins
    assert wildcard.enable_dns_rebinding_protection
    bound = allowed_origins_and_hosts("10.1.2.3")
    assert "10.1.2.3:*" in bound.allowed_hosts
    assert "http://10.1.2.3:*" in bound.allowed_origins
    assert "evil.example:*" not in bound.allowed_hosts


def test_host_and_origin_are_checked_on_any_bind_address(workspace: Path, tmp_path: Path) -> None:
    # 127.0.0.2 is loopback, but not one of the three names the SDK alone would protect.
    (workspace / "secret.txt").write_text("s3cr3t\n")
    tokens = token_file(tmp_path)
    with serve_http(
        "--root", str(workspace), "--token-file", str(tokens), host="127.0.0.2"
    ) as served:
        alice = TOKENS["alice"]
        assert post(served.url, initialize(), token=alice).status_code == 200
        assert post(served.url, initialize(), token=alice, host="evil.example").status_code == 421
        evil_origin = post(served.url, initialize(), token=alice, origin="http://evil.example")
        assert evil_origin.status_code == 403
        ok_origin = post(served.url, initialize(), token=alice, origin="http://127.0.0.2:1234")
        assert ok_origin.status_code == 200
    assert (workspace / "notes.md").read_bytes() == CRLF


# -- sessions ---------------------------------------------------------------------------------------


def alive(url: str, token: str, session: str) -> bool:
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    answer = post(url, ping, token=token, mcp_session_id=session, mcp_protocol_version=LEGACY)
    return answer.status_code == 200


def test_one_principal_cannot_lock_others_out(workspace: Path, tmp_path: Path) -> None:
    # alice opens 20 idle sessions against a cap of 3 each and 5 in all: hers give way
    # (the longest-idle first), and bob still gets in.
    options = ["--sessions-per-principal", "3", "--max-sessions", "5"]
    tokens = str(token_file(tmp_path))
    with serve_http("--root", str(workspace), "--token-file", tokens, *options) as served:
        alice, bob = TOKENS["alice"], TOKENS["bob"]
        hers = [post(served.url, initialize(), token=alice) for _ in range(20)]
        assert [answer.status_code for answer in hers] == [200] * 20
        sessions = [answer.headers["mcp-session-id"] for answer in hers]
        assert [alive(served.url, alice, session) for session in sessions] == [False] * 17 + [
            True
        ] * 3
        his = [post(served.url, initialize(), token=bob) for _ in range(2)]
        assert [answer.status_code for answer in his] == [200] * 2
        # full (5): a new session ends an idle one of the busiest principal (alice, 3)
        assert post(served.url, initialize(), token=bob).status_code == 200
        assert sum(alive(served.url, alice, session) for session in sessions[-3:]) == 2
        assert all(alive(served.url, bob, answer.headers["mcp-session-id"]) for answer in his)


def test_a_session_with_a_request_in_flight_is_never_ended_to_make_room(
    workspace: Path, tmp_path: Path
) -> None:
    # alice's two sessions each hold an event stream open (a GET in flight): her third session
    # is refused (503), not made room for; bob still gets in, and hers live on.
    options = ["--sessions-per-principal", "2", "--max-sessions", "3"]
    tokens = str(token_file(tmp_path))
    with serve_http("--root", str(workspace), "--token-file", tokens, *options) as served:
        alice, bob = TOKENS["alice"], TOKENS["bob"]
        opened = [post(served.url, initialize(), token=alice) for _ in range(2)]
        sessions = [answer.headers["mcp-session-id"] for answer in opened]
        listen = {"Authorization": f"Bearer {alice}", "Accept": "text/event-stream",
                  "Mcp-Protocol-Version": LEGACY}  # fmt: skip
        with contextlib.ExitStack() as streams:
            for session in sessions:
                headers = {**listen, "Mcp-Session-Id": session}
                stream = streams.enter_context(
                    httpx2.stream("GET", served.url, headers=headers, timeout=30)
                )
                assert stream.status_code == 200
            refused = post(served.url, initialize(), token=alice)
            assert refused.status_code == 503
            assert refused.json()["error"]["message"] == "Too many open sessions"
            assert post(served.url, initialize(), token=bob).status_code == 200
            assert all(alive(served.url, alice, session) for session in sessions)


def test_a_request_the_sdk_refuses_ends_no_session_to_make_room(
    workspace: Path, tmp_path: Path
) -> None:
    # alice holds her one session, idle: a request to open another that the SDK refuses
    # (a foreign Host, as a rebinding page sends; a body that is no JSON) ends none; one it
    # opens does.
    tokens = str(token_file(tmp_path))
    options = ["--root", str(workspace), "--token-file", tokens, "--sessions-per-principal", "1"]
    with serve_http(*options) as served:
        alice = TOKENS["alice"]
        session = post(served.url, initialize(), token=alice).headers["mcp-session-id"]
        assert post(served.url, initialize(), token=alice, host="evil.example").status_code == 421
        headers = {"Authorization": f"Bearer {alice}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}  # fmt: skip
        assert httpx2.post(served.url, content=b"{garbage", headers=headers).status_code == 400
        assert alive(served.url, alice, session)
        assert post(served.url, initialize(), token=alice).status_code == 200
        assert not alive(served.url, alice, session)


def test_a_2026_request_naming_a_session_leaves_the_session_and_its_owner_be(
    served: Served, workspace: Path
) -> None:
    # The SDK serves a 2026-07-28 request alone, whatever session ID it carries: its 404 (an
    # unknown method) is no sign that the session is gone, and the session's reads still count.
    alice = TOKENS["alice"]
    session = post(served.url, initialize(), token=alice).headers["mcp-session-id"]
    assert read_in_session(served.url, alice, session, "notes.md").status_code == 200
    modern = "2026-07-28"
    envelope = {"io.modelcontextprotocol/protocolVersion": modern,
                "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip
    unknown = {"jsonrpc": "2.0", "id": 1, "method": "no/such", "params": {"_meta": envelope}}
    answer = post(served.url, unknown, token=alice, mcp_session_id=session,
                  mcp_protocol_version=modern, mcp_method="no/such")  # fmt: skip
    assert answer.status_code == 404
    edit = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "edit", "arguments": EDIT}}  # fmt: skip
    edited = post(served.url, edit, token=alice, mcp_session_id=session,
                  mcp_protocol_version=LEGACY)  # fmt: skip
    assert edited.json()["result"]["isError"] is False, edited.text
    assert (workspace / "notes.md").read_bytes() == b"alpha\r\ngamma\r\n"


@pytest.mark.parametrize("request_id", [1.5, None, {}, True, [1]])
def test_an_id_neither_string_nor_integer_is_refused_as_over_stdio(
    served: Served, request_id: object
) -> None:
    ping = {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
    for headers in ({}, {"mcp_protocol_version": "2026-07-28", "mcp_method": "ping"}):
        answer = post(served.url, ping, token=TOKENS["alice"], **headers)
        assert answer.status_code == 400
        assert answer.json() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": "Invalid Request: the id must be a string or an integer",
            },
        }


@pytest.mark.parametrize("body", [[{"jsonrpc": "2.0", "id": 1, "method": "ping"}], None, 3, {}])
def test_a_body_that_is_no_single_message_is_an_invalid_request(
    served: Served, body: object
) -> None:
    answer = post(served.url, body, token=TOKENS["alice"])  # type: ignore[arg-type]
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "code": -32600,
        "message": "Invalid Request: the body is not one JSON-RPC message",
    }


async def test_a_killed_and_restarted_http_server_keeps_what_a_principal_read(
    workspace: Path, tmp_path: Path
) -> None:
    # The owner of a stateless request is its principal, the same after a restart: with
    # observations in SQLite, a read before kill -9 licenses the edit after it.
    options = [
        "--root", str(workspace), "--token-file", str(token_file(tmp_path)),
        "--observations", f"sqlite:///{tmp_path}/observations.db",
    ]  # fmt: skip
    with serve_http(*options) as served:
        async with client(served.url, TOKENS["alice"]) as alice:
            assert code_of(await alice.call_tool("read", {"file_path": "notes.md"})) is None
        served.process.kill()
        served.process.wait()
    with serve_http(*options) as restarted:
        async with (
            client(restarted.url, TOKENS["alice"]) as alice,
            client(restarted.url, TOKENS["bob"]) as bob,
        ):
            assert code_of(await bob.call_tool("edit", EDIT)) == "not_observed"
            assert code_of(await alice.call_tool("edit", EDIT)) is None
    assert (workspace / "notes.md").read_bytes() == b"alpha\r\ngamma\r\n"


# -- SessionLimits in process: openings that race ----------------------------------------------


def _scope(method: str, session: str | None = None) -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
               (b"accept", b"application/json, text/event-stream")]  # fmt: skip
    if session is not None:
        headers += [(b"mcp-session-id", session.encode()), (b"mcp-protocol-version", b"2025-06-18")]
    return {"type": "http", "method": method, "path": "/mcp", "raw_path": b"/mcp",
            "query_string": b"", "headers": headers, "scheme": "http", "http_version": "1.1",
            "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 1), "root_path": ""}  # fmt: skip


async def _asgi(app: Any, scope: dict[str, Any], body: bytes) -> tuple[int, str | None]:
    """One request through *app*: its status and session ID."""
    answer: dict[str, Any] = {}
    given = False

    async def receive() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError  # pragma: no cover

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["session"] = dict(message["headers"]).get(b"mcp-session-id", b"").decode()

    await app(scope, receive, send)
    return answer["status"], answer["session"] or None


async def test_two_openings_racing_for_one_idle_sessions_room_get_one_session_each_or_503() -> None:
    # One session each, the principal's one idle: two openings at once can end it only once.
    # One opens (and lives), the other is refused; the session ended is heard of.
    server = create_server(McpTools(Fs(MemoryBackend(), load_entrypoints=False)))
    manager = StreamableHTTPSessionManager(server, json_response=True, session_idle_timeout=None)
    sdk, held = StreamableHTTPASGIApp(manager), anyio.Event()

    async def slow_to_open(scope: Any, receive: Any, send: Any) -> None:
        if not dict(scope["headers"]).get(b"mcp-session-id") and opening:
            await held.wait()
        await sdk(scope, receive, send)

    ended: list[str] = []
    one_ended = anyio.Event()

    async def heard(session: str) -> None:
        ended.append(session)
        one_ended.set()

    limits = SessionLimits(slow_to_open, per_principal=1, max_sessions=10, idle_seconds=600,
                           on_session_end=heard)  # fmt: skip
    hello = json.dumps(initialize()).encode()
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    opening = False
    async with manager.run(), limits.run():
        _, first = await _asgi(limits, _scope("POST"), hello)
        opening = True
        answers: list[tuple[int, str | None]] = []

        async def open_one() -> None:
            answers.append(await _asgi(limits, _scope("POST"), hello))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(open_one)
            tasks.start_soon(open_one)
            await anyio.sleep(0.1)
            held.set()
        assert sorted(status for status, _ in answers) == [200, 503]
        (opened,) = [session for status, session in answers if status == 200]
        assert opened is not None
        assert (await _asgi(limits, _scope("POST", opened), ping))[0] == 200
        assert (await _asgi(limits, _scope("POST", first), ping))[0] == 404
        with anyio.fail_after(5):
            await one_ended.wait()
        assert ended == [first]


@pytest.mark.parametrize("content_type", [b"text/plain", b"", b"application/jsonx"])
async def test_a_post_that_is_not_json_is_refused_before_its_body_is_awaited(
    content_type: bytes,
) -> None:
    passed_on: list[str] = []

    async def downstream(scope: Any, receive: Any, send: Any) -> None:
        passed_on.append(scope["method"])  # (where a session would take its place)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    scope = _scope("POST")
    scope["headers"] = [(name, content_type if name == b"content-type" else value)
                        for name, value in scope["headers"]]  # fmt: skip
    with anyio.fail_after(5):  # (a body trickled in slowly is never waited for)
        status, _ = await _asgi(OneMessage(downstream, max_body_bytes=1024), scope, b"")
    assert (status, passed_on) == (415, [])
    json_scope = _scope("POST")
    with anyio.fail_after(5):
        ping = b'{"jsonrpc": "2.0", "method": "ping", "id": 1}'
        await _asgi(OneMessage(downstream, max_body_bytes=1024), json_scope, ping)
    assert passed_on == ["POST"]
