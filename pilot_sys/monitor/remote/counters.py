"""One reading of a remote host's counters, the same whatever engine it came from.

Keys are ``<component id>/<counter>`` in SI units (seconds, bytes, counts), cumulative since
the host booted:

* ``cpu:HOST/busy_s``, ``cpu:HOST/total_s``, ``cpu:HOST/steal_s``: CPU time summed over all
  CPUs; busy = user + nice + system + irq + softirq, total adds idle, iowait and steal
  (``/proc/stat`` as the local CPU probe reads it); ``cpu:HOST/coreN_busy_s`` and
  ``coreN_total_s`` the same for CPU N alone (a single-threaded server saturates one core while
  the host's total looks idle);
* ``block:HOST/DEV/read_bytes``, ``write_bytes``, ``reads``, ``writes``, ``io_time_s`` (time
  with at least one I/O in flight: the kernel's io_ticks);
* ``nic:HOST/IF/rx_bytes``, ``tx_bytes``, ``rx_packets``, ``tx_packets``.

``remote_time`` is when the host took the reading, on its own clock, where the engine says so
(pmproxy's fetch timestamp, node_exporter's ``node_time_seconds``); ``sent``/``received`` are
this machine's wall clock around the request, so their midpoint less ``remote_time`` bounds the
clock offset by half the round trip.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

CPU_COUNTERS = ("busy_s", "total_s", "steal_s")


def core_counters(cpu: str | int) -> tuple[str, str]:
    """The per-CPU counters of CPU ``cpu`` (its number)."""
    return f"core{cpu}_busy_s", f"core{cpu}_total_s"


BLOCK_COUNTERS = ("read_bytes", "write_bytes", "reads", "writes", "io_time_s")
NIC_COUNTERS = ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets")


class RemoteCounters(BaseModel):
    host: str
    sent: float
    received: float
    remote_time: float | None = None
    values: dict[str, float] = Field(default_factory=dict)
    # the engine's own CPU time (seconds, cumulative) as it reports it: what scraping costs there
    exporter_cpu_s: float | None = None
    response_bytes: int = 0

    @property
    def midpoint(self) -> float:
        return (self.sent + self.received) / 2
