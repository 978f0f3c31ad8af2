"""Remote GPUs from dcgm-exporter's series (``monitor.remote.dcgm``), not live:

* the mapping, on a hand-written exporter answer (tests/fixtures/dcgm/exporter.prom) whose
  values were chosen so that each formula is checked against a hand-computed number;
* which series belong to which host (dcgm-exporter is a target of its own: another port, often
  another job);
* the five shared H200 recordings served as dcgm-exporter and node_exporter would have served
  them (tests/dcgm_replay.py), read at a Prometheus-like scrape interval, turned into the
  host's components by the backend's own functions and judged: the verdict names what the local
  replay of the same recording names (tests/gpu_replay.py, an independent path: NVML's
  stand-in and the GPU plug-in), under the host's names.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.monitor.bottleneck import assess
from pilot_sys.monitor.remote import dcgm, prometheus
from pilot_sys.monitor.remote.counters import RemoteCounters
from pilot_sys.monitor.remote.http import Response
from pilot_sys.monitor.remote.utilization import CounterSeries, utilizations
from pilot_sys.topology.components import LimitSource
from pilot_sys.topology.linkspeed import pcie_bandwidth
from pilot_sys.topology.remote_hosts import RemoteHost, parse_host_spec
from pilot_sys.topology.remote_inventory import RemoteInventory, inventory_discovery
from tests.dcgm_replay import GpuHostReplay, engine_trace, series_of
from tests.gpu_replay import replay_trace
from tests.nvml_standin import CASES

FIXTURE = Path(__file__).parent / "fixtures" / "dcgm" / "exporter.prom"
GPU0 = "accelerator:gpu7/0000:3b:00.0"
GPU1 = "accelerator:gpu7/0000:86:00.0"
SCRAPE_S = 0.5  # the engine's resolution in the replay (the live test scrapes at this too)


def test_the_exporters_gpus_become_components_with_the_limits_it_states() -> None:
    gpus = dcgm.gpus_from_series(series_of(FIXTURE.read_text()))
    assert [g.address for g in gpus] == ["0000:3b:00.0", "0000:86:00.0"]
    first = gpus[0]
    assert first.model == "NVIDIA A100-SXM4-80GB" and first.uuid == "GPU-aaaa"
    assert first.memory_total == (20480 + 61440) * 2**20
    assert first.profiling and "SM_ACTIVE" in first.compute_signal
    assert first.pcie_signal and first.pcie_signal.startswith("DCGM_FI_PROF_PCIE_RX_BYTES")
    # neither a power limit nor a clock ceiling nor a maximum link is exported: unknown
    assert first.power_limit_w is None and first.max_sm_clock_hz is None
    assert "the power limit" in first.unknown and "the SM clock ceiling" in first.unknown
    discovery = inventory_discovery(
        RemoteInventory(host="gpu7", source=LimitSource.NODE_EXPORTER, cpus=64, gpus=gpus)
    )
    by_id = {c.id: c for c in discovery.components}
    assert GPU0 in by_id and GPU1 in by_id
    limits = by_id[GPU0].limits
    assert not limits["power"].known and not limits["clock"].known
    # the link as it ran when asked (gen 4 x16), said to be that, not its maximum
    assert limits["receive"].value == pytest.approx(16e9 * 128 / 130 * 16 / 8)
    assert "as it ran when asked" in limits["receive"].detail
    assert limits["capacity"].value == pytest.approx(81920 * 2**20)
    links = {(link.source, link.target) for link in discovery.links}
    assert ("memory:gpu7", GPU0) in links and (GPU0, "memory:gpu7") in links


def test_each_signal_is_the_hand_computed_share() -> None:
    values = dcgm.values_at("gpu7", series_of(FIXTURE.read_text()), None)
    keys = sorted(values)
    inventory = RemoteInventory(
        host="gpu7",
        source=LimitSource.NODE_EXPORTER,
        gpus=dcgm.gpus_from_series(series_of(FIXTURE.read_text())),
    )
    limits = {
        f"{c.id}/{d}": limit
        for c in inventory_discovery(inventory).components
        for d, limit in c.limits.items()
    }
    out = dcgm.metrics("gpu7", keys, lambda k: np.array([values.get(k, np.nan)]), limits)
    gen4 = pcie_bandwidth(16.0, 16)
    assert out[f"{GPU0}/util_receive"][0] == pytest.approx(15753846153 / gen4)
    assert out[f"{GPU0}/util_send"][0] == pytest.approx(1e9 / gen4)
    assert out[f"{GPU0}/util_compute"][0] == pytest.approx(0.95)  # SM_ACTIVE, not GR_ENGINE
    assert out[f"{GPU0}/util_tensor"][0] == pytest.approx(0.87)
    assert out[f"{GPU0}/util_memory_bandwidth"][0] == pytest.approx(0.31)
    assert out[f"{GPU0}/busy"][0] == pytest.approx(1.0)
    assert out[f"{GPU0}/util_capacity"][0] == pytest.approx(0.25)
    assert out[f"{GPU0}/power_w"][0] == pytest.approx(396.5)
    assert f"{GPU0}/power_fraction" not in out  # no power limit exported: not invented
    assert out[f"{GPU0}/sm_clock_hz"][0] == pytest.approx(1275e6)
    assert out[f"{GPU0}/power_capped"][0] == 1.0 and out[f"{GPU1}/power_capped"][0] == 0.0
    # the idle GPU's link trained down to gen 1: judged against what it ran at
    assert out[f"{GPU1}/link_bytes_per_s"][0] == pytest.approx(pcie_bandwidth(2.5, 16))


def test_a_family_not_exported_is_unknown_not_zero() -> None:
    text = "\n".join(
        line
        for line in FIXTURE.read_text().splitlines()
        if "DCGM_FI_PROF_" not in line and "PCIE_LINK" not in line
    )
    values = dcgm.values_at("gpu7", series_of(text), None)
    out = dcgm.metrics("gpu7", sorted(values), lambda k: np.array([values.get(k, np.nan)]))
    assert out[f"{GPU0}/util_compute"][0] == pytest.approx(1.0)  # GPU_UTIL, the fallback
    assert f"{GPU0}/util_tensor" not in out and f"{GPU0}/util_memory_bandwidth" not in out
    assert f"{GPU0}/util_receive" not in out  # no throughput, no link: unknown
    assert np.isnan(out[f"{GPU0}/receive_bytes_per_s"][0])
    gpus = dcgm.gpus_from_series(series_of(text))
    assert not gpus[0].profiling and gpus[0].pcie_signal is None
    assert any("profiling" in u for u in gpus[0].unknown)
    assert dcgm.inventory_notes(gpus)  # said, per host


def test_gpu_series_are_the_hosts_by_its_address_whatever_the_port_and_job() -> None:
    a = parse_host_spec("gpu7=prom://prom:9090?instance=10.0.0.7:9100&job=node")
    b = parse_host_spec("gpu8=prom://prom:9090?instance=10.0.0.8:9100&job=node")
    query = dcgm.range_query([a, b], 30.0)
    assert 'instance=~"(10\\\\.0\\\\.0\\\\.7|10\\\\.0\\\\.0\\\\.8)(:[0-9]+)?"' in query
    assert "job" not in query and query.endswith("[30000ms]")
    assert "DCGM_FI_PROF_PCIE_RX_BYTES" in query and "__name__=~" in query
    series = [
        ({"__name__": "DCGM_FI_DEV_GPU_UTIL", "instance": "10.0.0.7:9400", "job": "dcgm"}, []),
        ({"__name__": "DCGM_FI_DEV_GPU_UTIL", "instance": "10.0.0.8:9400", "job": "dcgm"}, []),
        ({"__name__": "DCGM_FI_DEV_GPU_UTIL", "instance": "10.0.0.70:9400", "job": "dcgm"}, []),
    ]
    split = dcgm.split(series, [a, b])
    assert [s[0]["instance"] for s in split["gpu7"]] == ["10.0.0.7:9400"]
    assert [s[0]["instance"] for s in split["gpu8"]] == ["10.0.0.8:9400"]


# -- the shared recordings, through the backend's functions -------------------------------------
def named(verdict: object) -> list[tuple[str, str]]:
    return [(h.component, h.direction) for h in verdict.hidden_bottlenecks]  # type: ignore[attr-defined]


def as_remote(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The local replay's names under the remote host's."""
    rename = {"cpu:host": "cpu:gpu1", "accelerator:0000:00:06.0": "accelerator:gpu1/0000:00:06.0"}
    return [(rename.get(c, c), d) for c, d in pairs]


@pytest.mark.parametrize("case", CASES)
def test_the_remote_verdict_names_what_the_local_replay_names(case: str) -> None:
    local = named(assess(replay_trace(case)))
    remote_verdict = assess(engine_trace(case))
    remote = named(remote_verdict)
    assert remote and remote[:1] == as_remote(local)[:1], (remote, local, remote_verdict.notes)
    expected = {
        "h2d_pinned": ("accelerator:gpu1/0000:00:06.0", "receive"),
        "matmul": ("accelerator:gpu1/0000:00:06.0", "tensor"),
        "membw": ("accelerator:gpu1/0000:00:06.0", "memory_bandwidth"),
        "starved": ("cpu:gpu1", "single core"),
        "cpu_only": ("cpu:gpu1", "single core"),
    }[case]
    assert remote[0] == expected  # the README's ground truth
    if expected[0].startswith("accelerator:"):
        # the spin-waiting core is not named beside the GPU, and the notes say why
        assert ("cpu:gpu1", "single core") not in remote
        assert any("spin-waiting" in n for n in remote_verdict.notes), remote_verdict.notes
    if case == "matmul":
        assert any("software power cap" in n for n in remote_verdict.notes)
    if case == "starved":
        assert "the CPU starves it" in remote_verdict.hidden_bottlenecks[0].evidence
    if case == "cpu_only":
        assert not any("start-up judged apart" in n for n in remote_verdict.notes)


def test_without_profiling_fields_the_pcie_link_is_still_named() -> None:
    """dcgm-exporter's defaults alone (no DCP fields): NVML's PCIe throughput names the link,
    as the local replay without GPM does."""
    remote = named(assess(engine_trace("h2d_pinned", profiling=False)))
    local = named(assess(replay_trace("h2d_pinned", gpm=False)))
    assert remote[:1] == as_remote(local)[:1] == [("accelerator:gpu1/0000:00:06.0", "receive")]


def test_a_scrape_before_the_gpus_first_sample_has_them_unknown_not_zero() -> None:
    series = series_of(FIXTURE.read_text(), 100.0)
    early, late = (
        RemoteCounters(host="gpu7", sent=t, received=t, remote_time=t) for t in (99.0, 100.5)
    )
    dcgm.with_gpus_over([early, late], series)
    assert not any(k.startswith("accelerator:") for k in early.values)
    assert late.values[f"{GPU0}/util_gpu"] == 100.0
    assert late.values[f"{GPU0}/pcie_rx_bps"] == 15753846153


class _Engine(prometheus.Fleet):
    """A fleet whose engine holds one replayed GPU host (node_exporter's CPU counters at
    every scrape, dcgm-exporter's families a third of a scrape earlier), answered by query."""

    def __init__(self, host: RemoteHost, replay: GpuHostReplay) -> None:
        super().__init__("http://engine:9090", [host])
        self.replay, self.asked = replay, []
        self.times = [float(t) for t in np.arange(0.13, replay.duration, SCRAPE_S)]

    def _query(self, expr: str):  # type: ignore[no-untyped-def]
        self.asked.append(expr)
        series: dict[tuple, tuple[dict[str, str], list]] = {}
        for t in self.times:
            if expr.startswith("node_cpu_seconds_total"):
                text, job, port, at = self.replay.node_text(t), "node", "9100", t
            elif "DCGM_FI" in expr:
                text, job, port, at = self.replay.dcgm_text(t), "dcgm", "9400", t - SCRAPE_S / 3
            else:
                continue
            for labels, points in series_of(text, at):
                labels = {**labels, "instance": f"10.0.0.9:{port}", "job": job}
                series.setdefault(tuple(sorted(labels.items())), (labels, []))[1].extend(points)
        body = json.dumps(
            {
                "status": "success",
                "data": {
                    "resultType": "matrix",
                    "result": [
                        {"metric": m, "values": [[t, str(v)] for t, v in p]}
                        for m, p in series.values()
                    ],
                },
            }
        ).encode()
        return prometheus.parse_answer(body, expr), Response(self.base_url, body, 0.0, 0.01)

    def server_time(self) -> float:
        return self.times[-1]

    def _query_range(self, expr: str, start: float, end: float, step: float) -> list:
        """What the engine answers a window's queries (``prometheus_window``): at each step, the
        latest node_exporter scrape at or before it, its values or (the scrape times' query)
        its time."""
        family = expr.split("{", 1)[0]
        timed = expr.startswith("max by") and "timestamp(node_cpu_seconds_total" in expr
        out: dict[tuple, tuple[dict[str, str], list]] = {}
        for k in range(int(round((end - start) / step)) + 1):
            at = start + k * step
            scraped = [t for t in self.times if t <= at + 1e-6]
            if not scraped:
                continue
            t = scraped[-1]
            if timed:
                labels = {"instance": "10.0.0.9:9100", "job": "node"}
                out.setdefault(("t",), (labels, []))[1].append((at, t))
                continue
            for labels, points in series_of(self.replay.node_text(t), t):
                if labels["__name__"] == family:
                    labels = {**labels, "instance": "10.0.0.9:9100", "job": "node"}
                    key = tuple(sorted(labels.items()))
                    out.setdefault(key, (labels, []))[1].append((at, points[0][1]))
        return list(out.values())


def test_a_sessions_window_through_the_fleet_carries_the_gpus() -> None:
    """``Fleet.window`` (a session judged after the fact): one query for every GPU family, and
    the GPUs' values on the host's readings, which judge as the replay does."""
    host = parse_host_spec("gpu1=prom://engine:9090?instance=10.0.0.9:9100&job=node")
    engine = _Engine(host, GpuHostReplay("h2d_pinned"))
    # as many points as scrapes in the window: every scrape (a window is thinned only past that)
    readings = engine.window([host], 60.0, points=int(60.0 / SCRAPE_S) + 1)["gpu1"]
    assert len(readings) == len(engine.times)
    assert sum("DCGM_FI" in q for q in engine.asked) == 1
    gpu = "accelerator:gpu1/0000:00:06.0"
    rx = np.array([r.values.get(f"{gpu}/pcie_rx_bps", np.nan) for r in readings])
    assert np.isfinite(rx).all()  # each node scrape has the dcgm-exporter scrape before it
    assert np.nanmax(rx) > 50e9  # the copies, host to device
    metrics = utilizations(CounterSeries.from_readings(readings))
    assert np.nanmax(metrics[f"{gpu}/util_tensor"]) < 0.1
    assert np.nanmax(metrics[f"{gpu}/receive_bytes_per_s"]) == pytest.approx(np.nanmax(rx))


def test_a_fleet_whose_inventories_show_no_gpu_pays_no_query_for_them() -> None:
    hosts = [parse_host_spec(f"{n}=prom://p:9090?instance={n}:9100") for n in ("a", "b")]
    bare = {n: RemoteInventory(host=n, source=LimitSource.NODE_EXPORTER) for n in ("a", "b")}
    gpus = dcgm.gpus_from_series(series_of(FIXTURE.read_text()))
    assert dcgm.may_have_gpus({}, hosts)  # inventories not known yet: asked
    assert dcgm.may_have_gpus({"a": bare["a"]}, hosts)
    assert not dcgm.may_have_gpus(bare, hosts)
    assert dcgm.may_have_gpus({**bare, "b": bare["b"].model_copy(update={"gpus": gpus})}, hosts)


def test_an_answer_over_the_size_cap_is_asked_again_family_by_family() -> None:
    from pilot_sys.monitor.remote.http import RemoteUnavailable

    host = parse_host_spec("gpu7=prom://p:9090?instance=10.0.0.7:9100&job=node")
    fixture = [
        ({**labels, "instance": "10.0.0.7:9400"}, points)
        for labels, points in series_of(FIXTURE.read_text())
    ]
    asked: list[str] = []

    def query(expr: str) -> list[dcgm.Series]:
        asked.append(expr)
        names = expr.split('__name__=~"', 1)[1].split('"', 1)[0].split("|")
        if len(names) > 1 or names == ["DCGM_FI_PROF_DRAM_ACTIVE"]:
            raise RemoteUnavailable("http://p:9090", "answer too large (...): not read")
        return [s for s in fixture if s[0]["__name__"] == names[0]]

    found = dcgm.ask(query, [host], 600.0)["gpu7"]
    assert len(asked) == 1 + len(set(dcgm.SAMPLED))  # the whole, then each family
    values = dcgm.values_at("gpu7", found, None)
    assert values[f"{GPU0}/pcie_rx_bps"] == 15753846153
    assert f"{GPU0}/dram_active" not in values  # still refused: a gap, not a zero


def test_on_the_samplers_grid_the_core_waits_within_one_scrape_not_one_row() -> None:
    """A monitor's trace holds a remote host's scrapes spread on its own 10 Hz grid (each
    scrape's value over the rows it covers): "within one scrape" of a saturated GPU is a time,
    the host's scrape interval, not one row of the grid."""
    from pilot_sys.monitor.trace import SourceCost, SourceTrace

    coarse = engine_trace("h2d_pinned", scrape_s=0.5)
    rows = 5  # 0.1 s rows per 0.5 s scrape
    fine = coarse.model_copy(
        update={
            "rate_hz": 10.0,
            "timestamps": [round(i * 0.1, 6) for i in range(len(coarse.timestamps) * rows)],
            "series": {
                k: [v[i // rows] for i in range(len(v) * rows)] for k, v in coarse.series.items()
            },
            "sources": {
                "remote:gpu1": SourceTrace(
                    interval_s=0.5,
                    stale_after_s=1.5,
                    times=[],
                    latency_s=[],
                    series={},
                    cost=SourceCost(cpu_seconds=0.0, calls=0, failed_calls=0, missed_calls=0),
                )
            },
        }
    )
    named_fine = named(assess(fine))
    assert named_fine[:1] == [("accelerator:gpu1/0000:00:06.0", "receive")]
    assert ("cpu:gpu1", "single core") not in named_fine
