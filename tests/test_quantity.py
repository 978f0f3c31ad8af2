"""parse_unit: header units as a dimension and a scale, checked against hand-computed factors."""

from __future__ import annotations

import pytest

from pilot_sys.quantity import conversion_factor, parse_unit


@pytest.mark.parametrize(
    ("text", "dimension", "scale"),
    [
        ("s", "time", 1.0),
        ("ms", "time", 1e-3),
        ("us", "time", 1e-6),
        ("\u00b5s", "time", 1e-6),  # micro sign
        ("\u03bcs", "time", 1e-6),  # Greek mu
        ("nsec", "time", 1e-9),
        ("min", "time", 60.0),
        ("B", "data", 1.0),
        ("KB", "data", 1000.0),
        ("kB", "data", 1000.0),
        ("KiB", "data", 1024.0),
        ("MiB", "data", 1048576.0),
        ("GB", "data", 1e9),
        ("bit", "data", 0.125),
        ("Mb", "data", 125000.0),  # megabit: a lower-case b is a bit
        ("B/s", "data/time", 1.0),
        ("MiB/s", "data/time", 1048576.0),
        ("MB/s", "data/time", 1e6),
        ("Gbit/s", "data/time", 125e6),
        ("Mbps", "data/time", 125000.0),
        ("MBps", "data/time", 1e6),
        ("KiB/ms", "data/time", 1024.0 / 1e-3),
        ("ops/s", "operations/time", 1.0),
        ("kops/s", "operations/time", 1000.0),
        ("IOPS", "operations/time", 1.0),
        ("kIOPS", "operations/time", 1000.0),
        ("req/s", "requests/time", 1.0),
        ("ns/op", "time/operations", 1e-9),
        ("B/op", "data/operations", 1.0),
        ("ops", "operations", 1.0),
        ("%", "percent", 1.0),
    ],
)
def test_units_parse_to_dimension_and_scale(text: str, dimension: str, scale: float) -> None:
    quantity = parse_unit(text)
    assert quantity is not None
    assert quantity.dimension == dimension
    assert quantity.scale == pytest.approx(scale, rel=1e-15)


@pytest.mark.parametrize("text", ["", "  ", "latency", "widgets/s", "ms/s", "a/b/c", "kiB", None])
def test_unknown_units_are_unknown(text: str | None) -> None:
    assert parse_unit(text) is None


def test_conversion_factors() -> None:
    ms, us = parse_unit("ms"), parse_unit("us")
    mib_s, gbit_s, latency = parse_unit("MiB/s"), parse_unit("Gbit/s"), parse_unit("ns/op")
    assert ms and us and mib_s and gbit_s and latency
    assert conversion_factor(us, ms) == pytest.approx(1e-3)  # 1500 us = 1.5 ms
    assert conversion_factor(ms, us) == pytest.approx(1e3)
    # 1 Gbit/s = 1e9 / 8 B/s = 125,000,000 / 1,048,576 MiB/s
    assert conversion_factor(gbit_s, mib_s) == pytest.approx(119.20928955078125, rel=1e-15)
    assert conversion_factor(ms, mib_s) is None
    assert conversion_factor(latency, ms) is None  # time per operation is not a time
