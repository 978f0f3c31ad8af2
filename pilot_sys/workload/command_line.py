"""Reading a workload's command line: which program really runs, and which arguments are data.

``sudo``, ``taskset``, ``numactl``, ``env`` and similar wrappers are skipped to find the program
whose output we parse; file, directory and device arguments (fio ``--filename=``/``--directory=``,
dd ``if=``/``of=``, existing paths) feed the data-path resolution.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

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


def data_paths(argv: list[str], cwd: Path) -> list[str]:
    """Arguments naming files, directories or devices the program reads or writes."""
    start = program_index(argv)
    program = os.path.basename(argv[start]) if argv else ""
    args = argv[start + 1 :]
    found: list[str] = []
    if program == "fio":
        for arg in args:
            value = _option_value(arg, ("--filename", "--directory", "--filename_format"))
            if value is not None:
                found.extend(_fio_paths(value))
            elif not arg.startswith("-") and (cwd / arg).is_file():
                found.extend(_fio_jobfile_paths(cwd / arg))
        if not found:
            found.append(str(cwd))  # fio lays out its files in the current directory
    elif program == "dd":
        for arg in args:
            value = _option_value(arg, ("if", "of"))
            if value is not None and value not in PSEUDO_DEVICES:
                found.append(value)
    else:
        for arg in args:
            value = arg.split("=", 1)[1] if "=" in arg else arg
            if value and _is_data_path(value if os.path.isabs(value) else str(cwd / value)):
                found.append(value)
    unique: list[str] = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique
