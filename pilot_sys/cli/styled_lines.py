"""Lines with a few styled spans: rich renders them on a terminal, elsewhere they are plain text.

Importing rich's console costs about a tenth of a short ``pilot-sys analyze``. Where rich itself
would write no escape codes (its own test: the output is no terminal and neither
``TTY_COMPATIBLE=1`` nor a non-empty ``FORCE_COLOR`` says otherwise), the lines are written
without it, byte for byte what rich writes: text with a character rich would rewrite (a control
character or tab, which it drops or expands) still goes through rich.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import TextIO

#: Plain text, or (text, rich style).
Span = str | tuple[str, str]
Line = Sequence[Span]

#: What rich's ``Text`` rewrites on output (control characters dropped, tabs expanded, lines split).
_REWRITTEN_BY_RICH = re.compile(r"[\x00-\x1f\x7f]")


def rich_would_style(stream: TextIO) -> bool:
    """Whether rich's ``Console`` writing to ``stream`` would emit escape codes: its
    ``is_terminal`` test (IDLE, which rich treats as no terminal, may count as one here and so
    still goes through rich; in Jupyter, where rich would display HTML, the text is written)."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed stream, as rich decides
        return False


def text_of(line: Line) -> str:
    """The line's characters without its styles."""
    return "".join(span if isinstance(span, str) else span[0] for span in line)


def print_lines(lines: Sequence[Line]) -> None:
    """Write ``lines`` to standard output, styled where rich would style them."""
    texts = [text_of(line) for line in lines]
    if not rich_would_style(sys.stdout) and not any(_REWRITTEN_BY_RICH.search(t) for t in texts):
        sys.stdout.write("".join(f"{t}\n" for t in texts))
        sys.stdout.flush()  # as rich does after each print
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False, soft_wrap=True)
    for line in lines:
        console.print(Text.assemble(*line))
