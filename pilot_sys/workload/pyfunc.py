"""In-process workloads: a Python function given the work amount (the first kind of
benchmark, the Pilot paper §IV).

Like a unit-test framework, the user writes the function and pilot-sys decides the rounds::

    @pilot_sys.benchmark(work_amount=(1_000, 100_000))
    def sort_ints(n: int) -> None:
        sorted(random.random() for _ in range(n))

The function may return nothing (it is timed: work amount / duration is the ``work_rate`` reading),
one number (the reading of its single PI), or a dict of PI name -> number (readings) or -> sequence
(unit readings, whose PI-type mean becomes the reading). With ``unit_readings=True`` the function is
called once per work unit with ``1`` and every call is timed, so each unit is a unit reading (the
``work_rate`` PI then declares ``unit_weighting="work"``: one reading per unit of work).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from pilot_sys.errors import BadInput, WorkloadFailed
from pilot_sys.stats.pi import PIType
from pilot_sys.workload.base import PISpec, RoundOutput
from pilot_sys.workload.parsers.table import type_mean

Result = float | int | dict[str, Any] | Sequence[float] | None
F = TypeVar("F", bound=Callable[[int], Result])

#: Functions registered with ``@benchmark``, by name, for runners that discover them.
REGISTRY: dict[str, FunctionWorkload] = {}


class FunctionWorkload:
    """A Python callable run in rounds; see the module docstring for what it may return."""

    def __init__(
        self,
        func: Callable[[int], Result],
        *,
        name: str | None = None,
        pi_specs: list[PISpec] | None = None,
        unit_readings: bool = False,
        work_amount_unit: str = "work",
        work_amount: tuple[float, float] | None = None,
    ) -> None:
        if not callable(func):
            raise BadInput("func", "a benchmark must be callable with the work amount")
        self.func = func
        self.name = name or getattr(func, "__qualname__", "function")
        self.per_unit = unit_readings
        self.work_amount_unit = work_amount_unit
        self.work_amount_range = work_amount
        # per unit, each timed call is one unit of work: its rates average harmonically
        rate = PISpec(
            name="work_rate",
            unit=f"{work_amount_unit}/s",
            pi_type=PIType.HARMONIC,
            unit_weighting="work" if unit_readings else None,
            description=f"work amount per second of {self.name}",
        )
        self._specs = {spec.name: spec for spec in pi_specs or [rate]}
        # Numbers the function returns go to the user's first PI, or to a plain "value" PI.
        self._value_name = pi_specs[0].name if pi_specs else "value"

    def pi_specs(self) -> list[PISpec]:
        return list(self._specs.values())

    def data_path_args(self) -> list[str]:
        return []

    def _spec(self, name: str) -> PISpec:
        """The PI called ``name``, created (unit-less, arithmetic) the first time it is returned."""
        if name not in self._specs:
            self._specs[name] = PISpec(name=name, unit="", description=f"returned by {self.name}")
        return self._specs[name]

    def _call(self, amount: int) -> Result:
        try:
            return self.func(amount)
        except (
            Exception
        ) as exc:  # the user's code failing is a failed round, not a crash of pilot-sys
            raise WorkloadFailed(
                f"{self.name}({amount}) raised {type(exc).__name__}: {exc}"
            ) from exc

    def _per_unit_round(self, amount: int, out: RoundOutput) -> None:
        """Call the function once per unit, timing each call."""
        ends = np.empty(amount, dtype=np.int64)
        values: list[float] = []
        start = time.perf_counter_ns()
        for i in range(amount):
            value = self._call(1)
            ends[i] = time.perf_counter_ns()
            if value is not None:
                values.append(float(value))  # type: ignore[arg-type]
        out.duration = float(ends[-1] - start) / 1e9
        stamps = (ends - start) / 1e9
        if values:
            spec = self._spec(self._value_name)
            units = np.array(values)
        else:
            spec = self._spec("work_rate")
            units = 1e9 / np.diff(np.concatenate(([start], ends))).astype(float)
        out.unit_readings[spec.name] = units
        out.unit_timestamps[spec.name] = stamps
        out.readings[spec.name] = (
            float(amount / out.duration) if not values else type_mean(units, spec.pi_type)
        )

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        """Run the function for one round; nothing is written to ``round_dir``."""
        amount = max(1, int(round(work_amount)))
        out = RoundOutput(work_amount=amount, duration=0.0, work_done=float(amount))
        if self.per_unit:
            self._per_unit_round(amount, out)
            return out
        start = time.perf_counter()
        result = self._call(amount)
        out.duration = time.perf_counter() - start
        if result is None:
            if out.duration <= 0:
                raise WorkloadFailed(
                    f"{self.name}({amount}) took no measurable time; raise the work amount"
                )
            out.readings[self._spec("work_rate").name] = amount / out.duration
        elif isinstance(result, dict):
            for name, value in result.items():
                self._record(out, self._spec(str(name)), value)
        else:
            self._record(out, self._spec(self._value_name), result)
        return out

    def _record(self, out: RoundOutput, spec: PISpec, value: Any) -> None:
        if isinstance(value, (int, float, np.floating, np.integer)):
            out.readings[spec.name] = float(value)
            return
        try:
            units = np.asarray(value, dtype=float).ravel()
        except (TypeError, ValueError):
            raise WorkloadFailed(
                f"{self.name} returned {type(value).__name__} for {spec.name}; "
                "expected a number or a sequence of numbers"
            ) from None
        if units.size == 0:
            raise WorkloadFailed(f"{self.name} returned no values for {spec.name}")
        out.unit_readings[spec.name] = units
        out.readings[spec.name] = type_mean(units, spec.pi_type)


def benchmark(
    func: F | None = None,
    *,
    name: str | None = None,
    pi_specs: list[PISpec] | None = None,
    unit_readings: bool = False,
    work_amount_unit: str = "work",
    work_amount: tuple[float, float] | None = None,
) -> Any:
    """Register a function as a benchmark (``@benchmark`` or ``@benchmark(...)``); returns it
    unchanged.

    The registered ``FunctionWorkload`` is in ``REGISTRY`` and on the function as ``.workload``.
    """

    def register(f: F) -> F:
        workload = FunctionWorkload(
            f,
            name=name,
            pi_specs=pi_specs,
            unit_readings=unit_readings,
            work_amount_unit=work_amount_unit,
            work_amount=work_amount,
        )
        REGISTRY[workload.name] = workload
        f.workload = workload  # type: ignore[attr-defined]
        return f

    return register(func) if func is not None else register
