"""A small HTTP proxy in front of a test server: it counts requests, drops conditions, fakes faults.

Dropping ``If-Match``/``If-None-Match`` headers (S3) or ``ifGenerationMatch``
parameters (GCS) turns a real server into one that silently ignores
conditional writes, as some S3-compatible stores and proxies do.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlencode, urlsplit

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "expect", "host"}


@dataclass(frozen=True)
class Fault:
    """Answer the next *method* request with *status*, after forwarding it if *forward*.

    With *hang_up*, close the connection instead of answering.
    """

    method: str
    status: int = 503
    forward: bool = False
    hang_up: bool = False


@dataclass
class Proxy:
    """What the proxy saw, what it drops, and the faults it is to inject, in order."""

    upstream: int
    drop_headers: frozenset[str] = frozenset()
    drop_params: frozenset[str] = frozenset()
    drop_on: frozenset[str] | None = None
    """The methods whose headers and parameters are dropped (None: every one)."""
    requests: list[tuple[str, str]] = field(default_factory=list)
    """``(method, path)`` of every request, in order."""
    sent: list[int] = field(default_factory=list)
    """The bytes of the body of every answer, in order."""
    url: str = ""
    faults: list[Fault] = field(default_factory=list)
    not_found: Callable[[str], bytes] | None = None
    """The body of every 404, from the request's path and query (None: the upstream's)."""
    on_request: Callable[[str, str], None] | None = None
    """Called with each request's method and path before it is forwarded (another writer's turn)."""


@contextmanager
def proxy(
    upstream: int,
    *,
    drop_headers: Collection[str] = frozenset(),
    drop_params: Collection[str] = frozenset(),
    drop_on: Collection[str] | None = None,
) -> Iterator[Proxy]:
    """Run a proxy to ``127.0.0.1:upstream`` on a free loopback port."""
    seen = Proxy(
        upstream=upstream,
        drop_headers=frozenset(h.lower() for h in drop_headers),
        drop_params=frozenset(drop_params),
        drop_on=None if drop_on is None else frozenset(drop_on),
    )

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            parts = urlsplit(self.path)
            dropping = seen.drop_on is None or self.command in seen.drop_on
            params = seen.drop_params if dropping else frozenset()
            query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                     if k not in params]  # fmt: skip
            target = parts.path + (f"?{urlencode(query)}" if query else "")
            seen.requests.append((self.command, parts.path))
            if seen.on_request is not None:
                seen.on_request(self.command, parts.path)
            dropped = _HOP_BY_HOP | (seen.drop_headers if dropping else frozenset())
            headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
            fault = None
            if seen.faults and seen.faults[0].method == self.command:
                fault = seen.faults.pop(0)
            status, reason, response_headers, payload = 0, "", [], b""
            if fault is None or fault.forward:
                upstream = http.client.HTTPConnection("127.0.0.1", seen.upstream, timeout=30)
                try:
                    upstream.request(self.command, target, body=body, headers=headers)
                    response = upstream.getresponse()
                    payload = response.read()
                    status, reason = response.status, response.reason
                    response_headers = response.getheaders()
                finally:
                    upstream.close()
            if fault is not None and fault.hang_up:
                self.close_connection = True
                return
            if fault is not None:
                status, reason, response_headers, payload = fault.status, "Injected", [], b""
            if status == 404 and seen.not_found is not None:
                payload = seen.not_found(self.path)
            self.send_response(status, reason)
            for key, value in response_headers:
                if key.lower() not in _HOP_BY_HOP | {"content-length"}:
                    self.send_header(key, value)
            seen.sent.append(len(payload))
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward  # noqa: N815

        def log_message(self, format: str, *args: object) -> None:
            del format, args

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    seen.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
