"""A head being processed in a scheduling cycle, and what the cycle did (upstream ``pkg/scheduler``'s
``entry`` and ``entryStatus``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from pykueue.core.cache.cache import ClusterQueueState
from pykueue.core.decision import Decision
from pykueue.core.queue import REQUEUE_REASON_GENERIC
from pykueue.core.scheduler.flavorassigner.assignment import Assignment, Mode
from pykueue.core.scheduler.preemption.common import Target
from pykueue.core.workload.info import WorkloadInfo

# Entry statuses (upstream ``scheduler.go`` ``entryStatus``).
NOT_NOMINATED = ""
NOMINATED = "nominated"
SKIPPED = "skipped"
PREEMPTION_GATED = "preemptionGated"
ASSUMED = "assumed"


class Entry(msgspec.Struct):
    """A head being processed in this cycle (a msgspec Struct, built in C: one per head)."""

    info: WorkloadInfo
    cq: ClusterQueueState | None
    assignment: Assignment | None = None
    targets: list[Target] = msgspec.field(default_factory=list)
    status: str = NOT_NOMINATED
    message: str = ""
    requeue_reason: str = REQUEUE_REASON_GENERIC
    quota_reserved_reason: str = ""
    skip_status_update: bool = False
    deferred_fit: bool = False
    overlap_recomputation: str = ""
    """The result of the assignment's recomputation for preemption targets that overlap those of an
    earlier entry (upstream ``updateAssignmentIfNeeded``'s ``PreemptionTargetRecomputationResult``:
    ``new_targets``, ``deferred_fit`` or ``skipped``); empty when none ran."""

    @property
    def mode(self) -> Mode:
        return self.assignment.representative_mode() if self.assignment else Mode.NO_FIT


@dataclass
class CycleResult:
    """What one cycle did, for drivers and ``--explain``."""

    cycle: int
    heads: int = 0
    admitted: list[str] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    """Every decision of the cycle, in the order the driver applied them."""
