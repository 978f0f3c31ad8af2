"""`pilot-sys report`: rebuild result.json, report.md, report.html and plots from a result
directory."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pilot_sys.cli.common import library_warnings_as_notes
from pilot_sys.errors import BadInput

EXAMPLES = """
\b
Examples:
  pilot-sys report pilot-results/20261121-064500-fio
  pilot-sys report --json pilot-results/20261121-064500-fio | jq .workloads[0].pis
  pilot-sys report --schema > result.schema.json

\b
Works on any result directory, also one left by a killed or interrupted session: the
report says how it stopped. It reads the journal and never changes it. A directory a
session is still writing is not rewritten (--stdout shows the rounds so far), nor is a
damaged one (round folders the journal does not know): the error says how to repair it.
--stdout writes nothing, e.g. on a read-only file system.
"""


@click.command("report", epilog=EXAMPLES, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("directory", required=False, type=click.Path(path_type=Path))
@click.option("--schema", is_flag=True, help="Print the JSON Schema of result.json and exit.")
@click.option("--json", "as_json", is_flag=True, help="Print the rebuilt result.json to stdout.")
@click.option("--no-plots", is_flag=True, help="Skip the PNG plots.")
@click.option("--no-html", is_flag=True, help="Skip report.html.")
@click.option(
    "--stdout",
    "to_stdout",
    is_flag=True,
    help="Write nothing: print report.md (or, with --json, result.json) to stdout.",
)
@library_warnings_as_notes
def report(
    directory: Path | None,
    schema: bool,
    as_json: bool,
    no_plots: bool,
    no_html: bool,
    to_stdout: bool,
) -> None:
    """Rebuild result.json, report.md, report.html and plots/ in DIRECTORY from its round
    journal. report.html is one self-contained file (plots embedded, nothing fetched)."""
    if schema:
        from pilot_sys.session.result import result_schema

        click.echo(json.dumps(result_schema(), indent=2))
        return
    if directory is None:
        raise BadInput("DIRECTORY", "give a result directory (or --schema)")
    if not directory.is_dir():
        raise BadInput(str(directory), "no such directory")
    from pilot_sys.cli.present.comparison import print_comparison
    from pilot_sys.cli.present.summary import print_summary
    from pilot_sys.report.rebuild import rebuild_noting, render

    if to_stdout:
        result, text = render(directory)
        click.echo(result.model_dump_json(indent=2) if as_json else text)
        return
    result, notes = rebuild_noting(directory, plots=not no_plots, html=not no_html)
    for note in notes:
        click.echo(f"pilot-sys: note: {note}", err=True)
    print_summary(result, as_json=as_json)
    if result.comparison is not None and not as_json:
        print_comparison(result.comparison, result)
