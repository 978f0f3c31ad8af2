"""Reading ten million numbers: dataio against the columnar readers it could be built on.

Writes a file of N numbers, then reads it in a fresh process per measurement, interleaved and
``--repeat`` times, with each library's plain call to a float64 numpy array (pandas' C parser,
pyarrow's CSV reader, polars) and with ``pilot_sys.dataio.read_table_column``. The anchor is
pandas, the library dataio hands its numbers to, measured in the same run. Time is the best of
the repeats (the machine is shared); peak memory is the process's high-water mark (VmHWM,
reset after the imports) above its resident size before the read, against the array's own size.

Shapes: ``column`` is one column under a ``latency (ms)`` header; ``csv3`` is
``iter,latency (ms),host`` read for its second column, where dataio also counts every row's
cells. ``--analyze`` times ``python3 -m pilot_sys analyze FILE`` end to end; ``--old REV`` reads
with the dataio module of a git revision once, for the before/after.

    python3 benchmarks/read_speed.py --numbers 10000000 --repeat 5 --analyze --old e64a5cb
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
READERS = ("pandas", "pyarrow", "polars", "dataio")
TARGET_TIME_RATIO = 2.0
TARGET_MEMORY_RATIO = 4.0
TARGET_ANALYZE_SECONDS = 5.0

# Run in a child process: imports first, then the high-water mark is reset and the read timed.
CHILD = r"""
import json, sys, time
import numpy as np
reader, path, column, old = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def memory():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024

t0 = time.perf_counter()
if reader == "pandas":
    import pandas as pd
    read = lambda: pd.read_csv(path, usecols=[column], dtype=np.float64).iloc[:, 0].to_numpy()
elif reader == "pyarrow":
    import pyarrow as pa, pyarrow.csv as pc
    def read():
        table = pc.read_csv(path, convert_options=pc.ConvertOptions(include_columns=[NAME]))
        return table.column(0).to_numpy()
elif reader == "polars":
    import polars as pl
    read = lambda: pl.read_csv(path, columns=[column]).to_series(0).to_numpy()
elif reader == "dataio":
    import pandas  # dataio imports it when it reads; timed apart, as for the others
    from pilot_sys.dataio import read_table_column
    read = lambda: read_table_column(path, column).values
else:  # the dataio module of another revision, loaded from its file
    import importlib.util
    spec = importlib.util.spec_from_file_location("old_dataio", old)
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_dataio"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    read = lambda: module.read_table_column(path, column).values
imported = time.perf_counter() - t0
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset VmHWM to the current resident size
before, _ = memory()
t0 = time.perf_counter()
values = read()
seconds = time.perf_counter() - t0
_, peak = memory()
assert values.dtype == np.float64, values.dtype
print(json.dumps({"seconds": seconds, "import_seconds": imported, "peak_bytes": peak - before,
                  "n": int(values.size), "checksum": float(np.sum(values))}))
"""


def write_data(path: Path, shape: str, n: int) -> np.ndarray:
    values = np.random.default_rng(1).lognormal(0.0, 0.3, n) * 5.0
    with path.open("w") as out:
        if shape == "column":
            out.write("latency (ms)\n")
            np.savetxt(out, values, fmt="%.6f")
        else:
            out.write("iter,latency (ms),host\n")
            step = 1_000_000
            for start in range(0, n, step):
                part = values[start : start + step]
                rows = np.char.add(np.arange(start, start + part.size).astype(str), ",")
                rows = np.char.add(np.char.add(rows, np.char.mod("%.6f", part)), ",node1\n")
                out.write("".join(rows.tolist()))
    return np.round(values, 6)


def measure(reader: str, path: Path, column: int, old: str = "") -> dict[str, float]:
    code = CHILD.replace("NAME", repr("latency (ms)"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # cwd: with -c, the current directory comes first on sys.path and could shadow ROOT
    out = subprocess.run(
        [sys.executable, "-c", code, reader, str(path), str(column), old],
        capture_output=True,
        text=True,
        env=env,
        cwd=path.parent,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"{reader} failed: {out.stderr[-800:]}")
    return json.loads(out.stdout)


def analyze(path: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of ``python3 -m pilot_sys analyze FILE``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pilot_sys", "analyze", str(path)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(
            f"analyze failed ({proc.returncode}): {proc.stderr.read().decode()[-500:]}"
        )
    return seconds, usage.ru_maxrss * 1024


def installed_mb(distribution: str) -> float | None:
    """Installed size of a distribution and its own files (not its dependencies), in MB."""
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    return sum(f.size or 0 for f in files) / 1e6


def available(reader: str) -> bool:
    if reader == "dataio":
        return True
    try:
        __import__(reader)
    except ImportError:
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--numbers", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--shapes", default="column,csv3")
    parser.add_argument("--analyze", action="store_true", help="also time `pilot_sys analyze`")
    parser.add_argument("--old", metavar="REV", help="also read once with dataio.py of REV")
    parser.add_argument("--dir", type=Path, default=None, help="where to write the data files")
    args = parser.parse_args()
    readers = [r for r in READERS if available(r)]
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}; readers: {', '.join(readers)}"
    )
    for dist in ("pandas", "pyarrow", "polars", "polars-runtime-32"):
        size = installed_mb(dist)
        if size is not None:
            print(f"  installed {dist}: {size:.0f} MB")
    ok = True
    with tempfile.TemporaryDirectory(prefix="pilot-read-", dir=args.dir) as scratch:
        for shape in args.shapes.split(","):
            path = Path(scratch) / f"{shape}.csv"
            expected = write_data(path, shape, args.numbers)
            column = 0 if shape == "column" else 1
            array_bytes = expected.nbytes
            print(
                f"\n{shape}: {args.numbers:,} numbers, {path.stat().st_size / 1e6:.0f} MB of text, "
                f"array {array_bytes / 1e6:.0f} MB, best of {args.repeat}"
            )
            runs: dict[str, list[dict[str, float]]] = {r: [] for r in readers}
            for _ in range(args.repeat):
                for reader in readers:
                    result = measure(reader, path, column)
                    if (
                        result["n"] != args.numbers
                        or abs(result["checksum"] - expected.sum()) > 1e-6 * args.numbers
                    ):
                        raise SystemExit(f"{reader} read other numbers: {result}")
                    runs[reader].append(result)
            anchor = min(r["seconds"] for r in runs["pandas"])
            print(
                f"{'reader':8} {'read s':>7} {'median':>7} {'x pandas':>8} {'import s':>8} "
                f"{'peak MB':>8} {'x array':>7}"
            )
            for reader, results in runs.items():
                best = min(r["seconds"] for r in results)
                median = statistics.median(r["seconds"] for r in results)
                peak = max(r["peak_bytes"] for r in results)
                imported = min(r["import_seconds"] for r in results)
                print(
                    f"{reader:8} {best:7.2f} {median:7.2f} {best / anchor:8.2f} {imported:8.2f} "
                    f"{peak / 1e6:8.0f} {peak / array_bytes:7.2f}"
                )
            mine = runs["dataio"]
            ratio = min(r["seconds"] for r in mine) / anchor
            memory = max(r["peak_bytes"] for r in mine) / array_bytes
            for label, value, limit in (
                ("time x pandas", ratio, TARGET_TIME_RATIO),
                ("peak x array", memory, TARGET_MEMORY_RATIO),
            ):
                verdict = "met" if value <= limit else "MISSED"
                ok &= value <= limit
                print(f"  target dataio {label} <= {limit:g}: {value:.2f} {verdict}")
            if args.old and shape == "column":
                old_file = Path(scratch) / "old_dataio.py"
                source = subprocess.run(
                    ["git", "-C", str(ROOT), "show", f"{args.old}:pilot_sys/dataio.py"],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                old_file.write_text(source)
                old = measure("old", path, column, str(old_file))
                print(
                    f"  dataio at {args.old}: {old['seconds']:.1f} s, "
                    f"peak {old['peak_bytes'] / 1e6:.0f} MB "
                    f"({old['peak_bytes'] / array_bytes:.1f} x array)"
                )
            if args.analyze and shape == "column":
                seconds, peak = analyze(path)
                read = min(r["seconds"] + r["import_seconds"] for r in mine)
                verdict = "met" if seconds <= TARGET_ANALYZE_SECONDS else "MISSED"
                print(
                    f"  analyze end to end: {seconds:.1f} s, peak RSS {peak / 1e6:.0f} MB; of it "
                    f"reading (dataio with pandas' import) {read:.1f} s; "
                    f"target <= {TARGET_ANALYZE_SECONDS:g} s {verdict}"
                )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
