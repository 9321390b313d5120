"""The menu of project tasks: ``nox -l`` lists them, ``nox -s NAME`` runs one.

Every session runs in the locked uv workspace environment, so the versions are
the ones in ``uv.lock``.
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["lint", "typecheck", "tests"]


def _uv_run(session: nox.Session, *args: str) -> None:
    session.run("uv", "run", "--locked", *args, external=True)


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """Run the test suite (extra arguments go to pytest)."""
    _uv_run(session, "pytest", *session.posargs)


@nox.session(python=False)
def lint(session: nox.Session) -> None:
    """Check formatting and lint with ruff, and the import layers with import-linter."""
    _uv_run(session, "ruff", "format", "--check", ".")
    _uv_run(session, "ruff", "check", ".")
    _uv_run(session, "lint-imports")


@nox.session(python=False)
def typecheck(session: nox.Session) -> None:
    """Type-check every package and the tests with mypy --strict."""
    _uv_run(session, "mypy")


@nox.session(python=False)
def conformance(session: nox.Session) -> None:
    """Run only the backend conformance suites."""
    _uv_run(session, "pytest", "tests/conformance", *session.posargs)


@nox.session(python=False)
def bench(session: nox.Session) -> None:
    """Run the benchmarks and regenerate docs/benchmarks.md (ratios, not timed tests)."""
    session.run(".ci/servers", "install", "s3", "redis", external=True)
    session.run(".ci/servers", "start", "s3", "redis", external=True)
    try:
        _uv_run(session, "--group", "bench", "python", "-m", "benchmarks")
    finally:
        session.run(".ci/servers", "stop", "s3", "redis", external=True)


HARNESSES = ("openai-agents", "langchain", "claude-agent", "google-adk")
"""The harnesses ctxfs.tools adapts to; each is an extra of ctxfs-tools and a dependency group."""


@nox.session(python=False)
@nox.parametrize("harness", HARNESSES)
def harness(session: nox.Session, harness: str) -> None:
    """Type-check and test one harness's adapter in an environment of its own.

    Each harness gets ``.nox/harness-NAME`` (the locked dev tools plus its group), so its
    pins never meet another harness's.
    """
    module = harness.replace("-", "_")
    env = {"UV_PROJECT_ENVIRONMENT": f".nox/harness-{harness}", "CTXFS_HARNESS": harness}
    group = ("--no-default-groups", "--group", "typecheck", "--group", f"harness-{harness}")
    checked = (f"packages/tool-fs/src/ctxfs/tools/{module}.py", f"tests/harnesses/test_{module}.py")
    session.run("uv", "run", "--locked", *group, "mypy", *checked, env=env, external=True)
    session.run(
        "uv", "run", "--locked", *group, "pytest", f"tests/harnesses/test_{module}.py",
        "tests/harnesses/test_docs_blocks.py", *session.posargs, env=env, external=True,
    )  # fmt: skip


@nox.session(python=False)
def docs(session: nox.Session) -> None:
    """Build the documentation site (guides and API reference) into ``site/``; any warning fails.

    It runs in ``.nox/docs`` (the locked ``docs`` group, plus ruff to format signatures);
    mkdocstrings reads the sources statically, so no harness needs to be installed.
    """
    env = {"UV_PROJECT_ENVIRONMENT": ".nox/docs"}
    group = ("--no-default-groups", "--group", "docs", "--group", "lint")
    session.run(
        "uv", "run", "--locked", *group, "mkdocs", "build", "--strict", "--site-dir", "site",
        *session.posargs, env=env, external=True,
    )  # fmt: skip
