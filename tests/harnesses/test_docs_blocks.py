"""The documentation's blocks marked ``runs-with`` this harness run as written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.snippets import Block, python_blocks, run_block

BLOCKS = [b for b in python_blocks() if b.runs_with == os.environ["CTXFS_HARNESS"]]


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_the_harness_docs_blocks_run(block: Block, tmp_path: Path) -> None:
    run_block(block, tmp_path)
