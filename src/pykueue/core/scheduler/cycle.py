"""One scheduling cycle (upstream ``pkg/scheduler/scheduler.go`` ``Scheduler.schedule``).

The scheduler pops one head per active ClusterQueue, nominates each (flavor assignment and
preemption targets), orders the entries, processes them against the live snapshot, admits what
fits and requeues the rest with upstream's condition reasons, messages and events. It is pure:
time comes in as ``now`` and every write leaves as a ``Decision`` through the injected ``CyclePort``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Protocol

from pykueue.api.kueue import Workload
from pykueue.api.limitrange import Summary
from pykueue.api.meta import find_condition, to_time
from pykueue.core.cache.cache import Cache, ClusterQueueState
from pykueue.core.cache.snapshot import Snapshot
from pykueue.core.decision import Decision, cycle_stimulus
from pykueue.core.events import NORMAL, WARNING, Event
from pykueue.core.options import SchedulerOptions
from pykueue.core.queue import (
    REQUEUE_REASON_FAILED_AFTER_NOMINATION,
    REQUEUE_REASON_GENERIC,
    REQUEUE_REASON_NAMESPACE_MISMATCH,
    REQUEUE_REASON_NO_FIT,
    REQUEUE_REASON_PENDING_PREEMPTION,
    REQUEUE_REASON_PREEMPTION_FAILED,
    REQUEUE_REASON_PREEMPTION_GATED,
    REQUEUE_REASON_PREEMPTION_NO_CANDIDATES,
    REQUEUE_REASON_UNACCOUNTABLE,
    QueueManager,
    has_closed_preemption_gate,
)
from pykueue.core.queue.afs.usage_ledger import UsageLedgerEntry
from pykueue.core.quota.tree import FlavorResource, available
from pykueue.core.scheduler.entry import (
    ASSUMED,
    NOMINATED,
    NOT_NOMINATED,
    PREEMPTION_GATED,
    SKIPPED,
    CycleResult,
    Entry,
)
from pykueue.core.scheduler.fair_order import fair_sharing_order
from pykueue.core.scheduler.flavorassigner.assigner import (
    NominationPin,
    Oracle,
    assign_flavors,
    last_assignment_outdated,
)
from pykueue.core.scheduler.flavorassigner.assignment import Assignment, Mode
from pykueue.core.scheduler.flavorassigner.podset_reducer import search_partial
from pykueue.core.scheduler.preemption.common import Target
from pykueue.core.scheduler.preemption.preemptor import Preemptor, apply_eviction_for_preemption
from pykueue.core.workload import transitions
from pykueue.core.workload.admissibility import Problem, admissibility_problem
from pykueue.core.workload.info import (
    BLOCKED_ON_PREEMPTION_GATES,
    REQUEUED,
    WorkloadInfo,
    has_failed_checks,
    has_quota_reservation,
)

DEFERRED_FIT_MESSAGE = (
    "Workload has overlapping preemption targets with another workload, but will fit after these "
    "preemptions complete"
)

# Modes of an entry without preemption targets that ``_process_entry`` decides without reading the
# quota tree (NoFit, PreemptionNoCandidates).
_NO_READ_MODES = (Mode.NO_FIT, Mode.PREEMPT)

# One preemptor's evictions on their way: the entry, the cycle's time, the targets counted without
# a write (already evicted or expected) and those that failed before one, each write's (target,
# victim, decision), and the call that collects the answers.
_IssuedPreemption = tuple[
    Entry, datetime, int, int, list[tuple[Target, Workload, Decision]], Callable[[], list[bool | None]]
]

# The requeue reason of each admissibility problem (upstream ``queue.RequeueReason*``).
_REQUEUE_REASON_OF = {
    Problem.NAMESPACE_MISSING: REQUEUE_REASON_GENERIC,
    Problem.NAMESPACE_MISMATCH: REQUEUE_REASON_NAMESPACE_MISMATCH,
    Problem.INVALID_REQUESTS: REQUEUE_REASON_GENERIC,
    Problem.LIMIT_RANGE: REQUEUE_REASON_GENERIC,
    Problem.UNACCOUNTABLE: REQUEUE_REASON_UNACCOUNTABLE,
}


class CyclePort(Protocol):
    """What the cycle reads outside the core, and where its decisions go.

    ``decide`` hands one decision to the driver, which applies it at once and in order (the
    controllers write through to the API, the simulator to its object map) and says whether its
    write landed: the rest of the cycle depends on it (a failed admission write is not assumed and
    is requeued, as upstream's ``applyAdmission`` failure path forgets the assumed workload).
    """

    def get_workload(self, key: str) -> Workload | None: ...

    def namespace_labels(self, namespace: str) -> dict[str, str] | None: ...

    limit_range_summaries: dict[str, Summary]
    """The summary of each namespace's LimitRanges, for the namespaces that have any (read only)."""

    def decide(self, decision: Decision) -> bool: ...

    @property
    def sends_ahead(self) -> bool:
        """Whether :meth:`send_all` returns before the driver's answers (see there)."""
        ...

    def send_all(self, decisions: list[Decision]) -> Callable[[], list[bool | None]]:
        """``decide`` for independent decisions about different workloads, possibly written
        together (upstream ``IssuePreemptions``); the returned call gives whether each landed, or
        None for one never sent (an earlier one failed). A driver that sends ahead
        (``sends_ahead``) has sent them and waits for them in that call."""
        ...





def _fits_now(cq: ClusterQueueState, usage: dict[FlavorResource, int]) -> bool:
    """Every amount of ``usage`` is available to ``cq`` now (a loop: no generator per admission)."""
    node = cq.node
    for fr, v in usage.items():  # noqa: SIM110 (a loop: no generator per admission)
        if available(node, fr) < v:
            return False
    return True


class Scheduler:
    """Runs scheduling cycles over a cache and queue manager."""

    def __init__(
        self,
        cache: Cache,
        queues: QueueManager,
        store: CyclePort,
        options: SchedulerOptions,
        issued_evictions: set[str] | None = None,
    ) -> None:
        self.cache = cache
        self.queues = queues
        self.store = store
        self.options = options
        self._now_ts = 0.0
        self.preemptor = Preemptor(options, clock=lambda: self._now_ts)
        # Admission Fair Sharing: the LocalQueue usage the snapshot gives each candidate of an AFS
        # ClusterQueue (upstream ``snapshotClusterQueue`` sets ``LocalQueueFSUsage``), read from the
        # ledger as it was when the cycle's snapshot was taken.
        self._afs_usage_at_snapshot: dict[str, float] = {}
        self._afs_ledger_at_snapshot: Mapping[str, UsageLedgerEntry] = {}
        if queues.afs.enabled:
            self.preemptor.lq_usage = self._candidate_lq_usage
        self.cycle = 0
        self._result = CycleResult(0)
        # Preemption expectations: uids of victims whose eviction was written but not yet observed
        # (upstream's ``expectations.Store``); owned by the caller, who forgets them on observation.
        self._issued_evictions: set[str] = issued_evictions if issued_evictions is not None else set()
        self._assumed: list[WorkloadInfo] = []
        self._assumed_bookings: list[dict[FlavorResource, int]] = []
        # Whether this cycle's assumed workloads were added to the cache, and whether the snapshot
        # kept their bookings (both read by ``_recover_heads`` when the cycle raises).
        self._assumed_in_cache = False
        self._bookings_kept = False
        # PreemptionNoCandidates entries whose ``resourcesToReserve`` is not booked yet (classical
        # order only): see ``_process_entry``.
        self._reserve_later: list[Entry] = []
        # The preemptions of this cycle whose evictions were sent ahead (``CyclePort.sends_ahead``).
        self._issued_preemptions: list[_IssuedPreemption] = []
        self._pods_ready_blocked: bool | None = None
        self._stimulus_of: tuple[int, str] = (-1, "")
        # The preemption oracle of the cycle's snapshot, made once per snapshot.
        self._oracle: tuple[Snapshot, Oracle] | None = None
        # Set by a store whose driver routes each write back, unchanged and in order, right after
        # the cycle (the simulator): the queues then take a head's pending status as observed as
        # soon as it lands (``QueueManager.observe_own_write``).
        self.observe_own_writes = False

    # --- the loop body (upstream ``Scheduler.schedule``) -----------------------------------------

    def schedule(self, now: datetime) -> CycleResult:
        """Run one cycle at time ``now``."""
        self.cycle += 1
        self._now_ts = to_time(now).timestamp()
        result = CycleResult(self.cycle)
        self._result = result
        heads = self.queues.heads(self._cq_active)
        result.heads = len(heads)
        if not heads:
            return result
        self._assumed = []
        self._assumed_in_cache = False
        self._bookings_kept = False
        try:
            return self._schedule_heads(heads, now, result)
        except BaseException:
            self._recover_heads(heads, now)
            raise

    def _schedule_heads(self, heads: list[WorkloadInfo], now: datetime, result: CycleResult) -> CycleResult:
        """The cycle over its popped ``heads`` (see :meth:`_recover_heads` when it raises)."""
        snapshot = Snapshot(self.cache)
        if self.preemptor.lq_usage is not None:
            self._afs_ledger_at_snapshot = self.queues.afs.ledger.copy()
            self._afs_usage_at_snapshot = {}
        entries, inadmissible = self._nominate(heads, snapshot, now)
        preempted: dict[str, Target] = {}
        self._assumed_bookings = []
        self._reserve_later = []
        self._pods_ready_blocked = None
        completed = False
        self._issued_preemptions = []
        try:
            for entry in self._iterate(entries, snapshot):
                self._process_entry(entry, snapshot, preempted, now, result)
            completed = True
        finally:
            try:
                # Even after a failure every eviction sent ahead is answered and counted: it may
                # have landed, and its expectation must be kept.
                self._finish_preemptions(result)
            finally:
                # An answer that raised must not leave the cycle's bookings in the cache's tree.
                # Reservations nothing read are never booked: booking and undoing them at the
                # close would leave the tree as it was.
                self._reserve_later = []
                # An assumed workload's booking is exactly its usage: it stays in the tree instead
                # of being undone and added again (usage changes are exact, commutative inverses).
                snapshot.close(keep=self._assumed_bookings if completed else None)
                self._bookings_kept = completed
                self._oracle = None
        # Assumed workloads join the cache only now: during the cycle the snapshot carried their
        # usage but not the workloads themselves, so none could be chosen as a victim (``Cache.Snapshot``).
        for assumed in self._assumed:
            self.cache.add_workload(assumed, usage_held=True)
        self._assumed_in_cache = True
        for entry in entries:
            if entry.status != ASSUMED:
                self._requeue_and_update(entry, now)
        for entry in inadmissible:
            self._requeue_and_update(entry, now)
        result.entries = entries + inadmissible
        return result

    def _recover_heads(self, heads: list[WorkloadInfo], now: datetime) -> None:
        """After a cycle that raised (a driver's error; the controllers log it and go on): the
        workloads it admitted are counted in the cache, and every other head it popped goes back
        to its queue, so none is lost until an unrelated change re-adds it. Upstream's scheduler
        has no such path (a panic restarts the process, which lists everything again)."""
        if not self._assumed_in_cache:
            # Their admissions landed; their bookings were kept only if the entries all ran.
            for assumed in self._assumed:
                self.cache.add_workload(assumed, usage_held=self._bookings_kept)
            self._assumed_in_cache = True
        admitted = {a.key for a in self._assumed}
        for info in heads:
            # A head requeued before the failure (``_requeue_and_update``) is no longer inflight: it
            # stays where that put it. ``requeue_if_not_present`` would not keep it: a requeue for
            # FailedAfterNomination is immediate and moves a parked head back to the heap.
            if info.key in admitted or self.queues.inflight(info.key) is None:
                continue
            latest = self.store.get_workload(info.key)
            self.queues.requeue_workload(info, REQUEUE_REASON_FAILED_AFTER_NOMINATION, "", now, latest)

    def has_heads(self) -> bool:
        """Whether :meth:`schedule` would pop a head now."""
        return self.queues.has_pending_heads(self._cq_active)

    def _cq_active(self, name: str) -> bool:
        cq = self.cache.cluster_queues.get(name)
        return cq is not None and cq.is_active()

    # --- nomination (upstream ``Scheduler.nominate``, ``getAssignments``) -------------------------

    def _nominate(
        self, heads: list[WorkloadInfo], snapshot: Snapshot, now: datetime
    ) -> tuple[list[Entry], list[Entry]]:
        entries: list[Entry] = []
        inadmissible: list[Entry] = []
        for info in heads:
            if self.cache.has_workload(info.key):
                continue
            cq = snapshot.cluster_queue(info.cluster_queue)
            entry = Entry(info, cq)
            if has_failed_checks(info.obj):
                self._inadmissible(entry, "The workload has failed admission checks", "PendingEvaluation")
            elif info.cluster_queue in snapshot.inactive:
                self._inadmissible(entry, f"ClusterQueue {info.cluster_queue} is inactive", "Suspended")
            elif cq is None:
                self._inadmissible(entry, f"ClusterQueue {info.cluster_queue} not found", "Misconfigured")
            elif not self._validate_admissibility(entry, cq):
                pass
            else:
                entry.assignment, entry.targets = self._get_assignments(info, cq, snapshot)
                entry.message = entry.assignment.message()
                info.last_assignment = entry.assignment.last_state
                entries.append(entry)
                continue
            inadmissible.append(entry)
        return entries, inadmissible

    @staticmethod
    def _inadmissible(entry: Entry, message: str, reason: str, requeue: str = REQUEUE_REASON_GENERIC) -> None:
        entry.message = message
        entry.quota_reserved_reason = reason
        entry.requeue_reason = requeue

    def _validate_admissibility(self, entry: Entry, cq: ClusterQueueState) -> bool:
        info = entry.info
        labels = self.store.namespace_labels(info.namespace)
        pod_sets = [(ps.count, ps.per_pod) for ps in info.pod_sets]
        summaries = self.store.limit_range_summaries
        if summaries or info.adjusted_specs is not None:
            # Upstream checks its queued copy, adjusted (``AdjustResources``: limits count as requests).
            problem = admissibility_problem(
                info.obj,
                cq.namespace_selector,
                labels,
                pod_sets,
                pod_specs=info.adjusted_specs,
                limit_ranges=summaries.get(info.namespace),
                limits_as_requests=True,
            )
        else:
            # The requests are the spec's own (so the workload controller's check of the same spec
            # can reuse the outcome) when nothing transformed them and no pod was reclaimed.
            spec_pod_sets = info.obj.spec.pod_sets
            spec_derived = (
                not self.options.exclude_resource_prefixes
                and not self.options.transformations
                and len(spec_pod_sets) == len(pod_sets)
            )
            if spec_derived:  # every count equal (a loop: no generator per head)
                for ps, (count, _) in zip(spec_pod_sets, pod_sets, strict=True):
                    if ps.count != count:
                        spec_derived = False
                        break
            problem = admissibility_problem(info.obj, cq.namespace_selector, labels, pod_sets, spec_derived=spec_derived)
        if problem is None:
            return True
        error, kind = problem
        self._inadmissible(entry, error, "Misconfigured", _REQUEUE_REASON_OF[kind])
        return False

    def _assign(
        self,
        info: WorkloadInfo,
        cq: ClusterQueueState,
        snapshot: Snapshot,
        counts: list[int] | None = None,
        pin: NominationPin | None = None,
    ) -> Assignment:
        oracle = self._oracle
        if oracle is None or oracle[0] is not snapshot:
            oracle = self._oracle = (snapshot, self.preemptor.make_oracle(snapshot))
        return assign_flavors(info, cq, snapshot, self.options, oracle[1], counts=counts, pin=pin, cycle=self.cycle)

    def _get_assignments(
        self,
        info: WorkloadInfo,
        cq: ClusterQueueState,
        snapshot: Snapshot,
        pin: NominationPin | None = None,
    ) -> tuple[Assignment, list[Target]]:
        if info.last_assignment is not None and last_assignment_outdated(info, cq, self.cycle, self.options):
            info.last_assignment = None
        full = self._assign(info, cq, snapshot, pin=pin)
        mode = full.representative_mode()
        if mode is Mode.FIT:
            return full, []
        if mode is Mode.PREEMPT:
            targets = self.preemptor.get_targets(info, full, snapshot, cq)
            if targets:
                return full, targets
        if self.options.gate_partial_admission and info.is_partially_admissible():

            def accept(counts: list[int]) -> tuple[tuple[Assignment, list[Target]], bool]:
                a = self._assign(info, cq, snapshot, counts=counts, pin=pin)
                m = a.representative_mode()
                if m is Mode.FIT:
                    return (a, []), True
                if m is Mode.PREEMPT:
                    t = self.preemptor.get_targets(info, a, snapshot, cq)
                    return (a, t), bool(t)
                return (a, []), False

            found, ok = search_partial(info.pod_sets, accept)
            if ok and found is not None:
                return found
        return full, []

    # --- ordering (upstream ``makeClassicalIterator``) ---------------------------------------------

    def _iterate(self, entries: list[Entry], snapshot: Snapshot) -> Iterator[Entry]:
        if self.options.fair_sharing:
            yield from fair_sharing_order(entries, snapshot, self.options)
            return
        prio_sort = self.options.gate("PrioritySortingWithinCohort")
        preemptor_first = self.options.gate("PrioritizePreemptorWorkloads")

        def key(e: Entry) -> tuple[int, int, int, float]:
            a = e.assignment
            return (
                0 if (preemptor_first and e.info.is_preemptor) else 1,
                a.borrowing if a else 0,
                -e.info.priority if prio_sort else 0,
                e.info.order_ts,
            )

        yield from sorted(entries, key=key)

    # --- processing (upstream ``Scheduler.processEntry``) ---------------------------------------------

    @contextmanager
    def _without(self, snapshot: Snapshot, victims: Iterable[WorkloadInfo]) -> Iterator[None]:
        """Simulate ``victims`` (de-duplicated) having released their quota, then restore them."""
        removed: dict[str, WorkloadInfo] = {}
        for v in victims:
            if v.key not in removed and v.key in self.cache.cluster_queues[v.cluster_queue].workloads:
                snapshot.remove_workload(v)
                removed[v.key] = v
        try:
            yield
        finally:
            for v in removed.values():
                snapshot.add_workload(v)

    def _fits(self, e: Entry, cq: ClusterQueueState, snapshot: Snapshot, preempted: dict[str, Target]) -> bool:
        """``fits`` in ``processEntry``: the entry's usage fits once every victim chosen so far is gone."""
        assert e.assignment is not None
        usage = e.assignment.usage
        if not preempted and not e.targets:
            return _fits_now(cq, usage)
        victims = [t.workload for t in preempted.values()] + [t.workload for t in e.targets]
        with self._without(snapshot, victims):
            return _fits_now(cq, usage)

    def _process_entry(
        self,
        e: Entry,
        snapshot: Snapshot,
        preempted: dict[str, Target],
        now: datetime,
        result: CycleResult,
    ) -> None:
        cq = e.cq
        assert cq is not None and e.assignment is not None
        if self._reserve_later and (e.targets or preempted or e.mode not in _NO_READ_MODES):
            # This entry reads the tree (or re-adds victims to it): the reservations of the
            # entries before it are booked first, in their order, as they would have been at once.
            self._book_reservations(snapshot)
        recomputed = (
            e.targets
            and preempted
            and self.options.gate("RecomputeAssignmentUponPreemptionTargetsOverlap")
            and any(t.workload.key in preempted for t in e.targets)
        )
        if recomputed:
            self._recompute_with_overlap(e, cq, snapshot, preempted)
        # With victims, ``_fits`` removes and re-adds them (re-inserting them into their CQ's
        # workloads), so it runs here as upstream's does; without, it is pure and only needed
        # below, which most entries (no fit) never reach.
        fits = self._fits(e, cq, snapshot, preempted) if preempted or e.targets else None
        if recomputed:
            # ``updateAssignmentIfNeeded``: the result reported to ``ReportPreemptionTargetRecomputation``.
            if e.deferred_fit:
                e.overlap_recomputation = "deferred_fit"
            elif e.targets and fits and not any(t.workload.key in preempted for t in e.targets):
                e.overlap_recomputation = "new_targets"
            else:
                e.overlap_recomputation = "skipped"
        usage = e.assignment.usage
        mode = e.mode
        if e.deferred_fit:
            e.message = DEFERRED_FIT_MESSAGE
            e.quota_reserved_reason = "WaitingForPreemptedWorkloads"
            e.requeue_reason = REQUEUE_REASON_PENDING_PREEMPTION
            e.info.last_assignment = None
            snapshot.book(cq, usage)
            return
        if mode is Mode.NO_FIT:
            e.requeue_reason = REQUEUE_REASON_NO_FIT
            e.quota_reserved_reason = e.assignment.no_fit_reason()
            return
        if mode is Mode.PREEMPT and not e.targets:
            e.requeue_reason = REQUEUE_REASON_PREEMPTION_NO_CANDIDATES
            e.quota_reserved_reason = "WaitingForQuota"
            preemptor_reserves = e.info.is_preemptor and self.options.gate("PrioritizePreemptorWorkloads")
            if cq.reclaim_within_cohort != "Any" or preemptor_reserves:
                if self.options.fair_sharing:
                    # The fair-sharing order reads the tree between entries.
                    snapshot.book(cq, self._resources_to_reserve(e, cq, mode))
                else:
                    # Booked when a later entry of the cycle first reads the tree; in most cycles
                    # none does (every entry NoFit or PreemptionNoCandidates).
                    self._reserve_later.append(e)
            return
        if (
            mode is Mode.PREEMPT
            and (self.options.gate("ConcurrentAdmission") or self.options.gate("MultiKueueOrchestratedPreemption"))
            and has_closed_preemption_gate(e.info.obj)
        ):
            # ``processEntry``: a preemption behind a closed gate is not issued (``markPreemptionGated``).
            e.quota_reserved_reason = "AdmissionGated"
            e.status = PREEMPTION_GATED
            e.message = "Workload requires preemption, but it's gated"
            e.requeue_reason = REQUEUE_REASON_PREEMPTION_GATED
            e.info.last_assignment = None
            return
        if preempted and any(t.workload.key in preempted for t in e.targets):
            self._skip(e, "Workload has overlapping preemption targets with another workload")
            return
        if fits is None:
            fits = self._fits(e, cq, snapshot, preempted)
        if not fits:
            self._skip(e, "Workload no longer fits after processing another workload")
            return
        for t in e.targets:
            preempted[t.workload.key] = t
        snapshot.book(cq, usage)
        if mode is Mode.PREEMPT:
            e.quota_reserved_reason = "WaitingForPreemptedWorkloads"
            issued = self._issue_preemptions(e, now)
            if self.store.sends_ahead:
                # The evictions are on their way while the cycle goes on; their answers are counted
                # when it has processed every entry (``_finish_preemptions``), before any entry's
                # status is written.
                self._issued_preemptions.append(issued)
            else:
                self._finish_preemption(issued, result)
            return
        if self.options.block_admission and self._blocked_on_pods_ready():
            self._wait_for_pods_ready(e, now)
            return
        e.status = NOMINATED
        error = self._admit(e, cq, now)
        if error is not None:
            e.message = f"Failed to admit workload: {error}"
            return
        e.status = ASSUMED
        self._assumed_bookings.append(usage)  # booked above; the assumed workload's usage
        result.admitted.append(e.info.key)

    def _book_reservations(self, snapshot: Snapshot) -> None:
        """Book the deferred ``resourcesToReserve`` of PreemptionNoCandidates entries, in order.

        Each amount is computed now against the usage its CQ has now, which is the usage it had
        when the entry was processed: the tree changed meanwhile only by the bookings deferred
        before it (booked here first), and a CQ has one entry per cycle."""
        for e in self._reserve_later:
            assert e.cq is not None
            snapshot.book(e.cq, self._resources_to_reserve(e, e.cq, Mode.PREEMPT))
        self._reserve_later = []

    @staticmethod
    def _mark_preemption_outcome(e: Entry, count: int, errors: int) -> None:
        """``markPreemptionOutcome``: note the preemptions issued (or failed) and forget the flavor
        progress, so the next cycle reconsiders every flavor."""
        e.info.last_assignment = None
        if count > 0:
            e.message += f". Pending the preemption of {count} workload(s)"
            e.requeue_reason = REQUEUE_REASON_PENDING_PREEMPTION
        elif errors > 0:
            e.message += f". Preempting {errors} workload(s) failed, will retry."
            e.requeue_reason = REQUEUE_REASON_PREEMPTION_FAILED

    def _skip(self, e: Entry, message: str) -> None:
        e.status = SKIPPED
        e.message = message
        e.quota_reserved_reason = "WaitingForQuota"
        if not self.options.gate_preserve_scan_progress:
            e.info.last_assignment = None

    def _recompute_with_overlap(
        self, e: Entry, cq: ClusterQueueState, snapshot: Snapshot, preempted: dict[str, Target]
    ) -> None:
        assert e.assignment is not None
        pin = {ps.name: {res: fa.name for res, fa in ps.flavors.items()} for ps in e.assignment.pod_sets}
        with self._without(snapshot, (t.workload for t in preempted.values())):
            e.info.last_assignment = None
            e.assignment, e.targets = self._get_assignments(e.info, cq, snapshot, pin=pin)
            e.message = e.assignment.message()
        if e.assignment.representative_mode() is Mode.FIT:
            e.deferred_fit = True

    def _resources_to_reserve(
        self, e: Entry, cq: ClusterQueueState, mode: Mode | None = None
    ) -> dict[FlavorResource, int]:
        """``resourcesToReserve``. ``mode``: the entry's representative mode, when the caller has it.

        Borrowing under a borrowing limit reserves ``min(request, nominal + borrowingLimit - usage)``
        unclamped, as upstream's ``quotaResourcesToReserve``: a ClusterQueue already using more than
        nominal + borrowingLimit (a limit lowered after admission) books a negative amount, which
        lowers its own usage only (``addUsage``) for the rest of the cycle. Without borrowing the
        amount is clamped at 0 (upstream's ``MaxAmount``)."""
        assert e.assignment is not None
        if (e.mode if mode is None else mode) is not Mode.PREEMPT:
            return dict(e.assignment.usage)
        out: dict[FlavorResource, int] = {}
        for fr, u in e.assignment.usage.items():
            q = cq.node.quotas.get(fr)
            nominal = q.nominal if q else 0
            used = cq.node.usage.get(fr, 0)
            if e.assignment.borrowing > 0:
                bl = q.borrowing_limit if q else None
                out[fr] = u if bl is None else min(u, nominal + bl - used)
            else:
                out[fr] = max(0, min(u, nominal - used))
        return out

    def _blocked_on_pods_ready(self) -> bool:
        """Some quota-holding workload lacks PodsReady=True (computed once per cycle)."""
        if self._pods_ready_blocked is None:
            self._pods_ready_blocked = self._some_workload_not_ready()
        return self._pods_ready_blocked

    def _wait_for_pods_ready(self, e: Entry, now: datetime) -> None:
        """``processEntry``, skipped for a pending preemption: mark the workload and retry it as
        soon as the scheduler unblocks.

        Upstream then blocks the scheduler until every admitted workload is ready; a pure cycle
        cannot block, so the entry is requeued immediately and tried again next cycle.
        """
        latest = self.store.get_workload(e.info.key)
        e.skip_status_update = True
        e.requeue_reason = REQUEUE_REASON_FAILED_AFTER_NOMINATION
        if latest is None:
            return
        wl = transitions.copy_for_status(latest)
        reason = "WaitingForPodsReady" if self.options.gate_unadmitted_observability else "Waiting"
        message = "waiting for all admitted workloads to be in PodsReady condition"
        transitions.set_condition(wl, "QuotaReserved", "False", reason, message, now)
        transitions.sync_admitted_condition(wl, now, self.options)
        self._decide(Decision(self._stimulus, to_time(now), e.info.key, reason, message, status=wl))

    def _some_workload_not_ready(self) -> bool:
        for wl in self.cache.iter_workloads():
            c = find_condition(wl.obj.status.conditions, "PodsReady")
            if c is None or c.status != "True":
                return True
        return False

    # --- preemption (upstream ``Preemptor.IssuePreemptions``) --------------------------------------

    def _finish_preemptions(self, result: CycleResult) -> None:
        """Count the answers of the evictions sent ahead in this cycle, preemptor by preemptor in
        the order they were issued."""
        issued, self._issued_preemptions = self._issued_preemptions, []
        failure: BaseException | None = None
        for one in issued:
            try:
                self._finish_preemption(one, result)
            except BaseException as err:
                # The later preemptors' answers are still collected and counted (the driver keeps
                # their victims busy until then, and their evictions may have landed); the first
                # failure is raised once all are.
                if failure is None:
                    failure = err
        if failure is not None:
            raise failure

    def _finish_preemption(self, issued: _IssuedPreemption, result: CycleResult) -> None:
        """The rest of upstream's ``IssuePreemptions`` once every eviction answered (the preemption
        expectations, the preemptor's trail, the count), then ``markPreemptionOutcome``."""
        e, now, count, errors, evictions, answers = issued
        oks = answers()
        for (t, victim, decision), ok in zip(evictions, oks, strict=True):
            if ok is None:
                # Never sent: an earlier eviction had failed, and upstream's ``ParallelizeUntil``
                # starts no piece once the context is cancelled; neither preempted nor failed.
                continue
            self._result.decisions.append(decision)
            if not ok:
                errors += 1
                continue
            if victim.metadata.uid:
                self._issued_evictions.add(victim.metadata.uid)
            # The preemptor's trail names its victim (no write of its own: its status follows below).
            self._decide(
                Decision(
                    self._stimulus, to_time(now), e.info.key, "PreemptionIssued", t.reason, related=(t.workload.key,)
                )
            )
            result.preempted.append(t.workload.key)
            count += 1
        self._mark_preemption_outcome(e, count, errors)

    def _issue_preemptions(self, e: Entry, now: datetime) -> _IssuedPreemption:
        """Send the evictions of ``e``'s targets (upstream ``IssuePreemptions``); their answers are
        counted by :meth:`_finish_preemption`."""
        count = errors = 0
        evictions: list[tuple[Target, Workload, Decision]] = []
        for t in sorted(e.targets, key=lambda t: t.workload.key):
            victim = self.store.get_workload(t.workload.key)
            if victim is None:
                errors += 1
                continue
            if t.workload.is_evicted() or transitions.is_evicted_and_reserved(victim):
                count += 1
                continue
            if victim.metadata.uid and victim.metadata.uid in self._issued_evictions:
                count += 1
                continue
            updated = transitions.copy_for_status(victim)
            events = apply_eviction_for_preemption(updated, e.info, t, now)
            evicted = find_condition(updated.status.conditions, "Evicted")
            decision = Decision(
                self._stimulus,
                to_time(now),
                t.workload.key,
                "Preempted",
                f"{t.reason}: {evicted.message}" if evicted is not None else t.reason,
                status=updated,
                events=tuple(events),
                related=(e.info.key,),
            )
            evictions.append((t, victim, decision))
        # The evictions are written together (upstream: ParallelizeUntil over the targets) and
        # counted once all have answered; the cycle's decisions keep the targets' order.
        answers = self.store.send_all([decision for _, _, decision in evictions])
        return e, now, count, errors, evictions, answers

    # --- admission (upstream ``Scheduler.admit``) ----------------------------------------------------

    def _admit(self, e: Entry, cq: ClusterQueueState, now: datetime) -> str | None:
        assert e.assignment is not None
        info = e.info
        admission = e.assignment.to_admission(cq.name)
        wl = transitions.copy_for_status(info.obj)
        transitions.set_quota_reservation(wl, admission, now)
        flavors = {fa.name for ps in e.assignment.pod_sets for fa in ps.flavors.values()}
        required = cq.checks_for_flavors(flavors)
        admitted_now = False
        if transitions.all_checks_listed(wl, required):
            admitted_now = transitions.sync_admitted_condition(wl, now, self.options)
        assumed = WorkloadInfo(
            obj=wl,
            key=info.key,
            uid=info.uid,
            priority=info.priority,
            base_priority=info.base_priority,
            boost=info.boost,
            order_ts=info.order_ts,
            creation_ts=info.creation_ts,
            pod_sets=info.pod_sets,
            scheduling_hash=info.scheduling_hash,
            cluster_queue=cq.name,
            local_queue=info.local_queue,
            usage=dict(e.assignment.usage),
            quota_reserved_ts=to_time(now).timestamp(),
        )
        if cq.name not in self.cache.cluster_queues:
            return f"workload {info.key} could not be added to the cache"
        decision = Decision(
            self._stimulus,
            to_time(now),
            info.key,
            "Admitted" if admitted_now else "QuotaReserved",
            f"Quota reserved in ClusterQueue {cq.name}",
            status=wl,
            events=self._admission_events(e, wl, cq, now, admitted_now),
            assumed=True,
        )
        if not self._decide(decision):
            e.requeue_reason = REQUEUE_REASON_FAILED_AFTER_NOMINATION
            e.skip_status_update = True
            return "Could not admit Workload and assign flavors in apiserver"
        self._assumed.append(assumed)
        if cq.afs and self._should_apply_entry_penalty(info, cq):
            self._push_entry_penalty(info, cq, now)
        return None

    def _candidate_lq_usage(self, wl: WorkloadInfo) -> float | None:
        """``Info.LocalQueueFSUsage`` of a preemption candidate: set only in an AFS ClusterQueue."""
        cq = self.cache.cluster_queues.get(wl.cluster_queue)
        if cq is None or not cq.afs:
            return None
        usage = self._afs_usage_at_snapshot.get(wl.local_queue)
        if usage is None:
            usage = self.queues.afs.candidate_usage(wl.local_queue, self._afs_ledger_at_snapshot)
            self._afs_usage_at_snapshot[wl.local_queue] = usage
        return usage

    def _should_apply_entry_penalty(self, info: WorkloadInfo, cq: ClusterQueueState) -> bool:
        """Upstream ``Scheduler.shouldApplyEntryPenalty``: AFS on, the ClusterQueue opted in, and the
        workload held no reservation before (one reservation pushes at most one penalty)."""
        return self.queues.afs.enabled and cq.afs and not has_quota_reservation(info.obj)

    def _push_entry_penalty(self, info: WorkloadInfo, cq: ClusterQueueState, now: datetime) -> None:
        """Upstream ``Scheduler.updateEntryPenalty`` (add): the penalty of the workload's total
        requests (only the ClusterQueue's covered resources under ``IgnoreUndeclared``)."""
        total: dict[str, int] = {}
        for ps in info.pod_sets:
            for name, v in ps.total.items():
                total[name] = total.get(name, 0) + v
        if self.options.ignore_undeclared_resources:
            covered = {r for rg in cq.resource_groups for r in rg.covered}
            total = {k: v for k, v in total.items() if k in covered}
        self.queues.afs.push_entry_penalty(info.local_queue, info.key, total, to_time(now).timestamp())

    def _admission_events(
        self, e: Entry, wl: Workload, cq: ClusterQueueState, now: datetime, admitted_now: bool
    ) -> tuple[Event, ...]:
        assert e.assignment is not None
        requeued = find_condition(e.info.obj.status.conditions, REQUEUED)
        since = requeued.last_transition_time if requeued is not None else wl.metadata.creation_timestamp
        waited = (to_time(now) - to_time(since)).total_seconds() if since is not None else 0.0
        note = f"Quota reserved in ClusterQueue {cq.name}, wait time since queued was {waited:.0f}s"
        considered = e.assignment.flavors_considered()
        if considered:
            note += f"; Flavors considered: {considered}"
        ns, name = wl.metadata.namespace, wl.metadata.name
        reserved = Event.for_workload(ns, name, NORMAL, "QuotaReserved", note)
        if not admitted_now:
            return (reserved,)
        admitted = Event.for_workload(
            ns, name, NORMAL, "Admitted", f"Admitted by ClusterQueue {cq.name}, wait time since reservation was 0s"
        )
        return (reserved, admitted)

    # --- requeue and status update (upstream ``Scheduler.requeueAndUpdate``) ---------------------------

    def _requeue_and_update(self, e: Entry, now: datetime) -> None:
        if e.status != NOT_NOMINATED and e.requeue_reason == REQUEUE_REASON_GENERIC:
            e.requeue_reason = REQUEUE_REASON_FAILED_AFTER_NOMINATION
        latest = self.store.get_workload(e.info.key)
        self.queues.requeue_workload(e.info, e.requeue_reason, e.quota_reserved_reason, now, latest)
        if e.status not in (NOT_NOMINATED, SKIPPED, PREEMPTION_GATED) or e.skip_status_update or latest is None:
            return
        wl = transitions.copy_for_status(latest)
        reason = transitions.set_pending(wl, e.info, e.quota_reserved_reason, e.message, now, self.options)
        # Upstream patches only when the condition or the requests changed, but emits the Warning
        # on every attempt (its event recorder aggregates repeats into one Event's count).
        changed = wl.status != latest.status
        if e.status == PREEMPTION_GATED:
            # ``requeueAndUpdate``: for a gated preemptor, whether to patch is whether
            # ``SetBlockedOnPreemptionGatesCondition`` changed the condition (it overrides ``updated``).
            changed = transitions.set_condition(
                wl, BLOCKED_ON_PREEMPTION_GATES, "True", REQUEUE_REASON_PREEMPTION_GATED, e.message, now
            )
        if not changed and reason is None:
            return
        events: tuple[Event, ...] = ()
        if reason is not None:
            # ``for_workload`` truncates the note to the event limit.
            events = (Event.for_workload(wl.metadata.namespace, wl.metadata.name, WARNING, reason, e.message),)
        landed = self._decide(
            Decision(
                self._stimulus,
                to_time(now),
                e.info.key,
                e.quota_reserved_reason or "Pending",
                e.message,
                status=wl if changed else None,
                events=events,
                events_if_unwritten=True,
            )
        )
        if changed and landed and self.observe_own_writes:
            self.queues.observe_own_write(e.info, wl)

    # --- decisions -------------------------------------------------------------------------------------

    @property
    def _stimulus(self) -> str:
        if self._stimulus_of[0] != self.cycle:
            self._stimulus_of = (self.cycle, cycle_stimulus(self.cycle))
        return self._stimulus_of[1]

    def _decide(self, decision: Decision) -> bool:
        """Hand a decision to the driver (applied at once) and keep it in the cycle's result."""
        self._result.decisions.append(decision)
        return self.store.decide(decision)
