#!/usr/bin/env python3
"""The before/after gallery of pilot-sys's pictures (docs/gallery/README.md).

    python3 docs/gallery/make.py                  # record three small sessions, draw, write
    python3 docs/gallery/make.py --sessions DIR   # redraw from sessions recorded earlier
    python3 docs/gallery/make.py --keep DIR       # keep the recordings in DIR

Three sessions, each a small real workload on this machine:

- ``valid``: a SHA-256 loop printing its rate per chunk, the CPU named as the component under
  test (``--cut cpu:host``), the quick preset with a 20 % target (a shared host is noisy);
- ``invalid``: ``dd`` from /dev/urandom into a file: the disk is the component under test, and
  the CPU that makes the random bytes is a hidden bottleneck;
- ``limit``: the SHA-256 loop with a 0.5 % target in 12 s: the time limit comes first.

A session that ends with another status than its case's (other processes on the host can make
a verdict invalid) is recorded again, three times at most; the README shows the status each
session ended with.

Each session's pictures are drawn twice from the same result directory: by this checkout
("after") and by the plot code of an earlier commit ("before", exported with ``git archive``
and run as ``pilot-sys report`` on a copy). ``graph --png`` of the disk's data path is drawn
both ways too, and report.html is photographed with headless Chromium when it is installed.
PNGs are reduced to 256 colours (Pillow, when installed) to keep the repository small.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BEFORE_COMMIT = "e64a5cb"  # the plot code issue 14 describes
HASH_LOOP = """\
import hashlib, sys, time
chunks = int(sys.argv[1])
block = b"x" * 65536
print("hash_MBps")
for _ in range(chunks):
    start = time.perf_counter()
    for _ in range(16):
        hashlib.sha256(block).digest()
    print(f"{16 * 65536 / (time.perf_counter() - start) / 1e6:.3f}")
"""
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
EXPECTED = {"valid": "valid", "invalid": "invalid", "limit": "limit_reached"}
ATTEMPTS = 3
CASES = {
    "valid": "valid: every target met, no hidden bottleneck",
    "invalid": "invalid: a hidden bottleneck beside the component under test",
    "limit": "limit reached: the session limit came before the target",
}


def pilot(args: list[str], code: Path) -> subprocess.CompletedProcess[str]:
    """``pilot-sys ARGS`` with the package at ``code`` (this checkout or an exported commit),
    started there: ``python3 -m`` finds the package of its working directory first."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    return subprocess.run(
        [sys.executable, "-m", "pilot_sys", *args],
        env=env,
        cwd=code,
        capture_output=True,
        text=True,
        timeout=600,
    )


def record(where: Path) -> dict[str, tuple[Path, str]]:
    """The three sessions, recorded with this checkout: case -> (directory, where it came from).
    A case this host cannot give after ``ATTEMPTS`` tries is the hand-written result directory
    of ``tests/session_dirs.py`` instead, and says so."""
    where.mkdir(parents=True, exist_ok=True)
    loop = where / "hashloop.py"
    loop.write_text(HASH_LOOP)
    work = where / "work"
    work.mkdir(exist_ok=True)
    hashing = f"--cut cpu:host --parser csv -w 50,500 --work-unit chunks -- python3 {loop} "
    dd = f"dd if=/dev/urandom of={work / 'dd.dat'} bs=1M count=%WORK_AMOUNT% conv=fsync"
    runs = {
        "valid": "--preset quick --ci-perc 20% " + hashing + "%WORK_AMOUNT%",
        "invalid": "--preset quick -s 20 -w 16,256 -- " + dd,
        "limit": "--preset quick --ci-perc 0.5% -s 12 " + hashing + "%WORK_AMOUNT%",
    }
    out = {}
    for case, args in runs.items():
        target = where / case
        ended = []
        for attempt in range(1, ATTEMPTS + 1):  # other processes on the host can change a verdict
            if target.exists():
                shutil.rmtree(target)
            done = pilot(["run", "-q", "-o", str(target), *shlex.split(args)], REPO)
            line = done.stdout.strip().splitlines()[0] if done.stdout.strip() else "?"
            print(f"{case} (attempt {attempt}): {line}")
            ended.append(status_of(target))
            if ended[-1] == EXPECTED[case]:
                out[case] = (target, f"recorded on this machine (attempt {attempt})")
                break
        else:
            shutil.rmtree(target, ignore_errors=True)
            out[case] = (
                fixture(case, target),
                (
                    "hand-written result directory of `tests/session_dirs.py`: the recordings on "
                    f"this machine ended {', '.join(f'`{s}`' for s in ended)}"
                ),
            )
    (work / "dd.dat").unlink(missing_ok=True)
    return out


def fixture(case: str, target: Path) -> Path:
    """The test suite's hand-written session for ``case`` (a disk benchmark with known numbers;
    with a hidden bottleneck for ``invalid``, stopped by the time limit for ``limit``)."""
    sys.path.insert(0, str(REPO / "tests"))
    sys.path.insert(0, str(REPO))
    from session_dirs import make_session

    from pilot_sys.session.engine import StopReason

    stop = StopReason.SESSION_LIMIT if case == "limit" else StopReason.TARGETS_MET
    limit = case == "limit"  # a short session of rounds that differ: its interval is too wide
    return make_session(
        target,
        rounds=6 if limit else 12,
        hidden=case == "invalid",
        stop_reason=stop,
        spread=0.1 if limit else 0.0,
    )


def status_of(session: Path) -> str:
    path = session / "result.json"
    return json.loads(path.read_text())["status"] if path.is_file() else "?"


def export_before(commit: str, where: Path) -> Path | None:
    """``commit``'s pilot_sys (and plug-ins) in ``where``; None when git cannot give it."""
    where.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "pilot_sys", "plugins"], capture_output=True
    )
    if archive.returncode != 0:
        print(f"before: git archive {commit} failed; the gallery shows the new pictures only")
        return None
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive.stdout, check=True)
    return where


OLD_KINDS = {
    "host",
    "cpu",
    "core",
    "numa",
    "memory",
    "pci",
    "controller",
    "block",
    "mount",
    "nic",
    "network",
    "remote",
    "other",
}
OLD_SOURCES = {"sysfs", "dmi", "probe", "user", "derived", "unknown"}


def for_the_earlier_code(graph_file: Path) -> None:
    """Rewrite a copy's graph.json in terms the earlier code reads: it predates the kernel-limit
    components (cgroup, qdisc, cpufreq) and their limit sources, which are left out."""
    if not graph_file.is_file():
        return
    data = json.loads(graph_file.read_text())
    nodes = [n for n in data.get("nodes", []) if n.get("kind") in OLD_KINDS]
    kept = {n["id"] for n in nodes}
    for node in nodes:
        for limit in node.get("limits", {}).values():
            if limit.get("source") not in OLD_SOURCES:
                limit.update(source="unknown", value=None)
    links = [
        lk for lk in data.get("links", []) if lk.get("source") in kept and lk.get("target") in kept
    ]
    for link in links:
        capacity = link.get("capacity") or {}
        if capacity.get("source") not in OLD_SOURCES:
            capacity.update(source="unknown", value=None)
    graph_file.write_text(json.dumps({**data, "nodes": nodes, "links": links}))


def first_pi(session: Path) -> str:
    """The first PI of the session's workload other than ``wps`` (what its plots are named by)."""
    result = json.loads((session / "result.json").read_text())
    pis = [p for p in result["workloads"][0]["pis"] if p != "wps"]
    return pis[0] if pis else "wps"


def shrink(src: Path, dst: Path) -> None:
    """Copy a PNG, in 256 colours when Pillow is at hand (plots have few colours)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        from PIL import Image
    except ImportError:
        shutil.copyfile(src, dst)
        return
    with Image.open(src) as im:
        im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(
            dst, optimize=True
        )


def screenshot(page: Path, out: Path, scratch: Path) -> bool:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        return False
    shot = scratch / "shot.png"
    subprocess.run(
        [
            browser,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={scratch / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1200,1500",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
    )
    if not shot.is_file():
        return False
    shrink(shot, out)
    return True


def draw(
    sessions: dict[str, tuple[Path, str]], scratch: Path, before_code: Path | None
) -> dict[str, list]:
    """Every case's pictures into docs/gallery/{before,after}/<case>/; the rows of the README."""
    rows: dict[str, list] = {}
    for case, (session, source) in sessions.items():
        after = scratch / f"after-{case}"
        shutil.copytree(session, after)
        done = pilot(["report", str(after)], REPO)
        if not (after / "report.html").is_file():
            sys.exit(f"{case}: pilot-sys report failed: {done.stderr.strip()[-500:]}")
        pi = first_pi(after)
        pairs = []
        names = [
            (f"{pi}-units.png", f"{pi}-units.png"),
            (f"{pi}-rounds.png", f"{pi}-rounds.png"),
            ("utilization.png", "utilization.png"),
            ("round-*-graph.png", "data-path.png"),
        ]
        old = None
        if before_code is not None:
            old = scratch / f"before-{case}"
            shutil.copytree(session, old)
            shutil.rmtree(old / "plots", ignore_errors=True)
            for_the_earlier_code(old / "graph.json")
            pilot(["report", str(old)], before_code)
        for before_name, after_name in names:
            got_before = sorted((old / "plots").glob(before_name)) if old is not None else []
            got_after = after / "plots" / after_name
            b = a = None
            if got_before:
                b = Path("before") / case / got_before[0].name
                shrink(got_before[0], HERE / b)
            if got_after.is_file():
                a = Path("after") / case / after_name
                shrink(got_after, HERE / a)
            if a or b:
                pairs.append((after_name.removesuffix(".png"), b, a))
        html_shot = Path("after") / case / "report-html.png"
        if screenshot(after / "report.html", HERE / html_shot, scratch / f"chromium-{case}"):
            pairs.append(("report.html (top of the page)", None, html_shot))
        result = json.loads((after / "result.json").read_text())
        command = " ".join(result["workloads"][0]["command"])
        rows[case] = [result["status"], result["stop_reason"], command, source, pairs]
    folder = str(REPO)  # a folder on this machine's disk: its data path ends at the disk
    pairs = []
    b = a = None
    if before_code is not None:
        png = scratch / "graph-before.png"
        pilot(["graph", folder, "--png", str(png)], before_code)
        if png.is_file():
            b = Path("before") / "graph-png.png"
            shrink(png, HERE / b)
    png = scratch / "graph-after.png"
    pilot(["graph", folder, "--png", str(png)], REPO)
    if png.is_file():
        a = Path("after") / "graph-png.png"
        shrink(png, HERE / a)
    pairs.append(("graph --png", b, a))
    rows["graph"] = ["", "", "pilot-sys graph CHECKOUT --png FILE", "", pairs]
    return rows


def readme(rows: dict[str, list], before: str | None) -> str:
    lines = [
        "# Gallery: the pictures before and after issue 14",
        "",
        "Made by `python3 docs/gallery/make.py` (run it again to redraw; its docstring says how "
        "the sessions are recorded). Each row shows one picture of one session: on the left as "
        f"the plot code of commit `{before}` drew it, on the right as this checkout draws it "
        "from the same result directory."
        if before
        else "Made by `python3 docs/gallery/make.py`; the earlier pictures could not be drawn "
        "(git was not at hand), so only the new ones are shown.",
        "",
        "One colour rule holds in every picture (`pilot_sys/palette.py`): utilization fills from "
        "pale green through yellow and orange (the bottleneck threshold) to red (100 %); the "
        "component under test is framed or drawn in blue, a hidden bottleneck in red; rounds "
        "that are not part of the analysis are grey, readings removed as warm-up or cool-down "
        "sand; the session's status colours the HTML banner and the badge of each plot.",
        "",
    ]
    for case, (status, reason, command, source, pairs) in rows.items():
        title = CASES.get(case, "`pilot-sys graph --png`: the data path of the disk")
        lines += [f"## {title}", ""]
        if command:
            lines += [f"`{command}`" + (f": status `{status}` ({reason})" if status else ""), ""]
        if source:
            lines += [f"Session: {source}.", ""]
        lines += ["| picture | before | after |", "|---|---|---|"]
        for name, b, a in pairs:
            left = f"![before]({b.as_posix()})" if b else "(none)"
            right = f"![after]({a.as_posix()})" if a else "(none)"
            lines.append(f"| {name} | {left} | {right} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=Path, help="reuse DIR/{valid,invalid,limit}")
    parser.add_argument("--keep", type=Path, help="record the sessions into DIR and keep them")
    parser.add_argument("--before", default=BEFORE_COMMIT, help="commit of the 'before' pictures")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pilot-gallery-") as tmp:
        scratch = Path(tmp)
        if args.sessions:
            sessions = {
                c: (args.sessions / c, "recorded earlier on this machine")
                for c in CASES
                if (args.sessions / c).is_dir()
            }
        else:
            sessions = record(args.keep or scratch / "sessions")
        before_code = export_before(args.before, scratch / "before-code") if args.before else None
        for side in ("before", "after"):
            shutil.rmtree(HERE / side, ignore_errors=True)
        rows = draw(sessions, scratch, before_code)
    (HERE / "README.md").write_text(readme(rows, args.before if before_code else None))
    print(f"wrote {HERE / 'README.md'}")


if __name__ == "__main__":
    main()
