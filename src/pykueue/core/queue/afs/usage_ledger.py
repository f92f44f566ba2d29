"""The per-LocalQueue Admission Fair Sharing ledger (upstream ``pkg/cache/queue/afs/usage_ledger.go``
and ``entry_penalties.go``).

Entries are immutable values: every write replaces the whole entry, so a reader that fetched one
keeps a consistent pair of consumed history and pending penalty (upstream copies the shared maps in
``withPenalty`` / ``WithoutPenalty`` for the same reason). Times are seconds from the injected clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType

from pykueue.core.queue.afs.admission_fair_sharing import ResourceList, merge_keep_sum

_EMPTY: Mapping[str, Fraction] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class UsageLedgerEntry:
    """Upstream ``UsageLedgerEntry``: what a LocalQueue's fair-sharing usage is computed from."""

    resources: Mapping[str, Fraction] = field(default_factory=dict)
    """The decayed consumed history."""
    pending_penalty: Mapping[str, Fraction] = field(default_factory=dict)
    """The sum of :attr:`penalty_records`, the entry penalties not yet settled into :attr:`resources`."""
    penalty_records: Mapping[str, Mapping[str, Fraction]] = field(default_factory=dict)
    """The pending penalty per Workload key."""
    last_update: float = 0.0
    """When :attr:`resources` was last decayed, or when the entry was created."""
    status_accounted: bool = False
    """Whether the LocalQueue's persisted fair-sharing status has been folded in."""

    def has_penalty_record(self, wl_key: str) -> bool:
        """Upstream ``HasPenaltyRecord``."""
        return wl_key in self.penalty_records

    def with_penalty(self, wl_key: str, penalty: Mapping[str, Fraction]) -> UsageLedgerEntry:
        """Upstream ``withPenalty``: set the Workload's record (replacing any) and the aggregate."""
        entry, _ = self.without_penalty(wl_key)
        records = dict(entry.penalty_records)
        records[wl_key] = dict(penalty)
        return dataclasses.replace(
            entry, penalty_records=records, pending_penalty=merge_keep_sum(entry.pending_penalty, penalty)
        )

    def without_penalty(self, wl_key: str) -> tuple[UsageLedgerEntry, Mapping[str, Fraction] | None]:
        """Upstream ``WithoutPenalty``: drop the Workload's record and subtract it from the
        aggregate; returns the removed amount (``None`` if none was recorded)."""
        recorded = self.penalty_records.get(wl_key)
        if recorded is None:
            return self, None
        records = {k: v for k, v in self.penalty_records.items() if k != wl_key}
        aggregate = merge_keep_sum(self.pending_penalty, {k: -v for k, v in recorded.items()})
        # Drop the explicit zeros the subtraction leaves behind.
        aggregate = {k: v for k, v in aggregate.items() if v != 0}
        return dataclasses.replace(self, penalty_records=records, pending_penalty=aggregate), recorded


UpdateFn = Callable[[UsageLedgerEntry, bool], UsageLedgerEntry]


class AfsUsageLedger:
    """Upstream ``AfsUsageLedger``: LocalQueue key ("namespace/name") to :class:`UsageLedgerEntry`."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[str, UsageLedgerEntry] = {}

    def set_for_test(self, lq_key: str, resources: ResourceList, last_update: float) -> None:
        """Upstream ``SetForTest``: seed consumed history, discarding any pending penalty."""
        self._entries[lq_key] = UsageLedgerEntry(resources=resources, last_update=last_update)

    def update(self, lq_key: str, fn: UpdateFn) -> UsageLedgerEntry:
        """Upstream ``Update``: replace the entry with ``fn(current or empty entry, found)``."""
        old = self._entries.get(lq_key)
        new = fn(old if old is not None else UsageLedgerEntry(), old is not None)
        self._entries[lq_key] = new
        return new

    def copy(self) -> dict[str, UsageLedgerEntry]:
        """A point-in-time copy (entries are immutable, so a shallow copy is consistent)."""
        return dict(self._entries)

    def get(self, lq_key: str) -> UsageLedgerEntry | None:
        """Upstream ``Get``."""
        return self._entries.get(lq_key)

    def delete(self, lq_key: str) -> None:
        """Upstream ``Delete``: drop the LocalQueue's history and pending penalty together."""
        self._entries.pop(lq_key, None)

    # --- entry penalties (upstream entry_penalties.go) ---------------------------------------

    def push_penalty(self, lq_key: str, wl_key: str, penalty: Mapping[str, Fraction], now: float) -> None:
        """Upstream ``PushPenalty``: record the Workload's entry penalty, replacing its previous one;
        a newly created entry's ``last_update`` is ``now`` (and ``status_accounted`` stays false)."""

        def fn(entry: UsageLedgerEntry, found: bool) -> UsageLedgerEntry:
            if not found:
                entry = dataclasses.replace(entry, last_update=now)
            return entry.with_penalty(wl_key, penalty)

        self.update(lq_key, fn)

    def sub_penalty(self, lq_key: str, wl_key: str) -> Mapping[str, Fraction] | None:
        """Upstream ``SubPenalty``: drop the Workload's pending penalty; a no-op (creating no entry)
        without a record. Returns the removed amount."""
        entry = self._entries.get(lq_key)
        if entry is None:
            return None
        entry, removed = entry.without_penalty(wl_key)
        self._entries[lq_key] = entry
        return removed

    def peek_penalty(self, lq_key: str) -> Mapping[str, Fraction]:
        """Upstream ``PeekPenalty``: the aggregate pending penalty (read-only)."""
        entry = self._entries.get(lq_key)
        return _EMPTY if entry is None else entry.pending_penalty

    def has_pending_penalty(self, lq_key: str) -> bool:
        """Upstream ``HasPendingPenalty``: any non-zero amount awaiting settlement."""
        entry = self._entries.get(lq_key)
        return entry is not None and any(v != 0 for v in entry.pending_penalty.values())
