"""Shared test helpers."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def run_cli(*args: str, input: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the real console entry point in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "pilot_sys", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn`` for children a test interrupts with SIGINT: a test run started in the
    background (``pytest &`` from a script) inherits SIGINT *ignored*, and so would the child,
    which would then never see the Ctrl-C the test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (.ci/run installs it)")
    return path


# The captured machines of tests/fixtures/sys, discovered once per test session.
SYS_FIXTURES = FIXTURES / "sys"


@pytest.fixture(scope="session")
def nvme():  # NVMe + LVM
    from pilot_sys.topology.discover import discover

    return discover(SYS_FIXTURES / "nvme-lvm")


@pytest.fixture(scope="session")
def md():  # md RAID + a loop device
    from pilot_sys.topology.discover import discover

    return discover(SYS_FIXTURES / "md-raid-loop")


@pytest.fixture(scope="session")
def nfs():  # an NFS mount over a bonded, VLAN-tagged NIC
    from pilot_sys.topology.discover import discover

    return discover(SYS_FIXTURES / "nfs-bond")
