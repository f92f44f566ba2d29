"""Entry points of preemption: target search, the flavor assigner's oracle and eviction writes.

Upstream ``preemption.go`` (``GetTargets``, ``IssuePreemptions``), ``preemption_oracle.go`` and
``evict.Evict``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from pykueue.api.kueue import Workload
from pykueue.core.cache.cache import ClusterQueueState
from pykueue.core.cache.snapshot import Snapshot
from pykueue.core.events import NORMAL, Event
from pykueue.core.options import SchedulerOptions
from pykueue.core.quota.tree import FlavorResource, lowest_fitting_subtree, quota_views
from pykueue.core.scheduler.flavorassigner.assigner import Oracle
from pykueue.core.scheduler.flavorassigner.assignment import Assignment, PreemptionMode
from pykueue.core.scheduler.preemption.classical import classical_targets, no_classical_candidate_source
from pykueue.core.scheduler.preemption.common import (
    LocalQueueUsage,
    PreemptionContext,
    Target,
    cq_path,
    preemption_message,
    priority_info,
)
from pykueue.core.scheduler.preemption.fairsharing import Strategy, fair_targets, parse_strategies
from pykueue.core.workload import transitions
from pykueue.core.workload.info import PREEMPTED, WorkloadInfo

"""``oracle(cq, wl, fr, val) -> (mode, borrowing level)`` used by flavor assignment
(``fitsResourceQuota``)."""

EVICTED_BY_PREEMPTION = "Preempted"


class Preemptor:
    """Finds preemption targets with the classical or the fair-sharing algorithm."""

    def __init__(
        self,
        options: SchedulerOptions,
        clock: Callable[[], float],
        lq_usage: LocalQueueUsage | None = None,
    ) -> None:
        self.options = options
        self.clock = clock
        self.lq_usage = lq_usage
        self._strategies: list[Strategy] = parse_strategies(options.fair_sharing_strategies)

    def get_targets(
        self,
        wl: WorkloadInfo,
        assignment: Assignment,
        snapshot: Snapshot,
        cq: ClusterQueueState,
        *,
        now: float | None = None,
    ) -> list[Target]:
        """Workloads to evict so that ``wl`` fits with ``assignment`` (empty if impossible).

        The snapshot is left exactly as it was. Targets carry the preemptor and preemptee paths
        used by the preemption message.
        """
        if no_classical_candidate_source(cq):
            # Neither search could find a candidate (see ``simulate``): skip building the context.
            return []
        frs = frozenset(assignment.preempt_frs())
        if not frs:
            return []
        ctx = self._context(wl, cq, snapshot, frs, assignment.total_requests_for(wl), now)
        targets = self._search(ctx)
        if not targets:
            return targets
        preemptor_path = cq_path(cq.node)
        for t in targets:
            t.preemptor_path = preemptor_path
            t.preemptee_path = cq_path(snapshot.cache.cluster_queues[t.workload.cluster_queue].node)
        return targets

    def simulate(
        self,
        cq: ClusterQueueState,
        wl: WorkloadInfo,
        fr: FlavorResource,
        val: int,
        snapshot: Snapshot,
        *,
        now: float | None = None,
    ) -> tuple[PreemptionMode, int]:
        """``SimulatePreemption``: whether preempting for ``val`` of ``fr`` is possible, and the borrowing
        level after."""
        if no_classical_candidate_source(cq):
            # Both searches would return [] before looking at the context (``classical_targets``
            # at once; ``fair_targets`` finds no candidate: ``find_candidates`` reads the same two
            # policies): skip building it. The level is ``quota_views``' (equal to the walk's).
            return PreemptionMode.NO_CANDIDATES, quota_views(cq.node, fr, val)[1]
        targets = self._search(self._context(wl, cq, snapshot, frozenset((fr,)), {fr: val}, now))
        if not targets:
            return PreemptionMode.NO_CANDIDATES, lowest_fitting_subtree(cq.node, fr, val)[0]
        cqs = snapshot.cache.cluster_queues
        for t in targets:
            snapshot.remove_usage(cqs[t.workload.cluster_queue], t.workload.usage)
        try:
            level = lowest_fitting_subtree(cq.node, fr, val)[0]
        finally:
            for t in targets:
                snapshot.add_usage(cqs[t.workload.cluster_queue], t.workload.usage)
        if any(t.workload.cluster_queue == cq.name for t in targets):
            return PreemptionMode.PREEMPT, level
        return PreemptionMode.RECLAIM, level

    def make_oracle(self, snapshot: Snapshot) -> Oracle:
        """The oracle bound to ``snapshot``, as the flavor assigner calls it."""
        return _SnapshotOracle(self, snapshot)

    def _context(
        self,
        wl: WorkloadInfo,
        cq: ClusterQueueState,
        snapshot: Snapshot,
        frs: frozenset[FlavorResource],
        request: dict[FlavorResource, int],
        now: float | None,
    ) -> PreemptionContext:
        return PreemptionContext(
            preemptor=wl,
            cq=cq,
            snapshot=snapshot,
            frs=frs,
            request=request,
            now=self.clock() if now is None else now,
            options=self.options,
            lq_usage=self.lq_usage,
        )

    def _search(self, ctx: PreemptionContext) -> list[Target]:
        if self.options.fair_sharing:
            return fair_targets(ctx, self._strategies)
        return classical_targets(ctx)


def apply_eviction_for_preemption(
    wl_obj: Workload,
    preemptor: WorkloadInfo,
    target: Target,
    now: datetime,
    message: str | None = None,
) -> list[Event]:
    """Write the preemption of ``target`` into ``wl_obj`` (a status copy) and return its events.

    Preempted=True (reason = target reason, no observedGeneration) and then the eviction with
    reason ``Preempted`` (``IssuePreemptions``, ``evict.Evict``). ``message`` defaults to the standard
    preemption message built from the target's paths.
    """
    if message is None:
        message = preemption_message(preemptor, target.reason, target.preemptor_path, target.preemptee_path)
    had_admission = wl_obj.status.admission is not None
    transitions.set_condition(wl_obj, PREEMPTED, "True", target.reason, message, now, observed=False)
    transitions.evict(wl_obj, EVICTED_BY_PREEMPTION, message, now)
    victim = target.workload
    ns, name = wl_obj.metadata.namespace, wl_obj.metadata.name
    priorities = (
        f"; preemptor effective priority: {priority_info(preemptor)}; "
        f"preemptee effective priority: {priority_info(victim)}"
    )
    events: list[Event] = []
    if had_admission:
        events.append(Event.for_workload(ns, name, NORMAL, "EvictedDueTo" + EVICTED_BY_PREEMPTION, message))
    events.append(Event.for_workload(ns, name, NORMAL, "Preempted", message + priorities))
    victim_ref = f"{ns}/{name}" if ns else name
    events.append(
        Event.for_workload(
            preemptor.namespace,
            preemptor.name,
            NORMAL,
            "PreemptedWorkload",
            f"Preempted workload {victim_ref} (UID: {wl_obj.metadata.uid}) in ClusterQueue {victim.cluster_queue}"
            + priorities,
        )
    )
    return events


class _SnapshotOracle:
    """``Preemptor.simulate`` bound to a snapshot (upstream ``PreemptionOracle``).

    ``no_candidates(cq)`` tells the flavor assigner, once per head, that every answer for ``cq``
    would be ``NO_CANDIDATES`` at the borrowing level ``quota_views`` gives (``simulate``'s first
    branch), so it need not call the oracle (see ``FlavorAssigner._fits_resource_quota``)."""

    __slots__ = ("_preemptor", "_snapshot")

    def __init__(self, preemptor: Preemptor, snapshot: Snapshot) -> None:
        self._preemptor = preemptor
        self._snapshot = snapshot

    def __call__(
        self, cq: ClusterQueueState, wl: WorkloadInfo, fr: FlavorResource, val: int
    ) -> tuple[PreemptionMode, int]:
        return self._preemptor.simulate(cq, wl, fr, val, self._snapshot)

    @staticmethod
    def no_candidates(cq: ClusterQueueState) -> bool:
        return no_classical_candidate_source(cq)


__all__ = ["Preemptor", "apply_eviction_for_preemption"]
