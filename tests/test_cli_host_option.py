"""`--host NAME=URL` on every command that monitors: graph, monitor, run, compare --run, tune.
A bad declaration is one line naming the option and the problem, exit 2, before anything runs."""

from __future__ import annotations

import pytest

from conftest import run_cli

pytestmark = pytest.mark.live  # runs the real entry point in a subprocess

COMMANDS = {
    "graph": ["graph", "--host", "{spec}", "--", "true"],
    "monitor": ["monitor", "--host", "{spec}", "--", "true"],
    "run": ["run", "--host", "{spec}", "--", "true"],
    "compare": ["compare", "--run", "a=true", "--run", "b=true", "--host", "{spec}"],
    "tune": ["tune", "--host", "{spec}", "--", "true"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_bad_host_is_one_line_and_exit_2(command: str) -> None:
    args = [a.format(spec="nas1=ftp://nas1") for a in COMMANDS[command]]
    done = run_cli(*args, timeout=60)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--host nas1=ftp://nas1" in lines[0] and "scheme" in lines[0]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_names_the_option(command: str) -> None:
    done = run_cli(command, "--help", timeout=60)
    assert done.returncode == 0 and "--host NAME=URL" in done.stdout


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_bad_host_with_a_password_is_refused_without_showing_it(command: str) -> None:
    spec = "nas1=ftp://admin:s3cr3t@nas1"
    done = run_cli(*[a.format(spec=spec) for a in COMMANDS[command]], timeout=60)
    assert done.returncode == 2, done.stderr
    assert "s3cr3t" not in done.stderr + done.stdout
    assert "--host nas1=ftp://admin:***@nas1" in done.stderr


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_bad_prometheus_selector_is_one_line_without_the_password(command: str) -> None:
    url = "http://admin:s3cr3t@prom:9090?job=storage&instance=~(unclosed"
    args = [url if a == "{spec}" else a for a in COMMANDS[command]]
    args[args.index("--host")] = "--prometheus"
    done = run_cli(*args, timeout=60)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("pilot-sys: error: --prometheus http://admin:***@prom:9090?job=storage")
    assert "not a regular expression" in line and "s3cr3t" not in done.stderr + done.stdout


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_names_the_prometheus_option(command: str) -> None:
    done = run_cli(command, "--help", timeout=60)
    assert done.returncode == 0 and "--prometheus URL" in done.stdout
