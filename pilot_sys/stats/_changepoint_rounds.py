"""Binary segmentation of many short segments at once: one round of tests per numpy pass.

A series with many change points (a random walk, a slow sine) ends in thousands of tests of
short segments, each a hundred small numpy calls (selection, indicators, CUSUM, dependence, up
to three rounds of re-placement, each sorting both sides again). Here the segments that binary
segmentation would test one by one are tested together, one bisection depth at a time, as the
ranges of flat arrays (``_changepoint_flat``): every step is one call over all of them, with
the same floating-point operations on the same numbers, so every scan, split, statistic and
p-value is identical to the one-by-one path (``_Scans.test``).

Each round keeps its segments' readings sorted (with their positions); a split segment's
pieces get theirs by a stable partition of that order, so a reading is sorted once, when its
segment first enters, instead of at every depth. Readings tied at a cut are split by their
position keys, as ``_top_masks`` does, for all segments of a round in one sort; the pieces too
short to test get their median and indicators from their sorted readings (the series-wide
dependence floor reads them), tied or not. The re-placement of a change of spread is left to
``_refine_split``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pilot_sys.stats._changepoint_flat import _merged_cuts, _Round, _split_of, _top
from pilot_sys.stats._changepoint_result import ChangeKind, _Split
from pilot_sys.stats._changepoint_segment import (
    _best_split,
    _decide,
    _decisive,
    _ScanResult,
)

# Segments shorter than this are tested in rounds; both pieces of any split of one are shorter
# than the 40,000 readings above which ``_refine_split`` thins a side, so a piece's sorted
# readings are exactly the merge ``_merged_cut`` makes.
ROUND_MAX = 1 << 15

# Segments are tested in groups of at most this many readings: every flat array of a group,
# and every temporary, stays in cache and is allocated again from memory already mapped (a
# fresh array of the whole series' length costs more in page faults than in arithmetic).
ROUND_READINGS = 1 << 16

_Scan = tuple[ChangeKind, int, float, float | None]


def _cusum_scans(
    rnd: _Round, indicator: np.ndarray, base_penalty: float, dependence: bool, rows: list[int]
) -> dict[int, tuple[int, float, float | None, np.ndarray]]:
    """``_cusum_scan`` plus the dependence factor (``factor_of``) for segments ``rows``: split,
    statistic, factor, and the running count (a view)."""
    ext = rnd.extremes(indicator)
    out: dict[int, tuple[int, float, float | None, np.ndarray]] = {}
    wanted: dict[int, tuple[int, ...]] = {}
    for i in rows:
        m = int(rnd.sizes[i])
        start = int(rnd.starts[i])
        counts = ext.counts[start : start + m]
        chosen = _split_of(ext, i, m)
        if chosen is None:
            out[i] = (m // 2, 0.0, None, counts)  # factor_of(0.0) is None: 0 never passes
            continue
        split, high, low, p = chosen
        top, bottom = int(ext.top[i]), int(ext.bottom[i])
        cuts = tuple(sorted({top if high > 0 else split, bottom if low < 0 else split}))
        stat = (high - low) / math.sqrt(m * p * (1.0 - p))
        if dependence and stat > base_penalty:
            wanted[i] = cuts
        out[i] = (split, stat, None, counts)
    for i, factor in _dependence_factors(rnd, ext.counts, wanted).items():
        split, stat, _, counts = out[i]
        out[i] = (split, stat, factor, counts)
    return out


def _dependence_factors(
    rnd: _Round, counts: np.ndarray, wanted: dict[int, tuple[int, ...]]
) -> dict[int, float]:
    """``dependence_factor`` of segments ``wanted`` (with their cuts) from their running
    ``counts`` (flat, local): the centred window sums of all of them formed in a few passes
    (the same integers, the same subtractions), each segment's sum of squares by the same
    ``einsum`` over its own windows."""
    out: dict[int, float] = {}
    plans: list[tuple[int, int, int, float, int]] = []  # segment, batch, windows, variance, m
    heads: list[int] = []  # where each segment's first window ends in ``counts``
    expected: list[float] = []
    spans: list[int] = []
    for i, cuts in wanted.items():
        m = int(rnd.sizes[i])
        start = int(rnd.starts[i])
        batch = int(4.0 * (m / 100.0) ** (2.0 / 9.0))
        if batch < 2 or m < 4 * batch:
            out[i] = 1.0
            continue
        bounds = [0, *sorted(c for c in cuts if 0 < c < m), m]
        windows = m - batch + 1
        variance = 0.0
        previous = 0
        pieces: list[tuple[int, float]] = []
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            if b <= a:
                continue
            ones = int(counts[start + b - 1]) - previous
            previous = int(counts[start + b - 1])
            q = ones / (b - a)
            variance += (b - a) * q * (1.0 - q)
            pieces.append((max(a, min(b, windows)) - a, batch * q))
        if variance <= 0.0:
            out[i] = 1.0
            continue
        plans.append((i, batch, windows, variance, m))
        heads.append(start + batch - 1)
        for span, value in pieces:
            spans.append(span)
            expected.append(value)
    if not plans:
        return out
    windows_of = np.array([w for _, _, w, _, _ in plans], dtype=np.int64)
    first = np.cumsum(windows_of) - windows_of
    batches = np.array([b for _, b, _, _, _ in plans], dtype=np.int64)
    # window j of a segment sums its indicator over [j, j + batch): C[j + batch - 1] - C[j - 1]
    upper = np.repeat(np.asarray(heads, dtype=np.int64) - first, windows_of)
    upper += np.arange(int(windows_of.sum()))
    sums = counts[upper].astype(np.float64)
    sums[1:] -= counts[upper[1:] - np.repeat(batches, windows_of)[1:]]
    sums[first] = counts[upper[first]]  # the first window has nothing before it
    sums -= np.repeat(np.asarray(expected), np.asarray(spans, dtype=np.int64))
    for (i, batch, windows, variance, m), at in zip(plans, first.tolist(), strict=True):
        block = sums[at : at + windows]
        # einsum's own loop, as ``dependence_factor`` sums it
        total = float(np.einsum("i,i->", block, block))
        obm = total / (batch * windows)
        out[i] = max(1.0, obm / (variance / m))
    return out


def _refine_locations(rnd: _Round, rows: list[int], splits: list[int], rounds: int = 3) -> None:
    """``_refine_split`` (location, whole sides) of segments ``rows`` from ``splits``, in place.

    The cut is ``_merged_cuts``'s, the indicator split the scan's bridge. Once the segments
    still moving hold less than half the readings, the round is narrowed to them.
    """
    previous: dict[int, float] = {}
    active = list(range(len(rows)))  # indices into rows and splits
    cur, at_row = rnd, list(rows)  # the round being read, each active row's segment in it
    for _ in range(rounds):
        if not active:
            return
        held_sizes = sum(int(rnd.sizes[rows[j]]) for j in active)
        if 2 * held_sizes < int(cur.sizes.sum()):
            chosen = np.array(sorted(rows[j] for j in active), dtype=np.int64)
            cur = rnd.subset(chosen)
            place = {int(i): n for n, i in enumerate(chosen.tolist())}
            at_row = [place.get(i, -1) for i in rows]
        at = cur.sizes // 2  # any split inside: segments no longer refined are not read
        for j in active:
            at[at_row[j]] = splits[j]
        starts_of_cut = _merged_cuts(cur, at)
        cut_at = np.zeros(cur.sizes.size, dtype=np.float64)
        moving: list[int] = []
        for j in active:
            i = at_row[j]
            cut = float(cur.ordered[starts_of_cut[i]])
            if previous.get(j) == cut:
                continue
            previous[j] = cut
            cut_at[i] = cut
            moving.append(j)
        if not moving:
            return
        ext = cur.extremes(cur.inline > cur._spread(cut_at))
        active = []
        for j in moving:
            i = at_row[j]
            m = int(cur.sizes[i])
            chosen_split = _split_of(ext, i, m)
            moved = m // 2 if chosen_split is None else chosen_split[0]
            if moved != splits[j]:
                splits[j] = moved
                active.append(j)


@dataclass
class RoundOutcome:
    """What one round decided: the tests, the scans, and the pieces left unsplit."""

    tests: list[_Split]
    scans: dict[tuple[int, int], _ScanResult]
    medians: dict[tuple[int, int], float]
    unsplit: list[tuple[int, int]]
    indicators: dict[tuple[int, int], list[tuple[ChangeKind, np.ndarray]]]


class _Options(NamedTuple):
    """What one detection asks of every round (``bisect_rounds``'s keywords)."""

    min_size: int
    penalty: float
    scale: bool
    dependence: bool
    keep: bool


def bisect_rounds(
    values: np.ndarray,
    segments: list[tuple[int, int]],
    *,
    min_size: int,
    penalty: float,
    scale: bool,
    dependence: bool,
    keep: bool,
) -> RoundOutcome:
    """Binary segmentation of ``segments`` (each shorter than ``ROUND_MAX``, none holding an
    end of the series) at ``penalty``, as ``_Detection.bisect`` makes it. ``keep``: return the
    unsplit segments' indicators."""
    out = RoundOutcome([], {}, {}, [], {})
    options = _Options(min_size, penalty, scale, dependence, keep)
    for group in _groups(segments):
        _bisect_group(values, group, out, options)
    return out


def _groups(segments: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Consecutive segments holding at most ``ROUND_READINGS`` readings together (or one)."""
    groups: list[list[tuple[int, int]]] = []
    held = ROUND_READINGS
    for b, e in segments:
        if held + (e - b) > ROUND_READINGS:
            groups.append([])
            held = 0
        groups[-1].append((b, e))
        held += e - b
    return groups


def _bisect_group(
    values: np.ndarray, segments: list[tuple[int, int]], out: RoundOutcome, options: _Options
) -> None:
    """``bisect_rounds`` of one group: its pieces never hold more readings than it does."""
    min_size = options.min_size
    rnd: _Round | None = _Round.enter(values, segments, min_size)
    while rnd is not None:
        k = rnd.sizes.size
        splits: list[int | None] = [None] * k
        _decide_round(rnd, list(range(k)), out, splits, options)
        for i, split in enumerate(splits):
            if split is None:
                out.unsplit.append((int(rnd.begins[i]), int(rnd.ends[i])))
            else:
                for piece in ((int(rnd.begins[i]), split), (split, int(rnd.ends[i]))):
                    if piece[1] - piece[0] < 2 * min_size:
                        out.unsplit.append(piece)
        rnd, short = rnd.children(splits, 2 * min_size)
        if short is not None:
            _record_short(out, short, options.scale, options.keep)


def _record_short(out: RoundOutcome, short: _Round, scale: bool, keep: bool) -> None:
    """What the result and the series-wide dependence floor read of the pieces too short to
    test: their medians (``_median_of_sorted``; zeros left to ``np.median``) and, with ``keep``,
    their indicators as ``_indicators`` forms them (``_top``, from their sorted readings)."""
    sizes = short.sizes
    half: np.ndarray | None = None
    outside: np.ndarray | None = None
    if keep:
        half = _top(short, sizes // 2)
        if scale:  # outside the interquartile range, as in ``_decide_round``
            outside = _top(short, sizes // 4)
            outside |= ~_top(short, sizes - sizes // 4)
    medians = short.medians().tolist()
    starts = short.starts.tolist()
    for b, e, start, median in zip(
        short.begins.tolist(), short.ends.tolist(), starts, medians, strict=True
    ):
        key = (b, e)
        if median != 0.0:
            out.medians[key] = median
        if half is not None:
            made: list[tuple[ChangeKind, np.ndarray]] = [("location", half[start : start + e - b])]
            if outside is not None:
                made.append(("scale", outside[start : start + e - b]))
            out.indicators[key] = made


def _decide_round(
    rnd: _Round, rows: list[int], out: RoundOutcome, splits: list[int | None], options: _Options
) -> None:
    """Scan, decide and re-place the segments ``rows`` of one round."""
    min_size, penalty, scale, dependence, keep = options
    sizes, starts = rnd.sizes, rnd.starts
    decisive = _decisive(penalty, 1.0)
    half = _top(rnd, sizes // 2)
    location = _cusum_scans(rnd, half, penalty, dependence, rows)
    scans: dict[int, list[_Scan]] = {}
    partial: dict[int, bool] = {}
    whole: list[int] = []
    for i in rows:
        split, stat, factor, _ = location[i]
        scans[i] = [("location", split, stat, factor)]
        partial[i] = False
        if not scale:
            continue
        if decisive(stat, factor):
            scans[i].append(("scale", int(sizes[i]) // 2, math.nan, None))
            partial[i] = True
        else:
            whole.append(i)
    outside: np.ndarray | None = None
    if whole:
        # outside the interquartile range: among the top quarter, or not among the top 3/4
        outside = _top(rnd, sizes // 4)
        outside |= ~_top(rnd, sizes - sizes // 4)
        spread = _cusum_scans(rnd, outside, penalty, dependence, whole)
        for i in whole:
            split, stat, factor, _ = spread[i]
            scans[i].append(("scale", split, stat, factor))
    results = {
        i: _ScanResult(
            begin=int(rnd.begins[i]),
            end=int(rnd.ends[i]),
            statistic_kind="sign",
            scans=scans[i],
            partial=partial[i],
        )
        for i in rows
    }
    refine: list[int] = []
    start_splits: list[int] = []
    for i in rows:
        stat, split, kind = _best_split(results[i], penalty, 1.0)
        if stat > penalty and kind == "location":
            refine.append(i)
            start_splits.append(split)
    if refine:
        _refine_locations(rnd, refine, start_splits)
        for i, split in zip(refine, start_splits, strict=True):
            results[i].refined["location"] = split
    medians = rnd.medians()
    for i in rows:
        scan = results[i]
        key = (scan.begin, scan.end)
        result = _decide(rnd.values, scan, penalty=penalty, floor=1.0, min_size=min_size)
        out.tests.append(result)
        out.scans[key] = scan
        median = float(medians[i])
        if median != 0.0:
            out.medians[key] = median
        splits[i] = result.index
        if keep and result.index is None:
            start, stop = int(starts[i]), int(starts[i] + sizes[i])
            made: list[tuple[ChangeKind, np.ndarray]] = [("location", half[start:stop])]
            if scale and outside is not None:
                made.append(("scale", outside[start:stop]))
            out.indicators[key] = made
