"""Run a command under the sampler and judge what it measured: the engine of ``pilot-sys monitor``,
reusable by anything that runs a workload once and wants the verdict.

Discovery and data-path resolution come from the topology layer; the process tree of the
command is followed by the process probe (``processes``) so that the verdict can tell the
workload's CPU use from everybody else's. Ctrl-C stops the command (it receives the SIGINT
too, being in the terminal's foreground process group; it is terminated if it lingers) and
everything measured up to then is still returned.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pilot_sys.errors import BadInput
from pilot_sys.monitor.bottleneck import (
    DEFAULT_MAX_HOT_FRACTION,
    DEFAULT_THRESHOLD,
    Verdict,
    assess,
)
from pilot_sys.monitor.sampler import Sampler
from pilot_sys.monitor.trace import MonitorTrace

NO_COMMAND = (
    "no command given; put it after --, "
    "e.g. pilot-sys monitor -- dd if=/dev/zero of=/tmp/x bs=1M count=100"
)
GRACE_SECONDS = 5.0  # after Ctrl-C, how long the command may take to exit before SIGTERM/SIGKILL


@dataclass
class MonitoredRun:
    """The outcome; unpacks as ``returncode, trace, verdict``."""

    returncode: int
    trace: MonitorTrace
    verdict: Verdict
    graph: Any = None
    data_path: Any = None
    interrupted: bool = False
    notes: list[str] = field(default_factory=list)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.returncode, self.trace, self.verdict))


def discover_path(
    argv: Sequence[str], *, graph: Any = None, root: str | Path = "/", hosts: Sequence[Any] = ()
) -> tuple[Any, Any, list[str]]:
    """The component graph (discovered unless given, with the declared ``hosts`` in it) and the
    data path of the command line ``argv``: ``monitor.data_path.find_data_path`` over what
    ``workload.command_line.data_paths`` reads from it, as ``run`` and ``graph -- CMD`` do."""
    try:
        from pilot_sys.monitor.data_path import command_data_path
    except ImportError as exc:  # the topology layer is optional for the sampler
        return (
            graph,
            None,
            [f"no topology: {exc}; limits other than CPU count and NIC speed are unknown"],
        )
    found = command_data_path(argv, hosts=hosts, graph=graph, root=root)
    return found.graph, found.data_path, [*found.loud, *found.notes]


def run_monitored(
    argv: Sequence[str],
    *,
    rate_hz: float = 10.0,
    cut: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    max_hot_fraction: float = DEFAULT_MAX_HOT_FRACTION,
    graph: Any = None,
    data_path: Any = None,
    spill_dir: Path | None = None,
    root: str | Path = "/",
    on_tick: Callable[[Sampler, Any], None] | None = None,
    tick_seconds: float = 0.5,
    stdout: int | IO[Any] | None = None,
    stderr: int | IO[Any] | None = None,
    on_output: Callable[[subprocess.Popen[bytes]], None] | None = None,
    notes: list[str] | None = None,
    hosts: Sequence[Any] = (),
) -> MonitoredRun:
    """Run ``argv`` while sampling at ``rate_hz``; return its exit code, the trace and the verdict.

    ``graph`` and ``data_path`` (``resolve``'s ``DataPath``) are discovered and resolved unless
    given. ``cut`` defaults to the data path's CUT. ``on_tick(sampler, data_path)`` is called
    every ``tick_seconds`` while the command runs (the live view). ``stdout``/``stderr`` are
    passed to ``subprocess.Popen`` (default: inherited, the command's output stays visible);
    ``on_output(proc)`` is called once after start to relay piped output. ``notes`` (e.g. from
    ``discover_path``) are kept in the trace and the verdict. ``hosts`` (declared
    ``RemoteHost``s) are sampled too, each by its own source (``monitor.remote.source``).
    """
    if not argv:
        raise BadInput("CMD", NO_COMMAND)
    if not argv[0].strip():
        raise BadInput("CMD", "the command name is empty (an unset shell variable?)")
    notes = list(notes or [])
    if graph is None or data_path is None:
        graph, data_path, found = discover_path(argv, graph=graph, root=root, hosts=hosts)
        notes += found
    if cut is None and data_path is not None:
        cut = data_path.cut
    if cut is not None and graph is not None and cut not in graph:
        known = ", ".join(sorted(c.id for c in graph.components())[:12])
        raise BadInput("--cut", f"no component {cut!r} on this host (components: {known}, ...)")
    # the plug-ins are opened first, so that sampling starts right after the command does; the
    # cgroups the command's processes enter are followed (``cgroup_follow``)
    # and the other processes are ranked (``culprits``)
    from pilot_sys.monitor.cgroup_follow import FollowedCgroupsPlugin
    from pilot_sys.monitor.culprits import HostProcessesPlugin
    from pilot_sys.plugin_loader import load_plugins

    plugins: list[Any] = [
        *load_plugins("dynamic"),
        FollowedCgroupsPlugin(rate_hz),
        HostProcessesPlugin(),
    ]
    if hosts:
        from pilot_sys.monitor.remote.source import host_plugins

        plugins += host_plugins(list(hosts), rate_hz)
    sampler = Sampler(graph, rate_hz=rate_hz, spill_dir=spill_dir, root=Path(root), plugins=plugins)
    try:
        proc = subprocess.Popen(list(argv), stdout=stdout, stderr=stderr)
    except OSError as exc:  # not found, not executable, not a program at all (ENOEXEC), ...
        sampler.close()
        if isinstance(exc, FileNotFoundError):
            problem = "command not found"
        elif isinstance(exc, PermissionError):
            problem = "not executable"
        else:
            problem = f"cannot start ({exc.strerror or exc})"
        raise BadInput("CMD", f"{problem}: {argv[0]}") from None
    started = False
    interrupted = False
    try:
        sampler.follow(proc.pid)
        sampler.start()
        started = True
        if on_output is not None:
            on_output(proc)
        while not _exited(proc, tick_seconds):
            if on_tick is not None:
                on_tick(sampler, data_path)
    except KeyboardInterrupt:
        interrupted = True
        notes.append(
            "interrupted by Ctrl-C: the command was stopped; the trace covers the run until then"
        )
        _stop(proc)
        if not started:
            raise  # nothing was measured yet
    except BaseException:
        _stop(proc, grace=0.0)
        raise
    trace = sampler.stop(command=list(argv), cut=cut)  # the closing sample still sees CMD's zombie
    if data_path is not None:
        trace.data_path = list(data_path.components)
    proc.wait()  # now reap it
    returncode = proc.returncode if proc.returncode is not None else -signal.SIGINT
    trace.notes += notes
    verdict = assess(
        trace,
        graph,
        cut,
        threshold=threshold,
        max_hot_fraction=max_hot_fraction,
        data_path=list(data_path.components)
        if data_path is not None and data_path.components
        else None,
    )
    trace.verdict = verdict.model_dump(mode="json")
    return MonitoredRun(returncode, trace, verdict, graph, data_path, interrupted, notes)


def _exited(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait up to ``timeout`` for the command to exit *without reaping it*: while it is a zombie
    its /proc counters (its children's included) are still readable for the closing sample."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        fd = None
    try:
        if fd is not None:
            select.select([fd], [], [], timeout)  # readable once the process has exited
        else:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                    break
                time.sleep(0.02)
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None
    except ChildProcessError:  # already reaped
        return True
    finally:
        if fd is not None:
            os.close(fd)


def _stop(proc: subprocess.Popen[bytes], grace: float = 1.0) -> None:
    """From a terminal the command got the SIGINT too: give it a moment to exit on its own, then
    pass the SIGINT on (a lone ``kill -INT`` reached only us), then insist."""
    steps = (
        (None, grace),
        (signal.SIGINT, GRACE_SECONDS),
        (signal.SIGTERM, 2.0),
        (signal.SIGKILL, 2.0),
    )
    for sig, wait in steps:
        if sig is not None and proc.poll() is None:
            proc.send_signal(sig)
        deadline = time.monotonic() + wait
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                proc.wait(timeout=0.1)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                continue
        if proc.poll() is not None:
            return
