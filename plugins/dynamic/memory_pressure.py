"""Memory pressure (PSI), read at the sampler's full rate.

Counters: ``/proc/pressure/memory`` ``some``/``full`` ``total`` (microseconds during which some /
all non-idle tasks stalled on memory: reclaim, swap-in, refaults of recently evicted pages).

Why a plug-in of its own: ``total`` is exact at every read (``psi_show`` collects every CPU's
state times, including the state still running, when the file is read; only the ``avg10/60/300``
averages are updated on a 2 s period, and they are not used), so it is worth reading as fast as
the sampler runs, while the ``memory`` plug-in's meminfo/vmstat counters are read at a few Hz.

Formulas: ``memory:host/psi_some`` / ``psi_full`` = delta(total us) / (delta t x 1e6), the share
of the interval that some / all tasks stalled on memory.
"""

from __future__ import annotations

import numpy as np

from pilot_sys.monitor.probe import Probe, ProbeContext
from pilot_sys.monitor.procread import LineTable, Wanted
from pilot_sys.monitor.rates import per_second

KIND = "dynamic"
NAME = "memory_pressure"

HOST = "memory:host"


class MemoryPressureProbe(Probe):
    name = NAME

    def __init__(self, table: LineTable) -> None:
        super().__init__()
        self._psi = table
        self.columns = (f"{HOST}/psi_some_us", f"{HOST}/psi_full_us")
        self.readers = [table]

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return {
            f"{HOST}/psi_some": per_second(self.col(raw, f"{HOST}/psi_some_us"), t) / 1e6,
            f"{HOST}/psi_full": per_second(self.col(raw, f"{HOST}/psi_full_us"), t) / 1e6,
        }

    def close(self) -> None:
        self._psi.close()


def open_probe(context: ProbeContext) -> MemoryPressureProbe | None:
    path = context.path("proc", "pressure", "memory")
    if not context.wants(HOST) or not path.exists():
        return None
    try:
        table = LineTable(path, [Wanted("some", 8), Wanted("full", 8)], separators=b"=")
    except OSError:  # PSI compiled in but disabled (psi=0): the file exists, reads fail
        return None
    return MemoryPressureProbe(table)
