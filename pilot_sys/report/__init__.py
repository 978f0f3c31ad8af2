"""Reports derived from a result directory: report.md (``markdown``), PNG plots (``plots``),
both written by ``writer.write_reports``; ``rebuild.rebuild(dir)`` is `pilot-sys report`."""
