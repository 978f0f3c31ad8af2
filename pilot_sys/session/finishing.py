"""After the last round: Ctrl-C (or SIGTERM) no longer stops pilot-sys at once.

The measurement is over; what is left is saving result.json and writing the reports, which a
person waiting for them would not want to lose to an impatient key press. The first signal is
deferred: the result and the reports are finished and the session ends with the measurement's
own exit code (130 is for a measurement that was interrupted). A second signal stops at once:
every file is written by rename, so none is left half made; the journal and session.json
already say how the measurement ended, and `pilot-sys report DIR` finishes the reports.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

#: The signals that stop a session and still save everything: Ctrl-C, ``kill``, and a closed
#: terminal or ssh connection (SIGHUP), which would otherwise end it with no result.json.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Finishing:
    """A context in which the first SIGINT/SIGTERM is only noted (``on_first`` is told) and
    the second raises KeyboardInterrupt. Entered again later, it keeps its count, so one
    object spans every step of the finishing (result.json, then the reports). Outside the
    main thread (where Python cannot handle signals) it does nothing."""

    def __init__(self, on_first: Callable[[], None] | None = None) -> None:
        self.on_first = on_first
        self.signals = 0
        self._saved: dict[int, Any] = {}

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.signals += 1
        if self.signals > 1:
            raise KeyboardInterrupt
        if self.on_first is not None:
            try:  # the handler may run in the middle of a write to the same stream
                self.on_first()
            except Exception:  # noqa: BLE001 - a message lost is better than a report lost
                pass

    def start(self) -> None:
        """Defer signals from now on (until :meth:`stop`)."""
        if not self._saved and threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self._saved[sig] = signal.signal(sig, self._handler)

    def stop(self) -> None:
        """Give the signals back to the handlers they had; safe to call twice."""
        saved, self._saved = self._saved, {}
        for sig, handler in saved.items():
            signal.signal(sig, handler)

    def __enter__(self) -> Finishing:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
