"""Built-in plug-ins, installed as ``pilot_sys.plugins`` (never as a top-level ``plugins``)."""
