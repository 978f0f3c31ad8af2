"""Accelerators in the graph: the captured H200 host's tree (sysfs; NVML from the replay
stand-in), an amdgpu tree synthesized from the driver's documentation, and hosts without a GPU
or without nvidia-ml-py."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.topology import nvml
from pilot_sys.topology.discover import discover
from pilot_sys.topology.sysroot import SysRoot
from pilot_sys.topology.tree import host_tree
from tests.conftest import REPO, run_cli
from tests.nvml_standin import ReplayNVML

static = importlib.import_module("pilot_sys.plugins.static.accelerator")
dynamic = importlib.import_module("pilot_sys.plugins.dynamic.gpu")

H200_TREE = REPO / "tests" / "fixtures" / "gpu-h200" / "tree"
AMD_TREE = REPO / "tests" / "fixtures" / "amdgpu-tree"
GPU = "accelerator:0000:00:06.0"
LINK_GEN5_X16 = 32e9 * 128 / 130 * 16 / 8  # 63.0 GB/s per direction


def _gpu(discovery):
    return next(c for c in discovery.components if c.id == GPU)


def test_h200_from_sysfs_alone() -> None:
    found = static.discover(SysRoot(H200_TREE))
    gpu = _gpu(found)
    assert gpu.attrs["model"] == "NVIDIA H200"  # /proc/driver/nvidia/gpus/*/information
    assert gpu.attrs["driver"] == "nvidia" and gpu.attrs["numa_node"] is None  # numa_node -1
    assert gpu.attrs["local_cpus"] == list(range(16))
    assert gpu.limits["send"].value == pytest.approx(LINK_GEN5_X16)
    assert gpu.limits["send"].source == "sysfs"
    for key in ("power", "clock", "capacity", "compute", "memory_bandwidth"):
        assert not gpu.limits[key].known, key
    assert len(found.unreadable) == 1 and "NVML is not asked" in found.unreadable[0]
    assert {(link.source, link.target) for link in found.links} == {
        ("pci:0000:00:06.0", GPU),
        (GPU, "pci:0000:00:06.0"),
    }


def test_h200_with_nvml_states_its_limits_with_their_source() -> None:
    with nvml.replaced(ReplayNVML("matmul")):
        found = static.discover(SysRoot(H200_TREE))
    gpu = _gpu(found)
    assert gpu.limits["capacity"].value == 150_754_820_096
    assert gpu.limits["power"].value == 700.0 and gpu.limits["power"].source == "nvml"
    assert gpu.limits["clock"].value == 1.98e9
    assert gpu.attrs["nvml_max_link"] == "PCIe gen 5 x16" and gpu.attrs["gpm_supported"]
    assert gpu.attrs["numa_node"] is None  # NVML answers Not Supported there
    assert not gpu.limits["memory_bandwidth"].known  # neither states a peak
    assert "nvlink" not in gpu.limits  # NvLinkState: Not Supported
    assert found.unreadable == []


def test_nvml_gives_the_link_where_sysfs_does_not_show_the_function(tmp_path: Path) -> None:
    with nvml.replaced(ReplayNVML("matmul")):
        found = static.discover(SysRoot(tmp_path))  # a container: no PCI function in sysfs
    gpu = _gpu(found)
    assert gpu.limits["receive"].value == pytest.approx(LINK_GEN5_X16)
    assert gpu.limits["receive"].source == "nvml" and gpu.attrs["link_source"] == "nvml"
    assert {link.source for link in found.links} == {"memory:host", GPU}


def test_graph_of_the_captured_tree_shows_the_accelerator() -> None:
    graph = discover(H200_TREE)
    assert GPU in graph and graph.g.has_edge("pci:0000:00:06.0", GPU)
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(host_tree(graph))
    text = console.export_text()
    assert f"{GPU}  NVIDIA H200, NUMA node unknown, local CPUs 0-15" in text


def test_amdgpu_tree() -> None:
    found = static.discover(SysRoot(AMD_TREE))
    gpu = next(c for c in found.components if c.id == "accelerator:0000:03:00.0")
    assert gpu.attrs["model"] == "AMD Instinct MI210" and gpu.attrs["vendor"] == "AMD"
    assert gpu.limits["capacity"].value == 68_702_699_520  # mem_info_vram_total
    assert gpu.limits["power"].value == 300.0  # power1_cap, microwatts
    assert gpu.limits["clock"].value == 1.7e9  # the highest pp_dpm_sclk level
    assert gpu.limits["send"].value == pytest.approx(16e9 * 128 / 130 * 16 / 8)
    assert gpu.attrs["numa_node"] == 0 and gpu.attrs["local_cpus"] == list(range(8))
    assert found.unreadable == []  # NVML is not asked for an AMD GPU


def test_a_host_without_a_gpu_gets_nothing_and_no_note(tmp_path: Path) -> None:
    found = static.discover(SysRoot(tmp_path))
    assert found.components == [] and found.unreadable == []
    context = ProbeContext(root=tmp_path)
    assert dynamic.open_probe(context) is None and context.notes == []


def test_without_nvidia_ml_py_nvml_is_unknown_with_one_reason(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    library, why = nvml.load("/")
    assert library is None and "nvidia-ml-py is not installed" in why


@pytest.mark.live
def test_graph_root_cli_shows_the_accelerator_and_one_note() -> None:
    result = run_cli("graph", "--root", str(H200_TREE))
    assert result.returncode == 0, result.stderr
    assert f"{GPU}  NVIDIA H200" in result.stdout
    assert result.stdout.count("NVML is not asked for a captured tree") == 1


def test_amdgpu_probe_reads_the_drivers_files() -> None:
    import numpy as np

    from pilot_sys.topology.discover import discover as discover_graph

    amd = importlib.import_module("pilot_sys.plugins.dynamic.amdgpu")
    gid = "accelerator:0000:03:00.0"
    probe = amd.open_probe(ProbeContext(root=AMD_TREE, graph=discover_graph(AMD_TREE)))
    assert probe is not None and probe.read() == (b"37", b"12", b"1073741824", b"95000000")
    raw = np.array([[37.0, 12.0, 2**30, 95e6], [np.nan, 50.0, 2**31, 120e6]])
    out = probe.derive(raw, np.array([0.0, 0.1]), {})
    assert out[f"{gid}/util_compute"][0] == pytest.approx(0.37)
    assert np.isnan(out[f"{gid}/busy"][1])  # a failed read is unknown, not 0
    assert out[f"{gid}/util_capacity"][1] == pytest.approx(2**31 / 68_702_699_520)
    assert out[f"{gid}/power_w"].tolist() == [95.0, 120.0]
    assert "not saturation" in probe.attrs()[gid]["compute_signal"]


def test_an_idle_gpus_slower_link_is_no_warning(tmp_path: Path) -> None:
    """A GPU lowers its link speed when idle: at discovery that is an attribute, and the
    accelerator's limit is its link's maximum."""
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(AMD_TREE, tree, symlinks=True)
    gpu_dir = tree / "sys/devices/pci0000:00/0000:00:01.1/0000:03:00.0"
    (gpu_dir / "current_link_speed").write_text("2.5 GT/s PCIe\n")
    graph = discover(tree)
    pci = graph.component("pci:0000:03:00.0")
    assert pci.warnings == [] and pci.attrs["link_below_max_at_discovery"]
    gpu = graph.component("accelerator:0000:03:00.0")
    assert gpu.limits["receive"].value == pytest.approx(16e9 * 128 / 130 * 16 / 8)
    assert "2.5 GT/s x16 at discovery" in gpu.limits["receive"].detail


def test_the_picture_captions_a_gpu_by_its_link() -> None:
    from pilot_sys.topology.graphio import limit_caption

    graph = discover(H200_TREE)
    assert limit_caption(graph, GPU) == "limit tx/rx 58.7 GiB/s"  # compute unknown: its link
    assert limit_caption(graph, "cpu:host") == "no stated limit"  # unchanged for a CPU
