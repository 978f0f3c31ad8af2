"""Detection quality of `pilot-sys phases` on recorded traces of real workloads.

Every trace is matched, as the run, against every other trace as the baseline. A pair of two
repetitions of the same scenario is a *hit* when its matching score reaches the threshold; a
pair of different scenarios reaching it is a *false alarm* (Isci and Martonosi, section 6.2).
The script reports, for the transition signatures with each tolerance (TBP_gg is tolerance 0,
TBP_ggN the blurred ones) and for value-based phases (VBP):

* hit and false-alarm rates at the chosen threshold, and the smallest threshold with every hit;
* the ROC over thresholds (0 to the largest score in steps of 0.05) and its area;
* the paper's Figure 12 ratio: per baseline, the mean score of its own scenario's other runs over
  the highest score of any other scenario's run; averaged over baselines (ratio > 1 = the right
  workload wins), and the improvement of transition signatures over VBP.

Example::

    python benchmarks/record_traces.py --out /tmp/pilot-sys-phase-traces --repeats 6
    python benchmarks/phases_quality.py --traces /tmp/pilot-sys-phase-traces \
        --plot /tmp/phases_roc.png
    python benchmarks/phases_quality.py --traces tests/fixtures/traces   # the shipped subset
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pilot_sys.monitor.trace_io import load_traces, metric_matrix
from pilot_sys.stats.phases import (
    DEFAULT_MATCH_THRESHOLD,
    DEFAULT_SMOOTH,
    DEFAULT_TOLERANCE,
    DEFAULT_TRANSITION_THRESHOLD,
    PhaseParams,
    match_signatures,
    matching_score,
    median_smooth,
    transition_signature,
    value_phase_correlation,
    value_phases,
)


@dataclass
class Corpus:
    names: list[str]  # scenario of each trace
    files: list[Path]
    matrices: list[np.ndarray]


def load_corpus(root: Path, metrics: list[str] | None = None) -> Corpus:
    """Every ``<scenario>/*.json`` under ``root``; the folder name is the ground-truth label."""
    names: list[str] = []
    files: list[Path] = []
    matrices: list[np.ndarray] = []
    for path in sorted(root.glob("*/*.json")):
        trace = load_traces(path)[0].trace
        names.append(path.parent.name)
        files.append(path)
        matrices.append(metric_matrix(trace, metrics, where=str(path)).values)
    if len({*names}) < 2:
        raise SystemExit(f"phases_quality: need traces of at least two scenarios under {root}")
    return Corpus(names, files, matrices)


def score_matrix_tbp(corpus: Corpus, params: PhaseParams) -> np.ndarray:
    """scores[i, j]: run i against baseline j (transition signatures); NaN on the diagonal."""
    sigs = [transition_signature(x, params).refined for x in corpus.matrices]
    n = len(sigs)
    scores = np.full((n, n), np.nan)
    for j in range(n):
        for i in range(n):
            if i != j:
                scores[i, j] = match_signatures(
                    sigs[j], sigs[i], params.tolerance, None, params.competitors
                ).matching_score
    return scores


def score_matrix_vbp(corpus: Corpus, params: PhaseParams) -> np.ndarray:
    """The same with value-based phase sequences, correlated shift by shift (the paper's VBP)."""
    phases = [
        value_phases(median_smooth(x, params.smooth), params.transition_threshold)
        for x in corpus.matrices
    ]
    n = len(phases)
    scores = np.full((n, n), np.nan)
    for j in range(n):
        for i in range(n):
            if i != j:
                rho = value_phase_correlation(phases[j], phases[i])[1]
                scores[i, j] = matching_score(rho, competitors=params.competitors)[3]
    return scores


@dataclass
class Quality:
    label: str
    hit_rate: float
    false_alarm_rate: float
    threshold: float
    all_hits_threshold: float  # the largest threshold that still detects every hit
    false_alarms_at_all_hits: float
    auc: float
    youden_threshold: float  # the threshold maximising hit rate - false-alarm rate
    youden_hits: float
    youden_false_alarms: float
    # Figure 12: mean over baselines of (own-scenario score / best other-scenario score)
    ratio: float
    roc: tuple[np.ndarray, np.ndarray, np.ndarray]  # thresholds, hit rates, false-alarm rates


def quality(label: str, scores: np.ndarray, names: list[str], threshold: float) -> Quality:
    same = np.equal.outer(np.asarray(names), np.asarray(names))
    off = ~np.eye(len(names), dtype=bool)
    finite_cap = np.nanmax(np.where(np.isfinite(scores), scores, np.nan))
    # inf: a peak with nothing else; ranks highest
    s = np.where(np.isinf(scores), finite_cap + 1.0, scores)
    hits, misses = s[same & off], s[~same]
    thresholds = np.arange(0.0, float(np.nanmax(s)) + 0.05, 0.05)
    hit_rates = (hits[None, :] >= thresholds[:, None]).mean(axis=1)
    fa_rates = (misses[None, :] >= thresholds[:, None]).mean(axis=1)
    order = np.argsort(fa_rates, kind="stable")
    fa_sorted = np.concatenate(([0.0], fa_rates[order], [1.0]))
    hit_sorted = np.concatenate(([0.0], hit_rates[order], [1.0]))
    # ROC: best hit rate reachable at each false-alarm rate
    hit_sorted = np.maximum.accumulate(hit_sorted)
    auc = float(np.trapezoid(hit_sorted, fa_sorted))
    all_hits = float(np.min(hits))
    y = int(np.argmax(hit_rates - fa_rates))
    ratios = []
    for j in range(len(names)):
        own = s[same[:, j] & off[:, j], j]
        other = s[~same[:, j], j]
        best_other = float(np.max(other))
        if own.size and best_other > 0:
            ratios.append(float(np.mean(own)) / best_other)
    return Quality(
        label=label,
        hit_rate=float((hits >= threshold).mean()),
        false_alarm_rate=float((misses >= threshold).mean()),
        threshold=threshold,
        all_hits_threshold=all_hits,
        false_alarms_at_all_hits=float((misses >= all_hits).mean()),
        youden_threshold=float(thresholds[y]),
        youden_hits=float(hit_rates[y]),
        youden_false_alarms=float(fa_rates[y]),
        auc=auc,
        ratio=float(np.mean(ratios)) if ratios else float("nan"),
        roc=(thresholds, hit_rates, fa_rates),
    )


def rounds_check(root: Path, metrics: list[str] | None) -> str:
    """How the session helpers behave on the corpus: each scenario's runs as the rounds of one
    session (none should be flagged), then its first four with one foreign round inserted (that
    one should be flagged), and `compare_phase_behaviour` on runs of two different or the same
    scenario."""
    import itertools

    from pilot_sys.monitor.phase_traces import compare_phase_behaviour, consistent_rounds

    runs = {
        d.name: [load_traces(f)[0].trace for f in sorted(d.glob("*.json"))]
        for d in sorted(root.iterdir())
        if d.is_dir()
    }
    names = sorted(runs)
    genuine_flagged = genuine = foreign_flagged = foreign = 0
    for s in names:
        checks = consistent_rounds(runs[s], metrics=metrics)
        genuine_flagged += sum(not c.consistent for c in checks)
        genuine += len(checks)
        for o in names:
            if o != s:
                checks = consistent_rounds(
                    [*runs[s][:2], runs[o][0], *runs[s][2:4]], metrics=metrics
                )
                foreign_flagged += not checks[2].consistent
                foreign += 1
                genuine_flagged += sum(not c.consistent for c in (checks[:2] + checks[3:]))
                genuine += 4
    differ = sum(
        compare_phase_behaviour(runs[a][:3], runs[b][:3], metrics=metrics) is not None
        for a, b in itertools.permutations(names, 2)
    )
    same = sum(
        compare_phase_behaviour(runs[a][:2], runs[a][2:4], metrics=metrics) is not None
        for a in names
    )
    return (
        "session helpers (series: "
        f"{', '.join(metrics) if metrics else 'default: the process series when present'}): "
        f"consistent_rounds flagged {genuine_flagged}/{genuine} genuine rounds and "
        f"{foreign_flagged}/{foreign} foreign rounds; "
        f"compare_phase_behaviour noted a difference for {differ}/{len(names) * (len(names) - 1)} "
        "pairs of different "
        f"scenarios and {same}/{len(names)} pairs of the same"
    )


def plot_roc(results: list[Quality], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 5))
    for q in results:
        _, hit, fa = q.roc
        ax.plot(
            fa, hit, marker=".", markersize=3, linewidth=1, label=f"{q.label} (AUC {q.auc:.2f})"
        )
    ax.plot([0, 1], [0, 1], color="grey", linewidth=0.5, linestyle=":")
    ax.set_xlabel("false-alarm probability")
    ax.set_ylabel("hit probability")
    ax.set_title("ROC of recurrent-phase detection (thresholds 0..max, step 0.05)", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--traces", type=Path, default=Path("/tmp/pilot-sys-phase-traces"))
    parser.add_argument(
        "--threshold", type=float, default=DEFAULT_MATCH_THRESHOLD, help="matching-score threshold"
    )
    parser.add_argument("--transition-threshold", type=float, default=DEFAULT_TRANSITION_THRESHOLD)
    parser.add_argument("--tolerances", default="0,1,2,3,4,5")
    parser.add_argument(
        "--smooth", type=int, default=DEFAULT_SMOOTH, help="running-median window, samples"
    )
    parser.add_argument("--competitors", choices=("peaks", "values"), default="peaks")
    parser.add_argument(
        "--metrics", action="append", help="series globs (default: the utilization-like series)"
    )
    parser.add_argument(
        "--sweep", action="store_true", help="also sweep the transition threshold (AUC per value)"
    )
    parser.add_argument("--plot", type=Path, default=None, help="write the ROC curves here")
    parser.add_argument(
        "--rounds",
        action="store_true",
        help="also evaluate consistent_rounds / compare_phase_behaviour",
    )
    parser.add_argument(
        "--append", type=Path, default=None, help="append a Markdown section to this file"
    )
    args = parser.parse_args(argv)

    corpus = load_corpus(args.traces, args.metrics)

    def params(
        tolerance: int = DEFAULT_TOLERANCE, threshold: float = args.transition_threshold
    ) -> PhaseParams:
        return PhaseParams(
            transition_threshold=threshold,
            tolerance=tolerance,
            smooth=args.smooth,
            competitors=args.competitors,
        )

    scenarios = sorted({*corpus.names})
    n_hit = sum(corpus.names.count(s) * (corpus.names.count(s) - 1) for s in scenarios)
    n_miss = len(corpus.names) * (len(corpus.names) - 1) - n_hit
    lines = [
        f"traces: {len(corpus.files)} in {args.traces} ({len(scenarios)} scenarios: "
        + ", ".join(f"{s} x{corpus.names.count(s)}" for s in scenarios)
        + ")",
        f"pairs: {n_hit} same-scenario (hits possible), {n_miss} different-scenario (false alarms "
        "possible)",
        f"series: {', '.join(args.metrics) if args.metrics else 'default (utilization-like)'}; "
        f"transition threshold S > {args.transition_threshold}; running median {args.smooth}; "
        f"competitors: {args.competitors}; matching-score threshold {args.threshold}",
        "",
        "| signature | hits @thr | false alarms @thr | all-hits thr | false alarms @all-hits | "
        "best-J thr: hits / FA | ROC AUC | own/best-other ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    results = [quality("VBP", score_matrix_vbp(corpus, params()), corpus.names, args.threshold)]
    for tol in (int(t) for t in args.tolerances.split(",")):
        label = "TBP_gg (tol 0)" if tol == 0 else f"TBP_ggN tol {tol}"
        scores = score_matrix_tbp(corpus, params(tol))
        results.append(quality(label, scores, corpus.names, args.threshold))
    for q in results:
        lines.append(
            f"| {q.label} | {q.hit_rate:.1%} | {q.false_alarm_rate:.1%} | "
            f"{q.all_hits_threshold:.3f} | "
            f"{q.false_alarms_at_all_hits:.1%} | {q.youden_threshold:.2f}: {q.youden_hits:.1%} / "
            f"{q.youden_false_alarms:.1%} | "
            f"{q.auc:.3f} | {q.ratio:.2f} |"
        )
    vbp = results[0]
    default = next(
        (q for q in results if q.label.endswith(f"tol {DEFAULT_TOLERANCE}")), results[-1]
    )
    best = max(results[1:], key=lambda q: q.auc)
    lines += [
        "",
        f"improvement over VBP (own/best-other ratio): {default.label} "
        f"{default.ratio / vbp.ratio:.1f}x, "
        f"best ({best.label}) {best.ratio / vbp.ratio:.1f}x; ROC AUC VBP {vbp.auc:.3f} -> "
        f"{default.label} {default.auc:.3f}",
    ]
    if args.sweep:
        lines += [
            "",
            f"transition-threshold sweep (tolerance {DEFAULT_TOLERANCE}): S threshold -> ROC AUC, "
            "FA @ all hits",
        ]
        for thr in (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6):
            q = quality(
                f"S>{thr}",
                score_matrix_tbp(corpus, params(threshold=thr)),
                corpus.names,
                args.threshold,
            )
            lines.append(
                f"  {thr:.2f}: AUC {q.auc:.3f}, hits {q.hit_rate:.1%} / FA "
                f"{q.false_alarm_rate:.1%} @thr, FA {q.false_alarms_at_all_hits:.1%} @all-hits"
            )
    if args.rounds:
        lines += ["", rounds_check(args.traces, args.metrics)]
    text = "\n".join(lines)
    print(text)
    if args.plot is not None:
        plot_roc(results, args.plot)
        print(f"ROC plot: {args.plot}")
    if args.append is not None:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        cmd = "python benchmarks/phases_quality.py " + " ".join(
            argv if argv is not None else sys.argv[1:]
        )
        with args.append.open("a") as f:
            f.write(f"\n### Detection quality ({stamp})\n\n`{cmd}`\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
