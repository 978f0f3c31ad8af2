"""Creating files where others can write too, without following their links.

Why: pilot-sys writes into directories it did not make (the built-in workload's ``--dir``, the
current directory, an ``-o`` that already existed, the path of a ``--json`` or ``--plot``). A
name opened with ``O_CREAT`` alone follows a symlink planted under it and truncates the
victim. Every file created there goes through this module: a new file is created exclusively
(``O_EXCL``, which never follows a final symlink) under an unpredictable name, and a named
output is written to such a file beside it and renamed over the name, which replaces a planted
link instead of writing through it. Files opened again later (a journal appended to) are
opened with ``O_NOFOLLOW``.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

NEW_FILE_FLAGS = os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def create_new(
    directory: Path, prefix: str, suffix: str = "", *, flags: int = 0, mode: int = 0o600
) -> tuple[int, Path]:
    """A new file ``<prefix><random><suffix>`` in ``directory``, opened write-only with
    ``flags`` added; never an existing file or link (another name is drawn on a clash)."""
    for _ in range(100):
        path = Path(directory) / f"{prefix}{secrets.token_hex(6)}{suffix}"
        try:
            return os.open(path, os.O_WRONLY | NEW_FILE_FLAGS | flags, mode), path
        except FileExistsError:
            continue
    raise FileExistsError(f"{directory}: no free name for {prefix}*{suffix}")


def probe_directory(directory: str | Path) -> str | None:
    """Why a new file cannot be made in ``directory`` (None when it can), found by making one:
    a directory under /proc passes every access check and still refuses new files. The probe
    is a new, randomly named file (never a planted link), removed at once."""
    try:
        fd, path = create_new(Path(directory), ".pilot-sys-probe-")
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(path)
    return None


def create_exclusive(path: Path, *, flags: int = os.O_WRONLY, mode: int = 0o644) -> int:
    """Open ``path`` as a new file; an existing file or symlink there is an error (EEXIST)."""
    return os.open(path, flags | NEW_FILE_FLAGS, mode)


def open_nofollow(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` that refuses a symlink as the last component (ELOOP)."""
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)


def replace_file(path: str | Path, data: bytes | str, *, sync: bool = True) -> None:
    """Write ``data`` as ``path`` atomically: a new file beside it, then a rename over the name
    (a link planted at ``path`` is replaced, never written through). On any failure the new
    file is removed and ``path`` is untouched."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = create_new(path.parent, f".{path.name}.", ".tmp", mode=0o644)
    try:
        try:
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise


def replace_file_with(
    path: str | Path, write: Callable[[BinaryIO], object], *, sync: bool = True
) -> None:
    """:func:`replace_file` for writers that want a file object (matplotlib, networkx, numpy)."""
    buffer = io.BytesIO()
    write(buffer)
    replace_file(path, buffer.getvalue(), sync=sync)


def save_figure_safely(fig: object, path: str | Path, **kwargs: object) -> None:
    """``fig.savefig`` through :func:`replace_file_with`; the format comes from the suffix."""
    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    replace_file_with(path, lambda fh: fig.savefig(fh, format=fmt, **kwargs))  # type: ignore[attr-defined]
