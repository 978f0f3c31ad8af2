"""The client for a declared host's engine, behind one small interface, so that whatever
samples remote hosts (a sampler source, the inventory step of ``graph``) never branches on the
engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pilot_sys.monitor.remote.counters import RemoteCounters
from pilot_sys.monitor.remote.node_exporter import NodeExporterClient
from pilot_sys.monitor.remote.pcp import PmproxyClient
from pilot_sys.monitor.remote.prometheus import PrometheusClient, declare
from pilot_sys.topology.remote_hosts import Backend, RemoteHost
from pilot_sys.topology.remote_inventory import RemoteInventory


class RemoteClient(Protocol):
    """One host's engine over one kept-alive connection (not thread-safe: one per thread).
    Every method raises ``RemoteUnavailable`` naming the URL when the host does not answer."""

    host: RemoteHost

    def counters(self) -> RemoteCounters: ...

    def inventory(self) -> RemoteInventory: ...

    def close(self) -> None: ...


def connect(host: RemoteHost, timeout: float = 2.0) -> RemoteClient:
    """The client for ``host``'s engine (no request is made until the first call)."""
    if host.backend is Backend.PCP:
        return PmproxyClient(host, timeout)
    if host.backend is Backend.PROMETHEUS:
        return PrometheusClient(host, timeout)
    return NodeExporterClient(host, timeout)


def prepare(hosts: Sequence[RemoteHost]) -> None:
    """Before the first request: hosts seen through one Prometheus server are asked together
    (one query per metric family for all of them), so each must know the others."""
    declare(h for h in hosts if h.backend is Backend.PROMETHEUS)
