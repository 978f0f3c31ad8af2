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
SLOW_FIRST: tuple[str, ...] = ()

# files whose tests each start their own session and share no module fixture
SPREAD: frozenset[str] = frozenset()


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
