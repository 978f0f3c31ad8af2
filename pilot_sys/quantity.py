"""The unit written in a data header, as a dimension and a scale, so two columns can be compared.

``latency (ms)`` and ``latency (us)`` measure the same thing on scales 1000 apart; ``latency (ms)``
and ``throughput (MiB/s)`` measure different things. ``parse_unit`` turns the text of a unit into
a ``Quantity``: what it measures (``"time"``, ``"data"``, ``"data/time"``, ``"operations/time"``...)
and the factor that takes a value to that dimension's base unit (seconds, bytes, operations,
percent; quotients of them for rates). Decimal prefixes are powers of 1000 and binary ones
(``KiB``, ``MiB``...) powers of 1024, as in dd and IEC 80000-13; ``KB`` and ``kB`` are both 1000
bytes. ``b``/``bit`` is a bit (1/8 byte), ``B`` a byte: the case of that letter matters.

Formatting numbers for people is ``pilot_sys.units``; this module only understands units.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Quantity", "conversion_factor", "parse_unit"]

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}

_TIME = {
    "ns": 1e-9,
    "nsec": 1e-9,
    "nanosecond": 1e-9,
    "nanoseconds": 1e-9,
    "us": 1e-6,
    "usec": 1e-6,
    "microsecond": 1e-6,
    "microseconds": 1e-6,
    "ms": 1e-3,
    "msec": 1e-3,
    "millisecond": 1e-3,
    "milliseconds": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "hrs": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
}
# Counted things, each its own dimension: a request is not an I/O operation.
_COUNTED = {
    "operations": ("op", "ops", "operation", "operations", "io", "ios", "IO", "IOs"),
    "requests": ("req", "reqs", "request", "requests"),
    "transactions": ("tx", "txn", "txns", "transaction", "transactions"),
    "packets": ("pkt", "pkts", "packet", "packets"),
}
_COUNT_WORDS = {word: kind for kind, words in _COUNTED.items() for word in words}

_DATA = re.compile(r"^(?P<prefix>[KMGTPE]i|[kKMGTPE]|)(?P<what>B|b|bit|bits|byte|bytes)$")
_PER_SECOND = re.compile(r"^(?P<what>.+?)ps$")  # Mbps, MBps, kbps, Gbps
_IOPS = re.compile(r"^(?P<prefix>[kKMG]?)IOPS$")
_PREFIXED_COUNT = re.compile(r"^(?P<prefix>[kKMG])(?P<word>[A-Za-z]+)$")


@dataclass(frozen=True)
class Quantity:
    """What a unit measures and how big it is: ``value * scale`` is in the base unit."""

    text: str  # the unit as written, e.g. "MiB/s"
    dimension: str  # "time", "data", "data/time", "operations/time", "percent", ...
    scale: float  # MiB/s -> 1048576.0 (bytes per second)

    def describe(self) -> str:
        """``MiB/s (data/time)``: the unit and what it measures, for messages."""
        return f"{self.text} ({self.dimension})"


def _prefix(prefix: str) -> float:
    return _BINARY[prefix] if prefix in _BINARY else _DECIMAL[prefix]


def _simple(text: str) -> tuple[str, float] | None:
    """A unit without a ``/``: (dimension, scale) or None when it is not one we know."""
    if text in _TIME:
        return "time", _TIME[text]
    if text == "%":
        return "percent", 1.0
    if match := _DATA.match(text):
        bits = match["what"] in ("b", "bit", "bits")
        return "data", _prefix(match["prefix"]) / (8.0 if bits else 1.0)
    if text in _COUNT_WORDS:
        return _COUNT_WORDS[text], 1.0
    if (match := _PREFIXED_COUNT.match(text)) and match["word"] in _COUNT_WORDS:
        return _COUNT_WORDS[match["word"]], _DECIMAL[match["prefix"]]
    return None


def parse_unit(text: str | None) -> Quantity | None:
    """The ``Quantity`` a unit's text names, or None when the text is empty or not understood.

    Accepts a simple unit (``ms``, ``µs``, ``MiB``, ``Gbit``, ``ops``, ``%``), a quotient of two
    (``MiB/s``, ``Gbit/s``, ``ops/s``, ``ns/op``, ``B/op``), ``...ps`` rates (``Mbps``, ``MBps``)
    and ``IOPS``/``kIOPS``.
    """
    if text is None:
        return None
    unit = " ".join(text.split()).replace("\u00b5", "u").replace("\u03bc", "u")  # micro sign, mu
    if not unit:
        return None
    if match := _IOPS.match(unit):
        return Quantity(text.strip(), "operations/time", _DECIMAL[match["prefix"]])
    if "/" in unit:
        parts = [part.strip() for part in unit.split("/")]
        if len(parts) != 2:
            return None
        top, bottom = _simple(parts[0]), _simple(parts[1])
        if top is None or bottom is None or top[0] == bottom[0]:
            return None
        return Quantity(text.strip(), f"{top[0]}/{bottom[0]}", top[1] / bottom[1])
    simple = _simple(unit)
    if simple is not None:
        return Quantity(text.strip(), simple[0], simple[1])
    if (match := _PER_SECOND.match(unit)) and (top := _simple(match["what"])) and top[0] == "data":
        return Quantity(text.strip(), "data/time", top[1])
    return None


def conversion_factor(source: Quantity, target: Quantity) -> float | None:
    """The factor taking values in ``source`` to ``target``; None if they measure other things."""
    if source.dimension != target.dimension:
        return None
    return source.scale / target.scale
