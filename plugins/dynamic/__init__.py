"""Dynamic plug-ins: read raw counters cheaply on every sampler tick."""
