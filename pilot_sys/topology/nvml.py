"""Access to NVIDIA's management library (NVML) through NVIDIA's own binding, nvidia-ml-py
(module ``pynvml``), shared by the accelerator plug-ins.

The binding is optional (``pip install pilot-sys[gpu]``) and imported lazily, only when a
plug-in asks for it: a host without it, or without an NVIDIA GPU, pays nothing but the import
attempt. NVML speaks for the live machine only, so a captured tree (``--root`` other than
``/``) gets no NVML, unless a stand-in was installed with ``replaced`` (the tests replay real
recordings that way).

Every NVML call may answer ``NVMLError`` ("Not Supported", "No permission", "GPU is lost"):
``call`` turns each into None, so that a missing value is unknown, never zero.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_STANDIN: list[Any] = []  # a replaced module, innermost last


@contextmanager
def replaced(module: Any) -> Iterator[Any]:
    """Use ``module`` as ``pynvml`` (live and for every root) inside the block: a stand-in."""
    _STANDIN.append(module)
    try:
        yield module
    finally:
        _STANDIN.remove(module)


def replaced_active() -> bool:
    """Whether a stand-in is installed (then it is asked whatever the host has)."""
    return bool(_STANDIN)


def load(root: Path | str = "/") -> tuple[Any | None, str]:
    """``(pynvml, "")`` initialised, or ``(None, why)``. A captured root gets a stand-in only."""
    if _STANDIN:
        module: Any = _STANDIN[-1]
    elif Path(root) != Path("/"):
        return None, "NVML is not asked for a captured tree"
    else:
        try:
            module = importlib.import_module("pynvml")
        except ImportError:
            return None, (
                "nvidia-ml-py is not installed (pip install 'pilot-sys[gpu]'): "
                "NVML's limits and counters unknown"
            )
    try:
        module.nvmlInit()
    except Exception as exc:  # NVMLError (no driver, no GPU) or the library is missing
        return None, f"NVML did not start: {exc}"
    return module, ""


def call(nvml: Any, name: str, *args: Any) -> Any:
    """``nvml.<name>(*args)``, or None when the binding lacks it or NVML answers an error
    ("Not Supported" included)."""
    function: Callable[..., Any] | None = getattr(nvml, name, None)
    if function is None:
        return None
    try:
        return function(*args)
    except Exception as exc:
        if isinstance(exc, getattr(nvml, "NVMLError", ())) or type(exc).__name__.startswith(
            "NVMLError"
        ):
            return None
        raise


def text(value: Any) -> str | None:
    """NVML strings arrive as ``bytes`` from older bindings."""
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def bus_address(bus_id: Any) -> str | None:
    """NVML's ``00000000:00:06.0`` as sysfs writes it, ``0000:00:06.0``."""
    raw = text(bus_id)
    if not raw or ":" not in raw:
        return None
    domain, rest = raw.split(":", 1)
    try:
        return f"{int(domain, 16):04x}:{rest.lower()}"
    except ValueError:
        return None


def devices(nvml: Any) -> list[tuple[str, Any]]:
    """``(sysfs bus address, handle)`` of every GPU NVML sees."""
    found = []
    for index in range(call(nvml, "nvmlDeviceGetCount") or 0):
        handle = call(nvml, "nvmlDeviceGetHandleByIndex", index)
        info = call(nvml, "nvmlDeviceGetPciInfo", handle) if handle is not None else None
        address = bus_address(getattr(info, "busId", None))
        if address is not None:
            found.append((address, handle))
    return found


#: PCIe generation -> transfer rate in GT/s (PCI-SIG base specifications 1.0 to 6.0)
PCIE_GEN_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
