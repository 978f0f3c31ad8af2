"""report.html: one self-contained file, the verdict first, every user string escaped; and, in
headless Chromium, a page that draws (not blank, the banner in its status colour at the top)
without asking the network for anything."""

from __future__ import annotations

import html as html_lib
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from session_dirs import make_session

from pilot_sys import palette
from pilot_sys.report import html
from pilot_sys.report.rebuild import rebuild
from pilot_sys.session.engine import StopReason


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Any]]:
    """An invalid session (a hidden bottleneck through rounds too short to judge on their own,
    found over them together), a valid one with two rounds excluded for a hidden bottleneck,
    and one that hit its time limit."""
    base = tmp_path_factory.mktemp("html")
    made = {}
    for name, hidden, judged, stop in (
        ("invalid", True, False, StopReason.TARGETS_MET),
        ("valid", {5, 9}, True, StopReason.TARGETS_MET),
        ("limit", False, True, StopReason.SESSION_LIMIT),
    ):
        root = make_session(base / name, hidden=hidden, judged=judged, stop_reason=stop)
        made[name] = (root, rebuild(root))
    return made


def _page(sessions: dict[str, tuple[Path, Any]], name: str) -> str:
    return (sessions[name][0] / html.HTML_FILE).read_text(encoding="utf-8")


def test_the_page_needs_nothing_from_outside(sessions: dict[str, tuple[Path, Any]]) -> None:
    page = _page(sessions, "invalid")
    assert page.startswith("<!DOCTYPE html>")
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert csp is not None and "default-src 'none'" in csp.group(1)
    assert "img-src data:" in csp.group(1)
    assert not re.search(r"https?://", page)
    assert "<script" not in page.lower() and "<link" not in page.lower()
    embedded = re.findall(r'<img alt="[^"]*" src="data:image/png;base64,', page)
    drawn = {p.name for p in (sessions["invalid"][0] / "plots").glob("*.png")}
    assert len(embedded) == len(drawn - {html.DATA_PATH_PICTURE}) >= 5


def _banner(page: str) -> str:
    return page[page.index('<header class="banner"') : page.index("</header>") + len("</header>")]


def test_the_verdict_comes_first_in_its_colour(sessions: dict[str, tuple[Path, Any]]) -> None:
    page = _page(sessions, "invalid")
    body = page[page.index("<body>") + len("<body>") :]
    assert body.startswith(
        f'<header class="banner" id="verdict" style="background:{palette.HIDDEN}">'
    )
    # the banner is result.json's verdict, line for line, and the page says it once
    for name, (_, result) in sessions.items():
        v, banner = result.verdict, _banner(_page(sessions, name))
        assert v is not None
        shown = [
            v.headline,
            *(f"{k}: {x}" for k, x in (("why", v.why), ("excluded", v.excluded)) if x),
            v.bottleneck,
            *([v.governs] if v.governs else []),
        ]
        assert re.findall(r'<div class="(?:headline|reason)">([^<]*)</div>', banner) == [
            html_lib.escape(line, quote=False) for line in shown
        ]
        advice = f"What to do: {v.next_step}" if v.next_step else None
        assert (advice in banner) if advice else ("What to do" not in banner)
    v = sessions["invalid"][1].verdict
    assert v is not None and v.headline.startswith("INVALID: hidden bottleneck at cpu:host")
    assert "--cut cpu:host" in _banner(page) and "<h2>Verdict</h2>" not in page
    assert "excluded: 2 of 10 judged rounds excluded (rounds 5, 9)" in _banner(
        _page(sessions, "valid")
    )
    order = [
        "Results: fio",
        'id="data-path"',
        "Bottleneck verdict",
        'id="plots"',
        "Monitoring overhead",
        'id="rounds"',
        "Notes",
    ]
    positions = [page.index(marker) for marker in order]
    assert positions == sorted(positions)
    for name, colour in (
        ("valid", palette.STATUS["valid"]),
        ("limit", palette.STATUS["limit_reached"]),
    ):
        assert f'class="banner" id="verdict" style="background:{colour}"' in _page(sessions, name)
    assert "use -s 20 or --preset normal" in _banner(_page(sessions, "limit"))  # more time


def test_the_data_path_is_filled_by_utilization_and_framed_by_role(
    sessions: dict[str, tuple[Path, Any]],
) -> None:
    page = _page(sessions, "invalid")
    section = page[
        page.index('id="data-path"') : page.index("</section>", page.index('id="data-path"'))
    ]
    chips = re.findall(
        r'<div class="chip" style="background:(#\w+);color:#\w+;border:([^"]+)">'
        r"<b>([^<]+)</b>",
        section,
    )
    assert [c[2] for c in chips] == [
        "cpu:host",
        "memory:host",
        "pci:0000:00:02.0",
        "block:vda",
        "mount:/",
    ]
    by_name = {name: (fill, border) for fill, border, name in chips}
    assert by_name["block:vda"] == (palette.utilization_colour(0.7), f"3px solid {palette.CUT}")
    assert by_name["cpu:host"] == (palette.utilization_colour(1.0), f"3px solid {palette.HIDDEN}")
    assert by_name["memory:host"][0] == palette.utilization_colour(0.2)
    assert by_name["mount:/"][0] == palette.NOT_MEASURED
    assert "limit r/w 238 MiB/s" in section  # the disk's rated limit, as units shows it


def test_every_user_string_is_escaped(sessions: dict[str, tuple[Path, Any]]) -> None:
    page = _page(sessions, "invalid")
    assert "--filename=/tmp/a&lt;b&gt;&amp;c.dat" in page and "a<b>&c" not in page
    assert "w&lt;1&gt;" in page and "w<1>" not in page
    root, result = sessions["valid"]
    hostile = result.model_copy(
        update={"notes": ['<script>alert("x")</script> & <img src=x>'], "result_dir": "/tmp/<dir>"}
    )
    out = html.render(hostile, {}, [["1", "<w>", "1", "1 s", "measure", "analysed", "x<y"]], root)
    assert "<script" not in out and "<img src=x" not in out
    assert "&lt;script&gt;" in out and "x&lt;y" in out and "/tmp/&lt;dir&gt;" in out


def test_report_html_can_be_left_out(tmp_path: Path) -> None:
    root = make_session(tmp_path / "s")
    rebuild(root, plots=False, html=False)
    assert (root / "report.md").is_file() and not (root / html.HTML_FILE).exists()
    rebuild(root, plots=False)
    page = (root / html.HTML_FILE).read_text(encoding="utf-8")
    assert 'id="data-path"' in page and 'id="plots"' not in page  # no plots, still the path


# -- in a browser ------------------------------------------------------------------------------
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def _screenshot(page: Path, out: Path, profile: Path) -> np.ndarray:
    import matplotlib.image

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (.ci/run installs it)")
    done = subprocess.run(
        [
            browser,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--screenshot={out}",
            "--window-size=1200,2000",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and out.is_file(), done.stderr[-2000:]
    return (matplotlib.image.imread(str(out))[..., :3] * 255).round().astype(int)


def _near(img: np.ndarray, colour: str, tolerance: int = 3) -> np.ndarray:
    rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
    return np.abs(img - rgb).max(axis=-1) <= tolerance


@pytest.mark.live
@pytest.mark.parametrize("name, status", [("invalid", "invalid"), ("valid", "valid")])
def test_chromium_draws_the_page_with_the_verdict_on_top(
    sessions: dict[str, tuple[Path, Any]], tmp_path: Path, name: str, status: str
) -> None:
    root, _ = sessions[name]
    img = _screenshot(root / html.HTML_FILE, tmp_path / "shot.png", tmp_path / "profile")
    assert img.shape[:2] == (2000, 1200)
    assert img.std() > 30  # not a blank page
    banner = _near(img[:80], palette.status_colour(status))
    assert banner.mean() > 0.5  # the top of the page is the banner, in the status colour
    assert _near(img[300:], palette.status_colour(status)).mean() < 0.05  # and only the top
    # the data path's chips and the embedded plots drew: the CUT's frame colour is on the page
    assert _near(img, palette.CUT).sum() > 200
