"""Hostile data, trace, result and graph files (issue 24 items 8, 10, 11): endless, huge,
binary, random. Every reader stops at its stated limit while reading and says so in one line
(exit 2), naming the file and the variable that raises the limit.

``/dev/zero`` is the endless input of the issue; a FIFO fed by a thread is an endless input
without NUL bytes (one long line, or endless lines)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile import cli_in_process, one_line_refusal

ENDLESS = "/dev/zero"


@pytest.fixture
def endless_text(tmp_path: Path) -> Iterator[tuple[Path, bytes]]:
    """A FIFO that a writer thread keeps filling with ``chunk`` until the reader goes away."""
    fifo = tmp_path / "endless"
    os.mkfifo(fifo)
    state: dict[str, bytes] = {"chunk": b"1" * 65536}
    stop = threading.Event()

    def feed() -> None:
        try:
            with open(fifo, "wb") as fh:
                while not stop.is_set():
                    fh.write(state["chunk"])
        except (BrokenPipeError, OSError):
            pass

    def start(chunk: bytes) -> None:
        state["chunk"] = chunk
        thread.start()

    thread = threading.Thread(target=feed, daemon=True)
    yield fifo, start  # type: ignore[misc]
    stop.set()
    try:  # unblock a writer still waiting for a reader
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    except OSError:
        pass
    thread.join(timeout=5)


COMMANDS = [
    ["analyze", "{f}"],
    ["steady", "{f}"],
    ["changepoints", "{f}"],
    ["phases", "{f}"],
    ["compare", "{f}", "{f}"],
    ["graph", "--no-discover", "--load", "{f}"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: a[0])
def test_an_endless_binary_input_is_refused_at_once(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, err = cli_in_process(capsys, *(a.format(f=ENDLESS) for a in argv))
    line = one_line_refusal(code, err)
    assert ENDLESS in line and "NUL byte at byte 0" in line, line


@pytest.mark.parametrize(
    ("argv", "chunk", "variable"),
    [
        (["analyze", "{f}"], b"1" * 65536, "PILOT_SYS_LIMIT_DATA_LINE"),
        (["analyze", "{f}"], b"1\n" * 32768, "PILOT_SYS_LIMIT_DATA_BYTES"),
        (["steady", "{f}"], b"1\n" * 32768, "PILOT_SYS_LIMIT_DATA_BYTES"),
        (["phases", "{f}"], b"[1," * 20000, "PILOT_SYS_LIMIT_TRACE_BYTES"),
        (["graph", "--no-discover", "--load", "{f}"], b" " * 65536, "PILOT_SYS_LIMIT_JSON_BYTES"),
    ],
    ids=["one-line", "endless-lines", "steady", "phases", "graph"],
)
def test_an_endless_text_input_stops_at_its_limit(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    endless_text: tuple[Path, object],
    argv: list[str],
    chunk: bytes,
    variable: str,
) -> None:
    fifo, start = endless_text
    monkeypatch.setenv(variable, "4M")  # the defaults hold too; a smaller one keeps this quick
    start(chunk)  # type: ignore[operator]
    code, err = cli_in_process(capsys, *(a.format(f=fifo) for a in argv))
    line = one_line_refusal(code, err)
    assert str(fifo) in line and variable in line and "4 MiB" in line, line


def test_a_limit_variable_must_be_a_count(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = tmp_path / "d.txt"
    data.write_text("1\n2\n3\n")
    monkeypatch.setenv("PILOT_SYS_LIMIT_DATA_BYTES", "lots")
    code, err = cli_in_process(capsys, "analyze", str(data))
    assert "PILOT_SYS_LIMIT_DATA_BYTES" in one_line_refusal(code, err)


@pytest.mark.parametrize("seed", range(6))
def test_random_bytes_as_a_result_is_bad_input_never_an_internal_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, seed: int
) -> None:
    import random

    data = random.Random(seed).randbytes(3000)
    for name, where in (("result.json", "d"), ("x.json", "x.json")):
        directory = tmp_path / str(seed)
        directory.mkdir(exist_ok=True)
        path = directory / name if where == "d" else tmp_path / f"{seed}-{where}"
        path.write_bytes(data)
        target = directory if where == "d" else path
        code, err = cli_in_process(capsys, "compare", str(target), str(target))
        one_line_refusal(code, err)


# -- item 10: a long chain loaded as a graph ---------------------------------------------------
def _chain(path: Path, n: int) -> Path:
    nodes = [{"id": f"cpu:n{i}", "kind": "cpu"} for i in range(n)]
    links = [{"source": f"cpu:n{i}", "target": f"cpu:n{i + 1}"} for i in range(n - 1)]
    path.write_text(json.dumps({"nodes": nodes, "links": links}))
    return path


def test_a_long_chain_is_drawn_flat_below_a_depth_and_cut_at_a_count(tmp_path: Path) -> None:
    from rich.console import Console

    from pilot_sys.topology.graph import ComponentGraph
    from pilot_sys.topology.tree import MAX_DEPTH, MAX_DRAWN, host_tree
    from pilot_sys.topology.userspec import apply_user_graph, load_user_graph

    n = MAX_DRAWN + 500
    graph = ComponentGraph()
    apply_user_graph(graph, load_user_graph(_chain(tmp_path / "c.json", n)), "c.json")
    console = Console(width=120, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(host_tree(graph))
    lines = console.export_text().splitlines()
    # each line's indentation is at most MAX_DEPTH levels (4 columns each): linear output
    assert max(len(line) - len(line.lstrip(" │├└─")) for line in lines) <= 4 * (MAX_DEPTH + 1)
    assert len(lines) == MAX_DRAWN + 1, len(lines)
    assert "↳ depth 100, under cpu:n98: cpu:n99" in "\n".join(lines)
    assert lines[-1].startswith("… and 500 more component(s), not drawn")


def test_a_graph_over_the_node_limit_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PILOT_SYS_LIMIT_GRAPH_NODES", "1000")
    path = _chain(tmp_path / "c.json", 1001)
    code, err = cli_in_process(capsys, "graph", "--no-discover", "--load", str(path))
    line = one_line_refusal(code, err)
    assert "1,001 nodes is over the limit of 1,000 nodes" in line and "GRAPH_NODES" in line
