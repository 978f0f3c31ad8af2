"""The work-amount planner against hand-computed cases (seeds/000, seeds/002 §III-A, §III-E)."""

from __future__ import annotations

import numpy as np
import pytest

from pilot_sys.session.config import SessionConfig
from pilot_sys.session.engine import analysis_step, cost_floor
from pilot_sys.session.planner import (
    Phase,
    Planner,
    k_increment,
    midpoint_fractions,
    midpoint_sequence,
)


def test_midpoint_sequence_follows_fig3() -> None:
    # Rd.1 = mid(a, b); Rd.2 = mid(a, Rd.1); Rd.3 = mid(Rd.1, b); Rd.4..7 the eighths;
    # Rd.8 = mid(a, Rd.4)
    assert midpoint_fractions(8).tolist() == [
        1 / 2,
        1 / 4,
        3 / 4,
        1 / 8,
        3 / 8,
        5 / 8,
        7 / 8,
        1 / 16,
    ]
    assert midpoint_sequence(0, 16, 7).tolist() == [8, 4, 12, 2, 6, 10, 14]
    assert midpoint_sequence(100, 200, 3, start=2).tolist() == [125, 175, 112.5]


def test_midpoint_sequence_never_repeats_and_stays_inside() -> None:
    f = midpoint_fractions(4096)
    assert np.unique(f).size == f.size
    assert f.min() > 0 and f.max() < 1
    # exact powers of two start a new level (guards float log2 rounding)
    assert midpoint_fractions(1, start=1024)[0] == 1 / 2048
    assert midpoint_fractions(1, start=2047)[0] == 2047 / 2048


def test_k_heuristic_matches_the_seed_formula() -> None:
    # k = (2t - 2sn) / (n^2 - n): t = 60 s, s = 0.5 s, n = 50 -> (120 - 50) / 2450
    assert k_increment(60, 0.5, 50) == pytest.approx(70 / 2450)
    # the n rounds then take exactly t: sum_{i=1..n} (s + (i-1)k) = n s + k n (n-1) / 2
    k = k_increment(60, 0.5, 50)
    assert 50 * 0.5 + k * 50 * 49 / 2 == pytest.approx(60)
    # rounds already longer than t / n: never shrink them
    assert k_increment(60, 2.0, 50) == 0.0
    assert k_increment(60, 1.0, 1) == 0.0


def _cfg(**kw: object) -> SessionConfig:
    base = dict(
        work_min=0.0,
        work_max=1024.0,
        min_round_seconds=0.5,
        max_round_seconds=20.0,
        first_result_seconds=60.0,
        k_rounds=50,
        monitor=False,
    )
    base.update(kw)
    return SessionConfig(**base)  # type: ignore[arg-type]


def test_short_rounds_double_the_work_and_raise_a() -> None:
    """A workload doing 100 units/s with a 0.5 s minimum round: 1, 2, 4, ..., 32 are short, 64
    is not."""
    p = Planner(_cfg())
    plans = []
    while p.phase is Phase.CALIBRATE:
        w = p.next_round().work_amount
        plans.append(w)
        d = w / 100.0
        p.observe(w, d, p.is_short(d))
    assert plans == [1, 2, 4, 8, 16, 32, 64]  # b / 1024 = 1, then doubling
    assert p.a == 64 and p.s == pytest.approx(0.64)
    assert p.phase is Phase.RAMP
    assert p.k == pytest.approx(k_increment(60, 0.64, 50))


def test_ramp_rounds_grow_by_k_seconds() -> None:
    p = Planner(_cfg(work_min=64.0))
    w1 = p.next_round().work_amount
    assert w1 == 64
    p.observe(64, 0.64, False)  # 100 units/s
    # a first round already long enough is followed by one at twice its work, to see how much
    # of it was a fixed cost: none here (twice the work, twice the time)
    assert p.phase is Phase.CALIBRATE and p.next_round().work_amount == 128
    p.observe(128, 1.28, False)
    assert p.phase is Phase.RAMP and p.a == 128 and p.fixed_cost == 0
    k = p.k
    for i in range(2, 6):
        plan = p.next_round()
        assert plan.phase is Phase.RAMP
        # round i should last s + (i-1) k at the learned rate of 100 units/s
        assert plan.work_amount == pytest.approx(100 * (1.28 + (i - 1) * k))
        p.observe(plan.work_amount, plan.work_amount / 100, False)


def test_refine_uses_the_midpoint_sequence_after_t_seconds() -> None:
    p = Planner(
        _cfg(work_min=100.0, work_max=900.0, first_result_seconds=2.0, max_round_seconds=100.0)
    )
    p.observe(100, 1.0, False)  # calibration rounds: 1 s, then twice the work in 2 s
    p.observe(200, 2.0, False)
    p.observe(p.next_round().work_amount, 1.5, False)  # ramp round: total 3.5 s >= t
    assert p.phase is Phase.REFINE
    got = []
    for _ in range(3):
        w = p.next_round().work_amount
        got.append(w)
        p.observe(w, w / 100, False)
    assert got == [550, 375, 725]  # midpoints of (200, 900)


def test_rounds_are_capped_by_max_round_seconds_and_time_left() -> None:
    p = Planner(_cfg(work_min=50.0, work_max=1e9, max_round_seconds=2.0, first_result_seconds=0.5))
    p.observe(50, 0.5, False)  # 100 units/s; t already spent: the midpoint sequence is next
    p.observe(100, 1.0, False)
    p.observe(100, 1.0, False)
    assert p.phase is Phase.REFINE
    assert p.next_round().work_amount == pytest.approx(200)  # 5e8 wanted, 2 s allowed
    assert p.next_round(time_left=1.5).work_amount == pytest.approx(150)
    assert p.next_round(time_left=0.1).work_amount == 100  # never below a


def test_alpha_raises_a_in_work_units() -> None:
    p = Planner(_cfg(work_min=10.0))
    p.observe(10, 1.0, False)
    assert p.raise_lower_bound(40.0) is True
    assert p.a == 40.0
    assert p.raise_lower_bound(30.0) is False  # a only moves up
    assert p.next_round().work_amount >= 40.0
    assert p.raise_lower_bound(5000.0) is True and p.a == 1024.0  # never beyond b


def test_a_start_up_cost_is_measured_and_most_of_every_round_is_work() -> None:
    """A tool that spends 0.3 s before its first I/O and then moves 2000 units/s (fio writing
    1 MiB blocks): every round is long enough, so calibration doubles until doubling the work
    lengthens the round by 1.5, where two thirds of a round is work."""
    p = Planner(_cfg(work_min=16.0, work_max=4096.0, min_round_seconds=0.1, max_round_seconds=1.2))
    plans = []
    while p.phase is Phase.CALIBRATE:
        w = p.next_round().work_amount
        plans.append(w)
        d = 0.3 + w / 2000.0
        p.observe(w, d, p.is_short(d))
    # t(512) = 0.556 s, t(1024) = 0.812 s: 1.46 x; t(2048) = 1.324 s: 1.63 x >= 1.5
    assert plans == [16, 32, 64, 128, 256, 512, 1024, 2048]
    assert p.fixed_cost == pytest.approx(0.3) and p.rate == pytest.approx(2000)
    assert p.a == 2048
    # a disturbed round (a disk stall: 2.6x the time for 2x the work) is not believed
    q = Planner(_cfg(work_min=128.0, work_max=4096.0, min_round_seconds=0.1))
    q.observe(128, 0.84, False)
    q.observe(256, 2.22, False)
    assert q.phase is Phase.CALIBRATE and q.next_round().work_amount == 512
    for _ in range(20):
        plan = p.next_round()
        d = 0.3 + plan.work_amount / 2000.0
        assert plan.predicted_seconds == pytest.approx(d)
        assert plan.work_amount / 2000.0 >= 2 * 0.3  # two thirds of the round is work
        assert plan.work_amount / 2000.0 <= 1.2 + 1e-9  # max_round_seconds caps the work part
        p.observe(plan.work_amount, d, p.is_short(d))


def test_fixed_work_keeps_one_amount_and_analyses_short_rounds() -> None:
    p = Planner(_cfg(work_min=1.0, work_max=1.0))
    assert p.phase is Phase.FIXED
    assert p.next_round().work_amount == 1.0
    assert p.is_short(0.001) is False
    assert p.raise_lower_bound(10.0) is False


def test_analysis_schedule() -> None:
    # no forecast: at the latest after 2% more rounds (at least one): ceil(0.02 * n)
    assert analysis_step(1, None) == 1
    assert analysis_step(40, None) == 1
    assert analysis_step(200, None) == 4
    assert analysis_step(1000, None) == 20
    # a forecast of 10 more rounds: look again after half of them (floor(0.5 * 10) = 5), unless
    # the growth limit comes first
    assert analysis_step(1000, 10) == 5
    assert analysis_step(200, 10) == 4
    assert analysis_step(40, 1) == 1
    assert analysis_step(1000, 100) == 20
    # no interval yet: the stats' rough estimate of the rounds one needs only brings analyses closer
    assert analysis_step(1000, None, 6) == 3
    assert analysis_step(9, None, 41) == 1


def test_full_analyses_are_paced_by_their_cost() -> None:
    # a 150 ms analysis between no-op rounds: at most 1 ms a round on average -> every 150 rounds
    assert cost_floor(0.150, 0.0) == 150
    # between 10 s rounds the budget is 2% of a round (200 ms): every round
    assert cost_floor(0.150, 10.0) == 1
    assert cost_floor(0.0005, 0.0) == 1


def test_unit_readings_come_from_the_rounds_above_the_work_with_too_few() -> None:
    """Calibration rounds of a tool whose logs start late log too few windows: the rounds above
    the largest such work amount give the unit readings, chosen by work amount, not count."""
    from pilot_sys.session.analysis import units_rounds
    from pilot_sys.session.journal import RoundRecord

    def rec(i: int, work: float, units: int) -> RoundRecord:
        return RoundRecord(
            index=i,
            workload="fio",
            workload_round=i,
            dir=f"rounds/{i:04d}",
            started_at=0.0,
            work_amount=work,
            duration=1.0,
            phase="refine",
            unit_counts={"write_bw": units},
        )

    rounds = [rec(1, 16, 0), rec(2, 32, 2), rec(3, 64, 3)] + [
        rec(i, 500 + i, 30) for i in range(4, 14)
    ]
    used, removal = units_rounds(rounds, "write_bw", min_rounds=8)
    assert [r.index for r in used] == list(range(4, 14))
    assert removal is not None and removal.rounds == 3 and "up to 64" in removal.detail
    # a big round that logged too few (a slow one) drops every round up to its work amount
    slow = rounds + [rec(14, 505, 4)]
    used, _ = units_rounds(slow, "write_bw", min_rounds=8)
    assert [r.work_amount for r in used] == [506, 507, 508, 509, 510, 511, 512, 513]
    # fewer than half the rounds (or min_rounds) left: none, the readings decide
    assert units_rounds(rounds, "write_bw", min_rounds=11) == ([], None)
    # every round has enough: nothing to choose
    assert units_rounds(rounds[3:], "write_bw", min_rounds=8) == ([], None)
