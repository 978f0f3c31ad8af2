"""The second reader form: a *source*, which runs on its own schedule and delivers timestamped
samples into the same trace as the sampler's probes.

A ``Probe`` is read inside the sampler's tick, on the sampler's thread: fine for /proc counters
(microseconds), fatal for a network scrape (a node_exporter or pmproxy call takes milliseconds
and, when a host stops answering, seconds) or a slow kernel read, which would make every tick
late. A ``Source`` instead has a blocking ``sample()`` that a ``SourceRunner`` calls every
``interval_s`` on a thread of its own; the sampler's tick never waits for it. After the run its
samples are derived at their own times (``Measurement.derive``, as for a probe) and placed on
the sampler's grid (``rates.place_on_grid``); the trace also keeps its own times, latencies,
gaps and cost (``trace.SourceTrace``). ``source_runner`` does all of that; this module is the
contract a source's author writes to.

Why one thread per source rather than one asyncio loop for all of them:

* the backends are blocking calls in the libraries this project uses (``urllib`` or
  ``http.client`` for a scrape, file reads, ``tc -j``); on an event loop each would need an
  executor thread anyway, or an asynchronous HTTP client as a new dependency, and one slow
  blocking call would stall every other source on the loop;
* a source that hangs (a host that stopped answering) delays nobody: not the sampler, not
  another source;
* its cost on this host is exactly its thread's CPU clock, with no share of a loop to attribute;
* waiting in a socket call or a sleep releases the GIL, so a waiting source costs the sampler's
  thread nothing. The price is a thread (its stack is virtual memory, mostly untouched) and one
  wake-up per sample. Should hundreds of sources be needed, a pool can replace the threads
  behind the same contract: ``source_runner.SourceRunner`` is the only code that knows how a
  source is run.

What a thread cannot hide: Python work in ``sample()`` (parsing a large answer) holds the GIL,
and the sampler's tick may then wait up to the interpreter's switch interval
(``sys.getswitchinterval()``, 5 ms by default). A source keeps its answers small (a filtered
scrape) and leaves the arithmetic to ``derive``, after the run.

Times. Every call is bracketed on the sampler's monotonic clock (``requested``, ``answered``).
A sample is placed at the middle of its call, uncertain by half the call's latency, unless the
backend reports when it took the sample (``SourceReading.taken_at``, on the backend's own clock).
Then it is placed at that time less the clock offset, which is estimated as NTP's clock filter
does: from the call with the shortest latency, ``offset = taken_at - midpoint``, uncertain by
half that latency. An answer whose time is not after the previous answer's (the backend had
nothing newer) is not a new sample and is dropped.

Gaps. A value is never carried further than ``Source.staleness_bound()`` (default three
intervals): on the grid a level holds until the next sample or until it is that old, and an
interval value (a rate) spans the ticks of its interval unless that interval is longer than the
bound. Every stretch longer than the bound without a sample is a gap: NaN on the grid, listed in
the trace and named in a note with what the failed calls said. Sampling goes on meanwhile.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from pilot_sys.monitor.probe import Measurement

STALE_INTERVALS = 3.0  # default staleness bound, in sampling intervals: one lost answer is no gap


@dataclass(frozen=True, slots=True)
class SourceReading:
    """One answer of a source.

    ``values``: the raw values in the source's ``columns`` order, NaN where one is missing.
    ``taken_at``: when the backend took the sample, in seconds on its own clock (Unix time on the
    remote host, for example); None when it does not say. ``remote_cpu_seconds``: the backend's
    own cumulative CPU time (e.g. node_exporter's ``process_cpu_seconds_total``), for the cost
    of sampling on the far side; None when unknown."""

    values: Sequence[float]
    taken_at: float | None = None
    remote_cpu_seconds: float | None = None


class Source(Measurement):
    """A reader on its own schedule: ``sample()`` is called every ``interval_s`` seconds on the
    source's own thread. It may block (it should bound its own waits, e.g. with a socket
    timeout no longer than a few intervals) and may raise: a failed call is a missing sample
    and a note, never the end of sampling.

    It declares, like a probe, ``columns``, ``limits`` and ``attrs()``, and derives its metrics
    after the run from its own samples at their own times (``derive``; ``metrics`` is empty:
    a source's metrics depend on its own values only). ``close()`` is called on the source's
    thread after its last call."""

    interval_s: float = 1.0
    # how long a value stays valid without a newer sample (None: STALE_INTERVALS intervals)
    stale_after_s: float | None = None
    # asked more often than the backend has news (an engine that scrapes on its own schedule):
    # a repeated sample time is expected, not worth a note
    repeats_expected: bool = False

    @abstractmethod
    def sample(self) -> SourceReading:
        """One sample now: blocking, may raise."""

    def staleness_bound(self) -> float:
        return (
            float(self.stale_after_s) if self.stale_after_s else STALE_INTERVALS * self.interval_s
        )
