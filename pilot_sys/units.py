"""Numbers as people read them: one formatter per quantity, used by every output.

Values are bytes, seconds and bytes per second inside pilot-sys; people see

- storage sizes and rates with IEC prefixes (``512 B``, ``1.50 GiB``, ``2.17 GiB/s``: powers of
  1024, as storage tools show them);
- network rates in bits per second with decimal prefixes (``9.41 Gbit/s``: how links are rated);
- counts with SI prefixes (``15.3 k IOPS``), durations in s, ms, µs or ns (``102 ms``),
  fractions as percentages (``3.2 %``);
- the precision of a confidence interval as its half width relative to the mean
  (``2.17 GiB/s ± 3.2 %``), and a target, which ``--ci-perc`` gives as a full width, in the
  same form (``± 5 %`` for a 10 % full width).

Three significant digits throughout (an integral count below the first prefix is shown whole);
never an exponent. An unknown value (None, NaN) is shown as ``?`` unless the caller names
another word. Imports nothing from pilot-sys: every layer may use it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import PurePath

SIGNIFICANT = 3
UNKNOWN = "?"

IEC = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
SI = ("", "k", "M", "G", "T", "P", "E")
# byte units a PI or a work amount may be stated in -> bytes
BYTE_UNITS = {
    "B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
    "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
}
SECOND_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
DURATION_STEPS = ((1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s"))
# programs whose byte rates are network traffic (shown in bit/s)
NETWORK_PROGRAMS = frozenset({"iperf3", "iperf", "netperf", "nuttcp", "sockperf"})
# component kinds whose byte rates and limits are network traffic
NETWORK_KINDS = frozenset({"nic", "network", "link"})


def _unknown(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def significant(value: float, digits: int = SIGNIFICANT) -> str:
    """``value`` to ``digits`` significant digits in fixed point; whole digits are never cut
    (``1023`` stays ``1023``), so a value of up to four whole digits is shown exactly."""
    if value == 0:
        return "0"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:.0f}"
    rounded = float(f"{value:.{digits - 1}e}")  # rounding may carry: 9.995 -> 10.0
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:.{decimals}f}"


def _prefixed(value: float, base: int, prefixes: Sequence[str], unit: str, whole_below_base: bool,
              space_before_prefix: bool = False) -> str:
    """Scale by ``base`` until the shown number is below it (a rounding up to ``base`` moves
    on to the next prefix: ``1023.9 KiB`` is ``1.00 MiB``)."""
    sign = "-" if value < 0 else ""
    magnitude = abs(float(value))
    if math.isinf(magnitude):
        return f"{sign}inf {unit}".rstrip()
    index = 0
    while magnitude >= base and index < len(prefixes) - 1:
        magnitude /= base
        index += 1
    while True:
        exact = index == 0 and whole_below_base and magnitude.is_integer()
        shown = f"{magnitude:.0f}" if exact else significant(magnitude)
        if float(shown) < base or index == len(prefixes) - 1:
            break
        magnitude /= base
        index += 1
    prefix = prefixes[index]
    if space_before_prefix:
        tail = " ".join(part for part in (prefix, unit) if part)
        return f"{sign}{shown} {tail}".rstrip()
    return f"{sign}{shown} {prefix}{unit}".rstrip()


def size(value: float | None, missing: str = UNKNOWN) -> str:
    """Bytes with IEC prefixes: ``512 B``, ``1.50 GiB``."""
    if _unknown(value):
        return missing
    return _prefixed(float(value), 1024, IEC, "B", whole_below_base=True)  # type: ignore[arg-type]


def byte_rate(value: float | None, missing: str = UNKNOWN) -> str:
    """Bytes per second with IEC prefixes: ``2.17 GiB/s``."""
    if _unknown(value):
        return missing
    return _prefixed(float(value), 1024, IEC, "B/s", whole_below_base=True)  # type: ignore[arg-type]


def bit_rate(bytes_per_second: float | None, missing: str = UNKNOWN) -> str:
    """A network rate, given in bytes per second, in bits per second with decimal prefixes:
    ``1.25e9`` B/s is ``10.0 Gbit/s``."""
    if _unknown(bytes_per_second):
        return missing
    return _prefixed(8 * float(bytes_per_second), 1000, SI, "bit/s", whole_below_base=True)  # type: ignore[arg-type]


def count(value: float | None, unit: str = "", missing: str = UNKNOWN) -> str:
    """A count or a count per second with SI prefixes: ``15.3 k IOPS``, ``16 rounds``."""
    if _unknown(value):
        return missing
    return _prefixed(float(value), 1000, SI, unit, whole_below_base=True,  # type: ignore[arg-type]
                     space_before_prefix=True)


def duration(seconds: float | None, missing: str = UNKNOWN) -> str:
    """Seconds in s, ms, µs or ns: ``102 ms``, ``3.50 µs``, ``12.3 s``."""
    if _unknown(seconds):
        return missing
    value = float(seconds)  # type: ignore[arg-type]
    if value == 0:
        return "0 s"
    if math.isinf(value):
        return f"{'-' if value < 0 else ''}inf s"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    step = 0
    while step < len(DURATION_STEPS) - 1 and magnitude >= DURATION_STEPS[step + 1][0]:
        step += 1
    while True:
        scale, name = DURATION_STEPS[step]
        shown = significant(magnitude / scale)
        if step == len(DURATION_STEPS) - 1 or float(shown) < 1000:
            return f"{sign}{shown} {name}"
        step += 1  # 999.95 ms rounds to 1000 ms: that is 1.00 s


def percent(fraction: float | None, decimals: int = 1, signed: bool = False, missing: str = UNKNOWN) -> str:
    """A fraction as a percentage: ``0.032`` -> ``3.2 %`` (``+3.2 %`` when ``signed``)."""
    if _unknown(fraction):
        return missing
    return f"{100 * float(fraction):{'+' if signed else ''}.{decimals}f} %"  # type: ignore[arg-type]


def relative_half_width(mean: float | None, low: float | None, high: float | None) -> float | None:
    """Half the interval's width as a fraction of ``|mean|`` (None when it is not defined)."""
    if _unknown(mean) or _unknown(low) or _unknown(high) or mean == 0:
        return None
    return (float(high) - float(low)) / 2 / abs(float(mean))  # type: ignore[arg-type]


def plus_minus(relative_half: float | None) -> str:
    """An interval's precision: ``± 3.2 %`` (its half width relative to the mean)."""
    return f"± {percent(relative_half)}"


def target(full_width: float | None) -> str:
    """A CI target, given as a full width relative to the mean (``--ci-perc 10%``), stated as
    the half width it allows: ``± 5 %``."""
    if _unknown(full_width):
        return f"± {UNKNOWN}"
    return f"± {100 * float(full_width) / 2:g} %"  # type: ignore[arg-type]


def network_component(name: str | None) -> bool:
    """A component whose byte rates are network traffic (``nic:eth0``, ``network:lan``)."""
    if not name:
        return False
    return name.split(":", 1)[0] in NETWORK_KINDS


def network_command(argv: Sequence[str]) -> bool:
    """A workload whose byte rates are network traffic, known from its program (iperf3, ...)."""
    return bool(argv) and PurePath(argv[0]).name in NETWORK_PROGRAMS


def quantity(value: float | None, unit: str, network: bool = False, missing: str = UNKNOWN) -> str:
    """``value`` in ``unit`` with the formatter of its quantity; byte rates in bit/s when
    ``network`` (see :func:`network_component`, :func:`network_command`)."""
    if _unknown(value):
        return missing
    v = float(value)  # type: ignore[arg-type]
    if unit.endswith("/s") and unit[:-2] in BYTE_UNITS:
        rate = v * BYTE_UNITS[unit[:-2]]
        return bit_rate(rate) if network else byte_rate(rate)
    if unit in BYTE_UNITS:
        return size(v * BYTE_UNITS[unit])
    if unit in ("bit/s", "b/s", "bps"):
        return bit_rate(v / 8)
    if unit in SECOND_UNITS:
        return duration(v * SECOND_UNITS[unit])
    if unit == "%":
        return f"{significant(v)} %"
    return count(v, unit)


def work(value: float | None, unit: str, missing: str = UNKNOWN) -> str:
    """A work amount with its unit: ``568 MiB``, ``16 k items``."""
    return quantity(value, unit, missing=missing)


def interval(low: float | None, high: float | None, unit: str, network: bool = False,
             missing: str = UNKNOWN) -> str:
    """``[2.10 GiB/s, 2.24 GiB/s]``."""
    return f"[{quantity(low, unit, network, missing)}, {quantity(high, unit, network, missing)}]"


def estimate(mean: float | None, low: float | None, high: float | None, unit: str, network: bool = False,
             missing: str = UNKNOWN) -> str:
    """A mean and its interval's precision: ``2.17 GiB/s ± 3.2 %`` (the mean alone without one)."""
    shown = quantity(mean, unit, network, missing)
    half = relative_half_width(mean, low, high)
    return shown if half is None else f"{shown} {plus_minus(half)}"
