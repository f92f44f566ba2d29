"""Settings the scheduling core reads: feature gates and the scheduling-relevant configuration."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from pykueue.api.podspec import ResourceTransformation

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"

# Defaults of the gates the core consults (scheduling reference §13).
CORE_GATE_DEFAULTS: Mapping[str, bool] = {
    "PartialAdmission": True,
    "FlavorFungibility": True,
    "PrioritySortingWithinCohort": True,
    "FairSharingPreemptWithinNominal": True,
    "FairSharingPrioritizeNonBorrowing": True,
    "ReclaimablePods": True,
    "SchedulingEquivalenceHashing": True,
    "AdmissionFairSharing": True,
    "AdmissionGatedBy": True,
    "QuotaCheckStrategy": True,
    "UnadmittedWorkloadsObservability": True,
    "UnadmittedWorkloadsExplicitStatus": False,
    "WorkloadPriorityClassDefaulting": True,
    "FlavorFungibilityPreserveScanProgress": True,
    "RecomputeAssignmentUponPreemptionTargetsOverlap": True,
    "VectorizedResourceRequests": True,
    "SkipReassignmentForPodOwnedWorkloads": True,
    "PrioritizePreemptorWorkloads": False,
    "PriorityBoost": False,
    "ConcurrentAdmission": False,
    "MultiKueueOrchestratedPreemption": False,
    "DisableWaitForPodsReady": False,
}


class GateReader(Protocol):
    def enabled(self, name: str) -> bool: ...


class DefaultGates:
    """Feature gates at their defaults, with optional overrides."""

    def __init__(self, overrides: Mapping[str, bool] | None = None) -> None:
        self._values = dict(CORE_GATE_DEFAULTS)
        if overrides:
            self._values.update(overrides)

    def enabled(self, name: str) -> bool:
        return self._values.get(name, False)


@dataclass(frozen=True)
class SchedulerOptions:
    """Everything the core needs from the Kueue Configuration and the feature gates."""

    gates: GateReader = field(default_factory=DefaultGates)
    fair_sharing: bool = False
    fair_sharing_strategies: tuple[str, ...] = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)
    exclude_resource_prefixes: tuple[str, ...] = ()
    transformations: tuple[ResourceTransformation, ...] = ()
    ignore_undeclared_resources: bool = False
    wait_for_pods_ready: bool = True
    block_admission: bool = False
    requeue_timestamp_eviction: bool = True
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 3600
    backoff_limit_count: int | None = None

    def gate(self, name: str) -> bool:
        return self.gates.enabled(name)
