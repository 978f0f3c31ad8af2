"""A fleet declared at once: ``--prometheus URL``, the Prometheus server (or a compatible
engine) that already scrapes the hosts, with label matchers in the URL's query selecting them.

The syntax is PromQL's own matchers, one per query parameter: ``LABEL=VALUE`` (equal),
``LABEL!=VALUE`` (not equal), ``LABEL=~REGEX`` and ``LABEL!~REGEX`` (a regex matching the whole
value, as PromQL's are); a value may be written in double quotes. So
``http://prom:9090?job=storage&instance=~"10.0.1.*"`` selects ``{job="storage",
instance=~"10.0.1.*"}``. The credential parameters of ``--host`` URLs (``password_file``,
``bearer_token_file``, ``ca_file``) and an inline ``user:password@`` are the server's.

This module parses the URL and names the hosts the engine reports (pure: no I/O; the query is
``monitor.remote.prometheus_discovery``). Each host is named by node_exporter's ``nodename``
(``node_uname_info``), else the host part of its ``instance`` label; names that would collide
get the instance's address, then its port, then a number, always in the order of the
instances, so the same fleet gets the same names on every run. A host that a ``--host`` option
already declares (the same address) is that host, under the name the user gave.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from urllib.parse import unquote, urlencode, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from pilot_sys.credentials import HttpAuth
from pilot_sys.errors import BadInput
from pilot_sys.redaction import redact
from pilot_sys.topology.remote_hosts import (
    _NAME,
    CREDENTIAL_PARAMETERS,
    LOCAL_HOST,
    RemoteHost,
    credentials_of,
    instance_address,
)

OPTION = "--prometheus"
MAX_FLEET_HOSTS = 2000  # more is refused: narrow the selector
DEFAULT_PORT = 9090
EXAMPLE = "e.g. http://prom:9090?job=node or 'http://prom:9090?job=node&instance=~\"10.0.1.*\"'"
_MATCHER = re.compile(r"^(?P<label>[A-Za-z_][A-Za-z0-9_]*)\s*(?P<op>=~|!~|!=|=)\s*(?P<value>.*)$")
_TRANSPORTS = {"http": "prom", "https": "proms"}  # the scheme -> the prom:// form of its hosts


class Matcher(BaseModel):
    """One PromQL label matcher."""

    model_config = ConfigDict(frozen=True)

    label: str
    op: str  # =, !=, =~, !~
    value: str

    def promql(self) -> str:
        quoted = '"' + self.value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return f"{self.label}{self.op}{quoted}"


class FleetQuery(BaseModel):
    """A parsed ``--prometheus`` URL: the API's root, the matchers, the credentials."""

    model_config = ConfigDict(frozen=True)

    shown: str  # as the user wrote it, its password masked
    base_url: str  # http(s)://server:port[/path], no credentials
    matchers: tuple[Matcher, ...] = ()
    # what a prom:// host of this server repeats: scheme, user:password@ (kept in memory only)
    # and the credential files
    host_scheme: str = Field(default="prom", exclude=True)
    userinfo: str = Field(default="", exclude=True, repr=False)
    netloc: str = Field(default="", exclude=True)  # server:port
    path: str = Field(default="", exclude=True)
    credential_files: tuple[tuple[str, str], ...] = Field(default=(), exclude=True)
    auth: HttpAuth | None = Field(default=None, exclude=True, repr=False)

    @property
    def where(self) -> str:
        return f"{OPTION} {self.shown}"

    def selector(self) -> str:
        """The matchers as PromQL writes them, ``{job="storage",instance=~"10.0.1.*"}``."""
        return "{" + ",".join(m.promql() for m in self.matchers) + "}"


class FoundInstance(BaseModel):
    """One instance the engine reports for the selector (node_uname_info's labels)."""

    model_config = ConfigDict(frozen=True)

    instance: str
    job: str | None = None
    nodename: str | None = None


class FleetHost(BaseModel):
    """One host of a fleet, as shown at start and kept in result.json."""

    name: str
    instance: str
    job: str | None = None
    nodename: str | None = None
    note: str | None = None  # why the name is not the plain one, or that --host declared it


class PrometheusFleet(BaseModel):
    """What one ``--prometheus`` option resolved to (``session.json``, ``result.json``)."""

    url: str  # password masked
    selector: str
    hosts: list[FleetHost] = Field(default_factory=list)


def parse_fleet_url(text: str) -> FleetQuery:
    """``--prometheus URL`` -> FleetQuery; any problem is one ``BadInput`` line."""
    shown = redact(text.strip())
    where = f"{OPTION} {shown}"
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError as exc:
        raise BadInput(where, f"not a URL ({exc}); {EXAMPLE}") from None
    scheme = parts.scheme.lower()
    if scheme not in _TRANSPORTS:
        raise BadInput(
            where,
            f"URL scheme {parts.scheme + '://' if parts.scheme else 'missing'}: the server's "
            f"HTTP API is http:// or https://, {EXAMPLE}",
        )
    if not parts.hostname:
        raise BadInput(where, f"the URL names no server; {EXAMPLE}")
    if parts.fragment:
        raise BadInput(where, "the URL may not carry a fragment (#...)")
    matchers: list[Matcher] = []
    files: list[tuple[str, str]] = []
    for piece in parts.query.split("&") if parts.query else []:
        if not piece:
            continue
        decoded = unquote(piece)
        found = _MATCHER.match(decoded)
        if found is None:
            raise BadInput(
                where,
                f"{decoded!r} is not a label matcher: LABEL=VALUE, LABEL!=VALUE, LABEL=~REGEX "
                f"or LABEL!~REGEX; {EXAMPLE}",
            )
        label, op, value = found["label"], found["op"], found["value"]
        if label in CREDENTIAL_PARAMETERS:
            if op != "=":
                raise BadInput(where, f"{label} names a file: {label}=PATH")
            files.append((label, value))
            continue
        if label.startswith("__"):
            raise BadInput(where, f"label {label}: names starting with __ are the engine's own")
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1].replace('\\"', '"')
        if op in ("=~", "!~"):
            try:
                re.compile(value)
            except re.error as exc:
                raise BadInput(
                    where, f"{label}{op}{value}: not a regular expression ({exc})"
                ) from None
        matchers.append(Matcher(label=label, op=op, value=value))
    auth = credentials_of(where, shown, parts, dict(files))
    literal = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = f"{literal}:{port or DEFAULT_PORT}"
    path = parts.path.rstrip("/")
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    return FleetQuery(
        shown=shown,
        base_url=f"{scheme}://{netloc}{path}",
        matchers=tuple(matchers),
        host_scheme=_TRANSPORTS[scheme],
        userinfo=userinfo,
        netloc=netloc,
        path=path,
        credential_files=tuple(files),
        auth=auth,
    )


def host_spec(query: FleetQuery, host: FleetHost) -> str:
    """The ``--host`` form of one host of the fleet, credentials included (secrets as the user
    gave them: ``remote_hosts.parse_host_spec`` keeps an inline password in memory only)."""
    labels = [("instance", host.instance)]
    if host.job is not None:
        labels.append(("job", host.job))
    userinfo = f"{query.userinfo}@" if query.userinfo else ""
    params = urlencode([*labels, *query.credential_files], safe=":[]/")
    return f"{host.name}={query.host_scheme}://{userinfo}{query.netloc}{query.path}?{params}"


def _sanitise(text: str) -> str:
    """A component-id-safe host name from a label value (letters, digits, '.', '-', '_')."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-_.")[:63].rstrip("-_.")
    return cleaned if cleaned and _NAME.match(cleaned) else "instance"


def _address_and_port(instance: str) -> tuple[str, str]:
    address = instance_address(instance) or instance
    try:
        port = urlsplit(f"//{instance}").port
    except ValueError:
        port = None
    return address, str(port) if port is not None else ""


def _candidates(found: FoundInstance) -> list[str]:
    """The names one instance may take, plainest first."""
    address, port = _address_and_port(found.instance)
    base = _sanitise(found.nodename or address)
    out = [base]
    if _sanitise(address) != base:
        out.append(_sanitise(f"{base}-{address}"))
    if port:
        out.append(_sanitise(f"{out[-1]}-{port}"))
    return out


def name_fleet(
    found: Sequence[FoundInstance], declared: Sequence[RemoteHost] = ()
) -> list[FleetHost]:
    """Every instance named, uniquely and deterministically (see the module's docstring);
    an instance at the address of a declared host is that host, under its name."""
    by_address = {h.address.lower(): h for h in declared}
    ordered: list[FoundInstance] = []
    seen: set[str] = set()
    for item in sorted(found, key=lambda f: (f.instance, f.job or "", f.nodename or "")):
        if item.instance not in seen:  # one instance under several jobs is one host
            seen.add(item.instance)
            ordered.append(item)
    hosts: dict[int, FleetHost] = {}
    twins: set[int] = set()
    for i, item in enumerate(ordered):
        twin = by_address.get(_address_and_port(item.instance)[0].lower())
        if twin is not None:
            twins.add(i)
            hosts[i] = FleetHost(
                **item.model_dump(),
                name=twin.name,
                note=f"the same address as {twin.name}, declared already",
            )
    # the names depend on the whole fleet: a host declared by --host still counts in them, so
    # its fleet-mates are named the same with or without that option
    used: set[str] = {LOCAL_HOST, *(h.name for h in declared)}
    candidates = {i: _candidates(item) for i, item in enumerate(ordered)}
    plain = {i: c[0] for i, c in candidates.items()}
    shared = Counter(plain.values())
    open_ = [i for i in range(len(ordered)) if i not in twins]
    for level in range(3):
        chosen = {i: candidates[i][min(level, len(candidates[i]) - 1)] for i in [*open_, *twins]}
        counts = Counter(chosen.values())
        for i in list(open_):
            name = chosen[i]
            if counts[name] == 1 and name not in used:
                used.add(name)
                open_.remove(i)
                hosts[i] = _named(ordered[i], name, plain[i], shared[plain[i]])
    for i in open_:  # still taken: the plain name and a number
        number = 2
        while f"{plain[i]}-{number}" in used:
            number += 1
        name = _sanitise(f"{plain[i]}-{number}")
        used.add(name)
        hosts[i] = _named(ordered[i], name, plain[i], shared[plain[i]])
    return [hosts[i] for i in range(len(ordered))]


def _named(item: FoundInstance, name: str, plain: str, sharing: int) -> FleetHost:
    note = None
    if name != plain:
        why = (
            f"{sharing} instances would be {plain!r}"
            if sharing > 1
            else f"{plain!r} is taken (this machine's or a --host name)"
        )
        note = f"{why}: named with its address"
    return FleetHost(**item.model_dump(), name=name, note=note)


def describe_fleet(fleet: PrometheusFleet, limit: int = 50) -> list[str]:
    """The lines shown once at start: the fleet, then one line per host (the first ``limit``)."""
    count = len(fleet.hosts)
    lines = [
        f"{OPTION} {fleet.url}: {count} host{'s' if count != 1 else ''} "
        f"(node_uname_info{fleet.selector})"
    ]
    width = max((len(h.name) for h in fleet.hosts[:limit]), default=0)
    for host in fleet.hosts[:limit]:
        extra = f"  ({host.note})" if host.note else ""
        lines.append(f"  {host.name:<{width}}  {host.instance}{extra}")
    if count > limit:
        lines.append(f"  ... and {count - limit} more (all of them in result.json)")
    return lines
