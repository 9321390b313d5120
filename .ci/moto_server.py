"""moto's S3 server with its changes applied one at a time: ``python moto_server.py HOST PORT``.

moto checks a conditional write's ``If-Match`` / ``If-None-Match`` and then stores
the object without a lock, so under its threaded server two conditional PUTs of one
ETag can both succeed, which S3 never allows. The tests prove ctxfs's
compare-and-swap, not the emulator's: every request that may change the store runs
alone here; reads stay concurrent (a streamed download never blocks a write).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.server import MotoRequestHandler
from werkzeug.serving import run_simple

READS = frozenset({"GET", "HEAD", "OPTIONS"})


def main() -> None:
    """Serve on HOST PORT (the arguments) until stopped."""
    host, port = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))
    app = DomainDispatcherApplication(create_backend_app)
    changes = threading.Lock()

    def serialized(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ["REQUEST_METHOD"] in READS:
            return app(environ, start_response)
        with changes:
            return app(environ, start_response)

    run_simple(host, port, serialized, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
