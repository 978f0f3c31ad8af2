"""The batched scan's helpers for tied rows give what the direct computations give.

``_row_counts`` is ``np.count_nonzero(mask, axis=1)`` summed in a narrow integer; ``_tied_key_cuts``
sorts only the tied readings' keys, tagged with their row, where the direct form sorted whole
rows with a filler above every key in the untied places. Both must return the same integers.
"""

from __future__ import annotations

import numpy as np
import pytest

from pilot_sys.stats._changepoint_batch import _NO_KEY, _row_counts, _tied_key_cuts
from pilot_sys.stats._changepoint_ranks import keys_at


def direct_key_cuts(keys: np.ndarray, tied: np.ndarray, need: np.ndarray) -> np.ndarray:
    tied_keys = np.sort(np.where(tied, keys, _NO_KEY), axis=1)
    return tied_keys[np.arange(keys.shape[0]), np.count_nonzero(tied, axis=1) - need]


@pytest.mark.parametrize("width", [1, 7, 300, 70_000])
def test_row_counts_are_count_nonzero(width: int) -> None:
    rng = np.random.default_rng(width)
    rows = max(1, 140_000 // width)
    for density in (0.0, 0.3, 1.0):
        mask = rng.random((rows, width)) < density
        got = _row_counts(mask)
        assert got.dtype == np.int64
        assert np.array_equal(got, np.count_nonzero(mask, axis=1))


@pytest.mark.parametrize(("rows", "width"), [(1, 9), (5, 64), (40, 1024), (3000, 6)])
def test_tied_key_cuts_match_sorting_whole_rows(rows: int, width: int) -> None:
    """3000 rows do not fit the row tag (2**11 rows): the whole-row sort is taken there."""
    rng = np.random.default_rng(rows)
    starts = rng.integers(0, 10**9, rows)
    keys = keys_at(starts[:, None] + np.arange(width))
    for density in (0.05, 0.5, 1.0):
        tied = rng.random((rows, width)) < density
        tied[:, 0] = True  # every row has a tied reading, as the scan's tied rows do
        n_tied = np.count_nonzero(tied, axis=1)
        need = rng.integers(1, n_tied + 1)
        got = _tied_key_cuts(keys, tied, need)
        assert np.array_equal(got, direct_key_cuts(keys, tied, need))
        # the cut keeps exactly ``need`` tied readings per row
        assert np.array_equal(np.count_nonzero(tied & (keys >= got[:, None]), axis=1), need)
