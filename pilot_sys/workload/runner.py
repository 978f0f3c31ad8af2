"""A workload that is a command line, run once per round (the Pilot paper's third kind, §IV).

Each round: substitute the macros, run the command in its own process group with its output
streamed to ``round_dir/stdout.txt`` and ``stderr.txt``, time it, check the return code, and
parse the output from those files (line-oriented output as it is read, never held whole: a
workload may print GBs).
Options are added so that the parsers get what they need: fio gets JSON output and windowed
bandwidth, IOPS and latency logs (unit readings, ``fio_options``) in a private temporary folder
that is removed once they are read (the unit readings are journaled in ``units.npz``), iperf3
gets ``-J`` and a short report interval (``iperf3_options``), dd runs with ``LC_ALL=C`` so its
summary line has one known form.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from pilot_sys.errors import BadInput, WorkloadFailed
from pilot_sys.limits import OUTPUT_BYTES
from pilot_sys.stats.pi import PIType
from pilot_sys.workload import macros, tool_options
from pilot_sys.workload.base import PISpec, RoundOutput
from pilot_sys.workload.cgroup_launch import CgroupTarget, in_cgroup
from pilot_sys.workload.command_line import data_paths, program_index, program_name
from pilot_sys.workload.parsers import (
    PARSERS,
    CapturedOutput,
    MalformedOutput,
    ParsedOutput,
    iperf3,
    table,
)
from pilot_sys.workload.process import WorkloadTimeout, run_process

FIO_LOG_PREFIX = "fio"  # logs land in the log folder as fio_bw.1.log, fio_iops.1.log...
# fio's log window: short enough that a round of a few tenths of a second of I/O (quick-preset
# rounds) gives the 20+ windows EDM needs to find its warm-up, long enough that a window averages
# several I/Os of a fast device (1 MiB writes at 2 GiB/s: ~20 per window)
FIO_LOG_AVG_MSEC = 10
REPRESENTATIVE_WORK_AMOUNT = 1.0  # what data_path_args() substitutes: paths rarely depend on it
# a round still running at the session limit is cut once it overruns the limit by this share of
# it: a round the planner sized to fit, a little slower than predicted, is still kept whole
LIMIT_GRACE = 0.05


def trim_output(path: Path) -> int | None:
    """Cut a round's output file to the stored-output limit; its size before, when cut. The
    disk holds it whole while the round runs: the workload writes to the file itself, so that
    writing costs it no pipe and no copy."""
    try:
        size = path.stat().st_size
        if size <= OUTPUT_BYTES.value():
            return None
        os.truncate(path, OUTPUT_BYTES.value())
    except OSError:
        return None
    return size


def detect_parser(argv: list[str]) -> str:
    """The parser for a command: fio, iperf3 and dd are recognised, anything else gets ``none``."""
    name = program_name(argv)
    return name if name in ("fio", "iperf3", "dd") else "none"


class RoundCutByLimit(WorkloadFailed):
    """A round still running at the session limit, killed with its process tree: the session
    ends at its limit (not a workload failure), and the round is journaled as cut."""


class CommandWorkload:
    """Runs ``argv`` once per round and parses its output into readings and unit readings.

    ``session_deadline`` (``time.monotonic()`` seconds, set by the session when it has a limit)
    bounds every round: one that hangs is cut at the limit (plus ``LIMIT_GRACE`` of it) and
    ``cut_by_limit`` says why, instead of holding the session past its limit."""

    def __init__(
        self,
        argv: list[str],
        *,
        parser: str | None = None,
        env: dict[str, str] | None = None,
        accepted_returncodes: Iterable[int] = frozenset({0}),
        timeout: float | None = None,
        cwd: Path | str | None = None,
        name: str | None = None,
        pi_specs: list[PISpec] | None = None,
        integer_work_amount: bool = True,
        fio_log_avg_msec: int = FIO_LOG_AVG_MSEC,
        work_amount_unit: str = "work",
        cgroup: CgroupTarget | None = None,
    ) -> None:
        if not argv or not argv[0]:
            raise BadInput("command", "no command given to run")
        chosen = parser or detect_parser(argv)
        if chosen not in PARSERS:
            raise BadInput(
                "--parser", f"unknown parser {chosen!r}; choose one of {', '.join(PARSERS)}"
            )
        if timeout is not None and timeout <= 0:
            raise BadInput("--timeout", f"must be a positive number of seconds, got {timeout:g}")
        if fio_log_avg_msec <= 0:
            raise BadInput("fio_log_avg_msec", "must be a positive number of milliseconds")
        self.argv = list(argv)
        self.parser = chosen
        self.env = dict(env or {})
        self.accepted_returncodes = frozenset(accepted_returncodes)
        self.timeout = timeout
        self.cwd = Path(cwd) if cwd is not None else Path.cwd()
        self.name = name or program_name(self.argv)
        self.integer_work_amount = integer_work_amount
        self.fio_log_avg_msec = fio_log_avg_msec
        self.work_amount_unit = work_amount_unit
        self.cgroup = cgroup  # every round starts inside it (``cgroup_launch.in_cgroup``)
        self.nominal_work_amount = not macros.uses_work_amount(self.argv + list(self.env.values()))
        self.session_deadline: float | None = None
        self.session_limit: float | None = None  # the limit the deadline comes from, for messages
        self.cut_by_limit: str | None = None
        self._overrides = {spec.name: spec for spec in pi_specs or []}
        self._specs: list[PISpec] = list(pi_specs or [])
        if self.parser == "none":
            self._specs = [self._timing_spec()]
        if not self.cwd.is_dir():
            raise BadInput(str(self.cwd), "working directory does not exist")

    def _work_rate_spec(self) -> PISpec:
        return self._overrides.get(
            "work_rate",
            PISpec(
                name="work_rate",
                unit=f"{self.work_amount_unit}/s",
                pi_type=PIType.HARMONIC,
                description="work amount divided by the round's wall-clock duration",
            ),
        )

    def _round_time_spec(self) -> PISpec:
        return self._overrides.get(
            "round_time",
            PISpec(
                name="round_time",
                unit="s",
                pi_type=PIType.ARITHMETIC,
                higher_is_better=False,
                description="the round's wall-clock duration (the command has no %WORK_AMOUNT%)",
            ),
        )

    @property
    def _times_rounds(self) -> bool:
        """Every round does the same, unnamed work (no %WORK_AMOUNT%, no --work-unit)."""
        return self.nominal_work_amount and self.work_amount_unit == "work"

    def _timing_spec(self) -> PISpec:
        """What ``--parser none`` measures: the rate of work when the work amount varies or has
        a unit (``--work-unit requests``: a round is one request), else the time a round takes:
        ``sleep 0.1`` is about 102 ms a round, not 9.8 work/s."""
        return self._round_time_spec() if self._times_rounds else self._work_rate_spec()

    def pi_specs(self) -> list[PISpec]:
        """The PIs: known up front for ``--parser none`` or given ``pi_specs``, else after a
        first round."""
        return list(self._specs)

    def command_for(
        self, work_amount: float, round_dir: Path, log_dir: Path | None = None
    ) -> list[str]:
        """The exact argv a round runs: macros substituted, parser options added (fio's logs go
        to ``log_dir``, else to the round's folder)."""
        text = macros.format_work_amount(work_amount, integer=self.integer_work_amount)
        argv = macros.substitute(self.argv, text, round_dir.resolve())
        at = program_index(argv) + 1
        rest = argv[at:]
        added: list[str] = []
        if self.parser == "fio":
            prefix = (log_dir or round_dir).resolve() / FIO_LOG_PREFIX
            added, rest = tool_options.fio_options(rest, prefix, self.fio_log_avg_msec)
            if log_dir is not None:  # client/server: the servers read the job files only
                rest = tool_options.fio_client_job_files(
                    rest, self.cwd, log_dir, prefix, self.fio_log_avg_msec
                )
        elif self.parser == "iperf3":
            added = tool_options.iperf3_options(rest)
        final = argv[:at] + added + rest
        return in_cgroup(final, self.cgroup) if self.cgroup is not None else final

    def _environment(self, work_amount: str, round_dir: Path) -> dict[str, str]:
        """The user's environment, plus ``env`` with the macros substituted in its values too."""
        values = macros.substitute(list(self.env.values()), work_amount, round_dir.resolve())
        env = {**os.environ, **dict(zip(self.env, values, strict=True))}
        if self.parser == "dd":
            env["LC_ALL"] = "C"  # one summary-line format, whatever the user's locale
        return env

    def _captured(
        self, argv: list[str], round_dir: Path, log_dir: Path | None = None
    ) -> CapturedOutput:
        """The round's output as the files it was streamed to: parsers read what they need."""
        stdout_path = round_dir / "stdout.txt"
        if self.parser == "fio":  # fio --output=FILE writes its report there instead of stdout
            target = next((a.split("=", 1)[1] for a in argv if a.startswith("--output=")), None)
            if target:
                stdout_path = self.cwd / target
        return CapturedOutput.from_files(
            stdout_path, round_dir / "stderr.txt", round_dir, log_dir=log_dir
        )

    def _parse(self, captured: CapturedOutput, work_amount: float, duration: float) -> ParsedOutput:
        if self.parser == "none":
            out = ParsedOutput()
            if duration <= 0:
                raise MalformedOutput(captured.stdout_name, "the round took no measurable time")
            if self._times_rounds:
                out.add(self._round_time_spec(), duration)
            else:
                out.add(self._work_rate_spec(), work_amount / duration)
            return out
        if self.parser in ("csv", "lines"):
            out = table.parse(captured, one_column=self.parser == "lines", specs=self._overrides)
        else:
            function = PARSERS[self.parser]
            assert function is not None
            out = function(captured)
        if out.non_finite:  # a failed measurement: averaging around it would invent a result
            first = out.non_finite[0]
            where = first.where if first.line is not None else captured.stdout_name
            raise MalformedOutput(
                where,
                "the workload printed values that are not measurements: "
                + "; ".join(n.message() for n in out.non_finite),
            )
        if not out.readings:
            raise MalformedOutput(
                captured.stdout_name, f"nothing the {self.parser} parser could read"
            )
        out.specs = [self._overrides.get(spec.name, spec) for spec in out.specs]
        return out

    def _failure(self, returncode: int, captured: CapturedOutput) -> WorkloadFailed:
        why = captured.last_line("stderr")
        if not why and self.parser == "iperf3":
            why = iperf3.error_message(captured) or ""
        if not why:
            why = captured.last_line("stdout") or "no output"
        if returncode < 0:
            try:
                how = f"was killed by {signal.Signals(-returncode).name}"
            except ValueError:  # a real-time signal has no name
                how = f"was killed by signal {-returncode}"
        else:
            accepted = ", ".join(map(str, sorted(self.accepted_returncodes)))
            how = f"exited with code {returncode} (accepted: {accepted})"
        return WorkloadFailed(f"{self.name}: {how}: {why} [output kept in {captured.round_dir}]")

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        """Run one round; its stdout/stderr and any files it wrote stay in ``round_dir``; fio's
        logs go to a private temporary folder, removed once read (also on failure)."""
        round_dir.mkdir(parents=True, exist_ok=True)
        log_dir = Path(tempfile.mkdtemp(prefix="pilot-sys-fio-")) if self.parser == "fio" else None
        try:
            return self._run_round(work_amount, round_dir, log_dir)
        finally:
            if log_dir is not None:
                shutil.rmtree(log_dir, ignore_errors=True)

    def _run_round(self, work_amount: float, round_dir: Path, log_dir: Path | None) -> RoundOutput:
        argv = self.command_for(work_amount, round_dir, log_dir)
        text = macros.format_work_amount(work_amount, integer=self.integer_work_amount)
        amount = float(work_amount) if self.nominal_work_amount else float(text)
        timeout, by_limit = self._round_timeout()
        try:
            result = run_process(
                argv,
                stdout=round_dir / "stdout.txt",
                stderr=round_dir / "stderr.txt",
                env=self._environment(text, round_dir),
                cwd=self.cwd,
                timeout=timeout,
            )
        except WorkloadTimeout:
            if not by_limit:
                raise
            self.cut_by_limit = (
                f"{self.name}: still running at the session limit, cut after "
                f"{timeout:.3g} s with its child processes [output kept in "
                f"{round_dir}]"
            )
            raise RoundCutByLimit(self.cut_by_limit) from None
        trimmed = {
            name: size
            for name in ("stdout.txt", "stderr.txt")
            if (size := trim_output(round_dir / name)) is not None
        }
        if "stdout.txt" in trimmed and self.parser != "none":  # a cut table would mislead
            raise MalformedOutput(
                str(round_dir / "stdout.txt"),
                OUTPUT_BYTES.refuse("", f"{trimmed['stdout.txt']:,} bytes").problem
                + " (the first part is kept)",
            )
        captured = self._captured(argv, round_dir, log_dir)
        if result.returncode not in self.accepted_returncodes:
            raise self._failure(result.returncode, captured)
        parsed = self._parse(captured, amount, result.duration)
        self._specs = parsed.specs
        warnings = list(parsed.warnings)
        if self.nominal_work_amount:
            warnings.append(
                "the command has no %WORK_AMOUNT%: every round does the same work, "
                "the work amount is nominal"
            )
        for name, size in trimmed.items():
            warnings.append(
                f"{name}: {size:,} bytes of output, over the {OUTPUT_BYTES.variable} limit: "
                f"the first {OUTPUT_BYTES.value():,} are kept"
            )
        if result.escaped:
            warnings.append(
                f"ended {len(result.escaped)} process(es) that left the round's process group "
                f"(setsid or a double fork) and outlived it: {', '.join(result.escaped[:5])}"
            )
        if result.leftovers_killed:
            warnings.append(f"ended {result.leftovers_killed} process(es) the command left running")
        return RoundOutput(
            work_amount=amount,
            duration=result.duration,
            returncode=result.returncode,
            readings=parsed.readings,
            unit_readings=parsed.unit_readings,
            unit_timestamps=parsed.unit_timestamps,
            work_done=parsed.work_done
            if parsed.work_done is not None
            else (None if self.nominal_work_amount else amount),
            output_files=sorted(p for p in round_dir.iterdir() if p.is_file()),
            warnings=warnings,
            usage=result.usage,
        )

    def _round_timeout(self) -> tuple[float | None, bool]:
        """This round's timeout: ``--timeout``, or the time to the session's deadline (plus the
        grace) when that comes first; and whether it is the deadline's."""
        if self.session_deadline is None:
            return self.timeout, False
        grace = LIMIT_GRACE * self.session_limit if self.session_limit else 0.0
        left = max(0.0, self.session_deadline + grace - time.monotonic())
        if self.timeout is not None and self.timeout <= left:
            return self.timeout, False
        return left, True

    def data_path_args(self) -> list[str]:
        """File, directory and device arguments, with the macros substituted."""
        argv = macros.substitute(
            self.argv, macros.format_work_amount(REPRESENTATIVE_WORK_AMOUNT), Path(".")
        )
        return data_paths(argv, self.cwd)
