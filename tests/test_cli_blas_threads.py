"""Read-only commands load numpy's OpenBLAS with one thread; workload commands leave it alone.

An analysis of numbers does vector arithmetic, where OpenBLAS's worker threads (one per core,
started when numpy loads) only spin on cores other jobs use; a workload inherits pilot-sys's
environment, so a command that runs one must not change the user's thread count. Each case runs
in a fresh interpreter (numpy must not be loaded before the choice is made) and reports the
variable and the process's thread count after the command.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fresh_interpreter import run_fresh

from pilot_sys.cli import THREAD_COUNT_VARIABLES

CHILD = r"""
import contextlib, io, json, os, sys
from pilot_sys.cli import main

out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
import numpy  # loaded by the command already, or now under the same environment
print(json.dumps({
    "variable": os.environ.get("OPENBLAS_NUM_THREADS"),
    "threads": len(os.listdir("/proc/self/task")),
}))
"""


def _child(*args: str, **env: str) -> dict[str, object]:
    return run_fresh(CHILD, *args, drop=THREAD_COUNT_VARIABLES, env=env)


@pytest.fixture
def numbers(tmp_path: Path) -> Path:
    path = tmp_path / "numbers.txt"
    path.write_text("".join(f"{10 + (i % 7) / 10}\n" for i in range(400)))
    return path


@pytest.mark.live  # fresh interpreters
@pytest.mark.parametrize("command", ["analyze", "changepoints", "steady"])
def test_an_analysis_of_numbers_runs_numpy_with_one_blas_thread(
    command: str, numbers: Path
) -> None:
    mine = _child(command, str(numbers))
    assert mine["variable"] == "1", mine
    if (os.cpu_count() or 1) > 1:
        # the interpreter's own thread only: no OpenBLAS worker was started
        assert mine["threads"] == 1, mine
        # and the same interpreter with OpenBLAS's default does start workers (the check can fail)
        default = _child("--version", OPENBLAS_NUM_THREADS="")
        assert default["threads"] > 1, default


@pytest.mark.live
def test_a_thread_count_the_user_chose_is_kept(numbers: Path) -> None:
    assert _child("analyze", str(numbers), OPENBLAS_NUM_THREADS="2")["variable"] == "2"
    kept = _child("analyze", str(numbers), OMP_NUM_THREADS="2")
    assert kept["variable"] is None, kept


@pytest.mark.live
def test_a_command_that_runs_a_workload_leaves_the_environment_alone(tmp_path: Path) -> None:
    # `monitor` runs the user's command with pilot-sys's environment: no variable added
    seen = tmp_path / "seen.txt"
    script = f'echo "${{OPENBLAS_NUM_THREADS-unset}}" > {seen}'
    _child("monitor", "--", "sh", "-c", script)
    assert seen.read_text().strip() == "unset"
