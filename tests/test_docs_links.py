"""Every relative link in the README and docs/ reaches a file of the repository."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _pages() -> list[Path]:
    return [REPO / "README.md", REPO / "benchmarks" / "RESULTS.md", *(REPO / "docs").rglob("*.md")]


def test_relative_links_resolve() -> None:
    broken = []
    for page in _pages():
        for target in LINK.findall(page.read_text()):
            path = target.split("#", 1)[0]
            if path and not target.startswith(("http://", "https://", "mailto:")):
                if not (page.parent / path).exists():
                    broken.append(f"{page.relative_to(REPO)}: {target}")
    assert broken == []


def test_every_command_has_its_page() -> None:
    from pilot_sys.cli import COMMANDS

    pages = {p.stem for p in (REPO / "docs" / "commands").glob("*.md")} - {"README"}
    assert pages == set(COMMANDS)


def test_the_preset_table_of_the_run_page_is_the_codes() -> None:
    import re

    from pilot_sys.session.config import preset_rows

    page = (REPO / "docs" / "commands" / "run.md").read_text()
    for label, values in preset_rows():
        shown = re.sub(r"\((-[-\w]+)\)", r"(`\1`)", label)  # the page writes options as code
        row = f"| {shown} | " + " | ".join(values) + " |"
        assert row in page, row
