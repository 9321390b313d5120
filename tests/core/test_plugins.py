from __future__ import annotations

import sys
import types
from collections.abc import AsyncIterator, Callable, Generator, Sequence
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel
import pluggy
import pytest

from ctxfs.core import (
    ABSENT,
    Context,
    Denied,
    ErrorCode,
    Fs,
    FsError,
    MemoryBackend,
    NotObserved,
    Operation,
    Version,
    hookimpl,
    hookspec,
)
from ctxfs.core.plugins import DISABLE_ENV, FILE_CONTEXT_PLUGIN
from tests.conftest import InstallDist

pytestmark = pytest.mark.anyio

POLICY_SOURCE = """
    from ctxfs.core import Denied, hookimpl

    @hookimpl
    def ctxfs_authorize(ctx, op):
        if op.kind.mutates and op.path.startswith("locked/"):
            return Denied(f"{op.path} is read-only", path=op.path)
        return None
"""


class LockSpy:
    """Counts mutation locks taken, as a plugin would see them."""

    def __init__(self) -> None:
        self.taken: list[str] = []

    @hookimpl
    def ctxfs_mutation_lock(self, ctx: Context, op: Operation) -> None:
        self.taken.append(op.path)


@pytest.fixture
def readonly_policy(install_dist: InstallDist) -> str:
    install_dist(
        "ctxfs-readonly-policy",
        modules={"ctxfs_readonly_policy": POLICY_SOURCE},
        entry_points={"ctxfs.plugins": {"readonly": "ctxfs_readonly_policy"}},
    )
    return "ctxfs_readonly_policy"


async def test_entry_point_policy_denies_with_nothing_locked_or_written(
    readonly_policy: str,
) -> None:
    backend, spy = MemoryBackend(), LockSpy()
    await backend.write("locked/a.txt", b"original\n", expect=ABSENT)
    fs = Fs(backend, plugins=[spy])
    assert fs.plugin_manager.get_plugin("readonly") is sys.modules[readonly_policy]
    ctx = fs.context(owner="agent-1")
    await ctx.fs.read("locked/a.txt")
    backend.calls.clear()

    for attempt in (
        ctx.fs.write("locked/a.txt", "new\n"),
        ctx.fs.edit("locked/a.txt", "original", "changed"),
        ctx.fs.write("locked/new.txt", "new\n"),
        ctx.fs.delete("locked/a.txt"),
    ):
        with pytest.raises(Denied) as caught:
            await attempt
        assert caught.value.code is ErrorCode.DENIED
        assert isinstance(caught.value, PermissionError)

    assert spy.taken == []
    assert backend.calls == {}, "the store was not even read"
    assert (await backend.read("locked/a.txt")).data == b"original\n"
    await ctx.fs.write("free/b.txt", "ok\n")
    assert spy.taken == ["free/b.txt"]


async def test_blocked_plugin_is_never_imported(
    readonly_policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DISABLE_ENV, "something-else, readonly")
    fs = Fs(MemoryBackend())
    assert fs.plugin_manager.is_blocked("readonly")
    assert readonly_policy not in sys.modules
    await fs.context(owner="a").fs.write("locked/a.txt", "allowed now\n")


async def test_entry_points_can_be_skipped(readonly_policy: str) -> None:
    fs = Fs(MemoryBackend(), load_entrypoints=False)
    assert fs.plugin_manager.get_plugin("readonly") is None
    await fs.context(owner="a").fs.write("locked/a.txt", "allowed\n")


class AsyncDeny:
    @hookimpl
    async def ctxfs_authorize(self, ctx: Context, op: Operation) -> FsError | None:
        await anyio.sleep(0.01)
        return Denied("async policy says no", path=op.path)


class SyncAllow:
    def __init__(self) -> None:
        self.votes = 0

    @hookimpl
    def ctxfs_authorize(self, ctx: Context, op: Operation) -> None:
        self.votes += 1


class AsyncAllow:
    def __init__(self) -> None:
        self.votes = 0

    @hookimpl
    async def ctxfs_authorize(self, ctx: Context, op: Operation) -> None:
        await anyio.lowlevel.checkpoint()
        self.votes += 1


@pytest.mark.parametrize("deny_first", [True, False])
async def test_async_refusal_wins_whatever_the_registration_order(deny_first: bool) -> None:
    deny, allow, async_allow = AsyncDeny(), SyncAllow(), AsyncAllow()
    plugins = [deny, allow, async_allow] if deny_first else [allow, async_allow, deny]
    backend = MemoryBackend()
    fs = Fs(backend, plugins=plugins, load_entrypoints=False)
    with pytest.raises(Denied, match="async policy says no"):
        await fs.context(owner="a").fs.write("x.txt", "x\n")
    assert (allow.votes, async_allow.votes) == (1, 1), "every vote was collected and awaited"
    assert backend.calls["write"] == 0


async def test_a_raised_refusal_also_refuses() -> None:
    class Raiser:
        @hookimpl
        def ctxfs_authorize(self, ctx: Context, op: Operation) -> None:
            raise Denied("raised", path=op.path)

    fs = Fs(MemoryBackend(), plugins=[Raiser()], load_entrypoints=False)
    with pytest.raises(Denied, match="raised"):
        await fs.context(owner="a").fs.write("x.txt", "x\n")


async def test_a_vote_that_is_not_an_error_is_a_plugin_bug() -> None:
    class Confused:
        @hookimpl
        def ctxfs_authorize(self, ctx: Context, op: Operation) -> object:
            return False

    fs = Fs(MemoryBackend(), plugins=[Confused()], load_entrypoints=False)
    with pytest.raises(TypeError, match="must be None or an FsError"):
        await fs.context(owner="a").fs.list()


def test_an_implementation_without_a_spec_fails_loudly() -> None:
    class Typo:
        @hookimpl
        def ctxfs_authorise(self, ctx: Context, op: Operation) -> None: ...

    with pytest.raises(pluggy.PluginValidationError, match="ctxfs_authorise"):
        Fs(MemoryBackend(), plugins=[Typo()], load_entrypoints=False)


def test_an_implementation_with_unknown_arguments_fails_loudly() -> None:
    class Wrong:
        @hookimpl
        def ctxfs_authorize(self, ctx: Context, op: Operation, user: str) -> None: ...

    with pytest.raises(pluggy.PluginValidationError):
        Fs(MemoryBackend(), plugins=[Wrong()], load_entrypoints=False)


async def test_each_fs_has_its_own_plugin_manager() -> None:
    denied = Fs(MemoryBackend(), plugins=[AsyncDeny()], load_entrypoints=False)
    free = Fs(MemoryBackend(), load_entrypoints=False)
    assert denied.plugin_manager is not free.plugin_manager
    await free.context(owner="a").fs.write("x.txt", "x\n")
    with pytest.raises(Denied):
        await denied.context(owner="a").fs.write("x.txt", "x\n")


def test_packages_add_hooks_through_ctxfs_addhooks() -> None:
    specs = types.ModuleType("extra_specs")

    @hookspec
    def ctxfs_review_needed(ctx: Context, path: str) -> bool | None:
        """Say whether a change to *path* needs a person's review."""

    specs.ctxfs_review_needed = ctxfs_review_needed  # type: ignore[attr-defined]

    class Reviewer:  # registered before the package that declares the hook
        @hookimpl
        def ctxfs_review_needed(self, ctx: Context, path: str) -> bool | None:
            return True if path.startswith("infra/") else None

    class ReviewPackage:
        @hookimpl
        def ctxfs_addhooks(self, pluginmanager: pluggy.PluginManager) -> None:
            pluginmanager.add_hookspecs(specs)

    fs = Fs(MemoryBackend(), plugins=[Reviewer(), ReviewPackage()], load_entrypoints=False)
    ctx = fs.context(owner="a")
    assert fs.plugin_manager.hook.ctxfs_review_needed(ctx=ctx, path="infra/a.tf") == [True]


# -- nothing takes the guard away -----------------------------------------------------------


async def _guarded(fs: Fs) -> None:
    """The guard holds on *fs*: an owner that never read a file cannot change it."""
    await fs.backend.write("a.txt", b"one\n", expect=ABSENT)
    stranger = fs.context(owner="stranger")
    with pytest.raises(NotObserved):
        await stranger.fs.edit("a.txt", "one", "two")
    with pytest.raises(NotObserved):
        await stranger.fs.write("a.txt", "two\n")
    with pytest.raises(NotObserved):
        await stranger.fs.delete("a.txt")
    assert (await fs.backend.read("a.txt")).data == b"one\n"


async def test_blocking_the_guard_by_the_environment_takes_nothing_away(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(DISABLE_ENV, f"some-other-plugin,{FILE_CONTEXT_PLUGIN}")
    fs = Fs(MemoryBackend(), load_entrypoints=False)
    assert fs.plugin_manager.get_plugin(FILE_CONTEXT_PLUGIN) is None  # pluggy let it go
    await _guarded(fs)


@pytest.mark.parametrize(
    "remove",
    [
        lambda fs: fs.plugin_manager.set_blocked(FILE_CONTEXT_PLUGIN),
        lambda fs: fs.plugin_manager.unregister(name=FILE_CONTEXT_PLUGIN),
        lambda fs: fs.plugin_manager.unregister(fs.file_context),
    ],
    ids=["set_blocked", "unregister-by-name", "unregister-the-plugin"],
)
async def test_blocking_or_unregistering_the_guard_takes_nothing_away(
    remove: Callable[[Fs], object],
) -> None:
    fs = Fs(MemoryBackend(), load_entrypoints=False)
    assert fs.plugin_manager.get_plugin(FILE_CONTEXT_PLUGIN) is fs.file_context
    remove(fs)
    assert fs.plugin_manager.get_plugin(FILE_CONTEXT_PLUGIN) is None
    await _guarded(fs)


async def test_other_plugins_can_still_be_blocked_and_unregistered() -> None:
    deny = AsyncDeny()
    fs = Fs(MemoryBackend(), plugins=[deny], load_entrypoints=False)
    fs.plugin_manager.unregister(deny)
    await fs.context(owner="a").fs.write("x.txt", "x\n")
    fs.plugin_manager.set_blocked("something-else")
    assert fs.plugin_manager.is_blocked("something-else")


class Recorder:
    def __init__(self) -> None:
        self.events: list[str] = []

    @hookimpl
    def ctxfs_authorize(self, ctx: Context, op: Operation) -> None:
        self.events.append(f"authorize {op.kind}")

    @hookimpl
    def ctxfs_mutation_lock(self, ctx: Context, op: Operation) -> object:
        @asynccontextmanager
        async def lock() -> AsyncIterator[None]:
            self.events.append("lock")
            yield
            self.events.append("unlock")

        return lock()

    @hookimpl
    async def ctxfs_check_version(
        self, ctx: Context, op: Operation, current: Version | None
    ) -> None:
        self.events.append(f"check {'new' if current is None else 'existing'}")

    @hookimpl
    def ctxfs_committed(
        self, ctx: Context, op: Operation, before: Version | None, after: Version | None
    ) -> None:
        self.events.append(f"committed {before is None} {after is None}")

    @hookimpl
    def ctxfs_observed(self, ctx: Context, path: str, version: Version, complete: bool) -> None:
        self.events.append(f"observed {complete}")

    @hookimpl
    def ctxfs_finished(
        self,
        ctx: Context,
        op: Operation,
        error: FsError | None,
        before: Version | None,
        after: Version | None,
    ) -> None:
        self.events.append(f"finished {op.kind} {error.code if error else 'ok'}")


async def test_hooks_run_in_the_documented_order() -> None:
    recorder = Recorder()
    fs = Fs(MemoryBackend(), plugins=[recorder], load_entrypoints=False)
    ctx = fs.context(owner="a")
    await ctx.fs.write("a.txt", "one\ntwo\n")
    await ctx.fs.read("a.txt", limit=1)
    await ctx.fs.edit("a.txt", "one", "uno")
    await ctx.fs.delete("a.txt")
    with pytest.raises(FsError):
        await ctx.fs.read("../escape")
    assert recorder.events == [
        "authorize write", "lock", "check new", "committed True False", "unlock",
        "finished write ok",
        "authorize read", "observed False", "finished read ok",
        "authorize edit", "lock", "check existing", "committed False False", "unlock",
        "finished edit ok",
        "authorize delete", "lock", "check existing", "committed False True", "unlock",
        "finished delete ok",
        "finished read outside_root",
    ]  # fmt: skip


class Neuter:
    """A plugin that tries to take the guard's votes and locks away with hook wrappers."""

    @hookimpl(wrapper=True)
    def ctxfs_check_version(
        self, ctx: Context, op: Operation, current: Version | None
    ) -> Generator[None, list[object], list[object]]:
        votes = yield
        return [vote for vote in votes if vote is None]

    @hookimpl(wrapper=True)
    def ctxfs_mutation_lock(
        self, ctx: Context, op: Operation
    ) -> Generator[None, list[object], list[object]]:
        yield
        return []


async def test_hook_wrappers_cannot_take_the_guard_away() -> None:
    await _guarded(Fs(MemoryBackend(), plugins=[Neuter()], load_entrypoints=False))


async def test_a_long_listing_is_asked_about_in_batches_and_all_of_it_is_heard() -> None:
    class HidesSevens:
        def __init__(self) -> None:
            self.asked: list[int] = []

        @hookimpl
        def ctxfs_hidden(self, ctx: Context, paths: Sequence[str]) -> set[str]:
            self.asked.append(len(paths))
            return {path for path in paths if path.endswith("7")}

    backend, plugin = MemoryBackend(), HidesSevens()
    for number in range(5_000):
        await backend.write(f"d/f{number}", b"", expect=ABSENT)
    async with Fs(backend, plugins=[plugin], load_entrypoints=False) as fs:
        listed = await fs.context(owner="agent").fs.list("d")
    assert len(listed) == 4_500
    assert not [entry for entry in listed if entry.path.endswith("7")]
    assert max(plugin.asked) <= 2_000 < sum(plugin.asked)  # (each entry: two spellings)
