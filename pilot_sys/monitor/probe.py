"""The contract of a dynamic plug-in (seeds/002 §III-B: "dynamic plug-ins that can monitor the
utilization rate for one or more PIs").

A dynamic plug-in module declares ``KIND = "dynamic"`` and ``NAME`` and provides
``open_probe(context: ProbeContext) -> Probe | None`` (None: nothing to measure here).
A ``Probe`` opens its files once and then does two separate jobs:

* ``read()`` on every sampler tick: the raw counters, in ``columns`` order, as cheaply as
  possible, as ``bytes`` decimal tokens (the sampler joins them into one record per tick);
* ``derive(raw, t, metrics)`` once over the whole recording: rates, utilizations and levels,
  vectorised over the sample buffer. Each formula sits in the plug-in next to the counters it
  reads and names the kernel field it comes from.

Metric keys are ``<component id>/<metric>``; metrics named ``util_<direction>`` are fractions of
a stated limit (see ``MonitorTrace``); ``busy`` is a fraction of wall time, never a utilization.

A probe may declare ``max_rate_hz``: the fastest rate at which reading its counters yields new
information (e.g. counters the kernel folds from per-CPU deltas only every ``vm.stat_interval``).
The sampler then reads it only on every n-th tick of its grid, carries its last reading forward
on the others, and derives its metrics from its real reads only (``Sampler`` documents how).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pilot_sys.topology.components import UNKNOWN_LIMIT, Limit


@dataclass
class ProbeContext:
    """What a plug-in needs to decide what to measure.

    ``root`` is the file-system root the /proc and /sys paths are read under ("/" on a live
    machine, a captured tree in tests). ``graph`` (a ``ComponentGraph``) supplies the stated
    limits; ``components`` restricts monitoring to these ids (None: everything); ``pid`` is the
    workload's process whose tree the process plug-in follows.
    """

    root: Path = Path("/")
    graph: Any = None
    components: set[str] | None = None
    pid: int | None = None
    notes: list[str] = field(default_factory=list)

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    def wants(self, component_id: str) -> bool:
        return self.components is None or component_id in self.components

    def limit(self, component_id: str, direction: str) -> Limit:
        """The graph's stated limit; unknown when there is no graph or no such component."""
        if self.graph is None or component_id not in self.graph:
            return UNKNOWN_LIMIT
        try:
            return self.graph.limit(component_id, direction)
        except KeyError:
            return UNKNOWN_LIMIT


class Probe(ABC):
    """One opened dynamic plug-in."""

    name: str = ""
    columns: Sequence[str] = ()
    # limits used by ``derive``, recorded with the trace: "<component>/<direction>" -> Limit
    limits: dict[str, Limit]

    # the hot path: callables whose results, concatenated, are the raw counters in ``columns``
    # order as ``bytes`` decimal tokens. The sampler calls them directly.
    readers: list[Callable[[], Sequence[Any]]]

    # the fastest rate at which these counters carry new information (None: as fast as sampled),
    # and why, in words a reviewer can check against the kernel (recorded with the trace)
    max_rate_hz: float | None = None
    rate_reason: str = ""

    def __init__(self) -> None:
        self.limits = {}
        self.readers = []

    def read(self) -> tuple[Any, ...]:
        """Raw counters for one tick, in ``columns`` order, as ``bytes`` tokens: no parsing."""
        out: tuple[Any, ...] = ()
        for reader in self.readers:
            out += tuple(reader())
        return out

    @abstractmethod
    def derive(self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Metrics from this probe's raw columns (``raw``: samples x columns, float64, NaN where
        a counter was missing) at times ``t`` (seconds). ``metrics`` holds what probes derived
        before this one (the PCIe plug-in sums its children's traffic from it)."""

    def interval_metric(self, key: str) -> bool:
        """Whether metric ``key`` describes the interval ending at its sample (a rate, a share of
        time) rather than a level read at that instant. Only matters for a probe read slower
        than the sampler: an interval value belongs to every tick inside the interval it
        averages, a level holds from its read until the next one."""
        name = key.rsplit("/", 1)[-1]
        return name.endswith("_per_s") or name.startswith("psi_")

    def attrs(self) -> dict[str, dict[str, Any]]:
        """Facts about the measured components that the verdict needs (kept in the trace),
        e.g. whether a block device serves requests in parallel (then busy time misleads)."""
        return {}

    def close(self) -> None:
        """Release kept-open files."""

    def col(self, raw: np.ndarray, name: str) -> np.ndarray:
        """The column of raw counter ``name``."""
        return raw[:, self._index[name]]

    def cols(self, raw: np.ndarray, names: Sequence[str]) -> np.ndarray:
        return raw[:, [self._index[n] for n in names]]

    @property
    def _index(self) -> dict[str, int]:
        cached = self.__dict__.get("_index_cache")
        if cached is None or len(cached) != len(self.columns):
            cached = {c: i for i, c in enumerate(self.columns)}
            self.__dict__["_index_cache"] = cached
        return cached
