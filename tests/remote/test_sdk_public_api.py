"""The store drivers use their SDKs' public API only (s3fs, gcsfs, adlfs, asyncssh, fsspec).

A scan of fs-remote's sources: no attribute whose name starts with ``_`` (dunders
aside) is read off anything but ``self`` or ``cls``, nor named to ``getattr``,
``hasattr`` or ``setattr``; the drivers' own private state is on ``self``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from tests.tools.test_sdk_public_api import is_private, private_name_given

SOURCES = Path(__file__).resolve().parents[2] / "packages" / "fs-remote" / "src"


def private_reads(source: str) -> list[str]:
    """Each private name *source* reads off another object, as ``line N: what``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif (given := private_name_given(node)) is not None:
            found.append(given)
    return found


@pytest.mark.parametrize(
    "path", sorted(SOURCES.rglob("*.py")), ids=lambda path: str(path.relative_to(SOURCES))
)
def test_a_driver_reads_no_private_name_of_another_object(path: Path) -> None:
    assert private_reads(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("self.fs._location", ["line 1: self.fs._location"]),
        ("getattr(fs, '_s3creator', None)", ["line 1: getattr of _s3creator"]),
        ("self._session; cls._cache; fs.base; fs.__class__", []),
    ],
)
def test_the_scan_finds_what_it_is_for(source: str, expected: list[str]) -> None:
    assert private_reads(source) == expected
