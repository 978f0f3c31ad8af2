"""Imported for its effect: this checkout's ``pilot_sys`` before any installed copy.

A script's own folder comes first on ``sys.path``, then PYTHONPATH's entries, then
site-packages. A before/after dump sets PYTHONPATH to the other commit's tree, so the checkout
goes right behind those entries: otherwise an installed copy (of whatever revision was last
installed) answers for both sides and the comparison compares a copy with itself.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

CHECKOUT = str(Path(__file__).resolve().parent.parent)
_LEADING = {os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
_LEADING.add(os.path.abspath(os.path.dirname(__file__)))  # the scripts' folder
_at = 0
while _at < len(sys.path) and (sys.path[_at] == "" or os.path.abspath(sys.path[_at]) in _LEADING):
    _at += 1
sys.path.insert(_at, CHECKOUT)
