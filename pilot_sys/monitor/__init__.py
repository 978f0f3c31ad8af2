"""Monitoring while a workload runs, kept in layers (collection, judging, display apart):

* ``probe`` / ``procread`` / ``rates``: the dynamic plug-in contract, the cheap /proc reader,
  counters to rates (the plug-ins themselves live in ``pilot_sys.plugins.dynamic``);
* ``sampler``: the fixed-rate sampling thread and its own cost; ``trace``: what it records;
  ``trace_io``: reading recorded traces back as metric matrices;
* ``bottleneck``: the verdict on a trace (hidden bottlenecks);
* ``session_monitor``: run a command under the sampler; ``live`` and ``plot``: display;
* ``overhead`` / ``tuner``: monitoring on/off comparison and the sampling-rate tuner.

Modules are imported directly (``from pilot_sys.monitor.sampler import Sampler``) so that
importing the package stays free.
"""
