"""The result of flavor assignment (upstream ``flavorassigner.go`` ``Assignment``).

An ``Assignment`` says, per pod set, which flavor each resource got and how well it fits
(``Fit``/``Preempt``/``NoFit``), with the reasons collected on the way. Flavor assignment builds it;
preemption, the scheduling cycle, the status writer and ``--explain`` read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import msgspec

from pykueue.api.kueue import Admission, PodSetAssignment
from pykueue.api.quantity import resource_quantity_string, sat_add, sat_mul
from pykueue.core.quota.tree import FlavorResource
from pykueue.core.workload.info import LastAssignment, WorkloadInfo


class Mode(IntEnum):
    """Public fit modes, worst first (``min`` gives the representative mode)."""

    NO_FIT = 0
    PREEMPT = 1
    FIT = 2

    def label(self) -> str:
        return {Mode.NO_FIT: "NoFit", Mode.PREEMPT: "Preempt", Mode.FIT: "Fit"}[self]


class PreemptionMode(IntEnum):
    """Granular modes (upstream ``granularMode``), worst first."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4

    def public(self) -> Mode:
        if self is PreemptionMode.NO_FIT:
            return Mode.NO_FIT
        if self is PreemptionMode.FIT:
            return Mode.FIT
        return Mode.PREEMPT

    def label(self) -> str:
        return {
            PreemptionMode.NO_CANDIDATES: "NoCandidates",
            PreemptionMode.PREEMPT: "Preempt",
            PreemptionMode.RECLAIM: "Reclaim",
        }.get(self, self.public().label())


class GranularMode(msgspec.Struct, frozen=True, gc=False):
    """A preemption mode and borrowing level (a msgspec Struct, built in C: about two per decision)."""

    preemption_mode: PreemptionMode
    borrowing_level: int = 0


# NoFit reasons and their severity (upstream ``reasonSeverity``).
NO_MATCHING_FLAVOR = "NoMatchingFlavor"
EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
WAITING_FOR_QUOTA = "WaitingForQuota"
TOPOLOGY_PLACEMENT_FAILED = "TopologyPlacementFailed"
NO_FIT_SEVERITY = {
    NO_MATCHING_FLAVOR: 4,
    EXCEEDS_MAX_QUOTA: 3,
    WAITING_FOR_QUOTA: 2,
    TOPOLOGY_PLACEMENT_FAILED: 1,
    "": 0,
}


class FlavorAssignment(msgspec.Struct, gc=False):
    """The flavor chosen for one resource of a pod set.

    A msgspec Struct (built in C; untracked by the cyclic GC: a string and numbers): flavor
    assignment builds one per resource of every flavor it evaluates."""

    name: str
    mode: Mode
    tried_flavor_idx: int
    borrow: int = 0


class FlavorAttempt(msgspec.Struct, gc=False):
    """One flavor examined for a pod set's resource group (``resolveNoFitReason``,
    ``FlavorAssignmentAttempts``).

    A msgspec Struct, built in C, two per head; untracked by the cyclic GC (strings, numbers, a
    list of strings: it cannot be part of a cycle)."""

    flavor: str
    mode: GranularMode
    reasons: list[str] = msgspec.field(default_factory=list)
    no_fit_reason: str = ""
    preemption_simulated: bool = False
    resource_groups: tuple[int, ...] = ()
    """Indexes of the ClusterQueue's resource groups listing this flavor (``findRGIndicesByFlavor``)."""


class PodSetAssignmentResult(msgspec.Struct, gc=False):
    """Flavors and status of one pod set (a msgspec Struct built in C, one per head; untracked by
    the cyclic GC: strings, numbers and containers of them)."""

    name: str
    flavors: dict[str, FlavorAssignment]
    requests: dict[str, int]
    count: int
    reasons: list[str] = msgspec.field(default_factory=list)
    error: str | None = None
    attempts: list[FlavorAttempt] = msgspec.field(default_factory=list)

    def mode(self) -> Mode:
        if not self.reasons and self.error is None:
            return Mode.FIT
        if self.error is not None or not self.flavors:
            return Mode.NO_FIT
        return min(fa.mode for fa in self.flavors.values())

    def message(self) -> str:
        if self.error is not None:
            return f"failed to assign flavors to pod set {self.name}: {self.error}"
        return f"couldn't assign flavors to pod set {self.name}: " + ", ".join(sorted(self.reasons))

    def no_fit_reason(self) -> str:
        """The NoFit reason of one pod set (upstream ``Assignment.resolveNoFitReason``, per pod set).

        Only the recorded flavor attempts count: the pod set's own status (e.g. ``resource r
        unavailable in ClusterQueue``) carries no reason, so an uncovered resource met after an
        earlier group recorded attempts does not make the pod set NoMatchingFlavor.
        """
        if not self.attempts:
            return NO_MATCHING_FLAVOR
        # Per resource group the least severe blocker (alternative flavors), then across groups
        # the most severe one (co-requisites).
        per_group: dict[int, str] = {}
        for i, a in enumerate(self.attempts):
            if a.mode.preemption_mode is not PreemptionMode.NO_FIT:
                continue
            # A flavor no group lists (e.g. deleted) is a group of its own.
            for group in a.resource_groups or (-1 - i,):
                current = per_group.get(group)
                if current is None or NO_FIT_SEVERITY[a.no_fit_reason] < NO_FIT_SEVERITY[current]:
                    per_group[group] = a.no_fit_reason
        reason = ""
        for r in per_group.values():
            if NO_FIT_SEVERITY[r] > NO_FIT_SEVERITY[reason]:
                reason = r
        return reason


@dataclass(slots=True)
class Assignment:
    """Flavor assignment of a whole workload."""

    pod_sets: list[PodSetAssignmentResult]
    borrowing: int = 0
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    last_state: LastAssignment | None = None
    resolve_no_fit_reason: bool = True
    """``UnadmittedWorkloadsObservability``: without it upstream leaves ``NoFitReason`` empty."""
    final_mode: Mode | None = field(default=None, repr=False, compare=False)
    """The representative mode, set by the flavor assigner once it has built the assignment (it is
    read two or three times per head); None: computed on each call."""

    def requires_borrowing(self) -> bool:
        """Whether the assignment borrows at any level (upstream ``Assignment.RequiresBorrowing``)."""
        return self.borrowing > 0

    def representative_mode(self) -> Mode:
        if self.final_mode is not None:
            return self.final_mode
        if not self.pod_sets:
            return Mode.NO_FIT
        return min(ps.mode() for ps in self.pod_sets)

    def message(self) -> str:
        parts: list[str] = []
        for ps in self.pod_sets:
            if ps.mode() is not Mode.FIT:
                if ps.error is not None:
                    return ps.message()
                parts.append(ps.message())
        return "; ".join(parts)

    def no_fit_reason(self) -> str:
        """``mostSevereReason``: the most severe NoFit reason over the NoFit pod sets; "" when none resolves.

        An empty reason is real: the scheduler then writes no granular reason and the workload
        controller decides the condition (``lifecycle.set_pending``)."""
        best = ""
        if not self.resolve_no_fit_reason:
            return best
        for ps in self.pod_sets:
            if ps.mode() is Mode.NO_FIT:
                r = ps.no_fit_reason()
                if NO_FIT_SEVERITY[r] > NO_FIT_SEVERITY[best]:
                    best = r
        return best

    def flavors_considered(self) -> str:
        """``FormatFlavorAssignmentAttemptsForEvents`` text appended to the QuotaReserved event."""
        rendered: list[str] = []
        for ps in self.pod_sets:
            items: list[str] = []
            for a in sorted(ps.attempts, key=lambda x: x.flavor):
                if a.mode.preemption_mode is PreemptionMode.FIT and a.mode.borrowing_level == 0:
                    continue
                if a.preemption_simulated:
                    mode = f"preemptionMode={a.mode.preemption_mode.label()}"
                else:
                    mode = a.mode.preemption_mode.public().label()
                parts = [mode]
                if a.mode.borrowing_level:
                    parts.append(f"borrow={a.mode.borrowing_level}")
                parts.extend(a.reasons)
                items.append(f"{a.flavor}({';'.join(parts)})")
            if items:
                rendered.append(f"{ps.name}: {', '.join(items)}")
        return " | ".join(rendered)

    def preempt_frs(self) -> set[FlavorResource]:
        """FRs whose chosen flavor needs preemption (``frsNeedPreemption``)."""
        return {
            (fa.name, res)
            for ps in self.pod_sets
            for res, fa in ps.flavors.items()
            if fa.mode is Mode.PREEMPT
        }

    def total_requests_for(self, wl: WorkloadInfo) -> dict[FlavorResource, int]:
        """The workload's requests on the assigned flavors (upstream ``Assignment.TotalRequestsFor``):
        each pod set's requests (``wl.TotalRequests``) scaled to its assigned count
        (``PodSetResources.ScaledTo``: unscaled when the pod set has no pods or the count is the
        same), zero requests left out (they may have no flavor); a resource without a flavor is
        skipped (upstream's ``IgnoreUndeclaredResources`` path). Pods are not a request here: the
        flavor assigner adds them to the assignment's requests, not to the workload's."""
        out: dict[FlavorResource, int] = {}
        for i, ps in enumerate(wl.pod_sets):
            assigned = self.pod_sets[i]
            count = assigned.count
            requests = (
                ps.total
                if ps.count == 0 or ps.count == count
                else {res: sat_mul(v, count) for res, v in ps.per_pod.items()}
            )
            for res, v in requests.items():
                if v == 0:
                    continue
                fa = assigned.flavors.get(res)
                if fa is None:
                    continue
                fr = (fa.name, res)
                out[fr] = sat_add(out.get(fr, 0), v)
        return out

    def to_admission(self, cluster_queue: str) -> Admission:
        """``status.admission`` for this assignment (``Assignment.ToAPI``)."""
        psas: list[PodSetAssignment] = []
        for ps in self.pod_sets:
            flavors = {res: fa.name for res, fa in sorted(ps.flavors.items())}
            usage: dict[str, str | int | float] = {
                res: resource_quantity_string(res, ps.requests.get(res, 0)) for res in flavors
            }
            psas.append(PodSetAssignment(name=ps.name, flavors=flavors, resource_usage=usage, count=ps.count))
        return Admission(cluster_queue=cluster_queue, pod_set_assignments=psas)
