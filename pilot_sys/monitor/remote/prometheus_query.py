"""The Prometheus HTTP API as the fleet uses it: the PromQL it sends (label matchers for a
set of hosts) and the answers it reads back (vectors and matrices, checked as the API defines
them), cut into hosts in one pass.

Everything here is linear in the hosts: a matcher's values are collected in a dict, and an
answer's series are looked up by their label values, never tested against each host in turn
(a fleet's answer holds hosts x series items; testing each against each host costs hosts^2).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Sequence

from pilot_sys.monitor.remote.http import RemoteUnavailable
from pilot_sys.topology.remote_hosts import RemoteHost

# one series of an answer: its labels and its (time, value) points
Series = tuple[dict[str, str], list[tuple[float, float]]]


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


_REGEX_META = re.compile(r"([.+*?()|\[\]{}^$\\])")


def regex_literal(value: str) -> str:
    """``value`` as an RE2 literal, escaping only RE2's metacharacters: a plain alternation of
    such literals is what Prometheus turns into a set lookup of label values (its
    ``findSetMatches`` gives up on any other escape, such as ``re.escape``'s ``\\-``, and then
    runs the regex on every value of the label)."""
    return _REGEX_META.sub(r"\\\1", value)


def selector(hosts: Sequence[RemoteHost]) -> str:
    """The label matchers that select every host's series: a label all hosts give one value
    is an equality, one they differ on a regex alternation (anchored, as PromQL's are).
    Linear in the hosts (each label's values are kept in an insertion-ordered dict)."""
    values: dict[str, dict[str, None]] = {}
    counts: dict[str, int] = {}
    for host in hosts:
        for name, value in host.labels:
            values.setdefault(name, {})[value] = None
            counts[name] = counts.get(name, 0) + 1
    matchers = []
    for name in sorted(values):
        options = list(values[name])
        if len(options) == 1 and counts[name] == len(hosts):
            matchers.append(f"{name}={_quote(options[0])}")
        else:
            matchers.append(f"{name}=~{_quote('|'.join(regex_literal(v) for v in options))}")
    return "{" + ",".join(matchers) + "}"


def label_names(hosts: Sequence[RemoteHost]) -> list[str]:
    """Every label name that tells the hosts apart (what a per-host aggregation keeps)."""
    return sorted({name for host in hosts for name, _ in host.labels})


def range_query(family: str, hosts: Sequence[RemoteHost], window_s: float) -> str:
    """The raw samples of ``family`` for ``hosts`` over the last ``window_s`` seconds."""
    return f"{family}{selector(hosts)}[{max(int(round(window_s * 1000)), 1)}ms]"


def instant_query(family: str, hosts: Sequence[RemoteHost]) -> str:
    return f"{family}{selector(hosts)}"


def parse_answer(body: bytes, url: str) -> list[Series]:
    """The series of one API answer (a vector or a matrix); an error answer raises
    ``RemoteUnavailable`` with the engine's own words."""
    try:
        answer = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise RemoteUnavailable(url, "the answer is not JSON (not a Prometheus API?)") from None
    if not isinstance(answer, dict) or answer.get("status") != "success":
        kind = answer.get("errorType", "?") if isinstance(answer, dict) else "?"
        error = answer.get("error", "") if isinstance(answer, dict) else ""
        raise RemoteUnavailable(url, f"query failed ({kind}: {str(error)[:200]})")
    try:
        return _series(answer["data"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RemoteUnavailable(
            url, f"malformed answer ({type(exc).__name__}: {str(exc)[:100]})"
        ) from None


def _series(data: dict) -> list[Series]:
    """The series of an answer's ``data``; anything not shaped as the API says raises."""
    kind = data["resultType"]
    if kind not in ("matrix", "vector"):
        raise ValueError(f"result type {kind!r}, not a vector or a matrix")
    out: list[Series] = []
    for item in data["result"]:
        labels = {str(k): str(v) for k, v in item["metric"].items()}
        pairs = item["values"] if kind == "matrix" else [item["value"]]
        points = [(float(t), float(v)) for t, v in pairs]
        # one sum instead of a test per point: NaN or inf anywhere makes it so (times are
        # bounded far below where a sum could overflow)
        if not math.isfinite(math.fsum([t for t, _ in points])):
            raise ValueError("a sample time that is not a number")
        out.append((labels, points))
    return out


def belongs(labels: dict[str, str], host: RemoteHost) -> bool:
    return all(labels.get(name) == value for name, value in host.labels)


def scrape_interval_of(points: list[tuple[float, float]]) -> float | None:
    """The median spacing of a series' samples (None with fewer than two)."""
    times = sorted(t for t, _ in points)
    steps = [b - a for a, b in zip(times, times[1:], strict=False) if b > a]
    return float(statistics.median(steps)) if steps else None


def split_by_host(
    families: dict[str, list[Series]], hosts: Sequence[RemoteHost]
) -> dict[str, dict[str, list[Series]]]:
    """Each host's series of the answers (host name -> family -> series), in one pass over the
    series: hosts are looked up by their label values, not tested one by one (a fleet's answer
    holds hosts x series items; testing each against each host would cost hosts^2)."""
    groups: dict[tuple[str, ...], dict[tuple[str, ...], str]] = {}
    for host in hosts:
        names = tuple(name for name, _ in host.labels)
        groups.setdefault(names, {})[tuple(value for _, value in host.labels)] = host.name
    out: dict[str, dict[str, list[Series]]] = {h.name: {} for h in hosts}
    lookups = list(groups.items())
    for family, series in families.items():
        for item in series:
            get = item[0].get
            for names, index in lookups:
                name = index.get(tuple(map(get, names)))
                if name is not None:
                    out[name].setdefault(family, []).append(item)
    return out
