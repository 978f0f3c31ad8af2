"""Stopping before the limit when more rounds cannot change the answer
(docs/methods/early-stop.md).

Two cases, both decided from what the session already has:

- **Every judged round excluded for the same cause.** The verdict calls a session invalid when
  more than half of its judged rounds are excluded (``verdict.MAX_EXCLUDED_SHARE``). Were the
  true share of excluded rounds 1/2 or less, the first ``n`` judged rounds would all be
  excluded with probability at most ``2^-n`` if rounds were independent; they are not (a busy
  neighbour stays busy), so ``n`` is doubled, as if only every other round were independent
  (a lag-1 correlation of 1/3 halves the effective count, ``n (1 - r) / (1 + r)``), and never
  fewer than ``min_rounds``: ``n = max(min_rounds, ceil(2 log2(1 / (1 - confidence))))``, 9 at
  95 % and 14 at 99 %.
- **The samples needed grow with the samples.** When the readings stay correlated further
  than the AR(1) model the statistics use for a forecast (lag-1 near 0.6, and still near 0.6 at
  lag 10), every subsession size they try leaves the subsession means correlated: no interval,
  and a required sample size of "more than now" ("needs about N+1 samples, has N"), sample
  after sample. Over the analyses since the samples were an ``GROWTH``-th of today's (and at
  least ``MIN_SAMPLES``), the required size ``r`` stayed above the samples ``n`` at every one
  and at most ``PINNED`` times ``n`` at the median one: a runaway. A series that merely
  needs many samples says so with a required size several times ``n`` that ``n`` then
  overtakes (AR(1) at 0.95, 0.6 at lag 10: about 2000 samples, never called a runaway in
  simulation), and is left to run. The engine then lengthens rounds (each reading averages
  more) and watches afresh; a runaway again, or rounds that cannot be lengthened, stops the
  session with its best estimate and why (docs/methods/early-stop.md has the simulations).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from pilot_sys import units
from pilot_sys.session.journal import RoundRecord, WorkloadSpec
from pilot_sys.session.result import PIResult
from pilot_sys.session.verdict import is_excluded, judged
from pilot_sys.stats.pi import PIType

#: how the session's notes carry the early stop's reason to the verdict
EARLY = "stopped early: "
#: the first analysis a runaway is judged from has at least this many samples
MIN_SAMPLES = 100
#: ... and the samples grew this many times since: the first call comes at about 650-800
GROWTH = 8.0
#: r / n at most this at the median analysis over that span (r > n at every one): a runaway
PINNED = 1.1
#: lengthenings tried before a runaway stops the session
MAX_LENGTHENINGS = 2


def excluded_rounds_to_be_sure(confidence: float, min_rounds: int) -> int:
    """Judged rounds, all excluded for one cause, that make an invalid verdict a sure thing
    (see the module docstring for the argument)."""
    alpha = min(max(1.0 - confidence, 1e-9), 0.5)
    return max(int(min_rounds), math.ceil(2.0 * math.log2(1.0 / alpha)))


@dataclass(frozen=True)
class ExcludedStreak:
    rounds: int  # judged rounds, every one excluded
    cause: str  # the component every one of them names ("cpu:host (compute)")

    def text(self) -> str:
        return (
            f"all {self.rounds} judged rounds were excluded for a hidden bottleneck at "
            f"{self.cause}: the session cannot become valid, so it stopped early"
        )


def all_excluded_same_cause(
    records: list[RoundRecord], cut: str | None, needed: int
) -> ExcludedStreak | None:
    """At least ``needed`` judged rounds, every one excluded naming one same component."""
    watch = ExcludedWatch(cut)
    for rec in records:
        watch.observe(rec)
    return watch.streak(needed)


@dataclass
class ExcludedWatch:
    """The judged rounds so far, fed one at a time (the engine checks before every round: a
    scan of the whole journal each time would cost O(rounds) per round)."""

    cut: str | None
    judged: int = 0
    broken: bool = False  # a judged round was included, or no cause is common to them all
    causes: list[str] | None = None  # the components every judged round so far named

    def observe(self, rec: RoundRecord) -> None:
        if self.broken or not judged(rec):
            return
        self.judged += 1
        if not is_excluded(rec, self.cut) or rec.monitor is None:
            self.broken = True
            return
        named = rec.monitor.hidden_bottlenecks
        self.causes = list(named) if self.causes is None else [c for c in self.causes if c in named]
        self.broken = not self.causes

    def streak(self, needed: int) -> ExcludedStreak | None:
        if self.broken or self.judged < needed or not self.causes:
            return None
        return ExcludedStreak(self.judged, self.causes[0])


@dataclass(frozen=True)
class Runaway:
    pi: str
    samples: int
    required: int
    earlier_samples: int
    earlier_required: int

    def text(self) -> str:
        return (
            f"{self.pi}: the samples needed grow with the samples (about "
            f"{self.earlier_required} needed at {self.earlier_samples}, about {self.required} at "
            f"{self.samples}): the readings stay correlated beyond what subsessions can break "
            "at this round length"
        )


@dataclass
class NeedTrend:
    """Each gating PI's (samples, required samples) at the full analyses since the last reset."""

    history: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    _found: Runaway | None = None
    _checked: bool = True  # nothing observed since the last check

    def observe(self, results: dict[str, PIResult]) -> None:
        self._checked = False
        for name, p in results.items():
            if not p.gates_stop or p.ci_reached or p.required_sample_size is None:
                self.history.pop(name, None)  # met (or not gating): nothing runs away
                continue
            points = self.history.setdefault(name, [])
            point = (int(p.sample_size), int(p.required_sample_size))
            if not points or points[-1] != point:
                points.append(point)

    def reset(self) -> None:
        self.history.clear()
        self._found, self._checked = None, True

    def runaway(self) -> Runaway | None:
        """A PI running away, decided once per observed analysis (the engine asks every round)."""
        if not self._checked:
            self._found, self._checked = self._runaway(), True
        return self._found

    def _runaway(self) -> Runaway | None:
        for name, points in self.history.items():
            n, r = points[-1]
            window = [(a, b) for a, b in points if a >= max(MIN_SAMPLES, n / GROWTH)]
            if len(window) < 3 or window[0][0] > n / GROWTH * 1.25:
                continue  # the samples have not grown GROWTH-fold since a usable estimate
            if any(b <= a for a, b in window):
                continue  # enough samples at some point: not running away
            if float(np.median([b / a for a, b in window])) <= PINNED:
                n0, r0 = window[0]
                return Runaway(name, n, r, n0, r0)
        return None

    def keeping_pace(self) -> str | None:
        """A PI whose required samples stay just ahead of its samples, for the progress line
        while the runaway test waits for the samples to double."""
        for name, points in self.history.items():
            n, r = points[-1]
            if n >= MIN_SAMPLES and n < r <= 1.1 * n + 1:
                return (
                    f"{name} needs about {r} samples and has {n}: the samples needed keep pace "
                    f"with the samples (if they do while the samples grow {GROWTH:g}-fold, "
                    "rounds of this length cannot give an interval)"
                )
        return None


def excluded_estimate(
    records: list[RoundRecord], specs: list[WorkloadSpec], cut: str | None
) -> str | None:
    """The excluded rounds' own readings averaged per PI (harmonic for rates), for the verdict
    to show flagged as what the hidden bottleneck allowed, never as the CUT's result: a session
    whose every round was excluded otherwise shows no number at all."""
    parts: list[str] = []
    for spec in specs:
        mine = [r for r in records if r.workload == spec.name and is_excluded(r, cut)]
        if not mine:
            continue
        network = units.network_traffic(spec.argv, cut)
        for pi in spec.pis:
            values = np.array([r.readings[pi.name] for r in mine if pi.name in r.readings])
            values = values[np.isfinite(values)]
            if values.size == 0:
                continue
            if pi.pi_type is PIType.HARMONIC and np.all(values > 0):
                mean = float(values.size / np.sum(1.0 / values))
            else:
                mean = float(np.mean(values))
            name = f"[{spec.name}] {pi.name}" if len(specs) > 1 else pi.name
            rounds = "round" if values.size == 1 else "rounds"
            parts.append(
                f"{name} {units.quantity(mean, pi.unit, network)} over {values.size} "
                f"excluded {rounds}"
            )
    return "; ".join(parts) or None
