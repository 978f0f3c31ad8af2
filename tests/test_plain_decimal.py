"""plain_decimal: every value bit for bit what Python's float() gives, or a fall-back.

The reference is ``float`` itself (what the exact reader calls on every cell), compared as the
64 bits of each value, so -0.0 against 0.0 or one ulp off fails. Through ``read_table_column``
the new reader must give what the readers before it gave (numpy's below ``NUMPY_BYTES``,
pandas' above): values, lines and error messages.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
import pytest

from pilot_sys import dataio, plain_decimal
from pilot_sys.errors import BadInput
from pilot_sys.plain_decimal import decimal_lines


def bits(values: np.ndarray | list[float]) -> list[int]:
    return np.asarray(values, dtype=np.float64).view(np.int64).tolist()


def parse(lines: list[str], ending: str = "\n", skip: int = 0) -> np.ndarray | None:
    return decimal_lines(io.BytesIO("".join(line + ending for line in lines).encode()), skip)


def float_of(lines: list[str]) -> list[int]:
    return bits([float(line) for line in lines])


HAND = [
    "0", "-0", "+0", "-0.0", "-0e5", "+5", ".5", "-.5", "5.", "5.e3", "1e5", "1E-5", "1e+05",
    "007.50", "000000000000001.5", "0.1", "0.3", "-1.5e-07", "99.7279", "1e22", "1e-22",
    "123456789012345e-22", "9.99999999999999e22", "9007199254740992", "-9007199254740992",
    "0.000000000000001", "1234567890123456e-7", "2.225073858507201", "1e0000000", "12345678",
    "123456789", "1234567890123456", "0.1234567890123456", "-00000000000000000",
    "-0.00375351072088781", "0.000000000000000001", "000000000000000000000001e-22",
]  # fmt: skip


def test_hand_written_cells_are_read_as_float_reads_them() -> None:
    values = parse(HAND)
    assert values is not None
    assert bits(values) == float_of(HAND)
    assert np.signbit(values[HAND.index("-0")]) and not np.signbit(values[HAND.index("+0")])


FALL_BACK = [
    "", " ", ".", "-", "+", "e5", ".e5", "-.e5", "1e", "1e+", "1 2", "1\t2", "- 1", "1 e5",
    "--1", "+-1", "1e+-5", "1-", "1.2.3", "1e5.5", "1e5e5", "nan", "-inf", "inf", "Infinity",
    "1_000", "0x10", "1,5", "1;5", "#1", "1 # c", '"1"', "\u00a01", "\x0b1", "\x0c1", "1\x1f",
    "\x00", "\ufeff1", "\u0661", "9007199254740993", "12345678901234567", "123456789012345678",
    "0.0000000000000000000000001", "1e23", "1e-23", "0e23", "1.5e24", "1.5e-22", "1e123456789",
    "4503599627370497.5", "2.2250738585072014", "0.12345678901234567",
]  # fmt: skip


@pytest.mark.parametrize("cell", FALL_BACK)
def test_a_line_outside_the_fast_path_sends_the_whole_file_back(cell: str) -> None:
    """Each refused between two good lines: the caller's readers decide the whole file."""
    assert parse(["1.5", "2"]) is not None
    assert parse(["1.5", cell, "2"]) is None


def test_lone_carriage_returns_and_long_lines_go_back() -> None:
    assert parse(["1", "2"], ending="\r\n") is not None
    assert decimal_lines(io.BytesIO(b"1\r2\n"), 0) is None
    assert decimal_lines(io.BytesIO(b"1\r\r\n2\n"), 0) is None
    assert decimal_lines(io.BytesIO(b"head\rer\n1\n"), 1) is None  # the exact reader sees 3 lines
    assert decimal_lines(io.BytesIO(b"head\r\n1\n"), 1).tolist() == [1.0]
    longest = plain_decimal._BLOCK_BYTES + plain_decimal._LONGEST_LINE
    assert decimal_lines(io.BytesIO(b" " * longest + b"1\n"), 0) is None
    assert decimal_lines(io.BytesIO(b""), 0) is None


def _cell(rng: random.Random) -> str:
    """A number as some program might print it."""
    x = rng.choice(
        [
            rng.uniform(-1e3, 1e3),
            rng.gauss(0, 1) * 10.0 ** rng.randint(-30, 30),
            float(rng.randint(-(10**17), 10**17)),
            2.0**53 + rng.randint(-4, 4),
            rng.uniform(0, 1e-300),  # subnormal range: outside the fast path
        ]
    )
    digits = rng.randint(0, 17)
    form = rng.randrange(12)
    if form == 0:
        cell = f"{x:.6g}"
    elif form == 1:
        cell = f"{x:.17g}"
    elif form == 2:
        cell = f"{x:.{rng.randint(0, 8)}f}"
    elif form == 3:
        cell = f"{x:e}"
    elif form == 4:
        cell = str(rng.randint(-(10 ** rng.randint(1, 17)), 10 ** rng.randint(1, 17)))
    elif form == 5:
        cell = f"{x:.15g}" if rng.random() < 0.5 else f"{x:.16g}"
    elif form == 6:
        cell = f"{rng.randint(0, 10**digits)}e{rng.randint(-26, 26)}"
    elif form == 7:
        whole, fraction = rng.randint(0, 10 ** rng.randint(0, 9)), rng.randint(0, 10**digits)
        mark = rng.choice(["e", "E"]) + rng.choice(["", "+", "-"])
        cell = f"{whole}.{fraction:0{digits}d}{mark}{rng.randint(0, 25):0{rng.randint(1, 3)}d}"
    elif form == 8:
        cell = "0." + "0" * rng.randint(0, 18) + str(rng.randint(1, 10 ** rng.randint(1, 8)))
    elif form == 9:
        cell = "0" * rng.randint(0, 4) + f"{abs(x):.{rng.randint(1, 9)}f}"
    elif form == 10:
        cell = repr(x)
    else:
        cell = f"{x:.{rng.randint(0, 14)}e}"
    if cell[0] not in "+-" and rng.random() < 0.2:
        cell = rng.choice("+-") + cell
    return cell


def test_random_cells_of_many_formats_are_float_or_fall_back() -> None:
    """Small random files mixing every format and blank: each read exactly as float() reads
    its cells, or declined; most of them read."""
    rng = random.Random(22)
    read = declined = 0
    for _ in range(3000):
        cells = [_cell(rng) for _ in range(rng.randint(1, 4))]
        lead, trail = rng.choice(["", "", " ", "\t", " \t "]), rng.choice(["", "", " ", "\t"])
        ending = rng.choice(["\n", "\n", "\r\n"])
        values = parse([lead + cell + trail for cell in cells], ending)
        if values is None:
            declined += 1
            continue
        read += 1
        assert bits(values) == float_of(cells), cells
    assert read > 1000 and declined > 500


@pytest.mark.parametrize(
    "form",
    [
        lambda rng: f"{rng.uniform(-1e3, 1e3):.6g}",
        lambda rng: f"{rng.gauss(100, 1):.3f}",
        lambda rng: f"{rng.lognormvariate(0, 8):e}",
        lambda rng: f"{rng.gauss(0, 1):.15g}",
        lambda rng: str(rng.randint(-(2**53), 2**53)),
        lambda rng: f"{rng.randint(1, 10**15)}e{rng.randint(-22, 22)}",
        lambda rng: f"{rng.uniform(0, 1e-7):.8f}",
    ],
    ids=["%.6g", "%.3f", "%e", "%.15g", "int53", "M e E", "small %.8f"],
)
def test_a_large_file_of_one_format_is_read_bit_for_bit(form) -> None:  # noqa: ANN001
    """100,000 cells inside the fast path, parsed in many blocks with lines cut across them."""
    rng = random.Random(8)
    cells = [form(rng) for _ in range(100_000)]
    values = parse(cells)
    assert values is not None
    assert bits(values) == float_of(cells)


def test_blocks_cut_anywhere_and_a_last_line_without_newline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(3)
    cells = [_cell(rng) for _ in range(20_000)]
    cells = [c for c in cells if parse([c]) is not None]
    text = "\n".join(cells).encode()  # no newline after the last
    for size in (1, 7, 64, 1000):
        monkeypatch.setattr(plain_decimal, "_BLOCK_BYTES", size)
        values = decimal_lines(io.BytesIO(text), 0)
        assert values is not None and bits(values) == float_of(cells)


def test_pandas_reads_the_fast_path_as_float_does() -> None:
    """Above NUMPY_BYTES these files went to pandas: its reader (as ``dataio._whole`` calls it)
    reads the cells this module reads as float() does, so no value read there changes."""
    pd = pytest.importorskip("pandas")
    rng = random.Random(11)
    cells = [c for c in (_cell(rng) for _ in range(40_000)) if parse([c]) is not None]
    cells += HAND
    text = "".join(c + "\n" for c in cells).encode()
    frame = pd.read_csv(
        io.BytesIO(text), sep="\x1f", header=None, dtype=np.float64, na_filter=False, engine="c"
    )
    assert bits(frame.iloc[:, 0].to_numpy()) == float_of(cells) == bits(parse(cells))


def _read(path: Path) -> tuple[str, list[int], list[int | None]] | tuple[str, str, str]:
    try:
        col = dataio.read_table_column(str(path))
    except BadInput as exc:
        return ("error", exc.where, exc.problem)
    return ("ok", bits(col.values), [col.line_map.line(i) for i in range(col.values.size)])


@pytest.mark.parametrize("before", ["numpy", "pandas"])
def test_read_table_column_reads_what_it_read_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str
) -> None:
    """Files above the size the exact reader takes alone, with headers, comments above them,
    CRLF, blanks around numbers and bad lines: the values, lines and errors of the readers
    this module stands in front of (numpy's below NUMPY_BYTES, pandas' above)."""
    rng = random.Random(5)
    tails = ["", "", "nan", "", "1_000", "  ", "0x1f", "12345678901234567", "1 2", "# c", "7,5"]
    fast = 0
    for trial in range(24):
        lines = [_cell(rng) if trial % 3 else f"{rng.gauss(50, 9):.6g}" for _ in range(9000)]
        if trial % 2:
            lines[:0] = ["# a note", "", "latency (ms)"]
        if tail := tails[trial % len(tails)]:
            lines.insert(rng.randrange(len(lines) // 2, len(lines)), tail)
        ending = "\r\n" if trial % 4 == 1 else "\n"
        path = tmp_path / f"t{trial}.txt"
        path.write_text(ending.join(lines) + (ending if trial % 5 else ""), newline="")
        assert path.stat().st_size > dataio._EXACT_BYTES
        new = _read(path)
        with monkeypatch.context() as patch:
            patch.setattr(dataio, "_plain_decimals", lambda src, lay: None)
            if before == "pandas":
                patch.setattr(dataio, "NUMPY_BYTES", 0)
            old = _read(path)
        assert new == old, (trial, new[:2] if new[0] == "error" else "values differ")
        fast += new[0] == "ok" and dataio._plain_decimals(*_source_layout(path)) is not None
    assert fast >= 3


def _source_layout(path: Path) -> tuple[object, object]:
    src = dataio._open_source(str(path))
    return src, dataio._layout(src, None, None)[0]


def test_plain_decimals_are_read_without_numpys_reader_or_pandas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below DECIMAL_BYTES a file of short decimals never reaches the library readers; above
    it (pandas' parser, cheaper per line, repays its import) this parser is not asked."""
    import sys

    rng = random.Random(2)
    cells = [f"{rng.gauss(100, 2):.6g}" for _ in range(20_000)]
    path = tmp_path / "plain.txt"
    path.write_text("value\n" + "\n".join(cells) + "\n")

    def refuse(*args: object) -> None:
        raise AssertionError("not this reader")

    with monkeypatch.context() as patch:
        patch.setattr(dataio, "one_number_a_line", refuse)
        patch.setitem(sys.modules, "pandas", None)  # importing pandas fails
        col = dataio.read_table_column(str(path))
    assert bits(col.values) == float_of(cells) and col.where(0) == f"{path}:2"
    monkeypatch.setattr(dataio, "DECIMAL_BYTES", 0)
    monkeypatch.setattr(dataio, "decimal_lines", refuse)
    assert bits(dataio.read_table_column(str(path)).values) == float_of(cells)


@pytest.mark.parametrize("end", ["\n", "  \n", "\r\n", "\n\n \t\n"])
def test_a_blank_last_line_is_declined_before_any_line_is_parsed(
    monkeypatch: pytest.MonkeyPatch, end: str
) -> None:
    """A newline too many is common: seen in the last bytes, without parsing the lines above."""
    text = "".join(f"{i}.5\n" for i in range(1000)) + end

    def parsed(data: bytes) -> None:
        raise AssertionError("parsed in vain")

    assert decimal_lines(io.BytesIO(text.removesuffix(end).encode()), 0) is not None
    monkeypatch.setattr(plain_decimal, "_block", parsed)
    assert decimal_lines(io.BytesIO(text.encode()), 0) is None
    assert decimal_lines(io.BytesIO(b"head\n" + text.encode()), 1) is None
