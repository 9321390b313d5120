"""File types for grep's ``type`` filter: ripgrep's common type names, as glob patterns.

A type is a name for a set of file-name patterns (``py`` is ``*.py``, ``*.pyi``);
the names are those ``rg --type-list`` uses for the same languages, so a model
that knows ripgrep knows them.
"""

from __future__ import annotations

from typing import Final

from ctxfs.core import GlobMatcher, InvalidArgument, glob_matcher

__all__ = ["FILE_TYPES", "type_matcher"]

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
