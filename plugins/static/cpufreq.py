"""Static plug-in: CPU frequency from cpufreq sysfs: the hardware maximum as ``cpu:host``'s
``frequency`` limit, the policies (governor, current, caps), and a cap as ``cpufreq:host``."""

from __future__ import annotations

from pilot_sys.topology.components import Discovery
from pilot_sys.topology.kernel_limits import cpufreq_discovery
from pilot_sys.topology.sysroot import SysRoot

KIND = "static"
NAME = "cpufreq"


def discover(root: SysRoot) -> Discovery:
    return cpufreq_discovery(root, plugin=NAME)
