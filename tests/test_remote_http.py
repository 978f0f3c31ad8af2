"""The HTTP layer of the remote clients against small servers on loopback: errors name the URL,
a silent host costs no more than the timeout, connections are kept and reopened."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pilot_sys.monitor.remote.http import HttpConnection, RemoteUnavailable
from pilot_sys.monitor.remote.pcp import PmproxyClient
from pilot_sys.topology.remote_hosts import parse_host_spec


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as node_exporter and pmproxy do
    connections: list[tuple[str, int]] = []

    def setup(self) -> None:
        super().setup()
        type(self).connections.append(self.client_address)

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook's name
        status, body = (
            (400, b"missing collector: bogus\n")
            if "bogus" in self.path
            else (200, b"ok " + self.path.encode())
        )
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Handler]]]:
    handler = type("Handler", (_Handler,), {"connections": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def test_requests_share_one_connection(server) -> None:
    base, handler = server
    connection = HttpConnection(base, timeout=2)
    first = connection.get(f"{base}/metrics?collect[]=cpu")
    second = connection.get(f"{base}/metrics")
    assert first.body == b"ok /metrics?collect[]=cpu" and second.body == b"ok /metrics"
    assert first.sent <= first.received <= second.sent <= second.received
    assert len(handler.connections) == 1
    connection.close()


def test_http_error_names_url_status_and_reason(server) -> None:
    base, _ = server
    url = f"{base}/metrics?collect[]=bogus"
    with pytest.raises(RemoteUnavailable) as caught:
        HttpConnection(base).get(url)
    assert str(caught.value) == f"{url}: HTTP 400 Bad Request: missing collector: bogus"


def test_refused_connection() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/metrics"
    with pytest.raises(
        RemoteUnavailable, match=r"^http://127\.0\.0\.1:\d+/metrics: connection refused"
    ):
        HttpConnection(url).get(url)


def test_a_silent_host_costs_the_timeout_and_no_more() -> None:
    with socket.socket() as silent:  # accepts connections (backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/pmapi/fetch"
        started = time.monotonic()
        with pytest.raises(RemoteUnavailable, match="no answer within 0.3 s"):
            HttpConnection(url, timeout=0.3).get(url)
        assert time.monotonic() - started < 1.5


def test_pmproxy_client_refuses_an_answer_that_is_not_json(server) -> None:
    base, _ = server
    client = PmproxyClient(parse_host_spec(f"srv=pcp://{base.removeprefix('http://')}"))
    with pytest.raises(RemoteUnavailable, match="answer is not JSON"):
        client.fetch(["hinv.ncpu"])
