"""Options pilot-sys adds to a known tool's command line so that it reports unit readings.

The Pilot method rests on *unit readings*: many time-stamped measurements inside a round, from
which EDM removes the round's warm-up and cool-down. fio and iperf3 can give them themselves:

- fio: windowed logs (``--write_bw_log``/``--write_iops_log``/``--write_lat_log`` with
  ``--log_avg_msec``), one row per window per job, written by fio as it runs. Chosen over the
  JSON ``--status-interval`` dumps, which repeat the whole report (tens of kB) per dump with
  cumulative counters that must be differenced, and whose period is timed by fio's status
  thread rather than stamped on each row.
- iperf3: its per-interval reports in the JSON (``-J`` with ``-i``). iperf3's default interval
  is 1 s, so a 1 s test gives one; 0.1 s (the shortest iperf3 accepts) gives ten.

An option the user set is kept as it is: their choice wins, and the parsers read what there is.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

IPERF3_INTERVAL = "0.1"  # seconds: iperf3's smallest report interval


def has_option(args: Iterable[str], *names: str) -> bool:
    """Whether ``args`` set any of the long options ``names`` (``--x`` or ``--x=VALUE``)."""
    return any(arg == name or arg.startswith(name + "=") for arg in args for name in names)


def _has_short(args: Iterable[str], letter: str) -> bool:
    """Whether ``args`` set the short option ``-L`` (``-L VALUE`` or ``-LVALUE``)."""
    return any(arg.startswith(f"-{letter}") and not arg.startswith("--") for arg in args)


def fio_options(
    args: list[str], log_prefix: Path, log_avg_msec: int
) -> tuple[list[str], list[str]]:
    """(options to put before fio's own arguments, fio's arguments with ``--output-format``
    made to include JSON): JSON output and windowed bw/iops/lat logs under ``log_prefix``.

    Placed before the job options, they are global options: every job logs (one file per job,
    ``<prefix>_bw.<job>.log``). In client/server mode (``--client``) the servers take their
    options from the job files only: ``fio_client_job_files`` asks for the logs there."""
    added: list[str] = []
    formats = next((a.split("=", 1)[1] for a in args if a.startswith("--output-format=")), None)
    if formats is None:
        added.append("--output-format=json")
    elif not any(f.startswith("json") for f in formats.split(",")):  # json+ is JSON too
        args = [f"{a},json" if a.startswith("--output-format=") else a for a in args]
    for kind in ("bw", "iops", "lat"):
        if not has_option(args, f"--write_{kind}_log"):
            added.append(f"--write_{kind}_log={log_prefix}")
    if not has_option(args, "--log_avg_msec"):
        added.append(f"--log_avg_msec={log_avg_msec}")
    return added, args


def fio_client_job_files(
    args: list[str], cwd: Path, log_dir: Path, log_prefix: Path, log_avg_msec: int
) -> list[str]:
    """In client/server mode (``--client``), fio's arguments with each job file replaced by a
    copy in ``log_dir`` that starts with a ``[global]`` section asking for the logs: the servers
    take their options from the job files only, and send the logs back to the client, which
    writes them as ``<prefix>_bw.<job>.log.<server>``. The job file's own sections come after
    ours, so an option it sets itself wins. Without ``--client``, ``args`` as they are."""
    if not any(a == "--client" or a.startswith("--client=") for a in args):
        return args
    header = "[global]\n" + "".join(
        f"write_{kind}_log={log_prefix}\n" for kind in ("bw", "iops", "lat")
    )
    header += f"log_avg_msec={log_avg_msec}\n"
    out: list[str] = []
    value_next = False
    for i, arg in enumerate(args):
        job = cwd / arg
        if not value_next and not arg.startswith("-") and job.is_file():
            copy = log_dir / f"job{i}-{job.name}"
            copy.write_text(header + job.read_text(errors="replace"))
            out.append(str(copy))
        else:
            out.append(arg)
        value_next = arg == "--client"  # its value is a host or a file of hosts, not a job
    return out


def iperf3_options(args: list[str]) -> list[str]:
    """Options to put before iperf3's own: ``-J`` (JSON) and ``-i 0.1`` unless set."""
    added: list[str] = []
    if not has_option(args, "-J", "--json"):
        added.append("-J")
    if not (has_option(args, "--interval") or _has_short(args, "i")):
        added += ["-i", IPERF3_INTERVAL]
    return added
