"""``python -m ctxfs.tools.cli``: the ``ctxfs`` command."""

from ctxfs.tools.cli import run

run()
