"""Progress for people (issue 22, item 7): on a terminal one status line rewritten in place
(round, session time, ETA, the primary PI with its ± and target), as hyperfine shows its
progress; the full line per round with -v and when stderr is not a terminal."""

from __future__ import annotations

import io
import sys

import pytest

from pilot_sys.cli.present.progress import (
    PlainProgress,
    QuietProgress,
    StatusLine,
    make_progress,
)
from pilot_sys.session.journal import RoundRecord
from pilot_sys.session.progress import Budget, Forecast, Note, RoundDone
from pilot_sys.session.result import PIResult

CLEAR = "\r\x1b[K"


def _rec(index: int) -> RoundRecord:
    return RoundRecord(
        index=index, workload="fio", workload_round=index, dir="r", started_at=0.0,
        work_amount=64.0, duration=0.4, phase="measure",
    )  # fmt: skip


def _pi(name: str, unit: str = "B/s", **kw: object) -> PIResult:
    base: dict[str, object] = dict(
        name=name, unit=unit, source="unit_readings", target=0.1, mean=2.33e9,
        ci_low=2.26e9, ci_high=2.40e9, ci_width_rel=0.06, sample_size=900,
        required_sample_size=400,
    )  # fmt: skip
    base.update(kw)
    return PIResult.model_validate(base)


#: six PIs, as fio with reads, writes and latencies reports them: the plain line grows with each
SIX = [
    _pi("write_iops", unit="IOPS", mean=5000.0, ci_low=4900.0, ci_high=5100.0),
    _pi("write_bw"),
    _pi("read_bw", mean=1.0e9, ci_low=None, ci_high=None, ci_width_rel=None),
    _pi("write_lat", unit="s", mean=1e-4, ci_low=0.9e-4, ci_high=1.1e-4),
    _pi("read_lat", unit="s", mean=2e-4, ci_low=1.9e-4, ci_high=2.1e-4),
    _pi("wps", source="wps", gates_stop=False),
]


def _event(index: int, pis: list[PIResult] = SIX) -> RoundDone:
    return RoundDone(
        _rec(index), pis, Forecast(12, 30.0), 75.0, budget=Budget(limit=600.0, used=75.0)
    )


def test_a_terminal_gets_one_status_line_rewritten_in_place() -> None:
    stream = io.StringIO()
    progress = StatusLine(stream)
    for i in (1, 2, 3):
        progress.emit(_event(i))
    out = stream.getvalue()
    assert "\n" not in out  # never a new line per round
    assert out.count(CLEAR) == 3
    last = out.rsplit(CLEAR, 1)[1]
    # the primary PI (the first data rate the session waits for), its ± and target; no other
    assert last == (
        "round 3 [fio] 75.0 s | ETA 30.0 s | write_bw 2.17 GiB/s ± 3.0 % (target ± 5 %)"
    )
    assert len(last) < 100
    # a note goes above the status line, which is drawn again below it
    progress.emit(Note("monitor: lost a sample", loud=True))
    out = stream.getvalue()
    assert out.endswith(f"{CLEAR}pilot-sys: WARNING: monitor: lost a sample\n{CLEAR}{last}")
    progress.close()
    assert stream.getvalue().endswith(CLEAR)


def test_the_plain_line_per_round_holds_every_pi() -> None:
    stream = io.StringIO()
    PlainProgress(stream).emit(_event(3))
    line = stream.getvalue()
    assert line.count("\n") == 1 and all(p.name in line for p in SIX)
    assert "needs about 400 samples" in line  # the moving figure: -v and logs only


def test_a_pi_without_an_interval_shows_no_moving_sample_count() -> None:
    stream = io.StringIO()
    StatusLine(stream).emit(_event(1, [_pi("bw", ci_low=None, ci_high=None, ci_width_rel=None)]))
    assert stream.getvalue() == (
        f"{CLEAR}round 1 [fio] 75.0 s | ETA 30.0 s | bw 2.17 GiB/s so far, no interval yet"
    )


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("tty", "verbose", "quiet", "kind"),
    [
        (True, False, False, StatusLine),
        (True, True, False, PlainProgress),
        (False, False, False, PlainProgress),
        (True, False, True, QuietProgress),
    ],
)
def test_which_renderer(
    monkeypatch: pytest.MonkeyPatch, tty: bool, verbose: bool, quiet: bool, kind: type
) -> None:
    monkeypatch.setattr(sys, "stderr", _Tty() if tty else io.StringIO())
    assert type(make_progress(quiet, verbose=verbose)) is kind
