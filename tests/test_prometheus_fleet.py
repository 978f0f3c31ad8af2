"""``--prometheus URL``: the label matchers of the URL (PromQL's own operators) and the names the
fleet's hosts get (nodename, else the instance's address; collisions resolved the same way on
every run). Pure: no engine is asked here (tests/test_prometheus_fleet_live.py asks one)."""

from __future__ import annotations

import itertools

import pytest

from pilot_sys.errors import BadInput
from pilot_sys.topology.prometheus_fleet import (
    FleetHost,
    FoundInstance,
    PrometheusFleet,
    describe_fleet,
    host_spec,
    name_fleet,
    parse_fleet_url,
)
from pilot_sys.topology.remote_hosts import Backend, parse_host_spec


def test_every_operator_reads_as_promql_writes_it() -> None:
    query = parse_fleet_url(
        'http://prom:9090?job=storage&instance=~"10.0.1.*"&env!=dev&rack!~r%5B12%5D'
    )
    assert query.base_url == "http://prom:9090"
    assert query.selector() == ('{job="storage",instance=~"10.0.1.*",env!="dev",rack!~"r[12]"}')


def test_quotes_backslashes_and_the_default_port() -> None:
    query = parse_fleet_url(r'https://prom/api-proxy/?instance=~"nas\d+:9100"')
    assert query.base_url == "https://prom:9090/api-proxy"
    # the regex's backslash is escaped once more inside PromQL's string
    assert query.selector() == r'{instance=~"nas\\d+:9100"}'


def test_no_matchers_selects_the_whole_engine() -> None:
    assert parse_fleet_url("http://prom:9090").selector() == "{}"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("prom:9090?job=node", "scheme"),
        ("ftp://prom:9090?job=node", "scheme"),
        ("http://:9090?job=node", "names no server"),
        ("http://prom:99999", "not a URL"),
        ("http://prom:9090?job", "not a label matcher"),
        ("http://prom:9090?9job=node", "not a label matcher"),
        ("http://prom:9090?instance=~(10.0", "not a regular expression"),
        ("http://prom:9090?__name__=up", "engine's own"),
        ("http://prom:9090?ca_file!=x", "names a file"),
        ("http://prom:9090?job=node#frag", "fragment"),
        ("http://prom:9090?job=node&ca_file=/nonexistent/ca.pem", "ca_file"),
    ],
)
def test_bad_urls_are_one_line_naming_the_option(url: str, problem: str) -> None:
    with pytest.raises(BadInput) as caught:
        parse_fleet_url(url)
    assert caught.value.where.startswith("--prometheus ")
    assert problem in caught.value.problem
    assert "\n" not in str(caught.value)


def test_a_password_is_masked_in_what_is_shown_and_kept_for_the_hosts() -> None:
    query = parse_fleet_url("http://admin:s3cr3t@prom:9090?job=node")
    assert "s3cr3t" not in query.shown + query.where + repr(query) + query.model_dump_json()
    spec = host_spec(query, FleetHost(name="nas1", instance="10.0.0.5:9100", job="node"))
    host = parse_host_spec(spec)
    assert host.backend is Backend.PROMETHEUS
    assert host.labels == (("instance", "10.0.0.5:9100"), ("job", "node"))
    assert host.address == "10.0.0.5"
    assert "s3cr3t" not in host.spec and "admin:***@" in host.spec
    assert host.auth is not None and host.auth.password == "s3cr3t"
    # the stored (masked) spec still authenticates in this process, as --host specs do
    again = parse_host_spec(host.spec)
    assert again.auth is not None and again.auth.password == "s3cr3t"


def test_credential_files_and_tls_carry_to_every_host(tmp_path) -> None:
    token = tmp_path / "token"
    token.write_text("t0k3n\n")
    query = parse_fleet_url(f"https://prom:9443?job=node&bearer_token_file={token}")
    assert query.matchers[0].label == "job" and len(query.matchers) == 1
    host = parse_host_spec(host_spec(query, FleetHost(name="a", instance="a:9100", job="node")))
    assert host.base_url == "https://prom:9443"
    assert host.auth is not None and host.auth.bearer_token == "t0k3n"
    assert "t0k3n" not in host.spec


def _found(*rows: tuple[str, str | None]) -> list[FoundInstance]:
    return [FoundInstance(instance=i, job="node", nodename=n) for i, n in rows]


def test_hosts_are_named_by_nodename_else_by_address() -> None:
    hosts = name_fleet(_found(("10.0.0.5:9100", "nas1"), ("10.0.0.6:9100", None)))
    assert [(h.name, h.instance, h.note) for h in hosts] == [
        ("nas1", "10.0.0.5:9100", None),
        ("10.0.0.6", "10.0.0.6:9100", None),
    ]


def test_shared_nodenames_get_the_address_then_the_port() -> None:
    hosts = name_fleet(
        _found(
            ("10.0.0.6:9100", "box"),
            ("10.0.0.5:9100", "box"),
            ("10.0.0.7:9100", "box"),
            ("10.0.0.7:9101", "box"),
            ("10.0.0.8:9100", "solo"),
        )
    )
    assert [h.name for h in hosts] == [
        "box-10.0.0.5",
        "box-10.0.0.6",
        "box-10.0.0.7-9100",
        "box-10.0.0.7-9101",
        "solo",
    ]
    assert all("would be 'box'" in (h.note or "") for h in hosts[:4])


def test_names_do_not_depend_on_the_engines_order() -> None:
    rows = _found(
        ("10.0.0.5:9100", "box"), ("10.0.0.6:9100", "box"), ("b:9100", None), ("b:9200", None)
    )
    first = [h.model_dump() for h in name_fleet(rows)]
    for order in itertools.permutations(rows):
        assert [h.model_dump() for h in name_fleet(list(order))] == first


def test_local_and_declared_names_are_never_taken() -> None:
    declared = [parse_host_spec("nas1=http://10.9.9.9:9100")]
    hosts = name_fleet(_found(("10.0.0.5:9100", "nas1"), ("10.0.0.6:9100", "host")), declared)
    assert [h.name for h in hosts] == ["nas1-10.0.0.5", "host-10.0.0.6"]
    assert all("taken" in (h.note or "") for h in hosts)


def test_a_host_declared_both_ways_is_one_host_under_the_users_name() -> None:
    declared = [
        parse_host_spec("filer=http://10.0.0.5:9100"),
        parse_host_spec("db=prom://other:9090?instance=10.0.0.6:9100"),
    ]
    hosts = name_fleet(_found(("10.0.0.5:9100", "nas1"), ("10.0.0.6:9100", "db1")), declared)
    assert [h.name for h in hosts] == ["filer", "db"]
    assert all("declared already" in (h.note or "") for h in hosts)


def test_declaring_one_host_by_hand_renames_none_of_the_others() -> None:
    rows = _found(("10.0.0.5:9100", "box"), ("10.0.0.6:9100", "box"), ("10.0.0.7:9100", "x"))
    alone = name_fleet(rows)
    declared = [parse_host_spec("mine=http://10.0.0.5:9100")]
    both = name_fleet(rows, declared)
    assert [h.name for h in both] == ["mine", "box-10.0.0.6", "x"]
    assert [h.name for h in alone][1:] == [h.name for h in both][1:]


def test_one_instance_under_two_jobs_is_one_host() -> None:
    rows = [
        FoundInstance(instance="10.0.0.5:9100", job="node", nodename="nas1"),
        FoundInstance(instance="10.0.0.5:9100", job="storage", nodename="nas1"),
    ]
    hosts = name_fleet(rows)
    assert [(h.name, h.job) for h in hosts] == [("nas1", "node")]


def test_names_are_made_safe_for_component_ids() -> None:
    hosts = name_fleet(
        _found(("[fd00::5]:9100", None), ("x:9100", "web 01 (rack/3)"), ("y:9100", "---"))
    )
    names = [h.name for h in hosts]
    assert names == ["fd00-5", "web-01-rack-3", "instance"]
    for host in hosts:  # each is a valid --host name
        parse_host_spec(f"{host.name}=prom://p:9090?instance={host.instance}")


def test_the_list_shown_at_start_names_every_host_and_instance() -> None:
    fleet = PrometheusFleet(
        url="http://prom:9090?job=node",
        selector='{job="node"}',
        hosts=name_fleet(_found(*[(f"10.0.0.{i}:9100", f"n{i}") for i in range(60)])),
    )
    lines = describe_fleet(fleet, limit=50)
    assert (
        lines[0] == '--prometheus http://prom:9090?job=node: 60 hosts (node_uname_info{job="node"})'
    )
    assert lines[1].split() == ["n0", "10.0.0.0:9100"]
    assert len(lines) == 52 and "10 more" in lines[-1]
