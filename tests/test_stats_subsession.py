"""Subsession analysis against hand-computed cases, exact AR(1) algebra and its own definition."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import toeplitz
from scipy.signal import lfilter

from pilot_sys.errors import InsufficientData
from pilot_sys.stats import subsession as ss


def ar1(n: int, phi: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return lfilter([1.0], [1.0, -phi], rng.standard_normal(n))


def test_lag1_hand_computed() -> None:
    # x = 1,2,3,4: deviations -1.5,-0.5,0.5,1.5; num = 0.75-0.25+0.75 = 1.25; den = 5
    assert ss.lag1_autocorrelation(np.array([1.0, 2, 3, 4])) == pytest.approx(0.25)
    assert ss.lag1_autocorrelation(np.array([1.0, -1, 1, -1])) == pytest.approx(-0.75)
    assert ss.lag1_autocorrelation(np.full(5, 3.0)) == 0.0  # no variance, no correlation
    rows = np.array([[1.0, 2, 3, 4], [1.0, -1, 1, -1]])
    np.testing.assert_allclose(ss.lag1_autocorrelation(rows), [0.25, -0.75])


def test_tail_is_dropped_from_the_start() -> None:
    x = np.arange(10.0)  # q = 3: k = 3, the oldest sample (0) is dropped
    np.testing.assert_allclose(ss.subsession_means(x, 3), [2.0, 5.0, 8.0])
    with pytest.raises(InsufficientData):
        ss.subsession_means(x, 11)


@pytest.mark.parametrize("phi", [0.3, 0.8, 0.95])
@pytest.mark.parametrize("q", [1, 4, 25])
def test_ar1_subsession_autocorrelation_matches_the_covariance_matrix(phi: float, q: int) -> None:
    # exact: the covariance of two adjacent q-means from the AR(1) Toeplitz covariance matrix
    cov = toeplitz(phi ** np.arange(2 * q)) / (1 - phi**2)
    w1 = np.r_[np.full(q, 1 / q), np.zeros(q)]
    w2 = np.r_[np.zeros(q), np.full(q, 1 / q)]
    exact = (w1 @ cov @ w2) / (w1 @ cov @ w1)
    assert float(ss.ar1_subsession_autocorrelation(phi, q)) == pytest.approx(exact, rel=1e-10)


def test_ar1_min_subsession_size_is_the_smallest() -> None:
    for phi in (0.0, 0.5, 0.9, 0.99):
        q = ss.ar1_min_subsession_size(phi, 0.1)
        assert ss.ar1_subsession_autocorrelation(phi, q) <= 0.1
        assert q == 1 or ss.ar1_subsession_autocorrelation(phi, q - 1) > 0.1


def test_integrated_autocorrelation_time_of_ar1() -> None:
    # tau = (1 + phi) / (1 - phi): 1 for white noise, 9 for phi = 0.8
    x = np.stack([ar1(20000, 0.0, 1), ar1(20000, 0.8, 2)])
    tau, gamma0 = ss.integrated_autocorrelation_time(x)
    assert tau[0] == pytest.approx(1.0, abs=0.1)
    assert tau[1] == pytest.approx(9.0, rel=0.15)
    assert gamma0[1] == pytest.approx(1 / (1 - 0.64), rel=0.1)


def direct_autocovariances(d: np.ndarray, lags: int) -> np.ndarray:
    """sum_t d_t d_{t+h} / n by one dot product per lag: the definition."""
    return np.array([d[: d.size - h] @ d[h:] for h in range(lags)]) / d.size


@pytest.mark.parametrize("n", [1000, 4099, 70001])
def test_product_and_chunked_autocovariances_match_the_definition(n: int) -> None:
    d = ar1(n, 0.7, n) + np.linspace(0.0, 2.0, n)
    d -= d.mean()
    np.testing.assert_allclose(
        ss._product_autocovariances(d, 32), direct_autocovariances(d, 32), rtol=1e-12, atol=0
    )
    for lags in (16, 512):
        np.testing.assert_allclose(
            ss._chunked_autocovariances(d, lags),
            direct_autocovariances(d, lags),
            rtol=0,
            atol=1e-13 * float(d @ d) / n,
        )


def test_fast_fft_length_is_the_smallest_5_smooth_length() -> None:
    def smooth(m: int) -> bool:
        for p in (2, 3, 5):
            while m % p == 0:
                m //= p
        return m == 1

    for n in [*range(1, 3000), 2**20 + 1, 1_000_000 + 2**19 - 1, 1_999_999]:
        want = next(m for m in itertools.count(n) if smooth(m))
        assert ss.fast_fft_length(n) == want, n


@pytest.mark.parametrize("n", [65, 1000, 4097])
def test_fft_autocovariances_match_the_definition(n: int) -> None:
    rows = np.stack([ar1(n, 0.7, n) + np.linspace(0.0, 2.0, n), ar1(n, 0.0, n + 1)])
    rows -= rows.mean(axis=1, keepdims=True)
    got = ss._fft_autocovariances(rows)
    for d, row in zip(rows, got, strict=True):
        np.testing.assert_allclose(
            row, direct_autocovariances(d, n), rtol=0, atol=1e-13 * float(d @ d) / n
        )


@pytest.mark.parametrize("n", [2**16 + 3, 3 * 2**16])
def test_a_series_of_few_chunks_is_transformed_whole(n: int) -> None:
    """Up to _WHOLE_CHUNKS chunks, one padded transform; beyond, chunk by chunk: both the
    definition's autocovariances (checked on the lags at the ends of the range)."""
    d = ar1(n, 0.9, 7) + np.linspace(0.0, 3.0, n)
    d -= d.mean()
    for lags in (n // 3, n // ss._WHOLE_CHUNKS - 1):
        got = ss._chunked_autocovariances(d, lags)
        assert got.shape == (lags,)
        some = [*range(8), *range(lags - 8, lags)]
        want = np.array([d[: n - h] @ d[h:] for h in some]) / n
        np.testing.assert_allclose(got[some], want, rtol=0, atol=1e-13 * float(d @ d) / n)


@pytest.mark.parametrize(
    "kind", ["white", "ar1", "ar1_strong", "trend", "walk", "constant", "alternating"]
)
def test_staged_autocorrelation_time_matches_one_fft(kind: str) -> None:
    """A long series takes its first lags from products and chunked FFTs (each stage stops the
    sum only where it ends); the answer is the one FFT of the whole series gives, to rounding."""
    n = 70_001
    assert n >= ss._STAGED_MIN_LENGTH
    x = {
        "white": ar1(n, 0.0, 1),
        "ar1": ar1(n, 0.6, 2),  # Geyer's sum ends within the first 16 lags
        "ar1_strong": ar1(n, 0.995, 3),  # ... beyond them: the chunked FFT
        "trend": ar1(n, 0.0, 4) + np.linspace(0.0, 5.0, n),  # beyond every chunk: one FFT
        "walk": np.cumsum(ar1(n, 0.0, 5)),
        "constant": np.full(n, 2.5),
        "alternating": np.where(np.arange(n) % 2 == 0, 1.0, -1.0) + 0.01 * ar1(n, 0.0, 6),
    }[kind]
    tau, gamma0 = ss.integrated_autocorrelation_time(x)
    want_tau, want_gamma0 = ss._geyer_sum(ss._fft_autocovariances(x - x.mean()), n)
    assert float(tau) == pytest.approx(float(want_tau), rel=1e-12)
    assert float(gamma0) == pytest.approx(float(want_gamma0), rel=1e-12, abs=1e-300)
    # search passes its series as a row of a 2-D array: the same staged path, row by row (the
    # reversed series has the same autocovariances)
    rows = ss.integrated_autocorrelation_time(np.stack([x, x[::-1]]))
    assert rows[0][0] == float(tau) and rows[1][0] == float(gamma0)
    np.testing.assert_allclose(rows[0], float(tau), rtol=1e-12)


def test_white_noise_needs_no_merging_and_ar1_does() -> None:
    assert ss.analyze(ar1(2000, 0.0, 3)).q <= 2
    r = ss.analyze(ar1(5000, 0.8, 4))
    assert r.q >= ss.ar1_min_subsession_size(0.8, 0.1) * 0.5
    assert r.n_subsessions == 5000 // r.q and r.tail_dropped == 5000 - r.q * r.n_subsessions
    assert abs(r.autocorrelation) <= 0.1


def test_too_correlated_series_is_refused() -> None:
    with pytest.raises(InsufficientData, match="too few effective samples"):
        ss.analyze(ar1(200, 0.95, 5))
    with pytest.raises(InsufficientData):
        ss.analyze(np.arange(5.0))


def test_effective_sample_rule_counts_at_the_point_estimate() -> None:
    # The rule is n (1 - phi) / (1 + phi) >= 50 at the bias-corrected lag-1 phi (not at its upper
    # bound). Hand values: 93 * 0.7 / 1.3 = 50.08 passes, 92 * 0.7 / 1.3 = 49.54 does not;
    # a negative phi counts as independence, not as a bonus.
    assert float(ss.ar1_effective_size(93, 0.3)) == pytest.approx(50.0769, abs=1e-4)
    assert float(ss.ar1_effective_size(92, 0.3)) == pytest.approx(49.5385, abs=1e-4)
    assert float(ss.ar1_effective_size(60, -0.5)) == 60.0
    # AR(1) with phi = 0.3, n = 100 (this seed estimates phi = 0.29): the point estimate gives ~55
    # effective samples, the 95% upper bound of phi would have given ~38 and refused (the rule
    # before 2026-11-21); the interval is reported.
    x = ar1(100, 0.3, 13)
    phi = float(ss.bias_corrected_lag1(ss.lag1_autocorrelation(x), x.size))
    upper = float(ss.lag1_upper_bound(x))
    assert ss.ar1_effective_size(100, phi) >= 50 > ss.ar1_effective_size(100, upper)
    assert ss.analyze(x).n_subsessions >= ss.MIN_SUBSESSIONS


def test_batch_search_equals_one_by_one() -> None:
    x = np.stack([ar1(600, phi, s) for s, phi in enumerate([0.0, 0.4, 0.7, 0.9])])
    batch = ss.search(x)
    for i in range(4):
        if batch.q[i] == 0:
            with pytest.raises(InsufficientData):
                ss.analyze(x[i])
        else:
            assert ss.analyze(x[i]).q == batch.q[i]


@settings(max_examples=40, deadline=None)
@given(
    phi=st.floats(-0.5, 0.9),
    n=st.integers(100, 600),
    seed=st.integers(0, 2**32 - 1),
)
def test_q_found_is_the_smallest_that_passes(phi: float, n: int, seed: int) -> None:
    x = ar1(n, phi, seed)
    batch = ss.search(x)
    q = int(batch.q)
    if q == 0:
        assert not any(ss.passes(x, c) for c in range(1, n // ss.MIN_SUBSESSIONS + 1))
    else:
        assert ss.passes(x, q)
        assert not any(ss.passes(x, c) for c in range(1, q))
