"""Transition-based phase signatures of sampled metric vectors (Isci and Martonosi).

Why transitions: repeated runs of one workload on a real system are shifted, dilated and
glitched against each other, so their *values* do not line up sample by sample, while the
*moments their metric mix changes* recur. The flow here follows the paper:

0. (added here) a short running median of each metric, against counter quantisation and spikes;
1. composite similarity of successive sample vectors (absolute and normalised L1 distance,
   each scaled by its maximum) -> initial transitions ``TBP_init`` (1 at a transition);
2. glitch/gradient filtering -> refined transitions ``TBP_gg``;
3. near-neighbour blurring of the *baseline* only (tolerance in samples, 1 -> 0 linearly)
   -> ``TBP_ggN``;
4. cross-correlation (FFT) of a new run's ``TBP_gg`` against the baseline ``TBP_ggN`` over a
   range of shifts; matching score = best / mean(next ten best alignments) - 1.

Value-based phases (threshold clustering) are kept for comparison: they are what the paper
improves on. Every function is pure numpy/scipy on arrays; no I/O.

Conventions: a metric matrix ``X`` has shape ``(n_samples, n_metrics)``; a shift ``k`` means
the run's transition at sample ``t + k`` lines up with the baseline's at ``t`` (the run started
``k`` samples later).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, Field
from scipy import fft, ndimage

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

#: Default transition threshold on the composite similarity S (0 = same, 1 = completely
#: different). Chosen on recorded traces (benchmarks/phases_quality.py).
DEFAULT_TRANSITION_THRESHOLD = 0.3
#: Default near-neighbour tolerance in samples. The paper's best was 1 (100 ms samples of
#: minutes-long runs); on few-second recorded traces 3 does best for every choice of series
#: (benchmarks/results/phases.md): short runs drift by several samples.
DEFAULT_TOLERANCE = 3
#: Default matching-score threshold of the matches/differs verdict (benchmarks/phases_quality.py).
DEFAULT_MATCH_THRESHOLD = 0.65
#: L1 norm below which a sample is not rescaled to unit norm: the direction of a near-idle vector
#: is noise, and rescaling it would turn idle flicker into "the mix changed" transitions.
DEFAULT_NORM_FLOOR = 0.1
#: Running-median window (samples) applied before the similarity metric. Counters sampled at
#: 10-20 Hz are coarsely quantised (CPU time ticks at 100 Hz: 5-10 ticks per interval) and other
#: tenants add spikes; a median removes both without smearing steps the way a mean would.
DEFAULT_SMOOTH = 5
#: The matching score compares the best correlation with the mean of this many next-best ones.
NEXT_BEST = 10


class PhaseParams(BaseModel):
    """The knobs of the detector; one object so that CLI, sessions and benchmarks agree."""

    transition_threshold: float = Field(DEFAULT_TRANSITION_THRESHOLD, gt=0.0, lt=1.0)
    tolerance: int = Field(DEFAULT_TOLERANCE, ge=0)
    norm_floor: float = Field(DEFAULT_NORM_FLOOR, ge=0.0)
    smooth: int = Field(
        DEFAULT_SMOOTH, ge=1, description="running-median window in samples (1 = none)"
    )
    max_shift: int | None = Field(
        None, ge=0, description="largest |shift| tried; None = every overlap"
    )
    match_threshold: float = Field(DEFAULT_MATCH_THRESHOLD, ge=0.0)
    competitors: Literal["peaks", "values"] = Field(
        "peaks",
        description=(
            "what the best alignment is compared with: other local maxima, or every other shift"
        ),
    )


# ---------------------------------------------------------------------------------------------
# Similarity metric (Equation 1)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DistanceScales:
    """The maxima that Equation 1 divides the absolute and normalised L1 distances by."""

    absolute: float
    normalised: float


def normalise_rows(X: ArrayLike, norm_floor: float = DEFAULT_NORM_FLOOR) -> FloatArray:
    """Each sample scaled to unit L1 norm (the NM term), except samples whose norm is below the
    floor."""
    X = np.asarray(X, dtype=float)
    norms = np.abs(X).sum(axis=-1, keepdims=True)
    return X / np.maximum(norms, norm_floor if norm_floor > 0 else np.finfo(float).tiny)


def distance_scales(X: ArrayLike, norm_floor: float = DEFAULT_NORM_FLOOR) -> DistanceScales:
    """Largest absolute and normalised L1 distance between any two samples of a run.

    The exact maximum over all pairs is O(n^2); the sum of per-metric ranges is its tight upper
    bound (reached when one sample holds every metric's maximum and another every minimum), costs
    O(n) and does not depend on which pairs are compared, so value-based and transition-based
    phases share one scale. Normalised vectors have L1 norm <= 1, so that distance is capped at 2.
    A constant run has no scale; 1 is returned so that its distances stay 0.
    """
    X = np.asarray(X, dtype=float)
    if X.shape[0] == 0:
        return DistanceScales(1.0, 1.0)
    absolute = float(np.ptp(X, axis=0).sum())
    normalised = float(min(np.ptp(normalise_rows(X, norm_floor), axis=0).sum(), 2.0))
    return DistanceScales(absolute if absolute > 0 else 1.0, normalised if normalised > 0 else 1.0)


def composite_similarity(
    A: ArrayLike, B: ArrayLike, scales: DistanceScales, norm_floor: float = DEFAULT_NORM_FLOOR
) -> FloatArray:
    """Equation 1, row by row: S = min(AM / max AM + NM / max NM, 1); 0 means identical.

    ``A`` and ``B`` are matching rows (same shape, or broadcastable, e.g. one row against many).
    """
    A = np.atleast_2d(np.asarray(A, dtype=float))
    B = np.atleast_2d(np.asarray(B, dtype=float))
    am = np.abs(A - B).sum(axis=-1)
    nm = np.abs(normalise_rows(A, norm_floor) - normalise_rows(B, norm_floor)).sum(axis=-1)
    return np.minimum(am / scales.absolute + nm / scales.normalised, 1.0)


def successive_similarity(
    X: ArrayLike, scales: DistanceScales | None = None, norm_floor: float = DEFAULT_NORM_FLOOR
) -> FloatArray:
    """S between each sample and the one before it; element 0 is 0 (nothing to compare with)."""
    X = np.asarray(X, dtype=float)
    scales = scales or distance_scales(X, norm_floor)
    out = np.zeros(X.shape[0])
    if X.shape[0] > 1:
        out[1:] = composite_similarity(X[1:], X[:-1], scales, norm_floor)
    return out


# ---------------------------------------------------------------------------------------------
# Value-based phases (the representation the paper improves on)
# ---------------------------------------------------------------------------------------------


def value_phases(
    X: ArrayLike,
    threshold: float = DEFAULT_TRANSITION_THRESHOLD,
    scales: DistanceScales | None = None,
    norm_floor: float = DEFAULT_NORM_FLOOR,
) -> NDArray[np.int64]:
    """Phase ids 0, 1, ... by leader clustering on S: a sample within ``threshold`` of an earlier
    phase's leader joins the most similar such phase; otherwise it leads a new phase.

    Vectorised over samples: the loop runs once per *phase* (the next leader is the first sample
    no existing leader covers), and the final assignment masks leaders that did not exist yet,
    which gives exactly the sequential on-line assignment.
    """
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    scales = scales or distance_scales(X, norm_floor)
    leaders = [0]
    nearest = composite_similarity(X, X[0], scales, norm_floor)
    while True:
        uncovered = np.flatnonzero(nearest[leaders[-1] + 1 :] > threshold)
        if uncovered.size == 0:
            break
        leader = leaders[-1] + 1 + int(uncovered[0])
        leaders.append(leader)
        nearest = np.minimum(nearest, composite_similarity(X, X[leader], scales, norm_floor))
    # nearest leader among those that existed at each sample; one O(n) pass per phase keeps memory
    # at O(n) where an (n, phases, metrics) broadcast would not
    best = np.full(n, np.inf)
    labels = np.zeros(n, dtype=np.int64)
    samples = np.arange(n)
    for k, leader in enumerate(leaders):
        s = composite_similarity(X, X[leader], scales, norm_floor)
        better = (s < best) & (samples >= leader)
        best[better] = s[better]
        labels[better] = k
    return labels


# ---------------------------------------------------------------------------------------------
# Transition signatures
# ---------------------------------------------------------------------------------------------


def initial_transitions(
    X: ArrayLike,
    threshold: float = DEFAULT_TRANSITION_THRESHOLD,
    scales: DistanceScales | None = None,
    norm_floor: float = DEFAULT_NORM_FLOOR,
) -> BoolArray:
    """TBP_init: True where a sample differs from the previous one by more than ``threshold``."""
    return successive_similarity(X, scales, norm_floor) > threshold


def _bursts(flags: BoolArray) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Start and end (inclusive) indices of each run of consecutive True values."""
    edges = np.diff(np.concatenate(([0], flags.astype(np.int8), [0])))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1


@dataclass(frozen=True)
class RefinedTransitions:
    """TBP_gg and what the filter did to get there."""

    refined: BoolArray
    glitches: NDArray[np.intp]  # start sample of each burst dropped as a glitch
    # start sample of each multi-sample burst merged into one transition
    gradients: NDArray[np.intp]


def refine_transitions(
    X: ArrayLike,
    initial: BoolArray,
    threshold: float = DEFAULT_TRANSITION_THRESHOLD,
    scales: DistanceScales | None = None,
    norm_floor: float = DEFAULT_NORM_FLOOR,
) -> RefinedTransitions:
    """Glitch/gradient filtering of TBP_init.

    A burst of initial transitions at samples a..b means samples a..b-1 are unstable: each differs
    from its predecessor and from its successor, and sample b starts the next stable stretch. The
    stable sample before the burst (a-1) and the one after it (b) are compared with S: if they are
    the same phase the burst is a glitch and is dropped; otherwise it is a (possibly
    multi-sample) gradient and becomes one transition at its first sample a, so the refined
    signature never holds two consecutive transitions.
    """
    X = np.asarray(X, dtype=float)
    initial = np.asarray(initial, dtype=bool)
    if initial.shape[0] != X.shape[0]:
        raise ValueError(f"signature has {initial.shape[0]} samples, metric matrix {X.shape[0]}")
    scales = scales or distance_scales(X, norm_floor)
    starts, ends = _bursts(initial)
    refined = np.zeros_like(initial)
    if starts.size == 0:
        return RefinedTransitions(refined, starts, starts)
    before = np.maximum(starts - 1, 0)
    changed = composite_similarity(X[before], X[ends], scales, norm_floor) > threshold
    refined[starts[changed]] = True
    return RefinedTransitions(refined, starts[~changed], starts[changed & (ends > starts)])


@dataclass(frozen=True)
class Signature:
    """A run's transition signature: TBP_init, TBP_gg and the filter's bookkeeping."""

    initial: BoolArray
    refined: BoolArray
    glitches: NDArray[np.intp]
    gradients: NDArray[np.intp]

    @property
    def transitions(self) -> NDArray[np.intp]:
        """Sample indices of the refined transitions."""
        return np.flatnonzero(self.refined)

    def __len__(self) -> int:
        return int(self.refined.shape[0])


def median_smooth(X: ArrayLike, window: int) -> FloatArray:
    """Running median of each metric over ``window`` samples (edges repeat the end values)."""
    X = np.asarray(X, dtype=float)
    if window <= 1 or X.shape[0] == 0:
        return X
    # filtering along the contiguous axis of the transposed copy is faster than size=(window, 1)
    smoothed = ndimage.median_filter(np.ascontiguousarray(X.T), size=(1, window), mode="nearest")
    return np.asarray(smoothed.T)


def transition_signature(X: ArrayLike, params: PhaseParams | None = None) -> Signature:
    """TBP_init and TBP_gg of one run's metric matrix."""
    p = params or PhaseParams()
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"metric matrix must be 2-D (samples x metrics), got shape {X.shape}")
    X = median_smooth(X, p.smooth)
    scales = distance_scales(X, p.norm_floor)
    initial = initial_transitions(X, p.transition_threshold, scales, p.norm_floor)
    r = refine_transitions(X, initial, p.transition_threshold, scales, p.norm_floor)
    return Signature(initial, r.refined, r.glitches, r.gradients)


def blur(signature: ArrayLike, tolerance: int = DEFAULT_TOLERANCE) -> FloatArray:
    """TBP_ggN: every transition spreads over +-tolerance samples, linearly from 1 down towards 0.

    A sample at distance k from the nearest transition gets 1 - k / (tolerance + 1) (Table 2 of
    the paper: tolerance 4 gives 1, 0.8, 0.6, ...); overlapping spreads take the maximum.
    """
    s = np.asarray(signature, dtype=float)
    if tolerance <= 0 or s.size == 0:
        return s.copy()
    k = np.arange(-tolerance, tolerance + 1)
    weights = 1.0 - np.abs(k) / (tolerance + 1)
    # grey dilation of a 0/1 signal with structure (w - 1) is max_k(s[t+k] + w[k] - 1): w[k] where
    # a transition is in reach, <= 0 elsewhere.
    return np.clip(
        ndimage.grey_dilation(s, structure=weights - 1.0, mode="constant", cval=0.0), 0.0, None
    )


# ---------------------------------------------------------------------------------------------
# Matching
# ---------------------------------------------------------------------------------------------


class Match(BaseModel):
    """How well a run's signature matches a baseline signature."""

    best_shift: int = Field(description="samples the run lags the baseline at the best alignment")
    peak: float = Field(description="cross-correlation at the best shift")
    next_best_mean: float = Field(
        description=f"mean correlation of the {NEXT_BEST} next-best alignments"
    )
    matching_score: float = Field(
        description="peak / next_best_mean - 1; inf when no other alignment correlates"
    )
    shifts_tried: int


def _correlate_full(x: FloatArray, y: FloatArray) -> FloatArray:
    """``np.correlate(x, y, "full")``: sum_t x[t + lag] * y[t] for lag = -(len(y) - 1) ..
    len(x) - 1.

    Through a real FFT for long inputs (O(n log n)). Hand-written over ``scipy.fft`` rather than
    ``scipy.signal.correlate`` because importing scipy.signal pulls in scipy.stats, which slows
    the CLI's start noticeably; the direct product is used where it is cheaper and exact.
    """
    if x.size * y.size <= 1 << 16:
        return np.correlate(x, y, mode="full")
    n = x.size + y.size - 1
    nfft = fft.next_fast_len(n, real=True)
    out = fft.irfft(fft.rfft(x, nfft) * fft.rfft(y[::-1], nfft), nfft)[:n]
    return np.asarray(out)


def _lags(n_run: int, n_base: int) -> NDArray[np.intp]:
    return np.arange(-(n_base - 1), n_run)


def cross_correlation(
    run: ArrayLike, baseline: ArrayLike, max_shift: int | None = None
) -> tuple[NDArray[np.intp], FloatArray]:
    """Shifts and sum_t run[t + shift] * baseline[t] for every shift with any overlap (FFT)."""
    r = np.asarray(run, dtype=float)
    b = np.asarray(baseline, dtype=float)
    if r.size == 0 or b.size == 0:
        raise ValueError("cannot correlate an empty signature")
    values = _correlate_full(r, b)
    lags = _lags(r.size, b.size)
    if max_shift is not None:
        keep = np.abs(lags) <= max_shift
        lags, values = lags[keep], values[keep]
    # FFT round-off leaves ~1e-16 where the exact value is 0; clean it so ties and zeros are exact.
    values = np.where(np.abs(values) < 1e-9, 0.0, values)
    return lags, values


def local_maxima(values: ArrayLike) -> NDArray[np.intp]:
    """Indices of the local maxima of a curve (a plateau counts once, at its left end)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return np.zeros(0, dtype=np.intp)
    left = np.concatenate(([-np.inf], v[:-1]))
    right = np.concatenate((v[1:], [-np.inf]))
    return np.flatnonzero((v > left) & (v >= right))


def matching_score(
    values: ArrayLike, next_best: int = NEXT_BEST, competitors: Literal["peaks", "values"] = "peaks"
) -> tuple[int, float, float, float]:
    """Index of the best correlation, the best value, the mean of the next best, and the score.

    The score (best / mean of the ``next_best`` next-best matchings, minus 1) rewards a peak that
    stands out. A *matching* is an alignment, i.e. a local maximum of the correlation over shifts
    (``competitors="peaks"``, the default): blurring spreads every alignment over neighbouring
    shifts, and counting those shoulders as rivals (``"values"``, the literal reading) would
    punish a good match for the very tolerance that found it. The score is 0 when nothing
    correlates and inf when the best alignment has no rival at all.
    """
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        raise ValueError("a matching score needs at least two shifts")
    best = int(np.argmax(v))
    peak = float(v[best])
    if competitors == "peaks":
        idx = local_maxima(v)
        others = v[idx[idx != best]]
    else:
        others = np.delete(v, best)
    if others.size == 0:
        return best, peak, 0.0, (float("inf") if peak > 0 else 0.0)
    k = min(next_best, others.size)
    top = np.partition(others, others.size - k)[others.size - k :]
    mean_next = float(top.mean())
    if peak <= 0:
        return best, peak, mean_next, 0.0
    if mean_next <= 0:
        return best, peak, mean_next, float("inf")
    return best, peak, mean_next, peak / mean_next - 1.0


def match_signatures(
    baseline_refined: ArrayLike,
    run_refined: ArrayLike,
    tolerance: int = DEFAULT_TOLERANCE,
    max_shift: int | None = None,
    competitors: Literal["peaks", "values"] = "peaks",
) -> Match:
    """Blur the baseline's TBP_gg, cross-correlate the run's TBP_gg with it, score the peak."""
    lags, values = cross_correlation(run_refined, blur(baseline_refined, tolerance), max_shift)
    best, peak, mean_next, score = matching_score(values, competitors=competitors)
    return Match(
        best_shift=int(lags[best]), peak=peak, next_best_mean=mean_next, matching_score=score,
        shifts_tried=int(lags.size),
    )  # fmt: skip


def match_runs(baseline: ArrayLike, run: ArrayLike, params: PhaseParams | None = None) -> Match:
    """Signatures of two metric matrices and their match (the baseline is the one blurred)."""
    p = params or PhaseParams()
    return match_signatures(
        transition_signature(baseline, p).refined,
        transition_signature(run, p).refined,
        p.tolerance,
        p.max_shift,
        p.competitors,
    )


def value_phase_correlation(
    baseline_phases: ArrayLike,
    run_phases: ArrayLike,
    max_shift: int | None = None,
    min_overlap: float = 0.5,
) -> tuple[NDArray[np.intp], FloatArray]:
    """Pearson correlation of two phase-id sequences at every shift (the paper's VBP comparison).

    Shifts whose overlap is shorter than ``min_overlap`` of the shorter sequence, or where either
    side is constant, count as 0. Negative correlations count as 0 (no match), so the matching
    score applies unchanged. Vectorised: every per-shift sum is one FFT correlation.
    """
    b = np.asarray(baseline_phases, dtype=float)
    r = np.asarray(run_phases, dtype=float)
    ones_b, ones_r = np.ones_like(b), np.ones_like(r)

    def corr(x: FloatArray, y: FloatArray) -> FloatArray:
        return _correlate_full(x, y)

    n = np.rint(corr(ones_r, ones_b))
    sr, sb = corr(r, ones_b), corr(ones_r, b)
    srr, sbb, srb = corr(r * r, ones_b), corr(ones_r, b * b), corr(r, b)
    var_r = n * srr - sr * sr
    var_b = n * sbb - sb * sb
    cov = n * srb - sr * sb
    scale = np.maximum(n, 1.0) ** 2 * 1e-9  # below this the "variance" is FFT round-off
    ok = (n >= min_overlap * min(r.size, b.size)) & (var_r > scale) & (var_b > scale)
    rho = np.zeros_like(n)
    rho[ok] = cov[ok] / np.sqrt(var_r[ok] * var_b[ok])
    lags = _lags(r.size, b.size)
    if max_shift is not None:
        keep = np.abs(lags) <= max_shift
        lags, rho = lags[keep], rho[keep]
    return lags, np.clip(rho, 0.0, 1.0)


def match_value_phases(
    baseline: ArrayLike, run: ArrayLike, params: PhaseParams | None = None
) -> Match:
    """The value-based (VBP) counterpart of :func:`match_runs`, for comparison."""
    p = params or PhaseParams()
    lags, rho = value_phase_correlation(
        value_phases(baseline, p.transition_threshold, norm_floor=p.norm_floor),
        value_phases(run, p.transition_threshold, norm_floor=p.norm_floor),
        p.max_shift,
    )
    best, peak, mean_next, score = matching_score(rho, competitors=p.competitors)
    return Match(
        best_shift=int(lags[best]), peak=peak, next_best_mean=mean_next, matching_score=score,
        shifts_tried=int(lags.size),
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Uses in sessions and comparisons
# ---------------------------------------------------------------------------------------------


def score_matrix(runs: Sequence[FloatArray], params: PhaseParams | None = None) -> FloatArray:
    """Matching score of run i (rows) against baseline j (columns); the diagonal is NaN."""
    p = params or PhaseParams()
    sigs = [transition_signature(x, p).refined for x in runs]
    m = len(sigs)
    scores = np.full((m, m), np.nan)
    for j in range(m):
        for i in range(m):
            if i != j:
                scores[i, j] = match_signatures(
                    sigs[j], sigs[i], p.tolerance, p.max_shift, p.competitors
                ).matching_score
    return scores


class RoundPhaseCheck(BaseModel):
    """Whether one round's phase signature matches those of its sibling rounds."""

    round_index: int
    transitions: int
    median_score: float | None = Field(
        description="median matching score against each sibling as baseline"
    )
    consistent: bool


def consistent_rounds(
    rounds: Sequence[ArrayLike], params: PhaseParams | None = None
) -> list[RoundPhaseCheck]:
    """One check per round: does its signature match its siblings' (median score >= threshold)?

    ``rounds`` are metric matrices, one per round, whose columns are the same series (which
    series is the caller's choice: the monitor's ``phase_traces`` picks them from traces).
    A round that does not match ran a different workload or hit a different system state. With
    fewer than two rounds there is nothing to compare: every round is reported consistent with
    no score.
    """
    p = params or PhaseParams()
    runs = [np.asarray(r, dtype=float) for r in rounds]
    counts = [int(transition_signature(x, p).refined.sum()) for x in runs]
    if len(runs) < 2:
        return [
            RoundPhaseCheck(round_index=i, transitions=c, median_score=None, consistent=True)
            for i, c in enumerate(counts)
        ]
    scores = score_matrix(runs, p)
    medians = np.nanmedian(scores, axis=1)
    return [
        RoundPhaseCheck(
            round_index=i,
            transitions=counts[i],
            median_score=float(med),
            consistent=bool(med >= p.match_threshold),
        )
        for i, med in enumerate(medians)
    ]


def compare_phase_behaviour(
    runs_a: Sequence[ArrayLike], runs_b: Sequence[ArrayLike], params: PhaseParams | None = None
) -> str | None:
    """A one-line note when the phase behaviour of two workloads differs, else None.

    ``runs_a`` and ``runs_b`` are metric matrices over the same series. Every run of A is matched
    against every run of B as baseline and vice versa; the note is given when the median cross
    score is below the match threshold.
    """
    p = params or PhaseParams()
    a = [np.asarray(r, dtype=float) for r in runs_a]
    b = [np.asarray(r, dtype=float) for r in runs_b]
    if not a or not b:
        return None
    scores = score_matrix([*a, *b], p)
    cross = np.concatenate([scores[: len(a), len(a) :].ravel(), scores[len(a) :, : len(a)].ravel()])
    median = float(np.median(cross))
    if median >= p.match_threshold:
        return None
    within = [scores[: len(a), : len(a)], scores[len(a) :, len(a) :]]
    parts = [
        f"{name} {float(np.nanmedian(w)):.2f}"
        for name, w in zip("AB", within, strict=True)
        if np.isfinite(w).any()
    ]
    context = f" (within {', '.join(parts)})" if parts else ""
    return (
        f"phase behaviour differs: median matching score A vs B {median:.2f} "
        f"< {p.match_threshold:g}{context}; "
        "the workloads change their resource mix at different moments"
    )
