"""The modules of pilot_sys import one another only downwards, and never in a circle.

Layers, lowest first: base (errors, units, quantity, palette, dataio, plain_numbers, plain_decimal,
line_blocks, limits, safefile, plugin_loader, redaction, credentials) < stats < topology = workload
< monitor = plugins < session < report < cli. A module may import its own layer or any lower one.
Every import counts, wherever it is written: at module level, inside a function (a lazy import still
ties the two modules together), or under ``if TYPE_CHECKING`` (a type is a dependency too).
The repository's top-level ``plugins/`` folder is the package ``pilot_sys.plugins``
(pyproject's ``package-dir``).

The package root ``pilot_sys`` is outside the layers: it holds the version that results record
and the lazily loaded public API (``pilot_sys.benchmark``), so it is read by every layer and
reaches into one; ``pilot_sys.__main__`` is the command line's entry and sits with cli.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import networkx as nx
import pytest

from conftest import REPO

ROOT = "pilot_sys"
# The folders that hold each package's modules: (package name, folder).
SOURCES = (("pilot_sys", REPO / "pilot_sys"), ("pilot_sys.plugins", REPO / "plugins"))

BASE, STATS, TOPOLOGY_WORKLOAD, MONITOR_PLUGINS, SESSION, REPORT, CLI = range(7)
LAYER_NAMES = ("base", "stats", "topology/workload", "monitor/plugins", "session", "report", "cli")
# The layer of every module under a prefix (the longest matching prefix decides).
LAYERS: dict[str, int] = {
    "pilot_sys.errors": BASE,
    "pilot_sys.units": BASE,
    "pilot_sys.palette": BASE,
    "pilot_sys.dataio": BASE,
    "pilot_sys.plain_numbers": BASE,
    "pilot_sys.plain_decimal": BASE,
    "pilot_sys.line_blocks": BASE,
    "pilot_sys.limits": BASE,
    "pilot_sys.safefile": BASE,
    "pilot_sys.plugin_loader": BASE,
    "pilot_sys.quantity": BASE,
    "pilot_sys.redaction": BASE,
    "pilot_sys.credentials": BASE,
    "pilot_sys.stats": STATS,
    "pilot_sys.topology": TOPOLOGY_WORKLOAD,
    "pilot_sys.workload": TOPOLOGY_WORKLOAD,
    "pilot_sys.monitor": MONITOR_PLUGINS,
    "pilot_sys.plugins": MONITOR_PLUGINS,
    "pilot_sys.session": SESSION,
    "pilot_sys.report": REPORT,
    "pilot_sys.cli": CLI,
    "pilot_sys.__main__": CLI,
}


@dataclass(frozen=True)
class Edge:
    """One import statement of ``source`` that loads ``target``."""

    source: str
    target: str
    path: Path
    line: int
    function: str | None  # the enclosing function of a function-level import

    def where(self) -> str:
        place = self.path.relative_to(REPO) if self.path.is_relative_to(REPO) else self.path
        inside = f" in {self.function}()" if self.function else ""
        return f"{place}:{self.line}{inside}"


def modules(sources: tuple[tuple[str, Path], ...] = SOURCES) -> dict[str, Path]:
    """Every module's dotted name and its file."""
    found: dict[str, Path] = {}
    for package, folder in sources:
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


class _ImportCollector(ast.NodeVisitor):
    """The project modules that one file imports, each with its line and enclosing function."""

    def __init__(self, name: str, path: Path, known: dict[str, Path]) -> None:
        self.name = name
        self.path = path
        self.known = known
        # The package relative imports start from: the module itself when it is a package.
        self.package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        self.functions: list[str] = []
        self.edges: list[Edge] = []

    def _existing(self, dotted: str) -> str | None:
        """The longest prefix of ``dotted`` that is a project module (None: not ours)."""
        parts = dotted.split(".")
        while parts:
            candidate = ".".join(parts)
            if candidate in self.known:
                return candidate
            parts.pop()
        return None

    def _add(self, dotted: str, node: ast.stmt) -> None:
        target = self._existing(dotted)
        if target is not None and target != self.name:
            edge = Edge(self.name, target, self.path, node.lineno, ".".join(self.functions) or None)
            if edge not in self.edges:  # `from m import a, b`: one edge
                self.edges.append(edge)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node.name)
        self.generic_visit(node)
        self.functions.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            anchor = self.package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join(anchor + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        for alias in node.names:
            # `from package import module` loads the module; `from module import name`, the module.
            submodule = f"{base}.{alias.name}"
            self._add(submodule if submodule in self.known else base, node)


def import_edges(known: dict[str, Path]) -> list[Edge]:
    edges: list[Edge] = []
    for name, path in known.items():
        collector = _ImportCollector(name, path, known)
        collector.visit(ast.parse(path.read_text(), filename=str(path)))
        edges += collector.edges
    return edges


def layer_of(module: str) -> int | None:
    """The layer of a module; None for the package root, which stands outside the layers."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in LAYERS:
            return LAYERS[prefix]
    if module == ROOT:
        return None
    raise KeyError(module)


def upward(edges: list[Edge]) -> list[Edge]:
    """The edges from a lower layer to a higher one."""
    found = []
    for edge in edges:
        low, high = layer_of(edge.source), layer_of(edge.target)
        if low is not None and high is not None and high > low:
            found.append(edge)
    return found


def cycles(edges: list[Edge]) -> list[list[Edge]]:
    """The import edges inside each group of modules that import one another in a circle."""
    graph = nx.DiGraph()
    graph.add_edges_from((e.source, e.target) for e in edges if ROOT not in (e.source, e.target))
    groups = [g for g in nx.strongly_connected_components(graph) if len(g) > 1]
    return [
        sorted(
            (e for e in edges if e.source in g and e.target in g),
            key=lambda e: (e.source, e.target, e.line),
        )
        for g in groups
    ]


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return import_edges(modules())


def test_every_module_has_a_layer() -> None:
    unplaced = []
    for name in modules():
        try:
            layer_of(name)
        except KeyError:
            unplaced.append(name)
    if unplaced:
        pytest.fail(
            "modules outside every layer (place their package in LAYERS, "
            "tests/test_layers.py): " + ", ".join(unplaced),
            pytrace=False,
        )


def test_no_import_goes_up_a_layer(edges: list[Edge]) -> None:
    bad = upward(edges)
    lines = [
        f"  {e.source} ({LAYER_NAMES[layer_of(e.source) or 0]}) -> {e.target} "
        f"({LAYER_NAMES[layer_of(e.target) or 0]}), {e.where()}"
        for e in sorted(bad, key=lambda e: (e.source, e.target, e.line))
    ]
    if bad:
        heading = f"{len(bad)} import(s) from a lower layer to a higher one:\n"
        pytest.fail(heading + "\n".join(lines), pytrace=False)


def test_no_import_cycle(edges: list[Edge]) -> None:
    found = cycles(edges)
    lines = []
    for group in found:
        names = sorted({e.source for e in group})
        lines.append("  cycle between " + ", ".join(names) + ":")
        lines += [f"    {e.source} -> {e.target}, {e.where()}" for e in group]
    if found:
        pytest.fail(f"{len(found)} import cycle(s):\n" + "\n".join(lines), pytrace=False)


def test_the_walk_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The checks are only as good as the walk: a lazy, relative or typing-only import counts,
    and a name imported from a module is an edge to that module."""
    pkg = tmp_path / "pilot_sys"
    (pkg / "stats").mkdir(parents=True)
    (pkg / "session").mkdir()
    for folder in (pkg, pkg / "stats", pkg / "session"):
        (folder / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("")
    (pkg / "session" / "run.py").write_text("from pilot_sys.stats.ci import interval\n")
    (pkg / "stats" / "ci.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from .. import errors\n"
        "if TYPE_CHECKING:\n"
        "    from ..session import run\n"
        "def interval():\n"
        "    import pilot_sys.session.run\n"
    )
    (pkg / "stats" / "pi.py").write_text("from . import ci\nimport numpy\n")
    known = modules((("pilot_sys", pkg),))
    found = {(e.source, e.target, e.line, e.function) for e in import_edges(known)}
    assert found == {
        ("pilot_sys.session.run", "pilot_sys.stats.ci", 1, None),
        ("pilot_sys.stats.ci", "pilot_sys.errors", 2, None),
        ("pilot_sys.stats.ci", "pilot_sys.session.run", 4, None),
        ("pilot_sys.stats.ci", "pilot_sys.session.run", 6, "interval"),
        ("pilot_sys.stats.pi", "pilot_sys.stats.ci", 1, None),
    }
    edges = import_edges(known)
    assert {(e.source, e.target, e.line) for e in upward(edges)} == {
        ("pilot_sys.stats.ci", "pilot_sys.session.run", 4),
        ("pilot_sys.stats.ci", "pilot_sys.session.run", 6),
    }
    assert [{e.source for e in group} for group in cycles(edges)] == [
        {"pilot_sys.session.run", "pilot_sys.stats.ci"}
    ]
