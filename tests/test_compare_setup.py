"""compare names what differs between two set-ups (issue 22, item 6): the work amounts and
their unit, the targets, the host, kernel and governor, the tool's version, as pyperf's
compare_to checks its metadata; in the text table and in the --json object."""

from __future__ import annotations

import json
from pathlib import Path

from pilot_sys.cli.present.comparison import saved_lines
from pilot_sys.report.rebuild import rebuild
from pilot_sys.session.compare_launch import compare_directories
from pilot_sys.session.result import load_result, save_result
from pilot_sys.session.setup_diff import setup_differences, tool_version
from tests.session_dirs import make_session

CONTEXT = {
    "hostname": "h1",
    "cpu_model": "Xeon",
    "cpus_online": 2,
    "memory_bytes": 2**32,
    "kernel": "6.8.0-1",
    "os": "Ubuntu 24.04",
    "governor": "performance",
    "pilot_sys_version": "0.9",
    "python": "3.12.3",
}


def _saved(root: Path, fio: str, **changes: object) -> Path:
    rebuild(make_session(root), plots=False)
    (root / "rounds" / "0001" / "stdout.txt").write_text(
        f'{{\n  "fio version" : "{fio}",\n  "jobs": []\n}}\n', encoding="utf-8"
    )
    result = load_result(root)
    result.context = {**CONTEXT, **changes.pop("context", {})}  # type: ignore[dict-item]
    result.config.update(changes)
    save_result(result, root)
    return root


def test_the_same_set_up_has_no_difference(tmp_path: Path) -> None:
    a = _saved(tmp_path / "a", "fio-3.36")
    b = _saved(tmp_path / "b", "fio-3.36")
    saved = compare_directories([a, b], None, 0.01)
    assert saved.setup_differences == [] and saved.table.setup_differs == []
    assert not any("set-up" in line for line in saved_lines(saved))


def test_different_set_ups_are_named_in_the_table_and_the_json(tmp_path: Path) -> None:
    a = _saved(tmp_path / "a", "fio-3.36")
    b = _saved(
        tmp_path / "b",
        "fio-3.28",
        work_min=1,
        work_max=276,
        work_unit="work",
        ci_perc=0.05,
        context={"kernel": "6.1.0-13", "governor": "powersave"},
    )
    saved = compare_directories([a, b], None, 0.01)
    found = {d.what: (d.a, d.b) for d in saved.setup_differences}
    assert found == {
        "work amounts": ("-w 16 MiB .. 1024 MiB", "-w 1 .. 276"),
        "work unit": ("MiB", "none given"),
        "targets": ("CI ± 5 % at 95 %", "CI ± 2.5 % at 95 %"),
        "kernel": ("6.8.0-1", "6.1.0-13"),
        "CPU frequency governor": ("performance", "powersave"),
        "tool version": ("fio-3.36", "fio-3.28"),
    }
    lines = saved_lines(saved)
    assert any(
        line.startswith("warning: the set-ups differ, so a difference below may be the set-up's")
        and "kernel (A: 6.8.0-1; B: 6.1.0-13)" in line
        for line in lines
    )
    assert (
        "  set-ups differ in work amounts, work unit, targets, kernel, CPU frequency governor, "
        "tool version: a difference above may be the set-up's, not the system's"
    ) in lines
    raw = json.loads(saved.model_dump_json())
    assert raw["table"]["setup_differs"] == list(found)
    assert raw["setup_differences"][0] == {
        "what": "work amounts",
        "a": "-w 16 MiB .. 1024 MiB",
        "b": "-w 1 .. 276",
    }


def test_a_value_neither_side_recorded_is_no_difference(tmp_path: Path) -> None:
    a = load_result(rebuild(make_session(tmp_path / "a"), plots=False).result_dir)
    b = a.model_copy(update={"context": {"kernel": "6.1"}})
    assert [d.what for d in setup_differences(a, b)] == ["kernel"]
    assert setup_differences(a, b)[0].a == "not recorded"
    assert tool_version(tmp_path / "a") is None  # the fixture's rounds hold no tool output
