"""Settings the scheduling core reads: feature gates and the scheduling-relevant configuration."""

from __future__ import annotations

from dataclasses import dataclass, field

from pykueue.api.config import AdmissionFairSharingConfig, KueueConfig
from pykueue.api.feature_gates import DEFAULT_GATES, FeatureGates
from pykueue.api.podspec import ResourceTransformation

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"


def DefaultGates(overrides: dict[str, bool] | None = None) -> FeatureGates:
    """Feature gates at their defaults, with optional overrides."""
    return DEFAULT_GATES.with_overrides(overrides or {})


@dataclass(frozen=True)
class SchedulerOptions:
    """Everything the core needs from the Kueue Configuration and the feature gates."""

    gates: FeatureGates = field(default_factory=lambda: DEFAULT_GATES)
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
    admission_fair_sharing: AdmissionFairSharingConfig | None = field(default=None, compare=False, hash=False)
    """The Configuration's ``admissionFairSharing`` when the ``AdmissionFairSharing`` gate allows it."""

    _gate_values: dict[str, bool] = field(init=False, repr=False, compare=False, hash=False)
    assigner_gates: tuple[bool, bool, bool, bool, bool] = field(
        init=False, repr=False, compare=False, hash=False
    )
    """What the flavor assigner reads of these options for every head it assigns (``FlavorAssigner``):
    the gates ``RecomputeAssignmentUponPreemptionTargetsOverlap``, ``FlavorFungibility``,
    ``UnadmittedWorkloadsObservability`` and ``VectorizedResourceRequests``, then
    ``ignore_undeclared_resources`` under ``QuotaCheckStrategy``. Computed once: the options are
    immutable."""

    gate_admission_gated_by: bool = field(init=False, repr=False, compare=False, hash=False)
    """``AdmissionGatedBy``, and the four below their gates: each is read at least once per scheduling
    decision (queue rules, status transitions, requeue), so an attribute instead of a ``gate`` call."""
    gate_unadmitted_observability: bool = field(init=False, repr=False, compare=False, hash=False)
    """``UnadmittedWorkloadsObservability``."""
    gate_preserve_scan_progress: bool = field(init=False, repr=False, compare=False, hash=False)
    """``FlavorFungibilityPreserveScanProgress``."""
    gate_partial_admission: bool = field(init=False, repr=False, compare=False, hash=False)
    """``PartialAdmission``."""
    gate_equivalence_hashing: bool = field(init=False, repr=False, compare=False, hash=False)
    """``SchedulingEquivalenceHashing``."""
    gate_concurrent_admission: bool = field(init=False, repr=False, compare=False, hash=False)
    """``ConcurrentAdmission`` (read by every flavor assignment and workload view)."""

    def __post_init__(self) -> None:
        # ``gate`` is asked a dozen times per scheduling decision; the gates are immutable.
        object.__setattr__(self, "_gate_values", {name: self.gates[name] for name in self.gates})
        gate = self.gate
        object.__setattr__(
            self,
            "assigner_gates",
            (
                gate("RecomputeAssignmentUponPreemptionTargetsOverlap"),
                gate("FlavorFungibility"),
                gate("UnadmittedWorkloadsObservability"),
                gate("VectorizedResourceRequests"),
                self.ignore_undeclared_resources and gate("QuotaCheckStrategy"),
            ),
        )
        for attr, name in (
            ("gate_admission_gated_by", "AdmissionGatedBy"),
            ("gate_unadmitted_observability", "UnadmittedWorkloadsObservability"),
            ("gate_preserve_scan_progress", "FlavorFungibilityPreserveScanProgress"),
            ("gate_partial_admission", "PartialAdmission"),
            ("gate_equivalence_hashing", "SchedulingEquivalenceHashing"),
            ("gate_concurrent_admission", "ConcurrentAdmission"),
        ):
            object.__setattr__(self, attr, gate(name))

    def gate(self, name: str) -> bool:
        value = self._gate_values.get(name)
        return self.gates.enabled(name) if value is None else value  # unknown names raise there


def options_from_config(cfg: KueueConfig) -> SchedulerOptions:
    """The core's view of a loaded Kueue Configuration."""
    conf = cfg.configuration
    gates = cfg.feature_gates
    fs = cfg.fair_sharing
    wfpr = cfg.wait_for_pods_ready
    rs = wfpr.requeuing_strategy if wfpr is not None else None
    res = conf.resources
    transformations: tuple[ResourceTransformation, ...] = ()
    if res is not None:
        transformations = tuple(
            ResourceTransformation(
                input=t.input,
                strategy=t.strategy or "Retain",
                outputs=dict(t.outputs),
                multiply_by=t.multiply_by or None,
            )
            for t in res.transformations
        )
    return SchedulerOptions(
        gates=gates,
        fair_sharing=fs is not None,
        fair_sharing_strategies=tuple(fs.preemption_strategies)
        if fs is not None and fs.preemption_strategies
        else (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE),
        exclude_resource_prefixes=tuple(res.exclude_resource_prefixes) if res is not None else (),
        transformations=transformations,
        ignore_undeclared_resources=bool(
            res is not None
            and res.quota_check_strategy == "IgnoreUndeclared"
            and gates.enabled("QuotaCheckStrategy")
        ),
        wait_for_pods_ready=wfpr is not None,
        block_admission=bool(wfpr is not None and wfpr.block_admission),
        requeue_timestamp_eviction=(rs is None or rs.timestamp in (None, "Eviction")),
        backoff_base_seconds=(rs.backoff_base_seconds if rs and rs.backoff_base_seconds is not None else 60),
        backoff_max_seconds=(rs.backoff_max_seconds if rs and rs.backoff_max_seconds is not None else 3600),
        backoff_limit_count=rs.backoff_limit_count if rs else None,
        admission_fair_sharing=cfg.admission_fair_sharing,
    )
