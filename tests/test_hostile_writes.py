"""Hostile places to write and hostile text to show (issue 24 items 1 and 3).

Item 1, the class: a file created where others can write (the built-in workload's --dir, an
existing -o, the path of --json or --plot) is new (O_EXCL, a random name) or written beside and
renamed over its name, so a symbolic link planted there is never written through. Item 3:
untrusted text in report.md (workload names, commands, output) is shown, never rendered:
checked with a real CommonMark renderer (markdown-it, as viewers use) on any text hypothesis
finds, not on a list of known attacks."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pilot_sys.session.journal import JOURNAL, Journal
from tests.hostile import cli_in_process
from tests.session_dirs import make_session

VICTIM_TEXT = b"the victim's own bytes\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim"
    path.write_bytes(VICTIM_TEXT)
    return path


def test_a_named_output_replaces_a_planted_link_not_its_target(
    tmp_path: Path, victim: Path
) -> None:
    from pilot_sys.safefile import replace_file

    out = tmp_path / "out.json"
    out.symlink_to(victim)
    replace_file(out, "{}")
    assert victim.read_bytes() == VICTIM_TEXT
    assert not out.is_symlink() and out.read_text() == "{}"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_new_file_is_never_one_planted_under_its_name(tmp_path: Path, victim: Path) -> None:
    planted = [tmp_path / f".pilot-sys-seqio-{os.getpid()}.{s}" for s in ("probe", "tmp")]
    for path in planted:
        path.symlink_to(victim)
    from pilot_sys.safefile import create_new

    fd, made = create_new(tmp_path, f".pilot-sys-seqio-{os.getpid()}.", ".probe")
    os.write(fd, b"x" * 4096)
    os.close(fd)
    assert made not in planted and not made.is_symlink()
    assert victim.read_bytes() == VICTIM_TEXT


def test_the_builtin_workloads_probe_ignores_planted_links(tmp_path: Path, victim: Path) -> None:
    from pilot_sys.workload.builtin import FILE_PREFIX, supports_direct_io

    for suffix in ("probe", "tmp"):
        (tmp_path / f"{FILE_PREFIX}{os.getpid()}.{suffix}").symlink_to(victim)
    supports_direct_io(tmp_path)
    assert victim.read_bytes() == VICTIM_TEXT


@pytest.mark.parametrize("name", [".lock", JOURNAL])
def test_a_result_directory_file_planted_as_a_link_is_not_written_through(
    tmp_path: Path, victim: Path, name: str
) -> None:
    root = make_session(tmp_path / "s", rounds=3)
    (root / name).unlink(missing_ok=True)
    (root / name).symlink_to(victim)
    with pytest.raises(Exception):  # noqa: B017 - refused as bad input or unwritable
        Journal.open(root, repair=True, set_aside=True).unlock()
    assert victim.read_bytes() == VICTIM_TEXT


def test_graph_dot_and_graphml_outputs_replace_links(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, victim: Path
) -> None:
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps({"nodes": [{"id": "cpu:a", "kind": "cpu"}], "links": []}))
    for option, name in (("--dot", "g.dot"), ("--graphml", "g.graphml")):
        out = tmp_path / name
        out.symlink_to(victim)
        code, err = cli_in_process(
            capsys, "graph", "--no-discover", "--load", str(graph), option, str(out)
        )
        assert code == 0, err
        assert victim.read_bytes() == VICTIM_TEXT and not out.is_symlink()


# -- item 3 ------------------------------------------------------------------------------------
def _html_tokens(markdown: str) -> list[str]:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    found = []
    stack = list(md.parse(markdown))
    while stack:
        token = stack.pop()
        if token.type in ("html_inline", "html_block"):
            found.append(token.content)
        stack.extend(token.children or [])
    return found


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_session(tmp_path_factory.mktemp("md") / "s", rounds=4)


def _report_with(pristine: Path, root: Path, text: str) -> str:
    """report.md of the session with ``text`` as its workload's name, in its command and as a
    round's failure and warning (the workload's output)."""
    from pilot_sys.report.rebuild import rebuild_noting

    shutil.copytree(pristine, root)
    manifest = json.loads((root / "session.json").read_text())
    manifest["workloads"][0]["name"] = text
    manifest["workloads"][0]["argv"] = ["sh", "-c", text]
    manifest["context"]["command_line"] = ["pilot-sys", "run", "--", "sh", "-c", text]
    (root / "session.json").write_text(json.dumps(manifest))
    lines = []
    for i, line in enumerate((root / JOURNAL).read_text().splitlines()):
        record = json.loads(line)
        record["workload"] = text
        record["warnings"] = [f"the workload said: {text}"]
        if i == 3:
            record.update(failed=True, failure=f"stdout.txt:1: {text}")
        lines.append(json.dumps(record))
    (root / JOURNAL).write_text("\n".join(lines) + "\n")
    rebuild_noting(root, plots=False, html=False)
    return (root / "report.md").read_text()


ATTACKS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "`<script>x</script>`",
    "a ` b\n` <script>x</script> `",
    "``<b>`` <i>x</i>",
    "<!-- c --> <?php ?> <!DOCTYPE x>",
    "x\n\n<div>block</div>",
    "| <a href=javascript:alert(1)>x</a> |",
]


@pytest.mark.parametrize("text", ATTACKS)
def test_untrusted_text_in_report_md_is_never_html(
    pristine: Path, tmp_path: Path, text: str
) -> None:
    report = _report_with(pristine, tmp_path / "s", text)
    assert _html_tokens(report) == []
    assert "alert" not in report or "&lt;" in report or "\u02cb" in report


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.sampled_from(
            ["<", ">", "<b>", "</i>", "<!--", "<a href=x>", "`", "``", "\n", "|", "a", " ", "&"]
        ),
        min_size=1,
        max_size=25,
    ).map("".join)
)
def test_no_text_opens_html_in_report_md(
    pristine: Path, tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    report = _report_with(pristine, tmp_path_factory.mktemp("p") / "s", text)
    assert _html_tokens(report) == []
