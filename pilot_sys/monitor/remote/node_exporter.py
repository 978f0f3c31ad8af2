"""Prometheus node_exporter: ``/metrics`` scraped with ``collect[]`` filters, parsed with
``prometheus_client``'s exposition-format parser.

A filtered scrape runs only the named collectors on the exporter (``cpu``, ``diskstats``,
``netdev`` and ``time`` for the counters; ``cpu``, ``meminfo``, ``netclass``, ``diskstats``
and ``filesystem`` for the inventory). The exporter's own ``process_*`` metrics come with every
scrape, filtered or not, so ``process_cpu_seconds_total`` tells what scraping costs the remote
host; the ``time`` collector's ``node_time_seconds`` is the host's clock when it collected.

Metric names and labels are those of node_exporter 1.x on Linux (``node_cpu_seconds_total``
with ``cpu`` and ``mode``, ``node_disk_*`` and ``node_network_*`` with ``device``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from urllib.parse import urlencode

from prometheus_client.parser import text_string_to_metric_families

from pilot_sys.monitor.remote.counters import RemoteCounters, core_counters
from pilot_sys.monitor.remote.http import HttpConnection, Response
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

COUNTER_COLLECTORS = ("cpu", "diskstats", "netdev", "time")
INVENTORY_COLLECTORS = ("cpu", "meminfo", "netclass", "diskstats", "filesystem")
BUSY_MODES = frozenset({"user", "nice", "system", "irq", "softirq"})
ARPHRD_LOOPBACK = 772

# node_exporter sample name -> counter (see counters.py)
_DISK = {
    "node_disk_read_bytes_total": "read_bytes",
    "node_disk_written_bytes_total": "write_bytes",
    "node_disk_reads_completed_total": "reads",
    "node_disk_writes_completed_total": "writes",
    "node_disk_io_time_seconds_total": "io_time_s",
}
_NET = {
    "node_network_receive_bytes_total": "rx_bytes",
    "node_network_transmit_bytes_total": "tx_bytes",
    "node_network_receive_packets_total": "rx_packets",
    "node_network_transmit_packets_total": "tx_packets",
}

# Every sample the counters are made of; a filtered scrape carries several times as many lines
# (HELP/TYPE lines, the exporter's go_* metrics, the collectors' other series).
COUNTER_SAMPLES = (
    "node_cpu_seconds_total",
    "node_time_seconds",
    "process_cpu_seconds_total",
    *_DISK,
    *_NET,
)

Samples = dict[str, list[tuple[dict[str, str], float]]]


def parse(text: str, only: Iterable[str] | None = None) -> Samples:
    """Sample name -> ``(labels, value)`` pairs (the parser names counter samples ``*_total``).

    ``only`` keeps the samples of those names and drops every other line before the parser
    sees it: prometheus-client's parser is pure Python and costs per line, so a scrape's
    unused lines would cost most of its parse time."""
    if only is not None:
        prefixes = tuple(name + end for name in only for end in (" ", "{"))
        text = "\n".join(line for line in text.split("\n") if line.startswith(prefixes)) + "\n"
    samples: Samples = defaultdict(list)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name].append((sample.labels, float(sample.value)))
    return dict(samples)


def scrape_url(base_url: str, collectors: Iterable[str] | None) -> str:
    """``base_url`` with one ``collect[]`` per collector (None: every enabled collector)."""
    if collectors is None:
        return base_url
    return f"{base_url}?{urlencode([('collect[]', c) for c in collectors])}"


def _scalar(samples: Samples, name: str) -> float | None:
    found = samples.get(name)
    return found[0][1] if found else None


def counters_from_samples(host: str, samples: Samples, response: Response) -> RemoteCounters:
    values: dict[str, float] = {}
    busy = total = steal = 0.0
    cpu_samples = samples.get("node_cpu_seconds_total", [])
    cpu = cpu_id(host)
    for labels, value in cpu_samples:
        mode = labels.get("mode", "")
        core_busy, core_total = (f"{cpu}/{c}" for c in core_counters(labels.get("cpu", "?")))
        total += value
        values[core_total] = values.get(core_total, 0.0) + value
        if mode in BUSY_MODES:
            busy += value
            values[core_busy] = values.get(core_busy, 0.0) + value
        elif mode == "steal":
            steal += value
    if cpu_samples:
        values.update({f"{cpu}/busy_s": busy, f"{cpu}/total_s": total, f"{cpu}/steal_s": steal})
    for metric, counter in _DISK.items():
        for labels, value in samples.get(metric, []):
            values[f"{block_id(host, labels['device'])}/{counter}"] = value
    for metric, counter in _NET.items():
        for labels, value in samples.get(metric, []):
            values[f"{nic_id(host, labels['device'])}/{counter}"] = value
    return RemoteCounters(
        host=host,
        sent=response.sent,
        received=response.received,
        remote_time=_scalar(samples, "node_time_seconds"),
        values=values,
        exporter_cpu_s=_scalar(samples, "process_cpu_seconds_total"),
        response_bytes=len(response.body),
    )


def inventory_from_samples(host: str, samples: Samples) -> RemoteInventory:
    notes = [
        f"node_exporter collector {labels.get('collector')} failed"
        for labels, value in samples.get("node_scrape_collector_success", [])
        if value != 1.0
    ]
    cpus = {labels.get("cpu") for labels, _ in samples.get("node_cpu_seconds_total", [])}
    memory = _scalar(samples, "node_memory_MemTotal_bytes")

    def by_device(name: str) -> dict[str, float]:
        return {
            labels["device"]: value for labels, value in samples.get(name, []) if "device" in labels
        }

    speeds = by_device("node_network_speed_bytes")
    up = by_device("node_network_up")
    mtu = by_device("node_network_mtu_bytes")
    kind = by_device("node_network_protocol_type")
    info = {labels["device"]: labels for labels, _ in samples.get("node_network_info", [])}
    nics = []
    for device in sorted(set(info) | set(up) | set(speeds)):
        speed = speeds.get(device)
        note = (
            ""
            if speed is not None and speed > 0
            else (
                "node_exporter reports no speed (the kernel's speed reads -1 or is unreadable: "
                "a virtual interface, or no link)"
            )
        )
        duplex = info.get(device, {}).get("duplex") or None
        nics.append(
            RemoteNic(
                name=device,
                speed=speed if speed is not None and speed > 0 else None,
                speed_note=note,
                up=None if device not in up else up[device] == 1.0,
                mtu=int(mtu[device]) if device in mtu else None,
                duplex=duplex,
                loopback=kind.get(device) == ARPHRD_LOOPBACK or device == "lo",
            )
        )
    disk_names = {labels["device"] for labels, _ in samples.get("node_disk_info", [])}
    disk_names |= {labels["device"] for labels, _ in samples.get("node_disk_read_bytes_total", [])}
    filesystems = [
        RemoteFilesystem(
            mountpoint=labels["mountpoint"],
            device=labels.get("device", ""),
            fstype=labels.get("fstype"),
            size=value,
        )
        for labels, value in samples.get("node_filesystem_size_bytes", [])
    ]
    if "node_network_speed_bytes" not in samples and "node_network_info" not in samples:
        notes.append("node_exporter's netclass collector gave nothing: NIC speeds unknown")
    return RemoteInventory(
        host=host,
        source=LimitSource.NODE_EXPORTER,
        cpus=len(cpus) or None,
        memory=memory,
        nics=nics,
        disks=[RemoteDisk(name=name) for name in sorted(disk_names)],
        filesystems=sorted(filesystems, key=lambda fs: fs.mountpoint),
        notes=notes,
    )


class NodeExporterClient:
    """Scrapes one host's node_exporter over a kept-alive connection."""

    def __init__(self, host: RemoteHost, timeout: float = 2.0) -> None:
        self.host = host
        self.connection = HttpConnection(host.base_url, timeout, auth=host.auth)

    def scrape(self, collectors: Iterable[str] | None = COUNTER_COLLECTORS) -> Response:
        return self.connection.get(scrape_url(self.host.base_url, collectors))

    def counters(self) -> RemoteCounters:
        response = self.scrape(COUNTER_COLLECTORS)
        samples = parse(response.body.decode(), COUNTER_SAMPLES)
        return counters_from_samples(self.host.name, samples, response)

    def inventory(self) -> RemoteInventory:
        response = self.scrape(INVENTORY_COLLECTORS)
        return inventory_from_samples(self.host.name, parse(response.body.decode()))

    def close(self) -> None:
        self.connection.close()
