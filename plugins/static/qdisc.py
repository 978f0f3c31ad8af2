"""Static plug-in: each NIC's egress traffic shaping (root qdisc rate), read over rtnetlink."""

from __future__ import annotations

from pilot_sys.topology.components import Discovery
from pilot_sys.topology.kernel_limits import qdisc_discovery
from pilot_sys.topology.sysroot import SysRoot

KIND = "static"
NAME = "qdisc"


def discover(root: SysRoot) -> Discovery:
    return qdisc_discovery(root, plugin=NAME)
