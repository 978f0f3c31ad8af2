"""The fast ways of judging change kinds against the plain ones, float for float.

``classify_changes`` fits many windows at once (``_evidence_many``, ``moment_fits_many``,
``_judge_many``), fits the windows of the drops it expects next with the ones it needs, and
keeps its drop loop's p-values in arrays; ``_outliers_near`` screens readings by block order
statistics before ranking windows. Each must give exactly what the plain way gives (one window
at a time, one Python scan per round, every window ranked): the kinds, every p-value and every
figure, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from pilot_sys.stats import change_kind, outlier_screen
from pilot_sys.stats.change_kind import EVIDENCE_REACH, ChangeKind
from pilot_sys.stats.kind_moments import moment_fits, moment_fits_many
from pilot_sys.stats.outlier_screen import certified
from pilot_sys.stats.outliers import DEFAULT_WINDOW, window_outliers


def _series(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(n, dtype=np.float64)
    if name == "ramp then flat":
        return np.minimum(t, n / 2) * 0.01 + rng.normal(0.0, 1.0, n)
    if name == "sine":
        return 100.0 + 5.0 * np.sin(t / (n / 12)) + rng.normal(0.0, 1.0, n)
    if name == "walk":
        return 100.0 + np.cumsum(rng.normal(0.0, 0.01, n))
    if name == "steps with spikes":
        x = np.where(t < n / 3, 10.0, np.where(t < 2 * n / 3, 13.0, 11.0)) + rng.normal(0, 1, n)
        x[:: n // 37] += 40.0
        return x
    if name == "noiseless line":  # the moments decline: the direct fits decide
        return 3.0 + 0.5 * t
    if name == "spread":
        return 50.0 + np.where(t < n / 2, 1.0, 4.0) * rng.normal(0.0, 1.0, n)
    raise AssertionError(name)


SHAPES = ["ramp then flat", "sine", "walk", "steps with spikes", "noiseless line", "spread"]


def _same(a: list[ChangeKind], b: list[ChangeKind]) -> bool:
    """Equal to the last bit (repr keeps every digit; NaN equals NaN)."""
    return [repr(k.model_dump()) for k in a] == [repr(k.model_dump()) for k in b]


def _plain_classify(
    x: np.ndarray, changepoints: list[int], significance: float, drop: bool
) -> list[ChangeKind]:
    """The drop loop as first written: one ``_evidence`` per window, a Python scan per round."""
    cuts = sorted(c for c in changepoints if 0 < c < x.size)
    outliers = change_kind._outliers_near(x, cuts, min(DEFAULT_WINDOW, max(x.size // 5, 2)))

    def around(i: int) -> change_kind._Evidence:
        b = cuts[i - 1] if i else 0
        e = cuts[i + 1] if i + 1 < len(cuts) else x.size
        c = cuts[i]
        return change_kind._evidence(
            x, max(b, c - EVIDENCE_REACH), c, min(e, c + EVIDENCE_REACH), outliers
        )

    found = [around(i) for i in range(len(cuts))]
    dropped: list[ChangeKind] = []
    while True:
        level = significance / max(len(cuts), 1)
        none = [i for i, e in enumerate(found) if change_kind._kind_of(e, level)[0] == "none"]
        if not none:
            kinds = [change_kind._decide(e, level) for e in found]
            return kinds if drop else sorted([*kinds, *dropped], key=lambda k: k.index)
        worst = max(none, key=lambda i: found[i].p_any)
        dropped.append(change_kind._decide(found[worst], level))
        del cuts[worst], found[worst]
        for i in range(max(worst - 1, 0), min(worst + 1, len(cuts))):
            found[i] = around(i)


@pytest.mark.parametrize("name", SHAPES)
@pytest.mark.parametrize("drop", [True, False])
def test_classify_changes_matches_the_plain_loop(name: str, drop: bool) -> None:
    rng = np.random.default_rng(SHAPES.index(name))
    n = 12_000
    x = _series(name, n, rng)
    # a staircase of cuts (most go), two cuts two readings apart (sides too short for the
    # moments) and one at the very start
    cuts = [*range(300, n, 300), 5_001, 5_003, 2]
    for significance in (change_kind.DEFAULT_SIGNIFICANCE, 0.05):
        fast = change_kind.classify_changes(x, cuts, significance, drop=drop)
        plain = _plain_classify(x, cuts, significance, drop)
        assert _same(fast, plain), name
        # the drop loop ran rounds (or, without drop, kept every cut)
        assert len(fast) < len(cuts) if drop else len(fast) == len(cuts)


def test_evidence_many_is_each_evidence() -> None:
    rng = np.random.default_rng(4)
    n = 9_000
    checked = 0
    for name in SHAPES:
        x = _series(name, n, rng)
        outliers = change_kind._outliers_near(x, [n // 2], DEFAULT_WINDOW)
        keys = [(0, n // 2, n), (100, 103, 5_000), (100, 102, 104), (4_000, 4_500, 8_999)]
        keys += [(b, b + 700, b + 1_900) for b in range(0, n - 2_000, 613)]
        many = change_kind._evidence_many(x, keys, outliers)
        for key, got in zip(keys, many, strict=True):
            assert repr(got) == repr(change_kind._evidence(x, *key, outliers)), (name, key)
            checked += 1
    assert checked == len(SHAPES) * len(keys)


def test_moment_fits_many_is_each_moment_fits() -> None:
    """Windows of every sort in one batch: noisy, noiseless (declined), one side too short,
    and one whose equations are singular (all readings at one time)."""
    rng = np.random.default_rng(9)
    windows = []
    for n, k in [(40, 20), (777, 5), (6_000, 3_100), (10, 2), (300, 150), (64, 60)]:
        t = np.arange(n, dtype=np.float64) - k
        noisy, walk = rng.normal(5.0, 1.0, n) + 0.01 * t, np.cumsum(rng.normal(size=n))
        for y in (noisy, 2.0 + 0.25 * t, walk):
            rounding = n * (64 * np.finfo(np.float64).eps * float(np.max(np.abs(y)))) ** 2
            windows.append((y, t, k, rounding))
    windows.append((rng.normal(size=8), np.zeros(8), 4, 0.0))
    many = moment_fits_many(windows)
    declined = 0
    for window, got in zip(windows, many, strict=True):
        want = moment_fits(*window)
        assert repr(got) == repr(want), window[2]
        declined += want is None
    assert 0 < declined < len(windows)


def test_first_largest_is_pythons_max() -> None:
    rng = np.random.default_rng(3)
    choices = np.array([0.0, 1e-9, 0.5, 0.5, 1.0, np.nan, np.inf])
    for _ in range(300):
        values = rng.choice(choices, size=int(rng.integers(1, 9)))
        among = rng.random(values.size) < 0.6
        if not among.any():
            continue
        want = max(np.flatnonzero(among).tolist(), key=lambda i: float(values[i]))
        assert change_kind._first_largest(values, among) == want


def _plain_outliers_near(x: np.ndarray, cuts: list[int], window: int) -> np.ndarray:
    """``_outliers_near`` as first written: every stretch ranked whole."""
    mask = np.zeros(x.size, dtype=bool)
    for c in sorted(cuts):
        lo, hi = max(c - EVIDENCE_REACH, 0), min(c + EVIDENCE_REACH, x.size)
        a, b = max(lo - (window - 1), 0), min(hi + window - 1, x.size)
        mask[lo:hi] |= window_outliers(x[a:b], window, rolling=True)[lo - a : hi - a]
    return mask


def _long_series(name: str, rng: np.random.Generator) -> np.ndarray:
    n = 70_000
    t = np.arange(n, dtype=np.float64)
    if name == "noise with spikes":
        x = rng.normal(100.0, 1.0, n)
        x[rng.integers(0, n, 300)] += rng.choice([-9.0, 9.0, 40.0], 300)
        return x
    if name == "steps and spikes":
        x = np.where(t < 30_000, 5.0, 9.0) + rng.normal(0.0, 0.5, n)
        x[::997] -= 12.0
        return x
    if name == "walk":
        return 100.0 + np.cumsum(rng.normal(0.0, 0.01, n))
    if name == "ties":
        return rng.integers(0, 4, n).astype(np.float64)
    if name == "heavy tails":
        return 100.0 + rng.standard_cauchy(n)
    raise AssertionError(name)


@pytest.mark.parametrize(
    "name", ["noise with spikes", "steps and spikes", "walk", "ties", "heavy tails"]
)
@pytest.mark.parametrize("cells", [0, 1 << 40])
def test_screened_outliers_are_the_ranked_ones(
    name: str, cells: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One change point (a stretch shorter than ROLLING_MIN: numpy's arithmetic) and change
    points all along (one long stretch: pandas'), both as the stretches ranked whole, with the
    doubtful readings ranked by running order statistics and by partitioned windows."""
    monkeypatch.setattr(outlier_screen, "PARTITION_CELLS", cells)
    rng = np.random.default_rng(len(name))
    x = _long_series(name, rng)
    for cuts in ([40_000], list(range(1_000, x.size, 1_500))):
        fast = change_kind._outliers_near(x, cuts, DEFAULT_WINDOW)
        assert np.array_equal(fast, _plain_outliers_near(x, cuts, DEFAULT_WINDOW)), name


def test_the_screen_clears_only_readings_no_window_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    for name in ["noise with spikes", "steps and spikes", "walk", "ties", "heavy tails"]:
        x = _long_series(name, rng)
        sure = certified(x, DEFAULT_WINDOW)
        with monkeypatch.context() as patch:  # the blocks' extremes gathered a few at a time
            patch.setattr(outlier_screen, "STARTS_AT_ONCE", 97)
            assert np.array_equal(certified(x, DEFAULT_WINDOW), sure), name
        flagged = window_outliers(x, DEFAULT_WINDOW)
        assert not (sure & flagged).any(), name
        if name in ("noise with spikes", "ties"):  # most readings are cleared without ranks
            assert sure.mean() > 0.95 and flagged.any() <= (~sure).any(), name


def test_window_is_its_first_form() -> None:
    """``_around`` and ``_window`` against the expressions they replaced: times from an
    arange shifted afterwards, the split by searchsorted, max |y| through np.abs (NaN too)."""
    rng = np.random.default_rng(6)
    x = rng.normal(0.0, 3.0, 20_000)  # windows within EVIDENCE_REACH of the change and wider
    x[1_500] = np.nan
    for _ in range(300):
        begin, index, end = np.sort(rng.choice(x.size, 3, replace=False)).tolist()
        mask = rng.random(x.size) < rng.choice([0.0, 0.01, 0.5])
        y, t, k, rounding = change_kind._window(x, begin, index, end, mask)
        t0 = np.arange(begin, end, dtype=np.float64) - index
        keep = ~mask[begin:end]
        if (
            mask[begin:end].any()
            and keep[: index - begin].sum() >= 3 <= keep[index - begin :].sum()
        ):
            t0 = t0[keep]
        assert np.array_equal(t, t0) and k == int(np.searchsorted(t0, 0.0))
        want = y.size * (64 * np.finfo(np.float64).eps * float(np.max(np.abs(y), initial=0.0))) ** 2
        assert repr(float(rounding)) == repr(float(want))


def test_the_drops_guessed_ahead_are_the_ones_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ramp cut into a staircase: the windows computed ahead are the ones the next rounds
    ask for (few calls, hardly more windows than without guessing), and the kinds are the
    same either way."""
    rng = np.random.default_rng(2)
    x = np.concatenate([np.linspace(0.0, 60.0, 30_000), np.full(10_000, 60.0)])
    x += rng.normal(0.0, 1.0, x.size)
    cuts = list(range(150, 30_000, 150))
    counts: dict[int, tuple[int, int, list[ChangeKind]]] = {}
    real = change_kind._evidence_many
    for lookahead in (0, change_kind.LOOKAHEAD):
        calls: list[int] = []
        monkeypatch.setattr(change_kind, "LOOKAHEAD", lookahead)
        monkeypatch.setattr(
            change_kind,
            "_evidence_many",
            lambda v, keys, o, calls=calls: (calls.append(len(keys)), real(v, keys, o))[1],
        )
        kinds = change_kind.classify_changes(x, cuts)
        counts[lookahead] = (len(calls), sum(calls), kinds)
    (plain_calls, plain_windows, plain), (calls_ahead, windows_ahead, ahead) = counts.values()
    assert _same(plain, ahead) and len(plain) < len(cuts) // 4
    assert plain_calls > len(cuts) // 2 and calls_ahead < plain_calls // 2
    assert windows_ahead <= 1.2 * plain_windows
