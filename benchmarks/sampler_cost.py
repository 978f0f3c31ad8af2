"""Cost of the sampler against the raw-read floor, measured in the same run.

    python benchmarks/sampler_cost.py [--samples 2000] [--repeats 7] [--seconds 3] [--rounds 3]
        [--rate 100]

What a "full-system sample" is now: every CPU (per-core times, run queue, context switches,
CPU pressure), memory (meminfo levels, vmstat reclaim/swap/fault events, memory pressure),
every disk (its own counters, and I/O pressure) and every NIC, on one time grid at ``--rate``.
Each probe is read at the rate at which its counters carry new information (the table printed
first): CPU, disks, NICs and all pressure files on every tick, because their counters change
faster than 100 Hz (or, for CPU times, at USER_HZ = 100 Hz); meminfo and vmstat at
10 / vm.stat_interval Hz (10 Hz), because the kernel folds meminfo's levels from per-CPU
deltas only about every stat_interval (plugins/dynamic/memory.py gives the kernel facts; its
vmstat *events* are exact but cumulative: no event is lost, only sub-100 ms timing).

Printed, in microseconds of CPU per sample, each the median of interleaved repeats so that a
noisy neighbour hits all alike:

* floor       - ``os.pread`` of the files the sampler reads, on kept-open descriptors, nothing
                parsed, following the sampler's schedule (slow files on their ticks only);
* sampler     - ``Sampler.per_sample_cost()``: the plug-ins' reads plus storing the row, same
                schedule: the mean cost per tick of a real recording;
* snapshot    - every file on every sample (the old definition of a full-system sample):
                floor, sampler, and psutil's equivalent calls, for comparison with earlier runs;

then the sampler's own thread CPU fraction while sampling at ``--rate`` Hz (wake-ups
included), next to a thread that only preads the same files on the same schedule and a
thread that only sleeps, over ``--rounds`` interleaved rounds of ``--seconds`` each, with
pass/fail against the targets: sampler <= 1.5 x floor per sample, and < 1 % of one core at
100 Hz.

Then, with ``--limits`` (root), the probes of kernel-imposed limits one by one (cgroup: CPU
quota and I/O throttle; memory_limit; qdisc; cpufreq), each beside the floor of its own reads:
a scratch v1 cgroup ``/pilot-bench-PID`` in the cpu, cpuacct, blkio and memory hierarchies
(quota 0.2 cores, a write throttle on the disk of /var/tmp, a 256 MiB limit; a ``sleep`` runs in
it, after a 1 MiB direct write so that the blkio files list the disk) and a veth pair
``pbqPIDa``/``pbqPIDb`` in this network namespace with a tbf root qdisc on ``pbqPIDa``; both are
removed at the end, also after a failure. A probe's cost is its sampler's tick less the tick of
a sampler with no probe (the fixed cost of a tick: clock, record, store), so that the ratio to
its floor is the probe's own; cpufreq is measured on the captured tree
tests/fixtures/limits/cpufreq-mixed (this VM has no cpufreq), where its files are plain files.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil

from pilot_sys.monitor.sampler import Sampler

OLD_FLOOR_FILES = [
    "/proc/stat",
    "/proc/meminfo",
    "/proc/vmstat",
    "/proc/diskstats",
    "/proc/net/dev",
    "/proc/pressure/cpu",
    "/proc/pressure/memory",
    "/proc/pressure/io",
]


def cpu_per_call(fn: Callable[[], object], n: int) -> float:
    begin = time.thread_time()
    for _ in range(n):
        fn()
    return (time.thread_time() - begin) / n


def schedule_of(sampler: Sampler) -> list[tuple[list[int], int]]:
    """(kept-open descriptors of a probe's files, read every n-th tick) for the floor (a
    probe's netlink reads are not files: ``limit_probe_costs`` floors them)."""
    out = []
    for plan in sampler.schedule():
        files = [f for f in plan.files if os.path.exists(f)]
        if files:
            out.append(([os.open(f, os.O_RDONLY) for f in files], plan.every))
    return out


@contextlib.contextmanager
def limited_setup() -> Iterator[tuple[int, str]]:
    """A scratch cgroup with a quota, a write throttle and a memory limit, a process in it, and a
    tbf-shaped veth: (the process's pid, the shaped interface). Removed on the way out."""
    name = f"pilot-bench-{os.getpid()}"
    dirs = [Path(f"/sys/fs/cgroup/{c}/{name}") for c in ("cpu", "cpuacct", "blkio", "memory")]
    veth = f"pbq{os.getpid()}"[:13]
    sleeper: subprocess.Popen[bytes] | None = None
    target = Path(f"/var/tmp/{name}.bin")
    made: list[Path] = []
    try:
        for d in dirs:
            d.mkdir()
            made.append(d)
        dev = os.stat("/var/tmp").st_dev
        node = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve()
        disk = (node.parent if (node / "partition").exists() else node) / "dev"
        (dirs[0] / "cpu.cfs_quota_us").write_text("20000")
        throttle = f"{disk.read_text().strip()} 20971520"
        (dirs[2] / "blkio.throttle.write_bps_device").write_text(throttle)
        (dirs[3] / "memory.limit_in_bytes").write_text(str(256 << 20))
        procs = " ".join(str(d / "cgroup.procs") for d in dirs)
        join = f"for f in {procs}; do echo $$ > $f; done"
        subprocess.run(
            [
                "sh",
                "-c",
                f"{join}; exec dd if=/dev/zero of={target} bs=1M count=1 oflag=direct status=none",
            ],
            check=True,
            timeout=60,
        )
        sleeper = subprocess.Popen(["sh", "-c", f"{join}; exec sleep 600"])
        pair = ["ip", "link", "add", f"{veth}a", "type", "veth", "peer", "name", f"{veth}b"]
        subprocess.run(pair, check=True, capture_output=True)
        for end in "ab":
            subprocess.run(["ip", "link", "set", f"{veth}{end}", "up"], check=True)
        subprocess.run(
            [
                "tc",
                "qdisc",
                "add",
                "dev",
                f"{veth}a",
                "root",
                "tbf",
                "rate",
                "100mbit",
                "burst",
                "32kbit",
                "latency",
                "50ms",
            ],
            check=True,
        )
        time.sleep(0.2)  # the sleeper has joined
        yield sleeper.pid, f"{veth}a"
    finally:
        subprocess.run(["ip", "link", "del", f"{veth}a"], capture_output=True)
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()
        target.unlink(missing_ok=True)
        for d in reversed(made):
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.05)


def limit_probe_costs(samples: int, repeats: int) -> None:
    """Each kernel-limit probe's own tick cost against the floor of its own reads."""
    from pilot_sys.plugins.dynamic import cgroup, cpufreq, memory_limit, qdisc
    from pilot_sys.topology.discover import build_graph
    from pilot_sys.topology.kernel_limits import cgroup_discovery, qdisc_discovery
    from pilot_sys.topology.netlink_tc import RootQdiscGetter
    from pilot_sys.topology.sysroot import SysRoot

    fixture = Path(__file__).resolve().parent.parent / "tests/fixtures/limits/cpufreq-mixed"
    with limited_setup() as (pid, interface):
        shaped = qdisc_discovery(SysRoot("/"))
        shaped.components = [c for c in shaped.components if c.id == f"qdisc:{interface}"]
        graph = build_graph([cgroup_discovery(SysRoot("/"), [pid]), shaped])
        index = int(Path(f"/sys/class/net/{interface}/ifindex").read_text())
        getter = RootQdiscGetter(index)
        cases: list[tuple[str, Sampler, Sampler, Callable[[], None]]] = []
        for name, plugin in (("cgroup", cgroup), ("memory_limit", memory_limit), ("qdisc", qdisc)):
            sampler = Sampler(graph, plugins=[plugin])
            if name == "qdisc":
                floor: Callable[[], None] = getter.query
            else:
                floor = scheduled_floor(schedule_of(sampler))
            cases.append((name, sampler, Sampler(graph, plugins=[]), floor))
        freq = Sampler(rate_hz=10, plugins=[cpufreq], root=fixture)
        cases.append(
            (
                "cpufreq (fixture)",
                freq,
                Sampler(plugins=[], root=fixture),
                scheduled_floor(schedule_of(freq)),
            )
        )
        print(
            f"\nkernel-limit probes, CPU per sample (median of {repeats} interleaved repeats of "
            f"{samples}): a probe's own = its sampler's tick - an empty sampler's tick"
        )
        print(
            f"  {'probe':20s} {'files/reads':>11s} {'tick':>8s} {'empty':>8s} {'own':>8s} "
            f"{'floor':>8s} {'own/floor':>9s}"
        )
        results: dict[str, dict[str, list[float]]] = {
            name: {"tick": [], "empty": [], "floor": []} for name, *_ in cases
        }
        for _ in range(repeats):
            for name, sampler, empty, floor in cases:
                results[name]["tick"].append(sampler.per_sample_cost(samples))
                results[name]["empty"].append(empty.per_sample_cost(samples))
                results[name]["floor"].append(cpu_per_call(floor, samples))
        for name, sampler, empty, _ in cases:
            med = {k: statistics.median(v) for k, v in results[name].items()}
            own = med["tick"] - med["empty"]
            reads = sum(len(p.readers) for p in sampler.probes)
            ratio = own / med["floor"] if med["floor"] > 0 else float("nan")
            verdict = "PASS" if ratio <= 1.5 else "FAIL"
            print(
                f"  {name:20s} {reads:11d} {med['tick'] * 1e6:8.2f} {med['empty'] * 1e6:8.2f} "
                f"{own * 1e6:8.2f} {med['floor'] * 1e6:8.2f} {ratio:9.2f}  {verdict}"
            )
            for plan in sampler.schedule():
                print(f"  {'':20s} {', '.join(plan.files)}")
            sampler.close()
            empty.close()
        getter.close()


def scheduled_floor(groups: list[tuple[list[int], int]]) -> Callable[[], None]:
    state = {"tick": 0}

    def floor() -> None:
        tick = state["tick"]
        for fds, every in groups:
            if tick % every == 0:
                for fd in fds:
                    os.pread(fd, 1 << 16, 0)
        state["tick"] = tick + 1

    return floor


def floor_thread_cost(groups: list[tuple[list[int], int]], rate_hz: float, seconds: float) -> float:
    """CPU seconds per tick of a thread that only preads the files on the sampler's schedule
    at ``rate_hz`` with the same absolute-deadline sleep: the floor *including* wake-ups and
    cold caches. With no files it is the cost of waking up alone."""
    result: list[float] = []

    def body() -> None:
        begin = time.thread_time()
        t0 = time.monotonic()
        n = max(1, int(seconds * rate_hz))
        for k in range(1, n + 1):
            for fds, every in groups:
                if k % every == 0:
                    for fd in fds:
                        os.pread(fd, 1 << 16, 0)
            remaining = t0 + k / rate_hz - time.monotonic()
            if remaining > 0:
                time.sleep(remaining)
        result.append((time.thread_time() - begin) / n)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    return result[0]


def spread(values: list[float], scale: float = 1e6, fmt: str = ".1f") -> str:
    return f"(min {min(values) * scale:{fmt}}, max {max(values) * scale:{fmt}})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=2000, help="samples per inline repeat")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=3.0, help="length of each threaded run")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved threaded rounds")
    ap.add_argument("--rate", type=float, default=100.0, help="rate of the threaded runs, Hz")
    ap.add_argument(
        "--limits",
        action="store_true",
        help="also the kernel-limit probes, one by one (root: makes a scratch cgroup "
        "and a shaped veth)",
    )
    ap.add_argument("--limits-only", action="store_true", help="only the kernel-limit probes")
    args = ap.parse_args()
    if args.limits_only:
        limit_probe_costs(args.samples, args.repeats)
        return

    sampler = Sampler(rate_hz=args.rate)
    print(
        f"full-system sample at {args.rate:g} Hz = every CPU, memory, every disk, every NIC and "
        "the "
        f"pressure files: {len(sampler.columns)} raw counters from {len(sampler.probes)} plug-ins, "
        "each probe "
        "read at the rate its counters carry information (slower ones carried forward between "
        "reads):"
    )
    for plan in sampler.schedule():
        files = ", ".join(plan.files) or "(derived from other probes' metrics)"
        print(
            f"  {plan.probe:16s} {plan.rate_hz:6.1f} Hz (every {plan.every:>2d} ticks) "
            f"{plan.columns:3d} counters  {files}"
        )
        if plan.reason:
            print(f"  {'':16s} why: {plan.reason}")

    groups = schedule_of(sampler)
    every_tick = [(fds, 1) for fds, _ in groups]
    old_fds = [os.open(f, os.O_RDONLY) for f in OLD_FLOOR_FILES if os.path.exists(f)]

    def old_floor() -> None:
        for fd in old_fds:
            os.pread(fd, 1 << 16, 0)

    def with_psutil() -> None:
        psutil.cpu_times(percpu=True)
        psutil.virtual_memory()
        psutil.swap_memory()
        psutil.disk_io_counters(perdisk=True)
        psutil.net_io_counters(pernic=True)

    keys = ("floor", "sampler", "snapshot_floor", "snapshot_sampler", "old_8_file_floor", "psutil")
    results: dict[str, list[float]] = {k: [] for k in keys}
    n = args.samples
    for _ in range(args.repeats):  # interleaved, so background load affects all alike
        results["floor"].append(cpu_per_call(scheduled_floor(groups), n))
        results["sampler"].append(sampler.per_sample_cost(n))
        results["snapshot_floor"].append(cpu_per_call(scheduled_floor(every_tick), n))
        results["snapshot_sampler"].append(sampler.per_sample_cost(n, every_probe=True))
        results["old_8_file_floor"].append(cpu_per_call(old_floor, n))
        results["psutil"].append(cpu_per_call(with_psutil, max(n // 4, 50)))
    med = {k: statistics.median(v) for k, v in results.items()}
    print("inline, CPU per sample (median of repeats):")
    for k in keys:
        print(f"  {k:18s} {med[k] * 1e6:8.1f} us {spread(results[k])}")
    ratio = med["sampler"] / med["floor"]
    snap_ratio = med["snapshot_sampler"] / med["snapshot_floor"]
    print(
        f"ratio sampler/floor (scheduled)  {ratio:.2f}  (target <= 1.50)  "
        f"{'PASS' if ratio <= 1.5 else 'FAIL'}"
    )
    print(
        f"ratio snapshot sampler/floor     {snap_ratio:.2f}  (target <= 1.50)  "
        f"{'PASS' if snap_ratio <= 1.5 else 'FAIL'}"
    )
    print(f"ratio psutil/old 8-file floor    {med['psutil'] / med['old_8_file_floor']:.2f}")
    print(f"ratio sampler/psutil             {med['sampler'] / med['psutil']:.2f}")
    sampler.close()

    threaded: list[float] = []
    floor_t: list[float] = []
    wake: list[float] = []
    costs = []
    for _ in range(args.rounds):
        wake.append(floor_thread_cost([], args.rate, args.seconds))
        floor_t.append(floor_thread_cost(groups, args.rate, args.seconds))
        run = Sampler(rate_hz=args.rate)
        run.start()
        time.sleep(args.seconds)
        run.stop()
        cost = run.cost()
        costs.append(cost)
        threaded.append(cost.cpu_seconds_per_sample)
    for fds, _ in groups:
        for fd in fds:
            os.close(fd)
    for fd in old_fds:
        os.close(fd)
    fractions = [c.cpu_seconds_per_second for c in costs]
    fraction = statistics.median(fractions)
    last = costs[-1]
    print(
        f"threaded at {args.rate:g} Hz, {args.rounds} rounds of {args.seconds:g} s, CPU per tick "
        "incl. wake-up:"
    )
    print(
        f"  sampler            {statistics.median(threaded) * 1e6:8.1f} us {spread(threaded)}  "
        f"= {fraction * 100:.3f} % of one core {spread(fractions, 100, '.3f')} %"
    )
    print(
        f"  floor thread       {statistics.median(floor_t) * 1e6:8.1f} us {spread(floor_t)}  "
        f"= {statistics.median(floor_t) * args.rate * 100:.3f} % (same files, same schedule, "
        "nothing parsed)"
    )
    print(
        f"  bare wake-ups      {statistics.median(wake) * 1e6:8.1f} us {spread(wake)}  "
        f"= {statistics.median(wake) * args.rate * 100:.3f} % (a thread that only sleeps)"
    )
    print(
        "  threaded sampler/floor thread "
        f"{statistics.median(threaded) / statistics.median(floor_t):.2f}; "
        f"last round: {last.samples} samples, {last.wakeups_per_second:.1f} wake-ups/s, "
        f"{last.late_ticks} late ticks, "
        f"buffers {last.memory_bytes / 1024:.0f} KiB"
    )
    under = "under 1 %" if fraction < 0.01 else "over 1 %"
    verdict = (
        ("PASS" if fraction < 0.01 else "FAIL")
        if args.rate == 100
        else f"(target is for 100 Hz; {under})"
    )
    print(
        f"CPU fraction at {args.rate:g} Hz: {fraction * 100:.3f} % (target < 1 % at 100 Hz)  "
        f"{verdict}"
    )
    print(
        f"  of which the floor thread (reads + wake-ups, no sampler code) is "
        f"{statistics.median(floor_t) * args.rate * 100:.3f} % and bare wake-ups "
        f"{statistics.median(wake) * args.rate * 100:.3f} %"
    )
    print(
        f"load average after the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on "
        f"{os.cpu_count()} CPUs"
    )
    if args.limits:
        limit_probe_costs(args.samples, args.repeats)
        print(
            f"load average after the limit probes: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
        )


if __name__ == "__main__":
    main()
