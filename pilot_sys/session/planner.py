"""Which work amount the next round gets (the Pilot paper §III-A and §III-E, and its
documentation on warm-up detection).

The plan has three phases, each from the Pilot paper or its documentation:

1. **calibrate**: start at ``a`` (or ``b/1024`` when the user gave ``a = 0``). A round shorter
   than ``min_round_seconds`` is *short*: stored, not analysed; the work amount doubles until a
   round is long enough *and* most of it is work, and ``a`` is raised to that work amount. A
   tool with a start-up cost (fio spends a few tenths of a second before its first I/O) takes
   long enough at any work amount; doubling ``w`` then barely lengthens the round. Two rounds at
   ``w/2`` and ``w`` give the fixed cost ``alpha = 2 t(w/2) - t(w)`` and the work part
   ``w / v = 2 (t(w) - t(w/2))``; doubling stops once the work part is two thirds of the round
   (``t(w) >= 1.5 t(w/2)``), or at ``b``; a pair that grew by more than 2.2x (impossible for
   ``alpha >= 0``: a disturbed round) is not believed, and doubling goes on. Later, the WPS
   fit's alpha keeps ``a`` at least ``2 alpha v`` (``WORK_SHARE``). So a first round that is
   already long enough is followed by one at twice its work, to see.
2. **ramp** (the k heuristic): knowing round 1 took ``s`` seconds, round ``i`` is planned to take
   ``s + (i-1)k`` with ``k = (2t - 2sn) / (n^2 - n)``, so ``n`` rounds give a first rough result
   within ``t`` seconds (``first_result_seconds``, default 60).
3. **refine**: the midpoint sequence over ``(a, b)`` (1/2, 1/4, 3/4, 1/8, ...), unequal work
   amounts that keep the WPS regression well conditioned.

The fixed cost (from calibration, then from the WPS fit's alpha) is kept apart from the rate:
``v`` is the rate of the work part, a round is predicted to take ``alpha + w / v``, and the round
length caps (``max_round_seconds``) bound the work part. Throughout, alpha from the WPS fit
raises ``a`` (rounds doing less work than the non-stable
phases are useless), and no round is planned longer than ``max_round_seconds`` or the session
time left. All durations are seconds and all work amounts are in the workload's own unit; the
alpha bound is converted to work units (via v) before it is compared with a work amount,
never mixed with a duration.
"""

from __future__ import annotations

import math
from enum import StrEnum

import numpy as np
from pydantic import BaseModel

from pilot_sys.session.config import SessionConfig

CALIBRATION_FRACTION = 1 / 1024  # first work amount as a fraction of b when a = 0
# the share of a round's time that should be work, not its fixed cost: two thirds
WORK_SHARE = 2.0 / 3.0
# calibration stops doubling once doubling the work lengthens the round by this factor: the
# work part 2 (t(w) - t(w/2)) is then WORK_SHARE of t(w)
WORK_DOMINATED_GROWTH = 1.0 / (1.0 - WORK_SHARE / 2.0)
# t = alpha + w / v with alpha >= 0 at most doubles when w doubles: a pair that grew by more than
# this (a disk stall, another tenant's burst in the second round) says nothing; doubling goes on
MAX_CONSISTENT_GROWTH = 2.2


class Phase(StrEnum):
    FIXED = "fixed"  # the workload's work amount cannot be changed
    CALIBRATE = "calibrate"
    RAMP = "ramp"
    REFINE = "refine"


class RoundPlan(BaseModel):
    work_amount: float
    phase: Phase
    predicted_seconds: float | None = None


def midpoint_fractions(count: int, start: int = 1) -> np.ndarray:
    """Positions in (0, 1) of midpoint-sequence rounds ``start .. start+count-1`` (1-based).

    Round i sits at level L = floor(log2 i), position j = i - 2^L: fraction (2j+1) / 2^(L+1);
    so 1/2, 1/4, 3/4, 1/8, 3/8, 5/8, 7/8, 1/16, ... (the Pilot paper, Fig. 3).
    """
    i = np.arange(start, start + count, dtype=np.int64)
    level = np.floor(np.log2(i)).astype(np.int64)
    # guard float log2 rounding at exact powers of two
    level = np.where((1 << (level + 1)) <= i, level + 1, level)
    level = np.where((1 << level) > i, level - 1, level)
    j = i - (1 << level)
    return (2 * j + 1) / (2.0 ** (level + 1))


def midpoint_sequence(a: float, b: float, count: int, start: int = 1) -> np.ndarray:
    """Work amounts of the midpoint sequence over the valid range (a, b)."""
    return a + (b - a) * midpoint_fractions(count, start)


def k_increment(t: float, s: float, n: int) -> float:
    """k of the Pilot documentation's heuristic: each round ``k`` seconds longer than the
    previous one, so that ``n`` rounds starting at ``s`` seconds take ``t`` seconds. Never
    negative: when ``n`` rounds of ``s`` seconds already exceed ``t``, rounds stay at ``s``."""
    if n < 2:
        return 0.0
    return max(0.0, (2.0 * t - 2.0 * s * n) / (n * n - n))


class Planner:
    """Stateful planner for one workload; feed it every finished round with :meth:`observe`."""

    def __init__(self, config: SessionConfig) -> None:
        self.cfg = config
        self.a = float(config.work_min)
        self.b = float(config.work_max)
        self.phase = Phase.FIXED if config.fixed_work else Phase.CALIBRATE
        self.s: float | None = None  # duration of the first long-enough round
        self.k = 0.0
        self.ramp_index = 0  # i of the k heuristic (1 = the calibration round)
        self.ramp_elapsed = 0.0
        self.refine_index = 0
        self.last_work: float | None = None
        self.last_duration: float | None = None
        self.rate: float | None = None  # work units per second of the work part of a round
        self.fixed_cost = 0.0  # seconds a round spends whatever its work (start-up): alpha
        self.alpha_work = 0.0
        self.all_short_warning = False

    # -- planning ----------------------------------------------------------------------------
    def next_round(self, time_left: float | None = None) -> RoundPlan:
        """The next round's work amount; ``time_left`` (seconds) caps its predicted duration."""
        if self.phase is Phase.FIXED:
            return RoundPlan(work_amount=self.b if self.b > 0 else self.a, phase=Phase.FIXED)
        if self.phase is Phase.CALIBRATE:
            if self.last_work is None:
                w = self.a if self.a > 0 else self.b * CALIBRATION_FRACTION
                if self.cfg.integer_work:
                    w = max(w, 1.0)
            else:
                w = min(max(self.last_work * 2.0, self.a), self.b)
            return RoundPlan(
                work_amount=w, phase=Phase.CALIBRATE, predicted_seconds=self._predict(w)
            )
        if self.phase is Phase.RAMP:
            assert self.s is not None
            target = self.s + self.ramp_index * self.k
            w = self._work_for(target)
            if w >= self.b:  # the ramp reached b: its job is done, spread the rounds for WPS
                self.phase = Phase.REFINE
                w = float(midpoint_sequence(self.a, self.b, 1, start=self.refine_index + 1)[0])
        else:
            w = float(midpoint_sequence(self.a, self.b, 1, start=self.refine_index + 1)[0])
        w = self._capped(w, time_left)
        return RoundPlan(work_amount=w, phase=self.phase, predicted_seconds=self._predict(w))

    def _work_for(self, seconds: float) -> float:
        if self.rate is None:
            return self.a
        return self.rate * max(seconds - self.fixed_cost, 0.0)

    def _predict(self, w: float) -> float | None:
        return None if not self.rate else self.fixed_cost + w / self.rate

    def _capped(self, w: float, time_left: float | None) -> float:
        cap = self.b
        if self.rate:
            cap = min(cap, self.rate * self.cfg.max_round_seconds)
            if time_left is not None:
                cap = min(cap, self.rate * max(time_left - self.fixed_cost, 0.0))
        return float(min(max(w, self.a), max(cap, self.a)))

    # -- learning ----------------------------------------------------------------------------
    def is_short(self, duration: float, work_amount: float | None = None) -> bool:
        """Short rounds are stored but not analysed; when nothing can be lengthened (a fixed
        work amount, or a round already at b) they are analysed (the result says so)."""
        if self.phase is Phase.FIXED or duration >= self.cfg.min_round_seconds:
            return False
        if work_amount is not None and work_amount >= self.b and self.phase is not Phase.CALIBRATE:
            self.all_short_warning = True
            return False
        return True

    def observe(self, work_amount: float, duration: float, short: bool) -> None:
        """Learn from a finished round (short or not) and move between phases."""
        previous = (self.last_work, self.last_duration)
        self.last_work, self.last_duration = work_amount, duration
        if duration > self.fixed_cost and work_amount > 0 and not short:
            r = work_amount / (duration - self.fixed_cost)
            self.rate = r if self.rate is None else 0.5 * (self.rate + r)
        if self.phase is Phase.FIXED:
            return
        if self.phase is Phase.CALIBRATE:
            if short and work_amount < self.b:
                return
            if not short and work_amount < self.b and not self._work_dominated(*previous):
                return  # the fixed cost dominates the round (or is not known yet): double
            if short:  # even b is short: nothing longer is allowed, analyse what there is
                self.all_short_warning = True
            self.a = max(self.a, work_amount)
            self.s = duration
            self.k = k_increment(self.cfg.first_result_seconds, duration, self.cfg.k_rounds)
            self.ramp_index = 1
            self.ramp_elapsed = duration
            self.phase = Phase.RAMP if self.a < self.b else Phase.FIXED
            if self.phase is Phase.FIXED:
                self.b = self.a
            return
        if short:  # the rate estimate was off: lengthen rounds from here on (Pilot docs)
            self.a = min(max(self.a, work_amount * 2.0), self.b)
        if self.phase is Phase.RAMP:
            self.ramp_index += 1
            self.ramp_elapsed += duration
            if (
                self.ramp_elapsed >= self.cfg.first_result_seconds
                or self.ramp_index >= self.cfg.k_rounds
            ):
                self.phase = Phase.REFINE
            return
        self.refine_index += 1

    def _work_dominated(self, work: float | None, duration: float | None) -> bool:
        """Whether the round just observed is mostly work, judged against the calibration round
        before it at half the work (``work``, ``duration``): False without one. Learns the
        fixed cost and the work part's rate from the two rounds."""
        now_work, now = self.last_work, self.last_duration
        if work is None or duration is None or not now_work or not now or work <= 0:
            return False
        if not math.isclose(now_work, 2.0 * work, rel_tol=0.05):
            return False
        growth = now / duration if duration > 0 else math.inf
        dominated = WORK_DOMINATED_GROWTH <= growth <= MAX_CONSISTENT_GROWTH
        self.fixed_cost = max(0.0, min(2.0 * duration - now, now))
        if now > self.fixed_cost:
            self.rate = now_work / (now - self.fixed_cost)
        return dominated

    def set_rate(self, work_per_second: float | None) -> None:
        """Use the WPS fit's v, converted to work-amount units per second, for predictions."""
        if work_per_second is not None and math.isfinite(work_per_second) and work_per_second > 0:
            self.rate = float(work_per_second)

    def set_fixed_cost(self, fixed_cost: float | None) -> None:
        """Use the WPS fit's alpha (seconds a round costs whatever its work) for predictions."""
        if fixed_cost is not None and math.isfinite(fixed_cost) and fixed_cost >= 0:
            self.fixed_cost = float(fixed_cost)
            if self.rate and self.phase in (Phase.RAMP, Phase.REFINE):
                share = WORK_SHARE / (1.0 - WORK_SHARE)  # work part / fixed cost
                self.a = float(max(self.a, min(self.b, share * self.fixed_cost * self.rate)))

    def lengthen(self) -> bool:
        """Double the smallest work amount (at most to ``b``): longer rounds, each reading
        averaging more, when the readings stay correlated at this round length
        (``session.early_stop``). False when nothing can be lengthened."""
        if self.phase in (Phase.FIXED, Phase.CALIBRATE) or self.a >= self.b:
            return False
        base = max(self.a, self.last_work or 0.0)
        self.a = float(min(self.b, 2.0 * base if base > 0 else self.b))
        return True

    def raise_lower_bound(self, alpha_work: float) -> bool:
        """alpha (converted to work units) raises a; returns True if a moved."""
        if self.phase is Phase.FIXED or not math.isfinite(alpha_work) or alpha_work <= self.a:
            return False
        self.alpha_work = float(alpha_work)
        self.a = float(min(alpha_work, self.b))
        return True
