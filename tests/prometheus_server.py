"""A real Prometheus server for the tests (Debian's ``prometheus``): its own config and storage
in a temporary directory, a free loopback port, a bounded wait until it answers, always stopped
(TERM, then KILL), also when a test fails. It dies with the test process (parent-death
signal)."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from netns import _die_with_parent

PROMETHEUS = "/usr/bin/prometheus"
READY_TIMEOUT_S = 30.0


def require_prometheus() -> None:
    if shutil.which(PROMETHEUS) is None:
        pytest.skip(f"{PROMETHEUS} is not installed (.ci/run installs it)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PrometheusServer:
    url: str
    process: subprocess.Popen[bytes]
    workdir: Path

    def query(self, expr: str) -> list[dict]:
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
        with urllib.request.urlopen(url, timeout=5) as answer:
            return list(json.load(answer)["data"]["result"])

    def wait_for_samples(self, expr: str, count: int, timeout: float = 30.0) -> None:
        """Until every series of ``expr`` (a range vector) has ``count`` samples, bounded."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.query(expr)
            if found and all(len(s.get("values", [])) >= count for s in found):
                return
            time.sleep(0.5)
        raise TimeoutError(f"{expr}: fewer than {count} samples after {timeout:g} s")

    def pause(self) -> None:
        """Stop answering (SIGSTOP: the socket still accepts, nothing replies)."""
        self.process.send_signal(19)

    def resume(self) -> None:
        self.process.send_signal(18)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.resume()
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def _ms(seconds: float) -> str:
    return f"{int(round(seconds * 1000))}ms"


def config(targets: Sequence[str], interval_s: float = 1.0, job: str = "node") -> str:
    static = json.dumps([{"targets": list(targets)}])
    return (
        f"global:\n  scrape_interval: {_ms(interval_s)}\n"
        f"  scrape_timeout: {_ms(interval_s * 0.8)}\n"
        f"scrape_configs:\n  - job_name: {job}\n    static_configs: {static}\n"
    )


@contextlib.contextmanager
def prometheus_server(
    targets: Sequence[str], interval_s: float = 1.0, config_text: str | None = None
) -> Iterator[PrometheusServer]:
    """Prometheus scraping ``targets`` (host:port) every ``interval_s`` seconds."""
    require_prometheus()
    workdir = Path(tempfile.mkdtemp(prefix="pilot-sys-prometheus-"))
    (workdir / "prometheus.yml").write_text(config_text or config(targets, interval_s))
    port = free_port()
    log = (workdir / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        preexec_fn=_die_with_parent,
    )
    server = PrometheusServer(f"http://127.0.0.1:{port}", process, workdir)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"prometheus exited: {(workdir / 'prometheus.log').read_text()[-2000:]}"
                )
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{server.url}/-/ready", timeout=1) as answer:
                    if answer.status == 200:
                        break
            if time.monotonic() > deadline:
                raise TimeoutError(f"prometheus not ready after {READY_TIMEOUT_S:g} s")
            time.sleep(0.2)
        yield server
    finally:
        server.stop()
        log.close()
        shutil.rmtree(workdir, ignore_errors=True)
