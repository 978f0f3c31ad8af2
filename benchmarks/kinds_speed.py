"""What judging the kinds of change costs on long series, and every figure it gives (issue 22).

``change_kind.explain_changes`` judges each change point the detector found (level, trend,
spread or none) and drops the ones a trend explains, refitting the neighbours of each drop: on
a series cut into hundreds of pieces (a slow sine, a random walk) it was a fifth of what
``changepoints`` costs at 1e6 readings. This script times it in process on the seeded shapes of
``series_shapes_speed.py``: the detector runs once per shape (``detect``, the anchor: its CPU
seconds in the same run), then ``explain_changes`` and ``classify_changes(drop=False)`` (what
``--no-trend`` runs) are timed ``--repeat`` times each; CPU seconds (process time), median and
range, and the kinds' share of the detector's time.

``--dump OUT.json`` writes every field of every kind of both calls and of the merged result
(``repr`` of the floats: the last bit counts); ``--against OLD.json`` compares with a dump made
under another commit, so a speed-up can show that no p-value moved::

    python3 benchmarks/kinds_speed.py [--size 1000000] [--repeat 3] [--only sine,walk]
    python3 benchmarks/kinds_speed.py --dump new.json [--against old.json]

Results: ``benchmarks/results/kinds22-kinds.md``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import checkout_first  # noqa: E402, F401  (the checkout before an installed copy)
from series_shapes_speed import SHAPES, shape  # noqa: E402

DEFAULT_SHAPES = "sine,walk,ramp,decay,step"


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def run(names: list[str], n: int, repeat: int) -> tuple[list[dict[str, object]], dict[str, object]]:
    import numpy as np

    from pilot_sys.stats.change_kind import classify_changes, explain_changes
    from pilot_sys.stats.changepoint import default_min_size, detect
    from pilot_sys.stats.series_model import data_scale

    rows, dumped = [], {}
    for name in names:
        x = shape(name, n)
        exponent = data_scale(x)  # as series_model scales the readings before detection
        y = np.ldexp(x, -exponent) if exponent else x
        t0 = time.process_time()
        found = detect(y, min_size=default_min_size(n))
        anchor = time.process_time() - t0
        explain, keep_all = [], []
        for _ in range(repeat):
            t0 = time.process_time()
            merged, kinds = explain_changes(y, found)
            explain.append(time.process_time() - t0)
            t0 = time.process_time()
            every = classify_changes(y, found.changepoints, drop=False)
            keep_all.append(time.process_time() - t0)
        changes = len(found.changepoints)
        rows.append(
            {
                "shape": name,
                "n": n,
                "change points": changes,
                "kept": len(kinds),
                "detect s": round(anchor, 3),
                "explain_changes s": _spread(explain),
                "classify_changes(drop=False) s": _spread(keep_all),
                "explain / detect": round(statistics.median(explain) / anchor, 2),
            }
        )
        dumped[name] = {
            "merged": repr(merged.model_dump()),
            "kinds": [repr(k.model_dump()) for k in kinds],
            "no drop": [repr(k.model_dump()) for k in every],
        }
        print(json.dumps(rows[-1]), flush=True)
    return rows, dumped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default=DEFAULT_SHAPES, help="comma-separated shapes")
    parser.add_argument("--dump", type=Path, default=None)
    parser.add_argument("--against", type=Path, default=None)
    args = parser.parse_args(argv)
    names = [s for s in args.only.split(",") if s]
    unknown = [s for s in names if s not in SHAPES]
    if unknown:
        parser.error(f"--only: unknown shape(s) {', '.join(unknown)}; known: {', '.join(SHAPES)}")
    _, dumped = run(names, args.size, args.repeat)
    if args.dump is not None:
        args.dump.write_text(json.dumps(dumped, indent=1, sort_keys=True))
    if args.against is not None:
        old = json.loads(args.against.read_text())
        differ = sorted(k for k in dumped if old.get(k) != dumped[k])
        print(f"{len(dumped)} shapes, {len(differ)} differ in any figure of any kind: {differ}")
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
