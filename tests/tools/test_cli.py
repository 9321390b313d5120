"""The ``ctxfs`` command: one clear line and a non-zero status on failure."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import socket
import sqlite3
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from ctxfs.tools import __version__
from ctxfs.tools.cli import MCP_BEFORE, MCP_NEEDED, STORE_PACKAGES, main
from tests.tools.media import image

CTXFS = str(Path(sys.executable).with_name("ctxfs"))  # the installed console script
ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CTXFS, *args], capture_output=True, text=True, timeout=120, check=False)


def test_version() -> None:
    result = run("--version")
    assert (result.returncode, result.stdout) == (0, f"ctxfs {__version__}\n")


def test_call_prints_what_the_model_would_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    assert main(["call", "--root", str(tmp_path), "read", '{"file_path": "a.txt"}']) == 0
    assert capsys.readouterr().out == "1 one\n2 two\n(end of file; lines 1-2 of 2)\n"
    assert main(["call", "--root", str(tmp_path), "--json", "list_dir", '{"path": ""}']) == 0
    data = json.loads(capsys.readouterr().out)
    assert [entry["name"] for entry in data["entries"]] == ["a.txt"]


def test_text_a_terminal_cannot_encode_is_escaped_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "u.txt").write_text("café ✓\n")
    environment = {**os.environ, "PYTHONIOENCODING": "ascii"}
    for options in ([], ["--json"]):
        done = subprocess.run(
            [CTXFS, "call", "--root", str(tmp_path), *options, "read", '{"file_path": "u.txt"}'],
            capture_output=True,
            text=True,
            env=environment,
            timeout=120,
            check=False,
        )
        assert (done.returncode, done.stderr) == (0, "")
        if options:  # JSON escapes them itself
            assert json.loads(done.stdout)["content"] == "café ✓\n"
        else:
            assert "caf\\xe9 \\u2713" in done.stdout


def test_a_call_failure_is_a_line_with_the_code_then_what_helps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    write = '{"file_path": "a.txt", "content": "x"}'
    assert main(["call", "--root", str(tmp_path), "write", write]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    first, *rest = captured.err.splitlines()
    assert first.startswith("ctxfs: error [not_observed]: ")
    assert rest == ["Next: Read the file first, then retry the change."]
    assert main(["call", "--root", str(tmp_path), "--json", "write", write]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"{first}\n"  # the rest is in the JSON
    assert json.loads(captured.out)["error"]["hint"] == rest[0].removeprefix("Next: ")
    assert (tmp_path / "a.txt").read_text() == "one\n"
    # a name that is not UTF-8 reads as the model reads it, once
    assert main(["call", "--root", str(tmp_path), "read", '{"file_path": "\\\\xfe.txt"}']) == 1
    first, *_ = capsys.readouterr().err.splitlines()
    assert first == "ctxfs: error [not_found]: \\xfe.txt does not exist"


@pytest.mark.slow
def test_call_grep_with_a_catastrophic_pattern_fails_instead_of_hanging(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a" * 60 + "!\n")
    # a lookahead keeps the search off ripgrep (which has no backtracking to run away)
    result = run("call", "--root", str(tmp_path), "grep", '{"pattern": "(?=a)(a|aa)+$"}')
    assert result.returncode == 1
    assert result.stderr.startswith("ctxfs: error [invalid_argument]: the pattern took more than")
    linear = run("call", "--root", str(tmp_path), "grep", '{"pattern": "(a|aa)+$"}')
    assert (linear.returncode, linear.stdout) == (0, "(no match in 1 file)\n") or (
        linear.returncode == 1 and "the pattern took more than" in linear.stderr
    )  # ripgrep where it runs confined, else ctxfs's own search


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["call", "--root", "{root}", "read", "{{not json"], "the arguments are not JSON"),
        (["call", "--root", "{root}", "read", '"a.txt"'], "the arguments must be a JSON object"),
        (["call", "--root", "{root}", "read", "[]"], "the arguments must be a JSON object"),
        (["call", "--root", "{root}", "read", "null"], "the arguments must be a JSON object"),
        (["call", "--root", "{root}/missing", "read", "{{}}"], "ctxfs: error ["),
        (
            ["call", "--url", "nosuch://x", "read", "{{}}"],
            "no installed package provides the 'nosuch' scheme",
        ),
        (["serve", "--root", "{root}", "--plugin", "no.such.module:thing"], "cannot load plugin"),
        *(
            (
                [
                    "serve",
                    *(["--root", "{root}"] if "url" not in option else []),
                    "--transport",
                    "http",
                    "--workers",
                    "2",
                    option,
                ],
                f"{option.partition('=')[0]} memory:// is each worker's own",
            )
            for option in (
                "--observations=memory://",
                "--sessions=MEMORY://shared",
                "--url=memory://b",
            )
        ),
    ],
)
def test_usage_errors_are_one_line_and_status_2(
    argv: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([arg.format(root=tmp_path) for arg in argv]) == 2
    err = capsys.readouterr().err
    assert said in err
    assert err.count("\n") == 1


PLUGINS = {
    "misspelled": "from ctxfs.core import hookimpl\nclass P:\n    @hookimpl\n"
    "    def ctxfs_authorise(self, ctx, op): ...\nP = P()\n",
    "wrong_arguments": "from ctxfs.core import hookimpl\nclass P:\n    @hookimpl\n"
    "    def ctxfs_authorize(self, nonsense): ...\nP = P()\n",
    "raising": "raise RuntimeError('boom')\n",
    "broken": "def (\n",
    "noisy": "print('IMPORT-TIME PRINT')\nclass P: ...\nP = P()\n",
    "quiet": "class P: ...\nP = P()\n",
}


@pytest.mark.parametrize(
    ("plugins", "said"),
    [
        (["misspelled:P"], "a plugin cannot be used: unknown hook 'ctxfs_authorise'"),
        (["wrong_arguments:P"], "Argument(s) {'nonsense'} are declared in the hookimpl"),
        (["quiet:P", "quiet:P"], "a plugin cannot be used: Plugin name already registered"),
        (["raising"], "cannot load plugin 'raising': RuntimeError: boom"),
        (["broken"], "cannot load plugin 'broken': SyntaxError"),
    ],
)
def test_a_plugin_that_cannot_be_used_is_one_line_and_status_2(
    plugins: list[str],
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, code in PLUGINS.items():
        (tmp_path / f"{name}.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    options = [option for plugin in plugins for option in ("--plugin", plugin)]
    assert main(["call", "--root", str(tmp_path), *options, "list_dir", "{}"]) == 2
    err = capsys.readouterr().err
    assert said in err
    assert err.count("\n") == 1


def test_what_a_plugin_prints_as_it_loads_never_reaches_stdout(tmp_path: Path) -> None:
    (tmp_path / "noisy.py").write_text(PLUGINS["noisy"])
    listed = subprocess.run(
        [CTXFS, "call", "--root", str(tmp_path), "--plugin", "noisy:P", "list_dir", "{}"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "IMPORT-TIME PRINT" in listed.stderr
    assert "IMPORT-TIME PRINT" not in listed.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("where", "said"),
    [
        (["--root", ""], "ctxfs: --root '' is empty"),
        (["--root", "$CTXFS_TEST_EMPTY"], "ctxfs: --root '$CTXFS_TEST_EMPTY' is empty"),
        (["--url", ""], "ctxfs: --url '' is empty"),
        (["--url", "${CTXFS_TEST_EMPTY}"], "ctxfs: --url '${CTXFS_TEST_EMPTY}' is empty"),
        (["--url", "file://"], "ctxfs: --url 'file://' is empty"),
        (["--url", "file://localhost"], "ctxfs: --url 'file://localhost' is empty"),
        (["--root", ".", "--observations", ""], "ctxfs: --observations '' is empty"),
    ],
)
@pytest.mark.parametrize("command", [["serve"], ["call", "list_dir", "{}"]])
def test_an_empty_root_or_store_is_refused_never_taken_for_a_default(
    where: list[str], said: str, command: list[str], tmp_path: Path
) -> None:
    # A client's configuration with an empty or unset variable must not serve whatever
    # directory the client was started in (nor split --workers' observations).
    (tmp_path / "cwd").mkdir()
    (tmp_path / "cwd" / "secret.txt").write_text("x\n")
    done = subprocess.run(
        [CTXFS, command[0], *where, *command[1:]],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path / "cwd",
        stdin=subprocess.DEVNULL, env={**os.environ, "CTXFS_TEST_EMPTY": ""},
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(said), done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--port", "99999"], "cannot listen on 127.0.0.1:99999: a port is 0 to 65535"),
        (["--port", "-1"], "cannot listen on 127.0.0.1:-1: a port is 0 to 65535"),
        (["--port", "99999", "--workers", "2"], "cannot listen on 127.0.0.1:99999: a port is"),
        (["--port", "{taken}"], "cannot listen on 127.0.0.1:{taken}: Address already in use"),
        (["--port", "{taken}", "--workers", "2"], "cannot listen on 127.0.0.1:{taken}: Address"),
        (["--host", "no-such-host.invalid"], "cannot listen on no-such-host.invalid:8000: "),
    ],
)
def test_a_port_that_cannot_be_bound_is_one_line_before_anything_is_announced(
    options: list[str], said: str, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = subprocess.run(
            [CTXFS, "serve", "--transport", "http", "--root", str(tmp_path),
             *(option.format(taken=port) for option in options)],
            capture_output=True, text=True, timeout=60, check=False,
            env={**os.environ, "CTXFS_TOKEN": "a-token-of-the-configuration"},
        )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith(f"ctxfs: {said.format(taken=port)}")
    assert done.stderr.count("\n") == 1  # no "serving" line, no token, no traceback


def test_call_read_only_hides_and_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    arguments = '{"file_path": "b.txt", "content": "x"}'
    assert main(["call", "--root", str(tmp_path), "--read-only", "write", arguments]) == 1
    assert "tool 'write' is not offered in this step" in capsys.readouterr().err
    assert not (tmp_path / "b.txt").exists()


@pytest.mark.slow
def test_demo_runs_end_to_end() -> None:
    result = run("demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "<- error [stale]" in out
    assert out.count("<- ok") == 7  # (the stale error's diff is Alice's read)
    assert "app.py kept its CRLF line endings (5 of 5 lines)." in out
    workspace = Path(out.splitlines()[0].removeprefix("Workspace: "))
    assert not workspace.exists(), "the throw-away workspace is removed"


# -- as a new user meets it ---------------------------------------------------------------------


def test_a_reader_that_stops_early_ends_the_command_quietly() -> None:
    demo = subprocess.Popen([CTXFS, "demo"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert demo.stdout is not None
    demo.stdout.close()  # as `ctxfs demo | head -0` would: every line written meets a closed pipe
    _, err = demo.communicate(timeout=120)
    assert demo.returncode == 141  # 128 + SIGPIPE, as for a program the signal ends
    assert err == b""


@pytest.mark.parametrize("json_output", [False, True])
@pytest.mark.parametrize(
    ("stdout", "why"), [(">/dev/full", "No space left on device"), (">&-", "stdout is closed")]
)
def test_a_result_that_cannot_be_written_is_a_one_line_error(
    tmp_path: Path, stdout: str, why: str, json_output: bool
) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    call = [CTXFS, "call", "--root", str(tmp_path), *(["--json"] if json_output else [])]
    done = subprocess.run(
        ["/bin/sh", "-c", f'exec "$@" {stdout}', "sh", *call, "read", '{"file_path": "a.txt"}'],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.decode() == f"ctxfs: cannot write the result: {why}\n"


def test_a_call_with_stderr_closed_answers_on_stdout_alone(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    call = [CTXFS, "call", "--root", str(tmp_path)]
    done = subprocess.run(
        ["/bin/sh", "-c", 'exec "$@" 2>&-', "sh", *call, "read", '{"file_path": "a.txt"}'],
        capture_output=True, check=False, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, b"1 x\n(end of file; lines 1-1 of 1)\n")
    refused = subprocess.run(
        ["/bin/sh", "-c", 'exec "$@" 2>&-', "sh", *call, "read", "not json"],
        capture_output=True, check=False, timeout=60,
    )  # fmt: skip
    assert (refused.returncode, refused.stdout) == (2, b"")  # (the why goes nowhere, not stdout)


@pytest.mark.parametrize("closed", ["<&-", ">&-"])
def test_serve_with_a_standard_stream_closed_ends_without_a_traceback(
    tmp_path: Path, closed: str
) -> None:
    serve = [CTXFS, "serve", "--root", str(tmp_path)]
    done = subprocess.run(
        ["/bin/sh", "-c", f'exec "$@" {closed}', "sh", *serve],
        input=b"", capture_output=True, check=False, timeout=60,
    )  # fmt: skip
    assert b"Traceback" not in done.stderr, done.stderr.decode()
    assert done.returncode == 0


def test_the_demo_with_stdout_closed_is_a_one_line_error() -> None:
    done = subprocess.run(
        ["/bin/sh", "-c", 'exec "$@" >&-', "sh", CTXFS, "demo"],
        capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (1, b"ctxfs: cannot show the demo: stdout is closed\n")


def test_root_expands_the_home_directory_and_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("home\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CTXFS_TEST_WS", "ws")
    for root in ("~/ws", "$HOME/ws", "${HOME}/$CTXFS_TEST_WS"):
        assert main(["call", "--root", root, "read", '{"file_path": "a.txt"}']) == 0
        assert capsys.readouterr().out.startswith("1 home\n")


@pytest.mark.parametrize("found", ["1.9.0", "2.2.9", "3.0.0", None])
def test_serve_says_which_mcp_it_needs_and_which_it_found(
    found: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    real = importlib.metadata.version

    def version(name: str) -> str:
        if name != "mcp":
            return real(name)
        if found is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return found

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert main(["serve", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    have = "it is not installed" if found is None else f"found mcp {found}"
    assert err == (
        f"ctxfs: serve needs the MCP SDK, mcp 2.3 or newer, before 3 ({have}): "
        "pip install 'ctxfs-tools[cli]'\n"
    )


def test_the_needed_mcp_is_the_one_the_extras_require() -> None:
    needed, before = (".".join(map(str, release)) for release in (MCP_NEEDED, MCP_BEFORE))
    required = {SpecifierSet(f">={needed},<{before}")}
    requirements = [Requirement(line) for line in importlib.metadata.requires("ctxfs-tools") or []]
    for extra in ("cli", "mcp"):
        assert {
            requirement.specifier
            for requirement in requirements
            if requirement.name == "mcp"
            and requirement.marker is not None
            and requirement.marker.evaluate({"extra": extra})
        } == required, extra


def test_a_missing_local_backend_names_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    installed = importlib.metadata.entry_points

    def without_file(*, group: str, name: str | None = None) -> importlib.metadata.EntryPoints:
        kept = (
            ep for ep in installed(group=group) if ep.name != "file" and name in (None, ep.name)
        )
        return importlib.metadata.EntryPoints(kept)

    monkeypatch.setattr(importlib.metadata, "entry_points", without_file)
    assert main(["call", "--root", str(tmp_path), "read", '{"file_path": "a.txt"}']) == 2
    err = capsys.readouterr().err
    assert err == (
        "ctxfs: opening a directory needs ctxfs-local, which is not installed: "
        "pip install ctxfs-local\n"
    )


REMOTE_EXTRAS = {
    "s3": ["s3fs", "aiobotocore", "botocore", "aiohttp"],
    "gcs": ["gcsfs", "google", "aiohttp"],
    "azure": ["adlfs", "azure", "aiohttp"],
    "sftp": ["asyncssh"],
}
"""Each extra of ctxfs-remote, and the modules it installs (what is missing without it)."""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("url", "extra"),
    [("s3://b/p", "s3"), ("gs://b/p", "gcs"), ("gcs://b/p", "gcs"), ("az://c/p", "azure"),
     ("abfs://c/p", "azure"), ("sftp://u@h/root", "sftp")],
)  # fmt: skip
def test_a_store_without_its_extra_names_the_extra(url: str, extra: str) -> None:
    # Run where the extra's modules cannot be imported, as after `pip install ctxfs-remote`.
    missing = "".join(f"sys.modules[{module!r}] = None; " for module in REMOTE_EXTRAS[extra])
    done = subprocess.run(
        [sys.executable, "-c", f"import sys; {missing}from ctxfs.tools.cli import main; "
         "sys.exit(main(sys.argv[1:]))", "call", "--url", url, "read", '{"file_path": "a"}'],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"pip install 'ctxfs-remote[{extra}]'" in done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("url", "install"),
    [("s3://b/p", "'ctxfs-remote[s3]'"), ("gs://b/p", "'ctxfs-remote[gcs]'"),
     ("az://c/p", "'ctxfs-remote[azure]'"), ("sftp://h/root", "'ctxfs-remote[sftp]'"),
     ("fsspec+memory://x", "ctxfs-remote")],
)  # fmt: skip
def test_a_store_without_ctxfs_remote_names_what_to_install(
    url: str, install: str, tmp_path: Path
) -> None:
    # An environment like this one without ctxfs-remote: its packages, linked, but that one.
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        if "ctxfs_remote" not in entry.name:
            (tmp_path / entry.name).symlink_to(entry)
    done = subprocess.run(
        [sys.executable, "-S", "-c", f"import site, sys; site.addsitedir({str(tmp_path)!r}); "
         "from ctxfs.tools.cli import main; sys.exit(main(sys.argv[1:]))",
         "call", "--url", url, "read", '{"file_path": "a"}'],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (
        2,
        f"ctxfs: opening {url.partition('://')[0]}:// needs ctxfs-remote, which is not "
        f"installed: pip install {install}\n",
    )


def test_the_named_extras_are_those_ctxfs_remote_declares() -> None:
    remote = tomllib.loads((ROOT / "packages/fs-remote/pyproject.toml").read_text())["project"]
    assert set(REMOTE_EXTRAS) == set(remote["optional-dependencies"])
    assert set(STORE_PACKAGES) == {"file", *remote["entry-points"]["ctxfs.backends"]}
    for scheme, install in STORE_PACKAGES.items():
        dist, _, extra = install.partition("[")
        assert dist == ("ctxfs-local" if scheme == "file" else "ctxfs-remote"), scheme
        assert extra.rstrip("]") in ("", *REMOTE_EXTRAS), scheme


def test_counts_of_one_are_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = str(tmp_path)
    assert main(["call", "--root", root, "write", '{"file_path": "a.txt", "content": "x"}']) == 0
    assert capsys.readouterr().out == "Created a.txt (1 line, 1 byte).\n"
    assert main(["call", "--root", root, "grep", '{"pattern": "x"}']) == 0
    assert capsys.readouterr().out == "a.txt:1: x\n(1 match in 1 file searched)\n"
    assert main(["call", "--root", root, "glob", '{"pattern": "*.txt"}']) == 0
    assert capsys.readouterr().out == "a.txt\n(1 file matches)\n"
    assert main(["call", "--root", root, "list_dir", "{}"]) == 0
    assert capsys.readouterr().out == "a.txt  (1 B)\n(1 entry)\n"


@pytest.mark.slow
def test_call_read_then_edit_through_a_shared_observation_store(tmp_path: Path) -> None:
    # Each `ctxfs call` is a process of its own: only a store they share lets one read
    # license the next one's edit, for the same owner, until another owner changes the file.
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\n")
    shared = ["--root", str(root), "--observations", f"sqlite:///{tmp_path}/observations.db"]

    def call(owner: str, tool: str, **arguments: str) -> subprocess.CompletedProcess[str]:
        return run("call", *shared, "--owner", owner, tool, json.dumps(arguments))

    alone = run("call", "--root", str(root), "edit", '{"file_path": "a.txt", '
                '"old_string": "two", "new_string": "2"}')  # fmt: skip
    assert alone.stderr.startswith("ctxfs: error [not_observed]")
    assert call("a", "read", file_path="a.txt").returncode == 0
    edited = call("a", "edit", file_path="a.txt", old_string="two", new_string="2")
    assert edited.returncode == 0, edited.stderr
    assert call("b", "read", file_path="a.txt").returncode == 0
    assert call("b", "edit", file_path="a.txt", old_string="one", new_string="1").returncode == 0
    stale = call("a", "edit", file_path="a.txt", old_string="2", new_string="two")
    assert stale.stderr.startswith("ctxfs: error [stale]"), stale.stderr
    assert "\n-one\n+1\n" in stale.stderr  # what changed since its version, as the model sees it
    assert "\nNext: " in stale.stderr
    assert (root / "a.txt").read_text() == "1\n2\n"


@pytest.mark.slow
def test_each_call_finds_what_the_one_before_saw_in_its_roots_own_store(tmp_path: Path) -> None:
    # Nothing configured, each call a process of its own (a client that spawns one per call):
    # a read licenses the next call's edit, through any spelling of the root; another root
    # keeps a store of its own, memory:// keeps observations in the process alone, and a call
    # another process starts (another client) works for another owner.
    root, other = tmp_path / "ws", tmp_path / "other"
    for where in (root, other):
        where.mkdir()
        (where / "a.txt").write_text("one\n")
    (tmp_path / "link").symlink_to(root)
    edit = json.dumps({"file_path": "a.txt", "old_string": "one", "new_string": "two"})
    assert run("call", "--root", str(root), "read", '{"file_path": "a.txt"}').returncode == 0
    another_client = subprocess.run(
        ["sh", "-c", '"$@"; exit $?', "sh", CTXFS, "call", "--root", str(root), "edit", edit],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    for refused in (
        run("call", "--root", str(other), "edit", edit),
        run("call", "--root", str(root), "--observations", "memory://", "edit", edit),
        another_client,
    ):
        assert refused.stderr.startswith("ctxfs: error [not_observed]"), refused.stderr
    edited = run("call", "--root", str(tmp_path / "link" / "."), "edit", edit)
    assert edited.returncode == 0, edited.stderr
    assert (root / "a.txt").read_text() == "two\n"
    stores = Path(os.environ["CTXFS_STATE_DIR"]) / "observations"
    assert stores.stat().st_mode & 0o777 == 0o700


@pytest.mark.slow
def test_a_kept_session_file_of_an_earlier_layout_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    name = hashlib.sha256(os.fsencode(os.path.realpath(tmp_path))).hexdigest()[:32]
    kept = Path(os.environ["CTXFS_STATE_DIR"]) / "sessions" / f"{name}.db"
    kept.parent.mkdir(mode=0o700, exist_ok=True)
    earlier = "CREATE TABLE blobs (version BLOB PRIMARY KEY, data BLOB, size INT, used INT)"
    with sqlite3.connect(kept) as db:
        db.execute(earlier)
    read = '{"file_path": "a.txt"}'
    result = run("call", "--root", str(tmp_path), "read", read)
    assert result.returncode == 0, result.stderr
    assert "made by another version of ctxfs (its table blobs differs); it is replaced" in (
        result.stderr
    )
    with sqlite3.connect(kept) as db:
        assert db.execute("SELECT count(*) FROM uses").fetchone() == (1,)  # the read, kept anew
    named = tmp_path / "named.db"
    with sqlite3.connect(named) as db:
        db.execute(earlier)
    result = run("call", "--root", str(tmp_path), "--sessions", f"sqlite:///{named}", "read", read)
    assert result.returncode == 2
    assert result.stderr.startswith("ctxfs: error [unavailable]: the session store"), result.stderr
    with sqlite3.connect(named) as db:  # a file the options name is never replaced
        assert db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall() == [
            ("blobs",)
        ]


def test_call_with_a_damaged_observation_store_fails_clearly(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "damaged.db").write_bytes(b"not a database" * 64)
    store = f"sqlite:///{tmp_path}/damaged.db"
    result = run("call", "--root", str(tmp_path), "--observations", store, "read",
                 '{"file_path": "a.txt"}')  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith("ctxfs: error [unavailable]: the observation store")


@pytest.mark.slow
def test_call_with_an_unreachable_redis_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        store = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"
    for tool, arguments in [
        ("read", {"file_path": "a.txt"}),
        ("edit", {"file_path": "a.txt", "old_string": "one", "new_string": "two"}),
        ("write", {"file_path": "a.txt", "content": "two\n"}),
    ]:
        result = run("call", "--root", str(tmp_path), "--observations", store, tool,
                     json.dumps(arguments))  # fmt: skip
        assert result.returncode == 1
        assert result.stderr.startswith("ctxfs: error [unavailable]: the observation store")
    assert (tmp_path / "a.txt").read_text() == "one\n"


def test_call_with_a_bad_observations_url_is_a_usage_error(tmp_path: Path) -> None:
    result = run("call", "--root", str(tmp_path), "--observations", "postgres://x", "read",
                 '{"file_path": "a.txt"}')  # fmt: skip
    assert result.returncode == 2
    assert "names no observation store" in result.stderr


def test_read_hard_links_lets_call_search_them_and_is_for_local_roots(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "outside.py").write_text("needle\n")
    os.link(tmp_path / "outside.py", tmp_path / "root" / "linked.py")
    root = ["--root", str(tmp_path / "root")]
    refused = run("call", *root, "grep", '{"pattern": "needle"}')
    assert refused.stdout.startswith("(no match")
    found = run("call", *root, "--read-hard-links", "grep", '{"pattern": "needle"}')
    assert found.stdout.startswith("linked.py:1: needle"), found.stdout
    misused = run("call", "--url", "memory://", "--read-hard-links", "read", "{}")
    assert (misused.returncode, misused.stderr) == (
        2,
        "ctxfs: --read-hard-links is for a local --root\n",
    )


def test_call_shows_a_long_searchs_progress_on_stderr(tmp_path: Path) -> None:
    for n in range(300):
        (tmp_path / f"f{n:03}.txt").write_text("needle\n" * 30)
    # a multiline search runs ctxfs's own engine (ripgrep reports no progress on the way)
    arguments = '{"pattern": "needle", "multiline": true, "output_mode": "count"}'
    done = run("call", "--root", str(tmp_path), "--progress", "0", "grep", arguments)
    assert done.returncode == 0, done.stderr
    progress = [line for line in done.stderr.splitlines() if "files searched" in line]
    assert progress, done.stderr
    assert progress[-1].startswith("ctxfs: ")
    assert "of 300 files searched" in progress[-1]
    assert "matching lines" in progress[-1]
    quiet = run("call", "--root", str(tmp_path), "grep", arguments)
    assert "files searched" not in quiet.stderr


def test_call_on_an_image_prints_what_a_model_without_sight_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = image((30, 20))
    (tmp_path / "logo.png").write_bytes(png)
    assert main(["call", "--root", str(tmp_path), "read", '{"file_path": "logo.png"}']) == 0
    said = f"Returned the image logo.png (image/png, 30x20 px, {len(png)} B), as it is.\n"
    assert capsys.readouterr().out == said
    assert (
        main(["call", "--root", str(tmp_path), "--json", "read", '{"file_path": "logo.png"}']) == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert (data["kind"], data["image"]["width"], data["image"]["sent_bytes"]) == (
        "image",
        30,
        len(png),
    )


OWNER_OF_A_SERVER = (
    "from ctxfs.tools.cli.opening import server_owner; print(server_owner(), flush=True); input()"
)


@pytest.mark.slow
def test_servers_a_client_runs_at_once_are_distinct_owners_and_one_after_another_the_same(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "CTXFS_STATE_DIR": str(tmp_path)}

    def started() -> tuple[subprocess.Popen[str], str]:
        server = subprocess.Popen(
            [sys.executable, "-c", OWNER_OF_A_SERVER],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        assert server.stdout is not None
        return server, server.stdout.readline().strip()

    first, owner = started()
    second, other = started()
    assert owner.startswith(f"client-{os.getpid()}-")
    assert other == f"{owner}-2"  # at once: its reads license nothing of the first's
    for server in (first, second):
        server.communicate("\n", timeout=30)
    successor, again = started()  # one after another: what the first saw, it saw
    successor.communicate("\n", timeout=30)
    assert again == owner


@pytest.mark.slow
def test_an_unusable_state_directory_is_one_line(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    (tmp_path / "state").write_text("a file where the directory should be")
    for command in (["call", "--root", str(root), "read", '{"file_path": "a.txt"}'],
                    ["serve", "--root", str(root)]):  # fmt: skip
        done = subprocess.run(
            [CTXFS, *command], capture_output=True, text=True, timeout=60, check=False,
            env={**os.environ, "CTXFS_STATE_DIR": str(tmp_path / "state")}, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 2
        assert done.stderr == (
            f"ctxfs: error [unavailable]: the state directory {tmp_path / 'state'} cannot be "
            "used: Not a directory\n"
        )


@pytest.mark.slow
@pytest.mark.parametrize(
    "arguments",
    ['{"file_path": "a.txt", "offset": 1' + "0" * 4400 + "}", "[" * 50_000 + "]" * 50_000],
    ids=["a 4,401-digit number", "50,000 brackets deep"],
)
def test_call_arguments_json_cannot_hold_are_a_usage_error(tmp_path: Path, arguments: str) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    result = run("call", "--root", str(tmp_path), "read", arguments)
    assert result.returncode == 2
    assert result.stderr.startswith("ctxfs: the arguments are not JSON: ")
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--progress", "-1"], "progress_seconds must be 0 or more seconds"),
        (["--progress", "nan"], "progress_seconds must be 0 or more seconds"),
        (["--max-message-bytes", "9" * 20], "is more than 1073741824 (1 GiB)"),
    ],
)
def test_numbers_no_run_could_use_are_refused_at_start(
    tmp_path: Path, option: list[str], said: str
) -> None:
    command = ["serve", "--root", str(tmp_path), *option]
    done = subprocess.run(
        [CTXFS, *command], capture_output=True, text=True, timeout=60, check=False,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2
    assert said in done.stderr


@pytest.mark.parametrize(("workers", "short"), [(1, True), (2, False)])
def test_workers_answer_every_reread_with_the_text(workers: int, short: bool) -> None:
    # What each worker showed an owner is its own: a forget_shown reaches one of them only.
    from ctxfs.tools.cli.arguments import parser  # noqa: PLC0415
    from ctxfs.tools.cli.opening import toolset_of  # noqa: PLC0415

    args = parser().parse_args(
        ["serve", "--transport", "http", "--workers", str(workers), "--root", "."]
    )
    assert toolset_of(args).options.short_rereads is short
