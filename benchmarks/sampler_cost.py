"""Cost of one full-system sample against the raw-read floor, measured in the same run.

    python benchmarks/sampler_cost.py [--samples 3000] [--seconds 5] [--rate 100]

Prints, in microseconds of CPU per full-system sample (all CPUs, memory, all disks, all NICs,
pressure), each as the median of interleaved repeats so that a noisy neighbour hits all alike:

* floor   - ``os.pread`` of the same /proc files on kept-open descriptors, nothing parsed;
* psutil  - the equivalent psutil calls (per-CPU times, memory, swap, per-disk, per-NIC);
* sampler - ``Sampler.per_sample_cost()``: the plug-ins' reads plus storing the row;

then the ratios to the floor, and the sampler thread's own CPU fraction while sampling at
``--rate`` Hz for ``--seconds`` (wake-ups and sleeping included), with pass/fail against the
targets: sampler <= 1.5 x floor, and < 1 % of one core at 100 Hz.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

import psutil

from pilot_sys.monitor.sampler import Sampler

FLOOR_FILES = [
    "/proc/stat", "/proc/meminfo", "/proc/vmstat", "/proc/diskstats", "/proc/net/dev",
    "/proc/pressure/cpu", "/proc/pressure/memory", "/proc/pressure/io",
]


def cpu_per_call(fn, n: int) -> float:
    begin = time.thread_time()
    for _ in range(n):
        fn()
    return (time.thread_time() - begin) / n


def floor_thread_cost(fds: list[int], rate_hz: float, seconds: float) -> float:
    """CPU seconds per sample of a thread that only preads the files at ``rate_hz`` with the
    same absolute-deadline sleep as the sampler: the floor *including* wake-ups and cold caches.
    With no files it is the cost of waking up alone."""
    result: list[float] = []

    def body() -> None:
        begin = time.thread_time()
        t0 = time.monotonic()
        n = max(1, int(seconds * rate_hz))
        for k in range(1, n + 1):
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=2000, help="samples per repeat")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=5.0, help="length of the threaded run")
    ap.add_argument("--rate", type=float, default=100.0, help="rate of the threaded run, Hz")
    args = ap.parse_args()

    files = [f for f in FLOOR_FILES if os.path.exists(f)]
    fds = [os.open(f, os.O_RDONLY) for f in files]

    def floor() -> None:
        for fd in fds:
            os.pread(fd, 1 << 16, 0)

    def with_psutil() -> None:
        psutil.cpu_times(percpu=True)
        psutil.virtual_memory()
        psutil.swap_memory()
        psutil.disk_io_counters(perdisk=True)
        psutil.net_io_counters(pernic=True)

    sampler = Sampler(rate_hz=args.rate)
    results: dict[str, list[float]] = {"floor": [], "psutil": [], "sampler": []}
    n = args.samples
    for _ in range(args.repeats):  # interleaved, so background load affects all three alike
        results["floor"].append(cpu_per_call(floor, n))
        results["psutil"].append(cpu_per_call(with_psutil, max(n // 4, 50)))
        results["sampler"].append(sampler.per_sample_cost(n))
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"files read: {', '.join(files)}")
    print(f"sampler columns: {len(sampler.columns)} raw counters from {len(sampler.probes)} plug-ins")
    for k in ("floor", "psutil", "sampler"):
        spread = f"(min {min(results[k]) * 1e6:.1f}, max {max(results[k]) * 1e6:.1f})"
        print(f"{k:8s} {med[k] * 1e6:8.1f} us/sample {spread}")
    ratio = med["sampler"] / med["floor"]
    print(f"ratio sampler/floor  {ratio:.2f}  (target <= 1.50)  {'PASS' if ratio <= 1.5 else 'FAIL'}")
    print(f"ratio psutil/floor   {med['psutil'] / med['floor']:.2f}")
    print(f"ratio sampler/psutil {med['sampler'] / med['psutil']:.2f}")
    floor_threaded = floor_thread_cost(fds, args.rate, args.seconds)
    wakeup_only = floor_thread_cost([], args.rate, args.seconds)
    for fd in fds:
        os.close(fd)

    threaded = Sampler(rate_hz=args.rate)
    threaded.start()
    time.sleep(args.seconds)
    threaded.stop()
    cost = threaded.cost()
    fraction = cost.cpu_seconds_per_second
    print(
        f"threaded at {args.rate:g} Hz for {cost.seconds:.1f} s: {cost.samples} samples, "
        f"{cost.cpu_seconds_per_sample * 1e6:.1f} us CPU/sample incl. wake-up, "
        f"{fraction * 100:.3f} % of one core, {cost.wakeups_per_second:.1f} wake-ups/s, "
        f"{cost.late_ticks} late ticks, buffers {cost.memory_bytes / 1024:.0f} KiB"
    )
    print(
        f"floor thread at {args.rate:g} Hz: {floor_threaded * 1e6:.1f} us CPU/sample incl. wake-up, "
        f"{floor_threaded * args.rate * 100:.3f} % of one core; "
        f"threaded sampler/floor {cost.cpu_seconds_per_sample / floor_threaded:.2f}"
    )
    print(
        f"bare wake-ups at {args.rate:g} Hz (a thread that only sleeps): {wakeup_only * 1e6:.1f} us CPU each, "
        f"{wakeup_only * args.rate * 100:.3f} % of one core"
    )
    verdict = "PASS" if fraction < 0.01 or args.rate != 100 else "FAIL"
    print(f"CPU fraction at {args.rate:g} Hz: {fraction * 100:.3f} % (target < 1 % at 100 Hz)  {verdict}")
    print(f"load average during the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
