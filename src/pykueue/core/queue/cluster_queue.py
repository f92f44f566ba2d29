"""The pending workloads of one ClusterQueue (upstream ``pkg/cache/queue/cluster_queue.go``).

A pending workload of the ClusterQueue is in exactly one of: the keyed heap (``active``), the
``inadmissible`` map, or ``inflight`` (popped by the scheduler, not yet requeued or deleted).

Time is passed in explicitly as ``now`` (epoch seconds); nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import msgspec

from pykueue.api.kueue import BEST_EFFORT_FIFO, PRIORITY_BOOST_ANNOTATION, STRICT_FIFO, Workload
from pykueue.api.meta import LabelSelector, find_condition
from pykueue.core.options import SchedulerOptions
from pykueue.core.queue.heap import KeyedHeap
from pykueue.core.workload.info import EVICTED, REQUEUED, WorkloadInfo, timestamp

# Requeue reasons (upstream ``ClusterQueue.requeueIfNotPresent``).
REQUEUE_REASON_FAILED_AFTER_NOMINATION = "FailedAfterNomination"
REQUEUE_REASON_NAMESPACE_MISMATCH = "NamespaceMismatch"
REQUEUE_REASON_GENERIC = ""
REQUEUE_REASON_PREEMPTION_GATED = "PreemptionGated"
REQUEUE_REASON_PENDING_PREEMPTION = "PendingPreemption"
REQUEUE_REASON_PENDING_MIGRATION = "PendingMigration"
REQUEUE_REASON_PREEMPTION_FAILED = "PreemptionFailed"
REQUEUE_REASON_NO_FIT = "NoFit"
REQUEUE_REASON_PREEMPTION_NO_CANDIDATES = "PreemptionNoCandidates"
REQUEUE_REASON_UNACCOUNTABLE = "Unaccountable"
"""pykueue's: requests × count leave int64 (scheduler.request_overflow_error). Parked as
inadmissible even under StrictFIFO, like a namespace mismatch: no quota state can admit it, so
at the head it would hold back every Workload behind it."""

QUOTA_RESERVED_REASON_PENDING_EVALUATION = "PendingEvaluation"
SCHEDULING_HASH_UNKNOWN = "unknown"
ADMISSION_FAIR_SHARING_MODE = "UsageBasedAdmissionFairSharing"

_PREEMPTOR_REASONS = frozenset({REQUEUE_REASON_PENDING_PREEMPTION, REQUEUE_REASON_PENDING_MIGRATION})
_BEST_EFFORT_IMMEDIATE = frozenset(
    {
        REQUEUE_REASON_FAILED_AFTER_NOMINATION,
        REQUEUE_REASON_PENDING_PREEMPTION,
        REQUEUE_REASON_PENDING_MIGRATION,
        REQUEUE_REASON_PREEMPTION_FAILED,
    }
)
_BULK_MOVE_REASONS = frozenset({REQUEUE_REASON_NO_FIT, REQUEUE_REASON_PREEMPTION_NO_CANDIDATES})

AfsUsage = Callable[[WorkloadInfo], float]
"""Admission Fair Sharing hook: the LocalQueue usage of a workload's queue (lower sorts first)."""


def backoff_expired(wl: Workload, now: float) -> bool:
    """``backoffWaitingTimeExpired``: not while ``Requeued=False``; else ``now >= requeueAt`` if set."""
    requeued = find_condition(wl.status.conditions, REQUEUED)
    if requeued is not None and requeued.status == "False":
        return False
    state = wl.status.requeue_state
    if state is None or state.requeue_at is None:
        return True
    return now >= timestamp(state.requeue_at)


def has_closed_preemption_gate(wl: Workload) -> bool:
    """Some gate of ``spec.preemptionGates`` is not recorded as ``Open`` in the status."""
    if not wl.spec.preemption_gates:
        return False
    opened = {g.get("name") for g in wl.status.preemption_gates if g.get("position") == "Open"}
    return any(gate.name not in opened for gate in wl.spec.preemption_gates)


def is_immediate(strategy: str, reason: str) -> bool:
    """The "immediate" decision of ``requeueIfNotPresent``."""
    if strategy == STRICT_FIFO:
        return reason not in (REQUEUE_REASON_NAMESPACE_MISMATCH, REQUEUE_REASON_UNACCOUNTABLE)
    return reason in _BEST_EFFORT_IMMEDIATE


class PendingEntry(msgspec.Struct):
    """A tracked workload and the generation it had when last popped (0: never evaluated).

    A msgspec Struct, built in C: one or two per scheduling decision."""

    info: WorkloadInfo
    last_evaluated_generation: int = 0


@dataclass(frozen=True, slots=True)
class PreemptorRecord:
    """The ClusterQueue's current preemptor (upstream ``preemptorWorkload``)."""

    key: str
    generation: int
    sticky: bool


def _unchanged_for_admission(old: PendingEntry, new: WorkloadInfo, options: SchedulerOptions) -> bool:
    """``PushOrUpdate``: nothing that could make an inadmissible workload admissible changed."""
    o, n = old.info.obj, new.obj
    if old.last_evaluated_generation != 0 and n.metadata.generation != old.last_evaluated_generation:
        return False
    if options.gate("PriorityBoost") and o.metadata.annotations.get(
        PRIORITY_BOOST_ANNOTATION
    ) != n.metadata.annotations.get(PRIORITY_BOOST_ANNOTATION):
        return False
    return (
        o.spec == n.spec
        and old.info.adjusted_specs == new.adjusted_specs  # upstream compares its adjusted copies' specs
        and o.status.reclaimable_pods == n.status.reclaimable_pods
        and find_condition(o.status.conditions, EVICTED) == find_condition(n.status.conditions, EVICTED)
        and find_condition(o.status.conditions, REQUEUED) == find_condition(n.status.conditions, REQUEUED)
        and has_closed_preemption_gate(o) == has_closed_preemption_gate(n)
    )


class PendingClusterQueue:
    """Heap, inadmissible map, inflight set and cycle counters of one ClusterQueue."""

    def __init__(
        self,
        name: str,
        options: SchedulerOptions,
        nonempty: set[str],
        afs_usage: AfsUsage | None = None,
    ) -> None:
        self.name = name
        self.options = options
        self.queueing_strategy = BEST_EFFORT_FIFO
        self.namespace_selector: LabelSelector | None = None
        self.afs_usage: AfsUsage | None = None
        self._afs_hook = afs_usage
        self.active: KeyedHeap[str, PendingEntry] = KeyedHeap(self._order, flat=True)
        self.inadmissible: dict[str, PendingEntry] = {}
        self.inflight: dict[str, PendingEntry] = {}
        self.pop_cycle = 0
        self.queue_inadmissible_cycle = -1
        self.hash_to_bulk_move_reason: dict[str, str] = {}
        self.preemptor: PreemptorRecord | None = None
        self._active_by_hash: dict[str, set[str]] = {}
        self._nonempty = nonempty

    # --- configuration ------------------------------------------------------------------------

    def configure(
        self, strategy: str, namespace_selector: LabelSelector | None, admission_mode: str = ""
    ) -> None:
        """Apply the ClusterQueue spec fields the queue reads; re-sorts if AFS got toggled."""
        self.queueing_strategy = strategy or BEST_EFFORT_FIFO
        self.namespace_selector = namespace_selector
        afs = (
            self._afs_hook
            if admission_mode == ADMISSION_FAIR_SHARING_MODE and self.options.gate("AdmissionFairSharing")
            else None
        )
        if afs is not self.afs_usage:
            self.afs_usage = afs
            self.active.rebuild()

    # --- ordering (upstream ``queueOrderingFunc``) --------------------------------------------

    def _order(self, entry: PendingEntry) -> tuple[object, ...]:
        info = entry.info
        pre = self.preemptor
        sticky = 0 if pre is not None and pre.sticky and pre.key == info.key else 1
        # The trailing key makes the order total (upstream leaves exact ties to the heap).
        base = (sticky, -info.priority, info.order_ts, info.uid, info.key)
        if self.afs_usage is None:
            return base
        return (self.afs_usage(info), *base)

    def rebuild_heap(self) -> None:
        """Re-sort after an ordering input outside the queue changed (AFS usage)."""
        self.active.rebuild()

    def resorted_top(self) -> PendingEntry | None:
        """The head :meth:`pop` returns after :meth:`rebuild_heap`, without re-sorting (``O(n)``)."""
        return min(self.active.items(), key=self._order, default=None)

    # --- heap bookkeeping ---------------------------------------------------------------------

    def _heap_push(self, entry: PendingEntry, replace: bool) -> bool:
        key = entry.info.key
        old = self.active.get(key)
        if old is not None:
            if not replace:
                return False
            self._unindex(key, old)
            self.active.push_or_update(key, entry)
        else:
            self.active.push_if_absent(key, entry)
        self._active_by_hash.setdefault(entry.info.scheduling_hash, set()).add(key)
        self._nonempty.add(self.name)
        return True

    def _heap_remove(self, key: str) -> PendingEntry | None:
        entry = self.active.remove(key)
        if entry is not None:
            self._unindex(key, entry)
            if not self.active:
                self._nonempty.discard(self.name)
        return entry

    def _unindex(self, key: str, entry: PendingEntry) -> None:
        bucket = self._active_by_hash.get(entry.info.scheduling_hash)
        if bucket is not None:
            bucket.discard(key)
            if not bucket:
                del self._active_by_hash[entry.info.scheduling_hash]

    # --- lookups ------------------------------------------------------------------------------

    def tracked(self, key: str) -> PendingEntry | None:
        """The entry for ``key`` wherever it is (inflight, heap or inadmissible)."""
        return self.inflight.get(key) or self.active.get(key) or self.inadmissible.get(key)

    def pending_total(self) -> int:
        return len(self.active) + len(self.inadmissible) + len(self.inflight)

    def iter_pending(self) -> Iterator[PendingEntry]:
        yield from self.active.items()
        yield from self.inadmissible.values()
        yield from self.inflight.values()

    def sorted_pending(self) -> list[WorkloadInfo]:
        """Every pending workload in queue order (``Snapshot``)."""
        entries = sorted(self.iter_pending(), key=self._order)
        return [e.info for e in entries]

    def bulk_move_reason(self, key: str) -> str | None:
        """``GetNoFitReason``: the recorded reason if ``key`` is inadmissible with a blocked hash."""
        entry = self.inadmissible.get(key)
        if entry is None:
            return None
        return self.hash_to_bulk_move_reason.get(entry.info.scheduling_hash)

    def is_preemptor(self, key: str, generation: int) -> bool:
        """``IsPreemptor``: the record matches ``key`` and ``generation``."""
        pre = self.preemptor
        return pre is not None and pre.key == key and pre.generation == generation

    # --- preemptor record (upstream ``preemptorWorkload``) ------------------------------------

    def _set_preemptor(self, record: PreemptorRecord | None) -> None:
        old = self.preemptor
        self.preemptor = record
        for key in {r.key for r in (old, record) if r is not None}:
            self.active.fix(key)

    # --- mutations ----------------------------------------------------------------------------

    def push_or_update(self, info: WorkloadInfo, now: float) -> None:
        """``ClusterQueue.PushOrUpdate``."""
        key = info.key
        if key in self.inflight:
            return
        old = self.inadmissible.get(key)
        if old is not None:
            if _unchanged_for_admission(old, info, self.options):
                self.inadmissible[key] = PendingEntry(info)
                return
            del self.inadmissible[key]
        in_heap = key in self.active
        if not in_heap and not backoff_expired(info.obj, now):
            self.inadmissible[key] = PendingEntry(info)
            return
        if (
            self.queueing_strategy == BEST_EFFORT_FIFO
            and not in_heap
            and info.scheduling_hash != SCHEDULING_HASH_UNKNOWN
            and info.scheduling_hash in self.hash_to_bulk_move_reason
        ):
            self.inadmissible[key] = PendingEntry(info)
            return
        self._heap_push(PendingEntry(info), replace=True)

    def push_if_absent(self, info: WorkloadInfo) -> bool:
        """``PushActiveIfNotPresent`` (adoption from a LocalQueue): skips tracked workloads."""
        key = info.key
        if key in self.inflight or key in self.inadmissible:
            return False
        return self._heap_push(PendingEntry(info), replace=False)

    def pop(self) -> PendingEntry | None:
        """``Pop``: counts a pop cycle, moves the head to inflight stamping its generation."""
        self.pop_cycle += 1
        popped = self.active.pop()
        if popped is None:
            return None
        key, head = popped
        self._unindex(key, head)
        if not self.active:
            self._nonempty.discard(self.name)
        head.last_evaluated_generation = head.info.obj.metadata.generation
        self.inflight[head.info.key] = head
        return head

    def delete(self, key: str) -> None:
        """Forget ``key`` everywhere; clears a matching preemptor record."""
        self.inadmissible.pop(key, None)
        self._heap_remove(key)
        self.inflight.pop(key, None)
        if self.preemptor is not None and self.preemptor.key == key:
            self._set_preemptor(None)

    def forget_inflight(self, key: str) -> None:
        self.inflight.pop(key, None)

    def forget_inflight_of_local_queue(self, lq_key: str) -> list[WorkloadInfo]:
        """Forget the popped heads of LocalQueue ``lq_key``; returns them."""
        keys = [k for k, e in self.inflight.items() if e.info.local_queue == lq_key]
        return [self.inflight.pop(key).info for key in keys]

    def requeue_if_not_present(
        self, info: WorkloadInfo, reason: str, quota_reserved_reason: str, now: float
    ) -> bool:
        """``requeueIfNotPresent``; returns whether the workload was inserted."""
        key = info.key
        popped = self.inflight.pop(key, None)
        # Upstream records ``wInfo.LastEvaluatedGeneration`` (stamped by ``PopActive``, kept by
        # ``Info.Update``), also when the head was popped from another ClusterQueue (its LocalQueue
        # moved meanwhile): ``PushOrUpdate``'s ``specChangedSinceEval`` then compares against it.
        generation = (
            popped.last_evaluated_generation if popped is not None else info.last_evaluated_generation
        )
        if reason in _PREEMPTOR_REASONS:
            sticky = self.queueing_strategy == BEST_EFFORT_FIFO
            self._set_preemptor(PreemptorRecord(key, generation, sticky))
        entry = PendingEntry(info, generation)
        last = info.last_assignment
        if backoff_expired(info.obj, now) and (
            is_immediate(self.queueing_strategy, reason)
            or self.queue_inadmissible_cycle >= self.pop_cycle
            or (last is not None and last.pending_flavors())
        ):
            # ``MoveToActive(key, inadmissibleWl)``: a view parked meanwhile (observed after the head
            # left ``inflight``) goes to the heap, not the requeued info.
            parked = self.inadmissible.pop(key, None)
            return self._heap_push(entry if parked is None else parked, replace=False)
        if key in self.inadmissible or key in self.active:
            return False
        self.inadmissible[key] = entry
        if (
            self.options.gate_equivalence_hashing
            and info.scheduling_hash != SCHEDULING_HASH_UNKNOWN
            and reason in _BULK_MOVE_REASONS
        ):
            self._bulk_move(
                info.scheduling_hash, quota_reserved_reason or QUOTA_RESERVED_REASON_PENDING_EVALUATION
            )
        return True

    def _bulk_move(self, scheduling_hash: str, reason: str) -> int:
        """``handleInadmissibleHash``: record ``hash → reason`` and move every heap workload with that
        hash."""
        if self.queueing_strategy != BEST_EFFORT_FIFO:
            return 0
        self.hash_to_bulk_move_reason[scheduling_hash] = reason
        # The whole bucket leaves the heap: drop it at once instead of unindexing key by key.
        keys = sorted(self._active_by_hash.pop(scheduling_hash, ()))
        for key, entry in self.active.remove_many(keys):
            self.inadmissible[key] = entry
        if not self.active:
            self._nonempty.discard(self.name)
        return len(keys)

    def flush_inadmissible(self, namespace_matches: Callable[[str], bool], now: float) -> int:
        """``queueInadmissibleWorkloads`` (``inadmissible_workloads.go``); returns how many workloads moved to
        the heap."""
        self.queue_inadmissible_cycle = self.pop_cycle
        self.hash_to_bulk_move_reason.clear()
        inadmissible = self.inadmissible
        if not inadmissible:
            return 0
        # _heap_push(entry, replace=False) inlined: a flush moves every parked Workload of the
        # ClusterQueue (thousands, each second, in upstream's baseline), and the next NoFit heads
        # park most of them again (issue 16 in bench/RESULTS.md).
        active = self.active
        by_hash = self._active_by_hash
        staying: list[tuple[str, PendingEntry]] = []
        moved = 0
        for key, entry in inadmissible.items():
            obj = entry.info.obj
            if not namespace_matches(obj.metadata.namespace) or not backoff_expired(obj, now):
                staying.append((key, entry))
            elif active.push_if_absent(key, entry):
                by_hash.setdefault(entry.info.scheduling_hash, set()).add(key)
                moved += 1
        inadmissible.clear()
        inadmissible.update(staying)
        if moved:
            self._nonempty.add(self.name)
        return moved
