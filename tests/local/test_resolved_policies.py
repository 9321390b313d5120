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

from ctxfs.core import ErrorCode, Fs, InvalidArgument
from ctxfs.core.policies import PathRules
from ctxfs.local import LocalBackend
from ctxfs.tools import FsToolset

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


async def call(fs: Fs, tools: FsToolset, name: str, **arguments: object) -> object:
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


async def test_denied_names_and_links_to_them_are_neither_listed_nor_searched(
    fs: Fs, tools: FsToolset
) -> None:
    ctx = fs.context(owner="agent")
    listing = await tools.execute(ctx, "list_dir", {})
    names = [entry["name"] for entry in listing.structured["entries"]]
    assert names == ["cfglink", "config", "notes.md"]
    found = await tools.execute(ctx, "glob", {"pattern": "**"})
    assert found.structured["paths"] == ["cfglink", "config/app.ini", "notes.md"]
    hits = await tools.execute(ctx, "grep", {"pattern": "TOKEN|token"})
    assert [m["path"] for m in hits.structured["matches"]] == ["notes.md"]


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
