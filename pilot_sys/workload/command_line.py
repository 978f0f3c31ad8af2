"""Reading a workload's command line: which program really runs, and which arguments are data.

``sudo``, ``taskset``, ``numactl``, ``env`` and similar wrappers are skipped to find the program
whose output we parse; file, directory and device arguments (fio ``--filename=``/``--directory=``,
dd ``if=``/``of=``, existing paths) and remote hosts feed the data-path resolution.

A remote host is read only where the program's own options say so (``host_options``): iperf3's
and iperf's ``-c HOST``, fio's ``--client=HOST``, netperf's ``-H HOST``, and the spelled-out
``--host``/``--server-host`` of any program; and a whole argument that is an IP address. Short
options mean other things elsewhere (``sh -c SCRIPT``, ``gcc -c``, ``curl -H HEADER``,
``grep -H``), and a value is a host only when it looks like one (``host_of``: a host name or an
address, with an optional port; no spaces, no shell syntax).
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import NamedTuple

# wrapper -> (options that take a separate argument, positional arguments before the command)
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (
        frozenset(
            {
                "-u",
                "-g",
                "-C",
                "-D",
                "-h",
                "-p",
                "-r",
                "-t",
                "-U",
                "-T",
                "--user",
                "--group",
                "--chdir",
                "--host",
                "--prompt",
                "--role",
                "--type",
                "--other-user",
                "--close-from",
                "--command-timeout",
            }
        ),
        0,
    ),
    "doas": (frozenset({"-u", "-C"}), 0),
    "taskset": (frozenset(), 1),  # the CPU mask or list comes before the command
    "numactl": (
        frozenset(
            {
                "-N",
                "-m",
                "-C",
                "-p",
                "-i",
                "-P",
                "-w",
                "--cpunodebind",
                "--membind",
                "--physcpubind",
                "--preferred",
                "--interleave",
                "--preferred-many",
                "--weighted-interleave",
            }
        ),
        0,
    ),
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "-n", "--class", "--classdata"}), 0),
    "chrt": (frozenset(), 1),  # the priority comes before the command
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}), 1),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-f", "-o", "--format", "--output"}), 0),
}
PSEUDO_DEVICES = frozenset(
    {
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/random",
        "/dev/urandom",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
    }
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def program_index(argv: list[str]) -> int:
    """Index in ``argv`` of the program that does the work, past any wrappers."""
    i = 0
    while i < len(argv):
        name = os.path.basename(argv[i])
        if name not in WRAPPERS:
            return i
        with_arg, positional = WRAPPERS[name]
        i += 1
        while i < len(argv):
            arg = argv[i]
            if arg == "--":
                i += 1
                break
            if name == "env" and _ASSIGNMENT.match(arg):
                i += 1
            elif arg.startswith("-") and len(arg) > 1:
                i += 2 if arg in with_arg else 1
            else:
                break
        i += positional
    return min(i, max(len(argv) - 1, 0))


def program_name(argv: list[str]) -> str:
    """Basename of the program that does the work (``fio`` in ``sudo taskset -c 0 fio ...``)."""
    return os.path.basename(argv[program_index(argv)]) if argv else ""


def _option_value(arg: str, names: tuple[str, ...]) -> str | None:
    for name in names:
        if arg.startswith(name + "="):
            return arg[len(name) + 1 :]
    return None


def _fio_paths(value: str) -> list[str]:
    """fio's ``filename``/``directory`` hold ':'-separated lists, with '\\:' for a literal colon."""
    return [part.replace("\\:", ":") for part in re.split(r"(?<!\\):", value) if part]


def _fio_jobfile_paths(path: Path) -> list[str]:
    """filename=/directory= lines of a fio job file."""
    found: list[str] = []
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return found
    for line in text.splitlines():
        key, _, value = line.strip().partition("=")
        if key.strip() in ("filename", "directory") and value.strip():
            found.extend(_fio_paths(value.strip()))
    return found


def _is_data_path(candidate: str) -> bool:
    """An existing directory or device (pseudo devices such as /dev/zero are not data paths)."""
    if candidate in PSEUDO_DEVICES:
        return False
    path = Path(candidate)
    if candidate.startswith("/dev/"):
        return path.exists()
    return path.is_dir()


#: options that name a remote host in any program: spelled out, so never a flag of another meaning
GENERIC_HOST_OPTIONS = frozenset({"--host", "--server-host"})
#: a program's own host options (``-c`` is a client's server only for iperf and iperf3)
PROGRAM_HOST_OPTIONS: dict[str, frozenset[str]] = {
    "iperf3": frozenset({"-c", "--client"}),
    "iperf": frozenset({"-c", "--client"}),
    "fio": frozenset({"--client"}),
    "netperf": frozenset({"-H"}),
}
IPERF = frozenset({"iperf3", "iperf"})
HOST_PREFIX = "host:"  # a data-path argument naming a remote host: host:NAME, host:NAME:/PATH
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_PORT = re.compile(r"[0-9]{1,5}")


def host_options(program: str) -> frozenset[str]:
    """The options whose value names a remote host in ``program``'s command line."""
    return GENERIC_HOST_OPTIONS | PROGRAM_HOST_OPTIONS.get(program, frozenset())


def host_of(value: str) -> str | None:
    """The host ``value`` names, without a port (``db1:5432`` -> ``db1``, ``[fd00::7]:80`` ->
    ``fd00::7``), or None when it is neither a host name (RFC 1123 labels, the last one not all
    digits) nor an IP address: a script, a header, a file name with a space never is."""
    text = value.strip()
    if not text or text != value or len(text) > 260:
        return None
    if text.startswith("["):  # [IPv6] or [IPv6]:port
        inner, closed, rest = text[1:].partition("]")
        port_ok = not rest or (rest[0] == ":" and _PORT.fullmatch(rest[1:]) is not None)
        return inner if closed and port_ok and _is_ip(inner) else None
    if _is_ip(text):
        return text
    name, colon, port = text.rpartition(":")
    if colon and _PORT.fullmatch(port):
        text = name
        if _is_ip(text) and ":" not in text:  # IPv4:port (IPv6 with a port is bracketed)
            return text
    labels = text.removesuffix(".").split(".")
    if len(text) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        return None
    return None if labels[-1].isdigit() else text


class HostArgument(NamedTuple):
    """A remote host the command talks to, and where on it its data goes (``path``, when the
    command says: the files of a fio job run by a fio server)."""

    argument: str  # as written (``-c 10.0.0.5``, ``--client=nas1``)
    host: str  # without port or protocol prefix
    role: str  # "iperf3 server", "fio server", "host option"
    paths: tuple[str, ...] = ()


def _iperf_servers(args: list[str]) -> list[tuple[str, str]]:
    """iperf3's and iperf's ``-c HOST``, ``-cHOST``, ``--client HOST``, ``--client=HOST``."""
    found = []
    for i, arg in enumerate(args):
        if arg in ("-c", "--client") and i + 1 < len(args):
            found.append((f"{arg} {args[i + 1]}", args[i + 1]))
        elif arg.startswith("--client="):
            found.append((arg, arg.partition("=")[2]))
        elif arg.startswith("-c") and not arg.startswith("--") and len(arg) > 2:
            found.append((arg, arg[2:]))
    return [(a, h) for a, value in found if (h := host_of(value)) is not None]


def _fio_host(value: str) -> str | None:
    """``ip:h,port``, ``ip6:addr,port``, ``h,port`` or ``h`` -> h; ``sock:path`` -> None (local)."""
    if value.startswith("sock:"):
        return None
    for prefix in ("ip:", "ip6:"):
        if value.startswith(prefix):
            value = value[len(prefix) :]
            break
    host = value.rsplit(",", 1)[0] if "," in value else value
    return host_of(host.strip("[]"))


def _fio_servers(args: list[str], cwd: Path) -> list[tuple[str, str]]:
    values = []
    for i, arg in enumerate(args):
        if arg == "--client" and i + 1 < len(args):
            values.append((f"{arg} {args[i + 1]}", args[i + 1]))
        elif arg.startswith("--client="):
            values.append((arg, arg.partition("=")[2]))
    found = []
    for argument, value in values:
        listing = cwd / value
        if "," not in value and ":" not in value and listing.is_file():
            # fio reads a file of host names, one per line
            lines = listing.read_text(errors="replace").splitlines()
            hosts = [_fio_host(line.strip()) for line in lines if not line.startswith("#")]
            found += [(argument, h) for h in hosts if h]
        elif (host := _fio_host(value)) is not None:
            found.append((argument, host))
    return found


def _generic_hosts(args: list[str], options: frozenset[str]) -> list[tuple[str, str]]:
    """The values of host ``options`` (``--host HOST``, ``--host=HOST``, netperf's ``-H HOST``)
    that look like hosts, and arguments that are an IP address as a whole."""
    found = []
    for i, arg in enumerate(args):
        if _is_ip(arg) and (i == 0 or args[i - 1] not in options):
            found.append((arg, arg.strip("[]")))
        elif arg in options and i + 1 < len(args):
            if (host := host_of(args[i + 1])) is not None:
                found.append((f"{arg} {args[i + 1]}", host))
        elif arg.startswith("-") and "=" in arg:
            key, _, value = arg.partition("=")
            if key in options and (host := host_of(value)) is not None:
                found.append((arg, host))
    return found


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


def host_arguments(argv: list[str], cwd: Path) -> list[HostArgument]:
    """The remote hosts ``argv`` names: iperf3's and iperf's ``-c HOST``, fio's
    ``--client=HOST`` (a file of host names is read; the job's files are then on the servers),
    the host options of other tools (``host_options``) and whole-argument IP addresses."""
    if not argv:
        return []
    start = program_index(argv)
    program = os.path.basename(argv[start])
    args = argv[start + 1 :]
    if program in IPERF:
        return [HostArgument(a, h, f"{program} server") for a, h in _iperf_servers(args)]
    if program == "fio":
        servers = _fio_servers(args, cwd)
        remote_files = tuple(_fio_files(args, cwd)) if servers else ()
        return [HostArgument(a, h, "fio server", remote_files) for a, h in servers]
    found = _generic_hosts(args, host_options(program))
    return [HostArgument(a, h, "host option") for a, h in found]


def host_argument(host: str, path: str | None = None) -> str:
    """The data-path argument for a remote host (``host:NAME``) or a path on it
    (``host:NAME:/PATH``: a path never holds ``:/`` inside an IPv6 literal)."""
    return f"{HOST_PREFIX}{host}" + (f":{path}" if path else "")


def split_host_argument(value: str) -> tuple[str, str | None]:
    """``host:NAME[:/PATH]`` (without checking the prefix) -> (NAME, PATH or None)."""
    body = value.removeprefix(HOST_PREFIX)
    host, sep, path = body.partition(":/")
    return host, ("/" + path if sep else None)


def _fio_files(args: list[str], cwd: Path) -> list[str]:
    found: list[str] = []
    for arg in args:
        value = _option_value(arg, ("--filename", "--directory", "--filename_format"))
        if value is not None:
            found.extend(_fio_paths(value))
        elif not arg.startswith("-") and (cwd / arg).is_file():
            found.extend(_fio_jobfile_paths(cwd / arg))
    return found


def data_paths(argv: list[str], cwd: Path) -> list[str]:
    """Arguments naming the files, directories, devices and remote hosts the program reads or
    writes: the one list every command (``run``, ``monitor``, ``graph -- CMD``) resolves to its
    data path. A remote host is ``host:NAME``, a path on it ``host:NAME:/PATH`` (the files of a
    fio job that fio servers run)."""
    start = program_index(argv)
    program = os.path.basename(argv[start]) if argv else ""
    args = argv[start + 1 :]
    found: list[str] = []
    for mention in host_arguments(argv, cwd):
        on_host = [host_argument(mention.host, p) for p in mention.paths if p.startswith("/")]
        found += on_host or [host_argument(mention.host)]  # a path on it names the host too
    if program == "fio":
        if not found:  # client/server mode: the job's files are on the servers, not here
            found.extend(_fio_files(args, cwd))
            if not found:
                found.append(str(cwd))  # fio lays out its files in the current directory
    elif program == "dd":
        for arg in args:
            value = _option_value(arg, ("if", "of"))
            if value is not None and value not in PSEUDO_DEVICES:
                found.append(value)
    elif program not in IPERF:
        hosts = {a for m in host_arguments(argv, cwd) for a in m.argument.split(" ")}
        for arg in args:
            if arg in hosts:
                continue
            value = arg.split("=", 1)[1] if "=" in arg else arg
            if value and _is_data_path(value if os.path.isabs(value) else str(cwd / value)):
                found.append(value)
    unique: list[str] = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique
