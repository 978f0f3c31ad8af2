"""Guard for speed work on the statistics: record outputs, then compare them after a change.

Runs ``changepoint.detect`` (default and other parameters), ``IncrementalEDM``, ``ci.summarize``
(three PI types), ``subsession.search`` on batches and ``integrated_autocorrelation_time`` on a
fixed corpus of a few hundred seeded series (lengths 12 to 10^6, and 10^7 with ``--large``):
i.i.d. noise of several shapes, tied and quantised readings, AR(1), level and spread shifts,
warm-ups and cool-downs, bursts, per-round warm-ups, trends, random walks, seasonality.

``--record FILE`` writes every output (floats as exact JSON reprs); ``--compare FILE`` recomputes
them and lists every difference. Integers, booleans, lists and None must match exactly; floats
must match exactly unless ``--rtol`` allows a relative difference (then the largest seen per
field is printed, so a tolerance is always a stated number, never a silent one).

    python3 benchmarks/stats_equivalence.py --record /tmp/eq.json [--large]
    python3 benchmarks/stats_equivalence.py --compare /tmp/eq.json [--large] [--rtol 1e-12]

Exit status 1 when an output differs beyond the tolerance.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import checkout_first  # noqa: F401  (the checkout before an installed copy)
import numpy as np

import pilot_sys  # noqa: E402
from pilot_sys.errors import InsufficientData
from pilot_sys.stats import changepoint, ci, subsession
from pilot_sys.stats.pi import PIType

Generator = Callable[[np.random.Generator, int], np.ndarray]


def _ar1(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    from scipy.signal import lfilter

    return lfilter([1.0], [1.0, -phi], rng.standard_normal(n)) * math.sqrt(1.0 - phi * phi)


def _warm(rng: np.random.Generator, n: int) -> np.ndarray:
    k = np.arange(n)
    return rng.lognormal(0.0, 0.3, n) * (1.0 + 2.0 * np.exp(-k / max(n / 100, 1.0)))


def _rounds(rng: np.random.Generator, n: int) -> np.ndarray:
    length = max(n // 10, 2)
    k = np.arange(n) % length
    return 10.0 + rng.standard_normal(n) + 4.0 * np.exp(-k / max(length / 20, 1.0))


GENERATORS: dict[str, Generator] = {
    "normal": lambda rng, n: rng.standard_normal(n),
    "lognormal": lambda rng, n: rng.lognormal(0.0, 0.5, n),
    "quantised": lambda rng, n: np.round(rng.normal(5.0, 1.0, n), 1),
    "poisson": lambda rng, n: rng.poisson(3.0, n).astype(np.float64),
    "printed": lambda rng, n: np.round(rng.lognormal(0.0, 0.3, n) * 5.0, 6),
    "constant": lambda rng, n: np.full(n, 7.0),
    "cauchy": lambda rng, n: rng.standard_cauchy(n),
    "ar03": lambda rng, n: _ar1(rng, n, 0.3),
    "ar07": lambda rng, n: _ar1(rng, n, 0.7),
    "ar095": lambda rng, n: _ar1(rng, n, 0.95),
    "shift": lambda rng, n: rng.standard_normal(n) + np.where(np.arange(n) >= n // 3, 1.0, 0.0),
    "spread": lambda rng, n: rng.standard_normal(n) * np.where(np.arange(n) >= n // 2, 3.0, 1.0),
    "warmup": _warm,
    "warm_cool": lambda rng, n: _warm(rng, n) + np.where(np.arange(n) >= n - n // 40, 0.8, 0.0),
    "burst": lambda rng, n: (
        rng.standard_normal(n)
        + np.where((np.arange(n) >= n // 2) & (np.arange(n) < n // 2 + n // 20), 2.0, 0.0)
    ),
    "rounds": _rounds,
    "trend": lambda rng, n: rng.standard_normal(n) + np.linspace(0.0, 3.0, n),
    "walk": lambda rng, n: np.cumsum(rng.standard_normal(n)),
    "seasonal": lambda rng, n: rng.standard_normal(n) + np.sin(np.arange(n) * 2 * np.pi / 97),
    "outliers": lambda rng, n: rng.standard_normal(n) + np.where(rng.random(n) < 0.01, 30.0, 0.0),
    "ramp_ar": lambda rng, n: _ar1(rng, n, 0.5) + np.maximum(0.0, 1.0 - np.arange(n) / (n / 20)),
}
POSITIVE = ("lognormal", "printed", "constant", "warmup", "warm_cool", "rounds")

SMALL = (12, 30, 64, 100, 200, 500, 1000, 2000, 5000, 20000)


def _series(name: str, n: int, seed: int) -> np.ndarray:
    return GENERATORS[name](np.random.default_rng([seed, n, zlib.crc32(name.encode())]), n).astype(
        np.float64
    )


def _detect(x: np.ndarray, **options: Any) -> dict[str, Any]:
    try:
        return changepoint.detect(x, **options).model_dump()
    except (ValueError, InsufficientData) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def _summary(x: np.ndarray, pi_type: PIType) -> dict[str, Any]:
    try:
        return ci.summarize(x, pi_type=pi_type).model_dump()
    except (ValueError, InsufficientData) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def _batch(x: np.ndarray) -> dict[str, Any]:
    out = subsession.search(x)
    return {k: getattr(out, k).tolist() for k in out.__dataclass_fields__}


def cases(large: bool) -> Iterator[tuple[str, Callable[[], Any]]]:
    """(name, thunk) for every recorded output, in a fixed order."""
    for name in GENERATORS:
        for n in SMALL:
            for seed in (1, 2):
                x = _series(name, n, seed)
                yield f"detect/{name}/{n}/{seed}", lambda x=x: _detect(x)
                yield f"summary/{name}/{n}/{seed}", lambda x=x: _summary(x, PIType.ARITHMETIC)
                if name in POSITIVE:
                    yield f"harmonic/{name}/{n}/{seed}", lambda x=x: _summary(x, PIType.HARMONIC)
        for n in (100_000,):
            x = _series(name, n, 3)
            yield f"detect/{name}/{n}/3", lambda x=x: _detect(x)
            yield f"summary/{name}/{n}/3", lambda x=x: _summary(x, PIType.ARITHMETIC)
    for name in ("printed", "ar07", "warmup", "rounds", "shift", "constant", "walk", "ramp_ar"):
        x = _series(name, 1_000_000, 4)
        yield f"detect/{name}/1000000/4", lambda x=x: _detect(x)
        yield f"summary/{name}/1000000/4", lambda x=x: _summary(x, PIType.ARITHMETIC)
    if large:
        for name in ("printed", "warmup"):
            x = _series(name, 10_000_000, 5)
            yield f"detect/{name}/10000000/5", lambda x=x: _detect(x)
            yield f"summary/{name}/10000000/5", lambda x=x: _summary(x, PIType.ARITHMETIC)
    variants: dict[str, dict[str, Any]] = {
        "noscale": {"scale": False},
        "nodep": {"dependence": False},
        "noseed": {"seeded": False},
        "noedge": {"edges": False},
        "median": {"statistic": "median"},
        "min16": {"min_size": 16},
        "min15": {"min_size": 15},
        "penalty": {"penalty": 1.5},
        "sig05": {"significance": 0.05},
    }
    for label, options in variants.items():
        for name in ("normal", "quantised", "warmup", "rounds", "burst", "ar07", "spread"):
            for n in (200, 3000, 40_000) if label != "median" else (200, 3000):
                x = _series(name, n, 6)
                yield f"{label}/{name}/{n}", lambda x=x, o=options: _detect(x, **o)
    for name in ("normal", "rounds", "warmup", "quantised", "ar07"):
        x = _series(name, 30_000, 7)

        def incremental(x: np.ndarray = x) -> list[dict[str, Any]]:
            inc = changepoint.IncrementalEDM()
            return [inc.update(part).model_dump() for part in np.array_split(x, 30)]

        yield f"incremental/{name}", incremental
    for n in (50, 400, 3000):
        p = np.random.default_rng(n).random(n)
        coin = (np.random.default_rng(n + 1).random(n) < 0.3 + 0.2 * (p > 0.5)).astype(float)
        yield f"proportion/{n}", lambda x=coin: _summary(x, PIType.PROPORTION)
    for phi in (0.0, 0.5, 0.9):
        for n in (200, 1000, 5000):
            x = np.stack([_ar1(np.random.default_rng([r, n]), n, phi) for r in range(60)])
            yield f"batch/{phi}/{n}", lambda x=x: _batch(x)
    for name in ("normal", "ar07", "walk", "warmup", "constant"):
        for n in (10, 1000, 100_000):
            x = _series(name, n, 8)
            yield (
                f"iat/{name}/{n}",
                lambda x=x: [a.tolist() for a in subsession.integrated_autocorrelation_time(x)],
            )


def _diff(path: str, old: Any, new: Any, rtol: float, worst: dict[str, float]) -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        if old.keys() != new.keys():
            return [f"{path}: keys {sorted(old)} -> {sorted(new)}"]
        return [d for k in old for d in _diff(f"{path}.{k}", old[k], new[k], rtol, worst)]
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{path}: length {len(old)} -> {len(new)}"]
        return [
            d
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for d in _diff(f"{path}[{i}]", a, b, rtol, worst)
        ]
    if isinstance(old, float) and isinstance(new, float) and old != new:
        if math.isnan(old) and math.isnan(new):
            return []
        rel = abs(old - new) / max(abs(old), abs(new))
        field = path.split("/")[0] + ":" + path.rsplit(".", 1)[-1].split("[")[0]
        worst[field] = max(worst.get(field, 0.0), rel)
        return [] if rel <= rtol else [f"{path}: {old!r} -> {new!r} (relative {rel:.2e})"]
    if type(old) is not type(new) or old != new:
        return [f"{path}: {old!r} -> {new!r}"]
    return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", metavar="FILE")
    mode.add_argument("--compare", metavar="FILE")
    parser.add_argument("--large", action="store_true", help="also two series of 10^7")
    parser.add_argument("--rtol", type=float, default=0.0, help="relative tolerance for floats")
    parser.add_argument("--only", default="", help="run only cases whose name starts with this")
    parser.add_argument("--max-n", type=int, default=0, help="skip series longer than this")
    args = parser.parse_args()
    # which package is measured: without PYTHONPATH this is whatever copy is installed
    print(f"pilot_sys from {pilot_sys.__file__.rsplit('/', 1)[0]}")
    outputs: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    for name, thunk in cases(args.large):
        if not name.startswith(args.only):
            continue
        if args.max_n and any(p.isdigit() and int(p) > args.max_n for p in name.split("/")):
            continue
        kind = name.split("/")[0] + ("/" + name.split("/")[2] if name.count("/") >= 2 else "")
        t0 = time.perf_counter()
        outputs[name] = json.loads(json.dumps(thunk()))
        seconds[kind] = seconds.get(kind, 0.0) + time.perf_counter() - t0
    slow = sorted(seconds.items(), key=lambda kv: -kv[1])[:8]
    print("slowest groups: " + ", ".join(f"{k} {s:.2f} s" for k, s in slow))
    if args.record:
        with open(args.record, "w") as out:
            json.dump(outputs, out)
        print(f"recorded {len(outputs)} outputs to {args.record}")
        return 0
    with open(args.compare) as f:
        recorded = json.load(f)
    problems: list[str] = []
    worst: dict[str, float] = {}
    missing = [name for name in outputs if name not in recorded]
    for name, new in outputs.items():
        if name in recorded:
            problems += _diff(name, recorded[name], new, args.rtol, worst)
    for line in problems[:40]:
        print("DIFF", line)
    if worst:
        print(
            "largest relative float differences: "
            + ", ".join(f"{k} {v:.2e}" for k, v in sorted(worst.items(), key=lambda kv: -kv[1]))
        )
    print(
        f"compared {len(outputs) - len(missing)} outputs ({len(missing)} not recorded): "
        f"{len(problems)} differences beyond rtol {args.rtol:g}"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
