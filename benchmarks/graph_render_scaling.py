"""How `graph --load` of a long chain scales: loading, drawing the text tree, and --json.

Issue 24 item 10: the tree view was quadratic in the chain's length (each level indents the
next, so a chain of n components drew n^2 / 2 columns). The drawing is now capped at 16 levels
and 2,000 components; this times each step per component for several lengths in one run, so
the ratio of the per-component times (the largest length against the smallest) says whether a
step is linear (about 1) whatever the machine's load. Run with PYTHONPATH pointing at another
checkout to time that one (small lengths only: the old drawing does not finish at 1e5).

usage: PYTHONPATH=. python3 benchmarks/graph_render_scaling.py [--sizes 1000,10000,100000]
       [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path


def chain(path: Path, n: int) -> Path:
    nodes = [{"id": f"cpu:n{i}", "kind": "cpu"} for i in range(n)]
    links = [{"source": f"cpu:n{i}", "target": f"cpu:n{i + 1}"} for i in range(n - 1)]
    path.write_text(json.dumps({"nodes": nodes, "links": links}))
    return path


def once(path: Path) -> dict[str, float]:
    from rich.console import Console

    from pilot_sys.topology.derive import derive_limits
    from pilot_sys.topology.graph import ComponentGraph
    from pilot_sys.topology.tree import host_tree
    from pilot_sys.topology.userspec import apply_user_graph, load_user_graph

    t0 = time.perf_counter()
    graph = ComponentGraph()
    apply_user_graph(graph, load_user_graph(path), str(path))
    derive_limits(graph)
    t1 = time.perf_counter()
    with open(os.devnull, "w") as sink:
        Console(file=sink, width=120).print(host_tree(graph))
    t2 = time.perf_counter()
    payload = graph.to_node_link()
    json.dumps(payload, indent=None if len(payload["nodes"]) > 2000 else 2)
    t3 = time.perf_counter()
    return {"load": t1 - t0, "draw": t2 - t1, "json": t3 - t2}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"load average {os.getloadavg()}")
    best: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):  # interleaved: load drifts hit every size alike
            for n in sizes:
                times = once(chain(Path(tmp) / f"c{n}.json", n))
                kept = best.setdefault(n, times)
                for key, value in times.items():
                    kept[key] = min(kept[key], value)
    print("n, then best seconds (and microseconds per component) of each step")
    for n in sizes:
        row = ", ".join(f"{k} {v:.3f} s ({1e6 * v / n:.1f} us)" for k, v in best[n].items())
        print(f"{n:>7}: {row}")
    small, large = sizes[0], sizes[-1]
    for key in ("load", "draw", "json"):
        ratio = (best[large][key] / large) / (best[small][key] / small)
        print(f"{key}: per-component time at {large} / at {small} = {ratio:.2f}")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
