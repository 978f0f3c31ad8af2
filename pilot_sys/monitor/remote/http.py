"""GET over one kept-alive HTTP/1.1 connection per host, with a timeout and the send and
receive times around each request.

Why not ``urllib.request``: it opens a new TCP connection per request (a handshake on both
ends at every scrape) and says ``Connection: close``, on which pmproxy 6.0 closes the
connection after the first chunk of a chunked answer, cutting off any answer longer than its
chunk size (one page by default). ``http.client`` (standard library) keeps the connection,
gets whole answers, and is reopened once when the server closed an idle one.
"""

from __future__ import annotations

import http.client
import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from pilot_sys.errors import PilotError


class RemoteUnavailable(PilotError):
    """A remote host did not answer, or answered with an error; the message names the URL."""

    def __init__(self, url: str, problem: str) -> None:
        self.url = url
        self.problem = problem
        super().__init__(f"{url}: {problem}")


@dataclass(frozen=True)
class Response:
    url: str
    body: bytes
    sent: float  # wall clock (time.time) just before the request was written
    received: float  # wall clock once the whole body was read

    @property
    def latency(self) -> float:
        return self.received - self.sent

    @property
    def midpoint(self) -> float:
        return (self.sent + self.received) / 2


class HttpConnection:
    """Requests to one ``scheme://host:port``; not thread-safe (one per host and thread)."""

    def __init__(self, base_url: str, timeout: float = 2.0) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{base_url}: not an http(s) URL")
        self.base_url = base_url
        self.timeout = timeout
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._connection: http.client.HTTPConnection | None = None

    def _connect(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        return cls(self._host, self._port, timeout=self.timeout)

    def get(self, url: str) -> Response:
        """The body of ``url`` (absolute, on this connection's host); a failure is one
        ``RemoteUnavailable`` naming the URL, never a hang longer than the timeout per attempt."""
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        for attempt in (0, 1):
            reused = self._connection is not None
            if self._connection is None:
                self._connection = self._connect()
            sent = time.time()
            try:
                self._connection.request("GET", target, headers={"Accept-Encoding": "identity"})
                reply = self._connection.getresponse()
                body = reply.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self.close()
                if reused and attempt == 0:
                    continue  # the server closed an idle kept-alive connection: reopen once
                raise RemoteUnavailable(url, f"connection closed ({type(exc).__name__})") from None
            except TimeoutError:
                self.close()
                raise RemoteUnavailable(url, f"no answer within {self.timeout:g} s") from None
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                raise RemoteUnavailable(url, _describe(exc)) from None
            received = time.time()
            if reply.status != 200:
                text = body[:200].decode("utf-8", "replace").strip().replace("\n", " ")
                raise RemoteUnavailable(url, f"HTTP {reply.status} {reply.reason}: {text}")
            return Response(url, body, sent, received)
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (nothing listens there)"
    if isinstance(exc, socket.gaierror):
        return f"host name does not resolve ({exc.strerror})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    return f"{type(exc).__name__}: {exc}"
