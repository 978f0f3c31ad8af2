"""How the suite's tests are shared between pytest-xdist workers.

A test file is one unit of work, as with ``--dist loadfile``: its module fixtures (a namespace
host with its daemons, a Prometheus server, a built wheel) start once, on one worker. Two
changes to that:

- the files that take longest start first (``SLOW_FIRST``, measured in a full run, slowest
  first), so that the run does not end with one worker still busy on a long file that happened
  to be queued last while the other idles;
- a file whose tests are independent end-to-end sessions with no module fixture
  (``SPREAD``) is split test by test, so that both workers share it.

A file missing from both lists is scheduled as ``loadfile`` does; a stale list costs wall time,
never a test.
"""

from __future__ import annotations

from typing import Any

# the longest files of a full run (setup, call and teardown of every test), slowest first
SLOW_FIRST: tuple[str, ...] = (
    "tests/test_prometheus_live.py",
    "tests/test_kernel_limits_cases_live.py",
    "tests/test_cli_options.py",
    "tests/test_tool_units_live.py",
    "tests/test_remote_session_live.py",
    "tests/test_prometheus_fleet_live.py",
    "tests/test_dcgm_live.py",
    "tests/test_hostile_processes.py",
    "tests/test_result_dir.py",
    "tests/test_data_path_same.py",
    "tests/test_early_stop.py",
    "tests/test_session_phase_process.py",
    "tests/test_session_compare.py",
    "tests/test_integration_overhead_budget.py",
    "tests/test_session_ending.py",
    "tests/test_readme.py",
    "tests/test_process_wait.py",
    "tests/test_resume_targets.py",
    "tests/test_cli_run.py",
    "tests/test_phases_result_dir.py",
    "tests/test_cli_tune.py",
    "tests/test_remote_hostile_answers.py",
    "tests/test_packaging.py",
    "tests/test_culprits_live.py",
    "tests/test_stats_rounds.py",
    "tests/test_cli_phases.py",
    "tests/test_report_html.py",
)

# files whose tests each start their own session and share no module fixture
SPREAD: frozenset[str] = frozenset(
    {"tests/test_kernel_limits_cases_live.py", "tests/test_cli_options.py"}
)


def make_scheduler(config: Any, log: Any) -> Any | None:
    """A ``loadfile`` scheduler with the order and the splits above (xdist imported here: the
    hook that calls this runs only where pytest-xdist is installed); None for another --dist."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SlowFirstFileScheduling(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in SPREAD else path

        def _assign_work_unit(self, node: Any) -> None:
            if not self.ordered:  # the queue, built in the collection's order: slow files first
                self.ordered = True
                rank = {path: i for i, path in enumerate(SLOW_FIRST)}
                units = sorted(
                    self.workqueue.items(),
                    key=lambda unit: rank.get(unit[0].split("::", 1)[0], len(rank)),
                )
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    config.option.loadscopereorder = False  # the collection's order, but for the slow files
    return SlowFirstFileScheduling(config, log)
