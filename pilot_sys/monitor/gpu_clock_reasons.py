"""NVML's clocks-event reasons (DCGM passes the same bitmask on) as the GPU signals the verdict
reads: one decoding for a local GPU (NVML) and a remote one (dcgm-exporter), so a power cap is
the same flag whichever way it was read."""

from __future__ import annotations

import numpy as np

POWER_CAP = 0x4  # nvmlClocksEventReasonSwPowerCap
THERMAL = 0x20 | 0x40  # SwThermalSlowdown, HwThermalSlowdown
HW_SLOWDOWN = 0x8 | 0x80  # HwSlowdown, HwPowerBrakeSlowdown

FLAGS = (("power_capped", POWER_CAP), ("thermal_capped", THERMAL), ("hw_slowdown", HW_SLOWDOWN))


def clock_reason_flags(reasons: np.ndarray) -> dict[str, np.ndarray]:
    """Each flag's column (1.0 set, 0.0 clear) from a column of bitmasks; NaN where the mask is
    unknown."""
    known = np.isfinite(reasons)
    bits = np.where(known, reasons, 0).astype(np.int64)
    return {
        name: np.where(known, ((bits & mask) > 0).astype(np.float64), np.nan)
        for name, mask in FLAGS
    }
