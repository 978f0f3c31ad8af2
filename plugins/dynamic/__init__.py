"""Dynamic plug-ins: optional measurements while a workload runs.

One module per measured kind (cpu, memory, memory_pressure, block, net, pci). Each declares
``KIND = "dynamic"`` and ``NAME`` and provides ``open_probe(context)``, returning a ``Probe``
(read on the sampler's tick), a ``Source`` (its own schedule) or None. The contract is
``pilot_sys.monitor.probe`` (and ``docs/probes.md``, with examples); the workload's own process
tree is followed by the core (``pilot_sys.monitor.processes``). Third-party plug-ins register
the same way through the ``pilot_sys.plugins`` entry-point group. No plug-in imports another:
what several need lives in the core (e.g. ``pilot_sys.topology.sysfs_paths``).
"""
