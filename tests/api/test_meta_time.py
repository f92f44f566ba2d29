"""metav1.Time's text form (``format_time``): RFC 3339, UTC, whole seconds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from pykueue.api.meta import format_time, parse_time


def test_format_time_is_rfc3339_utc_whole_seconds_with_a_four_digit_year() -> None:
    assert format_time(datetime(2026, 11, 26, 17, 0, 1, 999_999, tzinfo=UTC)) == "2026-11-26T17:00:01Z"
    assert format_time(datetime(2026, 11, 26, 19, 0, 1, tzinfo=timezone(timedelta(hours=2)))) == "2026-11-26T17:00:01Z"
    assert format_time(datetime(2026, 11, 26, 17, 0, 1)) == "2026-11-26T17:00:01Z"  # naive: UTC
    # strftime's %Y wrote "999-..." here, which parse_time (and Go's RFC 3339) refuses.
    assert format_time(datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC)) == "0999-01-02T03:04:05Z"
    assert parse_time(format_time(datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC))) == datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_format_time_remembers_by_instant_not_by_object() -> None:
    # Equal instants in other zones share an entry (they format alike); naive and aware never do.
    for _ in range(2):
        assert format_time(datetime(2026, 1, 1, 12, tzinfo=UTC)) == "2026-01-01T12:00:00Z"
        assert format_time(datetime(2026, 1, 1, 13, tzinfo=timezone(timedelta(hours=1)))) == "2026-01-01T12:00:00Z"
        assert format_time(datetime(2026, 1, 1, 12)) == "2026-01-01T12:00:00Z"
    for i in range(5000):  # past the bound: the memo is cleared, answers stay right
        assert format_time(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i)).startswith("2026-01-01T")
