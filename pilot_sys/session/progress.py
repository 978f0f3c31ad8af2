"""What a person watching a session sees: the round, each PI's mean +- CI against its target,
rounds still needed and an ETA. Live (rich) in a terminal, one plain line per round when
stderr is not a terminal (logs, CI), nothing with ``--quiet``. Everything goes to stderr so
that ``--json`` output on stdout stays machine-readable.

The engine re-analyses only every few rounds, so between analyses the rounds still needed are
the last analysis' forecast counted down by the rounds run since (``Countdown``), shown as an
estimate of that round; once it is used up the line says the next analysis will check, rather
than a false "~0 more"."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Protocol, TextIO

from pilot_sys.session.journal import RoundRecord
from pilot_sys.session.result import PIResult, SessionResult


def human(value: float | None, unit: str = "") -> str:
    """A number with SI-binary scaling for bytes and ms for seconds, 3-4 significant digits."""
    if value is None:
        return "?"
    if unit in ("B/s", "B"):
        scaled = float(value)
        for prefix in ("", "Ki", "Mi", "Gi", "Ti"):
            if abs(scaled) < 1024 or prefix == "Ti":
                return f"{scaled:.4g} {prefix}{unit}"
            scaled /= 1024
    if unit == "s":
        if abs(value) < 1e-3:
            return f"{value * 1e6:.4g} us"
        if abs(value) < 1:
            return f"{value * 1e3:.4g} ms"
    return f"{value:.4g} {unit}".rstrip()


def pi_line(pi: PIResult) -> str:
    """``write_bw 512 MiB/s +-1.2% (target 10%, ok)``."""
    if pi.mean is None or pi.ci_low is None or pi.ci_high is None:
        return f"{pi.name} ? (n={pi.sample_size})"
    half = (pi.ci_high - pi.ci_low) / 2
    rel = f"{100 * (pi.ci_width_rel or 0) / 2:.1f}%" if pi.ci_width_rel is not None else "?"
    mark = "ok" if pi.ci_reached else ("not yet" if pi.gates_stop else "reported only")
    return f"{pi.name} {human(pi.mean, pi.unit)} +-{human(half, pi.unit)} (+-{rel}, target +-{100 * pi.target / 2:g}%, {mark})"


class Progress(Protocol):
    def round_done(
        self, record: RoundRecord, pis: list[PIResult], rounds_needed: int | None, eta: float | None, elapsed: float,
        as_of: int | None = None,
    ) -> None:
        """``as_of``: the round the shown CIs were computed after, when older than this one."""

    def note(self, text: str, loud: bool = False) -> None: ...

    def finish(self, result: SessionResult) -> None: ...

    def close(self) -> None:
        """Release the display (also after an error); safe to call twice."""


class QuietProgress:
    """--quiet: only loud notes (a hidden bottleneck, a full disk) still reach stderr."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr

    def round_done(self, record: RoundRecord, pis: list[PIResult], rounds_needed: int | None, eta: float | None,
                   elapsed: float, as_of: int | None = None) -> None:
        return None

    def note(self, text: str, loud: bool = False) -> None:
        if loud:
            print(f"pilot-sys: {text}", file=self.stream, flush=True)

    def finish(self, result: SessionResult) -> None:
        return None

    def close(self) -> None:
        return None


def failure_text(record: RoundRecord) -> str:
    """`` FAILED: <why>`` for a failed round (the WorkloadFailed message), else empty."""
    if not record.failed:
        return ""
    return f" FAILED: {' '.join(record.failure.split())}" if record.failure else " FAILED"


@dataclass
class Forecast:
    """What the progress line says about the rounds still needed."""

    rounds_needed: int | None
    eta: float | None
    as_of: int | None = None  # the round whose analysis made the estimate, when older than this one
    used_up: bool = False  # counted down to 0 without the targets being met: the next analysis checks


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
    failed) bring the target closer. When the analysis was not seen (a resumed session), the
    engine's own numbers are shown as they are."""

    def __init__(self) -> None:
        self._made: dict[str, _Made] = {}

    def update(self, record: RoundRecord, rounds_needed: int | None, eta: float | None,
               as_of: int | None) -> Forecast:
        # the engine's ETA is rounds x the latest round's duration: keep that pace, it is the freshest
        pace = eta / rounds_needed if eta is not None and rounds_needed else None
        if as_of is None:
            self._made[record.workload] = _Made(record.index, rounds_needed, pace)
            return Forecast(rounds_needed, eta)
        made = self._made.get(record.workload)
        if made is None or made.at != as_of:
            return Forecast(rounds_needed, eta, as_of)
        if not record.short and not record.failed:
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


def _eta_text(f: Forecast) -> str:
    since = f" (estimate as of round {f.as_of})" if f.as_of else ""
    if f.used_up:
        return f"checking at the next analysis (round {f.as_of}'s estimate is used up)"
    if f.rounds_needed is None:
        return "rounds needed: ?"
    if f.rounds_needed == 0:
        return f"targets met{f' (as of round {f.as_of})' if f.as_of else ''}"
    eta = f", ETA {f.eta:.0f} s" if f.eta is not None else ""
    return f"~{f.rounds_needed} more round(s){eta}{since}"


class PlainProgress(QuietProgress):
    """One line per round, for logs and pipes."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__(stream)
        self.countdown = Countdown()

    def round_done(self, record: RoundRecord, pis: list[PIResult], rounds_needed: int | None, eta: float | None,
                   elapsed: float, as_of: int | None = None) -> None:
        flags = " SHORT(not analysed)" if record.short else ""
        flags += failure_text(record)
        head = (
            f"round {record.index} [{record.workload}] work={record.work_amount:.6g} "
            f"{record.duration:.3f}s{flags} | t={elapsed:.1f}s"
        )
        body = "; ".join(pi_line(p) for p in pis)
        stale = f" (CIs as of round {as_of})" if as_of else ""
        forecast = self.countdown.update(record, rounds_needed, eta, as_of)
        print(f"{head} | {body}{stale} | {_eta_text(forecast)}", file=self.stream, flush=True)

    def note(self, text: str, loud: bool = False) -> None:
        print(f"pilot-sys: {'WARNING: ' if loud else ''}{text}", file=self.stream, flush=True)


class RichProgress:
    """A live table in a terminal; loud notes in red above it."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self.console = Console(stderr=True)
        self.live = Live(console=self.console, refresh_per_second=4, transient=True)
        self.live.start()
        self.countdown = Countdown()

    def round_done(self, record: RoundRecord, pis: list[PIResult], rounds_needed: int | None, eta: float | None,
                   elapsed: float, as_of: int | None = None) -> None:
        from rich.markup import escape
        from rich.table import Table

        if record.failed:  # the reason stays on screen above the live table
            self.note(f"round {record.index} [{record.workload}]{failure_text(record)}", loud=True)
        forecast = self.countdown.update(record, rounds_needed, eta, as_of)
        table = Table(
            title=escape(f"round {record.index} [{record.workload}] work={record.work_amount:.6g} "
                         f"{record.duration:.2f}s{' (short)' if record.short else ''} | {elapsed:.0f}s | "
                         f"{_eta_text(forecast)}{f' | CIs as of round {as_of}' if as_of else ''}"),
            title_justify="left",
        )
        for col in ("PI", "mean", "CI", "width", "target", "n", "needed"):
            table.add_column(col)
        for p in pis:
            width = f"{100 * p.ci_width_rel:.1f}%" if p.ci_width_rel is not None else "?"
            ci = f"[{human(p.ci_low, p.unit)}, {human(p.ci_high, p.unit)}]"
            style = "green" if p.ci_reached else "yellow"
            table.add_row(
                escape(p.name), human(p.mean, p.unit), escape(ci), f"[{style}]{width}[/{style}]", f"{100 * p.target:g}%",
                str(p.sample_size), "?" if p.required_sample_size is None else str(p.required_sample_size),
            )
        self.live.update(table)

    def note(self, text: str, loud: bool = False) -> None:
        from rich.markup import escape

        self.live.console.print(f"[bold red]{escape(text)}[/bold red]" if loud else escape(text))

    def finish(self, result: SessionResult) -> None:
        self.close()

    def close(self) -> None:
        if self.live.is_started:
            self.live.stop()


def make_progress(quiet: bool) -> Progress:
    if quiet:
        return QuietProgress()
    if sys.stderr.isatty():
        return RichProgress()
    return PlainProgress()
