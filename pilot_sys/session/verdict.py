"""A session's verdict, decided once from the final analysis; every output renders this one.

Semantics (also in docs/verdict.md; every output uses these words):

- **Judged round.** A round (not short, not failed) whose monitor trace has enough sampled
  intervals to judge on its own: at least ``1 / max_hot_fraction`` (10 at the default 10 %,
  ``monitor.bottleneck.min_intervals``). A shorter round is not judged on its own account.
- **Excluded round.** A judged round whose own monitor verdict names a *hidden bottleneck* (a
  component other than the component under test, the CUT, above the threshold, default 80 %, for
  more than 10 % of the round's time); only when the CUT is known (named or resolved), since
  without one a hot component may be the very one the workload exercises. It is kept in the
  journal, counted and shown ("round 20 excluded: hidden bottleneck at cpu:host (compute): above
  80 % for 34 % of the round (mean 61 %)") and left out of the PI analysis (intervals, WPS
  fit, the alpha bound): it measured that component, not the CUT.
- **Invalid session.** More than half of the judged rounds were excluded, or the verdict over
  the *included* rounds' traces taken together still names a hidden bottleneck (a sustained
  problem that short rounds hide). Otherwise the status follows the CI targets over the
  included rounds: valid (every target met), limit reached (the session limit came first), ...
  with a line saying how many rounds were excluded and why.
- **Which governs.** When the CUT is saturated and another component is a hidden bottleneck,
  both are shown and the hidden bottleneck governs: the number may be that component's limit,
  not the CUT's (``monitor.bottleneck.cut_line``, the words `monitor` prints too).
- Interrupted and failed sessions keep their status (and exit code) and still carry the
  bottleneck line.

When the target is not reached, the verdict leads with the best estimate and its interval, says
why the target was missed (noise, drift, a busy host, too few rounds) and the one thing to do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from pilot_sys import units
from pilot_sys.monitor.bottleneck import (
    DEFAULT_MAX_HOT_FRACTION,
    cut_line,
    enough_to_judge,
)
from pilot_sys.session.config import Preset, SessionConfig
from pilot_sys.session.journal import RoundRecord
from pilot_sys.session.result import (
    BottleneckSection,
    Comparison,
    ExcludedRound,
    PIResult,
    Reason,
    SessionResult,
    SessionVerdict,
    Status,
    StopReason,
    WorkloadResult,
    WPSResult,
)

#: the stop reason of an invocation that ended without a clean stop (found by ``report DIR``)
KILLED = "pilot-sys stopped without a clean stop (killed or crashed)"

#: A share above this of the judged rounds excluded makes the session invalid.
MAX_EXCLUDED_SHARE = 0.5
#: judged rounds below which their share says nothing: one long round excluded beside many
#: short ones (judged together) is a round excluded, not a session governed by another component
MIN_JUDGED_FOR_SHARE = 3


# -- rounds ------------------------------------------------------------------------------------
def judged(rec: RoundRecord, max_hot_fraction: float = DEFAULT_MAX_HOT_FRACTION) -> bool:
    """A usable round whose monitor verdict covers enough samples to stand on its own."""
    m = rec.monitor
    return (
        not rec.failed
        and not rec.short
        and m is not None
        and m.valid is not None
        and enough_to_judge(m.samples, max_hot_fraction)
    )


def is_excluded(
    rec: RoundRecord, cut: str | None, max_hot_fraction: float = DEFAULT_MAX_HOT_FRACTION
) -> bool:
    """A judged round whose own verdict names a hidden bottleneck: out of the PI analysis.
    Only with a known component under test: without one, a hot component may be the very one
    the workload exercises (a CPU benchmark without --cut), and no round is excluded for it
    (the session's verdict still names it)."""
    return (
        cut is not None
        and judged(rec, max_hot_fraction)
        and rec.monitor is not None
        and rec.monitor.valid is False
    )


def unjudged_sighting(rec: RoundRecord, max_hot_fraction: float = DEFAULT_MAX_HOT_FRACTION) -> bool:
    """A usable round that saw a hidden bottleneck but is too short to be judged on its own."""
    m = rec.monitor
    return (
        not rec.failed
        and not rec.short
        and m is not None
        and m.valid is False
        and not enough_to_judge(m.samples, max_hot_fraction)
    )


def _busy(label: str, above: float | None, mean: float | None, threshold: float | None) -> str:
    """``cpu:host (compute): above 80 % for 34 % of the round (mean 61 %)``: the share of time
    above the threshold is what excluded the round, so it leads; the mean alone (20 %) would
    read as the opposite of a bottleneck."""
    if above is None or threshold is None:
        return label if mean is None else f"{label} (mean {units.percent(mean, 0)})"
    text = (
        f"{label}: above {units.percent(threshold, 0)} for {units.percent(above, 0)} of the round"
    )
    return text + (f" (mean {units.percent(mean, 0)})" if mean is not None else "")


def excluded_round(rec: RoundRecord, round_verdict: dict[str, Any] | None) -> ExcludedRound:
    """What an excluded round is shown as; ``round_verdict`` is the round's monitor verdict as
    saved in its trace (for each component's share of time above the threshold and its mean
    utilization), None when it cannot be read."""
    components = list(rec.monitor.hidden_bottlenecks) if rec.monitor is not None else []
    busy: dict[str, float | None] = {c: None for c in components}
    above: dict[str, float | None] = {c: None for c in components}
    threshold = (round_verdict or {}).get("threshold")
    for h in (round_verdict or {}).get("hidden_bottlenecks") or []:
        label = f"{h.get('component')} ({h.get('direction')})"
        if label in busy and h.get("mean") is not None:
            busy[label] = float(h["mean"])
        if label in above and h.get("time_above_fraction") is not None:
            above[label] = float(h["time_above_fraction"])
    where = (
        "; ".join(_busy(c, above[c], busy[c], threshold) for c in components)
        or "a component other than the CUT"
    )
    return ExcludedRound(
        index=rec.index,
        workload=rec.workload,
        components=components,
        busy=busy,
        time_above=above,
        threshold=float(threshold) if threshold is not None else None,
        text=f"round {rec.index} excluded: hidden bottleneck at {where}",
    )


def ranges(indices: Iterable[int]) -> str:
    """``[1, 2, 3, 7, 9, 10]`` -> ``1-3, 7, 9-10``."""
    out: list[list[int]] = []
    for i in sorted(set(indices)):
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in out)


def _components(excluded: list[ExcludedRound]) -> str:
    return ", ".join(dict.fromkeys(c for e in excluded for c in e.components)) or "a component"


def excluded_text(excluded: list[ExcludedRound], judged_rounds: int) -> str | None:
    """``2 of 30 judged rounds excluded (rounds 20, 25): hidden bottleneck at cpu:host
    (compute)``; None when no round was excluded."""
    if not excluded:
        return None
    which = ranges(e.index for e in excluded)
    word = "round" if len(excluded) == 1 else "rounds"
    return (
        f"{len(excluded)} of {judged_rounds} judged rounds excluded ({word} {which}): "
        f"hidden bottleneck at {_components(excluded)}"
    )


# -- the words for one PI ------------------------------------------------------------------------
#: a PI without an analysed reading: its rounds may still be plotted (excluded, short), so this
#: never says "no reading"
NO_ESTIMATE = "no estimate yet (no round analysed)"


def estimate_text(p: PIResult, network: bool = False) -> str:
    """A PI's best estimate in one string, the same wherever it is shown (summary, report.md,
    the plot titles): ``2.17 GiB/s ± 3.2 %, 95% CI [2.10 GiB/s, 2.24 GiB/s]``; over a drifting
    level ``1.02 GiB/s, 95% CI [...] over 12 round means (the session's average over a drifting
    level, not a stable one)``; without an interval ``234 MiB/s so far, no interval yet``."""
    conf = f"{int(round(100 * p.confidence))}% CI"
    if p.mean is None:
        return NO_ESTIMATE
    if p.ci_low is not None and p.ci_high is not None:
        mean, low, high = units.ci_parts(p.mean, p.ci_low, p.ci_high, p.unit, network)
        half = units.relative_half_width(p.mean, p.ci_low, p.ci_high)
        return f"{mean} {units.plus_minus(half)}, {conf} [{low}, {high}]"
    d = p.drifting
    if d is not None:
        mean, low, high = units.ci_parts(p.mean, d.ci_low, d.ci_high, p.unit, network)
        return (
            f"{mean}, {conf} [{low}, {high}] over {d.rounds} round means (the session's "
            "average over a drifting level, not a stable one)"
        )
    return f"{units.quantity(p.mean, p.unit, network)} so far, no interval yet"


def needs_text(p: PIResult) -> str:
    """Why a PI has no interval yet, as a person reads it: ``needs about 400 samples (50
    effective), has 89``."""
    from pilot_sys.stats.subsession import MIN_EFFECTIVE_SAMPLES

    if p.drifting is not None:
        return p.drifting.reason
    if p.required_sample_size:
        return (
            f"needs about {p.required_sample_size} samples ({MIN_EFFECTIVE_SAMPLES} "
            f"effective), has {p.sample_size}"
        )
    return f"needs {MIN_EFFECTIVE_SAMPLES} effective samples, has {p.sample_size}"


def alpha_text(w: WPSResult) -> str:
    """What became of the WPS alpha bound, consistent with alpha's own interval."""
    if w.alpha_bound == "applied" or (w.alpha_bound == "none" and w.alpha_work_amount):
        return (
            "rounds below it are not analysed, and it raised the lower end of the work-amount range"
        )
    if w.alpha_bound == "not_above_zero":
        return "not applied: alpha's CI reaches 0, so alpha is not shown to be above 0"
    if w.alpha_bound == "above_range":
        return "not applied: it is above the largest work amount (-w MAX), so every round would go"
    return "not applied"


# -- seconds -----------------------------------------------------------------------------------
def nice_limit(seconds: float) -> int:
    """A session limit to suggest: ``seconds`` rounded up to one significant digit (840 -> 900),
    at least 10 s."""
    s = max(10.0, seconds)
    power = 10 ** math.floor(math.log10(s))
    return int(math.ceil(s / power - 1e-9) * power)


def limit_advice(
    needed_seconds: float | None,
    preset: str | None,
    max_rounds: int | None = None,
    more_rounds: int | None = None,
) -> str:
    """``use -s 900 or --preset normal``: what lets a session of about ``needed_seconds`` run.
    After a ``--max-rounds`` stop (``max_rounds``: that limit) neither adds a round, so the advice
    raises that limit instead: ``raise --max-rounds to 25 (about 15 more rounds)``."""
    if max_rounds is not None:
        if more_rounds:
            return (
                f"raise --max-rounds to {max_rounds + more_rounds} (about {more_rounds} more "
                "round(s) a workload)"
            )
        return f"raise --max-rounds above {max_rounds} (how many more are needed is not known yet)"
    quick = preset == Preset.QUICK
    if needed_seconds is None or not math.isfinite(needed_seconds):
        return "use a longer -s" + (" or --preset normal" if quick else "")
    return f"use -s {nice_limit(1.2 * needed_seconds)}" + (" or --preset normal" if quick else "")


# -- the decision ------------------------------------------------------------------------------
def _gating(workloads: list[WorkloadResult]) -> list[tuple[WorkloadResult, PIResult]]:
    return [(w, p) for w in workloads for p in w.pis.values() if p.gates_stop]


def _first_missed(workloads: list[WorkloadResult]) -> tuple[WorkloadResult, PIResult] | None:
    return next(((w, p) for w, p in _gating(workloads) if not p.ci_reached), None)


def _lead(
    workloads: list[WorkloadResult],
    network: Callable[[WorkloadResult], bool],
    missed_first: bool = True,
) -> str:
    """The best estimate the headline leads with: the first PI that missed its target (when
    ``missed_first``), else the first the session waited for, else the first."""
    pair = (_first_missed(workloads) if missed_first else None) or next(
        iter(_gating(workloads)), None
    )
    if pair is None:
        pair = next(((w, p) for w in workloads for p in w.pis.values()), None)
    if pair is None:
        return "no PI"
    w, p = pair
    tag = f"[{w.name}] " if len(workloads) > 1 else ""
    return f"{tag}{p.name} {estimate_text(p, network(w))}"


#: component kinds that are a limit the kernel imposes (issue: kernel limits), not a device
LIMITER_PREFIXES = ("cgroup:", "qdisc:", "cpufreq:")


def _invalid_next_step(target: str) -> str:
    """What to do when ``target`` governed the numbers: a kernel limit is lifted, not quietened."""
    if target.startswith(LIMITER_PREFIXES):
        return (
            f"raise or remove the limit {target} imposes (or run outside it), or name it with "
            f"--cut {target} if the limit is what you meant to measure"
        )
    return (
        f"run on a quieter host (stop what keeps {target} busy), or name it with "
        f"--cut {target} if it is what you meant to measure"
    )


def _busy_evidence(bsec: BottleneckSection, excluded: list[ExcludedRound]) -> str | None:
    """What the monitor saw of a busy host over the included rounds, or None."""
    parts: list[str] = []
    busy = bsec.detail.get("busy") or {}
    threshold = bsec.detail.get("threshold", 0.8)
    for label, share in busy.items():
        parts.append(
            f"{label} above {units.percent(threshold, 0)} for {units.percent(share, 0)} "
            "of the included rounds' time"
        )
    if excluded:
        parts.append(
            f"{len(excluded)} round(s) excluded for a hidden bottleneck at {_components(excluded)}"
        )
    if bsec.rounds_unjudged:
        parts.append(f"{len(bsec.rounds_unjudged)} round(s) too short to judge saw one")
    return "; ".join(parts) or None


def _missed(
    workloads: list[WorkloadResult],
    cfg: SessionConfig,
    bsec: BottleneckSection,
    excluded: list[ExcludedRound],
    comparison: Comparison | None,
    needed_seconds: float | None,
    more_rounds: int | None,
    stop_reason: str = "",
) -> tuple[Reason, str, str]:
    """Why the targets were missed and the one thing to do (limit reached or incomplete).
    ``stop_reason``: a ``--max-rounds`` stop is advised to raise that limit, not the time."""
    preset = str(cfg.preset)
    by_rounds = stop_reason == StopReason.MAX_ROUNDS and cfg.max_rounds is not None
    advice = limit_advice(
        needed_seconds, preset, cfg.max_rounds if by_rounds else None, more_rounds
    )
    at_rate = (
        f"; at this rate it needs about {units.duration(needed_seconds)} in all"
        if needed_seconds is not None and math.isfinite(needed_seconds) and not by_rounds
        else ""
    )
    analysed = min((w.rounds.analysed for w in workloads), default=0)
    pair = _first_missed(workloads)
    if analysed < cfg.min_rounds:
        short = max((w.rounds.short for w in workloads), default=0)
        below = max((w.rounds.below_alpha for w in workloads), default=0)
        why = (
            f"only {analysed} round(s) could be analysed; a result needs at least {cfg.min_rounds}"
        )
        left_out = [
            f"{short} shorter than {units.duration(cfg.min_round_seconds)}" if short else "",
            f"{len(excluded)} excluded" if excluded else "",
            f"{below} below the smallest useful work (alpha)" if below else "",
        ]
        if any(left_out):
            why += f" (not analysed: {', '.join(x for x in left_out if x)})"
        if short or below:
            todo = "raise -w MAX so that rounds do more work, or " + advice
            return Reason.TOO_FEW_ROUNDS, why, todo
        return Reason.TOO_FEW_ROUNDS, why + at_rate, advice
    if pair is None:
        if comparison is not None and not comparison.all_separated:
            return (
                Reason.NOT_SEPARATED,
                "every interval met its target, but some workloads' intervals "
                "still overlap" + at_rate,
                advice,
            )
        return (
            Reason.TOO_FEW_ROUNDS,
            "the targets were not confirmed before the limit" + at_rate,
            advice,
        )
    w, p = pair
    name = f"[{w.name}] {p.name}" if len(workloads) > 1 else p.name
    if p.drifting is not None:
        return (
            Reason.DRIFT,
            f"{name}: {p.drifting.reason}, so there is no stable level to estimate; "
            "the interval shown is the session's average over a drifting level",
            "find what moves the level (other work on the host, a filling cache) and run on a "
            "quieter host, or with a longer -s to see whether the level settles",
        )
    if p.ci_low is None or p.ci_high is None:
        more = f"; about {more_rounds} more round(s)" if more_rounds else ""
        return (
            Reason.TOO_FEW_ROUNDS,
            f"{name}: no interval yet: {needs_text(p)}{more}{at_rate}",
            advice,
        )
    width = units.plus_minus(units.relative_half_width(p.mean, p.ci_low, p.ci_high))
    noise = f"{name}: the interval is {width} for the target {units.target(p.target)}"
    evidence = _busy_evidence(bsec, excluded)
    if evidence is not None:
        return (
            Reason.BUSY_HOST,
            f"{noise}, and the host was busy: {evidence}",
            ("run on a quieter host (stop what keeps it busy), or " + advice),
        )
    more = f"; about {more_rounds} more round(s) needed" if more_rounds else ""
    return (
        Reason.NOISE,
        f"{noise}: the readings vary too much for the rounds run{more}{at_rate}",
        advice,
    )


def judged_over_text(bsec: BottleneckSection, included: int | None = None) -> str:
    """Which rounds the bottleneck check read, in the words every output uses: ``over the 8
    included rounds taken together``, or, when every judged round was excluded, ``over the 58
    excluded rounds taken together (none was included)``."""
    if bsec.detail.get("judged_over") == "excluded rounds":
        return (
            f"over the {len(bsec.rounds_invalid)} excluded rounds taken together "
            "(none was included)"
        )
    count = f"{included} " if included is not None else ""
    return f"over the {count}included rounds taken together"


def bottleneck_line(bsec: BottleneckSection, included: int) -> str:
    """The one line on hidden bottlenecks over the included rounds, whatever the status."""
    cut = bsec.cut or "unknown"
    if not bsec.monitored:
        why = f": {bsec.error}" if bsec.error else " (--no-monitor)"
        return f"bottleneck check: not done{why}; nothing is known about hidden bottlenecks"
    if bsec.valid is None:
        why = bsec.error or bsec.detail.get("not_judged") or "no round could be judged"
        return f"bottleneck check: not done ({why})"
    over = judged_over_text(bsec, included)
    what = f"component under test: {cut}"
    if bsec.detail.get("loopback"):
        what += f", {bsec.detail['loopback']}"
    if bsec.valid:
        return f"bottleneck check: passed {over} ({what})"
    return (
        f"bottleneck check: FAILED {over}: hidden bottleneck at "
        f"{', '.join(bsec.hidden_bottlenecks) or '?'} ({what})"
    )


#: what a failure's own text says when it was the file system, not the workload, that gave out
#: (fio's and the kernel's "No space left on device", errno's name, the built-in workload's words)
DISK_FULL_WORDS = ("no space left on device", "enospc", "edquot", "file system full", "disk full")


def disk_full(failure: str | None) -> bool:
    """Whether a workload's failure is a full file system (or quota): the workload itself was
    fine and needs no fixing; space does."""
    text = (failure or "").lower()
    return any(word in text for word in DISK_FULL_WORDS)


def status_of(
    stop_reason: str, any_result: bool, invalid: bool, failure: str | None = None
) -> tuple[Status, Reason | None]:
    """The status a stop reason gives, before the targets are looked at (None: they decide).
    A workload that stopped because the disk filled up is a disk-full stop, like the journal's:
    incomplete, not a failed workload."""
    if stop_reason == StopReason.INTERRUPTED:
        return Status.INTERRUPTED, Reason.INTERRUPTED
    if stop_reason == KILLED:
        return Status.INTERRUPTED, Reason.KILLED
    if stop_reason == StopReason.WORKLOAD_FAILED and disk_full(failure):
        return Status.INCOMPLETE, Reason.DISK_FULL
    if stop_reason == StopReason.WORKLOAD_FAILED:
        return Status.WORKLOAD_FAILED, Reason.WORKLOAD_FAILED
    if invalid:
        return Status.INVALID, None
    if stop_reason in (StopReason.TARGETS_MET, StopReason.TARGETS_MET_AT_END):
        return Status.VALID, Reason.TARGETS_MET
    if stop_reason == StopReason.DISK_FULL:
        return Status.INCOMPLETE, Reason.DISK_FULL
    return (Status.LIMIT_REACHED if any_result else Status.INCOMPLETE), None


def decide(
    *,
    stop_reason: str,
    workloads: list[WorkloadResult],
    bsec: BottleneckSection,
    excluded: list[ExcludedRound],
    judged_rounds: int,
    cfg: SessionConfig,
    comparison: Comparison | None = None,
    network: Callable[[WorkloadResult], bool] = lambda w: False,
    needed_seconds: float | None = None,
    more_rounds: int | None = None,
    failure: str | None = None,
    result_dir: str = "",
    early_stop: str | None = None,
    excluded_estimate: str | None = None,
) -> SessionVerdict:
    """The one verdict of a session (see the module docstring for the rules)."""
    included = sum(w.rounds.analysed for w in workloads)
    too_many = (
        judged_rounds >= MIN_JUDGED_FOR_SHARE and len(excluded) > MAX_EXCLUDED_SHARE * judged_rounds
    )
    sustained = bsec.valid is False
    any_result = any(p.mean is not None for w in workloads for p in w.pis.values())
    status, reason = status_of(stop_reason, any_result, too_many or sustained, failure)
    cut = bsec.cut
    hidden = list(bsec.hidden_bottlenecks)
    governing = bsec.governing
    if too_many and not hidden:
        governing = excluded[0].components[0].split(" (", 1)[0] if excluded[0].components else None
    governs = None
    if cut and bsec.cut_saturated and hidden:
        governs = cut_line(cut, True, hidden)
    why = next_step = None
    lead = _lead(workloads, network)
    resume = (
        f"`pilot-sys run --resume {result_dir}` continues" if result_dir else "--resume continues"
    )
    if status is Status.INVALID:
        if too_many:
            reason = Reason.TOO_MANY_EXCLUDED
            comps = _components(excluded)
            share = (
                "all of them, enough to be sure: stopped early"
                if stop_reason == StopReason.ALL_EXCLUDED
                else "more than half"
            )
            headline = (
                f"INVALID: {len(excluded)} of {judged_rounds} judged rounds were excluded for a "
                f"hidden bottleneck at {comps}, {share}: the numbers may describe "
                f"{governing or comps}, not the component under test ({cut or 'unknown'})"
            )
        else:
            reason = Reason.HIDDEN_BOTTLENECK
            headline = (
                f"INVALID: hidden bottleneck at {', '.join(hidden) or '?'} over the included "
                "rounds taken together: the numbers may describe "
                f"{governing or 'it'}, not the component under test ({cut or 'unknown'})"
            )
        target = governing or "it"
        next_step = _invalid_next_step(target)
    elif status is Status.VALID:
        dropped = (
            f" ({len(excluded)} excluded for a hidden bottleneck at {_components(excluded)})"
            if excluded
            else ""
        )
        headline = (
            f"valid: every CI target met over {included} analysed rounds{dropped}; "
            f"{_lead(workloads, network, missed_first=False)}"
        )
    elif status is Status.INTERRUPTED:
        how = (
            "interrupted"
            if reason is Reason.INTERRUPTED
            else "stopped without a clean stop (killed or crashed)"
        )
        total = sum(w.rounds.total for w in workloads)
        headline = f"{how} after {total} rounds (all kept); so far: {lead}"
        next_step = resume
    elif status is Status.WORKLOAD_FAILED:
        headline = f"the workload failed: {failure or 'see the notes'}"
        next_step = f"fix the workload; the rounds before it are kept: {resume}"
    elif status is Status.INCOMPLETE and reason is Reason.DISK_FULL:
        if stop_reason == StopReason.WORKLOAD_FAILED:
            headline = (
                f"incomplete: the disk filled up during a round ({failure}); the workload "
                f"itself did not fail; so far: {lead}"
            )
            next_step = (
                "free space where the workload writes, or lower -w MAX so that a round "
                f"writes less; the rounds before it are kept: {resume}"
            )
        else:
            headline = (
                f"incomplete: the round journal could not be written (disk full?); so far: {lead}"
            )
            next_step = f"free space; {resume}"
    elif stop_reason == StopReason.RUNAWAY:
        reason = Reason.DEPENDENCE
        why, next_step = _runaway(workloads, early_stop)
        headline = f"stopped early, no interval can come from more rounds; best estimate: {lead}"
    else:
        reason, why, next_step = _missed(
            workloads, cfg, bsec, excluded, comparison, needed_seconds, more_rounds, stop_reason
        )
        if status is Status.LIMIT_REACHED:
            headline = f"limit reached before the CI target; best estimate: {lead}"
        else:
            headline = f"incomplete: too few rounds for any result; {lead}"
    return SessionVerdict(
        status=status,
        reason=reason or Reason.TOO_FEW_ROUNDS,
        headline=headline,
        bottleneck=bottleneck_line(bsec, included),
        excluded=excluded_text(excluded, judged_rounds),
        governs=governs,
        why=why,
        next_step=next_step,
        governing=governing,
        cut=cut,
        cut_saturated=bsec.cut_saturated,
        hidden_bottlenecks=hidden,
        excluded_rounds=excluded,
        judged_rounds=judged_rounds,
        excluded_estimate=excluded_estimate if too_many else None,
    )


def _runaway(workloads: list[WorkloadResult], early_stop: str | None) -> tuple[str, str]:
    """Why a runaway stopped the session (``session.early_stop``) and what to do."""
    pair = _first_missed(workloads)
    lag1 = ""
    if pair is not None and pair[1].autocorrelation is not None:
        lag1 = f"; lag-1 autocorrelation {pair[1].autocorrelation:.2f}"
    why = early_stop or (
        "the samples needed grew with the samples: the readings stay correlated beyond what "
        "subsessions can break at this round length"
    )
    return (
        why + lag1,
        "lengthen the rounds (a larger -w MIN, or %WORK_AMOUNT% in the command so that the "
        "planner can), or find what keeps consecutive readings alike (a cache, a throttle, "
        "other work on the host)",
    )


def verdict_of(result: SessionResult) -> SessionVerdict:
    """The result's verdict; one derived from its other fields for result files written before
    the verdict existed (and hand-built results), by the same ``decide``."""
    if result.verdict is not None:
        return result.verdict
    try:
        cfg = SessionConfig.model_validate(result.config)
    except ValueError:
        cfg = SessionConfig()
    bsec = result.bottleneck
    v = decide(
        stop_reason=result.stop_reason,
        workloads=result.workloads,
        bsec=bsec,
        excluded=[],
        judged_rounds=0,
        cfg=cfg,
        comparison=result.comparison,
        network=lambda w: units.network_traffic(w.command, bsec.cut),
        result_dir=result.result_dir,
    )
    if v.status is not result.status:
        v = v.model_copy(update={"status": result.status})
    return v
