"""Nothing a round starts outlives it, not even when pilot-sys itself is killed.

Why: the round's command runs in its own process group, which pilot-sys ends after the round
(process.py). Two ways around that remain. ``kill -9`` of pilot-sys runs none of its code, so
the group would go on running; and a descendant that calls ``setsid`` leaves the group. Both
are closed with a mark and a guard:

* the mark: every round's environment holds ``PILOT_SYS_ROUND=<token>``, a value drawn for
  that round, which every descendant inherits (whatever group or session it moves to);
* the guard: a small ``sh`` started before the command (so that its start is not part of the
  round's time), in a session of its own, reading a pipe only pilot-sys holds: first the
  round's process group, then, when the round ends, ``done``, and the guard exits. When
  pilot-sys dies, however, the kernel closes the pipe: the guard then kills the
  round's process group and every process whose environment holds the round's mark.

After a round, processes bearing its mark that are still running outside its group escaped
it (``setsid``, a double fork): they are ended and the round says so. Limits: a process that
clears or replaces its environment loses the mark; another user's processes (``sudo``) cannot
be read or signalled without privileges; the scan after a round reads only the processes
started since the round began (a pid freed and reused within the round is not read); the guard
costs one ``sh`` per round, started before the round's clock.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess

import psutil

MARK = "PILOT_SYS_ROUND"
_GUARD = r"""
read -r pgid
[ "$pgid" = done ] && exit 0
read -r line
[ "$line" = done ] && exit 0
case "$pgid" in ''|*[!0-9]*) ;; *) kill -KILL -- "-$pgid" 2>/dev/null ;; esac
for f in /proc/[0-9]*/environ; do
  grep -qzx "$1=$2" "$f" 2>/dev/null || continue
  p=${f#/proc/}; p=${p%/environ}
  [ "$p" = "$$" ] || kill -KILL "$p" 2>/dev/null
done
"""


#: pids of the guards now running: children of the round's thread that are not the workload's
#: (the round's process probe leaves them out)
GUARD_PIDS: set[int] = set()


def new_mark() -> tuple[str, str]:
    """(variable, value) to put in one round's environment."""
    return MARK, secrets.token_hex(8)


class Guard:
    """The watcher of one round's process group (see the module's docstring)."""

    def __init__(self, mark: str) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        try:
            self.proc = subprocess.Popen(
                ["sh", "-c", _GUARD, "pilot-sys-guard", MARK, mark],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},  # without the mark
                start_new_session=True,  # a signal to pilot-sys's group does not reach it
                close_fds=True,
            )
        except OSError:  # no sh: the round still runs, only unguarded against kill -9
            self.proc = None
        if self.proc is not None:
            GUARD_PIDS.add(self.proc.pid)

    def watch(self, pgid: int) -> None:
        """The round's process group, which the guard kills if pilot-sys dies."""
        self._send(f"{pgid}\n".encode())

    def _send(self, line: bytes) -> None:
        if self.proc is None or self.proc.stdin is None:
            return
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
        except OSError:
            pass

    def release(self) -> None:
        """The round ended normally: the guard exits without killing anything."""
        if self.proc is None:
            return
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(b"done\n")
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        GUARD_PIDS.discard(self.proc.pid)
        self.proc = None


def running_pids() -> set[int]:
    """The pids running now: processes already there before a round cannot be its
    descendants, so the scan after it reads only the newer ones' environments."""
    return {int(name) for name in os.listdir("/proc") if name.isdigit()}


def marked(mark: str, before: set[int] | frozenset[int] = frozenset()) -> list[psutil.Process]:
    """Running processes (zombies aside) whose environment holds the round's mark, among
    those not in ``before``."""
    wanted = f"{MARK}={mark}".encode()
    found = []
    for pid in running_pids() - before:
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if wanted not in fh.read().split(b"\0"):
                    continue
            proc = psutil.Process(pid)
            if proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (OSError, psutil.Error):
            continue
    return found


def end_escaped(mark: str, before: set[int] | frozenset[int] = frozenset()) -> list[str]:
    """End the processes bearing the round's mark that are still running (those outside its
    process group once the group was ended); ``"pid name"`` of each. ``before``: pids that
    were running before the round started (not read)."""
    escaped = [p for p in marked(mark, before) if p.pid != os.getpid()]
    told = []
    for proc in escaped:
        try:
            told.append(f"{proc.pid} {proc.name()}")
            proc.send_signal(signal.SIGKILL)
        except psutil.Error:
            continue
    psutil.wait_procs(escaped, timeout=2)
    return told
