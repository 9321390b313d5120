"""Every Python block of the README and ``docs/`` runs as written (``tests/snippets.py``).

A block marked ``<!-- fragment: REASON -->`` is not run, but must still be Python; one marked
``<!-- runs-with: HARNESS -->`` runs in that harness's tests (``nox -s harness``).
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest
from noxfile import HARNESSES

from tests.snippets import DOCUMENTS, ROOT, Block, python_blocks, run_block

BLOCKS = python_blocks()
RUN_HERE = [block for block in BLOCKS if block.fragment is None and block.runs_with is None]
FRAGMENTS = [block for block in BLOCKS if block.fragment is not None]


@pytest.mark.parametrize("block", RUN_HERE, ids=[block.id for block in RUN_HERE])
def test_the_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    run_block(block, tmp_path)


@pytest.mark.parametrize("block", FRAGMENTS, ids=[block.id for block in FRAGMENTS])
def test_a_fragment_is_python_all_the_same(block: Block) -> None:
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    compile(textwrap.dedent(block.code), block.id, "exec", flags=flags)


def test_every_marker_is_one_the_runner_knows_and_says_what_it_must() -> None:
    assert [block.id for block in BLOCKS if block.unknown_marker is not None] == []
    assert [block.id for block in FRAGMENTS if not block.fragment] == []  # a reason, always
    harnesses = [block.runs_with for block in BLOCKS if block.runs_with is not None]
    assert sorted(set(harnesses)) == sorted(HARNESSES)  # each harness's guide runs somewhere
    files = [block.file for block in BLOCKS if block.file is not None]
    assert all(re.fullmatch(r"[a-z_][a-z0-9_]*\.py", name) for name in files), files


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_python_fence_is_found(document: str) -> None:
    fences = re.findall(r"```py(?:thon)?\b", (ROOT / document).read_text())
    assert len(python_blocks(document)) == len(fences)  # none indented, none spelled ```py
