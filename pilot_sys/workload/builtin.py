"""The embedded default workload: sequential write, then read back, of a file in one directory.

``pilot-sys run`` with no command runs this against the current directory. The work amount is in
MiB; every block (or group of blocks, at least ``MIN_UNIT_BYTES``) is timed, giving unit
readings in B/s: rates over equal work, so the PIs declare ``unit_weighting="work"`` (their
harmonic mean is total bytes over total time). The page cache is kept out of the numbers:
O_DIRECT with a page-aligned buffer (an anonymous mmap) where the file system accepts it,
otherwise an fsync after each block and ``posix_fadvise(DONTNEED)`` before reading back. The
PI descriptions say which method ran.
"""

from __future__ import annotations

import errno
import math
import mmap
import os
import time
from pathlib import Path
from typing import Literal

import numpy as np
import psutil

from pilot_sys.errors import BadInput, WorkloadFailed
from pilot_sys.safefile import create_new
from pilot_sys.stats.pi import PIType
from pilot_sys.topology.mountinfo import MEMORY_FS, mount_for, parse_mountinfo, visible_mounts
from pilot_sys.workload.base import PISpec, RoundOutput

MiB = 1024 * 1024
ALIGNMENT = 4096  # O_DIRECT needs buffer, offset and length aligned to the logical block size
MIN_UNIT_BYTES = MiB  # smaller blocks are grouped so that one unit reading covers at least this
DEFAULT_RANGE_MIB = (16.0, 1024.0)
SPACE_MARGIN = 64 * MiB  # never fill a file system to the last byte
FILE_PREFIX = ".pilot-sys-seqio-"

Method = Literal["auto", "direct", "buffered"]


def file_system_of(path: Path) -> tuple[str, str]:
    """(mount point, file system type) holding ``path``, from /proc/self/mountinfo."""
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return "/", "unknown"
    entry = mount_for(str(path.resolve()), visible_mounts(parse_mountinfo(text)))
    return (entry.mountpoint, entry.fstype) if entry else ("/", "unknown")


def supports_direct_io(directory: Path) -> bool:
    """Whether an aligned O_DIRECT write works in ``directory`` (tmpfs before Linux 6.6,
    FUSE... do not)."""
    buffer = mmap.mmap(-1, ALIGNMENT)
    try:  # a new file under a random name: never one planted there, never through a link
        fd, probe = create_new(
            directory, f"{FILE_PREFIX}{os.getpid()}.", ".probe", flags=os.O_DIRECT
        )
    except OSError as exc:
        buffer.close()
        if exc.errno == errno.EINVAL:
            return False
        raise
    try:
        os.write(fd, buffer)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return False
        raise
    finally:
        os.close(fd)
        probe.unlink(missing_ok=True)
        buffer.close()
    return True


def _remove_stale_files(directory: Path) -> None:
    """Delete files left by a pilot-sys that was killed mid-round (its pid is gone)."""
    for path in directory.glob(f"{FILE_PREFIX}*"):
        pid = path.name[len(FILE_PREFIX) :].split(".", 1)[0]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            path.unlink(missing_ok=True)


def unit_rates(
    ends_ns: np.ndarray, start_ns: int, block_size: int, group: int
) -> tuple[np.ndarray, np.ndarray]:
    """B/s per group of ``group`` blocks from the blocks' end times; timestamps are group ends."""
    edges = np.concatenate(([start_ns], ends_ns[group - 1 :: group]))
    seconds = np.diff(edges) / 1e9
    with np.errstate(divide="ignore"):
        rates = np.where(seconds > 0, group * block_size / seconds, np.nan)
    return rates, edges[1:]


class SequentialIOWorkload:
    """Sequential write then read of ``work_amount`` MiB in ``block_size`` blocks, cache kept
    out."""

    work_amount_unit = "MiB"

    def __init__(
        self,
        directory: Path | str = ".",
        *,
        block_size: int = MiB,
        read_back: bool = True,
        method: Method = "auto",
    ) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise BadInput(
                str(directory), "not a directory (the built-in workload writes a file there)"
            )
        if not os.access(self.directory, os.W_OK | os.X_OK):
            raise BadInput(str(directory), "not writable by this user; choose another directory")
        if block_size <= 0 or block_size % ALIGNMENT:
            raise BadInput(
                "--block-size",
                f"must be a positive multiple of {ALIGNMENT} bytes, got {block_size}",
            )
        self.block_size = block_size
        self.read_back = read_back
        self.requested_method: Method = method
        self.group = max(1, math.ceil(MIN_UNIT_BYTES / block_size))
        self.mount, self.fs_type = file_system_of(self.directory)
        self._direct: bool | None = None
        self.name = (
            f"builtin sequential write{'/read' if read_back else ''} in {self.directory.resolve()}"
        )

    @property
    def direct(self) -> bool:
        """Whether rounds use O_DIRECT (probed once on the directory for ``method='auto'``)."""
        if self._direct is None:
            if self.requested_method == "auto":
                # On memory-backed file systems the page cache is the storage:
                # O_DIRECT means nothing.
                memory = self.fs_type in MEMORY_FS
                self._direct = not memory and supports_direct_io(self.directory)
            else:
                self._direct = self.requested_method == "direct"
        return self._direct

    def method_description(self) -> str:
        where = f"{self.fs_type} at {self.mount}"
        if self.direct:
            text = (
                f"O_DIRECT with a page-aligned buffer, {self.block_size // 1024} KiB blocks, "
                f"page cache bypassed ({where})"
            )
        else:
            text = (
                f"buffered {self.block_size // 1024} KiB blocks with fsync after each block and "
                f"posix_fadvise(DONTNEED) before reading back, O_DIRECT not used ({where})"
            )
        if self.fs_type in MEMORY_FS:
            text = (
                f"{self.block_size // 1024} KiB blocks on a memory-backed file system ({where}): "
                "this measures memory copies, there is no device or page cache to keep out"
            )
        return text

    def pi_specs(self) -> list[PISpec]:
        how = self.method_description()
        # one unit reading per group of blocks: equal work, whatever the rate
        specs = [
            PISpec(
                name="write_bw",
                unit="B/s",
                pi_type=PIType.HARMONIC,
                unit_weighting="work",
                description=f"sequential write: {how}",
            )
        ]
        if self.read_back:
            specs.append(
                PISpec(
                    name="read_bw",
                    unit="B/s",
                    pi_type=PIType.HARMONIC,
                    unit_weighting="work",
                    description=f"sequential read: {how}",
                )
            )
        return specs

    def free_bytes(self) -> int:
        stat = os.statvfs(self.directory)
        return stat.f_bavail * stat.f_frsize

    def default_work_amount_range(self) -> tuple[float, float]:
        """16 MiB .. 1 GiB, capped at a quarter of the free space; BadInput when too little is
        free."""
        low, high = DEFAULT_RANGE_MIB
        free = self.free_bytes() - SPACE_MARGIN
        high = min(high, float(free // 4 // MiB))
        if high < low:
            raise BadInput(
                str(self.directory),
                f"only {max(free, 0) // MiB} MiB free after a {SPACE_MARGIN // MiB} MiB "
                f"margin; the built-in workload needs at least {4 * low:g} MiB: free space or "
                "choose another directory",
            )
        return low, high

    def validate_work_amount_range(
        self, low: float, high: float, where: str = "-w/--work-amount"
    ) -> None:
        """BadInput (naming ``where``) when the largest round would not fit in the free space."""
        if low < 1 or high < low:
            raise BadInput(where, f"needs 1 <= MIN <= MAX MiB, got {low:g},{high:g}")
        need = self._blocks(high) * self.block_size + SPACE_MARGIN
        free = self.free_bytes()
        if need > free:
            raise BadInput(
                where,
                f"a {high:g} MiB round needs {need / MiB:.0f} MiB free in {self.directory} "
                f"(with a {SPACE_MARGIN // MiB} MiB margin), only {free / MiB:.0f} MiB are; "
                "lower MAX",
            )

    def data_path_args(self) -> list[str]:
        return [str(self.directory.resolve())]

    def _blocks(self, work_amount: float) -> int:
        return max(1, round(work_amount * MiB / self.block_size))

    def _check_space(self, nbytes: int) -> None:
        """A failed round (not bad input) when space ran out since the range was checked."""
        free = self.free_bytes()
        if free - SPACE_MARGIN < nbytes:
            raise WorkloadFailed(
                f"{self.directory}: a {nbytes / MiB:g} MiB round needs "
                f"{(nbytes + SPACE_MARGIN) / MiB:g} MiB free (with margin), "
                f"only {free / MiB:.0f} MiB are: lower the work amount or free space"
            )

    def _write(
        self, path: Path, blocks: int, buffer: mmap.mmap, ends: np.ndarray
    ) -> tuple[int, int]:
        """Write the file, recording each block's end time; returns (start, end incl. final
        fsync) in ns."""
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | (os.O_DIRECT if self.direct else 0))
        try:
            start = time.perf_counter_ns()
            for i in range(blocks):
                # distinct blocks: no dedup or zero-block shortcuts
                buffer[:8] = i.to_bytes(8, "little")
                if os.write(fd, buffer) != self.block_size:
                    raise WorkloadFailed(f"{path}: short write at block {i}")
                if not self.direct:
                    os.fsync(fd)
                ends[i] = time.perf_counter_ns()
            os.fsync(fd)  # metadata too: the round's write is complete only when it is durable
            end = time.perf_counter_ns()
            if not self.direct:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        return start, end

    def _read(
        self, path: Path, blocks: int, buffer: mmap.mmap, ends: np.ndarray
    ) -> tuple[int, int]:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | (os.O_DIRECT if self.direct else 0))
        try:
            if not self.direct:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            start = time.perf_counter_ns()
            for i in range(blocks):
                if os.readv(fd, [buffer]) != self.block_size:
                    raise WorkloadFailed(f"{path}: short read at block {i}")
                ends[i] = time.perf_counter_ns()
            end = time.perf_counter_ns()
        finally:
            os.close(fd)
        if int.from_bytes(buffer[:8], "little") != blocks - 1:
            raise WorkloadFailed(f"{path}: read back different data than was written")
        return start, end

    def run_round(self, work_amount: float, round_dir: Path) -> RoundOutput:
        """Write (then read) ``work_amount`` MiB; the file is removed afterwards, also on Ctrl-C."""
        round_dir.mkdir(parents=True, exist_ok=True)
        _remove_stale_files(self.directory)
        blocks = self._blocks(work_amount)
        nbytes = blocks * self.block_size
        self._check_space(nbytes)
        # created here, exclusively and under a random name (pilot_sys.safefile), then reopened
        # by _write through this very name: nobody else can have put a link there
        try:
            fd, path = create_new(self.directory, f"{FILE_PREFIX}{os.getpid()}.", ".tmp")
        except OSError as exc:
            raise WorkloadFailed(
                f"{self.directory}: cannot create a file ({exc.strerror})"
            ) from None
        buffer: mmap.mmap | None = None
        try:  # from its creation on, the file is removed whatever happens (Ctrl-C included)
            os.close(fd)
            buffer = mmap.mmap(-1, self.block_size)  # anonymous: page-aligned, as O_DIRECT needs
            buffer[:] = os.urandom(self.block_size)  # incompressible
            write_ends = np.zeros(blocks, dtype=np.int64)
            read_ends = np.zeros(blocks, dtype=np.int64)
            round_start = time.perf_counter_ns()
            w_start, w_end = self._write(path, blocks, buffer, write_ends)
            if self.read_back:
                r_start, r_end = self._read(path, blocks, buffer, read_ends)
            # The round ends with its I/O: deleting the file is clean-up, and its cost (freeing
            # extents, proportional to size) would bias the WPS fit's rate.
            duration = (time.perf_counter_ns() - round_start) / 1e9
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise WorkloadFailed(
                    f"{self.directory}: file system full during the round; lower the work amount"
                ) from None
            raise WorkloadFailed(f"{path}: {exc.strerror}") from None
        finally:
            path.unlink(missing_ok=True)
            if buffer is not None:
                buffer.close()
        readings = {"write_bw": nbytes / ((w_end - w_start) / 1e9)}
        rates, stamps = unit_rates(write_ends, w_start, self.block_size, self.group)
        units = {"write_bw": rates}
        times = {"write_bw": (stamps - round_start) / 1e9}
        lines = [
            f"method: {self.method_description()}",
            f"bytes: {nbytes}",
            f"write_seconds: {(w_end - w_start) / 1e9:.9f}",
        ]
        if self.read_back:
            readings["read_bw"] = nbytes / ((r_end - r_start) / 1e9)
            rates, stamps = unit_rates(read_ends, r_start, self.block_size, self.group)
            units["read_bw"] = rates
            times["read_bw"] = (stamps - round_start) / 1e9
            lines.append(f"read_seconds: {(r_end - r_start) / 1e9:.9f}")
        summary = round_dir / "builtin.txt"
        summary.write_text("\n".join(lines) + "\n")
        return RoundOutput(
            work_amount=nbytes / MiB,
            duration=duration,
            readings=readings,
            unit_readings=units,
            unit_timestamps=times,
            work_done=float(nbytes),
            output_files=[summary],
        )
