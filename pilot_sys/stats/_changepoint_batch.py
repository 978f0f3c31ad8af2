"""Row-wise EDM sign scans: many equally long intervals of a series in one pass per step.

The seeded stage of ``changepoint.detect`` scans about n / min_size intervals; one interval at a
time, each scan (a selection, a cumulative sum, an argmax) on a round's readings is almost all
Python and numpy call overhead. Intervals of one scale have the same length, so they stack into
a (rows, length) array and every step becomes one call over all rows.

Both kernels reproduce the one-interval code in ``changepoint`` (``_top_masks`` and
``_cusum_scan``) operation for operation, so their results are bit-identical, not merely close:
the same order statistic is selected (a value, whatever the selection algorithm), ties at a cut
are broken by the same position keys, and each float is formed by the same IEEE operations in
the same order (elementwise numpy arithmetic does not reassociate).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_NO_KEY = np.uint64(np.iinfo(np.uint64).max)  # above every tie-break key (those fit in 53 bits)


def top_masks(
    block: np.ndarray, counts: list[int], keys_of: Callable[[np.ndarray], np.ndarray]
) -> list[np.ndarray]:
    """Per row of ``block``, masks of the ``count`` largest values, ties broken by key.

    One selection along the rows (a sort when there are several cuts: numpy's vectorised sort
    is faster than a multi-k introselect) finds every cut value. A row whose cut value is tied
    (more readings equal to it than still needed) takes its largest-keyed tied readings, as
    ``_changepoint_statistic._top_masks`` does; ``keys_of(rows)`` gives those rows' keys, so
    continuous data never computes a key.
    """
    n_rows, m = block.shape
    kth = sorted({m - c for c in counts if 0 < c <= m})
    if not kth:
        ordered = block
    else:
        ordered = np.partition(block, kth, axis=1) if len(kth) == 1 else np.sort(block, axis=1)
    keyed: tuple[np.ndarray, np.ndarray] | None = None  # rows and their keys, made once
    masks = []
    for count in counts:
        if count <= 0:
            masks.append(np.zeros((n_rows, m), dtype=bool))
            continue
        cut = ordered[:, m - count, None]
        mask = block >= cut  # right unless readings tied at the cut are more than still needed
        rows = np.flatnonzero(_row_counts(mask) != count)
        if rows.size:
            every = rows.size == n_rows
            values, row_cut = (block, cut) if every else (block[rows], cut[rows])
            tied = values == row_cut
            above = (mask if every else mask[rows]) ^ tied
            need = count - _row_counts(above)
            if keyed is None or not np.array_equal(keyed[0], rows):
                keyed = (rows, keys_of(rows))
            keys = keyed[1]
            key_cut = _tied_key_cuts(keys, tied, need)
            above |= tied & (keys >= key_cut[:, None])
            if every:
                mask = above
            else:
                mask[rows] = above
        masks.append(mask)
    return masks


_KEY_BITS = 53  # tie-break keys are below 2**53 (``_changepoint_ranks.keys_at``)
_ROW_BITS = 64 - _KEY_BITS


def _tied_key_cuts(keys: np.ndarray, tied: np.ndarray, need: np.ndarray) -> np.ndarray:
    """Per row, the smallest key of the ``need`` largest-keyed tied readings.

    Only the tied readings' keys are sorted: each tagged with its row in the bits above the
    key, so one flat sort orders them row by row (rows come out in order, keys sorted within);
    sorting every row with a filler above all keys in the untied places gives the same values.
    """
    n_tied = _row_counts(tied)
    if keys.shape[0] > 1 << _ROW_BITS:  # the row tag would not fit: sort whole rows
        tied_keys = np.sort(np.where(tied, keys, _NO_KEY), axis=1)
        return tied_keys[np.arange(keys.shape[0]), n_tied - need]
    row = np.repeat(np.arange(keys.shape[0], dtype=np.uint64), n_tied)
    tagged = np.sort((row << np.uint64(_KEY_BITS)) | keys[tied])
    first = np.cumsum(n_tied) - n_tied  # where each row's tied keys start
    return tagged[first + n_tied - need] & np.uint64((1 << _KEY_BITS) - 1)


def _row_counts(mask: np.ndarray) -> np.ndarray:
    """``np.count_nonzero(mask, axis=1)``, summed in the narrowest integer that holds a row's
    count (several times faster than the default's cast to 64 bits)."""
    m = mask.shape[1]
    narrow = np.uint16 if m <= np.iinfo(np.uint16).max else np.int64
    return mask.view(np.uint8).sum(axis=1, dtype=narrow).astype(np.int64)


def cusum_scan(
    counts: np.ndarray, min_size: int, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of cumulative indicator sums: best split, bridge-scaled CUSUM range, and its cuts.

    ``positions`` holds min_size .. m - min_size as float64. Returns ``split``, ``statistic``
    and the two cuts (equal when the change has one), as ``_changepoint_statistic._cusum_scan``
    does for one row, including its answer (m // 2, 0, one cut) for an indicator without both
    values.
    """
    n_rows, m = counts.shape
    p = counts[:, -1] / m
    bridge = positions[None, :] * -p[:, None]
    bridge += counts[:, min_size - 1 : m - min_size]
    top, bottom = np.argmax(bridge, axis=1), np.argmin(bridge, axis=1)
    rows = np.arange(n_rows)
    peak, trough = bridge[rows, top], bridge[rows, bottom]
    high = np.where(peak > 0.0, peak, 0.0)  # max(0.0, peak), -0.0 included
    low = np.where(trough < 0.0, trough, 0.0)
    split = min_size + np.where(high >= -low, top, bottom)
    first = np.where(high > 0, min_size + top, split)
    second = np.where(low < 0, min_size + bottom, split)
    flat = (p <= 0.0) | (p >= 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = (high - low) / np.sqrt(m * p * (1.0 - p))
    if flat.any():
        statistic[flat] = 0.0
        split[flat] = first[flat] = second[flat] = m // 2
    return split, statistic, np.minimum(first, second), np.maximum(first, second)
