"""Declared remote hosts: ``--host NAME=URL``, where the URL's scheme chooses the monitoring
engine that already runs there (no agent of our own).

* ``http://h:9100`` or ``https://...``: Prometheus node_exporter, scraped at ``/metrics``
  (or the path given, for an exporter behind a proxy);
* ``pcp://h:44322``: Performance Co-Pilot through pmproxy's REST API (plain HTTP underneath);
  ``pcps://`` for pmproxy behind TLS.

``NAME`` becomes the host part of the host's component ids (``nic:NAME/eth0``), so it is
restricted to what a host name may hold; ``host`` is taken by this machine (``cpu:host``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from pilot_sys.errors import BadInput

LOCAL_HOST = "host"  # the name this machine's components carry (cpu:host, memory:host)
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,62})$")


class Backend(StrEnum):
    NODE_EXPORTER = "node_exporter"
    PCP = "pcp"


_SCHEMES: dict[str, tuple[Backend, str, int]] = {
    # scheme -> (backend, transport scheme, default port)
    "http": (Backend.NODE_EXPORTER, "http", 9100),
    "https": (Backend.NODE_EXPORTER, "https", 9100),
    "pcp": (Backend.PCP, "http", 44322),
    "pcps": (Backend.PCP, "https", 44322),
}


class RemoteHost(BaseModel):
    """One declared host: ``base_url`` is what the backend client talks to."""

    model_config = ConfigDict(frozen=True)

    name: str
    backend: Backend
    address: str  # the host part of the URL (a name or an IP literal)
    port: int
    base_url: str  # e.g. http://10.0.0.5:9100/metrics (node_exporter), http://10.0.0.5:44322 (PCP)
    spec: str  # as the user wrote it


def parse_host_spec(text: str, option: str = "--host") -> RemoteHost:
    """``NAME=URL`` -> RemoteHost; any problem is one ``BadInput`` line naming the option."""
    where = f"{option} {text}"
    name, sep, url = text.partition("=")
    name, url = name.strip(), url.strip()
    if not sep or not name or not url:
        raise BadInput(
            where, "expected NAME=URL, e.g. nas1=http://nas1:9100 or nas1=pcp://nas1:44322"
        )
    if not _NAME.match(name):
        raise BadInput(
            where,
            f"host name {name!r}: letters, digits, '.', '-' and '_' only (it becomes "
            "part of component ids such as nic:NAME/eth0)",
        )
    if name == LOCAL_HOST:
        raise BadInput(
            where, f"the name {LOCAL_HOST!r} is this machine's (cpu:host); choose another"
        )
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        known = ", ".join(f"{s}://" for s in _SCHEMES)
        raise BadInput(
            where,
            f"URL scheme {parts.scheme + '://' if parts.scheme else 'missing'}: "
            f"use {known} (http is node_exporter, pcp is pmproxy)",
        )
    try:
        port = parts.port
    except ValueError:
        raise BadInput(where, "the URL's port is not a number from 1 to 65535") from None
    address = parts.hostname
    if not address:
        raise BadInput(where, "the URL names no host")
    if parts.query or parts.fragment:
        raise BadInput(where, "the URL may not carry a query or fragment (the client adds its own)")
    backend, transport, default_port = _SCHEMES[scheme]
    port = port or default_port
    literal = f"[{address}]" if ":" in address else address
    if backend is Backend.PCP:
        if parts.path not in ("", "/"):
            raise BadInput(where, "a pcp:// URL names pmproxy's host and port only (no path)")
        base_url = f"{transport}://{literal}:{port}"
    else:
        path = parts.path if parts.path not in ("", "/") else "/metrics"
        base_url = f"{transport}://{literal}:{port}{path}"
    return RemoteHost(
        name=name, backend=backend, address=address, port=port, base_url=base_url, spec=text
    )


def parse_host_specs(texts: Iterable[str], option: str = "--host") -> list[RemoteHost]:
    """Several ``--host`` values; a name declared twice is an error (ids would collide)."""
    hosts: list[RemoteHost] = []
    seen: dict[str, str] = {}
    for text in texts:
        host = parse_host_spec(text, option)
        if host.name in seen:
            raise BadInput(
                f"{option} {text}", f"host {host.name!r} is already declared as {seen[host.name]}"
            )
        seen[host.name] = text
        hosts.append(host)
    return hosts
