"""Reading one plain number a line: the exact vectorised parser against the readers before it.

``pilot_sys.plain_decimal`` reads a file of one short decimal a line in front of numpy's text
reader (files under ``NUMPY_BYTES``) and pandas' C parser (larger files, pandas imported on
demand). This script reads each FILE with ``read_table_column`` in a fresh process, once as the
checkout does and once with the parser switched off (``old``: the reader the file went to
before, measured in the same run, the anchor), interleaved, ``--repeat`` times, and reports the
CPU seconds of the read (user + system of the process around the call, so the pandas import an
old read pays is counted, the interpreter's start and ``import pilot_sys.dataio`` are not):
median, range and old/new. Every read's values are hashed bit for bit: new and old must agree.
Above ``DECIMAL_BYTES`` the checkout reads as before (pandas); ``--forced`` also times the
parser there (``forced``), which shows where pandas with its import becomes the cheaper.

    python3 benchmarks/plain_decimal_speed.py FILE... [--repeat 7] [--forced]
    python3 benchmarks/plain_decimal_speed.py --make /tmp/x/n1e7.txt --lines 10000000

``--make PATH`` first writes ``--lines`` readings (a slow sine with noise, ``%.6g``, as
benchmarks/series_shapes_speed.py writes its ``sine``) to PATH. Target: below
``NUMPY_BYTES`` (against numpy's reader) the new read at least 2x cheaper than the old; up to
``DECIMAL_BYTES`` (against pandas with its import) cheaper. Results:
benchmarks/results/load22b-reader.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's pilot_sys, as the children import it

from pilot_sys.plain_decimal import DECIMAL_BYTES  # noqa: E402
from pilot_sys.plain_numbers import NUMPY_BYTES  # noqa: E402

TARGET_RATIO = 2.0

CHILD = r"""
import hashlib, json, sys, time
from pilot_sys import dataio
variant, path = sys.argv[1], sys.argv[2]
if variant == "old":
    dataio._plain_decimals = lambda src, lay: None
elif variant == "forced":  # the parser at any size, for the crossover with pandas
    dataio.DECIMAL_BYTES = float("inf")
t0 = time.process_time()
col = dataio.read_table_column(path)
cpu = time.process_time() - t0
digest = hashlib.sha256(col.values.tobytes()).hexdigest()[:16]
print(json.dumps({"cpu": cpu, "n": int(col.values.size), "sha": digest,
                  "pandas": "pandas" in sys.modules}))
"""


def make(path: Path, lines: int) -> None:
    rng = np.random.default_rng(22)
    i = np.arange(lines)
    values = 100 + 2 * np.sin(2 * np.pi * i / 5000) + rng.normal(0, 0.5, lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savetxt(path, values, fmt="%.6g")


def read_once(variant: str, path: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, variant, path],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--make", type=Path)
    parser.add_argument("--lines", type=int, default=10_000_000)
    parser.add_argument("--forced", action="store_true")
    args = parser.parse_args()
    variants = ("new", "old", "forced") if args.forced else ("new", "old")
    if args.make is not None:
        make(args.make, args.lines)
        print(f"wrote {args.lines} readings to {args.make} ({args.make.stat().st_size} bytes)")
    files = [*args.files, *([str(args.make)] if args.make else [])]
    cpu: dict[tuple[str, str], list[float]] = {}
    seen: dict[str, set[str]] = {}
    notes: dict[tuple[str, str], dict] = {}
    for _ in range(args.repeat):
        for path in files:
            for variant in variants:
                got = read_once(variant, path)
                cpu.setdefault((path, variant), []).append(got["cpu"])
                seen.setdefault(path, set()).add(got["sha"])
                notes[(path, variant)] = got
    ok = True
    print(f"{'file':34s} {'reader':6s} {'n':>9s} {'median s':>9s} {'range s':>15s} pandas")
    for path in files:
        for variant in variants:
            runs = cpu[(path, variant)]
            note = notes[(path, variant)]
            print(
                f"{path:34s} {variant:6s} {note['n']:9d} {statistics.median(runs):9.3f} "
                f"{min(runs):7.3f}-{max(runs):<7.3f} {note['pandas']}"
            )
        ratio = statistics.median(cpu[(path, "old")]) / statistics.median(cpu[(path, "new")])
        same = len(seen[path]) == 1
        size = Path(path).stat().st_size
        need = TARGET_RATIO if size < NUMPY_BYTES else 1.0 if size < DECIMAL_BYTES else 0.0
        ok = ok and same and ratio >= need
        target = f"target {need}x" if need else "above DECIMAL_BYTES: pandas, as before"
        print(f"{'':34s} old/new {ratio:.1f}x ({target}); values identical: {same}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
