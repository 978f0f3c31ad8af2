"""CPU frequency per cpufreq policy, against the nominal and the hardware maximum.

Counter: ``/sys/devices/system/cpu/cpufreq/policyN/scaling_cur_freq`` (kHz; the kernel's
admin-guide/pm/cpufreq.rst: the frequency the policy's CPUs last ran at, as the driver or the
hardware feedback tells it). Read once per tick per policy; a virtual machine usually has no
cpufreq at all, and then nothing is sampled (discovery already says so on ``cpu:host``).

Formulas (``monitor.throttling``), per policy ``cpufreq:policyN``:

* ``frequency_hz`` = scaling_cur_freq x 1e3 (a level; a read of 0 is unknown);
* ``frequency_share`` = frequency / the hardware maximum (``cpuinfo_max_freq``);
* ``below_nominal`` = 1 where the frequency is below the nominal (``base_frequency`` under
  intel_pstate, ``amd_pstate_nominal_freq`` under amd-pstate), else 0; absent where the driver
  states no nominal frequency.

The trace's ``attrs`` keep each policy's CPUs, nominal, hardware maximum, cap
(``scaling_max_freq``) and governor, for the verdict's warning about a CPU-bound result measured
below the nominal frequency (``monitor.bottleneck``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot_sys.monitor import throttling
from pilot_sys.monitor.probe import Probe, ProbeContext
from pilot_sys.monitor.procread import FieldFile
from pilot_sys.topology.cpufreq import CPUFREQ, FrequencyPolicy, read_cpufreq
from pilot_sys.topology.sysroot import SysRoot

KIND = "dynamic"
NAME = "cpufreq"
HOST = "cpu:host"


class CpuFreqProbe(Probe):
    name = NAME

    def __init__(self, context: ProbeContext, policies: list[FrequencyPolicy]) -> None:
        super().__init__()
        self.policies: list[FrequencyPolicy] = []
        columns: list[str] = []
        for policy in policies:
            path = context.path(CPUFREQ.lstrip("/"), policy.policy, "scaling_cur_freq")
            try:
                reader = FieldFile(path, [0])
            except (OSError, ValueError) as exc:
                why = getattr(exc, "strerror", None) or str(exc)
                context.notes.append(
                    f"cpufreq {policy.policy}: scaling_cur_freq unreadable ({why})"
                )
                continue
            self.readers.append(reader)
            self.policies.append(policy)
            columns.append(f"cpufreq:{policy.policy}/scaling_cur_khz")
        self.columns = tuple(columns)

    def derive(
        self, raw: np.ndarray, t: np.ndarray, metrics: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for policy in self.policies:
            cid = f"cpufreq:{policy.policy}"
            hz = throttling.frequency_hz(self.col(raw, f"{cid}/scaling_cur_khz"))
            out[f"{cid}/frequency_hz"] = hz
            share = throttling.fraction_of(hz, policy.hardware_max_hz)
            if share is not None:
                out[f"{cid}/frequency_share"] = share
            if policy.nominal_hz:
                out[f"{cid}/below_nominal"] = throttling.below(hz, policy.nominal_hz)
        return out

    def attrs(self) -> dict[str, dict[str, Any]]:
        return {
            f"cpufreq:{p.policy}": {
                "cpus": p.cpus,
                "nominal_hz": p.nominal_hz,
                "hardware_max_hz": p.hardware_max_hz,
                "scaling_max_hz": p.scaling_max_hz,
                "governor": p.governor,
                "driver": p.driver,
            }
            for p in self.policies
        }

    def close(self) -> None:
        for reader in self.readers:
            reader.close()  # type: ignore[union-attr]


def open_probe(context: ProbeContext) -> CpuFreqProbe | None:
    if not (context.wants(HOST) or any(c.startswith("cpufreq:") for c in context.components or ())):
        return None
    policies = read_cpufreq(SysRoot(context.root)).policies
    if not policies:
        return None
    probe = CpuFreqProbe(context, policies)
    return probe if probe.policies else None
