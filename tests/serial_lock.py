"""Tests marked ``serial`` run alone when the suite runs in parallel workers (pytest-xdist).

Most live tests wait on wall-clock rounds, not on the CPU, so two workers halve the suite's time.
A test that measures the monitor's overhead, times work, or judges what loaded the host would
measure the other worker too: it is marked ``@pytest.mark.serial`` and, while it runs (setup,
call and teardown), no other test runs. The workers share a readers-writer lock made of two
``flock`` files in a directory the controlling process makes for the run: every test holds the
main lock shared, a serial test holds it exclusively; a turnstile taken before either keeps a
waiting serial test from being starved by the other worker's stream of shared holders.

Without workers (``-p no:xdist``, ``-n 0``, or pytest-xdist not installed) nothing is locked.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

LOCK_DIR_ENV = "PILOT_SYS_TEST_LOCKS"  # set by the controller, inherited by its workers


def _in_parallel_run(config: pytest.Config) -> bool:
    """Whether this is the controller of a run with workers (not a worker, not a plain run)."""
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", 0))


def configure(config: pytest.Config) -> None:
    """The controller makes the lock directory before its workers start (they inherit it)."""
    if _in_parallel_run(config):
        os.environ[LOCK_DIR_ENV] = tempfile.mkdtemp(prefix="pilot-sys-test-locks-")


def unconfigure(config: pytest.Config) -> None:
    if _in_parallel_run(config):
        shutil.rmtree(os.environ.pop(LOCK_DIR_ENV, ""), ignore_errors=True)


@contextlib.contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    with path.open("a") as f:
        fcntl.flock(f, mode)  # released when the file is closed
        yield


@contextlib.contextmanager
def turn(serial: bool) -> Iterator[None]:
    """Hold the run's lock for one test: exclusively for a serial test, else shared."""
    folder = os.environ.get(LOCK_DIR_ENV)
    if not folder or not Path(folder).is_dir():
        yield
        return
    turnstile, main = Path(folder) / "turnstile", Path(folder) / "main"
    if serial:
        with _flock(turnstile, fcntl.LOCK_EX), _flock(main, fcntl.LOCK_EX):
            yield
        return
    with contextlib.ExitStack() as held:
        with _flock(turnstile, fcntl.LOCK_EX):
            held.enter_context(_flock(main, fcntl.LOCK_SH))
        yield
