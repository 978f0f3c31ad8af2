"""The statistical session engine: rounds until every CI target is met, nothing ever lost.

Public API (see each module):

- ``config.SessionConfig`` / ``SessionConfig.from_preset("quick"|"normal"|"strict", **overrides)``
- ``session.Session.create(root, config, specs, workloads, command_line)`` /
  ``Session.resume(root, ...)``, then ``.run() -> result.SessionResult`` (result.json written;
  ``pilot_sys.run_session(session)`` runs it and writes report.md and the plots too)
- ``progress``: the events a running session emits (``RoundDone``, ``Note``, ...); it never prints
- ``launch.open_run(RunRequest, progress)``: the session `pilot-sys run` asks for;
  ``compare_launch.open_compare``, ``compare_launch.compare_directories``
- ``journal.Journal``: the result directory (``rounds.jsonl`` fsynced per round, ``rounds/NNNN/``)
- ``result.load_result(path)``: read result.json back, e.g. as a comparison baseline
- ``planner``: work-amount sequence, short rounds, the k heuristic, the alpha bound
- ``interleave.compare_results``: ranking and Welch separation of several results
"""
