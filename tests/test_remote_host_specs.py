"""``--host NAME=URL`` parsing and matching the hosts a workload names to the declared ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from pilot_sys.errors import BadInput
from pilot_sys.topology.mountinfo import parse_mountinfo, visible_mounts
from pilot_sys.topology.remote_hosts import Backend, parse_host_spec, parse_host_specs
from pilot_sys.workload.hosts import match_hosts, mentioned_hosts


@pytest.mark.parametrize(
    ("spec", "backend", "address", "port", "base"),
    [
        ("nas1=http://nas1:9100", Backend.NODE_EXPORTER, "nas1", 9100, "http://nas1:9100/metrics"),
        (
            "nas1=http://10.0.0.5",
            Backend.NODE_EXPORTER,
            "10.0.0.5",
            9100,
            "http://10.0.0.5:9100/metrics",
        ),
        (
            "n=https://n.example:443/node/metrics",
            Backend.NODE_EXPORTER,
            "n.example",
            443,
            "https://n.example:443/node/metrics",
        ),
        ("srv=pcp://srv:44322", Backend.PCP, "srv", 44322, "http://srv:44322"),
        ("srv=pcp://10.203.0.2", Backend.PCP, "10.203.0.2", 44322, "http://10.203.0.2:44322"),
        ("v6=pcps://[fd00::5]:1234/", Backend.PCP, "fd00::5", 1234, "https://[fd00::5]:1234"),
    ],
)
def test_scheme_chooses_backend_and_defaults_fill_in(
    spec: str, backend: Backend, address: str, port: int, base: str
) -> None:
    host = parse_host_spec(spec)
    assert (host.backend, host.address, host.port, host.base_url) == (backend, address, port, base)
    assert host.name == spec.split("=")[0]


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("nas1", "expected NAME=URL"),
        ("=http://x:9100", "expected NAME=URL"),
        ("nas1=", "expected NAME=URL"),
        ("nas/1=http://x:9100", "letters, digits"),
        ("host=http://x:9100", "this machine's"),
        ("nas1=ftp://x:21", "URL scheme ftp://"),
        ("nas1=x:9100", "URL scheme"),
        ("nas1=http://x:99999", "port"),
        ("nas1=http://:9100", "names no host"),
        ("nas1=http://x:9100/metrics?collect[]=cpu", "query"),
        ("nas1=pcp://x:44322/pmapi", "no path"),
    ],
)
def test_bad_specs_are_one_line_errors(spec: str, problem: str) -> None:
    with pytest.raises(BadInput) as caught:
        parse_host_spec(spec)
    message = str(caught.value)
    assert message.startswith(f"--host {spec}: ") and problem in message and "\n" not in message


def test_a_name_declared_twice_is_refused() -> None:
    with pytest.raises(BadInput, match="already declared as a=http://x"):
        parse_host_specs(["a=http://x", "b=pcp://y", "a=pcp://z"])
    assert [h.name for h in parse_host_specs(["a=http://x", "b=pcp://y"])] == ["a", "b"]


def test_iperf3_and_fio_servers_are_found_past_wrappers(tmp_path: Path) -> None:
    iperf = mentioned_hosts(["taskset", "-c", "1", "iperf3", "-c", "srv", "-t", "5"], cwd=tmp_path)
    assert [(m.host, m.role, m.argument) for m in iperf] == [("srv", "iperf3 server", "-c srv")]
    assert [m.host for m in mentioned_hosts(["iperf3", "--client=10.0.0.9"], cwd=tmp_path)] == [
        "10.0.0.9"
    ]
    assert [m.host for m in mentioned_hosts(["iperf3", "-c10.0.0.9"], cwd=tmp_path)] == ["10.0.0.9"]
    (tmp_path / "hosts.list").write_text("store1\n# a comment\nip:store2,8765\n\n")
    fio = mentioned_hosts(
        [
            "fio",
            "--client=ip:10.203.0.2,8765",
            "job.fio",
            "--client",
            "hosts.list",
            "--client=sock:/run/fio.sock",
            "--client=ip6:fd00::7,8765",
        ],
        cwd=tmp_path,
    )
    assert [m.host for m in fio] == ["10.203.0.2", "store1", "store2", "fd00::7"]
    assert {m.role for m in fio} == {"fio server"}


def test_netperf_style_host_option_and_no_host(tmp_path: Path) -> None:
    assert [
        m.host for m in mentioned_hosts(["netperf", "-H", "db1", "-l", "10"], cwd=tmp_path)
    ] == ["db1"]
    assert mentioned_hosts(["dd", "if=/dev/zero", f"of={tmp_path}/x", "bs=1M"], cwd=tmp_path) == []
    assert mentioned_hosts([], cwd=tmp_path) == []


MOUNTINFO = (
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "40 22 0:50 / {nfs} rw,relatime shared:30 - nfs4 nas1:/export rw,vers=4.2,addr=10.0.0.5\n"
    "41 22 0:51 / {cifs} rw,relatime shared:31 - cifs //filer.lan/share rw,vers=3.0\n"
)


def test_network_file_system_servers_of_the_workloads_files(tmp_path: Path) -> None:
    nfs, cifs = tmp_path / "nfs", tmp_path / "cifs"
    nfs.mkdir()
    cifs.mkdir()
    mounts = visible_mounts(parse_mountinfo(MOUNTINFO.format(nfs=nfs, cifs=cifs)))
    found = mentioned_hosts(
        ["fio", "--name=w", f"--directory={nfs}", f"--filename={cifs}/f"],
        cwd=tmp_path,
        mounts=mounts,
    )
    assert [(m.host, m.role) for m in found] == [
        ("10.0.0.5", f"nfs4 server of {nfs}"),
        ("filer.lan", f"cifs server of {cifs}"),
    ]
    # in fio's client/server mode the files are the servers' own: no NFS server of this host
    remote = mentioned_hosts(
        ["fio", "--client=10.0.0.9", f"--directory={nfs}"], cwd=tmp_path, mounts=mounts
    )
    assert [m.host for m in remote] == ["10.0.0.9"]


def test_matching_by_name_address_and_resolution(tmp_path: Path) -> None:
    declared = parse_host_specs(["nas1=http://10.0.0.5:9100", "srv=pcp://srv.lan:44322"])
    mentions = mentioned_hosts(
        [
            "fio",
            "--client=10.0.0.5",
            "--client=SRV",
            "--client=10.0.0.8",
            "--client=other",
            "--client=127.0.0.1",
            "--client=10.0.0.8",
        ],
        cwd=tmp_path,
    )
    plain = match_hosts(mentions, declared)
    assert {name: [m.host for m in ms] for name, ms in plain.matched.items()} == {
        "nas1": ["10.0.0.5"],
        "srv": ["SRV"],
    }
    assert [m.host for m in plain.undeclared] == ["10.0.0.8", "other"]  # each host once
    assert [m.host for m in plain.local] == ["127.0.0.1"]
    table = {"srv.lan": "10.0.0.8", "other": "127.0.1.1"}
    resolved = match_hosts(mentions, declared, resolve=table.get)
    assert {name: [m.host for m in ms] for name, ms in resolved.matched.items()} == {
        "nas1": ["10.0.0.5"],
        "srv": ["SRV", "10.0.0.8", "10.0.0.8"],
    }
    assert resolved.undeclared == []
    assert [m.host for m in resolved.local] == ["other", "127.0.0.1"]
