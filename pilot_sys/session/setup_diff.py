"""What differs between the set-ups of two saved results, so that a comparison says it.

A difference between two sessions is the system's only when they measured the same thing the
same way. pyperf's ``compare_to`` warns when the benchmarks' metadata differ; this does the
same for what a session records: the command, the work amounts and their unit, the preset and
the targets, the component under test, the host (name, CPU, cores, memory), the kernel and
OS, the CPU frequency governor, the versions of pilot-sys and Python, and the workload tool's
version where its output states it (fio's and iperf3's JSON do). A value a session did not
record is not a difference: it is unknown, and said so only when the other side has it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pilot_sys import units
from pilot_sys.session.result import SessionResult

#: how a tool's own output names its version (the first round's stdout)
TOOL_VERSION = (
    re.compile(r'"fio version"\s*:\s*"([^"]+)"'),
    re.compile(r'"version"\s*:\s*"(iperf [^"]+)"'),
)
#: bytes of a round's stdout read to find the version (it is near the start)
VERSION_HEAD = 4096


class SetupDifference(BaseModel):
    """One thing the two set-ups do not share: what it is and each side's value."""

    what: str  # "work amounts", "kernel", ...
    a: str
    b: str

    def text(self) -> str:
        return f"{self.what} (A: {self.a}; B: {self.b})"


def tool_version(result_dir: Path) -> str | None:
    """The workload tool's version as its first round's output states it (None: not stated)."""
    for stdout in sorted(Path(result_dir).glob("rounds/*/stdout.txt"))[:1]:
        try:
            with stdout.open(encoding="utf-8", errors="replace") as f:
                head = f.read(VERSION_HEAD)
        except OSError:
            return None
        for pattern in TOOL_VERSION:
            m = pattern.search(head)
            if m:
                return m.group(1)
    return None


def _work(r: SessionResult) -> str:
    cfg, w = r.config, r.primary()
    if cfg.get("fixed_work"):
        return "fixed (no %WORK_AMOUNT%)"
    unit = str(cfg.get("work_unit") or w.work_unit or "")
    low, high = cfg.get("work_min"), cfg.get("work_max")
    return f"-w {units.work(low, unit)} .. {units.work(high, unit)}"


def _unit(r: SessionResult) -> str:
    unit = str(r.config.get("work_unit") or "")
    return unit if unit and unit != units.GENERIC_WORK else "none given"


def _targets(r: SessionResult) -> str:
    cfg = r.config
    conf = cfg.get("confidence")
    ci = cfg.get("ci_perc")
    return (
        f"CI {units.target(ci) if ci is not None else '?'} at "
        f"{units.percent(conf, None) if conf is not None else '?'}"
    )


def _context(key: str, show: Callable[[Any], str] = str) -> Callable[[SessionResult], str | None]:
    def read(r: SessionResult) -> str | None:
        value = r.context.get(key)
        return None if value is None else show(value)

    return read


#: what is compared: the name a person reads, and how a result states it (None: not recorded)
FIELDS: tuple[tuple[str, Callable[[SessionResult], str | None]], ...] = (
    ("command", lambda r: shlex.join(r.primary().command) if r.primary().command else None),
    ("work amounts", _work),
    ("work unit", _unit),
    ("preset", lambda r: str(r.config["preset"]) if r.config.get("preset") else None),
    ("targets", _targets),
    ("component under test", lambda r: r.bottleneck.cut or "not named"),
    ("host", _context("hostname")),
    ("CPU", _context("cpu_model")),
    ("online CPUs", _context("cpus_online")),
    ("memory", _context("memory_bytes", lambda v: units.size(float(v)))),
    ("kernel", _context("kernel")),
    ("OS", _context("os")),
    ("CPU frequency governor", _context("governor")),
    ("pilot-sys version", _context("pilot_sys_version")),
    ("Python", _context("python")),
)


def setup_differences(
    a: SessionResult, b: SessionResult, dirs: tuple[Path, Path] | None = None
) -> list[SetupDifference]:
    """Everything the two set-ups do not share, in ``FIELDS``' order, then the tool's version
    (from ``dirs``' round outputs)."""
    out: list[SetupDifference] = []
    for what, read in FIELDS:
        va, vb = read(a), read(b)
        if va is None and vb is None:
            continue
        if va != vb:
            out.append(SetupDifference(what=what, a=va or "not recorded", b=vb or "not recorded"))
    if dirs is not None:
        ta, tb = tool_version(dirs[0]), tool_version(dirs[1])
        if (ta or tb) and ta != tb:
            out.append(
                SetupDifference(what="tool version", a=ta or "not stated", b=tb or "not stated")
            )
    return out


def setup_warning(diffs: list[SetupDifference]) -> str | None:
    """The one line a comparison prints above its table when the set-ups differ."""
    if not diffs:
        return None
    return (
        "the set-ups differ, so a difference below may be the set-up's, not the system's: "
        + "; ".join(d.text() for d in diffs)
    )
