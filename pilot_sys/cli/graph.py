"""``pilot-sys graph``: the component data-link graph and the data path of arguments."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from functools import partial

import click

from pilot_sys.cli.common import OneLineErrors
from pilot_sys.cli.fleet_options import declared_hosts, prometheus_option
from pilot_sys.errors import BadInput
from pilot_sys.safefile import probe_directory, replace_file

PICTURE_SUFFIXES = (".png", ".svg", ".pdf")

PRETTY_JSON_NODES = 2000  # --json is indented up to this many components


def _writable(option: str, path: str | None) -> None:
    """Fail before discovery, not after, when an output cannot be written."""
    if path is None:
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise BadInput(option, f"{path}: directory {parent} does not exist")
    why = probe_directory(parent)
    if why is not None:
        raise BadInput(option, f"{path}: cannot write ({why})")
    if option in ("--png", "--svg") and not path.lower().endswith(PICTURE_SUFFIXES):
        raise BadInput(
            option, f"{path}: the picture format comes from the suffix; use .png, .svg or .pdf"
        )


def _write(option: str, path: str, write: Callable[[], None]) -> None:
    """One output file; an OS error (e.g. a path under /proc) becomes one line naming the option."""
    try:
        write()
    except OSError as exc:
        raise BadInput(option, f"{path}: cannot write ({exc.strerror or exc})") from None


@click.command(
    "graph",
    cls=OneLineErrors,
    epilog="""\b
Examples:
  pilot-sys graph                         # the whole host
  pilot-sys graph /mnt/data/file /dev/sdb # data paths of a file and a device
  pilot-sys graph 10.0.0.5                # a host: the interface that routes to it
  pilot-sys graph -- iperf3 -c 10.0.0.5   # a command's data path, found as `run` finds it
  pilot-sys graph --host nas1=http://nas1:9100 -- fio --client=nas1 job.fio
  pilot-sys graph --devices               # the device-level view (paper Fig. 4)
  pilot-sys graph /tmp --load graphs/rated-virtual-disk.json --png path.png
  pilot-sys graph --json > host-graph.json

Each limit is shown per direction with its unit and source; an unknown limit is never guessed.
Exit status: 0, or 2 on bad input (one line naming the argument, option or FILE:LINE:COL).
""",
)
@click.argument("targets", nargs=-1, metavar="[PATH|DEVICE|HOST]... | -- CMD [ARGS]...")
@click.option(
    "--host",
    "host_specs",
    multiple=True,
    metavar="NAME=URL",
    help="Add a remote host's components, from its engine (repeatable): http://H:9100 is "
    "node_exporter, pcp://H:44322 is PCP's pmproxy, prom://P:9090?instance=H:9100 a "
    "Prometheus server that scrapes H.",
)
@prometheus_option()
@click.option(
    "--load",
    "loads",
    multiple=True,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Merge a user-designated graph (JSON node-link or GraphML); repeatable. "
    "Its limits fill in unknown ones (source=user).",
)
@click.option("--override", is_flag=True, help="Let --load limits replace discovered ones too.")
@click.option(
    "--no-discover",
    is_flag=True,
    help="Show only the --load graphs (e.g. a remote setup), not this host.",
)
@click.option(
    "--devices",
    is_flag=True,
    help="Show the device-level graph (paper Fig. 4): interconnects, partitions and mounts folded "
    "into the device they serve.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print node-link JSON (nodes, links, data_path; devices with --devices).",
)
@click.option("--graphml", type=click.Path(dir_okay=False), metavar="FILE", help="Write GraphML.")
@click.option("--dot", type=click.Path(dir_okay=False), metavar="FILE", help="Write Graphviz DOT.")
@click.option("--png", type=click.Path(dir_okay=False), metavar="FILE", help="Draw a PNG picture.")
@click.option("--svg", type=click.Path(dir_okay=False), metavar="FILE", help="Draw an SVG picture.")
@click.option(
    "--probe",
    is_flag=True,
    help="Measure memory bandwidth with a short copy probe when DMI cannot tell (~0.5 s).",
)
@click.option(
    "--root",
    default="/",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Read /proc and /sys under this directory (a captured tree) instead of this machine.",
)
def graph(
    targets: tuple[str, ...],
    loads: tuple[str, ...],
    override: bool,
    no_discover: bool,
    devices: bool,
    as_json: bool,
    graphml: str | None,
    dot: str | None,
    png: str | None,
    svg: str | None,
    probe: bool,
    root: str,
    host_specs: tuple[str, ...] = (),
    prometheus_urls: tuple[str, ...] = (),
) -> None:
    """Discover the component data-link graph and the data path of PATH, DEVICE or HOST.

    Without arguments, shows every component of this host from the CPU outward, each limit with
    its source (sysfs, dmi, probe, user, derived) or why it is unknown. With arguments, shows
    the data path of each (memory -> PCIe -> controller -> disk -> partition/dm/md -> mount, or
    memory -> NIC -> network -> remote host) and the default component under test. A command
    (``graph -- CMD ARGS``) shows the data path that ``run`` and ``monitor`` find for it.
    """
    if not os.path.isdir(os.path.join(root, "sys")) and not os.path.isdir(
        os.path.join(root, "proc")
    ):
        raise BadInput("--root", f"{root} holds neither proc/ nor sys/")
    for option, path in (("--graphml", graphml), ("--dot", dot), ("--png", png), ("--svg", svg)):
        _writable(option, path)

    from pilot_sys.monitor.data_path import command_data_path, find_data_path
    from pilot_sys.topology.derive import derive_limits
    from pilot_sys.topology.discover import discover
    from pilot_sys.topology.graph import ComponentGraph
    from pilot_sys.topology.resolve import DataPath, is_command
    from pilot_sys.topology.userspec import apply_user_graph, load_user_graph

    hosts, _ = declared_hosts(host_specs, prometheus_urls)

    if no_discover and not loads:
        raise BadInput("--no-discover", "needs at least one --load FILE to show")
    if no_discover and targets:
        raise BadInput(
            "--no-discover", "PATH|DEVICE|HOST arguments resolve on this host: drop --no-discover"
        )
    component_graph = ComponentGraph() if no_discover else discover(root, probe_memory=probe)
    notes: list[str] = []
    for path in loads:
        notes += apply_user_graph(component_graph, load_user_graph(path), path, override=override)
    if loads:
        # user ratings of disks give their partitions and arrays limits
        derive_limits(component_graph)
    if targets and is_command(targets[0]):  # a command line: its data path as `run` finds it
        found = command_data_path(targets, hosts=hosts, graph=component_graph, root=root)
    else:
        found = find_data_path(targets, hosts=hosts, graph=component_graph, root=root, strict=True)
    notes += [*found.loud, *found.notes]
    data_path: DataPath | None = found.data_path if targets else None
    shown = component_graph if data_path is None else component_graph.subgraph(data_path.components)

    if graphml or dot or png or svg:
        from pilot_sys.topology import graphio

        if graphml:
            _write("--graphml", graphml, lambda: graphio.write_graphml(shown, graphml))
        if dot:
            _write("--dot", dot, lambda: replace_file(dot, graphio.to_dot(shown)))
        highlight = [data_path.cut] if data_path and data_path.cut else []
        for option, picture in (("--png", png), ("--svg", svg)):
            if picture:
                _write(option, picture, partial(graphio.draw, shown, picture, highlight=highlight))

    if as_json:
        payload = shown.to_node_link()
        payload["data_path"] = data_path.model_dump(mode="json") if data_path else None
        if devices:
            import networkx as nx

            from pilot_sys.topology.devices import device_graph

            payload["devices"] = nx.node_link_data(device_graph(shown), edges="links")
        payload["notes"] = notes
        # indented for a host's graph; one line (the C encoder, several times faster) for a
        # loaded graph of thousands of components, which no one reads by eye
        big = len(payload.get("nodes", [])) > PRETTY_JSON_NODES
        click.echo(json.dumps(payload, indent=None if big else 2))
        return

    from rich.console import Console

    from pilot_sys.topology.tree import device_tree, host_tree, path_tree

    # Piped output keeps one component line per line (grep-able) instead of wrapping at 80.
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    if devices:
        console.print(device_tree(shown))
    else:
        console.print(
            path_tree(component_graph, data_path) if data_path else host_tree(component_graph)
        )
    for note in notes:
        console.print(f"note: {note}", style="yellow")
    unreadable = [
        f"{plugin}: {what}"
        for plugin, items in component_graph.unreadable.items()
        for what in items
    ]
    if unreadable:
        console.print(
            f"could not read ({len(unreadable)}): "
            + "; ".join(unreadable[:5])
            + (" ..." if len(unreadable) > 5 else ""),
            style="dim",
        )
    for option, path in (("GraphML", graphml), ("DOT", dot), ("PNG", png), ("SVG", svg)):
        if path:
            console.print(f"wrote {option} {path}", style="dim")
