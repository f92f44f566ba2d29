"""Defaulting, as a real API server persists objects (the CRDs' ``+kubebuilder:default`` markers and
upstream ``pkg/webhooks`` ``Default`` methods).

:func:`apply_defaults` applies the CRD (OpenAPI) schema defaults of the v1beta2 storage version;
these are what every stored object carries. What Kueue's *mutating* webhooks add on create
(finalizers, ``minCount`` stripping) is mutating admission, run after the managedFields are
recorded: :func:`pykueue.apiserver.resources.kueue_mutating_webhook`.

Note: the typed model cannot tell an absent string from an explicit ``""``; both are defaulted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from pykueue.api import kueue as k

DEFAULT_FAIR_SHARING_WEIGHT = 1
PRC_RETRY_BACKOFF_LIMIT_COUNT = 3
PRC_RETRY_BACKOFF_BASE_SECONDS = 60
PRC_RETRY_BACKOFF_MAX_SECONDS = 1800
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
PREEMPT_LOWER_PRIORITY_POLICY = "PreemptLowerPriority"


def apply_defaults(obj: k.KueueObject) -> None:
    """Apply the schema defaults of ``obj``'s kind in place."""
    defaulter = _DEFAULTERS.get(type(obj))
    if defaulter is not None:
        defaulter(obj)


# --- ClusterQueue / Cohort / LocalQueue -------------------------------------------------------------


def _default_cluster_queue(cq: Any) -> None:
    spec: k.ClusterQueueSpec = cq.spec
    spec.queueing_strategy = spec.queueing_strategy or k.BEST_EFFORT_FIFO
    spec.stop_policy = spec.stop_policy or k.STOP_NONE
    spec.flavor_fungibility = default_flavor_fungibility(spec.flavor_fungibility)
    spec.preemption = default_preemption(spec.preemption)
    _default_fair_sharing(spec.fair_sharing)


def default_flavor_fungibility(value: k.FlavorFungibility | None) -> k.FlavorFungibility:
    """``flavorFungibility`` defaults (`{}` → MayStopSearch / TryNextFlavor)."""
    value = value if value is not None else k.FlavorFungibility()
    value.when_can_borrow = value.when_can_borrow or k.MAY_STOP_SEARCH
    value.when_can_preempt = value.when_can_preempt or k.TRY_NEXT_FLAVOR
    return value


def default_preemption(value: k.ClusterQueuePreemption | None) -> k.ClusterQueuePreemption:
    """``preemption`` defaults (`{}` → Never / Never / borrowWithinCohort {policy: Never})."""
    value = value if value is not None else k.ClusterQueuePreemption()
    value.reclaim_within_cohort = value.reclaim_within_cohort or k.PREEMPT_NEVER
    value.within_cluster_queue = value.within_cluster_queue or k.PREEMPT_NEVER
    borrow = value.borrow_within_cohort if value.borrow_within_cohort is not None else k.BorrowWithinCohort()
    borrow.policy = borrow.policy or k.PREEMPT_NEVER
    value.borrow_within_cohort = borrow
    return value


def _default_fair_sharing(value: k.FairSharing | None) -> None:
    if value is not None and value.weight is None:
        value.weight = DEFAULT_FAIR_SHARING_WEIGHT


def _default_cohort(cohort: Any) -> None:
    _default_fair_sharing(cohort.spec.fair_sharing)


def _default_local_queue(lq: Any) -> None:
    spec: k.LocalQueueSpec = lq.spec
    spec.stop_policy = spec.stop_policy or k.STOP_NONE
    _default_fair_sharing(spec.fair_sharing)


# --- Workload ---------------------------------------------------------------------------------------


def _default_workload(wl: Any) -> None:
    spec: k.WorkloadSpec = wl.spec
    for pod_set in spec.pod_sets:
        pod_set.name = pod_set.name or "main"
        _default_pod_template(pod_set)
    if spec.active is None:
        spec.active = True
    admission = wl.status.admission
    if admission is not None:
        for assignment in admission.pod_set_assignments:
            assignment.name = assignment.name or "main"


def _default_pod_template(pod_set: k.PodSet) -> None:
    """The scalar defaults of the embedded core/v1 schema the Workload CRD carries (a container
    port's ``protocol: TCP``, ...), from that very schema, as kube-apiserver applies them."""
    defaulted = _pod_template_defaulted(msgspec.json.encode(pod_set.template))
    if defaulted is not None:  # fresh dicts: the typed object may share the old ones with the request
        pod_set.template = msgspec.json.decode(defaulted, type=k.PodTemplateSpec)


@functools.lru_cache(maxsize=1024)
def _pod_template_defaulted(encoded: bytes) -> bytes | None:
    """The template with its schema defaults, or None when none applies (memoised by content:
    the Workloads of one kind of Job share their templates)."""
    # imported here: the schema modules build on this package
    from pykueue.apiserver.builtin.schema import apply_defaults as apply_schema_defaults
    from pykueue.apiserver.crdgen import pod_template_schema

    template = msgspec.json.decode(encoded)
    apply_schema_defaults(template, pod_template_schema())
    result = msgspec.json.encode(template)
    return None if result == encoded else result


# --- ProvisioningRequestConfig and core kinds -------------------------------------------------------


def _default_provisioning_request_config(prc: Any) -> None:
    spec: k.ProvisioningRequestConfigSpec = prc.spec
    strategy = (
        spec.retry_strategy if spec.retry_strategy is not None else k.ProvisioningRequestRetryStrategy()
    )
    if strategy.backoff_limit_count is None:
        strategy.backoff_limit_count = PRC_RETRY_BACKOFF_LIMIT_COUNT
    if strategy.backoff_base_seconds is None:
        strategy.backoff_base_seconds = PRC_RETRY_BACKOFF_BASE_SECONDS
    if strategy.backoff_max_seconds is None:
        strategy.backoff_max_seconds = PRC_RETRY_BACKOFF_MAX_SECONDS
    spec.retry_strategy = strategy


def _default_namespace(ns: Any) -> None:
    """The API server labels every Namespace with its own name and adds the ``kubernetes`` finalizer."""
    if ns.metadata.name:
        ns.metadata.labels[NAMESPACE_NAME_LABEL] = ns.metadata.name
    ns.spec.setdefault("finalizers", ["kubernetes"])
    ns.status.setdefault("phase", "Active")


def _default_priority_class(pc: Any) -> None:
    pc.preemption_policy = pc.preemption_policy or PREEMPT_LOWER_PRIORITY_POLICY


_DEFAULTERS: Mapping[type[Any], Callable[[Any], None]] = {
    k.ClusterQueue: _default_cluster_queue,
    k.Cohort: _default_cohort,
    k.LocalQueue: _default_local_queue,
    k.Workload: _default_workload,
    k.ProvisioningRequestConfig: _default_provisioning_request_config,
    k.Namespace: _default_namespace,
    k.PriorityClass: _default_priority_class,
}
