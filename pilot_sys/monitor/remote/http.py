"""GET over one kept-alive HTTP/1.1 connection per host: one deadline per answer, a size cap
per answer, the credentials fleets use, and the send and receive times around each request.

Why not ``urllib.request``: it opens a new TCP connection per request (a handshake on both
ends at every scrape) and says ``Connection: close``, on which pmproxy 6.0 closes the
connection after the first chunk of a chunked answer, cutting off any answer longer than its
chunk size (one page by default). ``http.client`` (standard library) keeps the connection,
gets whole answers, and is reopened once when the server closed an idle one.

Bounds. A socket timeout bounds each read, not the answer: a server that drips one byte every
half second never trips it. So every request has one deadline for the whole answer (connect,
headers and body), kept by one watchdog thread for the process that shuts the socket down when
the deadline passes (a blocked read then returns at once); and the body is read in pieces,
refused as soon as it passes ``max_bytes`` (or when its Content-Length says it will).

Credentials (``HttpAuth``): basic auth, a bearer token, and a CA file for a server behind TLS
with its own certificate authority. Secrets are sent in the Authorization header and kept in
memory only: never in a URL this module names in an error, never in a ``repr``.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from pilot_sys.credentials import HttpAuth
from pilot_sys.errors import PilotError

DEFAULT_MAX_BYTES = 16 * 1024 * 1024  # a filtered scrape is ~100 kB; a full one under 1 MB
READ_CHUNK = 64 * 1024


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


class _Watchdog:
    """One thread for the process that runs an action once its deadline passed (shutting
    a socket down), so that no read can outlast its request's deadline."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: dict[int, tuple[float, Callable[[], None]]] = {}
        self._next = 0
        self._thread: threading.Thread | None = None

    def arm(self, deadline: float, action: Callable[[], None]) -> int:
        with self._cond:
            token = self._next
            self._next += 1
            self._due[token] = (deadline, action)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="pilot-sys-http-deadlines", daemon=True
                )
                self._thread.start()
            self._cond.notify()
            return token

    def disarm(self, token: int) -> None:
        with self._cond:
            self._due.pop(token, None)

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for token in [k for k, (due, _) in self._due.items() if due <= now]:
                    _, action = self._due.pop(token)
                    try:
                        action()
                    except OSError:
                        pass  # already closed: nothing left to stop
                wait = min((due for due, _ in self._due.values()), default=now + 60.0) - now
                self._cond.wait(max(wait, 0.001))


_WATCHDOG = _Watchdog()


class HttpConnection:
    """Requests to one ``scheme://host:port``; not thread-safe (one per host and thread).

    ``timeout`` is the deadline of each answer, whole (seconds); ``max_bytes`` caps each
    answer's body; ``auth`` is sent with every request."""

    def __init__(
        self,
        base_url: str,
        timeout: float = 2.0,
        *,
        auth: HttpAuth | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{base_url}: not an http(s) URL")
        self.base_url = base_url
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.auth = auth
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._connection: http.client.HTTPConnection | None = None
        self._expired = False

    def _connect(self) -> http.client.HTTPConnection:
        if self._scheme == "https":
            cafile = self.auth.ca_file if self.auth is not None else None
            context = ssl.create_default_context(cafile=cafile)
            return http.client.HTTPSConnection(
                self._host, self._port, timeout=self.timeout, context=context
            )
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)

    def _abort(self) -> None:
        """The watchdog's action: the deadline passed, stop whatever read is blocked."""
        self._expired = True
        connection = self._connection
        sock = connection.sock if connection is not None else None
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)

    def _headers(self) -> dict[str, str]:
        headers = {"Accept-Encoding": "identity"}
        value = self.auth.header() if self.auth is not None else None
        if value is not None:
            headers["Authorization"] = value
        return headers

    def get(self, url: str) -> Response:
        """The body of ``url`` (absolute, on this connection's host); a failure is one
        ``RemoteUnavailable`` naming the URL, never a wait longer than the deadline."""
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        shown = url
        deadline = time.monotonic() + self.timeout
        for attempt in (0, 1):
            reused = self._connection is not None
            if self._connection is None:
                self._connection = self._connect()
            remaining = max(deadline - time.monotonic(), 0.001)
            self._connection.timeout = remaining  # bounds the connect and every single read
            if self._connection.sock is not None:
                self._connection.sock.settimeout(remaining)
            self._expired = False
            token = _WATCHDOG.arm(deadline, self._abort)
            sent = time.time()
            try:
                self._connection.request("GET", target, headers=self._headers())
                reply = self._connection.getresponse()
                body = self._read_body(reply, shown)
            except RemoteUnavailable:
                self.close()
                raise
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self.close()
                if self._expired:
                    raise self._late(shown) from None
                if reused and attempt == 0:
                    continue  # the server closed an idle kept-alive connection: reopen once
                raise RemoteUnavailable(
                    shown, f"connection closed ({type(exc).__name__})"
                ) from None
            except TimeoutError:
                self.close()
                raise self._late(shown) from None
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if self._expired:
                    raise self._late(shown) from None
                raise RemoteUnavailable(shown, _describe(exc)) from None
            finally:
                _WATCHDOG.disarm(token)
            received = time.time()
            if reply.status != 200:
                text = body[:200].decode("utf-8", "replace").strip().replace("\n", " ")
                problem = f"HTTP {reply.status} {reply.reason}: {text}"
                if reply.status in (401, 403):
                    sent_auth = self.auth.describe() if self.auth is not None else "none"
                    problem += f" (credentials sent: {sent_auth})"
                raise RemoteUnavailable(shown, problem)
            return Response(url, body, sent, received)
        raise AssertionError("unreachable")  # pragma: no cover

    def _late(self, url: str) -> RemoteUnavailable:
        return RemoteUnavailable(
            url, f"no answer within {self.timeout:g} s (the deadline for the whole answer)"
        )

    def _read_body(self, reply: http.client.HTTPResponse, url: str) -> bytes:
        """The body in pieces, refused once it passes ``max_bytes``."""
        length = reply.getheader("Content-Length")
        if length is not None and length.strip().isdigit() and int(length) > self.max_bytes:
            raise RemoteUnavailable(url, self._too_large(f"Content-Length {int(length)}"))
        pieces: list[bytes] = []
        total = 0
        while True:
            piece = reply.read(READ_CHUNK)
            if not piece:
                break
            total += len(piece)
            if total > self.max_bytes:
                raise RemoteUnavailable(url, self._too_large(f"more than {self.max_bytes}"))
            pieces.append(piece)
        if self._expired:
            raise self._late(url)
        return b"".join(pieces)

    def _too_large(self, size: str) -> str:
        return f"answer too large ({size} bytes; the cap is {self.max_bytes} bytes): not read"

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (nothing listens there)"
    if isinstance(exc, socket.gaierror):
        return f"host name does not resolve ({exc.strerror})"
    if isinstance(exc, ssl.SSLError):
        return f"TLS: {exc.reason or exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[0].lower() + exc.strerror[1:]
    return f"{type(exc).__name__}: {exc}"
