"""``pilot-sys monitor`` on the terminal: the verdict in a few lines, and the live view of the
data path's utilization while CMD runs.

Display only (collection is the sampler's, judging the verdict's): a rich table refreshed from
``Sampler.recent()``; shown only when stdout is a terminal. The command's output is relayed
line by line above the table so that both stay readable.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import IO, Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from pilot_sys import units
from pilot_sys.monitor.bottleneck import Verdict, cut_line, min_intervals

BAR_WIDTH = 16
THROUGHPUT = (
    ("read_bytes_per_s", "read"),
    ("write_bytes_per_s", "write"),
    ("rx_bytes_per_s", "receive"),
    ("tx_bytes_per_s", "send"),
)


def verdict_lines(verdict: Verdict, too_short: str | None = None) -> list[str]:
    """The verdict in a few lines for people: valid, INVALID or not judged (too few samples),
    the hidden bottlenecks with their evidence, the CUT's own state and, when both are hot,
    which one governs (``bottleneck.cut_line``: the words `run` uses too)."""
    lines: list[str] = []
    pct, hot = units.percent(verdict.threshold, 0), units.percent(verdict.max_hot_fraction, 0)
    cut = verdict.cut or "none named"
    hidden = [f"{h.component} ({h.direction})" for h in verdict.hidden_bottlenecks]
    if not verdict.enough_samples:
        needed = min_intervals(verdict.max_hot_fraction)
        seen = f"; seen above {pct}: {', '.join(hidden)}" if hidden else ""
        # ``too_short``: the command's own words on why (its sample count), said once
        lines.append(
            f"{too_short}{seen}"
            if too_short is not None
            else f"not judged: {verdict.intervals} sampled interval(s), {needed} needed to judge "
            f"a share of {hot} of the run (raise --rate or run longer){seen}"
        )
    elif verdict.hidden_bottlenecks:
        lines.append(
            f"INVALID: {len(verdict.hidden_bottlenecks)} hidden bottleneck(s) besides the CUT "
            f"({cut}), above {pct} for more than {hot} of the run:"
        )
    else:
        lines.append(
            f"valid: no component besides the CUT ({cut}) was above {pct} "
            f"for more than {hot} of the run"
        )
    if verdict.enough_samples:
        lines += [
            f"  - {h.component} ({h.direction}): {h.evidence}" for h in verdict.hidden_bottlenecks
        ]
    if verdict.cut is not None:
        judged = hidden if verdict.enough_samples else []
        lines.append(cut_line(verdict.cut, verdict.cut_saturated, judged))
    # the headline already says how many intervals there were
    lines += [
        f"note: {n}"
        for n in verdict.notes
        if verdict.enough_samples or not n.startswith(f"only {verdict.intervals} sampled")
    ]
    return lines


def bar(fraction: float, threshold: float) -> Text:
    filled = int(round(min(max(fraction, 0.0), 1.0) * BAR_WIDTH))
    colour = (
        "red" if fraction > threshold else ("yellow" if fraction > threshold * 0.75 else "green")
    )
    return Text("█" * filled + "·" * (BAR_WIDTH - filled), style=colour)


def rows_for(
    component: str, latest: dict[str, float], threshold: float
) -> list[tuple[str, str, Text, str]]:
    """(component, what, bar, value) rows: utilizations when a limit is known, else what was
    measured."""
    rows: list[tuple[str, str, Text, str]] = []
    prefix = f"{component}/"
    utils = sorted(k for k in latest if k.startswith(prefix + "util_"))
    for key in utils:
        value = latest[key]
        rows.append(
            (component, key[len(prefix) + 5 :], bar(value, threshold), units.percent(value, 0))
        )
    if component == "cpu:host" and prefix + "busiest_core" in latest:
        value = latest[prefix + "busiest_core"]
        rows.append((component, "busiest core", bar(value, threshold), units.percent(value, 0)))
    if prefix + "busy" in latest and component.startswith("block:"):
        value = latest[prefix + "busy"]
        rows.append((component, "busy (io_ticks)", bar(value, threshold), units.percent(value, 0)))
    if not utils:
        network = units.network_component(component)
        shown = [
            f"{label} {units.quantity(latest[prefix + m], 'B/s', network)}"
            for m, label in THROUGHPUT
            if prefix + m in latest
        ]
        if shown:
            rows.append((component, "limit unknown", Text(""), ", ".join(shown)))
    return rows


class LiveView:
    """A rich Live table of the watched components, plus the workload's own CPU use."""

    def __init__(
        self,
        components: Iterable[str],
        *,
        cut: str | None,
        threshold: float,
        console: Console | None = None,
    ) -> None:
        self.components = list(dict.fromkeys(["cpu:host", "memory:host", *components]))
        self.cut = cut
        self.threshold = threshold
        self.console = console or Console()
        self.started = time.monotonic()
        self.live = Live(
            self._render({}), console=self.console, refresh_per_second=4, transient=False
        )

    def _render(self, latest: dict[str, float]) -> Group:
        table = Table(
            title=f"pilot-sys monitor  {time.monotonic() - self.started:5.1f} s", expand=False
        )
        for name in ("component", "metric", "utilization", "value"):
            table.add_column(name)
        for component in self.components:
            for comp, what, graphic, value in rows_for(component, latest, self.threshold):
                label = f"{comp} (CUT)" if comp == self.cut else comp
                table.add_row(label, what, graphic, value)
        own = [
            v for k, v in latest.items() if k.startswith("process:") and k.endswith("/cpu_cores")
        ]
        footer = Text(f"workload CPU: {sum(own):.2f} cores" if own else "", style="dim")
        return Group(table, footer)

    def update(self, sampler: Any, data_path: Any = None) -> None:
        self.live.update(self._render(sampler.recent()))

    def __enter__(self) -> LiveView:
        self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.stop()

    def relay(self, stream: IO[bytes] | None) -> threading.Thread | None:
        """Print the command's piped output above the table, line by line."""
        if stream is None:
            return None

        def pump() -> None:
            for line in iter(stream.readline, b""):
                self.console.print(
                    line.decode(errors="replace").rstrip("\n"), markup=False, highlight=False
                )

        thread = threading.Thread(target=pump, name="pilot-sys-relay", daemon=True)
        thread.start()
        return thread
