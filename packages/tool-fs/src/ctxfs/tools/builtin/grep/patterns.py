"""What grep matches: line patterns searched under a deadline, and file types.

Patterns are Python regular expressions, run by the ``regex`` engine (``re``'s syntax
and meaning), which can stop a search and let go of the GIL; it is imported by the first
pattern compiled. Every pattern but a literal one is searched with a timeout, the rest of
the call's deadline; one that could backtrack without bound (:func:`_can_backtrack`) also
has a time limit per line, so that it fails the call at its first bad line instead of
using up the deadline line after line. A file type (``type="py"``) is one of ripgrep's
type names, as file-name globs.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ctxfs.core import CutLine, GlobMatcher, InvalidArgument, glob_matcher

if TYPE_CHECKING:
    import regex

__all__ = ["FILE_TYPES", "LinePattern", "OutOfTime", "Searched", "type_matcher"]

_QUANTIFIER: Final = re.compile(r"[*+?]|\{(\d*)(,?)(\d*)\}")
_CHARACTER_CLASS: Final = re.compile(r"\[\^?\]?(?:\\.|[^\]\\])*\]", re.DOTALL)
_MOST_UNBOUNDED_REPEATS: Final = 1
_MOST_CHOICES: Final = 32
_BACKTRACKING: Final = re.compile(r"[*+?{|]")
"""A pattern without these (nor a backreference) matches in linear time: no timeout."""

_REPEATS: Final[dict[str, tuple[int, float]]] = {
    "*": (0, math.inf),
    "+": (1, math.inf),
    "?": (0, 1),
}


class OutOfTime(Exception):
    """A search ran out of time: on one line (the pattern's limit) or for the call."""

    def __init__(self, *, whole_call: bool) -> None:
        super().__init__("the call's deadline passed" if whole_call else "the line's time is up")
        self.whole_call = whole_call


@dataclass(frozen=True, kw_only=True)
class Searched:
    """What :meth:`LinePattern.search_lines` found in a batch of lines."""

    hits: list[tuple[int, int]]
    """The index of each line that holds a match, and where its first match starts."""
    stopped_at: int | None = None
    """The index of the line where time ran out, if it did."""
    whole_call: bool = False
    """The call's deadline passed (else the line's own limit did)."""


@dataclass(frozen=True, kw_only=True)
class LinePattern:
    """A grep pattern, searched for in one line at a time."""

    compiled: regex.Pattern[str]
    line_seconds: float | None
    """The time one line's search may take; None for a pattern that cannot backtrack
    without bound (see :func:`_can_backtrack`), which only the call's deadline stops."""
    literal: bool = False
    """No quantifier, alternative or backreference: searched with no timeout at all."""

    @property
    def ignore_case(self) -> bool:
        """Whether letters match either case."""
        import regex  # noqa: PLC0415 - loaded by the first pattern compiled

        return bool(self.compiled.flags & regex.IGNORECASE)

    @classmethod
    def compile(
        cls, pattern: str, *, ignore_case: bool, line_seconds: float, multiline: bool = False
    ) -> LinePattern:
        """Compile *pattern*; raise ``InvalidArgument`` (field ``pattern``) if it is not one.

        *multiline*: the pattern is searched in whole files, ``.`` matches a line
        break too, and ``^``/``$`` match at every line's start and end.
        """
        import regex  # noqa: PLC0415 - loaded by the first grep, not with the tools

        flags = regex.IGNORECASE if ignore_case else 0
        if multiline:
            flags |= regex.MULTILINE | regex.DOTALL
        if (repeated := _repeated_size(pattern) - len(pattern)) > MAX_REPEATED_SIZE:
            raise InvalidArgument(
                f"pattern repeats itself too much: its counted repeats add about "
                f"{repeated:,} pieces (at most {MAX_REPEATED_SIZE:,})",
                hint="Use smaller counts in {m,n}, or + and * instead of nested counts.",
                details={"field": "pattern"},
            )
        try:
            compiled = regex.compile(pattern, flags)
        except (regex.error, RecursionError, MemoryError) as bad:
            why = bad if isinstance(bad, regex.error) else "it nests too deeply, or is too large"
            raise InvalidArgument(
                f"pattern is not a valid regular expression: {why}",
                hint="Fix the regular expression (Python syntax); escape special characters.",
                details={"field": "pattern"},
            ) from None
        bounded = not _can_backtrack(pattern)
        return cls(
            compiled=compiled,
            line_seconds=None if bounded else line_seconds,
            literal=bounded and _BACKTRACKING.search(pattern) is None,
        )

    def first_match(self, line: str, *, deadline: float) -> tuple[int, int] | None:
        """Where the first match in *line* starts and ends, if there is one.

        Runs without the GIL. Raises ``OutOfTime`` when the line's time is up
        or *deadline* (``time.monotonic``) has passed. Every pattern but a
        literal one is searched with a timeout: telling all that can run away
        from a regular expression's text is not possible (a verbose pattern's
        comments, stacked alternatives), and a timeout costs microseconds.
        """
        if self.literal:
            found = self.compiled.search(line, concurrent=True)
        else:
            seconds, own = self._time_left(deadline)
            try:
                found = self.compiled.search(line, timeout=seconds, concurrent=True)
            except TimeoutError:
                raise OutOfTime(whole_call=seconds < own) from None
        return None if found is None else found.span()

    def _time_left(self, deadline: float) -> tuple[float, float]:
        """The seconds a search may take now, and the pattern's own limit (inf: none).

        Raises:
            OutOfTime: *deadline* has passed.

        """
        own = math.inf if self.line_seconds is None else self.line_seconds
        seconds = min(own, deadline - time.monotonic())
        if seconds <= 0:
            raise OutOfTime(whole_call=True)
        return seconds, own

    def find_all(self, text: str, deadline: float) -> list[tuple[int, int]]:
        """Where every match in *text* (a whole file, multiline) starts and ends.

        Runs without the GIL, with the pattern's time limit for the whole text.
        Meant for a worker thread.

        Raises:
            OutOfTime: The pattern's limit (``whole_call`` False) or *deadline* passed.

        """
        seconds, own = self._time_left(deadline)
        try:
            found = self.compiled.finditer(text, timeout=seconds, concurrent=True)
            return [match.span() for match in found]
        except TimeoutError:
            raise OutOfTime(whole_call=seconds < own) from None

    def search_lines(self, lines: list[tuple[str, int, str]], deadline: float) -> Searched:
        """Search each of *lines* (``(path, number, line)``) until time runs out.

        Meant for a worker thread.
        """
        hits: list[tuple[int, int]] = []
        for index, (_, _, line) in enumerate(lines):
            if isinstance(line, CutLine):  # a part only: the engine said where it matches
                if line.column is not None:
                    hits.append((index, line.column))
                continue
            try:
                span = self.first_match(line, deadline=deadline)
            except OutOfTime as stopped:
                return Searched(hits=hits, stopped_at=index, whole_call=stopped.whole_call)
            if span is not None:
                hits.append((index, span[0]))
        return Searched(hits=hits)

    def too_slow(self, path: str, number: int) -> InvalidArgument:
        """The failure of a search that ran out of time on line *number* of *path*."""
        return InvalidArgument(
            f"the pattern took more than {self.line_seconds:g} s to search line {number} "
            f"of {path}: it backtracks catastrophically",
            hint="Simplify the pattern: no quantifier inside a repeated group (as in "
            "(a+)+), no overlapping alternatives, fewer adjacent quantifiers such as .*.*",
            details={"field": "pattern", "path": path, "line": number},
        )


MAX_REPEATED_SIZE: Final = 200_000
"""The most pieces a pattern's counted repeats may add (``(?:a{200}){200}``: about 40,000):
the regex engine expands them when it compiles, a piece at a time."""


def _repeated_size(pattern: str) -> int:
    """About how many pieces *pattern* makes, its counted repeats expanded (linear, no stack).

    Each character or escape is one; a class is one; a group is what it holds (its ``?P<name>``
    or other prefix none); ``{m,n}`` repeats the piece before it the most times it says
    (``{m,}``: *m*). In verbose mode a ``#`` starts a comment, to the line's end.
    """
    verbose = _VERBOSE_FLAG.search(pattern) is not None
    sizes, last, at = [0], 1, 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            last, at = 1, at + 2
        elif char == "[":  # a class is one piece: to its closing "]"
            found = _CHARACTER_CLASS.match(pattern, at)
            last, at = 1, (len(pattern) if found is None else found.end())
        elif char == "(":
            sizes.append(0)
            prefix = _GROUP_PREFIX.match(pattern, at + 1)
            at = at + 1 if prefix is None else prefix.end()
            continue
        elif char == ")" and len(sizes) > 1:
            last, at = max(sizes.pop(), 1), at + 1
        elif char == "{" and (counted := _quantifier(pattern, at)) is not None:
            low, high, at = counted
            times = int(min(max(low, 0 if high == math.inf else high), 1 << 40))
            sizes[-1] += last * (times - 1)
            last *= max(times, 1)
            continue
        elif char == "#" and verbose:
            ended = pattern.find("\n", at)
            at = len(pattern) if ended < 0 else ended + 1
            continue
        else:
            last, at = 1, at + 1
        sizes[-1] += last
    return sum(sizes)


_VERBOSE_FLAG: Final = re.compile(r"\(\?[a-zA-Z]*x[a-zA-Z-]*[):]")
"""An inline flag turning verbose mode on (``(?x)``, ``(?ix:``)."""
_GROUP_PREFIX: Final = re.compile(r"\?(?:P?<(?![=!])[^>]*>|P=[^)]*|<[=!]|[:=!>|]|[a-zA-Z-]*:?)")
"""What follows a group's ``(`` before its content: ``?:``, ``?P<name>``, ``?<=``, flags."""


def _quantifier(pattern: str, at: int) -> tuple[int, float, int] | None:
    """The fewest and most repeats of the quantifier at *at*, and where it ends.

    None if no quantifier starts there.
    """
    found = _QUANTIFIER.match(pattern, at)
    if found is None:
        return None
    low, comma, high = found.groups()
    if found.group() in _REPEATS:
        least, most = _REPEATS[found.group()]
    elif not (low or high):
        return None  # "{}" or "{,}": literal braces
    else:
        least, most = _count(low or "0"), math.inf if comma and not high else _count(high or low)
    end = found.end()
    return least, most, end + (end < len(pattern) and pattern[end] in "?+")  # lazy or possessive


def _count(digits: str) -> int:
    """A quantifier's count; one of more than nine digits counts as a billion.

    (Python reads no more than 4,300 digits, and the regex engine no count past 4,294,967,295.)
    """
    return int(digits) if len(digits) <= 9 else 10**9


def _can_backtrack(pattern: str) -> bool:
    """Whether *pattern* may backtrack without bound; in doubt, it may.

    It may with a backreference or a conditional group, with a repeated group
    that holds a quantifier or alternatives (``(a+)+``, ``(a|aa)*``, ``(a?b?){2,}``),
    with more than one unbounded repeat (``a*a*b`` is quadratic per start), and
    with stacked optional parts whose choices multiply past a few dozen. Anything else
    costs at most the square of the line's length, times a small factor.
    """
    groups: list[bool] = [False]  # per open group: it holds a quantifier or an alternative
    last_group = False  # the atom before a quantifier is a group that holds one
    unbounded, choices, at = 0, 1.0, 0
    while at < len(pattern):
        char, quantifier = pattern[at], _quantifier(pattern, at)
        if quantifier is not None:
            least, most, at = quantifier
            if last_group and most > 1:
                return True
            unbounded += most == math.inf
            choices *= 1 if most == math.inf else most - least + 1
            groups[-1], last_group = True, False
            continue
        last_group = False
        if char == "\\":
            if pattern[at + 1 : at + 2] in ("", "g", "k") or pattern[at + 1 : at + 2].isdigit():
                return True  # a backreference (or a dangling escape)
            at += 2
            continue
        if char == "[":
            characters = _CHARACTER_CLASS.match(pattern, at)
            if characters is None:
                return True
            at = characters.end()
            continue
        if char == "(":
            if pattern.startswith(("(?P=", "(?(", "(?#"), at):
                return True
            groups.append(False)
            at += 2 if pattern.startswith("(?", at) else 1
            continue
        if char == ")" and len(groups) > 1:
            last_group = groups.pop()
            groups[-1] = groups[-1] or last_group
        elif char == "|":
            groups[-1] = True
        at += 1
    return unbounded > _MOST_UNBOUNDED_REPEATS or choices > _MOST_CHOICES


FILE_TYPES: Final[dict[str, tuple[str, ...]]] = {
    "c": ("*.c", "*.h"),
    "clojure": ("*.clj", "*.cljc", "*.cljs", "*.edn"),
    "cmake": ("CMakeLists.txt", "*.cmake"),
    "cpp": ("*.cpp", "*.cc", "*.cxx", "*.c++", "*.hpp", "*.hh", "*.hxx", "*.h++", "*.inl"),
    "cs": ("*.cs",),
    "css": ("*.css", "*.scss", "*.sass", "*.less"),
    "csv": ("*.csv",),
    "dart": ("*.dart",),
    "docker": ("Dockerfile", "Dockerfile.*", "*.dockerfile"),
    "elixir": ("*.ex", "*.exs", "*.eex", "*.heex"),
    "elm": ("*.elm",),
    "erlang": ("*.erl", "*.hrl"),
    "go": ("*.go",),
    "graphql": ("*.graphql", "*.graphqls", "*.gql"),
    "haskell": ("*.hs", "*.lhs"),
    "html": ("*.html", "*.htm", "*.xhtml"),
    "java": ("*.java", "*.jsp"),
    "js": ("*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"),
    "json": ("*.json", "*.jsonc", "*.jsonl", "*.geojson"),
    "jupyter": ("*.ipynb",),
    "kotlin": ("*.kt", "*.kts"),
    "lua": ("*.lua",),
    "make": ("Makefile", "makefile", "GNUmakefile", "*.mk", "*.mak"),
    "markdown": ("*.md", "*.markdown", "*.mdx", "*.mkd"),
    "md": ("*.md", "*.markdown", "*.mdx", "*.mkd"),
    "nix": ("*.nix",),
    "ocaml": ("*.ml", "*.mli", "*.mll", "*.mly"),
    "perl": ("*.pl", "*.pm", "*.t"),
    "php": ("*.php", "*.php3", "*.php4", "*.php5", "*.phtml"),
    "proto": ("*.proto",),
    "py": ("*.py", "*.pyi", "*.pyw"),
    "r": ("*.R", "*.r", "*.Rmd", "*.Rnw"),
    "rst": ("*.rst",),
    "ruby": ("*.rb", "*.gemspec", "Gemfile", "Rakefile", "*.rake"),
    "rust": ("*.rs",),
    "scala": ("*.scala", "*.sbt"),
    "sh": ("*.sh", "*.bash", "*.zsh", "*.ksh", ".bashrc", ".zshrc", ".profile"),
    "sql": ("*.sql", "*.psql"),
    "svelte": ("*.svelte",),
    "swift": ("*.swift",),
    "tex": ("*.tex", "*.ltx", "*.sty", "*.cls", "*.bib"),
    "tf": ("*.tf", "*.tfvars", "*.tf.json"),
    "toml": ("*.toml", "Cargo.lock"),
    "ts": ("*.ts", "*.tsx", "*.mts", "*.cts"),
    "txt": ("*.txt",),
    "xml": ("*.xml", "*.xsd", "*.xsl", "*.xslt", "*.svg"),
    "yaml": ("*.yaml", "*.yml"),
    "zig": ("*.zig",),
}
"""Type name -> file-name patterns (matched against the name, at any depth)."""


def type_matcher(name: str) -> GlobMatcher:
    """The matcher of the files of type *name*.

    Raises:
        InvalidArgument: *name* is no known type (the message lists them).

    """
    patterns = FILE_TYPES.get(name)
    if patterns is None:
        raise InvalidArgument(
            f"{name!r} is not a file type ctxfs knows",
            hint=f"Use one of: {', '.join(FILE_TYPES)}; or filter with `glob`.",
            details={"field": "type"},
        )
    return glob_matcher("{" + ",".join(patterns) + "}" if len(patterns) > 1 else patterns[0])
