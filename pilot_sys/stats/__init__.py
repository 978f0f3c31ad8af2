"""Pure statistics over numpy arrays (no I/O): PI types, subsession analysis, CIs, Welch, WPS.

The everyday entry points are re-exported here; each lives in the module named after its
concept (``subsession``, ``ci``, ``pi``, ``compare``, ``wps``), imported on first use so that
``import pilot_sys.stats`` stays cheap for modules that need only one of them.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CITarget": "ci",
    "ConfidenceInterval": "ci",
    "Summary": "ci",
    "summarize": "ci",
    "t_interval": "ci",
    "SubsessionResult": "subsession",
    "SampleStats": "compare",
    "WelchResult": "compare",
    "Comparison": "compare",
    "welch": "compare",
    "compare_samples": "compare",
    "WPSFit": "wps",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pilot_sys.stats' has no attribute {name!r}")
    return getattr(importlib.import_module(f"pilot_sys.stats.{module}"), name)
