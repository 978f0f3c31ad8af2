"""The hosts of a ``--prometheus URL`` option: the engine is asked once, at start, for the
node_exporters its label matchers select, and each becomes a declared ``prom://`` host.

One instant query, ``node_uname_info{MATCHERS}``: node_exporter's one series per host, which
carries its ``nodename`` (the host's name) next to the ``instance`` and ``job`` labels that then
select its series, and which no other exporter reports (``up`` would also list the engine
itself, dcgm-exporters and every other target of the job). The query has one deadline for the
whole answer and a size cap; a selector that matches nothing is asked again as ``up`` only to
say what it did match. More than ``MAX_FLEET_HOSTS`` instances are refused, not truncated.
"""

from __future__ import annotations

from urllib.parse import urlencode

from pilot_sys.errors import BadInput
from pilot_sys.monitor.remote.http import HttpConnection, RemoteUnavailable
from pilot_sys.monitor.remote.prometheus import Series, parse_answer
from pilot_sys.topology.prometheus_fleet import MAX_FLEET_HOSTS, FleetQuery, FoundInstance

DEADLINE_S = 10.0  # the whole answer of one discovery query
MAX_ANSWER_BYTES = 16 * 1024 * 1024  # ~300 bytes a host: far above MAX_FLEET_HOSTS


def _ask(connection: HttpConnection, query: FleetQuery, expr: str) -> list[Series]:
    url = f"{query.base_url}/api/v1/query?{urlencode({'query': expr})}"
    try:
        return parse_answer(connection.get(url).body, expr)
    except RemoteUnavailable as exc:
        raise BadInput(
            query.where,
            f"{expr}: {exc.problem}; check the server's URL and credentials (its HTTP API "
            "answers GET /api/v1/query)",
        ) from None


def discover_instances(
    query: FleetQuery, deadline_s: float = DEADLINE_S, max_hosts: int = MAX_FLEET_HOSTS
) -> list[FoundInstance]:
    """The node_exporter instances the engine holds for the query's matchers; a server that
    does not answer, a selector matching nothing or too much is one ``BadInput`` line."""
    connection = HttpConnection(
        query.base_url, deadline_s, auth=query.auth, max_bytes=MAX_ANSWER_BYTES
    )
    try:
        selector = query.selector() if query.matchers else ""
        series = _ask(connection, query, f"node_uname_info{selector}")
        found: dict[str, FoundInstance] = {}
        for labels, _ in series:
            instance = labels.get("instance")
            if instance:
                item = FoundInstance(
                    instance=instance, job=labels.get("job"), nodename=labels.get("nodename")
                )
                found.setdefault(f"{instance}\0{item.job}", item)
        if not found:
            raise BadInput(query.where, _nothing_matched(connection, query, selector))
        instances = {f.instance for f in found.values()}
        if len(instances) > max_hosts:
            raise BadInput(
                query.where,
                f"{len(instances)} node_exporter instances match node_uname_info{selector}, "
                f"more than {max_hosts}: narrow the selector (job=..., instance=~...)",
            )
        return list(found.values())
    finally:
        connection.close()


def _nothing_matched(connection: HttpConnection, query: FleetQuery, selector: str) -> str:
    """What to say when no node_exporter matches: what ``up`` matches, if anything."""
    targets = _ask(connection, query, f"up{selector or '{}'}")
    head = f"no node_exporter matches (node_uname_info{selector} is empty)"
    if not targets:
        return (
            f"{head}, nor does any target (up{selector or ''} is empty): check the labels "
            "on the server's Targets page (/targets)"
        )
    down = [labels for labels, points in targets if points and points[-1][1] == 0]
    if len(down) == len(targets):
        shown = ", ".join(sorted(labels.get("instance", "?") for labels in down)[:5])
        return (
            f"{head}; the {len(down)} target(s) it matches are down (up is 0: {shown}): "
            "check them on the server's Targets page (/targets)"
        )
    jobs = sorted({labels.get("job", "?") for labels, _ in targets})
    return (
        f"{head}; the selector matches {len(targets)} other target(s), of job(s) "
        f"{', '.join(jobs[:5])}: select the job that scrapes node_exporter"
    )
