"""A stand-in exporter's HTTP side: Prometheus text exposition for each GET, nothing logged.

Shared by the replayed GPU hosts of the live tests (tests/dcgm_exporter_replay.py) and the
simulated fleet of benchmarks/prometheus_cost.py; each says what to serve for a path.
"""

from __future__ import annotations

from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

CONTENT_TYPE = "text/plain; version=0.0.4"


def exposition_handler(
    body_for: Callable[[str], bytes | None], *, protocol: str = "HTTP/1.0"
) -> type[BaseHTTPRequestHandler]:
    """A handler class answering GET ``path`` with ``body_for(path)``, or 404 where it is None."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = protocol

        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            body = body_for(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    return Handler
