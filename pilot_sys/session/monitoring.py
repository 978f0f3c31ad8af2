"""Bottleneck monitoring during rounds: discover the graph once, find the data path of the
workload's arguments, sample while each round runs, and judge each round's trace.

A failure of the monitor never costs a measurement: it is reported (in the terminal and the
result) and the session goes on unmonitored. The verdict is per round; a session is invalid
when any analysed round saw a hidden bottleneck (seeds/002 §III-B: "the monitoring is done
throughout the workload because the utilization rates can change over time").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pilot_sys.monitor.overhead import MonitorCost
from pilot_sys.session.journal import MONITOR_FILE, MonitorSummary, SyncBatch, atomic_write_text

GRAPH_FILE = "graph.json"


def _describe_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class RoundMonitoring:
    """One per session; ``start()``/``stop(round_dir)`` around every round."""

    def __init__(
        self, rate_hz: float, threshold: float, cut: str | None, data_path_args: list[str], root: Path
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
        try:
            from pilot_sys.monitor.session_monitor import discover_path

            self.graph, path, self.notes = discover_path(data_path_args)
        except Exception as exc:  # a monitor problem must not stop a benchmark
            self.error = f"component discovery failed ({_describe_error(exc)}): rounds are not monitored"
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
        if not self.active:
            return
        try:
            from pilot_sys.monitor.sampler import Sampler

            self._sampler = Sampler(self.graph, rate_hz=self.rate_hz)
            self._sampler.start()
        except Exception as exc:
            self._sampler = None
            self.error = f"the sampler could not start ({_describe_error(exc)}): rounds are not monitored"

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
                self.costs.append(MonitorCost.from_sampler(self.rate_hz, sampler.cost()))
            except Exception:
                pass
        except Exception as exc:
            return MonitorSummary(error=f"sampler stop failed: {_describe_error(exc)}")
        summary = MonitorSummary(file=MONITOR_FILE, samples=len(getattr(trace, "timestamps", [])))
        try:
            from pilot_sys.monitor.bottleneck import assess

            verdict = assess(trace, self.graph, self.cut, threshold=self.threshold, data_path=self.data_path)
            summary.valid = bool(verdict.valid)
            summary.hidden_bottlenecks = [f"{h.component} ({h.direction})" for h in verdict.hidden_bottlenecks]
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
            path.write_text(trace.model_dump_json(), encoding="utf-8")
            if batch is not None:
                batch.add_path(path)
        except OSError as exc:
            summary.error = f"monitor trace not saved: {exc.strerror}"
            summary.file = None
        return summary

    def mean_cost(self) -> dict[str, float] | None:
        c = MonitorCost.mean(self.costs)
        return None if c is None else c.model_dump()


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
