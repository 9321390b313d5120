"""Policies judge what a path resolves to: a link into a denied or read-only area is that area.

With ``deny=[".env", "secrets"]`` and ``read_only=["config"]``, and the in-root links
``envlink -> .env``, ``slink -> secrets`` and ``cfglink -> config``, nothing denied is
read, written, listed or searched through a link, and read-only files are not
changed through one; denied names are not even listed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctxfs.core import ErrorCode, Fs, InvalidArgument, NotEnabled
from ctxfs.core.policies import IntegrationSwitch, PathRules, StaticIntegrations
from ctxfs.local import LocalBackend
from ctxfs.local.ripgrep import find_ripgrep
from ctxfs.tools import FsToolset, ToolResult

pytestmark = pytest.mark.anyio


@pytest.fixture
def tools() -> FsToolset:
    return FsToolset()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "R"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "key").write_text("TOKEN=abc\n")
    (root / "config").mkdir()
    (root / "config" / "app.ini").write_text("debug = false\n")
    (root / ".env").write_text("TOKEN=abc\n")
    (root / "notes.md").write_text("no token here\n")
    os.symlink(".env", root / "envlink")
    os.symlink("secrets", root / "slink")
    os.symlink("config", root / "cfglink")
    return root


@pytest.fixture(params=[[".env", "secrets"], ["./.env", "./secrets/", "secrets//"]])
def fs(request: pytest.FixtureRequest, root: Path) -> Fs:
    rules = PathRules(deny=request.param, read_only=["config"])
    return Fs(LocalBackend(root, state_dir=root.parent / "state"), plugins=[rules])


async def call(fs: Fs, tools: FsToolset, name: str, **arguments: object) -> ToolResult:
    return await tools.execute(fs.context(owner="agent"), name, arguments)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("read", {"file_path": "envlink"}),
        ("read", {"file_path": "slink/key"}),
        ("list_dir", {"path": "slink"}),
        ("write", {"file_path": "slink/planted", "content": "x\n"}),
        ("glob", {"pattern": "*", "path": "slink"}),
        ("grep", {"pattern": "TOKEN", "path": "slink"}),
        ("grep", {"pattern": "TOKEN", "path": "envlink"}),
    ],
)
async def test_a_link_into_a_denied_area_is_denied(
    fs: Fs, tools: FsToolset, root: Path, tool: str, arguments: dict[str, object]
) -> None:
    ctx = fs.context(owner="agent")
    result = await tools.execute(ctx, tool, arguments)
    assert result.error_code is ErrorCode.DENIED, result.text
    assert "TOKEN" not in result.text
    assert not (root / "secrets" / "planted").exists()


@pytest.mark.parametrize("tool", ["read", "write"])
@pytest.mark.parametrize(
    "path",
    [
        "slink/key/x",  # a file there: not "not a directory"
        "slink/missing/x",
        "keylink/x",
        "dangling",  # a link to where nothing is: not "not found"
        "dangling/x",
        "loop/x",  # a loop there: not "links loop"
        "via_dotdot",  # config/../secrets/missing
        "via_link/x",  # cfglink/../secrets/missing: the .. steps back from config, a link's
    ],
)
async def test_a_path_that_stops_resolving_in_a_denied_area_is_denied(
    fs: Fs, tools: FsToolset, root: Path, tool: str, path: str
) -> None:
    os.symlink("secrets/key", root / "keylink")
    os.symlink("secrets/missing", root / "dangling")
    os.symlink("loop", root / "secrets" / "loop")
    os.symlink("secrets/loop", root / "loop")
    os.symlink("config/../secrets/missing", root / "via_dotdot")
    os.symlink("cfglink/../secrets/missing", root / "via_link")
    arguments = {"file_path": path} | ({"content": "x\n"} if tool == "write" else {})
    result = await call(fs, tools, tool, **arguments)
    assert result.error_code is ErrorCode.DENIED, result.text
    assert sorted(os.listdir(root / "secrets")) == ["key", "loop"]


@pytest.mark.parametrize(
    "arguments",
    [
        {"pattern": "nothing-matches"},
        {"pattern": "token", "output_mode": "count"},
        {"pattern": "nothing-matches", "glob": "**/id_rsa"},
        {"pattern": "nothing-matches", "hidden": True},
    ],
)
async def test_a_search_tells_nothing_of_how_many_files_are_denied(
    fs: Fs, tools: FsToolset, root: Path, arguments: dict[str, object]
) -> None:
    before = await call(fs, tools, "grep", **arguments)
    for name in ("id_rsa", "a.pem", "b.txt"):
        (root / "secrets" / name).write_text("no token here either\n")
    after = await call(fs, tools, "grep", **arguments)
    assert before.error_code is None, before.text
    assert (after.text, after.structured) == (before.text, before.structured)


async def test_rules_that_hide_nothing_keep_the_count_of_files_searched(
    tools: FsToolset, root: Path
) -> None:
    rules = PathRules(read_only=["**"])  # (serve --read-only)
    fs = Fs(LocalBackend(root, state_dir=root.parent / "state"), plugins=[rules])
    found = await call(fs, tools, "grep", pattern="nothing-matches")
    assert found.structured["files_searched"] >= 3, found.text
    assert not fs.hooks.hides


async def test_a_link_to_where_nothing_is_elsewhere_says_so(
    fs: Fs, tools: FsToolset, root: Path
) -> None:
    os.symlink("notes/missing", root / "dangling")
    assert (await call(fs, tools, "read", file_path="dangling")).error_code is ErrorCode.NOT_FOUND


async def test_denied_names_and_links_to_them_are_neither_listed_nor_searched(
    fs: Fs, tools: FsToolset
) -> None:
    ctx = fs.context(owner="agent")
    listing = await tools.execute(ctx, "list_dir", {})
    names = [entry["name"] for entry in listing.structured["entries"]]
    assert names == ["cfglink", "config", "notes.md"]
    found = await tools.execute(ctx, "glob", {"pattern": "**"})
    # ctxfs's own walk lists a link as an entry; ripgrep (where it runs) leaves links out
    links = (
        []
        if isinstance(fs.backend, LocalBackend) and fs.backend.ripgrep and find_ripgrep()
        else ["cfglink"]
    )
    assert found.structured["paths"] == [*links, "config/app.ini", "notes.md"]
    hits = await tools.execute(ctx, "grep", {"pattern": "TOKEN|token"})
    assert [m["path"] for m in hits.structured["matches"]] == ["notes.md"]


@pytest.mark.parametrize(
    ("source", "destination"),
    [
        ("notes.md", "slink/planted"),  # into a denied area, through a link
        ("notes.md", "cfglink/app.ini"),  # over a read-only file, through a link
        ("envlink", "stolen.txt"),  # a denied file out, through a link
        ("envlink", ".env"),  # one denied file by two paths: not even "the same file" is told
        ("cfglink/app.ini", "notes-config.ini"),  # a read-only file away
    ],
)
async def test_a_move_is_judged_on_both_paths_as_they_resolve(
    fs: Fs, tools: FsToolset, root: Path, source: str, destination: str
) -> None:
    ctx = fs.context(owner="agent")
    await tools.execute(ctx, "read", {"file_path": "notes.md"})
    await tools.execute(ctx, "read", {"file_path": "cfglink/app.ini"})
    before = _files(root)
    moved = await tools.execute(
        ctx, "move", {"source_path": source, "destination_path": destination, "overwrite": True}
    )
    assert moved.error_code is ErrorCode.DENIED, moved.text
    assert "TOKEN" not in moved.text
    assert _files(root) == before


@pytest.mark.parametrize(
    "patch",
    [
        "*** Add File: slink/planted\n+x",  # into a denied area, through a link
        "*** Update File: cfglink/app.ini\n@@\n-debug = false\n+debug = true",  # read-only
        "*** Update File: notes.md\n*** Move to: slink/notes.md\n@@\n-no token here\n+x",
        "*** Delete File: envlink",  # a denied file through a link
    ],
)
async def test_a_patch_is_judged_on_every_path_as_it_resolves(
    fs: Fs, tools: FsToolset, root: Path, patch: str
) -> None:
    ctx = fs.context(owner="agent")
    await tools.execute(ctx, "read", {"file_path": "notes.md"})
    await tools.execute(ctx, "read", {"file_path": "cfglink/app.ini"})
    before = _files(root)
    # a harmless first part: it must not be written either
    whole = f"*** Begin Patch\n*** Add File: fine.txt\n+ok\n{patch}\n*** End Patch"
    patched = await tools.execute(ctx, "apply_patch", {"input": whole})
    assert patched.error_code is ErrorCode.DENIED, patched.text
    assert "TOKEN" not in patched.text
    assert _files(root) == before


async def test_one_file_by_two_paths_in_one_patch_is_refused(
    fs: Fs, tools: FsToolset, root: Path
) -> None:
    ctx = fs.context(owner="agent")
    os.symlink("notes.md", root / "notelink")
    await tools.execute(ctx, "read", {"file_path": "notes.md"})
    before = _files(root)
    whole = (
        "*** Begin Patch\n*** Update File: notes.md\n@@\n-no token here\n+one\n"
        "*** Delete File: notelink\n*** End Patch"
    )
    patched = await tools.execute(ctx, "apply_patch", {"input": whole})
    assert patched.error_code is ErrorCode.INVALID_ARGUMENT, patched.text
    assert "names one file twice" in patched.text
    assert _files(root) == before


def _files(root: Path) -> dict[Path, bytes]:
    """Every file below *root* and what it holds."""
    return {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}


async def test_a_switched_off_capability_governs_what_a_link_reaches(root: Path) -> None:
    integrations = StaticIntegrations()
    switch = IntegrationSwitch(
        integrations,
        key_of=lambda path: "config" if path.startswith("config/") else None,
        keys=["config"],
        writing_tools=(),  # (the tools stay offered: the paths are the guard)
    )
    integrations.switch("config", on=False, workspace="w")
    fs = Fs(LocalBackend(root, state_dir=root.parent / "state"), plugins=[switch])
    ctx = fs.context(owner="agent", workspace="w")
    await ctx.fs.read("cfglink/app.ini")  # reads go on
    for attempt in (
        ctx.fs.edit("cfglink/app.ini", "false", "true"),
        ctx.fs.write("cfglink/new.ini", "x\n"),
    ):
        with pytest.raises(NotEnabled):
            await attempt
    assert sorted(os.listdir(root / "config")) == ["app.ini"]
    assert (root / "config" / "app.ini").read_text() == "debug = false\n"


async def test_a_link_into_a_read_only_area_reads_but_does_not_change(
    fs: Fs, tools: FsToolset, root: Path
) -> None:
    ctx = fs.context(owner="agent")
    read = await tools.execute(ctx, "read", {"file_path": "cfglink/app.ini"})
    assert not read.is_error
    edit = await tools.execute(
        ctx, "edit", {"file_path": "cfglink/app.ini", "old_string": "false", "new_string": "true"}
    )
    assert edit.error_code is ErrorCode.DENIED
    assert "read-only" in edit.text
    assert (root / "config" / "app.ini").read_text() == "debug = false\n"


@pytest.mark.parametrize("pattern", ["/etc", "/work/R/.env", "../x", "a/../b", "", "./", "//"])
def test_a_rule_that_could_never_match_is_refused(pattern: str) -> None:
    with pytest.raises(InvalidArgument, match="can never match a path inside the root"):
        PathRules(deny=[pattern])
    with pytest.raises(InvalidArgument):
        PathRules(read_only=[pattern])


async def test_errors_inside_a_denied_area_tell_nothing_of_it(root: Path, tools: FsToolset) -> None:
    # A file in the way, or a link out of the root, inside a denied directory: the answer
    # is "denied" either way, as for a path that does not exist there.
    os.symlink("/etc", root / "secrets" / "out")
    fs = Fs(
        LocalBackend(root, state_dir=root.parent / "state"), plugins=[PathRules(deny=["secrets"])]
    )
    for path in ("secrets/key/x", "secrets/out/passwd", "secrets/nothing/x"):
        result = await call(fs, tools, "read", file_path=path)
        assert result.error_code is ErrorCode.DENIED, (path, result.text)


async def test_denied_names_stay_hidden_through_a_linked_directory(
    root: Path, tools: FsToolset
) -> None:
    (root / "pub").mkdir()
    (root / "pub" / "secret.txt").write_text("TOKEN=abc\n")
    (root / "pub" / "open.txt").write_text("fine\n")
    os.symlink("pub", root / "lnk")
    rules = PathRules(deny=["pub/secret.txt"])
    fs = Fs(LocalBackend(root, state_dir=root.parent / "state"), plugins=[rules])
    listed = await call(fs, tools, "list_dir", path="lnk")
    assert [entry["name"] for entry in listed.structured["entries"]] == ["open.txt"]
    globbed = await call(fs, tools, "glob", pattern="*", path="lnk")
    assert globbed.structured["paths"] == ["lnk/open.txt"]


async def test_escaped_bytes_that_spell_a_name_are_that_name(root: Path, tools: FsToolset) -> None:
    # "cl\xc3\xa9.txt" is "clé.txt": a rule on the name cannot be slipped past by its bytes,
    # neither as the escapes results show nor as the lone surrogates os.fsdecode gives.
    fs = Fs(
        LocalBackend(root, state_dir=root.parent / "state"), plugins=[PathRules(deny=["**/clé*"])]
    )
    for spelling in ("cl\\xc3\\xa9.txt", "cl\udcc3\udca9.txt"):
        refused = await call(fs, tools, "write", file_path=spelling, content="x\n")
        assert refused.error_code is ErrorCode.DENIED, refused.text
    assert not (root / "clé.txt").exists()
    created = await call(fs, tools, "write", file_path="caf\\xc3\\xa9.txt", content="x\n")
    assert created.error_code is None, created.text
    assert (root / "café.txt").read_text() == "x\n"


async def test_what_changed_since_a_read_is_judged_where_the_path_resolves_now(
    root: Path, tools: FsToolset
) -> None:
    # The owner read d/key; then d became a link into the denied directory. Neither a
    # read nor the changes since (nor their diff) may show what the link reaches.
    (root / "d").mkdir()
    (root / "d" / "key").write_text("harmless\n")
    fs = Fs(
        LocalBackend(root, state_dir=root.parent / "state"),
        plugins=[PathRules(deny=["secrets"])],
        sessions="memory://",
    )
    assert not (await call(fs, tools, "read", file_path="d/key")).is_error
    (root / "d" / "key").unlink()
    (root / "d").rmdir()
    os.symlink("secrets", root / "d")
    assert (await call(fs, tools, "read", file_path="d/key")).error_code is ErrorCode.DENIED
    assert await fs.context(owner="agent").fs.changed() == []
    changes = await call(fs, tools, "changes")
    assert "TOKEN" not in changes.text, changes.text
    assert "TOKEN" not in str(changes.structured)
