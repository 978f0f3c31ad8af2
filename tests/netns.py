"""Test hosts as network namespaces: a namespace with a veth pair to the root namespace, real
daemons bound to its own address, and nothing left behind, also when a test fails or a run
crashes.

Each host gets a free /30 in 10.203.0.0/16 (the root side takes ``.1``, the host ``.2``; the
host's end of the veth is called ``eth0`` inside its namespace, as on a real server). Names carry
the pid of the test process (``pst-<pid>-<n>``), so parallel runs never collide and a later run
can tell a crashed run's leftovers (its pid is gone) from a live run's hosts and remove them.

Every daemon runs in the foreground as a child of the test process, dies with it (parent-death
signal), is polled for readiness against a deadline, and is stopped (TERM, then KILL) when the
host is closed. Traffic goes only to addresses inside these namespaces.

PCP needs no system service: ``pmcd`` runs with a name space merged from the installed
``root_linux`` and ``root_pmcd`` files, its own config with the ``linux`` and ``pmcd`` PMDAs as
DSOs, and its run, log and temp directories under the host's work directory (``PCP_RUN_DIR`` and
friends); ``pmproxy`` runs with REST over HTTP only (no Redis/Valkey, no discovery, no search).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PREFIX = "pst"
POOL = ipaddress.ip_network("10.203.0.0/16")
LOCK_FILE = Path(tempfile.gettempdir()) / "pilot-sys-netns.lock"
WORK_ROOT = Path(tempfile.gettempdir())
COMMAND_TIMEOUT = 10.0  # seconds for one `ip`/`tc` command
READY_TIMEOUT = 15.0  # seconds for a daemon to answer

NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
PMCD = "/usr/lib/pcp/bin/pmcd"
PMPROXY = "/usr/lib/pcp/bin/pmproxy"
PMNSMERGE = "/usr/lib/pcp/bin/pmnsmerge"
PCP_PMNS = Path("/var/lib/pcp/pmns")
PCP_PMDAS = Path("/var/lib/pcp/pmdas")

NODE_EXPORTER_PORT = 9100
PMPROXY_PORT = 44322
IPERF3_PORT = 5201
FIO_PORT = 8765

_PR_SET_PDEATHSIG = 1
_counter = 0


class NetnsError(RuntimeError):
    """A namespace or daemon could not be set up; the message names the command and its output."""


def _die_with_parent() -> None:
    """``preexec_fn``: the daemon gets SIGKILL when the test process dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the terminal stops the test, not us


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise NetnsError(f"{' '.join(argv)}: no answer in {COMMAND_TIMEOUT:g} s") from exc
    if check and done.returncode != 0:
        raise NetnsError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")
    return done


def unavailable() -> str | None:
    """Why namespace hosts cannot be made here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (`ip`) is not installed"
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner_pid(name: str) -> int | None:
    parts = name.split("-")
    if len(parts) >= 3 and parts[0] == PREFIX and parts[1].isdigit():
        return int(parts[1])
    return None


def _namespaces() -> list[str]:
    done = _run("ip", "netns", "list", check=False)
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def _remove_namespace(netns: str) -> None:
    """Kill whatever still runs inside, then delete it (its veth pair goes with it)."""
    pids = _run("ip", "netns", "pids", netns, check=False).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if p.isdigit() and _pid_alive(int(p)) and _zombie(int(p)) is False]
        time.sleep(0.05)
    _run("ip", "netns", "del", netns, check=False)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _root_veths() -> list[str]:
    names = []
    for line in _run("ip", "-o", "link", "show", check=False).stdout.splitlines():
        fields = line.split(":")
        if len(fields) > 1:
            name = fields[1].strip().split("@")[0]
            if name.startswith(PREFIX) and name[len(PREFIX) :].split("h")[0].isdigit():
                names.append(name)
    return names


def _remove_veth(name: str) -> None:
    """Deleting the namespace frees its veth pair only later (the kernel defers namespace
    teardown): delete the root end at once, which takes its peer with it."""
    _run("ip", "link", "del", name, check=False)


def cleanup_leftovers() -> list[str]:
    """Remove namespaces, veths and work directories of test runs whose process is gone."""
    removed = []
    for netns in _namespaces():
        pid = _owner_pid(netns)
        if pid is not None and not _pid_alive(pid):
            _remove_namespace(netns)
            removed.append(netns)
    for name in _root_veths():
        pid = int(name[len(PREFIX) :].split("h")[0])
        if not _pid_alive(pid):
            _remove_veth(name)
            removed.append(name)
    for path in WORK_ROOT.glob(f"{PREFIX}-*"):
        pid = _owner_pid(path.name)
        if pid is not None and not _pid_alive(pid) and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(str(path))
    return removed


def _used_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network the root namespace has an address or a route in."""
    used = []
    for argv in (("ip", "-4", "-o", "addr", "show"), ("ip", "-4", "route", "show", "table", "all")):
        for line in _run(*argv, check=False).stdout.splitlines():
            for word in line.split():
                with contextlib.suppress(ValueError):
                    if "/" in word or word[:1].isdigit():
                        used.append(ipaddress.ip_network(word, strict=False))
    return [n for n in used if isinstance(n, ipaddress.IPv4Network)]


def _free_subnet() -> ipaddress.IPv4Network:
    used = _used_networks()
    for subnet in POOL.subnets(new_prefix=30):
        if not any(subnet.overlaps(other) for other in used):
            return subnet
    raise NetnsError(f"no free /30 left in {POOL}")


@dataclass
class Daemon:
    """A process running in a host's namespace, with its output in ``log``."""

    name: str
    argv: list[str]
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 5.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)


@dataclass
class NetnsHost:
    """A test host: namespace ``netns`` reached from the root namespace at ``address``."""

    name: str
    netns: str
    root_if: str  # the veth end in the root namespace
    address: str  # the host's address (its eth0)
    peer: str  # the root namespace's address on the same /30
    workdir: Path
    daemons: list[Daemon] = field(default_factory=list)

    # -- running things inside --------------------------------------------------------------
    def argv(self, *command: str) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *command]

    def run(
        self, *command: str, timeout: float = COMMAND_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*command), capture_output=True, text=True, timeout=timeout, check=False
        )

    def start(
        self,
        name: str,
        command: list[str],
        ready: Callable[[], bool],
        *,
        env: dict[str, str] | None = None,
        timeout: float = READY_TIMEOUT,
    ) -> Daemon:
        """Start ``command`` in the namespace and wait until ``ready()`` holds; a daemon that
        exits or does not get ready by the deadline is stopped and reported with its log."""
        log = self.workdir / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                self.argv(*command),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                preexec_fn=_die_with_parent,
            )
        daemon = Daemon(name, command, process, log)
        self.daemons.append(daemon)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise NetnsError(
                    f"{name} exited with {process.returncode}: {' '.join(command)}\n{daemon.tail()}"
                )
            with contextlib.suppress(OSError, ValueError):
                if ready():
                    return daemon
            time.sleep(0.05)
        daemon.stop()
        raise NetnsError(
            f"{name} not ready after {timeout:g} s: {' '.join(command)}\n{daemon.tail()}"
        )

    def listening(self, port: int) -> Callable[[], bool]:
        def probe() -> bool:
            with socket.create_connection((self.address, port), timeout=0.5):
                return True

        return probe

    def answers(self, url: str) -> Callable[[], bool]:
        def probe() -> bool:
            with urllib.request.urlopen(url, timeout=1.0) as response:
                return bool(response.status == 200)

        return probe

    # -- the daemons the remote-host tests use ----------------------------------------------
    def node_exporter(self, port: int = NODE_EXPORTER_PORT, *extra: str) -> str:
        """node_exporter on the host's address; returns its base URL."""
        base = f"http://{self.address}:{port}"
        self.start(
            "node_exporter",
            [
                NODE_EXPORTER,
                f"--web.listen-address={self.address}:{port}",
                "--log.level=warn",
                *extra,
            ],
            self.answers(f"{base}/metrics?collect[]=time"),
        )
        return base

    def pcp(self, port: int = PMPROXY_PORT) -> str:
        """pmcd (loopback of the namespace only) and pmproxy's REST API on the host's address;
        returns pmproxy's base URL."""
        pcp = self.workdir / "pcp"
        for sub in ("run", "log", "tmp"):
            (pcp / sub).mkdir(parents=True, exist_ok=True)
        pmns = pcp / "root"
        _run(PMNSMERGE, str(PCP_PMNS / "root_linux"), str(PCP_PMNS / "root_pmcd"), str(pmns))
        (pcp / "pmcd.conf").write_text(
            f"pmcd\t2\tdso\tpmcd_init\t{PCP_PMDAS}/pmcd/pmda_pmcd.so\n"
            f"linux\t60\tdso\tlinux_init\t{PCP_PMDAS}/linux/pmda_linux.so\n"
            '\n[access]\nallow "local:*" : all;\ndisallow * : all;\n'
        )
        (pcp / "pmproxy.conf").write_text(
            "[pmproxy]\npcp.enabled = true\nhttp.enabled = true\nredis.enabled = false\n"
            "secure.enabled = false\n[redis]\nenabled = false\n[discover]\nenabled = false\n"
            "[pmsearch]\nenabled = false\n[pmseries]\nenabled = false\n"
        )
        env = {
            **os.environ,
            "PCP_RUN_DIR": str(pcp / "run"),
            "PCP_LOG_DIR": str(pcp / "log"),
            "PCP_TMP_DIR": str(pcp / "tmp"),
        }
        self.start(
            "pmcd",
            [
                PMCD,
                "-f",
                "-A",
                "-U",
                "root",
                "-n",
                str(pmns),
                "-c",
                str(pcp / "pmcd.conf"),
                "-i",
                "127.0.0.1",
                "-s",
                str(pcp / "run" / "pmcd.socket"),
                "-l",
                str(pcp / "log" / "pmcd.log"),
                "-x",
                str(pcp / "log" / "pmcd.fatal"),
            ],
            lambda: (pcp / "run" / "pmcd.socket").exists(),
            env=env,
        )
        base = f"http://{self.address}:{port}"
        self.start(
            "pmproxy",
            [
                PMPROXY,
                "-f",
                "-A",
                "-U",
                "root",
                "-c",
                str(pcp / "pmproxy.conf"),
                "-i",
                self.address,
                "-p",
                str(port),
                "-s",
                str(pcp / "run" / "pmproxy.socket"),
                "-l",
                str(pcp / "log" / "pmproxy.log"),
                "-x",
                str(pcp / "log" / "pmproxy.fatal"),
            ],
            self._pmproxy_ready(base),
            env=env,
        )
        return base

    @staticmethod
    def _pmproxy_ready(base: str) -> Callable[[], bool]:
        def probe() -> bool:  # pmproxy answers before pmcd has its PMDAs: fetch a real value
            with urllib.request.urlopen(
                f"{base}/pmapi/fetch?names=hinv.ncpu", timeout=1.0
            ) as response:
                return bool(json.load(response).get("values"))

        return probe

    def iperf3_server(self, port: int = IPERF3_PORT) -> int:
        self.start(
            "iperf3", ["iperf3", "-s", "-B", self.address, "-p", str(port)], self.listening(port)
        )
        return port

    def fio_server(self, port: int = FIO_PORT) -> str:
        """``fio --server`` on the host's address; returns the ``--client=`` value."""
        self.start("fio", ["fio", f"--server=ip:{self.address},{port}"], self.listening(port))
        return f"{self.address},{port}"

    def shape(self, rate: str, burst: str = "256kb", latency: str = "50ms") -> None:
        """A tbf qdisc on the root side's veth: traffic *into* the host is limited to ``rate``."""
        _run(
            "tc",
            "qdisc",
            "replace",
            "dev",
            self.root_if,
            "root",
            "tbf",
            "rate",
            rate,
            "burst",
            burst,
            "latency",
            latency,
        )

    def unshape(self) -> None:
        """Remove the shaping ``shape`` set (the veth's default qdisc comes back)."""
        _run("tc", "qdisc", "del", "dev", self.root_if, "root", check=False)

    def stop(self, name: str) -> None:
        """Stop the daemons called ``name`` and forget them (``start`` may start one again)."""
        for daemon in self.daemons:
            if daemon.name == name:
                daemon.stop()
        self.daemons = [d for d in self.daemons if d.name != name]

    def close(self) -> None:
        for daemon in reversed(self.daemons):
            with contextlib.suppress(Exception):
                daemon.stop()
        _remove_veth(self.root_if)
        _remove_namespace(self.netns)
        shutil.rmtree(self.workdir, ignore_errors=True)


@contextlib.contextmanager
def netns_host(name: str = "srv") -> Iterator[NetnsHost]:
    """A fresh namespace host, removed on exit whatever happened."""
    global _counter
    why = unavailable()
    if why:
        raise NetnsError(why)
    cleanup_leftovers()
    _counter += 1
    tag = f"{PREFIX}-{os.getpid()}-{_counter}"
    root_if = f"{PREFIX}{os.getpid()}h{_counter}"[:15]
    workdir = Path(tempfile.mkdtemp(prefix=f"{tag}-", dir=WORK_ROOT))
    host: NetnsHost | None = None
    try:
        # Allocating the /30 and putting an address on it happen under one lock, so two test runs
        # starting at once cannot take the same subnet.
        with LOCK_FILE.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            subnet = _free_subnet()
            peer, address = (str(a) for a in list(subnet.hosts())[:2])
            _run("ip", "netns", "add", tag)
            host = NetnsHost(name, tag, root_if, address, peer, workdir)
            _run("ip", "link", "add", root_if, "type", "veth", "peer", "name", "eth0", "netns", tag)
            _run("ip", "addr", "add", f"{peer}/30", "dev", root_if)
        _run("ip", "link", "set", root_if, "up")
        _run("ip", "-n", tag, "addr", "add", f"{address}/30", "dev", "eth0")
        _run("ip", "-n", tag, "link", "set", "eth0", "up")
        _run("ip", "-n", tag, "link", "set", "lo", "up")
        yield host
    finally:
        if host is not None:
            host.close()
        else:
            _remove_veth(root_if)
            _remove_namespace(tag)
            shutil.rmtree(workdir, ignore_errors=True)


def require_daemons(*paths: str) -> None:
    """Skip when namespaces cannot be made or a daemon is not installed (.ci/run installs them)."""
    why = unavailable()
    if why:
        pytest.skip(why)
    for path in paths:
        if shutil.which(path) is None and not os.access(path, os.X_OK):
            pytest.skip(f"{path} is not installed (.ci/run installs it)")


def host_fixture(name: str = "srv") -> Iterator[NetnsHost]:
    """The body of a test module's host fixture (``yield from host_fixture("srv")``): skips
    where namespaces cannot be made, removes the host after the test whatever happened."""
    require_daemons()
    with netns_host(name) as host:
        yield host
