"""GNU dd's summary on stderr: ``N bytes (...) copied, T s, R UNIT/s``.

Accepts every form coreutils prints (``1 byte copied``, ``500 bytes copied``, ``(67 MB, 64 MiB)``,
the older ``(1.0 MB)``, exponents such as ``2.0871e-05 s``, rates from ``B/s`` to ``GB/s`` or
``Infinity B/s``, decimal commas) and uses the last summary, so ``status=progress`` lines and
SIGUSR1 reports before it are ignored. The rate is recomputed from bytes and seconds, which dd
prints with more digits than the rate.
"""

from __future__ import annotations

import re

from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec
from pilot_sys.workload.parsers.result import CapturedOutput, MalformedOutput, ParsedOutput

_NUMBER = r"[0-9]+(?:[.,][0-9]+)?(?:[eE][-+]?[0-9]+)?"
SUMMARY = re.compile(
    rf"^(?P<bytes>[0-9]+) bytes?(?: \([^)]*\))? copied, (?P<seconds>{_NUMBER}) s, "
    rf"(?P<rate>{_NUMBER}|Infinity|inf) ?(?P<unit>[kKMGTPEZYRQ]?i?B|bytes)/s(?:ec)?\s*$"
)
RECORDS = re.compile(r"^(?P<full>[0-9]+)\+(?P<partial>[0-9]+) records (?P<way>in|out)\s*$")
RATE_UNITS = {"B": 1.0, "bytes": 1.0, "kB": 1e3, "KB": 1e3, "KiB": 1024.0}
for _i, _p in enumerate("MGTPEZYRQ", start=2):
    RATE_UNITS[f"{_p}B"] = 1000.0**_i
    RATE_UNITS[f"{_p}iB"] = 1024.0**_i

BW = PISpec(
    name="bw",
    unit="B/s",
    pi_type=PIType.HARMONIC,
    description="dd bytes copied per second (summary line)",
)


def _number(text: str) -> float:
    return float(text.replace(",", "."))


def parse(captured: CapturedOutput) -> ParsedOutput:
    """The round's bandwidth from dd's last summary line (on stderr)."""
    summary = None
    partial_in = 0
    for physical in captured.lines("stderr"):
        for line in physical.split("\r"):  # status=progress rewrites its line with carriage returns
            if match := SUMMARY.match(line.strip()):
                summary = match
            elif match := RECORDS.match(line.strip()):
                if match["way"] == "in":
                    partial_in = int(match["partial"])
    if summary is None:
        raise MalformedOutput(
            captured.stderr_name,
            "expected dd's summary line 'N bytes (...) copied, T s, R MB/s' (GNU dd, LC_ALL=C); "
            "none found",
        )
    copied = int(summary["bytes"])
    seconds = _number(summary["seconds"])
    if copied == 0:
        raise MalformedOutput(
            captured.stderr_name, "dd copied 0 bytes (check if=, count= and the input's size)"
        )
    out = ParsedOutput(work_done=float(copied))
    if seconds > 0:
        out.add(BW, copied / seconds)
    elif summary["rate"] not in ("Infinity", "inf"):
        out.add(BW, _number(summary["rate"]) * RATE_UNITS[summary["unit"]])
    else:
        raise MalformedOutput(
            captured.stderr_name, "dd reported 0 s (Infinity B/s): the round is too short to time"
        )
    if partial_in > 1:  # one short last record is normal; many mean a pipe gave short reads
        out.warnings.append(
            f"dd read {partial_in} partial record(s); "
            "with pipes add iflag=fullblock so bs*count is copied"
        )
    return out
