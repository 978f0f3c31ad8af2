"""Remote hosts through the monitoring engines fleets already run (no agent of our own):

* ``http``: one keep-alive HTTP connection per host, bounded by a timeout, with errors that
  name the URL;
* ``node_exporter`` and ``pcp``: one client per engine, each turning its answers into the same
  two things: a host's inventory (``topology.remote_inventory``) and its counters at one
  instant (``counters.RemoteCounters``); ``clients.connect`` picks the client for a host;
* ``utilization``: consecutive counters of a host to rates and utilizations, vectorised, on
  the remote host's own sample times;
* ``source``: a declared host as a sampler source (one thread per host, asking its engine at
  the sampling rate up to 10 Hz) and the links to the hosts as a probe derived from both NICs.

Modules are imported directly so that importing the package stays free.
"""
