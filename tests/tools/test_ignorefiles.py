"""Ignore files read as ripgrep reads them: each rule against a whole path (cases seen from rg)."""

from __future__ import annotations

import pytest

from ctxfs.tools.ignorefiles import MOST_ALTERNATIVES, IgnoreFile


def verdict(rules: str, path: str, *, directory: bool = False) -> bool | None:
    return IgnoreFile.parse(rules, kind=1, directory="").verdict(path, directory=directory)


@pytest.mark.parametrize(
    ("rules", "excluded", "kept"),
    [
        ("a**b", ["aXb", "aXYb", "ab"], ["a/b", "a/x/b"]),  # ** within a name is *
        ("a/**/b", ["a/b", "a/x/b", "a/x/y/b"], ["ab", "b"]),
        ("/**/z", ["z", "q/z"], ["zz"]),
        ("**", ["k", "d/e"], []),
        ("sub/**", ["sub/x", "sub/d/y"], ["sub", "other/sub"]),  # the contents, not sub
        ("{x,y}.txt", ["x.txt", "d/y.txt"], ["z.txt", "{x,y}.txt"]),
        ("a[!x]b", ["ayb"], ["axb", "a/b"]),  # (a class never holds a slash, as in git)
        ("[a-c]?", ["b1", "d/c2"], ["d1", "b"]),
        ("\\*", ["*"], ["x"]),
        ("\\!x\n\\#y", ["!x", "#y"], ["x", "y"]),
        ("x.txt  ", ["x.txt"], ["x.txt  "]),  # trailing spaces go, unless escaped
        ("x\\ ", ["x "], ["x"]),
        ("/top", ["top"], ["d/top"]),
        ("d/*\n!d/keep", ["d/a"], ["d/keep"]),
        ("*.log\n!keep.log", ["a.log", "d/b.log"], ["keep.log", "d/keep.log"]),
        ("\ufeff# a comment\n\n  \nx", ["x"], ["# a comment"]),
        ("[abc\nx\\", [], ["[abc", "a", "x", "x\\"]),  # not valid globs: no rules
        ("\\[a\\]\\?\\\\", ["[a]?\\"], ["a"]),
        ("{x,y}\\,\\{", ["x,{", "y,{"], ["x", "x,"]),
        ("{docs/build,out}", ["docs/build", "out"], ["d/out", "d/docs/build"]),  # anchored whole
        ("/{a,b/c}", ["a", "b/c"], ["d/a"]),
        ("v{1..3}", ["v1..3"], ["v1", "v2"]),  # no ranges
        ("*.{txt}", ["a.txt"], ["a.{txt}"]),
        ("*.{py,{c,h}}", [], ["a.py", "a.c"]),  # a group within a group: no rule
        ("[!]]", ["a"], ["]"]),
        ("[\\!]", ["!"], ["a"]),  # no escapes inside a class
        ("/*.py", ["a.py"], ["d/a.py"]),
        ("/**", ["a", "d/a"], []),
    ],
)
def test_a_rule_matches_whole_paths_as_in_ripgrep(
    rules: str, excluded: list[str], kept: list[str]
) -> None:
    for path in excluded:
        assert verdict(rules, path), (rules, path)
    for path in kept:
        assert not verdict(rules, path), (rules, path)


def test_a_rule_with_a_trailing_slash_names_only_directories() -> None:
    assert verdict("build/", "d/build", directory=True)
    assert verdict("build/", "d/build") is None
    assert verdict("foo/**/", "foo/d", directory=True)
    assert verdict("foo/**/", "foo/a") is None


def test_the_last_rule_that_matches_decides() -> None:
    assert verdict("*.py\n!a.py", "a.py") is False
    assert verdict("!a.py\n*.py", "a.py") is True
    assert verdict("*.py", "a.txt") is None


def test_no_rule_makes_matching_run_away() -> None:
    # (a backtracking regular expression would take hours on each of these)
    assert verdict("*a*a*a*a*a*a*a*a*a*a*b", "a" * 255) is None
    assert verdict("**/a/**/a/**/a/**/a/**/b", "/".join(["a"] * 200)) is None


def test_one_files_braces_give_a_bounded_number_of_globs() -> None:
    group = "{a,b,c,d,e,f,g,h,i,j}"
    rules = "\n".join(f"{group * 3}{n}" for n in range(200)) + "\nplain"
    parsed = IgnoreFile.parse(rules, kind=1, directory="")
    assert sum(len(rule.globs) for rule in parsed.rules) <= MOST_ALTERNATIVES + 1
    assert parsed.verdict("plain", directory=False)  # (a rule without braces still counts)
