"""The accelerator on the data path, judged from real H200 recordings replayed through the
``pynvml`` stand-in (tests/nvml_standin.py, tests/gpu_replay.py).

Ground truth (shared/data/gpu-h200/README.md): ``h2d_pinned`` is limited by the GPU's PCIe
link host to device, ``matmul`` by its tensor cores with the SM clock held by the software
power cap, ``membw`` by its memory bandwidth, ``starved`` and ``cpu_only`` by one CPU core.
Before the accelerator's rules, ``monitor`` called all five "cpu:host (single core)"
(``monitor_<case>.json`` there); ``test_without_the_gpu_series_every_case_is_single_core``
reproduces that from the same recordings.
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from pilot_sys.monitor.bottleneck import SINGLE_CORE, assess
from pilot_sys.session.result import Status
from tests.gpu_replay import open_source, replay_trace
from tests.nvml_standin import CASES, ReplayNVML

GPU = "accelerator:0000:00:06.0"
GPU_BOUND = {"h2d_pinned": "receive", "matmul": "tensor", "membw": "memory_bandwidth"}


@pytest.fixture(scope="module")
def verdicts() -> dict:
    return {case: assess(replay_trace(case)) for case in CASES}


@pytest.mark.parametrize("case", list(GPU_BOUND))
def test_gpu_bound_cases_name_the_part_of_the_gpu(verdicts: dict, case: str) -> None:
    v = verdicts[case]
    assert v.judged_invalid
    assert v.governing == GPU
    assert (v.hidden_bottlenecks[0].component, v.hidden_bottlenecks[0].direction) == (
        GPU,
        GPU_BOUND[case],
    )
    assert not any(h.component == "cpu:host" for h in v.hidden_bottlenecks)
    assert any("waited for" in n and GPU in n for n in v.notes)


def test_h2d_evidence_states_the_link_rate(verdicts: dict) -> None:
    h = verdicts["h2d_pinned"].hidden_bottlenecks[0]
    assert "host to device" in h.evidence and "58.7 GiB/s" in h.evidence  # 63.0 GB/s link
    # GPM's PCIe RX while saturated: ~55 GiB/s (README: NVML 58.5 GB/s, GPM 55,277 MiB/s)
    assert h.mean > 0.7 and h.peak == pytest.approx(55276.6 * 2**20 / 63.0154e9, abs=0.02)


def test_matmul_names_the_power_cap_holding_the_clock(verdicts: dict) -> None:
    v = verdicts["matmul"]
    assert "software power cap" in v.hidden_bottlenecks[0].evidence
    warning = next(n for n in v.notes if n.startswith("warning:") and "power cap" in n)
    assert "of its 1980 MHz maximum" in warning and "of its 700 W limit" in warning
    compute = next(s for s in v.per_component if s.component == GPU and s.direction == "compute")
    assert not compute.judged and "tensor cores" in compute.note  # SMs busy feeding them


def test_membw_sm_activity_is_covered_by_memory_bandwidth(verdicts: dict) -> None:
    v = verdicts["membw"]
    compute = next(s for s in v.per_component if s.component == GPU and s.direction == "compute")
    assert compute.time_above_fraction > 0.5 and not compute.judged  # SMs 98 % active
    assert "GPM DRAM_BW_UTIL" in v.hidden_bottlenecks[0].evidence
    assert not any("power cap" in n for n in v.notes)  # reason 4 never set in membw


@pytest.mark.parametrize("case", ["starved", "cpu_only"])
def test_cpu_bound_cases_name_one_core(verdicts: dict, case: str) -> None:
    v = verdicts[case]
    assert v.judged_invalid and v.governing == "cpu:host"
    assert [(h.component, h.direction) for h in v.hidden_bottlenecks] == [("cpu:host", SINGLE_CORE)]


def test_starved_says_the_cpu_starves_the_gpu(verdicts: dict) -> None:
    evidence = verdicts["starved"].hidden_bottlenecks[0].evidence
    assert f"the workload's GPU {GPU} was idle meanwhile" in evidence
    assert "GPM SM activity" in evidence
    assert "starves" not in verdicts["cpu_only"].hidden_bottlenecks[0].evidence


def test_startup_is_judged_apart_only_for_gpu_workloads(verdicts: dict) -> None:
    for case in ("h2d_pinned", "matmul", "membw", "starved"):
        note = next(n for n in verdicts[case].notes if n.startswith("start-up judged apart"))
        seconds = float(note.split("the first ")[1].split(" s")[0])
        # the recordings' first kernel: 6.6 to 7.1 s (h2d), 4.1 to 5.6 s (the others)
        assert 3.5 < seconds < 7.5, note
    assert not any(n.startswith("start-up") for n in verdicts["cpu_only"].notes)


def test_without_the_gpu_series_every_case_is_single_core() -> None:
    """The verdict before the accelerator's rules, from the same recordings: what
    ``monitor_<case>.json`` said on the H200 host."""
    for case in GPU_BOUND:
        trace = replay_trace(case)
        trace.series = {k: v for k, v in trace.series.items() if not k.startswith(GPU)}
        trace.attrs = {}
        v = assess(trace)
        assert (v.hidden_bottlenecks[0].component, v.hidden_bottlenecks[0].direction) == (
            "cpu:host",
            SINGLE_CORE,
        )


@pytest.mark.parametrize("case", ["matmul", "membw"])
def test_without_gpm_utilization_gpu_is_the_signal_and_says_so(case: str) -> None:
    v = assess(replay_trace(case, gpm=False))
    h = v.hidden_bottlenecks[0]
    assert (h.component, h.direction) == (GPU, "compute")
    assert "utilization.gpu" in h.evidence and "not saturation" in h.evidence
    assert not any(x.component == "cpu:host" for x in v.hidden_bottlenecks)


def test_without_gpm_the_link_still_governs_a_copy() -> None:
    v = assess(replay_trace("h2d_pinned", gpm=False))
    assert [(h.component, h.direction) for h in v.hidden_bottlenecks] == [(GPU, "receive")]
    assert "nvmlDeviceGetPcieThroughput" in v.hidden_bottlenecks[0].evidence


def test_not_supported_is_unknown_never_zero() -> None:
    standin = ReplayNVML("matmul")
    for row in standin.samples:
        if 6.0 <= row["t"] <= 7.0:
            row["power_mW"] = {"error": "NVMLError_NotSupported:Not Supported"}
            row["clk_reasons"] = None
    trace = replay_trace("matmul", standin=standin)
    t = np.array(trace.timestamps)
    power = np.array([np.nan if v is None else v for v in trace.series[f"{GPU}/power_w"]])
    capped = np.array([np.nan if v is None else v for v in trace.series[f"{GPU}/power_capped"]])
    inside = (t >= 6.05) & (t <= 6.95)
    assert np.isnan(power[inside]).all() and np.isnan(capped[inside]).all()
    assert np.nanmin(power[~inside & (t > 0.5)]) > 50  # an H200 idles near 80 W
    assert trace.attrs[GPU]["gpm"] is True


def test_gpm_samples_closer_than_100_ms_give_no_metrics() -> None:
    standin = ReplayNVML("matmul")
    source = open_source(standin)
    index = list(source.columns).index(f"{GPU}/gpm_sm")
    standin.now = 8.0
    first = source.sample().values[index]
    standin.now = 8.05  # 50 ms later
    second = source.sample().values[index]
    standin.now = 8.2
    third = source.sample().values[index]
    assert first > 80 and math.isnan(second) and third > 80


def test_a_link_trained_below_its_maximum_under_load_is_a_finding() -> None:
    standin = ReplayNVML("h2d_pinned")
    for row in standin.samples:
        if row["t"] > 7.0:
            row["pcie_gen"] = 4  # as if the link had trained at 16 GT/s
    v = assess(replay_trace("h2d_pinned", standin=standin))
    assert any("ran below its maximum generation or width under load" in n for n in v.notes)
    assert not any("below its maximum" in n for n in assess(replay_trace("h2d_pinned")).notes)


def test_another_process_on_the_gpu_is_named() -> None:
    standin = ReplayNVML("membw")
    for row in standin.samples:
        if row["gpu_pids"]:
            row["gpu_pids"] = [*row["gpu_pids"], 4242]
    v = assess(replay_trace("membw", standin=standin, workload={704}))
    assert "pid 4242 (job4242)" in v.hidden_bottlenecks[0].evidence


def test_a_gpu_the_workload_used_is_on_its_data_path() -> None:
    """A data path resolved for a disk CUT still gets the GPU the workload drove judged."""
    v = assess(replay_trace("membw"), data_path=["block:vda"])
    assert v.governing == GPU
    idle = assess(replay_trace("cpu_only"), data_path=["block:vda"])
    assert all(s.note == "not on the data path" for s in idle.per_component if s.component == GPU)


def test_report_has_a_gpu_section_with_the_signals_used(verdicts: dict) -> None:
    from pilot_sys.report.markdown import render
    from tests.test_report_markdown import _result

    result = _result(Status.INVALID, False)
    result.bottleneck.detail["accelerators"] = verdicts["matmul"].accelerators
    md = render(result, {})
    section = md.split("## GPUs", 1)[1].split("\n## ", 1)[0]
    assert f"### `{GPU}` (NVIDIA H200, used by the workload)" in section
    assert "Compute judged on GPM SM activity" in section
    share = verdicts["matmul"].accelerators[GPU]["tensor_activity"]
    assert 0.8 < share < 0.95 and f"| tensor activity | {share * 100:.1f} % |" in section
    assert "## GPUs" not in render(_result(Status.VALID, True), {})


def test_plot_gives_the_gpu_its_panel(verdicts: dict, tmp_path) -> None:
    from pilot_sys.monitor.plot import draw, path_panels

    trace = replay_trace("h2d_pinned")
    v = verdicts["h2d_pinned"]
    panels, _ = path_panels(trace.series, ["block:vda"], None, [GPU])
    gpu = next(p for p in panels if p.component == GPU)
    assert gpu.role == "hidden" and gpu.busy == f"{GPU}/busy"
    assert {label for _, label in gpu.lines} >= {"receive", "send", "compute", "tensor"}
    out = tmp_path / "timeline.png"
    draw(trace, v, out)
    assert out.stat().st_size > 10_000


def test_the_gpu_as_the_cut() -> None:
    """``--cut accelerator:...``: a copy benchmark of the GPU's link measured what it meant to;
    a starved GPU was not what limited the result."""
    copy = assess(replay_trace("h2d_pinned"), cut=GPU)
    assert copy.valid and copy.cut_saturated and copy.governing == GPU
    starved = assess(replay_trace("starved"), cut=GPU)
    assert starved.judged_invalid and not starved.cut_saturated
    assert starved.governing == "cpu:host"


def test_the_busiest_core_off_the_gpus_numa_node_is_a_finding() -> None:
    trace = replay_trace("matmul")
    busiest = {}
    for key, values in trace.series.items():
        if key.startswith("core:") and key.endswith("/util_compute"):
            busiest[int(key[5:].split("/")[0])] = np.nanmean(
                np.array([np.nan if v is None else v for v in values[30:]], dtype=float)
            )
    hot = max(busiest, key=busiest.get)  # the core the workload spun on
    assert not any("local CPUs" in n for n in assess(trace).notes)  # all 16 are local
    trace.attrs[GPU]["local_cpus"] = [c for c in range(16) if c != hot]
    trace.attrs[GPU]["numa_node"] = 0
    note = next(n for n in assess(trace).notes if "local CPUs" in n)
    assert "NUMA node 0" in note and "cross the NUMA interconnect" in note


@pytest.mark.live  # open_probe's process test asks this host about the recording's pids
def test_the_source_runs_off_the_tick_in_a_real_sampler() -> None:
    """The plug-in as ``monitor`` opens it: through ``open_probe`` and the sampler's source
    runner, the stand-in replaying matmul's saturated stretch in real time."""
    import time

    from pilot_sys.monitor.sampler import Sampler
    from pilot_sys.topology import nvml

    gpu = importlib.import_module("pilot_sys.plugins.dynamic.gpu")
    standin = ReplayNVML("matmul")
    standin.start(at=6.0)
    with nvml.replaced(standin):
        sampler = Sampler(rate_hz=20, plugins=[gpu])
        with sampler:
            time.sleep(1.2)
    trace = sampler.trace
    source = trace.sources["gpu"]
    assert source.cost.calls >= 4 and source.cost.failed_calls == 0
    tensor = [v for v in trace.series[f"{GPU}/util_tensor"] if v is not None]
    assert tensor and min(tensor) > 0.8  # GPM tensor activity 93 % in that stretch
    assert trace.attrs[GPU]["compute_signal"] == "GPM SM activity"


def test_gpm_that_never_answers_falls_back_to_the_throughput_query() -> None:
    class Refusing(ReplayNVML):
        def nvmlGpmMetricsGet(self, request):  # noqa: N802 - NVML's name
            raise self.NVMLError(4)  # "No permission" on some drivers

    v = assess(replay_trace("h2d_pinned", standin=Refusing("h2d_pinned")))
    h = v.hidden_bottlenecks[0]
    assert (h.component, h.direction) == (GPU, "receive")
    assert "nvmlDeviceGetPcieThroughput" in h.evidence
    assert v.accelerators[GPU]["compute_signal"].startswith("utilization.gpu")


def test_intervals_judged_apart_do_not_count_toward_enough_samples() -> None:
    trace = replay_trace("matmul")
    full = len(trace.timestamps) - 1
    v = assess(trace)
    note = next(n for n in v.notes if n.startswith("start-up judged apart"))
    seconds = float(note.split("the first ")[1].split(" s")[0])
    seconds += float(note.split("the shut-down, the last ")[1].split(" s")[0])
    assert v.intervals == pytest.approx(full - seconds / 0.2, abs=2)
