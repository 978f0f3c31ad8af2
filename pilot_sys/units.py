"""Numbers as people read them: one formatter per quantity, used by every output.

Values are bytes, seconds and bytes per second inside pilot-sys; people see

- storage sizes and rates with IEC prefixes (``512 B``, ``1.50 GiB``, ``2.17 GiB/s``: powers of
  1024, as storage tools show them);
- network rates in bits per second with decimal prefixes (``9.41 Gbit/s``: how links are rated);
- counts with SI prefixes (``15.3 k IOPS``), durations in s, ms, µs or ns (``102 ms``),
  fractions as percentages (``3.2 %``), work amounts in the workload's own unit as ``-w``
  takes them (``1024 MiB``);
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
    "B": 1,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
    "kB": 10**3,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
}
SECOND_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
# programs whose byte rates are network traffic (shown in bit/s)
NETWORK_PROGRAMS = frozenset({"iperf3", "iperf", "netperf", "nuttcp", "sockperf"})
# component kinds whose byte rates and limits are network traffic
NETWORK_KINDS = frozenset({"nic", "network", "link"})


def _known(value: float | None) -> float | None:
    """``value`` as a float, or None when it is unknown (None or NaN)."""
    if value is None:
        return None
    v = float(value)
    return None if math.isnan(v) else v


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


# A ladder: the steps a quantity is shown in, (factor, label) ascending; a value is shown in
# the largest step whose factor it reaches. ``whole``: integral values of the first step are
# shown whole (512 B, 16 rounds) rather than to three significant digits.
Ladder = tuple[tuple[float, str], ...]


def _prefix_ladder(
    base: int, prefixes: Sequence[str], unit: str, spaced: bool = False, scale: float = 1.0
) -> Ladder:
    def label(prefix: str) -> str:
        return " ".join(part for part in (prefix, unit) if part) if spaced else f"{prefix}{unit}"

    return tuple((base**i / scale, label(prefix)) for i, prefix in enumerate(prefixes))


BYTES = _prefix_ladder(1024, IEC, "B")
BYTE_RATES = _prefix_ladder(1024, IEC, "B/s")
BIT_RATES = _prefix_ladder(1000, SI, "bit/s", scale=8)  # of a value in bytes per second
#: units of physical quantities, written with an SI prefix joined to the symbol
SI_SYMBOLS = frozenset({"Hz", "W", "J", "V", "A"})
DURATIONS: Ladder = ((1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s"))


def _counts(unit: str) -> Ladder:
    return _prefix_ladder(1000, SI, unit, spaced=True)


def _step(magnitude: float, ladder: Ladder, whole: bool) -> tuple[int, str]:
    """The step a magnitude is shown in and its mantissa to three significant digits; a
    mantissa that rounds up to the next step moves there (``1023.9 KiB`` is ``1.00 MiB``)."""
    step = 0
    while step < len(ladder) - 1 and magnitude >= ladder[step + 1][0]:
        step += 1
    while True:
        mantissa = magnitude / ladder[step][0]
        exact = step == 0 and whole and mantissa.is_integer()
        shown = f"{mantissa:.0f}" if exact else significant(mantissa)
        if step == len(ladder) - 1 or float(shown) * ladder[step][0] < ladder[step + 1][0]:
            return step, shown
        step += 1


def _render(value: float, ladder: Ladder, whole: bool) -> str:
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if math.isinf(magnitude):
        return f"{sign}inf {ladder[-1][1]}".rstrip()
    if magnitude == 0:
        base = next((label for factor, label in ladder if factor == 1), ladder[0][1])
        return f"0 {base}".rstrip()
    step, shown = _step(magnitude, ladder, whole)
    return f"{sign}{shown} {ladder[step][1]}".rstrip()


def size(value: float | None, missing: str = UNKNOWN) -> str:
    """Bytes with IEC prefixes: ``512 B``, ``1.50 GiB``."""
    v = _known(value)
    return missing if v is None else _render(v, BYTES, whole=True)


def byte_rate(value: float | None, missing: str = UNKNOWN) -> str:
    """Bytes per second with IEC prefixes: ``2.17 GiB/s``."""
    v = _known(value)
    return missing if v is None else _render(v, BYTE_RATES, whole=True)


def bit_rate(bytes_per_second: float | None, missing: str = UNKNOWN) -> str:
    """A network rate, given in bytes per second, in bits per second with decimal prefixes:
    ``1.25e9`` B/s is ``10.0 Gbit/s``."""
    v = _known(bytes_per_second)
    return missing if v is None else _render(v, BIT_RATES, whole=False)


def count(value: float | None, unit: str = "", missing: str = UNKNOWN) -> str:
    """A count or a count per second with SI prefixes: ``15.3 k IOPS``, ``16 rounds``."""
    v = _known(value)
    return missing if v is None else _render(v, _counts(unit), whole=True)


def duration(seconds: float | None, missing: str = UNKNOWN) -> str:
    """Seconds in s, ms, µs or ns: ``102 ms``, ``3.50 µs``, ``12.3 s``."""
    v = _known(seconds)
    return missing if v is None else _render(v, DURATIONS, whole=False)


def percent(
    fraction: float | None, decimals: int | None = 1, signed: bool = False, missing: str = UNKNOWN
) -> str:
    """A fraction as a percentage: ``0.032`` -> ``3.2 %`` (``+3.2 %`` when ``signed``).
    ``decimals=None``: as few digits as the value needs, for values people gave (``1 %``,
    ``2.5 %``, a budget of ``0.25 %``)."""
    known = _known(fraction)
    if known is None:
        return missing
    value = 100 * known
    if decimals is None:
        shown = significant(value)
        if "." in shown:
            shown = shown.rstrip("0").rstrip(".")
        return f"{'+' if signed and value > 0 else ''}{shown} %"
    return f"{value:{'+' if signed else ''}.{decimals}f} %"


def relative_half_width(mean: float | None, low: float | None, high: float | None) -> float | None:
    """Half the interval's width as a fraction of ``|mean|`` (None when it is not defined)."""
    m, lo, hi = _known(mean), _known(low), _known(high)
    if m is None or lo is None or hi is None or m == 0:
        return None
    return (hi - lo) / 2 / abs(m)


def plus_minus(relative_half: float | None) -> str:
    """An interval's precision: ``± 3.2 %`` (its half width relative to the mean)."""
    return f"± {percent(relative_half)}"


def target(full_width: float | None) -> str:
    """A CI target, given as a full width relative to the mean (``--ci-perc 10%``), stated as
    the half width it allows: ``± 5 %``."""
    full = _known(full_width)
    return f"± {UNKNOWN}" if full is None else f"± {percent(full / 2, decimals=None)}"


def network_component(name: str | None) -> bool:
    """A component whose byte rates are network traffic (``nic:eth0``, ``network:lan``)."""
    if not name:
        return False
    return name.split(":", 1)[0] in NETWORK_KINDS


def network_command(argv: Sequence[str]) -> bool:
    """A workload whose byte rates are network traffic, known from its program (iperf3, ...)."""
    return bool(argv) and PurePath(argv[0]).name in NETWORK_PROGRAMS


def network_traffic(argv: Sequence[str] = (), component: str | None = None) -> bool:
    """Whether a workload's byte rates are shown in bit/s: its program is a network benchmark,
    or the component under test is a network component."""
    return network_command(argv) or network_component(component)


def _ladder_of(unit: str, network: bool) -> tuple[float, Ladder, bool]:
    """How a value in ``unit`` is shown: (its factor to the ladder's base, ladder, whole)."""
    if unit.endswith("/s") and unit[:-2] in BYTE_UNITS:
        return BYTE_UNITS[unit[:-2]], (BIT_RATES if network else BYTE_RATES), not network
    if unit in BYTE_UNITS:
        return BYTE_UNITS[unit], BYTES, True
    if unit in ("bit/s", "b/s", "bps"):
        return 1 / 8, BIT_RATES, False
    if unit in SECOND_UNITS:
        return SECOND_UNITS[unit], DURATIONS, False
    if unit == "%":
        return 1.0, ((1.0, "%"),), False
    if unit in SI_SYMBOLS:  # a physical unit takes its prefix unspaced: 3.60 GHz, not 3.60 G Hz
        return 1.0, _prefix_ladder(1000, SI, unit), False
    return 1.0, _counts(unit), True


def quantity(value: float | None, unit: str, network: bool = False, missing: str = UNKNOWN) -> str:
    """``value`` in ``unit`` with the formatter of its quantity; byte rates in bit/s when
    ``network`` (see :func:`network_component`, :func:`network_command`)."""
    v = _known(value)
    if v is None:
        return missing
    factor, ladder, whole = _ladder_of(unit, network)
    return _render(v * factor, ladder, whole)


WHOLE_WORK_BELOW = 10**6


#: the placeholder older sessions recorded as the work unit when none was given
GENERIC_WORK = "work"


def work(value: float | None, unit: str, missing: str = UNKNOWN) -> str:
    """A work amount in the workload's own unit, as ``-w`` takes it: ``1024 MiB``, ``200000
    items`` (whole amounts below a million exactly), ``2.50 M items``; a fraction of a byte
    unit in bytes' own prefixes (``8.25 GiB``, ``512 KiB``); without a unit (``work``, the
    placeholder) the bare number."""
    v = _known(value)
    if v is None:
        return missing
    if unit == GENERIC_WORK:
        unit = ""  # not a unit: a session without one shows the bare amount, as -w took it
    if v.is_integer() and abs(v) < WHOLE_WORK_BELOW:
        return f"{v:.0f} {unit}".rstrip()
    if unit in BYTE_UNITS:
        return size(v * BYTE_UNITS[unit])  # 8449.56 MiB is 8.25 GiB, as the bytes moved say
    return count(v, unit)


def ci_parts(
    mean: float | None,
    low: float | None,
    high: float | None,
    unit: str,
    network: bool = False,
    missing: str = UNKNOWN,
) -> tuple[str, str, str]:
    """The mean and the interval's bounds on one scale, with enough decimals that the bounds
    differ: three significant digits, more when the interval is narrower than they resolve
    (``1.000 k`` in ``[0.999 k, 1.001 k]``, not ``1.00 k`` in ``[999, 1.00 k]``)."""
    values = [_known(v) for v in (mean, low, high)]
    known = [v for v in values if v is not None]
    lo, hi = values[1], values[2]
    if lo is None or hi is None or not known or any(math.isinf(v) for v in known):
        return (
            quantity(mean, unit, network, missing),
            quantity(low, unit, network, missing),
            quantity(high, unit, network, missing),
        )
    factor, ladder, whole = _ladder_of(unit, network)
    reference = max(abs(v) for v in known) * factor
    if reference == 0:
        zero = quantity(0.0, unit, network)
        return (zero if values[0] is not None else missing), zero, zero
    step, shown = _step(reference, ladder, whole)
    scale, label = ladder[step]
    decimals = len(shown.partition(".")[2])
    half = (hi - lo) / 2 * factor / scale
    if half > 0:  # the half width to one significant digit, three more decimals at the most
        decimals = min(max(decimals, -math.floor(math.log10(half))), decimals + 3)

    def shown_at(v: float | None) -> str:
        if v is None:
            return missing
        return f"{v * factor / scale:.{decimals}f} {label}".rstrip()

    return shown_at(values[0]), shown_at(lo), shown_at(hi)


def interval(
    low: float | None, high: float | None, unit: str, network: bool = False, missing: str = UNKNOWN
) -> str:
    """``[2.10 GiB/s, 2.24 GiB/s]``."""
    _, shown_low, shown_high = ci_parts(None, low, high, unit, network, missing)
    return f"[{shown_low}, {shown_high}]"


def estimate(
    mean: float | None,
    low: float | None,
    high: float | None,
    unit: str,
    network: bool = False,
    missing: str = UNKNOWN,
) -> str:
    """A mean and its interval's precision: ``2.17 GiB/s ± 3.2 %`` (the mean alone without one)."""
    shown, _, _ = ci_parts(mean, low, high, unit, network, missing)
    half = relative_half_width(mean, low, high)
    return shown if half is None else f"{shown} {plus_minus(half)}"
