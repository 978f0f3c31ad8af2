"""iperf3's JSON output (``-J``), client or server side, TCP or UDP.

The reading ``bw`` is what arrived (``end.sum_received``, bits/s / 8 = B/s): the goodput both ends
agree on. The per-interval sums are the unit readings: rates over equal time intervals (``-i``),
declared as such (``unit_weighting="time"``) so the session averages them arithmetically, which is
total bytes over total time. TCP adds the sender's ``retransmits``; UDP adds ``jitter`` (s) and
``lost_percent``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec
from pilot_sys.workload.parsers.result import CapturedOutput, MalformedOutput, ParsedOutput

BW = PISpec(
    name="bw",
    unit="B/s",
    pi_type=PIType.HARMONIC,
    unit_weighting="time",
    description="iperf3 bytes received per second (end.sum_received)",
)
RETRANSMITS = PISpec(
    name="retransmits",
    unit="segments",
    higher_is_better=False,
    gates_stop=False,
    description="TCP segments the sender retransmitted",
)
JITTER = PISpec(
    name="jitter",
    unit="s",
    higher_is_better=False,
    gates_stop=False,
    description="UDP jitter the receiver measured",
)
BW_REVERSE = PISpec(
    name="bw_reverse",
    unit="B/s",
    pi_type=PIType.HARMONIC,
    unit_weighting="time",
    description="iperf3 --bidir: bytes per second received in the reverse direction",
)
SLIVER = 0.5  # intervals shorter than this fraction of the median interval are not unit readings
LOSS = PISpec(
    name="lost_percent",
    unit="%",
    higher_is_better=False,
    gates_stop=False,
    description="UDP datagrams lost, percent",
)


def load(captured: CapturedOutput) -> dict[str, Any]:
    """The JSON document, or a one-line error naming the output file."""
    text = captured.text("stdout").strip()
    if not text:
        raise MalformedOutput(
            captured.stdout_name, "iperf3 printed nothing; expected its JSON output (-J)"
        )
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedOutput(
            f"{captured.stdout_name}:{exc.lineno}:{exc.colno}",
            f"expected iperf3 JSON output (-J): {exc.msg}",
        ) from None
    if not isinstance(doc, dict):
        raise MalformedOutput(captured.stdout_name, "expected an iperf3 JSON object")
    return doc


def error_message(captured: CapturedOutput) -> str | None:
    """iperf3 -J reports failures inside its JSON ('error'), not on stderr."""
    try:
        doc = json.loads(captured.text("stdout"))
    except (json.JSONDecodeError, ValueError):
        return None
    return doc.get("error") if isinstance(doc, dict) else None


def parse(captured: CapturedOutput) -> ParsedOutput:
    """Readings and unit readings of one iperf3 run."""
    doc = load(captured)
    if doc.get("error"):
        raise MalformedOutput(captured.stdout_name, f"iperf3 reported an error: {doc['error']}")
    end = doc.get("end") or {}
    total = end.get("sum_received") or end.get("sum")
    if not total or not total.get("seconds"):
        raise MalformedOutput(
            captured.stdout_name, "iperf3 JSON has no end.sum_received (did the test finish?)"
        )
    out = ParsedOutput()
    out.add(BW, total["bits_per_second"] / 8.0)
    out.work_done = float(total["bytes"])
    sent = end.get("sum_sent") or {}
    if "retransmits" in sent:
        out.add(RETRANSMITS, sent["retransmits"])
    udp = end.get("sum") if "jitter_ms" in (end.get("sum") or {}) else total
    if "jitter_ms" in udp:
        out.add(JITTER, udp["jitter_ms"] / 1000.0)
        out.add(LOSS, udp.get("lost_percent", 0.0))
    reverse = end.get("sum_received_bidir_reverse")
    if reverse and reverse.get("seconds"):
        out.add(BW_REVERSE, reverse["bits_per_second"] / 8.0)
        out.work_done += float(reverse["bytes"])
    _interval_units(out, doc, "sum", "bw")
    if reverse:
        _interval_units(out, doc, "sum_bidir_reverse", "bw_reverse")
    return out


def _interval_units(out: ParsedOutput, doc: dict[str, Any], key: str, name: str) -> None:
    """Per-interval rates as unit readings (omitted warm-up intervals excluded)."""
    intervals = [
        i[key] for i in doc.get("intervals", []) if key in i and not i[key].get("omitted", False)
    ]
    if not intervals:
        out.warnings.append(f"iperf3: no intervals for {name} in the JSON, so no unit readings")
        return
    # The server's last interval is often a sliver (< 1 ms) whose rate is noise: drop slivers.
    typical = float(np.median([i["seconds"] for i in intervals]))
    intervals = [i for i in intervals if i["seconds"] >= SLIVER * typical]
    out.add_units(
        name,
        np.array([i["bits_per_second"] for i in intervals]) / 8.0,
        np.array([i["end"] for i in intervals], dtype=float),
    )
