"""Untrusted text in report.md: shown as text, never rendered as HTML.

Why: a Markdown viewer renders raw HTML, and report.md quotes what the user and the workload
wrote (workload names, commands, their output, failure messages, host names). Escaping each
place that quotes them would miss the next one, so it is done for the document as a whole, in
two steps. First every string of the render's input loses what could change the Markdown
structure around it: backticks (which would open or close a code span and let the rest escape
from it) and line breaks (which would start a new block). Then, with code spans paired only by
the template's own backticks, every ``<`` outside code spans and fenced blocks that could start
a tag, a comment or an autolink becomes ``&lt;``; inside code, viewers show HTML as text.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

BACKTICK_STAND_IN = "\u02cb"  # MODIFIER LETTER GRAVE ACCENT: looks like `, opens no code span
_BREAKS = re.compile(r"\r\n|[\r\n\u2028\u2029\x85\x0b\x0c]")
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
_TICKS = re.compile(r"`+")


def neutral(text: str) -> str:
    """One line without backticks: untrusted text that cannot change the structure it sits in."""
    return _BREAKS.sub(" ", text).replace("`", BACKTICK_STAND_IN)


def neutral_model(value: Any) -> Any:
    """A copy of ``value`` (a pydantic model, or dicts, lists of them) with every string
    passed through :func:`neutral`."""
    if type(value) is str:  # an enum's value (a str subclass) is the template's, kept as is
        return neutral(value)
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        return value.model_copy(update={k: neutral_model(getattr(value, k)) for k in fields})
    if isinstance(value, dict):
        return {neutral_model(k): neutral_model(v) for k, v in value.items()}
    if isinstance(value, list):
        return [neutral_model(v) for v in value]
    if isinstance(value, tuple):
        return tuple(neutral_model(v) for v in value)
    return value


def _escape_line(line: str) -> str:
    """``<`` that could open HTML becomes ``&lt;`` outside the line's code spans (a run of n
    backticks opens one, the next run of exactly n closes it, as in CommonMark)."""
    out: list[str] = []
    pos = 0
    while pos < len(line):
        opening = _TICKS.search(line, pos)
        if opening is None:
            break
        closing = opening
        while True:
            closing = _TICKS.search(line, closing.end())
            if closing is None or len(closing.group()) == len(opening.group()):
                break
        out.append(_TAG_START.sub("&lt;", line[pos : opening.start()]))
        if closing is None:  # an unpaired run is literal text
            out.append(opening.group())
            pos = opening.end()
        else:
            out.append(line[opening.start() : closing.end()])
            pos = closing.end()
    out.append(_TAG_START.sub("&lt;", line[pos:]))
    return "".join(out)


def escape_text(text: str) -> str:
    """Untrusted text for a place that is not a code span: no HTML can start in it."""
    return _TAG_START.sub("&lt;", neutral(text))


def escape_html(markdown: str, trusted: str | None = None) -> str:
    """The document with no raw HTML outside code (see the module's docstring); a line
    starting with ``trusted`` is the template's own HTML (its untrusted part escaped with
    :func:`escape_text`) and is kept."""
    lines = markdown.split("\n")
    fenced = False
    for i, line in enumerate(lines):
        if trusted is not None and line.startswith(trusted):
            continue
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            lines[i] = _escape_line(line)
    return "\n".join(lines)
