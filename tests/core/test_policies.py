"""The built-in policies, through ctx.fs and the tools, some installed by entry point."""

from __future__ import annotations

import importlib
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ctxfs.core import (
    ABSENT,
    Context,
    ErrorCode,
    Fs,
    FsError,
    MemoryBackend,
    Operation,
    Unavailable,
    hookimpl,
)
from ctxfs.core.policies import (
    AuditLedger,
    CheckOuts,
    LeaseBook,
    MaxFileSize,
    PathRules,
    fold_name,
)
from ctxfs.tools import FsToolset
from tests.conftest import InstallDist

pytestmark = pytest.mark.anyio


async def seeded(*plugins: object, load_entrypoints: bool = False) -> Fs:
    backend = MemoryBackend()
    for path, data in (
        ("a.txt", b"alpha\n"),
        ("docs/guide.md", b"# guide\n"),
        ("vendor/lib.py", b"x = 1\n"),
    ):
        await backend.write(path, data, expect=ABSENT)
    return Fs(backend, plugins=plugins, load_entrypoints=load_entrypoints)


def install_policies(install_dist: InstallDist, module: str, source: str, *names: str) -> Any:
    """Install *source* as *module*, its objects *names* as ``ctxfs.plugins`` entry points."""
    points = {f"{module}-{name}": f"{module}:{name}" for name in names}
    install_dist(module, modules={module: source}, entry_points={"ctxfs.plugins": points})
    return importlib.import_module(module)


@pytest.mark.parametrize(
    "spelling", [".git", ".GIT", ".g\u200cit", "\uff0e\uff47\uff49\uff54", ".Gi\u00adt"]
)
def test_names_fold_to_one_for_rules(spelling: str) -> None:
    assert fold_name(spelling) == ".git"


@pytest.mark.parametrize(
    ("path", "denied"),
    [(".git/config", True), ("sub/.GIT/HEAD", True), (".g\u200cit/config", True), (".env", True),
     (".gitignore", False), ("digit/x", False), ("secrets/key", True), ("notsecrets/key", False)],
)  # fmt: skip
async def test_deny_rules_cover_a_name_at_any_depth(path: str, denied: bool) -> None:
    fs = await seeded(PathRules(deny=[".git", ".env", "secrets"]))
    ctx = fs.context(owner="a")
    if not denied:
        await ctx.fs.write(path, "x\n")
        return
    with pytest.raises(FsError) as caught:
        await ctx.fs.write(path, "x\n")
    assert caught.value.code is ErrorCode.DENIED
    with pytest.raises(FsError):
        await fs.backend.read(path)  # nothing was created


async def test_read_only_rules_allow_reading_only() -> None:
    fs = await seeded(PathRules(read_only=["vendor/**", "*.lock"]))
    ctx = fs.context(owner="a")
    assert (await ctx.fs.read("vendor/lib.py")).text == "x = 1\n"
    for attempt in (ctx.fs.edit("vendor/lib.py", "x", "y"), ctx.fs.write("vendor/new.py", "y\n"),
                    ctx.fs.write("deps/poetry.lock", "y\n")):  # fmt: skip
        with pytest.raises(FsError) as caught:
            await attempt
        assert caught.value.code is ErrorCode.DENIED
        assert "read-only" in caught.value.message


async def test_max_file_size_limits_writes_and_edits() -> None:
    fs = await seeded(MaxFileSize(10))
    ctx = fs.context(owner="a")
    with pytest.raises(FsError) as caught:
        await ctx.fs.write("big.txt", "x" * 11)
    assert caught.value.code is ErrorCode.TOO_LARGE
    await ctx.fs.write("small.txt", "x" * 10)
    await fs.backend.write("grown.txt", b"y" * 20, expect=ABSENT)
    await ctx.fs.read("grown.txt")
    with pytest.raises(FsError) as caught:
        await ctx.fs.edit("grown.txt", "y", "z", replace_all=True)
    assert caught.value.details == {"size": 20, "max_size": 10}


SWITCH_PLUGIN = """
    from ctxfs.core.policies import IntegrationSwitch, StaticIntegrations

    integrations = StaticIntegrations()
    switch = IntegrationSwitch(
        integrations,
        key_of=lambda path: "docs" if path.startswith("docs/") else None,
        keys=["docs"],
    )
"""


class LockSpy:
    def __init__(self) -> None:
        self.taken: list[str] = []

    @hookimpl
    def ctxfs_mutation_lock(self, ctx: Context, op: Operation) -> None:
        self.taken.append(op.path)


async def test_integration_switch_through_the_entry_point(install_dist: InstallDist) -> None:
    install_dist(
        "ctxfs-docs-switch",
        modules={"ctxfs_docs_switch": SWITCH_PLUGIN},
        entry_points={"ctxfs.plugins": {"docs-switch": "ctxfs_docs_switch:switch"}},
    )
    backend = MemoryBackend()
    await backend.write("docs/guide.md", b"# guide\n", expect=ABSENT)
    spy = LockSpy()
    fs = Fs(backend, plugins=[spy])
    port = sys.modules["ctxfs_docs_switch"].integrations
    ctx = fs.context(owner="agent", workspace="w1")
    tools = FsToolset()

    port.switch("docs", on=False, workspace="w1")
    await ctx.fs.read("docs/guide.md")  # reads go on
    backend.calls.clear()
    with pytest.raises(FsError) as caught:
        await ctx.fs.edit("docs/guide.md", "guide", "manual")
    assert caught.value.code is ErrorCode.NOT_ENABLED
    assert spy.taken == []
    assert backend.calls == {}, "refused before anything was locked or read"
    await ctx.fs.write("notes/free.md", "not governed\n")  # other paths are not governed
    offered = [tool["name"] for tool in await tools.definitions(ctx)]
    assert offered == ["read", "list_dir", "glob", "grep", "search_tools", "call_tool"]  # changes
    elsewhere = fs.context(owner="agent", workspace="w2")
    assert "write" in [tool["name"] for tool in await tools.definitions(elsewhere)]

    port.switch("docs", on=True, workspace="w1")
    assert [tool["name"] for tool in await tools.definitions(ctx)][:3] == ["read", "write", "edit"]
    await ctx.fs.edit("docs/guide.md", "guide", "manual")


CHECKOUT_PLUGIN = """
    from datetime import UTC, datetime

    from ctxfs.core.policies import CheckOuts, LeaseBook

    leases = LeaseBook(clock=lambda: datetime(2026, 12, 1, 16, 0, tzinfo=UTC))  # never the date
    checkouts = CheckOuts(leases)
"""


async def test_checked_out_busy_and_stale_say_three_different_things(
    install_dist: InstallDist,
) -> None:
    leases = install_policies(install_dist, "leases_plugin", CHECKOUT_PLUGIN, "checkouts").leases
    fs = await seeded(load_entrypoints=True)
    tools = FsToolset()
    agent, other = fs.context(owner="agent"), fs.context(owner="other-agent")
    await tools.execute(agent, "read", {"file_path": "a.txt"})
    edit = {"file_path": "a.txt", "old_string": "alpha", "new_string": "beta"}

    until = datetime(2026, 12, 1, 17, 0, tzinfo=UTC)
    leases.check_out("a.txt", "alice@example.com", until=until)
    checked_out = await tools.execute(agent, "edit", edit)
    assert checked_out.error_code is ErrorCode.CHECKED_OUT
    assert "Checked out by alice@example.com until 2026-12-01T17:00:00+00:00." in checked_out.text
    assert "plan other work and come back after they check it in" in checked_out.text
    assert checked_out.structured["error"]["retryable"] is False
    leases.check_in("a.txt")

    async with fs.file_context.locks.hold("a.txt", timeout=5):
        fs.file_context.lock_timeout = 0.1
        busy = await tools.execute(agent, "edit", edit)
    assert busy.error_code is ErrorCode.BUSY
    assert "retry shortly" in busy.text
    assert busy.structured["error"]["retryable"] is True

    await other.fs.read("a.txt")
    await other.fs.edit("a.txt", "alpha", "gamma")
    stale = await tools.execute(agent, "edit", edit)
    assert stale.error_code is ErrorCode.STALE
    assert "-alpha\n+gamma" in stale.text  # what changed, and the way on
    assert "redo your change against it" in stale.text
    assert len({checked_out.structured["error"]["hint"], busy.structured["error"]["hint"],
                stale.structured["error"]["hint"]}) == 3  # fmt: skip


async def test_an_expired_lease_and_the_holders_own_changes_pass() -> None:
    leases = LeaseBook()
    fs = await seeded(CheckOuts(leases))
    alice = fs.context(owner="alice")
    leases.check_out("a.txt", "alice")
    await alice.fs.read("a.txt")
    await alice.fs.edit("a.txt", "alpha", "beta")
    leases.check_out("a.txt", "bob", until=datetime.now(UTC) - timedelta(seconds=1))
    await alice.fs.edit("a.txt", "beta", "gamma")


LEDGER_PLUGIN = """
    import os

    from ctxfs.core.policies import AuditLedger, PathRules

    ledger = AuditLedger(os.environ["CTXFS_TEST_AUDIT_LOG"])
    rules = PathRules(deny=["secrets"])
"""


async def test_a_ledger_that_cannot_be_written_says_whether_the_operation_was_done(
    tmp_path: Path,
) -> None:
    (tmp_path / "ledger").mkdir()  # (appending to a directory fails, as a full disk would)
    fs = Fs(MemoryBackend(), load_entrypoints=False, plugins=[AuditLedger(tmp_path / "ledger")])
    ctx = fs.context(owner="agent")
    with pytest.raises(Unavailable) as done:
        await ctx.fs.write("a\u2028b.txt", "x\n")
    assert done.value.details == {"done": True}
    assert "was done, but the audit ledger" in done.value.message
    assert (await fs.backend.read("a\u2028b.txt")).data == b"x\n"
    with pytest.raises(Unavailable) as failed:
        await ctx.fs.edit("missing.txt", "x", "y")
    assert failed.value.details == {"done": False}
    assert "failed (not_found:" in failed.value.message
    ledger = AuditLedger(tmp_path / "audit.jsonl")
    await (
        Fs(MemoryBackend(), load_entrypoints=False, plugins=[ledger])
        .context(owner="agent")
        .fs.write("a\u2028b.txt", "x\n")
    )
    assert [record["path"] for record in ledger.records()] == ["a\u2028b.txt"]


async def test_the_ledger_records_every_operation_including_refusals(
    tmp_path: Path, install_dist: InstallDist, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXFS_TEST_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    module = install_policies(install_dist, "ledger_plugin", LEDGER_PLUGIN, "ledger", "rules")
    ledger: AuditLedger = module.ledger
    fs = await seeded(load_entrypoints=True)
    ctx = fs.context(owner="agent", workspace="w1")
    read = await ctx.fs.read("a.txt")
    edited = await ctx.fs.edit("a.txt", "alpha", "beta")
    for attempt in (ctx.fs.write("secrets/key", "x"), ctx.fs.read("../etc/passwd"),
                    ctx.fs.edit("docs/guide.md", "guide", "x")):  # fmt: skip
        with pytest.raises(FsError):
            await attempt
    await ctx.fs.list("docs")
    records = ledger.records()
    summary = [(r["op"], r["path"], r["outcome"], r["error_code"]) for r in records]
    assert summary == [
        ("read", "a.txt", "ok", None),
        ("edit", "a.txt", "ok", None),
        ("write", "secrets/key", "error", "denied"),
        ("read", "../etc/passwd", "error", "outside_root"),
        ("edit", "docs/guide.md", "error", "not_observed"),
        ("list", "docs", "ok", None),
    ]
    assert records[0]["after"] == read.version
    assert (records[1]["before"], records[1]["after"]) == (read.version, edited.version)
    assert all(r["owner"] == "agent" and r["workspace"] == "w1" for r in records)
    assert all(datetime.fromisoformat(str(r["time"])).tzinfo is not None for r in records)
    assert oct(os.stat(tmp_path / "audit.jsonl").st_mode & 0o777) == "0o600"
    assert all(json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines())
