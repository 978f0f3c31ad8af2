"""The hot-path reader, the vectorised token parser and the rate helpers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pilot_sys.monitor.procread import (
    MISSING,
    TOKEN_DTYPE,
    LineTable,
    Wanted,
    parse_segments,
    parse_tokens,
    tokens_layout,
)
from pilot_sys.monitor.rates import deltas, intervals, per_second, ratio, utilization
from pilot_sys.topology.components import Limit, LimitSource

DISKSTATS = """\
   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 254       0 vda 36071 8368 1899674 6843 5404 17917 1031448 3965 0 4172 11053 3755 62 80904 \
216 725 27
 253       0 zram0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
"""


@given(st.lists(st.integers(min_value=0, max_value=2**64 - 1), min_size=1, max_size=40))
def test_parse_tokens_matches_python_int(values: list[int]) -> None:
    tokens = np.array([str(v).encode() for v in values], dtype=TOKEN_DTYPE)
    parsed = parse_tokens(tokens)
    assert parsed.tolist() == [float(v) for v in values]


def test_parse_tokens_marks_missing_and_malformed() -> None:
    tokens = np.array([[MISSING, b"", b"12a", b"0", b"007"]], dtype=TOKEN_DTYPE)
    parsed = parse_tokens(tokens)
    assert np.isnan(parsed[0, :3]).all()
    assert parsed[0, 3:].tolist() == [0.0, 7.0]


def test_linetable_reads_fields_by_key_and_follows_changes(tmp_path: Path) -> None:
    path = tmp_path / "diskstats"
    path.write_text(DISKSTATS)
    table = LineTable(
        path, [Wanted("vda", 2 + 7), Wanted("vda", 2 + 10), Wanted("zram0", 2 + 1)], key_token=2
    )
    assert table.read() == (b"1031448", b"4172", b"0")
    # counters grow (and get longer): same layout, no relayout needed
    path.write_text(DISKSTATS.replace("1031448", "99991031448").replace(" 4172 ", " 41720 "))
    assert table.read() == (b"99991031448", b"41720", b"0")
    assert table.relayouts == 0
    # a device appears before the watched ones: the layout is learnt again by name
    path.write_text("   8       0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n" + DISKSTATS)
    assert table.read() == (b"1031448", b"4172", b"0")
    assert table.relayouts == 1
    # a watched device vanishes: its counters read MISSING, the others still come
    path.write_text(DISKSTATS.replace(" 253       0 zram0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", ""))
    assert table.read() == (b"1031448", b"4172", MISSING)
    table.close()


def test_linetable_handles_net_dev_counters_touching_the_name(tmp_path: Path) -> None:
    path = tmp_path / "dev"
    header = "Inter-|   Receive\n face |bytes    packets\n"
    path.write_text(header + "  eth0: 5038 13 0 0 0 0 0 0 95706 922 0 0 0 0 0 0\n")
    table = LineTable(path, [Wanted("eth0", 1), Wanted("eth0", 9)], separators=b":|", skip_lines=2)
    assert table.read() == (b"5038", b"95706")
    # the kernel prints "%6s:%8llu": a 10-digit byte count touches the colon
    path.write_text(header + "  eth0:5038123456 13 0 0 0 0 0 0 95706 922 0 0 0 0 0 0\n")
    assert table.read() == (b"5038123456", b"95706")
    table.close()


def test_linetable_skips_the_long_intr_line_of_proc_stat(tmp_path: Path) -> None:
    path = tmp_path / "stat"
    intr = "intr 4546034 " + " ".join(["0"] * 500)
    path.write_text(
        f"cpu  1 2 3 4\ncpu0 5 6 7 8\n{intr}\nctxt 42\nbtime 1\nprocesses 9\nprocs_running 3\n"
    )
    table = LineTable(path, [Wanted("cpu0", 1), Wanted("ctxt", 1), Wanted("procs_running", 1)])
    assert len(table._windows) == 2  # the 500-token line is not split on every tick
    assert table.read() == (b"5", b"42", b"3")
    table.close()


def test_deltas_and_rates_by_hand() -> None:
    raw = np.array([[100.0, 5.0], [160.0, 5.0], [150.0, 9.0], [250.0, 9.0]])
    t = np.array([0.0, 0.5, 1.5, 2.0])
    d = deltas(raw)
    assert np.isnan(d[0]).all()
    assert d[1].tolist() == [60.0, 0.0]
    assert np.isnan(d[2, 0]) and d[2, 1] == 4.0  # a counter that went backwards: no rate
    r = per_second(raw, t)
    assert r[1].tolist() == [120.0, 0.0]
    assert r[3].tolist() == [200.0, 0.0]
    assert intervals(np.array([0.0, 1.0, 1.0]))[2] != intervals(np.array([0.0, 1.0, 1.0]))[2]  # NaN


def test_ratio_and_utilization_never_invent() -> None:
    assert np.isnan(ratio(np.array([1.0]), np.array([0.0]))[0])
    assert utilization(np.array([5.0]), Limit()) is None
    rated = Limit(value=10.0, source=LimitSource.USER)
    assert utilization(np.array([5.0]), rated).tolist() == [0.5]


@pytest.mark.live
def test_the_fast_path_holds_on_this_kernel() -> None:
    """The real /proc/vmstat: the layout is learnt once and every later read takes the fast
    path (windows found, token counts match), while the counters move."""
    table = LineTable(
        "/proc/vmstat",
        [Wanted("pgpgin", 1), Wanted("pgscan_kswapd", 1), Wanted("nr_free_pages", 1)],
    )
    reads = [table.read() for _ in range(50)]
    assert all(int(v) >= 0 for row in reads for v in row)
    assert table.relayouts == 0 and table._fast
    table.close()


@pytest.mark.parametrize("rows", [1, 5000])
def test_parse_tokens_keeps_shape(rows: int) -> None:
    tokens = np.full((rows, 3), b"12", dtype=TOKEN_DTYPE)
    assert parse_tokens(tokens).shape == (rows, 3)


def test_token_texts_parse_back_to_their_counters() -> None:
    """A reader that is not a ``TextReader`` (the process tree) stores its tokens joined."""
    ticks = [[b"1", b"18446744073709551615", MISSING], [b"40", b"0", b"7"]]
    parsed = parse_tokens(parse_segments([b" ".join(t) for t in ticks], tokens_layout(3)))
    assert parsed[0, :2].tolist() == [1.0, 18446744073709551615.0] and np.isnan(parsed[0, 2])
    assert parsed[1].tolist() == [40.0, 0.0, 7.0]
    # a text with a token too few is not shifted into its neighbours: that row is all NaN
    parsed = parse_tokens(parse_segments([b"1 2", b"4 5 6"], tokens_layout(3)))
    assert np.isnan(parsed[0]).all() and parsed[1].tolist() == [4.0, 5.0, 6.0]


def test_a_device_replaced_by_one_with_as_many_counters_is_not_mistaken_for_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "dev"
    header = "Inter-|   Receive\n face |bytes    packets\n"
    line = "  {name}: {rx} 13 0 0 0 0 0 0 95706 922 0 0 0 0 0 0\n"
    devices = [("lo", 1), ("ifb0", 2), ("eth0", 3)]
    path.write_text(header + "".join(line.format(name=n, rx=rx) for n, rx in devices))
    table = LineTable(path, [Wanted("ifb0", 1), Wanted("eth0", 1)], separators=b":|", skip_lines=2)
    assert table._whole >= 0  # the small-file path: one split, no find
    assert table.read() == (b"2", b"3")
    # ifb0 goes, veth9 comes in its place: same token count, different device
    devices = [("lo", 1), ("veth9", 99), ("eth0", 4)]
    path.write_text(header + "".join(line.format(name=n, rx=rx) for n, rx in devices))
    assert table.read() == (MISSING, b"4")
    table.close()
