"""Clocks for the controllers: real time, or real time plus an offset tests can move.

Backoffs in Kueue run for minutes (60 s, 120 s, ... by default). End-to-end tests must not sleep
that long, so a controller process can be given an *offset file*: its clock is the wall clock plus
the number of seconds written in that file (read on every call, so another process, e.g. a test,
advances time by rewriting it). Everything the controllers compare with "now" goes through one of
these, never ``datetime.now`` directly.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """The wall clock, timezone-aware UTC."""
    return datetime.now(UTC)


class OffsetClock:
    """Wall clock + the seconds in ``path`` (0 when the file is missing or unreadable)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def offset(self) -> float:
        """The current offset in seconds."""
        try:
            return float(self.path.read_text().strip() or 0)
        except (OSError, ValueError):
            return 0.0

    def __call__(self) -> datetime:
        return system_clock() + timedelta(seconds=self.offset())

    def advance(self, seconds: float) -> None:
        """Move this clock (and every process sharing the file) forward."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(repr(self.offset() + seconds))
        tmp.replace(self.path)


def clock_from(offset_file: Path | None) -> Clock:
    """The clock a controller process uses."""
    return OffsetClock(offset_file) if offset_file is not None else system_clock
