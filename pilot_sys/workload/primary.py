"""Which of a workload's performance indices is its *primary* one: the number a result leads
with and a comparison ranks by unless told otherwise.

One rule, used by ``compare`` (files, result directories and ``--run``) and by the session
summary, so both lead with the same PI:

1. a timed command's round time (``round_time``): what a person timing a command asked for;
2. else the first data rate (bytes or bits per unit of time) that gates the session: the
   bandwidth of fio, iperf3, dd and the built-in workload;
3. else the first PI that gates the session (a workload's own reading, ``work_rate``);
4. else the first PI at all.

The WPS fit (``wps``) is never primary while any other PI exists: it is derived from the
rounds' durations and work amounts (the Pilot paper, §III-E), reported alongside the
workload's own figures rather than instead of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Protocol

ROUND_TIME_PI = "round_time"
WPS_PI = "wps"
# bytes or bits per time unit, with or without a prefix: B/s, MiB/s, Gbit/s, kb/s, Mbps
_DATA_RATE = re.compile(r"^(?:[KMGTPE]i|[kKMGTPE])?(?:B|b|bit|byte)(?:/s|/sec|ps)$")


class PILike(Protocol):
    """What the rule reads of a PI: a ``PISpec`` or a result's ``PIResult``."""

    name: str
    unit: str
    gates_stop: bool


def is_data_rate(unit: str) -> bool:
    """Whether ``unit`` is bytes or bits per second (``B/s``, ``MiB/s``, ``Gbit/s``, ``Mbps``)."""
    return bool(_DATA_RATE.match(unit.strip()))


def primary_pi(pis: Iterable[PILike]) -> str | None:
    """The name of the primary PI among ``pis`` (in the workload's order); None when empty."""
    listed = list(pis)
    own = [p for p in listed if p.name != WPS_PI and getattr(p, "source", None) != WPS_PI]
    rules = (
        lambda p: p.name == ROUND_TIME_PI,
        lambda p: p.gates_stop and is_data_rate(p.unit),
        lambda p: p.gates_stop,
        lambda p: True,
    )
    for rule in rules:
        chosen = next((p for p in own if rule(p)), None)
        if chosen is not None:
            return chosen.name
    return listed[0].name if listed else None
