"""Steady-state detection on real JMH forks against the published labels (issue 18).

Development set: ``../shared/data/jmh-steady-dev`` (117 benchmarks x 10 forks x 3,000
iterations, labels of Traini et al. 2022; see its README). For every fork each method answers
``s`` in the labels' convention (index of the last iteration before the steady segment, 0 =
steady from the start, -1 = no steady state; a fork is steady only if s <= 2499), and the README's
metrics are printed beside its anchors, today's method and the trivial answers.

Methods with parameters are tuned by benchmark-wise cross-validation: the benchmarks are split
into folds, the parameters that score best on the other folds answer for each fold's forks, and
the pooled held-out answers are scored. That is the number to expect on other benchmarks; the
in-sample best (tuned on all 117) is printed only as a ceiling.

    nice -n 10 python3 benchmarks/jmh_steady.py                      # every method
    nice -n 10 python3 benchmarks/jmh_steady.py --methods dual-gate,segments --workers 2
    nice -n 10 python3 benchmarks/jmh_steady.py --methods default,crops --each --breakdown
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import pickle
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_DATA = ROOT.parent.parent / "shared" / "data" / "jmh-steady-dev"
if not DEFAULT_DATA.is_dir():
    DEFAULT_DATA = Path("/work/shared/data/jmh-steady-dev")
DEFAULT_CACHE = Path("/work/data-cache/jmh-steady")
LAST_STEADY_S = 2499  # the study: steady only with at least 500 steady iterations of 3,000
NEAR = 50

# Held-out anchors from the dataset README: share within 50 iterations of s on forks the study
# calls steady.
ANCHORS = {
    "JMH warm-up settings of the benchmarks": 0.29,
    "dynamic reconfiguration, CV (Laaber et al. 2020)": 0.19,
    "dynamic reconfiguration, RCIW": 0.10,
    "dynamic reconfiguration, KLD": 0.19,
    "answering 0 every time (held-out set)": 0.53,
}

Params = tuple[tuple[str, object], ...]


def to_label(start: int | None, n: int) -> int:
    """Our first steady index -> the labels' s (last iteration before the steady segment)."""
    if start is None:
        return -1
    s = max(int(start) - 1, 0)
    return s if s <= LAST_STEADY_S * n // 3000 else -1


# ---------------------------------------------------------------------------------------------
# methods: each family answers one fork for every parameter set of its grid at once, so work
# shared by the grid (the segmentation) is done once.


def _dual_gate(x: np.ndarray, grid: list[Params]) -> list[int]:
    from pilot_sys.stats.steady import detect_steady_state

    out = []
    for params in grid:
        r = detect_steady_state(x, method="dual-gate", **dict(params))
        out.append(to_label(r.steady_state_start, x.size))
    return out


def _default(x: np.ndarray, grid: list[Params]) -> list[int]:
    """The labels' question is whether a fork *ends* in a steady state (the study walks back
    from the last iteration): a model whose steady state changed later (its steady part ends
    before the series does, and ``steady`` reports the change) answers "no" to it, as
    ``_edm_stable`` does for EDM."""
    from pilot_sys.stats.steady import detect_steady_state

    out = []
    for params in grid:
        r = detect_steady_state(x, **dict(params))
        ends_steady = r.steady_state_end is None or r.steady_state_end >= x.size
        out.append(to_label(r.steady_state_start if ends_steady else None, x.size))
    return out


def _walk(
    x: np.ndarray, cuts: list[int], grid: list[Params], keys: Iterable[str]
) -> dict[Params, int]:
    """The walk back for every grid point; ``min_steady`` (share of the series that must be
    settled, as in ``settle``) applies when the grid has it."""
    from pilot_sys.stats.settle import DEFAULT_MIN_STEADY, settled_start

    wanted = set(keys)
    out: dict[Params, int] = {}
    for params in grid:
        p = dict(params)
        walk = {k: v for k, v in p.items() if k in wanted}
        start: int | None = settled_start(x, cuts, **walk)
        if x.size - start < float(p.get("min_steady", DEFAULT_MIN_STEADY)) * x.size:
            start = None
        out[params] = to_label(start, x.size)
    return out


def _segments(x: np.ndarray, grid: list[Params]) -> list[int]:
    """``settle`` (the default method) once per penalty; tolerance and min_steady act on its cuts,
    which is what ``settle`` itself does with them."""
    from pilot_sys.stats.settle import settle

    cuts: dict[float, list[int]] = {}
    out = []
    for params in grid:
        p = dict(params)
        if p["penalty"] not in cuts:
            cuts[p["penalty"]] = settle(x, penalty=p["penalty"]).changepoints
        keys = ("tolerance", "confidence")
        out.append(_walk(x, cuts[p["penalty"]], [params], keys)[params])
    return out


def _study(x: np.ndarray, grid: list[Params]) -> list[int]:
    """The labelling procedure, approximated: outliers out, PELT at the CROPS elbow, walk back.

    The elbow of the number of change points against the penalty over CROPS' range
    [4 log n, 1e5 log n] (both axes scaled to [0, 1]) sits where one more change point saves
    less than (1e5 log n) / M in cost, M being the count at the lowest penalty: two PELT runs
    find it, where the full CROPS path takes dozens. ``elbow`` scales that penalty.
    """
    from pilot_sys.stats.outliers import window_outliers
    from pilot_sys.stats.pelt import pelt_meanvar

    keep = ~window_outliers(x)
    y, index = x[keep], np.arange(x.size)[keep]
    log_n = np.log(y.size)
    most = max(len(pelt_meanvar(y, 4 * log_n).changepoints), 1)
    cache: dict[float, list[int]] = {}
    out = []
    for params in grid:
        p = dict(params)
        if p["elbow"] not in cache:
            pen = max(4 * log_n, p["elbow"] * 1e5 * log_n / most)
            cache[p["elbow"]] = [int(index[c]) for c in pelt_meanvar(y, pen).changepoints]
        keys = ("tolerance", "confidence")
        out.append(_walk(x, cache[p["elbow"]], [params], keys)[params])
    return out


def _edm(x: np.ndarray, grid: list[Params]) -> list[int]:
    from pilot_sys.stats.changepoint import detect

    cache: dict[tuple, list[int]] = {}
    out = []
    for params in grid:
        p = dict(params)
        key = (p["significance"],)
        if key not in cache:
            cache[key] = detect(x, significance=p["significance"]).changepoints
        out.append(_walk(x, cache[key], [params], ("tolerance", "confidence"))[params])
    return out


def _normal_start(
    values: np.ndarray, cuts: list[int], tolerance: float = 0.05, confidence: float = 0.95
) -> int:
    """``settled_start`` with the delta-method (normal) interval of the ratio of means
    (``normal_differs``) instead of the bootstrap."""
    from pilot_sys.stats.settle import normal_differs

    bounds = [0, *[int(c) for c in cuts if 0 < c < values.size], values.size]
    last = values[bounds[-2] :]
    for k in range(len(bounds) - 3, -1, -1):
        if normal_differs(last, values[bounds[k] : bounds[k + 1]], tolerance, confidence):
            return bounds[k + 1]
    return 0


def _crops_variants(x: np.ndarray, grid: list[Params]) -> list[int]:
    """The study's procedure reproduced (``settle``'s default) and its variants: the outlier
    guard at the start on or off, the segmentation on either side of the elbow's tie (fewer or
    more change points), and the walk back's interval (bootstrap or normal)."""
    import math

    from pilot_sys.stats.crops import crops, crops_elbow
    from pilot_sys.stats.outliers import guarded_outliers, window_outliers
    from pilot_sys.stats.settle import DEFAULT_MIN_STEADY, settled_start

    out = []
    paths: dict[object, tuple[list, int | None, np.ndarray, float]] = {}
    for params in grid:
        p = dict(params)
        if p["guard"] not in paths:  # one CROPS path per fork and guard: both sides are on it
            mask = guarded_outliers(x, float(x.mean())) if p["guard"] else window_outliers(x)
            index = np.flatnonzero(~mask)
            log_n = math.log(index.size)
            path = crops(x[index], 4 * log_n, 1e5 * log_n)
            paths[p["guard"]] = (path, crops_elbow(path), index, log_n)
        path, elbow, index, log_n = paths[p["guard"]]
        if elbow is None:
            k = max(j for j, step in enumerate(path) if step.penalty <= 15 * log_n or j == 0)
        else:  # the elbow's penalty is a tie between path[elbow - 1] (more) and path[elbow]
            k = elbow if p["side"] == "fewer" else max(elbow - 1, 0)
        # a cut goes right after the last kept reading of a segment, as in ``settle``
        cuts = [int(index[c - 1]) + 1 for c in path[k].changepoints]
        walk = settled_start if p["interval"] == "bootstrap" else _normal_start
        start: int | None = walk(x, cuts)
        if x.size - start < DEFAULT_MIN_STEADY * x.size:
            start = None
        out.append(to_label(start, x.size))
    return out


def _edm_stable(x: np.ndarray, grid: list[Params]) -> list[int]:
    """EDM warm-up removal as ``analyze --warmup edm`` and sessions do it: the steady state is
    the dominant stable segment (longest, > 50 %) when it runs to the end of the fork."""
    from pilot_sys.stats.change_kind import explain_changes
    from pilot_sys.stats.changepoint import detect

    raw = detect(x)
    out = []
    for params in grid:
        result = explain_changes(x, raw)[0] if dict(params)["trend"] else raw
        stable = result.stable_segment
        steady = stable is not None and stable[1] == x.size
        out.append(to_label(stable[0] if steady and stable else None, x.size))
    return out


@dataclass
class Family:
    run: Callable[[np.ndarray, list[Params]], list[int]]
    grid: list[Params]
    note: str
    sources: tuple[str, ...] = field(default_factory=tuple)


def _grid(**axes: list[object]) -> list[Params]:
    names = sorted(axes)
    combos = itertools.product(*(axes[n] for n in names))
    return [tuple(zip(names, values, strict=True)) for values in combos]


TOLERANCES: list[object] = [0.04, 0.05, 0.06]
CROPS_SOURCES = (
    "pilot_sys/stats/pelt.py",
    "pilot_sys/stats/crops.py",
    "pilot_sys/stats/settle.py",
    "pilot_sys/stats/outliers.py",
)
# EDM: the entry point and the modules it is split into (the cached answers depend on all)
EDM_SOURCES = (
    "pilot_sys/stats/changepoint.py",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pilot_sys/stats").glob("_changepoint_*.py")),
)
MIN_STEADY: list[object] = [1 / 6, 0.2, 0.25, 0.3]

FAMILIES: dict[str, Family] = {
    "default": Family(
        _default,
        [()],
        "pilot-sys steady as it is now (its default method)",
        (
            "pilot_sys/stats/steady.py",
            "pilot_sys/stats/crops.py",
            "pilot_sys/stats/pelt.py",
            "pilot_sys/stats/settle.py",
            "pilot_sys/stats/outliers.py",
            "pilot_sys/stats/series_model.py",
            "pilot_sys/stats/change_kind.py",
            *EDM_SOURCES,
        ),
    ),
    "dual-gate": Family(
        _dual_gate,
        [()],
        "today's method on main (dual gate, seed defaults)",
        ("pilot_sys/stats/steady.py",),
    ),
    "segments": Family(
        _segments,
        _grid(penalty=[15, 30, 60], tolerance=TOLERANCES, min_steady=MIN_STEADY),
        "settle(): outliers out, PELT mean+var (penalty x log n), Kalibera walk-back",
        ("pilot_sys/stats/settle.py", "pilot_sys/stats/pelt.py", "pilot_sys/stats/outliers.py"),
    ),
    "study": Family(
        _study,
        _grid(elbow=[0.01, 0.03, 0.05, 0.1], tolerance=TOLERANCES, min_steady=MIN_STEADY),
        "the labels' procedure (outliers, PELT mean+var at the CROPS elbow, Kalibera walk-back)",
        ("pilot_sys/stats/pelt.py", "pilot_sys/stats/settle.py", "pilot_sys/stats/outliers.py"),
    ),
    "crops": Family(
        _crops_variants,
        _grid(guard=[True], side=["fewer", "more"], interval=["bootstrap", "normal"]),
        "the study's procedure reproduced (CROPS path, Kneedle elbow) and its variants",
        CROPS_SOURCES,
    ),
    "crops-noguard": Family(
        _crops_variants,
        _grid(guard=[False], side=["fewer"], interval=["bootstrap"]),
        "the default without the outlier guard at the start (not tuned)",
        CROPS_SOURCES,
    ),
    "edm-stable": Family(
        _edm_stable,
        _grid(trend=[False, True]),
        "EDM dominant stable segment (today's analyze/session warm-up removal), +/- trend step",
        (*EDM_SOURCES, "pilot_sys/stats/change_kind.py"),
    ),
    "edm": Family(
        _edm,
        _grid(significance=[0.01, 0.001], tolerance=[0.05], confidence=[0.95]),
        "pilot-sys EDM change points then Kalibera walk-back",
        (*EDM_SOURCES, "pilot_sys/stats/settle.py"),
    ),
}


# ---------------------------------------------------------------------------------------------
# data, caching and parallel evaluation


def load(data: Path) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Benchmark keys, series (forks, iterations), labels s and the benchmark of every fork."""
    series = np.load(data / "series.npz")
    labels = json.loads((data / "labels.json").read_text())
    keys = sorted(labels)
    xs, ss, groups = [], [], []
    for g, key in enumerate(keys):
        arr = series[key]
        for fork in range(arr.shape[0]):
            xs.append(arr[fork])
            ss.append(labels[key]["steady_state_starts"][fork])
            groups.append(g)
    return keys, np.stack(xs), np.array(ss), np.array(groups)


def _fingerprint(family: str) -> str:
    h = hashlib.sha256(family.encode())
    for rel in FAMILIES[family].sources:
        h.update((ROOT / rel).read_bytes())
    h.update(repr(FAMILIES[family].grid).encode())
    return h.hexdigest()[:16]


def _worker_init() -> None:
    os.nice(10)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def _one(args: tuple[str, np.ndarray]) -> tuple[list[int], float]:
    family, x = args
    fam = FAMILIES[family]
    t0 = time.perf_counter()
    answers = fam.run(x, fam.grid)
    return answers, time.perf_counter() - t0


def evaluate(
    family: str, xs: np.ndarray, workers: int, cache: Path | None
) -> tuple[np.ndarray, float]:
    """Answers (forks x grid) of one family and mean seconds per fork (cached by source hash)."""
    path = None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(xs.tobytes()).hexdigest()[:8]
        path = cache / f"{family}-{_fingerprint(family)}-{digest}.pkl"
        if path.exists():
            return pickle.loads(path.read_bytes())
    jobs = [(family, x) for x in xs]
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers, initializer=_worker_init) as pool:
            results = list(pool.map(_one, jobs, chunksize=8))
    else:
        results = [_one(j) for j in jobs]
    answers = np.array([r[0] for r in results], dtype=np.int64)
    seconds = float(np.mean([r[1] for r in results]))
    if path is not None:
        path.write_bytes(pickle.dumps((answers, seconds)))
    return answers, seconds


# ---------------------------------------------------------------------------------------------
# metrics and cross-validation


def metrics(ours: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """The README's metrics for answers ``ours`` against labels ``truth`` (both in s form)."""
    label_steady, our_steady = truth >= 0, ours >= 0
    rec_steady = float(our_steady[label_steady].mean()) if label_steady.any() else float("nan")
    rec_not = float((~our_steady[~label_steady]).mean()) if (~label_steady).any() else float("nan")
    both = label_steady & our_steady
    dist = np.abs(ours[both] - truth[both])
    return {
        "accuracy": float((label_steady == our_steady).mean()),
        "balanced": (rec_steady + rec_not) / 2.0,
        "recall_steady": rec_steady,
        "recall_not": rec_not,
        "both": int(both.sum()),
        "median_dist": float(np.median(dist)) if dist.size else float("nan"),
        "within50": float((dist <= NEAR).mean()) if dist.size else float("nan"),
        "within50_label": float(
            (both & (np.abs(ours - truth) <= NEAR)).sum() / max(label_steady.sum(), 1)
        ),
    }


def objective(m: dict[str, float]) -> float:
    """What tuning maximises: both targets at once (each as a share of its target)."""
    return min(m["balanced"] / 0.85, m["within50"] / 0.70) + 0.1 * (m["balanced"] + m["within50"])


def folds(groups: np.ndarray, k: int, seed: int) -> list[np.ndarray]:
    """Benchmark-wise folds: every benchmark's forks fall into exactly one fold."""
    rng = np.random.default_rng(seed)
    benchmarks = rng.permutation(np.unique(groups))
    return [np.isin(groups, part) for part in np.array_split(benchmarks, k)]


def cross_validate(
    answers: np.ndarray, truth: np.ndarray, groups: np.ndarray, k: int, seed: int
) -> tuple[np.ndarray, list[int]]:
    """Held-out answers: each fold answered with the grid point that scored best elsewhere."""
    held = np.empty(truth.size, dtype=np.int64)
    chosen = []
    for test in folds(groups, k, seed):
        train = ~test
        scores = [
            objective(metrics(answers[train, j], truth[train])) for j in range(answers.shape[1])
        ]
        j = int(np.argmax(scores))
        chosen.append(j)
        held[test] = answers[test, j]
    return held, chosen


# label classes of the breakdown: (name, which forks)
CLASSES: list[tuple[str, Callable[[np.ndarray], np.ndarray]]] = [
    ("label not steady", lambda s: s < 0),
    ("label s = 0", lambda s: s == 0),
    ("label s in 1-50", lambda s: (s >= 1) & (s <= NEAR)),
    ("label s in 51-500", lambda s: (s > NEAR) & (s <= 500)),
    ("label s > 500", lambda s: s > 500),
    ("all", lambda s: np.ones(s.size, dtype=bool)),
]


def breakdown(ours: np.ndarray, truth: np.ndarray, groups: np.ndarray) -> list[str]:
    """Where the answers disagree with the labels, by label class: a fork is wrong when the two
    differ in class or, both steady, by more than NEAR iterations; "exact" is the same s."""
    wrong = ((ours >= 0) != (truth >= 0)) | ((ours >= 0) & (np.abs(ours - truth) > NEAR))
    lines = [f"  {'class':<20} {'forks':>5} {'wrong':>6} {'share':>6} {'exact':>6}  benchmarks"]
    for name, pick in CLASSES:
        sel = pick(truth)
        n, bad = int(sel.sum()), int((wrong & sel).sum())
        exact = float((ours[sel] == truth[sel]).mean()) if n else float("nan")
        where = len(np.unique(groups[wrong & sel]))
        lines.append(
            f"  {name:<20} {n:>5} {bad:>6} {bad / max(n, 1):>6.1%} {exact:>6.1%}  {where} wrong"
        )
    return lines


def _row(name: str, m: dict[str, float], extra: str = "") -> str:
    return (
        f"{name:<34} {m['accuracy']:>5.3f} {m['balanced']:>6.3f} {m['recall_steady']:>6.3f} "
        f"{m['recall_not']:>6.3f} {m['both']:>5d} {m['median_dist']:>7.1f} {m['within50']:>6.3f} "
        f"{m['within50_label']:>7.3f}  {extra}"
    )


def speed() -> None:
    """Seconds of ``detect_steady_state`` (default method, whole report) at 3,000, 1e5 and 1e7."""
    from pilot_sys.stats.steady import detect_steady_state

    rng = np.random.default_rng(0)
    n = np.arange(100_000)
    cases = {
        "3,000 (dev-set fork 0, d002)": load(DEFAULT_DATA)[1][0],
        "3,000 (dev-set fork 333, heavy-tailed)": load(DEFAULT_DATA)[1][333],
        "1e5 (decaying warm-up, lognormal noise)": 1
        + 3 * np.exp(-n / 3000)
        + rng.lognormal(0, 0.3, n.size),
        "1e7 (issue 15: 500k at 5, then 9.5M at 3)": np.concatenate(
            [rng.normal(5, 0.5, 500_000), rng.normal(3, 0.5, 9_500_000)]
        ),
        "2e4 (issue 15: 15,000 at 5, then 5,000 at 8)": np.concatenate(
            [rng.normal(5, 0.5, 15_000), rng.normal(8, 0.5, 5_000)]
        ),
    }
    print(f"{'series':<46} {'best of 3 (s)':>13}  start")
    for label, x in cases.items():
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            result = detect_steady_state(x)
            times.append(time.perf_counter() - t0)
        print(f"{label:<46} {min(times):>13.3f}  {result.steady_state_start}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="dataset folder (series.npz, labels.json)"
    )
    parser.add_argument("--methods", default=",".join(FAMILIES), help="comma-separated families")
    parser.add_argument(
        "--workers", type=int, default=2, help="processes (at most 2 on this machine)"
    )
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument(
        "--seeds", type=int, default=3, help="repeat the fold split with this many seeds"
    )
    parser.add_argument(
        "--cache", default=str(DEFAULT_CACHE), help="answer cache folder ('' = no cache)"
    )
    parser.add_argument(
        "--limit", type=int, default=0, help="only the first N benchmarks (quick look)"
    )
    parser.add_argument(
        "--each", action="store_true", help="also score every grid point on all forks (in-sample)"
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="also show where each answer set disagrees with the labels, by label class",
    )
    parser.add_argument("--speed", action="store_true", help="instead: time the default method")
    args = parser.parse_args(argv)
    if args.speed:
        speed()
        return 0
    workers = max(1, min(args.workers, 2))
    _keys, xs, truth, groups = load(args.data)
    if args.limit:
        mask = groups < args.limit
        xs, truth, groups = xs[mask], truth[mask], groups[mask]
    cache = Path(args.cache) if args.cache else None
    print(
        f"# jmh steady dev set: {len(np.unique(groups))} benchmarks, {truth.size} forks, "
        f"{(truth < 0).mean():.1%} labelled not steady; "
        f"{args.folds}-fold benchmark-wise CV x {args.seeds} seeds"
    )
    head = (
        f"{'method':<34} {'acc':>5} {'bal':>6} {'rec_s':>6} {'rec_n':>6} {'both':>5} "
        f"{'med|d|':>7} {'w50':>6} {'w50lab':>7}  note"
    )
    print(head)
    print(_row("always 0 (steady from the start)", metrics(np.where(truth >= -1, 0, 0), truth)))
    print(_row("never steady", metrics(np.full(truth.size, -1), truth)))
    for name in [m for m in args.methods.split(",") if m]:
        fam = FAMILIES[name]
        t0 = time.perf_counter()
        answers, per_fork = evaluate(name, xs, workers, cache)
        wall = time.perf_counter() - t0
        timing = f"{1e3 * per_fork:.0f} ms/fork (whole grid), {wall:.0f} s wall"
        if answers.shape[1] == 1:
            print(_row(name, metrics(answers[:, 0], truth), f"{fam.note}; {timing}"))
            if args.breakdown:
                print("\n".join(breakdown(answers[:, 0], truth, groups)))
            continue
        if args.each:
            for j, params in enumerate(fam.grid):
                print(_row(f"{name} #{j} in-sample", metrics(answers[:, j], truth), _fmt(params)))
                if args.breakdown:
                    print("\n".join(breakdown(answers[:, j], truth, groups)))
        cv = []
        for seed in range(args.seeds):
            held, chosen = cross_validate(answers, truth, groups, args.folds, seed)
            cv.append(metrics(held, truth))
            counts = Counter(_fmt(fam.grid[j]) for j in chosen)
            picks = ", ".join(f"{p} ({c}/{len(chosen)})" for p, c in sorted(counts.items()))
            print(_row(f"{name} CV seed {seed}", cv[-1], f"picked: {picks}"))
        mean = {k: float(np.mean([m[k] for m in cv])) for k in cv[0]}
        mean["both"] = round(mean["both"])
        print(_row(f"{name} CV mean", mean, f"{fam.note}; {timing}"))
        scores = [objective(metrics(answers[:, j], truth)) for j in range(answers.shape[1])]
        best = int(np.argmax(scores))
        print(
            _row(
                f"{name} in-sample best (ceiling)",
                metrics(answers[:, best], truth),
                _fmt(fam.grid[best]),
            )
        )
    print(
        "\n# anchors (held-out set, share within 50 of s on forks the study calls steady = w50lab)"
    )
    for label, value in ANCHORS.items():
        print(f"  {label:<52} {value:.2f}")
    return 0


def _fmt(params: Params) -> str:
    return " ".join(f"{k}={v}" for k, v in params) or "-"


if __name__ == "__main__":
    raise SystemExit(main())
