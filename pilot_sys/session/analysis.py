"""Per-round analysis of one workload's rounds: which rounds count, non-stable removal, CIs.

The statistics themselves live in ``pilot_sys.stats`` (pure functions); this module decides
*what* goes into them (the Pilot paper, §III-A, §III-E):

- short rounds, failed rounds, rounds excluded for a hidden bottleneck in their own monitor
  verdict (``pilot_sys.session.verdict``) and rounds doing less than the smallest useful work
  (from the WPS alpha) are not analysed;
- a PI with unit readings: EDM on each analysed round's unit readings, the round's dominant
  stable segment kept (cached per round: a round is examined once, so a session's cost per
  round stays flat), all kept segments together are the samples; when the rounds' levels
  differ more than their readings explain, the interval is over the kept segments' round means
  instead (``pilot_sys.stats.rounds``);
- a PI with readings only: one sample per analysed round;
- when the work amount varies, the WPS regression ``t = alpha + w / v`` over analysed rounds
  gives the stable work-per-second ``v`` (a PI of its own, ``wps``) and alpha.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pilot_sys.session import statsapi
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.journal import RoundRecord
from pilot_sys.session.result import DriftingAverage, PIResult, Removal, RoundCounts, WPSResult
from pilot_sys.session.verdict import is_excluded
from pilot_sys.session.work_done import wps_description
from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec

WPS_PI = "wps"
MIN_WPS_ROUNDS = 3
MIN_UNITS_PER_ROUND = (
    5  # fewer unit readings than this in any analysed round: use readings (EDM itself needs 20)
)


UnitLoader = Callable[[RoundRecord], tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]
"""A round's unit readings and their times (seconds since the round started), by PI."""


def equal_time_windows(times: np.ndarray) -> bool:
    """Whether unit readings are rates over equal time windows (fio's ``log_avg_msec`` logs)
    rather than over equal work (one per block, whose durations vary with the rate): at least
    80% of the gaps within 25% of the median gap. Only a guess for PIs whose source does not
    declare it (``PISpec.unit_weighting``); when rates barely vary both means agree, so a wrong
    guess then costs nothing."""
    gaps = np.diff(np.asarray(times, dtype=np.float64))
    if gaps.size < 4:
        return False
    med = float(np.median(gaps))
    if med <= 0:
        return False
    return bool(np.mean(np.abs(gaps / med - 1.0) <= 0.25) >= 0.8)


def units_rounds(
    rounds: list[RoundRecord], pi: str, min_rounds: int
) -> tuple[list[RoundRecord], Removal | None]:
    """The rounds whose unit readings of ``pi`` are used when some rounds have too few: those
    from the smallest work amount up from which every round has enough (a tool that logs in
    time windows gives a small round few; fio's bandwidth log starts a window or ten late).
    Chosen by work amount, which the planner set before the round ran, never by the count of
    windows a round happened to log, which would favour slow rounds. Used only when they are
    at least half the rounds and ``min_rounds``: else ([], None), and the readings decide."""
    counts = np.array([r.unit_counts.get(pi, 0) for r in rounds], dtype=np.int64)
    if not rounds or not counts.any() or counts.min() >= MIN_UNITS_PER_ROUND:
        return [], None
    work = np.array([r.work_amount for r in rounds], dtype=np.float64)
    too_few = work[counts < MIN_UNITS_PER_ROUND]
    floor = float(too_few.max())
    used = [r for r, w in zip(rounds, work, strict=True) if w > floor]
    if len(used) < max(min_rounds, len(rounds) / 2):
        return [], None
    return used, Removal(
        method="few_units",
        rounds=len(rounds) - len(used),
        detail=(
            f"rounds with work amount up to {floor:g} (some logged fewer than "
            f"{MIN_UNITS_PER_ROUND} unit readings): not used for the unit readings"
        ),
    )


@dataclass
class Stable:
    """The kept part of one round's unit readings for one PI."""

    start: int
    end: int
    total: int
    changepoints: list[int]
    found_dominant: bool


@dataclass
class TrackAnalysis:
    """Analysis state of one workload; :meth:`update` after every journaled round."""

    config: SessionConfig
    pis: list[PISpec]
    work_unit: str = ""
    cut: str | None = None  # the component under test: rounds are excluded only when it is known
    work_done: str | None = None  # what the workload's reported work done counts (work_done.py)
    stable: dict[tuple[int, str], Stable] = field(default_factory=dict)
    kept_units: dict[tuple[int, str], np.ndarray] = field(default_factory=dict)
    # PI -> guessed: units are equal-time windows
    time_windows: dict[str, bool] = field(default_factory=dict)
    wps: WPSResult | None = None
    wps_unit: str = ""
    alpha_work: float = 0.0  # smallest useful work from alpha, in work-amount units (0: none)
    amount_rate: float | None = None  # the WPS fit's v in work-amount units per second
    results: dict[str, PIResult] = field(default_factory=dict)
    counts: RoundCounts = field(default_factory=RoundCounts)
    # seconds the last update spent on EDM of rounds it had not seen: work each round needs once,
    # whenever it is done, so the engine does not count it as the cost of re-analysing
    new_round_seconds: float = 0.0

    def _stable_of(self, rec: RoundRecord, pi: str, values: np.ndarray) -> Stable:
        key = (rec.index, pi)
        cached = self.stable.get(key)
        if cached is not None:
            return cached
        n = int(values.size)
        if not self.config.remove_nonstable or n < statsapi.MIN_EDM_SAMPLES:
            st = Stable(0, n, n, [], True)
        else:
            began = time.perf_counter()
            start, end, cps, dominant = statsapi.stable_segment(values)
            self.new_round_seconds += time.perf_counter() - began
            st = Stable(start, end, n, cps, dominant)
        self.stable[key] = st
        self.kept_units[key] = np.asarray(values[st.start : st.end], dtype=np.float64)
        return st

    def update(
        self,
        records: list[RoundRecord],
        load_units: UnitLoader,
    ) -> dict[str, PIResult]:
        self.new_round_seconds = 0.0
        usable = [r for r in records if not r.failed and not r.short]
        excluded = [r for r in usable if is_excluded(r, self.cut)]
        usable = [r for r in usable if not is_excluded(r, self.cut)]
        self.counts = RoundCounts(
            total=len(records),
            short=sum(r.short for r in records),
            failed=sum(r.failed for r in records),
            excluded=len(excluded),
        )
        self._fit_wps(usable)
        below = [r for r in usable if self.alpha_work > 0 and r.work_amount < self.alpha_work]
        analysed = [
            r for r in usable if not (self.alpha_work > 0 and r.work_amount < self.alpha_work)
        ]
        self.counts.below_alpha = len(below)
        self.counts.analysed = len(analysed)

        results: dict[str, PIResult] = {}
        for spec in self.pis:
            counts = [r.unit_counts.get(spec.name, 0) for r in analysed]
            with_units, few = units_rounds(analysed, spec.name, self.config.min_rounds)
            if counts and min(counts) >= MIN_UNITS_PER_ROUND:
                results[spec.name] = self._from_units(spec, analysed, below, load_units)
            elif with_units and few is not None:
                res = self._from_units(spec, with_units, below, load_units)
                res.removed.append(few)
                results[spec.name] = res
            else:
                res = self._from_readings(spec, analysed, below)
                if any(counts):
                    # using only the rounds that happen to have enough windows would favour slow
                    # rounds (they last longer, so they log more): all rounds or none
                    res.warnings.append(
                        "unit readings not used: "
                        f"{sum(c < MIN_UNITS_PER_ROUND for c in counts)} of {len(counts)} "
                        f"analysed rounds have fewer than {MIN_UNITS_PER_ROUND}; "
                        "longer rounds (-w) give more"
                    )
                results[spec.name] = res
        if self.wps is not None and self.wps.v is not None:
            wps = self._wps_pi()
            # WPS is the non-stable removal for readings-only PIs (Pilot's documentation on
            # warm-up and cool-down detection); when every PI
            # has unit readings, EDM already did that job and v is reported, not waited for.
            wps.gates_stop = any(p.source == "readings" for p in results.values())
            results[WPS_PI] = wps
        self.results = results
        return results

    # -- unit readings -----------------------------------------------------------------------
    def _from_units(
        self,
        spec: PISpec,
        rounds: list[RoundRecord],
        below: list[RoundRecord],
        load_units: UnitLoader,
    ) -> PIResult:
        parts: list[np.ndarray] = []
        removed = kept = no_dominant = 0
        for rec in rounds:
            key = (rec.index, spec.name)
            if key not in self.kept_units:
                values, times = load_units(rec)
                if spec.name not in values:
                    continue
                if (
                    spec.unit_weighting is None
                    and spec.name not in self.time_windows
                    and spec.name in times
                ):
                    self.time_windows[spec.name] = equal_time_windows(times[spec.name])
                self._stable_of(rec, spec.name, np.asarray(values[spec.name], dtype=np.float64))
            st = self.stable[key]
            parts.append(self.kept_units[key])
            kept += st.end - st.start
            removed += st.total - (st.end - st.start)
            no_dominant += not st.found_dominant
        removal = [
            Removal(
                method="edm" if self.config.remove_nonstable else "none",
                rounds=len(rounds),
                samples_removed=removed,
                samples_kept=kept,
                detail=(
                    f"{no_dominant} round(s) had no dominant stable segment (kept whole)"
                    if no_dominant
                    else ""
                ),
            )
        ]
        removal += self._excluded_rounds(below)
        unit_spec = spec
        windows, how = self.units_are_time_windows(spec)
        if spec.pi_type == PIType.HARMONIC and windows:
            # rates over equal *time* windows (fio's bandwidth log) average arithmetically: that
            # is total work over total time; the harmonic mean is for equal-*work* units
            unit_spec = spec.model_copy(update={"pi_type": PIType.ARITHMETIC})
        res = self._summarise(unit_spec, parts, "unit_readings", removal)
        if unit_spec is not spec:
            res.warnings.append(
                f"unit readings are equal-time windows ({how}): averaged arithmetically "
                "(total work / total time)"
            )
        own = np.array(
            [r.readings[spec.name] for r in rounds if spec.name in r.readings], dtype=np.float64
        )
        own = own[np.isfinite(own) & ((own > 0) | (spec.pi_type != PIType.HARMONIC))]
        if own.size:
            res.readings_mean = statsapi.point_estimate(own, spec.pi_type)
            if res.ci_low is not None and res.ci_high is not None:
                res.readings_in_ci = bool(res.ci_low <= res.readings_mean <= res.ci_high)
        return res

    def units_are_time_windows(self, spec: PISpec) -> tuple[bool, str]:
        """Whether the PI's unit readings cover equal time (else equal work), and how that is known:
        the source's declaration wins; the timestamp guess is only for sources that cannot say."""
        if spec.unit_weighting is not None:
            return spec.unit_weighting == "time", "declared by the workload"
        return self.time_windows.get(spec.name, False), "guessed from their timestamps"

    # -- readings ----------------------------------------------------------------------------
    def _from_readings(
        self, spec: PISpec, rounds: list[RoundRecord], below: list[RoundRecord]
    ) -> PIResult:
        values = np.array(
            [r.readings[spec.name] for r in rounds if spec.name in r.readings], dtype=np.float64
        )
        values = values[np.isfinite(values)]
        res = self._summarise(spec, values, "readings", self._excluded_rounds(below))
        if self.wps is not None and self.wps.v is not None and spec.pi_type == PIType.HARMONIC:
            res.warnings.append(
                "per-round readings include each round's non-stable phases; "
                "`wps` is the stable rate"
            )
        return res

    def _excluded_rounds(self, below: list[RoundRecord]) -> list[Removal]:
        if not below:
            return []
        return [
            Removal(
                method="alpha",
                rounds=len(below),
                detail=(
                    "rounds with work amount below the smallest useful work = "
                    f"{self.alpha_work:.6g} {self.work_unit}"
                ).rstrip(),
            )
        ]

    def _summarise(
        self,
        spec: PISpec,
        samples: np.ndarray | list[np.ndarray],
        source: str,
        removed: list[Removal],
    ) -> PIResult:
        """The PI's interval over ``samples``; given as a list (each analysed round's kept unit
        readings) it may be taken over round means when the rounds disagree
        (``pilot_sys.stats.rounds``)."""
        cfg = self.config
        size = sum(g.size for g in samples) if isinstance(samples, list) else int(samples.size)
        res = PIResult(
            name=spec.name,
            unit=spec.unit,
            pi_type=str(spec.pi_type),
            higher_is_better=spec.higher_is_better,
            source=source,
            confidence=cfg.confidence,
            target=cfg.ci_perc,
            sample_size=size,
            removed=removed,
            gates_stop=spec.gates_stop,
        )
        if size < statsapi.MIN_SAMPLES:
            res.warnings.append(f"{size} sample(s): too few for a confidence interval yet")
            return res
        if not isinstance(samples, list):
            s = statsapi.summarize(
                samples, spec.pi_type, cfg.confidence, cfg.ci_perc, cfg.autocorr_limit
            )
        else:
            s = statsapi.summarize_rounds(
                samples, spec.pi_type, cfg.confidence, cfg.ci_perc, cfg.autocorr_limit
            )
            res.interval_basis, res.rounds_heterogeneity_p = s.basis, s.heterogeneity_p
            if s.drifting is not None:
                low, high, rounds, reason = s.drifting
                res.drifting = DriftingAverage(
                    ci_low=low, ci_high=high, rounds=rounds, reason=reason
                )
        res.mean, res.ci_low, res.ci_high = s.mean, s.ci_low, s.ci_high
        res.subsession_size, res.subsession_count = s.subsession_size, s.subsession_count
        res.subsession_variance, res.autocorrelation = s.subsession_variance, s.autocorrelation
        res.required_sample_size = s.required_sample_size
        res.warnings.extend(s.warnings)
        if (
            res.mean is not None
            and res.ci_low is not None
            and res.ci_high is not None
            and res.mean != 0
        ):
            res.ci_width_rel = float((res.ci_high - res.ci_low) / abs(res.mean))
            res.ci_reached = bool(res.ci_width_rel <= cfg.ci_perc and s.usable)
        return res

    # -- WPS ---------------------------------------------------------------------------------
    def _fit_wps(self, usable: list[RoundRecord]) -> None:
        """Fit t = alpha + w / v over rounds with a varying work amount.

        ``w`` is the work the workload reports it did (fio, dd and the built-in workload report
        bytes) when every round reports it, else the work amount. The alpha bound is then converted
        back to *work-amount* units (by the median ratio of work amount to work done) before it
        raises ``a``: the bound compares like with like (Pilot mixed seconds and nanoseconds)."""
        self.wps_unit = f"{self.work_unit}/s" if self.work_unit else "work/s"
        self.amount_rate = None
        if self.config.fixed_work:
            self.wps = None
            return
        amount = np.array([r.work_amount for r in usable], dtype=np.float64)
        done = np.array(
            [np.nan if r.work_done is None else r.work_done for r in usable], dtype=np.float64
        )
        t = np.array([r.duration for r in usable], dtype=np.float64)
        use_done = bool(done.size) and bool(np.all(np.isfinite(done) & (done > 0)))
        w = done if use_done else amount
        if w.size < MIN_WPS_ROUNDS or np.unique(w).size < 2:
            self.wps = None
            return
        if use_done and not np.allclose(done, amount):
            self.wps_unit = "B/s"  # what runners report as work done: bytes moved
        self.wps = statsapi.wps_fit(w, t, self.config.confidence, self.config.autocorr_limit)
        if self.wps is None:
            self.alpha_work = 0.0
            return
        aw = self.wps.alpha_work
        ratio = float(np.median(amount / w)) if use_done else 1.0
        # the planner predicts in work-amount units: v (work done per second) times this ratio
        self.amount_rate = float(self.wps.v * ratio) if self.wps.v and ratio > 0 else None
        # only an alpha shown to be above zero bounds anything: an interval reaching down to 0
        # cannot say that short rounds are dominated by non-stable phases
        significant = self.wps.alpha_ci_low is not None and self.wps.alpha_ci_low > 0
        if not significant and self.wps.alpha is not None and self.wps.alpha > 0:
            self.wps.warnings.append(
                "alpha's CI reaches 0: no lower bound on the work amount is applied"
            )
            self.wps.alpha_bound = "not_above_zero"
        bound = (
            float(aw * ratio)
            if significant and aw is not None and math.isfinite(aw) and aw > 0 and ratio > 0
            else 0.0
        )
        if bound >= self.config.work_max > 0:
            # every allowed round is dominated by alpha: dropping them all would leave nothing
            self.wps.warnings.append(
                f"the smallest useful work amount ({bound:.6g} {self.work_unit}) is above the "
                f"range's maximum ({self.config.work_max:g}): every round spends over 10% of its "
                "time in setup/warm-up; raise -w MAX"
            )
            bound = 0.0
            self.wps.alpha_bound = "above_range"
        elif bound > 0:
            self.wps.alpha_bound = "applied"
        self.alpha_work = bound
        self.wps.v_unit = self.wps_unit
        self.wps.alpha_work_amount = self.alpha_work or None

    def _wps_pi(self) -> PIResult:
        assert self.wps is not None
        cfg = self.config
        res = PIResult(
            name=WPS_PI,
            unit=self.wps_unit,
            pi_type=str(PIType.HARMONIC),
            source="wps",
            confidence=cfg.confidence,
            target=cfg.ci_perc,
            mean=self.wps.v,
            ci_low=self.wps.v_ci_low,
            ci_high=self.wps.v_ci_high,
            sample_size=self.wps.rounds_used,
            subsession_size=self.wps.subsession_size,
            warnings=list(self.wps.warnings),
            description=wps_description(
                self.work_done if self.wps_unit == "B/s" else None, self.work_unit
            ),
        )
        if res.mean and res.ci_low is not None and res.ci_high is not None:
            res.ci_width_rel = float((res.ci_high - res.ci_low) / abs(res.mean))
            res.ci_reached = res.ci_width_rel <= cfg.ci_perc
        return res

    def rounds_to_first_interval(self, analysed_rounds: int) -> int | None:
        """For PIs without an interval yet: rounds until the stats' estimate of the samples an
        interval needs at all (at least 50 effective ones); None when every PI has one."""
        need: int | None = None
        for res in self.results.values():
            if not res.gates_stop or res.ci_low is not None:
                continue
            if res.required_sample_size is None or res.sample_size == 0 or analysed_rounds == 0:
                return None
            if res.required_sample_size <= res.sample_size + 1:
                return None  # the stats can only say "more than now": no forecast
            per_round = res.sample_size / analysed_rounds
            missing = res.required_sample_size - res.sample_size
            need = max(need or 0, math.ceil(missing / max(per_round, 1e-9)))
        return need

    def rounds_needed(self, analysed_rounds: int) -> int | None:
        """Rounds still needed for every PI's target, from each PI's required sample size and
        the samples one round contributes; None while unknown."""
        need = max(0, self.config.min_rounds - analysed_rounds)
        for res in self.results.values():
            if res.ci_reached or not res.gates_stop:
                continue
            if (
                res.ci_low is None
                or res.required_sample_size is None
                or res.sample_size == 0
                or analysed_rounds == 0
            ):
                return None  # no interval yet: the stats' estimate is only "more than now"
            per_round = res.sample_size / analysed_rounds
            missing = max(res.required_sample_size - res.sample_size, 1)
            need = max(need, math.ceil(missing / max(per_round, 1e-9)))
        return need
