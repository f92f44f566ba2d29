"""Kueue API kinds in their ``kueue.x-k8s.io/v1beta2`` shape (the internal/storage model).

v1beta1 manifests are converted to this shape on read and back on write (see ``conversion``).
Quantities stay as written (``str | int | float``) so objects round-trip unchanged; the core turns
them into integer amounts through ``quantity``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from pykueue.api.meta import Condition, LabelSelector, ObjectMeta

GROUP = "kueue.x-k8s.io"
V1BETA1 = f"{GROUP}/v1beta1"
V1BETA2 = f"{GROUP}/v1beta2"

QuantityValue = str | int | float


class _Spec(msgspec.Struct, rename="camel", omit_defaults=True):
    pass


# --- ResourceFlavor ---------------------------------------------------------------------------------


class Taint(_Spec):
    key: str
    effect: str
    value: str = ""
    time_added: datetime | None = None


class Toleration(_Spec):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class ResourceFlavorSpec(_Spec):
    node_labels: dict[str, str] = {}
    node_taints: list[Taint] = []
    tolerations: list[Toleration] = []
    topology_name: str = ""


class ResourceFlavor(_Spec):
    metadata: ObjectMeta
    spec: ResourceFlavorSpec = msgspec.field(default_factory=ResourceFlavorSpec)
    api_version: str = V1BETA2
    kind: str = "ResourceFlavor"


# --- quotas shared by ClusterQueue and Cohort -------------------------------------------------------


class ResourceQuota(_Spec):
    name: str
    nominal_quota: QuantityValue
    borrowing_limit: QuantityValue | None = None
    lending_limit: QuantityValue | None = None


class FlavorQuotas(_Spec):
    name: str
    resources: list[ResourceQuota]


class ResourceGroup(_Spec):
    covered_resources: list[str]
    flavors: list[FlavorQuotas]


class FairSharing(_Spec):
    weight: QuantityValue | None = None


class FairSharingStatus(_Spec):
    weighted_share: int = 0


# --- ClusterQueue -----------------------------------------------------------------------------------

STRICT_FIFO = "StrictFIFO"
BEST_EFFORT_FIFO = "BestEffortFIFO"

STOP_NONE = "None"
STOP_HOLD = "Hold"
STOP_HOLD_AND_DRAIN = "HoldAndDrain"

MAY_STOP_SEARCH = "MayStopSearch"
TRY_NEXT_FLAVOR = "TryNextFlavor"
BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"

PREEMPT_NEVER = "Never"
PREEMPT_LOWER_PRIORITY = "LowerPriority"
PREEMPT_LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
PREEMPT_ANY = "Any"


class FlavorFungibility(_Spec):
    when_can_borrow: str = ""
    when_can_preempt: str = ""
    preference: str = ""


class BorrowWithinCohort(_Spec):
    policy: str = ""
    max_priority_threshold: int | None = None


class ClusterQueuePreemption(_Spec):
    reclaim_within_cohort: str = ""
    within_cluster_queue: str = ""
    borrow_within_cohort: BorrowWithinCohort | None = None


class AdmissionCheckStrategyRule(_Spec):
    name: str
    on_flavors: list[str] = []


class AdmissionChecksStrategy(_Spec):
    admission_checks: list[AdmissionCheckStrategyRule] = []


class AdmissionScope(_Spec):
    admission_mode: str = ""


class ClusterQueueSpec(_Spec):
    resource_groups: list[ResourceGroup] = []
    cohort_name: str = ""
    queueing_strategy: str = ""
    namespace_selector: LabelSelector | None = None
    flavor_fungibility: FlavorFungibility | None = None
    preemption: ClusterQueuePreemption | None = None
    admission_checks_strategy: AdmissionChecksStrategy | None = None
    stop_policy: str = ""
    fair_sharing: FairSharing | None = None
    admission_scope: AdmissionScope | None = None
    concurrent_admission_policy: dict[str, Any] | None = None


class ResourceUsage(_Spec):
    name: str
    total: QuantityValue = "0"
    borrowed: QuantityValue | None = None


class FlavorUsage(_Spec):
    name: str
    resources: list[ResourceUsage] = []


class ClusterQueueStatus(_Spec):
    conditions: list[Condition] = []
    flavors_reservation: list[FlavorUsage] = []
    flavors_usage: list[FlavorUsage] = []
    pending_workloads: int = 0
    reserving_workloads: int = 0
    admitted_workloads: int = 0
    fair_sharing: FairSharingStatus | None = None


class ClusterQueue(_Spec):
    metadata: ObjectMeta
    spec: ClusterQueueSpec = msgspec.field(default_factory=ClusterQueueSpec)
    status: ClusterQueueStatus | None = None
    api_version: str = V1BETA2
    kind: str = "ClusterQueue"


# --- Cohort -----------------------------------------------------------------------------------------


class CohortSpec(_Spec):
    parent_name: str = ""
    resource_groups: list[ResourceGroup] = []
    fair_sharing: FairSharing | None = None


class CohortStatus(_Spec):
    fair_sharing: FairSharingStatus | None = None


class Cohort(_Spec):
    metadata: ObjectMeta
    spec: CohortSpec = msgspec.field(default_factory=CohortSpec)
    status: CohortStatus | None = None
    api_version: str = V1BETA2
    kind: str = "Cohort"


# --- LocalQueue -------------------------------------------------------------------------------------


class LocalQueueSpec(_Spec):
    cluster_queue: str = ""
    stop_policy: str = ""
    fair_sharing: FairSharing | None = None


class LocalQueueResourceUsage(_Spec):
    """Upstream's ``LocalQueueResourceUsage``: a LocalQueue reports no borrowed amount."""

    name: str
    total: QuantityValue = "0"


class LocalQueueFlavorUsage(_Spec):
    name: str
    resources: list[LocalQueueResourceUsage] = []


class LocalQueueStatus(_Spec):
    conditions: list[Condition] = []
    pending_workloads: int = 0
    reserving_workloads: int = 0
    admitted_workloads: int = 0
    flavors_reservation: list[LocalQueueFlavorUsage] = []
    flavors_usage: list[LocalQueueFlavorUsage] = []
    fair_sharing: dict[str, Any] | None = None


class LocalQueue(_Spec):
    metadata: ObjectMeta
    spec: LocalQueueSpec = msgspec.field(default_factory=LocalQueueSpec)
    status: LocalQueueStatus | None = None
    api_version: str = V1BETA2
    kind: str = "LocalQueue"


# --- Workload ---------------------------------------------------------------------------------------


class PodTemplateSpec(_Spec):
    """A pod template; ``spec`` is the raw PodSpec (the scheduler reads it through ``podspec``)."""

    metadata: dict[str, Any] = {}
    spec: dict[str, Any] = {}


class PodSet(_Spec):
    name: str = "main"
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    count: int = 1
    min_count: int | None = None
    topology_request: dict[str, Any] | None = None


class PriorityClassRef(_Spec):
    group: str
    kind: str
    name: str


class PreemptionGate(_Spec):
    name: str


class WorkloadSpec(_Spec):
    pod_sets: list[PodSet] = []
    queue_name: str = ""
    priority_class_ref: PriorityClassRef | None = None
    priority: int | None = None
    active: bool | None = None
    maximum_execution_time_seconds: int | None = None
    preemption_gates: list[PreemptionGate] = []


class PodSetAssignment(_Spec):
    name: str = "main"
    flavors: dict[str, str] = {}
    resource_usage: dict[str, QuantityValue] = {}
    count: int | None = None
    topology_assignment: dict[str, Any] | None = None
    delayed_topology_request: str | None = None


class Admission(_Spec):
    cluster_queue: str = ""  # optional in v1beta2 (v1beta1's CRD requires it)
    pod_set_assignments: list[PodSetAssignment] = []


class RequeueState(_Spec):
    count: int | None = None
    requeue_at: datetime | None = None


class ReclaimablePod(_Spec):
    name: str
    count: int


class PodSetUpdate(_Spec):
    name: str
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    node_selector: dict[str, str] = {}
    tolerations: list[Toleration] = []


CHECK_PENDING = "Pending"
CHECK_READY = "Ready"
CHECK_RETRY = "Retry"
CHECK_REJECTED = "Rejected"


class AdmissionCheckState(_Spec):
    name: str
    state: str
    last_transition_time: datetime
    message: str = ""
    requeue_after_seconds: int | None = None
    retry_count: int | None = None
    pod_set_updates: list[PodSetUpdate] = []


class PodSetRequest(_Spec):
    name: str
    resources: dict[str, QuantityValue] = {}


class WorkloadSchedulingStatsEviction(_Spec):
    reason: str
    count: int
    underlying_cause: str = ""


class SchedulingStats(_Spec):
    evictions: list[WorkloadSchedulingStatsEviction] = []


class WorkloadStatus(_Spec):
    conditions: list[Condition] = []
    admission: Admission | None = None
    requeue_state: RequeueState | None = None
    reclaimable_pods: list[ReclaimablePod] = []
    admission_checks: list[AdmissionCheckState] = []
    resource_requests: list[PodSetRequest] = []
    accumulated_past_execution_time_seconds: int | None = None
    scheduling_stats: SchedulingStats | None = None
    nominated_cluster_names: list[str] = []
    cluster_name: str | None = None
    unhealthy_nodes: list[dict[str, Any]] = []
    preemption_gates: list[dict[str, Any]] = []


class Workload(_Spec):
    metadata: ObjectMeta
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)
    status: WorkloadStatus = msgspec.field(default_factory=WorkloadStatus)
    api_version: str = V1BETA2
    kind: str = "Workload"


# --- WorkloadPriorityClass, AdmissionCheck, ProvisioningRequestConfig ------------------------------


class WorkloadPriorityClass(_Spec):
    metadata: ObjectMeta
    value: int
    description: str = ""
    api_version: str = V1BETA2
    kind: str = "WorkloadPriorityClass"


class AdmissionCheckParametersReference(_Spec):
    api_group: str
    kind: str
    name: str


class AdmissionCheckSpec(_Spec):
    controller_name: str
    parameters: AdmissionCheckParametersReference | None = None


class AdmissionCheckStatus(_Spec):
    conditions: list[Condition] = []


class AdmissionCheck(_Spec):
    metadata: ObjectMeta
    spec: AdmissionCheckSpec
    status: AdmissionCheckStatus | None = None
    api_version: str = V1BETA2
    kind: str = "AdmissionCheck"


class ProvisioningRequestRetryStrategy(_Spec):
    backoff_limit_count: int | None = None
    backoff_base_seconds: int | None = None
    backoff_max_seconds: int | None = None


class ProvisioningRequestPodSetUpdatesNodeSelector(_Spec):
    key: str
    value_from_provisioning_class_detail: str


class ProvisioningRequestPodSetUpdates(_Spec):
    node_selector: list[ProvisioningRequestPodSetUpdatesNodeSelector] = []


class ProvisioningRequestConfigSpec(_Spec):
    provisioning_class_name: str
    parameters: dict[str, str] = {}
    managed_resources: list[str] = []
    retry_strategy: ProvisioningRequestRetryStrategy | None = None
    pod_set_updates: ProvisioningRequestPodSetUpdates | None = None
    pod_set_merge_policy: str | None = None


class ProvisioningRequestConfig(_Spec):
    metadata: ObjectMeta
    spec: ProvisioningRequestConfigSpec
    api_version: str = V1BETA2
    kind: str = "ProvisioningRequestConfig"


# --- core kinds the scheduler reads -----------------------------------------------------------------


class Namespace(_Spec):
    metadata: ObjectMeta
    spec: dict[str, Any] = {}
    status: dict[str, Any] = {}
    api_version: str = "v1"
    kind: str = "Namespace"


class PriorityClass(_Spec):
    metadata: ObjectMeta
    value: int
    global_default: bool = False
    description: str = ""
    preemption_policy: str = ""
    api_version: str = "scheduling.k8s.io/v1"
    kind: str = "PriorityClass"


class LimitRange(_Spec):
    """core/v1 LimitRange, read by Kueue's resource adjustments and checks (``spec.limits`` raw)."""

    metadata: ObjectMeta
    spec: dict[str, Any] = {}
    api_version: str = "v1"
    kind: str = "LimitRange"


class RuntimeClass(_Spec):
    """node.k8s.io/v1 RuntimeClass, whose ``overhead.podFixed`` Kueue adds to each pod's requests."""

    metadata: ObjectMeta
    handler: str = ""
    overhead: dict[str, Any] | None = None
    scheduling: dict[str, Any] | None = None
    api_version: str = "node.k8s.io/v1"
    kind: str = "RuntimeClass"


KueueObject = (
    ResourceFlavor
    | ClusterQueue
    | Cohort
    | LocalQueue
    | Workload
    | WorkloadPriorityClass
    | AdmissionCheck
    | ProvisioningRequestConfig
    | Namespace
    | PriorityClass
    | LimitRange
    | RuntimeClass
)

KIND_TYPES: dict[str, type[Any]] = {
    "ResourceFlavor": ResourceFlavor,
    "ClusterQueue": ClusterQueue,
    "Cohort": Cohort,
    "LocalQueue": LocalQueue,
    "Workload": Workload,
    "WorkloadPriorityClass": WorkloadPriorityClass,
    "AdmissionCheck": AdmissionCheck,
    "ProvisioningRequestConfig": ProvisioningRequestConfig,
    "Namespace": Namespace,
    "PriorityClass": PriorityClass,
    "LimitRange": LimitRange,
    "RuntimeClass": RuntimeClass,
}

NAMESPACED_KINDS = frozenset({"LocalQueue", "Workload"})

# Well-known labels and annotations.
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
ADMISSION_GATED_BY_ANNOTATION = "kueue.x-k8s.io/admission-gated-by"
PRIORITY_BOOST_ANNOTATION = "kueue.x-k8s.io/priority-boost"
WORKLOAD_ALLOWED_RESOURCE_FLAVOR_ANNOTATION = "kueue.x-k8s.io/workload-allowed-resource-flavors"
"""The flavors a Workload may be assigned, comma-separated (``ConcurrentAdmission``; upstream
``pkg/controller/constants`` ``WorkloadAllowedResourceFlavorAnnotation``)."""
RESOURCE_IN_USE_FINALIZER = "kueue.x-k8s.io/resource-in-use"
