"""CSV and one-value-per-line outputs, captured from real runs on this machine."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FIXTURES
from scipy import stats

from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec
from pilot_sys.workload.parsers.result import CapturedOutput, MalformedOutput
from pilot_sys.workload.parsers.table import parse

HERE = FIXTURES / "workload"


def test_csv_with_header_time_column_and_harmonic_spec() -> None:
    text = (HERE / "table_sha256.csv").read_text()
    spec = PISpec(name="sha256_bw", unit="B/s", pi_type=PIType.HARMONIC)
    out = parse(CapturedOutput(stdout=text), specs={"sha256_bw": spec})
    rates = np.array([528391421.7, 728035457.0, 1418852044.5, 593867691.5, 599151363.7, 596342753.1,
                      567580331.7, 1419126160.5])
    np.testing.assert_allclose(out.unit_readings["sha256_bw"], rates)
    assert out.readings["sha256_bw"] == pytest.approx(stats.hmean(rates))
    assert out.unit_timestamps["sha256_bw"][0] == pytest.approx(0.007991)
    assert "time" not in out.readings
    assert out.readings["chunks"] == pytest.approx(4.5)  # arithmetic by default
    assert {s.name: s for s in out.specs}["sha256_bw"].unit == "B/s"


def test_one_value_per_line() -> None:
    out = parse(CapturedOutput(stdout=(HERE / "lines_sort_seconds.txt").read_text()), one_column=True)
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
