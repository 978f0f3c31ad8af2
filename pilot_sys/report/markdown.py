"""report.md: the result a reviewer reads, every number with its uncertainty or its source."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

from pilot_sys.session.progress import human
from pilot_sys.session.result import SessionResult, Status

EXIT_MEANING = {
    0: "valid result", 2: "bad input", 3: "invalid result (hidden bottleneck)",
    4: "session limit reached before every CI target", 5: "workload failure", 130: "interrupted",
}


def _fmt(v: float | None, unit: str = "") -> str:
    return human(v, unit) if v is not None else "unknown"


def ranges(indices: list[int]) -> str:
    """``[1, 2, 3, 7, 9, 10]`` -> ``1-3, 7, 9-10``."""
    out: list[str] = []
    for i in sorted(indices):
        if out and "-" not in out[-1].split(", ")[-1] and int(out[-1]) == i - 1:
            out[-1] = f"{out[-1]}-{i}"
        elif out and "-" in out[-1] and int(out[-1].split("-")[1]) == i - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        else:
            out.append(str(i))
    return ", ".join(out)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return out


def render(result: SessionResult, plots: dict[str, Path], rounds_table: list[list[str]] | None = None) -> str:
    lines: list[str] = ["# pilot-sys session report", ""]
    if result.status is Status.INVALID:
        hidden = ", ".join(result.bottleneck.hidden_bottlenecks) or "?"
        lines += [
            f'<p style="color:red"><b>&#9940; INVALID RESULT: a hidden bottleneck at {hidden} limited this '
            f"benchmark, not the component under test ({result.bottleneck.cut or 'unknown'}). "
            "The numbers below do not describe the component under test.</b></p>",
            "",
        ]
    lines += [
        f"- **Status:** `{result.status}`: {result.stop_reason} (exit code {result.exit_code}: "
        f"{EXIT_MEANING.get(result.exit_code, '?')})",
        f"- **Result directory:** `{result.result_dir}`",
        f"- **Elapsed:** {result.elapsed_seconds:.1f} s; report written "
        f"{time.strftime('%Y-%m-%d %H:%M:%S %Z', time.localtime(result.created_at))}",
        f"- **Targets:** CI full width <= {100 * result.config.get('ci_perc', 0):g}% of the mean at "
        f"{100 * result.config.get('confidence', 0):g}% confidence, |autocorrelation| <= "
        f"{result.config.get('autocorr_limit')}, preset `{result.config.get('preset')}`",
        "",
    ]
    for w in result.workloads:
        lines += [f"## Results: {w.name}", ""]
        if w.command:
            lines += ["Command: `" + shlex.join(w.command) + "`", ""]
        rows = []
        for p in w.pis.values():
            width = f"{100 * p.ci_width_rel:.2f}%" if p.ci_width_rel is not None else "unknown"
            rows.append([
                p.name, _fmt(p.mean, p.unit), f"[{_fmt(p.ci_low, p.unit)}, {_fmt(p.ci_high, p.unit)}]", width,
                f"{100 * p.target:g}%", ("yes" if p.ci_reached else "**no**") if p.gates_stop else "n/a (reported only)",
                str(p.sample_size),
                "-" if p.subsession_size is None else (f"{p.subsession_count} rounds" if p.interval_basis == "rounds"
                                                       else str(p.subsession_size)),
                "-" if p.required_sample_size is None else str(p.required_sample_size), p.source_label,
            ])
        lines += _table(["PI", "mean", f"{int(round(100 * result.config.get('confidence', 0.95)))}% CI", "CI width",
                         "target", "met", "samples", "subsession", "required n", "from"], rows)
        c = w.rounds
        lines += ["", f"Rounds: {c.total} run, {c.analysed} analysed, {c.short} short (stored, not analysed), "
                      f"{c.below_alpha} below alpha, {c.failed} failed; {w.seconds_in_rounds:.1f} s in rounds. "
                      + (f"Final valid work-amount range: {w.work_range[0]:.6g} .. {w.work_range[1]:.6g} {w.work_unit}."
                         if w.work_range[1] > w.work_range[0] else "The work amount was fixed (no %WORK_AMOUNT%)."), ""]
        if w.phase_check is not None:
            ph = w.phase_check
            mark = "**differs**: " if ph.inconsistent_rounds else ""
            lines += [f"Phase behaviour of the rounds (transition signatures of their monitor traces): {mark}{ph.note}", ""]
        checks = [p for p in w.pis.values() if p.readings_mean is not None]
        if checks:
            lines += ["### Cross-check with the workload's own per-round figures", ""]
            for p in checks:
                verdict = {True: "inside the CI", False: "**outside the CI**", None: "no CI to compare"}[p.readings_in_ci]
                lines.append(f"- `{p.name}`: the workload's own per-round figures average {_fmt(p.readings_mean, p.unit)} "
                             f"over the analysed rounds: {verdict} [{_fmt(p.ci_low, p.unit)}, {_fmt(p.ci_high, p.unit)}] "
                             "(they include each round's warm-up and cool-down, which EDM removed from the unit readings)")
            lines.append("")
        lines += ["### Removed phases", ""]
        any_removed = False
        for p in w.pis.values():
            for r in p.removed:
                any_removed = True
                what = {"edm": "EDM on unit readings", "alpha": "WPS alpha bound", "none": "no removal"}.get(r.method, r.method)
                extra = f" ({r.detail})" if r.detail else ""
                if r.method == "edm":
                    lines.append(f"- `{p.name}`: {what}: {r.samples_removed} of {r.samples_removed + r.samples_kept} "
                                 f"unit readings removed as warm-up/cool-down over {r.rounds} round(s){extra}")
                else:
                    lines.append(f"- `{p.name}`: {what}: {r.rounds} round(s) excluded{extra}")
        if not any_removed:
            lines.append("- nothing removed")
        lines.append("")
        if w.wps is not None and w.wps.v is not None:
            x = w.wps
            vu = x.v_unit or "work/s"
            lines += [
                "### Work-per-second regression (t = alpha + w / v)", "",
                f"- v = {_fmt(x.v, vu)}, CI [{_fmt(x.v_ci_low, vu)}, {_fmt(x.v_ci_high, vu)}] over {x.rounds_used} rounds",
                f"- alpha = {_fmt(x.alpha, 's')}"
                + (f", CI [{_fmt(x.alpha_ci_low, 's')}, {_fmt(x.alpha_ci_high, 's')}]" if x.alpha_ci_low is not None else "")
                + " (time of the non-stable phases beyond what their work would take at v)",
                f"- smallest useful work (alpha at most 10% of a round: 9 x alpha x v) = "
                f"{_fmt(x.alpha_work, vu.removesuffix('/s'))}"
                + (f" = {x.alpha_work_amount:.6g} {w.work_unit} of work amount: rounds below it are not analysed "
                   "and it raised the lower end of the work-amount range" if x.alpha_work_amount
                   else " (not applied: alpha is not shown to be above 0)"),
                "",
            ]
            lines += [f"- note: {msg}" for msg in x.warnings]
            if x.warnings:
                lines.append("")
    if result.comparison is not None:
        cmp_ = result.comparison
        lines += [f"## Comparison ({cmp_.pi})", "", "Ranking, best first: " + " > ".join(f"`{n}`" for n in cmp_.ranking), ""]
        rows = []
        for pr in cmp_.pairs:
            rows.append([f"{pr.better} vs {pr.worse}", f"{pr.difference:.6g}",
                         "-" if pr.difference_rel is None else f"{100 * pr.difference_rel:.2f}%",
                         f"[{pr.ci_low:.6g}, {pr.ci_high:.6g}]" if pr.ci_low is not None and pr.ci_high is not None else "-",
                         "-" if pr.p_value is None else f"{pr.p_value:.3g}", "no" if not pr.cis_overlap else "yes",
                         "yes" if pr.separated else "**no**"])
        lines += _table(["pair", "difference", "relative", "CI of difference", "Welch p", "CIs overlap", "separated"], rows)
        lines += ["", f"Separated: non-overlapping CIs, or Welch p < {cmp_.p_threshold:g}.", ""]
        for ph in cmp_.phase_behaviour:
            lines.append(f"- Phase behaviour: {'**differs**: ' if ph.differs else ''}{ph.note}")
        if cmp_.phase_behaviour:
            lines.append("")
    b = result.bottleneck
    lines += ["## Bottleneck verdict", ""]
    if not b.monitored:
        lines += [f"Not monitored{f': {b.error}' if b.error else ' (--no-monitor)'}. Nothing is known about hidden bottlenecks.", ""]
    else:
        verdict = {True: "**valid**: no component other than the component under test passed the threshold",
                   False: "**INVALID**: hidden bottleneck at " + ", ".join(f"`{h}`" for h in b.hidden_bottlenecks),
                   None: "unknown (no round could be judged)"}[b.valid]
        thr = result.config.get("bottleneck_threshold", 0.8)
        lines += [f"- Component under test: `{b.cut or 'unknown'}`", f"- Verdict: {verdict} (threshold {100 * thr:g}% of each stated limit)"]
        for comp, evidence in (b.detail.get("evidence") or {}).items():
            lines.append(f"- `{comp}`: {evidence}")
        if b.detail.get("samples"):
            lines.append(f"- Judged over the analysed rounds' {b.detail['samples']} samples together")
        if b.rounds_invalid:
            lines.append(f"- Rounds whose own verdict was invalid: {ranges(b.rounds_invalid)}")
        for note in b.detail.get("notes") or []:
            lines.append(f"- note: {note}")
        if b.error:
            lines.append(f"- Monitor problems: {b.error}")
        if b.max_utilization:
            lines += ["", "Peak utilization (fraction of the stated limit) over analysed rounds:", ""]
            lines += _table(["series", "peak"], [[f"`{k}`", f"{100 * v:.1f}%"] for k, v in list(b.max_utilization.items())[:12]])
        lines.append("")
    o = result.overhead
    lines += ["## Monitoring overhead", ""]
    if o.sampling_rate_hz is None:
        lines.append("- Monitoring was off.")
    else:
        detail = ""
        if o.rate_chosen_by == "tuner":
            budget = f" of {100 * o.budget:.3g}% of the PI" if o.budget is not None else ""
            tuning = f"; tuning took {o.tuning_seconds:.1f} s" if o.tuning_seconds is not None else ""
            detail = (f", `--overhead-budget`: the highest rate whose measured overhead, CI upper bound included, "
                      f"stays within the budget{budget}{tuning}")
        lines.append(f"- Sampling rate: {o.sampling_rate_hz:.4g} Hz (chosen by: {o.rate_chosen_by}{detail})")
    if o.measured_overhead is not None:
        ci = f", {int(round(100 * result.config.get('confidence', 0.95)))}% CI [{100 * o.measured_overhead_ci[0]:+.2f}%, " \
             f"{100 * o.measured_overhead_ci[1]:+.2f}%]" if o.measured_overhead_ci else ""
        p_value = f", p = {o.p_value:.3g}" if o.p_value is not None else ""
        lines.append(f"- Measured overhead (loss of the round's duration with monitoring on): "
                     f"{100 * o.measured_overhead:+.2f}%{ci}{p_value} ({o.method or 'on/off rounds'})")
    elif o.rate_chosen_by == "tuner":
        lines.append("- Measured overhead: none measured at the chosen rate")
    else:
        lines.append("- Measured overhead on the result: not measured in this session (`--overhead-budget` or "
                     "`pilot-sys tune` measures it)")
    if o.note:
        lines.append(f"- Tuner: {o.note}")
    if o.monitor_cost:
        mc = o.monitor_cost
        lines.append(f"- The monitor's own cost: {100 * mc.get('cpu_seconds_per_second', 0):.3f}% of a CPU, "
                     f"{1e6 * mc.get('cpu_seconds_per_sample', 0):.0f} us per sample, "
                     f"{mc.get('wakeups_per_second', 0):.0f} wake-ups/s, "
                     f"{mc.get('memory_bytes', 0) / 2**20:.1f} MiB")
    if o.engine_seconds_per_round is not None:
        lines.append(f"- pilot-sys bookkeeping between rounds: {1e3 * o.engine_seconds_per_round:.2f} ms per round (median)")
    lines.append("")
    if plots:
        lines += ["## Plots", ""]
        for title, path in plots.items():
            lines += [f"### {title}", "", f"![{title}]({path.as_posix()})", ""]
    if rounds_table:
        lines += ["## Rounds", ""]
        lines += _table(["#", "workload", "work", "seconds", "phase", "state", "readings"], rounds_table)
        lines.append("")
    ctx = result.context
    lines += ["## Context", ""]
    ctx_rows = [
        ["CPU", str(ctx.get("cpu_model") or "unknown")], ["CPUs online", str(ctx.get("cpus_online") or "unknown")],
        ["memory", _fmt(ctx.get("memory_bytes"), "B")], ["kernel", str(ctx.get("kernel") or "unknown")],
        ["OS", str(ctx.get("os") or "unknown")],
        ["frequency governor", str(ctx.get("governor") or "unknown (no cpufreq in /sys)")],
        ["host", str(ctx.get("hostname") or "unknown")], ["pilot-sys", str(ctx.get("pilot_sys_version"))],
        ["Python", str(ctx.get("python"))], ["command line", "`" + shlex.join(ctx.get("command_line") or []) + "`"],
        ["working directory", f"`{ctx.get('cwd')}`"],
    ]
    lines += _table(["", ""], ctx_rows)
    lines.append("")
    if result.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in result.notes] + [""]
    return "\n".join(lines)
