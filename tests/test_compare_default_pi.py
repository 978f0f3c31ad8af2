"""Which PI `compare` ranks by when the user names none."""

from __future__ import annotations

from pilot_sys.session.interleave import _first_with_ci
from pilot_sys.session.result import PIResult


def _pi(name: str, mean: float, ci: tuple[float, float] | None) -> PIResult:
    low, high = ci if ci is not None else (None, None)
    return PIResult(name=name, unit="B/s", source="readings", mean=mean, ci_low=low, ci_high=high, target=0.1)


def test_default_skips_a_pi_without_ci_on_some_side() -> None:
    # found with two saved fio sessions: per-round write_bw had no CI on one side, the WPS fit had one on both
    a = {"write_bw": _pi("write_bw", 2.0e9, (1.9e9, 2.1e9)), "wps": _pi("wps", 2.5e9, (2.2e9, 3.0e9))}
    b = {"write_bw": _pi("write_bw", 9.0e8, None), "wps": _pi("wps", 9.1e8, (7.7e8, 1.1e9))}
    assert _first_with_ci(["write_bw", "wps"], [a, b]) == "wps"


def test_default_is_the_first_pi_when_none_has_a_ci_everywhere() -> None:
    a = {"x": _pi("x", 1.0, None), "y": _pi("y", 2.0, None)}
    assert _first_with_ci(["x", "y"], [a, a]) == "x"
    assert _first_with_ci([], [a]) is None
