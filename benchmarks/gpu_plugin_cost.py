"""Cost of the GPU plug-in (plugins/dynamic/gpu.py) against bare NVML calls, replayed through
the ``pynvml`` stand-in (tests/nvml_standin.py) from a real H200 recording; and whether the
sampler's tick misses deadlines because of NVML.

    PYTHONPATH=. python3 benchmarks/gpu_plugin_cost.py [--calls 400] [--repeats 5]
        [--seconds 4] [--rounds 3] [--rate 50] [--case matmul]

Printed:

1. CPU per ``GpuSource.sample()`` (thread CPU time), with GPM and without (then the PCIe
   throughput query is made per direction), against the *bare* floor: the same NVML calls
   made directly on the same stand-in, nothing stored. Median of ``--repeats`` interleaved
   repeats of ``--calls`` calls; the stand-in's own cost is in both, so the difference is the
   plug-in's bookkeeping.
2. The sampler at ``--rate`` Hz for ``--seconds``, ``--rounds`` interleaved rounds, with the CPU
   plug-in alone and with the CPU plug-in plus the GPU source whose stand-in *blocks* as NVML
   does (``nvmlDeviceGetPcieThroughput`` sleeps 20 ms per direction, no GPM): late and
   skipped ticks, maximum lateness and the source's own calls. The target: no deadline missed
   because of NVML (late ticks with the GPU source no more than without).
3. The start-up price on a host without an NVIDIA GPU or driver (this one): the accelerator
   plug-ins' ``discover`` and ``open_probe`` on ``/`` (no pynvml import is attempted).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pilot_sys.monitor.probe import ProbeContext  # noqa: E402
from pilot_sys.monitor.sampler import Sampler  # noqa: E402
from pilot_sys.topology import nvml  # noqa: E402
from pilot_sys.topology.sysroot import SysRoot  # noqa: E402
from tests.gpu_replay import open_source  # noqa: E402
from tests.nvml_standin import ReplayNVML  # noqa: E402

gpu = importlib.import_module("pilot_sys.plugins.dynamic.gpu")
cpu = importlib.import_module("pilot_sys.plugins.dynamic.cpu")
accelerator = importlib.import_module("pilot_sys.plugins.static.accelerator")


class BlockingNVML(ReplayNVML):
    """The stand-in with NVML's blocking PCIe throughput query (~20 ms per direction)."""

    def nvmlDeviceGetPcieThroughput(self, handle, counter):  # noqa: N802 - NVML's name
        time.sleep(0.020)
        return super().nvmlDeviceGetPcieThroughput(handle, counter)


def bare_calls(standin: ReplayNVML, gpm: bool, samples: list) -> None:
    """The NVML calls one plug-in sample makes, made directly (GPM: two kept samples, as the
    plug-in keeps them)."""
    h = "gpu0"
    standin.nvmlDeviceGetUtilizationRates(h)
    standin.nvmlDeviceGetMemoryInfo(h)
    standin.nvmlDeviceGetPowerUsage(h)
    standin.nvmlDeviceGetClockInfo(h, standin.NVML_CLOCK_SM)
    standin.nvmlDeviceGetCurrentClocksEventReasons(h)
    standin.nvmlDeviceGetCurrPcieLinkGeneration(h)
    standin.nvmlDeviceGetCurrPcieLinkWidth(h)
    standin.nvmlDeviceGetComputeRunningProcesses(h)
    if gpm:
        standin.nvmlGpmSampleGet(h, samples[1])
        request = standin.c_nvmlGpmMetricsGet_t()
        request.version = standin.NVML_GPM_METRICS_GET_VERSION
        request.sample1, request.sample2, request.numMetrics = samples[0], samples[1], 8
        for i in range(8):
            request.metrics[i].metricId = standin.NVML_GPM_METRIC_SM_UTIL + i
        standin.nvmlGpmMetricsGet(request)
        samples.reverse()
    else:
        standin.nvmlDeviceGetPcieThroughput(h, standin.NVML_PCIE_UTIL_TX_BYTES)
        standin.nvmlDeviceGetPcieThroughput(h, standin.NVML_PCIE_UTIL_RX_BYTES)


def per_call(case: str, gpm: bool, calls: int, repeats: int) -> tuple[float, float]:
    bare_us, plugin_us = [], []
    for _ in range(repeats):
        standin = ReplayNVML(case, gpm=gpm)
        standin.now = 5.0
        source = open_source(standin)
        samples = []
        if gpm:
            samples = [standin.nvmlGpmSampleAlloc() for _ in range(2)]
            standin.nvmlGpmSampleGet("gpu0", samples[0])
        start = time.thread_time()
        for i in range(calls):  # the clock moves on 200 ms a call, as the source's interval
            standin.now = 5.2 + 0.2 * i
            bare_calls(standin, gpm, samples)
        bare_us.append((time.thread_time() - start) / calls * 1e6)
        start = time.thread_time()
        for i in range(calls):
            standin.now = 5.2 + 0.2 * (calls + i)
            source.sample()
        plugin_us.append((time.thread_time() - start) / calls * 1e6)
    return statistics.median(bare_us), statistics.median(plugin_us)


def sampler_round(rate: float, seconds: float, with_gpu: bool, case: str) -> dict:
    standin = BlockingNVML(case, gpm=False)
    standin.start()
    plugins = [cpu, gpu] if with_gpu else [cpu]
    with nvml.replaced(standin):
        sampler = Sampler(rate_hz=rate, plugins=plugins)
        with sampler:
            time.sleep(seconds)
        cost = sampler.cost()
    trace = sampler.trace
    source = trace.sources.get("gpu")
    return {
        "late": cost.late_ticks,
        "skipped": cost.skipped_ticks,
        "max_late_ms": cost.max_lateness_s * 1e3,
        "samples": cost.samples,
        "gpu_calls": source.cost.calls if source else 0,
        "gpu_latency_ms": (source.cost.latency_s_median or 0) * 1e3 if source else 0,
        "gpu_cpu_ms_per_call": source.cost.cpu_seconds / max(source.cost.calls, 1) * 1e3
        if source
        else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--case", default="matmul")
    args = parser.parse_args()

    print("1. CPU per sample, us (median of interleaved repeats)")
    for gpm in (True, False):
        bare, plugin = per_call(args.case, gpm, args.calls, args.repeats)
        print(
            f"   {'GPM' if gpm else 'no GPM':7s} bare NVML calls {bare:7.1f}  plug-in sample "
            f"{plugin:7.1f}  ratio {plugin / bare:.2f}"
        )

    print(f"2. sampler at {args.rate:g} Hz, {args.seconds:g} s rounds (blocking NVML, no GPM)")
    for r in range(args.rounds):
        for with_gpu in (False, True):
            row = sampler_round(args.rate, args.seconds, with_gpu, args.case)
            label = "cpu + gpu" if with_gpu else "cpu only "
            print(
                f"   round {r + 1} {label}: samples {row['samples']}, late {row['late']}, "
                f"skipped {row['skipped']}, max lateness {row['max_late_ms']:.2f} ms"
                + (
                    f"; gpu source calls {row['gpu_calls']}, median latency "
                    f"{row['gpu_latency_ms']:.1f} ms, CPU {row['gpu_cpu_ms_per_call']:.3f} ms/call"
                    if with_gpu
                    else ""
                )
            )

    print("3. start-up without an NVIDIA GPU or driver (this host)")
    times = []
    for _ in range(20):
        start = time.perf_counter()
        accelerator.discover(SysRoot("/"))
        gpu.open_probe(ProbeContext())
        times.append((time.perf_counter() - start) * 1e3)
    print(
        f"   accelerator discover + gpu open_probe: median {statistics.median(times):.2f} ms "
        f"(max {max(times):.2f}); pynvml imported: {'pynvml' in sys.modules}"
    )


if __name__ == "__main__":
    main()
