"""A few numbers cost only the imports they use (issue 22, item 8: a small file analysed fast).

Each case runs ``pilot_sys.cli.main`` in a fresh interpreter and reports the modules it loaded.
On ten numbers ``analyze``, ``steady`` and ``changepoints`` decide without any statistic from
scipy, so scipy (about 0.3 s to import: its array-API layer also loads numpy.f2py and
numpy.testing), pandas (read only for large files), matplotlib and requests must stay unloaded;
``--help``, ``analyze --help`` and an option refused before reading load none of numpy,
pydantic or asyncio. (asyncio is allowed where pydantic is loaded: pydantic-core marks functions
with typing_extensions' ``deprecated``, which imports asyncio on Python < 3.13.) Output that
goes to no terminal is plain text, written without rich, and a series too short for any change
point needs none of the steady-state search after change-point detection (``settle`` with PELT
and CROPS) nor the change-point detector. The timings themselves are
``benchmarks/small_file_speed.py``'s, not a test's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fresh_interpreter import run_fresh

#: Runs in the child: the command, then which top-level modules it loaded, as the last line.
CHILD = r"""
import contextlib, io, json, sys
from pilot_sys.cli import main

out = io.StringIO()
code = 0
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
    try:
        main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
loaded = sorted({m.partition(".")[0] for m in sys.modules} | {m for m in sys.modules if "." in m})
print(json.dumps({"code": code, "output": out.getvalue(), "loaded": loaded}))
"""

#: Never needed by a command on a few numbers.
HEAVY = {"scipy", "pandas", "matplotlib", "requests", "numpy.f2py", "numpy.testing"}
#: Not even needed to parse arguments or print help.
ARGUMENTS_ONLY = HEAVY | {"numpy", "pydantic", "pydantic_core", "asyncio", "rich"}

TEN = "".join(f"{v}\n" for v in (10.1, 10.3, 9.9, 10.0, 10.2, 10.4, 9.8, 10.1, 10.0, 10.2))


#: Make rich style output that goes to no terminal (rich's own switches).
RICH_SWITCHES = ("FORCE_COLOR", "TTY_COMPATIBLE")


def _run(*args: str) -> dict[str, object]:
    return run_fresh(CHILD, *args, drop=RICH_SWITCHES)


@pytest.fixture
def ten(tmp_path: Path) -> Path:
    path = tmp_path / "ten.txt"
    path.write_text(TEN)
    return path


@pytest.mark.live  # a fresh interpreter per command: this process has imported everything
@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["analyze"], "no CI (too few effective samples)"),
        (["analyze", "--json"], '"ci_low": null'),
        (["steady"], "too short to show a steady state"),
        (["changepoints"], "too short to show a change"),
    ],
    ids=["analyze", "analyze-json", "steady", "changepoints"],
)
def test_ten_numbers_load_no_scipy_or_pandas(ten: Path, args: list[str], expect: str) -> None:
    report = _run(*args, str(ten))
    assert expect in str(report["output"]), report["output"]
    loaded = set(report["loaded"])  # type: ignore[arg-type]
    # the command did analyse the numbers (not vacuous): numpy and the output models are there
    assert {"numpy", "pydantic"} <= loaded
    assert sorted(loaded & HEAVY) == []


#: What text output to no terminal, and a series too short for a change point, do without.
PLAIN_SHORT = {
    "rich",
    "pilot_sys.stats.settle",
    "pilot_sys.stats.pelt",
    "pilot_sys.stats.crops",
}
#: The change-point detector (its models and minimum segment size are enough to say "too short").
DETECTOR = {
    "pilot_sys.stats.changepoint",
    "pilot_sys.stats._changepoint_search",
    "pilot_sys.stats._changepoint_edges",
}


@pytest.mark.live
@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["analyze"], "ten.txt column 0: arithmetic mean, 95% CI\n  all     10.1  no CI"),
        (["changepoints"], "too short to show a change"),
    ],
    ids=["analyze", "changepoints"],
)
def test_ten_numbers_as_plain_text_load_no_rich_nor_settle(
    ten: Path, args: list[str], expect: str
) -> None:
    """The child's output is a StringIO (no terminal): rich would write plain text there, so
    the text is written without it; ``steady`` does load ``settle`` (its own method)."""
    report = _run(*args, str(ten))
    assert expect in str(report["output"]), report["output"]
    loaded = set(report["loaded"])  # type: ignore[arg-type]
    assert "pilot_sys.stats.series_model" in loaded  # the model was asked (not vacuous)
    assert sorted(loaded & PLAIN_SHORT) == []


@pytest.mark.live
@pytest.mark.parametrize("command", ["analyze", "steady", "changepoints"])
def test_ten_numbers_load_no_change_point_detector(ten: Path, command: str) -> None:
    """Ten readings are too short for two segments of the minimum size: the one model says so
    from the minimum size alone, without the detector."""
    report = _run(command, "--json", str(ten))
    assert "too short" in str(report["output"]), report["output"]
    loaded = set(report["loaded"])  # type: ignore[arg-type]
    assert "pilot_sys.stats._changepoint_result" in loaded  # the model's types (not vacuous)
    assert sorted(loaded & DETECTOR) == []


@pytest.mark.live
@pytest.mark.parametrize(
    "args",
    [["--help"], ["analyze", "--help"], ["steady", "--help"], ["changepoints", "--help"]],
    ids=["help", "analyze-help", "steady-help", "changepoints-help"],
)
def test_help_loads_neither_numpy_nor_pydantic(args: list[str]) -> None:
    report = _run(*args)
    assert report["code"] == 0
    assert "Usage:" in str(report["output"])
    assert sorted(set(report["loaded"]) & ARGUMENTS_ONLY) == []  # type: ignore[arg-type]


@pytest.mark.live
def test_an_option_refused_before_reading_loads_neither_numpy_nor_pydantic(ten: Path) -> None:
    report = _run("analyze", "--confidence", "2", str(ten))
    assert report["code"] == 2
    assert "pilot-sys: error: --confidence: 2 must be between 0 and 1" in str(report["output"])
    assert sorted(set(report["loaded"]) & ARGUMENTS_ONLY) == []  # type: ignore[arg-type]
