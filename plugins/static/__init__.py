"""Static plug-ins: discover components and their theoretical limits once per session."""
