"""Monitoring while a workload runs, kept in layers (collection, judging, display apart):

* ``probe`` / ``source``: the dynamic plug-in contract (a probe read on the tick, a source on
  its own schedule; the plug-ins themselves live in ``pilot_sys.plugins.dynamic``);
  ``procread`` / ``rates``: the cheap /proc reader, counters to rates;
* ``processes``: the workload's own process tree, followed by the core, not a plug-in;
  ``cgroup_follow``: the cgroups that tree enters while it runs, and their limiters sampled;
  ``culprits``: the other processes on the host, ranked (named in the verdict's evidence);
* ``sampler``: the fixed-rate sampling thread and its own cost; ``source_runner``: sources on
  their own threads, placed on the sampler's grid; ``trace``: what they record;
  ``trace_io``: reading recorded traces back as metric matrices;
* ``bottleneck``: the verdict on a trace (hidden bottlenecks);
* ``session_monitor``: run a command under the sampler; ``live`` and ``plot``: display;
* ``overhead`` / ``tuner``: monitoring on/off comparison and the sampling-rate tuner.

Modules are imported directly (``from pilot_sys.monitor.sampler import Sampler``) so that
importing the package stays free.
"""
