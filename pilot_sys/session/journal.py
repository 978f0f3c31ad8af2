"""The result directory: nothing measured is ever lost.

Layout (one directory per session)::

    session.json        SessionManifest: configuration, workloads, host context, invocations
    graph.json          the discovered component graph (node-link), when monitoring
    rounds.jsonl        append-only journal, one RoundRecord per line, fsynced per round
    rounds/0001/        one folder per round: the workload's own output (stdout, fio JSON ...),
                        units.npz (unit readings ``<pi>`` and their times ``<pi>.t``, numpy),
                        monitor.json (the round's MonitorTrace)
    result.json         SessionResult (derived; `pilot-sys report DIR` rebuilds it)
    report.md, plots/   derived

Order of writes for a round: the round folder's files are written, then the journal line is
appended (a full disk fails here, at once, and the line is cut back so the journal stays whole
lines); their fsyncs run in parallel (:class:`SyncBatch`) and complete before the next round
starts. A round is part of the session exactly when its journal line is complete, so a crash
at any point leaves a consistent directory: a torn last line is cut off on resume (its bytes
kept in ``rounds.jsonl.torn``), the round folder a crash left without a journal line is renamed
``*.incomplete`` (kept, not analysed), and a ``units.npz`` torn by a power loss costs that
round its unit readings, not the session. Any other gap between the journal and the folders is
reported, never repaired silently (:meth:`Journal.check`). One process writes a directory at a
time (``.lock``); readers can tell whether one is writing (:meth:`Journal.writer_pid`).
"""

from __future__ import annotations

import errno
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from pilot_sys import __version__
from pilot_sys.errors import BadInput, ExitCode, PilotError
from pilot_sys.limits import JOURNAL_BYTES, JSON_BYTES, TRACE_BYTES, read_bounded
from pilot_sys.safefile import create_exclusive, open_nofollow, replace_file
from pilot_sys.session.config import SessionConfig
from pilot_sys.session.journal_integrity import (
    SequenceCheck,
    bad_round_dirs,
    check_sequence,
    links,
)
from pilot_sys.workload.base import PISpec, ProcessUsage

MANIFEST = "session.json"
JOURNAL = "rounds.jsonl"
ROUNDS_DIR = "rounds"
UNITS_FILE = "units.npz"
MONITOR_FILE = "monitor.json"
GRAPH_NAME = "graph.json"
MANIFEST_SCHEMA_VERSION = 1


class JournalWriteFailed(PilotError):
    """The result directory could not be written (a full disk); what is there is consistent.

    Exit 4, as for a session stopped before every target (result.json says ``incomplete``);
    a session that saved its result.json exits with the code written there."""

    exit_code: int = ExitCode.LIMIT_REACHED


class _UnusableUnits(Exception):
    """Why a round's units.npz is not used (turned into a note by Journal.load_units)."""


class WorkloadSpec(BaseModel):
    """How to re-create a workload on resume."""

    name: str
    kind: str  # "command", "builtin", "function"
    argv: list[str] = Field(default_factory=list)
    parser: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    accepted_returncodes: list[int] = Field(default_factory=lambda: [0])
    timeout: float | None = None
    directory: str | None = None  # builtin workload's target directory
    options: dict[str, Any] = Field(default_factory=dict)
    # the median cost of starting and reaping a process on this host (``/bin/true``), for a
    # command workload: every round's time includes it
    process_start_seconds: float | None = None
    pis: list[PISpec] = Field(default_factory=list)
    data_path_args: list[str] = Field(default_factory=list)


class Invocation(BaseModel):
    """One `pilot-sys run` (or resume) that wrote into this directory."""

    started_at: float
    ended_at: float | None = None
    command_line: list[str] = Field(default_factory=list)
    first_round: int = 1
    # targets and limits changed by this invocation (--resume --ci-perc ...): field -> [old, new]
    config_changes: dict[str, list[Any]] = Field(default_factory=dict)
    stop_reason: str | None = None
    status: str | None = None
    exit_code: int | None = None
    failure: str | None = None
    monitor_cost: dict[str, float] | None = None  # Sampler.cost() averaged over rounds
    monitor_error: str | None = None
    engine_seconds_per_round: float | None = None


class SessionManifest(BaseModel):
    schema_version: int = MANIFEST_SCHEMA_VERSION
    pilot_sys_version: str = __version__
    mode: str = "run"  # "run" or "compare"
    config: SessionConfig
    workloads: list[WorkloadSpec]
    context: dict[str, Any] = Field(default_factory=dict)
    created_at: float = Field(default_factory=time.time)
    invocations: list[Invocation] = Field(default_factory=list)
    # filled by the tuner (--overhead-budget)
    overhead: dict[str, Any] = Field(default_factory=dict)
    cut: str | None = None  # the component under test the data path resolved to
    data_path: list[str] | None = None  # component ids on the workload's data path


class MonitorSummary(BaseModel):
    """What the journal line keeps of a round's monitoring (the full trace is in monitor.json)."""

    file: str | None = None
    samples: int = 0
    valid: bool | None = None
    hidden_bottlenecks: list[str] = Field(default_factory=list)
    max_utilization: dict[str, float] = Field(default_factory=dict)
    error: str | None = None
    # stretches a source (a remote host) gave no sample: "remote:srv 3.1-4.5 s"
    gaps: list[str] = Field(default_factory=list)


class RoundRecord(BaseModel):
    """One journal line."""

    index: int  # 1-based over the whole session (all workloads)
    workload: str
    workload_round: int  # 1-based within its workload
    dir: str  # round folder, relative to the result directory
    started_at: float
    work_amount: float
    duration: float
    phase: str
    short: bool = False
    returncode: int = 0
    failed: bool = False
    failure: str | None = None
    readings: dict[str, float] = Field(default_factory=dict)
    unit_counts: dict[str, int] = Field(default_factory=dict)
    work_done: float | None = None
    warnings: list[str] = Field(default_factory=list)
    monitor: MonitorSummary | None = None
    engine_seconds: float | None = None  # the previous round's bookkeeping cost, for the record
    usage: ProcessUsage | None = None  # the command's user/system CPU and peak RSS (rusage)


def _ranges(indices: list[int]) -> str:
    """``[1, 2, 3, 7]`` -> ``"1-3, 7"``."""
    out: list[str] = []
    for i in sorted(indices):
        if out and out[-1].split("-")[-1] == str(i - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        else:
            out.append(str(i))
    return ", ".join(out)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a new file beside ``path`` and a rename, so a reader never sees half a file
    and a link planted at ``path`` is replaced, not written through; on any failure (a full
    disk, Ctrl-C) the new file is removed and ``path`` is untouched."""
    replace_file(path, text)


def unwritable(root: Path, exc: OSError) -> PilotError:
    """One line for a result directory that cannot be written: a read-only file system or no
    permission is bad input (exit 2); a full disk is :class:`JournalWriteFailed`."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return JournalWriteFailed(
            f"{root}: disk full ({errno.errorcode[exc.errno]}) while saving the result; every "
            f"journaled round is intact: free some space, then `pilot-sys report {root}` writes "
            "the result and the reports"
        )
    if exc.errno == errno.EROFS:
        why = "is on a read-only file system"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        why = "is not writable by this user"
    else:
        why = f"cannot be written ({exc.strerror or exc})"
    return BadInput(
        str(root), f"{why}; `pilot-sys report --stdout {root}` shows its report without writing"
    )


def _write_error(path: Path, exc: OSError, kept: int | None) -> JournalWriteFailed:
    """One clear line for a failed write; a full disk says what is kept and how to go on."""
    root = path.parent if path.name == JOURNAL else path.parent.parent.parent
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        held = (
            f"the {kept} round(s) journaled before are intact"
            if kept is not None
            else "every journaled round is intact"
        )
        return JournalWriteFailed(
            f"{path}: disk full (ENOSPC) while saving a round; {held}: free some space, "
            f"then `pilot-sys run --resume {root}` continues the session"
        )
    return JournalWriteFailed(f"{path}: cannot save the round: {exc.strerror or exc}")


class SyncBatch:
    """fsyncs of one round's files, run in parallel with the analysis of that round.

    ``wait()`` joins them and turns a failure into :class:`JournalWriteFailed`. With ``defer``
    they are only queued, and ``wait()`` starts and joins every queued one: the engine then
    makes several rounds durable at once (one fsync of the journal covers all their lines),
    between rounds, never inside one."""

    def __init__(self, pool: ThreadPoolExecutor, defer: bool = False) -> None:
        self.pool = pool
        self.defer = defer
        self.futures: list[Future[None]] = []
        self._queued: list[Callable[[], None]] = []

    def _add(self, work: Callable[[], None]) -> None:
        if self.defer:
            self._queued.append(work)
        else:
            self.futures.append(self.pool.submit(work))

    @property
    def pending(self) -> int:
        """fsyncs queued or running (each may hold a file descriptor open)."""
        return len(self._queued) + len(self.futures)

    def add_fd(self, fd: int, path: Path, kept: int) -> None:
        def work() -> None:
            try:
                os.fsync(fd)
            except OSError as exc:
                raise _write_error(path, exc, kept - 1) from None
            finally:
                os.close(fd)

        self._add(work)

    def add_path(self, path: Path) -> None:
        def work() -> None:
            try:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as exc:
                raise _write_error(path, exc, None) from None

        self._add(work)

    def wait(self) -> None:
        queued, self._queued = self._queued, []
        self.futures += [self.pool.submit(work) for work in queued]
        futures, self.futures = self.futures, []
        errors = []
        for f in futures:
            exc = f.exception()
            if exc is not None:
                errors.append(exc)
        if errors:
            raise errors[0]


LOCK_FILE = ".lock"


def _only_leftovers(root: Path) -> bool:
    """True when ``root`` holds nothing, or only what a session refused before its first round
    leaves behind (an empty ``rounds/``, the ``.lock``): such a directory is reused."""
    try:
        entries = list(root.iterdir())
    except OSError:
        return False
    for entry in entries:
        if entry.name == LOCK_FILE and entry.is_file():
            continue
        if entry.name == ROUNDS_DIR and entry.is_dir() and not any(entry.iterdir()):
            continue
        return False
    return True


class Journal:
    """Writer and reader of one result directory."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.manifest: SessionManifest | None = None
        self.records: list[RoundRecord] = []
        self.repairs: list[str] = []  # what a reader must know: repairs made, gaps found
        self.damage: list[str] = []  # gaps that make the directory unsafe to continue (check())
        self.orphans: list[Path] = []  # round folders without a journal line (check())
        self._lock_fd: int | None = None
        self._line_numbers: list[int] = []  # journal line of each record
        self._line_bytes: list[bytes] = []
        self._fixable = True  # every damage found is one --repair can mend
        self._sequence = SequenceCheck()

    def lock(self) -> None:
        """One writer per directory: a second `pilot-sys run` (or a --resume while the first is
        still finishing) is refused. flock is released by the kernel when the process dies,
        kill -9 included, so a stale lock never blocks a resume."""
        import fcntl

        try:
            fd = open_nofollow(self.root / LOCK_FILE, os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            raise unwritable(self.root, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise BadInput(
                str(self.root),
                f"another pilot-sys (pid {holder}) is writing this result directory; "
                "wait for it to finish",
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as exc:
            os.close(fd)
            raise unwritable(self.root, exc) from None
        self._lock_fd = fd

    @staticmethod
    def writer_pid(root: Path) -> int | None:
        """The pid of the pilot-sys that holds ``root``'s lock (a session still running), or
        None when no process writes it. Only reads: works on a read-only file system too."""
        import fcntl

        try:
            fd = os.open(Path(root) / LOCK_FILE, os.O_RDONLY)
        except OSError:
            return None  # no lock file: nothing ever wrote here, or it was removed
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode(errors="replace").strip()
            return int(text) if text.isdigit() else -1
        except OSError:
            return None
        finally:
            os.close(fd)  # closing it drops the shared lock just taken
        return None

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    # -- creation and opening ----------------------------------------------------------------
    @staticmethod
    def refuse_existing(root: Path) -> None:
        """BadInput unless ``root`` is new or empty (checked again by :meth:`create`): a
        directory holding a session is continued with --resume, and a directory holding
        anything else is the user's, never written into."""
        root = Path(root)
        if (root / JOURNAL).exists() or (root / MANIFEST).exists():
            raise BadInput(
                str(root),
                "already holds a session; use --resume to continue it or choose another -o",
            )
        if root.exists() and not root.is_dir():
            raise BadInput(str(root), "is a file, not a directory; choose another -o")
        if root.is_dir() and not _only_leftovers(root):
            raise BadInput(
                str(root),
                "is not empty and holds no pilot-sys session; nothing was "
                "written: choose a new or empty directory for -o",
            )

    @classmethod
    def create(cls, root: Path, manifest: SessionManifest) -> Journal:
        root = Path(root)
        cls.refuse_existing(root)
        try:
            (root / ROUNDS_DIR).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BadInput(
                str(root), f"cannot create the result directory: {exc.strerror}"
            ) from None
        j = cls(root)
        j.lock()
        j.manifest = manifest
        j.save_manifest()
        os.close(create_exclusive(root / JOURNAL))
        _fsync_dir(root)
        return j

    @classmethod
    def open(cls, root: Path, repair: bool = True, set_aside: bool = False) -> Journal:
        """Open an existing directory. Every gap between the journal and the round folders is
        found (:meth:`check`): a missing ``units.npz`` or ``monitor.json`` is noted in
        ``repairs``, damage (round folders the journal does not know, beyond the one round a
        kill leaves in flight; a missing journal beside round folders) in ``damage``.

        With ``repair`` (a writer: --resume), the directory is locked, damage is refused unless
        ``set_aside`` (``run --resume --repair``) allows setting those folders aside, a torn
        last line is cut (kept in ``rounds.jsonl.torn``) and the round in flight is kept as
        ``*.incomplete``. Without it (``pilot-sys report``) nothing is changed."""
        root = Path(root)
        mpath = root / MANIFEST
        if not mpath.is_file():
            raise BadInput(str(root), "not a pilot-sys result directory (no session.json)")
        j = cls(root)
        if repair:  # a writer (resume); `pilot-sys report` only reads
            j.lock()
        try:
            try:
                j.manifest = SessionManifest.model_validate_json(read_bounded(mpath, JSON_BYTES))
            except ValidationError as exc:
                err = exc.errors()[0]
                loc = ".".join(str(p) for p in err["loc"])
                raise BadInput(str(mpath), f"{loc}: {err['msg']}") from None
            j._read_journal(repair=repair, cut=False)
            j.check()
            if repair:
                if j.damage and not set_aside:
                    damage = "; ".join(j.damage)
                    how = (
                        f"`pilot-sys run --resume {root} --repair` sets those folders "
                        "aside (kept as *.incomplete), drops repeated journal lines and "
                        "restores their order, and continues"
                        if j._fixable
                        else "--repair cannot mend this: restore the files named from a copy"
                    )
                    raise BadInput(str(root), f"damaged: {damage}; nothing was changed. {how}")
                if j.damage and not j._fixable:
                    raise BadInput(
                        str(root),
                        f"damaged beyond what --repair mends: {'; '.join(j.damage)}; nothing "
                        "was changed: restore the files named from a copy",
                    )
                j.repairs = []
                j.records = []
                j._line_numbers, j._line_bytes = [], []
                j._read_journal(repair=True)
                j.check()
                if j._sequence.order is not None:
                    j._rewrite_in_order(j._sequence)
                    j.check()
                j._set_aside_incomplete(j.orphans)
        except BaseException:
            j.unlock()
            raise
        return j

    @property
    def repairable(self) -> bool:
        """Whether ``run --resume --repair`` mends every damage :meth:`check` found."""
        return self._fixable

    def check(self) -> None:
        """Compare the journal with the round folders (no change to either).

        Noted in ``repairs`` (the analysis goes on without the missing part, and says so):
        journaled rounds whose ``units.npz`` or ``monitor.json`` is missing. ``damage``: round
        folders without a journal line other than the single round in flight when a session
        was killed, journal lines out of sequence, and a journal missing beside round folders.
        ``orphans`` lists the folders without a journal line (the round in flight included)."""
        assert self.manifest is not None
        self.damage = []
        notes: list[str] = []
        journal_exists = (self.root / JOURNAL).is_file()
        self._fixable = True
        found_links = links(self.root, (JOURNAL, MANIFEST, LOCK_FILE, "plots"), ROUNDS_DIR)
        if found_links:  # never followed: a repair would act outside the session
            self._fixable = False
            self.damage.append("; ".join(found_links))
        outside = bad_round_dirs(self.records, self._line_numbers)
        if outside:
            self._fixable = False
            self.damage.append(f"{JOURNAL} " + "; ".join(outside[:3]))
        sequence = check_sequence(self.records, self._line_numbers, self._line_bytes)
        if sequence.problems:
            self._fixable = self._fixable and sequence.repairable
            self.damage.append(f"{JOURNAL} is out of sequence: " + "; ".join(sequence.problems[:4]))
        self._sequence = sequence
        if found_links or outside:
            self.orphans = []
            return
        no_units: dict[str, list[int]] = {}
        no_monitor: list[int] = []
        for rec in self.records:
            folder = self.root / rec.dir
            counted = sorted(k for k, n in rec.unit_counts.items() if n > 0)
            if counted and not (folder / UNITS_FILE).is_file():
                no_units.setdefault(", ".join(counted), []).append(rec.index)
            trace = rec.monitor.file if rec.monitor is not None else None
            if trace and not (folder / trace).is_file():
                no_monitor.append(rec.index)
        for pis, rounds in no_units.items():
            notes.append(
                f"{UNITS_FILE} missing for round(s) {_ranges(rounds)}: their unit "
                f"readings of {pis} are lost, and the intervals from unit readings "
                "leave those rounds out"
            )
        if no_monitor:
            notes.append(
                f"{MONITOR_FILE} missing for round(s) {_ranges(no_monitor)}: the "
                "bottleneck and phase checks leave those rounds out"
            )
        known = {r.dir for r in self.records}
        rdir = self.root / ROUNDS_DIR
        self.orphans = sorted(
            child
            for child in (rdir.iterdir() if rdir.is_dir() else ())
            if child.is_dir()
            and ".incomplete" not in child.name
            and f"{ROUNDS_DIR}/{child.name}" not in known
        )
        in_flight = self._next_round_names()
        strays = [c for c in self.orphans if not (len(self.orphans) == 1 and c.name in in_flight)]
        if strays:
            shown = ", ".join(f"{ROUNDS_DIR}/{c.name}" for c in strays[:3])
            more = f" and {len(strays) - 3} more" if len(strays) > 3 else ""
            if not journal_exists:
                held = f"{JOURNAL} is missing"
            elif not self.records:
                held = f"{JOURNAL} is empty"
            else:
                held = f"{JOURNAL} holds {len(self.records)} round(s)"
            self.damage.append(
                f"{held}, but {len(strays)} round folder(s) have no journal line ({shown}{more})"
            )
        for note in notes:
            if note not in self.repairs:
                self.repairs.append(note)

    def _next_round_names(self) -> set[str]:
        """Folder names the next round of each workload would get: the one round a kill can
        leave in flight without a journal line."""
        assert self.manifest is not None
        names = [w.name for w in self.manifest.workloads]
        names = names or sorted({r.workload for r in self.records})
        several = len(names) > 1
        out = set()
        for name in names:
            nxt = max((r.workload_round for r in self.records if r.workload == name), default=0) + 1
            out.add(f"{name}-{nxt:04d}" if several else f"{nxt:04d}")
        return out

    def _read_journal(self, repair: bool, cut: bool = True) -> None:
        """Read the journal; with ``repair`` a torn or garbled last line is left out (and, with
        ``cut``, cut off the file, its bytes kept in ``rounds.jsonl.torn``)."""
        path = self.root / JOURNAL
        data = read_bounded(path, JOURNAL_BYTES) if path.exists() else b""
        good_end = 0
        pos = 0
        lineno = 0
        while pos < len(data):
            nl = data.find(b"\n", pos)
            lineno += 1
            if nl < 0:  # a torn last line: the process died while appending it
                break
            line = data[pos:nl]
            if line.strip():
                try:
                    self.records.append(RoundRecord.model_validate_json(line))
                    self._line_numbers.append(lineno)
                    self._line_bytes.append(line)
                except ValidationError as exc:
                    if data.find(b"\n", nl + 1) >= 0 or not repair:
                        err = exc.errors()[0]
                        raise BadInput(
                            f"{path}:{lineno}", f"damaged journal line: {err['msg']}"
                        ) from None
                    break  # garbage in the very last line: treat as torn
            pos = nl + 1
            good_end = pos
        if good_end < len(data):
            torn = data[good_end:]
            if repair and cut:
                try:
                    torn_path = path.with_name(JOURNAL + ".torn")
                    fd = open_nofollow(torn_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                    with os.fdopen(fd, "ab") as fh:
                        fh.write(torn + b"\n")
                    with os.fdopen(open_nofollow(path, os.O_RDWR), "r+b") as fh:
                        fh.truncate(good_end)
                        os.fsync(fh.fileno())
                except OSError as exc:
                    raise unwritable(self.root, exc) from None
                self.repairs.append(
                    f"cut a torn last journal line ({len(torn)} bytes, kept in {JOURNAL}.torn)"
                )
            else:
                self.repairs.append(
                    f"a torn last journal line ({len(torn)} bytes) is left out "
                    "(the round it began never finished)"
                )

    def _rewrite_in_order(self, sequence: SequenceCheck) -> None:
        """--repair of a journal with exact repeats or lines out of order: the lines kept, in
        round order, replace it (atomically); the journal as it was stays beside it."""
        assert sequence.order is not None
        path = self.root / JOURNAL
        kept = b"".join(self._line_bytes[p] + b"\n" for p in sequence.order)
        before = path.with_name(f"{JOURNAL}.before-repair-{int(time.time())}")
        try:
            os.link(path, before)  # the old file itself, kept under a new name
            replace_file(path, kept)
        except OSError as exc:
            raise unwritable(self.root, exc) from None
        self.records = [self.records[p] for p in sequence.order]
        self._line_numbers = list(range(1, len(self.records) + 1))
        self._line_bytes = [self._line_bytes[p] for p in sequence.order]
        self.repairs.append(
            f"{JOURNAL} repaired ({'; '.join(sequence.problems)}): {len(self.records)} line(s) "
            f"kept in round order, the journal as it was kept as {before.name}"
        )

    def _set_aside_incomplete(self, folders: list[Path]) -> None:
        """Rename round folders without a journal line to ``*.incomplete`` (kept, not
        analysed): the round a kill left in flight, or what ``--repair`` was asked to set aside."""
        for child in folders:
            rel = f"{ROUNDS_DIR}/{child.name}"
            target = child.with_name(child.name + ".incomplete")
            n = 1
            while target.exists():
                n += 1
                target = child.with_name(f"{child.name}.incomplete{n}")
            try:
                child.rename(target)
            except OSError as exc:
                raise unwritable(self.root, exc) from None
            self.repairs.append(
                f"round folder {rel} had no journal line (interrupted round): kept as {target.name}"
            )
        self.orphans = []

    def discard_empty(self) -> None:
        """Remove what :meth:`create` made, when a session is refused before its first round."""
        if self.records:
            return
        self.unlock()
        for name in (JOURNAL, MANIFEST, LOCK_FILE, GRAPH_NAME):
            (self.root / name).unlink(missing_ok=True)
        for d in (self.root / ROUNDS_DIR, self.root):
            try:
                d.rmdir()  # only if empty: never anything else
            except OSError:
                pass

    # -- writing -----------------------------------------------------------------------------
    def save_manifest(self) -> None:
        assert self.manifest is not None
        atomic_write_text(self.root / MANIFEST, self.manifest.model_dump_json(indent=2))

    def round_dir(self, workload: str, workload_round: int, several: bool) -> tuple[Path, str]:
        name = f"{workload}-{workload_round:04d}" if several else f"{workload_round:04d}"
        path = self.root / ROUNDS_DIR / name
        if path.exists():  # a leftover of an interrupted round that was not set aside
            path.rename(path.with_name(f"{name}.incomplete-{int(time.time())}"))
        # not created here: a workload that keeps output creates it (the runners do), and an
        # in-process workload that keeps none costs no directory entry in the round's fsync
        return path, f"{ROUNDS_DIR}/{name}"

    @staticmethod
    def write_units(
        round_dir: Path,
        unit_readings: dict[str, np.ndarray],
        unit_times: dict[str, np.ndarray],
        batch: SyncBatch | None = None,
    ) -> Path | None:
        """Unit readings of a round as one numpy archive (``<pi>`` and ``<pi>.t``); fsynced now,
        or by ``batch`` in parallel with the analysis."""
        if not unit_readings:
            return None
        arrays: dict[str, np.ndarray] = {}
        for name, values in unit_readings.items():
            arrays[name] = np.asarray(values, dtype=np.float64)
            if name in unit_times:
                arrays[f"{name}.t"] = np.asarray(unit_times[name], dtype=np.float64)
        path = round_dir / UNITS_FILE
        try:
            round_dir.mkdir(parents=True, exist_ok=True)
            fd = open_nofollow(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays)
                fh.flush()
                if batch is None:
                    os.fsync(fh.fileno())
        except OSError as exc:
            try:  # no half-written archive: it would only hold the space a full disk lacks
                path.unlink(missing_ok=True)
            except OSError:
                pass
            raise _write_error(path, exc, None) from None
        if batch is not None:
            batch.add_path(path)
        return path

    def append(self, record: RoundRecord, batch: SyncBatch | None = None) -> None:
        """Append one journal line. Without ``batch`` it is fsynced here; with one, the fsync
        runs in parallel with the analysis and ``batch.wait()`` must return before the next
        round starts (the engine does so): nothing is acted on before it is durable."""
        path = self.root / JOURNAL
        line = (record.model_dump_json() + "\n").encode()
        try:  # never through a link planted in place of the journal
            fd = open_nofollow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except OSError as exc:
            raise _write_error(path, exc, len(self.records)) from None
        handed_over = False
        try:
            size = os.fstat(fd).st_size
            try:
                written = os.write(fd, line)
                if written != len(line):
                    raise OSError(errno.ENOSPC, "short write")
                if batch is None:
                    os.fsync(fd)
            except OSError as exc:
                try:  # keep the journal made of whole lines
                    os.ftruncate(fd, size)
                except OSError:
                    pass
                raise _write_error(path, exc, len(self.records)) from None
            if batch is not None:
                batch.add_fd(fd, path, len(self.records) + 1)
                handed_over = True
        finally:
            if not handed_over:
                os.close(fd)
        self.records.append(record)

    # -- reading -----------------------------------------------------------------------------
    def load_units(
        self, record: RoundRecord
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Unit readings (and their times) of a journaled round; empty if it had none.

        A ``units.npz`` that cannot be used (torn by a power loss, over its size limit, not an
        archive, a reading that is not a finite number, a non-positive rate averaged
        harmonically) costs that round its unit readings, with a note naming the file: the
        rest of the session is analysed as before."""
        path = self.root / record.dir / UNITS_FILE
        if not path.is_file():
            return {}, {}
        try:
            values, times = self._read_units(path, record)
        except _UnusableUnits as exc:
            note = (
                f"{record.dir}/{UNITS_FILE} {exc}; round {record.index}'s unit readings "
                "are not used"
            )
            if note not in self.repairs:
                self.repairs.append(note)
            return {}, {}
        return values, times

    def _read_units(
        self, path: Path, record: RoundRecord
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        import zipfile

        from pilot_sys.limits import UNITS_BYTES
        from pilot_sys.stats.pi import unmeasurable

        try:
            if path.stat().st_size > UNITS_BYTES.value():
                raise _UnusableUnits(
                    f"is over the {UNITS_BYTES.variable} limit ({UNITS_BYTES.value()} bytes)"
                )
            with np.load(path, allow_pickle=False) as z:
                arrays = {key: z[key] for key in z.files}
        except _UnusableUnits:
            raise
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
            raise _UnusableUnits(f"unreadable ({type(exc).__name__}: {exc})") from None
        harmonic = {
            pi.name
            for w in (self.manifest.workloads if self.manifest else [])
            if w.name == record.workload
            for pi in w.pis
            if pi.pi_type == "harmonic"
        }
        values: dict[str, np.ndarray] = {}
        times: dict[str, np.ndarray] = {}
        for key, array in arrays.items():
            name = key[:-2] if key.endswith(".t") else key
            if array.ndim != 1 or array.dtype.kind not in "fiu":
                raise _UnusableUnits(f"holds {key!r} as {array.dtype} {array.shape}, not numbers")
            array = array.astype(np.float64, copy=False)
            bad = ~np.isfinite(array) if key.endswith(".t") else unmeasurable(array)
            if not key.endswith(".t") and name in harmonic:
                bad |= array <= 0
            if np.any(bad):
                at = int(np.argmax(bad))
                raise _UnusableUnits(f"holds {array[at]:g} as reading {at + 1} of {key!r}")
            (times if key.endswith(".t") else values)[name] = array
        for name, stamps in times.items():
            if name in values and stamps.size != values[name].size:
                raise _UnusableUnits(
                    f"holds {values[name].size} readings of {name!r} but {stamps.size} times"
                )
        return values, times

    def load_monitor(self, record: RoundRecord) -> Any | None:
        """The round's MonitorTrace, or None when the round was not monitored."""
        from pilot_sys.monitor.trace import MonitorTrace

        if record.monitor is None or record.monitor.file is None:
            return None
        path = self.root / record.dir / record.monitor.file
        if not path.is_file():
            return None
        try:
            return MonitorTrace.model_validate_json(read_bounded(path, TRACE_BYTES))
        except (ValidationError, json.JSONDecodeError, BadInput):
            return None

    def rounds_of(self, workload: str) -> list[RoundRecord]:
        return [r for r in self.records if r.workload == workload]
