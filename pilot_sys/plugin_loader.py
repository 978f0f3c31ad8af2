"""Find plug-ins: the built-in modules under ``pilot_sys.plugins.<kind>`` and third-party
objects registered in the ``pilot_sys.plugins`` entry-point group. Both are treated the same.

A plug-in (module or object) declares ``KIND`` ("static" or "dynamic") and ``NAME``.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from importlib.metadata import entry_points
from typing import Any

ENTRY_POINT_GROUP = "pilot_sys.plugins"


@cache
def load_plugins(kind: str) -> tuple[Any, ...]:
    """Built-in plug-ins of ``kind`` in module-name order, then third-party ones by entry-point name.

    Looked up once per process: scanning the entry points costs more than discovering a small
    host or starting a round's sampler."""
    package = importlib.import_module(f"pilot_sys.plugins.{kind}")
    found: list[Any] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        if getattr(module, "KIND", None) == kind:
            found.append(module)
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        obj = ep.load()
        if getattr(obj, "KIND", None) == kind:
            found.append(obj)
    return tuple(found)
