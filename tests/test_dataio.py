"""read_column: formats, header detection, comments, and every error naming FILE:LINE:COL."""

from __future__ import annotations

import io
import os
import sys
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from pilot_sys.dataio import Column, read_column, read_table_column, reconcile_units
from pilot_sys.errors import BadInput


def write(tmp_path: Path, text: str, name: str = "d.csv") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_csv_with_header_comments_and_blank_lines(tmp_path: Path) -> None:
    src = write(
        tmp_path,
        "# made by hand\niter, latency (ms)\n\n0, 1.5\n1, 2.5  # slow one\n# gap\n2, 3e-1\n",
    )
    col = read_table_column(src, "latency (ms)")
    np.testing.assert_array_equal(col.values, [1.5, 2.5, 0.3])
    assert col.name == "latency (ms)" and col.index == 1 and col.unit == "ms"
    np.testing.assert_array_equal(read_column(src, 0), [0, 1, 2])
    np.testing.assert_array_equal(read_column(src, "1"), [1.5, 2.5, 0.3])  # index given as text
    # case-insensitive
    np.testing.assert_array_equal(read_column(src, "LATENCY (MS)"), [1.5, 2.5, 0.3])


def test_whitespace_text_without_header_and_single_column(tmp_path: Path) -> None:
    np.testing.assert_array_equal(
        read_column(write(tmp_path, "1 10\n2\t20\n  3   30\n"), 1), [10, 20, 30]
    )
    np.testing.assert_array_equal(
        read_column(write(tmp_path, "5\n-6.5\n+7\n", "one.txt")), [5, -6.5, 7]
    )


def test_quoted_csv_cells(tmp_path: Path) -> None:
    src = write(tmp_path, '"name, with comma",value\n"a ""b""",4\n"c",5\n')
    np.testing.assert_array_equal(read_column(src, "value"), [4, 5])
    with pytest.raises(BadInput) as err:
        read_column(src, "name, with comma")
    assert err.value.where == f"{src}:2:1"


@pytest.mark.parametrize(
    ("text", "column", "where", "problem"),
    [
        ("a,b\n1,2\n3,x\n", "b", ":3:3", "'x' in column 'b' is not a number"),
        ("1 2\n3 nan\n", 1, ":2:3", "not a finite number"),
        ("1\n-inf\n", None, ":2:1", "not a finite number"),
        ("a,b\n1,2\n3\n", "b", ":3:1", "column 'b' is missing"),
        ("a,b\n1,2\n", "c", "", "no column named 'c'"),
        ("1,2\n", "c", "", "has no header"),
        ("1,2\n", 5, "", "no column 5"),
        ("1,2,3\n4,5,6\n", None, "", "choose one with --column"),
        ("# only comments\n\n", None, "", "no data"),
        ("", None, "", "no data"),
        ("x,y\n", None, "", "only a header"),
    ],
)
def test_errors_name_the_cell(
    tmp_path: Path, text: str, column: object, where: str, problem: str
) -> None:
    src = write(tmp_path, text)
    with pytest.raises(BadInput) as err:
        read_column(src, column)  # type: ignore[arg-type]
    assert err.value.where == src + where
    assert problem in err.value.problem


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such file"):
        read_column(str(tmp_path / "absent.csv"))
    with pytest.raises(BadInput, match="is a directory"):
        read_column(str(tmp_path))


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bin.dat"
    path.write_bytes(b"1\n\xff\xfe\n")
    with pytest.raises(BadInput, match="not UTF-8"):
        read_column(str(path))


def test_one_column_text_with_a_spaced_header(tmp_path: Path) -> None:
    col = read_table_column(write(tmp_path, "latency (ms)\n1\n2\n", "lat.txt"))
    assert col.name == "latency (ms)" and col.unit == "ms"
    np.testing.assert_array_equal(col.values, [1, 2])


# --- the fast reader (pandas, checked by a byte scan) against the exact reader ------------------

CELLS = [
    "1",
    "-2.5",
    "3e-1",
    "+7",
    "0",
    "1_000",
    "nan",
    "inf",
    "-Infinity",
    "x",
    "",
    '"4"',
    "1,5",
    " 8 ",
    "NA",
]
LINE_KINDS = [
    "row",
    "row",
    "row",
    "row",
    "blank",
    "spaces",
    "comment",
    "indented comment",
    "row # note",
    "extra cell",
    "missing cell",
    "quoted comma",
    "crlf",
]


def _fast_or_error(src: str, column: object, how: str) -> tuple[object, ...]:
    import pandas as pd

    from pilot_sys import dataio

    source = dataio._open_source(src)
    try:
        lay, _ = dataio._layout(source, column, None)  # type: ignore[arg-type]
        fast = (dataio._whole if how == "whole" else dataio._chunked)(pd, source, lay)
        if fast is None and how == "whole":
            return ("not whole",)
    except BadInput as exc:
        return ("error", exc.where, exc.problem)
    if fast is None:
        return ("exact only",)
    values, lines = fast
    return ("ok", values.tolist(), [lines.line(i) for i in range(values.size)])


def _exact_or_error(src: str, column: object) -> tuple[object, ...]:
    from pilot_sys import dataio

    source = dataio._open_source(src)
    try:
        lay, _ = dataio._layout(source, column, None)  # type: ignore[arg-type]
        values, lines = dataio._all_exact(source, lay)
    except BadInput as exc:
        return ("error", exc.where, exc.problem)
    return ("ok", values.tolist(), [lines.line(i) for i in range(values.size)])


def _line(kind: str, cells: list[str], sep: str) -> str:
    body = sep.join(cells)
    return {
        "row": body,
        "blank": "",
        "spaces": "   ",
        "comment": "# a comment, with a comma",
        "indented comment": "  # aside",
        "row # note": body + "  # note",
        "extra cell": body + sep + "9",
        "missing cell": cells[0],
        "quoted comma": '"5, 6"' + sep + body,
        "crlf": body + "\r",
    }[kind]


@pytest.mark.parametrize("sep", [",", " ", "\t"])
def test_fast_reader_agrees_with_the_exact_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sep: str
) -> None:
    """Random files with every irregularity: the same values, lines and errors either way,
    with chunks small enough that lines of every kind fall on chunk boundaries."""
    from pilot_sys import dataio

    monkeypatch.setattr(dataio, "_CHUNK_BYTES", 37)
    rng = np.random.default_rng(7)
    header = sep.join(["time", "lat ms" if sep == "\t" else "lat"])
    disagreements = []
    whole_reads = 0
    for trial in range(150):
        lines = [header] if trial % 2 else []
        for _ in range(int(rng.integers(1, 25))):
            kind = str(rng.choice(LINE_KINDS)) if rng.random() < 0.3 else "row"
            cells = [
                str(rng.integers(0, 100)),
                str(rng.choice(CELLS)) if rng.random() < 0.2 else f"{rng.random():.4f}",
            ]
            lines.append(_line(kind, cells, sep))
        text = "\n".join(lines) + ("\n" if trial % 3 else "")
        src = write(tmp_path, text, f"t{trial}.txt")
        for column in (0, 1):
            exact = _exact_or_error(src, column)
            for how in ("whole", "chunked"):
                fast = _fast_or_error(src, column, how)
                if fast != exact and fast != ("not whole",):
                    disagreements.append((text, column, how, fast, exact))
                whole_reads += how == "whole" and fast[0] == "ok"
    assert disagreements == []
    assert whole_reads > 10  # clean files are read in one call of pandas


def test_numpys_reader_reads_what_the_exact_reader_reads_or_declines(tmp_path: Path) -> None:
    """Files of one column with every irregularity: numpy's reader (a mid-sized file of one
    number a line) gives the exact reader's values and lines, or declines and leaves the file
    to the readers that name the bad cell; clean files it reads."""
    from pilot_sys import dataio

    rng = np.random.default_rng(17)
    disagreements = []
    numpy_reads = below_comments = 0
    for trial in range(200):
        lines = ["latency (ms)"] if trial % 2 else []
        for _ in range(int(rng.integers(1, 25))):
            kind = str(rng.choice(LINE_KINDS)) if rng.random() < 0.2 else "row"
            cell = str(rng.choice(CELLS)) if rng.random() < 0.1 else f"{rng.normal(5, 3):.17g}"
            lines.append(_line(kind, [cell], " "))
        if trial % 5 == 0:  # comments and blanks above the header: lines numpy skips too
            lines[:0] = ["# made by hand", "", "  # aside"]
        text = "\n".join(lines) + ("\n" if trial % 3 else "")
        src = write(tmp_path, text, f"t{trial}.txt")
        exact = _exact_or_error(src, None)
        source = dataio._open_source(src)
        try:
            lay, _ = dataio._layout(source, None, None)
        except BadInput:
            continue
        read = dataio._one_number_a_line(source, lay)
        if read is None:
            continue
        values, where = read
        got = ("ok", values.tolist(), [where.line(i) for i in range(values.size)])
        numpy_reads += 1
        below_comments += trial % 5 == 0
        if got != exact:
            disagreements.append((text, got, exact))
    assert disagreements == []
    assert numpy_reads > 40 and below_comments > 5


def test_a_mid_sized_file_of_plain_numbers_is_read_without_pandas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Importing pandas costs more than numpy's reader takes for a few MB; a larger file goes
    to pandas, whose parser is faster: the same values either way, bit for bit."""
    from pilot_sys import dataio

    rng = np.random.default_rng(5)
    values = rng.lognormal(3, 2, 200_000)
    src = tmp_path / "mid.txt"
    src.write_text("".join(f"{float(v)!r}\n" for v in values))
    assert dataio._EXACT_BYTES < src.stat().st_size < dataio.NUMPY_BYTES
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "pandas", None)  # importing pandas fails
        col = read_table_column(str(src))
    assert np.array_equal(col.values, values) and col.where(5) == f"{src}:6"
    monkeypatch.setattr(dataio, "NUMPY_BYTES", 0)
    assert np.array_equal(read_table_column(str(src)).values, values)
    assert "pandas" in sys.modules


def test_where_names_the_line_of_each_value_past_comments_and_blanks(tmp_path: Path) -> None:
    src = write(tmp_path, "# made by hand\nv\n1\n\n2\n# gap\n   \n3  # last\n")
    col = read_table_column(src)
    np.testing.assert_array_equal(col.values, [1, 2, 3])
    assert [col.where(i) for i in range(3)] == [f"{src}:3", f"{src}:5", f"{src}:8"]
    assert col.where(3) == src  # no such value: the file alone


def test_stdin_bom_and_old_mac_line_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO("\ufefflatency (ms)\n4\n# x\n5\n".encode()))
    )
    col = read_table_column("-")
    assert col.source == "<stdin>" and col.name == "latency (ms)" and col.where(1) == "<stdin>:4"
    np.testing.assert_array_equal(col.values, [4, 5])
    np.testing.assert_array_equal(read_column(write(tmp_path, "1\r2\r\r3\r")), [1, 2, 3])
    np.testing.assert_array_equal(read_column(write(tmp_path, "1\r\n2\r\n")), [1, 2])
    mixed = read_table_column(write(tmp_path, "1\r# x\n2\n"))
    assert mixed.values.tolist() == [1, 2] and mixed.where(1).endswith(":3")


@pytest.mark.parametrize("body", ["{n}\n", "{n}.25\n", "{n}.25e-3\n"])
def test_a_lone_cr_above_the_data_of_a_large_file_loses_no_reading(
    tmp_path: Path, body: str
) -> None:
    """Line 1 holds a lone CR, so the header is line 2 and the data start at line 3. The fast
    readers skipped the lines above the data with readline, which does not end a line at a
    lone CR: the first reading was lost and every line number was one off."""
    rows = 20_000  # above the size the exact reader reads alone
    text = "# note\rvalue\n" + "".join(body.format(n=n) for n in range(1, rows + 1))
    col = read_table_column(write(tmp_path, text))
    expected = [float(body.format(n=n)) for n in range(1, rows + 1)]
    assert col.name == "value"
    assert col.values.tolist() == expected
    assert col.where(0).endswith(":3") and col.where(rows - 1).endswith(f":{rows + 2}")


@pytest.mark.parametrize("cell", ["2" * 5000, "x" * 5000])
def test_a_huge_bad_cell_is_quoted_short(tmp_path: Path, cell: str) -> None:
    """The error stays one readable line: the cell's start and its length, not 5,000 characters."""
    with pytest.raises(BadInput) as caught:
        read_table_column(write(tmp_path, f"a,b\n1,2\n1,{cell}\n3,4\n"), "b")
    assert caught.value.where.endswith(":3:3")
    assert "(5000 characters)" in caught.value.problem and len(caught.value.problem) < 250


def test_a_named_pipe_is_read_once(tmp_path: Path) -> None:
    """bash's <(command) hands over a pipe: it cannot be opened a second time."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    text = "latency (ms)\n1.5\n2.5\n"
    threading.Thread(target=fifo.write_text, args=(text,), daemon=True).start()
    read: list[Column] = []
    reader = threading.Thread(target=lambda: read.append(read_table_column(str(fifo))), daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert read, "the reader blocked: it opened the pipe a second time"
    col = read[0]
    np.testing.assert_array_equal(col.values, [1.5, 2.5])
    assert col.unit == "ms" and col.where(1) == f"{fifo}:3"


def test_binary_data_is_named(tmp_path: Path) -> None:
    path = tmp_path / "core"
    path.write_bytes(b"1\n2\n\x00\x01")
    with pytest.raises(BadInput, match="binary data .a NUL byte at byte 4"):
        read_column(str(path))


# --- decimal commas (issue 15, item 6) ---------------------------------------------------------


@pytest.mark.parametrize("text", ["1,65\n2,3\n0,5\n", "1,65\n", "3,10\n7,25\n5,05\n"])
def test_headerless_decimal_commas_are_refused_not_split(tmp_path: Path, text: str) -> None:
    src = write(tmp_path, text)
    for column in (None, 0, "1"):
        with pytest.raises(BadInput) as err:
            read_column(src, column)
        assert err.value.where == f"{src}:1:1"
        assert "--decimal ," in err.value.problem and "\n" not in str(err.value)


def test_decimal_comma_reads_what_was_meant(tmp_path: Path) -> None:
    np.testing.assert_allclose(
        read_column(write(tmp_path, "1,65\n2,3\n0,5\n"), decimal=","), [1.65, 2.3, 0.5]
    )
    semicolons = write(tmp_path, "a;latency (ms)\n1;1,5\n2;4,25\n", "eu.csv")  # a spreadsheet's CSV
    np.testing.assert_allclose(read_column(semicolons, "latency (ms)", decimal=","), [1.5, 4.25])
    np.testing.assert_array_equal(
        read_column(write(tmp_path, "1,65\n2,3\n"), 0, decimal="."), [1, 2]
    )
    with pytest.raises(BadInput, match="read with decimal commas"):
        read_column(write(tmp_path, "1,5\n2.5\n"), decimal=",")
    with pytest.raises(BadInput, match="--decimal"):
        read_column(write(tmp_path, "1\n"), decimal=";")


def test_integer_columns_and_headed_files_are_not_mistaken_for_decimals(tmp_path: Path) -> None:
    # an index counting up by one next to a value is two columns
    np.testing.assert_array_equal(
        read_column(write(tmp_path, "0,17\n1,20\n2,25\n"), 1), [17, 20, 25]
    )
    # decimal commas under a header without commas: one cell that is not a number, with a hint
    with pytest.raises(
        BadInput, match=r"'1,65' in column 'latency \(ms\)' is not a number \(a decimal comma"
    ):
        read_column(write(tmp_path, "latency (ms)\n1,65\n"))


# --- units in the header (issue 15, item 1) ----------------------------------------------------


def test_reconcile_converts_compatible_units(tmp_path: Path) -> None:
    a = read_table_column(write(tmp_path, "latency (ms)\n1.0\n2.0\n", "a.txt"))
    b = read_table_column(write(tmp_path, "latency (us)\n1500\n2500\n", "b.txt"))
    both = reconcile_units(a, b)
    assert both.unit == "ms"
    np.testing.assert_allclose(both.values_b, [1.5, 2.5])
    np.testing.assert_array_equal(both.values_a, [1.0, 2.0])
    assert "converted from us to ms" in (both.note or "")
    rate = read_table_column(write(tmp_path, "bw (MiB/s)\n100\n", "r.txt"))
    link = read_table_column(write(tmp_path, "bw (Gbit/s)\n1\n2\n", "l.txt"))
    # 1 Gbit/s = 125e6 B/s = 125e6 / 2**20 MiB/s
    np.testing.assert_allclose(
        reconcile_units(rate, link).values_b, [119.20928955078125, 238.4185791015625], rtol=1e-15
    )


def test_reconcile_refuses_different_things(tmp_path: Path) -> None:
    a = read_table_column(write(tmp_path, "latency (ms)\n1\n", "a.txt"))
    b = read_table_column(write(tmp_path, "throughput (MiB/s)\n1\n", "b.txt"))
    with pytest.raises(BadInput) as err:
        reconcile_units(a, b)
    assert err.value.where == b.source and "measure different things" in err.value.problem
    assert "ms (time)" in err.value.problem and "MiB/s (data/time)" in err.value.problem
    odd = read_table_column(write(tmp_path, "rate (widgets/s)\n1\n", "w.txt"))
    with pytest.raises(BadInput, match="cannot tell whether"):
        reconcile_units(a, odd)
    assert reconcile_units(odd, odd).unit == "widgets/s"
    bare = read_table_column(write(tmp_path, "1\n2\n", "bare.txt"))
    one_sided = reconcile_units(a, bare)
    assert one_sided.unit == "ms" and "names no unit" in (one_sided.note or "")
    assert reconcile_units(bare, bare).unit is None


# --- large inputs (issue 15, item 23) ---------------------------------------------------------


def test_a_million_numbers_cost_a_few_times_their_array(tmp_path: Path) -> None:
    """Python-object-per-line readers hold hundreds of bytes a value; the array is 8."""
    values = np.random.default_rng(3).lognormal(size=1_000_000)
    path = tmp_path / "big.txt"
    with path.open("w") as out:
        out.write("# a comment\nlatency (ms)\n")
        np.savetxt(out, values, fmt="%.17g")
    tracemalloc.start()
    try:
        col = read_table_column(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(col.values, values)
    assert col.where(999_999) == f"{path}:1000002"
    assert peak < 4 * values.nbytes, (
        f"peak {peak / 1e6:.1f} MB for an {values.nbytes / 1e6:.0f} MB array"
    )
