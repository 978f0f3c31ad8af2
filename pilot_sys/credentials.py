"""Credentials for the servers of remote hosts (``--host`` URLs), as fleets configure them:
basic auth, a bearer token, a CA file for TLS; read from files the way Prometheus's own scrape
configuration does (``password_file``, ``bearer_token_file``, ``ca_file``), or a password given
inline in the URL.

Secrets live in this process's memory only: ``HttpAuth`` never shows them in its ``repr``, and
``redaction.redact`` masks an inline password wherever the URL is printed or stored.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path

MAX_SECRET_FILE_BYTES = 64 * 1024


@dataclass(frozen=True)
class HttpAuth:
    """How to authenticate to one server. ``username``/``password``: basic auth;
    ``bearer_token``: ``Authorization: Bearer``; ``ca_file``: the CA bundle that signed an
    https server's certificate (None: the system's)."""

    username: str | None = None
    password: str | None = field(default=None, repr=False)
    bearer_token: str | None = field(default=None, repr=False)
    ca_file: str | None = None

    def header(self) -> str | None:
        """The Authorization header's value, or None when there is nothing to send."""
        if self.bearer_token is not None:
            return f"Bearer {self.bearer_token}"
        if self.username is not None:
            pair = f"{self.username}:{self.password or ''}".encode()
            return "Basic " + base64.b64encode(pair).decode("ascii")
        return None

    def describe(self) -> str:
        """The kind of credentials, without them (for notes and reports)."""
        kinds = []
        if self.bearer_token is not None:
            kinds.append("bearer token")
        elif self.username is not None:
            kinds.append(f"basic auth as {self.username}")
        if self.ca_file:
            kinds.append(f"CA file {self.ca_file}")
        return ", ".join(kinds) or "none"


def read_secret_file(path: str) -> str:
    """The first line of a secret file (a token or a password), bounded; raises ``OSError`` or
    ``ValueError`` with the problem (the caller names the option)."""
    with Path(path).open("rb") as handle:
        data = handle.read(MAX_SECRET_FILE_BYTES + 1)
    if len(data) > MAX_SECRET_FILE_BYTES:
        raise ValueError(f"larger than {MAX_SECRET_FILE_BYTES} bytes: not a secret file")
    text = data.decode("utf-8", "strict").strip()
    if not text or "\n" in text:
        raise ValueError("expected the secret alone on one line")
    return text
