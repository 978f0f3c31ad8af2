"""The session plots: what they are drawn from (per-round quantiles, removed shares, the data
path's series), the one colour rule, and the plots of a hand-written result directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from session_dirs import COOL, PATH, READINGS, WARM, graph, make_session

from pilot_sys import palette
from pilot_sys.monitor.plot import OTHERS, Usage, others_max, path_panels, usage_lines, usage_of
from pilot_sys.report import plots
from pilot_sys.report.headline import verdict_view
from pilot_sys.report.rebuild import rebuild
from pilot_sys.session.journal import Journal
from pilot_sys.session.summary import analyse_journal
from pilot_sys.session.verdict import alpha_text, estimate_text
from pilot_sys.topology import graphio


# -- data preparation --------------------------------------------------------------------------
def test_round_quantiles_are_numpys_percentiles_of_each_rounds_finite_values() -> None:
    rng = np.random.default_rng(3)
    groups = [rng.lognormal(size=n) for n in (1, 2, 7, 500, 1001)]
    groups.append(np.array([np.nan, 4.0, np.inf, 1.0, 2.0]))  # non-finite values are left out
    groups.append(np.array([]))
    got = plots.round_quantiles(groups)
    assert got.shape == (len(groups), len(plots.QUANTILES))
    for row, values in zip(got[:-2], groups[:-2], strict=True):
        np.testing.assert_array_equal(row, np.percentile(values, plots.QUANTILES))
    np.testing.assert_array_equal(got[-2], np.percentile([4.0, 1.0, 2.0], plots.QUANTILES))
    assert np.isnan(got[-1]).all()


def test_removed_shares_are_the_parts_before_and_after_the_kept_segment() -> None:
    shares = plots.removed_shares(
        np.array([20, 0, 0]), np.array([190, 50, 0]), np.array([200, 50, 0])
    )
    np.testing.assert_allclose(shares, [[0.1, 0.05], [0.0, 0.0], [0.0, 0.0]])


def test_a_rounds_mean_is_the_pis_own_average() -> None:
    v = np.array([1.0, 2.0, 4.0, np.nan])
    assert plots.round_mean(v, "harmonic") == pytest.approx(3 / (1 + 0.5 + 0.25))
    assert plots.round_mean(v, "arithmetic") == pytest.approx(7 / 3)
    assert np.isnan(plots.round_mean(np.array([np.nan]), "harmonic"))


KEYS = [
    "block:vda/util_write",
    "block:vda/util_read",
    "block:vda/busy",
    "block:vda/read_bytes_per_s",
    "cpu:host/util_compute",
    "cpu:host/busiest_core",
    "cpu:host/busy",
    "memory:host/util_capacity",
    "core:0/util_compute",
    "core:1/util_compute",
    "nic:eth0/util_send",
    "nic:eth0/util_receive",
    "block:vdb/busy",
    "block:vdb/util_read",
    "pci:0000:00:02.0/send_bytes_per_s",
]


def test_the_timeline_shows_the_data_path_the_cut_first_and_folds_the_rest() -> None:
    panels, silent = path_panels(KEYS, PATH, "block:vda", ["cpu:host"])
    assert [(p.component, p.role) for p in panels] == [
        ("block:vda", "cut"),
        ("cpu:host", "hidden"),
        ("memory:host", "path"),
        (OTHERS, "others"),
    ]
    vda = panels[0]
    assert vda.lines == (("block:vda/util_read", "read"), ("block:vda/util_write", "write"))
    assert vda.busy == "block:vda/busy"  # busy time: its own signal, not a utilization line
    assert dict(panels[1].lines) == {
        "cpu:host/busiest_core": "busiest core",
        "cpu:host/util_compute": "compute",
    }
    # off the path: utilization only (a second disk's busy time is not folded in), no cores
    assert set(panels[-1].collapsed) == {
        "block:vdb/util_read",
        "nic:eth0/util_receive",
        "nic:eth0/util_send",
    }
    assert silent == ["pci:0000:00:02.0", "mount:/"]  # on the path, no saturation signal


def test_without_a_recorded_data_path_every_measured_component_is_on_it() -> None:
    panels, _ = path_panels(KEYS, None, "block:vda", [])
    assert [p.component for p in panels][:2] == ["block:vda", "cpu:host"]
    assert OTHERS not in [p.component for p in panels]
    assert {"nic:eth0", "block:vdb", "memory:host"} <= {p.component for p in panels}


def test_others_max_is_the_highest_known_value_at_each_sample() -> None:
    series = {"a": np.array([0.1, np.nan, np.nan, 0.9]), "b": np.array([0.5, 0.2, np.nan, 0.3])}
    out = others_max(series, ["a", "b"])
    np.testing.assert_array_equal(out[[0, 1, 3]], [0.5, 0.2, 0.9])
    assert np.isnan(out[2])


def test_usage_peaks_per_component_and_direction() -> None:
    series = {
        "block:vda/util_write": np.array([np.nan, 0.5, 0.92]),
        "block:vda/busy": np.array([np.nan, 0.97, 0.4]),
        "cpu:host/busiest_core": np.array([1.0, 0.2, np.nan]),
        "core:0/util_compute": np.array([1.0, 1.0, 1.0]),
        "block:vdb/busy": np.array([np.nan, np.nan, np.nan]),
    }
    usage = usage_of(series)
    assert set(usage) == {"block:vda", "cpu:host"}  # cores stand in the busiest core; vdb unknown
    assert usage["block:vda"] == Usage({"write": 0.92}, 0.97) and usage["block:vda"].peak == 0.92
    assert usage_lines(usage["block:vda"]) == ("peak w 92 %", "peak busy 97 %")
    assert usage_lines(Usage({"busiest core": 1.0, "compute": 0.55})) == (
        "peak 55 %, 1 core 100 %",
    )
    assert Usage(busy=0.5).peak is None  # busy time is no utilization


# -- the colour rule ---------------------------------------------------------------------------
def test_the_utilization_scale_passes_its_stops_and_grows_hotter() -> None:
    for fraction, colour in palette.scale_stops(0.8):
        assert palette.utilization_colour(fraction, 0.8) == colour
    assert palette.utilization_colour(1.7) == palette.SCALE_FULL  # beyond the limit: as hot
    assert palette.utilization_colour(None) == palette.NO_LIMIT
    assert palette.utilization_colour(float("nan")) == palette.NO_LIMIT
    greens = [int(palette.utilization_colour(f)[3:5], 16) for f in np.linspace(0.4, 1.0, 13)]
    assert greens == sorted(greens, reverse=True)  # from yellow through orange to red
    assert palette.text_colour(palette.SCALE_LOW) == "#000000"
    assert palette.text_colour(palette.SCALE_FULL) == "#ffffff"


def _pixels(path: Path) -> np.ndarray:
    import matplotlib.image

    return (matplotlib.image.imread(str(path))[..., :3] * 255).round().astype(int)


def _has(img: np.ndarray, colour: str, at_least: int = 30) -> bool:
    rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(img - rgb).max(axis=-1) <= 2).sum()) >= at_least


def test_graph_png_and_the_session_picture_frame_roles_in_the_palettes_colours(
    tmp_path: Path,
) -> None:
    g = graph()
    plain = tmp_path / "plain.png"
    graphio.draw(g.subgraph(PATH), plain, highlight=["block:vda"])
    img = _pixels(plain)
    assert _has(img, palette.CUT) and not _has(img, palette.HIDDEN)
    assert not _has(img, "#d62728")  # the old rule framed the CUT in red
    # the CPU hot through every round, each too short to judge: analysed, invalid together
    root = make_session(tmp_path / "s", hidden=True, judged=False)
    rebuild(root)
    img = _pixels(root / "plots" / "data-path.png")
    assert _has(img, palette.CUT) and _has(img, palette.HIDDEN)
    disk = palette.utilization_colour(0.7)  # the disk's 70 % fills its box
    assert _has(img, disk, 500)


# -- a whole result directory ------------------------------------------------------------------
EXCLUDED_ROUNDS = {5, 9}  # the CPU above the threshold in these rounds, long enough to judge


def _spy(mp: pytest.MonkeyPatch, calls: dict[str, Any], drawn: dict[str, list[str]]) -> None:
    """Keep each plot function's arguments (of a per-PI plot: the ``bw`` PI's call),
    and the texts (titles, legends) of every figure as it is saved."""
    for name in ("plot_units", "plot_readings", "plot_utilization", "plot_wps"):
        real = getattr(plots, name)

        def spy(*args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            if not isinstance(args[0], str) or args[0] == "bw":
                calls[_name] = (args, kw)
            return _real(*args, **kw)

        mp.setattr(plots, name, spy)
    save = plots._save

    def texts(fig: Any, path: Path) -> Path:
        found = [t.get_text() for t in fig.texts]
        found += [t.get_text() for leg in fig.legends for t in leg.get_texts()]
        for ax in fig.axes:
            found.append(ax.get_title(loc="left"))
            if ax.get_legend() is not None:
                found += [t.get_text() for t in ax.get_legend().get_texts()]
        drawn[path.name] = found
        return save(fig, path)

    mp.setattr(plots, "_save", texts)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The plots' inputs and texts, captured while a hand-written session is rebuilt whose
    rounds 5 and 9 saw the CPU above the threshold (excluded: the session is valid over the
    other eight)."""
    calls: dict[str, Any] = {}
    texts: dict[str, list[str]] = {}
    mp = pytest.MonkeyPatch()
    _spy(mp, calls, texts)
    root = make_session(tmp_path_factory.mktemp("s") / "res", hidden=EXCLUDED_ROUNDS)
    try:
        result = rebuild(root)
    finally:
        mp.undo()
    return {"root": root, "result": result, "calls": calls, "texts": texts}


def test_every_plot_is_written(drawn: dict[str, Any]) -> None:
    names = {p.name for p in (drawn["root"] / "plots").iterdir()}
    wanted = {"bw-units.png", "bw-rounds.png", "utilization.png", "data-path.png", "wps-fit.png"}
    assert wanted <= names
    assert not [n for n in drawn["result"].notes if "failed" in n]


def test_units_are_summarised_over_the_kept_readings_edm_left(drawn: dict[str, Any]) -> None:
    (_, _, rounds, estimate, *_), _ = drawn["calls"]["plot_units"]
    journal = Journal.open(drawn["root"], repair=False)
    analysis = analyse_journal(journal)["fio"]
    analysed = [r for r in rounds if r.state == plots.ANALYSED]
    assert [r.index for r in rounds] == list(range(1, 13))
    assert [r.state for r in rounds[:2]] == ["short", "short"]
    assert [r.index for r in rounds if r.state == plots.EXCLUDED] == sorted(EXCLUDED_ROUNDS)
    assert len(analysed) == 8
    for r in analysed:
        np.testing.assert_array_equal(
            r.values[r.start : r.end], analysis.kept_units[(r.index, "bw")]
        )
        # the slow warm-up and cool-down the fixture wrote are cut off, most of the rest kept
        assert WARM <= r.start and r.end <= READINGS - COOL and r.end - r.start > READINGS / 2
    pi = drawn["result"].workloads[0].pis["bw"]
    assert (estimate.mean, estimate.low, estimate.high) == (pi.mean, pi.ci_low, pi.ci_high)
    assert "excluded: hidden bottleneck" in drawn["texts"]["bw-units.png"]


def test_the_rounds_plot_says_what_result_json_says(drawn: dict[str, Any]) -> None:
    args, _ = drawn["calls"]["plot_readings"]
    _, _, rounds, history, estimate, *_rest = args
    pi = drawn["result"].workloads[0].pis["bw"]
    title = f"bw: {estimate_text(pi)} (target ± 5 %)"
    assert title.startswith("bw: 95.4 MiB/s ± 0.1 %, 95% CI [")
    for name in ("bw-rounds.png", "bw-units.png"):
        assert title in drawn["texts"][name] and "session: valid" in drawn["texts"][name]
    assert (estimate.mean, estimate.low, estimate.high) == (pi.mean, pi.ci_low, pi.ci_high)
    assert history[-1][1] == pytest.approx(pi.mean)  # the last "so far" is the result
    states = {r.index: r.state for r in rounds}
    assert {i for i, s in states.items() if s == plots.EXCLUDED} == EXCLUDED_ROUNDS
    legend = drawn["texts"]["bw-rounds.png"]
    assert "excluded: hidden bottleneck" in legend and not any("alpha" in t for t in legend)
    assert args[-2] == frozenset()  # no round saw one while too short to be judged


def test_a_round_too_short_to_judge_is_ticked_not_excluded(tmp_path: Path) -> None:
    calls: dict[str, Any] = {}
    texts: dict[str, list[str]] = {}
    with pytest.MonkeyPatch.context() as mp:
        _spy(mp, calls, texts)
        result = rebuild(make_session(tmp_path / "s", hidden=True, judged=False))
    args, _ = calls["plot_readings"]
    assert {r.state for r in args[2][2:]} == {plots.ANALYSED}
    assert args[-2] == frozenset(range(3, 13)) == frozenset(result.bottleneck.rounds_unjudged)
    assert plots.FLAGGED_WORDS in texts["bw-rounds.png"]
    assert "session: INVALID" in texts["bw-rounds.png"]


def test_the_wps_plot_states_the_fit_and_the_alpha_bound(drawn: dict[str, Any]) -> None:
    result = drawn["result"]
    wps, pi = result.workloads[0].wps, result.workloads[0].pis["wps"]
    (work, seconds, states, fitted, unit, *_), _ = drawn["calls"]["plot_wps"]
    assert fitted == wps and unit == "B" and len(work) == len(states) == 12
    assert [s for s in states if s == plots.EXCLUDED] == [plots.EXCLUDED] * 2
    texts = drawn["texts"]["wps-fit.png"]
    assert f"wps: {estimate_text(pi)}" in texts
    assert wps.alpha_bound == "not_above_zero"  # the fixture's 20 ms is inside alpha's CI
    assert any(t.endswith(f"the alpha bound: {alpha_text(wps)}") for t in texts)


def test_the_utilization_plot_gets_the_session_data_path(drawn: dict[str, Any]) -> None:
    args, _ = drawn["calls"]["plot_utilization"]
    t, series, data_path, cut, hidden, threshold, _path, spans = args
    assert list(data_path) == PATH and cut == "block:vda" and list(hidden) == ["cpu:host"]
    assert threshold == 0.8
    assert len(spans) == 4  # the two short rounds and the two excluded are not in the analysis
    assert series["block:vda/busy"].size == t.size


@pytest.mark.parametrize(
    "kind",
    ["excluded rounds", "too many excluded", "sustained"],
)
def test_the_verdict_is_read_in_one_place(tmp_path: Path, kind: str) -> None:
    hidden, judged = {
        "excluded rounds": (EXCLUDED_ROUNDS, True),
        "too many excluded": (True, True),
        "sustained": (True, False),
    }[kind]
    result = rebuild(make_session(tmp_path / "s", hidden=hidden, judged=judged), plots=False)
    v = result.verdict
    assert v is not None
    view = verdict_view(result)
    assert view.status == v.status and view.headline == v.headline
    assert view.advice == (v.next_step or "") and view.cut == "block:vda" == v.cut
    assert view.governing == v.governing and view.hidden == ("cpu:host",)
    assert view.excluded_rounds == {e.index for e in v.excluded_rounds}
    lines = (
        f"why: {v.why}" if v.why else None,
        f"excluded: {v.excluded}" if v.excluded else None,
        v.bottleneck,
        v.governs,
    )
    assert view.details == tuple(line for line in lines if line)
    if kind == "excluded rounds":
        assert view.status == "valid" and view.excluded_rounds == EXCLUDED_ROUNDS
        assert view.governing is None and view.details[0] == f"excluded: {v.excluded}"
    else:
        assert view.status == "invalid" and view.governing == "cpu:host"
        assert "--cut cpu:host" in view.advice
    if kind == "too many excluded":
        assert view.excluded_rounds == set(range(3, 13))
        assert v.headline.startswith("INVALID: 10 of 10 judged rounds were excluded")
    if kind == "sustained":
        assert view.excluded_rounds == set() and view.flagged_rounds == set(range(3, 13))
        assert v.headline.startswith("INVALID: hidden bottleneck at cpu:host (compute) over")


def test_with_every_round_excluded_the_path_shows_the_excluded_rounds(tmp_path: Path) -> None:
    root = make_session(tmp_path / "s", hidden=True)
    result = rebuild(root)
    assert result.workloads[0].rounds.analysed == 0 and result.status == "invalid"
    page = (root / "report.html").read_text(encoding="utf-8")
    assert "over the excluded rounds (no round was analysed)" in page
    img = _pixels(root / "plots" / "data-path.png")
    assert _has(img, palette.utilization_colour(0.7), 500)  # what the rounds saw, not blank


def test_the_data_path_is_ordered_from_the_cpu_outward_and_boxes_fit_their_text() -> None:
    g = graph()
    assert graphio.picture_order(
        g, ["mount:/", "block:vda", "nic:x", "cpu:host", "memory:host", "pci:0000:00:02.0"]
    ) == [*PATH, "nic:x"]
    assert graphio.limit_caption(g, "block:vda") == "limit r/w 238 MiB/s"
    assert graphio.limit_caption(g, "pci:0000:00:02.0") == "no stated limit"
    looks = graphio.default_looks(g.subgraph(PATH), cut="block:vda")
    layout = graphio.picture_layout(g.subgraph(PATH), looks)
    boxes = layout.boxes
    assert [n for n, _ in sorted(boxes.items(), key=lambda kv: kv[1][0])] == PATH  # left to right
    name_width = graphio._text_size("pci:0000:00:02.0", graphio.NAME_SIZE, bold=True)[0]
    assert name_width < boxes["pci:0000:00:02.0"][2] < name_width + 4 * graphio.PAD + 4
    assert layout.width < 12 * 72 and layout.height < 2.5 * 72  # inches: compact
