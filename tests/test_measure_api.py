"""``pilot_sys.measure``: a decorated function to a result directory in one call, with the
decorator's work range and unit, and the CPU as the component under test of a function."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import pilot_sys

pytestmark = pytest.mark.live  # times real work in this process


@pilot_sys.benchmark(work_amount=(2_000, 20_000), work_amount_unit="items")
def sort_floats(n: int) -> None:
    sorted(random.random() for _ in range(n))


def test_measure_uses_the_decorators_range_and_writes_the_result_directory(
    tmp_path: Path,
) -> None:
    out = tmp_path / "sort"
    result = pilot_sys.measure(
        sort_floats, out, "quick", monitor=False, session_limit=15, ci_perc=0.2
    )
    saved = json.loads((out / "result.json").read_text())
    assert saved["status"] == result.status.value and saved["exit_code"] == result.exit_code
    assert saved["config"]["work_min"] == 2_000 and saved["config"]["work_max"] == 20_000
    assert saved["config"]["work_unit"] == "items"
    pi = result.workloads[0].pis["work_rate"]
    assert pi.unit == "items/s" and pi.mean is not None and pi.mean > 0
    rounds = [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines()]
    assert rounds and all(2_000 <= r["work_amount"] <= 20_000 for r in rounds)
    assert (out / "report.md").is_file() and (out / "report.html").is_file()


def test_a_monitored_function_measures_the_cpu(tmp_path: Path) -> None:
    from pilot_sys.report.measure import FUNCTION_CUT

    out = tmp_path / "monitored"
    pilot_sys.measure(sort_floats, out, "quick", session_limit=8, max_rounds=12)
    saved = json.loads((out / "result.json").read_text())
    assert saved["config"]["cut"] == FUNCTION_CUT == "cpu:host"
    # the CPU it runs on is its component under test, never its hidden bottleneck
    assert not any(h.startswith("cpu:host") for h in saved["bottleneck"]["hidden_bottlenecks"])


def test_a_named_cut_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "cut"
    pilot_sys.measure(sort_floats, out, "quick", monitor=False, max_rounds=6, cut="memory:host")
    assert json.loads((out / "result.json").read_text())["config"]["cut"] == "memory:host"
