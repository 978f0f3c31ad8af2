"""report.html: the session in one self-contained file a person opens in a browser.

The verdict comes first (a banner in the status colour: result.json's verdict, its headline,
why, excluded rounds, bottleneck check and what to do, as ``report.headline`` reads it), then
the results with their intervals, the data path coloured by utilization, the plots, the
overhead, the rounds (collapsed), the context and the notes. Nothing is fetched: the style is
inline, the plots are embedded as base64 PNG, and a Content-Security-Policy forbids any request,
so the file reads the same offline, attached to a ticket or years later.

The text of each section is report.md's (``pilot_sys.report.markdown``), rendered by
markdown-it-py with raw HTML disabled, so the two reports say the same in the same words and
every user string (a command line may hold ``<``) is escaped. Colours are ``pilot_sys.palette``'s.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from markdown_it import MarkdownIt

from pilot_sys import palette, units
from pilot_sys.monitor.plot import Usage, usage_lines
from pilot_sys.report import markdown
from pilot_sys.report.headline import VerdictView, verdict_view
from pilot_sys.session.result import SessionResult

HTML_FILE = "report.html"
DATA_PATH_PICTURE = "data-path.png"  # drawn by the page itself (the data path section)
# no request of any kind: images only from data: URLs, style only from this file
CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; "
    "form-action 'none'"
)
DATA_PATH = "data_path"
PLOTS = "plots"
ROUNDS = "rounds"
# the page's order, by report.md's section names and the three this page draws itself; a
# section report.md gains later appears after the overhead
ORDER = (
    "header",
    "workloads",
    "comparison",
    DATA_PATH,
    "bottleneck",
    PLOTS,
    "overhead",
    ROUNDS,
    "context",
    "notes",
)
COLLAPSED = {"context"}
ROUNDS_HEADER = ("#", "workload", "work", "duration", "phase", "state", "readings")

STYLE = f"""
:root {{ --ink: #1d1d1d; --muted: #5f5f5f; --line: #d8d8d8; --cut: {palette.CUT};
  --hidden: {palette.HIDDEN}; }}
* {{ box-sizing: border-box; }}
body {{ margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans",
  sans-serif; color: var(--ink); background: #fafafa; }}
.banner {{ color: #fff; padding: 22px 32px 18px; }}
.banner .status {{ font-size: 13px; letter-spacing: .08em; text-transform: uppercase;
  font-weight: 700; opacity: .9; }}
.banner .headline {{ font-size: 21px; font-weight: 700; margin: 2px 0 6px; }}
.banner .reason, .banner .advice {{ font-size: 15px; }}
.banner .advice {{ margin-top: 6px; font-weight: 600; }}
.banner code {{ background: rgba(255,255,255,.18); color: #fff; }}
main {{ max-width: 1040px; margin: 0 auto; padding: 8px 32px 48px; }}
h1 {{ display: none; }}
h2 {{ font-size: 20px; margin: 30px 0 8px; padding-bottom: 4px; border-bottom: 2px solid
  var(--line); }}
h3 {{ font-size: 16px; margin: 20px 0 6px; }}
table {{ border-collapse: collapse; margin: 8px 0 12px; font-size: 14px; background: #fff; }}
th, td {{ border: 1px solid var(--line); padding: 4px 8px; text-align: left;
  vertical-align: top; }}
th {{ background: #f0f0f0; }}
tr:nth-child(even) td {{ background: #fbfbfb; }}
code {{ font: 13px ui-monospace, "DejaVu Sans Mono", monospace; background: #eee;
  padding: 0 3px; border-radius: 3px; word-break: break-word; }}
figure {{ margin: 14px 0 22px; background: #fff; border: 1px solid var(--line);
  padding: 8px; }}
figure img {{ max-width: 100%; height: auto; display: block; margin: 0 auto; }}
figcaption {{ font-size: 13px; color: var(--muted); margin-top: 4px; }}
details {{ margin: 12px 0; }}
summary {{ cursor: pointer; font-size: 18px; font-weight: 600; }}
.path {{ display: flex; flex-wrap: wrap; align-items: center; gap: 6px; margin: 10px 0; }}
.chip {{ border-radius: 6px; padding: 6px 10px; min-width: 110px; text-align: center;
  font-size: 13px; line-height: 1.35; }}
.chip b {{ font-size: 14px; }}
.chip .role {{ font-weight: 700; display: block; }}
.link {{ color: #8a8a8a; font-size: 18px; }}
.legend {{ font-size: 12px; color: var(--muted); display: flex; flex-wrap: wrap; gap: 10px;
  align-items: center; }}
.swatch {{ display: inline-block; width: 14px; height: 11px; border: 1px solid #888;
  vertical-align: -1px; margin-right: 4px; }}
.muted {{ color: var(--muted); }}
"""


def _md() -> MarkdownIt:
    """CommonMark with tables; raw HTML is text (escaped), never markup."""
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def _markdown_html(lines: list[str]) -> str:
    if not lines:
        return ""
    # report.md's header opens with its title and may carry an HTML banner for an invalid
    # result: this page has a banner of its own
    kept = [line for line in lines if not line.startswith(("# ", "<p"))]
    return _md().render("\n".join(kept))


def banner(view: VerdictView) -> str:
    """The verdict first, in the status colour: status, headline, its lines (why, excluded
    rounds, the bottleneck check, which component governs) and what to do: result.json's
    verdict, as the summary prints it."""
    colour = palette.status_colour(view.status)
    advice = (
        f'<div class="advice">What to do: {_md().renderInline(view.advice)}</div>'
        if view.advice
        else ""
    )
    details = "".join(f'<div class="reason">{html.escape(line)}</div>' for line in view.details)
    return (
        f'<header class="banner" id="verdict" style="background:{colour}">'
        f'<div class="status">{html.escape(view.status_word)}</div>'
        f'<div class="headline">{html.escape(view.headline)}</div>'
        f"{details}{advice}</header>"
    )


def data_path(
    view: VerdictView,
    usage: Mapping[str, Usage],
    path: Sequence[str],
    threshold: float,
    limits: Mapping[str, str] | None = None,
    over: str = "the analysed rounds",
) -> str:
    """The data path's components in a row, each filled by its peak utilization over ``over``
    (the analysed rounds) and framed by its role (the colours of every picture)."""
    if not path:
        return ""
    chips = []
    for component in path:
        use = usage.get(component)
        if use is None:
            fill = palette.NOT_MEASURED
        else:
            fill = palette.utilization_colour(use.peak, threshold)
        ink = palette.text_colour(fill)
        if component in view.hidden:
            edge, role = palette.HIDDEN, "hidden bottleneck"
        elif component == view.cut:
            edge, role = palette.CUT, "component under test"
        else:
            edge, role = "", ""
        frame = f"3px solid {edge}" if edge else "1px solid #999"
        limit = (limits or {}).get(component, "")
        lines = f"<br>{html.escape(limit)}" if limit else ""
        if use is None:
            lines += "<br>not measured"
        else:
            lines += "".join(f"<br>{html.escape(line)}" for line in usage_lines(use))
        role_ink = edge if ink == "#000000" else "#ffffff"
        role_html = f'<span class="role" style="color:{role_ink}">{role}</span>' if role else ""
        chips.append(
            f'<div class="chip" style="background:{fill};color:{ink};border:{frame}">'
            f"<b>{html.escape(component)}</b>{lines}{role_html}</div>"
        )
    legend = [
        f'<span><span class="swatch" style="background:{palette.utilization_colour(f, threshold)}">'
        f"</span>{units.percent(f, 0)}</span>"
        for f in (0.0, threshold / 2, threshold, 1.0)
    ]
    legend += [
        f'<span><span class="swatch" style="background:{palette.NO_LIMIT}"></span>no limit known'
        "</span>",
        f'<span><span class="swatch" style="background:{palette.NOT_MEASURED}"></span>'
        "not measured</span>",
    ]
    return (
        '<section id="data-path"><h2>Data path</h2>'
        '<p class="muted">Each component from the CPU outward, filled by its peak utilization '
        f"(share of its stated limit) over {html.escape(over)}; framed blue: the component under "
        "test, red: a hidden bottleneck. Busy: the share of time a request was in flight, "
        "shown for a disk whose limit is unknown (it is not a share of a limit).</p>"
        f'<div class="path">{"<span class=link>—</span>".join(chips)}</div>'
        f'<div class="legend">peak utilization: {"".join(legend)}</div></section>'
    )


def figures(plots: Mapping[str, Path], root: Path) -> str:
    """Every plot, embedded (base64 PNG), with its title as the caption."""
    out = []
    for title, rel in plots.items():
        path = root / rel
        if not path.is_file():
            continue
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        out.append(
            f'<figure><img alt="{html.escape(title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(title)} <span class=muted>({html.escape(rel.as_posix())})"
            "</span></figcaption></figure>"
        )
    return '<section id="plots"><h2>Plots</h2>' + "".join(out) + "</section>" if out else ""


def rounds(table: Sequence[Sequence[str]]) -> str:
    """The rounds table, collapsed: long, and read only when something needs explaining."""
    if not table:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ROUNDS_HEADER)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in table
    )
    return (
        f'<details id="rounds"><summary>Rounds ({len(table)})</summary>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>"
    )


def render(
    result: SessionResult,
    plots: Mapping[str, Path],
    rounds_table: Sequence[Sequence[str]] | None,
    root: Path,
    usage: Mapping[str, Usage] | None = None,
    path: Sequence[str] = (),
    limits: Mapping[str, str] | None = None,
    usage_over: str = "the analysed rounds",
) -> str:
    """report.html of ``result``: ``plots`` are files under ``root`` (title -> relative path);
    ``path`` the data path's components, ``usage`` their peaks (over ``usage_over``), ``limits``
    their limits. The data path's own picture (``data-path.png``) is left out: the page draws it
    as HTML."""
    view = verdict_view(result)
    threshold = float(result.config.get("bottleneck_threshold", palette.DEFAULT_THRESHOLD))
    doc = markdown.ReportInput(result, dict(plots), [list(r) for r in rounds_table or []])
    sections: dict[str, Callable[[], str]] = {
        DATA_PATH: lambda: data_path(view, usage or {}, path, threshold, limits, usage_over),
        PLOTS: lambda: figures(
            {t: p for t, p in plots.items() if p.name != DATA_PATH_PICTURE}, root
        ),
        ROUNDS: lambda: rounds(rounds_table or []),
    }
    # report.md's, drawn here by this page's own sections (the verdict is the banner)
    own = {"plot_list", "rounds", "verdict_section"}
    for section in markdown.SECTIONS:
        name = section.__name__
        if name in own or name in sections:
            continue
        sections[name] = _section(section, doc, collapsed=name in COLLAPSED)
    order = [n for n in ORDER if n in sections]
    extra = [n for n in sections if n not in order]
    at = order.index("overhead") + 1 if "overhead" in order else len(order)
    order[at:at] = extra
    body = "".join(sections[name]() for name in order)
    names = ", ".join(w.name for w in result.workloads) or "session"
    title = f"pilot-sys: {view.status_word}: {names}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        f"{banner(view)}<main>{body}</main></body></html>\n"
    )


def _section(
    section: Callable[[markdown.ReportInput], list[str]], doc: markdown.ReportInput, collapsed: bool
) -> Callable[[], str]:
    def draw() -> str:
        text = _markdown_html(section(doc))
        if not text or not collapsed:
            return text
        heading, _, rest = text.partition("</h2>")
        summary = heading.replace("<h2>", "", 1) if rest else section.__name__
        return f"<details><summary>{summary}</summary>{rest or text}</details>"

    return draw
