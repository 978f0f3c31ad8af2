"""``pilot-sys monitor``: run a command while sampling its data path; name hidden bottlenecks."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click

from pilot_sys import units
from pilot_sys.cli.common import FINITE_FLOAT, OneLineErrors
from pilot_sys.cli.fleet_options import declared_hosts, fleet_note, prometheus_option
from pilot_sys.errors import BadInput, ExitCode
from pilot_sys.safefile import probe_directory, replace_file

PICTURE_SUFFIXES = (".png", ".svg", ".pdf")
PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def _writable(option: str, path: str | None) -> None:
    """Fail before CMD runs, not after: a run whose trace cannot be written is a run lost.

    Opening the file is the only sure test (a directory under /proc passes every access check
    and still refuses new files); a file this probe created is removed again.
    """
    if path is None:
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise BadInput(option, f"{path}: directory {parent} does not exist")
    if option == "--plot" and not path.lower().endswith(PICTURE_SUFFIXES):
        raise BadInput(
            option, f"{path}: the picture format comes from the suffix; use .png, .svg or .pdf"
        )
    # the file is written beside and renamed over the name (pilot_sys.safefile): the directory
    # must take a new file; nothing is created here, so a planted link is never followed
    if os.path.isdir(path):
        raise BadInput(option, f"{path}: is a directory")
    why = probe_directory(parent)
    if why is not None:
        raise BadInput(option, f"{path}: cannot write ({why})")


def _save_elsewhere(result: Any) -> str | None:
    """Where the trace went when the file the user named refused it, so the run is not lost."""
    import tempfile

    try:
        fd, rescue = tempfile.mkstemp(prefix="pilot-sys-monitor-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(result.trace.model_dump_json(indent=1))
    except OSError:
        return None
    return rescue


def _write_outputs(result: Any, json_path: str | None, plot_path: str | None, err: Any) -> None:
    """The JSON first (it holds everything measured), then the picture; a picture that cannot
    be drawn does not cost the JSON."""
    if json_path:
        try:
            replace_file(json_path, result.trace.model_dump_json(indent=1))
        except OSError as exc:
            rescue = _save_elsewhere(result)
            kept = f"; the trace was saved to {rescue} instead" if rescue else ""
            raise BadInput(
                "--json", f"{json_path}: cannot write ({exc.strerror or exc}){kept}"
            ) from None
        click.echo(f"pilot-sys monitor: wrote {json_path}", file=err)
    if plot_path:
        from pilot_sys.monitor.plot import draw

        try:
            draw(
                result.trace,
                result.verdict,
                plot_path,
                graph=result.graph,
                data_path=result.data_path,
            )
        except (OSError, ValueError, RuntimeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            rescue = None if json_path else _save_elsewhere(result)
            kept = f"; the trace was saved to {rescue}" if rescue else ""
            raise BadInput("--plot", f"{plot_path}: cannot draw ({why}){kept}") from None
        click.echo(f"pilot-sys monitor: wrote {plot_path}", file=err)


def _how_it_ended(returncode: int) -> str:
    """'CMD exited with 1' or 'CMD was killed by SIGKILL (signal 9)': Popen reports a signal
    as -N."""
    if returncode >= 0:
        return f"CMD exited with {returncode}"
    import signal

    try:
        name = f"{signal.Signals(-returncode).name} (signal {-returncode})"
    except ValueError:
        name = f"signal {-returncode}"
    return f"CMD was killed by {name}"


def samples_to_judge(max_hot_fraction: float) -> int:
    """Samples a run needs before the share of its time above the threshold can be held
    against ``max_hot_fraction``: one of n sampled intervals is 1/n of the run, so n >= 1 /
    fraction intervals (n + 1 samples); a run of fewer is not judged on one hot sample."""
    intervals = math.ceil(1.0 / max_hot_fraction - 1e-9) if max_hot_fraction > 0 else 1
    return max(intervals, 2) + 1


def too_short_text(
    samples: int, rate: float, seconds: float, max_hot_fraction: float
) -> str | None:
    """``too short to judge: 4 samples at 10 Hz ...``, or None when the run can be judged."""
    needed = samples_to_judge(max_hot_fraction)
    if samples >= needed:
        return None
    faster = (needed - 1) / seconds if seconds > 0 else math.inf
    hint = "use a longer command"
    if faster <= 100:
        hint = f"use --rate {math.ceil(faster):d} or a longer command"
    share = units.percent(max_hot_fraction, None)
    return (
        f"too short to judge: {samples} samples at {rate:g} Hz, {needed} needed to judge a "
        f"share of {share} of the run; {hint}"
    )


def _become_subreaper() -> bool:
    """Orphans of CMD's tree (a daemon it forked) are re-parented to pilot-sys instead of init
    (``prctl(PR_SET_CHILD_SUBREAPER)``), so they can be found when CMD exits."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def still_running_note(trace: Any) -> str | None:
    """What CMD left running when it exited (a daemon), and whether the trace saw it: after it
    left CMD's process tree, its load is not in the workload's series."""
    import psutil

    me = psutil.Process()
    left: list[psutil.Process] = []
    for child in me.children(recursive=True):
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(child.pid, os.WNOHANG)  # an orphan that already ended: reap it
            else:
                left.append(child)
        except (psutil.Error, ChildProcessError):
            continue
    if not left:
        return None
    names = []
    for proc in left[:5]:
        try:
            names.append(f"pid {proc.pid} {proc.name()}")
        except psutil.Error:
            names.append(f"pid {proc.pid}")
    more = f" and {len(left) - 5} more" if len(left) > 5 else ""
    tree = [
        max((v for v in values if v is not None), default=0)
        for key, values in trace.series.items()
        if key.endswith("/processes")
    ]
    seen = max(tree, default=0)
    sampled = (
        f"while CMD ran its process tree held up to {seen:g} processes: they were "
        "sampled only while in it, not after CMD exited"
        if seen > 1
        else "they were not sampled: no sample saw more than CMD itself in its tree"
    )
    return (
        f"CMD exited, but {len(left)} process(es) it started still run "
        f"({', '.join(names)}{more}); {sampled}, so the trace covers CMD's own run only"
    )


def _fraction(option: str, value: float, *, allow_zero: bool = False) -> None:
    low_ok = value >= 0 if allow_zero else value > 0
    if not (low_ok and value <= 1):
        raise BadInput(
            option, f"must be a fraction in {'[0' if allow_zero else '(0'}, 1], got {value:g}"
        )


@click.command(
    "monitor",
    cls=OneLineErrors,
    context_settings={"ignore_unknown_options": False, "allow_interspersed_args": False},
    epilog="""\b
Examples:
  pilot-sys monitor -- fio --name=w --filename=/tmp/f --rw=write --bs=1M --size=1G --direct=1
  pilot-sys monitor --rate 20 --json run.json --plot run.png -- dd if=/dev/zero of=/tmp/x \
bs=512 count=1000000
  pilot-sys monitor --cut nic:eth0 --load my-rated-graph.json -- iperf3 -c 10.0.0.5 -t 10
  pilot-sys monitor --host srv=http://10.0.0.5:9100 -- iperf3 -c 10.0.0.5 -t 10
\b
Exit status: CMD's own (so scripts see whether the workload worked); with --strict, 3 when
CMD succeeded but a hidden bottleneck made the result invalid (a run of fewer sampled intervals
than 1 / --max-hot-fraction is not judged, and not called invalid); 2 for bad options; 130 after
Ctrl-C (what was measured is still written).
""",
)
@click.argument("cmd", nargs=-1, required=False, type=click.UNPROCESSED, metavar="-- CMD [ARGS]...")
@click.option(
    "--rate",
    type=FINITE_FLOAT,
    default=10.0,
    show_default=True,
    metavar="HZ",
    help="Samples per second (absolute deadlines, no drift). /proc CPU times tick at 100 Hz.",
)
@click.option(
    "--cut",
    default=None,
    metavar="COMPONENT",
    help="Component under test, e.g. block:vda, nic:eth0, cpu:host. Default: the end of "
    "the data path CMD's arguments resolve to.",
)
@click.option(
    "--threshold",
    type=FINITE_FLOAT,
    default=0.8,
    show_default=True,
    help="Utilization above which a component counts as saturated.",
)
@click.option(
    "--max-hot-fraction",
    type=FINITE_FLOAT,
    default=0.10,
    show_default=True,
    help="A component other than the CUT may be above the threshold for at most this "
    "share of the run before the result is called invalid.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Write the trace: sampled series, per-component statistics, the verdict "
    "(hidden_bottlenecks with component and evidence).",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Draw utilization over time and the data path coloured by peak utilization (PNG).",
)
@click.option(
    "--load",
    "loads",
    multiple=True,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Merge a user-designated component graph (JSON node-link or GraphML) whose "
    "limits fill in unknown ones; repeatable.",
)
@click.option(
    "--host",
    "host_specs",
    multiple=True,
    metavar="NAME=URL",
    help="Monitor a remote host too (repeatable): http://H:9100 is node_exporter, "
    "pcp://H:44322 is PCP's pmproxy, prom://P:9090?instance=H:9100 a Prometheus server "
    "that scrapes H. Hosts CMD names are placed on its data path.",
)
@prometheus_option()
@click.option(
    "--spill-dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Keep raw samples here as .npy chunks (bounded memory on long runs).",
)
@click.option("--strict", is_flag=True, help="Exit 3 when CMD succeeded but the result is invalid.")
@click.option(
    "--live/--no-live",
    default=None,
    help="Live utilization table (default: on when stdout is a terminal).",
)
def monitor(
    cmd: tuple[str, ...],
    rate: float,
    cut: str | None,
    threshold: float,
    max_hot_fraction: float,
    json_path: str | None,
    plot_path: str | None,
    loads: tuple[str, ...],
    spill_dir: str | None,
    strict: bool,
    live: bool | None,
    host_specs: tuple[str, ...] = (),
    prometheus_urls: tuple[str, ...] = (),
) -> None:
    """Run CMD while sampling the utilization of its data path; name hidden bottlenecks.

    CMD's file, device and host arguments are resolved to the data path (e.g. a file ->
    mount:/ -> block:vda -> PCIe -> memory -> CPU); the end of the path is the component under
    test (CUT). While CMD runs, every component's utilization (a fraction of its stated limit,
    per direction) is sampled. At the end the verdict says whether anything other than the CUT
    was saturated: if so, the result measured that component, not the CUT. A CUT whose limit is
    unknown is judged by what can be measured instead (a single-queue disk's busy time) and
    said so.
    """
    from pilot_sys.monitor.data_path import command_data_path
    from pilot_sys.monitor.session_monitor import NO_COMMAND, run_monitored

    if not cmd:
        raise BadInput("CMD", NO_COMMAND)
    if not (rate > 0) or rate > 10_000:
        raise BadInput("--rate", f"must be in (0, 10000] Hz, got {rate:g}")
    hosts, fleets = declared_hosts(host_specs, prometheus_urls)
    _fraction("--threshold", threshold)
    _fraction("--max-hot-fraction", max_hot_fraction, allow_zero=True)
    _writable("--json", json_path)
    _writable("--plot", plot_path)
    if spill_dir is not None:
        try:
            os.makedirs(spill_dir, exist_ok=True)
        except OSError as exc:
            raise BadInput(
                "--spill-dir", f"{spill_dir}: cannot create ({exc.strerror or exc})"
            ) from None
        if not os.access(spill_dir, os.W_OK):
            raise BadInput("--spill-dir", f"{spill_dir}: directory is not writable")

    graph = None
    if loads:
        from pilot_sys.topology.discover import discover
        from pilot_sys.topology.userspec import apply_user_graph, load_user_graph

        graph = discover("/")
        for path in loads:
            for note in apply_user_graph(graph, load_user_graph(path), path):
                click.echo(f"pilot-sys: {note}", err=True)
    found = command_data_path(cmd, hosts=hosts, graph=graph)
    graph, data_path, notes = found.graph, found.data_path, [*found.loud, *found.notes]
    notes += [fleet_note(fleet) for fleet in fleets]
    for line in found.loud:
        click.echo(f"pilot-sys monitor: WARNING: {line}", err=True)

    show_live = sys.stdout.isatty() if live is None else live
    kwargs: dict[str, Any] = {}
    view = None
    if show_live:
        from pilot_sys.cli.present.monitor import LiveView

        components = list(data_path.components) if data_path is not None else []
        view = LiveView(
            components,
            cut=cut or (data_path.cut if data_path is not None else None),
            threshold=threshold,
        )
        kwargs = {
            "on_tick": view.update,
            "on_output": lambda proc: view.relay(proc.stdout),
            "stdout": subprocess.PIPE,
            "stderr": subprocess.STDOUT,
        }
        view.__enter__()
    subreaper = _become_subreaper()
    try:
        result = run_monitored(
            list(cmd),
            rate_hz=rate,
            cut=cut,
            threshold=threshold,
            max_hot_fraction=max_hot_fraction,
            graph=graph,
            data_path=data_path,
            spill_dir=Path(spill_dir) if spill_dir else None,
            notes=notes,
            hosts=hosts,
            **kwargs,
        )
    finally:
        if view is not None:
            view.__exit__(None, None, None)

    trace, verdict = result.trace, result.verdict
    err = click.get_text_stream("stderr")
    leftover = still_running_note(trace) if subreaper else None
    if leftover is not None:
        trace.notes.append(leftover)
    cost = trace.monitor_cost or {}
    seconds = trace.timestamps[-1] if trace.timestamps else 0.0
    used = units.percent(cost.get("cpu_seconds_per_second", 0.0), 2)
    share = f"sampler used {used} of a core; " if seconds >= 1 else ""
    click.echo(
        f"pilot-sys monitor: {len(trace.timestamps)} samples at {rate:g} Hz "
        f"over {units.duration(seconds)}; "
        f"{share}{_how_it_ended(result.returncode)}",
        file=err,
    )
    from pilot_sys.cli.present.monitor import verdict_lines

    short = too_short_text(len(trace.timestamps), rate, seconds, max_hot_fraction)
    if short is not None:
        trace.notes.append(short)
    lines = verdict_lines(verdict, short)
    if short is not None and not lines[0].startswith(short):  # judged all the same
        click.echo(f"pilot-sys monitor: {short}", file=err)
    for line in lines:
        click.echo(f"pilot-sys monitor: {line}", file=err)
    if leftover is not None:
        click.echo(f"pilot-sys monitor: note: {leftover}", file=err)
    _write_outputs(result, json_path, plot_path, err)

    if result.interrupted:
        sys.exit(int(ExitCode.INTERRUPTED))
    code = result.returncode
    if code < 0:  # killed by a signal: the shell convention
        code = 128 - code
    if strict and code == 0 and verdict.judged_invalid:
        code = int(ExitCode.INVALID_RESULT)
    sys.exit(code)
