"""Block devices: throughput and IOPS against their limits, busy time, queue depth, await.

Counters (``/proc/diskstats``, Documentation/admin-guide/iostats.rst; fields after
``major minor name``): 1 reads completed, 3 sectors read, 4 ms spent reading, 5 writes
completed, 7 sectors written, 8 ms spent writing, 9 I/Os currently in flight, 10 ms spent doing
I/O (``io_ticks``), 11 weighted ms doing I/O (``time_in_queue``). A sector is always 512 bytes
here, whatever the device's block size. ``/proc/pressure/io`` ``some``/``full`` ``total`` (us).

Formulas (per interval, sysstat ``iostat -x`` style):

* ``read_bytes_per_s`` = delta(field 3) x 512 / delta t; ``write_bytes_per_s`` from field 7.
* ``read_iops`` = delta(field 1) / delta t; ``write_iops`` from field 5.
* ``util_read`` / ``util_write`` = bytes per second / the stated ``read``/``write`` limit;
  ``util_iops_read`` / ``util_iops_write`` likewise; absent when the limit is unknown.
* ``busy`` = delta(field 10) / (delta t x 1000), clipped to [0, 1] (io_ticks advance in whole
  jiffies at request boundaries, so a short interval can read slightly over 1). It is the share
  of time with at least one request in flight: a saturation signal for a device that serves
  one request at a time (a single-queue disk, a virtio disk), misleading for devices
  that serve many in parallel (NVMe, RAID, multi-queue): 100 % busy can be far from their limit.
* ``queue_depth`` = delta(field 11) / (delta t x 1000): the average number of requests in flight.
* ``read_await_s`` = delta(field 4) / delta(field 1) / 1000 (NaN in an interval without reads);
  ``write_await_s`` from fields 8 and 5; ``await_s`` over both.
* ``in_flight`` = field 9, a level.

Where the counters are read from: ``/sys/class/block/<dev>/stat`` holds the same fields for one
device (Documentation/block/stat.rst: the same 11+ values, without major, minor and name), while
/proc/diskstats formats every device and partition (loop devices included) on each read. Reading
a few watched devices' own files is cheaper (benchmarks/results/monitor.md), so
the per-device files are used when at most a third of the listed devices are watched and every
watched device has one; /proc/diskstats otherwise (and in captured trees without /sys).
These counters change at least every jiffy or millisecond: read at the sampler's full rate.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pilot_sys.monitor.probe import Probe, ProbeContext
from pilot_sys.monitor.procread import FieldFile, LineTable, Wanted, read_text
from pilot_sys.monitor.rates import deltas, intervals, levels, per_second, ratio, utilization

KIND = "dynamic"
NAME = "block"

SECTOR = 512
# name -> field number in /proc/diskstats (after major, minor, name)
FIELDS = {
    "reads": 1,
    "sectors_read": 3,
    "read_ms": 4,
    "writes": 5,
    "sectors_written": 7,
    "write_ms": 8,
    "in_flight": 9,
    "io_ticks_ms": 10,
    "time_in_queue_ms": 11,
}
PARALLEL_PREFIXES = ("nvme", "md", "rbd")
PER_DEVICE_FILES_UP_TO = 1 / 3  # of the devices /proc/diskstats lists
IO_PSI = "io:host"


def _is_partition(root: Path, name: str) -> bool:
    return (root / "sys" / "class" / "block" / name / "partition").exists()


def _parent_disk(root: Path, name: str) -> str:
    """A partition's whole disk (``vda1`` -> ``vda``), from the sysfs directory layout."""
    path = root / "sys" / "class" / "block" / name
    if (path / "partition").exists():
        try:
            return path.resolve().parent.name
        except OSError:
            return name
    return name


def hardware_queues(root: Path, name: str) -> int | None:
    """Number of blk-mq hardware queues (``/sys/block/<disk>/mq/*``); None when not blk-mq."""
    mq = root / "sys" / "block" / _parent_disk(root, name) / "mq"
    try:
        return sum(1 for _ in mq.iterdir())
    except OSError:
        return None


def serves_in_parallel(root: Path, name: str) -> bool:
    """Whether busy time understates the headroom: NVMe, RAID and multi-queue devices."""
    disk = _parent_disk(root, name)
    if disk.startswith(PARALLEL_PREFIXES):
        return True
    queues = hardware_queues(root, name)
    return queues is not None and queues > 1


def default_devices(context: ProbeContext, present: list[str]) -> list[str]:
    """Which devices to watch: the graph's block components if there is a graph, else every
    whole disk except idle pseudo-devices (``ram*``, loop devices without a backing file)."""
    if context.graph is not None:
        in_graph = [c.id.split(":", 1)[1] for c in context.graph.components("block")]
        chosen = [d for d in present if d in in_graph]
    else:
        chosen = []
        for name in present:
            if name.startswith("ram") or _is_partition(context.root, name):
                continue
            if (
                name.startswith("loop")
                and not (context.path("sys", "block", name, "loop", "backing_file")).exists()
            ):
                continue
            chosen.append(name)
    if context.components is not None:
        chosen = [d for d in present if f"block:{d}" in context.components]
    return chosen


class BlockProbe(Probe):
    name = NAME

    def __init__(
        self, context: ProbeContext, devices: list[str], listed: int | None = None
    ) -> None:
        super().__init__()
        self.devices = devices
        self.parallel = {d: serves_in_parallel(context.root, d) for d in devices}
        self.queues = {d: hardware_queues(context.root, d) for d in devices}
        self._files: list[FieldFile] = []
        self._stats: LineTable | None = None
        if listed is not None and len(devices) <= listed * PER_DEVICE_FILES_UP_TO:
            self._files = self._open_device_files(context, devices)
        if self._files:
            self.source = "/sys/class/block/<dev>/stat"
            self.readers = list(self._files)
        else:
            wanted = [Wanted(d, 2 + n) for d in devices for n in FIELDS.values()]
            self._stats = LineTable(context.path("proc", "diskstats"), wanted, key_token=2)
            self.source = "/proc/diskstats"
            self.readers = [self._stats]
        columns = [f"block:{d}/{f}" for d in devices for f in FIELDS]
        self._psi: LineTable | None = None
        psi_path = context.path("proc", "pressure", "io")
        if psi_path.exists():
            try:
                self._psi = LineTable(
                    psi_path, [Wanted("some", 8), Wanted("full", 8)], separators=b"="
                )
                columns += [f"{IO_PSI}/psi_some_us", f"{IO_PSI}/psi_full_us"]
                self.readers.append(self._psi)
            except OSError:
                self._psi = None
        self.columns = tuple(columns)
        for d in devices:
            for direction in ("read", "write", "iops_read", "iops_write"):
                self.limits[f"block:{d}/{direction}"] = context.limit(f"block:{d}", direction)

    @staticmethod
    def _open_device_files(context: ProbeContext, devices: list[str]) -> list[FieldFile]:
        """Every watched device's own stat file (field n of diskstats is token n - 1 there), or
        none at all when one is missing or unreadable: all devices come from one source."""
        files: list[FieldFile] = []
        try:
            for d in devices:
                files.append(
                    FieldFile(
                        context.path("sys", "class", "block", d, "stat"),
                        [n - 1 for n in FIELDS.values()],
                    )
                )
        except (OSError, ValueError):
            for f in files:
                f.close()
            return []
        return files

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        dt_ms = intervals(t) * 1000.0
        for d in self.devices:
            cid = f"block:{d}"
            c = {f: self.col(raw, f"{cid}/{f}") for f in FIELDS}
            read_bps = per_second(c["sectors_read"], t) * SECTOR
            write_bps = per_second(c["sectors_written"], t) * SECTOR
            read_iops = per_second(c["reads"], t)
            write_iops = per_second(c["writes"], t)
            out[f"{cid}/read_bytes_per_s"] = read_bps
            out[f"{cid}/write_bytes_per_s"] = write_bps
            out[f"{cid}/read_iops"] = read_iops
            out[f"{cid}/write_iops"] = write_iops
            rates = {
                "read": read_bps,
                "write": write_bps,
                "iops_read": read_iops,
                "iops_write": write_iops,
            }
            for direction, rate in rates.items():
                util = utilization(rate, self.limits[f"{cid}/{direction}"])
                if util is not None:
                    out[f"{cid}/util_{direction}"] = util
            out[f"{cid}/busy"] = np.clip(ratio(deltas(c["io_ticks_ms"]), dt_ms), 0.0, 1.0)
            out[f"{cid}/queue_depth"] = ratio(deltas(c["time_in_queue_ms"]), dt_ms)
            d_reads, d_writes = deltas(c["reads"]), deltas(c["writes"])
            d_read_ms, d_write_ms = deltas(c["read_ms"]), deltas(c["write_ms"])
            out[f"{cid}/read_await_s"] = ratio(d_read_ms, d_reads) / 1000.0
            out[f"{cid}/write_await_s"] = ratio(d_write_ms, d_writes) / 1000.0
            out[f"{cid}/await_s"] = ratio(d_read_ms + d_write_ms, d_reads + d_writes) / 1000.0
            out[f"{cid}/in_flight"] = levels(c["in_flight"])
        if self._psi is not None:
            out[f"{IO_PSI}/psi_some"] = per_second(self.col(raw, f"{IO_PSI}/psi_some_us"), t) / 1e6
            out[f"{IO_PSI}/psi_full"] = per_second(self.col(raw, f"{IO_PSI}/psi_full_us"), t) / 1e6
        return out

    def attrs(self) -> dict[str, dict[str, object]]:
        return {
            f"block:{d}": {
                "serves_in_parallel": self.parallel[d],
                "hardware_queues": self.queues[d],
            }
            for d in self.devices
        }

    def close(self) -> None:
        if self._stats is not None:
            self._stats.close()
        for f in self._files:
            f.close()
        if self._psi is not None:
            self._psi.close()


def open_probe(context: ProbeContext) -> BlockProbe | None:
    path = context.path("proc", "diskstats")
    if not path.exists():
        return None
    text = read_text(path, "") or ""
    present = [line.split()[2] for line in text.splitlines() if len(line.split()) > 2]
    devices = default_devices(context, present)
    return BlockProbe(context, devices, listed=len(present)) if devices else None
