"""Result directories written by hand, as a session would have written them: a manifest, a
component graph, and rounds with unit readings and monitor traces whose every number is known.

No process runs and nothing of this host is read, so the reports drawn from them are checked
without the ``live`` marker. ``make_session`` gives a storage benchmark (CUT ``block:vda``) whose
rounds have a known warm-up and cool-down. ``hidden`` puts the CPU above the threshold in every
round (``True``) or in some; each round's monitor summary and saved verdict are the monitor's
own judgement of its trace (``monitor.bottleneck.assess``, as ``RoundMonitoring.stop`` makes
them), so a round whose trace is long enough to be judged on its own and saw the CPU is
excluded by the session verdict, and with ``judged=False`` (traces too short to judge a round
on its own) the rounds are analysed and judged together at the end.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

import numpy as np

from pilot_sys.monitor.bottleneck import assess, enough_to_judge
from pilot_sys.monitor.trace import MonitorTrace
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.engine import StopReason
from pilot_sys.session.journal import (
    Invocation,
    Journal,
    MonitorSummary,
    RoundRecord,
    SessionManifest,
    WorkloadSpec,
)
from pilot_sys.topology.components import Component, ComponentKind, Limit, LimitSource
from pilot_sys.topology.graph import ComponentGraph
from pilot_sys.workload.base import PISpec, PIType

PATH = ["cpu:host", "memory:host", "pci:0000:00:02.0", "block:vda", "mount:/"]
COMMAND = ["fio", "--name=w<1>", "--filename=/tmp/a<b>&c.dat", "--size=%WORK_AMOUNT%M"]
READINGS = 200  # unit readings a round
WARM, COOL = 20, 10  # readings of each round at a lower rate before and after the stable part
RATE = 1e8  # bytes/s of the stable part
ALPHA = 0.02  # seconds a round spends beyond its work at RATE (start-up): t = ALPHA + w / RATE
SAMPLES = 11  # monitor samples a round (10 intervals): enough to judge it on its own
FEW_SAMPLES = 6  # too few to judge a round on its own
THRESHOLD = 0.8


def graph() -> ComponentGraph:
    """The storage path of a small VM, the disk rated by its user, plus a NIC off the path."""
    g = ComponentGraph()
    disk = Limit(value=2.5e8, unit="B/s", source=LimitSource.USER, detail="rated")
    cores = Limit(value=2.0, unit="cores", source=LimitSource.SYSFS, detail="2 online CPUs")
    g.add_component(
        Component(id="cpu:host", kind=ComponentKind.CPU, name="host", limits={"compute": cores})
    )
    g.add_component(Component(id="memory:host", kind=ComponentKind.MEMORY, name="host"))
    unknown = Limit(detail="no PCIe link speed in sysfs")
    g.add_component(
        Component(
            id="pci:0000:00:02.0",
            kind=ComponentKind.PCI,
            name="02.0",
            limits={"send": unknown, "receive": unknown},
        )
    )
    g.add_component(
        Component(
            id="block:vda",
            kind=ComponentKind.BLOCK,
            name="vda",
            limits={"read": disk, "write": disk},
        )
    )
    g.add_component(Component(id="mount:/", kind=ComponentKind.MOUNT, name="/"))
    g.add_component(Component(id="nic:eth0", kind=ComponentKind.NIC, name="eth0"))
    g.connect("cpu:host", "memory:host", "write")
    g.connect("memory:host", "pci:0000:00:02.0", "down")
    g.connect("pci:0000:00:02.0", "block:vda", "down")
    g.connect("block:vda", "mount:/", "down")
    g.connect("memory:host", "nic:eth0", "down")
    return g


def units_of(rng: np.random.Generator, level: float = 1.0) -> np.ndarray:
    """One round's unit readings: a slow warm-up, the stable part at ``level`` times ``RATE``,
    a slow cool-down."""
    values = level * RATE * (1 + 0.02 * rng.standard_normal(READINGS))
    values[:WARM] *= 0.5
    values[-COOL:] *= 0.6
    return values


def trace_of(
    start: float, hidden: bool, samples: int = SAMPLES, duration: float = 1.0
) -> MonitorTrace:
    """One round's monitor trace over ``duration`` seconds: the disk at 70 % of its rating and
    busy 95 % of the time, the CPU at 30 % (97 % with ``hidden``), a core and a NIC off the
    path."""
    t = [duration * i / (samples - 1) for i in range(samples)]

    def flat(value: float) -> list[float | None]:
        return [None] + [value] * (samples - 1)

    series = {
        "block:vda/util_write": flat(0.7),
        "block:vda/busy": flat(0.95),
        "block:vda/write_bytes_per_s": flat(1.75e8),
        "cpu:host/util_compute": flat(0.97 if hidden else 0.3),
        "cpu:host/busiest_core": flat(1.0 if hidden else 0.5),
        "memory:host/util_capacity": flat(0.2),
        "core:0/util_compute": flat(0.6),
        "nic:eth0/util_send": flat(0.4),
    }
    return MonitorTrace(
        rate_hz=(samples - 1) / duration,
        start_time=start,
        timestamps=t,
        series=series,
        command=COMMAND,
        component_under_test="block:vda",
    )


def make_session(
    root: Path,
    *,
    rounds: int = 12,
    hidden: bool | Collection[int] = False,
    judged: bool = True,
    seed: int = 0,
    stop_reason: str = StopReason.TARGETS_MET,
    spread: float = 0.0,
) -> Path:
    """A finished session's result directory, stopped for ``stop_reason`` (no result.json
    yet: ``rebuild`` writes it, with its verdict). ``hidden``: the rounds in which the CPU is
    above the threshold (``True``: all); ``judged``: whether each round's trace is long enough
    to be judged on its own; ``spread``: the relative standard deviation of the rounds' levels
    (rounds that differ give an interval over round means). Rounds 1 and 2 are short; round i
    does 16 i MiB in ``ALPHA`` + its work at ``RATE`` seconds, within 1 %."""
    rng = np.random.default_rng(seed)
    timing = np.random.default_rng([seed, 1])
    config = SessionConfig(
        preset="quick",
        ci_perc=0.1,
        min_rounds=3,
        min_round_seconds=0.1,
        work_min=16,
        work_max=1024,
        work_unit="MiB",
        session_limit=30.0,
    )
    spec = WorkloadSpec(
        name="fio",
        kind="command",
        argv=COMMAND,
        parser="fio",
        pis=[PISpec(name="bw", unit="B/s", pi_type=PIType.HARMONIC, unit_weighting="work")],
    )
    manifest = SessionManifest(
        config=config,
        workloads=[spec],
        cut="block:vda",
        data_path=PATH,
        context={"command_line": ["pilot-sys", "run", "--", *COMMAND]},
    )
    journal = Journal.create(root, manifest)
    (root / "graph.json").write_text(json.dumps(graph().to_node_link()))
    clock = 1_000_000.0
    for i in range(1, rounds + 1):
        short = i <= 2
        work = 16.0 * i
        duration = (ALPHA + work * 2**20 / RATE) * (1 + 0.01 * timing.standard_normal())
        rdir, rel = journal.round_dir("fio", i, several=False)
        values = units_of(rng, 1.0 + spread * rng.standard_normal())
        Journal.write_units(rdir, {"bw": values}, {})
        hot = hidden if isinstance(hidden, bool) else i in hidden
        trace = trace_of(clock, hot, SAMPLES if judged else FEW_SAMPLES, duration)
        trace.data_path = list(PATH)
        assert enough_to_judge(len(trace.timestamps)) == judged  # the premise of ``judged``
        verdict = assess(trace, None, "block:vda", threshold=THRESHOLD, data_path=PATH)
        trace.verdict = verdict.model_dump(mode="json")
        (rdir / "monitor.json").write_text(trace.model_dump_json())
        record = RoundRecord(
            index=i,
            workload="fio",
            workload_round=i,
            dir=rel,
            started_at=clock,
            work_amount=work,
            duration=duration,
            phase="calibrate" if short else "measure",
            short=short,
            readings={"bw": float(np.mean(values))},
            unit_counts={"bw": READINGS},
            work_done=work * 2**20,
            monitor=MonitorSummary(
                file="monitor.json",
                samples=len(trace.timestamps),
                valid=bool(verdict.valid),
                hidden_bottlenecks=[
                    f"{h.component} ({h.direction})" for h in verdict.hidden_bottlenecks
                ],
            ),
        )
        journal.append(record)
        clock += duration + 0.2
    manifest.invocations.append(
        Invocation(started_at=1_000_000.0, ended_at=clock, stop_reason=stop_reason)
    )
    journal.save_manifest()
    journal.unlock()
    return root
