"""What a journal can hold that a session never writes, found by naming the round and the line.

Why a module of its own: the journal (journal.py) writes and reads; this judges what it read
against what a session can have written. A journal line is written once, in round order, for a
round folder ``rounds/<name>`` inside the result directory. A line repeated (a copy, or a
backup restored over a journal) or lines swapped (an editor) are found here with their line
numbers; ``--repair`` drops exact repeats and restores the order when that is all there is,
and refuses anything else (two different lines for one round, a round missing), since
guessing would put a round's numbers under another round's folder. Links are never followed
out of the result directory: a ``rounds`` folder, a round folder or a session file that is a
symbolic link is damage that ``--repair`` refuses too, and a line naming a folder outside
``rounds/`` is refused as a damaged line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROUND_DIR_RE = re.compile(r"rounds/[A-Za-z0-9_.+-]+")


@dataclass
class SequenceCheck:
    """The journal's lines against the order a session writes them."""

    problems: list[str] = field(default_factory=list)  # each names the round and the line(s)
    repairable: bool = True  # dropping exact repeats and sorting gives rounds 1..n
    order: list[int] | None = None  # positions of the lines to keep, in round order


def check_sequence(records: list[Any], lines: list[int], raw: list[bytes]) -> SequenceCheck:
    """``records`` (with ``index`` and ``dir``), the journal line number of each and its bytes."""
    out = SequenceCheck()
    first_at: dict[int, int] = {}  # round index -> position of its first line
    keep: list[int] = []
    for pos, rec in enumerate(records):
        seen = first_at.get(rec.index)
        if seen is None:
            first_at[rec.index] = pos
            keep.append(pos)
        elif raw[seen].strip() == raw[pos].strip():
            out.problems.append(
                f"line {lines[pos]} repeats round {rec.index} (line {lines[seen]}) exactly"
            )
        else:
            out.problems.append(
                f"lines {lines[seen]} and {lines[pos]} both hold round {rec.index}, differently"
            )
            out.repairable = False
    expected = 1
    for pos in keep:
        rec = records[pos]
        if rec.index != expected:
            out.problems.append(
                f"line {lines[pos]} holds round {rec.index} where round {expected} was expected"
            )
            break
        expected += 1
    indices = sorted(records[p].index for p in keep)
    missing = sorted(set(range(1, (indices[-1] if indices else 0) + 1)) - set(indices))
    if missing:
        shown = ", ".join(str(i) for i in missing[:5]) + (" ..." if len(missing) > 5 else "")
        out.problems.append(f"round(s) {shown} have no line")
        out.repairable = False
    if out.problems and out.repairable:
        out.order = sorted(keep, key=lambda p: records[p].index)
    return out


def bad_round_dirs(records: list[Any], lines: list[int]) -> list[str]:
    """Lines whose round folder is not ``rounds/<name>``: they would read or write elsewhere."""
    return [
        f"line {line} names round folder {rec.dir!r}, not one inside rounds/"
        for rec, line in zip(records, lines, strict=True)
        if not ROUND_DIR_RE.fullmatch(rec.dir) or rec.dir.endswith(("/.", "/.."))
    ]


def links(root: Path, names: tuple[str, ...], rounds_dir: str) -> list[str]:
    """Symbolic links among the session's own files and round folders (never followed)."""
    found: list[str] = []
    for name in (*names, rounds_dir):
        path = root / name
        if path.is_symlink():
            found.append(f"{name} is a symbolic link (to {_target(path)})")
    rounds = root / rounds_dir
    if rounds.is_dir() and not rounds.is_symlink():
        for child in sorted(rounds.iterdir()):
            if child.is_symlink():
                found.append(f"{rounds_dir}/{child.name} is a symbolic link (to {_target(child)})")
                if len(found) > 10:
                    break
    return found


def _target(path: Path) -> str:
    try:
        return str(path.readlink())
    except OSError:
        return "?"
