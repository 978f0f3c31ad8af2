"""User-designated component graphs (seed paper §III-B: "Pilot also supports importing a user
designated component graph"): JSON node-link or GraphML, validated by pydantic models, each
error naming the file and the bad node or link.

JSON shape (a limit or capacity is a number in B/s, or
``{"value": ..., "unit": ..., "detail": ...}``)::

    {"nodes": [{"id": "block:vda", "limits": {"write": 2.0e8}}],
     "links": [{"source": "nic:eth0", "target": "network:lan", "direction": "send",
                "capacity": 1.25e9, "reverse_capacity": 1.25e9}]}

A link names one direction; its reverse is added too (``reverse_capacity``, unknown when not
given) unless the file lists it. GraphML: node attributes ``kind``, ``name``, ``limit_<key>``;
edge attributes ``direction``, ``capacity``, ``reverse_capacity``, numbers typed double.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any
from xml.etree.ElementTree import ParseError

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pilot_sys.errors import BadInput
from pilot_sys.limits import GRAPH_NODES, JSON_BYTES, read_text_bounded
from pilot_sys.topology.components import Component, ComponentKind, Limit, LimitSource, Link
from pilot_sys.topology.effective import LIMITS
from pilot_sys.topology.graph import INWARD, OUTWARD, ComponentGraph, reverse_direction

# A limit is a finite rate > 0: JSON's 1e400 parses to inf and NaN is accepted by Python's json,
# and a zero limit would make every utilization infinite.
Number = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]
ONE_WAY = {"contains", LIMITS}  # containment, and a limiter -> limited link (topology/effective.py)
DIRECTIONS = set(OUTWARD) | set(INWARD) | ONE_WAY


class UserLimit(BaseModel):
    model_config = ConfigDict(extra="ignore")
    value: Number | None = None
    unit: str = "B/s"
    detail: str = ""

    def to_limit(self, default_unit: str = "B/s") -> Limit:
        if self.value is None:
            return Limit(
                unit=self.unit or default_unit, detail=self.detail or "unknown in the user graph"
            )
        return Limit(
            value=self.value,
            unit=self.unit or default_unit,
            source=LimitSource.USER,
            detail=self.detail,
        )


LimitField = Number | UserLimit | None


class UserNode(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: Annotated[str, Field(strict=True, min_length=1)]
    kind: ComponentKind | None = None
    name: str | None = None
    limits: dict[str, LimitField] = Field(default_factory=dict)
    attrs: dict[str, Any] = Field(default_factory=dict)


class UserLink(BaseModel):
    model_config = ConfigDict(extra="ignore")
    source: Annotated[str, Field(strict=True, min_length=1)]
    target: Annotated[str, Field(strict=True, min_length=1)]
    direction: str = "write"
    capacity: LimitField = None
    reverse_capacity: LimitField = None
    attrs: dict[str, Any] = Field(default_factory=dict)


def _as_limit(value: float | UserLimit | None, unit: str = "B/s") -> Limit:
    if value is None:
        return Limit(detail="unknown in the user graph")
    if isinstance(value, UserLimit):
        return value.to_limit(unit)
    return Limit(value=float(value), unit=unit, source=LimitSource.USER)


_UNITS = {"compute": "cores", "capacity": "B"}


def _problem(exc: ValidationError) -> str:
    """One line from pydantic's first error, phrased for a person editing the file."""
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"] if not str(p).startswith(("float", "UserLimit", "function"))]
    field = loc[0] if loc else "entry"
    bounds = next((e for e in exc.errors() if e["type"] in ("greater_than", "finite_number")), None)
    if bounds is not None and field in ("capacity", "reverse_capacity", "limits"):
        what = f"limit {loc[1]!r}" if field == "limits" and len(loc) > 1 else field
        return f"{what} must be finite and > 0 (or null when unknown), not {bounds.get('input')!r}"
    if field in ("capacity", "reverse_capacity"):
        return f"{field} must be a number in B/s (or null when unknown), not {err.get('input')!r}"
    if field == "limits":
        key = loc[1] if len(loc) > 1 else "?"
        unit = _UNITS.get(key, "B/s")
        return (
            f"limit {key!r} must be a number in {unit} (or null when unknown), "
            f"not {err.get('input')!r}"
        )
    if err["type"] == "missing":
        return f"{field} is required"
    if field == "kind":
        return f"kind must be one of {', '.join(k.value for k in ComponentKind)}"
    return f"{field}: {err['msg'].lower()}"


def _label_link(raw: Any) -> str:
    if isinstance(raw, dict):
        return f" ({raw.get('source', '?')} -> {raw.get('target', '?')})"
    return ""


def parse_user_graph(data: Any, where: str) -> ComponentGraph:
    """Validate node-link data (already decoded) into a ComponentGraph; errors name the entry."""
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("nodes", []), list)
        or not isinstance(data.get("links", data.get("edges", [])), list)
    ):
        raise BadInput(where, 'expected an object with lists "nodes" and "links"')
    if len(data.get("nodes", [])) > GRAPH_NODES.value():
        raise GRAPH_NODES.refuse(where, f"{len(data['nodes']):,} nodes")
    graph = ComponentGraph()
    seen: set[str] = set()
    for index, raw in enumerate(data.get("nodes", []), start=1):
        label = (
            f" ({raw['id']})" if isinstance(raw, dict) and isinstance(raw.get("id"), str) else ""
        )
        try:
            node = UserNode.model_validate(raw)
        except ValidationError as exc:
            raise BadInput(f"{where}: node {index}{label}", _problem(exc)) from None
        if node.id in seen:
            raise BadInput(f"{where}: node {index}{label}", "duplicate id")
        seen.add(node.id)
        prefix, _, rest = node.id.partition(":")
        kind = node.kind or (
            ComponentKind(prefix)
            if prefix in ComponentKind._value2member_map_
            else ComponentKind.OTHER
        )
        limits = {
            key: _as_limit(value, _UNITS.get(key, "B/s")) for key, value in node.limits.items()
        }
        graph.add_component(
            Component(
                id=node.id,
                kind=kind,
                name=node.name or rest or node.id,
                limits=limits,
                attrs={**node.attrs, "user": True},
            )
        )
    raw_links = data.get("links", data.get("edges", []))
    links: list[UserLink] = []
    for index, raw in enumerate(raw_links, start=1):
        try:
            link = UserLink.model_validate(raw)
        except ValidationError as exc:
            raise BadInput(f"{where}: link {index}{_label_link(raw)}", _problem(exc)) from None
        if link.direction not in DIRECTIONS:
            raise BadInput(
                f"{where}: link {index}{_label_link(raw)}",
                f"direction must be one of {', '.join(sorted(DIRECTIONS))}",
            )
        links.append(link)
    listed = {(link.source, link.target) for link in links}
    for end in sorted({end for link in links for end in (link.source, link.target)} - seen):
        # Named by a link but defined elsewhere (a discovered id): a placeholder until merged.
        prefix, _, rest = end.partition(":")
        kind = (
            ComponentKind(prefix)
            if prefix in ComponentKind._value2member_map_
            else ComponentKind.OTHER
        )
        graph.add_component(
            Component(id=end, kind=kind, name=rest or end, attrs={"placeholder": True})
        )
    for index, link in enumerate(links, start=1):
        graph.g.graph.setdefault("link_index", {})[(link.source, link.target)] = index
        graph.add_link(
            Link(
                source=link.source,
                target=link.target,
                direction=link.direction,
                capacity=_as_limit(link.capacity),
                attrs=link.attrs,
            )
        )
        if (link.target, link.source) not in listed and link.direction not in ONE_WAY:
            graph.add_link(
                Link(
                    source=link.target,
                    target=link.source,
                    direction=reverse_direction(link.direction),
                    capacity=_as_limit(link.reverse_capacity),
                    attrs=link.attrs,
                )
            )
    return graph


def _graphml_data(path: Path, text: str) -> dict[str, Any]:
    import networkx as nx

    try:
        g = nx.parse_graphml(text)  # the text read within its bound, not the file again
    except ParseError as exc:
        line, column = exc.position
        raise BadInput(
            f"{path}:{line}:{column}",
            f"not valid GraphML XML ({exc.msg if hasattr(exc, 'msg') else exc})",
        ) from None
    except (nx.NetworkXError, KeyError, ValueError) as exc:
        raise BadInput(str(path), f"not valid GraphML: {exc}") from None
    nodes = []
    for node_id, attrs in g.nodes(data=True):
        node: dict[str, Any] = {"id": str(node_id), "limits": {}}
        for key, value in attrs.items():
            if key.startswith("limit_"):
                node["limits"][key[6:]] = value
            elif key in ("kind", "name"):
                node[key] = value
        nodes.append(node)
    links = [{"source": str(a), "target": str(b), **attrs} for a, b, attrs in g.edges(data=True)]
    return {"nodes": nodes, "links": links}


def load_user_graph(path: str | Path) -> ComponentGraph:
    """Read and validate a user-designated graph file (``.graphml``/``.xml`` or JSON)."""
    path = Path(path)
    text = read_text_bounded(path, JSON_BYTES, "a graph (JSON node-link or GraphML)")
    if path.suffix.lower() in (".graphml", ".xml") or text.lstrip().startswith("<"):
        data = _graphml_data(path, text)
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path}:{exc.lineno}:{exc.colno}", f"invalid JSON: {exc.msg}") from None
    return parse_user_graph(data, str(path))


def apply_user_graph(
    graph: ComponentGraph, user: ComponentGraph, where: str, *, override: bool = False
) -> list[str]:
    """Merge a user graph into a discovered one; a link to a node neither defines is an error."""
    for (source, target), number in user.g.graph.get("link_index", {}).items():  # in file order
        for end in (source, target):
            if user.component(end).attrs.get("placeholder") and end not in graph:
                raise BadInput(
                    f"{where}: link {number} ({source} -> {target})",
                    f'unknown node {end}: define it under "nodes" or use a discovered id',
                )
    return graph.merge(user, override=override)
