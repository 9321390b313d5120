"""The ``ctxfs`` command: one clear line and a non-zero status on failure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxfs.tools import __version__
from ctxfs.tools.cli import main

CTXFS = str(Path(sys.executable).with_name("ctxfs"))  # the installed console script


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


def test_call_failures_are_one_line_with_the_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    write = '{"file_path": "a.txt", "content": "x"}'
    assert main(["call", "--root", str(tmp_path), "write", write]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("ctxfs: error [not_observed]: ")
    assert captured.err.count("\n") == 1
    assert (tmp_path / "a.txt").read_text() == "one\n"


def test_call_grep_with_a_catastrophic_pattern_fails_instead_of_hanging(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a" * 60 + "!\n")
    result = run("call", "--root", str(tmp_path), "grep", '{"pattern": "(a|aa)+$"}')
    assert result.returncode == 1
    assert result.stderr.startswith("ctxfs: error [invalid_argument]: the pattern took more than")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["call", "--root", "{root}", "read", "{{not json"], "the arguments are not JSON"),
        (["call", "--root", "{root}/missing", "read", "{{}}"], "ctxfs: error ["),
        (
            ["call", "--url", "nosuch://x", "read", "{{}}"],
            "no installed package provides the 'nosuch' scheme",
        ),
        (["serve", "--root", "{root}", "--plugin", "no.such.module:thing"], "cannot load plugin"),
    ],
)
def test_usage_errors_are_one_line_and_status_2(
    argv: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([arg.format(root=tmp_path) for arg in argv]) == 2
    err = capsys.readouterr().err
    assert said in err
    assert err.count("\n") == 1


def test_call_read_only_hides_and_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    arguments = '{"file_path": "b.txt", "content": "x"}'
    assert main(["call", "--root", str(tmp_path), "--read-only", "write", arguments]) == 1
    assert "unknown tool 'write'" in capsys.readouterr().err
    assert not (tmp_path / "b.txt").exists()


@pytest.mark.slow
def test_demo_runs_end_to_end() -> None:
    result = run("demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "<- error [stale]" in out
    assert out.count("<- ok") == 8
    assert "app.py kept its CRLF line endings (5 of 5 lines)." in out
    workspace = Path(out.splitlines()[0].removeprefix("Workspace: "))
    assert not workspace.exists(), "the throw-away workspace is removed"
