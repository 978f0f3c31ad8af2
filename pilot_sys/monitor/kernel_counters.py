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
guessed.
"""

from __future__ import annotations


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
