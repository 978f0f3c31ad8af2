"""The colours of every picture pilot-sys draws, defined once so that they mean the same thing
in the session plots, the monitor picture, ``pilot-sys graph --png`` and report.html.

- **Utilization** (a fraction of a component's stated limit) is a fill on one scale: pale green
  at 0, yellow half way, orange at the bottleneck threshold, red at 100 % and above. A
  component that was not measured is white; one measured without a known limit is grey.
- **Roles** are frames and lines: the component under test (CUT) blue, a hidden bottleneck red,
  every other component a neutral dark grey; the threshold a dashed dark line.
- **Data that does not count** is grey: rounds the verdict excluded, rounds not analysed. Parts of
  a round removed as warm-up or cool-down are sand, so that they read apart from excluded rounds.
- **Status** (the verdict banner, the HTML report): valid green, invalid red, limit reached
  amber, anything else grey.

Pure Python (hex strings): the HTML report uses them as CSS colours without matplotlib, and
:func:`utilization_cmap` builds the same scale as a matplotlib colormap when a plot needs one.
"""

from __future__ import annotations

from typing import Any

# -- roles ------------------------------------------------------------------------------------
CUT = "#1f5fbf"  # the component under test: frames, lines, and the readings that measure it
HIDDEN = "#c62828"  # a hidden bottleneck: frames and lines
OTHER = "#4d4d4d"  # any other component's line; also text
THRESHOLD = "#333333"  # the bottleneck threshold line (dashed)
MEASURE = CUT  # readings of a PI: what a session measures is the CUT
MEASURE_LIGHT = "#a9c4ea"  # the 5-95 % band of unit readings
MEASURE_MID = "#5b8ed6"  # the interquartile band of unit readings
ESTIMATE = "#1b1b1b"  # the final mean (line) and its interval (band, with alpha)
TARGET = "#2e7d32"  # the target width around the mean (dashed)
EXCLUDED = "#9e9e9e"  # rounds excluded by the verdict, rounds not analysed
REMOVED = "#d9b26f"  # unit readings removed as warm-up or cool-down (non-stable phases)
FAILED = "#7b1fa2"  # rounds whose workload failed
BUSY = "#b0bec5"  # busy time (share of wall time with a request in flight): a fill, not a line
GRID = "#e6e6e6"

# -- utilization scale ------------------------------------------------------------------------
NOT_MEASURED = "#ffffff"  # no signal at all (``graph --png`` before any run)
NO_LIMIT = "#d9d9d9"  # measured, but no limit is known, so no utilization
# (fraction, colour) stops; the threshold stop moves with the threshold in use
SCALE_LOW = "#dcefd9"
SCALE_MID = "#f7e48b"
SCALE_THRESHOLD = "#f29b4b"
SCALE_FULL = "#c62828"
DEFAULT_THRESHOLD = 0.8

# -- status -----------------------------------------------------------------------------------
STATUS: dict[str, str] = {
    "valid": "#2e7d32",
    "invalid": "#c62828",
    "limit_reached": "#e08a00",
    "incomplete": "#e08a00",
    "workload_failed": "#616161",
    "interrupted": "#616161",
}
STATUS_UNKNOWN = "#616161"


def status_colour(status: str) -> str:
    """The banner colour of a session status (grey for one this palette does not know)."""
    return STATUS.get(str(status), STATUS_UNKNOWN)


def _rgb(colour: str) -> tuple[float, float, float]:
    h = colour.lstrip("#")
    return (int(h[0:2], 16) / 255, int(h[2:4], 16) / 255, int(h[4:6], 16) / 255)


def _hex(rgb: tuple[float, float, float]) -> str:
    return "#" + "".join(f"{round(255 * max(0.0, min(1.0, c))):02x}" for c in rgb)


def scale_stops(threshold: float = DEFAULT_THRESHOLD) -> list[tuple[float, str]]:
    """The utilization scale's stops, ascending in [0, 1]."""
    t = min(max(threshold, 0.05), 0.95)
    return [(0.0, SCALE_LOW), (t / 2, SCALE_MID), (t, SCALE_THRESHOLD), (1.0, SCALE_FULL)]


def utilization_colour(fraction: float | None, threshold: float = DEFAULT_THRESHOLD) -> str:
    """The fill of a component at ``fraction`` of its limit (``NO_LIMIT`` when unknown);
    values above 1 are drawn as 1 (the stated limit was exceeded: the box is as hot as it gets)."""
    if fraction is None or fraction != fraction:  # None or NaN
        return NO_LIMIT
    x = min(max(float(fraction), 0.0), 1.0)
    stops = scale_stops(threshold)
    for (x0, c0), (x1, c1) in zip(stops, stops[1:], strict=False):
        if x <= x1:
            w = 0.0 if x1 == x0 else (x - x0) / (x1 - x0)
            a, b = _rgb(c0), _rgb(c1)
            return _hex(
                (a[0] + w * (b[0] - a[0]), a[1] + w * (b[1] - a[1]), a[2] + w * (b[2] - a[2]))
            )
    return SCALE_FULL


def text_colour(fill: str) -> str:
    """Black or white, whichever reads better on ``fill`` (WCAG relative luminance)."""

    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in _rgb(fill))
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#000000" if luminance > 0.179 else "#ffffff"


def utilization_cmap(threshold: float = DEFAULT_THRESHOLD) -> Any:
    """The utilization scale as a matplotlib colormap (imports matplotlib)."""
    from matplotlib.colors import LinearSegmentedColormap

    return LinearSegmentedColormap.from_list("pilot_sys_utilization", scale_stops(threshold))
