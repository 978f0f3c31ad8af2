"""Find plug-ins: the built-in modules under ``pilot_sys.plugins.<kind>`` and third-party
objects registered in the ``pilot_sys.plugins`` entry-point group. Both are treated the same.

A plug-in (module or object) declares ``KIND`` ("static" or "dynamic") and ``NAME``; the
contracts are in ``docs/probes.md``.

A registered plug-in whose code cannot be loaded (a missing dependency, a syntax error) must
not stop discovery or monitoring: it is replaced by an ``UnloadablePlugin`` that fails when it
is used, so that the failure is reported where every other plug-in failure is (discovery
records it among what it could not read, the sampler among the trace's notes).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

ENTRY_POINT_GROUP = "pilot_sys.plugins"


class PluginLoadError(RuntimeError):
    """A registered plug-in's code could not be imported."""


class UnloadablePlugin:
    """Stands in for an entry point whose ``load()`` raised. Its kind is unknown (that is
    declared by the code that did not load), so it is listed under every kind, and using it
    raises ``PluginLoadError`` with what went wrong."""

    def __init__(self, kind: str, entry_point: EntryPoint, exc: BaseException) -> None:
        self.KIND = kind
        self.NAME = entry_point.name
        self.problem = (
            f"entry point {entry_point.name} = {entry_point.value} could not be loaded "
            f"({type(exc).__name__}: {exc})"
        )

    def discover(self, root: Any) -> Any:
        raise PluginLoadError(self.problem)

    def open_probe(self, context: Any) -> Any:
        raise PluginLoadError(self.problem)


@cache
def load_plugins(kind: str) -> tuple[Any, ...]:
    """Built-in plug-ins of ``kind`` in module-name order, then third-party ones by entry-point
    name.

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
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - a third party's broken code is reported, not raised
            found.append(UnloadablePlugin(kind, ep, exc))
            continue
        if getattr(obj, "KIND", None) == kind:
            found.append(obj)
    return tuple(found)
