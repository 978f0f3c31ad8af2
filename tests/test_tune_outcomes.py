"""What `tune` and `run --overhead-budget` make of a measurement: met (0), undecided (6), over
the budget (7), out of measurements (4), each with its text, its JSON and its exit code.

The measurements are the tuner's own on synthetic workloads (``SimulatedProbe``: a known
overhead plus noise, through the same Welch comparison as real rounds); the commands get them in
place of a real tuning, so no process runs and nothing reads this host's /proc or /sys.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from pilot_sys import units
from pilot_sys.errors import ExitCode, MeasuredOutcome
from pilot_sys.monitor import tuner
from pilot_sys.monitor.overhead import SimulatedProbe
from pilot_sys.monitor.tuner import RateBounds, TuneResult, TuneStatus, TuneTarget, newton_tune
from pilot_sys.session import monitoring
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.tuning import tune_session_rate
from pilot_sys.workload.runner import CommandWorkload

BOUNDS = RateBounds(
    min_hz=20.0, max_hz=100.0, min_reason="2 samples per 100 ms spike", max_reason="test"
)
BUDGET = 0.01


def _tuned(kind: str) -> TuneResult:
    """A real search on a synthetic workload whose outcome is ``kind``."""
    cases = {  # overhead(rate), noise per round, pairs per measurement, seed, prior slope
        "met": (lambda r: 1e-5 * r, 0.0015, 10, 0, 2e-4),
        "undecided": (lambda r: 1e-5 * r, 0.05, 3, 1, 5e-4),
        "over": (lambda r: 0.002 * r, 0.0015, 10, 0, 1e-4),
    }
    fn, noise, pairs, seed, prior = cases[kind]
    probe = SimulatedProbe(fn, noise=noise, pairs=pairs, seed=seed)
    return newton_tune(
        probe, budget=BUDGET, bounds=BOUNDS, prior_slope=prior, target=TuneTarget.UPPER
    )


@pytest.fixture()
def no_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """No component discovery: the commands build their sampler factory from this host."""
    monkeypatch.setattr(monitoring, "session_sampler_factory", lambda args, hosts=(): None)


def _with(monkeypatch: pytest.MonkeyPatch, result: TuneResult) -> None:
    def fake(*args: Any, **kwargs: Any) -> TuneResult:
        for it in result.iterations:
            if kwargs.get("on_iteration") is not None:
                kwargs["on_iteration"](it)
        return result

    monkeypatch.setattr(tuner, "tune_for_workload", fake)


@pytest.mark.parametrize(
    ("kind", "code", "status"),
    [
        ("met", 0, "at_max_rate"),
        ("undecided", 6, "undecided"),
        ("over", 7, "over_budget"),
    ],
)
def test_tune_exit_code_text_and_json(
    monkeypatch: pytest.MonkeyPatch, no_host: None, kind: str, code: int, status: str
) -> None:
    from pilot_sys.cli.tune import tune

    result = _tuned(kind)
    _with(monkeypatch, result)
    est = result.overhead
    assert est is not None
    text = CliRunner().invoke(tune, ["--budget", "1%", "--", "true"])
    assert text.exit_code == code, text.output
    assert f"rate:      {result.rate_hz:.1f} Hz ({status})" in text.stdout
    interval = (
        f"[{units.percent(est.ci_low, 2, signed=True)}, "
        f"{units.percent(est.ci_high, 2, signed=True)}]"
    )
    budget = next(line for line in text.stdout.splitlines() if line.startswith("budget:"))
    assert (
        budget
        == {
            "met": f"budget:    1 %: met (the interval {interval} lies below it)",
            "undecided": f"budget:    1 %: undecided (the interval {interval} straddles it; "
            "exit 6)",
            "over": f"budget:    1 %: over budget (the interval {interval} lies above it even at "
            "the "
            "slowest useful rate; exit 7)",
        }[kind]
    )
    if code:  # one line on stderr: the verdict, not an error
        assert text.stderr == f"pilot-sys: {result.message}\n"
    else:
        assert text.stderr == ""
    as_json = CliRunner().invoke(tune, ["--budget", "1%", "--json", "--", "true"])
    out = json.loads(as_json.stdout)
    assert as_json.exit_code == out["exit_code"] == code and out["status"] == status
    assert out["met"] is (code == 0) and out["met"] is (out["overhead"]["ci_high"] <= BUDGET)


def test_tune_out_of_measurements_is_4(monkeypatch: pytest.MonkeyPatch, no_host: None) -> None:
    from pilot_sys.cli.tune import tune

    probe = SimulatedProbe(lambda r: BUDGET * r / 60.0, noise=0.0015, pairs=10, seed=0)
    result = newton_tune(
        probe, budget=BUDGET, bounds=BOUNDS, prior_slope=BUDGET / 20, max_measurements=1
    )
    assert result.status is TuneStatus.MAX_MEASUREMENTS and result.met
    _with(monkeypatch, result)
    text = CliRunner().invoke(tune, ["--budget", "1%", "--", "true"])
    assert text.exit_code == ExitCode.LIMIT_REACHED
    assert (
        "budget:    1 %: met at this rate, but the search did not converge (exit 4)" in text.stdout
    )
    assert text.stderr.startswith("pilot-sys: warning: not converged after 1 measurement(s)")


@pytest.mark.parametrize(("kind", "code"), [("undecided", 6), ("over", 7)])
def test_run_overhead_budget_stops_with_the_outcome(
    monkeypatch: pytest.MonkeyPatch,
    no_host: None,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    code: int,
) -> None:
    from pilot_sys.cli import main

    result = _tuned(kind)
    _with(monkeypatch, result)
    with pytest.raises(MeasuredOutcome) as raised:
        tune_session_rate(
            CommandWorkload(["true"]),
            SessionConfig(work_min=1, work_max=1),
            BUDGET,
            note=lambda line: None,
        )
    assert raised.value.exit_code == code and raised.value.where == "--overhead-budget"
    first = (
        "undecided: at the slowest useful rate 20 Hz"
        if code == 6
        else "1 % cannot be met: even at the slowest useful rate 20 Hz"
    )
    assert raised.value.problem.startswith(first) and "--sample-rate" in raised.value.problem

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise raised.value

    monkeypatch.setattr("pilot_sys.session.launch.tune_session_rate", refuse)
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--overhead-budget", "1%", "--parser", "lines", "--", "true"])
    assert exit_.value.code == code
    assert capsys.readouterr().err == f"pilot-sys: --overhead-budget: {raised.value.problem}\n"
