"""report.md: the result a reviewer reads, every number with its uncertainty or its source.

One function per section, each returning its lines; ``SECTIONS`` (and ``WORKLOAD_SECTIONS``
for each workload's part) is the order they appear in. Numbers go through ``pilot_sys.units``.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pilot_sys import units
from pilot_sys.monitor.bottleneck_culprits import culprit_words
from pilot_sys.report.gpu_section import gpu_lines
from pilot_sys.report.md_escape import escape_html, escape_text, neutral_model
from pilot_sys.session.glossary import glossary_lines
from pilot_sys.session.result import SessionResult, Status, WorkloadResult
from pilot_sys.session.verdict import alpha_text, judged_over_text, ranges, verdict_of

EXIT_MEANING = {
    0: "valid result",
    2: "bad input",
    3: "invalid result (hidden bottleneck)",
    4: "session limit reached before every CI target",
    5: "workload failure",
    130: "interrupted",
}
UNKNOWN = "unknown"

INVALID_BANNER = '<p style="color:red"><b>&#9940; '  # the one HTML line report.md holds


@dataclass(frozen=True)
class ReportInput:
    """What report.md is rendered from."""

    result: SessionResult
    # title -> path relative to the result directory
    plots: dict[str, Path] = field(default_factory=dict)
    rounds_table: list[list[str]] = field(default_factory=list)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return out


def _confidence(result: SessionResult) -> str:
    return f"{int(round(100 * result.config.get('confidence', 0.95)))}%"


def _network(result: SessionResult, w: WorkloadResult) -> bool:
    return units.network_traffic(w.command, result.bottleneck.cut)


# -- the session ------------------------------------------------------------------------------
def header(doc: ReportInput) -> list[str]:
    """The title, an invalid result in red, the status, where and when, the targets."""
    result = doc.result
    verdict = verdict_of(result)
    lines: list[str] = ["# pilot-sys session report", ""]
    if result.status is Status.INVALID:
        lines += [
            INVALID_BANNER
            + escape_text(verdict.headline.replace("INVALID", "INVALID RESULT", 1))
            + ". "
            "The numbers below do not describe the component under test.</b></p>",
            "",
        ]
    cfg = result.config
    measured = (
        ""
        if result.measured_seconds is None
        else f", {units.duration(result.measured_seconds)} of it in rounds"
    )
    return lines + [
        f"- **Status:** `{result.status}`: {result.stop_reason} (exit code {result.exit_code}: "
        f"{EXIT_MEANING.get(result.exit_code, '?')})",
        f"- **Result directory:** `{result.result_dir}`",
        f"- **Time:** {units.duration(result.elapsed_seconds)} session time{measured} (session "
        "time: the wall time of every invocation, without the gaps between them; what -s limits); "
        "report written "
        f"{time.strftime('%Y-%m-%d %H:%M:%S %Z', time.localtime(result.created_at))}",
        f"- **Targets:** every CI within {units.target(cfg.get('ci_perc', 0))} of the mean at "
        f"{100 * cfg.get('confidence', 0):g}% confidence, |autocorrelation| <= "
        f"{cfg.get('autocorr_limit')}, preset `{cfg.get('preset')}`",
        "",
    ]


def verdict_section(doc: ReportInput) -> list[str]:
    """The session's verdict (``result.verdict``, the decision the summary prints too): its
    headline, why a target was missed and what to do, each excluded round, the bottleneck line."""
    v = verdict_of(doc.result)
    lines = ["## Verdict", "", f"**{v.headline}**", ""]
    if v.why:
        lines.append(f"- Why: {v.why}")
    if v.next_step:
        lines.append(f"- Next: {v.next_step}")
    if v.excluded:
        lines.append(f"- Excluded: {v.excluded}")
        shown = v.excluded_rounds[:EXCLUDED_LISTED]
        lines += [f"  - {e.text}" for e in shown]
        if len(v.excluded_rounds) > len(shown):
            more = len(v.excluded_rounds) - len(shown)
            lines.append(f"  - and {more} more (the Rounds table lists every round)")
    lines.append(f"- {v.bottleneck[0].upper()}{v.bottleneck[1:]}")
    if v.governs:
        lines.append(f"- {v.governs}")
    return lines + [""]


#: excluded rounds listed one by one under the verdict; the Rounds table has them all
EXCLUDED_LISTED = 8


# -- each workload ----------------------------------------------------------------------------
def results_table(result: SessionResult, w: WorkloadResult) -> list[str]:
    """The PIs: mean, CI, its precision against the target, samples and where they came from."""
    network = _network(result, w)
    lines = [f"## Results: {w.name}", ""]
    if w.command:
        lines += ["Command: `" + shlex.join(w.command) + "`", ""]
    rows = []
    for p in w.pis.values():
        half = p.ci_width_rel / 2 if p.ci_width_rel is not None else None
        mean, low, high = units.ci_parts(p.mean, p.ci_low, p.ci_high, p.unit, network, UNKNOWN)
        has_ci = p.ci_low is not None and p.ci_high is not None
        rows.append(
            [
                p.name,
                mean,
                f"[{low}, {high}]" if has_ci else "none yet (see Notes)",
                units.plus_minus(half) if half is not None else "-",
                units.target(p.target),
                ("yes" if p.ci_reached else "**no**") if p.gates_stop else "n/a (reported only)",
                str(p.sample_size),
                "-"
                if p.subsession_size is None
                else (
                    f"{p.subsession_count} rounds"
                    if p.interval_basis == "rounds"
                    else str(p.subsession_size)
                ),
                "-" if p.required_sample_size is None else str(p.required_sample_size),
                p.source_label,
            ]
        )
    lines += _table(
        [
            "PI",
            "mean",
            f"{_confidence(result)} CI",
            "±",
            "target",
            "met",
            "samples",
            "subsession",
            "required n",
            "from",
        ],
        rows,
    )
    described = [f"- `{p.name}`: {p.description}" for p in w.pis.values() if p.description]
    lines += [""] + described if described else []
    return lines + [
        "",
        "± is half the CI's width as a share of the mean; the target is stated the same way.",
        "",
    ]


def rounds_line(result: SessionResult, w: WorkloadResult) -> list[str]:
    c = w.rounds
    low, high = w.work_range
    cfg_low, cfg_high = result.config.get("work_min", low), result.config.get("work_max", high)
    if cfg_high <= cfg_low:  # no range was given (``SessionConfig.fixed_work``)
        work = "The work amount was fixed (no %WORK_AMOUNT%)."
    elif high > low:
        work = (
            f"Final valid work-amount range: {units.work(low, w.work_unit)} .. "
            f"{units.work(high, w.work_unit)}."
        )
    else:  # the range narrowed to one amount: rounds below it were short or below alpha
        work = (
            f"Final valid work amount: {units.work(high, w.work_unit)} (the range narrowed to it)."
        )
    own = ""
    if w.usage is not None:
        u = w.usage
        rss = (
            f", peak RSS {units.quantity(float(u.max_rss_bytes), 'B')}"
            if u.max_rss_bytes is not None
            else ""
        )
        own += (
            f" The command's own use per round (rusage, mean of {u.rounds} rounds): user "
            f"{units.duration(u.user_seconds)}, system {units.duration(u.system_seconds)}{rss}."
        )
    if w.process_start_seconds is not None:
        own += (
            f" Starting a process here takes {units.duration(w.process_start_seconds)} "
            "(part of every round's time)."
        )
    return [
        f"Rounds: {c.total} run, {c.analysed} analysed, {c.short} short (stored, not analysed), "
        f"{c.below_alpha} below alpha, {c.failed} failed; "
        f"{units.duration(w.seconds_in_rounds)} in rounds. " + work + own,
        "",
    ]


def phase_check(result: SessionResult, w: WorkloadResult) -> list[str]:
    if w.phase_check is None:
        return []
    ph = w.phase_check
    mark = "**differs**: " if ph.inconsistent_rounds else ""
    return [
        "Phase behaviour of the rounds (transition signatures of their monitor traces): "
        f"{mark}{ph.note}",
        "",
    ]


def cross_check(result: SessionResult, w: WorkloadResult) -> list[str]:
    """The workload's own per-round figures against the CI drawn from its unit readings."""
    checks = [p for p in w.pis.values() if p.readings_mean is not None]
    if not checks:
        return []
    network = _network(result, w)
    lines = ["### Cross-check with the workload's own per-round figures", ""]
    for p in checks:
        verdict = {True: "inside the CI", False: "**outside the CI**", None: "no CI to compare"}[
            p.readings_in_ci
        ]
        lines.append(
            f"- `{p.name}`: the workload's own per-round figures average "
            f"{units.quantity(p.readings_mean, p.unit, network, UNKNOWN)} "
            f"over the analysed rounds: {verdict}"
            + (
                f" {units.interval(p.ci_low, p.ci_high, p.unit, network, UNKNOWN)} "
                if p.ci_low is not None and p.ci_high is not None
                else " "
            )
            + "(they include each round's warm-up and cool-down, which EDM removed from the unit "
            "readings)"
        )
    return lines + [""]


def removed_phases(result: SessionResult, w: WorkloadResult) -> list[str]:
    lines = ["### Removed phases", ""]
    any_removed = False
    for p in w.pis.values():
        for r in p.removed:
            any_removed = True
            what = {
                "edm": "EDM on unit readings",
                "alpha": "WPS alpha bound",
                "few_units": "too few unit readings",
                "none": "no removal",
            }.get(r.method, r.method)
            extra = f" ({r.detail})" if r.detail else ""
            if r.method == "edm":
                lines.append(
                    f"- `{p.name}`: {what}: {r.samples_removed} of "
                    f"{r.samples_removed + r.samples_kept} "
                    f"unit readings removed as warm-up/cool-down over {r.rounds} round(s){extra}"
                )
            else:
                lines.append(f"- `{p.name}`: {what}: {r.rounds} round(s) excluded{extra}")
    if not any_removed:
        lines.append("- nothing removed")
    return lines + [""]


def wps_fit(result: SessionResult, w: WorkloadResult) -> list[str]:
    """The work-per-second regression t = alpha + w / v, and the smallest useful work it gives."""
    if w.wps is None or w.wps.v is None:
        return []
    x = w.wps
    vu = x.v_unit or "work/s"

    def q(value: float | None, unit: str) -> str:
        return units.quantity(value, unit, missing=UNKNOWN)

    if x.alpha_work_amount:
        amount = units.work(x.alpha_work_amount, w.work_unit)
        applied = f" = {amount} of work amount: {alpha_text(x)}"
    else:
        applied = f" ({alpha_text(x)})"
    lines = [
        "### Work-per-second regression (t = alpha + w / v)",
        "",
        f"- v = {q(x.v, vu)}, CI [{q(x.v_ci_low, vu)}, {q(x.v_ci_high, vu)}] "
        f"over {x.rounds_used} rounds",
        f"- alpha = {q(x.alpha, 's')}"
        + (
            f", CI [{q(x.alpha_ci_low, 's')}, {q(x.alpha_ci_high, 's')}]"
            if x.alpha_ci_low is not None
            else ""
        )
        + " (time of the non-stable phases beyond what their work would take at v)"
        + (
            f"; starting a process here takes {q(w.process_start_seconds, 's')} "
            "(median of `true` spawned and reaped as a round's command is), part of it"
            if w.process_start_seconds is not None
            else ""
        ),
        f"- smallest useful work (alpha at most 10% of a round: 9 x alpha x v) = "
        f"{q(x.alpha_work, vu.removesuffix('/s'))}" + applied,
        "",
    ]
    lines += [f"- note: {msg}" for msg in x.warnings]
    return lines + ([""] if x.warnings else [])


WORKLOAD_SECTIONS: tuple[Callable[[SessionResult, WorkloadResult], list[str]], ...] = (
    results_table,
    rounds_line,
    phase_check,
    cross_check,
    removed_phases,
    wps_fit,
)


def workloads(doc: ReportInput) -> list[str]:
    return [
        line
        for w in doc.result.workloads
        for section in WORKLOAD_SECTIONS
        for line in section(doc.result, w)
    ]


# -- across workloads -------------------------------------------------------------------------
def comparison(doc: ReportInput) -> list[str]:
    """An interleaved comparison's ranking and each adjacent pair's difference."""
    result = doc.result
    if result.comparison is None:
        return []
    cmp_ = result.comparison
    owner = next((w for w in result.workloads if cmp_.pi in w.pis), None)
    unit = owner.pis[cmp_.pi].unit if owner is not None else ""
    network = owner is not None and _network(result, owner)
    lines = [
        f"## Comparison ({cmp_.pi})",
        "",
        "Ranking, best first: " + " > ".join(f"`{n}`" for n in cmp_.ranking),
        "",
    ]
    rows = []
    for pr in cmp_.pairs:
        rows.append(
            [
                f"{pr.better} vs {pr.worse}",
                units.quantity(pr.difference, unit, network),
                "-" if pr.difference_rel is None else units.percent(pr.difference_rel, 2),
                units.interval(pr.ci_low, pr.ci_high, unit, network)
                if pr.ci_low is not None and pr.ci_high is not None
                else "-",
                "-" if pr.p_value is None else f"{pr.p_value:.3g}",
                "no" if not pr.cis_overlap else "yes",
                "yes" if pr.separated else "**no**",
            ]
        )
    lines += _table(
        [
            "pair",
            "difference",
            "relative",
            "CI of difference",
            "Welch p",
            "CIs overlap",
            "separated",
        ],
        rows,
    )
    lines += ["", f"Separated: non-overlapping CIs, or Welch p < {cmp_.p_threshold:g}.", ""]
    lines += [
        f"- Phase behaviour: {'**differs**: ' if ph.differs else ''}{ph.note}"
        for ph in cmp_.phase_behaviour
    ]
    return lines + ([""] if cmp_.phase_behaviour else [])


def bottleneck(doc: ReportInput) -> list[str]:
    """The monitor's verdict over the included rounds taken together, its evidence, the rounds
    excluded on their own verdict, and the peak utilizations."""
    result = doc.result
    b = result.bottleneck
    v = verdict_of(result)
    lines = ["## Bottleneck verdict", ""]
    if not b.monitored:
        return lines + [
            f"Not monitored{f': {b.error}' if b.error else ' (--no-monitor)'}. "
            "Nothing is known about hidden bottlenecks.",
            "",
        ]
    included = sum(w.rounds.analysed for w in result.workloads)
    over = judged_over_text(b, included)
    verdict = {
        True: "**valid**: no component other than the component under test passed the threshold "
        + over,
        False: "**INVALID**: hidden bottleneck at "
        + ", ".join(f"`{h}`" for h in b.hidden_bottlenecks)
        + f" {over}",
        None: f"not judged ({b.detail.get('not_judged') or b.error or 'no round could be judged'})",
    }[b.valid]
    thr = result.config.get("bottleneck_threshold", 0.8)
    lines += [
        f"- Component under test: `{b.cut or 'unknown'}`"
        + (
            ""
            if b.cut_saturated is None or not b.cut
            else f" ({'saturated' if b.cut_saturated else 'not saturated'})"
        ),
        f"- Verdict: {verdict} (threshold {units.percent(thr, None)} of each stated limit)",
    ]
    if v.governs:
        lines.append(f"- {v.governs}")
    lines += [
        f"- `{comp}`: {evidence}" for comp, evidence in (b.detail.get("evidence") or {}).items()
    ]
    lines += [
        f"- Other processes that used `{comp}` most: "
        + "; ".join(culprit_words(row, comp.split(" ", 1)[0]) for row in rows)
        for comp, rows in (b.detail.get("culprits") or {}).items()
        if rows
    ]
    if b.detail.get("samples"):
        which = "excluded" if b.detail.get("judged_over") == "excluded rounds" else "included"
        lines.append(f"- Judged over the {which} rounds' {b.detail['samples']} samples together")
    if b.rounds_invalid:
        lines.append(
            f"- Rounds excluded on their own verdict (a hidden bottleneck over enough "
            f"samples to judge): {ranges(b.rounds_invalid)}"
        )
    if b.rounds_unjudged:
        lines.append(
            f"- Rounds that saw a hidden bottleneck but were too short to judge on their "
            f"own (not excluded; judged together above): {ranges(b.rounds_unjudged)}"
        )
    lines += [f"- note: {note}" for note in b.detail.get("notes") or []]
    if b.error:
        lines.append(f"- Monitor problems: {b.error}")
    if b.max_utilization:
        lines += [
            "",
            f"Peak utilization (fraction of the stated limit) {over}:",
            "",
        ]
        lines += _table(
            ["series", "peak"],
            [[f"`{k}`", units.percent(v)] for k, v in list(b.max_utilization.items())[:12]],
        )
    return lines + [""]


def gpus(doc: ReportInput) -> list[str]:
    """The GPUs sampled (``report.gpu_section``); nothing on a host without one."""
    return gpu_lines(doc.result)


def overhead(doc: ReportInput) -> list[str]:
    """The sampling rate and how it was chosen, the measured overhead, the monitor's own cost."""
    result = doc.result
    o = result.overhead
    lines = ["## Monitoring overhead", ""]
    if o.sampling_rate_hz is None:
        lines.append("- Monitoring was off.")
    else:
        detail = ""
        if o.rate_chosen_by == "tuner":
            budget = (
                f" of {units.percent(o.budget, None)} of the PI" if o.budget is not None else ""
            )
            tuning = (
                f"; tuning took {units.duration(o.tuning_seconds)}"
                if o.tuning_seconds is not None
                else ""
            )
            detail = (
                ", `--overhead-budget`: the highest rate whose measured overhead, "
                f"CI upper bound included, stays within the budget{budget}{tuning}"
            )
        lines.append(
            f"- Sampling rate: {o.sampling_rate_hz:.4g} Hz (chosen by: {o.rate_chosen_by}{detail})"
        )
    if o.measured_overhead is not None:
        ci = (
            f", {_confidence(result)} CI "
            f"[{units.percent(o.measured_overhead_ci[0], 2, signed=True)}, "
            f"{units.percent(o.measured_overhead_ci[1], 2, signed=True)}]"
            if o.measured_overhead_ci
            else ""
        )
        p_value = f", p = {o.p_value:.3g}" if o.p_value is not None else ""
        lines.append(
            f"- Measured overhead (loss of the round's duration with monitoring on): "
            f"{units.percent(o.measured_overhead, 2, signed=True)}{ci}{p_value} "
            f"({o.method or 'on/off rounds'})"
        )
    elif o.rate_chosen_by == "tuner":
        lines.append("- Measured overhead: none measured at the chosen rate")
    else:
        lines.append(
            "- Measured overhead on the result: not measured in this session "
            "(`--overhead-budget` or `pilot-sys tune` measures it)"
        )
    if o.note:
        lines.append(f"- Tuner: {o.note}")
    if o.monitor_cost:
        mc = o.monitor_cost
        lines.append(
            "- The monitor's own cost: "
            f"{units.percent(mc.get('cpu_seconds_per_second', 0), 3)} of a CPU, "
            f"{units.duration(mc.get('cpu_seconds_per_sample', 0))} per sample, "
            f"{units.count(mc.get('wakeups_per_second', 0), 'wake-ups/s')}, "
            f"{units.size(mc.get('memory_bytes', 0))}"
        )
        if mc.get("source_cpu_seconds_per_second") or mc.get("remote_cpu_seconds_per_second"):
            lines.append(
                "- Sampling the remote hosts: "
                f"{units.percent(mc.get('source_cpu_seconds_per_second', 0), 3)} of a CPU here, "
                f"{units.percent(mc.get('remote_cpu_seconds_per_second', 0), 3)} of a CPU on the "
                "hosts (their engines' own CPU time, all hosts together)"
            )
    if o.engine_seconds_per_round is not None:
        lines.append(
            f"- pilot-sys bookkeeping between rounds: {units.duration(o.engine_seconds_per_round)} "
            "per round (median)"
        )
    return lines + [""]


def plot_list(doc: ReportInput) -> list[str]:
    if not doc.plots:
        return []
    lines = ["## Plots", ""]
    for title, path in doc.plots.items():
        lines += [f"### {title}", "", f"![{title}]({path.as_posix()})", ""]
    return lines


def rounds(doc: ReportInput) -> list[str]:
    if not doc.rounds_table:
        return []
    return (
        ["## Rounds", ""]
        + _table(
            ["#", "workload", "work", "duration", "phase", "state", "readings"], doc.rounds_table
        )
        + [""]
    )


def context(doc: ReportInput) -> list[str]:
    """The machine and the software the session ran on."""
    ctx = doc.result.context
    rows = [
        ["CPU", str(ctx.get("cpu_model") or UNKNOWN)],
        ["CPUs online", str(ctx.get("cpus_online") or UNKNOWN)],
        ["memory", units.size(ctx.get("memory_bytes"), UNKNOWN)],
        ["kernel", str(ctx.get("kernel") or UNKNOWN)],
        ["OS", str(ctx.get("os") or UNKNOWN)],
        ["frequency governor", str(ctx.get("governor") or "unknown (no cpufreq in /sys)")],
        ["host", str(ctx.get("hostname") or UNKNOWN)],
        ["pilot-sys", str(ctx.get("pilot_sys_version"))],
        ["Python", str(ctx.get("python"))],
        ["command line", "`" + shlex.join(ctx.get("command_line") or []) + "`"],
        ["working directory", f"`{ctx.get('cwd')}`"],
    ]
    return ["## Context", ""] + _table(["", ""], rows) + [""]


def terms(doc: ReportInput) -> list[str]:
    """Every term the report uses, explained once (``session.glossary``, as `run --help`)."""
    return ["## Terms", ""] + glossary_lines() + [""]


def notes(doc: ReportInput) -> list[str]:
    if not doc.result.notes:
        return []
    return ["## Notes", ""] + [f"- {n}" for n in doc.result.notes] + [""]


SECTIONS: tuple[Callable[[ReportInput], list[str]], ...] = (
    header,
    verdict_section,
    workloads,
    comparison,
    bottleneck,
    gpus,
    overhead,
    plot_list,
    rounds,
    context,
    notes,
    terms,
)


def render(
    result: SessionResult, plots: dict[str, Path], rounds_table: list[list[str]] | None = None
) -> str:
    """report.md: the sections of ``SECTIONS`` in order."""
    # untrusted text (names, commands, output, hosts) is shown, never rendered: see md_escape
    doc = ReportInput(neutral_model(result), plots, neutral_model(rounds_table or []))
    text = "\n".join(line for section in SECTIONS for line in section(doc))
    return escape_html(text, trusted=INVALID_BANNER)
