"""The built-in tools' schemas shipped in ``ctxfs/tools/schemas.json`` are the models' own.

After a change to a tool's arguments or result, write the file again with
``CTXFS_WRITE_SCHEMAS=1 uv run --locked pytest tests/tools/test_shipped_schemas.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pydantic
import pytest

import ctxfs.tools
from ctxfs.core import MemoryBackend
from ctxfs.core.fs import Fs
from ctxfs.tools import FsToolset, definitions
from ctxfs.tools.builtin import BUILTIN_TOOLS
from ctxfs.tools.definitions import SHIPPED_SCHEMAS, built_schema, schema_key

SHIPPED = Path(ctxfs.tools.__file__).with_name(SHIPPED_SCHEMAS)


def made_now() -> dict[str, Any]:
    models = [model for tool in BUILTIN_TOOLS for model in (tool.arguments, tool.result)]
    return {
        "pydantic": pydantic.VERSION,
        "schemas": {schema_key(model): built_schema(model) for model in models},
    }


def test_the_shipped_schemas_are_what_the_models_make() -> None:
    made = json.dumps(made_now(), indent=1) + "\n"  # in the models' order: fields are shown so
    if os.environ.get("CTXFS_WRITE_SCHEMAS") == "1":
        SHIPPED.write_text(made, encoding="utf-8")
    assert SHIPPED.read_text(encoding="utf-8") == made, (
        f"{SHIPPED} is out of date: write it again with "
        "`CTXFS_WRITE_SCHEMAS=1 uv run --locked pytest tests/tools/test_shipped_schemas.py`"
    )


async def definitions_of_every_tool() -> str:
    """The default definitions as JSON text (so the order of fields counts too)."""
    fs = Fs(MemoryBackend(), load_entrypoints=False)
    listed = await FsToolset().definitions(fs.context(owner="a"))
    return json.dumps(listed)


def forget_schemas() -> None:
    definitions._shipped_schemas.cache_clear()
    definitions._built_schema.cache_clear()


@pytest.mark.anyio
async def test_under_another_pydantic_version_the_schemas_are_built_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert set(definitions._shipped_schemas()) == set(made_now()["schemas"])
    shipped = await definitions_of_every_tool()
    forget_schemas()
    monkeypatch.setattr(pydantic, "VERSION", "0.0.0")
    try:
        assert definitions._shipped_schemas() == {}
        assert await definitions_of_every_tool() == shipped
    finally:
        forget_schemas()
