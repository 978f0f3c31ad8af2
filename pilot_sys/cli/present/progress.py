"""A session's progress as a person watches it: each PI's mean ± its CI against the target,
the rounds still needed and an ETA.

One status line rewritten in place in a terminal (round, session time, ETA, the primary PI),
the full line per round with ``-v`` or when stderr is not a terminal (logs, CI), only the loud
events with ``--quiet``. Everything goes to stderr so that ``--json`` output on
stdout stays machine-readable. The renderers receive the session's events
(``pilot_sys.session.progress``) and print them; they compute nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from pilot_sys import units
from pilot_sys.session.journal import RoundRecord
from pilot_sys.session.progress import (
    Budget,
    Forecast,
    Note,
    ProgressEvent,
    RoundDone,
    RoundExcluded,
)
from pilot_sys.session.result import PIResult
from pilot_sys.session.verdict import limit_advice, needs_text

# workload name -> whether its byte rates are network traffic (shown in bit/s)
NetworkOf = Callable[[str], bool]


def _storage(name: str) -> bool:
    return False


def precision(pi: PIResult) -> str:
    """``± 3.2 %``: the interval's half width relative to the mean (``± ?`` without one)."""
    return units.plus_minus(pi.ci_width_rel / 2 if pi.ci_width_rel is not None else None)


def pi_line(pi: PIResult, network: bool = False) -> str:
    """``write_bw 2.17 GiB/s ± 3.2 % (target ± 5 %, ok)``; without an interval yet, what it
    needs: ``bw: 1.20 Gbit/s so far, no interval yet: needs about 400 samples (50 effective),
    has 12``."""
    if pi.mean is None:
        return f"{pi.name}: no analysed round yet"  # short, excluded or below alpha
    if pi.ci_low is None or pi.ci_high is None:
        mean = units.quantity(pi.mean, pi.unit, network)
        return f"{pi.name}: {mean} so far, no interval yet: {needs_text(pi)}"
    mark = "ok" if pi.ci_reached else ("not yet" if pi.gates_stop else "reported only")
    mean, _, _ = units.ci_parts(pi.mean, pi.ci_low, pi.ci_high, pi.unit, network)
    return f"{pi.name} {mean} {precision(pi)} (target {units.target(pi.target)}, {mark})"


def failure_text(record: RoundRecord) -> str:
    """`` FAILED: <why>`` for a failed round (the WorkloadFailed message), else empty."""
    if not record.failed:
        return ""
    return f" FAILED: {' '.join(record.failure.split())}" if record.failure else " FAILED"


def eta_text(f: Forecast, budget: Budget | None = None) -> str:
    """``~3 more round(s), ETA 6 s``, or why there is no such number. An ETA beyond what the
    session limit leaves says so: ``~422 more round(s): more than the 30 s limit allows; at
    this rate it needs about 700 s in all: use -s 900 or --preset normal``."""
    since = f" (estimate as of round {f.as_of})" if f.as_of else ""
    if f.used_up:
        return f"checking at the next analysis (round {f.as_of}'s estimate is used up)"
    if f.rounds_needed is None:
        return (
            f"rounds needed: not known: {f.unknown_why}"
            if f.unknown_why
            else ("rounds needed: not known yet")
        )
    if f.rounds_needed == 0:
        return f"targets met{f' (as of round {f.as_of})' if f.as_of else ''}"
    left = budget.left if budget is not None else None
    if (
        budget is not None
        and budget.limit is not None
        and f.eta is not None
        and left is not None
        and f.eta > left
    ):
        total = budget.used + f.eta
        return (
            f"~{f.rounds_needed} more round(s): more than the {budget.limit:.0f} s "
            f"limit allows; at this rate it needs about {total:.0f} s in all: "
            f"{limit_advice(total, budget.preset)}{since}"
        )
    eta = f", ETA {f.eta:.0f} s" if f.eta is not None else ""
    return f"~{f.rounds_needed} more round(s){eta}{since}"


def excluded_text(event: RoundExcluded) -> str:
    """``round 20 excluded: hidden bottleneck at cpu:host (compute): above 80 % for 34 % of the
    round (mean 61 %)``."""
    return event.excluded.text


def round_head(record: RoundRecord, work_unit: str = "", fixed_work: bool = False) -> str:
    """``round 37 [builtin-seqio] work=568 MiB 406 ms`` (the generic unit "work" is not
    repeated; a command without %WORK_AMOUNT% has no work amount to show)."""
    took = units.duration(record.duration)
    if fixed_work:
        return f"round {record.index} [{record.workload}] {took}"
    work = units.work(record.work_amount, "" if work_unit == "work" else work_unit)
    return f"round {record.index} [{record.workload}] work={work} {took}"


class ClosableStream:
    """The progress stream, which the reader may close (``2>&1 | head``): from the first write
    that fails, progress output stops and the measurement goes on; the session's result and
    exit code never depend on whether anyone still reads its progress."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if self.gone:
            return len(text)
        try:
            return self.stream.write(text)
        except (OSError, ValueError):  # EPIPE, EIO (terminal gone), or a closed file
            self._lost()
            return len(text)

    def flush(self) -> None:
        if self.gone:
            return
        try:
            self.stream.flush()
        except (OSError, ValueError):
            self._lost()

    def _lost(self) -> None:
        """Stop writing; what is still buffered, and anything written to the descriptor later,
        goes to /dev/null, so that no write (Python's own flush at exit included) fails again."""
        self.gone = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.stream.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError):
            pass

    def isatty(self) -> bool:
        return not self.gone and self.stream.isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, fileno ... as the stream has them
        return getattr(self.stream, name)


class QuietProgress:
    """--quiet: only loud notes (a full disk, a monitor that cannot start) reach stderr; the
    excluded rounds are counted in the verdict's headline at the end, not listed."""

    def __init__(
        self, stream: TextIO | None = None, network: NetworkOf = _storage, work_unit: str = ""
    ) -> None:
        self.stream: TextIO = ClosableStream(stream or sys.stderr)  # type: ignore[assignment]
        self.network = network
        self.work_unit = work_unit
        self.fixed_work = False  # every round does the same work (no %WORK_AMOUNT%)

    def emit(self, event: ProgressEvent) -> None:
        if isinstance(event, RoundDone):
            self.round_done(event)
        elif isinstance(event, RoundExcluded):
            self.excluded(event)
        elif isinstance(event, Note):
            self.note(event.text, event.loud)

    def round_done(self, event: RoundDone) -> None:
        return None

    def excluded(self, event: RoundExcluded) -> None:
        """--quiet: the headline at the end counts the excluded rounds; no line per round."""
        return None

    def note(self, text: str, loud: bool = False) -> None:
        if loud:
            print(f"pilot-sys: {text}", file=self.stream, flush=True)

    def close(self) -> None:
        """Release the display (also after an error); safe to call twice."""
        return None


class PlainProgress(QuietProgress):
    """One line per round, for logs and pipes."""

    def excluded(self, event: RoundExcluded) -> None:
        self.note(excluded_text(event), loud=True)

    def round_done(self, event: RoundDone) -> None:
        record = event.record
        flags = " SHORT(not analysed)" if record.short else ""
        flags += failure_text(record)
        first = round_head(record, self.work_unit, self.fixed_work)
        head = f"{first}{flags} | t={event.elapsed:.1f}s"
        network = self.network(record.workload)
        body = "; ".join(pi_line(p, network) for p in event.pis)
        stale = f" (CIs as of round {event.cis_as_of})" if event.cis_as_of else ""
        eta = eta_text(event.forecast, event.budget)
        print(f"{head} | {body}{stale} | {eta}", file=self.stream, flush=True)

    def note(self, text: str, loud: bool = False) -> None:
        print(f"pilot-sys: {'WARNING: ' if loud else ''}{text}", file=self.stream, flush=True)


class StatusLine(QuietProgress):
    """A terminal: one status line rewritten in place after each round, as hyperfine shows its
    progress: the round, the session time, the ETA and the primary PI with its ± and target.
    Notes and warnings go above it on lines of their own; ``-v`` (or a stream that is not a
    terminal) gives the full line per round instead (:class:`PlainProgress`)."""

    CLEAR = "\r\x1b[K"  # carriage return, erase to the end of the line

    def __init__(
        self, stream: TextIO | None = None, network: NetworkOf = _storage, work_unit: str = ""
    ) -> None:
        super().__init__(stream, network, work_unit)
        self.shown = ""  # the status line on screen ("" when none)

    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            return 80
        return columns if columns > 0 else 80  # a pseudo-terminal without a size says 0

    def _draw(self, line: str) -> None:
        width = max(self._width() - 1, 20)  # never wrap: a wrapped line cannot be rewritten
        line = line if len(line) <= width else line[: width - 1] + "…"
        self.stream.write(f"{self.CLEAR}{line}")
        self.stream.flush()
        self.shown = line

    def excluded(self, event: RoundExcluded) -> None:
        self.note(excluded_text(event), loud=True)

    def round_done(self, event: RoundDone) -> None:
        record = event.record
        if record.failed:  # the reason stays on screen, above the status line
            self.note(f"round {record.index} [{record.workload}]{failure_text(record)}", loud=True)
        self._draw(status_text(event, self.network(record.workload)))

    def note(self, text: str, loud: bool = False) -> None:
        shown = self.shown
        self.stream.write(self.CLEAR if shown else "")
        print(f"pilot-sys: {'WARNING: ' if loud else ''}{text}", file=self.stream, flush=True)
        if shown:
            self._draw(shown)

    def close(self) -> None:
        if self.shown:
            self.stream.write(self.CLEAR)
            self.stream.flush()
            self.shown = ""


def status_eta(f: Forecast, budget: Budget | None = None) -> str:
    """The ETA in a few words: ``ETA 6 s``, ``targets met``, ``ETA beyond the 30 s limit``,
    ``ETA not known yet``."""
    if f.rounds_needed == 0 and not f.used_up:
        return "targets met"
    if f.used_up or f.rounds_needed is None or f.eta is None:
        return "ETA not known yet"
    left = budget.left if budget is not None else None
    if budget is not None and budget.limit is not None and left is not None and f.eta > left:
        return f"ETA beyond the {units.duration(budget.limit)} limit"
    return f"ETA {units.duration(f.eta)}"


def primary_text(pis: list[PIResult], network: bool = False) -> str:
    """The primary PI as the status line shows it: ``bw 2.17 GiB/s ± 3.2 % (target ± 5 %)``;
    without an interval ``bw 1.20 Gbit/s so far, no interval yet`` (the samples it needs move
    every round: ``-v`` shows them)."""
    from pilot_sys.workload.primary import primary_pi

    name = primary_pi(pis)
    pi = next((p for p in pis if p.name == name), None)
    if pi is None:
        return "no PI yet"
    if pi.mean is None:
        return f"{pi.name}: no analysed round yet"
    if pi.ci_low is None or pi.ci_high is None:
        return f"{pi.name} {units.quantity(pi.mean, pi.unit, network)} so far, no interval yet"
    mean, _, _ = units.ci_parts(pi.mean, pi.ci_low, pi.ci_high, pi.unit, network)
    return f"{pi.name} {mean} {precision(pi)} (target {units.target(pi.target)})"


def status_text(event: RoundDone, network: bool = False) -> str:
    """``round 37 [fio] 75.0 s | ETA 6.00 s | bw 2.17 GiB/s ± 3.2 % (target ± 5 %)``: under
    80 characters for one PI with a short name."""
    r = event.record
    return (
        f"round {r.index} [{r.workload}] {units.duration(event.elapsed)} | "
        f"{status_eta(event.forecast, event.budget)} | {primary_text(event.pis, network)}"
    )


def make_progress(
    quiet: bool, network: NetworkOf = _storage, work_unit: str = "", verbose: bool = False
) -> QuietProgress:
    """The renderer for this terminal: quiet, one status line (stderr is a terminal), or the
    full line per round (``verbose``, or stderr is not a terminal)."""
    if quiet:
        return QuietProgress(network=network, work_unit=work_unit)
    if sys.stderr.isatty() and not verbose:
        return StatusLine(network=network, work_unit=work_unit)
    return PlainProgress(network=network, work_unit=work_unit)
