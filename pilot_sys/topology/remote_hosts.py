"""Declared remote hosts: ``--host NAME=URL``, where the URL's scheme chooses the monitoring
engine that already runs there (no agent of our own).

* ``http://h:9100`` or ``https://...``: Prometheus node_exporter, scraped at ``/metrics``
  (or the path given, for an exporter behind a proxy);
* ``pcp://h:44322``: Performance Co-Pilot through pmproxy's REST API (plain HTTP underneath);
  ``pcps://`` for pmproxy behind TLS;
* ``prom://server:9090?instance=h:9100``: the host's series in a Prometheus server (or a
  compatible engine) that already scrapes it, selected by the label matchers of the query
  (``instance=...``, ``job=...``); ``proms://`` for a server behind TLS.

Credentials, as Prometheus's own scrape configs hold them: ``user:password@`` in the URL (basic
auth; the password is masked wherever the URL is shown or stored, and kept in memory only),
and the query parameters ``password_file`` (with ``user@``), ``bearer_token_file`` and
``ca_file`` (files are read once, at parsing; a session resumed later reads them again).

``NAME`` becomes the host part of the host's component ids (``nic:NAME/eth0``), so it is
restricted to what a host name may hold; ``host`` is taken by this machine (``cpu:host``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from pilot_sys.credentials import HttpAuth, read_secret_file
from pilot_sys.errors import BadInput
from pilot_sys.redaction import MASK, redact

LOCAL_HOST = "host"  # the name this machine's components carry (cpu:host, memory:host)
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,62})$")


class Backend(StrEnum):
    NODE_EXPORTER = "node_exporter"
    PCP = "pcp"
    PROMETHEUS = "prometheus"


_SCHEMES: dict[str, tuple[Backend, str, int]] = {
    # scheme -> (backend, transport scheme, default port)
    "http": (Backend.NODE_EXPORTER, "http", 9100),
    "https": (Backend.NODE_EXPORTER, "https", 9100),
    "pcp": (Backend.PCP, "http", 44322),
    "pcps": (Backend.PCP, "https", 44322),
    "prom": (Backend.PROMETHEUS, "http", 9090),
    "proms": (Backend.PROMETHEUS, "https", 9090),
}
# query parameters that name credential files (the names of Prometheus's scrape configs)
CREDENTIAL_PARAMETERS = ("password_file", "bearer_token_file", "ca_file")
_LABEL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# inline passwords by the redacted spec that stands for them: in this process's memory only, so
# that a spec stored redacted (session.json) still authenticates within the same run
_INLINE_PASSWORDS: dict[str, str] = {}


class RemoteHost(BaseModel):
    """One declared host: ``base_url`` is what the backend client talks to."""

    model_config = ConfigDict(frozen=True)

    name: str
    backend: Backend
    address: str  # the host part of the URL (a name or an IP literal); prom://: the instance's
    port: int
    base_url: str  # e.g. http://10.0.0.5:9100/metrics (node_exporter), http://10.0.0.5:44322 (PCP)
    spec: str  # as the user wrote it, its password masked
    # prom://: the label matchers that select this host's series (name, value), sorted
    labels: tuple[tuple[str, str], ...] = ()
    # never serialised, never shown
    auth: HttpAuth | None = Field(default=None, exclude=True, repr=False)


def parse_host_spec(text: str, option: str = "--host") -> RemoteHost:
    """``NAME=URL`` -> RemoteHost; any problem is one ``BadInput`` line naming the option."""
    shown = redact(text)
    where = f"{option} {shown}"
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
    if parts.fragment:
        raise BadInput(where, "the URL may not carry a fragment")
    backend, transport, default_port = _SCHEMES[scheme]
    query = parse_qsl(parts.query, keep_blank_values=True) if parts.query else []
    files = {k: v for k, v in query if k in CREDENTIAL_PARAMETERS}
    labels = tuple(sorted((k, v) for k, v in query if k not in CREDENTIAL_PARAMETERS))
    if backend is not Backend.PROMETHEUS and labels:
        raise BadInput(
            where,
            "the URL's query may carry only "
            + ", ".join(CREDENTIAL_PARAMETERS)
            + " (the client adds its own)",
        )
    if backend is Backend.PROMETHEUS:
        bad = [k for k, _ in labels if not _LABEL.match(k)]
        if bad or not labels:
            raise BadInput(
                where,
                "a prom:// URL selects the host's series by label matchers in its query, "
                "e.g. prom://prometheus:9090?instance=nas1:9100",
            )
    auth = credentials_of(where, shown, parts, files)
    port = port or default_port
    literal = f"[{address}]" if ":" in address else address
    if backend is Backend.PCP:
        if parts.path not in ("", "/"):
            raise BadInput(where, "a pcp:// URL names pmproxy's host and port only (no path)")
        base_url = f"{transport}://{literal}:{port}"
    elif backend is Backend.PROMETHEUS:  # the API's root (a path when behind a proxy)
        base_url = f"{transport}://{literal}:{port}{parts.path.rstrip('/')}"
        address = instance_address(dict(labels).get("instance")) or name
    else:
        path = parts.path if parts.path not in ("", "/") else "/metrics"
        base_url = f"{transport}://{literal}:{port}{path}"
    return RemoteHost(
        name=name,
        backend=backend,
        address=address,
        port=port,
        base_url=base_url,
        spec=shown,
        labels=labels,
        auth=auth,
    )


def instance_address(instance: str | None) -> str | None:
    """The host part of a Prometheus ``instance`` label (``10.0.0.5:9100``, ``[fd00::5]:9100``,
    ``nas1``): the monitored host's address, which routes lead to (not the server's)."""
    if not instance:
        return None
    try:
        return urlsplit(f"//{instance}").hostname or None
    except ValueError:
        return None


def credentials_of(
    where: str, shown: str, parts: SplitResult, files: dict[str, str]
) -> HttpAuth | None:
    """The credentials a spec names: inline ``user:password@``, or files read now."""
    username = unquote(parts.username) if parts.username else None
    password = parts.password
    if password is not None:
        password = unquote(password)
        if password == MASK:  # a stored (redacted) spec: the password of this run, if any
            password = _INLINE_PASSWORDS.get(shown)
        else:
            _INLINE_PASSWORDS[shown] = password
    token = None
    for parameter, path in files.items():
        try:
            secret = read_secret_file(path) if parameter != "ca_file" else None
            if parameter == "ca_file" and not Path(path).is_file():
                raise FileNotFoundError(path)
        except (OSError, ValueError) as exc:
            problem = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise BadInput(where, f"{parameter} {path}: {problem}") from None
        if parameter == "password_file":
            if username is None:
                raise BadInput(where, "password_file needs a user name in the URL (user@host)")
            password = secret
        elif parameter == "bearer_token_file":
            token = secret
    if username is None and token is None and "ca_file" not in files:
        return None
    return HttpAuth(
        username=username, password=password, bearer_token=token, ca_file=files.get("ca_file")
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
