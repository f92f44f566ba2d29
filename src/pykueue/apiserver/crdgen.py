"""Kueue CRD schemas and manifests.

The v1beta2 schemas are *derived* from the typed model (:mod:`pykueue.api.kueue`, msgspec
Structs): every Struct becomes an object schema with its camelCase fields, ``required`` for
fields without a default, ``str | int | float`` quantities become the CRD int-or-string form
(``anyOf`` integer/string + the quantity ``pattern`` + ``x-kubernetes-int-or-string``), datetimes
``format: date-time``. An overlay (:data:`_FIELDS`, :data:`_STRUCTS`) adds what the Go markers
declare upstream: descriptions, enums, defaults, patterns and lengths, item counts, list types
and map keys, CEL rules. Fields the model keeps as raw dicts (pod templates, TAS requests,
topology assignments, ...) get hand-written schemas; the pod template is the built-in
``core/v1`` PodTemplateSpec inlined (structural form, patch metadata removed). The kinds pykueue
does not model (MultiKueueConfig, MultiKueueCluster, Topology) are written by hand.

v1beta1 schemas are produced from the v1beta2 ones by applying the renames of
:mod:`pykueue.api.conversion` (``cohortName``→``cohort``, ``priorityClassRef``→
``priorityClassName``/``priorityClassSource``, ``flavorsUsage``→``flavorUsage``,
``accumulatedPastExecutionTimeSeconds``→``accumulatedPastExexcutionTimeSeconds``, MultiKueueCluster
``clusterSource`` flattening, ...) and re-adding the v1beta1-only fields (``spec.admissionChecks``,
``retryDelayMinutes`` with default 15, the deprecated fungibility values, ``pendingWorkloadsStatus``,
the ``domains`` topology-assignment form).

``python -m pykueue.apiserver.crdgen [--out config/crd]`` writes one
``apiextensions.k8s.io/v1`` CustomResourceDefinition per Kueue kind.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import msgspec
import yaml

from pykueue.api import celrules
from pykueue.api import kueue as k
from pykueue.api import validation as v
from pykueue.api.conversion import (
    CORE_KIND_VERSIONS,
    POD_PRIORITY_SOURCE,
    RETRY_DELAY_MINUTES_DEFAULT,
    WPC_SOURCE,
)
from pykueue.api.manifests import KubeDumper
from pykueue.api.meta import Condition, LabelSelector
from pykueue.apiserver.builtin import core, meta
from pykueue.apiserver.builtin.schema import (
    LIST_TYPE,
    PATCH_MERGE_KEY,
    PATCH_STRATEGY,
    VALIDATIONS,
    Schema,
    _build,
    arr,
    boolean,
    date_time,
    free_object,
    inline,
    int_or_string,
    integer,
    map_of,
    obj,
    str_map,
    string,
)

if TYPE_CHECKING:
    from pykueue.apiserver.resources import ResourceInfo

GROUP = k.GROUP
V1BETA1 = "v1beta1"
V1BETA2 = "v1beta2"
DEFAULT_OUT = os.path.join("config", "crd")

# --- overlay helpers ----------------------------------------------------------------------------------


def F(description: str = "", **options: Any) -> Schema:
    """An overlay fragment (same option names as the schema constructors)."""
    return _build({}, description, options)


def _ref_name(
    description: str, *, max_length: int = 253, pattern: str = v.DNS_SUBDOMAIN_PATTERN, **options: Any
) -> Schema:
    return F(description, max_length=max_length, pattern=pattern, **options)


def _quantity(description: str = "", **options: Any) -> Schema:
    return int_or_string(description, pattern=v.QUANTITY_PATTERN, **options)


def _conditions(description: str) -> Schema:
    return arr(
        meta.condition_schema(),
        description,
        list_type="map",
        map_keys=("type",),
        max_items=16,
    )


def _toleration_rules() -> list[dict[str, str]]:
    return [
        {
            "message": "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
            "rule": "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)",
        },
        {
            "message": "effect must be 'NoExecute' when 'tolerationSeconds' is set",
            "rule": "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)",
        },
        {
            "message": "supported toleration values: 'Equal'(default), 'Exists'",
            "rule": "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])",
        },
        {
            "message": "a value must be empty when 'operator' is 'Exists'",
            "rule": "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)",
        },
        {
            "message": "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
            "rule": "self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
        },
    ]


_STOP_POLICY = F(
    "stopPolicy - if set to a value different from None, the queue is inactive: Hold stops admitting "
    "new workloads, HoldAndDrain also evicts the admitted ones.",
    enum=v.STOP_POLICIES,
    default=k.STOP_NONE,
)
_FAIR_SHARING_DOC = (
    "fairSharing defines the properties of the object when participating in FairSharing. The values "
    "are only relevant if FairSharing is enabled in the Kueue configuration."
)

# --- hand-written schemas for fields the model keeps as raw dicts ---------------------------------


def _pod_template_schema() -> Schema:
    """The built-in PodTemplateSpec, structural, with the embedded-object-meta subset."""
    overrides = meta.crd_overrides()
    overrides[meta.OBJECT_META] = obj(
        {
            "annotations": str_map(),
            "finalizers": arr({"type": "string"}),
            "labels": str_map(),
            "name": string(),
            "namespace": string(),
        }
    )
    schema = inline({"$ref": "#/components/schemas/" + core.POD_TEMPLATE_SPEC}, overrides=overrides)
    return _crd_clean(schema)


def _crd_clean(schema: Schema) -> Schema:
    """Drop strategic-merge metadata, object defaults and enums, as controller-gen output of the
    core types has none of them: it reads ``+default`` markers only for scalars, and the core
    types' ``+enum`` comments become enums in kube-openapi's built-in OpenAPI, never in a CRD."""
    out: Schema = {}
    for name, value in schema.items():
        if name in (PATCH_STRATEGY, PATCH_MERGE_KEY, "enum") or (name == "default" and isinstance(value, dict)):
            continue
        if name == "properties":
            out[name] = {p: _crd_clean(s) for p, s in value.items()}
        elif name in ("items", "additionalProperties") and isinstance(value, dict):
            out[name] = _crd_clean(value)
        else:
            out[name] = copy.deepcopy(value)
    return out


def _topology_request_schema(*, v1beta1: bool = False) -> Schema:
    # upstream's v1beta1 type carries none of the length bounds the v1beta2 one has
    bound: Callable[[int], dict[str, int]] = (lambda n: {}) if v1beta1 else (lambda n: {"max_length": n})
    props: dict[str, Schema] = {
        "required": string("required indicates the topology level required by the PodSet.", **bound(63)),
        "preferred": string("preferred indicates the topology level preferred by the PodSet.", **bound(63)),
        "unconstrained": boolean(
            "unconstrained indicates that Kueue has the freedom to schedule the PodSet within the entire available capacity."
        ),
        "podIndexLabel": string("podIndexLabel indicates the name of the label indexing the pods.", **bound(317)),
        "subGroupIndexLabel": string(
            "subGroupIndexLabel indicates the name of the label indexing the instances of replicated Jobs.",
            **bound(317),
        ),
        "subGroupCount": integer(
            "subGroupCount indicates the count of replicated Jobs (groups) within a PodSet.",
            **({} if v1beta1 else {"minimum": 0}),  # type: ignore[arg-type]
        ),
        "podSetGroupName": string(
            "podSetGroupName indicates the name of the group of PodSets to which this PodSet belongs.",
            **bound(256),
        ),
        "podSetSliceRequiredTopology": string(
            "podSetSliceRequiredTopology indicates the topology level required by the PodSet slice.", **bound(63)
        ),
        "podSetSliceSize": integer(
            "podSetSliceSize indicates the size of a subgroup of pods in a PodSet.", minimum=1
        ),
    }
    if not v1beta1:
        constraint = obj(
            {
                "size": integer("size is the number of pods in a slice.", minimum=1),
                "topology": string("topology is the topology level required by the slice.", min_length=1, **bound(63)),
            },
            required_fields=("size", "topology"),
        )
        props["podsetSliceRequiredTopologyConstraints"] = arr(
            constraint,
            "podsetSliceRequiredTopologyConstraints lists additional slice constraints.",
            max_items=3,
            list_type="atomic",
        )
    return obj(props, "topologyRequest defines the topology request for the PodSet.")


def _topology_assignment_schema() -> Schema:
    # The bounds are upstream's: its CEL rules below them only fit kube-apiserver's cost budget
    # because of them (a CRD without them is refused).
    values = obj(
        {
            "universal": string("universal - the single value shared by every domain.", max_length=63),
            "individual": obj(
                {
                    "prefix": string("prefix common to all values.", max_length=63),
                    "suffix": string("suffix common to all values.", max_length=63),
                    "roots": arr(
                        {"type": "string", "maxLength": 63},
                        "roots - the distinct middle parts of the values.",
                        min_items=1,
                        max_items=100000,
                        list_type="atomic",
                    ),
                },
                "individual - values per domain, compressed by a common prefix and suffix.",
                required_fields=("roots",),
            ),
        }
    )
    slice_ = obj(
        {
            "domainCount": integer("domainCount is the number of domains in the slice.", minimum=1),
            "valuesPerLevel": arr(
                values,
                "valuesPerLevel lists the values of every topology level.",
                min_items=1,
                max_items=16,
                list_type="atomic",
            ),
            "podCounts": obj(
                {
                    "universal": integer("universal - the pod count shared by every domain.", minimum=1),
                    "individual": arr(
                        integer(minimum=1),
                        "individual - pod counts per domain.",
                        min_items=1,
                        max_items=100000,
                        list_type="atomic",
                    ),
                },
                "podCounts is the number of pods assigned to each domain.",
            ),
        },
        required_fields=("domainCount", "valuesPerLevel", "podCounts"),
    )
    return obj(
        {
            "levels": arr(
                {"type": "string", "maxLength": 317},
                "levels is an ordered list of keys denoting the levels of the assigned topology.",
                min_items=1,
                max_items=16,
                list_type="atomic",
            ),
            "slices": arr(
                slice_,
                "slices is a list of compressed topology domain assignments.",
                max_items=1000,
                list_type="atomic",
            ),
        },
        "topologyAssignment indicates the topology assignment divided into topology domains.",
        required_fields=("levels", "slices"),
    )


def _topology_assignment_v1beta1() -> Schema:
    domain = obj(
        {
            "values": arr(
                {"type": "string"},
                "values is an ordered list of node selector values.",
                min_items=1,
                max_items=16,
                list_type="atomic",
            ),
            "count": integer(
                "count indicates the number of Pods to be scheduled in the topology domain.", minimum=1
            ),
        },
        required_fields=("count", "values"),
    )
    return obj(
        {
            "levels": arr(
                {"type": "string"},
                "levels is an ordered list of keys denoting the levels of the assigned topology.",
                min_items=1,
                max_items=16,
                list_type="atomic",
            ),
            "domains": arr(domain, "domains is a list of topology assignments split by topology domains."),
        },
        "topologyAssignment indicates the topology assignment divided into topology domains.",
        required_fields=("domains", "levels"),
    )


def _admission_fair_sharing_status() -> Schema:
    return obj(
        {
            "consumedResources": map_of(
                _quantity(),
                "ConsumedResources represents the aggregated usage of resources over time.",
            ),
            "lastUpdate": date_time("LastUpdate is the time when share and consumed resources were updated."),
        },
        "admissionFairSharingStatus represents the current state of Admission Fair Sharing.",
        required_fields=("consumedResources", "lastUpdate"),
    )


def _lq_fair_sharing_status() -> Schema:
    return obj(
        {
            "weightedShare": integer(
                "WeightedShare represents the maximum of the ratios of usage above nominal quota.",
                fmt="int64",
            ),
            "admissionFairSharingStatus": _admission_fair_sharing_status(),
        },
        "FairSharing contains the information about the current status of fair sharing.",
        required_fields=("weightedShare",),
    )


def _named_items(description: str, max_items: int, name_length: int = 253) -> Schema:
    return arr(
        obj({"name": string("name of the item.", max_length=name_length)}, required_fields=("name",)),
        description,
        max_items=max_items,
        list_type="map",
        map_keys=("name",),
    )


def _preemption_gate_states() -> Schema:
    state = obj(
        {
            "name": string("name identifies the preemption gate.", max_length=63, min_length=1),
            "position": string(
                "position indicates whether the gate is Open or Closed.", enum=("Closed", "Open")
            ),
            "lastTransitionTime": date_time("lastTransitionTime is the last time the position changed."),
        },
        required_fields=("lastTransitionTime", "name", "position"),
    )
    return arr(
        state,
        "preemptionGates is the status of the preemption gates of the workload.",
        max_items=8,
        list_type="map",
        map_keys=("name",),
    )


# --- the overlay ------------------------------------------------------------------------------------

_STRUCTS: dict[type, Schema] = {
    # required by upstream's markers although the model gives them a default (the encoder always
    # writes those of status types: ``_ALWAYS_SERIALISED`` in pykueue.api.conversion)
    k.AdmissionScope: {"required": ["admissionMode"]},
    k.AdmissionChecksStrategy: {"required": ["admissionChecks"]},
    k.FlavorUsage: {"required": ["name", "resources"]},
    k.LocalQueueFlavorUsage: {"required": ["name", "resources"]},
    k.FairSharingStatus: {"required": ["weightedShare"]},
    k.WorkloadSchedulingStatsEviction: {"required": ["count", "reason", "underlyingCause"]},
    k.ResourceFlavor: F("ResourceFlavor is the Schema for the resourceflavors API."),
    k.ResourceFlavorSpec: F(
        "ResourceFlavorSpec defines the desired state of the ResourceFlavor",
        validations=[
            {
                "message": "at least one nodeLabel is required when topology is set",
                "rule": "!has(self.topologyName) || self.nodeLabels.size() >= 1",
            },
            {
                "message": "topologyName is immutable when topologyName is set",
                "rule": "!has(oldSelf.topologyName) || self.topologyName == oldSelf.topologyName",
            },
        ],
    ),
    k.Taint: F(
        "The node this Taint is attached to has the effect on any pod that does not tolerate the Taint."
    ),
    k.Toleration: F(
        "The pod this Toleration is attached to tolerates any taint that matches the triple <key,value,effect>."
    ),
    k.ClusterQueue: F("ClusterQueue is the Schema for the clusterQueue API."),
    k.ClusterQueueSpec: F(
        "ClusterQueueSpec defines the desired state of ClusterQueue",
        validations=[
            {
                "message": v.BORROWING_LIMIT_CEL_MSG,
                "rule": "!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, "
                "rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
            }
        ],
    ),
    k.ClusterQueueStatus: F("ClusterQueueStatus defines the observed state of ClusterQueue"),
    k.ResourceGroup: F(
        "ResourceGroup defines one or more flavors for a set of resources (coveredResources).",
        validations=[
            {
                "message": v.FLAVORS_RESOURCES_MSG,
                "rule": "self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
            }
        ],
    ),
    k.FlavorQuotas: F("FlavorQuotas holds the quotas of one flavor for the covered resources."),
    k.ResourceQuota: F("ResourceQuota holds the quota of one resource in one flavor."),
    k.FlavorFungibility: F(
        "FlavorFungibility determines whether a workload should try the next flavor before borrowing or preempting in the current flavor.",
        validations=[
            {
                "message": v.PREFERENCE_CEL_MSG,
                "rule": "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == 'TryNextFlavor')",
            }
        ],
    ),
    k.ClusterQueuePreemption: F(
        "ClusterQueuePreemption contains policies to preempt Workloads from this ClusterQueue or the ClusterQueue's cohort.",
        validations=[
            {
                "message": v.PREEMPTION_RULE_MSG,
                "rule": "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) && self.borrowWithinCohort.policy != 'Never')",
            }
        ],
    ),
    k.Cohort: F("Cohort defines the Cohorts API: a hierarchy of ClusterQueues and Cohorts sharing quota."),
    k.CohortSpec: F("CohortSpec defines the desired state of Cohort"),
    k.CohortStatus: F("CohortStatus defines the observed state of Cohort."),
    k.LocalQueue: F("LocalQueue is the Schema for the localQueues API"),
    k.LocalQueueSpec: F("LocalQueueSpec defines the desired state of LocalQueue"),
    k.LocalQueueStatus: F("LocalQueueStatus defines the observed state of LocalQueue"),
    k.Workload: F("Workload is the Schema for the workloads API"),
    k.WorkloadSpec: F(
        "WorkloadSpec defines the desired state of Workload",
        validations=[
            {
                "message": "priority should not be nil when priorityClassRef is set",
                "rule": "!has(self.priorityClassRef) || has(self.priority)",
            }
        ],
    ),
    k.WorkloadStatus: F(
        "WorkloadStatus defines the observed state of Workload",
        validations=[
            {
                "message": "clusterName is immutable once set",
                "rule": "!has(oldSelf.clusterName) || oldSelf.clusterName == self.clusterName",
            },
            {
                "message": "clusterName and nominatedClusterNames are mutually exclusive",
                "rule": "!has(self.clusterName) || !has(self.nominatedClusterNames) || size(self.nominatedClusterNames) == 0",
            },
        ],
    ),
    # CEL rules: pykueue.api.celrules (set on every node by _set_cel_rules)
    k.PodSet: {
        **F("PodSet is a set of homogeneous pods described by a pod template and a count."),
        "required": ["template"],
    },
    k.PriorityClassRef: F("PriorityClassRef references a WorkloadPriorityClass or a PriorityClass."),
    # v1beta2's clusterQueue is optional, as the model's (v1beta1 requires it: _wl_v1beta1)
    k.Admission: F("Admission contains the ClusterQueue and flavor assignments of an admitted Workload."),
    k.PodSetAssignment: F("PodSetAssignment holds the flavors and resource usage assigned to one podSet."),
    k.AdmissionCheckState: {
        **F("AdmissionCheckState is the state of one admission check of a Workload."),
        "required": ["lastTransitionTime", "message", "name", "state"],
    },
    k.PodSetUpdate: F("PodSetUpdate contains a list of pod set modifications suggested by AdmissionChecks."),
    k.WorkloadPriorityClass: F("WorkloadPriorityClass is the Schema for the workloadPriorityClass API"),
    k.AdmissionCheck: F("AdmissionCheck is the Schema for the admissionchecks API"),
    k.AdmissionCheckSpec: F("AdmissionCheckSpec defines the desired state of AdmissionCheck"),
    k.AdmissionCheckStatus: F("AdmissionCheckStatus defines the observed state of AdmissionCheck"),
    k.AdmissionCheckParametersReference: F(
        "AdmissionCheckParametersReference references the parameters object of an AdmissionCheck."
    ),
    k.ProvisioningRequestConfig: F(
        "ProvisioningRequestConfig is the Schema for the provisioningrequestconfig API"
    ),
    k.ProvisioningRequestConfigSpec: F(
        "ProvisioningRequestConfigSpec defines the desired state of ProvisioningRequestConfig"
    ),
    k.ProvisioningRequestRetryStrategy: F(
        "ProvisioningRequestRetryStrategy configures the retries of failed ProvisioningRequests."
    ),
}

_FIELDS: dict[tuple[type, str], Schema] = {
    # ResourceFlavor
    (k.ResourceFlavor, "spec"): F("spec is the specification of the ResourceFlavor."),
    (k.ResourceFlavorSpec, "nodeLabels"): F(
        "nodeLabels are labels that associate the ResourceFlavor with Nodes that have the same labels.",
        max_properties=8,
        map_type="atomic",
    ),
    (k.ResourceFlavorSpec, "nodeTaints"): F(
        "nodeTaints are taints that the nodes associated with this ResourceFlavor have.",
        max_items=8,
        list_type="atomic",
        validations=[
            {
                "message": "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
                "rule": "self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
            }
        ],
    ),
    (k.ResourceFlavorSpec, "tolerations"): F(
        "tolerations are extra tolerations that will be added to the pods admitted in the quota associated with this resource flavor.",
        max_items=8,
        list_type="atomic",
        validations=_toleration_rules(),
    ),
    (k.ResourceFlavorSpec, "topologyName"): _ref_name(
        "topologyName indicates topology for the TAS ResourceFlavor."
    ),
    (k.Taint, "key"): F("Required. The taint key to be applied to a node."),
    (k.Taint, "value"): F("The taint value corresponding to the taint key."),
    (k.Taint, "effect"): F("Required. The effect of the taint on pods that do not tolerate the taint."),
    (k.Taint, "timeAdded"): F("TimeAdded represents the time at which the taint was added."),
    (k.Toleration, "key"): F(
        "Key is the taint key that the toleration applies to. Empty means match all taint keys."
    ),
    (k.Toleration, "operator"): F(
        "Operator represents a key's relationship to the value: Exists or Equal (default)."
    ),
    (k.Toleration, "value"): F("Value is the taint value the toleration matches to."),
    (k.Toleration, "effect"): F(
        "Effect indicates the taint effect to match. Empty means match all taint effects."
    ),
    (k.Toleration, "tolerationSeconds"): F(
        "TolerationSeconds represents the period of time the toleration tolerates the taint.", fmt="int64"
    ),
    # quotas
    (k.ResourceQuota, "name"): F("name of this resource."),
    (k.ResourceQuota, "nominalQuota"): F(
        "nominalQuota is the quantity of this resource that is available for Workloads admitted by this "
        "ClusterQueue at a point in time. It must be non-negative."
    ),
    (k.ResourceQuota, "borrowingLimit"): F(
        "borrowingLimit is the maximum amount of quota for the [flavor, resource] combination that this "
        "ClusterQueue is allowed to borrow from the unused quota of other ClusterQueues in the same cohort. "
        "If null, there is no borrowing limit. It must be null if the ClusterQueue has no cohort."
    ),
    (k.ResourceQuota, "lendingLimit"): F(
        "lendingLimit is the maximum amount of unused quota for the [flavor, resource] combination that "
        "this ClusterQueue can lend to other ClusterQueues in the same cohort. If null, all of the unused "
        "quota can be lent. It must be null if the ClusterQueue has no cohort."
    ),
    (k.FlavorQuotas, "name"): _ref_name(
        "name of this flavor. The name should match the .metadata.name of a ResourceFlavor."
    ),
    (k.FlavorQuotas, "resources"): F(
        "resources is the list of quotas for this flavor per resource.",
        min_items=1,
        max_items=64,
        list_type="map",
        map_keys=("name",),
    ),
    (k.ResourceGroup, "coveredResources"): F(
        "coveredResources is the list of resources covered by the flavors in this group.",
        min_items=1,
        max_items=64,
        list_type="atomic",
    ),
    (k.ResourceGroup, "flavors"): F(
        "flavors is the list of flavors that provide the resources of this group. "
        "Typically, different flavors represent different hardware models.",
        min_items=1,
        max_items=64,
        list_type="map",
        map_keys=("name",),
    ),
    (k.FairSharing, "weight"): F(
        "weight gives a comparative advantage to this ClusterQueue or Cohort when competing "
        "for unused resources in the Cohort. When not 0, weight must be greater than 10^-9.",
        default=1,
    ),
    (k.FairSharingStatus, "weightedShare"): F(
        "WeightedShare represents the maximum of the ratios of usage above nominal quota "
        "to the lendable resources in the Cohort, among all the resources.",
        fmt="int64",
    ),
    # ClusterQueue
    (k.ClusterQueue, "spec"): F("spec is the specification of the ClusterQueue."),
    (k.ClusterQueue, "status"): F("status is the status of the ClusterQueue."),
    (k.ClusterQueueSpec, "resourceGroups"): F(
        "resourceGroups describes groups of resources. Each resource group defines "
        "the list of resources and a list of flavors that provide quotas for these resources.",
        max_items=16,
        list_type="atomic",
    ),
    (k.ClusterQueueSpec, "cohortName"): _ref_name(
        "cohortName that this ClusterQueue belongs to. CQs that belong to the same cohort can borrow unused "
        "resources from each other. If empty, this ClusterQueue cannot borrow from any other ClusterQueue and vice versa."
    ),
    (k.ClusterQueueSpec, "queueingStrategy"): F(
        "queueingStrategy indicates the queueing strategy of the workloads across the queues in this ClusterQueue: "
        "StrictFIFO or BestEffortFIFO (default).",
        enum=v.QUEUEING_STRATEGIES,
        default=k.BEST_EFFORT_FIFO,
    ),
    (k.ClusterQueueSpec, "namespaceSelector"): F(
        "namespaceSelector defines which namespaces are allowed to submit workloads to this clusterQueue. Defaults "
        "to null which is a nothing selector (no namespaces eligible). If set to an empty selector `{}`, then all "
        "namespaces are eligible."
    ),
    (k.ClusterQueueSpec, "flavorFungibility"): F(
        "flavorFungibility defines whether a workload should try the next flavor "
        "before borrowing or preempting in the flavor being evaluated.",
        default={},
    ),
    (k.ClusterQueueSpec, "preemption"): F("preemption defines the preemption policies.", default={}),
    (k.ClusterQueueSpec, "admissionChecksStrategy"): F(
        "admissionChecksStrategy defines a list of strategies to determine "
        "which ResourceFlavors require AdmissionChecks."
    ),
    (k.ClusterQueueSpec, "stopPolicy"): _STOP_POLICY,
    (k.ClusterQueueSpec, "fairSharing"): F(_FAIR_SHARING_DOC),
    (k.ClusterQueueSpec, "admissionScope"): F(
        "admissionScope indicates whether ClusterQueue uses the Admission Fair Sharing"
    ),
    (k.ClusterQueueSpec, "concurrentAdmissionPolicy"): {
        "$schema": obj(
            {
                "migration": obj(
                    {
                        "constraints": obj(
                            {
                                "lastAcceptableFlavorName": string(
                                    "lastAcceptableFlavorName defines the last acceptable flavor a Workload can "
                                    "migrate to (only with the TryPreferredFlavors mode).",
                                    max_length=253,
                                    pattern=v.DNS_SUBDOMAIN_PATTERN,
                                )
                            },
                            "constraints defines the constraints of Workload's migration.",
                        ),
                        "mode": string(
                            "mode defines the mode of Workload's migration: TryPreferredFlavors (default) or "
                            "RetainFirstAdmission.",
                            enum=("TryPreferredFlavors", "RetainFirstAdmission"),
                            max_length=253,
                        ),
                    },
                    "migration defines the constraints on Workload's migration.",
                    required_fields=("mode",),
                )
            },
            "concurrentAdmissionPolicy defines the configuration for ConcurrentAdmission feature (alpha).",
            required_fields=("migration",),
        )
    },
    (k.FlavorFungibility, "whenCanBorrow"): F(
        "whenCanBorrow determines whether a workload should try the next flavor before borrowing in the current "
        "flavor: MayStopSearch (default) or TryNextFlavor.",
        enum=v.FUNGIBILITY_POLICIES,
        default=k.MAY_STOP_SEARCH,
    ),
    (k.FlavorFungibility, "whenCanPreempt"): F(
        "whenCanPreempt determines whether a workload should try the next flavor before preempting in the current "
        "flavor: MayStopSearch or TryNextFlavor (default).",
        enum=v.FUNGIBILITY_POLICIES,
        default=k.TRY_NEXT_FLAVOR,
    ),
    (k.FlavorFungibility, "preference"): F(
        "preference guides the choice of the flavor when both borrowing and preemption are possible.",
        enum=v.FUNGIBILITY_PREFERENCES,
    ),
    (k.BorrowWithinCohort, "policy"): F(
        "policy determines the policy for preemption to reclaim quota within cohort while "
        "borrowing: Never (default) or LowerPriority.",
        enum=v.BORROW_WITHIN_COHORT_POLICIES,
        default=k.PREEMPT_NEVER,
    ),
    (k.BorrowWithinCohort, "maxPriorityThreshold"): F(
        "maxPriorityThreshold restricts the workloads that may be preempted by "
        "a borrowing workload to those with priority up to the threshold."
    ),
    (k.ClusterQueuePreemption, "reclaimWithinCohort"): F(
        "reclaimWithinCohort determines whether a pending Workload can preempt Workloads from other ClusterQueues "
        "in the cohort that are using more than their nominal quota: Never (default), LowerPriority or Any.",
        enum=v.RECLAIM_POLICIES,
        default=k.PREEMPT_NEVER,
    ),
    (k.ClusterQueuePreemption, "withinClusterQueue"): F(
        "withinClusterQueue determines whether a pending Workload that doesn't fit within the nominal quota for its "
        "ClusterQueue can preempt active Workloads in the ClusterQueue: Never (default), LowerPriority or "
        "LowerOrNewerEqualPriority.",
        enum=v.WITHIN_CQ_POLICIES,
        default=k.PREEMPT_NEVER,
    ),
    (k.ClusterQueuePreemption, "borrowWithinCohort"): F(
        "borrowWithinCohort determines whether a pending Workload can preempt "
        "Workloads from other ClusterQueues in the cohort if the workload requires borrowing.",
        default={},
    ),
    (k.AdmissionCheckStrategyRule, "name"): F("name is an AdmissionCheck's name.", max_length=316, min_length=1),
    (k.AdmissionCheckStrategyRule, "onFlavors"): {
        **F(
            "onFlavors is a list of ResourceFlavors' names that this AdmissionCheck should run for. If empty, the "
            "AdmissionCheck will run for all workloads submitted to the ClusterQueue.",
            max_items=64,
            list_type="set",
        ),
        "$items": F(max_length=253, pattern=v.DNS_SUBDOMAIN_PATTERN),
    },
    (k.AdmissionChecksStrategy, "admissionChecks"): F(
        "admissionChecks is a list of strategies for AdmissionChecks",
        min_items=1,
        max_items=64,
        list_type="map",
        map_keys=("name",),
    ),
    (k.AdmissionScope, "admissionMode"): F(
        "admissionMode indicates which mode for AdmissionFairSharing should be used.", enum=v.ADMISSION_MODES
    ),
    (k.ResourceUsage, "name"): F("name of the resource"),
    (k.ResourceUsage, "total"): F(
        "total is the total quantity of used quota, including the amount borrowed from the cohort."
    ),
    (k.ResourceUsage, "borrowed"): F("Borrowed is quantity of quota that is borrowed from the cohort."),
    (k.FlavorUsage, "name"): _ref_name("name of the flavor."),
    (k.FlavorUsage, "resources"): F(
        "resources lists the quota usage for the resources in this flavor.",
        max_items=64,
        list_type="map",
        map_keys=("name",),
    ),
    (k.ClusterQueueStatus, "conditions"): {
        "$schema": _conditions(
            "conditions hold the latest available observations of the ClusterQueue current state."
        )
    },
    (k.ClusterQueueStatus, "flavorsReservation"): F(
        "flavorsReservation are the reserved quotas, by flavor, currently in use by the workloads assigned to this ClusterQueue.",
        max_items=64,
        list_type="map",
        map_keys=("name",),
    ),
    (k.ClusterQueueStatus, "flavorsUsage"): F(
        "flavorsUsage are the used quotas, by flavor, currently in use by the workloads admitted in this ClusterQueue.",
        max_items=64,
        list_type="map",
        map_keys=("name",),
    ),
    (k.ClusterQueueStatus, "pendingWorkloads"): F(
        "pendingWorkloads is the number of workloads currently waiting to be admitted to this clusterQueue."
    ),
    (k.ClusterQueueStatus, "reservingWorkloads"): F(
        "reservingWorkloads is the number of workloads currently reserving quota in this clusterQueue."
    ),
    (k.ClusterQueueStatus, "admittedWorkloads"): F(
        "admittedWorkloads is the number of workloads currently admitted to this "
        "clusterQueue and haven't finished yet."
    ),
    (k.ClusterQueueStatus, "fairSharing"): F(
        "fairSharing contains the current state for this ClusterQueue when participating in Fair Sharing."
    ),
    # Cohort
    (k.Cohort, "spec"): F("spec is the specification of the Cohort."),
    (k.Cohort, "status"): F("status is the status of the Cohort."),
    (k.CohortSpec, "parentName"): _ref_name(
        "parentName references this Cohort's parent, if any. It may reference a Cohort that does not exist."
    ),
    (k.CohortSpec, "resourceGroups"): F(
        "resourceGroups describes groupings of Resources and Flavors. Each ResourceGroup "
        "defines a list of Resources and a list of Flavors which provide quotas for these Resources.",
        max_items=16,
        list_type="atomic",
    ),
    (k.CohortSpec, "fairSharing"): F(_FAIR_SHARING_DOC),
    # LocalQueue
    (k.LocalQueue, "spec"): F("spec is the specification of the LocalQueue."),
    (k.LocalQueue, "status"): F("status is the status of the LocalQueue."),
    (k.LocalQueueSpec, "clusterQueue"): _ref_name(
        "clusterQueue is a reference to a clusterQueue that backs this localQueue.",
        validations=[{"message": v.FIELD_IMMUTABLE_MSG, "rule": "self == oldSelf"}],
    ),
    (k.LocalQueueSpec, "stopPolicy"): _STOP_POLICY,
    (k.LocalQueueSpec, "fairSharing"): F(_FAIR_SHARING_DOC),
    (k.LocalQueueFlavorUsage, "name"): _ref_name("name of the flavor."),
    (k.LocalQueueResourceUsage, "name"): F("name of the resource."),
    (k.LocalQueueResourceUsage, "total"): F("total is the total quantity of used quota."),
    (k.LocalQueueFlavorUsage, "resources"): F(
        "resources lists the quota usage for the resources in this flavor.",
        max_items=64,
        list_type="map",
        map_keys=("name",),
    ),
    (k.LocalQueueStatus, "conditions"): {
        "$schema": _conditions(
            "conditions hold the latest available observations of the LocalQueue current state."
        )
    },
    (k.LocalQueueStatus, "pendingWorkloads"): F(
        "pendingWorkloads is the number of Workloads in the LocalQueue not yet admitted to a ClusterQueue"
    ),
    (k.LocalQueueStatus, "reservingWorkloads"): F(
        "reservingWorkloads is the number of workloads in this LocalQueue reserving quota in a ClusterQueue."
    ),
    (k.LocalQueueStatus, "admittedWorkloads"): F(
        "admittedWorkloads is the number of workloads in this LocalQueue admitted "
        "to a ClusterQueue and that haven't finished yet."
    ),
    (k.LocalQueueStatus, "flavorsReservation"): F(
        "flavorsReservation are the reserved quotas, by flavor currently in use by "
        "the workloads assigned to this LocalQueue.",
        max_items=64,
        list_type="map",
        map_keys=("name",),
    ),
    (k.LocalQueueStatus, "flavorsUsage"): F(
        "flavorsUsage are the used quotas, by flavor currently in use by the workloads "
        "assigned to this LocalQueue.",
        max_items=64,
        list_type="map",
        map_keys=("name",),
    ),
    (k.LocalQueueStatus, "fairSharing"): {"$schema": _lq_fair_sharing_status()},
    # Workload
    (k.Workload, "spec"): F("spec is the specification of the Workload."),
    (k.Workload, "status"): F("status is the status of the Workload."),
    (k.WorkloadSpec, "podSets"): F(
        "podSets is a list of sets of homogeneous pods, each described by a Pod spec and a count. "
        "There must be at least one element and at most 18. podSets cannot be changed.",
        min_items=1,
        max_items=v.MAX_POD_SETS,
        list_type="map",
        map_keys=("name",),
    ),
    (k.WorkloadSpec, "queueName"): _ref_name(
        "queueName is the name of the LocalQueue the Workload is associated with. "
        "queueName cannot be changed while .status.admission is not null."
    ),
    (k.WorkloadSpec, "priorityClassRef"): F(
        "priorityClassRef references a PriorityClass or WorkloadPriorityClass object "
        "that defines the workload's priority."
    ),
    (k.WorkloadSpec, "priority"): F(
        "Priority determines the order of access to the resources managed by the ClusterQueue "
        "where the workload is queued. The higher the value, the higher the priority."
    ),
    (k.WorkloadSpec, "active"): F(
        "Active determines if a workload can be admitted into a queue. Changing active from true "
        "to false will evict any running workloads. Defaults to true",
        default=True,
    ),
    (k.WorkloadSpec, "maximumExecutionTimeSeconds"): F(
        "maximumExecutionTimeSeconds if provided, determines the maximum time, "
        "in seconds, the workload can be admitted before it's automatically deactivated.",
        minimum=1,
    ),
    (k.WorkloadSpec, "preemptionGates"): F(
        "preemptionGates block the preemptions this workload would issue until they are opened.",
        max_items=8,
        list_type="map",
        map_keys=("name",),
    ),
    (k.PreemptionGate, "name"): F("name identifies the preemption gate.", max_length=63, min_length=1),
    (k.PodSet, "name"): F(
        "name is the PodSet name.", max_length=63, pattern=v.DNS_LABEL_PATTERN, default="main"
    ),
    (k.PodSet, "template"): {
        "$schema": _pod_template_schema(),
        "description": "template is the Pod template. The only allowed fields in template.metadata "
        "are labels and annotations.",
    },
    (k.PodSet, "count"): F("count is the number of pods for the spec.", minimum=0, default=1),
    (k.PodSet, "minCount"): F(
        "minCount is the minimum number of pods for the spec acceptable if the workload supports "
        "partial admission. Only one podSet within the workload can use this.",
        minimum=1,
    ),
    (k.PodSet, "topologyRequest"): {"$schema": _topology_request_schema()},
    (k.PriorityClassRef, "group"): F(
        "group is the API group of the referenced priority class.", enum=v.PRIORITY_GROUPS
    ),
    (k.PriorityClassRef, "kind"): F(
        "kind is the kind of the referenced priority class.", enum=v.PRIORITY_KINDS
    ),
    (k.PriorityClassRef, "name"): _ref_name(
        "name is the name of the referenced priority class.", min_length=1
    ),
    (k.PodSetAssignment, "name"): F(
        "Name is the name of the podSet. It should match one of the names in .spec.podSets.",
        max_length=63,
        pattern=v.DNS_LABEL_PATTERN,
        default="main",
    ),
    (k.PodSetAssignment, "flavors"): {
        **F("Flavors are the flavors assigned to the workload for each resource."),
        "$values": F(max_length=253, pattern=v.DNS_SUBDOMAIN_PATTERN),
    },
    (k.PodSetAssignment, "resourceUsage"): F(
        "resourceUsage keeps track of the total resources all the pods in the podset need to run."
    ),
    (k.PodSetAssignment, "count"): F(
        "count is the number of pods taken into account at admission time.", minimum=0
    ),
    (k.PodSetAssignment, "topologyAssignment"): {"$schema": _topology_assignment_schema()},
    (k.PodSetAssignment, "delayedTopologyRequest"): F(
        "delayedTopologyRequest indicates the topology assignment is delayed.",
        enum=("Pending", "Ready"),
        max_length=7,
    ),
    (k.Admission, "clusterQueue"): _ref_name(
        "clusterQueue is the name of the ClusterQueue that admitted this workload."
    ),
    (k.Admission, "podSetAssignments"): F(
        "PodSetAssignments hold the admission results for each of the .spec.podSets entries.",
        max_items=v.MAX_POD_SETS,
        list_type="map",
        map_keys=("name",),
    ),
    (k.RequeueState, "count"): F(
        "count records the number of times a workload has been re-queued.", minimum=0
    ),
    (k.RequeueState, "requeueAt"): F("requeueAt records the time when a workload will be re-queued."),
    (k.ReclaimablePod, "name"): F("name is the PodSet name.", max_length=63, pattern=v.DNS_LABEL_PATTERN),
    (k.ReclaimablePod, "count"): F(
        "count is the number of pods for which the requested resources are no longer needed.", minimum=0
    ),
    (k.PodSetUpdate, "name"): F(
        "Name of the PodSet to modify. Should match to one of the Workload's PodSets.",
        max_length=63,
        pattern=v.DNS_LABEL_PATTERN,
    ),
    (k.PodSetUpdate, "tolerations"): F(max_items=8, list_type="atomic", validations=_toleration_rules()),
    (k.AdmissionCheckState, "name"): F("name identifies the admission check.", max_length=316, min_length=1),
    (k.AdmissionCheckState, "state"): F(
        "state of the admissionCheck, one of Pending, Ready, Retry, Rejected", enum=v.CHECK_STATES
    ),
    (k.AdmissionCheckState, "lastTransitionTime"): F(
        "lastTransitionTime is the last time the condition transitioned from one status to another."
    ),
    (k.AdmissionCheckState, "message"): F(
        "message is a human readable message indicating details about the transition.", max_length=32768
    ),
    (k.AdmissionCheckState, "requeueAfterSeconds"): F(
        "requeueAfterSeconds indicates how long to wait before the workload is requeued.", minimum=0
    ),
    (k.AdmissionCheckState, "retryCount"): F(
        "retryCount counts the number of retries for this admission check.", minimum=0
    ),
    (k.AdmissionCheckState, "podSetUpdates"): F(max_items=v.MAX_POD_SETS, list_type="atomic"),
    (k.PodSetRequest, "name"): F(
        "name is the name of the podSet. It should match one of the names in .spec.podSets.",
        max_length=63,
        pattern=v.DNS_LABEL_PATTERN,
    ),
    (k.PodSetRequest, "resources"): F(
        "resources is the total resources all the pods in the podset need to run."
    ),
    (k.WorkloadSchedulingStatsEviction, "reason"): F(
        "reason specifies the programmatic identifier for the eviction cause.", max_length=316
    ),
    (k.WorkloadSchedulingStatsEviction, "underlyingCause"): F(
        "underlyingCause specifies a finer-grained explanation.", max_length=316
    ),
    (k.WorkloadSchedulingStatsEviction, "count"): F(
        "count tracks the number of evictions for this reason and underlying cause.", minimum=0
    ),
    (k.SchedulingStats, "evictions"): F(
        "evictions tracks eviction statistics by reason and underlyingCause.",
        max_items=256,
        list_type="map",
        map_keys=("reason", "underlyingCause"),
    ),
    (k.WorkloadStatus, "conditions"): {
        "$schema": _conditions(
            "conditions hold the latest available observations of the Workload current state."
        )
    },
    (k.WorkloadStatus, "admission"): F(
        "admission holds the parameters of the admission of the workload by a ClusterQueue."
    ),
    (k.WorkloadStatus, "requeueState"): F(
        "requeueState holds the re-queue state when a workload meets Eviction with PodsReadyTimeout reason."
    ),
    (k.WorkloadStatus, "reclaimablePods"): F(
        "reclaimablePods keeps track of the number pods within a podset for which the "
        "resource reservation is no longer needed.",
        max_items=v.MAX_POD_SETS,
        list_type="map",
        map_keys=("name",),
    ),
    (k.WorkloadStatus, "admissionChecks"): F(
        "admissionChecks list all the admission checks required by the workload and the current status",
        max_items=8,
        list_type="map",
        map_keys=("name",),
    ),
    (k.WorkloadStatus, "resourceRequests"): F(
        "resourceRequests provides a detailed view of the resources that were requested "
        "by a non-admitted workload.",
        max_items=v.MAX_POD_SETS,
        list_type="map",
        map_keys=("name",),
    ),
    (k.WorkloadStatus, "accumulatedPastExecutionTimeSeconds"): F(
        "accumulatedPastExecutionTimeSeconds holds the total time, in seconds, the workload spent in Admitted state, "
        "in the previous `Admit` - `Evict` cycles."
    ),
    (k.WorkloadStatus, "schedulingStats"): F("schedulingStats tracks scheduling statistics"),
    (k.WorkloadStatus, "nominatedClusterNames"): {
        **F(
            "nominatedClusterNames specifies the list of cluster names that have been nominated for scheduling.",
            max_items=20,
            list_type="atomic",
        ),
        "$items": F(max_length=256),
    },
    (k.WorkloadStatus, "clusterName"): F(
        "clusterName is the name of the cluster where the workload is currently assigned.", max_length=256
    ),
    (k.WorkloadStatus, "unhealthyNodes"): {
        "$schema": _named_items(
            "unhealthyNodes holds the failed nodes running at least one pod of this workload when Topology-Aware Scheduling is used.",
            8,
            63,
        )
    },
    (k.WorkloadStatus, "preemptionGates"): {"$schema": _preemption_gate_states()},
    # WorkloadPriorityClass, AdmissionCheck, ProvisioningRequestConfig
    (k.WorkloadPriorityClass, "value"): F(
        "value represents the integer value of this workloadPriorityClass. This is the actual "
        "priority that workloads receive when jobs have the name of this class in their "
        "workloadPriorityClass label."
    ),
    (k.WorkloadPriorityClass, "description"): F(
        "description is an arbitrary string that usually provides guidelines on when "
        "this workloadPriorityClass should be used.",
        max_length=2048,
    ),
    (k.AdmissionCheck, "spec"): F("spec is the specification of the AdmissionCheck."),
    (k.AdmissionCheck, "status"): F("status is the status of the AdmissionCheck."),
    (k.AdmissionCheckSpec, "controllerName"): F(
        "controllerName identifies the controller that processes the AdmissionCheck, not necessarily a Kubernetes "
        "Pod or Deployment name. Cannot be empty.",
        max_length=253,
        min_length=1,
        validations=[{"message": v.FIELD_IMMUTABLE_MSG, "rule": "self == oldSelf"}],
    ),
    (k.AdmissionCheckSpec, "parameters"): F(
        "Parameters identifies a configuration with additional parameters for the check."
    ),
    (k.AdmissionCheckParametersReference, "apiGroup"): F(
        "ApiGroup is the group for the resource being referenced.",
        max_length=253,
        min_length=1,
        pattern=v.DNS_SUBDOMAIN_PATTERN,
    ),
    (k.AdmissionCheckParametersReference, "kind"): F(
        "Kind is the type of the resource being referenced.",
        max_length=63,
        min_length=1,
        pattern=v.AC_PARAMETERS_KIND_PATTERN,
    ),
    (k.AdmissionCheckParametersReference, "name"): F(
        "Name is the name of the resource being referenced.",
        max_length=63,
        min_length=1,
        pattern=v.DNS_LABEL_PATTERN,
    ),
    (k.AdmissionCheckStatus, "conditions"): {
        "$schema": _conditions(
            "conditions hold the latest available observations of the AdmissionCheck current state."
        )
    },
    (k.ProvisioningRequestConfig, "spec"): F(
        "ProvisioningRequestConfigSpec defines the desired state of ProvisioningRequestConfig"
    ),
    (k.ProvisioningRequestConfigSpec, "provisioningClassName"): F(
        "ProvisioningClassName describes the different modes of provisioning the resources.",
        max_length=253,
        min_length=1,
        pattern=v.DNS_SUBDOMAIN_PATTERN,
    ),
    (k.ProvisioningRequestConfigSpec, "parameters"): {
        **F("Parameters contains all other parameters classes may require.", max_properties=100),
        "$values": F(max_length=255),
    },
    (k.ProvisioningRequestConfigSpec, "managedResources"): F(
        "managedResources contains the list of resources managed by the autoscaling. If empty, all resources are "
        "considered managed.",
        max_items=100,
        list_type="set",
    ),
    (k.ProvisioningRequestConfigSpec, "retryStrategy"): F(
        "retryStrategy defines strategy for retrying ProvisioningRequest.",
        default={"backoffBaseSeconds": 60, "backoffLimitCount": 3, "backoffMaxSeconds": 1800},
    ),
    (k.ProvisioningRequestConfigSpec, "podSetUpdates"): F(
        "podSetUpdates specifies the update of the workload's PodSetUpdates "
        "which are used to target the provisioned nodes."
    ),
    (k.ProvisioningRequestConfigSpec, "podSetMergePolicy"): F(
        "podSetMergePolicy specifies the policy for merging PodSets "
        "before being passed to the cluster autoscaler.",
        enum=v.PRC_MERGE_POLICIES,
    ),
    (k.ProvisioningRequestRetryStrategy, "backoffLimitCount"): F(
        "BackoffLimitCount defines the maximum number of re-queuing retries.", default=3
    ),
    (k.ProvisioningRequestRetryStrategy, "backoffBaseSeconds"): F(
        "BackoffBaseSeconds defines the base for the exponential backoff for re-queuing an evicted workload.",
        default=60,
    ),
    (k.ProvisioningRequestRetryStrategy, "backoffMaxSeconds"): F(
        "BackoffMaxSeconds defines the maximum backoff time to re-queue an evicted workload.", default=1800
    ),
    (k.ProvisioningRequestPodSetUpdates, "nodeSelector"): F(
        "nodeSelector specifies the list of updates for the NodeSelector.",
        max_items=8,
        list_type="map",
        map_keys=("key",),
    ),
    (k.ProvisioningRequestPodSetUpdatesNodeSelector, "key"): F(
        "key specifies the key for the NodeSelector.",
        max_length=317,
        min_length=1,
        pattern=v.QUALIFIED_KEY_PATTERN,
    ),
    (k.ProvisioningRequestPodSetUpdatesNodeSelector, "valueFromProvisioningClassDetail"): F(
        "valueFromProvisioningClassDetail specifies the key of the ProvisioningRequest.status.provisioningClassDetails "
        "from which the value is used for the update.",
        max_length=32768,
        min_length=1,
    ),
}

_REPLACED_STRUCTS: dict[type, Callable[[], Schema]] = {
    Condition: meta.condition_schema,
    LabelSelector: lambda: _crd_clean(inline({"$ref": "#/components/schemas/" + meta.LABEL_SELECTOR})),
}

# --- derivation from the typed model -------------------------------------------------------------------

_QUANTITY_MEMBERS = frozenset({msgspec.inspect.StrType, msgspec.inspect.IntType, msgspec.inspect.FloatType})


def _type_schema(info: msgspec.inspect.Type) -> Schema:
    if isinstance(info, msgspec.inspect.UnionType):
        return _union_schema(info)
    if isinstance(info, msgspec.inspect.StructType):
        return struct_schema(info.cls)
    if isinstance(info, msgspec.inspect.ListType):
        return arr(_type_schema(info.item_type))
    if isinstance(info, msgspec.inspect.DictType):
        if isinstance(info.value_type, msgspec.inspect.AnyType):
            return free_object()
        return map_of(_type_schema(info.value_type))
    return _scalar_schema(info)


def _union_schema(info: msgspec.inspect.UnionType) -> Schema:
    members = [t for t in info.types if not isinstance(t, msgspec.inspect.NoneType)]
    if {type(t) for t in members} == _QUANTITY_MEMBERS:
        return _quantity()
    if len(members) == 1:
        return _type_schema(members[0])
    raise TypeError(f"cannot derive a structural schema for union {info}")


def _scalar_schema(info: msgspec.inspect.Type) -> Schema:
    if isinstance(info, msgspec.inspect.StrType):
        return string()
    if isinstance(info, msgspec.inspect.BoolType):
        return boolean()
    if isinstance(info, msgspec.inspect.IntType):
        return integer()
    if isinstance(info, msgspec.inspect.FloatType):
        return {"type": "number"}
    if isinstance(info, msgspec.inspect.DateTimeType):
        return date_time()
    if isinstance(info, msgspec.inspect.AnyType):
        return free_object()
    raise TypeError(f"cannot derive a schema for {info}")


def _merge_overlay(schema: Schema, overlay: Mapping[str, Any]) -> Schema:
    if "$schema" in overlay:
        schema = copy.deepcopy(overlay["$schema"])
    for name, value in overlay.items():
        if name == "$schema":
            continue
        if value is None:  # the overlay removes what the model derived
            schema.pop(name, None)
            continue
        if name == "$items":
            schema["items"] = {**schema["items"], **value}
        elif name == "$values":
            schema["additionalProperties"] = {**schema["additionalProperties"], **value}
        else:
            schema[name] = copy.deepcopy(value)
    return schema


def struct_schema(cls: type) -> Schema:
    """The object schema of a Struct type (overlay applied)."""
    if cls in _REPLACED_STRUCTS:
        return _REPLACED_STRUCTS[cls]()
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType)
    properties: dict[str, Schema] = {}
    required_fields: list[str] = []
    for field in info.fields:
        base = _type_schema(field.type)
        properties[field.encode_name] = _merge_overlay(base, _FIELDS.get((cls, field.encode_name), {}))
        if field.required:
            required_fields.append(field.encode_name)
    schema = obj(properties, required_fields=sorted(required_fields))
    return _merge_overlay(schema, _STRUCTS.get(cls, {}))


def _kind_schema(cls: type) -> Schema:
    """A top-level kind: ``apiVersion``/``kind``/``metadata`` plus the Struct's other fields."""
    body = struct_schema(cls)
    properties: dict[str, Schema] = {
        "apiVersion": meta.api_version_field(),
        "kind": meta.kind_field(),
        "metadata": obj(),
    }
    properties.update({n: s for n, s in body["properties"].items() if n not in properties})
    # ``spec`` is never required at the root in upstream's CRDs (WorkloadPriorityClass's value is).
    excluded = ("apiVersion", "kind", "metadata", "spec")
    required_fields = [n for n in body.get("required", []) if n not in excluded]
    return obj(properties, body.get("description", ""), required_fields=required_fields)


# --- the kinds pykueue does not model ------------------------------------------------------------------


def _multikueue_config_v1beta2() -> Schema:
    return obj(
        {
            "apiVersion": meta.api_version_field(),
            "kind": meta.kind_field(),
            "metadata": obj(),
            "spec": obj(
                {
                    "clusters": arr(
                        string(max_length=256),
                        "List of MultiKueueClusters names where the workloads from the ClusterQueue should be distributed.",
                        min_items=1,
                        max_items=20,
                        list_type="atomic",
                        validations=[
                            {"message": "must be unique", "rule": "self.all(x, self.exists_one(y, x == y))"}
                        ],
                    ),
                    "quotaManagement": string(
                        "quotaManagement defines how the quota of the worker clusters is managed: "
                        "Manual (default) or Automated.",
                        enum=("Manual", "Automated"),
                    ),
                },
                "MultiKueueConfigSpec defines the desired state of MultiKueueConfig",
                required_fields=("clusters",),
            ),
        },
        "MultiKueueConfig is the Schema for the multikueue API",
    )


def _kube_config() -> Schema:
    return obj(
        {
            "location": string(
                "Location of the KubeConfig: the name of a Secret in the kueue namespace (key "
                "`kubeconfig`) or a path on the controller's file system.",
                max_length=256,
                min_length=1,
            ),
            "locationType": string(
                "Type of the KubeConfig location.", enum=("Secret", "Path"), default="Secret"
            ),
        },
        "Information how to connect to the cluster.",
        required_fields=("location",),
    )


def _cluster_profile_ref() -> Schema:
    return obj(
        {"name": string("name of the ClusterProfile.", max_length=256, min_length=1)},
        "clusterProfileRef is the reference to the ClusterProfile object used to connect to the cluster.",
        required_fields=("name",),
    )


def _multikueue_cluster(spec: Schema) -> Schema:
    return obj(
        {
            "apiVersion": meta.api_version_field(),
            "kind": meta.kind_field(),
            "metadata": obj(),
            "spec": spec,
            "status": obj(
                {
                    "conditions": _conditions(
                        "conditions hold the latest available observations of the "
                        "MultiKueueCluster current state."
                    )
                }
            ),
        },
        "MultiKueueCluster is the Schema for the multikueue API",
    )


_EXACTLY_ONE_SOURCE = [
    {
        "message": "exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
        "rule": "[has(self.kubeConfig),has(self.clusterProfileRef)].filter(x,x==true).size() == 1",
    }
]


def _multikueue_cluster_v1beta2() -> Schema:
    source = obj(
        {"kubeConfig": _kube_config(), "clusterProfileRef": _cluster_profile_ref()},
        "clusterSource tells how to connect to the worker cluster.",
        validations=_EXACTLY_ONE_SOURCE,
    )
    return _multikueue_cluster(obj({"clusterSource": source}, required_fields=("clusterSource",)))


def _multikueue_cluster_v1beta1() -> Schema:
    kube_config = _kube_config()
    kube_config["required"] = ["location", "locationType"]  # v1beta1's Go field has no omitempty
    spec = obj(
        {"kubeConfig": kube_config, "clusterProfileRef": _cluster_profile_ref()},
        required_fields=("kubeConfig",),
        validations=_EXACTLY_ONE_SOURCE,
    )
    return _multikueue_cluster(spec)


def _topology_v1beta2() -> Schema:
    level = obj(
        {
            "nodeLabel": string(
                "nodeLabel indicates the name of the node label for a specific topology level.",
                max_length=316,
                min_length=1,
                pattern=v.QUALIFIED_KEY_PATTERN,
            )
        },
        "TopologyLevel defines the desired state of TopologyLevel",
        required_fields=("nodeLabel",),
    )
    spec = obj(
        {
            "levels": arr(
                level,
                "levels define the levels of topology.",
                min_items=1,
                max_items=16,
                list_type="atomic",
                validations=[
                    {"message": "field is immutable", "rule": "self == oldSelf"},
                    {
                        "message": "must be unique",
                        "rule": "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0",
                    },
                ],
            )
        },
        "TopologySpec defines the desired state of Topology",
        required_fields=("levels",),
    )
    return obj(
        {"apiVersion": meta.api_version_field(), "kind": meta.kind_field(), "metadata": obj(), "spec": spec},
        "Topology is the Schema for the topology API",
    )


_MODELLED: Mapping[str, type] = {
    name: cls for name, cls in k.KIND_TYPES.items() if name not in CORE_KIND_VERSIONS
}
_HAND_WRITTEN: Mapping[str, Callable[[], Schema]] = {
    "MultiKueueConfig": _multikueue_config_v1beta2,
    "MultiKueueCluster": _multikueue_cluster_v1beta2,
    "Topology": _topology_v1beta2,
}
KUEUE_KINDS: tuple[str, ...] = (*_MODELLED, *_HAND_WRITTEN)
"""Every Kueue kind, in the order the CRDs are listed."""

# --- v1beta1 ---------------------------------------------------------------------------------------


def _props(schema: Schema, *path: str) -> dict[str, Schema]:
    """The ``properties`` dict at ``path`` (object properties, stepping through arrays)."""
    cur = schema
    for name in path:
        cur = cur["properties"][name]
        while cur.get("type") == "array":
            cur = cur["items"]
    props: dict[str, Schema] = cur["properties"]
    return props


def _rename(props: dict[str, Schema], old: str, new: str) -> None:
    if old in props:
        props[new] = props.pop(old)


def _cq_v1beta1(schema: Schema) -> None:
    spec = _props(schema, "spec")
    spec.pop("concurrentAdmissionPolicy", None)  # a v1beta2-only field
    _rename(spec, "cohortName", "cohort")
    spec["cohort"]["description"] = spec["cohort"]["description"].replace("cohortName", "cohort", 1)
    for rule in schema["properties"]["spec"].get(VALIDATIONS, []):
        rule["rule"] = rule["rule"].replace("self.cohortName", "self.cohort")
    spec["admissionChecks"] = arr(
        string(max_length=316),
        "admissionChecks lists the AdmissionChecks required by this ClusterQueue. Cannot be used along with "
        "AdmissionCheckStrategy.",
    )
    fungibility = _props(schema, "spec", "flavorFungibility")
    fungibility["whenCanBorrow"]["enum"] = [*v.FUNGIBILITY_POLICIES, "Borrow"]
    fungibility["whenCanPreempt"]["enum"] = [*v.FUNGIBILITY_POLICIES, "Preempt"]
    status = _props(schema, "status")
    pending = obj(
        {
            "name": string("Name indicates the name of the pending workload."),
            "namespace": string("Namespace indicates the namespace of the pending workload."),
        },
        required_fields=("name", "namespace"),
    )
    status["pendingWorkloadsStatus"] = obj(
        {
            "clusterQueuePendingWorkload": arr(
                pending, "Head contains the list of top pending workloads.", list_type="atomic"
            ),
            "lastChangeTime": date_time(
                "LastChangeTime indicates the time of the last change of the structure."
            ),
        },
        "PendingWorkloadsStatus contains the information exposed about the current status of the pending workloads "
        "in the cluster queue. Deprecated: This field is no longer effective.",
        required_fields=("lastChangeTime",),
    )
    _add_admission_fair_sharing_status(schema)


def _add_admission_fair_sharing_status(schema: Schema) -> None:
    """v1beta1's FairSharingStatus of ClusterQueues and Cohorts also carries the AFS state
    (v1beta2 keeps it on LocalQueues only)."""
    _props(schema, "status", "fairSharing")["admissionFairSharingStatus"] = _admission_fair_sharing_status()


def _lq_v1beta1(schema: Schema) -> None:
    status = _props(schema, "status")
    _rename(status, "flavorsUsage", "flavorUsage")
    status["flavors"] = arr(
        obj(
            {
                "name": string("name of the flavor.", max_length=253, pattern=v.DNS_SUBDOMAIN_PATTERN),
                "resources": arr(
                    {"type": "string"}, "resources used in the flavor.", max_items=64, list_type="set"
                ),
                "nodeLabels": str_map(
                    "nodeLabels are labels that associate the ResourceFlavor with Nodes.",
                    max_properties=8,
                    map_type="atomic",
                ),
                "nodeTaints": arr(
                    struct_schema(k.Taint),
                    "nodeTaints are taints that the nodes associated with this ResourceFlavor have.",
                    max_items=8,
                    list_type="atomic",
                ),
                "topology": obj(
                    {
                        "name": string(
                            "name is the name of the topology.", max_length=253, pattern=v.DNS_SUBDOMAIN_PATTERN
                        ),
                        "levels": arr(
                            {"type": "string"},
                            "levels define the levels of topology.",
                            min_items=1,
                            max_items=16,
                            list_type="atomic",
                        ),
                    },
                    "topology is the topology that associated with this ResourceFlavor.",
                    required_fields=("levels", "name"),
                ),
            },
            required_fields=("name",),
        ),
        "flavors lists all currently available ResourceFlavors in specified ClusterQueue. Deprecated.",
        max_items=64,
        list_type="map",
        map_keys=("name",),
    )


def _wl_v1beta1(schema: Schema) -> None:
    spec = _props(schema, "spec")
    spec.pop("priorityClassRef", None)
    spec.pop("preemptionGates", None)
    spec["priorityClassName"] = string(
        'If specified, indicates the workload\'s priority. "system-node-critical" and "system-cluster-critical" '
        "are two special keywords which indicate the highest priorities.",
        max_length=253,
        pattern=v.DNS_SUBDOMAIN_PATTERN,
    )
    spec["priorityClassSource"] = string(
        "priorityClassSource determines whether the priorityClass field refers to a pod PriorityClass or kueue.x-k8s.io/"
        "workloadpriorityclass. Workload's PriorityClass can accept the name of a pod priorityClass or a "
        "workloadPriorityClass.",
        enum=(WPC_SOURCE, POD_PRIORITY_SOURCE, ""),
        default="",
    )
    schema["properties"]["spec"].pop(VALIDATIONS, None)
    _props(schema, "spec", "podSets")["topologyRequest"] = _topology_request_schema(v1beta1=True)
    schema["properties"]["spec"]["properties"]["podSets"]["items"]["required"] = ["count", "template"]
    schema["properties"]["spec"]["required"] = ["podSets"]
    admission = schema["properties"]["status"]["properties"]["admission"]
    admission["required"] = ["clusterQueue", "podSetAssignments"]
    admission["properties"]["podSetAssignments"]["items"]["required"] = ["name"]
    status = _props(schema, "status")
    status.pop("preemptionGates", None)
    _rename(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
    _props(schema, "status", "admission", "podSetAssignments")["topologyAssignment"] = (
        _topology_assignment_v1beta1()
    )


def _ac_v1beta1(schema: Schema) -> None:
    _props(schema, "spec")["retryDelayMinutes"] = integer(
        "RetryDelayMinutes specifies how long to keep the workload suspended after a failed check (after it "
        "transitioned to False). Deprecated: retryDelayMinutes has already been deprecated since v0.8 and will be "
        "removed in v1beta2.",
        fmt="int64",
        default=RETRY_DELAY_MINUTES_DEFAULT,
    )


def _mkconfig_v1beta1(schema: Schema) -> None:
    _props(schema, "spec").pop("quotaManagement", None)
    _props(schema, "spec")["clusters"][LIST_TYPE] = "set"


def _cohort_v1beta1(schema: Schema) -> None:
    _add_admission_fair_sharing_status(schema)


_V1BETA1_EDITS: Mapping[str, Callable[[Schema], None]] = {
    "ClusterQueue": _cq_v1beta1,
    "LocalQueue": _lq_v1beta1,
    "Workload": _wl_v1beta1,
    "AdmissionCheck": _ac_v1beta1,
    "MultiKueueConfig": _mkconfig_v1beta1,
    "Cohort": _cohort_v1beta1,
}


_V1BETA1_WITHOUT: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "AdmissionCheck": {
        "spec.controllerName": ("maxLength", "minLength"),
        "spec.parameters.apiGroup": ("minLength",),
        "spec.parameters.kind": ("minLength",),
        "spec.parameters.name": ("minLength",),
    },
    "ClusterQueue": {
        "spec.admissionChecksStrategy": ("required",),
        "spec.admissionChecksStrategy.admissionChecks": (
            "maxItems", "minItems", "x-kubernetes-list-map-keys", "x-kubernetes-list-type",
        ),
        "spec.admissionChecksStrategy.admissionChecks[].name": ("minLength",),
        "spec.admissionChecksStrategy.admissionChecks[].onFlavors": ("maxItems", "x-kubernetes-list-type"),
        "spec.admissionScope.admissionMode": ("enum",),
        "spec.resourceGroups[].coveredResources": ("x-kubernetes-list-type",),
    },
    "Cohort": {"spec.resourceGroups[].coveredResources": ("x-kubernetes-list-type",)},
    "MultiKueueCluster": {"spec.kubeConfig.location": ("maxLength", "minLength"), "status.conditions": ("maxItems",)},
    "MultiKueueConfig": {"spec.clusters[]": ("maxLength",)},
    "ProvisioningRequestConfig": {
        "spec.podSetUpdates.nodeSelector": ("x-kubernetes-list-map-keys", "x-kubernetes-list-type"),
        "spec.provisioningClassName": ("minLength",),
    },
    "WorkloadPriorityClass": {"description": ("maxLength",)},
    "Workload": {
        "status.admission.podSetAssignments[].delayedTopologyRequest": ("enum", "maxLength"),
        "status.admissionChecks[].name": ("minLength",),
        "status.admissionChecks[].podSetUpdates[].tolerations": ("x-kubernetes-list-type",),
        "status.clusterName": ("maxLength",),
        "status.nominatedClusterNames[]": ("maxLength",),
        "status.schedulingStats.evictions": ("maxItems",),
        "status.unhealthyNodes": ("maxItems", "x-kubernetes-list-map-keys", "x-kubernetes-list-type"),
        "status.unhealthyNodes[].name": ("maxLength",),
    },
}  # fmt: skip
"""Bounds the v1beta2 types added that upstream's (deprecated) v1beta1 types never had: the
v1beta1 schemas, derived from v1beta2, drop them (``kind → path → keywords``)."""


def _node(schema: Schema, path: str) -> Schema:
    node = schema
    for part in path.split("."):
        name, items = part.removesuffix("[]"), part.endswith("[]")
        node = node["properties"][name]
        if items:
            node = node["items"]
    return node


def _drop_v1beta1_bounds(kind: str, schema: Schema) -> None:
    for path, keywords in _V1BETA1_WITHOUT.get(kind, {}).items():
        node = _node(schema, path)
        for keyword in keywords:
            node.pop(keyword, None)


def _unchanged(schema: Schema) -> None:
    """Kinds whose v1beta1 schema equals v1beta2."""


@cache
def _kueue_schema(kind: str, version: str) -> Schema:
    if version == V1BETA1 and kind == "MultiKueueCluster":
        schema = _multikueue_cluster_v1beta1()
        _drop_v1beta1_bounds(kind, schema)
        _set_cel_rules(kind, version, schema)
        return schema
    if kind in _MODELLED:
        schema = _kind_schema(_MODELLED[kind])
    elif kind in _HAND_WRITTEN:
        schema = _HAND_WRITTEN[kind]()
    else:
        raise KeyError(f"not a Kueue kind: {kind}")
    if version == V1BETA1:
        _V1BETA1_EDITS.get(kind, _unchanged)(schema)
        conditions = (schema["properties"].get("status") or {}).get("properties", {}).get("conditions")
        if conditions is not None:
            conditions.pop("maxItems", None)  # the v1beta1 types carry no bound on conditions
        _drop_v1beta1_bounds(kind, schema)
    elif version != V1BETA2:
        raise KeyError(f"kueue.x-k8s.io does not serve version {version}")
    _set_cel_rules(kind, version, schema)
    return schema


def _set_cel_rules(kind: str, version: str, schema: Schema) -> None:
    """Put upstream's CEL rules (:data:`pykueue.api.celrules.RULES`), and only those, on every
    node outside the embedded pod templates (whose rules come with the core/v1 schema)."""
    table = celrules.RULES.get((kind, version), {})
    placed: set[str] = set()

    def walk(node: Schema, path: str) -> None:
        rules = table.get(path)
        if rules:
            node[VALIDATIONS] = [{"message": r.message, "rule": r.rule} for r in rules]
            placed.add(path)
        else:
            node.pop(VALIDATIONS, None)
        for name, child in (node.get("properties") or {}).items():
            child_path = f"{path}.{name}" if path else name
            if not child_path.endswith("].template"):
                walk(child, child_path)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]")
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], f"{path}{{}}")

    walk(schema, "")
    missing = set(table) - placed
    if missing:
        raise KeyError(f"{kind} {version}: no schema node for the CEL rules at {sorted(missing)}")


def kueue_schema(kind: str, version: str) -> Schema:
    """The structural ``openAPIV3Schema`` of a Kueue ``kind`` in ``version`` (a fresh copy)."""
    return copy.deepcopy(_kueue_schema(kind, version))


def shared_kueue_schema(kind: str, version: str) -> Schema:
    """Like :func:`kueue_schema` but the cached instance: read-only, never modify it."""
    return _kueue_schema(kind, version)


def pod_template_schema() -> Schema:
    """The embedded PodTemplateSpec node of the Workload CRD (cached instance: read-only).

    The one schema of a Workload's pod templates: the CRD carries it, and ``serve`` validates
    templates against it (:func:`pykueue.api.validation.validate_schema`).
    """
    pod_sets = _kueue_schema("Workload", V1BETA2)["properties"]["spec"]["properties"]["podSets"]
    template: Schema = pod_sets["items"]["properties"]["template"]
    return template


# --- CRD manifests -------------------------------------------------------------------------------------


def _column(col: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonPath": col.json_path, "name": col.name, "type": col.type}
    if col.description:
        out["description"] = col.description
    if col.priority:
        out["priority"] = col.priority
    if col.format:
        out["format"] = col.format
    return out


def _crd_version(info: ResourceInfo, version: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": version, "served": True, "storage": version == info.storage_version}
    columns = [c for c in info.columns(version)]
    if columns:
        entry["additionalPrinterColumns"] = [_column(c) for c in columns]
    if version in info.deprecated_versions:
        entry["deprecated"] = True
        entry["deprecationWarning"] = info.deprecated_versions[version]
    entry["schema"] = {"openAPIV3Schema": info.openapi_schema(version)}
    fields = info.selectable_fields_for(version)
    if fields:
        entry["selectableFields"] = [{"jsonPath": "." + f} for f in fields]
    if info.status_subresource:
        entry["subresources"] = {"status": {}}
    return entry


def build_crd(info: ResourceInfo) -> dict[str, Any]:
    """The ``apiextensions.k8s.io/v1`` CustomResourceDefinition of a registry entry."""
    names: dict[str, Any] = {
        "kind": info.kind,
        "listKind": info.kind + "List",
        "plural": info.plural,
        "singular": info.singular,
    }
    if info.short_names:
        names["shortNames"] = list(info.short_names)
    if info.categories:
        names["categories"] = list(info.categories)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{info.plural}.{info.group}"},
        "spec": {
            "group": info.group,
            "names": names,
            "scope": "Namespaced" if info.namespaced else "Cluster",
            "versions": [_crd_version(info, ver) for ver in sorted(info.versions)],
        },
    }


def crd_file_name(info: ResourceInfo) -> str:
    """``kueue.x-k8s.io_clusterqueues.yaml`` (the upstream naming)."""
    return f"{info.group}_{info.plural}.yaml"


class _CRDDumper(KubeDumper):
    """Block-style YAML without anchors/aliases (shared sub-objects are written out)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render_crd(crd: Mapping[str, Any]) -> str:
    """Commit-ready YAML (keys sorted like controller-gen, document start marker)."""
    return str(
        yaml.dump(
            crd,
            Dumper=_CRDDumper,
            sort_keys=True,
            default_flow_style=False,
            explicit_start=True,
            width=100,
            allow_unicode=True,
        )
    )


def generate(group: str = GROUP) -> dict[str, str]:
    """File name → YAML text for every CRD of ``group`` in the registry."""
    from pykueue.apiserver.resources import REGISTRY

    return {
        crd_file_name(info): render_crd(build_crd(info)) for info in REGISTRY.all() if info.group == group
    }


def write(out_dir: str = DEFAULT_OUT) -> list[str]:
    """Write the CRDs into ``out_dir``; return the written paths."""
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, text in sorted(generate().items()):
        path = os.path.join(out_dir, name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pykueue.apiserver.crdgen [--out DIR]``."""
    parser = argparse.ArgumentParser(
        prog="python -m pykueue.apiserver.crdgen", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    for path in write(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
