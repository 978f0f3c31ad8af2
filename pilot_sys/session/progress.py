"""What a person watching a session sees: the round, each PI's mean +- CI against its target,
rounds still needed and an ETA. Live (rich) in a terminal, one plain line per round when
stderr is not a terminal (logs, CI), nothing with ``--quiet``. Everything goes to stderr so
that ``--json`` output on stdout stays machine-readable."""

from __future__ import annotations

import sys
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


def _eta_text(rounds_needed: int | None, eta: float | None) -> str:
    if rounds_needed is None:
        return "rounds needed: ?"
    if rounds_needed == 0:
        return "targets met"
    return f"~{rounds_needed} more round(s), ETA {eta:.0f} s" if eta is not None else f"~{rounds_needed} more round(s)"


class PlainProgress(QuietProgress):
    """One line per round, for logs and pipes."""

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
        print(f"{head} | {body}{stale} | {_eta_text(rounds_needed, eta)}", file=self.stream, flush=True)

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

    def round_done(self, record: RoundRecord, pis: list[PIResult], rounds_needed: int | None, eta: float | None,
                   elapsed: float, as_of: int | None = None) -> None:
        from rich.markup import escape
        from rich.table import Table

        if record.failed:  # the reason stays on screen above the live table
            self.note(f"round {record.index} [{record.workload}]{failure_text(record)}", loud=True)
        table = Table(
            title=escape(f"round {record.index} [{record.workload}] work={record.work_amount:.6g} "
                         f"{record.duration:.2f}s{' (short)' if record.short else ''} | {elapsed:.0f}s | "
                         f"{_eta_text(rounds_needed, eta)}{f' | CIs as of round {as_of}' if as_of else ''}"),
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
