"""The words pilot-sys's output uses, each explained once: report.md's "Terms" section and
``pilot-sys run --help`` print this one list, so they cannot say different things."""

from __future__ import annotations

from pilot_sys import units
from pilot_sys.monitor.bottleneck import DEFAULT_MAX_HOT_FRACTION, DEFAULT_THRESHOLD, min_intervals
from pilot_sys.stats.subsession import MIN_EFFECTIVE_SAMPLES

_HOT = units.percent(DEFAULT_MAX_HOT_FRACTION, 0)
_THRESHOLD = units.percent(DEFAULT_THRESHOLD, 0)

#: (term, explanation), in the order a reader meets them.
GLOSSARY: tuple[tuple[str, str], ...] = (
    (
        "PI",
        "performance index: a number the session measures, e.g. write_bw or round_time; each "
        "is given as its mean with a confidence interval (CI)",
    ),
    (
        "±",
        "the CI's half width relative to the mean: 2.17 GiB/s ± 3.2 % means the interval reaches "
        "3.2 % of the mean either side. The target (--ci-perc, a full width) is shown the same "
        "way: --ci-perc 10% is ± 5 %",
    ),
    (
        "readings",
        "one figure per round, as the workload reports it (fio's bandwidth of the round), "
        "or the round's time",
    ),
    (
        "unit readings",
        "the many small measurements within a round (fio's bandwidth every 100 ms, one "
        "per block of the built-in workload); each round's warm-up and cool-down are "
        "removed from them (EDM change points) before they are used",
    ),
    (
        "effective samples",
        "samples counted as if independent, after their autocorrelation; an "
        f"interval needs at least {MIN_EFFECTIVE_SAMPLES}",
    ),
    (
        "over round means",
        "the interval is over one mean per round, because the rounds differ more "
        "than the readings within them explain: then the rounds are the independent "
        "samples. When the round means drift, the interval over them is the session's "
        "average over a drifting level, not a stable one",
    ),
    (
        "wps",
        "work per second: the rate v of the fit t = alpha + w / v over rounds of different work "
        "amounts w; the steady rate without each round's fixed cost",
    ),
    (
        "alpha",
        "the fixed time of a round beyond what its work takes at v (start-up, warm-up, flush); "
        "a round with less work than 9 x alpha x v spends over 10 % of its time in it and is "
        "not analysed, but only when alpha's CI is above 0",
    ),
    (
        "reported only",
        "a PI shown with its interval that the session does not wait for (e.g. wps when "
        "every PI has unit readings)",
    ),
    ("work amount", "what %WORK_AMOUNT% is set to in a round, in the workload's unit (-w MIN,MAX)"),
    (
        "round_time",
        "the PI of a command with no parser, no %WORK_AMOUNT% and no --work-unit: the time "
        "one round takes",
    ),
    (
        "CUT",
        "component under test: the component the benchmark is meant to measure, the end of the "
        "workload's data path unless --cut names it",
    ),
    (
        "hidden bottleneck",
        f"a component other than the CUT above {_THRESHOLD} of its limit for more "
        f"than {_HOT} of the time: the result then measured it, not the CUT",
    ),
    (
        "judged round",
        f"a round with at least {min_intervals()} monitor sampling intervals (1 s at "
        "10 Hz), enough to judge it on its own; shorter rounds are judged together at "
        "the end",
    ),
    (
        "excluded",
        "a judged round whose own monitor verdict named a hidden bottleneck: kept in the "
        "journal and counted, left out of the PI analysis. More than half of the judged "
        "rounds excluded, or a hidden bottleneck over the included rounds taken together, "
        "makes the session invalid",
    ),
    (
        "session time",
        "the wall time of every invocation of the session (--resume included, the "
        "gaps between them not): what -s limits; 'in rounds' is the measured part",
    ),
)


def glossary_lines(bullet: str = "- ", bold: bool = True) -> list[str]:
    """One line per term: ``- **wps**: work per second: ...`` (markdown) or plain."""
    return [f"{bullet}{f'**{t}**' if bold else t}: {text}" for t, text in GLOSSARY]
