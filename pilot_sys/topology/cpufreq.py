"""CPU frequency limits from cpufreq sysfs (the kernel's admin-guide/pm/cpufreq documentation).

One directory per policy, ``/sys/devices/system/cpu/cpufreq/policyN`` (``cpuN/cpufreq`` links to
it), values in kHz: ``cpuinfo_max_freq`` / ``cpuinfo_min_freq`` (what the hardware can do),
``scaling_max_freq`` / ``scaling_min_freq`` (what the governor may use: a user, a power or a
thermal cap lowers ``scaling_max_freq``), ``scaling_cur_freq`` (the last frequency set or
seen), ``scaling_governor``, ``scaling_driver``, ``affected_cpus``. The nominal (non-turbo)
frequency is ``base_frequency`` under intel_pstate and ``amd_pstate_nominal_freq`` under
amd-pstate; other drivers do not state it. A virtual machine usually has no cpufreq at all.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from pilot_sys.topology.cpulist import parse_cpulist
from pilot_sys.topology.sysroot import SysRoot

CPUFREQ = "/sys/devices/system/cpu/cpufreq"
NOMINAL_FILES = ("base_frequency", "amd_pstate_nominal_freq")


class FrequencyPolicy(BaseModel):
    """One cpufreq policy (a set of CPUs that change frequency together), in Hz."""

    policy: str
    cpus: list[int]
    driver: str | None = None
    governor: str | None = None
    current_hz: float | None = None
    hardware_max_hz: float | None = None  # cpuinfo_max_freq
    hardware_min_hz: float | None = None
    scaling_max_hz: float | None = None
    scaling_min_hz: float | None = None
    nominal_hz: float | None = None  # base_frequency / amd_pstate_nominal_freq

    @property
    def capped(self) -> bool:
        """scaling_max_freq below the hardware maximum: something holds this policy down."""
        return (
            self.scaling_max_hz is not None
            and self.hardware_max_hz is not None
            and self.scaling_max_hz < self.hardware_max_hz
        )


class CpuFrequency(BaseModel):
    policies: list[FrequencyPolicy] = Field(default_factory=list)
    boost: bool | None = None  # cpufreq/boost (acpi-cpufreq, amd-pstate); None when absent
    note: str = ""  # why nothing is known, when nothing is

    @property
    def hardware_max_hz(self) -> float | None:
        values = [p.hardware_max_hz for p in self.policies if p.hardware_max_hz]
        return max(values) if values else None

    @property
    def allowed_max_hz(self) -> float | None:
        """The most any CPU may run at now: the highest of the policies' scaling_max_freq."""
        values = [p.scaling_max_hz or p.hardware_max_hz for p in self.policies]
        known = [v for v in values if v]
        return max(known) if known else None


def _khz(sysroot: SysRoot, path: str) -> float | None:
    value = sysroot.read_int(path)
    return value * 1e3 if value else None


def read_cpufreq(sysroot: SysRoot) -> CpuFrequency:
    names = [n for n in sysroot.listdir(CPUFREQ) if n.startswith("policy") and n[6:].isdigit()]
    if not names:
        why = (
            "no cpufreq policies in sysfs (a virtual machine, or no cpufreq driver loaded)"
            if sysroot.exists("/sys/devices/system/cpu")
            else "no /sys/devices/system/cpu"
        )
        return CpuFrequency(note=why)
    policies = []
    for name in sorted(names, key=lambda n: int(n[6:])):
        base = f"{CPUFREQ}/{name}"
        nominal = next(
            (v for f in NOMINAL_FILES if (v := _khz(sysroot, f"{base}/{f}")) is not None), None
        )
        policies.append(
            FrequencyPolicy(
                policy=name,
                cpus=parse_cpulist(sysroot.read(f"{base}/affected_cpus")),
                driver=sysroot.read(f"{base}/scaling_driver"),
                governor=sysroot.read(f"{base}/scaling_governor"),
                current_hz=_khz(sysroot, f"{base}/scaling_cur_freq"),
                hardware_max_hz=_khz(sysroot, f"{base}/cpuinfo_max_freq"),
                hardware_min_hz=_khz(sysroot, f"{base}/cpuinfo_min_freq"),
                scaling_max_hz=_khz(sysroot, f"{base}/scaling_max_freq"),
                scaling_min_hz=_khz(sysroot, f"{base}/scaling_min_freq"),
                nominal_hz=nominal,
            )
        )
    boost = sysroot.read(f"{CPUFREQ}/boost")
    return CpuFrequency(policies=policies, boost=None if boost is None else boost == "1")
