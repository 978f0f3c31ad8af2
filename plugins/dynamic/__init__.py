"""Dynamic plug-ins: read raw counters cheaply on every sampler tick.

One module per measured kind (cpu, memory, block, net, pci, process). Each declares
``KIND = "dynamic"`` and ``NAME`` and provides ``open_probe(context) -> Probe | None``; the
contract (``readers`` on the tick, ``derive`` once after the run, formulas next to the counters
they read) is ``pilot_sys.monitor.probe``. Third-party plug-ins register the same way through
the ``pilot_sys.plugins`` entry-point group.
"""
