"""The detection driver: binary segmentation with edge tests, then the seeded search.

``_Detection`` decides which segments and intervals to test and which accepted splits to take;
``_Scans`` makes each scan once per detection (or reuses one an earlier run of
``IncrementalEDM`` cached), bounding the seeded intervals first on long series. Separate from
``changepoint``, which validates the input and assembles the result around one detection.
"""

from __future__ import annotations

import math

import numpy as np

from pilot_sys.stats._changepoint_bound import SeededBounds
from pilot_sys.stats._changepoint_dependence import _SeriesDependence
from pilot_sys.stats._changepoint_edges import _EdgeTests
from pilot_sys.stats._changepoint_plan import _Plan, critical_value
from pilot_sys.stats._changepoint_result import ChangeKind, _Split
from pilot_sys.stats._changepoint_rounds import ROUND_MAX, RoundOutcome, bisect_rounds
from pilot_sys.stats._changepoint_segment import (
    _decide,
    _Decisive,
    _decisive,
    _may_accept,
    _scan_intervals,
    _scan_segment,
    _ScanResult,
)
from pilot_sys.stats._changepoint_statistic import _median_of_sorted

#: Scans by segment [begin, end), kept by ``IncrementalEDM`` from one update to the next.
_ScanCache = dict[tuple[int, int], _ScanResult]


# Segments at least this long keep their sorted values for the pieces they are split into.
_SORT_REUSE_MIN = 1 << 16

# Seeded intervals are first bounded (``_changepoint_bound``) from this many readings on; below,
# building the bound's sorted blocks and tables costs more than the scans it saves.
_BOUND_MIN_READINGS = 1 << 15


def _copy_index(ordered: np.ndarray) -> np.ndarray:
    """Per entry of sorted ``ordered``: how many equal values come before it (its offset from
    ``np.searchsorted(ordered, ordered, "left")``, from one comparison of neighbours)."""
    at = np.arange(ordered.size)
    first = np.zeros(ordered.size, dtype=at.dtype)
    starts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    first[starts] = starts
    return at - np.maximum.accumulate(first)


class _Scans:
    """Segment scans of one detection: made here, or reused from an earlier run's ``cache``.

    A scan does not depend on any penalty, so one scan serves every test of its segment.
    Seeded intervals whose batched scan showed no statistic above the seeded penalty are only
    remembered as hopeless when there is no cache to fill: they never become scan results.
    On a long series without a cache, an upper bound of every interval's statistics is computed
    first, and only the intervals whose bound could pass are scanned.
    """

    def __init__(self, values: np.ndarray, plan: _Plan, cache: _ScanCache | None) -> None:
        self._values = values
        self._plan = plan
        self._cache = cache
        self._used: _ScanCache = {}
        self._hopeless: set[tuple[int, int]] = set()
        self._bounds: SeededBounds | None = None
        self.unsplit_indicators: dict[tuple[int, int], list[tuple[ChangeKind, np.ndarray]]] = {}
        self._kept_sorted: tuple[int, int, np.ndarray] | None = None
        # the pieces of a re-placed split, their values sorted by the re-placement (``_decide``)
        self._presorted: dict[tuple[int, int], np.ndarray] = {}
        self.medians: dict[tuple[int, int], float] = {}  # of segments sorted for their scans

    def _sorted(self, begin: int, end: int) -> np.ndarray | None:
        """The values of a long segment sorted (None: let the scan select its cuts itself).

        Binary segmentation tests a long segment and then, most often, the larger piece of it:
        that piece's sorted values are the segment's with the other piece's removed, an O(n)
        deletion instead of an O(n log n) sort (equal values are interchangeable, so the
        result is exactly the sort of the piece).
        """
        p = self._plan
        if not p.scale or p.median_scan is not None or end - begin < _SORT_REUSE_MIN:
            return None
        kept = self._kept_sorted
        if kept is not None and kept[0] <= begin and end <= kept[1]:
            b, e, parent = kept
            if (e - b) - (end - begin) <= (end - begin) // 4:
                removed = np.sort(np.concatenate([self._values[b:begin], self._values[end:e]]))
                # the i-th copy of a value in ``removed`` deletes the i-th copy in ``parent``
                copy = _copy_index(removed)
                ordered = np.delete(parent, np.searchsorted(parent, removed, "left") + copy)
                self._kept_sorted = (begin, end, ordered)
                return ordered
        ordered = np.sort(self._values[begin:end])
        self._kept_sorted = (begin, end, ordered)
        return ordered

    def absorb(self, outcome: RoundOutcome) -> None:
        """Keep what a round of tests (``bisect_rounds``) made, as ``test`` keeps its own."""
        self._used.update(outcome.scans)
        self.medians.update(outcome.medians)
        self.unsplit_indicators.update(outcome.indicators)
        for key in outcome.scans:
            self._presorted.pop(key, None)

    def forget_sorted(self) -> None:
        self._kept_sorted = None
        self._presorted.clear()

    def _seeded_bounds(self) -> SeededBounds | None:
        """The bound of the seeded intervals' statistics, built on first use (None: not used)."""
        p = self._plan
        if (
            self._cache is not None
            or p.n < _BOUND_MIN_READINGS
            or not SeededBounds.applicable(p.min_size)
        ):
            return None
        if self._bounds is None:
            self._bounds = SeededBounds(self._values, p.min_size)
        return self._bounds

    @property
    def fresh(self) -> bool:
        """No earlier run's scans to reuse (no ``IncrementalEDM`` cache)."""
        return self._cache is None

    def _lookup(self, key: tuple[int, int]) -> _ScanResult | None:
        return self._used.get(key) or (self._cache.get(key) if self._cache is not None else None)

    def test(
        self, begin: int, end: int, penalty: float, floor: float = 1.0, keep: bool = False
    ) -> _Split:
        """Scan [begin, end) (unless already scanned) and decide its best split at ``penalty``.

        ``keep``: if the segment is not split, keep the indicators its scan made
        (``unsplit_indicators``), which the series-wide dependence floor needs again.
        """
        key = (begin, end)
        presorted = self._presorted.pop(key, None)
        scan = self._lookup(key)
        made: list[tuple[ChangeKind, np.ndarray]] | None = [] if keep else None
        # A partial scan (cached or not) is made whole when its location split no longer
        # decides alone at this penalty and floor.
        decisive: _Decisive | None = _decisive(penalty, floor)
        if scan is not None and scan.partial:
            _, _, stat, factor = scan.scans[0]
            if not decisive(stat, factor):
                scan, decisive = None, None
        if scan is None:
            p = self._plan
            ordered = self._sorted(begin, end)
            if ordered is not None:
                self.medians[key] = _median_of_sorted(ordered)
            else:
                ordered = presorted
                if ordered is None and p.scale and p.median_scan is None:
                    # the scan sorts the segment anyway (three cuts): its median comes free
                    ordered = np.sort(self._values[begin:end])
                median = None if ordered is None else _median_of_sorted(ordered)
                # a zero median is left to np.median: which of -0.0 and 0.0 lands in the middle
                # depends on how the values were ordered, and these were ordered another way
                if median is not None and median != 0.0:
                    self.medians[key] = median
            scan = _scan_segment(
                self._values,
                begin,
                end,
                min_size=p.min_size,
                base_penalty=p.threshold,
                scale=p.scale,
                dependence=p.dependence,
                median_scan=p.median_scan,
                indicators=made,
                ordered=ordered,
                decisive=decisive,
            )
        self._used[key] = scan
        sides: list[np.ndarray] = []
        result = _decide(
            self._values,
            scan,
            penalty=penalty,
            floor=floor,
            min_size=self._plan.min_size,
            sides=sides,
        )
        if sides and result.index is not None:  # only pieces long enough to be tested again
            pieces = ((begin, result.index), (result.index, end))
            for piece, piece_sorted in zip(pieces, sides, strict=True):
                if piece[1] - piece[0] >= 2 * self._plan.min_size:
                    self._presorted[piece] = piece_sorted
        if made and result.index is None:
            self.unsplit_indicators[key] = made
        return result

    def hopeful(
        self, keys: list[tuple[int, int]], penalty: float, floor: float = 1.0
    ) -> list[tuple[int, int]]:
        """The seeded intervals of ``keys`` whose statistic could pass ``penalty`` once divided
        by the square root of the dependence ``floor`` that ``test`` will apply.

        Intervals not scanned yet are scanned in batches, those of one length together
        (``_scan_intervals``); only the survivors are decided one by one.
        """
        p = self._plan
        # below this no statistic can pass (the margin covers the rounding of the product)
        keep_above = penalty * math.sqrt(floor) * (1.0 - 1e-12)
        missing: dict[int, list[int]] = {}
        for key in keys:
            if key in self._hopeless:
                continue
            scan = self._lookup(key)
            if scan is not None:
                self._used[key] = scan
            else:
                missing.setdefault(key[1] - key[0], []).append(key[0])
        bounds = self._seeded_bounds()
        for length, starts in missing.items():
            if bounds is not None:  # scan only the intervals whose bound could pass
                at = np.asarray(starts, dtype=np.int64)
                maybe = (bounds.bounds(at, length, p.scale) > keep_above).any(axis=0)
                self._hopeless.update((start, start + length) for start in at[~maybe].tolist())
                starts = at[maybe].tolist()
                if not starts:
                    continue
            scans, skipped = _scan_intervals(
                self._values,
                starts,
                length,
                min_size=p.min_size,
                base_penalty=p.threshold,
                scale=p.scale,
                dependence=p.dependence,
                keep_above=keep_above if self._cache is None else None,
            )
            for scan in scans:
                self._used[(scan.begin, scan.end)] = scan
            self._hopeless.update((start, start + length) for start in skipped)
        return [
            key
            for key in keys
            if key not in self._hopeless and _may_accept(self._used[key], penalty, floor)
        ]

    def save(self) -> None:
        """Leave this run's scans in the cache: older entries can never recur."""
        if self._cache is not None:
            self._cache.clear()
            self._cache.update(self._used)


def _select_seeded(found: list[_Split], b: int, e: int, plan: _Plan) -> list[_Split]:
    """Greedy selection among accepted seeded tests in [b, e): the most significant split
    first; an interval holding a split already taken (or closer than min_size to one) has had
    its change explained. p-values are Bonferroni-corrected over the plan's family."""
    size = plan.min_size
    chosen: list[_Split] = []
    at: list[int] = []  # their indices
    for result in sorted(found, key=lambda r: (r.p_value, -r.statistic)):
        index = int(result.index or 0)
        if any(result.begin < c < result.end or abs(index - c) < size for c in at):
            continue
        if index - b < size or e - index < size:
            continue
        at.append(index)
        chosen.append(result.model_copy(update={"p_value": min(1.0, result.p_value * plan.family)}))
    return chosen


def _cuts(splits: list[_Split]) -> list[int]:
    return sorted(int(s.index) for s in splits if s.index is not None)


class _Detection:
    """One run of the detector over a series: binary segmentation with edge tests, then the
    seeded search inside the segments it could not split. ``tests`` collects every decided
    split (accepted or not); ``_assemble`` turns them into the result. Short segments not at an
    end of the series are tested in rounds (``bisect_rounds``) when ``rounds`` is set."""

    rounds = True

    def __init__(self, values: np.ndarray, plan: _Plan, cache: _ScanCache | None) -> None:
        self.values = values
        self.plan = plan
        self.scans = _Scans(values, plan, cache)
        self.edges = _EdgeTests(values, plan)
        self.tests: list[_Split] = []

    def bisect(self, begin: int, end: int, keep: bool = False) -> list[tuple[int, int]]:
        """Binary segmentation of [begin, end); returns the segments it could not split (with
        ``keep``, their scans' indicators stay in ``scans.unsplit_indicators``).

        A segment holding an end of the series is tested whole and in its edge intervals. A
        stretch shorter than ~2 sqrt(m) at an end of m readings moves the whole segment's CUSUM
        too little to be found or placed (its argmax wanders into the stable part, and a split
        there cuts the stable phase), so an edge split is taken unless the whole segment puts
        its split where an edge test placed one (then the whole segment, with more readings,
        places it: better for a long ramp). Other segment ends get no edge tests: there they
        would meet the splits of other changes, not a warm-up (anchoring the segment left by an
        edge cut splits multi-round series next to round boundaries).
        """
        size = self.plan.min_size
        finals: list[tuple[int, int]] = []
        pending = [(begin, end)]
        short: list[tuple[int, int]] = []  # tested together after the others
        while pending:
            b, e = pending.pop()
            if e - b < 2 * size:
                finals.append((b, e))
                continue
            if self._in_rounds(b, e):
                short.append((b, e))
                continue
            found = self.edges.candidates(b, e) if self.edges.enabled else []
            result = self.scans.test(b, e, self.plan.threshold, keep=keep)
            # the edge tests found a change that the whole segment's test missed or put elsewhere
            if found and (
                result.index is None
                or not any(abs(self.edges.place(c, b, e) - result.index) < size for c in found)
            ):
                taken = self.edges.select(found, b, e)
                if taken:
                    self.tests += taken
                    bounds = [b, *_cuts(taken), e]
                    pending.extend(zip(bounds[:-1], bounds[1:], strict=True))
                    continue
            self.tests.append(result)
            if result.index is None:
                finals.append((b, e))
            else:
                pending.extend([(b, result.index), (result.index, e)])
        if short:
            outcome = bisect_rounds(
                self.values,
                short,
                min_size=size,
                penalty=self.plan.threshold,
                scale=self.plan.scale,
                dependence=self.plan.dependence,
                keep=keep,
            )
            self.scans.absorb(outcome)
            self.tests += outcome.tests
            finals += outcome.unsplit
            # the order the one-by-one path leaves them in (it takes the later piece first)
            finals.sort(reverse=True)
        return finals

    def _in_rounds(self, b: int, e: int) -> bool:
        """Whether [b, e) is tested in rounds: short, not at an end of the series when the
        edge tests look there, and with nothing to reuse from an earlier run."""
        p = self.plan
        return (
            self.rounds
            and self.scans.fresh
            and p.median_scan is None
            and e - b < ROUND_MAX
            and p.min_size >= 4  # every quarter of a segment holds a reading
            and not (self.edges.enabled and (b == 0 or e == p.n))
        )

    def search_seeded(self, finals: list[tuple[int, int]]) -> None:
        """Inside each segment binary segmentation could not split, take the most significant
        seeded intervals; Bonferroni over all intervals (and the series' edge intervals) keeps
        the two searches' false-alarm rate together at ``significance``."""
        p = self.plan
        size = p.min_size
        widen = critical_value(p.significance / p.family, p.scans, p.statistic) / critical_value(
            p.significance, p.scans, p.statistic
        )
        penalty = p.threshold * widen
        known = self.scans.unsplit_indicators
        floor = _SeriesDependence(self.values, finals, p.scale, known).base if p.dependence else 1.0
        known.clear()  # only the floor needs them
        queue = [f for f in finals if f[1] - f[0] >= 4 * size]
        while queue:
            b, e = queue.pop()
            inside = p.intervals[(p.intervals[:, 0] >= b) & (p.intervals[:, 1] <= e)]
            keys = [(lo, hi) for lo, hi in inside.tolist() if (lo, hi) != (b, e)]
            if p.median_scan is None:  # decide only the intervals whose statistic could pass
                keys = self.scans.hopeful(keys, penalty, floor)
            tested = [self.scans.test(lo, hi, penalty, floor) for lo, hi in keys]
            found = [result for result in tested if result.index is not None]
            taken = _select_seeded(found, b, e, p)
            self.tests += taken
            cuts = _cuts(taken)
            if cuts:  # the pieces go back to binary segmentation
                for lo, hi in zip([b, *cuts], [*cuts, e], strict=True):
                    queue.extend(f for f in self.bisect(lo, hi) if f[1] - f[0] >= 4 * size)
