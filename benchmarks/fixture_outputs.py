"""Dump what discovery makes of the captured /proc and /sys trees, to compare two commits.

Structural changes (issue 13) must leave these outputs unchanged; deliberate changes show up as
named differences. Run it under each commit and diff the two files::

    git worktree add /tmp/old <commit>
    (cd /tmp/old && PYTHONPATH=. python3 $REPO/benchmarks/fixture_outputs.py --out /tmp/old.json)
    PYTHONPATH=. python3 benchmarks/fixture_outputs.py --out /tmp/new.json --against /tmp/old.json

The dump holds every component's kind and limits (value, unit, source, detail) and every link.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "sys"


def dump(fixtures: Path) -> dict[str, Any]:
    from pilot_sys.topology.discover import discover

    out: dict[str, Any] = {}
    for tree in sorted(p for p in fixtures.iterdir() if p.is_dir()):
        node_link = discover(tree).to_node_link()
        nodes = {
            n["id"]: {k: n[k] for k in ("kind", "limits") if k in n} for n in node_link["nodes"]
        }
        links = sorted([e["source"], e["target"]] for e in node_link.get("links", []))
        out[tree.name] = {"nodes": nodes, "links": links}
    return out


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for tree in sorted(set(old) | set(new)):
        a, b = old.get(tree, {"nodes": {}, "links": []}), new.get(tree, {"nodes": {}, "links": []})
        for node in sorted(set(a["nodes"]) | set(b["nodes"])):
            if a["nodes"].get(node) != b["nodes"].get(node):
                lines.append(f"{tree}: {node}: {a['nodes'].get(node)} -> {b['nodes'].get(node)}")
        la, lb = {tuple(x) for x in a["links"]}, {tuple(x) for x in b["links"]}
        lines += [f"{tree}: link added {s} -> {t}" for s, t in sorted(lb - la)]
        lines += [f"{tree}: link removed {s} -> {t}" for s, t in sorted(la - lb)]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=FIXTURES)
    parser.add_argument("--out", type=Path, required=True, help="where to write the dump (JSON)")
    parser.add_argument("--against", type=Path, help="an earlier dump: print the differences")
    args = parser.parse_args()
    new = dump(args.fixtures)
    args.out.write_text(json.dumps(new, sort_keys=True, indent=1, default=str))
    if args.against is not None:
        diff = differences(json.loads(args.against.read_text()), new)
        print("\n".join(diff) if diff else "identical")


if __name__ == "__main__":
    main()
