"""``pilot-sys compare A B`` on data files: verdicts, JSON, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from tests.conftest import run_cli


def write(path: Path, x: np.ndarray, header: str = "lat (ms)") -> str:
    path.write_text(f"{header}\n" + "\n".join(f"{v:.6f}" for v in x) + "\n")
    return str(path)


def test_json_matches_scipy_for_independent_samples(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(10.0, 1.0, 400), rng.normal(10.4, 1.5, 300)
    res = run_cli("compare", write(tmp_path / "a.csv", a), write(tmp_path / "b.csv", b), "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["verdict"] == "a_lower" and out["a_faster"] is True  # lower latency is better by default
    assert out["unit"] == "ms"
    if out["a"]["subsession_size"] == 1 and out["b"]["subsession_size"] == 1:
        ref = sps.ttest_ind(a, b, equal_var=False)
        # the stats module takes the larger of two variance estimates, so p can only be larger
        assert out["p_value"] >= ref.pvalue * 0.999
    assert out["difference_ci_low"] < -0.4 < out["difference_ci_high"]


def test_undecided_says_how_many_more(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(10.0, 1.0, 200), rng.normal(10.05, 1.0, 200)
    res = run_cli("compare", write(tmp_path / "a.csv", a), write(tmp_path / "b.csv", b))
    assert res.returncode == 0, res.stderr
    assert "no significant difference" in res.stdout and "more samples of A" in res.stdout


@pytest.mark.parametrize(
    ("b_content", "args", "expected"),
    [
        (None, [], "b.csv: no such file"),
        ("x\n1\nabc\n", [], "b.csv:3:1: 'abc' in column 'x' is not a number"),
        ("x\n1\n2\n", [], "b.csv: 2 sample(s); at least 8 are needed"),
        ("1\n2\n", ["--threshold", "2"], "--threshold: 2 must be between 0 and 1"),
        ("x\n1\n", ["--column", "y"], "no column named 'y'"),
    ],
)
def test_bad_input(tmp_path: Path, b_content: str | None, args: list[str], expected: str) -> None:
    a = write(tmp_path / "a.csv", np.random.default_rng(2).normal(size=100), header="x")
    b = tmp_path / "b.csv"
    if b_content is not None:
        b.write_text(b_content)
    res = run_cli("compare", a, str(b), *args)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert expected in res.stderr
