"""``pilot-sys run --overhead-budget``: tune the sampling rate for the session's own workload first.

The tuner (``pilot_sys.monitor.tuner``) measures the overhead with interleaved monitored and
unmonitored rounds; here it gets the session's workload at a work amount the session will
really run (its first planned round: the cheapest valid one, so tuning costs little) with the
sampler the session's rounds will run (``monitoring.session_sampler_factory``: the same plug-ins
over the same discovered graph, and the round's own processes, ``process:workload``), so the
overhead it reports is the session's. Its answer becomes the session's sampling rate and the
``overhead`` entry of ``session.json``, from which every report's overhead section is built.
It runs before the result directory exists, so a budget the measurement does not show met
(``MeasuredOutcome``: exit 6 when the overhead's interval straddles the budget, 7 when it lies
above it even at the slowest useful rate) leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pilot_sys import units
from pilot_sys.errors import BadInput, MeasuredOutcome
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.planner import Planner
from pilot_sys.workload.base import Workload

if TYPE_CHECKING:  # the tuner loads scipy: only when --overhead-budget is given
    from pilot_sys.monitor.tuner import TuneResult

BUDGET_OPTION = "--overhead-budget"


def refuse_conflicts(
    budget: float | None, sample_rate: float | None, monitor: bool, resume: bool
) -> None:
    """One line naming the conflict, before anything runs."""
    if budget is None:
        return
    if resume:
        raise BadInput(
            BUDGET_OPTION,
            "a resumed session keeps the sampling rate it started with; drop --overhead-budget",
        )
    if sample_rate is not None:
        raise BadInput(
            BUDGET_OPTION,
            "chooses the sampling rate itself: drop --sample-rate (or drop --overhead-budget "
            "to sample at the rate you gave)",
        )
    if not monitor:
        raise BadInput(
            BUDGET_OPTION,
            "tunes the monitor's sampling rate, so it needs monitoring: drop --no-monitor",
        )


def tuning_work_amount(cfg: SessionConfig) -> float:
    """The work amount of the session's first planned round."""
    return float(Planner(cfg).next_round().work_amount)


def tune_session_rate(
    workload: Workload,
    cfg: SessionConfig,
    budget: float,
    note: Callable[[str], None],
) -> dict[str, Any]:
    """Tune, report each measurement through ``note``, and return the manifest's ``overhead`` entry.

    Raises ``MeasuredOutcome`` naming --overhead-budget (exit 6 or 7, see ``ExitCode``) when
    even the slowest useful rate is not shown within the budget.
    """
    from pilot_sys.monitor.tuner import (
        TuneIteration,
        TuneStatus,
        percent,
        rate_bounds,
        tune_for_workload,
    )
    from pilot_sys.session.monitoring import session_sampler_factory
    from pilot_sys.topology.remote_hosts import parse_host_specs

    work = tuning_work_amount(cfg)
    bounds = rate_bounds()
    factory = session_sampler_factory(workload.data_path_args(), parse_host_specs(cfg.hosts))
    unit = f" {cfg.work_unit}" if cfg.work_unit else ""
    at = "" if cfg.fixed_work else f", rounds of {work:g}{unit} (the first planned round)"
    note(
        f"tuning the sampling rate first: budget {percent(budget)} of the round's duration "
        f"(CI upper bound), {bounds.min_hz:g}-{bounds.max_hz:g} Hz{at}"
    )

    def each(it: TuneIteration) -> None:
        pct = lambda x: units.percent(x, 2, signed=True)  # noqa: E731
        note(
            f"  tune {it.index}: {it.rate_hz:.1f} Hz ({it.step.value}) overhead {pct(it.overhead)} "
            f"[{pct(it.ci_low)}, {pct(it.ci_high)}], {units.duration(it.elapsed_s)}"
        )

    tuned = tune_for_workload(
        workload,
        budget,
        work_amount=work,
        confidence=cfg.confidence,
        sampler_factory=factory,
        budget_option=BUDGET_OPTION,
        allow_unreachable=True,
        on_iteration=each,
    )
    if tuned.status in (TuneStatus.UNDECIDED, TuneStatus.OVER_BUDGET, TuneStatus.NEGATIVE):
        raise MeasuredOutcome(BUDGET_OPTION, not_shown_message(tuned), tuned.exit_code)
    section = tuned.overhead_section()
    section["tuning_seconds"] = tuned.elapsed_s
    section["work_amount"] = work
    if tuned.monitor_cost is not None:
        section["tuning_monitor_cost"] = tuned.monitor_cost.model_dump()
    loud = tuned.status is TuneStatus.MAX_MEASUREMENTS
    note(
        f"{'WARNING: ' if loud else ''}sampling at {tuned.rate_hz:.1f} Hz: {tuned.message} "
        f"({units.duration(tuned.elapsed_s)})"
    )
    return section


def not_shown_message(tuned: TuneResult) -> str:
    """The tuner's verdict in terms of `pilot-sys run`'s own options (it has no --pairs or
    --min-spike: those belong to `pilot-sys tune`, which explores further)."""
    from pilot_sys.monitor.tuner import TuneStatus, overhead_text, pairs_needed, percent

    budget = percent(tuned.budget)
    est = tuned.overhead
    where = f"the slowest useful rate {tuned.bounds.min_hz:g} Hz ({tuned.bounds.min_reason})"
    if est is None:
        return (
            f"{budget} is not shown to hold even at {where}; raise the budget or give a rate "
            "with --sample-rate"
        )
    measured = f"measured overhead {overhead_text(est)}"
    if tuned.status is TuneStatus.NEGATIVE:
        return f"{tuned.message}; or give the rate with --sample-rate"
    if tuned.status is TuneStatus.UNDECIDED:
        needed = pairs_needed(est, tuned.budget)
        more = f" (about {needed} pairs of rounds at this noise)" if needed is not None else ""
        return (
            f"undecided: at {where} the {measured} straddles the budget {budget}, so the "
            "measurement cannot decide whether it holds; run on a quieter machine, raise the "
            f"budget, or explore with `pilot-sys tune --budget {100 * tuned.budget:g}% --pairs N`"
            f"{more} and "
            "give the rate with --sample-rate"
        )
    return (
        f"{budget} cannot be met: even at {where} the {measured} lies above it; raise the "
        "budget, or give a slower rate with --sample-rate (`pilot-sys tune --min-spike` "
        "explores slower ones)"
    )
