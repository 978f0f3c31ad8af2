"""A remote host's NVIDIA GPUs from the series NVIDIA's dcgm-exporter writes, as a Prometheus
server holds them: the same ``accelerator:`` components and signals the local GPU plug-in
gives (``plugins/dynamic/gpu.py``), under the host's name (``accelerator:NAME/0000:00:06.0``),
so that the verdict's accelerator rules judge them alike.

Which series belong to a host. dcgm-exporter is a target of its own (port 9400, often its own
job), so its series carry the host's address with another port: they are selected by the host
part of the host's ``instance`` matcher (any port) and its other matchers except ``job``.
All families of all hosts come in one query (``{__name__=~"DCGM_FI_...|...", ...}``): the cost
of GPUs is one query per poll, whatever the number of families, hosts or GPUs. A GPU is named
by its ``pci_bus_id`` label, written as sysfs writes it (``00000000:00:06.0`` ->
``0000:00:06.0``), or ``gpu<N>`` from its ``gpu`` label where the bus id is missing.

What each family becomes (dcgm-exporter's units: ratios 0..1 for the profiling fields, % for
the others, MiB, W, MHz, bytes/s):

* ``util_compute``: ``DCGM_FI_PROF_SM_ACTIVE`` (the share of cycles an SM had a warp: GPM's
  SM activity, read the same way); without it ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``, else
  ``DCGM_FI_DEV_GPU_UTIL`` / 100, both the time a kernel ran (not saturation, said in
  ``compute_signal``);
* ``util_tensor``: ``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE``; ``util_memory_bandwidth``:
  ``DCGM_FI_PROF_DRAM_ACTIVE``; ``sm_occupancy``: ``DCGM_FI_PROF_SM_OCCUPANCY``;
* ``send_bytes_per_s``/``receive_bytes_per_s``: ``DCGM_FI_PROF_PCIE_TX_BYTES``/``RX_BYTES``
  (bytes/s averaged by DCGM; TX = device to host), else NVML's throughput
  ``DCGM_FI_DEV_PCIE_TX/RX_THROUGHPUT`` (KB/s); ``util_send``/``util_receive`` against the
  link's rate at the generation and width of that scrape (``DCGM_FI_DEV_PCIE_LINK_GEN``/
  ``WIDTH``), else the link's stated limit, else not at all (unknown);
* ``busy`` = ``DCGM_FI_DEV_GPU_UTIL`` / 100, ``memory_busy`` = ``DCGM_FI_DEV_MEM_COPY_UTIL`` /
  100 (reported, not judged); ``memory_used_bytes`` and ``util_capacity`` from
  ``DCGM_FI_DEV_FB_USED`` against used + free; ``power_w`` (``DCGM_FI_DEV_POWER_USAGE``) and
  ``power_fraction`` against the power limit where exported; ``sm_clock_hz``; the clock-event
  reasons (``DCGM_FI_DEV_CLOCKS_EVENT_REASONS``, before DCGM 3.3
  ``DCGM_FI_DEV_CLOCK_THROTTLE_REASONS``: NVML's bitmask) as ``power_capped``,
  ``thermal_capped``, ``hw_slowdown``.

A family the exporter does not export is NaN: unknown, never zero. Every value is a gauge
describing the interval before its scrape (DCGM averages over its own update period).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from pilot_sys.monitor.gpu_clock_reasons import clock_reason_flags
from pilot_sys.monitor.rates import ratio
from pilot_sys.monitor.remote.counters import RemoteCounters
from pilot_sys.monitor.remote.http import RemoteUnavailable
from pilot_sys.topology.components import UNKNOWN_LIMIT, Limit
from pilot_sys.topology.remote_gpus import PCIE_GEN_GTS, RemoteGpu, gpu_id, pcie_rate
from pilot_sys.topology.remote_hosts import RemoteHost

#: dcgm-exporter family -> the raw column it is kept as (per GPU), in the exporter's units
SAMPLED = {
    "DCGM_FI_DEV_GPU_UTIL": "util_gpu",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "util_mem",
    "DCGM_FI_DEV_FB_USED": "fb_used_mib",
    "DCGM_FI_DEV_FB_FREE": "fb_free_mib",
    "DCGM_FI_DEV_POWER_USAGE": "power_w",
    "DCGM_FI_DEV_SM_CLOCK": "sm_clock_mhz",
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": "clock_reasons",
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": "clock_reasons",
    "DCGM_FI_DEV_PCIE_LINK_GEN": "pcie_gen",
    "DCGM_FI_DEV_PCIE_LINK_WIDTH": "pcie_width",
    "DCGM_FI_DEV_PCIE_TX_THROUGHPUT": "pcie_tx_kbps",
    "DCGM_FI_DEV_PCIE_RX_THROUGHPUT": "pcie_rx_kbps",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "pcie_replays",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gr_engine_active",
    "DCGM_FI_PROF_SM_ACTIVE": "sm_active",
    "DCGM_FI_PROF_SM_OCCUPANCY": "sm_occupancy",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "tensor_active",
    "DCGM_FI_PROF_DRAM_ACTIVE": "dram_active",
    "DCGM_FI_PROF_PCIE_TX_BYTES": "pcie_tx_bps",
    "DCGM_FI_PROF_PCIE_RX_BYTES": "pcie_rx_bps",
    "DCGM_FI_PROF_NVLINK_TX_BYTES": "nvlink_tx_bps",
    "DCGM_FI_PROF_NVLINK_RX_BYTES": "nvlink_rx_bps",
}
RAW_COLUMNS = tuple(dict.fromkeys(SAMPLED.values()))
#: families read once, for the inventory (stated limits)
STATED = (
    "DCGM_FI_DEV_POWER_MGMT_LIMIT",
    "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
    "DCGM_FI_DEV_MAX_SM_CLOCK",
    "DCGM_FI_DEV_PCIE_MAX_LINK_GEN",
    "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH",
    "DCGM_FI_DEV_FB_RESERVED",
)
#: the limits a remote GPU's signals are judged or reported against
LIMITS = ("compute", "tensor", "memory_bandwidth", "send", "receive", "capacity", "power", "clock")
MIB = 2**20
#: how a refusal for size reads: our size cap (``http``), Prometheus's ``query.max-samples``
TOO_LARGE = ("answer too large", "too many samples")
_PORT = re.compile(r":[0-9]+$")

# one series of an answer: its labels and its (time, value) points (prometheus.Series)
Series = tuple[dict[str, str], list[tuple[float, float]]]


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def host_part(instance: str) -> str:
    """``10.0.0.5:9100`` -> ``10.0.0.5``; ``[::1]:9100`` -> ``[::1]``; no port: as it is."""
    return _PORT.sub("", instance)


def _matchers(host: RemoteHost) -> dict[str, str]:
    """The labels a host's GPU series must carry: its matchers less ``job``, the instance's
    host part in place of the instance."""
    out = {name: value for name, value in host.labels if name != "job"}
    if "instance" in out:
        out["instance"] = host_part(out["instance"])
    return out


def selector(hosts: Sequence[RemoteHost], families: Iterable[str]) -> str:
    """Every family of ``families`` for every host's GPUs, in one selector."""
    names = "|".join(re.escape(f) for f in families)
    values: dict[str, list[str]] = {}
    for host in hosts:
        for name, value in _matchers(host).items():
            values.setdefault(name, [])
            if value not in values[name]:
                values[name].append(value)
    matchers = [f"__name__=~{_quote(names)}"]
    for name in sorted(values):
        options = "|".join(re.escape(v) for v in values[name])
        if name == "instance":  # any port: dcgm-exporter is a target of its own
            matchers.append(f"instance=~{_quote(f'({options})(:[0-9]+)?')}")
        else:
            matchers.append(f"{name}=~{_quote(options)}")
    return "{" + ",".join(matchers) + "}"


def range_query(hosts: Sequence[RemoteHost], window_s: float) -> str:
    """The raw samples of every sampled family over the last ``window_s`` seconds."""
    return f"{selector(hosts, SAMPLED)}[{max(int(round(window_s * 1000)), 1)}ms]"


def split(series: Iterable[Series], hosts: Sequence[RemoteHost]) -> dict[str, list[Series]]:
    """Each host's GPU series (host name -> series), looked up by label values in one pass."""
    index: dict[tuple[str, ...], dict[tuple[str, ...], str]] = {}
    for host in hosts:
        wanted = _matchers(host)
        names = tuple(sorted(wanted))
        index.setdefault(names, {})[tuple(wanted[n] for n in names)] = host.name
    out: dict[str, list[Series]] = {h.name: [] for h in hosts}
    for item in series:
        labels = item[0]
        for names, by_values in index.items():
            key = tuple(
                host_part(labels.get(n, "")) if n == "instance" else labels.get(n, "")
                for n in names
            )
            name = by_values.get(key)
            if name is not None:
                out[name].append(item)
    return out


def address(labels: Mapping[str, str]) -> str | None:
    """The GPU's PCI bus id as sysfs writes it, else ``gpu<N>``; None if neither is there."""
    bus = labels.get("pci_bus_id", "")
    if ":" in bus:
        domain, rest = bus.split(":", 1)
        try:
            return f"{int(domain, 16):04x}:{rest.lower()}"
        except ValueError:
            pass
    index = labels.get("gpu")
    return f"gpu{index}" if index else None


def values_at(host: str, series: Iterable[Series], t: float | None) -> dict[str, float]:
    """``accelerator:HOST/ADDR/<column>`` -> the latest sample at or before ``t`` (every
    sample's latest where ``t`` is None)."""
    out: dict[str, float] = {}
    for labels, points in series:  # a poll's few points: a plain scan beats numpy's set-up
        column = SAMPLED.get(labels.get("__name__", ""))
        where = address(labels)
        if column is None or where is None:
            continue
        latest = None
        for point in points:
            if (t is None or point[0] <= t + 1e-3) and (latest is None or point[0] >= latest[0]):
                latest = point
        if latest is not None and latest[1] == latest[1]:  # not NaN
            out[f"{gpu_id(host, where)}/{column}"] = latest[1]
    return out


def _columns_at(
    host: str, series: Iterable[Series], times: np.ndarray | None
) -> dict[str, np.ndarray]:
    """Each GPU column's latest sample at or before each of ``times`` (NaN where none), by a
    binary search per series: a session's window costs series x (points + times x log points),
    not series x points x times."""
    out: dict[str, np.ndarray] = {}
    for labels, points in series:
        column = SAMPLED.get(labels.get("__name__", ""))
        where = address(labels)
        if column is None or where is None or not points:
            continue
        at = np.array(sorted(points), dtype=np.float64)
        if times is None:
            picked = at[-1:, 1]
        else:
            index = np.searchsorted(at[:, 0], times + 1e-3, side="right") - 1
            picked = np.where(index >= 0, at[np.maximum(index, 0), 1], np.nan)
        key = f"{gpu_id(host, where)}/{column}"
        out[key] = np.where(np.isfinite(picked), picked, out.get(key, np.nan))
    return out


def gpus_from_series(series: Iterable[Series]) -> list[RemoteGpu]:
    """The GPUs of one host's latest series (an instant query of every family)."""
    found: dict[str, dict[str, Any]] = {}
    for labels, points in series:
        where = address(labels)
        if where is None or not points:
            continue
        entry = found.setdefault(where, {"labels": labels, "values": {}})
        entry["values"][labels.get("__name__", "")] = points[-1][1]
    gpus = []
    for where, entry in sorted(found.items()):
        labels, values = entry["labels"], entry["values"]

        def number(*names: str, v: dict[str, float] = values) -> float | None:
            for name in names:
                if name in v and np.isfinite(v[name]) and v[name] > 0:
                    return float(v[name])
            return None

        used, free = number("DCGM_FI_DEV_FB_USED"), number("DCGM_FI_DEV_FB_FREE")
        reserved = number("DCGM_FI_DEV_FB_RESERVED") or 0.0
        power_field = next(
            (
                f
                for f in ("DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT")
                if number(f)
            ),
            None,
        )
        profiling = "DCGM_FI_PROF_SM_ACTIVE" in values
        if profiling:
            compute = "DCGM_FI_PROF_SM_ACTIVE (SM activity, a share of the device's peak)"
        elif "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in values:
            compute = "DCGM_FI_PROF_GR_ENGINE_ACTIVE (time a kernel ran: not saturation)"
        else:
            compute = "DCGM_FI_DEV_GPU_UTIL (time a kernel ran: not saturation)"
        pcie = next(
            (
                f"{f} (dcgm-exporter)"
                for f in ("DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT")
                if f in values
            ),
            None,
        )
        unknown = [
            what
            for what, present in (
                (
                    "SM, tensor and DRAM activity (DCGM's profiling fields are not exported)",
                    profiling,
                ),
                ("PCIe throughput", pcie is not None),
                ("the PCIe link's generation and width", "DCGM_FI_DEV_PCIE_LINK_GEN" in values),
                ("the power limit", power_field is not None),
                (
                    "the clock-event reasons (power or thermal cap)",
                    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS" in values
                    or "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" in values,
                ),
                ("the SM clock ceiling", number("DCGM_FI_DEV_MAX_SM_CLOCK") is not None),
            )
            if not present
        ]
        max_clock = number("DCGM_FI_DEV_MAX_SM_CLOCK")
        gen, width = number("DCGM_FI_DEV_PCIE_LINK_GEN"), number("DCGM_FI_DEV_PCIE_LINK_WIDTH")
        max_gen = number("DCGM_FI_DEV_PCIE_MAX_LINK_GEN")
        max_width = number("DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH")
        gpus.append(
            RemoteGpu(
                address=where,
                model=labels.get("modelName") or None,
                uuid=labels.get("UUID") or labels.get("uuid") or None,
                index=labels.get("gpu"),
                memory_total=(used + free + reserved) * MIB
                if used is not None and free is not None
                else None,
                power_limit_w=number(power_field) if power_field else None,
                power_limit_field=power_field,
                max_sm_clock_hz=max_clock * 1e6 if max_clock else None,
                max_link_gen=int(max_gen) if max_gen else None,
                max_link_width=int(max_width) if max_width else None,
                link_gen=int(gen) if gen else None,
                link_width=int(width) if width else None,
                profiling=profiling,
                compute_signal=compute,
                pcie_signal=pcie,
                unknown=unknown,
            )
        )
    return gpus


def columns(component_id: str) -> list[str]:
    """The raw columns a remote GPU is sampled as."""
    return [f"{component_id}/{c}" for c in RAW_COLUMNS]


def components_in(keys: Iterable[str], host: str) -> list[str]:
    prefix = f"accelerator:{host}/"
    return sorted({k.rsplit("/", 1)[0] for k in keys if k.startswith(prefix)})


def _link_rate(gen: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Bytes/s per direction at each scrape's generation and width (NaN where unknown)."""
    out = np.full(gen.shape, np.nan)
    for g in PCIE_GEN_GTS:
        for w in np.unique(width[np.isfinite(width) & (gen == g)]):
            rate = pcie_rate(g, int(w))
            if rate is not None:
                out[(gen == g) & (width == w)] = rate
    return out


def metrics(
    host: str,
    keys: Sequence[str],
    column: Callable[[str], np.ndarray],
    limits: Mapping[str, Limit] | None = None,
) -> dict[str, np.ndarray]:
    """Each remote GPU's signals (see the module docstring), from its raw columns
    (``column(key)``: NaN where a scrape lacked it), with the local GPU plug-in's names."""
    limits = limits or {}
    out: dict[str, np.ndarray] = {}
    for c in components_in(keys, host):

        def col(name: str, c: str = c) -> np.ndarray:
            return np.asarray(column(f"{c}/{name}"), dtype=np.float64)

        def known(values: np.ndarray) -> bool:
            return bool(np.isfinite(values).any())

        util_gpu = col("util_gpu") / 100.0
        out[f"{c}/busy"] = util_gpu
        out[f"{c}/memory_busy"] = col("util_mem") / 100.0
        sm, engine = col("sm_active"), col("gr_engine_active")
        out[f"{c}/util_compute"] = sm if known(sm) else engine if known(engine) else util_gpu
        for name, raw in (
            ("util_tensor", "tensor_active"),
            ("util_memory_bandwidth", "dram_active"),
            ("sm_occupancy", "sm_occupancy"),
        ):
            if known(col(raw)):
                out[f"{c}/{name}"] = col(raw)
        send, receive = col("pcie_tx_bps"), col("pcie_rx_bps")
        if not known(send) and not known(receive):
            send, receive = col("pcie_tx_kbps") * 1e3, col("pcie_rx_kbps") * 1e3
        out[f"{c}/send_bytes_per_s"], out[f"{c}/receive_bytes_per_s"] = send, receive
        if known(col("nvlink_tx_bps")):
            out[f"{c}/nvlink_send_bytes_per_s"] = col("nvlink_tx_bps")
            out[f"{c}/nvlink_receive_bytes_per_s"] = col("nvlink_rx_bps")
        stated = limits.get(f"{c}/receive", UNKNOWN_LIMIT)
        rate = _link_rate(col("pcie_gen"), col("pcie_width"))
        if not known(rate) and stated.known and stated.value:
            rate = np.full(rate.shape, float(stated.value))
        if known(rate) and (known(send) or known(receive)):
            out[f"{c}/link_bytes_per_s"] = rate
            out[f"{c}/util_send"] = ratio(send, rate)
            out[f"{c}/util_receive"] = ratio(receive, rate)
            if stated.known and stated.value and known(col("pcie_gen")):
                out[f"{c}/link_below_max"] = np.where(
                    np.isfinite(rate), (rate < stated.value * 0.999).astype(np.float64), np.nan
                )
        used = col("fb_used_mib") * MIB
        out[f"{c}/memory_used_bytes"] = used
        capacity = limits.get(f"{c}/capacity", UNKNOWN_LIMIT)
        if capacity.known and capacity.value:
            out[f"{c}/util_capacity"] = used / capacity.value
        out[f"{c}/power_w"] = col("power_w")
        power = limits.get(f"{c}/power", UNKNOWN_LIMIT)
        if power.known and power.value:
            out[f"{c}/power_fraction"] = col("power_w") / power.value
        out[f"{c}/sm_clock_hz"] = col("sm_clock_mhz") * 1e6
        clock = limits.get(f"{c}/clock", UNKNOWN_LIMIT)
        if clock.known and clock.value:
            out[f"{c}/clock_fraction"] = out[f"{c}/sm_clock_hz"] / clock.value
        reasons = col("clock_reasons")
        if known(reasons):
            for name, flag in clock_reason_flags(reasons).items():
                out[f"{c}/{name}"] = flag
    return out


# -- the hooks of the Prometheus backend (``prometheus.Fleet``) ------------------------------
def ask(
    query: Callable[[str], list[Series]], hosts: Sequence[RemoteHost], window_s: float | None
) -> dict[str, list[Series]]:
    """Each host's GPU series: every family in one query (the raw samples of the last
    ``window_s`` seconds, or the latest values for None). An answer over the size cap (ours,
    or the engine's limit on samples: a long session's window of a large fleet) is asked again
    family by family, so that one large answer costs a family, not every GPU; a family still
    refused is a gap, and so is every GPU where the engine refuses the query otherwise (the
    hosts' other series already answered: their GPUs are then a gap, not the hosts)."""
    families = SAMPLED if window_s is not None else (*SAMPLED, *STATED)

    def expr(names: Iterable[str]) -> str:
        matcher = selector(hosts, names)
        return (
            matcher if window_s is None else f"{matcher}[{max(int(round(window_s * 1000)), 1)}ms]"
        )

    try:
        return split(query(expr(families)), hosts)
    except RemoteUnavailable as exc:
        if not any(words in exc.problem for words in TOO_LARGE):
            return {h.name: [] for h in hosts}
    found: list[Series] = []
    for family in dict.fromkeys(families):
        try:
            found += query(expr([family]))
        except RemoteUnavailable:
            continue
    return split(found, hosts)


def may_have_gpus(inventories: Mapping[str, Any], hosts: Sequence[RemoteHost]) -> bool:
    """Whether a poll asks for GPU series: not when every host's inventory is known and none
    has a GPU (a fleet without GPUs pays no query for them)."""
    known = [inventories.get(h.name) for h in hosts]
    return any(inv is None or getattr(inv, "gpus", None) for inv in known)


def with_gpus(reading: Any, series: Sequence[Series]) -> Any:
    """``reading`` (``RemoteCounters``, or the text saying why there is none) with its host's
    GPU values at its scrape time added."""
    if isinstance(reading, RemoteCounters) and series:
        reading.values.update(values_at(reading.host, series, reading.remote_time))
    return reading


def with_gpus_over(readings: list[RemoteCounters], series: Sequence[Series]) -> list[Any]:
    """Every reading of one host's window with its GPU values at its scrape time added."""
    if not readings or not series:
        return readings
    times = np.array([r.remote_time for r in readings], dtype=np.float64)
    for key, values in _columns_at(readings[0].host, series, times).items():
        for reading, value in zip(readings, values.tolist(), strict=True):
            if np.isfinite(value):
                reading.values[key] = value
    return readings


def inventory_notes(gpus: Sequence[RemoteGpu]) -> list[str]:
    """What the host's exporter leaves unknown, GPU by GPU (one line for identical GPUs)."""
    lines: dict[str, list[str]] = {}
    for gpu in gpus:
        if gpu.unknown:
            lines.setdefault("; ".join(gpu.unknown), []).append(gpu.address)
    return [
        f"dcgm-exporter reports {len(gpus)} GPU(s); for {', '.join(where)} it does not export "
        f"{what}: unknown"
        for what, where in lines.items()
    ]
