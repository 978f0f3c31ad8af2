"""What a running session tells whoever watches it, as data: the CLI renders it, the session
never prints.

The engine and the session emit :data:`ProgressEvent` values to a :class:`Progress` (one
method, ``emit``); ``pilot_sys.cli.present.progress`` turns them into terminal lines, and a
Python caller may collect them or pass nothing (:class:`NoProgress`).

The engine re-analyses only every few rounds, so between analyses the rounds still needed are
the last analysis' forecast counted down by the rounds run since (:class:`Countdown`), marked
as an estimate of that round; once it is used up the forecast says so (``used_up``) rather
than a false "0 more".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pilot_sys.session.journal import RoundRecord
from pilot_sys.session.result import ExcludedRound, PIResult
from pilot_sys.session.verdict import is_excluded


@dataclass(frozen=True)
class Forecast:
    """The rounds still needed after a round, and how long they take."""

    rounds_needed: int | None  # None: unknown (no estimate yet)
    eta: float | None  # seconds
    as_of: int | None = None  # the round whose analysis made the estimate, when older than this one
    used_up: bool = (
        False  # counted down to 0 without the targets being met: the next analysis checks
    )
    unknown_why: str | None = None  # why rounds_needed is None, when more than "not yet"


@dataclass(frozen=True)
class Budget:
    """The session limit against the session time used (what ``-s`` counts: the wall time of
    every invocation, resumes included, without the idle gaps between them)."""

    limit: float | None  # seconds; None: no limit
    used: float
    preset: str = ""

    @property
    def left(self) -> float | None:
        return None if self.limit is None else max(self.limit - self.used, 0.0)


@dataclass(frozen=True)
class RoundDone:
    """A round was journaled (and, when due, analysed)."""

    record: RoundRecord
    pis: list[PIResult]  # its workload's PIs as of the last analysis
    forecast: Forecast
    elapsed: float  # session time so far (``Budget.used``)
    cis_as_of: int | None = None  # the round the PIs' intervals were computed after, when older
    budget: Budget | None = None


@dataclass(frozen=True)
class Note:
    """A message for the person watching; ``loud`` ones (a full disk, a monitor that cannot
    start) are shown even with ``--quiet``."""

    text: str
    loud: bool = False


@dataclass(frozen=True)
class RoundExcluded:
    """A round's own monitor verdict named a hidden bottleneck: the round is kept in the journal
    and left out of the PI analysis (``pilot_sys.session.verdict``). One event per such round, so
    the warnings a person saw and the count the summary gives agree."""

    excluded: ExcludedRound


ProgressEvent = RoundDone | Note | RoundExcluded


class Progress(Protocol):
    """Receives the session's events as they happen."""

    def emit(self, event: ProgressEvent) -> None: ...


class NoProgress:
    """Nobody is watching (the Python API's default)."""

    def emit(self, event: ProgressEvent) -> None:
        return None


@dataclass
class _Made:
    """The forecast of one workload's last analysis, and the analysed rounds run since."""

    at: int  # session round index of the analysis
    rounds_needed: int | None
    seconds_per_round: float | None
    since: int = 0


class Countdown:
    """Counts each workload's last forecast down by its rounds run since that analysis.

    Fresh forecasts come with ``as_of=None`` (the engine analysed after this round); later
    rounds carry ``as_of``, the round of that analysis. Only rounds that count (not short, not
    failed, not excluded for a hidden bottleneck) bring the target closer. When the analysis was
    not seen (a resumed session), the engine's own numbers are passed on as they are."""

    def __init__(self, cut: str | None = None) -> None:
        self._made: dict[str, _Made] = {}
        self.cut = cut  # rounds excluded for a hidden bottleneck need a known CUT

    def update(
        self, record: RoundRecord, rounds_needed: int | None, eta: float | None, as_of: int | None
    ) -> Forecast:
        # the engine's ETA is rounds x the latest round's duration:
        # keep that pace, it is the freshest
        pace = eta / rounds_needed if eta is not None and rounds_needed else None
        if as_of is None:
            self._made[record.workload] = _Made(record.index, rounds_needed, pace)
            return Forecast(rounds_needed, eta)
        made = self._made.get(record.workload)
        if made is None or made.at != as_of:
            return Forecast(rounds_needed, eta, as_of)
        if not record.short and not record.failed and not is_excluded(record, self.cut):
            made.since += 1
        if pace is not None:
            made.seconds_per_round = pace
        if made.rounds_needed is None:
            return Forecast(None, None, as_of)
        if made.rounds_needed == 0:  # targets met at that analysis (a comparison runs on)
            return Forecast(0, 0.0, as_of)
        left = max(made.rounds_needed - made.since, 0)
        if left == 0:
            return Forecast(0, None, as_of, used_up=True)
        seconds = left * made.seconds_per_round if made.seconds_per_round is not None else None
        return Forecast(left, seconds, as_of)
