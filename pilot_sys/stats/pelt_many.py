"""PELT under the normal mean-and-variance cost for many penalties over one series (for CROPS).

``pelt_meanvar`` walks the series one step at a time: a few numpy calls per step over the
surviving candidates. A CROPS path needs that walk 9-10 times over the same series, with tens
of penalties at once, and then the per-step calls and the logarithms dominate. This solver
gives the same optimum, float for float and tie for tie, with these changes of bookkeeping:

- Steps go in blocks of two pruning intervals. Which candidates a step may use is known at the
  start of its block: PELT's delayed pruning drops at one check only what the check before
  found beaten. So the candidates from before the block are scored for all its steps in one
  array expression, and only the few candidates that begin inside the block need the block's
  own results: those are solved by fixed-point iteration (each step depends only on earlier
  steps, so the iteration reaches the sequential answer, and stops as soon as it no longer
  changes it, which is that answer exactly).
- A segment's cost does not depend on the penalty, so each one is computed once per series,
  in the same expression as ``pelt_meanvar`` (the same floats), and kept for the later
  penalties of the path (``MeanVarPelt`` holds them; one CROPS path reuses one solver).
- Candidates live in a dense table (index = candidate) with +inf once pruned, so a step's
  argmin runs over them in ascending order, as the plain loop's compacted list does, and a
  tie goes to the earliest candidate in both. Penalties are scored in groups, each from its
  own oldest live candidate: a high penalty prunes little and keeps candidates from the start,
  a low one only recent ones, and one width for all would score the low ones at the high one's.
- A penalty so high that no change point can pay for itself (CROPS's top one) is answered
  from the one-segment costs, where a bound proves the search would end there.
"""

from __future__ import annotations

import math

import numpy as np

from pilot_sys.stats.pelt import (
    DEFAULT_MIN_SIZE,
    PeltResult,
    pelt_meanvar,
    prefix_sums,
    variance_floor,
)

# Penalties per pass: bounds the (penalties x steps x candidates) work arrays of one block.
MANY_CHUNK = 64
# Totals (penalties x steps x candidates) a separate group of penalties must save to be worth
# its own numpy calls (each group costs some tens of microseconds of calls).
SPLIT_GAIN = 20_000
# Series length up to which the segment costs are kept for later penalties (they take up to
# 4 n^2 bytes: 36 MB at settle's 3,000 block means); longer ones are computed again per pass.
KEEP_COSTS_UP_TO = 5000
# relative slack for rounding in a proof that no change point pays (float sums of n terms
# are off by far less)
ROUNDING = 1e-9


class MeanVarPelt:
    """Exact PELT (mean-and-variance cost) of one series, for any penalties, sharing the costs."""

    def __init__(self, values: np.ndarray, min_size: int = DEFAULT_MIN_SIZE) -> None:
        x = np.asarray(values, dtype=np.float64)
        if x.ndim != 1:
            raise ValueError(f"expected a 1-D series, got shape {x.shape}")
        if min_size < 2:
            raise ValueError("min_size must be at least 2 (a variance needs two readings)")
        self.values = x
        self.min_size = min_size
        self._floor = variance_floor(x) if x.size >= 2 * min_size else 1.0
        self._s1, self._s2 = prefix_sums(x)
        # pruning every `every` steps, as pelt_meanvar; a block holds two checks
        self._every = max(min_size - 1, 8)
        self._block = 2 * self._every
        # per block start: (first candidate column, costs of steps x candidates from there)
        self._costs: dict[int, tuple[int, np.ndarray]] = {}
        # the costs of one segment from the start to each step, and the bound they are held to
        self._whole: tuple[np.ndarray, np.ndarray, float] | None = None

    def solve(self, penalties: list[float]) -> list[PeltResult]:
        """``pelt_meanvar(values, p, min_size)`` for each p in ``penalties``."""
        x = self.values
        if x.size < 2 * self.min_size:
            return [pelt_meanvar(x, p, self.min_size) for p in penalties]
        out: list[PeltResult | None] = [self._unsegmented(float(p)) for p in penalties]
        todo = [i for i, r in enumerate(out) if r is None]
        for i in range(0, len(todo), MANY_CHUNK):
            rows = todo[i : i + MANY_CHUNK]
            chunk = np.array([penalties[r] for r in rows], dtype=np.float64)
            for r, result in zip(rows, self._solve_chunk(chunk), strict=True):
                out[r] = result
        return [r for r in out if r is not None]

    def _unsegmented(self, penalty: float) -> PeltResult | None:
        """The answer for a penalty no change point can pay for, without the search; None
        when that is not proven.

        Each segment of a segmentation costs at least its length times log(floor), and each
        change point adds the penalty, so every candidate but the start scores at least
        t log(floor) at step t. Where the start alone (one segment, less the penalty) scores
        lower at every step, with a margin for rounding, it is the strict minimum at every
        step: never pruned, and the search ends with no change point and the same floats."""
        if not penalty > 0.0:
            return None
        if self._whole is None:
            ms, s1, s2 = self.min_size, self._s1, self._s2
            t = np.arange(ms, self.values.size + 1)
            m = t.astype(np.float64)
            d1 = (s1[t] - s1[0]) / m
            whole = (s2[t] - s2[0]) / m - d1 * d1
            np.maximum(whole, self._floor, out=whole)
            np.log(whole, out=whole)
            whole *= m
            spread = float(np.ptp(self.values))
            low = math.log(self._floor)
            scale = max(abs(low), abs(math.log(max(spread * spread, self._floor))))
            self._whole = (whole, t * low, t.size * scale)
        whole, bound, scale = self._whole
        total = -penalty + whole  # the start's total at each step, as the search adds it
        margin = ROUNDING * total.size * (penalty + scale)
        if not (total < bound - margin).all():
            return None
        cost = float(total[-1] + penalty)
        return PeltResult(changepoints=[], cost=cost, penalty=penalty)

    def _segment_costs(self, start: int, stop: int, lo: int, hi: int) -> np.ndarray:
        """Costs of the segments [c, t) for t in (start, stop], c in [lo, hi), +inf where
        the segment is shorter than min_size; the floats of ``pelt_meanvar``'s loop."""
        cached = self._costs.get(start) if self.values.size <= KEEP_COSTS_UP_TO else None
        if cached is not None and cached[0] <= lo:
            first, table = cached
            return table[:, lo - first : hi - first]
        top = hi if cached is None else cached[0]
        t = np.arange(start + 1, stop + 1)[:, None]
        c = np.arange(lo, top)[None, :]
        m = (t - c).astype(np.float64)  # the same quotients and products as by the integers
        s1, s2 = self._s1, self._s2
        with np.errstate(divide="ignore", invalid="ignore"):
            d1 = (s1[t] - s1[c]) / m
            cost = (s2[t] - s2[c]) / m - d1 * d1
            np.maximum(cost, self._floor, out=cost)
            np.log(cost, out=cost)
            cost *= m
        cost[m < self.min_size] = np.inf
        table = cost if cached is None else np.concatenate((cost, cached[1]), axis=1)
        if self.values.size <= KEEP_COSTS_UP_TO:
            self._costs[start] = (lo, table)
        return table[:, : hi - lo]

    def _solve_chunk(self, penalties: np.ndarray) -> list[PeltResult]:
        x, ms, every = self.values, self.min_size, self._every
        n = x.size
        # highest penalty first: the penalties that prune least (and so keep the oldest
        # candidates) come together, and a group of them is a slice of rows
        order = np.argsort(-penalties, kind="stable")
        beta = penalties[order]
        rows = beta.size
        inf = np.inf
        best = np.full((rows, n + 1), inf)
        best[:, 0] = -beta
        previous = np.zeros((rows, n + 1), dtype=np.intp)
        # F(candidate) per penalty, +inf before it enters and once it is pruned there
        alive = np.full((rows, n + 1), inf)
        alive[:, 0] = -beta
        beaten = np.zeros((rows, n + 1), dtype=bool)
        pen = beta[:, None]
        oldest = [0] * rows  # per penalty, its lowest live candidate
        first = 0  # the lowest over all penalties
        for start in range(0, n, self._block):
            stop = min(start + self._block, n)  # steps start+1 .. stop
            steps = stop - start
            half = min(every, steps)  # steps up to the check in the middle of the block
            old_hi = max(start + 2 - ms, 1)  # candidates that entered before the block
            in_lo = max(start + 2 - ms, ms)  # candidates that enter inside it
            in_hi = stop + 1 - ms
            costs = self._segment_costs(start, stop, first, max(in_hi, old_hi))
            # the candidates from before the block, for all its steps at once, by groups of
            # penalties (each from its group's oldest live candidate, not from the oldest of all)
            old_min = np.empty((rows, steps))
            old_arg = np.empty((rows, steps), dtype=np.intp)
            groups = []
            for top, end, lo in _row_groups(oldest, old_hi, steps):
                f = alive[top:end, lo:old_hi]
                c = costs[:, lo - first : old_hi - first]
                gone = beaten[top:end, lo:old_hi]
                old_min[top:end], arg, totals = _scores(f, gone, c, half)
                old_arg[top:end] = arg + lo
                groups.append((top, end, lo, totals))
            value = old_min + pen
            # the candidates that enter inside the block: the fixed point of the recursion
            inner = np.empty((rows, steps, 0))
            if in_hi > in_lo:
                in_costs = costs[None, :, in_lo - first :]
                known = max(0, min(start + 1, in_hi) - in_lo)  # those that entered before
                in_f = np.empty((rows, in_hi - in_lo))
                in_f[:, :known] = best[:, in_lo : in_lo + known]
                fresh = slice(in_lo + known - start - 1, in_hi - start - 1)
                guess = in_f[:, known:]
                guess[:] = value[:, fresh]
                while True:
                    inner = in_f[:, None, :] + in_costs
                    in_min = inner.min(axis=2)
                    value = np.minimum(old_min, in_min)
                    value += pen
                    if (value[:, fresh] == guess).all():
                        break
                    guess[:] = value[:, fresh]
                # earlier candidates win ties: an inner one only when strictly lower
                inside = in_min < old_min
                old_arg[inside] = in_lo + inner.argmin(axis=2)[inside]
            best[:, start + 1 : stop + 1] = value
            previous[:, start + 1 : stop + 1] = old_arg
            enter = slice(in_lo, stop + 2 - ms)
            alive[:, enter] = best[:, enter]
            # PELT's checks: drop what the last check found beaten, mark what is beaten now
            # (the mark on a candidate just dropped is never read: it is +inf from now on)
            for t in (start + every, start + 2 * every):
                if not ms <= t <= stop:
                    continue
                j = t - start - 1
                at = best[:, t, None]
                for top, end, lo, totals in groups:
                    flags = beaten[top:end, lo:old_hi]
                    np.copyto(alive[top:end, lo:old_hi], inf, where=flags)
                    np.greater(totals[j], at[top:end], out=flags)
                last = t - ms + 1
                if last > in_lo:
                    flags = beaten[:, in_lo:last]
                    np.copyto(alive[:, in_lo:last], inf, where=flags)
                    np.greater(inner[:, j, : last - in_lo], at, out=flags)
            live = np.isfinite(alive[:, first : stop + 2 - ms])
            oldest = (live.argmax(axis=1) + first).tolist()
            first = min(oldest)
        out: list[PeltResult] = [PeltResult(changepoints=[], cost=0.0, penalty=0.0)] * rows
        for r in range(rows):
            cuts: list[int] = []
            t = n
            while t > 0:
                t = int(previous[r, t])
                if t > 0:
                    cuts.append(t)
            cuts.reverse()
            b = float(beta[r])
            cost = float(best[r, n]) - b * len(cuts)
            out[int(order[r])] = PeltResult(changepoints=cuts, cost=cost, penalty=b)
        return out


def _scores(
    f: np.ndarray, gone: np.ndarray, costs: np.ndarray, half: int
) -> tuple[np.ndarray, np.ndarray, dict[int, np.ndarray]]:
    """Min and first argmin of F(c) + cost(c, t) over the candidates at every step of the
    block (those ``gone`` leave after the middle check), and the totals at its two checks."""
    steps, width = costs.shape
    rows = f.shape[0]
    if steps == 2 * half:
        # F before the middle check and after it, each added to its half of the steps at once
        phases = np.empty((rows, 2, width))
        phases[:, 0] = f
        np.copyto(phases[:, 1], f)
        np.copyto(phases[:, 1], np.inf, where=gone)
        split = costs.reshape(2, half, width)
        old = (phases[:, :, None, :] + split[None]).reshape(rows, steps, width)
    else:  # the last block, shorter
        old = np.empty((rows, steps, width))
        np.add(f[:, None, :], costs[None, :half], out=old[:, :half])
        if half < steps:
            late = np.where(gone, np.inf, f)
            np.add(late[:, None, :], costs[None, half:], out=old[:, half:])
    arg = old.argmin(axis=2)
    flat = arg.ravel() + np.arange(0, old.size, width)
    mins = old.reshape(-1)[flat].reshape(rows, steps)
    return mins, arg, {half - 1: old[:, half - 1, :], steps - 1: old[:, steps - 1, :]}


def _row_groups(oldest: list[int], top: int, steps: int) -> list[tuple[int, int, int]]:
    """Consecutive rows in groups (first row, end, lowest candidate), a new group where the
    rows from there on are at most half as wide as the group so far and leaving out the
    difference saves more than a group's fixed cost of numpy calls."""
    out = []
    begin, lo = 0, oldest[0]
    rows = len(oldest)
    for r in range(1, rows):
        o = oldest[r]
        if 2 * (top - o) < top - lo and (rows - r) * (o - lo) * steps >= SPLIT_GAIN:
            out.append((begin, r, lo))
            begin, lo = r, o
        elif o < lo:
            lo = o
    out.append((begin, rows, lo))
    return out


def pelt_meanvar_many(
    values: np.ndarray, penalties: list[float], min_size: int = DEFAULT_MIN_SIZE
) -> list[PeltResult]:
    """``pelt_meanvar`` for each of ``penalties``: the same optimum, ties included."""
    return MeanVarPelt(values, min_size).solve(penalties)
