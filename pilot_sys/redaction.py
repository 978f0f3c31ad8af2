"""Secrets kept out of everything pilot-sys writes or prints.

A password may arrive inside a URL (``http://admin:s3cr3t@nas1:9100``, the form fleets paste
from their scrape configs); it is used for the request and nowhere else. ``redact`` masks the
password of every URL in a text, so a command line, a ``--host`` value or an error message can
be stored in session.json, result.json and the reports, or printed, as they are; the secrets
themselves live in this process's memory only (``topology.remote_hosts`` keeps them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "***"
# scheme://user:password@  (the password runs up to the last '@' before the host part)
_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^/?#@:\s]*):(?P<secret>[^/?#\s]*)@")


def redact(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@`` replaced by ``***``."""
    return _USERINFO.sub(lambda m: f"{m.group('head')}:{MASK}@", text)


def redact_all(texts: Iterable[str]) -> list[str]:
    """Each of ``texts`` redacted (a command line, a list of ``--host`` values)."""
    return [redact(t) for t in texts]
