"""`pilot-sys phases`: do recorded runs show the same recurrent phase behaviour as a baseline?

Thin on purpose: loading lives in ``pilot_sys.monitor.trace_io``, the method in
``pilot_sys.stats.phases``; this module parses options, assembles the report and prints it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import click
import numpy as np
from pydantic import BaseModel, Field

from pilot_sys.cli.common import (
    FiniteFloatRange,
    OneLineErrors,
    library_warnings_as_notes,
    save_figure,
)
from pilot_sys.errors import BadInput
from pilot_sys.monitor.phase_traces import WORKLOAD_SERIES
from pilot_sys.monitor.trace_io import (
    MIN_SAMPLES,
    LoadedTrace,
    MetricMatrix,
    grid_samples,
    load_traces,
    metric_matrix,
)
from pilot_sys.stats.phases import (
    DEFAULT_MATCH_THRESHOLD,
    DEFAULT_SMOOTH,
    DEFAULT_TOLERANCE,
    DEFAULT_TRANSITION_THRESHOLD,
    PhaseParams,
    Signature,
    blur,
    cross_correlation,
    match_signatures,
    transition_signature,
)

#: Below this many baseline transitions the matching score rests on a few, partly chance,
#: alignments (on this machine's 4-10-transition traces: 89 % hits with 25 % false alarms).
FEW_TRANSITIONS = 6


class RunSignature(BaseModel):
    """One run's transition signature, as the report shows it."""

    source: str
    samples: int
    rate_hz: float
    metrics: list[str]
    transitions: int = Field(description="refined transitions (TBP_gg)")
    initial_transitions: int = Field(
        description="transitions before glitch/gradient filtering (TBP_init)"
    )
    glitches: int
    gradients: int
    transition_samples: list[int]
    transition_times_s: list[float]
    notes: list[str] = Field(default_factory=list)


class RunMatch(BaseModel):
    signature: RunSignature
    best_shift: int = Field(description="samples the run lags the baseline at the best alignment")
    best_shift_s: float
    matching_score: float | None = Field(
        description="best / mean(next ten best) - 1; null when only the peak correlates"
    )
    peak: float
    next_best_mean: float
    verdict: Literal["matches", "differs"]


class PhasesReport(BaseModel):
    params: PhaseParams
    baseline: RunSignature
    runs: list[RunMatch]


def _signature_report(
    loaded: LoadedTrace, mm: MetricMatrix, sig: Signature, notes: list[str]
) -> RunSignature:
    positions = sig.transitions
    notes = list(notes)
    if mm.filled:
        notes.append(f"{mm.filled} missing readings held at their last value")
    if mm.dropped:
        notes.append(f"series without any reading ignored: {', '.join(mm.dropped)}")
    if mm.scaled:
        notes.append(f"not fractions, divided by their maximum: {', '.join(mm.scaled)}")
    return RunSignature(
        source=loaded.origin,
        samples=int(mm.values.shape[0]),
        rate_hz=mm.rate_hz,
        metrics=mm.columns,
        transitions=int(positions.size),
        initial_transitions=int(sig.initial.sum()),
        glitches=int(sig.glitches.size),
        gradients=int(sig.gradients.size),
        transition_samples=[int(p) for p in positions],
        transition_times_s=[round(float(t), 3) for t in np.asarray(mm.time_of(positions)).ravel()],
        notes=notes,
    )


def load_path(path: str, rate_hz: float | None = None) -> list[LoadedTrace]:
    """The traces one argument names: a trace file, a session's result directory (each round's
    ``rounds/NNNN/monitor.json``, in journal order), or a directory holding ``monitor.json``
    or ``monitor/*.json``."""
    root = Path(path)
    if root.is_dir() and (root / "session.json").is_file():
        return _session_traces(root, rate_hz)
    return load_traces(path)


def _session_traces(root: Path, rate_hz: float | None = None) -> list[LoadedTrace]:
    """Every journaled round's monitor trace; rounds with too few samples for transitions (on
    the analysis grid at ``rate_hz``, as the analysis counts them) are left out, and said so
    on stderr."""
    from pilot_sys.session.journal import Journal

    journal = Journal.open(root, repair=False)
    found: list[LoadedTrace] = []
    short: list[int] = []
    for rec in journal.records:
        if rec.monitor is None or not rec.monitor.file:
            continue
        path = root / rec.dir / rec.monitor.file
        if not path.is_file():
            continue
        if rec.monitor.samples < MIN_SAMPLES:
            short.append(rec.index)
            continue
        loaded = load_traces(str(path))[0]
        if grid_samples(loaded.trace, rate_hz) < MIN_SAMPLES:
            short.append(rec.index)
            continue
        found.append(LoadedTrace(loaded.trace, loaded.path, f"{path} (round {rec.index})"))
    if short:
        listed = ", ".join(map(str, short[:8])) + (" ..." if len(short) > 8 else "")
        click.echo(
            f"pilot-sys phases: {root}: {len(short)} round(s) left out, fewer than "
            f"{MIN_SAMPLES} samples each (round {listed})",
            err=True,
        )
    if not found:
        why = "was it run with --no-monitor?" if not short else "every round is too short"
        raise BadInput(
            str(root), f"no round of this session has a usable rounds/NNNN/monitor.json ({why})"
        )
    return found


def _load_all(paths: tuple[str, ...], rate_hz: float | None = None) -> list[LoadedTrace]:
    return [lt for p in paths for lt in load_path(p, rate_hz)]


def _times(seconds: list[float], limit: int = 12) -> str:
    shown = " ".join(f"{t:.2f}" for t in seconds[:limit])
    return (
        shown + (f" ... ({len(seconds) - limit} more)" if len(seconds) > limit else "")
        if seconds
        else "none"
    )


def _score_or_inf(match: RunMatch) -> float:
    """The matching score to print; none (only the peak correlates) as inf."""
    return match.matching_score if match.matching_score is not None else math.inf


def _plot(
    path: Path,
    base: tuple[MetricMatrix, Signature],
    runs: list[tuple[MetricMatrix, Signature, RunMatch]],
    params: PhaseParams,
) -> None:
    """Metric lines with refined transitions per run (aligned on the baseline), and the
    correlations."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = 1 + len(runs) + 1
    fig, axes = plt.subplots(rows, 1, figsize=(10, 1.8 * rows), squeeze=False)
    axes = axes[:, 0]
    entries = [(base[0], base[1], None)] + runs
    for ax, (mm, sig, match) in zip(axes, entries, strict=False):
        shift = match.best_shift if match else 0
        t = (np.arange(mm.values.shape[0]) - shift) / mm.rate_hz
        ax.plot(t, mm.values, linewidth=0.7, alpha=0.8)
        for pos in sig.transitions:
            ax.axvline((pos - shift) / mm.rate_hz, color="black", linewidth=0.8, linestyle="--")
        title = (
            "baseline"
            if match is None
            else f"score {_score_or_inf(match):.2f} ({match.verdict}), "
            f"shifted by {-shift:+d} samples"
        )
        ax.set_title(f"{title}", fontsize=8, loc="left")
        ax.set_ylabel("fraction", fontsize=7)
        ax.tick_params(labelsize=7)
    ax = axes[-1]
    for _mm, sig, match in runs:
        lags, values = cross_correlation(
            sig.refined, blur(base[1].refined, params.tolerance), params.max_shift
        )
        ax.plot(
            lags,
            values,
            linewidth=0.8,
            label=f"score {_score_or_inf(match):.2f}",
        )
    ax.set_xlabel(
        "shift (samples); dashed lines: refined transitions; time axis in seconds of the baseline",
        fontsize=7,
    )
    ax.set_ylabel("cross-corr.", fontsize=7)
    ax.tick_params(labelsize=7)
    if runs:
        ax.legend(fontsize=6)
    fig.tight_layout()
    save_figure(fig, path)


def build_report(
    run_traces: list[LoadedTrace],
    baseline_path: str | None,
    params: PhaseParams,
    globs: list[str] | None,
    rate_hz: float | None,
) -> tuple[
    PhasesReport, tuple[MetricMatrix, Signature], list[tuple[MetricMatrix, Signature, RunMatch]]
]:
    """Signatures of the baseline and every run, each run matched against the baseline."""
    threshold = params.match_threshold
    base_notes: list[str] = []
    if baseline_path is not None:
        candidates = load_path(baseline_path, rate_hz)
    else:
        candidates, run_traces = run_traces[:1], run_traces[1:]
        base_notes.append("no --baseline: the first run is the baseline")
    if len(candidates) > 1:
        base_notes.append(f"the baseline holds {len(candidates)} traces; the first is used")
    base = candidates[0]
    rate = rate_hz or base.trace.rate_hz
    if not math.isclose(base.trace.rate_hz, rate):
        base_notes.append(f"resampled from {base.trace.rate_hz:g} Hz to {rate:g} Hz")
    base_mm = metric_matrix(base.trace, globs, rate, where=str(base.path))
    base_sig = transition_signature(base_mm.values, params)
    if base_sig.transitions.size < FEW_TRANSITIONS:
        base_notes.append(
            f"only {base_sig.transitions.size} transitions: the matching score rests on a few "
            "alignments and is unreliable; compare longer runs, or lower --transition-threshold"
        )

    results: list[tuple[MetricMatrix, Signature, RunMatch]] = []
    for lt in run_traces:
        mm = metric_matrix(lt.trace, globs, rate, where=str(lt.path))
        sig = transition_signature(mm.values, params)
        m = match_signatures(
            base_sig.refined, sig.refined, params.tolerance, params.max_shift, params.competitors
        )
        notes = (
            [f"resampled from {lt.trace.rate_hz:g} Hz to {rate:g} Hz"]
            if not math.isclose(lt.trace.rate_hz, rate)
            else []
        )
        match = RunMatch(
            signature=_signature_report(lt, mm, sig, notes),
            best_shift=m.best_shift,
            best_shift_s=round(m.best_shift / rate, 4),
            matching_score=m.matching_score if math.isfinite(m.matching_score) else None,
            peak=m.peak,
            next_best_mean=m.next_best_mean,
            verdict="matches" if m.matching_score >= threshold else "differs",
        )
        results.append((mm, sig, match))
    report = PhasesReport(
        params=params,
        baseline=_signature_report(base, base_mm, base_sig, base_notes),
        runs=[r[2] for r in results],
    )
    return report, (base_mm, base_sig), results


@click.command(
    "phases",
    cls=OneLineErrors,
    epilog="""\b
Example:
  pilot-sys monitor --json base.json -- fio job.fio
  pilot-sys monitor --json new.json -- fio job.fio
  pilot-sys phases new.json --baseline base.json
  pilot-sys phases results/session-2/ --baseline results/session-1/ --workload --json

Exit status: 0 whatever the verdicts (they are in the output), 2 on bad input.
""",
)
@click.argument("runs", nargs=-1, required=True, metavar="DIR_OR_TRACE...")
@click.option(
    "--baseline",
    "baseline_path",
    metavar="DIR_OR_TRACE",
    help="The run the others are matched against (blurred). Default: the first run.",
)
@click.option(
    "--tolerance",
    type=click.IntRange(min=0),
    default=DEFAULT_TOLERANCE,
    show_default=True,
    help="Near-neighbour blurring of the baseline, in samples.",
)
@click.option(
    "--threshold",
    type=FiniteFloatRange(min=0.0),
    default=DEFAULT_MATCH_THRESHOLD,
    show_default=True,
    help="Matching score at or above which a run matches.",
)
@click.option(
    "--transition-threshold",
    type=FiniteFloatRange(min=0.0, max=1.0, min_open=True, max_open=True),
    default=DEFAULT_TRANSITION_THRESHOLD,
    show_default=True,
    help="Composite similarity S above which successive samples are a transition.",
)
@click.option(
    "--smooth",
    type=click.IntRange(min=1),
    default=DEFAULT_SMOOTH,
    show_default=True,
    help="Running median over this many samples before the similarity metric (1: none).",
)
@click.option(
    "--max-shift",
    type=click.IntRange(min=0),
    default=None,
    help="Largest shift tried, in samples (default: every overlap).",
)
@click.option(
    "--metrics",
    "metric_globs",
    multiple=True,
    metavar="GLOB",
    help="Series to use, e.g. 'block:*/busy' (repeatable; default: utilization-like series).",
)
@click.option(
    "--workload",
    "workload_only",
    is_flag=True,
    help="Use the workload's own CPU and I/O series (process:*): on a shared host other tenants "
    "move every host-wide series.",
)
@click.option(
    "--rate",
    "rate_hz",
    type=FiniteFloatRange(min=0.0, min_open=True),
    default=None,
    help="Resample every run to this rate in Hz (default: the baseline's).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write a picture of the signatures and correlations (PNG, SVG, PDF).",
)
@library_warnings_as_notes
def phases(
    runs: tuple[str, ...],
    baseline_path: str | None,
    tolerance: int,
    threshold: float,
    transition_threshold: float,
    smooth: int,
    max_shift: int | None,
    metric_globs: tuple[str, ...],
    workload_only: bool,
    rate_hz: float | None,
    as_json: bool,
    plot_path: Path | None,
) -> None:
    """Recurrent phase signatures of recorded runs and how well they match a baseline.

    Each DIR_OR_TRACE is a trace written by `pilot-sys monitor --json`, or a session's result
    directory (each round's rounds/NNNN/monitor.json, in round order), or a directory holding
    monitor.json or monitor/*.json. The signature of a run is
    where its metric mix changes (transitions), cleaned of glitches and gradients; a run
    matches the baseline when its signature, at the best shift, correlates with the blurred
    baseline signature much better than at other shifts (the matching score of Isci and
    Martonosi). Values are not compared point by point, so shifted, stretched or briefly
    disturbed runs of one workload still match, while another workload does not.
    """
    # click's FloatRange lets nan through (every comparison with nan is False)
    for option, value in (
        ("--threshold", threshold),
        ("--transition-threshold", transition_threshold),
        ("--rate", rate_hz),
    ):
        if value is not None and not math.isfinite(value):
            raise BadInput(
                option, f"{value:g} is not a finite number (see pilot-sys phases --help)"
            )
    if plot_path is not None:
        parent = plot_path.resolve().parent
        if not parent.is_dir():
            raise BadInput("--plot", f"{plot_path}: directory {parent} does not exist")
        if plot_path.suffix.lower() not in (".png", ".svg", ".pdf"):
            raise BadInput(
                "--plot",
                f"{plot_path}: the picture format comes from the suffix; use .png, .svg or .pdf",
            )
    params = PhaseParams(
        transition_threshold=transition_threshold,
        tolerance=tolerance,
        smooth=smooth,
        max_shift=max_shift,
        match_threshold=threshold,
    )
    globs = [g.strip() for raw in metric_globs for g in raw.split(",") if g.strip()] or None
    if workload_only:
        if globs:
            raise BadInput("--workload", "choose either --workload or --metrics")
        globs = list(WORKLOAD_SERIES)
    report, base, results = build_report(
        _load_all(runs, rate_hz), baseline_path, params, globs, rate_hz
    )
    if plot_path is not None:
        _plot(plot_path, base, results, params)
    if as_json:
        click.echo(report.model_dump_json(indent=2))
    else:
        _print_text(report, threshold)
    if plot_path is not None and not as_json:
        click.echo(f"plot: {plot_path}")


def _print_text(report: PhasesReport, threshold: float) -> None:
    b = report.baseline
    click.echo(
        f"baseline {b.source}: {b.samples} samples at {b.rate_hz:g} Hz, {len(b.metrics)} series"
    )
    click.echo(
        f"  {b.transitions} transitions ({b.initial_transitions} initial, {b.glitches} glitches "
        f"dropped, {b.gradients} gradients merged) at {_times(b.transition_times_s)} s"
    )
    for note in b.notes:
        click.echo(f"  note: {note}")
    if not report.runs:
        click.echo("no runs to match: name one or more runs besides the baseline")
    for r in report.runs:
        s = r.signature
        score = (
            "inf (only the peak correlates)"
            if r.matching_score is None
            else f"{r.matching_score:.3f}"
        )
        click.echo(f"run {s.source}: {s.samples} samples")
        click.echo(
            f"  {s.transitions} transitions ({s.initial_transitions} initial, {s.glitches} "
            f"glitches dropped, {s.gradients} gradients merged) at {_times(s.transition_times_s)} s"
        )
        click.echo(
            f"  best shift {r.best_shift:+d} samples ({r.best_shift_s:+.2f} s); matching score "
            f"{score} {'>=' if r.verdict == 'matches' else '<'} {threshold:g}: {r.verdict}"
        )
        for note in s.notes:
            if note not in b.notes:  # e.g. the same series scaled in every run: said once
                click.echo(f"  note: {note}")
