"""Change points on real annotated series: the Turing change-point dataset (TCPD), issue 18.

Scores ``pilot-sys changepoints`` (EDM, then change points a straight line explains dropped),
today's EDM alone and the "no change point" answer with the definitions of TCPDBench (van den
Burg and Williams, "An Evaluation of Change Point Detection Algorithms", 2020):

* F1 with a margin of 5 indices: the start of the series counts as a change point in the
  predictions and in every annotation; precision against the union of the annotators' points,
  recall averaged over the annotators; each true point matches at most one prediction.
* Covering: for every annotator, the share of the series each of its segments covers times the
  best Jaccard overlap with a predicted segment, averaged over annotators.

The data are not in the repository: ``--data`` is a folder with ``annotations.json`` and
``<name>/<name>.json`` per series (the layout of alan-turing-institute/TCPD). Only univariate
series are scored; missing values are filled by linear interpolation before detection.

    nice -n 10 python3 benchmarks/changepoint_real.py --data /work/data-cache/tcpd
    nice -n 10 python3 benchmarks/changepoint_real.py --synthetic      # no data: trend/seasonal set
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_DATA = Path("/work/data-cache/tcpd")
MARGIN = 5


# ---------------------------------------------------------------------------------------------
# TCPDBench metrics


def true_positives(
    truth: Iterable[int], predicted: Iterable[int], margin: int = MARGIN
) -> set[int]:
    """True points matched by a prediction within ``margin``, each prediction used at most once."""
    left = set(predicted)
    hits: set[int] = set()
    for tau in sorted(set(truth)):
        near = sorted((abs(tau - x), x) for x in left if abs(tau - x) <= margin)
        if near:
            hits.add(tau)
            left.discard(near[0][1])
    return hits


def f_measure(
    annotations: Mapping[str, Sequence[int]], predicted: Sequence[int], margin: int = MARGIN
) -> float:
    """TCPDBench F1: precision on the union of annotations, recall averaged over annotators."""
    per_user = [set(points) | {0} for points in annotations.values()]
    found = set(predicted) | {0}
    union = set().union(*per_user)
    precision = len(true_positives(union, found, margin)) / len(found)
    recall = float(np.mean([len(true_positives(t, found, margin)) / len(t) for t in per_user]))
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def _partition(points: Iterable[int], n: int) -> list[tuple[int, int]]:
    cuts = sorted({p for p in points if 0 < p < n})
    bounds = [0, *cuts, n]
    return list(itertools.pairwise(bounds))


def _jaccard(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    return inter / (max(a[1], b[1]) - min(a[0], b[0]))


def covering(annotations: Mapping[str, Sequence[int]], predicted: Sequence[int], n: int) -> float:
    """TCPDBench covering of the annotators' partitions by the predicted one, averaged."""
    mine = _partition(predicted, n)
    scores = []
    for points in annotations.values():
        theirs = _partition(points, n)
        scores.append(sum((b - a) * max(_jaccard((a, b), m) for m in mine) for a, b in theirs) / n)
    return float(np.mean(scores))


# ---------------------------------------------------------------------------------------------
# methods


def _zero(x: np.ndarray) -> list[int]:
    return []


def _edm(x: np.ndarray) -> list[int]:
    from pilot_sys.stats.changepoint import default_min_size, detect

    if x.size < 2 * default_min_size(x.size):
        return []
    return list(detect(x).changepoints)


def _pilot(x: np.ndarray) -> list[int]:
    """What ``pilot-sys changepoints`` answers by default."""
    from pilot_sys.stats.change_kind import explain_changes
    from pilot_sys.stats.changepoint import default_min_size, detect

    if x.size < 2 * default_min_size(x.size):
        return []
    result, _ = explain_changes(x, detect(x))
    return list(result.changepoints)


METHODS: dict[str, Callable[[np.ndarray], list[int]]] = {
    "no change point": _zero,
    "EDM (today's changepoints)": _edm,
    "pilot-sys changepoints (EDM + trend)": _pilot,
}


# ---------------------------------------------------------------------------------------------
# data


def load_tcpd(folder: Path) -> list[tuple[str, np.ndarray, dict[str, list[int]]]]:
    """Univariate TCPD series with their annotations, missing values interpolated."""
    annotations = json.loads((folder / "annotations.json").read_text())
    out = []
    for name in sorted(annotations):
        path = folder / name / f"{name}.json"
        if not path.exists():
            continue
        body = json.loads(path.read_text())
        if len(body["series"]) != 1:
            continue
        raw = np.array([np.nan if v is None else float(v) for v in body["series"][0]["raw"]])
        if np.isnan(raw).any():
            idx = np.arange(raw.size)
            good = ~np.isnan(raw)
            raw = np.interp(idx, idx[good], raw[good])
        out.append((name, raw, annotations[name]))
    return out


def synthetic(seed: int = 0) -> list[tuple[str, np.ndarray, dict[str, list[int]]]]:
    """Trending and seasonal series with known change points (one 'annotator': the truth)."""
    rng = np.random.default_rng(seed)
    t = np.arange(300.0)
    sets = []
    for k in range(5):
        noise = rng.normal(0, 1, 300)
        sets += [
            (f"trend-{k}", 0.05 * t + noise, {"truth": []}),
            (f"seasonal-{k}", 5 * np.sin(2 * np.pi * t / 12) + noise, {"truth": []}),
            (
                f"trend+seasonal-{k}",
                0.03 * t + 3 * np.sin(2 * np.pi * t / 12) + noise,
                {"truth": []},
            ),
            (f"trend+step-{k}", 0.03 * t + 6 * (t >= 150) + noise, {"truth": [150]}),
            (f"kink-{k}", np.where(t < 120, 0.0, 0.1 * (t - 120)) + noise, {"truth": [120]}),
            (f"short-{k}", rng.normal(0, 1, 12 + k), {"truth": []}),
        ]
    return sets


def synthetic_accuracy(reps: int, n: int = 2000, seed: int = 0) -> None:
    """The scenarios of ``changepoint_accuracy.py`` scored the same way, for EDM with and without
    the trend step (the synthetic F1 that must stay >= 0.85)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import changepoint_accuracy as acc

    margin = max(10, n // 100)
    runs = {"EDM": _edm, "EDM + trend": _pilot}
    totals = {name: [0, 0, 0] for name in runs}
    print(
        f"# synthetic scenarios of changepoint_accuracy.py: n = {n}, {reps} series each, "
        f"margin {margin}"
    )
    print(f"{'scenario':<24} {'method':<12} {'TP':>5} {'FP':>5} {'true':>5}")
    for s_index, (label, make) in enumerate(acc.SCENARIOS.items()):
        truths = [make(np.random.default_rng([seed, s_index, r]), n) for r in range(reps)]
        for name, run in runs.items():
            tp = fp = 0
            for truth in truths:
                a, b = acc.score(run(truth.values), truth, margin)
                tp, fp = tp + a, fp + b
            true = sum(len(t.changepoints) for t in truths)
            print(f"{label:<24} {name:<12} {tp:>5} {fp:>5} {true:>5}")
            if label not in acc.EDGE_SCENARIOS:
                for i, v in enumerate((tp, fp, true)):
                    totals[name][i] += v
    for name, (tp, fp, true) in totals.items():
        precision, recall = tp / max(tp + fp, 1), tp / true
        print(
            f"ALL but short edges      {name:<12} "
            f"F1 {2 * precision * recall / (precision + recall):.3f}"
        )


def trending_or_seasonal(x: np.ndarray) -> str:
    """'trend' when the rank correlation with time is at least 0.5, 'seasonal' when the first
    differences correlate at lag 12 (monthly data) by at least 0.3, else '' - a fixed rule, so
    that the subset is not picked by hand."""
    from scipy.stats import spearmanr

    kinds = []
    if x.size >= 10 and abs(spearmanr(np.arange(x.size), x).statistic) >= 0.5:
        kinds.append("trend")
    d = np.diff(x)
    if d.size > 36 and np.std(d) > 0:
        lagged = np.corrcoef(d[12:], d[:-12])[0, 1]
        if lagged >= 0.3:
            kinds.append("seasonal")
    return "+".join(kinds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="TCPD folder (annotations.json, <name>/<name>.json)",
    )
    parser.add_argument(
        "--synthetic", action="store_true", help="score the synthetic trend/seasonal set instead"
    )
    parser.add_argument("--per-series", action="store_true", help="print every series' scores")
    parser.add_argument(
        "--accuracy",
        type=int,
        metavar="REPS",
        default=0,
        help="instead: the synthetic scenarios of changepoint_accuracy.py, REPS series each",
    )
    args = parser.parse_args(argv)
    if args.accuracy:
        synthetic_accuracy(args.accuracy)
        return 0
    if args.synthetic:
        data, label = synthetic(), "synthetic trend/seasonal set"
    else:
        if not (args.data / "annotations.json").exists():
            print(
                f"{args.data}: no annotations.json; fetch TCPD there or use --synthetic",
                file=sys.stderr,
            )
            return 2
        data, label = load_tcpd(args.data), f"TCPD univariate series in {args.data}"
    lengths = [x.size for _, x, _ in data]
    print(
        f"# {label}: {len(data)} series, {min(lengths)} to {max(lengths)} points; margin {MARGIN}"
    )
    print(f"{'method':<40} {'F1':>6} {'cover':>6} {'cps/series':>10} {'seconds':>8}")
    per_series: dict[str, list[str]] = {}
    shapes = {series: trending_or_seasonal(x) for series, x, _ in data}
    subset = [series for series, shape in shapes.items() if shape]
    print(f"# trending or seasonal by the fixed rule: {len(subset)} series")
    for name, method in METHODS.items():
        f1, cov, count = [], [], []
        t0 = time.perf_counter()
        for series, x, notes in data:
            found = method(x)
            f1.append(f_measure(notes, found))
            cov.append(covering(notes, found, x.size))
            count.append(len(found))
            per_series.setdefault(series, []).append(f"{f1[-1]:.2f}/{cov[-1]:.2f}/{len(found)}")
        seconds = time.perf_counter() - t0
        picked = [i for i, (series, _, _) in enumerate(data) if series in subset]
        sub_f1 = float(np.mean([f1[i] for i in picked])) if picked else float("nan")
        sub_cov = float(np.mean([cov[i] for i in picked])) if picked else float("nan")
        print(
            f"{name:<40} {np.mean(f1):>6.3f} {np.mean(cov):>6.3f} "
            f"{np.mean(count):>10.1f} {seconds:>8.2f}   "
            f"trend/seasonal: F1 {sub_f1:.3f} cover {sub_cov:.3f}"
        )
    if args.per_series:
        print("\n# per series: F1/cover/count for " + " | ".join(METHODS))
        for series, cells in per_series.items():
            shape = shapes.get(series, "")
            print(f"  {series:<20} {shape:<15} " + "  ".join(f"{c:>14}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
