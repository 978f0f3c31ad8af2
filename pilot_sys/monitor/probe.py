"""The contract of a dynamic plug-in: what the sampler reads from it, when, and on which thread
(the Pilot paper, §III-B: "dynamic plug-ins that can monitor the utilization rate for one or
more PIs"). ``docs/probes.md`` is the guide for plug-in authors, with examples.

A dynamic plug-in (a module, or any object) declares ``KIND = "dynamic"`` and ``NAME`` and
provides ``open_probe(context: ProbeContext)``, which returns

* a ``Probe``: local counters read on the sampler's own thread, on its tick (microseconds);
* a ``Source`` (``pilot_sys.monitor.source``): anything that may take longer than a tick (a
  network scrape, a slow kernel read), run on its own thread on its own schedule;
* or None: nothing to measure here.

Both are ``Measurement``s: they name their raw ``columns``, state the ``limits`` their
utilizations are fractions of, and turn the whole recording of their raw values into metrics
once, after the run, in ``derive`` (vectorised; each formula next to the counters it reads,
naming the kernel field it comes from). Metric keys are ``<component id>/<metric>``; metrics
named ``util_<direction>`` are fractions of a stated limit; ``busy`` is a fraction of wall
time, never a utilization.

What the sampler does with a ``Probe``, and nothing else:

1. When it opens: calls each of ``readers`` once, to learn how many counters each gives (a
   probe with more than one reader failing now, or whose readers' counters do not add up to
   its ``columns``, is dropped with a note). A reader is a callable
   returning the counters as ``bytes`` decimal tokens. A reader that is a ``TextReader`` also
   gives a *tick read*, which stores the file's text unsplit (no token objects on the tick),
   and the layout that finds the counters in that text after the run.
2. On every tick the probe is due: calls each reader's tick read (a ``TextReader``'s
   ``tick_reader()``; any other reader itself, its tokens joined) and stores the results, in
   reader order, in one record of a preallocated buffer. It never calls ``Probe.read``, which
   is for one-off reads and tests. A reader that raises gives MISSING counters for that tick
   and a note; it is tried again on its next tick.
3. A probe whose ``max_rate_hz`` is below the sampling rate is due on every
   ``ceil(rate / max_rate_hz)``-th tick of the grid and on the opening and closing samples;
   on the ticks between, its last texts are stored again (carried forward).
4. After the run: parses every record (vectorised) into a float64 matrix (NaN: missing) and
   calls ``derive(raw, t, metrics)`` with the probe's columns at the rows it was really read,
   and their times; a slow probe's results are then spread over the grid (``interval_metric``
   says how). Probes with ``derives_from_metrics`` come last, with every other probe's and
   every source's metrics already on the grid in ``metrics``.
5. Records ``limits`` and ``attrs()`` in the trace, and calls ``close()`` when it stops.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np

from pilot_sys.topology.components import UNKNOWN_LIMIT, Limit

#: A reader: the counters of one read as ``bytes`` decimal tokens, in ``columns`` order.
Reader: TypeAlias = Callable[[], Sequence[bytes]]


@dataclass
class ProbeContext:
    """What a plug-in needs to decide what to measure.

    ``root`` is the file-system root the /proc and /sys paths are read under ("/" on a live
    machine, a captured tree in tests). ``graph`` (a ``ComponentGraph``) supplies the stated
    limits; ``components`` restricts monitoring to these ids (None: everything); ``pid`` is the
    workload's process whose tree the process probe follows; ``notes`` collects what could not
    be measured, for the trace. ``workload_roots`` names the workload's processes where no one
    ``pid`` does: a session round's sampler follows whatever its thread starts, and the plug-in
    that follows them sets it (see ``workload_pids``).
    """

    root: Path = Path("/")
    graph: Any = None
    components: set[str] | None = None
    pid: int | None = None
    notes: list[str] = field(default_factory=list)
    workload_roots: Callable[[], list[int]] | None = None

    def workload_pids(self) -> list[int]:
        """The roots of the workload's process trees now: ``pid`` (``monitor`` and the sampler's
        ``follow``), else what ``workload_roots`` reports (the processes a round started), else
        none. One answer for every plug-in that must tell the workload's processes from the
        others (a GPU's process list, the cgroups the workload joins)."""
        if self.pid is not None:
            return [self.pid]
        if self.workload_roots is None:
            return []
        try:
            return list(self.workload_roots())
        except OSError:  # the round's thread is gone
            return []

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


class TextReader(ABC):
    """A reader whose tick read stores text instead of tokens: the cheapest tick there is.

    Calling it reads the counters as tokens (at open, and for one-off reads). On the tick the
    sampler calls ``tick_reader()``'s result instead, which returns the text holding the
    counters, unsplit; after the run ``procread.parse_segments`` finds the counters in all the
    stored texts at once, following ``layout()``. ``procread.LineTable`` (a keyed /proc file)
    and ``procread.FieldFile`` (a one-line file) implement it; a plug-in uses those rather
    than writing its own, since the layout is one that ``parse_segments`` knows.
    """

    path: Path  # the file it reads (the schedule lists it; the cost benchmark reads it raw)

    @abstractmethod
    def __call__(self) -> Sequence[bytes]:
        """The wanted counters now, as ``bytes`` tokens in order."""

    @abstractmethod
    def tick_reader(self) -> Callable[[], bytes]:
        """The callable the sampler calls on each tick: the text holding the counters."""

    @abstractmethod
    def layout(self) -> dict[str, object]:
        """How ``parse_segments`` finds the counters in the tick texts (JSON-ready: a spill
        directory is parsed without the files)."""

    @abstractmethod
    def text_bound(self) -> int:
        """Bytes a record reserves for one tick text (a longer text is cut: its counters NaN)."""

    def close(self) -> None:
        """Release the file."""


class Measurement(ABC):
    """What probes and sources share: raw columns in, metrics out, after the run."""

    name: str = ""
    # the raw values, in the order the readers (or a source's samples) give them
    columns: Sequence[str] = ()
    # what each ``util_<direction>`` is a fraction of: "<component>/<direction>" -> Limit
    limits: dict[str, Limit]

    def __init__(self) -> None:
        self.limits = {}

    @abstractmethod
    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """Metrics from the raw values (``raw``: samples x columns, float64, NaN where a value was
        missing) at times ``t`` (seconds, the sampler's monotonic clock). ``metrics`` holds what
        was derived before (only a probe with ``derives_from_metrics`` may rely on it)."""

    def interval_metric(self, key: str) -> bool:
        """Whether metric ``key`` describes the interval ending at its sample (a rate, a share of
        time) rather than a level read at that instant. It decides how values taken less often
        than the sampler's ticks go on its grid: an interval value belongs to every tick inside
        the interval it averages, a level holds from its read until the next one."""
        name = key.rsplit("/", 1)[-1]
        return name.endswith("_per_s") or name.startswith("psi_")

    def attrs(self) -> dict[str, dict[str, Any]]:
        """Facts about the measured components that the verdict needs (kept in the trace),
        e.g. whether a block device serves requests in parallel (then busy time misleads)."""
        return {}

    def close(self) -> None:
        """Release kept-open files or connections."""

    def col(self, raw: np.ndarray, name: str) -> np.ndarray:
        """The column of raw value ``name``."""
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


class Probe(Measurement):
    """Local counters, read on the sampler's tick (see the module docstring for what the
    sampler does with each attribute)."""

    # the hot path: their results, concatenated, are the raw counters in ``columns`` order
    readers: list[Reader | TextReader]
    # the fastest rate at which these counters carry new information (None: as fast as sampled),
    # and why, in words a reviewer can check against the kernel (recorded with the trace)
    max_rate_hz: float | None = None
    rate_reason: str = ""
    # True: reads no counters of its own (or not only) and derives from the metrics of every
    # other probe and source (the PCIe plug-in sums its children's traffic); derived last
    derives_from_metrics: bool = False

    def __init__(self) -> None:
        super().__init__()
        self.readers = []

    def read(self) -> tuple[bytes, ...]:
        """Raw counters now, in ``columns`` order, as ``bytes`` tokens: a one-off read (tests,
        a snapshot). The sampler does not call it."""
        out: tuple[bytes, ...] = ()
        for reader in self.readers:
            out += tuple(reader())
        return out
