"""The CEL rules (``x-kubernetes-validations``) of Kueue's CRDs, with upstream's exact rule text and
messages: the one source for the rules both ``pykueue serve`` and a real cluster enforce.

The CRD generator (:mod:`pykueue.apiserver.crdgen`) writes these, and only these, at their
paths, so a real kube-apiserver evaluates upstream's rules; ``pykueue serve`` evaluates the same
rules in Python (:mod:`pykueue.api.validation` and the schema-driven kinds' rules in
:mod:`pykueue.apiserver.resources`) and takes its messages from here (:func:`message`), so the
two report the same errors. tests/apiserver/test_crd_parity.py compares the generated CRDs
with upstream's rule by rule.

Paths are field paths from the object root (``spec.levels``, ``status.admission.podSetAssignments[]``;
``""`` is the root, ``[]`` a list's items). Rules inside embedded pod templates come with the
core/v1 schema and are not listed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple


class Rule(NamedTuple):
    """One ``x-kubernetes-validations`` entry."""

    rule: str
    message: str


# Kinds whose rules are the same in v1beta1 and v1beta2.
# core/v1 Toleration's rules, as controller-gen emits them wherever Kueue embeds a toleration list
# (ResourceFlavor spec, Workload podSetUpdates in both versions).
_TOLERATIONS: tuple[Rule, ...] = (
    Rule(
        "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)",
        "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
    ),
    Rule(
        "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)",
        "effect must be 'NoExecute' when 'tolerationSeconds' is set",
    ),
    Rule(
        "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])",
        "supported toleration values: 'Equal'(default), 'Exists'",
    ),
    Rule(
        "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)",
        "a value must be empty when 'operator' is 'Exists'",
    ),
    Rule(
        "self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
        "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
    ),
)

_ADMISSION_CHECK: Mapping[str, tuple[Rule, ...]] = {
    "spec.controllerName": (
        Rule(
            "self == oldSelf",
            "field is immutable",
        ),
    ),
}

_COHORT: Mapping[str, tuple[Rule, ...]] = {
    "spec.resourceGroups[]": (
        Rule(
            "self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
            "flavors must have the same number of resources as the coveredResources",
        ),
    ),
}

_LOCAL_QUEUE: Mapping[str, tuple[Rule, ...]] = {
    "spec.clusterQueue": (
        Rule(
            "self == oldSelf",
            "field is immutable",
        ),
    ),
}

_RESOURCE_FLAVOR: Mapping[str, tuple[Rule, ...]] = {
    "spec": (
        Rule(
            "!has(self.topologyName) || self.nodeLabels.size() >= 1",
            "at least one nodeLabel is required when topology is set",
        ),
        Rule(
            "!has(oldSelf.topologyName) || (has(self.topologyName) && self.topologyName == oldSelf.topologyName)",
            "topologyName is immutable when topologyName is set",
        ),
    ),
    "spec.nodeTaints": (
        Rule(
            "self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
            "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
        ),
    ),
    "spec.tolerations": _TOLERATIONS,
}

RULES: Mapping[tuple[str, str], Mapping[str, tuple[Rule, ...]]] = {
    ("AdmissionCheck", "v1beta1"): _ADMISSION_CHECK,  # the same in both versions
    ("AdmissionCheck", "v1beta2"): _ADMISSION_CHECK,  # the same in both versions
    ("ClusterQueue", "v1beta1"): {
        "spec": (
            Rule(
                "!has(self.cohort) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
                "borrowingLimit must be nil when cohort is empty",
            ),
        ),
        "spec.flavorFungibility": (
            Rule(
                "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == 'TryNextFlavor')",
                "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
            ),
        ),
        "spec.preemption": (
            Rule(
                "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&  self.borrowWithinCohort.policy != 'Never')",
                "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
            ),
        ),
        "spec.resourceGroups[]": (
            Rule(
                "self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
                "flavors must have the same number of resources as the coveredResources",
            ),
        ),
    },
    ("ClusterQueue", "v1beta2"): {
        "spec": (
            Rule(
                "!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true",
                "borrowingLimit must be nil when cohort is empty",
            ),
        ),
        "spec.flavorFungibility": (
            Rule(
                "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == 'TryNextFlavor')",
                "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
            ),
        ),
        "spec.preemption": (
            Rule(
                "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&  self.borrowWithinCohort.policy != 'Never')",
                "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
            ),
        ),
        "spec.resourceGroups[]": (
            Rule(
                "self.flavors.all(x, size(x.resources) == size(self.coveredResources))",
                "flavors must have the same number of resources as the coveredResources",
            ),
        ),
    },
    ("Cohort", "v1beta1"): _COHORT,  # the same in both versions
    ("Cohort", "v1beta2"): _COHORT,  # the same in both versions
    ("LocalQueue", "v1beta1"): _LOCAL_QUEUE,  # the same in both versions
    ("LocalQueue", "v1beta2"): _LOCAL_QUEUE,  # the same in both versions
    ("MultiKueueCluster", "v1beta2"): {
        "spec.clusterSource": (
            Rule(
                "[has(self.kubeConfig),has(self.clusterProfileRef)].filter(x,x==true).size() == 1",
                "exactly one of the fields in [kubeConfig clusterProfileRef] must be set",
            ),
        ),
    },
    ("MultiKueueConfig", "v1beta2"): {
        "spec.clusters": (
            Rule(
                "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0",
                "must be unique",
            ),
        ),
    },
    ("ResourceFlavor", "v1beta1"): _RESOURCE_FLAVOR,  # the same in both versions
    ("ResourceFlavor", "v1beta2"): _RESOURCE_FLAVOR,  # the same in both versions
    ("Topology", "v1beta1"): {
        "spec.levels": (
            Rule(
                "self == oldSelf",
                "field is immutable",
            ),
            Rule(
                "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0",
                "must be unique",
            ),
            Rule(
                "size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'",
                "the kubernetes.io/hostname label can only be used at the lowest level of topology",
            ),
        ),
    },
    ("Topology", "v1beta2"): {
        "spec.levels": (
            Rule(
                "self == oldSelf || (self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname' && oldSelf[size(oldSelf) - 1].nodeLabel == 'kubernetes.io/hostname')",
                "levels are mutable only when kubernetes.io/hostname is the lowest level both before and after the change",
            ),
            Rule(
                "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0",
                "must be unique",
            ),
            Rule(
                "size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'",
                "the kubernetes.io/hostname label can only be used at the lowest level of topology",
            ),
        ),
    },
    ("Workload", "v1beta1"): {
        "": (
            Rule(
                "has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(self.status.admission) ? size(self.spec.podSets) == size(self.status.admission.podSetAssignments) : true",
                "podSetAssignments must have the same number of podSets as the spec",
            ),
            Rule(
                "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassSource) && has(self.spec.priorityClassSource)) ? (oldSelf.spec.priorityClassSource == self.spec.priorityClassSource) : true",
                "priorityClassSource is immutable while workload quota reserved",
            ),
            Rule(
                "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassSource) && has(self.spec.priorityClassSource) && (self.spec.priorityClassSource != 'kueue.x-k8s.io/workloadpriorityclass') && has(oldSelf.spec.priorityClassName) && has(self.spec.priorityClassName)) ? (oldSelf.spec.priorityClassName == self.spec.priorityClassName) : true",
                "priorityClassName is immutable while workload quota reserved and priorityClassSource is not equal to kueue.x-k8s.io/workloadpriorityclass",
            ),
            Rule(
                "((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')) && (has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True'))) ? ((has(oldSelf.spec.queueName) == has(self.spec.queueName)) && (!has(oldSelf.spec.queueName) || oldSelf.spec.queueName == self.spec.queueName)) : true",
                "queueName is immutable while workload quota reserved",
            ),
            Rule(
                "((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')) && (has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')))?((has(oldSelf.spec.maximumExecutionTimeSeconds)?oldSelf.spec.maximumExecutionTimeSeconds:0) ==  (has(self.spec.maximumExecutionTimeSeconds)?self.spec.maximumExecutionTimeSeconds:0)):true",
                "maximumExecutionTimeSeconds is immutable while workload quota reserved",
            ),
        ),
        "spec": (
            Rule(
                "has(self.priorityClassName) ? has(self.priority) : true",
                "priority should not be nil when priorityClassName is set",
            ),
        ),
        "spec.podSets[]": (
            Rule(
                "has(self.minCount) ? self.minCount <= self.count : true",
                "minCount should be positive and less or equal to count",
            ),
        ),
        "status": (
            Rule(
                "!has(oldSelf.clusterName) || !has(self.clusterName) || oldSelf.clusterName == self.clusterName",
                "clusterName is immutable once set",
            ),
            Rule(
                "!has(self.clusterName) || (!has(self.nominatedClusterNames) || (has(self.nominatedClusterNames) && size(self.nominatedClusterNames) == 0))",
                "clusterName and nominatedClusterNames are mutually exclusive",
            ),
        ),
        "status.admissionChecks[].podSetUpdates[].tolerations": _TOLERATIONS,
    },
    ("Workload", "v1beta2"): {
        "": (
            Rule(
                "has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(self.status.admission) ? size(self.spec.podSets) == size(self.status.admission.podSetAssignments) : true",
                "podSetAssignments must have the same number of podSets as the spec",
            ),
            Rule(
                "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')) ? (!has(oldSelf.spec.priorityClassRef) && !has(self.spec.priorityClassRef)) || (has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) : true",
                "priorityClassRef is immutable while workload quota reserved",
            ),
            Rule(
                "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) ? oldSelf.spec.priorityClassRef.group == self.spec.priorityClassRef.group : true",
                "priorityClassRef.group is immutable while workload quota reserved",
            ),
            Rule(
                "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef)) ? oldSelf.spec.priorityClassRef.kind == self.spec.priorityClassRef.kind : true",
                "priorityClassRef.kind is immutable while workload quota reserved",
            ),
            Rule(
                "(has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True') && has(oldSelf.spec.priorityClassRef) && has(self.spec.priorityClassRef) && self.spec.priorityClassRef.group == 'scheduling.k8s.io' && self.spec.priorityClassRef.kind == 'PriorityClass') ? oldSelf.spec.priorityClassRef.name == self.spec.priorityClassRef.name : true",
                "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass while workload quota reserved",
            ),
            Rule(
                "((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True')) && (has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'QuotaReserved' && c.status == 'True'))) ? ((has(oldSelf.spec.queueName) == has(self.spec.queueName)) && (!has(oldSelf.spec.queueName) || oldSelf.spec.queueName == self.spec.queueName)) : true",
                "queueName is immutable while workload quota reserved",
            ),
            Rule(
                "((has(oldSelf.status) && has(oldSelf.status.conditions) && oldSelf.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')) && (has(self.status) && has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'Admitted' && c.status == 'True')))?((has(oldSelf.spec.maximumExecutionTimeSeconds)?oldSelf.spec.maximumExecutionTimeSeconds:0) ==  (has(self.spec.maximumExecutionTimeSeconds)?self.spec.maximumExecutionTimeSeconds:0)):true",
                "maximumExecutionTimeSeconds is immutable while workload quota reserved",
            ),
        ),
        "spec": (
            Rule(
                "!has(self.priorityClassRef) || has(self.priority)",
                "priority should not be nil when priorityClassRef is set",
            ),
        ),
        "spec.podSets[]": (
            Rule(
                "has(self.minCount) ? self.minCount <= self.count : true",
                "minCount should be positive and less or equal to count",
            ),
        ),
        "spec.priorityClassRef": (
            Rule(
                "(self.group == 'scheduling.k8s.io') ? self.kind == 'PriorityClass' : true",
                "only the PriorityClass kind is allowed for the scheduling.k8s.io group",
            ),
            Rule(
                "(self.group == 'kueue.x-k8s.io') ? self.kind == 'WorkloadPriorityClass' : true",
                "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group",
            ),
        ),
        "status": (
            Rule(
                "!has(oldSelf.clusterName) || !has(self.clusterName) || oldSelf.clusterName == self.clusterName",
                "clusterName is immutable once set",
            ),
            Rule(
                "!has(self.clusterName) || (!has(self.nominatedClusterNames) || (has(self.nominatedClusterNames) && size(self.nominatedClusterNames) == 0))",
                "clusterName and nominatedClusterNames are mutually exclusive",
            ),
        ),
        "status.admission.podSetAssignments[].topologyAssignment": (
            Rule(
                "self.slices.all(x, size(x.valuesPerLevel) == size(self.levels))",
                "valuesPerLevel must have the same length as the number of levels in this TopologyAssignment",
            ),
        ),
        "status.admission.podSetAssignments[].topologyAssignment.slices[]": (
            Rule(
                "!has(self.podCounts.individual) || size(self.podCounts.individual) == self.domainCount",
                "podCounts.individual must have length equal to domainCount",
            ),
            Rule(
                "self.valuesPerLevel.all(x, !has(x.individual) || size(x.individual.roots) == self.domainCount)",
                "valuesPerLevel.individual, if set, must have roots of length equal to domainCount of this TopologyAssignmentSlice",
            ),
        ),
        "status.admission.podSetAssignments[].topologyAssignment.slices[].podCounts": (
            Rule(
                "[has(self.universal),has(self.individual)].filter(x,x==true).size() == 1",
                "exactly one of the fields in [universal individual] must be set",
            ),
        ),
        "status.admission.podSetAssignments[].topologyAssignment.slices[].valuesPerLevel[]": (
            Rule(
                "has(self.universal) != has(self.individual)",
                "exactly one of the fields in [universal individual] must be set",
            ),
        ),
        "status.admissionChecks[].podSetUpdates[].tolerations": _TOLERATIONS,
    },
}
"""(kind, version) → path → rules, as upstream's generated CRDs declare them (controller-gen markers)."""


def rules_at(kind: str, version: str, path: str) -> tuple[Rule, ...]:
    """The rules of ``kind`` in ``version`` at ``path`` (empty when none)."""
    return tuple(RULES.get((kind, version), {}).get(path, ()))


def message(kind: str, path: str, startswith: str, version: str = "v1beta2") -> str:
    """The message of the rule at ``path`` whose message starts with ``startswith``.

    The Python evaluators name the rule they enforce this way, so a message can only come from
    the table the CRDs are generated from (a typo fails at import, not in a test run later).
    """
    for rule in rules_at(kind, version, path):
        if rule.message.startswith(startswith):
            return rule.message
    raise KeyError(f"no CEL rule of {kind} {version} at {path!r} with a message starting {startswith!r}")
