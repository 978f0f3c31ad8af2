"""Multi-rate sampling on one time grid, the unsplit tick texts, and the per-device block files.

Hand-computed cases: a probe read on every third tick must give rates between its real reads
(with their own times), never a carried value's jump divided by one tick."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES
from pilot_sys.monitor.probe import Probe, ProbeContext
from pilot_sys.monitor.procread import MISSING, SEGMENT, LineTable, Wanted, parse_segments
from pilot_sys.monitor.rates import per_second, spread_reads
from pilot_sys.monitor.sampler import Sampler, TickPlan
from pilot_sys.plugins.dynamic import block, memory

PAIR = FIXTURES / "proc" / "vm-2cpu-dd-1s"
DT = 1.74


def test_spread_reads_by_hand() -> None:
    rows = np.array([0, 3, 6])
    # a rate computed at read 3 covers ticks 1-3, the one at read 6 ticks 4-6
    rate = spread_reads(np.array([np.nan, 10.0, 20.0]), rows, 8, interval=True)
    assert np.isnan(rate[0]) and rate[1:7].tolist() == [10.0, 10.0, 10.0, 20.0, 20.0, 20.0]
    assert np.isnan(rate[7])  # after the last read: the interval is not closed
    # a level holds from its read until the next one
    level = spread_reads(np.array([1.0, 2.0, 3.0]), rows, 8, interval=False)
    assert level.tolist() == [1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 3.0, 3.0]
    # a window that starts between reads (the live view): nothing before the first read
    assert np.isnan(spread_reads(np.array([5.0]), np.array([2]), 4, interval=False)[:2]).all()


class _SlowCounter(Probe):
    """A probe read at most 10 Hz with one cumulative counter."""

    name = "slow-counter"
    max_rate_hz = 10.0
    rate_reason = "test"
    columns = ("thing:x/events",)

    def __init__(self) -> None:
        super().__init__()
        self.readers = [lambda: (b"0",)]

    def derive(self, raw, t, metrics):
        return {
            "thing:x/events_per_s": per_second(raw[:, 0], t),
            "thing:x/events": raw[:, 0].copy(),
        }


class _SlowPlugin:
    KIND, NAME = "dynamic", "slow-counter"

    @staticmethod
    def open_probe(context):
        return _SlowCounter()


def test_a_slow_probe_is_read_on_its_ticks_and_its_rates_span_its_real_reads() -> None:
    sampler = Sampler(rate_hz=30.0, plugins=[_SlowPlugin])
    assert [(p.probe, p.every, p.rate_hz) for p in sampler.schedule()] == [
        ("slow-counter", 3, 10.0)
    ]
    t = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    reads = np.array([1, 0, 0, 1, 0, 0, 1], dtype=np.uint64)  # read on ticks 0, 3, 6
    # carried between reads
    raw = np.array([[100.0], [100.0], [100.0], [160.0], [160.0], [160.0], [400.0]])
    m = sampler._derive(raw, t, reads)
    rate = m["thing:x/events_per_s"]
    # (160 - 100) / (0.3 - 0.0) = 200 over ticks 1-3; (400 - 160) / (0.6 - 0.3) = 800 over ticks 4-6
    assert np.isnan(rate[0])
    assert rate[1:] == pytest.approx([200.0, 200.0, 200.0, 800.0, 800.0, 800.0])
    assert m["thing:x/events"].tolist() == [100.0, 100.0, 100.0, 160.0, 160.0, 160.0, 400.0]
    # what a per-tick derivation of the carried values would wrongly give: 0, 0, 600
    naive = per_second(raw[:, 0], t)
    assert naive[1:4] == pytest.approx([0.0, 0.0, 600.0])
    sampler.close()


@pytest.mark.live
def test_memory_is_read_at_its_rate_and_rated_between_real_reads() -> None:
    sampler = Sampler(rate_hz=50.0, components=["memory:host"])
    plan = {p.probe: p for p in sampler.schedule()}
    assert plan["memory"].every == 5 and plan["memory"].rate_hz == 10.0  # 10 / stat_interval (1 s)
    assert plan["memory_pressure"].every == 1  # PSI totals are exact: full rate
    sampler.start()
    time.sleep(0.7)
    trace = sampler.stop()
    rows = sampler.read_rows()["memory"]
    n = len(trace.timestamps)
    assert rows[0] == 0 and rows[-1] == n - 1  # the opening and closing samples read everything
    assert np.all(np.diff(rows)[:-1] >= 5) and len(rows) < n  # not on every tick
    raw, t = sampler.raw()
    col = sampler.columns.index("memory:host/pgmajfault")
    # carried forward: every row shows the counter of the last real read
    last_read = rows[np.searchsorted(rows, np.arange(n), side="right") - 1]
    assert np.array_equal(raw[:, col], raw[last_read, col])
    # the independent reference: (c[r_k] - c[r_k-1]) / (t[r_k] - t[r_k-1]) at each real read
    expected = np.diff(raw[rows, col]) / np.diff(t[rows])
    series = np.array(
        [np.nan if v is None else v for v in trace.series["memory:host/major_faults_per_s"]]
    )
    assert series[rows[1:]] == pytest.approx(expected)
    assert np.isfinite(series[1:]).all()  # every tick inside a closed interval has the rate
    assert all(v is not None for v in trace.series["memory:host/used_bytes"])
    assert any("memory read at 10 Hz" in note for note in trace.notes)


def _root_from_pair(tmp_path: Path, name: str = "t0") -> Path:
    root = tmp_path / "root"
    shutil.copytree(PAIR / name, root, dirs_exist_ok=True)
    return root


def test_the_useful_memory_rate_follows_stat_interval(tmp_path: Path) -> None:
    root = _root_from_pair(tmp_path)
    probe = memory.open_probe(ProbeContext(root=root))
    assert (
        probe.max_rate_hz == 10.0 and "unreadable" in probe.rate_reason
    )  # captured tree: no sysctl
    probe.close()
    (root / "proc" / "sys" / "vm").mkdir(parents=True)
    (root / "proc" / "sys" / "vm" / "stat_interval").write_text("4\n")
    probe = memory.open_probe(ProbeContext(root=root))
    assert probe.max_rate_hz == pytest.approx(10 / 4)  # 10 reads per 4 s fold interval
    assert "vm.stat_interval = 4 s" in probe.rate_reason
    probe.close()


def _write_sys_block(root: Path, snapshot: Path) -> None:
    """sysfs stat files (diskstats fields without major, minor, name) for vda and zram0."""
    for line in (snapshot / "proc" / "diskstats").read_text().splitlines():
        toks = line.split()
        folder = root / "sys" / "class" / "block" / toks[2]
        folder.mkdir(parents=True, exist_ok=True)
        if toks[2] in ("vda", "zram0"):
            (folder / "stat").write_text(" ".join(f"{x:>8}" for x in toks[3:]) + "\n")


def test_block_reads_the_watched_devices_own_files_when_few_are_watched(tmp_path: Path) -> None:
    root = _root_from_pair(tmp_path)
    _write_sys_block(root, PAIR / "t0")
    probe = block.open_probe(ProbeContext(root=root))
    assert probe.devices == ["vda", "zram0"] and probe.source == "/sys/class/block/<dev>/stat"
    first = [r() for r in probe.readers]
    _write_sys_block(root, PAIR / "t1")  # /proc/diskstats stays at t0: only the sysfs files move
    second = [r() for r in probe.readers]
    raw = np.array([[float(x) for part in row for x in part] for row in (first, second)])
    m = probe.derive(raw, np.array([0.0, DT]), {})
    # vda: sectors written 231046536 - 230694744, io_ticks 79696 - 79608 ms, writes 170030 - 169573
    assert m["block:vda/write_bytes_per_s"][1] == pytest.approx(351792 * 512 / DT)
    assert m["block:vda/busy"][1] == pytest.approx(88 / 1740)
    assert m["block:vda/write_iops"][1] == pytest.approx(457 / DT)
    probe.close()
    # one watched device without its own file: all of them from /proc/diskstats
    (root / "sys" / "class" / "block" / "zram0" / "stat").unlink()
    probe = block.open_probe(ProbeContext(root=root))
    assert probe.source == "/proc/diskstats"
    probe.close()


def test_tick_texts_parse_back_vectorised_and_by_name_when_the_layout_changes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "dev"
    header = "Inter-|   Receive\n face |bytes    packets\n"
    line = "  {name}: {rx} 13 0 0 0 0 0 0 {tx} 922 0 0 0 0 0 0\n"
    path.write_text(
        header + line.format(name="lo", rx=1, tx=2) + line.format(name="eth0", rx=3, tx=4)
    )
    table = LineTable(path, [Wanted("eth0", 1), Wanted("eth0", 9)], separators=b":|", skip_lines=2)
    texts = [table.tick_reader()()]
    path.write_text(
        header + line.format(name="lo", rx=1, tx=2) + line.format(name="eth0", rx=30, tx=40)
    )
    texts.append(table.tick_reader()())
    # a device appears before eth0: another token count, parsed by name
    path.write_text(
        header
        + line.format(name="veth9", rx=7, tx=8)
        + line.format(name="lo", rx=1, tx=2)
        + line.format(name="eth0", rx=300, tx=400)
    )
    texts.append(table.tick_reader()())
    # a device with as many counters in eth0's place: the key check sends it to the slow path
    path.write_text(
        header + line.format(name="lo", rx=1, tx=2) + line.format(name="eth1", rx=5, tx=6)
    )
    texts.append(table.tick_reader()())
    texts.append(texts[1][: texts[1].index(b"eth0")])  # cut before eth0's line
    parsed = parse_segments(texts, table.layout())
    assert parsed.tolist() == [
        [b"3", b"4"],
        [b"30", b"40"],
        [b"300", b"400"],
        [MISSING, MISSING],
        [MISSING, MISSING],
    ]
    table.close()


def test_the_tick_reads_each_slow_group_on_its_own_ticks_and_a_failed_tick_is_read_again() -> None:
    """``TickPlan.record``, the tick of the sampling thread and of ``per_sample_cost``: records by
    hand for one probe read every tick, one every 2nd and one every 3rd tick."""
    calls = {"fast": 0, "two": 0, "three": 0}
    failing = {"three": {3, 4}}  # the every-3rd group's read raises on its calls 3 and 4 (tick 6)

    def reader(name: str) -> Callable[[], bytes]:
        def read() -> bytes:
            calls[name] += 1
            if calls[name] in failing.get(name, ()):
                raise OSError("gone")
            return b"%s%d" % (name.encode(), calls[name])

        return read

    slow = [(2, 1, [(1, reader("two"))]), (3, 2, [(2, reader("three"))])]  # (every, bit, reads)
    plan = TickPlan([(0, reader("fast"))], slow)
    records = [plan.record(tick, closing=False) for tick in (0, 1, 2, 3, 5, 6)]  # tick 4 skipped
    records.append(plan.record(7, closing=True))
    assert [r.split(SEGMENT) for r in records] == [
        [b"3", b"fast1", b"two1", b"three1"],  # tick 0: both slow groups (bits 1 | 2)
        [b"0", b"fast2", b"two1", b"three1"],  # carried
        [b"1", b"fast3", b"two2", b"three1"],
        [b"2", b"fast4", b"two2", b"three2"],
        [b"1", b"fast5", b"two3", b"three2"],  # tick 4 was skipped: the group due then is read at 5
        # tick 6: "three" raised (call 3) after "two" was read (call 4); the tick was read again,
        # each read on its own: "two" again (call 5) and marked as read, "three" failed again
        # (call 4) and alone: empty, its counters MISSING for this tick
        [b"3", b"fast7", b"two5", b""],
        [b"3", b"fast8", b"two6", b"three5"],  # closing: everything
    ]
    assert plan.errors == {2: "OSError: gone"}
    # a scratch plan for measuring starts from tick 0 and leaves this one's schedule alone
    scratch = plan.scratch(every_probe=True)
    assert scratch.record(1, closing=False).split(SEGMENT)[0] == b"3"
    assert [g.due for g in plan.slow] == [8, 9]
