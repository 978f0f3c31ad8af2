"""pilot-sys: a bottleneck-aware benchmark runner, system monitor and hardware profiler for Linux.

The in-process Python API (``pilot_sys.benchmark``, ``pilot_sys.FunctionWorkload``) is loaded
lazily so that ``pilot-sys --help`` does not import numpy.
"""

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in ("benchmark", "FunctionWorkload"):
        from pilot_sys.workload import pyfunc

        return getattr(pyfunc, name)
    raise AttributeError(f"module 'pilot_sys' has no attribute {name!r}")
