"""The statistical session engine: rounds until every CI target is met, nothing ever lost.

Public API (see each module):

- ``config.SessionConfig`` / ``SessionConfig.from_preset("quick"|"normal"|"strict", **overrides)``
- ``session.Session.create(root, config, specs, workloads, command_line)`` / ``Session.resume(root, ...)``,
  then ``.run() -> result.SessionResult`` (result.json, report.md, plots written)
- ``launch.launch_run(RunRequest)``: what `pilot-sys run` does; ``compare_launch.launch_compare``
- ``journal.Journal``: the result directory (``rounds.jsonl`` fsynced per round, ``rounds/NNNN/``)
- ``result.load_result(path)``: read result.json back, e.g. as a comparison baseline
- ``planner``: work-amount sequence, short rounds, the k heuristic, the alpha bound
- ``interleave.compare_results``: ranking and Welch separation of several results
"""
