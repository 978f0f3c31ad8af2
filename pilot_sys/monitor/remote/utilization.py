"""Consecutive readings of a remote host's counters -> rates and utilizations, vectorised over
the whole series, on the times the host took the readings.

Rates use the remote host's own sample times where the engine reports them (differences of
one clock: no offset enters), else the midpoints of the requests on this machine's clock. To
place remote samples on this machine's clock, ``clock_offset`` takes the reading with the
shortest round trip (the NTP clock filter's idea: its offset is the best bounded, within half
that round trip) and every sample is shifted by that one offset.

Metric names follow the local probes (``cpu:host/busy``, ``block:vda/read_bytes_per_s``,
``nic:eth0/rx_bytes_per_s``, ``util_<direction>`` against a stated limit), under the remote
component ids (``cpu:nas1/busy``). As in ``monitor.rates``, row 0 is NaN (no interval yet) and
a counter that went backwards (the host rebooted, the exporter restarted) gives NaN.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from pilot_sys.monitor.rates import deltas, intervals, per_second, ratio, utilization
from pilot_sys.monitor.remote import dcgm
from pilot_sys.monitor.remote.counters import BLOCK_COUNTERS, NIC_COUNTERS, RemoteCounters
from pilot_sys.topology.components import UNKNOWN_LIMIT, Limit


class CounterSeries(BaseModel):
    """Readings of one host as arrays: ``values[i, j]`` is counter ``keys[j]`` at reading ``i``
    (NaN where that reading lacked it)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    host: str
    keys: list[str]
    values: np.ndarray
    sent: np.ndarray
    received: np.ndarray
    remote_time: np.ndarray  # NaN where the engine gave no sample time
    exporter_cpu_s: np.ndarray

    @classmethod
    def from_readings(cls, readings: Sequence[RemoteCounters]) -> CounterSeries:
        if not readings:
            raise ValueError("no readings")
        hosts = {r.host for r in readings}
        if len(hosts) != 1:
            raise ValueError(f"readings of several hosts: {sorted(hosts)}")
        keys = sorted({k for r in readings for k in r.values})
        column = {k: j for j, k in enumerate(keys)}
        values = np.full((len(readings), len(keys)), np.nan)
        for i, reading in enumerate(readings):
            for key, value in reading.values.items():
                values[i, column[key]] = value

        def array(values: list[float | None]) -> np.ndarray:
            return np.array([np.nan if v is None else v for v in values], dtype=np.float64)

        return cls(
            host=hosts.pop(),
            keys=keys,
            values=values,
            sent=array([r.sent for r in readings]),
            received=array([r.received for r in readings]),
            remote_time=array([r.remote_time for r in readings]),
            exporter_cpu_s=array([r.exporter_cpu_s for r in readings]),
        )

    def column(self, key: str) -> np.ndarray:
        try:
            return self.values[:, self.keys.index(key)]
        except ValueError:
            return np.full(len(self.sent), np.nan)

    @property
    def latency(self) -> np.ndarray:
        return self.received - self.sent

    @property
    def sample_times(self) -> np.ndarray:
        """The remote host's sample times where known, else the request midpoints."""
        midpoint = (self.sent + self.received) / 2
        return np.where(np.isfinite(self.remote_time), self.remote_time, midpoint)


class ClockOffset(BaseModel):
    """``remote clock - local clock`` in seconds, within +-``error`` seconds."""

    offset: float
    error: float
    reading: int  # the reading it was taken from


def clock_offset(series: CounterSeries) -> ClockOffset | None:
    """From the reading with the shortest round trip; None when the engine gives no times."""
    known = np.isfinite(series.remote_time)
    if not known.any():
        return None
    latency = np.where(known, series.latency, np.inf)
    best = int(np.argmin(latency))
    midpoint = (series.sent[best] + series.received[best]) / 2
    return ClockOffset(
        offset=float(series.remote_time[best] - midpoint),
        error=float(latency[best] / 2),
        reading=best,
    )


def local_times(series: CounterSeries, offset: ClockOffset | None) -> np.ndarray:
    """Each reading's sample time on this machine's clock."""
    if offset is None:
        return (series.sent + series.received) / 2
    return np.where(
        np.isfinite(series.remote_time),
        series.remote_time - offset.offset,
        (series.sent + series.received) / 2,
    )


def _components(keys: Sequence[str], prefix: str) -> list[str]:
    return sorted({k.rsplit("/", 1)[0] for k in keys if k.startswith(prefix)})


def utilizations(
    series: CounterSeries, limits: Mapping[str, Limit] | None = None
) -> dict[str, np.ndarray]:
    """Rates, busy shares and (where ``limits`` has ``<component>/<direction>``) utilizations.

    * ``cpu:H/busy`` = delta busy / delta total CPU time (a share of all CPUs, from the
      counters alone: no clock enters); ``cpu:H/busy_cores`` = delta busy / delta t;
      ``cpu:H/util_compute`` = busy_cores / (compute limit x (1 - steal share));
      ``cpu:H/busiest_core`` = the highest per-CPU delta busy / delta total in each interval
      (the local CPU probe's ``busiest_core``: a single-threaded server's limit);
    * ``block:H/D/busy`` = delta io_time / delta t (clipped to 0..1), ``read_bytes_per_s``,
      ``write_bytes_per_s``, ``read_iops``, ``write_iops``, ``util_read``/``util_write``;
    * ``nic:H/I/rx_bytes_per_s``, ``tx_bytes_per_s``, ``rx_packets_per_s``,
      ``tx_packets_per_s``, ``util_receive``/``util_send``.
    """
    limits = limits or {}
    t = series.sample_times
    dt = intervals(t)
    out: dict[str, np.ndarray] = {}
    host = series.host
    cpu = f"cpu:{host}"
    if f"{cpu}/busy_s" in series.keys:
        busy = deltas(series.column(f"{cpu}/busy_s"))
        total = deltas(series.column(f"{cpu}/total_s"))
        steal = deltas(series.column(f"{cpu}/steal_s"))
        out[f"{cpu}/busy"] = ratio(busy, total)
        out[f"{cpu}/busy_cores"] = busy_cores = ratio(busy, dt)
        compute = limits.get(f"{cpu}/compute", UNKNOWN_LIMIT)
        if compute.known and compute.value:
            out[f"{cpu}/util_compute"] = ratio(
                busy_cores, compute.value * (1.0 - ratio(steal, total))
            )
        cores = sorted(
            k[len(cpu) + 1 : -len("_busy_s")]
            for k in series.keys
            if k.startswith(f"{cpu}/core") and k.endswith("_busy_s")
        )
        if cores:
            shares = np.column_stack(
                [
                    ratio(
                        deltas(series.column(f"{cpu}/{c}_busy_s")),
                        deltas(series.column(f"{cpu}/{c}_total_s")),
                    )
                    for c in cores
                ]
            )
            with np.errstate(invalid="ignore"):
                busiest = np.nanmax(np.where(np.isfinite(shares), shares, -np.inf), axis=1)
            out[f"{cpu}/busiest_core"] = np.where(np.isfinite(busiest), busiest, np.nan)
    for component in _components(series.keys, f"block:{host}/"):
        c = {name: series.column(f"{component}/{name}") for name in BLOCK_COUNTERS}
        read_bps, write_bps = per_second(c["read_bytes"], t), per_second(c["write_bytes"], t)
        out[f"{component}/read_bytes_per_s"] = read_bps
        out[f"{component}/write_bytes_per_s"] = write_bps
        out[f"{component}/read_iops"] = per_second(c["reads"], t)
        out[f"{component}/write_iops"] = per_second(c["writes"], t)
        out[f"{component}/busy"] = np.clip(ratio(deltas(c["io_time_s"]), dt), 0.0, 1.0)
        for direction, rate in (("read", read_bps), ("write", write_bps)):
            util = utilization(rate, limits.get(f"{component}/{direction}", UNKNOWN_LIMIT))
            if util is not None:
                out[f"{component}/util_{direction}"] = util
    for component in _components(series.keys, f"nic:{host}/"):
        rates = {name: per_second(series.column(f"{component}/{name}"), t) for name in NIC_COUNTERS}
        for name, rate in rates.items():
            out[f"{component}/{name}_per_s"] = rate
        for direction, rate in (("receive", rates["rx_bytes"]), ("send", rates["tx_bytes"])):
            util = utilization(rate, limits.get(f"{component}/{direction}", UNKNOWN_LIMIT))
            if util is not None:
                out[f"{component}/util_{direction}"] = util
    out.update(dcgm.metrics(host, series.keys, series.column, limits))
    return out


def exporter_cpu_per_reading(series: CounterSeries) -> float | None:
    """The engine's own CPU seconds per reading over the series (its counters tick in 10 ms
    steps, so only a long series gives a useful figure); None when it reports none."""
    own = series.exporter_cpu_s
    known = np.flatnonzero(np.isfinite(own))
    if known.size < 2:
        return None
    first, last = known[0], known[-1]
    spent = own[last] - own[first]
    return float(spent / (last - first)) if spent >= 0 else None
