"""Workloads: commands, Python functions and the built-in storage benchmark, run one round at a
time.

Every workload implements ``pilot_sys.workload.base.Workload``; the session engine does not care
which kind it runs. The names below are imported on first use: importing one submodule (say the
``base`` contract, or a parser) must not load the built-in benchmark and psutil with it.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CommandWorkload": "pilot_sys.workload.runner",
    "FunctionWorkload": "pilot_sys.workload.pyfunc",
    "PISpec": "pilot_sys.workload.base",
    "PIType": "pilot_sys.stats.pi",
    "RoundOutput": "pilot_sys.workload.base",
    "SequentialIOWorkload": "pilot_sys.workload.builtin",
    "Workload": "pilot_sys.workload.base",
    "benchmark": "pilot_sys.workload.pyfunc",
    "detect_parser": "pilot_sys.workload.runner",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pilot_sys.workload' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
