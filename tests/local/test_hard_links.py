"""Files with other names (hard links): refused, or read and searched but never changed.

A uv-installed ``.venv`` is made of hard links to uv's cache; ``read_hard_links`` lets a
harness search it, while a write, an edit or a delete through such a name stays refused
(the other name may be outside the workspace, and a change would reach it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctxfs.core import Denied, ErrorCode, Fs
from ctxfs.local import LocalBackend
from ctxfs.tools import FsToolset
from tests.tools.conftest import skip_without_ripgrep

pytestmark = pytest.mark.anyio


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root whose ``linked.py`` is also ``outside.py``, beyond the root."""
    (tmp_path / "root").mkdir()
    outside = tmp_path / "outside.py"
    outside.write_text("needle = 1\n")
    os.link(outside, tmp_path / "root" / "linked.py")
    (tmp_path / "root" / "plain.py").write_text("needle = 2\n")
    return tmp_path / "root"


@pytest.mark.parametrize("ripgrep", [False, True])
async def test_hard_links_are_refused_unless_read_is_allowed(
    root: Path, tmp_path: Path, ripgrep: bool
) -> None:
    from ctxfs.local.ripgrep import find_ripgrep  # noqa: PLC0415

    if ripgrep and find_ripgrep() is None:
        skip_without_ripgrep()
    tools = FsToolset()
    for read_hard_links in (False, True):
        backend = LocalBackend(
            root, state_dir=tmp_path / "state", ripgrep=ripgrep, read_hard_links=read_hard_links
        )
        async with Fs(backend, load_entrypoints=False) as fs:
            ctx = fs.context(owner="agent")
            found = await tools.execute(ctx, "grep", {"pattern": "needle"})
            paths = [match["path"] for match in found.structured["matches"]]
            assert paths == (["linked.py", "plain.py"] if read_hard_links else ["plain.py"])
            for mode in ("content", "count"):
                counted = await tools.execute(
                    ctx, "grep", {"pattern": "needle", "output_mode": mode}
                )
                skipped = counted.structured.get("skipped", {})  # (empty: left out)
                assert skipped == ({} if read_hard_links else {"hard_linked": 1})
            if not read_hard_links:
                assert "1 file skipped: 1 hard-linked" in found.text
            read = await tools.execute(ctx, "read", {"file_path": "linked.py"})
            if not read_hard_links:
                assert read.error_code is ErrorCode.DENIED
                assert "cannot be read or changed" in read.text
                continue
            assert read.error_code is None, read.text
            edit = {"file_path": "linked.py", "old_string": "1", "new_string": "3"}
            for tool, arguments in (
                ("edit", edit),
                ("write", {"file_path": "linked.py", "content": "x\n"}),
            ):
                refused = await tools.execute(ctx, tool, arguments)
                assert refused.error_code is ErrorCode.DENIED, refused.text
                assert "cannot be changed" in refused.text
            with pytest.raises(Denied):
                await ctx.fs.delete("linked.py")
    assert (tmp_path / "outside.py").read_text() == "needle = 1\n"
    assert (root / "linked.py").exists()
