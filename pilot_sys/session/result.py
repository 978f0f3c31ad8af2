"""``result.json``: the one result format every command reads back.

Schema (``pilot-sys report --schema`` prints the full JSON Schema of :class:`SessionResult`):

- ``schema_version``, ``pilot_sys_version``, ``created_at`` (Unix time), ``result_dir``
- ``status``: ``valid`` | ``invalid`` (a hidden bottleneck) | ``limit_reached`` (session limit
  before every CI target) | ``workload_failed`` | ``interrupted`` | ``incomplete`` (too few
  rounds for any result); ``exit_code`` is the matching process exit code
- ``verdict``: the one decision every output renders (:class:`SessionVerdict`, semantics in
  ``pilot_sys.session.verdict`` and docs/verdict.md): the status, a short ``reason`` code, the
  ``headline`` sentence, the bottleneck line, the rounds ``excluded`` for a hidden bottleneck
  and why, which component ``governing`` the number, why a target was missed and ``next_step``
- ``workloads``: one :class:`WorkloadResult` per workload (one for `run`, several for an
  interleaved `compare --run`), each with
  - ``pis``: name -> :class:`PIResult`; every PI carries ``mean``, ``ci_low``, ``ci_high``
    (``None`` while unknown), the ``confidence`` level, the ``target`` relative width and
    whether it was ``ci_reached``, the ``source`` of its samples (``unit_readings`` after EDM,
    ``readings``, or ``wps`` for the work-per-second regression), the subsession size, the
    subsession sample count and variance (what a later comparison needs, the Pilot paper §III-F),
    the ``required_sample_size`` and what non-stable removal took away
  - ``wps``: the WPS fit ``t = alpha + w / v`` (alpha in seconds, v in work units/s with CI,
    ``alpha_work``: the smallest useful work, where alpha is at most 10% of a round's time,
    ``v alpha (1 - 0.1) / 0.1``; ``alpha_work_amount`` is the same bound in work-amount units)
  - ``rounds``: counts of rounds run, analysed, short, below alpha, excluded (a hidden
    bottleneck in the round), failed
  - ``phase_check``: whether the analysed rounds' monitor traces show the same phase behaviour
    (transition signatures, Isci and Martonosi's phase detection): the rounds checked, those
    that do not match their
    siblings (``inconsistent_rounds``), their scores and a one-line ``note``
- ``comparison``: for interleaved runs, the ranking with differences, CIs and Welch p-values,
  ``tables``: every shared PI of each workload against the first, with a verdict per PI, and
  ``phase_behaviour``: a note per pair of workloads whose phase behaviour differs
- ``bottleneck``: the monitor's verdict over the included rounds' traces taken together
  (``valid``, ``hidden_bottlenecks``, ``cut``, ``cut_saturated``, ``governing``), the rounds
  excluded on their own verdict (``rounds_invalid``) and those too short to judge that saw one
  (``rounds_unjudged``); ``graph_file`` names the saved component graph
- ``overhead``: sampling rate, how it was chosen (``default``, ``--sample-rate``, ``tuner``,
  ``off``), the measured overhead with its CI and p-value (None until ``--overhead-budget`` ran
  the tuner), the budget and the tuner's verdict, and the monitor's own cost
- ``context``: CPU model, kernel, governor, versions, command line
- ``stop_reason``, ``notes`` (repairs, warnings a reader must see)
- ``elapsed_seconds``: the session's wall time across every invocation (``--resume`` included;
  a killed invocation counts up to its last round, the idle gaps between invocations do not):
  what ``-s`` limits; ``measured_seconds``: the sum of the round times within it
"""

from __future__ import annotations

import json
import time
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pilot_sys import __version__
from pilot_sys.errors import BadInput, ExitCode
from pilot_sys.limits import JSON_BYTES, read_text_bounded
from pilot_sys.session.pi_table import PITable

RESULT_SCHEMA_VERSION = 1
RESULT_FILE = "result.json"


class Status(StrEnum):
    VALID = "valid"
    INVALID = "invalid"
    LIMIT_REACHED = "limit_reached"
    WORKLOAD_FAILED = "workload_failed"
    INTERRUPTED = "interrupted"
    INCOMPLETE = "incomplete"


STATUS_EXIT: dict[Status, int] = {
    Status.VALID: ExitCode.OK,
    Status.INVALID: ExitCode.INVALID_RESULT,
    Status.LIMIT_REACHED: ExitCode.LIMIT_REACHED,
    Status.WORKLOAD_FAILED: ExitCode.WORKLOAD_FAILED,
    Status.INTERRUPTED: ExitCode.INTERRUPTED,
    Status.INCOMPLETE: ExitCode.LIMIT_REACHED,
}


class StopReason(StrEnum):
    """Why the round loop stopped (``session.engine``); the verdict decides what it means."""

    TARGETS_MET = "every CI target met"
    # the limit stopped the rounds, and the final analysis (which sees the rounds since the last
    # paced one) meets every target: a valid result, not a near miss
    TARGETS_MET_AT_END = "every CI target met at the final analysis (the limit came first)"
    SESSION_LIMIT = "session time limit reached"
    MAX_ROUNDS = "maximum number of rounds reached"
    INTERRUPTED = "interrupted by the user"
    WORKLOAD_FAILED = "the workload failed"
    DISK_FULL = "the round journal could not be written"
    # stopped early (``session.early_stop``): more rounds could not change the answer
    ALL_EXCLUDED = "stopped early: every judged round excluded for the same hidden bottleneck"
    RUNAWAY = "stopped early: the samples needed grow with the samples"


class Reason(StrEnum):
    """Why a session ended with its status: the short code of :class:`SessionVerdict`."""

    TARGETS_MET = "targets_met"
    HIDDEN_BOTTLENECK = "hidden_bottleneck"  # over the included rounds taken together
    TOO_MANY_EXCLUDED = "too_many_excluded"  # more than half of the judged rounds excluded
    NOISE = "noise"  # the interval is still wider than the target
    DRIFT = "drift"  # the round means drift or wander: no stable level
    BUSY_HOST = "busy_host"  # too wide, and the monitor saw the host busy
    TOO_FEW_ROUNDS = "too_few_rounds"  # fewer rounds or samples than any interval needs
    NOT_SEPARATED = "not_separated"  # a comparison's intervals still overlap
    INTERRUPTED = "interrupted"
    KILLED = "killed"
    WORKLOAD_FAILED = "workload_failed"
    DISK_FULL = "disk_full"
    DEPENDENCE = "dependence"  # the samples needed grow with the samples: readings too correlated


class ExcludedRound(BaseModel):
    """A round kept in the journal but left out of the PI analysis: its own monitor verdict,
    over enough samples to judge, named a hidden bottleneck."""

    index: int
    workload: str
    components: list[str] = Field(default_factory=list)  # "cpu:host (compute)"
    # mean utilization of each component over the round (None: the round's trace was not read)
    busy: dict[str, float | None] = Field(default_factory=dict)
    # the share of the round's time each was above the threshold: what excluded the round
    time_above: dict[str, float | None] = Field(default_factory=dict)
    threshold: float | None = None
    # "round 20 excluded: hidden bottleneck at cpu:host (compute): above 80 % for 34 % of the
    # round (mean 61 %)"
    text: str = ""


class SessionVerdict(BaseModel):
    """The session's status decided once, from the final analysis; every output renders it
    (``pilot_sys.session.verdict`` decides it and holds the semantics)."""

    status: Status
    reason: Reason
    headline: str  # one sentence: the status and the best estimate or what went wrong
    bottleneck: str  # the one line on hidden bottlenecks, whatever the status
    excluded: str | None = None  # "2 of 30 judged rounds excluded: hidden bottleneck at ..."
    governs: str | None = None  # a saturated CUT beside a hidden bottleneck: which governs
    why: str | None = None  # why a target was missed (noise, drift, busy host, too few rounds)
    next_step: str | None = None  # the one thing to do
    governing: str | None = None  # the component whose limit the number may be
    cut: str | None = None
    cut_saturated: bool | None = None
    hidden_bottlenecks: list[str] = Field(default_factory=list)  # over the included rounds
    excluded_rounds: list[ExcludedRound] = Field(default_factory=list)
    judged_rounds: int = 0  # rounds with enough monitor samples to be judged on their own
    # the excluded rounds' own readings averaged: what the hidden bottleneck allowed, never the
    # CUT's result ("bw 19.8 Gbit/s over 9 excluded rounds")
    excluded_estimate: str | None = None

    def lines(self) -> list[str]:
        """The verdict as the summary and report.md print it, in their one order."""
        out = [self.headline]
        out += [f"why: {self.why}"] if self.why else []
        out += [f"next: {self.next_step}"] if self.next_step else []
        out += [f"excluded: {self.excluded}"] if self.excluded else []
        out += (
            [f"excluded rounds' own estimate (not a result): {self.excluded_estimate}"]
            if self.excluded_estimate
            else []
        )
        out.append(self.bottleneck)
        out += [self.governs] if self.governs else []
        return out


class Removal(BaseModel):
    """What non-stable removal took away from a PI's samples."""

    method: str  # "edm", "alpha", "short", "few_units", "none"
    rounds: int = 0
    samples_removed: int = 0
    samples_kept: int = 0
    detail: str = ""


class DriftingAverage(BaseModel):
    """The interval over round means of a level that drifts: what this session averaged, not a
    stable level that another session would reproduce."""

    ci_low: float
    ci_high: float
    rounds: int
    reason: str  # "the round means drift (linear trend p = 0.003)"


class PIResult(BaseModel):
    name: str
    unit: str
    pi_type: str = "arithmetic"
    higher_is_better: bool = True
    source: str  # "unit_readings", "readings", "wps"
    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float = 0.95
    target: float  # required full CI width as a fraction of |mean|
    ci_width_rel: float | None = None
    ci_reached: bool = False
    gates_stop: bool = True  # False: reported, but the session does not wait for its CI
    sample_size: int = 0  # samples used, after removal
    subsession_size: int | None = None
    subsession_count: int | None = None
    subsession_variance: float | None = None
    autocorrelation: float | None = None
    required_sample_size: int | None = None
    # what the interval's samples are: "samples" (the unit readings or readings themselves, in
    # subsessions) or "rounds" (one mean per round: the rounds differ more than their readings say)
    interval_basis: str = Field(
        "samples",
        description=(
            "'samples': subsession analysis of the samples themselves; "
            "'rounds': one mean per analysed round "
            "(the rounds differ more than the unit readings within them explain)"
        ),
    )
    rounds_heterogeneity_p: float | None = Field(
        None,
        description=(
            "p of the F test of the round means' variance against the pooled unit readings' "
            "(low: rounds differ)"
        ),
    )
    removed: list[Removal] = Field(default_factory=list)
    # what a derived PI is and what it adds up (wps: the work its fit counts), as reports say it
    description: str | None = None

    @property
    def source_label(self) -> str:
        """Where the interval comes from, as reports print it."""
        if self.interval_basis == "rounds" and self.ci_low is not None:
            return f"{self.source}, over round means"
        return self.source

    # cross-check for unit-reading PIs: the workload's own per-round figures (e.g. fio's bw of
    # each round), averaged the PI's way over the analysed rounds, and whether the CI holds it
    readings_mean: float | None = None
    readings_in_ci: bool | None = None
    # the round means drift or wander, so there is no interval of a stable level; this is the
    # interval over the round means all the same: the session's average over a drifting level
    drifting: DriftingAverage | None = None
    warnings: list[str] = Field(default_factory=list)


class WPSResult(BaseModel):
    alpha: float | None = None  # seconds
    alpha_ci_low: float | None = None
    alpha_ci_high: float | None = None
    v: float | None = None  # work units per second
    v_ci_low: float | None = None
    v_ci_high: float | None = None
    alpha_work: float | None = (
        None  # smallest useful work (alpha <= 10% of a round), fit's work units
    )
    alpha_work_amount: float | None = None  # the same bound in work-amount units (what raises a)
    v_unit: str = ""
    # what became of the alpha bound: "applied" (rounds below it are not analysed),
    # "not_above_zero" (alpha's CI reaches 0), "above_range" (above -w MAX: every round would
    # go), "none" (no bound computed)
    alpha_bound: str = "none"
    rounds_used: int = 0
    subsession_size: int | None = None
    warnings: list[str] = Field(default_factory=list)


class RoundCounts(BaseModel):
    total: int = 0
    analysed: int = 0
    short: int = 0
    below_alpha: int = 0
    excluded: int = 0  # a hidden bottleneck in the round's own verdict (ExcludedRound)
    failed: int = 0


class PhaseCheck(BaseModel):
    """Whether a workload's analysed rounds show the same phase behaviour (Isci and Martonosi: their
    transition signatures match). A round that does not ran something else or hit a different
    system state; it is named, not removed, since the reader decides what it means."""

    # A round whose best alignment has no rival scores +inf (written "Infinity"), which is not
    # the same as no score at all (null).
    model_config = ConfigDict(ser_json_inf_nan="strings")

    # journal indices of the rounds compared
    checked_rounds: list[int] = Field(default_factory=list)
    inconsistent_rounds: list[int] = Field(default_factory=list)
    # median matching score, per checked round
    scores: list[float | None] = Field(default_factory=list)
    threshold: float | None = None  # a round scoring below it does not match its siblings
    note: str = ""
    # which series were matched: "workload" (the workload's own process:* series) or "host"
    # (host-wide utilizations); None for plain metric matrices
    series: str | None = None


class CommandUsage(BaseModel):
    """A command's own resource use over the analysed rounds (each round's ``wait4`` rusage):
    what hyperfine shows as its user and system columns, and the peak resident set."""

    rounds: int
    user_seconds: float  # mean per round
    system_seconds: float  # mean per round
    max_rss_bytes: int | None = None  # the largest of any round (None: none above the runner's)


class WorkloadResult(BaseModel):
    name: str
    command: list[str] = Field(default_factory=list)
    work_unit: str = ""
    work_range: tuple[float, float] = (0.0, 0.0)  # final (a, b)
    pis: dict[str, PIResult] = Field(default_factory=dict)
    wps: WPSResult | None = None
    rounds: RoundCounts = Field(default_factory=RoundCounts)
    seconds_in_rounds: float = 0.0
    phase_check: PhaseCheck | None = None  # None when rounds were not monitored
    # a command's cost of starting a process on this host (median ``/bin/true``), in seconds
    process_start_seconds: float | None = None
    usage: CommandUsage | None = None  # the command's CPU time and peak RSS per analysed round


class PairComparison(BaseModel):
    better: str
    worse: str
    pi: str
    difference: float
    difference_rel: float | None = None
    ci_low: float | None = None  # CI of the difference (Welch)
    ci_high: float | None = None
    p_value: float | None = None
    cis_overlap: bool
    separated: bool


class PhaseComparison(BaseModel):
    """Whether two workloads change their resource mix at the same moments (Isci and Martonosi)."""

    a: str
    b: str
    differs: bool | None = None  # None: not compared (no traces, too few samples, an error)
    note: str = ""


class Comparison(BaseModel):
    pi: str
    ranking: list[str]  # empty while a workload has no interval on ``pi``
    pairs: list[PairComparison] = Field(default_factory=list)
    all_separated: bool = False
    p_threshold: float = 0.01
    phase_behaviour: list[PhaseComparison] = Field(default_factory=list)
    # every shared PI of each workload against the first (``session.compare_pis``)
    tables: list[PITable] = Field(default_factory=list)


class BottleneckSection(BaseModel):
    """The monitor's verdict over the included rounds' traces taken together."""

    monitored: bool = False
    valid: bool | None = None  # None: not judged (not monitored, or too few samples)
    cut: str | None = None
    cut_saturated: bool | None = None
    governing: str | None = None
    hidden_bottlenecks: list[str] = Field(default_factory=list)
    rounds_invalid: list[int] = Field(default_factory=list)  # excluded on their own verdict
    rounds_unjudged: list[int] = Field(default_factory=list)  # saw one, too short to judge alone
    max_utilization: dict[str, float] = Field(default_factory=dict)
    detail: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class OverheadSection(BaseModel):
    sampling_rate_hz: float | None = None
    rate_chosen_by: str = "default"  # "default", "--sample-rate", "tuner", "off"
    measured_overhead: float | None = None  # fraction of the PI lost to monitoring, when measured
    measured_overhead_ci: tuple[float, float] | None = None
    method: str | None = None
    p_value: float | None = None  # of the measured overhead (Welch's test, monitored vs not)
    budget: float | None = None  # --overhead-budget, fraction of the PI
    note: str | None = None  # the tuner's verdict in one sentence
    tuning_seconds: float | None = None
    monitor_cost: dict[str, float] | None = None  # Sampler.cost(): CPU seconds, wake-ups, memory
    engine_seconds_per_round: float | None = None


class SessionResult(BaseModel):
    schema_version: int = RESULT_SCHEMA_VERSION
    pilot_sys_version: str = __version__
    created_at: float = Field(default_factory=time.time)
    result_dir: str = ""
    status: Status
    exit_code: int
    stop_reason: str
    verdict: SessionVerdict | None = None  # None only in result files older than the verdict
    elapsed_seconds: float = Field(
        0.0,
        description=(
            "wall time of every invocation (resumes included, idle gaps between them not): "
            "what -s limits"
        ),
    )
    measured_seconds: float | None = Field(None, description="the sum of the round times")
    config: dict[str, Any] = Field(default_factory=dict)
    workloads: list[WorkloadResult] = Field(default_factory=list)
    comparison: Comparison | None = None
    bottleneck: BottleneckSection = Field(default_factory=BottleneckSection)
    graph_file: str | None = None
    overhead: OverheadSection = Field(default_factory=OverheadSection)
    context: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

    def primary(self) -> WorkloadResult:
        if not self.workloads:
            raise BadInput(self.result_dir or RESULT_FILE, "the result holds no workload")
        return self.workloads[0]


def result_schema() -> dict[str, Any]:
    """The JSON Schema of result.json (what `pilot-sys report --schema` prints)."""
    return SessionResult.model_json_schema()


def save_result(result: SessionResult, directory: Path) -> Path:
    from pilot_sys.session.journal import atomic_write_text

    path = Path(directory) / RESULT_FILE
    atomic_write_text(path, result.model_dump_json(indent=2))
    return path


def load_result(path: Path) -> SessionResult:
    """Read result.json (or a directory holding one) back, e.g. as a comparison baseline."""
    path = Path(path)
    if path.is_dir():
        path = path / RESULT_FILE
    if not path.is_file():
        raise BadInput(str(path), "no such result file (run `pilot-sys report DIR` to rebuild it)")
    raw = read_text_bounded(path, JSON_BYTES, "a pilot-sys result.json")
    try:
        return SessionResult.model_validate_json(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        if err["type"] == "json_invalid":
            try:
                json.loads(raw)
            except json.JSONDecodeError as jexc:
                raise BadInput(f"{path}:{jexc.lineno}:{jexc.colno}", jexc.msg) from None
        loc = ".".join(str(p) for p in err["loc"])
        raise BadInput(str(path), f"{loc}: {err['msg']}") from None
