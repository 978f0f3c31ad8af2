"""Parsers for the throttling counter files of cgroups and cpufreq, one per kernel format.

Formats (Documentation/admin-guide/cgroup-v2.rst "Interface Files"; cgroup-v1/blkio-controller.rst,
cgroup-v1/memory.rst; filesystems/proc.rst for PSI):
- *flat keyed*: ``KEY VALUE`` per line: ``cpu.stat`` (v1: nr_periods, nr_throttled,
  throttled_time in ns; v2: usage_usec, nr_periods, nr_throttled, throttled_usec),
  ``memory.events`` (low, high, max, oom, oom_kill).
- *nested keyed*: ``MAJ:MIN KEY=VALUE ...`` per line: v2 ``io.stat`` (rbytes, wbytes, rios,
  wios, dbytes, dios).
- *blkio stat*: ``MAJ:MIN OP VALUE`` per line and a final ``Total N``: v1
  ``blkio.throttle.io_service_bytes`` and ``io_serviced`` (OP: Read, Write, Sync, Async,
  Discard, Total).
- *pressure*: ``some avg10=.. avg60=.. avg300=.. total=USEC`` and ``full ...``: PSI files
  (``memory.pressure``, ``cpu.pressure``, ``io.pressure``, ``/proc/pressure/*``).
- single values: ``memory.failcnt``, ``memory.usage_in_bytes``, ``memory.current``,
  ``cpuacct.usage`` (ns), ``scaling_cur_freq`` (kHz).

Every parser takes the file's text and returns integers; a malformed line is skipped, never
guessed. The sampler's tick does not parse: it stores texts (``procread``'s readers, and
``BlkioDeviceLines`` below for the blkio format, whose lines share their first token), and these
parsers serve one-off reads and tests.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from pilot_sys.monitor.probe import TextReader
from pilot_sys.monitor.procread import MISSING, tokens_layout

BLKIO_READ_BYTES = 1 << 16  # one pread: a device's six lines are about 150 bytes
NEWLINE = 10


def flat_keyed(text: str) -> dict[str, int]:
    """``KEY VALUE`` lines (``cpu.stat``, ``memory.events``)."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            found[key] = int(value)
    return found


def nested_keyed(text: str) -> dict[str, dict[str, int]]:
    """``MAJ:MIN KEY=VALUE ...`` lines (``io.stat``) -> device -> key -> value."""
    found: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        device, *pairs = line.split()
        values = {}
        for pair in pairs:
            key, _, value = pair.partition("=")
            if value.isdigit():
                values[key] = int(value)
        if ":" in device:
            found[device] = values
    return found


def blkio_stat(text: str) -> dict[str, dict[str, int]]:
    """``MAJ:MIN OP VALUE`` lines (v1 ``blkio.throttle.io_service_bytes``/``io_serviced``)
    -> device -> op (Read, Write, Sync, Async, Discard, Total) -> value; the file's last line
    (``Total N``, over every device) is left out."""
    found: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 3 and ":" in fields[0] and fields[2].isdigit():
            found.setdefault(fields[0], {})[fields[1]] = int(fields[2])
    return found


def pressure_totals(text: str) -> dict[str, int]:
    """The ``total=`` microseconds of a PSI file's ``some`` and ``full`` lines."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        for pair in rest.split():
            key, _, value = pair.partition("=")
            if key == "total" and value.isdigit():
                found[kind] = int(value)
    return found


def single(text: str) -> int | None:
    """A file holding one integer; None for ``max`` or anything else."""
    value = text.strip()
    return int(value) if value.isdigit() else None


# -- tick readers for the formats procread does not cover -----------------------------------------
class BlkioDeviceLines(TextReader):
    """One device's values in a v1 ``blkio.throttle.io_service_bytes`` / ``io_serviced`` file
    (*blkio stat* format): the ``MAJ:MIN OP VALUE`` lines of ``ops``, as decimal tokens.

    Why not ``procread.LineTable``: every line of a device starts with the same key
    (``254:0``), so a line is found by its key *and* operation; and the kernel lists the
    cgroup's devices newest first, so positions shift when another device gets I/O. The tick
    finds each ``MAJ:MIN OP `` at a line start with ``bytes.find`` and stores the values
    ("R W"), which ``parse_segments`` reads back as plain tokens. A device without a line in a
    file that was read whole (its ``Total`` line present) has done no I/O in this cgroup yet
    (the kernel creates a device's entry at its first I/O): 0. Any other text: MISSING."""

    def __init__(self, path: str | os.PathLike[str], device: str, ops: Sequence[str]) -> None:
        self.path = Path(path)
        self.device = device
        self.ops = tuple(ops)
        self._markers = tuple(f"{device} {op} ".encode() for op in self.ops)
        self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        self.read_text()  # fail at open time, not on the first tick

    def read_text(self) -> bytes:
        data = os.pread(self.fd, BLKIO_READ_BYTES, 0)
        values = []
        for marker in self._markers:
            at = data.find(marker)
            while at > 0 and data[at - 1] != NEWLINE:  # "1254:0 Read" is another device
                at = data.find(marker, at + 1)
            if at < 0:
                values.append(b"0" if data.startswith(b"Total") or b"\nTotal " in data else MISSING)
                continue
            end = data.find(b"\n", at)
            values.append(data[at + len(marker) : end if end >= 0 else len(data)])
        return b" ".join(values)

    def __call__(self) -> Sequence[bytes]:
        return self.read_text().split()

    def tick_reader(self) -> Callable[[], bytes]:
        return self.read_text

    def layout(self) -> dict[str, object]:
        return tokens_layout(len(self.ops))

    def text_bound(self) -> int:
        return 21 * len(self.ops) + len(self.ops)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
