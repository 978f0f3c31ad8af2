"""CSV and one-value-per-line outputs, captured from real runs on this machine."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from conftest import FIXTURES
from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec
from pilot_sys.workload.parsers.result import CapturedOutput, MalformedOutput
from pilot_sys.workload.parsers.table import parse

HERE = FIXTURES / "workload"


def test_csv_with_header_time_column_and_harmonic_spec() -> None:
    text = (HERE / "table_sha256.csv").read_text()
    spec = PISpec(name="sha256_bw", unit="B/s", pi_type=PIType.HARMONIC)
    out = parse(CapturedOutput(stdout=text), specs={"sha256_bw": spec})
    rates = np.array(
        [
            528391421.7,
            728035457.0,
            1418852044.5,
            593867691.5,
            599151363.7,
            596342753.1,
            567580331.7,
            1419126160.5,
        ]
    )
    np.testing.assert_allclose(out.unit_readings["sha256_bw"], rates)
    assert out.readings["sha256_bw"] == pytest.approx(stats.hmean(rates))
    assert out.unit_timestamps["sha256_bw"][0] == pytest.approx(0.007991)
    assert "time" not in out.readings
    assert out.readings["chunks"] == pytest.approx(4.5)  # arithmetic by default
    assert {s.name: s for s in out.specs}["sha256_bw"].unit == "B/s"


def test_one_value_per_line() -> None:
    out = parse(
        CapturedOutput(stdout=(HERE / "lines_sort_seconds.txt").read_text()), one_column=True
    )
    values = np.loadtxt(HERE / "lines_sort_seconds.txt")
    assert values.size == 10
    assert out.readings["value"] == pytest.approx(values.mean())
    np.testing.assert_allclose(out.unit_readings["value"], values)


def test_single_row_is_readings_only() -> None:
    out = parse(CapturedOutput(stdout="ops,latency\n1200,0.004\n"))
    assert out.readings == {"ops": 1200.0, "latency": 0.004}
    assert out.unit_readings == {}


def test_text_columns_are_ignored_but_mixed_columns_are_errors() -> None:
    out = parse(CapturedOutput(stdout="name,v\na,1\nb,3\n"))
    assert out.readings == {"v": 2.0}
    with pytest.raises(MalformedOutput) as err:
        parse(CapturedOutput(stdout="name,v\na,1\nb,oops\n", stdout_name="r1/stdout.txt"))
    assert err.value.where == "r1/stdout.txt:3:3"
    assert "'v' expects a number" in err.value.problem


def test_shape_errors() -> None:
    with pytest.raises(MalformedOutput, match="printed no values"):
        parse(CapturedOutput(stdout="# only a comment\n"))
    with pytest.raises(MalformedOutput, match="expected one value per line, found 2 columns"):
        parse(CapturedOutput(stdout="1,2\n3,4\n"), one_column=True)
    with pytest.raises(MalformedOutput, match=r"stdout.txt:3: expected 2 columns, found 3"):
        parse(CapturedOutput(stdout="a,b\n1,2\n1,2,3\n"))


def test_non_finite_values_are_reported_with_their_place_not_averaged() -> None:
    out = parse(
        CapturedOutput(
            stdout="lat,ops,note\n1.5,10,a\nnan,12,b\n2.5,inf,c\n-inf,11,d\n",
            stdout_name="r1/stdout.txt",
        )
    )
    assert out.readings == {} and out.unit_readings == {}  # neither column can be averaged
    lat, ops = out.non_finite
    assert (lat.pi, lat.count, lat.total, lat.first, lat.line) == ("lat", 2, 4, "nan", 3)
    assert lat.where == "r1/stdout.txt:3:1"
    assert (ops.pi, ops.count, ops.first, ops.where) == ("ops", 1, "inf", "r1/stdout.txt:4:5")
    assert lat.message() == (
        "2 value(s) no statistics can use (NaN, infinite, or beyond 1e±140) ('nan') of 4 in "
        "column 'lat', first at line 3"
    )
    one = parse(CapturedOutput(stdout="3\nNaN\n"), one_column=True)
    assert [(n.pi, n.count, n.line) for n in one.non_finite] == [("value", 1, 2)]
    fine = parse(CapturedOutput(stdout="t,v\n0.1,nan\n0.2,3\n"))
    assert [n.pi for n in fine.non_finite] == ["v"] and fine.readings == {}


def test_rates_must_be_positive_for_their_harmonic_mean() -> None:
    spec = PISpec(name="bw", unit="B/s", pi_type=PIType.HARMONIC)
    with pytest.raises(MalformedOutput, match="harmonic mean.*1 are <= 0"):
        parse(CapturedOutput(stdout="bw\n5\n0\n"), specs={"bw": spec})


def test_output_is_read_from_its_file_line_by_line(tmp_path: Path) -> None:
    """A long table costs its numbers, not its text: rows are never all held as strings."""
    path = tmp_path / "stdout.txt"
    n = 100_000
    values = np.arange(n, dtype=float) * 0.5 + 1.0
    np.savetxt(
        path,
        np.column_stack([np.arange(n), values]),
        fmt=["%d", "%.1f"],
        delimiter=",",
        header="i,rate",
        comments="",
    )
    tracemalloc.start()
    try:
        out = parse(CapturedOutput.from_files(path, tmp_path / "stderr.txt", tmp_path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(out.unit_readings["rate"], values)
    assert out.readings["rate"] == pytest.approx(values.mean())
    assert peak < 4 * 2 * values.nbytes, f"peak {peak / 1e6:.1f} MB"  # two columns of numbers
