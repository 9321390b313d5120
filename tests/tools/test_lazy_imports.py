"""Starting ctxfs imports nothing that only some calls need, until a call needs it.

Each case runs a fresh interpreter with ``-X importtime``, which names on
stderr every module the process imports, whenever it does.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import anyio
import pytest
from benchmarks.cold_start import BARE_SERVER
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

import ctxfs.tools
import ctxfs.tools.notebooks
from tests.tools.media import pdf

pytestmark = pytest.mark.anyio

ONLY_SOME_CALLS = (
    "pypdf",  # PDF pages
    "cryptography",  # encrypted PDFs
    "PIL",  # images
    "ctxfs.tools.notebooks.cells",  # notebooks: edited
    "ctxfs.tools.notebooks.view",  # notebooks: read
    "ctxfs.tools.builtin.apply_patch.patches",  # patch formats
    "charset_normalizer",  # legacy encodings
    "regex",  # grep patterns
    "ctxfs.tools.ignorefiles",  # ignore files
    "redis",  # observations in Redis
    "sqlite3",  # observations in SQLite
    "uvicorn",  # HTTP
    "starlette",
    "httpx",
    "httpx2",
)
"""What a text read needs none of (with ``--observations memory://``: no SQLite)."""
CLI = (sys.executable, "-X", "importtime", "-m", "ctxfs.tools.cli")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("text\n")
    (tmp_path / "paper.pdf").write_bytes(pdf("a page"))
    return tmp_path


def imported(stderr: str) -> set[str]:
    """The modules a process run with ``-X importtime`` imported, read from its *stderr*."""
    return {
        line.rpartition("|")[2].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and not line.endswith("imported package")
    }


def loaded(modules: set[str], *names: str) -> list[str]:
    """Which of *names* (packages or modules) are among *modules*."""
    return [
        name
        for name in names
        if any(module == name or module.startswith(f"{name}.") for module in modules)
    ]


def run(*argv: str) -> set[str]:
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return imported(done.stderr)


async def served(argv: list[str], stderr: Path) -> set[str]:
    """What server *argv* imports to list its tools and read ``notes.txt`` for a client."""
    server = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    with stderr.open("w") as errlog:
        async with Client(stdio_client(server, errlog=errlog), mode="legacy") as client:
            await client.list_tools()
            result = await client.call_tool("read", {"file_path": "notes.txt"})
    assert not result.is_error
    return imported(await anyio.Path(stderr).read_text())


def test_importing_the_cli_imports_no_store_no_tool_and_no_sdk() -> None:
    modules = run(sys.executable, "-X", "importtime", "-c", "import ctxfs.tools.cli")
    assert loaded(modules, "mcp", "ctxfs.core", "ctxfs.tools.builtin", *ONLY_SOME_CALLS) == []


def test_importing_the_core_and_a_backend_reads_no_package_metadata() -> None:
    # (importlib.metadata, with email and zipfile, waits for an open by URL or a plugin's load)
    modules = run(sys.executable, "-X", "importtime", "-c", "import ctxfs.core, ctxfs.local")
    assert loaded(modules, "importlib.metadata", "email", *ONLY_SOME_CALLS) == []


@pytest.mark.parametrize("module", ["ctxfs.core", "ctxfs.tools"])
def test_the_version_of_each_package_is_its_distributions(module: str) -> None:
    package = importlib.import_module(module)
    distribution = {"ctxfs.core": "ctxfs-core", "ctxfs.tools": "ctxfs-tools"}[module]
    assert package.__version__ == importlib.metadata.version(distribution)


def test_a_call_reading_text_imports_neither(root: Path) -> None:
    read = ("read", '{"file_path": "notes.txt"}')
    modules = run(
        *CLI,
        "call",
        "--root",
        str(root),
        "--observations",
        "memory://",
        "--sessions",
        "memory://",
        *read,
    )
    assert loaded(modules, "mcp", *ONLY_SOME_CALLS) == []


def test_a_call_reading_a_pdf_imports_pypdf_then(root: Path) -> None:
    read = ("read", '{"file_path": "paper.pdf"}')
    modules = run(
        *CLI,
        "call",
        "--root",
        str(root),
        "--observations",
        "memory://",
        "--sessions",
        "memory://",
        *read,
    )
    assert loaded(modules, "pypdf", "mcp") == ["pypdf"]


async def test_serving_a_text_read_over_stdio_imports_only_what_the_sdk_does(
    root: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "bare_server.py"
    bare.write_text(BARE_SERVER)
    serve = ("serve", "--root", str(root), "--observations", "memory://", "--sessions", "memory://")
    ours = await served([*CLI, *serve], tmp_path / "ours.err")
    theirs = await served(
        [sys.executable, "-X", "importtime", str(bare), str(root)], tmp_path / "theirs.err"
    )
    assert "ctxfs.tools.builtin.read" in ours
    assert loaded(ours - theirs, *ONLY_SOME_CALLS) == []


@pytest.mark.parametrize("package", [ctxfs.tools, ctxfs.tools.notebooks])
def test_every_name_a_package_exports_is_there(package: ModuleType) -> None:
    assert [name for name in package.__all__ if not hasattr(package, name)] == []
    assert set(dir(package)) >= set(package.__all__)


def test_the_notebook_names_loaded_on_first_use_are_their_modules_own() -> None:
    exports = ctxfs.tools.notebooks._EXPORTS  # a list kept by hand beside each module's
    homes = {home: importlib.import_module(f"ctxfs.tools.notebooks.{home}") for home in exports}
    assert {home: sorted(names) for home, names in exports.items()} == {
        home: sorted(module.__all__) for home, module in homes.items()
    }
