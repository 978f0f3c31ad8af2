"""The progress line's rounds-still-needed and ETA count down between the engine's analyses
(``session.progress.Countdown``), as the terminal shows them (``cli.present.progress``)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.cli.present.progress import PlainProgress
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.journal import RoundRecord, WorkloadSpec
from pilot_sys.session.progress import Countdown, RoundDone
from pilot_sys.session.session import Session
from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec, RoundOutput


def rec(index: int, workload: str = "w", short: bool = False) -> RoundRecord:
    return RoundRecord(
        index=index,
        workload=workload,
        workload_round=index,
        dir=f"rounds/{index:04d}",
        started_at=0.0,
        work_amount=1.0,
        duration=0.5,
        phase="test",
        short=short,
    )


def tails(
    calls: list[tuple[RoundRecord, int | None, float | None, int | None]], cut: str | None = None
) -> list[str]:
    """Count down and emit as the engine does; the text after the last '|' of every printed line."""
    stream = io.StringIO()
    progress = PlainProgress(stream)
    countdown = Countdown(cut)
    for record, needed, eta, as_of in calls:
        forecast = countdown.update(record, needed, eta, as_of)
        progress.emit(RoundDone(record, [], forecast, 1.0, as_of))
    return [line.rsplit("| ", 1)[1] for line in stream.getvalue().splitlines()]


def test_counts_down_from_the_last_analysis_then_says_checking() -> None:
    # Round 1 was analysed: 3 more rounds at 2 s each. The engine's own numbers for the later
    # rounds stop at 1 (it never shows 0 before the targets are met); the line counts on.
    lines = tails(
        [
            (rec(1), 3, 6.0, None),
            (rec(2), 2, 4.0, 1),
            (rec(3, short=True), 2, 4.0, 1),  # short: not analysed, brings nothing closer
            (rec(4), 1, 2.0, 1),
            (rec(5), 1, 2.0, 1),
            (rec(6), 1, 2.0, 1),
            (rec(7), 4, 8.0, None),  # the next analysis: a fresh forecast
        ]
    )
    assert lines == [
        "~3 more round(s), ETA 6 s",
        "~2 more round(s), ETA 4 s (estimate as of round 1)",
        "~2 more round(s), ETA 4 s (estimate as of round 1)",
        "~1 more round(s), ETA 2 s (estimate as of round 1)",
        "checking at the next analysis (round 1's estimate is used up)",
        "checking at the next analysis (round 1's estimate is used up)",
        "~4 more round(s), ETA 8 s",
    ]


def test_eta_follows_the_latest_round_duration() -> None:
    # the engine's ETA is needed x the last round's duration: rounds got 3x slower by round 3
    lines = tails([(rec(1), 10, 10.0, None), (rec(2), 9, 9.0, 1), (rec(3), 8, 24.0, 1)])
    assert lines[1:] == [
        "~9 more round(s), ETA 9 s (estimate as of round 1)",
        "~8 more round(s), ETA 24 s (estimate as of round 1)",
    ]


def test_interleaved_workloads_count_down_separately() -> None:
    a, b = "a", "b"
    lines = tails(
        [
            (rec(1, a), 2, 4.0, None),
            (rec(2, b), 5, 10.0, None),
            (rec(3, a), 1, 2.0, 1),
            (rec(4, b), 4, 8.0, 2),
            (rec(5, a), 1, 2.0, 1),
            (rec(6, b), 3, 6.0, 2),
        ]
    )
    assert lines[2:] == [
        "~1 more round(s), ETA 2 s (estimate as of round 1)",
        "~4 more round(s), ETA 8 s (estimate as of round 2)",
        "checking at the next analysis (round 1's estimate is used up)",
        "~3 more round(s), ETA 6 s (estimate as of round 2)",
    ]


def test_targets_met_and_unknown_and_unseen_analyses() -> None:
    lines = tails(
        [
            (rec(1), None, None, None),
            (rec(2), None, None, 1),
            (rec(3), 0, 0.0, None),  # met: a comparison keeps running this workload
            (rec(4), 0, 0.0, 3),
            (
                rec(9, "resumed"),
                2,
                3.0,
                8,
            ),  # its analysis ran before this invocation: the engine's numbers
        ]
    )
    assert lines == [
        "rounds needed: not known yet",
        "rounds needed: not known yet",
        "targets met",
        "targets met (as of round 3)",
        "~2 more round(s), ETA 3 s (estimate as of round 8)",
    ]


class Noisy:
    """Readings ~ N(100, 5) every 10 ms of simulated time: many rounds, analysed every few."""

    name = "noisy"

    def __init__(self) -> None:
        self.rng = np.random.default_rng(3)

    def pi_specs(self) -> list[PISpec]:
        return [PISpec(name="value", unit="s", pi_type=PIType.ARITHMETIC)]

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        return RoundOutput(
            work_amount=work_amount,
            duration=0.01,
            readings={"value": float(100 + 5 * self.rng.standard_normal())},
        )

    def data_path_args(self) -> list[str]:
        return []


LINE = re.compile(
    r"^round (\d+) \[noisy\].*\| (?:~(\d+) more round\(s\)[^|]*?"
    r"(?: \(estimate as of round (\d+)\))?|(checking at the next analysis.*)|(targets met.*)"
    r"|(rounds needed: not known yet))$"
)


@pytest.mark.live
def test_a_real_session_counts_down_between_analyses(tmp_path: Path) -> None:
    cfg = SessionConfig.from_preset(
        "normal",
        monitor=False,
        min_rounds=3,
        session_limit=60.0,
        work_min=1.0,
        work_max=1.0,
        min_round_seconds=0.0,
        ci_perc=0.02,
        max_rounds=150,
    )
    stream = io.StringIO()
    workload = Noisy()
    spec = WorkloadSpec(name="noisy", kind="function", pis=workload.pi_specs())
    session = Session.create(
        tmp_path / "res",
        cfg,
        [spec],
        [workload],
        ["test"],  # type: ignore[list-item]
        progress=PlainProgress(stream),
    )
    session.run()
    rows = [
        LINE.match(line) for line in stream.getvalue().splitlines() if line.startswith("round ")
    ]
    assert rows and all(rows), stream.getvalue()
    fresh: dict[int, int] = {}  # analysis round -> its forecast
    stale = 0
    for m in rows:
        index, more, as_of, checking = int(m[1]), m[2], m[3], m[4]
        if as_of is None and checking is None and more is not None:
            fresh[index] = int(more)
        elif as_of is not None:
            stale += 1
            # counted down by exactly the rounds since (all analysed here),
            # never below 1 while shown
            assert int(more) == fresh[int(as_of)] - (index - int(as_of)) >= 1, m[0]
        elif checking is not None:
            made = int(re.search(r"round (\d+)'s", checking)[1])  # type: ignore[index]
            assert index - made >= fresh[made], m[0]
    assert stale > 0  # the engine did skip analyses, so the countdown was exercised


def test_an_excluded_round_brings_the_target_no_closer() -> None:
    from pilot_sys.session.journal import MonitorSummary

    hot = rec(2).model_copy(
        update={
            "monitor": MonitorSummary(
                samples=21, valid=False, hidden_bottlenecks=["cpu:host (compute)"]
            )
        }
    )
    lines = tails([(rec(1), 3, 6.0, None), (hot, 2, 4.0, 1), (rec(3), 2, 4.0, 1)], cut="block:vda")
    assert lines == [
        "~3 more round(s), ETA 6 s",
        "~3 more round(s), ETA 6 s (estimate as of round 1)",
        "~2 more round(s), ETA 4 s (estimate as of round 1)",
    ]
