"""One model of a series: `analyze`, `steady` and `changepoints` give one answer (issue 22 item 1).

Each shape is written to a file and read by the three commands in-process (no process is
started): the warm-up, the steady part and the changes after it must be the same readings in
all three, and the model's own answer must be the one a person reads off the plot.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.cli import main
from pilot_sys.stats.series_model import series_model


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``pilot-sys ARGS`` in this process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def _shapes() -> dict[str, tuple[np.ndarray, tuple[int, int] | None, list[tuple[int, str]]]]:
    """Series, the steady part a person sees (approximately) and the changes after it."""
    rng = np.random.default_rng(1)
    i = np.arange(1000)
    return {
        # issue 22's series: a ramp 200 -> 100, 60 readings at 100, a step to 125
        "ramp_plateau_step": (
            np.concatenate(
                [np.linspace(200, 100, 40), 100 + rng.normal(0, 2, 60), 125 + rng.normal(0, 2, 15)]
            ),
            (40, 100),
            [(100, "level")],
        ),
        "ramp_up": (
            np.concatenate(
                [np.linspace(20, 100, 150) + rng.normal(0, 2, 150), 100 + rng.normal(0, 2, 850)]
            ),
            (150, 1000),
            [],
        ),
        "decay": (50 + 200 * np.exp(-i / 60) + rng.normal(0, 2, 1000), (360, 1000), []),
        "level_shift_in_the_middle": (
            np.concatenate([100 + rng.normal(0, 2, 600), 140 + rng.normal(0, 2, 400)]),
            (0, 600),
            [(600, "level")],
        ),
        "trend": (100 + 0.05 * np.arange(800) + rng.normal(0, 1, 800), None, []),
    }


SHAPES = _shapes()


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_model_is_what_a_person_reads_off_the_plot(name: str) -> None:
    values, steady, later = SHAPES[name]
    model = series_model(values)
    if steady is None:
        assert model.steady is None
        return
    assert model.steady is not None
    begin, end = model.steady
    # the warm-up ends within a few readings of where the plot shows it (EDM's resolution)
    assert abs(begin - steady[0]) <= max(40, steady[0] // 5) if steady[0] else begin == 0
    assert end == steady[1]
    assert [(k.index, k.kind) for k in model.later_changes] == later


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_analyze_steady_and_changepoints_report_the_same_cuts(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    values, _, _ = SHAPES[name]
    path = tmp_path / f"{name}.txt"
    np.savetxt(path, values, fmt="%.6f")
    model = series_model(np.loadtxt(path))

    code, out, err = _cli(capsys, "changepoints", str(path), "--json")
    assert code == 0, err
    cp = json.loads(out)
    code, out, err = _cli(capsys, "steady", str(path), "--json")
    assert code == 0, err
    st = json.loads(out)
    code, out, err = _cli(capsys, "analyze", str(path), "--json")
    assert code == 0, err
    an = json.loads(out)

    assert cp["changepoints"] == model.changepoints == st["changepoints"]
    if model.steady is None:
        assert cp["model"]["steady"] is None
        assert st["steady_state_start"] is None
        assert an["stable_part"]["found"] is False and an["sample_size"] == values.size
        return
    begin, end = model.steady
    assert cp["model"]["steady"] == [begin, end] == cp["stable_segment"]
    assert (st["steady_state_start"], st["steady_state_end"]) == (begin, end)
    assert st["steady"]["n"] == end - begin  # the later level is never averaged in
    assert (an["stable_part"]["begin"], an["stable_part"]["end"]) == (begin, end)
    assert an["sample_size"] == end - begin
    later = [(k["index"], k["kind"]) for k in cp["model"]["later_changes"]]
    assert later == [(k.index, k.kind) for k in model.later_changes]
    assert len(st["later_changes"]) == len(later) == len(an["stable_part"]["later_changes"])


def test_the_issues_series_in_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Warm-up = the ramp, steady = the 60 at 100, then the steady state changed to 125."""
    values, _, _ = SHAPES["ramp_plateau_step"]
    path = tmp_path / "series.txt"
    np.savetxt(path, values, fmt="%.6f")
    _, cp, _ = _cli(capsys, "changepoints", str(path))
    assert "the steady state changed: level shift from 100" in cp
    assert "to 125" in cp and "at reading 100" in cp
    assert "level, p=" in cp.splitlines()[5]  # the jump to 125 is a level change, not "spread"
    _, st, _ = _cli(capsys, "steady", str(path))
    assert "steady changed   : level shift from 100" in st
    _, an, _ = _cli(capsys, "analyze", str(path))
    assert "the steady state changed: level shift from 100" in an
    mean = float(an.split("stable", 1)[1].split()[0])
    assert mean == pytest.approx(100, abs=1.5)  # the plateau at 125 is not averaged in


def test_a_ramp_is_one_warm_up_even_when_edm_cuts_it_into_a_staircase() -> None:
    """Item 8's shape: EDM cuts a long ramp into many pieces; the model merges them."""
    rng = np.random.default_rng(3)
    x = np.concatenate([np.linspace(0.0, 100.0, 20_000), 100 + rng.normal(0, 1, 80_000)])
    model = series_model(x)
    assert model.steady is not None and model.steady[1] == x.size
    assert abs(model.steady[0] - 20_000) <= 400


def test_no_run_holding_half_falls_back_to_where_the_level_settles() -> None:
    """A level that wanders among several values (no run of equal segments holds more than
    half), then settles for its last 500 readings: the steady part is where the level settles
    for good, the study's procedure (``settle``), and it runs to the end."""
    from pilot_sys.stats.series_model import series_model
    from pilot_sys.stats.settle import settle

    rng = np.random.default_rng(1)
    parts = [np.linspace(300.0, 120.0, 150)]
    parts += [level + rng.normal(0.0, 1.0, 150) for level in (100, 110, 100, 115, 105, 110)]
    parts.append(100.0 + rng.normal(0.0, 1.0, 500))
    y = np.concatenate(parts)
    model = series_model(y)
    assert settle(y).start == 1050
    assert model.steady == (1050, y.size)
    assert "settles for good" in model.reason and "32.3%" in model.reason


def test_the_fallback_is_the_studys_procedure_on_the_readings_as_given() -> None:
    """Readings in seconds (JMH's microseconds per operation): the fallback's answer is
    exactly ``settle``'s on the readings as given (``steady --method segments``), not on the
    model's rescaled copy, whose mean of about 1 made the outlier guard at the start 289
    readings long instead of 29 and moved the start past a burst of slow readings."""
    from pilot_sys.stats.settle import settle

    rng = np.random.default_rng(1)
    levels = (100, 102, 100, 103, 101, 102)  # within 3 %: no warm-up by the 5 % tolerance
    y = np.concatenate([level + rng.normal(0.0, 1.0, 300) for level in levels]) * 1e-6
    y[200:205] *= 4  # a burst of slow readings inside the first 289
    model = series_model(y)
    assert "settles for good" in model.reason  # no run of equal segments holds half
    assert settle(y).start == 203
    assert model.steady == (203, y.size)


def _jmh_dev_set() -> Path | None:
    root = Path(__file__).resolve().parents[1]
    for shared in (root.parent / "shared", root.parent.parent / "shared"):
        if (shared / "data" / "jmh-steady-dev" / "labels.json").is_file():
            return shared / "data" / "jmh-steady-dev"
    return None


@pytest.mark.skipif(_jmh_dev_set() is None, reason="the JMH dev set (shared/data) is not here")
def test_a_real_jmh_fork_without_a_dominant_run_gets_the_studys_label() -> None:
    """d102 fork 1 (seconds per operation, 3,000 iterations): no run of equal segments holds
    half, so the model falls back to where the level settles; on the readings as given that is
    iteration 26, the study's label (s = 25); on the rescaled copy it was 0."""
    data = _jmh_dev_set()
    assert data is not None
    x = np.load(data / "series.npz")["d102"][1]
    label = json.loads((data / "labels.json").read_text())["d102"]["steady_state_starts"][1]
    model = series_model(x)
    assert "settles for good" in model.reason
    assert label == 25
    assert model.steady == (26, x.size)
