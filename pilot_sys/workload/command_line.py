"""Reading a workload's command line: which program really runs, and which arguments are data.

``sudo``, ``taskset``, ``numactl``, ``env`` and similar wrappers are skipped to find the program
whose output we parse; file, directory and device arguments (fio ``--filename=``/``--directory=``,
dd ``if=``/``of=``, existing paths) and remote hosts (iperf3 ``-c``, fio ``--client=``, other
tools' host options) feed the data-path resolution.
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path
from typing import NamedTuple

# wrapper -> (options that take a separate argument, positional arguments before the command)
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group",
                        "--chdir", "--host", "--prompt", "--role", "--type", "--other-user", "--close-from",
                        "--command-timeout"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "taskset": (frozenset(), 1),  # the CPU mask or list comes before the command
    "numactl": (frozenset({"-N", "-m", "-C", "-p", "-i", "-P", "-w", "--cpunodebind", "--membind", "--physcpubind",
                           "--preferred", "--interleave", "--preferred-many", "--weighted-interleave"}), 0),
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "-n", "--class", "--classdata"}), 0),
    "chrt": (frozenset(), 1),  # the priority comes before the command
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}), 1),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-f", "-o", "--format", "--output"}), 0),
}
PSEUDO_DEVICES = frozenset({"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/stdin",
                            "/dev/stdout", "/dev/stderr"})
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


HOST_OPTIONS = frozenset({"-c", "--client", "-H", "--host", "--server-host"})
HOST_PREFIX = "host:"  # a data-path argument naming a remote host: host:NAME, host:NAME:/PATH


class HostArgument(NamedTuple):
    """A remote host the command talks to, and where on it its data goes (``path``, when the
    command says: the files of a fio job run by a fio server)."""

    argument: str  # as written (``-c 10.0.0.5``, ``--client=nas1``)
    host: str  # without port or protocol prefix
    role: str  # "iperf3 server", "fio server", "host option"
    paths: tuple[str, ...] = ()


def _iperf3_servers(args: list[str]) -> list[tuple[str, str]]:
    found = []
    for i, arg in enumerate(args):
        if arg in ("-c", "--client") and i + 1 < len(args):
            found.append((f"{arg} {args[i + 1]}", args[i + 1]))
        elif arg.startswith("--client="):
            found.append((arg, arg.partition("=")[2]))
        elif arg.startswith("-c") and not arg.startswith("--") and len(arg) > 2:
            found.append((arg, arg[2:]))
    return found


def _fio_host(value: str) -> str | None:
    """``ip:h,port``, ``ip6:addr,port``, ``h,port`` or ``h`` -> h; ``sock:path`` -> None (local)."""
    if value.startswith("sock:"):
        return None
    for prefix in ("ip:", "ip6:"):
        if value.startswith(prefix):
            value = value[len(prefix) :]
            break
    host = value.rsplit(",", 1)[0] if "," in value else value
    return host.strip("[]") or None


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


def _generic_hosts(args: list[str]) -> list[tuple[str, str]]:
    """``-c HOST``, ``-H HOST``, ``--host=HOST`` and the like, as other tools write them, and
    bare IP addresses."""
    found = []
    for i, arg in enumerate(args):
        if _is_ip(arg) and (i == 0 or args[i - 1] not in HOST_OPTIONS):
            found.append((arg, arg))
        elif arg in HOST_OPTIONS and i + 1 < len(args) and not args[i + 1].startswith("-"):
            found.append((f"{arg} {args[i + 1]}", args[i + 1]))
        elif arg.startswith("-") and "=" in arg:
            key, _, value = arg.partition("=")
            if key in HOST_OPTIONS and value:
                found.append((arg, value))
    return found


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


def host_arguments(argv: list[str], cwd: Path) -> list[HostArgument]:
    """The remote hosts ``argv`` names: iperf3's ``-c HOST``, fio's ``--client=HOST`` (a file
    of host names is read; the job's files are then on the servers), other tools' host options."""
    if not argv:
        return []
    start = program_index(argv)
    program = os.path.basename(argv[start])
    args = argv[start + 1 :]
    if program == "iperf3":
        return [HostArgument(a, h, "iperf3 server") for a, h in _iperf3_servers(args)]
    if program == "fio":
        servers = _fio_servers(args, cwd)
        remote_files = tuple(_fio_files(args, cwd)) if servers else ()
        return [HostArgument(a, h, "fio server", remote_files) for a, h in servers]
    return [HostArgument(a, h, "host option") for a, h in _generic_hosts(args)]


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
    elif program != "iperf3":
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
