"""Kueue feature gates (upstream ``pkg/features/kube_features.go``).

A :class:`FeatureGates` value is an immutable mapping ``gate name -> enabled`` built from the
defaults of this Kueue version plus overrides from the ``--feature-gates`` flag or the
Configuration's ``featureGates`` map. Parsing follows Kubernetes ``component-base/featuregate``:
comma-separated ``Name=bool`` pairs, Go ``strconv.ParseBool`` spellings, unknown names rejected.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

DEFAULT_FEATURE_GATES: Mapping[str, bool] = MappingProxyType(
    {
        # gates that change the controllers' observable behaviour
        "PartialAdmission": True,
        "FlavorFungibility": True,
        "VisibilityOnDemand": True,
        "DisableWaitForPodsReady": False,
        "PrioritySortingWithinCohort": True,
        "MultiKueue": True,
        "TopologyAwareScheduling": True,
        "LocalQueueMetrics": True,
        "AdmissionFairSharing": True,
        "ElasticJobsViaWorkloadSlices": True,
        "ReclaimablePods": True,
        "WorkloadRequestUseMergePatch": False,
        "AdmissionGatedBy": True,
        "PriorityBoost": False,
        "ShortWorkloadNames": False,
        "FinishOrphanedWorkloads": True,
        "RejectUpdatesToCQWithInvalidOnFlavors": False,
        "ConcurrentAdmission": False,
        "QuotaCheckStrategy": True,
        "WorkloadIdentifierAnnotations": True,
        "WorkloadPriorityClassDefaulting": True,
        "CleanupProvisioningRequestsOnEviction": True,
        "UnadmittedWorkloadsObservability": True,
        "UnadmittedWorkloadsExplicitStatus": False,
        "SchedulingEquivalenceHashing": True,
        "WorkloadValidateResourcesAreNonNegative": True,
        "WorkloadValidationForPodSetMetadata": True,
        "TASValidateWorkloadSliceSize": True,
        "MultiKueueIncrementalDispatcherRespectConfigOrder": True,
        "MetricsForCohorts": True,
        "MetricForWorkloadCreationLatency": True,
        "CustomMetricLabels": False,
        "AssignQueueLabelsForPods": True,
        "ManagedJobsNamespaceSelectorAlwaysRespected": True,
        "KueueDRAIntegration": True,
        # gates the scheduling core reads (not already listed above)
        "FairSharingPreemptWithinNominal": True,
        "FairSharingPrioritizeNonBorrowing": True,
        "FlavorFungibilityPreserveScanProgress": True,
        "RecomputeAssignmentUponPreemptionTargetsOverlap": True,
        "VectorizedResourceRequests": True,
        "SkipReassignmentForPodOwnedWorkloads": True,
        "PrioritizePreemptorWorkloads": False,
        "MultiKueueOrchestratedPreemption": False,
        # gates of what pykueue does not implement (Topology Aware Scheduling, MultiKueue, DRA,
        # integrations other than batch/v1 Job, the webhook server's TLS options): accepted with
        # upstream's defaults so that Kueue's flags and configurations load; the features
        # themselves are flagged where a manifest asks for them (``pykueue.api.unmodelled``)
        "TASProfileMixed": True,
        "TASFailedNodeReplacement": True,
        "ElasticJobsViaWorkloadSlicesWithTAS": False,
        "TASFailedNodeReplacementFailFast": True,
        "TASReplaceNodeOnPodTermination": True,
        "TASReplaceNodeDueToNotReadyOverFixedTime": False,
        "TASBalancedPlacement": False,
        "TASAssignmentsEncodingByHostnamePrefix": True,
        "KueueDRAIntegrationExtendedResource": True,
        "KueueDRARejectWorkloadsWhenDRADisabled": True,
        "KueueDRAIntegrationPartitionableDevices": True,
        "KueueDRAIntegrationConsumableCapacity": False,
        "MultiKueueAdaptersForCustomJobs": True,
        "MultiKueueKubeConfigPathValidation": True,
        "MultiKueueClusterProfile": False,
        "FailureRecoveryPolicy": False,
        "TLSOptions": True,
        "RemoveFinalizersWithStrictPatch": True,
        "TASReplaceNodeOnNodeTaints": True,
        "TASMultiLayerTopology": True,
        "SparkApplicationIntegration": False,
        "FastQuotaReleaseInPodIntegration": False,
        "MultiKueueIncrementalDispatcherConfig": True,
        "TASRespectNodeAffinityPreferred": False,
        "MultiKueueManagerQuotaAutomation": False,
        "TASHandleOverlappingFlavors": True,
        "TASRecomputeAssignmentWithinSchedulingCycle": True,
        "DeferRayServiceFinalizationForRedisCleanup": True,
        "TASCacheNodeMatchResults": True,
        "TASCachingRemainingResources": True,
        "TASCacheTopologyTree": True,
        "SchedulerLibraryIntegration": False,
        "LWSImmutableGroupSize": True,
        "SkipAncestorCheckForDeletedWorkloads": True,
        "MultiKueueRemoteSpecSync": True,
        "PodIntegrationValidateGroupOwner": True,
        "ValidateRayAndSparkJobUpdates": True,
    }
)
"""Defaults of every known gate at this Kueue version."""

LOCKED_FEATURE_GATES: Mapping[str, bool] = MappingProxyType(
    {"ManagedJobsNamespaceSelectorAlwaysRespected": True, "TLSOptions": True}
)
"""GA gates locked to their default; setting them to the other value is an error."""

GATE_DEPENDENCIES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"UnadmittedWorkloadsExplicitStatus": ("UnadmittedWorkloadsObservability",)}
)
"""Gates that have no effect unless all the listed gates are enabled too."""

_TRUE_SPELLINGS = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE_SPELLINGS = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class FeatureGateError(ValueError):
    """An unknown gate, a malformed ``--feature-gates`` value or a locked gate being changed."""


def parse_go_bool(text: str) -> bool:
    """Go ``strconv.ParseBool``: ``1 t T TRUE true True`` / ``0 f F FALSE false False``."""
    if text in _TRUE_SPELLINGS:
        return True
    if text in _FALSE_SPELLINGS:
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


class FeatureGates(Mapping[str, bool]):
    """An immutable set of feature-gate values (defaults merged with overrides)."""

    __slots__ = ("_values",)

    def __init__(self, overrides: Mapping[str, bool] | None = None) -> None:
        values = dict(DEFAULT_FEATURE_GATES)
        for name, value in (overrides or {}).items():
            _check_settable(name, value)
            values[name] = value
        self._values: Mapping[str, bool] = MappingProxyType(values)

    @classmethod
    def parse(cls, spec: str) -> FeatureGates:
        """Build gates from a ``--feature-gates`` value such as ``"A=true,B=false"``."""
        return cls(parse_feature_gates_flag(spec))

    def enabled(self, name: str) -> bool:
        """Whether gate ``name`` is on; unknown names raise :class:`FeatureGateError`."""
        try:
            return self._values[name]
        except KeyError:
            raise FeatureGateError(f"feature {name!r} is not registered in FeatureGate") from None

    def with_overrides(self, overrides: Mapping[str, bool]) -> FeatureGates:
        """A copy with ``overrides`` applied on top of the current values."""
        merged = {k: v for k, v in self._values.items() if v != DEFAULT_FEATURE_GATES[k]}
        merged.update(overrides)
        return FeatureGates(merged)

    def overrides(self) -> dict[str, bool]:
        """The gates whose value differs from the default."""
        return {k: v for k, v in self._values.items() if v != DEFAULT_FEATURE_GATES[k]}

    def dependency_errors(self) -> list[str]:
        """Messages for enabled gates whose prerequisite gates are disabled."""
        errors: list[str] = []
        for gate, deps in GATE_DEPENDENCIES.items():
            if not self._values[gate]:
                continue
            errors.extend(f"{gate} requires {dep} to be enabled" for dep in deps if not self._values[dep])
        return errors

    def __getitem__(self, name: str) -> bool:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"FeatureGates({self.overrides()!r})"


def parse_feature_gates_flag(spec: str) -> dict[str, bool]:
    """Parse a ``--feature-gates`` flag value into ``name -> bool`` (not merged with defaults)."""
    result: dict[str, bool] = {}
    for item in spec.split(","):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {name}")
        raw = raw.strip()
        if name not in DEFAULT_FEATURE_GATES:
            raise FeatureGateError(f"unrecognized feature gate: {name}")
        try:
            value = parse_go_bool(raw)
        except ValueError as err:
            raise FeatureGateError(f"invalid value of {name}={raw}, err: {err}") from None
        _check_settable(name, value)
        result[name] = value
    return result


def _check_settable(name: str, value: bool) -> None:
    if name not in DEFAULT_FEATURE_GATES:
        raise FeatureGateError(f"unrecognized feature gate: {name}")
    locked = LOCKED_FEATURE_GATES.get(name)
    if locked is not None and value != locked:
        state = "true" if locked else "false"
        raise FeatureGateError(
            f"cannot set feature gate {name} to {str(value).lower()}, feature is locked to {state}"
        )


DEFAULT_GATES = FeatureGates()
"""The default gate values, for callers that do not thread a configuration through."""
