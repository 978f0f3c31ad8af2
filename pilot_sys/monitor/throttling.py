"""Series of kernel throttling counters turned into metrics, vectorised over the sample buffer.

Pure functions on numpy arrays (no I/O), with ``monitor/rates.py``'s conventions: a value from an
interval belongs to the sample that ends it (row 0 is NaN), and a counter that went backwards
(a cgroup or qdisc recreated) gives NaN for that interval. Each formula names the kernel field it
reads, as sysstat's documentation does; ``t`` is the sample times in seconds.

CPU quota (``cpu.stat`` of the cgroup that *sets* the quota: CFS counts throttling where the
quota is, not in the child cgroups under it):
- throttled_periods = d(nr_throttled) / d(nr_periods)              [v1, v2 ``cpu.stat``]
  (the share of enforcement periods, 100 ms by default, in which the cgroup ran out of quota;
  NaN for an interval with no period: nothing was runnable)
- throttled_share = d(throttled_time) / (dt x 1e9)                 [v1 ``throttled_time``, ns]
                  = d(throttled_usec) / (dt x 1e6)                 [v2 ``throttled_usec``]
  (summed over the CPUs' run queues, so it can exceed 1 on a multi-CPU machine)
- cores_used = d(usage) / (dt x 1e9)                               [v1 ``cpuacct.usage``, ns]
             = d(usage_usec) / (dt x 1e6)                          [v2 ``cpu.stat usage_usec``]
- quota_used = cores_used / (quota / period)                       [``cpu.cfs_quota_us``,
  ``cpu.cfs_period_us`` / ``cpu.max``]

I/O throttle, per device (``MAJ:MIN``):
- read_bytes, write_bytes = d(bytes) / dt                          [v1 ``blkio.throttle.
  io_service_bytes`` Read / Write; v2 ``io.stat`` rbytes / wbytes]
- read_ios, write_ios = d(ios) / dt                                [v1 ``io_serviced`` Read /
  Write; v2 ``io.stat`` rios / wios]
- throttle_used = rate / limit                                     [``blkio.throttle.*_device``
  / ``io.max``]

Memory limit:
- limit_hits = d(failcnt) / dt                                     [v1 ``memory.failcnt``: times
  the usage reached ``limit_in_bytes`` and the kernel had to reclaim]
- max_events, high_events = d(max), d(high) / dt                   [v2 ``memory.events``]
- oom_kills = d(oom_kill)                                          [v2 ``memory.events``]
- stall_some, stall_full = d(total) / (dt x 1e6)                   [v2 ``memory.pressure``
  ``some``/``full`` total, us: the share of time some / all tasks of the cgroup waited for memory]
- fill = usage / limit                                             [v1 ``memory.usage_in_bytes``
  / ``limit_in_bytes``; v2 ``memory.current`` / ``memory.max``]

Traffic shaping, per qdisc (rtnetlink ``TCA_STATS2``, as ``tc -s`` prints them):
- sent_bytes = d(bytes) / dt; shaper_used = sent_bytes / rate      [``TCA_STATS_BASIC`` bytes;
  the tbf rate or htb ceil]
- overlimits = d(overlimits) / dt                                  [``TCA_STATS_QUEUE``: packets
  that found the shaper out of tokens and waited]
- drops = d(drops) / dt                                            [``TCA_STATS_QUEUE`` drops]
- backlog (bytes), qlen (packets): levels                          [``TCA_STATS_QUEUE``]

CPU frequency, per policy:
- frequency = scaling_cur_freq x 1e3 (Hz)                          [``scaling_cur_freq``, kHz]
- frequency_share = frequency / hardware maximum                   [``cpuinfo_max_freq``]
- below_nominal = frequency < nominal                              [``base_frequency`` /
  ``amd_pstate_nominal_freq``], NaN when the nominal is unknown
"""

from __future__ import annotations

import numpy as np

from pilot_sys.monitor.rates import deltas, per_second, ratio

NS = 1e9
US = 1e6


def throttled_periods(nr_throttled: np.ndarray, nr_periods: np.ndarray) -> np.ndarray:
    """Share of CFS periods throttled in each interval: d(nr_throttled) / d(nr_periods)."""
    return ratio(deltas(nr_throttled), deltas(nr_periods))


def time_share(counter: np.ndarray, t: np.ndarray, units_per_second: float) -> np.ndarray:
    """Share of wall time a time counter advanced: d(counter) / (dt x units_per_second)
    (throttled_time in ns: ``NS``; throttled_usec, usage_usec, PSI totals in us: ``US``)."""
    return per_second(counter, t) / units_per_second


def cores_used(usage: np.ndarray, t: np.ndarray, units_per_second: float) -> np.ndarray:
    """CPUs' worth of time used: d(usage) / (dt x units_per_second)."""
    return time_share(usage, t, units_per_second)


def fraction_of(values: np.ndarray, limit: float | None) -> np.ndarray | None:
    """``values / limit``; None when the limit is unknown (never invented) or not positive."""
    if limit is None or not limit > 0:
        return None
    return np.asarray(values, dtype=np.float64) / float(limit)


def events_per_second(counter: np.ndarray, t: np.ndarray) -> np.ndarray:
    """d(events) / dt for an event counter (failcnt, memory.events max/high, overlimits, drops)."""
    return per_second(counter, t)


def events(counter: np.ndarray) -> np.ndarray:
    """d(events) per interval (oom_kill: a count, not a rate)."""
    return deltas(counter)


def frequency_hz(scaling_cur_khz: np.ndarray) -> np.ndarray:
    """scaling_cur_freq (kHz) in Hz; a read of 0 (no frequency known) is NaN."""
    khz = np.asarray(scaling_cur_khz, dtype=np.float64)
    return np.where(khz > 0, khz * 1e3, np.nan)


def below(values: np.ndarray, threshold: float | None) -> np.ndarray:
    """1.0 where ``values < threshold``, 0.0 where not, NaN where either is unknown."""
    values = np.asarray(values, dtype=np.float64)
    if threshold is None:
        return np.full(values.shape, np.nan)
    out = (values < threshold).astype(np.float64)
    out[~np.isfinite(values)] = np.nan
    return out
