"""The phase-signature numerics against hand-computed cases and independent references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pilot_sys.stats.phases import (
    DistanceScales,
    PhaseParams,
    blur,
    compare_phase_behaviour,
    composite_similarity,
    consistent_rounds,
    cross_correlation,
    distance_scales,
    initial_transitions,
    local_maxima,
    match_runs,
    match_signatures,
    match_value_phases,
    matching_score,
    median_smooth,
    normalise_rows,
    refine_transitions,
    score_matrix,
    successive_similarity,
    transition_signature,
    value_phase_correlation,
    value_phases,
)

# ---------------------------------------------------------------------------------------------
# Equation 1
# ---------------------------------------------------------------------------------------------


def test_composite_similarity_hand_computed() -> None:
    a, b = np.array([0.2, 0.6]), np.array([0.6, 0.2])
    # AM = |0.2-0.6| + |0.6-0.2| = 0.8; unit-L1 vectors (0.25, 0.75) and (0.75, 0.25): NM = 1.0
    s = composite_similarity(a, b, DistanceScales(absolute=2.0, normalised=4.0), norm_floor=0.0)
    assert s == pytest.approx([0.8 / 2.0 + 1.0 / 4.0])
    # the sum is capped at 1
    assert composite_similarity(a, b, DistanceScales(1.0, 1.0), norm_floor=0.0) == pytest.approx(
        [1.0]
    )
    # identical vectors are 0
    assert composite_similarity(a, a, DistanceScales(1.0, 1.0)) == pytest.approx([0.0])


def test_norm_floor_keeps_near_idle_vectors_small() -> None:
    tiny = np.array([[0.02, 0.03], [0.4, 0.6]])
    out = normalise_rows(tiny, norm_floor=0.1)
    assert out[0] == pytest.approx([0.2, 0.3])  # divided by the floor 0.1, not by its own norm 0.05
    assert out[1] == pytest.approx([0.4, 0.6])  # norm 1.0 already
    # two idle samples whose tiny values point in opposite directions are nearly the same phase
    s = composite_similarity([0.01, 0.0], [0.0, 0.01], DistanceScales(1.0, 2.0), norm_floor=0.1)
    assert s[0] == pytest.approx(0.02 + 0.2 / 2.0)
    s_no_floor = composite_similarity(
        [0.01, 0.0], [0.0, 0.01], DistanceScales(1.0, 2.0), norm_floor=0.0
    )
    assert s_no_floor[0] == pytest.approx(0.02 + 2.0 / 2.0 if 0.02 + 1.0 < 1 else 1.0)


def test_distance_scales_are_the_pairwise_maximum_when_one_sample_holds_every_extreme() -> None:
    X = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]])
    sc = distance_scales(X, norm_floor=0.0)
    brute = max(np.abs(X[i] - X[j]).sum() for i, j in itertools.combinations(range(3), 2))
    assert sc.absolute == pytest.approx(brute) == pytest.approx(2.0)
    assert sc.normalised == pytest.approx(2.0)
    assert distance_scales(np.ones((5, 3))) == DistanceScales(1.0, 1.0)  # constant run: no scale


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(2, 12), st.integers(1, 4)), elements=st.floats(0, 1))
)
def test_distance_scales_bound_every_pair(X: np.ndarray) -> None:
    sc = distance_scales(X)
    am = np.abs(X[:, None, :] - X[None, :, :]).sum(-1)
    N = normalise_rows(X)
    nm = np.abs(N[:, None, :] - N[None, :, :]).sum(-1)
    assert am.max() <= sc.absolute + 1e-9 or am.max() == 0
    assert nm.max() <= sc.normalised + 1e-9 or nm.max() == 0


def test_successive_similarity_marks_steps() -> None:
    X = np.array([[0.0], [0.0], [1.0], [1.0], [0.5]])
    s = successive_similarity(X, DistanceScales(1.0, 2.0), norm_floor=0.0)
    # zero vector -> (1.0): AM 1, NM |0 - 1| = 1 -> 1 + 0.5 capped at 1; 1.0 -> 0.5: AM 0.5, NM 0
    assert s == pytest.approx([0.0, 0.0, 1.0, 0.0, 0.5])
    assert initial_transitions(X, 0.4, DistanceScales(1.0, 2.0), 0.0).tolist() == [
        False,
        False,
        True,
        False,
        True,
    ]


# ---------------------------------------------------------------------------------------------
# Value-based phases
# ---------------------------------------------------------------------------------------------


def _leader_reference(X: np.ndarray, thr: float, scales: DistanceScales, floor: float) -> list[int]:
    """Plain sequential leader clustering, sample by sample (the independent reference)."""
    leaders: list[int] = []
    out = []
    for i in range(X.shape[0]):
        if leaders:
            s = [composite_similarity(X[i], X[j], scales, floor)[0] for j in leaders]
            k = int(np.argmin(s))
            if s[k] <= thr:
                out.append(k)
                continue
        leaders.append(i)
        out.append(len(leaders) - 1)
    return out


def test_value_phases_hand_sequence() -> None:
    A, B, C = [0.1, 0.9], [0.9, 0.1], [0.9, 0.9]
    X = np.array([A, A, B, B, A, C, B])
    assert value_phases(X, 0.3).tolist() == [0, 0, 1, 1, 0, 2, 1]


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(1, 40), st.integers(1, 3)), elements=st.floats(0, 1)),
    st.floats(0.05, 0.9),
)
def test_value_phases_equal_sequential_leader_clustering(X: np.ndarray, thr: float) -> None:
    scales = distance_scales(X)
    assert value_phases(X, thr, scales).tolist() == _leader_reference(X, thr, scales, 0.1)


# ---------------------------------------------------------------------------------------------
# Glitch / gradient filtering
# ---------------------------------------------------------------------------------------------

UNIT = DistanceScales(1.0, 2.0)


def _refine(column: list[float], thr: float = 0.2):
    X = np.asarray(column, dtype=float)[:, None]
    init = initial_transitions(X, thr, UNIT, 0.0)
    return init.astype(int).tolist(), refine_transitions(X, init, thr, UNIT, 0.0)


def test_single_sample_glitch_is_dropped() -> None:
    init, r = _refine([0.5, 0.5, 0.5, 1.0, 0.5, 0.5, 0.5])
    assert init == [0, 0, 0, 1, 1, 0, 0]
    assert r.refined.astype(int).tolist() == [0] * 7
    assert r.glitches.tolist() == [3] and r.gradients.tolist() == []


def test_multi_sample_glitch_is_dropped() -> None:
    init, r = _refine([0.5, 0.5, 0.9, 0.1, 0.5, 0.5])
    assert init == [0, 0, 1, 1, 1, 0]
    assert r.refined.sum() == 0 and r.glitches.tolist() == [2]


def test_gradient_becomes_one_transition_at_its_start() -> None:
    init, r = _refine([0.0, 0.0, 0.3, 0.6, 0.9, 0.9, 0.9])
    assert init == [0, 0, 1, 1, 1, 0, 0]
    assert r.refined.astype(int).tolist() == [0, 0, 1, 0, 0, 0, 0]
    assert r.gradients.tolist() == [2] and r.glitches.tolist() == []


def test_clean_step_is_kept() -> None:
    init, r = _refine([0.5, 0.5, 0.9, 0.9, 0.9, 0.1, 0.1])
    assert init == [0, 0, 1, 0, 0, 1, 0]
    assert r.refined.astype(int).tolist() == init
    assert r.gradients.tolist() == [] and r.glitches.tolist() == []


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(2, 60), st.integers(1, 3)), elements=st.floats(0, 1))
)
def test_refined_signature_never_has_consecutive_transitions(X: np.ndarray) -> None:
    sig = transition_signature(X, PhaseParams(transition_threshold=0.2))
    assert not np.any(sig.refined[1:] & sig.refined[:-1])
    assert sig.refined.sum() <= sig.initial.sum()
    assert np.all(sig.initial[sig.refined])  # every refined transition starts an initial burst


def test_median_smoothing_removes_a_spike_but_keeps_a_step() -> None:
    X = np.array([0, 0, 0, 1, 0, 0, 1, 1, 1, 1], dtype=float)[:, None]
    assert median_smooth(X, 3)[:, 0].tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]


# ---------------------------------------------------------------------------------------------
# Blurring, correlation, matching score
# ---------------------------------------------------------------------------------------------


def test_blur_reproduces_table_2_of_the_paper() -> None:
    refined = [0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0]
    expected = [0.6, 0.8, 1, 0.8, 0.8, 1, 0.8, 1, 0.8, 0.6, 0.6, 0.8, 1, 0.8]
    assert blur(refined, 4) == pytest.approx(expected)
    assert blur(refined, 0) == pytest.approx(refined)
    assert blur([0, 0, 0, 1, 0, 0, 0], 1) == pytest.approx([0, 0, 0.5, 1, 0.5, 0, 0])


def test_blur_turns_the_dilation_mismatch_of_table_1_into_a_match() -> None:
    baseline = np.array([int(c) for c in "00100101000010"])
    dilated = np.array([int(c) for c in "01010000000010"])
    lags0, sharp = cross_correlation(dilated, blur(baseline, 0))
    lags4, soft = cross_correlation(dilated, blur(baseline, 4))
    # at shift 0 the sharp baseline meets one transition; the blurred one 0.8 + 0.8 + 1
    assert sharp[lags0 == 0][0] == pytest.approx(1.0)
    assert soft[lags4 == 0][0] == pytest.approx(2.6)


def test_cross_correlation_matches_numpy_and_orients_shifts() -> None:
    rng = np.random.default_rng(3)
    base = (rng.random(300) < 0.05).astype(float)
    run = (rng.random(280) < 0.05).astype(float)
    lags, values = cross_correlation(run, base)
    assert values == pytest.approx(np.correlate(run, base, mode="full"), abs=1e-9)
    # a run that starts 7 samples later has its transitions at t + 7
    late = np.concatenate([np.zeros(7), base])
    lags, values = cross_correlation(late, base)
    assert lags[np.argmax(values)] == 7
    lags, values = cross_correlation(late, base, max_shift=3)
    assert lags.min() == -3 and lags.max() == 3


def test_matching_score_hand_computed() -> None:
    values = np.array([0, 1, 2, 10, 2, 1, 0, 1, 1, 1, 1, 1, 0, 3], dtype=float)
    # literal reading: the ten next-best values after 10 are 3, 2, 2, 1, 1, 1, 1, 1, 1, 1
    # -> mean 1.4
    best, peak, mean_next, score = matching_score(values, competitors="values")
    assert (best, peak) == (3, 10.0)
    assert mean_next == pytest.approx(1.4)
    assert score == pytest.approx(10 / 1.4 - 1)
    # alignments: the other local maxima are the plateau 1 (index 7, counted once) and 3 (index 13)
    assert local_maxima(values).tolist() == [3, 7, 13]
    best, peak, mean_next, score = matching_score(values)
    assert (best, mean_next) == (3, pytest.approx(2.0))
    assert score == pytest.approx(10 / 2.0 - 1)
    assert matching_score(np.zeros(5))[3] == 0.0
    assert matching_score(np.array([0.0, 4.0, 0.0]), competitors="values")[3] == float("inf")
    assert matching_score(np.array([0.0, 2.0, 4.0, 2.0, 0.0]))[3] == float(
        "inf"
    )  # one alignment, no rival
    with pytest.raises(ValueError):
        matching_score(np.array([1.0]))


def _workload(
    pattern: list[tuple[int, list[float]]], noise: float, rng: np.random.Generator
) -> np.ndarray:
    """A metric matrix made of phases (length, level vector) plus measurement noise."""
    X = np.vstack([np.tile(level, (length, 1)) for length, level in pattern])
    return np.clip(X + rng.normal(0, noise, X.shape), 0, 1)


IDLE, CPU1, CPU2, DISK, MIX = [0.02, 0.02], [0.5, 0.02], [1.0, 0.05], [0.1, 0.9], [0.6, 0.6]
WORKLOAD_A = [
    (20, IDLE), (15, CPU1), (25, CPU2), (10, IDLE), (30, DISK), (12, CPU1), (18, MIX), (9, IDLE),
    (22, CPU2), (14, DISK), (27, CPU1), (11, MIX), (16, IDLE), (19, DISK), (20, IDLE),
]  # fmt: skip
WORKLOAD_B = [
    (12, IDLE), (40, DISK), (8, CPU2), (30, IDLE), (18, CPU1), (33, MIX), (10, DISK), (24, CPU2),
    (13, IDLE), (29, CPU1), (9, DISK), (21, MIX), (26, IDLE),
]  # fmt: skip


def test_a_shifted_noisy_copy_matches_at_the_right_shift() -> None:
    rng = np.random.default_rng(11)
    base = _workload(WORKLOAD_A, 0.02, rng)
    shifted = _workload([(WORKLOAD_A[0][0] + 9, IDLE), *WORKLOAD_A[1:]], 0.02, rng)
    m = match_runs(base, shifted)
    assert m.best_shift == 9
    other = match_runs(base, _workload(WORKLOAD_B, 0.02, rng))
    assert m.matching_score > 1.0 > other.matching_score
    assert m.matching_score > 3 * other.matching_score


def test_blurring_tolerates_dilation_that_a_sharp_baseline_does_not() -> None:
    rng = np.random.default_rng(5)
    base = _workload(WORKLOAD_A, 0.01, rng)
    dilated = _workload(
        [(n + (1 if i % 2 else 0), lvl) for i, (n, lvl) in enumerate(WORKLOAD_A)], 0.01, rng
    )
    p0, p1 = PhaseParams(tolerance=0), PhaseParams(tolerance=1)
    sharp = match_signatures(
        transition_signature(base, p0).refined, transition_signature(dilated, p0).refined, 0
    )
    soft = match_signatures(
        transition_signature(base, p1).refined, transition_signature(dilated, p1).refined, 1
    )
    assert soft.peak > sharp.peak  # transitions one sample off still count under blurring


def test_value_phase_correlation_matches_pearson_per_shift() -> None:
    rng = np.random.default_rng(2)
    b = rng.integers(0, 4, 40).astype(float)
    r = rng.integers(0, 4, 35).astype(float)
    lags, rho = value_phase_correlation(b, r, min_overlap=0.5)
    for lag, value in zip(lags, rho, strict=True):
        # overlap: run[t + lag] with baseline[t]
        t = np.arange(len(b))
        keep = (t + lag >= 0) & (t + lag < len(r))
        x, y = r[t[keep] + lag], b[t[keep]]
        if keep.sum() < 17.5 or x.std() == 0 or y.std() == 0:
            assert value == 0.0
        else:
            assert value == pytest.approx(max(np.corrcoef(x, y)[0, 1], 0.0), abs=1e-7)


def test_value_based_matching_runs_on_the_same_workloads() -> None:
    rng = np.random.default_rng(4)
    base = _workload(WORKLOAD_A, 0.01, rng)
    same = _workload([(WORKLOAD_A[0][0] + 4, IDLE), *WORKLOAD_A[1:]], 0.01, rng)
    m = match_value_phases(base, same)
    assert m.best_shift == 4 and m.peak == pytest.approx(1.0, abs=0.05)


# ---------------------------------------------------------------------------------------------
# Session and comparison helpers
# ---------------------------------------------------------------------------------------------


def test_consistent_rounds_flags_the_round_that_ran_something_else() -> None:
    rng = np.random.default_rng(8)
    rounds = [
        _workload([(WORKLOAD_A[0][0] + d, IDLE), *WORKLOAD_A[1:]], 0.02, rng) for d in (0, 3, 6, 2)
    ]
    rounds.insert(2, _workload(WORKLOAD_B, 0.02, rng))
    checks = consistent_rounds(rounds)
    assert [c.consistent for c in checks] == [True, True, False, True, True]
    assert checks[2].median_score is not None and checks[2].median_score < 0.5
    single = consistent_rounds(rounds[:1])
    assert single[0].consistent and single[0].median_score is None


def test_compare_phase_behaviour_notes_only_a_difference() -> None:
    rng = np.random.default_rng(9)
    a = [_workload([(WORKLOAD_A[0][0] + d, IDLE), *WORKLOAD_A[1:]], 0.02, rng) for d in (0, 5)]
    a2 = [_workload([(WORKLOAD_A[0][0] + d, IDLE), *WORKLOAD_A[1:]], 0.02, rng) for d in (2, 7)]
    b = [_workload([(WORKLOAD_B[0][0] + d, IDLE), *WORKLOAD_B[1:]], 0.02, rng) for d in (0, 4)]
    assert compare_phase_behaviour(a, a2) is None
    note = compare_phase_behaviour(a, b)
    assert note is not None and "differs" in note and "within A" in note


# ---------------------------------------------------------------------------------------------
# Real recorded traces (tests/fixtures/traces: fio, iperf3, dd, stress-ng on this machine)
# ---------------------------------------------------------------------------------------------


def test_real_traces_transition_signatures_separate_workloads_better_than_value_phases() -> None:
    from scipy.stats import mannwhitneyu

    from conftest import FIXTURES
    from pilot_sys.monitor.trace_io import load_traces, metric_matrix

    files = sorted((FIXTURES / "traces").glob("*/*.json"))
    names = np.array([f.parent.name for f in files])
    runs = [metric_matrix(load_traces(f)[0].trace, ["process:workload/*"]).values for f in files]
    same = np.equal.outer(names, names)
    off = ~np.eye(len(files), dtype=bool)

    def auc(scores: np.ndarray) -> float:
        # P(score of a same-workload pair > score of a different-workload pair), via Mann-Whitney U
        s = np.where(np.isinf(scores), 1e6, scores)
        hits, misses = s[same & off], s[~same]
        return float(mannwhitneyu(hits, misses).statistic / (hits.size * misses.size))

    tbp = auc(score_matrix(runs))
    phases = [value_phases(median_smooth(x, 5)) for x in runs]
    vbp = np.full_like(same, np.nan, dtype=float)
    for i, j in zip(*np.nonzero(off), strict=True):
        vbp[i, j] = matching_score(value_phase_correlation(phases[j], phases[i])[1])[3]
    assert tbp > 0.7
    assert tbp > auc(vbp) + 0.1
