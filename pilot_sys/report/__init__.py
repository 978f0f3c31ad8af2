"""Reports derived from a result directory: report.md (``markdown``), report.html (``html``,
one self-contained file), PNG plots (``plots``), all written by ``writer.write_reports``;
``rebuild.rebuild(dir)`` is `pilot-sys report`. ``headline.verdict_view`` is the one place the
pictures and report.html read the session's verdict from."""
