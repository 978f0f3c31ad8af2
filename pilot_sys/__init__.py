"""pilot-sys: a bottleneck-aware benchmark runner, system monitor and hardware profiler for Linux.

The in-process Python API (``pilot_sys.benchmark``, ``pilot_sys.FunctionWorkload``,
``pilot_sys.measure(function, output_dir, preset, **config)``: rounds to a result directory in
one call, and ``pilot_sys.run_session(session)``: run a ``Session`` and write its reports) is
loaded lazily so that ``pilot-sys --help`` does not import numpy.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

__version__ = "0.1.0"


def _attach_source_plugins() -> None:
    """Make ``pilot_sys.plugins`` importable when this package runs straight from a checkout.

    Installation maps the repository's top-level ``plugins/`` folder to ``pilot_sys.plugins``
    (pyproject ``package-dir``), so that no generic top-level ``plugins`` module lands in
    site-packages. Run from a checkout instead (``python -m pytest`` or ``python -m pilot_sys``
    in the repository puts the checkout first on ``sys.path``), ``pilot_sys/`` has no
    ``plugins`` folder: attach the top-level one under the same name, so both layouts import
    the same modules.
    """
    here = Path(__file__).resolve().parent
    source = here.parent / "plugins" / "__init__.py"
    if "pilot_sys.plugins" in sys.modules or (here / "plugins").is_dir() or not source.is_file():
        return
    spec = importlib.util.spec_from_file_location(
        "pilot_sys.plugins", source, submodule_search_locations=[str(source.parent)]
    )
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["pilot_sys.plugins"] = module
    spec.loader.exec_module(module)


_attach_source_plugins()


def __getattr__(name: str) -> Any:
    if name in ("benchmark", "FunctionWorkload"):
        from pilot_sys.workload import pyfunc

        return getattr(pyfunc, name)
    if name == "run_session":
        from pilot_sys.report.writer import run_and_report

        return run_and_report
    if name == "measure":
        from pilot_sys.report.measure import measure

        return measure
    raise AttributeError(f"module 'pilot_sys' has no attribute {name!r}")
