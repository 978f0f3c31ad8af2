"""What every output parser returns, and the error it raises on output it cannot read.

Parsers are pure functions of a round's captured output, so they live apart from the runner:
the runner captures, a parser reads, and either can be tested alone against real fixtures.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from pilot_sys.errors import WorkloadFailed
from pilot_sys.stats.pi import MEASURABLE_MAX, unmeasurable
from pilot_sys.workload.base import PISpec

Stream = Literal["stdout", "stderr"]
_TAIL_BYTES = 65536  # enough for the last line of any sensible output


class CapturedOutput(BaseModel):
    """One round's raw output: the files the runner streamed it to, or the text itself.

    Parsers read it through ``text``, ``lines`` and ``last_line`` rather than the fields, so a
    workload that prints hundreds of MB is never held whole in memory unless a parser needs the
    whole document (fio's and iperf3's JSON); line-oriented output is parsed as it is read.
    """

    stdout: str | None = None  # the text itself (tests, in-process workloads)...
    stderr: str | None = None
    stdout_path: Path | None = None  # ...or the file holding it
    stderr_path: Path | None = None
    stdout_name: str = "stdout.txt"  # how error messages name the output (path or file name)
    stderr_name: str = "stderr.txt"
    round_dir: Path | None = None  # the round's folder (messages; logs when log_dir is not set)
    # a private folder the runner had the tool write its logs to (fio's bw/iops/lat logs), read
    # here and removed by the runner after parsing: the unit readings are journaled instead
    log_dir: Path | None = None

    @classmethod
    def from_files(
        cls,
        stdout: Path,
        stderr: Path,
        round_dir: Path | None = None,
        log_dir: Path | None = None,
    ) -> CapturedOutput:
        """Output the runner wrote to files (a missing file reads as empty)."""
        return cls(
            stdout_path=stdout,
            stderr_path=stderr,
            stdout_name=str(stdout),
            stderr_name=str(stderr),
            round_dir=round_dir,
            log_dir=log_dir,
        )

    @property
    def logs(self) -> Path | None:
        """Where the tool's log files are: the private log folder, else the round's folder."""
        return self.log_dir if self.log_dir is not None else self.round_dir

    def _path(self, stream: Stream) -> Path | None:
        path = self.stdout_path if stream == "stdout" else self.stderr_path
        return path if path is not None and path.exists() else None

    def text(self, stream: Stream = "stdout") -> str:
        """The whole output (undecodable bytes replaced): for parsers of whole documents."""
        given = self.stdout if stream == "stdout" else self.stderr
        if given is not None:
            return given
        path = self._path(stream)
        return path.read_text(errors="replace") if path is not None else ""

    def lines(self, stream: Stream = "stdout") -> Iterator[str]:
        """The output's lines without their line ends, read as they are needed."""
        given = self.stdout if stream == "stdout" else self.stderr
        if given is not None:
            yield from given.splitlines()
            return
        path = self._path(stream)
        if path is None:
            return
        with path.open(errors="replace") as handle:  # universal newlines, as str.splitlines
            for line in handle:
                yield line.rstrip("\n")

    def last_line(self, stream: Stream = "stdout", limit: int = 200) -> str:
        """The last non-blank line (at most ``limit`` characters), reading only the file's tail."""
        given = self.stdout if stream == "stdout" else self.stderr
        if given is None:
            path = self._path(stream)
            if path is None:
                return ""
            with path.open("rb") as handle:
                handle.seek(max(0, path.stat().st_size - _TAIL_BYTES))
                given = handle.read().decode(errors="replace")
        lines = [line.strip() for line in given.splitlines() if line.strip()]
        return lines[-1][:limit] if lines else ""


MEASURABLE_MAX_EXP = np.log10(MEASURABLE_MAX)


class NonFinite(BaseModel):
    """Readings of one PI that were NaN or infinite: counted and located, never averaged.

    A workload that prints ``nan`` has failed at measuring; averaging around it (or dropping it)
    would report a number the workload never measured.
    """

    pi: str
    count: int  # non-finite values of this PI in the round
    total: int  # all values of this PI in the round
    first: str  # the first one as printed, e.g. "nan" or "-inf"
    where: str  # output name, with :LINE[:COL] when known
    line: int | None = None

    def message(self) -> str:
        at = f"first at line {self.line}" if self.line is not None else f"first in {self.where}"
        return (
            f"{self.count} value(s) no statistics can use (NaN, infinite, or beyond "
            f"1e±{MEASURABLE_MAX_EXP:g}) ({self.first!r}) of {self.total} in column "
            f"{self.pi!r}, {at}"
        )


class ParsedOutput(BaseModel):
    """Readings (one per PI), unit readings (time-ordered, per PI) and the PIs' specs.

    ``non_finite`` lists the PIs whose values held NaN or infinities: those PIs have no reading,
    and the round is a failed measurement (the runner raises on it).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    specs: list[PISpec] = Field(default_factory=list)
    readings: dict[str, float] = Field(default_factory=dict)
    unit_readings: dict[str, np.ndarray] = Field(default_factory=dict)
    # seconds since round start
    unit_timestamps: dict[str, np.ndarray] = Field(default_factory=dict)
    work_done: float | None = None  # bytes the workload reports it moved, for the WPS fit
    warnings: list[str] = Field(default_factory=list)
    non_finite: list[NonFinite] = Field(default_factory=list)

    def add(self, spec: PISpec, value: float, where: str = "") -> None:
        """Record one reading together with its spec (keeps specs and readings in step); a
        non-finite value is recorded in ``non_finite`` instead, with ``where`` it came from."""
        if spec.name not in self.readings and all(s.name != spec.name for s in self.specs):
            self.specs.append(spec)
        if unmeasurable(np.array([value]))[0]:
            self.non_finite.append(
                NonFinite(
                    pi=spec.name,
                    count=1,
                    total=1,
                    first=repr(float(value)),
                    where=where or "the workload's output",
                )
            )
            return
        self.readings[spec.name] = float(value)

    def add_units(
        self, name: str, values: np.ndarray, timestamps: np.ndarray | None = None, where: str = ""
    ) -> None:
        """Record a PI's unit readings; a PI with unit readings must also have a reading.

        Non-finite unit readings are reported in ``non_finite`` and the PI's units dropped."""
        if values.size == 0:
            return
        values = np.asarray(values, dtype=float)
        bad = unmeasurable(values)
        if bad.any():
            first = int(np.argmax(bad))
            self.non_finite.append(
                NonFinite(
                    pi=name,
                    count=int(bad.sum()),
                    total=int(values.size),
                    first=repr(float(values[first])),
                    where=where or "the workload's output",
                )
            )
            return
        self.unit_readings[name] = values
        if timestamps is not None:
            self.unit_timestamps[name] = np.asarray(timestamps, dtype=float)


class MalformedOutput(WorkloadFailed):
    """The round's output is not what the parser expects: a failed round, reported in one line.

    ``where`` names the output file (with line:column when known), like ``BadInput`` does.
    """

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")
