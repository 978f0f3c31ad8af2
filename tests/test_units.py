"""units: every quantity's formatter against hand-computed strings, boundaries included."""

from __future__ import annotations

import math

import pytest

from pilot_sys import units


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0, "0"),
        (1.0, "1.00"),
        (2.346, "2.35"),
        (9.996, "10.0"),
        (99.95, "100"),
        (123.4, "123"),
        (999.5, "1000"),
        (1023.4, "1023"),
        (0.000123, "0.000123"),
        (-0.5, "-0.500"),
        (math.inf, "inf"),
    ],
)
def test_significant_digits_never_use_an_exponent(value: float, shown: str) -> None:
    assert units.significant(value) == shown


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0, "0 B"),
        (1, "1 B"),
        (1.5, "1.50 B"),
        (1023, "1023 B"),
        (1024, "1.00 KiB"),
        (1536, "1.50 KiB"),
        (1024**2 - 1, "1.00 MiB"),  # 1023.999 KiB rounds up into the next prefix
        (1023.4 * 1024, "1023 KiB"),
        (1.5 * 2**30, "1.50 GiB"),
        (-2048, "-2.00 KiB"),
        (2**70, "1024 EiB"),
    ],
)
def test_sizes_use_iec_prefixes(value: float, shown: str) -> None:
    assert units.size(value) == shown


def test_byte_rates() -> None:
    assert units.byte_rate(512.0) == "512 B/s"
    assert units.byte_rate(1.219e9) == "1.14 GiB/s"  # 1.219e9 / 2**30 = 1.1353
    assert units.byte_rate(2.17 * 2**30) == "2.17 GiB/s"
    assert units.byte_rate(3 * 2**20) == "3.00 MiB/s"
    assert units.byte_rate(0.0) == "0 B/s"


def test_network_rates_are_bits_with_decimal_prefixes() -> None:
    assert units.bit_rate(1.25e9) == "10.0 Gbit/s"  # 10 Gbit/s link = 1.25e9 B/s
    assert units.bit_rate(117.6e6) == "941 Mbit/s"  # 117.6e6 * 8 = 940.8e6
    assert units.bit_rate(124.9e3) == "999 kbit/s"  # 999.2 kbit/s
    assert (
        units.bit_rate(124.99e3) == "1.00 Mbit/s"
    )  # 999.92 kbit/s rounds to 1000: the next prefix
    assert units.bit_rate(100) == "800 bit/s"
    assert units.quantity(1.25e9, "B/s", network=True) == "10.0 Gbit/s"
    assert units.quantity(1.25e9, "B/s") == "1.16 GiB/s"


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        (15310, "IOPS", "15.3 k IOPS"),
        (999.95, "", "1.00 k"),
        (999.4e3, "", "999 k"),
        (999.95e3, "", "1.00 M"),
        (16, "rounds", "16 rounds"),
        (16.5, "", "16.5"),
        (0, "IOPS", "0 IOPS"),
        (-1500, "", "-1.50 k"),
        (9.807, "work/s", "9.81 work/s"),
        (3.4e6, "items/s", "3.40 M items/s"),
        (8, "cores", "8 cores"),
    ],
)
def test_counts_use_si_prefixes(value: float, unit: str, shown: str) -> None:
    assert units.count(value, unit) == shown


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0 s"),
        (12.34, "12.3 s"),
        (3700, "3700 s"),
        (1.0, "1.00 s"),
        (0.102, "102 ms"),
        (0.00099995, "1.00 ms"),
        (0.000999, "999 µs"),
        (3.5e-6, "3.50 µs"),
        (4.2e-8, "42.0 ns"),
        (0.9994, "999 ms"),
        (0.99995, "1.00 s"),
        (-0.002, "-2.00 ms"),
    ],
)
def test_durations(seconds: float, shown: str) -> None:
    assert units.duration(seconds) == shown


@pytest.mark.parametrize("unknown", [None, float("nan")])
def test_unknown_values_are_a_question_mark_or_the_word_given(unknown: float | None) -> None:
    for fmt in (
        units.size,
        units.byte_rate,
        units.bit_rate,
        units.count,
        units.duration,
        units.percent,
    ):
        assert fmt(unknown) == "?"
    assert units.quantity(unknown, "B/s", missing="unknown") == "unknown"
    assert units.interval(unknown, 2.0, "s") == "[?, 2.00 s]"
    assert units.plus_minus(None) == "± ?"


def test_quantity_picks_the_formatter_from_the_unit() -> None:
    assert units.quantity(0.0003237, "s") == "324 µs"
    assert units.quantity(568, "MiB") == "568 MiB"
    assert units.quantity(1024, "MiB") == "1.00 GiB"
    assert units.quantity(1500, "KiB/s") == "1.46 MiB/s"  # 1500 KiB/s = 1.4648 MiB/s
    assert units.quantity(1e9, "bit/s") == "1.00 Gbit/s"
    assert units.quantity(0.5, "%") == "0.500 %"
    assert units.quantity(2.5, "") == "2.50"
    assert units.work(16, "work") == "16"  # "work" is the placeholder of no unit, not one
    assert units.work(1024, "MiB") == "1024 MiB"  # in the unit -w takes, not converted
    assert (
        units.work(200_000, "items") == "200000 items"
        and units.work(2.5e6, "items") == "2.50 M items"
    )
    # a fraction of a byte unit in bytes' prefixes: 8449.56 MiB is the 8.25 GiB fio moved
    assert units.work(0.5, "MiB") == "512 KiB" and units.work(None, "MiB") == "?"
    assert units.work(8449.56, "MiB") == "8.25 GiB"


def test_percentages_and_the_one_ci_convention() -> None:
    assert units.percent(0.032) == "3.2 %"
    assert units.percent(0.8, decimals=0) == "80 %"
    assert units.percent(0.0021, decimals=2, signed=True) == "+0.21 %"
    assert units.percent(-0.103, signed=True) == "-10.3 %"
    assert units.target(0.10) == "± 5 %"  # --ci-perc 10% is a full width: ± 5 % of the mean
    assert units.target(0.05) == "± 2.5 %"
    assert (
        units.percent(0.01, decimals=None) == "1 %"
        and units.percent(0.0025, decimals=None) == "0.25 %"
    )
    assert units.percent(0.105, decimals=None, signed=True) == "+10.5 %"
    # 2.17 GiB/s with a CI of [2.10, 2.24] GiB/s: half width 0.07 of 2.17 = 3.2 %
    mean, low, high = 2.17 * 2**30, 2.10 * 2**30, 2.24 * 2**30
    assert units.relative_half_width(mean, low, high) == pytest.approx(0.07 / 2.17)
    assert units.estimate(mean, low, high, "B/s") == "2.17 GiB/s ± 3.2 %"
    assert units.estimate(mean, None, None, "B/s") == "2.17 GiB/s"
    assert units.interval(low, high, "B/s") == "[2.10 GiB/s, 2.24 GiB/s]"
    assert units.relative_half_width(0.0, -1.0, 1.0) is None


def test_an_interval_is_shown_on_one_scale_with_the_decimals_it_needs() -> None:
    # 1024 MiB/s ± 2 %: one scale (GiB/s) for mean and bounds, not [1004 MiB/s, 1.02 GiB/s]
    gib = 2**30
    assert units.ci_parts(gib, 0.98 * gib, 1.02 * gib, "B/s") == (
        "1.00 GiB/s",
        "0.98 GiB/s",
        "1.02 GiB/s",
    )
    # ± 0.11 %: three digits would show [999, 1.00 k];
    # the half width (0.0011 k) needs three decimals
    assert units.ci_parts(1000.2, 999.1, 1001.3, "") == ("1.000 k", "0.999 k", "1.001 k")
    assert units.interval(998.1, 998.9, "") == "[998.1, 998.9]"  # half width 0.4: one decimal
    assert units.interval(999.1, 999.9, "") == "[0.9991 k, 0.9999 k]"  # 999.9 rounds to 1.00 k
    # a difference's CI across zero, in ms: half width 1.5 ms, scale from the larger bound (2 ms)
    assert units.interval(-0.001, 0.002, "s") == "[-1.00 ms, 2.00 ms]"
    # never more than three decimals beyond the usual three significant digits
    assert units.interval(1.0, 1.0 + 1e-12, "s") == "[1.00000 s, 1.00000 s]"
    assert units.interval(None, 2.0, "s") == "[?, 2.00 s]"
    assert units.estimate(0.0, 0.0, 0.0, "B/s") == "0 B/s"


def test_what_counts_as_network_traffic() -> None:
    assert units.network_component("nic:eth0") and units.network_component("network:lan")
    assert not units.network_component("block:vda") and not units.network_component(None)
    assert units.network_command(["/usr/bin/iperf3", "-c", "h"]) and not units.network_command(
        ["fio"]
    )
    assert not units.network_command([])
    assert units.network_traffic(["curl", "http://h/x"], "nic:eth0") and not units.network_traffic(
        ["fio"], "block:vda"
    )


def test_units_imports_nothing_from_pilot_sys() -> None:
    """The base layer: every other layer formats through it, so it may depend on none of them."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(units.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not [m for m in imported if m.startswith("pilot_sys")], imported


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [(3.6e9, "Hz", "3.60 GHz"), (8e8, "Hz", "800 MHz"), (45.0, "W", "45.0 W")],
)
def test_physical_units_take_their_prefix_unspaced(value: float, unit: str, shown: str) -> None:
    assert units.quantity(value, unit) == shown
