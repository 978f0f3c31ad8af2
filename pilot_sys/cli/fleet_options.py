"""``--prometheus URL`` beside ``--host NAME=URL`` on run, monitor, compare --run, graph and tune:
the declared hosts of a command, the fleets expanded once at start and shown."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from pilot_sys.topology.prometheus_fleet import PrometheusFleet
    from pilot_sys.topology.remote_hosts import RemoteHost

PROMETHEUS_HELP = (
    "Monitor every host that a Prometheus server (or Thanos, VictoriaMetrics, Mimir) scrapes "
    "with node_exporter, selected by PromQL label matchers in the URL's query (repeatable): "
    "'http://P:9090?job=storage&instance=~\"10.0.1.*\"'. Each host is named by its nodename "
    "(cpu:NAME); combines with --host."
)


def prometheus_option(prefix: str = "") -> Callable[[Any], Any]:
    """The option, with the same help on every command (``prefix``: e.g. ``--run: ``)."""
    return click.option(
        "--prometheus",
        "prometheus_urls",
        multiple=True,
        metavar="URL",
        help=prefix + PROMETHEUS_HELP,
    )


def declared_hosts(
    host_specs: Sequence[str],
    prometheus_urls: Sequence[str] = (),
    *,
    monitor: bool = True,
    discover: bool = True,
    quiet: bool = False,
) -> tuple[list[RemoteHost], list[PrometheusFleet]]:
    """The ``--host`` hosts, then each ``--prometheus`` fleet's hosts not declared already;
    the fleets as resolved (shown on stderr unless ``quiet``). ``discover=False`` parses the
    URLs only (a resumed session, which refuses the option anyway)."""
    from pilot_sys.errors import BadInput
    from pilot_sys.topology.prometheus_fleet import (
        OPTION,
        PrometheusFleet,
        describe_fleet,
        host_spec,
        name_fleet,
        parse_fleet_url,
    )
    from pilot_sys.topology.remote_hosts import parse_host_spec, parse_host_specs

    hosts = parse_host_specs(host_specs)
    if not prometheus_urls:
        return hosts, []
    queries = [parse_fleet_url(url) for url in prometheus_urls]  # every URL checked first
    if not monitor:
        raise BadInput(OPTION, "names hosts to monitor; it needs monitoring (drop --no-monitor)")
    if not discover:
        return hosts, [PrometheusFleet(url=q.shown, selector=q.selector()) for q in queries]
    from pilot_sys.monitor.remote.prometheus_discovery import discover_instances

    fleets: list[PrometheusFleet] = []
    for query in queries:
        named = name_fleet(discover_instances(query), hosts)
        names = {h.name for h in hosts}
        hosts += [
            parse_host_spec(host_spec(query, h), query.where) for h in named if h.name not in names
        ]
        fleet = PrometheusFleet(url=query.shown, selector=query.selector(), hosts=named)
        fleets.append(fleet)
        if not quiet:
            for line in describe_fleet(fleet):
                click.echo(f"pilot-sys: {line}", err=True)
    return hosts, fleets


def fleet_note(fleet: PrometheusFleet) -> str:
    """One note for a trace: the fleet and its hosts' names and instances."""
    named = ", ".join(f"{h.name} ({h.instance})" for h in fleet.hosts)
    return f"--prometheus {fleet.url}: node_uname_info{fleet.selector} is {named}"
