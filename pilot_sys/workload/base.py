"""The contract between workloads and the session engine.

A workload runs one *round* for a given work amount and returns what it measured:
per-round *readings* (one number per performance index, e.g. the round's throughput) and,
where the workload can give them, *unit readings* (many time-ordered numbers per index within
the round, e.g. fio's per-window bandwidth), which the engine uses for warm-up/cool-down
removal with EDM. See the Pilot paper (§III-A) and its documentation on warm-up and cool-down
phase detection.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from pilot_sys.stats.pi import PIType

__all__ = ["PISpec", "PIType", "ProcessUsage", "RoundOutput", "Workload"]


class PISpec(BaseModel):
    """A performance index a workload reports."""

    name: str  # e.g. "write_bw"
    unit: str  # e.g. "B/s", "s", "IOPS"
    pi_type: PIType = PIType.ARITHMETIC
    higher_is_better: bool = True
    description: str = ""
    # False: reported with its CI, but the session does not wait for it (e.g. p99.9 latency or
    # retransmit counts, too noisy to gate a session on).
    gates_stop: bool = True
    # What each unit reading of a rate covers, which decides how rates average to total work over
    # total time: "time" = equal time windows (fio's log_avg_msec logs, iperf3 intervals), whose
    # arithmetic mean is that; "work" = equal work (one reading per block), whose harmonic mean is.
    # None: the source does not know, and the analysis guesses from the timestamps.
    unit_weighting: Literal["time", "work"] | None = None


class ProcessUsage(BaseModel):
    """The child's own resource use (``wait4``'s rusage of the reaped child, its reaped
    children included): the CPU it spent in user and kernel mode, and its peak resident set.

    The kernel carries the spawning process's peak RSS across ``exec`` into the child's, so a
    peak no higher than the runner's own says nothing about the command: it is None then."""

    user_seconds: float
    system_seconds: float
    max_rss_bytes: int | None = None


class RoundOutput(BaseModel):
    """What one round produced. Arrays are kept as numpy arrays in memory."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    work_amount: float
    duration: float  # seconds, wall clock of the round as measured by the runner
    returncode: int = 0
    readings: dict[str, float] = Field(default_factory=dict)  # PI name -> one value for the round
    # PI name -> values in time order
    unit_readings: dict[str, np.ndarray] = Field(default_factory=dict)
    # optional, seconds since round start
    unit_timestamps: dict[str, np.ndarray] = Field(default_factory=dict)
    # for the WPS regression: work actually done (bytes, ops), if known
    work_done: float | None = None
    output_files: list[Path] = Field(default_factory=list)  # kept in the round's directory
    warnings: list[str] = Field(default_factory=list)
    usage: ProcessUsage | None = None  # a command's CPU time and peak RSS (None: in-process)


@runtime_checkable
class Workload(Protocol):
    """Anything the session engine can run in rounds."""

    name: str

    def pi_specs(self) -> list[PISpec]:
        """The performance indices this workload reports (may be known only after a first round)."""
        ...

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        """Run one round of ``work_amount`` work, keeping its raw output in ``round_dir``."""
        ...

    def data_path_args(self) -> list[str]:
        """Arguments that name files, directories or devices the workload touches (for the data
        path)."""
        ...
