"""ctxfs uses the ``mcp`` SDK's public API only: a scan of the shipped sources.

Private is any module or name of the SDK (``mcp``, ``mcp_types``) whose own
name starts with ``_`` (dunders aside). The scan finds imports of them; in a
subclass of an SDK class, any such name defined or read on ``self`` (it would
override or touch the SDK's own); and, in a module that imports the SDK, an
attribute of such a name read off anything but ``self`` or ``cls``
(``getattr`` with a literal name too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SDK = frozenset({"mcp", "mcp_types"})


def private_sdk_uses(source: str) -> list[str]:
    """What *source* uses of the SDK that is not public, one ``line N: what`` each."""
    tree = ast.parse(source)
    imported, found = _imports(tree)
    return found + _uses(tree, imported) if imported else found


def _imports(tree: ast.AST) -> tuple[set[str], list[str]]:
    """The local names of what *tree* imports from the SDK, and its imports of private parts."""
    imported: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            pairs = [
                (alias.name, (alias.asname or alias.name).partition(".")[0]) for alias in node.names
            ]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            pairs = [
                (f"{node.module}.{alias.name}", alias.asname or alias.name) for alias in node.names
            ]
        else:
            continue
        for dotted, local in pairs:
            if dotted.partition(".")[0] in SDK:
                imported.add(local)
                if any(map(is_private, dotted.split("."))):
                    found.append(f"line {node.lineno}: import of {dotted}")
    return imported, found


def _uses(tree: ast.AST, imported: set[str]) -> list[str]:
    """Private names in subclasses of *imported* classes; private attributes read elsewhere."""
    found = []
    subclassed: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(_root(base) in imported for base in node.bases):
            inside = {each for item in node.body for each in ast.walk(item)}
            subclassed |= inside
            named = sorted(filter(None, map(_defined_or_read, inside)))
            found += [
                f"line {line}: {node.name}.{name} in a subclass of an SDK class"
                for line, name in named
                if is_private(name)
            ]
    for node in ast.walk(tree):
        if node in subclassed:
            continue
        if (
            isinstance(node, ast.Attribute)
            and is_private(node.attr)
            and _root(node.value) not in ("self", "cls")
        ):
            found.append(f"line {node.lineno}: private attribute {node.attr}")
        elif (given := private_name_given(node)) is not None:
            found.append(given)
    return found


def private_name_given(node: ast.AST) -> str | None:
    """``line N: getattr of _name`` when *node* names a private attribute to ``getattr`` and kin."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr", "setattr")
        and len(node.args) > 1
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
        and is_private(node.args[1].value)
    ):
        return f"line {node.lineno}: {node.func.id} of {node.args[1].value}"
    return None


def _defined_or_read(node: ast.AST) -> tuple[int, str] | None:
    """The line and name a method definition defines, or an attribute of ``self``/``cls`` reads."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return node.lineno, node.name
    if isinstance(node, ast.Attribute) and _root(node) in ("self", "cls"):
        return node.lineno, node.attr
    return None


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _root(node: ast.expr) -> str | None:
    """The name an expression such as ``a.b.c`` or ``a.b(c)`` starts from."""
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


SOURCES = sorted(ROOT.glob("packages/*/src/**/*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_the_sources_use_the_sdks_public_api_only(path: Path) -> None:
    assert private_sdk_uses(path.read_text(encoding="utf-8")) == []


def test_the_mcp_server_wing_is_scanned() -> None:
    scanned = {path.name for path in SOURCES}
    assert {"mcpserver.py", "httpserver.py", "httpsessions.py", "stdio.py", "serve.py"} <= scanned


PRIVATE_USES = {
    "from mcp.server._x import y": "import of mcp.server._x.y",
    "import mcp.server._otel": "import of mcp.server._otel",
    "import mcp_types._x as t": "import of mcp_types._x",
    "from mcp.server.lowlevel import _ping_handler": "import of mcp.server.lowlevel._ping_handler",
    "from mcp.server import ServerRequestContext\ndef f(r: ServerRequestContext) -> object:\n"
    "    return r.session._connection": "private attribute _connection",
    "import mcp\ndef f(r: object) -> object:\n    return getattr(r, '_connection', None)": (
        "getattr of _connection"
    ),
    "from mcp.server.streamable_http_manager import StreamableHTTPSessionManager as M\n"
    "class Capped(M):\n    def _admit_session(self) -> None: ...": (
        "Capped._admit_session in a subclass of an SDK class"
    ),
    "import mcp.server\nclass S(mcp.server.Server):\n    async def _handle_discover(self) -> None: ...": (
        "S._handle_discover in a subclass of an SDK class"
    ),
    "from mcp.server.streamable_http_manager import StreamableHTTPSessionManager as M\n"
    "class Capped(M):\n    def count(self) -> int:\n        return len(self._server_instances)": (
        "Capped._server_instances in a subclass of an SDK class"
    ),
}


@pytest.mark.parametrize(("source", "said"), PRIVATE_USES.items())
def test_each_kind_of_private_use_is_found(source: str, said: str) -> None:
    (found,) = private_sdk_uses(source)
    assert found.endswith(said)


def test_public_uses_and_ctxfs_own_private_names_pass() -> None:
    source = (
        "from mcp.server import Server\n"
        "from mcp.server.streamable_http import MCP_SESSION_ID_HEADER\n"
        "import mcp.types\n"
        "from ctxfs.core import _internal\n"
        "class Mine(Server):\n"
        "    def __init__(self) -> None:\n"
        "        self._own = mcp.types.Tool\n"
        "    def _helper(self) -> object:\n"
        "        return self._own\n"
    )
    assert private_sdk_uses(source) == [
        "line 7: Mine._own in a subclass of an SDK class",
        "line 8: Mine._helper in a subclass of an SDK class",
        "line 9: Mine._own in a subclass of an SDK class",
    ]
    assert private_sdk_uses(source.replace("(Server)", "")) == []
