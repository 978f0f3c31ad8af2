"""Subsession analysis: merge adjacent correlated samples until their means are nearly
independent.

Why this module is more than the Pilot paper's loop
---------------------------------------------------
The Pilot paper (§III-D) merges every q adjacent samples into one *subsession* mean and raises q
until the lag-1 autocorrelation r of the subsession means is within a limit (0.1), then treats the
k = n // q means as i.i.d. On AR(1) data that covers the true mean only 81-93% of the time at a
nominal 95%. Three things go wrong, and each has a fix here:

1. *r from few subsession means is biased low and noisy.* With k means and an estimated mean,
   E[r] ~ rho - (1 + 3 rho) / k (Marriott & Pope 1954), and its standard error is ~1/sqrt(k).
   Testing the raw r against 0.1 at k = 10 passes by chance at almost any q. We test the
   bias-corrected r~ = r + (1 + 3 r) / k instead.
2. *The search stops at the first q where noise lets r~ through.* Those are exactly the runs whose
   subsession means look calmer than the process is, so their variance is underestimated. The raw
   lag-1 coefficient of all n samples, by contrast, is estimated precisely (SE ~ sqrt((1-phi^2)/n)).
   Under the first-order (AR(1)) model of a stateful system, it predicts the lag-1 correlation of
   q-subsession means in closed form. We require that prediction, computed from a one-sided 95%
   *upper* confidence bound of the raw coefficient, to be within the limit too: the data must show
   with confidence that q is long enough. This floor is also where the search starts, which keeps
   the search O(n) for strongly correlated data.
3. *r within 0.1 is not r = 0.* Residual positive correlation rho between subsession means makes the
   variance of their average (1 + rho) / (1 - rho) times the naive one, and a lag-1 test cannot see
   longer-range dependence at all. So the long-run variance is the largest of three estimates:
   the subsession estimate inflated by (1 + r~+) / (1 - r~+); Geyer's initial monotone sequence
   estimate (integrated autocorrelation time from all lags of the raw series); and the AR(1) value
   gamma_0 (1 + phi) / (1 - phi) at the bias-corrected raw lag-1 phi (>= 0), which is precise
   where the subsession estimate is noisy. Under-estimating is the failure that hides (false
   precision); over-estimating shows up as a slightly wider interval (median +1-10% on AR(1)).

4. *Too few effective samples cannot be rescued by any formula.* With ~10 independent samples'
   worth of data, the runs whose interval looks trustworthy are precisely those whose sample path
   happened to look calm, and they cover far less than nominal. So an interval is reported only
   when the series is worth at least ``MIN_EFFECTIVE_SAMPLES`` (50) independent samples by the
   AR(1) count n (1 - phi) / (1 + phi) at the bias-corrected lag-1 phi, and with at least
   ``MIN_SUBSESSIONS`` (8) subsessions (with fewer, t's quantile grows fast and the lag-1 test
   has no power). Otherwise the caller is told there is no honest interval yet.

   The count uses the point estimate, not the upper bound phi_u that sets the floor of q.
   Counting at phi_u would charge the uncertainty of phi twice: sessions would run much longer
   than the statistics require, for no coverage that the point estimate does not already give
   (``benchmarks/session_oracle.py``, ``benchmarks/ci_coverage.py --sizes``; the figures are in
   benchmarks/results/session.md and stats.md). Near the boundary of the rule, where only a few
   runs report an interval, those few cover less than nominal under *either* count: selection
   by a noisy phi cannot be undone by where the line is drawn, only moved.

The interval then uses Student's t with k - 1 degrees of freedom. ``benchmarks/ci_coverage.py``
measures the whole against the targets of issue 2 (coverage >= 93% of reported intervals in every
cell, report rate >= 95% wherever phi <= 0.8 and n >= 1000, median width <= 1.5x the oracle).

The tail
--------
When q does not divide n, the n - k q samples that do not fill a subsession are dropped from the
*start* of the series (the oldest samples), never from the end: the start is where residual
warm-up lives, and the newest samples are the ones a growing session has just paid for.

All functions work on the last axis, so the benchmark runs thousands of series at once through the
very code that ``pilot-sys analyze`` uses on one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pilot_sys.errors import InsufficientData

DEFAULT_AUTOCORR_LIMIT = 0.1  # the Pilot paper (§III-D): |r| <= 0.1 counts as negligible
MIN_SUBSESSIONS = 8  # fewest subsession means an interval is trusted from (t_7 = 2.36 vs z = 1.96)
PHI_UPPER_Z = 1.645  # one-sided 95% upper bound on the raw lag-1 coefficient for the AR(1) floor
# > 50 for the central limit theorem to take effect (Pilot's documentation on warm-up and
# cool-down detection, after Chen et al., HPCA 2012)
MIN_EFFECTIVE_SAMPLES = 50


def lag1_autocorrelation(x: np.ndarray) -> np.ndarray:
    """Lag-1 autocorrelation along the last axis (the usual estimator, centred on the sample mean).

    A series with zero variance has no correlation to speak of: it returns 0.
    """
    return _centred_lag1(x - x.mean(axis=-1, keepdims=True))


def _centred_lag1(d: np.ndarray) -> np.ndarray:
    """``lag1_autocorrelation`` of series already centred on their mean."""
    num = np.einsum("...i,...i->...", d[..., :-1], d[..., 1:])
    den = np.einsum("...i,...i->...", d, d)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = num / den
    return np.where(den > 0, r, 0.0)


def bias_corrected_lag1(r: np.ndarray | float, k: np.ndarray | int) -> np.ndarray:
    """Undo the first-order bias of the lag-1 estimator from k values: r + (1 + 3 r) / k."""
    r = np.asarray(r, dtype=np.float64)
    return np.clip(r + (1.0 + 3.0 * r) / np.asarray(k), -1.0, 1.0)


def corrected_lag1(x: np.ndarray) -> np.ndarray:
    """The bias-corrected lag-1 autocorrelation of each series on the last axis."""
    return bias_corrected_lag1(lag1_autocorrelation(x), x.shape[-1])


def ar1_subsession_autocorrelation(phi: np.ndarray | float, q: np.ndarray | int) -> np.ndarray:
    """Lag-1 autocorrelation of adjacent q-sample means of an AR(1) process with coefficient phi.

    From the AR(1) autocovariance gamma_h = gamma_0 phi^h:
    q^2 Var(mean)/gamma_0 = q (1+phi)/(1-phi) - 2 phi (1-phi^q)/(1-phi)^2 and
    q^2 Cov(adjacent means)/gamma_0 = phi (1-phi^q)^2/(1-phi)^2. Negative phi is treated as 0
    (alternating series average out within a subsession).
    """
    phi = np.clip(np.asarray(phi, dtype=np.float64), 0.0, 1.0 - 1e-12)
    q = np.asarray(q, dtype=np.float64)
    a = 1.0 - phi**q
    var = q * (1.0 + phi) / (1.0 - phi) - 2.0 * phi * a / (1.0 - phi) ** 2
    cov = phi * a**2 / (1.0 - phi) ** 2
    return cov / var


def lag1_upper_bound(x: np.ndarray, z: float = PHI_UPPER_Z) -> np.ndarray:
    """One-sided upper confidence bound of the raw lag-1 coefficient (bias-corrected, Bartlett
    SE)."""
    return _upper_bound(corrected_lag1(x), x.shape[-1], z)


def _upper_bound(r: np.ndarray, n: int, z: float = PHI_UPPER_Z) -> np.ndarray:
    """``lag1_upper_bound`` from the bias-corrected lag-1 ``r`` of series of length n."""
    return np.minimum(r + z * np.sqrt(np.clip(1.0 - r**2, 0.0, None) / n), 1.0)


def _geyer_sum(acov: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """tau and gamma_0 from autocovariances at lags 0..L-1 (last axis) of series of length n.

    Sums of adjacent-lag pairs are positive and decreasing for any reversible process, so the sum
    stops at the first non-positive pair and is made monotone: the noisy far tail never enters.
    None when every pair that ``acov`` holds is positive and the series has more lags: then the
    sum may go on beyond them.
    """
    gamma0 = acov[..., 0]
    m = min(n // 2, acov.shape[-1] // 2)
    pairs = acov[..., 0 : 2 * m : 2] + acov[..., 1 : 2 * m : 2]
    positive = np.cumprod(pairs > 0, axis=-1).astype(bool)
    if m < n // 2 and positive[..., -1].any():
        return None
    pairs = np.minimum.accumulate(np.where(positive, pairs, np.inf), axis=-1)
    total = np.where(positive, pairs, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (2.0 * total - gamma0) / gamma0
    tau = np.where(gamma0 > 0, np.maximum(tau, 1.0 / n), 1.0)
    return tau, gamma0


# One long series: autocovariances at the first lags from dot products, then at more lags from
# FFTs of overlapping chunks; one FFT of the whole series only when even those do not reach the
# end of Geyer's sum (a trend). Below this length one FFT of the whole series is cheap.
_STAGED_MIN_LENGTH = 1 << 16
_PRODUCT_LAGS = 16
_CHUNK_LAGS = (1 << 14, 1 << 19)
_CHUNK_READINGS = 1 << 20  # readings per FFT call (bounds the temporaries to ~50 MB)
_WHOLE_CHUNKS = 4  # a series of at most this many chunks is transformed whole


def _product_autocovariances(d: np.ndarray, lags: int) -> np.ndarray:
    """sum_t d_t d_{t+h} / n for h < ``lags``, one dot product per lag (einsum's own loop: a
    threaded BLAS call costs more than it saves on a busy machine)."""
    n = d.size
    return np.array([np.einsum("i,i->", d[: n - h], d[h:]) for h in range(lags)]) / n


def fast_fft_length(n: int) -> int:
    """The smallest 5-smooth length (2^a 3^b 5^c) >= n: what ``scipy.fft.next_fast_len(n,
    real=True)`` returns, without importing scipy.fft (~0.1 s) for it."""
    best = 1 << max(n - 1, 0).bit_length()  # the next power of two
    power5 = 1
    while power5 < best:
        length = power5
        while length < best:
            # the smallest power of two times ``length`` that reaches n
            candidate = length << max(0, (-(-n // length) - 1).bit_length())
            best = min(best, candidate)
            length *= 3
        power5 *= 5
    return best


def _chunked_autocovariances(d: np.ndarray, lags: int) -> np.ndarray:
    """sum_t d_t d_{t+h} / n for h < ``lags`` by FFTs of chunks of ``lags`` readings.

    Chunk i (zero-padded to 2 ``lags``) correlated with chunks i and i+1 holds every product
    starting in chunk i at those lags; the transform of chunk i+1 shifted by ``lags`` is its own
    transform times (-1)^f, so one transform per chunk serves both. Cache-sized transforms are
    several times faster than one transform of the whole series
    (benchmarks/results/analyze_speed.md). A series of a few chunks takes one transform of its
    own length plus ``lags`` instead: two transforms where the chunks would take five or more.
    """
    n = d.size
    if n <= _WHOLE_CHUNKS * lags:
        return _padded_autocovariances(d, lags)
    whole = n // lags
    body = d[: whole * lags].reshape(whole, lags)  # a view: the series is not copied
    # the last, partial chunk and one of zeros after it: every chunk has a next one
    rest = np.zeros((2, lags))
    rest[0, : n - whole * lags] = d[whole * lags :]
    sign = np.where(np.arange(lags + 1) % 2 == 0, 1.0, -1.0)
    spectrum = np.zeros(lags + 1, dtype=np.complex128)
    group = max(1, _CHUNK_READINGS // lags)
    for first in range(0, whole + 1, group):  # each group's transforms include the next chunk
        stop = first + group + 1
        rows = body[first:stop] if stop <= whole else np.concatenate([body[first:], rest])
        part = np.fft.rfft(rows[: stop - first], 2 * lags, axis=1)
        spectrum += (np.conj(part[:-1]) * (part[:-1] + sign * part[1:])).sum(axis=0)
    return np.fft.irfft(spectrum, 2 * lags)[:lags] / n


def _padded_autocovariances(d: np.ndarray, lags: int) -> np.ndarray:
    """sum_t d_t d_{t+h} / n for h < ``lags`` from one transform of the series zero-padded to
    n + ``lags`` - 1 readings or more (the circular products then wrap into no lag below
    ``lags``)."""
    n = d.size
    nfft = fast_fft_length(n + lags - 1)
    return _inverse_power(np.fft.rfft(d, nfft), nfft)[:lags] / n


def integrated_autocorrelation_time(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Geyer's initial monotone sequence estimate of tau = 1 + 2 sum_h rho_h, and gamma_0.

    Returns (tau, gamma_0) along the last axis; the long-run variance is tau * gamma_0. Short
    series (and batches of them) take all autocovariances from one FFT per series, O(n log n).
    A long series usually needs only its first few lags before the sum ends, so they come first
    (``_product_autocovariances``, then ``_chunked_autocovariances`` at more lags) and the whole
    series is transformed only when the sum has not ended within 2^19 lags.

    Transforms at 5-smooth lengths (``fast_fft_length``) rather than the next power of two:
    several times faster on a long session's unit readings, with the same autocovariances to
    rounding (benchmarks/results/session.md). numpy.fft (pocketfft, as scipy.fft) rather than
    scipy.fft, whose import costs ~0.1 s more than the transforms of a million readings.
    """
    return _centred_autocorrelation_time(x - x.mean(axis=-1, keepdims=True))


def _centred_autocorrelation_time(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``integrated_autocorrelation_time`` of series already centred on their mean."""
    n = d.shape[-1]
    if n < _STAGED_MIN_LENGTH:
        return _geyer_sum(_fft_autocovariances(d), n)  # type: ignore[return-value]
    rows = d.reshape(-1, n)
    tau, gamma0 = np.empty(rows.shape[0]), np.empty(rows.shape[0])
    for i, row in enumerate(rows):
        first = _product_autocovariances(row, _PRODUCT_LAGS)
        found = _geyer_sum(first, n)
        stages = _CHUNK_LAGS
        if first[-2] + first[-1] > (first[0] + first[1]) / 2:  # barely decaying: a trend
            stages = _CHUNK_LAGS[-1:]
        for lags in stages:
            if found is not None or lags >= n:
                break
            found = _geyer_sum(_chunked_autocovariances(row, lags), n)
        tau[i], gamma0[i] = found if found is not None else _geyer_sum(_fft_autocovariances(row), n)
    return tau.reshape(d.shape[:-1]), gamma0.reshape(d.shape[:-1])


DIRECT_AUTOCOVARIANCE_MAX = 64  # readings up to which the O(n^2) sums beat an FFT


def _fft_autocovariances(d: np.ndarray) -> np.ndarray:
    """All autocovariances sum_t d_t d_{t+h} / n along the last axis, from one FFT per series
    (directly for a series of a few dozen readings)."""
    n = d.shape[-1]
    if n <= DIRECT_AUTOCOVARIANCE_MAX:
        rows = d.reshape(-1, n)
        out = np.stack([np.correlate(row, row, mode="full")[n - 1 :] for row in rows])
        return out.reshape(d.shape) / n
    nfft = fast_fft_length(2 * n - 1)
    return _inverse_power(np.fft.rfft(d, nfft, axis=-1), nfft)[..., :n] / n


def _inverse_power(spectrum: np.ndarray, nfft: int) -> np.ndarray:
    """The inverse transform of |``spectrum``|^2 (the circular autocorrelation), the power
    written over ``spectrum``: a long series allocates no power or complex copy of its own
    (each fresh pages)."""
    power = np.square(spectrum.real)
    power += np.square(spectrum.imag)
    spectrum.real = power
    spectrum.imag = 0.0
    del power
    return np.fft.irfft(spectrum, nfft, axis=-1)


def subsession_means(x: np.ndarray, q: int) -> np.ndarray:
    """Means of consecutive q-sample subsessions, dropping the n mod q oldest samples (see the
    module doc)."""
    n = x.shape[-1]
    k = n // q
    if k < 1:
        raise InsufficientData("samples", f"{n} samples cannot fill one subsession of {q}")
    return x[..., n - k * q :].reshape(*x.shape[:-1], k, q).mean(axis=-1)


@dataclass(frozen=True)
class SubsessionBatch:
    """Per-series results of the vectorised search; q == 0 where no valid size exists."""

    q: np.ndarray
    n_subsessions: np.ndarray
    mean: np.ndarray  # mean of the samples kept (the tail dropped)
    variance: np.ndarray  # variance of one subsession mean, corrected (see module doc)
    autocorrelation: np.ndarray  # bias-corrected lag-1 of the subsession means
    tail_dropped: np.ndarray
    autocorrelation_time: np.ndarray  # Geyer's tau of the raw series, in samples

    @property
    def found(self) -> np.ndarray:
        return self.q > 0


def ar1_effective_size(n: int, phi: np.ndarray | float) -> np.ndarray:
    """n (1 - phi) / (1 + phi): how many independent samples a series of n is worth under AR(1)
    with lag-1 coefficient phi (negative phi counts as independent, never as a bonus)."""
    phi = np.clip(np.asarray(phi, dtype=np.float64), 0.0, 1.0)
    return n * (1.0 - phi) / (1.0 + phi)


def _floor_q(phi_upper: np.ndarray, limit: float, q_max: int) -> np.ndarray:
    """Smallest q whose AR(1)-predicted subsession correlation is within the limit (q_max + 1 if
    none). The q are tried in growing blocks, so a long series with a small floor does not
    evaluate the prediction at every q up to n / 8."""
    floor = np.full(phi_upper.shape, q_max + 1, dtype=np.int64)
    first, size = 1, 1024
    while first <= q_max:
        qs = np.arange(first, min(q_max, first + size - 1) + 1)
        open_rows = floor > q_max
        ok = ar1_subsession_autocorrelation(phi_upper[open_rows, None], qs) <= limit
        floor[open_rows] = np.where(ok.any(axis=-1), qs[ok.argmax(axis=-1)], q_max + 1)
        if not (floor > q_max).any():
            break
        first, size = first + size, 4 * size
    return floor


_FILTER_CELLS = 1 << 20  # subsession means evaluated per call of the grouped filter (~8 MiB)
_FILTER_SLACK = 1e-9  # the filter's r~ and the exact one differ by rounding only (~1e-15)
_FILTER_ONE_BY_ONE = 2048  # from this many subsessions on, q are filtered one at a time
_FILTER_SPREAD = 10  # q filtered together have subsession counts within 1/10 of each other


def _lag1_of_sums(sums: np.ndarray) -> float:
    """Lag-1 autocorrelation of a 1-D series (of subsession sums: it is scale-free, so of their
    means too), as ``lag1_autocorrelation`` computes it up to rounding. Centres ``sums`` in
    place (it is a scratch buffer of the caller)."""
    sums -= sums.mean()
    den = float(np.einsum("i,i->", sums, sums))  # einsum: a BLAS call's thread start costs more
    return float(np.einsum("i,i->", sums[:-1], sums[1:])) / den if den > 0 else 0.0


def _grouped_lag1(
    cs: np.ndarray, n: int, q0: int, q1: int, scratch: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Lag-1 autocorrelations of the subsession means for every q in [q0, q1], and the q.

    Subsession i from the end of q spans [n - q (i + 1), n - q i), so the prefix sums it needs
    are cs[n - q i]; for one i and consecutive q these are evenly spaced, one strided slice per
    i fills a (k + 1, q) grid without an index array (a gather would miss the cache on every
    element). The q's subsession counts differ by at most 1/10, so little of the grid is unused.
    Columns run from q1 down to q0; sums stand for means (the correlation is scale-free).
    ``scratch`` (2 (k + 1) (q1 - q0 + 1) floats) spares the page faults of fresh arrays.
    """
    qs = np.arange(q1, q0 - 1, -1)
    ks = n // qs
    k0 = int(ks[-1])
    cells = (k0 + 1) * qs.size
    if scratch is None or scratch.size < 2 * cells:
        scratch = np.empty(2 * cells)
    grid = scratch[:cells].reshape(k0 + 1, qs.size)
    grid[0] = cs[n]
    for i in range(1, k0 + 1):
        hi = min(q1, n // i)  # the q that still have an i-th boundary: the last columns
        grid[i, q1 - hi :] = cs[n - hi * i : n - q0 * i + 1 : i]
        grid[i, : q1 - hi] = 0.0
    unused = np.arange(k0)[:, None] >= ks[None, :]
    sums = scratch[cells : cells + k0 * qs.size].reshape(k0, qs.size)
    np.subtract(grid[:-1], grid[1:], out=sums)
    sums[unused] = 0.0
    sums -= sums.sum(axis=0) / ks
    sums[unused] = 0.0
    num = np.einsum("ij,ij->j", sums[:-1], sums[1:])
    den = np.einsum("ij,ij->j", sums, sums)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, 0.0)[::-1], qs[::-1]


def _gathered_lag1(cs: np.ndarray, n: int, q0: int, q1: int) -> tuple[np.ndarray, np.ndarray]:
    """Lag-1 autocorrelations of the subsession means for every q in [q0, q1], and the q: the
    boundaries of every q gathered at once into one (q, k) array, each row padded to the first
    q's subsession count (the q's counts are within 2x of each other)."""
    qs = np.arange(q0, q1 + 1)
    ks = n // qs
    k_first = int(ks[0])
    j = np.arange(k_first + 1)
    edges = (n - ks * qs)[:, None] + qs[:, None] * j[None, :]
    edges = np.where(j[None, :] <= ks[:, None], edges, n)
    means = np.diff(cs[edges], axis=1) / qs[:, None]
    valid = j[None, :-1] < ks[:, None]
    mean = np.where(valid, means, 0.0).sum(axis=1) / ks
    d = np.where(valid, means - mean[:, None], 0.0)
    num = np.einsum("ij,ij->i", d[:, :-1], d[:, 1:])
    den = np.einsum("ij,ij->i", d, d)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, 0.0), qs


_GATHER_CELLS = 1 << 18  # subsession means per call of the gathered filter (~2 MiB)
_GROUP_MIN = 256  # fewer q than this share their counts: gather them instead of a grid


def _next_candidate(
    cs: np.ndarray, n: int, start: int, q_max: int, limit: float, scratch: np.ndarray | None = None
) -> int:
    """The smallest q in [start, q_max] whose bias-corrected lag-1 of q-subsession means may be
    within ``limit`` (q_max + 1 if none), for one series given its prefix sums ``cs``.

    Why: with rounds at different levels (or a trend) the passing q can be thousands of readings
    or more, and the search loop's numpy calls per q, repeated over every q, made the engine
    space its analyses many rounds apart on a long session and ``analyze`` slow on a long file.
    A q with many subsessions is filtered alone from a strided view of the prefix sums; many q
    with few subsessions each in a grid of strided slices (``_grouped_lag1``); anything else a
    block of q at a time by one gather (``_gathered_lag1``). ``scratch`` is float64 memory the
    caller no longer needs, reused so that a long series does not take fresh pages for every q.
    It is only a filter: every q it lets through is tested again by the exact code, with a slack
    far above rounding, so ``search`` returns what it returned before."""
    q = start
    buffer = scratch if scratch is not None else np.empty(0)
    while q <= q_max:
        k = n // q
        if k >= _FILTER_ONE_BY_ONE:
            if buffer.size < k:
                buffer = np.empty(k)
            bounds = cs[n - k * q :: q]
            r = _lag1_of_sums(np.subtract(bounds[1:], bounds[:-1], out=buffer[:k]))
            if abs(min(1.0, max(-1.0, r + (1.0 + 3.0 * r) / k))) <= limit + _FILTER_SLACK:
                return q  # (bias_corrected_lag1 in scalars)
            q += 1
            continue
        fewest = k - max(1, k // _FILTER_SPREAD)
        last = min(q_max, n // fewest if fewest > 0 else q_max, q + _FILTER_CELLS // (k + 1))
        if last - q + 1 >= _GROUP_MIN:
            cells = 2 * (k + 1) * (last - q + 1)
            if buffer.size < cells:
                buffer = np.empty(cells)
            r, qs = _grouped_lag1(cs, n, q, last, buffer)
        else:
            # at most q sizes per block: their k then stay within 2x of the first's, so
            # padding every row to the first's k at most doubles the work
            block = max(1, min(q, _GATHER_CELLS // (k + 1), q_max - q + 1))
            r, qs = _gathered_lag1(cs, n, q, q + block - 1)
            last = q + block - 1
        hit = np.flatnonzero(np.abs(bias_corrected_lag1(r, n // qs)) <= limit + _FILTER_SLACK)
        if hit.size:
            return int(qs[hit[0]])
        q = last + 1
    return q_max + 1


def _median(rows: np.ndarray) -> np.ndarray:
    """np.median along the rows (kept as a column), bit for bit; one long row is sorted, which
    numpy does faster than its two-element partition."""
    if rows.shape[0] > 1 or rows.shape[1] < 1 << 16:
        return np.median(rows, axis=1, keepdims=True)
    ordered = np.sort(rows[0])
    half = ordered.size // 2
    middle = ordered[half - 1 : half + 1] if ordered.size % 2 == 0 else ordered[half : half + 1]
    return np.array([[np.mean(middle)]])


def search(
    x: np.ndarray,
    limit: float = DEFAULT_AUTOCORR_LIMIT,
    min_subsessions: int = MIN_SUBSESSIONS,
) -> SubsessionBatch:
    """Find, for each series on the last axis, the smallest subsession size q that passes.

    q passes when (a) n // q >= min_subsessions, (b) |r~| <= limit for the bias-corrected lag-1
    autocorrelation r~ of the q-subsession means, (c) the AR(1) prediction from the upper bound
    of the raw lag-1 coefficient is <= limit, and (d) the series holds at least
    MIN_EFFECTIVE_SAMPLES effective samples at the bias-corrected lag-1. See ``passes`` for the
    same test on one q. For one series, ``_next_candidate`` skips the q that cannot pass.
    """
    x = np.asarray(x, dtype=np.float64)
    # Work on (x - median) / max|x - median|: every statistic below is shift/scale equivariant,
    # and values near 1e300 or 1e-300 neither overflow nor underflow when squared.
    raw = x.reshape(-1, x.shape[-1])
    loc = _median(raw)
    x2 = raw - loc  # in place from here: a long series is not copied more than once
    scale = np.maximum(x2.max(axis=1, keepdims=True), -x2.min(axis=1, keepdims=True))  # max |.|
    scale = np.where(scale > 0, scale, 1.0)
    x2 /= scale
    rows, n = x2.shape
    q_max = n // min_subsessions
    q_out = np.zeros(rows, dtype=np.int64)
    k_out = np.zeros(rows, dtype=np.int64)
    mean_out = np.full(rows, np.nan)
    var_out = np.full(rows, np.nan)
    r_out = np.full(rows, np.nan)
    tail_out = np.zeros(rows, dtype=np.int64)
    # Prefix sums make every q cost O(n/q); the whole search over q is O(n log n) per series.
    cs = np.empty((rows, n + 1) if q_max >= 1 else (rows, 0))
    if q_max >= 1:
        cs[:, 0] = 0.0
        np.cumsum(x2, axis=1, out=cs[:, 1:])
    x2 -= x2.mean(axis=-1, keepdims=True)  # centred in place: the search needs only cs now
    tau, gamma0 = _centred_autocorrelation_time(x2)
    lag1 = bias_corrected_lag1(_centred_lag1(x2), n)
    if q_max >= 1:
        phi_upper = _upper_bound(lag1, n)
        phi = np.clip(lag1, 0.0, 1.0 - 1e-12)
        ar1_lrv = gamma0 * (1.0 + phi) / (1.0 - phi)
        floor = _floor_q(phi_upper, limit, q_max)
        pending = (floor <= q_max) & (ar1_effective_size(n, phi) >= MIN_EFFECTIVE_SAMPLES)
        q = int(floor.min()) - 1
        while q < q_max and pending.any():
            q += 1
            # one series (a session's PI): skip q that cannot pass
            if rows == 1:
                q = _next_candidate(cs[0], n, q, q_max, limit, scratch=x2[0])
                if q > q_max:
                    break
            k = n // q
            tail = n - k * q
            if rows == 1:  # cs[tail + q j] for j = 0..k, a view; x2 is scratch by now
                bounds = cs[:, tail::q]
                means = np.subtract(bounds[:, 1:], bounds[:, :-1], out=x2[:, :k])
                means /= q
            else:  # the gathered (column-major) layout fixes the rows' summation order
                means = np.diff(cs[:, tail + q * np.arange(k + 1)], axis=1) / q
            r = corrected_lag1(means)
            ok = pending & (q >= floor) & (np.abs(r) <= limit)
            if ok.any():
                m = means if rows == 1 else means[ok]
                rc = np.clip(r[ok], 0.0, None)
                inflated = m.var(axis=1, ddof=1) * (1.0 + rc) / (1.0 - rc)
                geyer = gamma0[ok] * tau[ok] / q
                q_out[ok], k_out[ok], tail_out[ok] = q, k, tail
                mean_out[ok] = m.mean(axis=1)
                var_out[ok] = np.maximum(np.maximum(inflated, geyer), ar1_lrv[ok] / q)
                r_out[ok] = r[ok]
                pending &= ~ok
    shape = x.shape[:-1]
    loc, scale = loc[:, 0], scale[:, 0]
    return SubsessionBatch(
        q=q_out.reshape(shape),
        n_subsessions=k_out.reshape(shape),
        mean=(loc + scale * mean_out).reshape(shape),
        variance=(scale**2 * var_out).reshape(shape),
        autocorrelation=r_out.reshape(shape),
        tail_dropped=tail_out.reshape(shape),
        autocorrelation_time=tau.reshape(shape),
    )


def passes(
    x: np.ndarray,
    q: int,
    limit: float = DEFAULT_AUTOCORR_LIMIT,
    min_subsessions: int = MIN_SUBSESSIONS,
) -> bool:
    """Whether subsession size q passes the test of ``search`` for the 1-D series x."""
    x = np.asarray(x, dtype=np.float64)
    k = x.shape[-1] // q
    if k < min_subsessions:
        return False
    n = x.shape[-1]
    phi = corrected_lag1(x)
    if ar1_effective_size(n, phi) < MIN_EFFECTIVE_SAMPLES:
        return False
    phi_upper = lag1_upper_bound(x)
    if ar1_subsession_autocorrelation(phi_upper, q) > limit:
        return False
    r = corrected_lag1(subsession_means(x, q))
    return bool(abs(r) <= limit)


@dataclass(frozen=True)
class SubsessionResult:
    """Subsession analysis of one series.

    ``variance`` is the variance of one subsession mean (after the corrections in the module
    doc), so the variance of ``mean`` is ``variance / n_subsessions``: the three numbers Welch's
    test needs to compare against this result later (the Pilot paper, §III-F).
    """

    q: int
    n_subsessions: int
    mean: float
    variance: float
    autocorrelation: float
    tail_dropped: int
    autocorrelation_time: float

    @property
    def effective_sample_size(self) -> float:
        """Samples' worth of independent information: n / tau (Geyer)."""
        return (self.q * self.n_subsessions + self.tail_dropped) / self.autocorrelation_time


def analyze(
    samples: np.ndarray,
    limit: float = DEFAULT_AUTOCORR_LIMIT,
    min_subsessions: int = MIN_SUBSESSIONS,
) -> SubsessionResult:
    """Subsession analysis of a 1-D series; InsufficientData when no subsession size passes."""
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError("subsession.analyze expects a 1-D series")
    n = x.size
    if n < min_subsessions:
        raise InsufficientData(
            "samples", f"{n} samples, subsession analysis needs at least {min_subsessions}"
        )
    batch = search(x, limit, min_subsessions)
    if not batch.found:
        tau = float(batch.autocorrelation_time)
        raise InsufficientData(
            "samples",
            f"too few effective samples: {n} samples with autocorrelation time {tau:.1f} "
            f"(about {n / tau:.0f} independent ones); "
            f"an interval needs at least {MIN_EFFECTIVE_SAMPLES} "
            f"and a subsession size that leaves {min_subsessions} subsessions with "
            f"|lag-1 autocorrelation| <= {limit}",
        )
    return SubsessionResult(
        q=int(batch.q),
        n_subsessions=int(batch.n_subsessions),
        mean=float(batch.mean),
        variance=float(batch.variance),
        autocorrelation=float(batch.autocorrelation),
        tail_dropped=int(batch.tail_dropped),
        autocorrelation_time=float(batch.autocorrelation_time),
    )


def ar1_min_subsession_size(phi: float, limit: float = DEFAULT_AUTOCORR_LIMIT) -> int:
    """Smallest q whose AR(1)-predicted subsession correlation is within the limit.

    The prediction decreases in q, so doubling then bisection finds it in O(log q); used to tell
    a user how many samples a too-short series would need.
    """
    if float(ar1_subsession_autocorrelation(phi, 1)) <= limit:
        return 1
    hi = 2
    while float(ar1_subsession_autocorrelation(phi, hi)) > limit:
        hi *= 2
    lo = hi // 2  # fails at lo, passes at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if float(ar1_subsession_autocorrelation(phi, mid)) <= limit:
            hi = mid
        else:
            lo = mid
    return hi
