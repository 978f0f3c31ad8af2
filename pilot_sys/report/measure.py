"""``pilot_sys.measure``: one call from a Python function to a result directory.

The pieces (``SessionConfig``, ``WorkloadSpec``, ``Session.create``, ``run_session``) stay
available for full control; this is the short way a library user expects, like ``timeit`` or
``pyperf``: the function, where to write, a preset, and any ``SessionConfig`` field to change.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pilot_sys.report.writer import run_and_report
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.journal import WorkloadSpec
from pilot_sys.session.result import SessionResult
from pilot_sys.session.session import Session
from pilot_sys.workload.pyfunc import FunctionWorkload

#: what an in-process function measures when the caller names nothing: the CPU it runs on
FUNCTION_CUT = "cpu:host"


def _workload_of(target: FunctionWorkload | Callable[..., Any]) -> FunctionWorkload:
    if isinstance(target, FunctionWorkload):
        return target
    decorated = getattr(target, "workload", None)  # a function under @pilot_sys.benchmark
    return decorated if isinstance(decorated, FunctionWorkload) else FunctionWorkload(target)


def measure(
    target: FunctionWorkload | Callable[..., Any],
    output_dir: str | Path,
    preset: str = "normal",
    *,
    plots: bool = True,
    **config: Any,
) -> SessionResult:
    """Run ``target`` in rounds until its CI targets are met (or a limit is reached), write the
    result directory ``output_dir`` (new or empty) with result.json, report.md, report.html and
    plots, and return the result.

    ``target``: a function that takes the work amount, the same decorated with
    ``@pilot_sys.benchmark``, or a ``FunctionWorkload``. ``config``: ``SessionConfig`` fields
    (``ci_perc=0.05``, ``session_limit=30``, ``monitor=False``, ...). The decorator's
    ``work_amount=(MIN, MAX)`` is the range unless ``work_min``/``work_max`` are given, and its
    unit the ``work_unit``. A monitored session judges the host's CPU as the component under
    test unless ``cut`` names another: the function runs on it, so a busy CPU is its result,
    not a hidden bottleneck."""
    workload = _workload_of(target)
    if workload.work_amount_range is not None:
        low, high = workload.work_amount_range
        config.setdefault("work_min", float(low))
        config.setdefault("work_max", float(high))
    config.setdefault("work_unit", workload.work_amount_unit)
    if config.get("monitor", True):
        config.setdefault("cut", FUNCTION_CUT)
    settings = SessionConfig.from_preset(preset, **config)
    spec = WorkloadSpec(name=workload.name, kind="function", pis=workload.pi_specs())
    command_line = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python", workload.name]
    session = Session.create(Path(output_dir), settings, [spec], [workload], command_line)
    return run_and_report(session, plots=plots)
