"""fio's JSON output (``--output-format=json``) and its windowed bandwidth, IOPS and latency
logs.

Readings per direction: ``<dir>_bw`` (B/s), ``<dir>_iops``, ``<dir>_lat_mean`` (s) and latency
percentiles. Jobs of one reporting group run concurrently, so a group's rate is its total bytes
over its longest job runtime (fio's own "Run status group" aggregate); with ``group_reporting``
fio has already merged the jobs into one entry. Unit readings come from the logs written with
``--write_bw_log``/``--write_iops_log``/``--write_lat_log`` and ``--log_avg_msec`` (bw in KiB/s,
IOPS, latency in ns; one file per job, concurrent jobs' rates summed window by window); with
``log_avg_msec`` set for every job they are equal-time windows, and the PIs say so
(``unit_weighting="time"``), so the session averages the window rates to total bytes over total
time. Unaveraged logs (one row per I/O) are left undeclared.

In client/server mode (``fio --client=HOST job.fio``, each HOST running ``fio --server``) the
document holds ``client_stats`` instead of ``jobs``: one entry per job per server, naming the
server in ``hostname``, and with several servers fio's own ``All clients`` sum. The aggregate
readings come from the servers' entries as from local jobs (the servers run at once: a
reporting group's bytes over its longest runtime, which is what ``All clients`` reports too);
each server's own are ``<dir>_bw@HOST``, ``<dir>_iops@HOST`` and ``<dir>_lat_mean@HOST``,
reported but not gating the session's stop (the aggregate is the benchmark's answer). The
servers' logs come back to the client as ``<prefix>_bw.<job>.log.<HOST>``: all together give
the aggregate's unit readings, each server's its own ``@HOST`` ones.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec
from pilot_sys.workload.parsers.result import CapturedOutput, MalformedOutput, ParsedOutput

DIRECTIONS = ("read", "write", "trim")
LOG_DIRECTION = {0: "read", 1: "write", 2: "trim"}  # column 3 of fio's log files
PERCENTILES = {"50.000000": "p50", "99.000000": "p99", "99.900000": "p99_9"}
# <prefix>_bw.<job>.log; in client/server mode the client adds the server: ...log.<host>
_LOG_NAME = re.compile(r"_(bw|iops|lat)(?:\.(\d+))?\.log(?:\.(.+))?$")
# log kind -> (the PI its windows are unit readings of, factor from fio's unit to the PI's)
LOG_PI = {"bw": ("bw", 1024.0), "iops": ("iops", 1.0), "lat": ("lat_mean", 1e-9)}


def find_json(text: str, where: str) -> dict[str, Any]:
    """The JSON document in fio's stdout, which may be preceded by warnings or normal output."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"^\{", text, flags=re.MULTILINE):
        try:
            doc, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError as exc:
            line = text.count("\n", 0, exc.pos) + 1
            column = exc.pos - text.rfind("\n", 0, exc.pos)
            raise MalformedOutput(
                f"{where}:{line}:{column}", f"fio JSON is cut short or invalid ({exc.msg})"
            ) from None
        if isinstance(doc, dict) and ("jobs" in doc or "client_stats" in doc):
            return doc
    raise MalformedOutput(
        where,
        "expected fio JSON output (--output-format=json) with a 'jobs' "
        "list (or 'client_stats' in client/server mode); none found",
    )


def _spec(
    name: str, unit: str, pi_type: PIType, higher: bool, description: str, gates: bool = True
) -> PISpec:
    return PISpec(
        name=name,
        unit=unit,
        pi_type=pi_type,
        higher_is_better=higher,
        description=description,
        gates_stop=gates,
    )


def _add_direction(
    out: ParsedOutput,
    direction: str,
    entries: list[tuple[int, dict[str, Any]]],
    host: str | None = None,
) -> None:
    """Readings of one direction over all job entries (grouped by fio's reporting group); for one
    server of a client/server run (``host``) its own readings, named ``<name>@HOST``."""
    by_group: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for group, stats in entries:
        by_group[group].append(stats)
    total_bytes = sum(s["io_bytes"] for g in by_group.values() for s in g)
    group_seconds = sum(max(s["runtime"] for s in g) / 1000.0 for g in by_group.values())
    total_ios = sum(s["total_ios"] for g in by_group.values() for s in g)
    if total_bytes <= 0 or group_seconds <= 0:
        return
    if len(by_group) > 1 and host is None:
        out.warnings.append(
            f"fio: {len(by_group)} reporting groups; "
            f"{direction} rates are total bytes over the sum of group runtimes"
        )
    at, whose, gates = ("", "all jobs", True)
    if host is not None:
        at, whose, gates = f"@{host}", f"server {host}'s jobs", False
    out.add(
        _spec(
            f"{direction}_bw{at}",
            "B/s",
            PIType.HARMONIC,
            True,
            f"fio {direction} bandwidth of the round ({whose})",
            gates,
        ),
        total_bytes / group_seconds,
    )
    out.add(
        _spec(
            f"{direction}_iops{at}",
            "IOPS",
            PIType.HARMONIC,
            True,
            f"fio {direction} I/O operations per second ({whose})",
            gates,
        ),
        total_ios / group_seconds,
    )
    lats = [
        s["lat_ns"] for g in by_group.values() for s in g if s.get("lat_ns", {}).get("N", 0) > 0
    ]
    if lats:
        n = np.array([lat["N"] for lat in lats], dtype=float)
        means = np.array([lat["mean"] for lat in lats], dtype=float)
        out.add(
            _spec(
                f"{direction}_lat_mean{at}",
                "s",
                PIType.ARITHMETIC,
                False,
                f"fio {direction} total latency (submission + completion), mean over all "
                f"I/Os ({whose})",
                gates,
            ),
            float(np.dot(n, means) / n.sum()) / 1e9,
        )
    if host is not None:
        return
    flat = [s for g in by_group.values() for s in g]
    if len(flat) == 1:
        stats = flat[0]
        kind = "lat_ns" if "percentile" in stats.get("lat_ns", {}) else "clat_ns"
        table = stats.get(kind, {}).get("percentile", {})
        label = "total" if kind == "lat_ns" else "completion"
        for key, suffix in PERCENTILES.items():
            if key in table:
                out.add(
                    _spec(
                        f"{direction}_lat_{suffix}",
                        "s",
                        PIType.ARITHMETIC,
                        False,
                        f"fio {direction} {label} latency, percentile {float(key):g}",
                        gates=False,
                    ),
                    table[key] / 1e9,
                )
    elif flat:
        out.warnings.append(
            f"fio: {len(flat)} {direction} job entries; "
            "percentiles need --group_reporting to be merged"
        )


def read_log(path: Path) -> np.ndarray:
    """A fio log's (time ms, value, direction) columns; fio also writes block size,
    offset[, priority]."""
    if path.stat().st_size == 0:  # fio creates the file before the first window closes
        return np.empty((0, 3))
    try:
        # Only the first three columns are used; skipping the rest halves the parse time of
        # unaveraged logs (2 s per million rows on the project VM).
        return np.loadtxt(path, delimiter=",", ndmin=2, dtype=float, usecols=(0, 1, 2))
    except ValueError as exc:
        raise MalformedOutput(
            str(path), f"expected fio log rows 'msec, value, direction, bs, offset' ({exc})"
        ) from None


def combine_jobs(logs: list[np.ndarray], summed: bool) -> tuple[np.ndarray, np.ndarray]:
    """Merge per-job windowed series onto the windows of the job with the most rows.

    Jobs' windows end a few ms apart (fio timestamps each job's window separately), so each grid
    window takes, from every job, the row with the nearest timestamp if it lies within half a
    window (vectorised with searchsorted). Bandwidth is summed across concurrent jobs; latency is
    averaged.
    """
    logs = [log for log in logs if log.size]
    if len(logs) == 1:
        return logs[0][:, 0] / 1000.0, logs[0][:, 1]
    grid = max(logs, key=len)[:, 0]
    half_window = float(np.median(np.diff(grid))) / 2 if grid.size > 1 else np.inf
    stacked = np.full((len(logs), grid.size), np.nan)
    for i, log in enumerate(logs):
        times = log[:, 0]
        right = np.clip(np.searchsorted(times, grid), 0, times.size - 1)
        left = np.clip(right - 1, 0, times.size - 1)
        nearest = np.where(np.abs(times[left] - grid) <= np.abs(times[right] - grid), left, right)
        close = np.abs(times[nearest] - grid) <= half_window
        stacked[i, close] = log[nearest[close], 1]
    values = np.nansum(stacked, axis=0) if summed else np.nanmean(stacked, axis=0)
    return grid / 1000.0, values


def log_window_ms(doc: dict[str, Any]) -> float | None:
    """fio's ``log_avg_msec`` if every job logs averaged windows, else None (per-I/O rows or
    unknown).

    A job's own option wins over the global one; the runner passes it on the command line before
    the job options, where fio reports it under ``global options``."""
    shared = (doc.get("global options") or {}).get("log_avg_msec")
    windows = []
    for job in doc.get("jobs") or client_jobs(doc):
        value = (job.get("job options") or {}).get("log_avg_msec", shared)
        try:
            windows.append(float(value))
        except (TypeError, ValueError):
            return None
    if not windows or min(windows) <= 0:
        return None
    return max(windows)


def _declare_windows(out: ParsedOutput) -> None:
    """Mark the PIs the logs give unit readings for as equal-time windows, also in a round whose
    logs happen to be empty: the engine keeps the specs of the first round that names the PIs."""
    logged = {f"{d}_{pi}" for d in DIRECTIONS for pi, _ in LOG_PI.values()}
    out.specs = [
        s.model_copy(update={"unit_weighting": "time"}) if s.name.split("@", 1)[0] in logged else s
        for s in out.specs
    ]


def _unit_readings(out: ParsedOutput, log_dir: Path) -> None:
    """Unit readings from the bw/iops/lat logs fio wrote in ``log_dir`` (one file per job, and
    per server in client/server mode): every file together for the aggregate PIs, and each
    server's own for its ``<name>@HOST`` PIs."""
    found: dict[str, list[tuple[Path, str | None]]] = defaultdict(list)
    for path in sorted(log_dir.iterdir()):
        match = _LOG_NAME.search(path.name)
        if match and path.is_file():
            found[match.group(1)].append((path, match.group(3)))
    for kind, files in found.items():
        logs = [(read_log(p), host) for p, host in files]
        hosts = sorted({h for _, h in logs if h is not None})
        for at, mine in [("", logs)] + [(f"@{h}", [x for x in logs if x[1] == h]) for h in hosts]:
            _add_log_units(out, kind, [log for log, _ in mine], at)


def _add_log_units(out: ParsedOutput, kind: str, logs: list[np.ndarray], at: str) -> None:
    """One kind of log's windows, per direction, as the unit readings of ``<dir>_<pi><at>``."""
    for code, direction in LOG_DIRECTION.items():
        parts = [log[log[:, 2] == code] for log in logs]
        parts = [p[np.argsort(p[:, 0], kind="stable")] for p in parts if p.size]
        if not parts:
            continue
        times, values = combine_jobs(parts, summed=kind != "lat")  # rates add up
        pi, factor = LOG_PI[kind]
        if f"{direction}_{pi}{at}" in out.readings:  # KiB/s -> B/s, ns -> s
            out.add_units(f"{direction}_{pi}{at}", values * factor, times)


def client_jobs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The servers' job entries of a client/server run (fio's ``All clients`` sum left out: the
    aggregate is made from the entries, as for local jobs)."""
    return [j for j in doc.get("client_stats") or [] if j.get("jobname") != "All clients"]


def _with_io(jobs: list[dict[str, Any]], direction: str) -> list[dict[str, Any]]:
    return [j for j in jobs if j.get(direction, {}).get("io_bytes", 0) > 0]


def parse(captured: CapturedOutput) -> ParsedOutput:
    """Readings and unit readings of one fio round."""
    doc = find_json(captured.text("stdout"), captured.stdout_name)
    out = ParsedOutput()
    clients = "jobs" not in doc
    jobs = client_jobs(doc) if clients else doc.get("jobs") or []
    if not jobs:
        raise MalformedOutput(
            captured.stdout_name, "fio JSON has no jobs; did the job file define any?"
        )
    errors = [
        f"{j.get('hostname', '') + ' ' if clients else ''}{j.get('jobname', '?')}: "
        f"error {j['error']}"
        for j in jobs
        if j.get("error")
    ]
    if errors:
        raise MalformedOutput(captured.stdout_name, "fio jobs failed (" + "; ".join(errors) + ")")
    hosts = sorted({str(j.get("hostname", "?")) for j in jobs}) if clients else []
    try:
        for direction in DIRECTIONS:
            entries = [
                (int(j.get("groupid", 0)), j[direction])
                for j in jobs
                if j.get(direction, {}).get("io_bytes", 0) > 0
            ]
            _add_direction(out, direction, entries)
            for host in hosts:
                mine = [
                    (g, e)
                    for (g, e), j in zip(entries, _with_io(jobs, direction), strict=True)
                    if j.get("hostname") == host
                ]
                _add_direction(out, direction, mine, host)
        moved = sum(j[d]["io_bytes"] for j in jobs for d in DIRECTIONS if d in j)
    except (KeyError, TypeError) as exc:
        raise MalformedOutput(
            captured.stdout_name, f"fio JSON lacks the expected field {exc}"
        ) from None
    if not out.readings:
        raise MalformedOutput(
            captured.stdout_name, "fio did no I/O in this round (io_bytes is 0 in every job)"
        )
    out.work_done = float(moved)
    if captured.logs is not None and captured.logs.is_dir():
        _unit_readings(out, captured.logs)
    if log_window_ms(doc) is not None:
        _declare_windows(out)
    if not out.unit_readings:
        why = " (client/server: the job files must ask for them)" if clients else ""
        out.warnings.append(f"fio: no bw/iops/lat logs, so no unit readings{why}")
    return out
