"""Phase behaviour of a session's rounds, from their monitor traces (Isci and Martonosi,
"Detecting Recurrent Phase Behavior under Real-System Variability").

Two uses: within a workload, a round whose transition signature does not match its siblings'
ran something else or hit a different system state (another tenant, a cache flushed, a device
throttling); between the workloads of a comparison, a note when they change their resource mix
at different moments, i.e. they are not the same kind of work at different speeds.

Both are advisory: they are reported, never change the status, and never fail a session (an
error becomes the note). They stay cheap: only rounds with enough samples for a signature are
used, and at most :data:`MAX_CHECKED` of them (evenly spaced over the session), since matching
costs grow with the square of the number of rounds.

Series: the workload's own (``process:*`` CPU and I/O, recorded by ``monitoring`` for every
round that runs a command) when every trace compared has them, since other tenants of a shared
host move every host-wide series (benchmarks/phases_quality.py: 89 % hits and 25 % false
alarms on the workload's own series, 42 % and 20 % on host-wide ones); otherwise the host-wide
utilizations for all of them, so that every signature is made of the same kind of series. The
note and ``PhaseCheck.series`` say which (:data:`WORKLOAD` or :data:`HOST`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

import numpy as np

from pilot_sys.session.journal import Journal, RoundRecord
from pilot_sys.session.result import PhaseCheck, PhaseComparison

#: Rounds with traces needed before siblings can outvote one odd round.
MIN_ROUNDS = 3
#: Samples a round's trace needs for a signature: the detector smooths over 5 samples and
#: tolerates 3 of drift, so fewer than this leaves no room for a transition to be seen.
MIN_SAMPLES = 20
#: Most rounds matched against each other within a workload (all pairs: 40 -> 1560 matches).
MAX_CHECKED = 40
#: Most rounds per side when two workloads are compared.
MAX_COMPARED = 20
#: Rounds named in the note (all are in ``inconsistent_rounds``).
NAMED = 8
#: ``PhaseCheck.series``: matched on the workload's own process series ...
WORKLOAD = "workload"
#: ... or on the host-wide utilizations.
HOST = "host"


def has_workload_series(trace: Any) -> bool:
    """Whether a trace holds series of the workload's own processes (``WORKLOAD_SERIES``)."""
    from pilot_sys.monitor.phase_traces import WORKLOAD_SERIES

    return any(
        fnmatch.fnmatchcase(k, g) for k in getattr(trace, "series", ()) for g in WORKLOAD_SERIES
    )


def _host_only(trace: Any) -> Any:
    """The trace without its process series: the detector's default then takes the host-wide
    utilizations (a ``process:*/busy`` would otherwise count as one)."""
    return trace.model_copy(
        update={"series": {k: v for k, v in trace.series.items() if not k.startswith("process:")}}
    )


def choose_series(traces: Sequence[Any]) -> tuple[str | None, str, list[Any]]:
    """One kind of series for every trace: (``WORKLOAD``/``HOST``, words for the note, the
    traces to match). Metric matrices are matched as they are (kind None, no words)."""
    if not traces or not all(hasattr(t, "series") for t in traces):
        return None, "", list(traces)
    having = sum(has_workload_series(t) for t in traces)
    if having == len(traces):
        return WORKLOAD, "the workload's own CPU and I/O series (process:*)", list(traces)
    why = (
        "the traces have no per-process series"
        if having == 0
        else (f"only {having} of {len(traces)} traces have per-process series")
    )
    return HOST, f"host-wide utilizations ({why})", [_host_only(t) for t in traces]


def evenly_spaced(items: Sequence[Any], limit: int) -> list[Any]:
    """At most ``limit`` items spread evenly over the sequence, first and last included."""
    if len(items) <= limit:
        return list(items)
    picks = np.unique(np.round(np.linspace(0, len(items) - 1, limit)).astype(int))
    return [items[i] for i in picks]


def _eligible(records: Sequence[RoundRecord]) -> tuple[list[RoundRecord], int]:
    """Rounds whose saved trace is long enough for a signature, and how many had any trace."""
    traced = [
        r for r in records if r.monitor is not None and r.monitor.file and r.monitor.samples > 0
    ]
    return [r for r in traced if r.monitor is not None and r.monitor.samples >= MIN_SAMPLES], len(
        traced
    )


def _load(journal: Journal, records: Sequence[RoundRecord]) -> list[tuple[int, Any]]:
    return [
        (r.index, t)
        for r in records
        if (t := journal.load_monitor(r)) is not None and len(t.timestamps) >= MIN_SAMPLES
    ]


def _too_few(traced: int, eligible: int) -> str:
    return (
        f"not checked: {eligible} of {traced} monitored round(s) have at least {MIN_SAMPLES} "
        f"samples and {MIN_ROUNDS} are needed (longer rounds, e.g. a larger -w MAX, or a higher "
        "--sample-rate give more)"
    )


def check_traces(traces: Sequence[tuple[int, Any]], total: int | None = None) -> PhaseCheck:
    """Match every round's signature against its siblings' (``consistent_rounds``).

    ``traces``: (round index, MonitorTrace or metric matrix); ``total``: how many rounds were
    eligible before sampling, for the note.
    """
    from pilot_sys.monitor.phase_traces import consistent_rounds
    from pilot_sys.stats.phases import PhaseParams

    indices = [i for i, _ in traces]
    if len(traces) < MIN_ROUNDS:
        return PhaseCheck(checked_rounds=indices, note=_too_few(total or len(traces), len(traces)))
    series, words, chosen = choose_series([t for _, t in traces])
    params = PhaseParams()
    try:
        checks = consistent_rounds(chosen, params)
    except Exception as exc:  # noqa: BLE001 - advisory: a failure is a note, never a failed session
        return PhaseCheck(
            checked_rounds=indices, note=f"phase check failed: {type(exc).__name__}: {exc}"
        )
    odd = [indices[c.round_index] for c in checks if not c.consistent]
    scores = [c.median_score for c in checks]
    sampled = (
        f" (an evenly spaced sample of {total})"
        if total is not None and total > len(traces)
        else ""
    )
    on = f" on {words}" if words else ""
    if odd:
        shown = [
            f"{indices[c.round_index]} (score {c.median_score:.2f})"
            if c.median_score is not None
            else str(indices[c.round_index])
            for c in checks
            if not c.consistent
        ]
        named = ", ".join(shown[:NAMED]) + (
            f" and {len(shown) - NAMED} more" if len(shown) > NAMED else ""
        )
        which = "round" if len(odd) == 1 else "rounds"
        note = (
            f"{which} {named} of {len(traces)} checked{sampled}{on}: phase behaviour unlike the "
            f"other rounds' (median matching score below {params.match_threshold:g}): a different "
            "workload or system state; look at their monitor.json"
        )
    else:
        note = f"{len(traces)} rounds checked{sampled}{on}: the same phase behaviour in every one"
    return PhaseCheck(
        checked_rounds=indices,
        inconsistent_rounds=odd,
        scores=scores,
        threshold=params.match_threshold,
        note=note,
        series=series,
    )


def check_rounds(journal: Journal, records: Sequence[RoundRecord]) -> PhaseCheck | None:
    """The phase check over ``records`` (a workload's analysed rounds); None when none was
    monitored."""
    try:
        eligible, traced = _eligible(records)
        if traced == 0:
            return None
        if len(eligible) < MIN_ROUNDS:
            return PhaseCheck(note=_too_few(traced, len(eligible)))
        chosen = evenly_spaced(eligible, MAX_CHECKED)
        return check_traces(_load(journal, chosen), total=len(eligible))
    except Exception as exc:  # noqa: BLE001 - advisory, see the module docstring
        return PhaseCheck(note=f"phase check failed: {type(exc).__name__}: {exc}")


def compare_traces(
    a: str, traces_a: Sequence[Any], b: str, traces_b: Sequence[Any]
) -> PhaseComparison:
    """``compare_phase_behaviour`` of two workloads' round traces, as a result entry."""
    from pilot_sys.monitor.phase_traces import compare_phase_behaviour

    if not traces_a or not traces_b:
        short = a if not traces_a else b
        return PhaseComparison(
            a=a,
            b=b,
            note=f"phase behaviour not compared: {short} has no monitor trace of "
            f"at least {MIN_SAMPLES} samples (longer rounds give some)",
        )
    _, words, chosen = choose_series([*traces_a, *traces_b])  # one kind of series for both sides
    on = f" (on {words})" if words else ""
    try:
        differs = compare_phase_behaviour(chosen[: len(traces_a)], chosen[len(traces_a) :])
    except Exception as exc:  # noqa: BLE001 - advisory
        return PhaseComparison(
            a=a, b=b, note=f"phase comparison failed: {type(exc).__name__}: {exc}"
        )
    if differs is None:
        return PhaseComparison(
            a=a, b=b, differs=False, note=f"{a} and {b}: the same phase behaviour{on}"
        )
    return PhaseComparison(a=a, b=b, differs=True, note=f"{a} (A) vs {b} (B): {differs}{on}")


def workload_traces(journal: Journal, records: Sequence[RoundRecord]) -> tuple[list[Any], int]:
    """Up to :data:`MAX_COMPARED` long-enough traces of ``records`` (evenly spaced), and how
    many of the records were monitored at all."""
    eligible, traced = _eligible(records)
    return [t for _, t in _load(journal, evenly_spaced(eligible, MAX_COMPARED))], traced


def compare_workloads(
    journal: Journal, pairs: Sequence[tuple[str, str]], analysed: set[int]
) -> list[PhaseComparison]:
    """One entry per pair of workloads of an interleaved session (their analysed rounds);
    nothing for a pair when either side was not monitored."""
    out: list[PhaseComparison] = []
    cache: dict[str, tuple[list[Any], int]] = {}
    for a, b in pairs:
        try:
            for name in (a, b):
                if name not in cache:
                    cache[name] = workload_traces(
                        journal, [r for r in journal.rounds_of(name) if r.index in analysed]
                    )
            if cache[a][1] and cache[b][1]:
                out.append(compare_traces(a, cache[a][0], b, cache[b][0]))
        except Exception as exc:  # noqa: BLE001 - advisory
            out.append(
                PhaseComparison(
                    a=a, b=b, note=f"phase comparison failed: {type(exc).__name__}: {exc}"
                )
            )
    return out


def saved_traces(directory: Any, workload: str) -> tuple[list[Any], int] | None:
    """The round traces of ``workload`` in a saved result directory (its stored, non-failed
    rounds); None when the directory has no journal (a bare result.json) or cannot be read."""
    try:
        journal = Journal.open(directory, repair=False)
    except Exception:  # noqa: BLE001 - a result.json without its journal still compares by numbers
        return None
    records = [r for r in journal.rounds_of(workload) if not r.failed and not r.short]
    return workload_traces(journal, records)


def compare_saved_runs(labelled: Sequence[tuple[str, Any, str]]) -> list[PhaseComparison]:
    """``pilot-sys compare DIR_A DIR_B``: (label, directory, workload name) per side; adjacent
    sides compared; nothing when a side has no monitor traces."""
    loaded = [(label, saved_traces(d, w)) for label, d, w in labelled]
    out: list[PhaseComparison] = []
    for (a, ta), (b, tb) in zip(loaded, loaded[1:], strict=False):
        if ta is not None and tb is not None and ta[1] and tb[1]:
            out.append(compare_traces(a, ta[0], b, tb[0]))
    return out
