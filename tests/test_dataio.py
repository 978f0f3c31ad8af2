"""read_column: formats, header detection, comments, and every error naming FILE:LINE:COL."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pilot_sys.dataio import read_column, read_table_column
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
        ("1,2\n3,4\n", None, "", "choose one with --column"),
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
