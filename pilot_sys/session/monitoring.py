"""Bottleneck monitoring during rounds: discover the graph once, find the data path of the
workload's arguments, sample while each round runs, and judge each round's trace.

A failure of the monitor never costs a measurement: it is reported (in the terminal and the
result) and the session goes on unmonitored. The verdict is per round; a session is invalid
when any analysed round saw a hidden bottleneck (the Pilot paper §III-B: "the monitoring is done
throughout the workload because the utilization rates can change over time").

Every round's trace also follows the workload's own processes, as ``process:workload/*``
series (the process probe's counters and formulas: ``cpu_cores``, ``read_bytes_per_s``, ...),
because on a shared host other tenants move every host-wide series and the phase check
(``phase_check``) matches rounds far better on the workload's own. The runner starts the
round's command inside ``run_round`` and keeps its pid to itself, so the pid is found in
/proc instead: the processes that the thread running the round (the one calling ``start()``,
which the engine also calls ``run_round`` from) starts after ``start()``, i.e. the entries of
``/proc/self/task/<tid>/children`` that were not there at ``start()``, each with its tree.
One ``pread`` of that file per tick finds them; the trees are read by the process probe
(``monitor.processes``).

Declared remote hosts (``--host NAME=URL``) are part of the graph (their inventories, asked once
by ``monitor.data_path.find_data_path``, the one function that also finds the data path for
``monitor`` and ``graph``) and of every round's sampler: one source per host, asking its engine
at the sampling rate (at most ``remote.source.MAX_RATE_HZ``), and the links to them
(``monitor.remote.source``). A host that stops answering is a gap in its series for that
stretch, named in the round's trace and journal line; the round and the session go on. What the
scrapes cost, here (the sources' threads) and on the hosts (their engines' own CPU time), is in
the monitor's cost.

``round_sampler`` builds that sampler (every dynamic plug-in over the session's graph, plus the
round's processes and the declared hosts) for ``RoundMonitoring`` and, through
``session_sampler_factory``, for the
tuner (``run --overhead-budget``, ``tune``): the overhead it measures is that of the sampler the
session then runs, per-process probe included.

In-process workloads (the built-in sequential I/O test, ``FunctionWorkload``) start no
process: their per-process series are left out (and a note says so), since following this
process's threads would mix the workload with the sampler, the journal's fsync threads and
the engine. The interval in which the workload's process is reaped is missing (NaN), as in
the process probe: its counters move into this process's, which is not the workload.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pilot_sys.monitor.culprits import HostProcesses, HostProcessesPlugin
from pilot_sys.monitor.overhead import MonitorCost, SamplerFactory
from pilot_sys.monitor.probe import ProbeContext
from pilot_sys.monitor.processes import ProcessProbe, read_pids
from pilot_sys.safefile import replace_file
from pilot_sys.session.journal import MONITOR_FILE, MonitorSummary, SyncBatch, atomic_write_text
from pilot_sys.topology.remote_hosts import RemoteHost
from pilot_sys.workload.orphan_guard import GUARD_PIDS

if TYPE_CHECKING:  # the sampler loads every plug-in: imported when a round starts
    from pilot_sys.monitor.sampler import Sampler

GRAPH_FILE = "graph.json"
#: The component id of the round's workload processes in every round trace: one name for all
#: rounds (each round's process has another pid), so round traces line up key by key.
WORKLOAD_COMPONENT = "process:workload"


def _describe_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class RoundMonitoring:
    """One per session; ``start()``/``stop(round_dir)`` around every round."""

    def __init__(
        self,
        rate_hz: float,
        threshold: float,
        cut: str | None,
        data_path_args: list[str],
        root: Path,
        hosts: Sequence[RemoteHost] = (),
        cgroup: str | None = None,
    ) -> None:
        self.rate_hz = rate_hz
        self.threshold = threshold
        self.user_cut = cut
        self.root = root
        self.graph: Any = None
        self.cut: str | None = cut
        self.components: list[str] | None = None
        self.error: str | None = None
        self.costs: list[MonitorCost] = []
        self._sampler: Any = None
        self.verdict_detail: dict[str, Any] = {}
        self.data_path: list[str] | None = None
        self.notes: list[str] = []
        self.loud: list[str] = []  # notes a person must see (an unmonitored server on the path)
        self.hosts = list(hosts)
        self.session_started: float | None = None  # wall clock at the first round's start
        # where the workload runs (``--cgroup``, or where it moves itself): its limits in the graph
        from pilot_sys.session.workload_cgroups import WorkloadCgroups

        self.cgroups = WorkloadCgroups(cgroup)
        # the other processes, ranked over the session (one scan per second, whatever the rounds)
        self.scan = HostProcesses()
        try:
            from pilot_sys.monitor.data_path import find_data_path

            found = find_data_path(data_path_args, hosts=self.hosts, graph=self.cgroups.graph())
            self.graph, path = found.graph, found.data_path
            self.loud, self.notes = list(found.loud), [*found.loud, *found.notes]
        except Exception as exc:  # a monitor problem must not stop a benchmark
            self.error = (
                f"component discovery failed ({_describe_error(exc)}): rounds are not monitored"
            )
            return
        if path is not None:
            if self.cut is None:
                self.cut = path.cut
            self.data_path = list(path.components) or None
            self.verdict_detail["data_path"] = [list(p) for p in path.paths]
        if self.notes:
            self.verdict_detail["notes"] = list(self.notes)
        if cut is not None and self.graph is not None and cut not in self.graph:
            from pilot_sys.errors import BadInput

            known = ", ".join(sorted(c.id for c in self.graph.components())[:12])
            raise BadInput("--cut", f"no component {cut!r} on this host (components: {known}, ...)")
        self.save_graph()

    @property
    def active(self) -> bool:
        return self.error is None and self.graph is not None

    def save_graph(self) -> None:
        try:
            data = self.graph.to_node_link()
            import json

            atomic_write_text(self.root / GRAPH_FILE, json.dumps(data, indent=1, default=str))
        except Exception as exc:
            self.verdict_detail["graph_error"] = _describe_error(exc)

    def start(self) -> None:
        """Sample from now on; call it from the thread that runs the round (its new children
        are the workload's processes)."""
        if not self.active:
            return
        if self.session_started is None:
            self.session_started = time.time()
        try:
            self._sampler = round_sampler(
                self.graph,
                self.rate_hz,
                self.hosts,
                extra=[self.cgroups.watcher(self.rate_hz), HostProcessesPlugin(shared=self.scan)],
            )
            self._sampler.start()
        except Exception as exc:
            self._sampler = None
            self.error = (
                f"the sampler could not start ({_describe_error(exc)}): rounds are not monitored"
            )

    def abort(self) -> None:
        if self._sampler is not None:
            try:
                self._sampler.stop()
            except Exception:
                pass
            self._sampler = None

    def stop(self, round_dir: Path, batch: SyncBatch | None = None) -> MonitorSummary | None:
        """Stop sampling, keep the trace in the round folder (fsynced by ``batch``), judge it."""
        sampler, self._sampler = self._sampler, None
        if sampler is None:
            return MonitorSummary(error=self.error) if self.error else None
        try:
            trace = sampler.stop(cut=self.cut)
            try:
                cost = MonitorCost.from_sampler(self.rate_hz, sampler.cost())
                self.costs.append(cost.with_remote(remote_cpu_per_second(trace)))
            except Exception:
                pass
        except Exception as exc:
            return MonitorSummary(error=f"sampler stop failed: {_describe_error(exc)}")
        trace.data_path = list(self.data_path or [])
        summary = MonitorSummary(
            file=MONITOR_FILE,
            samples=len(getattr(trace, "timestamps", [])),
            gaps=source_gaps(trace),
        )
        drop_unseen_processes(trace)
        short = self._short_engine_hosts(trace)
        changed, cgroup_notes = self.cgroups.after_round(self.graph)
        trace.notes += cgroup_notes
        if changed:
            self.save_graph()
        try:
            from pilot_sys.monitor.bottleneck import assess

            verdict = assess(
                trace, self.graph, self.cut, threshold=self.threshold, data_path=self.data_path
            )
            summary.valid = bool(verdict.valid)
            summary.hidden_bottlenecks = [
                f"{h.component} ({h.direction})" for h in verdict.hidden_bottlenecks
            ]
            if short:
                self._judge_over_session(trace, short, summary)
            try:
                trace.verdict = verdict.model_dump(mode="json")
            except Exception:
                pass
        except Exception as exc:
            summary.error = f"bottleneck assessment failed: {_describe_error(exc)}"
        summary.max_utilization = max_utilization(trace)
        try:
            path = round_dir / MONITOR_FILE
            round_dir.mkdir(parents=True, exist_ok=True)
            replace_file(path, trace.model_dump_json(), sync=False)
            if batch is not None:
                batch.add_path(path)
        except OSError as exc:
            summary.error = f"monitor trace not saved: {exc.strerror}"
            summary.file = None
        return summary

    def _short_engine_hosts(self, trace: Any) -> dict[str, float]:
        """Hosts seen through an engine whose scrapes are too sparse for this round: left out
        of its own judgement (``session.engine_window``)."""
        if not self.hosts:
            return {}
        from pilot_sys.session.engine_window import blank_hosts, short_engine_hosts

        short = short_engine_hosts(trace, self.hosts)
        blank_hosts(trace, list(short))
        return short

    def _judge_over_session(self, trace: Any, short: dict[str, float], summary: Any) -> None:
        from pilot_sys.session.engine_window import judge_over_session

        found = judge_over_session(
            trace,
            self.hosts,
            short,
            self.session_started or time.time(),
            graph=self.graph,
            threshold=self.threshold,
            data_path=self.data_path,
        )
        trace.notes += found.notes
        summary.hidden_bottlenecks += found.hidden
        if found.hidden:
            summary.valid = False

    def mean_cost(self) -> dict[str, float] | None:
        c = MonitorCost.mean(self.costs)
        return None if c is None else c.model_dump()


def round_sampler(
    graph: Any, rate_hz: float, hosts: Sequence[RemoteHost] = (), extra: Sequence[Any] = ()
) -> Sampler:
    """The sampler a session round runs: every installed dynamic plug-in over ``graph``, plus the
    round's own processes (``process:workload``), the other processes' ranking
    (``monitor.culprits``) and the declared remote hosts.

    Call it from the thread that will run the round: the processes that thread starts from now
    on are the ones followed. ``RoundMonitoring.start`` builds each round's sampler here, and the
    tuner (``round_sampler_factory``) measures the overhead of exactly this sampler. ``extra``:
    more plug-in objects (the session's watch of the workload's cgroups, its scan of the other
    processes shared by its rounds: without one, the sampler scans on its own)."""
    from pilot_sys.monitor.culprits import NAME as SCAN
    from pilot_sys.monitor.remote.source import host_plugins
    from pilot_sys.monitor.sampler import Sampler
    from pilot_sys.plugin_loader import load_plugins

    plugins = [
        *load_plugins("dynamic"),
        RoundProcessesPlugin(threading.get_native_id()),
        *([] if any(getattr(p, "NAME", None) == SCAN for p in extra) else [HostProcessesPlugin()]),
        *host_plugins(list(hosts), rate_hz),
        *extra,
    ]
    return Sampler(graph, rate_hz=rate_hz, plugins=plugins)


def round_sampler_factory(graph: Any, hosts: Sequence[RemoteHost] = ()) -> SamplerFactory:
    """``round_sampler`` as the overhead measurement's ``SamplerFactory`` (rate -> sampler).

    ``WorkloadProbe`` calls the factory in the thread that then runs the monitored round, as the
    session does, so the probe follows that round's processes. Its samplers share one scan of
    the other processes, as a session's rounds do."""

    scan = HostProcesses()  # one scan of the other processes for all rounds, as in a session

    def factory(rate_hz: float) -> Sampler:
        return round_sampler(graph, rate_hz, hosts, extra=[HostProcessesPlugin(shared=scan)])

    return factory


def session_sampler_factory(
    data_path_args: Sequence[str], hosts: Sequence[RemoteHost] = ()
) -> SamplerFactory:
    """The factory of the sampler that a session with these data path arguments runs: the graph
    discovered as ``RoundMonitoring`` discovers it (a second discovery in one process is cheap;
    the session reports what could not be found). Discovery failing leaves the self-evident
    limits only (the session would then run unmonitored; the tuner still measures the sampler's
    probes). The declared hosts' sources are in it: the tuner measures what scraping them costs."""
    from pilot_sys.monitor.data_path import find_data_path

    try:
        graph = find_data_path(list(data_path_args), hosts=list(hosts)).graph
    except Exception:  # as in RoundMonitoring: a monitor problem must not stop the tool
        graph = None
    return round_sampler_factory(graph, hosts)


def remote_cpu_per_second(trace: Any) -> dict[str, float]:
    """Each source's backend CPU time per second of the trace (what sampling cost the remote
    host's engine), where the backend reports its own CPU time."""
    stamps = getattr(trace, "timestamps", [])
    seconds = stamps[-1] - stamps[0] if len(stamps) > 1 else 0.0
    out: dict[str, float] = {}
    for name, record in getattr(trace, "sources", {}).items():
        spent = record.cost.remote_cpu_seconds
        if spent is not None and seconds > 0:
            out[name] = spent / seconds
    return out


def source_gaps(trace: Any) -> list[str]:
    """``SOURCE START-END s`` for every stretch a source gave no sample (seconds into the round)."""
    return [
        f"{name} {start:.1f}-{end:.1f} s"
        for name, record in getattr(trace, "sources", {}).items()
        for start, end in record.gaps
    ]


#: the CPU of the round's own thread, in cores, when the round started no process
ROUND_THREAD_CORES = "thread:workload/cpu_cores"


def drop_unseen_processes(trace: Any) -> None:
    """Leave out ``process:workload/*`` when the round started no process it could see (an
    in-process workload, or a command shorter than a sampling period): series of zeros would
    read as an idle workload, to the phase check and to the verdict's "cores used" alike."""
    series = getattr(trace, "series", None)
    if not series:
        return
    prefix = WORKLOAD_COMPONENT + "/"
    keys = [k for k in series if k.startswith(prefix)]
    if not keys:
        return
    if any(v is not None and v > 0 for v in series.get(prefix + "processes", [])):
        return
    cores = series.get(prefix + "cpu_cores", [])
    for key in keys:
        del series[key]
    trace.notes.append(
        f"{WORKLOAD_COMPONENT}: the round started no process that a sample saw (an in-process "
        "workload, or a command shorter than a sampling period): no per-process series"
    )
    if any(v is not None and v > 0 for v in cores):
        # an in-process workload: the CPU of the round's thread, kept under its own name (the
        # phase check's per-process series are CPU and I/O, and a thread's I/O is not followed)
        series[ROUND_THREAD_CORES] = cores


def max_utilization(trace: Any) -> dict[str, float]:
    """Peak of every ``util*`` series of a trace (None samples skipped)."""
    out: dict[str, float] = {}
    for key, values in getattr(trace, "series", {}).items():
        metric = key.rsplit("/", 1)[-1]
        if not metric.startswith("util"):
            continue
        finite = [v for v in values if v is not None]
        if finite:
            out[key] = float(max(finite))
    return out


class RoundProcessesProbe(ProcessProbe):
    """``process:workload``: the trees of the processes the round's thread started, summed,
    and the CPU of that thread itself (an in-process workload runs on it).

    The process probe's own walk and formulas, started from those children instead of one
    root (``_roots``), under one component id for every round."""

    def __init__(
        self, context: ProbeContext, children_path: Path, thread_stat: Path | None = None
    ) -> None:
        super().__init__(context, os.getpid(), component=WORKLOAD_COMPONENT)
        self._fd = os.open(children_path, os.O_RDONLY | os.O_CLOEXEC)
        self._before = frozenset(read_pids(self._fd))  # children from before the round are not its
        # the round's thread itself: an in-process workload (the built-in one, a Python
        # function) runs on it, and its CPU is the workload's
        self._thread_fd = -1
        if thread_stat is not None:
            try:
                self._thread_fd = os.open(thread_stat, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                self._thread_fd = -1

    def _read_tree(self) -> list[bytes]:
        row = super()._read_tree()
        if self._thread_fd >= 0:
            try:
                stat = os.pread(self._thread_fd, 4096, 0)
            except OSError:
                return row
            fields = stat[stat.rfind(b")") + 2 :].split(None, 14)
            row[0] = b"%d" % (int(row[0]) + int(fields[11]) + int(fields[12]))  # utime, stime
        return row

    def _roots(self) -> list[tuple[int, int | None]]:
        """The round's children, each checked on opening to be this process's child; the
        round's guard (``orphan_guard``) is pilot-sys's, not the workload's."""
        me = os.getpid()
        return [
            (p, me) for p in read_pids(self._fd) if p not in self._before and p not in GUARD_PIDS
        ]

    def root_pids(self) -> list[int]:
        """The processes the round's thread started (``ProbeContext.workload_roots``)."""
        return [pid for pid, _ in self._roots()] if self._fd >= 0 else []

    def close(self) -> None:
        super().close()
        for fd in (self._fd, self._thread_fd):
            if fd >= 0:
                os.close(fd)
        self._fd = self._thread_fd = -1


class RoundProcessesPlugin:
    """A dynamic plug-in object for one round's sampler (``Sampler(plugins=...)``): follows the
    children that thread ``tid`` of this process starts once the sampler is open."""

    KIND = "dynamic"
    NAME = "process-workload"

    def __init__(self, tid: int) -> None:
        self.tid = tid

    def open_probe(self, context: ProbeContext) -> RoundProcessesProbe | None:
        path = context.path("proc", str(os.getpid()), "task", str(self.tid), "children")
        stat = context.path("proc", str(os.getpid()), "task", str(self.tid), "stat")
        try:
            probe = RoundProcessesProbe(context, path, stat)
        except OSError as exc:  # a kernel without CONFIG_PROC_CHILDREN: host-wide series only
            context.notes.append(
                f"{WORKLOAD_COMPONENT} not followed: {exc.strerror or exc} ({path})"
            )
            return None
        # the round's processes are the workload's for every other plug-in too (a GPU's list)
        context.workload_roots = probe.root_pids
        return probe
