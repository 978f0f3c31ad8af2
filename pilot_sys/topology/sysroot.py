"""One root prefix for /proc, /sys and /dev, so captured fixture trees and the live machine share
one code path. Every read goes through here: a file that cannot be read is recorded (discovery
works without root) instead of raising.

Changing counters are never read through pyudev (it caches attribute values); pyudev is used only
to *enumerate* devices on a live machine with a udev database, and plain ``os.scandir`` of sysfs
everywhere else (containers, machines without /run/udev, fixtures).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


class SysRoot:
    """A view of a machine's /proc, /sys and /dev under ``root`` (``/`` for the live machine).

    Paths passed in and returned are absolute *inside* the machine (``/sys/block/vda``);
    ``unreadable`` collects ``"<path>: <reason>"`` for files that exist but could not be read.
    """

    def __init__(self, root: str | Path = "/", *, probe_memory: bool = False) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.live = os.path.realpath(self.root) == "/"
        self.probe_memory = probe_memory
        self.unreadable: list[str] = []
        self._prefix = "" if self.live else self.root.rstrip("/")

    def path(self, inner: str) -> str:
        """The host path of ``inner`` (a path inside the machine)."""
        return inner if not self._prefix else self._prefix + inner

    def inner(self, host_path: str) -> str:
        """The path inside the machine of a host path under the root."""
        if self._prefix and host_path.startswith(self._prefix):
            return host_path[len(self._prefix) :] or "/"
        return host_path

    def read_raw(self, inner: str) -> tuple[bytes | None, int | None]:
        """File bytes and None, or None and the errno that stopped the read.

        Hot path (about ten reads per device): raw ``os.open``/``os.read`` costs a third of
        ``open()`` in text mode, which builds a buffered reader and a decoder per file. Sysfs
        attributes fit in one read; binary files (DMI records) are read to the end.
        """
        try:
            fd = os.open(self.path(inner), os.O_RDONLY)
            try:
                chunks = [os.read(fd, 65536)]
                while len(chunks[-1]) == 65536:
                    chunks.append(os.read(fd, 65536))
            finally:
                os.close(fd)
        except OSError as exc:
            code = exc.errno or errno.EIO
            if code in (errno.EACCES, errno.EPERM):
                self.unreadable.append(f"{inner}: permission denied")
            return None, code
        return b"".join(chunks), None

    def read_status(self, inner: str) -> tuple[str | None, int | None]:
        """File text (stripped) and None, or None and the errno that stopped the read."""
        data, code = self.read_raw(inner)
        return (None, code) if data is None else (data.decode("utf-8", "replace").strip(), None)

    def read(self, inner: str) -> str | None:
        return self.read_status(inner)[0]

    def read_int(self, inner: str, base: int = 10) -> int | None:
        text = self.read(inner)
        if text is None:
            return None
        try:
            return int(text.split()[0], base) if text else None
        except ValueError:
            return None

    def read_bytes(self, inner: str) -> bytes | None:
        return self.read_raw(inner)[0]

    def exists(self, inner: str) -> bool:
        return os.path.lexists(self.path(inner))

    def isdir(self, inner: str) -> bool:
        return os.path.isdir(self.path(inner))

    def listdir(self, inner: str) -> list[str]:
        """Sorted entry names; empty when the directory is missing or unreadable."""
        try:
            return sorted(os.listdir(self.path(inner)))
        except PermissionError:
            self.unreadable.append(f"{inner}: permission denied")
        except OSError:
            pass
        return []

    def realpath(self, inner: str) -> str:
        """Resolve symlinks; sysfs links are relative, so they stay inside a fixture root."""
        return self.inner(os.path.realpath(self.path(inner)))

    def link_name(self, inner: str) -> str | None:
        """The last component of a symlink's target (``/sys/class/net/eth0/master`` ->
        ``bond0``)."""
        try:
            return os.path.basename(os.readlink(self.path(inner)))
        except OSError:
            return None

    def class_devices(self, subsystem: str) -> list[tuple[str, str]]:
        """``(name, resolved sysfs path)`` of every device of a class (``block``, ``net``,
        ``nvme``).

        pyudev enumerates when a udev database exists on the live machine; otherwise, and for
        fixtures, the class directory is scanned. Both return the same resolved paths.
        """
        if self.live and os.path.isdir("/run/udev/data"):
            try:
                import pyudev

                context = pyudev.Context()
                return sorted(
                    (d.sys_name, d.sys_path) for d in context.list_devices(subsystem=subsystem)
                )
            except Exception:  # noqa: BLE001 - any libudev failure falls back to sysfs
                pass
        base = f"/sys/bus/{subsystem}/devices" if subsystem == "pci" else f"/sys/class/{subsystem}"
        return [(name, self.class_link_target(base, name)) for name in self.listdir(base)]

    def class_link_target(self, base: str, name: str) -> str:
        """Where a class or bus entry points. Hot path: these entries are single relative links
        into /sys/devices from real directories, so readlink + normpath resolves them; the
        general ``os.path.realpath`` lstat()s every component and costs ~10x more per device."""
        try:
            target = os.readlink(self.path(f"{base}/{name}"))
        except OSError:
            return f"{base}/{name}"  # a real directory (old kernels' /sys/class/net entries)
        return os.path.normpath(os.path.join(base, target))
