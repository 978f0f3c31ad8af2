"""Performance Co-Pilot through pmproxy's REST API: ``/pmapi/context`` once, the metrics'
descriptors (``/pmapi/metric``: units, instance domain) and instance names (``/pmapi/indom``)
once, then ``/pmapi/fetch`` of exactly the metrics asked for.

pmproxy answers each fetch with the time pmcd took it (``timestamp``, the remote host's clock):
that, not the time the answer arrived, is when the sample was taken. pmproxy 6 writes it as
seconds "." nanoseconds without zero-padding the nanoseconds (0.048450560 s past a second comes
as ``.48450560``), so a JSON parser reads a time up to 0.9 s late; ``fetch_timestamp`` reads the
raw text instead, the fraction as a count of nanoseconds. Values come in each
metric's own units (``Kbyte``, ``millisec``), converted here to bytes and seconds from the
descriptor, never assumed. ``pmcd.cputime.total`` (pmcd and its DSO agents) rides along in each
fetch: what sampling costs the remote host; pmproxy's own CPU time is not a PCP metric unless
its own agent is installed, so it is not counted here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlencode

from pydantic import BaseModel, Field

from pilot_sys.monitor.remote.counters import RemoteCounters, core_counters
from pilot_sys.monitor.remote.http import HttpConnection, RemoteUnavailable, Response
from pilot_sys.topology.components import LimitSource
from pilot_sys.topology.remote_hosts import RemoteHost
from pilot_sys.topology.remote_inventory import (
    RemoteDisk,
    RemoteFilesystem,
    RemoteInventory,
    RemoteNic,
    block_id,
    cpu_id,
    nic_id,
)

CPU_BUSY = (
    "kernel.all.cpu.user",
    "kernel.all.cpu.nice",
    "kernel.all.cpu.sys",
    "kernel.all.cpu.irq.hard",
    "kernel.all.cpu.irq.soft",
)
CPU_IDLE = ("kernel.all.cpu.idle", "kernel.all.cpu.wait.total")
CPU_STEAL = "kernel.all.cpu.steal"
DISK = {
    "disk.dev.read_bytes": "read_bytes",
    "disk.dev.write_bytes": "write_bytes",
    "disk.dev.read": "reads",
    "disk.dev.write": "writes",
    "disk.dev.avactive": "io_time_s",
}
NET = {
    "network.interface.in.bytes": "rx_bytes",
    "network.interface.out.bytes": "tx_bytes",
    "network.interface.in.packets": "rx_packets",
    "network.interface.out.packets": "tx_packets",
}
OWN_CPU = "pmcd.cputime.total"
# the same per CPU (instances cpu0, cpu1, ...)
PERCPU = {
    m: m.replace("kernel.all.", "kernel.percpu.", 1) for m in (*CPU_BUSY, *CPU_IDLE, CPU_STEAL)
}
COUNTER_METRICS = (*CPU_BUSY, *CPU_IDLE, CPU_STEAL, *PERCPU.values(), *DISK, *NET, OWN_CPU)
INVENTORY_METRICS = (
    "hinv.ncpu",
    "mem.physmem",
    "network.interface.baudrate",
    "network.interface.up",
    "network.interface.mtu",
    "network.interface.duplex",
    "network.interface.type",
    "network.interface.inet_addr",
    "disk.dev.capacity",
    "filesys.capacity",
    "filesys.mountdir",
)
ARPHRD_LOOPBACK = 772
_DUPLEX = {1: "half", 2: "full"}

_SPACE = {
    "byte": 1.0,
    "Kbyte": 2.0**10,
    "Mbyte": 2.0**20,
    "Gbyte": 2.0**30,
    "Tbyte": 2.0**40,
    "Pbyte": 2.0**50,
    "Ebyte": 2.0**60,
}
_TIME = {
    "nanosec": 1e-9,
    "microsec": 1e-6,
    "millisec": 1e-3,
    "sec": 1.0,
    "min": 60.0,
    "hour": 3600.0,
}
_COUNT = re.compile(r"^count(?: x 10\^(-?\d+))?$")


def si_scale(units: str) -> float:
    """Factor from PCP units (``"Kbyte"``, ``"byte / sec"``, ``"count x 10^3"``) to bytes,
    seconds and counts. PCP's space units are binary (a Kbyte is 1024 bytes)."""

    def one(term: str) -> float:
        term = term.strip()
        if term in ("", "none"):
            return 1.0
        if term in _SPACE:
            return _SPACE[term]
        if term in _TIME:
            return _TIME[term]
        match = _COUNT.match(term)
        if match:
            return 10.0 ** int(match.group(1) or 0)
        raise ValueError(f"unknown PCP unit {term!r}")

    numerator, _, denominator = units.partition("/")
    return one(numerator) / one(denominator)


class MetricDesc(BaseModel):
    name: str
    units: str = ""
    indom: str | None = None
    sem: str = ""
    scale: float = 1.0


class Fetch(BaseModel):
    """One ``/pmapi/fetch`` answer: metric -> instance name (None: singular) -> value."""

    timestamp: float
    values: dict[str, dict[str | None, Any]] = Field(default_factory=dict)


def descriptors(metric_json: Mapping[str, Any]) -> dict[str, MetricDesc]:
    """Name -> descriptor; entries pmproxy marks as failed (an unknown name) are left out."""
    found = {}
    for item in metric_json.get("metrics", []):
        if "pmid" not in item or item.get("success") is False:
            continue
        units = str(item.get("units", ""))
        found[item["name"]] = MetricDesc(
            name=item["name"],
            units=units,
            indom=item.get("indom"),
            sem=str(item.get("sem", "")),
            scale=si_scale(units),
        )
    return found


def instance_names(indom_json: Mapping[str, Any]) -> dict[int, str]:
    return {int(i["instance"]): str(i["name"]) for i in indom_json.get("instances", [])}


def parse_fetch(fetch_json: Mapping[str, Any], names: Mapping[str, Mapping[int, str]]) -> Fetch:
    """``names`` maps a metric to its instance id -> name table; an instance missing from it
    keeps its number as name (``"#7"``) rather than being dropped."""
    values: dict[str, dict[str | None, Any]] = {}
    for item in fetch_json.get("values", []):
        table = names.get(item["name"], {})
        per: dict[str | None, Any] = {}
        for inst in item.get("instances", []):
            number = inst.get("instance")
            key = None if number is None else table.get(int(number), f"#{number}")
            per[key] = inst.get("value")
        values[item["name"]] = per
    return Fetch(timestamp=float(fetch_json["timestamp"]), values=values)


_TIMESTAMP = re.compile(rb'"timestamp"\s*:\s*(\d+)(?:\.(\d+))?')


def fetch_timestamp(body: bytes) -> float | None:
    """A fetch answer's ``timestamp`` from its raw text: the digits after the point count
    nanoseconds (pmproxy does not zero-pad them; see the module docstring)."""
    match = _TIMESTAMP.search(body)
    if match is None:
        return None
    seconds, fraction = match.group(1), match.group(2) or b"0"
    if len(fraction) > 9:  # more digits than nanoseconds: a real decimal fraction
        return float(seconds + b"." + fraction)
    return int(seconds) + int(fraction) / 1e9


def counters_from_fetch(
    host: str, fetch: Fetch, descs: Mapping[str, MetricDesc], response: Response
) -> RemoteCounters:
    def total(metric: str) -> float | None:
        per = fetch.values.get(metric)
        if not per or metric not in descs:
            return None
        return float(sum(per.values())) * descs[metric].scale

    values: dict[str, float] = {}
    busy = [total(m) for m in CPU_BUSY]
    idle = [total(m) for m in CPU_IDLE]
    steal = total(CPU_STEAL)
    if all(v is not None for v in (*busy, *idle, steal)):
        busy_s = sum(v for v in busy if v is not None)
        cpu = cpu_id(host)
        values[f"{cpu}/busy_s"] = busy_s
        values[f"{cpu}/total_s"] = busy_s + sum(v for v in idle if v is not None) + (steal or 0.0)
        values[f"{cpu}/steal_s"] = steal or 0.0
    for metric, percpu in PERCPU.items():
        scale = descs[percpu].scale if percpu in descs else None
        for instance, value in fetch.values.get(percpu, {}).items():
            if instance is None or scale is None:
                continue
            busy_key, total_key = (
                f"{cpu_id(host)}/{c}" for c in core_counters(instance.removeprefix("cpu"))
            )
            seconds = float(value) * scale
            values[total_key] = values.get(total_key, 0.0) + seconds
            if metric in CPU_BUSY:
                values[busy_key] = values.get(busy_key, 0.0) + seconds
    for table, make_id in ((DISK, block_id), (NET, nic_id)):
        for metric, counter in table.items():
            scale = descs[metric].scale if metric in descs else None
            for instance, value in fetch.values.get(metric, {}).items():
                if instance is not None and scale is not None:
                    values[f"{make_id(host, instance)}/{counter}"] = float(value) * scale
    own = fetch.values.get(OWN_CPU, {}).get(None)
    return RemoteCounters(
        host=host,
        sent=response.sent,
        received=response.received,
        remote_time=fetch.timestamp,
        values=values,
        exporter_cpu_s=float(own) * descs[OWN_CPU].scale
        if own is not None and OWN_CPU in descs
        else None,
        response_bytes=len(response.body),
    )


def inventory_from_fetch(
    host: str, fetch: Fetch, descs: Mapping[str, MetricDesc]
) -> RemoteInventory:
    def per(metric: str) -> dict[str | None, Any]:
        return fetch.values.get(metric, {})

    def scaled(metric: str, instance: str | None) -> float | None:
        value = per(metric).get(instance)
        return None if value is None or metric not in descs else float(value) * descs[metric].scale

    notes = [f"pmproxy returned no {m}" for m in ("hinv.ncpu", "mem.physmem") if not per(m)]
    nics = []
    addresses: dict[str, list[str]] = {}
    for name, address in per("network.interface.inet_addr").items():
        if name is not None and address:
            addresses.setdefault(name, []).append(str(address))
    names = {
        n
        for m in ("network.interface.up", "network.interface.baudrate", "network.interface.mtu")
        for n in per(m)
        if n is not None
    }
    for name in sorted(names):
        speed = scaled("network.interface.baudrate", name)
        known = speed is not None and speed > 0
        up = per("network.interface.up").get(name)
        mtu = per("network.interface.mtu").get(name)
        nics.append(
            RemoteNic(
                name=name,
                speed=speed if known else None,
                speed_note=""
                if known
                else "pmproxy reports no speed (the kernel's speed reads -1 or is "
                "unreadable: a virtual interface, or no link)",
                up=None if up is None else bool(up),
                mtu=None if mtu is None else int(mtu),
                duplex=_DUPLEX.get(int(per("network.interface.duplex").get(name) or 0)),
                addresses=addresses.get(name, []),
                loopback=per("network.interface.type").get(name) == ARPHRD_LOOPBACK or name == "lo",
            )
        )
    disks = [
        RemoteDisk(name=name, capacity=scaled("disk.dev.capacity", name))
        for name in sorted(n for n in per("disk.dev.capacity") if n is not None)
    ]
    filesystems = [
        RemoteFilesystem(
            mountpoint=str(mountdir), device=str(device), size=scaled("filesys.capacity", device)
        )
        for device, mountdir in per("filesys.mountdir").items()
        if device is not None and mountdir
    ]
    ncpu = per("hinv.ncpu").get(None)
    memory = scaled("mem.physmem", None)
    return RemoteInventory(
        host=host,
        source=LimitSource.PCP,
        cpus=int(ncpu) if ncpu else None,
        memory=memory,
        nics=nics,
        disks=disks,
        filesystems=sorted(filesystems, key=lambda fs: fs.mountpoint),
        notes=notes,
    )


class PmproxyClient:
    """One pmproxy context on one host; descriptors and instance names are cached and looked up
    again when a fetch shows an instance not seen before (a disk or NIC that appeared)."""

    def __init__(self, host: RemoteHost, timeout: float = 2.0, polltimeout: int = 60) -> None:
        self.host = host
        self.polltimeout = polltimeout
        self.connection = HttpConnection(host.base_url, timeout, auth=host.auth)
        self._context: int | None = None
        self._descs: dict[str, MetricDesc] = {}
        self._absent: set[str] = set()  # metrics this host's PMNS does not have
        self._names: dict[str, dict[int, str]] = {}  # indom -> instance id -> name

    def _get(self, path: str, params: list[tuple[str, str]]) -> tuple[dict[str, Any], Response]:
        url = f"{self.host.base_url}{path}?{urlencode(params)}"
        response = self.connection.get(url)
        try:
            return json.loads(response.body), response
        except ValueError:
            raise RemoteUnavailable(url, "answer is not JSON (is this pmproxy?)") from None

    def _with_context(
        self, path: str, params: list[tuple[str, str]]
    ) -> tuple[dict[str, Any], Response]:
        """A request in this client's context; a context pmproxy has dropped (idle longer than
        ``polltimeout``, or pmproxy restarted) is made anew once."""
        for attempt in (0, 1):
            if self._context is None:
                body, _ = self._get("/pmapi/context", [("polltimeout", str(self.polltimeout))])
                self._context = int(body["context"])
            try:
                return self._get(path, [("context", str(self._context)), *params])
            except RemoteUnavailable as exc:
                if attempt == 1 or "unknown context identifier" not in exc.problem:
                    raise
                self._context = None
        raise AssertionError("unreachable")  # pragma: no cover

    def describe(self, names: Iterable[str]) -> dict[str, MetricDesc]:
        """Descriptors of ``names``; pmproxy leaves out metrics the host does not have, and
        they are not asked for again (their values are then absent, never invented)."""
        names = list(names)
        missing = [n for n in names if n not in self._descs and n not in self._absent]
        if missing:
            try:
                body, _ = self._with_context("/pmapi/metric", [("names", ",".join(missing))])
            except RemoteUnavailable as exc:
                if "Unknown metric name" not in exc.problem:  # pmproxy's answer when none exists
                    raise
                body = {}
            self._descs.update(descriptors(body))
            self._absent.update(n for n in missing if n not in self._descs)
        return {n: self._descs[n] for n in names if n in self._descs}

    def _instance_table(self, metric: str, refresh: bool = False) -> dict[int, str]:
        indom = self._descs[metric].indom if metric in self._descs else None
        if indom is None:
            return {}
        if refresh or indom not in self._names:
            body, _ = self._with_context("/pmapi/indom", [("name", metric)])
            self._names[indom] = instance_names(body)
        return self._names[indom]

    def fetch(self, names: Iterable[str]) -> tuple[Fetch, Response]:
        names = list(names)
        self.describe(names)
        body, response = self._with_context("/pmapi/fetch", [("names", ",".join(names))])
        tables = {n: self._instance_table(n) for n in names}
        unseen = {
            item["name"]
            for item in body.get("values", [])
            for inst in item.get("instances", [])
            if inst.get("instance") is not None
            and int(inst["instance"]) not in tables.get(item["name"], {})
        }
        for name in unseen:
            tables[name] = self._instance_table(name, refresh=True)
        fetch = parse_fetch(body, tables)
        taken = fetch_timestamp(response.body)
        if taken is not None:
            fetch.timestamp = taken
        return fetch, response

    def counters(self) -> RemoteCounters:
        fetch, response = self.fetch(COUNTER_METRICS)
        return counters_from_fetch(self.host.name, fetch, self._descs, response)

    def inventory(self) -> RemoteInventory:
        fetch, _ = self.fetch(INVENTORY_METRICS)
        return inventory_from_fetch(self.host.name, fetch, self._descs)

    def close(self) -> None:
        self.connection.close()
