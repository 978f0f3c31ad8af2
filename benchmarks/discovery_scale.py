"""Static discovery cost: this host against an anchor, and linear growth on synthetic sysfs trees.

1. This host: the median wall time of ``discover("/")`` (every static plug-in and the graph
   build) over R runs, and the anchor measured in the same run: a bare ``os.scandir`` walk of
   /sys/class/block that reads each device's ``dev`` and ``size`` (the least any block
   discovery can do). Target: well under 0.5 s.
2. Scale: synthetic trees laid out like the kernel's (SCSI disks with one partition each under a
   PCI controller, NICs on their own PCI functions, one mount per ten disks) with
   N block devices and N/10 NICs, for N in 50, 500, 2000, 5000. Printed: the median discovery time,
   the time per device (block + NIC), and that per-device time as a ratio to the smallest
   size's: linear growth keeps the ratio near 1 (a quadratic step would show ~10x per row).
   The ratio uses the least process CPU time of the runs (wall time on a shared machine swings
   2-3x with other tenants' load); the median wall time is printed next to it, and the CPU
   times' spread (max / min over the runs): the ratio of two rows is no surer than that. Run
   the script several times and report the range of the ratios, not one run's.

    python benchmarks/discovery_scale.py [--runs 5] [--sizes 50,500,2000,5000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

from pilot_sys.topology.discover import discover


def anchor_scan() -> int:
    count = 0
    with os.scandir("/sys/class/block") as entries:
        for entry in entries:
            for attr in ("dev", "size"):
                with open(f"{entry.path}/{attr}") as fh:
                    fh.read()
            count += 1
    return count


def timed(fn, runs: int) -> float:  # type: ignore[no-untyped-def]
    """Median wall time of ``runs`` calls."""
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def cpu_timed(fn, runs: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Least process CPU time of ``runs`` calls, and their spread (max / min): on a shared
    machine, other tenants inflate wall time by 2-3x from run to run; the least CPU time is the
    cost of the code itself, and the spread says how far one call's figure can be from it."""
    samples = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        samples.append(time.process_time() - start)
    return min(samples), max(samples) / max(min(samples), 1e-9)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def _link(root: Path, inner: str, target: str) -> None:
    path = root / inner.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(target, os.path.dirname(inner)), path)


def synthetic_tree(root: Path, n_block: int, n_nic: int) -> None:
    """n_block/2 SCSI disks with one partition each, n_nic NICs, one ext4 mount per 10 disks."""
    hba = "/sys/devices/pci0000:00/0000:00:10.0"
    _write(root / hba.lstrip("/") / "class", "0x010700")
    _link(root, "/sys/bus/pci/devices/0000:00:10.0", hba)
    mounts = ["1 0 0:1 / / rw - rootfs rootfs rw"]
    for i in range(n_block // 2):
        scsi = f"{hba}/host0/port-0:{i}/end_device-0:{i}/target0:0:{i}/0:0:{i}:0"
        disk, part = f"sd{i}", f"sd{i}p1"
        major, minor = 8 + (i // 8), (i % 8) * 16
        dpath = f"{scsi}/block/{disk}"
        for key, value in {
            "dev": f"{major}:{minor}",
            "size": "7814037168",
            "ro": "0",
            "removable": "0",
            "queue/rotational": "1",
            "queue/max_sectors_kb": "1280",
            "queue/nr_requests": "64",
            "queue/logical_block_size": "512",
        }.items():
            _write(root / dpath.lstrip("/") / key, value)
        ppath = f"{dpath}/{part}"
        for key, value in {
            "dev": f"{major}:{minor + 1}",
            "size": "7814035120",
            "partition": "1",
        }.items():
            _write(root / ppath.lstrip("/") / key, value)
        for name, path, devnum in (
            (disk, dpath, f"{major}:{minor}"),
            (part, ppath, f"{major}:{minor + 1}"),
        ):
            _link(root, f"/sys/class/block/{name}", path)
            _link(root, f"/sys/dev/block/{devnum}", path)
        if i % 10 == 0:
            mounts.append(f"{100 + i} 1 {major}:{minor + 1} / /data/{i} rw - ext4 /dev/{part} rw")
    for i in range(n_nic):
        bus, fn = divmod(i, 8)
        pci = (
            f"/sys/devices/pci0000:00/0000:00:11.0/0000:{(bus + 1) % 256:02x}:{bus // 256:02x}.{fn}"
        )
        _write(root / pci.lstrip("/") / "class", "0x020000")
        for key, value in {
            "current_link_speed": "8.0 GT/s PCIe",
            "current_link_width": "8",
            "max_link_speed": "8.0 GT/s PCIe",
            "max_link_width": "8",
        }.items():
            _write(root / pci.lstrip("/") / key, value)
        _link(root, f"/sys/bus/pci/devices/{os.path.basename(pci)}", pci)
        net = f"{pci}/net/eth{i}"
        for key, value in {
            "speed": "10000",
            "duplex": "full",
            "mtu": "9000",
            "type": "1",
            "operstate": "up",
            "uevent": f"INTERFACE=eth{i}",
        }.items():
            _write(root / net.lstrip("/") / key, value)
        _link(root, f"/sys/class/net/eth{i}", net)
    _write(root / "proc/self/mountinfo", "\n".join(mounts))
    _write(root / "sys/devices/system/cpu/online", "0-63")
    _write(root / "proc/meminfo", "MemTotal: 263000000 kB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="50,500,2000,5000")
    args = parser.parse_args()

    start = time.perf_counter()
    discover("/")  # the first call imports the plug-ins, as `pilot-sys graph` pays once
    cold = time.perf_counter() - start
    host = timed(lambda: discover("/"), args.runs)
    anchor = timed(anchor_scan, args.runs)
    graph = discover("/")
    print(f"this host: {len(graph)} components, {len(graph.links())} directed links")
    print(
        f"  discover('/') 1st call        {cold * 1e3:8.2f} ms  (imports the plug-ins; target < "
        "500 ms)"
    )
    print(f"  discover('/')          median {host * 1e3:8.2f} ms  (later calls; target < 500 ms)")
    print(f"  anchor scandir block   median {anchor * 1e3:8.2f} ms  ({anchor_scan()} devices)")
    print(f"  ratio discover/anchor  {host / anchor:8.1f}x")

    print("\nsynthetic sysfs: N block devices (N/2 disks + N/2 partitions), N/10 NICs")
    print(
        f"{'N block':>8} {'NICs':>6} {'wall s':>8} {'cpu s':>8} {'cpu us/device':>14} "
        f"{'ratio to first':>15} {'cpu spread':>11}"
    )
    first = None
    with tempfile.TemporaryDirectory(
        prefix="pilot-sysfs-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None
    ) as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            root = Path(tmp) / f"n{n}"
            synthetic_tree(root, n, n // 10)
            found = discover(root)  # also warms the page cache of the new tree
            blocks = len([c for c in found.components() if c.kind == "block"])
            assert blocks == n, (blocks, n)
            elapsed = timed(partial(discover, root), args.runs)
            cpu, spread = cpu_timed(partial(discover, root), args.runs)
            per_device = cpu / (n + n // 10)
            first = first or per_device
            print(
                f"{n:>8} {n // 10:>6} {elapsed:>8.3f} {cpu:>8.3f} {per_device * 1e6:>14.1f} "
                f"{per_device / first:>15.2f} {spread:>10.2f}x"
            )


if __name__ == "__main__":
    main()
