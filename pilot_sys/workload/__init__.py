"""Workloads: commands, Python functions and the built-in storage benchmark, run one round at a time.

Every workload implements ``pilot_sys.workload.base.Workload``; the session engine does not care
which kind it runs.
"""

from pilot_sys.workload.base import PISpec, PIType, RoundOutput, Workload
from pilot_sys.workload.builtin import SequentialIOWorkload
from pilot_sys.workload.pyfunc import FunctionWorkload, benchmark
from pilot_sys.workload.runner import CommandWorkload, detect_parser

__all__ = ["CommandWorkload", "FunctionWorkload", "PISpec", "PIType", "RoundOutput", "SequentialIOWorkload",
           "Workload", "benchmark", "detect_parser"]
