"""Running one workload process so that nothing it starts outlives the round.

The command runs in its own process group (``process_group=0``; a new session made CPython
spawn it more slowly, ~1.1 ms against ~0.4 ms, on every timed round): a timeout or Ctrl-C kills
the whole group, plus any descendant that moved to another group (found with psutil before
signalling), and processes a finished round left behind in its group are ended before the next
round.

The wait does not poll: ``Popen.wait(timeout=...)`` sleeps in steps that grow to 50 ms, which
put up to 50 ms on every timed round. A pidfd (``os.pidfd_open``) becomes readable when the
child exits; ``select.poll`` on it blocks in the kernel until then or the timeout, the round's
wall time is taken the moment it returns, and ``os.wait4`` reaps the child with its rusage
(user and system CPU, peak RSS: what ``hyperfine`` reports as user and system time).
"""

from __future__ import annotations

import math
import os
import resource
import select
import shutil
import signal
import statistics
import subprocess
import time
from pathlib import Path

import psutil
from pydantic import BaseModel

from pilot_sys.errors import BadInput, WorkloadFailed
from pilot_sys.workload.base import ProcessUsage
from pilot_sys.workload.orphan_guard import Guard, end_escaped, new_mark, running_pids

GRACE_SECONDS = 3.0  # SIGTERM first, SIGKILL after this long


class WorkloadTimeout(WorkloadFailed):
    """A round ran past its timeout and was killed with its process tree."""


class ProcessResult(BaseModel):
    returncode: int
    duration: float  # wall seconds from just before the spawn to the exit
    leftovers_killed: int = 0  # processes the command left running in its group
    usage: ProcessUsage | None = None
    escaped: list[str] = []  # "pid name" of descendants that left the group (setsid), ended


class ExitWait:
    """Waits for one child's exit without polling, then reaps it with its rusage.

    ``wait(timeout)`` returns True at the exit (``exited_at`` holds ``time.perf_counter()``
    then) or False at the timeout; a signal handler that raises (Ctrl-C) interrupts it. Where
    pidfds are missing (Linux before 5.3) it falls back to ``Popen.wait``, which polls."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.exited_at: float | None = None
        self.usage: ProcessUsage | None = None
        try:
            self._fd: int | None = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            self._fd = None

    def wait(self, timeout: float | None) -> bool:
        if self._fd is None:
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                return False
            self.exited_at = time.perf_counter()
            return True
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        ms = -1 if timeout is None else max(0, math.ceil(timeout * 1000.0))
        if not poller.poll(ms):  # PEP 475: retried after a signal whose handler returns
            return False
        self.exited_at = time.perf_counter()
        self._reap()
        return True

    def _reap(self) -> None:
        try:
            _, status, ru = os.wait4(self.proc.pid, 0)
        except ChildProcessError:  # reaped elsewhere already: Popen knows its return code
            return
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        own_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.usage = ProcessUsage(
            user_seconds=ru.ru_utime,
            system_seconds=ru.ru_stime,
            max_rss_bytes=int(ru.ru_maxrss) * 1024 if ru.ru_maxrss > own_peak else None,
        )

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _is_gone(proc: psutil.Process) -> bool:
    """Exited, or a zombie: some container inits never reap orphans, and a zombie does nothing."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_gone(procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Poll until every process is gone or a zombie; returns those still alive at the timeout."""
    deadline = time.monotonic() + timeout
    alive = [p for p in procs if not _is_gone(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.01)
        alive = [p for p in alive if not _is_gone(p)]
    return alive


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to a process group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member changed credentials (sudo); psutil handles the rest
        return True
    return True


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """End the command, its process group and every descendant: SIGTERM, then SIGKILL."""
    try:
        descendants = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        descendants = []
    _signal_group(proc.pid, signal.SIGTERM)
    for child in descendants:
        try:
            child.terminate()
        except psutil.NoSuchProcess:
            pass
    try:
        proc.wait(timeout=GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    alive = wait_gone(descendants, timeout=0.2 if proc.returncode is not None else 0)
    _signal_group(proc.pid, signal.SIGKILL)
    for child in alive:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    proc.wait()


def end_leftovers(pgid: int) -> int:
    """Stop processes a finished command left in its group; returns how many there were."""
    try:
        members = [p for p in psutil.process_iter() if _pgid(p.pid) == pgid and not _is_gone(p)]
    except psutil.Error:
        members = []
    if not members or not _signal_group(pgid, signal.SIGTERM):
        return 0
    alive = wait_gone(members, timeout=GRACE_SECONDS)
    if alive:
        _signal_group(pgid, signal.SIGKILL)
    return len(members)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def run_process(
    argv: list[str],
    *,
    stdout: Path,
    stderr: Path,
    env: dict[str, str],
    cwd: Path,
    timeout: float | None,
) -> ProcessResult:
    """Run ``argv`` to completion with its output in files; raise on timeout, kill on interrupt.

    The round is marked and guarded (orphan_guard): its group and every descendant are killed
    even when pilot-sys is (kill -9), and descendants that left the group are ended after it."""
    variable, mark = new_mark()
    # the guard's start and the list of processes already running are made before the clock
    # starts: neither is part of the round's time
    guard = Guard(mark)
    before = running_pids()
    with stdout.open("wb") as out, stderr.open("wb") as err:
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env={**env, variable: mark},
                cwd=cwd,
                process_group=0,
            )
        except FileNotFoundError:
            guard.release()
            raise BadInput(argv[0], "command not found (check the spelling and PATH)") from None
        except PermissionError:
            guard.release()
            raise BadInput(argv[0], "permission denied: not executable by this user") from None
        except BaseException:
            guard.release()
            raise
        guard.watch(proc.pid)
        waiter = ExitWait(proc)
        try:
            exited = waiter.wait(timeout)
        except BaseException:  # Ctrl-C or the engine stopping: leave nothing running
            waiter.close()
            kill_tree(proc)
            end_escaped(mark, before)
            guard.release()
            raise
        waiter.close()
        if not exited:
            kill_tree(proc)
            end_escaped(mark, before)
            guard.release()
            raise WorkloadTimeout(
                f"{os.path.basename(argv[0])}: round timed out after {timeout:g} s; "
                "the command and its child processes were killed"
            )
        assert waiter.exited_at is not None and proc.returncode is not None
        duration = waiter.exited_at - start
        returncode = proc.returncode
    # Cheap probe first: killpg(pgid, 0) fails at once when the group is empty (the usual case).
    leftovers = end_leftovers(proc.pid) if _signal_group(proc.pid, 0) else 0
    escaped = end_escaped(mark, before)
    guard.release()
    return ProcessResult(
        returncode=returncode,
        duration=duration,
        leftovers_killed=leftovers,
        usage=waiter.usage,
        escaped=escaped,
    )


START_COST_SAMPLES = 7
START_COST_WARMUP = 2  # the first spawns after start-up run several times slower: not counted


def process_start_seconds(samples: int = START_COST_SAMPLES) -> float | None:
    """The fixed cost of one round's process on this host: ``true`` spawned, waited for and
    reaped exactly as a round's command is, median of ``samples`` after ``START_COST_WARMUP``.
    Every timed round includes it, and the WPS fit's alpha of a command cannot be below it.
    None where ``true`` is missing."""
    program = shutil.which("true")
    if program is None:
        return None
    devnull = Path(os.devnull)
    times = [
        run_process(
            [program],
            stdout=devnull,
            stderr=devnull,
            env=dict(os.environ),
            cwd=Path("/"),
            timeout=10.0,
        ).duration
        for _ in range(START_COST_WARMUP + samples)
    ]
    return float(statistics.median(times[START_COST_WARMUP:]))
