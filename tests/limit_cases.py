"""The issue's real cases of kernel-imposed limits, each run end to end through ``pilot-sys run``
(a short session in a subprocess), limited and unlimited; shared by the live tests
(test_kernel_limits_cases_live.py) and benchmarks/kernel_limits_detection.py, which counts the
detections over repeated runs.

- ``cpu-quota``: ``dd if=/dev/urandom`` (CPU-bound) writing a file, in a cgroup with a 0.2-core
  quota; unlimited: a 1.5-core quota, which a single-threaded dd never reaches. The cgroup gets
  ``cpu.shares`` 10240: on this shared VM the other developers' load would otherwise keep it
  below its quota, and then the CPU, not the quota, would rightly be named.
- ``io-throttle``: fio direct writes in a cgroup with a 20 MiB/s v1 write throttle on the disk
  of the work directory; unlimited: a 20 GiB/s throttle.
- ``qdisc``: iperf3 to a network namespace host (tests/netns.py) over a veth whose root-side end
  has a 100 Mbit/s tbf; unlimited: no shaping (the veth's noqueue).
- ``memory``: dd reading a 1 GiB file, dropped from the page cache first, in a cgroup limited
  to 64 MiB, so that every round reads it from the disk again; unlimited: a 4 GiB limit.

Each limited case must name its limiter among the hidden bottlenecks; no unlimited case may
name a limiter of that kind. Every cgroup and namespace is removed on the way out, also after a
failure (``scratch_cgroup``, ``netns_host``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cgroups import disk_of, scratch_cgroup
from netns import netns_host

from conftest import REPO

MIB = 2**20
SESSION = ["-s", "20", "--min-round-seconds", "0.1", "-q", "--no-plots"]
TIMEOUT_S = 180.0


@dataclass
class CaseResult:
    case: str
    limited: bool
    limiter: str  # the component that must (limited) or must not (unlimited) be named
    exit_code: int
    status: str
    hidden: list[str]
    evidence: dict[str, str]
    notes: list[str] = field(default_factory=list)
    load: float = 0.0  # 1-minute load average when the session started
    seconds: float = 0.0
    result_dir: str = ""

    @property
    def named(self) -> bool:
        """The case's limiter is among the hidden bottlenecks."""
        return any(h.startswith(f"{self.limiter} ") for h in self.hidden)

    @property
    def flagged_for_limit(self) -> bool:
        """A kernel limiter of this case's kind is among the hidden bottlenecks."""
        kind = self.limiter.split(":", 1)[0] + ":"
        return any(h.startswith(kind) for h in self.hidden)

    @property
    def ok(self) -> bool:
        return self.named if self.limited else not self.flagged_for_limit


def run_session(args: list[str], out: Path, case: str, limited: bool, limiter: str) -> CaseResult:
    """``pilot-sys run -o OUT ARGS`` in a subprocess; the verdict from its result.json."""
    load = os.getloadavg()[0]
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pilot_sys", "run", "-o", str(out), *SESSION, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    seconds = time.monotonic() - began
    try:
        result = json.loads((out / "result.json").read_text())
    except (OSError, ValueError):
        raise AssertionError(
            f"{case}: no result.json (exit {done.returncode}): {done.stderr[-2000:]}"
        ) from None
    bottleneck = result.get("bottleneck") or {}
    detail = bottleneck.get("detail") or {}
    return CaseResult(
        case=case,
        limited=limited,
        limiter=limiter,
        exit_code=done.returncode,
        status=str(result.get("status")),
        hidden=list(bottleneck.get("hidden_bottlenecks") or []),
        evidence=dict(detail.get("evidence") or {}),
        notes=list(detail.get("notes") or []),
        load=load,
        seconds=seconds,
        result_dir=str(out),
    )


def cpu_quota(limited: bool, work: Path) -> CaseResult:
    with scratch_cgroup(cpu_quota_cores=0.2 if limited else 1.5, cpu_shares=10240) as cg:
        dd = f"dd if=/dev/urandom of={work / 'quota.bin'} bs=1M count=%WORK_AMOUNT%"
        args = ["--cgroup", cg.name, *"--max-rounds 8 -w 16,128 --".split(), *dd.split()]
        return run_session(args, work / "session", "cpu-quota", limited, f"cgroup:{cg.name}/cpu")


def io_throttle(limited: bool, work: Path) -> CaseResult:
    """Rounds of 16-128 MiB: at 20 MiB/s fio's start-up (alpha) stays well below a round, so
    that the session analyses its rounds."""
    devnum, disk = disk_of(work)
    rate = 20 * MIB if limited else 20 * 2**30
    with scratch_cgroup(write_bps=(devnum, rate)) as cg:
        session = f"--max-rounds 6 -w {'16,128' if limited else '64,512'} --"
        fio = (
            "fio --name=w --rw=write --bs=1M --direct=1 --ioengine=psync "
            f"--filename={work / 'fio.dat'} --size=%WORK_AMOUNT%M"
        )
        args = ["--cgroup", cg.name, *session.split(), *fio.split()]
        limiter = f"cgroup:{cg.name}/io:{disk}"
        return run_session(args, work / "session", "io-throttle", limited, limiter)


def qdisc(limited: bool, work: Path) -> CaseResult:
    with netns_host("shaped" if limited else "free") as host:
        if limited:
            host.shape("100mbit")
        host.iperf3_server()
        args = f"--max-rounds 5 -w 1,3 -- iperf3 -c {host.address} -t %WORK_AMOUNT%".split()
        return run_session(args, work / "session", "qdisc", limited, f"qdisc:{host.root_if}")


def _uncached(path: Path, size: int) -> Path:
    """``path`` holding ``size`` bytes, none of them in the page cache."""
    if not path.exists() or path.stat().st_size != size:
        with path.open("wb") as out:
            for _ in range(size // MIB):
                out.write(os.urandom(MIB))
            out.flush()
            os.fsync(out.fileno())
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return path


def memory(limited: bool, work: Path) -> CaseResult:
    # Rounds of 0.5-1 s even where the host caches the disk (1.1 GiB/s here): memory is read at
    # 10 Hz at most (vm.stat_interval), and rounds of 0.1-0.4 s left a verdict 4-6 intervals
    data = _uncached(work / "memory.bin", 1024 * MIB)
    with scratch_cgroup(memory_bytes=64 * MIB if limited else 4 * 2**30) as cg:
        dd = f"dd if={data} of=/dev/null bs=1M count=%WORK_AMOUNT%"
        args = ["--cgroup", cg.name, *"--max-rounds 6 -w 512,1024 --".split(), *dd.split()]
        return run_session(args, work / "session", "memory", limited, f"cgroup:{cg.name}/memory")


CASES: dict[str, Callable[[bool, Path], CaseResult]] = {
    "cpu-quota": cpu_quota,
    "io-throttle": io_throttle,
    "qdisc": qdisc,
    "memory": memory,
}
