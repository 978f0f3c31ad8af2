"""pilot-sys: a bottleneck-aware benchmark runner, system monitor and hardware profiler for Linux."""

__version__ = "0.1.0"
