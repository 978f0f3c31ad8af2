"""Kinds of change (level, trend, spread) and the change points a trend explains away."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.stats.change_kind import classify_change, classify_changes, explain_changes
from pilot_sys.stats.changepoint import detect

RNG_SEEDS = [1, 2, 3]


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_each_kind_on_a_constructed_series(seed: int) -> None:
    rng = np.random.default_rng(seed)
    noise = rng.normal(0, 1, 400)
    t = np.arange(400.0)
    step = np.where(t < 200, 0.0, 3.0) + noise
    kink = np.where(t < 200, 0.0, 0.05 * (t - 200)) + noise
    spread = np.where(t < 200, 1.0, 4.0) * noise
    line = 0.05 * t + noise
    bend = -0.0005 * (t - 400.0) ** 2 + noise  # growth that slows down smoothly: no turn
    assert classify_change(step, 0, 200, 400).kind == "level"
    assert classify_change(kink, 0, 200, 400).kind == "trend"
    assert classify_change(spread, 0, 200, 400).kind == "spread"
    assert classify_change(line, 0, 200, 400).kind == "none"
    assert classify_change(bend, 0, 200, 400).kind == "none"


def test_jump_and_slopes_are_the_two_lines_at_the_change() -> None:
    t = np.arange(100.0)
    x = np.where(t < 50, 1.0 + 0.1 * t, 20.0 - 0.2 * (t - 50)) + np.tile([0.01, -0.01], 50)
    found = classify_change(x, 0, 50, 100)
    # left line at t = 50: 1 + 0.1 * 50 = 6; right line starts at 20
    assert found.kind == "level"
    assert found.jump == pytest.approx(14.0, abs=0.05)
    assert found.slope_before == pytest.approx(0.1, abs=0.01)
    assert found.slope_after == pytest.approx(-0.2, abs=0.01)


def test_a_smooth_trend_loses_its_staircase_and_a_real_step_stays() -> None:
    t = np.arange(900.0)
    raw_total = kept_extra = levels = 0
    for seed in range(10):
        x = 0.02 * t + 8.0 * (t >= 600) + np.random.default_rng(seed).normal(0, 1, 900)
        raw = detect(x)
        merged, kinds = explain_changes(x, raw)
        raw_total += len(raw.changepoints)
        step = [k for k in kinds if abs(k.index - 600) <= 6]
        assert len(step) == 1
        # EDM sometimes cuts the step twice, a few readings apart; the short piece between
        # then reads as a steep ramp and the change left as a turn ("trend")
        levels += step[0].kind == "level" and abs(step[0].jump - 8.0) < 1.0
        kept_extra += len(merged.changepoints) - 1
        bounds = [0, *merged.changepoints, 900]
        assert [(s.begin, s.end) for s in merged.segments] == list(itertools.pairwise(bounds))
    assert raw_total >= 100  # EDM alone: a staircase of about a dozen cuts per series
    assert kept_extra <= 5  # at most one artefact in two series survives
    assert levels >= 8


def test_without_drop_every_change_point_is_kept() -> None:
    rng = np.random.default_rng(5)
    x = 0.05 * np.arange(600.0) + rng.normal(0, 1, 600)
    cuts = detect(x).changepoints
    kinds = classify_changes(x, cuts, drop=False)
    assert [k.index for k in kinds] == cuts and {k.kind for k in kinds} == {"none"}
    assert classify_changes(x, cuts) == []


def test_without_drop_a_real_step_between_spurious_cuts_is_a_level() -> None:
    # A 1-sigma step at 500 with spurious cuts 30 readings either side: judged between its
    # immediate neighbours (30 readings each, two lines) the step was "none" in 19 of these 20
    # series; judged once the spurious cuts are merged away it is a level, with or without drop.
    named = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        x = np.r_[rng.normal(0, 1, 500), rng.normal(1, 1, 500)]
        kinds = classify_changes(x, [470, 500, 530], drop=False)
        assert [k.index for k in kinds] == [470, 500, 530]
        named += [k.kind for k in kinds] == ["none", "level", "none"]
        kept = classify_changes(x, [470, 500, 530])
        assert [k for k in kinds if k.kind != "none"] == kept
    assert named >= 18


def _changepoint_real():  # type: ignore[no-untyped-def]
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "changepoint_real.py"
    spec = importlib.util.spec_from_file_location("changepoint_real", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tcpdbench_f1_and_covering_by_hand() -> None:
    bench = _changepoint_real()
    notes = {"a": [10], "b": [10, 20]}
    # with 0 added: union {0, 10, 20}, found {0, 11, 30}: P = 2/3; recall (2/2 + 2/3) / 2 = 5/6
    assert bench.f_measure(notes, [11, 30]) == pytest.approx(20 / 27)
    # a: (10 * 10/11 + 30 * 19/30) / 40; b: (10 * 10/11 + 10 * 9/20 + 20 * 10/20) / 40
    want = ((100 / 11 + 19) / 40 + (100 / 11 + 4.5 + 10) / 40) / 2
    assert bench.covering(notes, [11, 30], 40) == pytest.approx(want)
    assert bench.f_measure({"a": []}, []) == 1.0 and bench.covering({"a": []}, [], 40) == 1.0


def test_rare_wild_readings_do_not_hide_a_step() -> None:
    rng = np.random.default_rng(6)
    x = np.where(np.arange(600) < 300, 10.0, 11.0) + rng.normal(0, 1, 600)
    x[rng.choice(600, 3, replace=False)] = 200.0  # 0.5% stalls, 190 sigma away
    kinds = classify_changes(x, [300], drop=False)
    assert [k.kind for k in kinds] == ["level"] and kinds[0].jump == pytest.approx(1.0, abs=0.4)


def test_windows_in_blocks_flag_the_same_outliers(monkeypatch: pytest.MonkeyPatch) -> None:
    import pilot_sys.stats.outliers as outliers

    rng = np.random.default_rng(11)
    x = rng.standard_normal(20_000)
    x[::487] += 40.0
    whole = outliers.window_outliers(x)
    monkeypatch.setattr(outliers, "WINDOW_CELLS", 1000)  # 5 windows a block
    assert np.array_equal(outliers.window_outliers(x), whole) and whole.sum() >= 40


def test_a_drop_refits_only_its_neighbours(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ramp cut into a staircase: dropping its cuts one by one fits each (segment, cut,
    segment) triple once, not every cut again every round (that took minutes on 1e6)."""
    import pilot_sys.stats.change_kind as change_kind

    rng = np.random.default_rng(5)
    x = np.concatenate([np.linspace(0.0, 50.0, 4000), np.full(4000, 50.0)])
    x += rng.standard_normal(x.size)
    cuts = list(range(200, 4000, 200))
    calls: list[tuple[int, int, int]] = []
    real = change_kind._evidence_many
    monkeypatch.setattr(
        change_kind,
        "_evidence_many",
        lambda v, keys, o: (calls.extend(keys), real(v, keys, o))[1],
    )
    kinds = change_kind.classify_changes(x, cuts)
    assert len(cuts) < len(calls) == len(set(calls)) <= 3 * len(cuts)
    assert len(kinds) < len(cuts)  # the ramp's cuts went


def test_the_least_p_value_decides_none_at_every_level_as_kind_of_does() -> None:
    """classify_changes decides "none" by one comparison with each change point's least
    p-value; _kind_of (the rule) at levels below, at and above every p-value, with NaN p-values,
    no spread test and ratios at the 1.5 edge."""
    from pilot_sys.stats.change_kind import _Evidence, _kind_of

    rng = np.random.default_rng(21)
    choices = [0.0, 1e-9, 1e-4, 0.001, 0.5, 1.0, float("nan")]
    checked = 0
    for _ in range(400):
        p_jump, p_any = (float(rng.choice(choices)) for _ in range(2))
        p_spread = None if rng.random() < 0.3 else float(rng.choice(choices))
        ratio = float(rng.choice([1.0, 1.5, 1 / 1.5, 1.6, 0.2, 3.0, float("inf")]))
        e = _Evidence(
            common={},
            p_jump=p_jump,
            p_any=p_any,
            turn=bool(rng.random() < 0.5),
            p_spread=p_spread,
            ratio=ratio,
        )
        for level in [*(c for c in choices if c == c), 2e-9, 0.0005, 0.3, 2.0]:
            assert (_kind_of(e, level)[0] == "none") == (level <= e.least_p), (e, level)
            checked += 1
    assert checked > 3000
