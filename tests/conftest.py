"""Shared test helpers, and the guard that keeps the ``live`` marker honest."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import serial_lock
import xdist_schedule

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def run_cli(
    *args: str, input: str | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the real console entry point in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "pilot_sys", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn`` for children a test interrupts with SIGINT: a test run started in the
    background (``pytest &`` from a script) inherits SIGINT *ignored*, and so would the child,
    which would then never see the Ctrl-C the test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (.ci/run installs it)")
    return path


# The captured machines of tests/fixtures/sys, discovered once per test session.
SYS_FIXTURES = FIXTURES / "sys"


@pytest.fixture(scope="session")
def nvme():  # NVMe + LVM
    from pilot_sys.topology.discover import discover

    return discover(SYS_FIXTURES / "nvme-lvm")


@pytest.fixture(scope="session")
def md():  # md RAID + a loop device
    from pilot_sys.topology.discover import discover

    return discover(SYS_FIXTURES / "md-raid-loop")


@pytest.fixture(scope="session")
def nfs():  # an NFS mount over a bonded, VLAN-tagged NIC
    from pilot_sys.topology.discover import discover

    return discover(SYS_FIXTURES / "nfs-bond")


# ---------------------------------------------------------------------------------------------
# The live guard.
#
# `pytest -m "not live"` is the fast, deterministic loop, so a test that starts a process or reads
# this host's /proc or /sys must say so with @pytest.mark.live. Instead of trusting the marker,
# an audit hook (PEP 578) watches the events CPython raises for opening and listing files and for
# starting processes, and a test not marked live fails when one of them happens while its setup
# or call phase runs, or when it uses a shared fixture whose setup (for an earlier test) touched
# the host. Live tests are watched too: those that touched nothing are listed at the end of the
# run (not failed: a live test may touch the host on some paths only). Not flagged:
#   - paths that are not absolute paths under /proc or /sys (captured trees in tests/fixtures are
#     data, wherever they are read from);
#   - anything done while a module is being imported: that is Python or a library (numpy,
#     psutil, matplotlib) initialising itself, not the test reading the host;
#   - threads that were already running when the test's setup started (a sampler a previous
#     live test left to wind down is not this test's doing);
#   - teardown, where a session-wide fixture may clean up after another test.
# ---------------------------------------------------------------------------------------------

_HOST_TREES = ("/proc", "/sys")
_FILE_EVENTS = frozenset({"open", "os.listdir", "os.scandir"})
_PROCESS_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.posix_spawn",
        "os.exec",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "os.system",
        "pty.spawn",
    }
)
_WATCHED = _FILE_EVENTS | _PROCESS_EVENTS
_TESTS_DIR = str(Path(__file__).resolve().parent)
_KEPT_EVENTS = 5  # how many offending events a failure message shows


def _host_path(arg: Any) -> str | None:
    """The path an open/listing event names when it is this host's /proc or /sys, else None."""
    if isinstance(arg, bytes):
        arg = os.fsdecode(arg)
    if not isinstance(arg, str) or not arg.startswith("/"):
        return None  # a file descriptor, the current directory, or a relative path
    path = os.path.normpath(arg)
    if any(path == root or path.startswith(root + "/") for root in _HOST_TREES):
        return path
    return None


def _importing(frame: FrameType | None) -> bool:
    """Whether the event happens inside an import (the import system's frames are on the stack)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _test_line(frame: FrameType | None) -> str:
    """The innermost line of a test file on the stack: where the test asked for it."""
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(_TESTS_DIR) and not name.endswith("conftest.py"):
            return f"{Path(name).name}:{frame.f_lineno}"
        frame = frame.f_back
    return "a thread the test started"


class _LiveGuard:
    """Records what a test not marked live does to the host while one of its phases runs."""

    def __init__(self) -> None:
        self.watching = False
        self.old_threads: frozenset[int] = frozenset()
        self.events: list[str] = []
        self.count = 0

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.watching or event not in _WATCHED:
            return  # the common case, first: the hook runs on every audited event
        if threading.get_ident() in self.old_threads:
            return
        if event in _FILE_EVENTS:
            what = _host_path(args[0]) if args else None
            if what is None:
                return
            what = f"{event} {what}"
        else:
            what = f"{event} {args[:2]!r}"  # the program and its arguments, as far as given
        frame = sys._getframe(1)
        if _importing(frame):
            return
        self.count += 1
        if len(self.events) < _KEPT_EVENTS:
            self.events.append(f"{what[:160]} (at {_test_line(frame)})")

    def start(self, *, fresh: bool) -> None:
        """Watch from now on; ``fresh`` (a test's setup) forgets the previous test: what it did
        and the threads it left running."""
        if fresh:
            self.events, self.count = [], 0
            main = threading.main_thread().ident
            self.old_threads = frozenset(t.ident for t in threading.enumerate() if t.ident != main)
        self.watching = True

    def stop(self) -> None:
        self.watching = False

    def verdict(self, item: pytest.Item) -> str | None:
        if not self.count:
            return None
        listed = "\n  ".join(self.events)
        unlisted = self.count - len(self.events)
        more = f"\n  ... and {unlisted} more" if unlisted else ""
        return (
            f"{item.nodeid} is not marked live but started a process or read this host's "
            f"/proc or /sys:\n  {listed}{more}\n"
            "Mark it @pytest.mark.live, or give it a captured tree from tests/fixtures."
        )


_GUARD = _LiveGuard()


def pytest_configure(config: pytest.Config) -> None:
    # Installed here rather than at import: tests that import this module as ``tests.conftest``
    # load a second copy of it, which must not add a second hook (a hook cannot be removed).
    sys.addaudithook(_GUARD.hook)
    _library_first_use()
    serial_lock.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    serial_lock.unconfigure(config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    # setup, call and teardown under the parallel run's lock: a serial test runs alone
    with serial_lock.turn(item.get_closest_marker("serial") is not None):
        return (yield)


def _library_first_use() -> None:
    """Library start-up that happens on first use rather than at import, done once here so that
    no test is blamed for it: pandas' ``read_csv`` reads the cgroup CPU quota (once, cached) to
    size its parser threads."""
    import io

    import pandas

    pandas.read_csv(io.StringIO("1\n"), header=None)


_IDLE_LIVE: list[str] = []  # live tests that passed without touching the host
_HOST_FIXTURES: set[str] = set()  # fixtures whose setup touched it (shared ones set up once)


def _guarded(item: pytest.Item, *, fresh: bool) -> Iterator[None]:
    """A phase of ``item`` under the guard: a test not marked live fails when it touched the host.

    A phase that fails on its own keeps its own error, with the guard's finding as a note. A live
    test is watched too, so that one which never touches the host can be listed (not failed: a
    live test may touch the host only on some paths)."""
    live = item.get_closest_marker("live") is not None
    _GUARD.start(fresh=fresh)
    if fresh and not live:
        # A shared fixture that touched the host when an earlier test set it up.
        for name in sorted(_HOST_FIXTURES.intersection(getattr(item, "fixturenames", ()))):
            _GUARD.count += 1
            _GUARD.events.append(f"uses fixture {name!r}, whose setup did")
    try:
        result = yield
    except BaseException as error:
        _GUARD.stop()
        verdict = None if live else _GUARD.verdict(item)
        if verdict:
            error.add_note(verdict)
        raise
    _GUARD.stop()
    if live:
        uses_host = _HOST_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if not fresh and not _GUARD.count and not uses_host:
            _IDLE_LIVE.append(item.nodeid)
        return result
    verdict = _GUARD.verdict(item)
    if verdict:
        pytest.fail(verdict, pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Iterator[Any]:
    before = _GUARD.count
    try:
        return (yield)
    finally:
        if _GUARD.count > before:
            _HOST_FIXTURES.add(fixturedef.argname)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _guarded(item, fresh=True))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _guarded(item, fresh=False))


def pytest_sessionfinish(session: pytest.Session) -> None:
    # a parallel worker hands its list to the controller, which prints the summary
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["idle_live"] = list(_IDLE_LIVE)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:  # pytest-xdist's
    return xdist_schedule.make_scheduler(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:  # pytest-xdist's, on the controller
    _IDLE_LIVE.extend(getattr(node, "workeroutput", {}).get("idle_live", ()))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _IDLE_LIVE:
        terminalreporter.section("live tests that touched no process, /proc or /sys")
        for nodeid in _IDLE_LIVE:
            terminalreporter.line(nodeid)
        terminalreporter.line("(the fast loop skips each: drop the marker of one that never does)")
