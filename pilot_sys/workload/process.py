"""Running one workload process so that nothing it starts outlives the round.

The command runs in its own session and process group: a timeout or Ctrl-C kills the whole
group, plus any descendant that moved to another group (found with psutil before signalling),
and processes a finished round left behind in its group are ended before the next round.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
from pydantic import BaseModel

from pilot_sys.errors import BadInput, WorkloadFailed
from pilot_sys.workload.orphan_guard import Guard, end_escaped, new_mark

GRACE_SECONDS = 3.0  # SIGTERM first, SIGKILL after this long


class WorkloadTimeout(WorkloadFailed):
    """A round ran past its timeout and was killed with its process tree."""


class ProcessResult(BaseModel):
    returncode: int
    duration: float  # wall seconds from start to exit
    leftovers_killed: int = 0  # processes the command left running in its group
    escaped: list[str] = []  # "pid name" of descendants that left the group (setsid), ended


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
                start_new_session=True,
            )
        except FileNotFoundError:
            raise BadInput(argv[0], "command not found (check the spelling and PATH)") from None
        except PermissionError:
            raise BadInput(argv[0], "permission denied: not executable by this user") from None
        guard: Guard | None = None
        try:
            guard = Guard(proc.pid, mark)  # inside: a Ctrl-C while it starts still ends the round
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(proc)
            end_escaped(mark)
            if guard is not None:
                guard.release()
            raise WorkloadTimeout(
                f"{os.path.basename(argv[0])}: round timed out after {timeout:g} s; "
                "the command and its child processes were killed"
            ) from None
        except BaseException:  # Ctrl-C or the engine stopping: leave nothing running
            kill_tree(proc)
            end_escaped(mark)
            if guard is not None:
                guard.release()
            raise
        duration = time.perf_counter() - start
    # Cheap probe first: killpg(pgid, 0) fails at once when the group is empty (the usual case).
    leftovers = end_leftovers(proc.pid) if _signal_group(proc.pid, 0) else 0
    escaped = end_escaped(mark)
    guard.release()
    return ProcessResult(
        returncode=returncode, duration=duration, leftovers_killed=leftovers, escaped=escaped
    )
