"""The rounds' fsyncs are grouped between rounds (at most ``SYNC_INTERVAL`` apart) instead of
one wait per round, and every round is on disk when the session stops."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from test_early_stop import Series

from pilot_sys.session.config import SessionConfig
from pilot_sys.session.engine import SYNC_INTERVAL, Engine, make_track
from pilot_sys.session.journal import Journal, SessionManifest, WorkloadSpec
from pilot_sys.session.result import StopReason


def test_fsyncs_are_grouped_and_every_round_is_durable_at_the_stop(tmp_path: Path) -> None:
    config = SessionConfig.from_preset(
        "quick", monitor=False, max_rounds=40, work_min=1.0, work_max=1.0, ci_perc=1e-6
    )
    workload = Series(np.linspace(1.0, 2.0, 40))
    spec = WorkloadSpec(name="w", kind="function", pis=workload.pi_specs())
    journal = Journal.create(tmp_path / "res", SessionManifest(config=config, workloads=[spec]))
    engine = Engine(journal, config, [make_track(spec, workload, config, workload.pi_specs())])
    outcome = engine.run()
    assert outcome.stop_reason is StopReason.MAX_ROUNDS
    # 40 rounds of a few ms each: a handful of sync points, the last one at the stop
    assert 1 <= len(engine.sync_wait_seconds) <= 1 + outcome.elapsed / SYNC_INTERVAL + 1
    assert len(engine.sync_wait_seconds) < 40
    journal.unlock()
    again = Journal.open(tmp_path / "res", repair=False)
    assert [r.index for r in again.records] == list(range(1, 41))
