"""One process timed as the benchmarks time it: wall seconds, and its own CPU seconds and peak
memory from ``wait4`` (on a shared machine the wall time also measures the other jobs)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ChildRun:
    wall_s: float
    cpu_s: float  # user + system
    peak_rss_bytes: int
    code: int
    stdout: str
    stderr: str


def run_child(command: list[str], env: dict[str, str], cwd: Path) -> ChildRun:
    """Run ``command`` to its end; stderr goes to a file, so a chatty child never blocks."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=err)
        out = proc.stdout.read().decode() if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        err.seek(0)
        return ChildRun(
            wall_s=wall,
            cpu_s=usage.ru_utime + usage.ru_stime,
            peak_rss_bytes=usage.ru_maxrss * 1024,
            code=os.waitstatus_to_exitcode(status),
            stdout=out,
            stderr=err.read().decode(errors="replace"),
        )
