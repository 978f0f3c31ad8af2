"""SMBIOS type 17 (Memory Device) records as the kernel exposes them in
``/sys/firmware/dmi/entries/17-*/raw`` (readable by root only), parsed per the DMTF SMBIOS spec."""

from __future__ import annotations

import struct

from pydantic import BaseModel


class MemoryDevice(BaseModel):
    size_bytes: int | None
    data_width_bits: int | None
    speed_mts: int | None  # rated
    configured_speed_mts: int | None  # what the firmware set; what the bus runs at

    @property
    def bandwidth(self) -> float | None:
        """Bytes/second: transfers/s x data width / 8, at the configured speed when known."""
        speed = self.configured_speed_mts or self.speed_mts
        if not speed or not self.data_width_bits or not self.size_bytes:
            return None
        return speed * 1e6 * self.data_width_bits / 8


def _word(raw: bytes, offset: int, length: int) -> int | None:
    if offset + 2 > length or offset + 2 > len(raw):
        return None
    return struct.unpack_from("<H", raw, offset)[0]


def _dword(raw: bytes, offset: int, length: int) -> int | None:
    if offset + 4 > length or offset + 4 > len(raw):
        return None
    return struct.unpack_from("<I", raw, offset)[0]


def parse_type17(raw: bytes) -> MemoryDevice | None:
    """Fields: 0x0A data width, 0x0C size (0x7FFF -> extended size at 0x1C), 0x15 speed,
    0x20 configured speed (0xFFFF -> extended at 0x54 / 0x58)."""
    if len(raw) < 0x17 or raw[0] != 17:
        return None
    length = raw[1]
    width = _word(raw, 0x0A, length)
    size_word = _word(raw, 0x0C, length)
    size: int | None
    if size_word in (None, 0, 0xFFFF):
        size = None if size_word != 0 else 0
    elif size_word == 0x7FFF:
        extended = _dword(raw, 0x1C, length)
        size = (extended & 0x7FFFFFFF) * 1024**2 if extended else None
    else:
        unit = 1024 if size_word & 0x8000 else 1024**2
        size = (size_word & 0x7FFF) * unit
    speed = _word(raw, 0x15, length)
    if speed == 0xFFFF:
        speed = _dword(raw, 0x54, length)
    configured = _word(raw, 0x20, length)
    if configured == 0xFFFF:
        configured = _dword(raw, 0x58, length)
    return MemoryDevice(
        size_bytes=size,
        data_width_bits=None if width in (None, 0, 0xFFFF) else width,
        speed_mts=speed or None,
        configured_speed_mts=configured or None,
    )
