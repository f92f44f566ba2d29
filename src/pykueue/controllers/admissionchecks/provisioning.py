"""The built-in ProvisioningRequest admission check (upstream ``pkg/controller/admissionchecks/provisioning/``).

Controller name ``kueue.x-k8s.io/provisioning-request``. For every Workload holding a quota
reservation whose ``status.admissionChecks`` name an AdmissionCheck of this controller, it asks
the cluster autoscaler (or :mod:`pykueue.controllers.provisioner`) for capacity by creating one
``autoscaling.x-k8s.io/v1`` ProvisioningRequest per attempt, named ``<workload>-<check>-<attempt>``,
with one PodTemplate ``ppt-<request>-<podSet>`` per (merged) podSet, and maps the request's
conditions back onto the check state:

=====================  =====================================================================
``Failed``             Retry (``requeueAfterSeconds`` from the config's retryStrategy) while the
                       attempt ≤ ``backoffLimitCount``, then Rejected
``CapacityRevoked``    Rejected (workload active and not finished)
``BookingExpired``     like Failed, but ignored once the workload is Admitted
``Provisioned``        Ready, with podSetUpdates naming the request and its class
``Accepted``           Pending, carrying the Provisioned=False message (an ETA)
=====================  =====================================================================

Requests are deleted when the workload finishes or is evicted (gate
``CleanupProvisioningRequestsOnEviction``) and, through owner references, when it is deleted.
A second reconciler keeps each AdmissionCheck's ``Active`` condition: True while its parameters
reference an existing ProvisioningRequestConfig, else False/``BadParametersRef``.

It runs on :class:`pykueue.runtime.controller.ControllerRuntime` (informers on Workloads,
AdmissionChecks, ProvisioningRequestConfigs and ProvisioningRequests; one worker thread) and
talks to the API only through the :class:`~pykueue.client.interface.Client`. Time comes from the
injected clock.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import logging
import re
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from pykueue.api.feature_gates import FeatureGates
from pykueue.api.jobs import PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION
from pykueue.api.meta import controller_of
from pykueue.checks import states as st
from pykueue.client import resources as r
from pykueue.client.interface import AlreadyExists, APIError, Client, NotFound, Resource
from pykueue.runtime.clock import Clock, system_clock
from pykueue.runtime.controller import ControllerRuntime, RuntimeComponent, update_status
from pykueue.runtime.informer import (
    DELETED,
    MODIFIED,
    SYNCED,
    Change,
    Informer,
    ObjectKey,
    object_key,
    strip_managed_fields,
)
from pykueue.runtime.recorder import NORMAL, WARNING, EventRecorder, reporting_instance

log = logging.getLogger(__name__)

CONTROLLER_NAME = "kueue.x-k8s.io/provisioning-request"
EVENT_REPORTER = "kueue-provisioning-request-controller"
"""The reporting controller of the check's Events (upstream cmd/kueue/main.go:
``mgr.GetEventRecorder("kueue-provisioning-request-controller")``), from ``<it>-<hostname>``."""
CONFIG_KIND = "ProvisioningRequestConfig"
CONFIG_GROUP = r.KUEUE

CHECK_INACTIVE_MESSAGE = "the check is not active"
NO_REQUEST_NEEDED = "the provisioning request is not needed"

CONSUMES_ANNOTATION = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS_NAME_ANNOTATION = "autoscaling.x-k8s.io/provisioning-class-name"
PROVREQ_ANNOTATION_PREFIX = "provreq.kueue.x-k8s.io/"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
POD_TEMPLATES_PREFIX = "ppt"

ACCEPTED = "Accepted"
PROVISIONED = "Provisioned"
FAILED = "Failed"
BOOKING_EXPIRED = "BookingExpired"
CAPACITY_REVOKED = "CapacityRevoked"

IDENTICAL_POD_TEMPLATES = "IdenticalPodTemplates"
IDENTICAL_SCHEDULING_REQUIREMENTS = "IdenticalWorkloadSchedulingRequirements"

DEFAULT_BACKOFF_LIMIT_COUNT = 3
DEFAULT_BACKOFF_BASE_SECONDS = 60
DEFAULT_BACKOFF_MAX_SECONDS = 1800

EVENT_REQUEST_CREATED = "ProvisioningRequestCreated"
EVENT_CHECK_UPDATED = "AdmissionCheckUpdated"
EVENT_FAILED_CREATE = "FailedCreate"

CLEANUP_GATE = "CleanupProvisioningRequestsOnEviction"
TAS_GATE = "TopologyAwareScheduling"
TOPOLOGY_SCHEDULING_GATE = "kueue.x-k8s.io/topology"

_OBJ_NAME_HASH_LENGTH = 5
# 253 is the longest object name; one character goes to the "-" before the hash.
_OBJ_NAME_MAX_PREFIX_LENGTH = 252 - _OBJ_NAME_HASH_LENGTH

_WORKLOAD = "workload"
_CHECK = "admissioncheck"


class InconsistentPodSetAssignments(Exception):
    """The admission lacks an assignment for a podSet that needs capacity."""

    def __init__(self, detail: str = "") -> None:
        super().__init__("inconsistent podSet assignments" + (f": {detail}" if detail else ""))


class BadParametersRef(ValueError):
    """An AdmissionCheck's ``spec.parameters`` cannot name a ProvisioningRequestConfig."""


# --- naming ---------------------------------------------------------------------------------------


def limit_object_name(full_name: str) -> str:
    """Names longer than 247 characters become their first 247 + ``-`` + 5 hex of SHA-1."""
    if len(full_name) <= _OBJ_NAME_MAX_PREFIX_LENGTH:
        return full_name
    digest = hashlib.sha1(full_name.encode()).hexdigest()
    return f"{full_name[:_OBJ_NAME_MAX_PREFIX_LENGTH]}-{digest[:_OBJ_NAME_HASH_LENGTH]}"


def provisioning_request_name(workload: str, check: str, attempt: int) -> str:
    """``<workload>-<check>-<attempt>`` (length-limited)."""
    return limit_object_name(f"{workload}-{check}-{attempt}")


def pod_template_name(request: str, pod_set: str) -> str:
    """``ppt-<request>-<podSet>`` (length-limited)."""
    return limit_object_name(f"{POD_TEMPLATES_PREFIX}-{request}-{pod_set}")


def _attempt_regex(workload: str, check: str) -> re.Pattern[str]:
    prefix = limit_object_name(f"{workload}-{check}-")
    return re.compile("^" + re.escape(prefix) + "([0-9]+)$")


def attempt_of(request_name: str, workload: str, check: str) -> int | None:
    """The attempt number of a request of ``(workload, check)``; None when the name is not one."""
    m = _attempt_regex(workload, check).match(request_name)
    return int(m.group(1)) if m else None


# --- ProvisioningRequestConfig --------------------------------------------------------------------


def parameters_ref_error(ref: Mapping[str, Any] | None) -> str | None:
    """Why an AdmissionCheck's ``spec.parameters`` cannot name a ProvisioningRequestConfig."""
    if not ref:
        return "missing parameters reference"
    if not ref.get("name"):
        return "empty name: bad parameters reference"
    if ref.get("apiGroup") != CONFIG_GROUP:
        return (
            f'wrong group "{ref.get("apiGroup", "")}", expecting "{CONFIG_GROUP}": bad parameters reference'
        )
    if ref.get("kind") != CONFIG_KIND:
        return f'wrong kind "{ref.get("kind", "")}", expecting "{CONFIG_KIND}": bad parameters reference'
    return None


def config_name_of(ac: Mapping[str, Any]) -> str | None:
    """The ProvisioningRequestConfig an AdmissionCheck of this controller references, if valid."""
    spec = ac.get("spec") or {}
    if spec.get("controllerName") != CONTROLLER_NAME:
        return None
    ref = spec.get("parameters")
    if ref is None or parameters_ref_error(ref) is not None:
        return None
    return str(ref["name"])


@dataclass(frozen=True)
class RetryStrategy:
    """``spec.retryStrategy`` with Kueue's defaults (3 / 60 s / 1800 s)."""

    backoff_limit_count: int = DEFAULT_BACKOFF_LIMIT_COUNT
    backoff_base_seconds: int = DEFAULT_BACKOFF_BASE_SECONDS
    backoff_max_seconds: int = DEFAULT_BACKOFF_MAX_SECONDS

    @classmethod
    def of(cls, prc: Mapping[str, Any]) -> RetryStrategy:
        """The strategy of a ProvisioningRequestConfig (fields default individually)."""
        rs = (prc.get("spec") or {}).get("retryStrategy") or {}

        def pick(name: str, default: int) -> int:
            value = rs.get(name)
            return default if value is None else int(value)

        return cls(
            pick("backoffLimitCount", DEFAULT_BACKOFF_LIMIT_COUNT),
            pick("backoffBaseSeconds", DEFAULT_BACKOFF_BASE_SECONDS),
            pick("backoffMaxSeconds", DEFAULT_BACKOFF_MAX_SECONDS),
        )


def _uses_resources(pod_spec: Mapping[str, Any], resources: set[str]) -> bool:
    for key in ("initContainers", "containers"):
        for c in pod_spec.get(key) or ():
            res = c.get("resources") or {}
            if any(name in resources for name in (res.get("requests") or {})):
                return True
            if any(name in resources for name in (res.get("limits") or {})):
                return True
    return False


def _assignments(wl: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    admission = (wl.get("status") or {}).get("admission") or {}
    return {str(a.get("name")): a for a in admission.get("podSetAssignments") or ()}


@dataclass
class MergedPodSet:
    """One entry of a request's ``spec.podSets``: the first podSet of a merged group."""

    name: str
    pod_set: dict[str, Any]
    assignment: dict[str, Any]
    count: int
    members: list[str] = field(default_factory=list)


def required_pod_sets(wl: Mapping[str, Any], prc: Mapping[str, Any]) -> list[tuple[dict[str, Any], int]]:
    """PodSets (spec order) that need capacity under ``prc``, with their admitted counts.

    A podSet needs capacity when its count is positive, it uses one of the config's
    ``managedResources`` (any resource when the list is empty) and its assignment's count
    (default: the spec count) is positive.
    """
    managed = set((prc.get("spec") or {}).get("managedResources") or ())
    assignments = _assignments(wl)
    out: list[tuple[dict[str, Any], int]] = []
    for ps in (wl.get("spec") or {}).get("podSets") or ():
        spec_count = int(ps.get("count", 1))
        if spec_count <= 0:
            continue
        if managed and not _uses_resources((ps.get("template") or {}).get("spec") or {}, managed):
            continue
        psa = assignments.get(str(ps.get("name")))
        count = spec_count if psa is None or psa.get("count") is None else int(psa["count"])
        if count <= 0:
            continue
        out.append((ps, count))
    return out


def request_is_needed(wl: Mapping[str, Any], prc: Mapping[str, Any]) -> bool:
    """Whether the Workload needs a ProvisioningRequest under ``prc`` (upstream ``reqIsNeeded``).

    True at the first podSet (spec order) with a positive count, using one of the config's
    ``managedResources`` (any resource when the list is empty) and admitted with a positive count
    (default: the spec count). Such a podSet without an assignment, before one that needs
    capacity, raises :class:`InconsistentPodSetAssignments`.
    """
    managed = set((prc.get("spec") or {}).get("managedResources") or ())
    assignments = _assignments(wl)
    for ps in (wl.get("spec") or {}).get("podSets") or ():
        spec_count = int(ps.get("count", 1))
        if spec_count <= 0:
            continue
        if managed and not _uses_resources((ps.get("template") or {}).get("spec") or {}, managed):
            continue
        name = str(ps.get("name"))
        psa = assignments.get(name)
        if psa is None:
            raise InconsistentPodSetAssignments(f'missing assignment for PodSet "{name}"')
        count = spec_count if psa.get("count") is None else int(psa["count"])
        if count > 0:
            return True
    return False


def _requests_per_container(pod_spec: Mapping[str, Any], key: str) -> list[Any]:
    return [((c.get("resources") or {}).get("requests") or {}) for c in pod_spec.get(key) or ()]


def _similar_scheduling(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    sa = (a.get("template") or {}).get("spec") or {}
    sb = (b.get("template") or {}).get("spec") or {}
    for key in ("containers", "initContainers"):
        if _requests_per_container(sa, key) != _requests_per_container(sb, key):
            return False
    return all(
        (sa.get(key) or None) == (sb.get(key) or None)
        for key in ("resources", "nodeSelector", "tolerations", "affinity", "resourceClaims")
    )


def _can_merge(first: Mapping[str, Any], other: Mapping[str, Any], policy: str | None) -> bool:
    if policy == IDENTICAL_POD_TEMPLATES:
        return bool((first.get("template") or {}) == (other.get("template") or {}))
    if policy == IDENTICAL_SCHEDULING_REQUIREMENTS:
        return _similar_scheduling(first, other)
    return False


def merge_pod_sets(wl: Mapping[str, Any], prc: Mapping[str, Any]) -> list[MergedPodSet]:
    """The request's podSets: required podSets merged per ``podSetMergePolicy`` (none: one each)."""
    policy = (prc.get("spec") or {}).get("podSetMergePolicy")
    assignments = _assignments(wl)
    merged: list[MergedPodSet] = []
    for ps, count in required_pod_sets(wl, prc):
        name = str(ps.get("name"))
        psa = assignments.get(name)
        if psa is None:
            raise InconsistentPodSetAssignments()
        target = next((m for m in merged if policy and _can_merge(m.pod_set, ps, policy)), None)
        if target is not None:
            target.count += count
            target.members.append(name)
            continue
        merged.append(MergedPodSet(name, ps, psa, count, [name]))
    return merged


def request_synced_with_config(
    pr: Mapping[str, Any], prc: Mapping[str, Any], wl: Mapping[str, Any] | None = None
) -> bool:
    """Same class as the config and every config parameter present with the value it was given.

    A ``provreq.kueue.x-k8s.io/`` annotation of the Workload (``wl``) legitimately overrides a
    config parameter; comparing with the raw config value there would delete and recreate the
    request on every pass, so the expected value is the one :func:`request_parameters` produces.
    """
    spec = pr.get("spec") or {}
    cfg = prc.get("spec") or {}
    if spec.get("provisioningClassName") != cfg.get("provisioningClassName"):
        return False
    params = spec.get("parameters") or {}
    expected = request_parameters(wl, prc) if wl is not None else dict(cfg.get("parameters") or {})
    return all(params.get(key) == expected[key] for key in (cfg.get("parameters") or {}))


def request_parameters(wl: Mapping[str, Any], prc: Mapping[str, Any]) -> dict[str, str]:
    """Config parameters, overridden by the Workload's ``provreq.kueue.x-k8s.io/*`` annotations."""
    params = dict((prc.get("spec") or {}).get("parameters") or {})
    for key, value in (st.metadata(wl).get("annotations") or {}).items():
        if key.startswith(PROVREQ_ANNOTATION_PREFIX):
            params[key[len(PROVREQ_ANNOTATION_PREFIX) :]] = value
    return params


def pod_set_updates(
    wl: Mapping[str, Any], pr: Mapping[str, Any], prc: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """podSetUpdates for a provisioned request: consume + class annotations per request podSet,
    and the config's ``podSetUpdates.nodeSelector`` filled from ``provisioningClassDetails``."""
    name = str(st.metadata(pr).get("name"))
    spec = pr.get("spec") or {}
    by_template = {
        pod_template_name(name, str(ps.get("name"))): str(ps.get("name"))
        for ps in (wl.get("spec") or {}).get("podSets") or ()
    }
    details = (pr.get("status") or {}).get("provisioningClassDetails") or {}
    selectors = ((prc.get("spec") or {}).get("podSetUpdates") or {}).get("nodeSelector")
    updates: list[dict[str, Any]] = []
    for ps in spec.get("podSets") or ():
        update: dict[str, Any] = {
            "name": by_template.get(str((ps.get("podTemplateRef") or {}).get("name")), ""),
            "annotations": {
                CONSUMES_ANNOTATION: name,
                CLASS_NAME_ANNOTATION: str(spec.get("provisioningClassName", "")),
            },
        }
        if selectors is not None:
            node_selector: dict[str, str] = {}
            for sel in selectors:
                detail = sel.get("valueFromProvisioningClassDetail")
                if detail in details:
                    node_selector[str(sel.get("key"))] = str(details[detail])
                else:
                    log.info("provisioning class detail %r not found in %s", detail, name)
            if node_selector:
                update["nodeSelector"] = node_selector
        updates.append(update)
    return updates


def update_check_message(entry: dict[str, Any], message: str) -> bool:
    """Set a check state's message, reporting whether it changed (upstream ``updateCheckMessage``).

    An empty message is applied as well: a message describing an earlier state of the request
    would mislead in the Workload status and be appended to the events built from the check.
    """
    if str(entry.get("message") or "") == message:
        return False
    entry["message"] = message
    return True


def update_check_state(entry: dict[str, Any], state: str) -> bool:
    """Set a check state's state, reporting whether it changed (upstream ``updateCheckState``)."""
    if entry.get("state") == state:
        return False
    entry["state"] = state
    return True


# --- small JSON helpers ---------------------------------------------------------------------------


def controller_ref(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An ownerReference making ``obj`` the controller (``SetControllerReference``)."""
    meta = st.metadata(obj)
    return {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    ref = controller_of(obj)
    return ref is not None and ref.get("uid") == st.metadata(owner).get("uid")


def _group_of(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def owner_names(obj: Mapping[str, Any]) -> list[str]:
    """The names of an object's owner references, whatever their kind (upstream ``indexRequestsOwner``)."""
    return [str(ref.get("name")) for ref in st.metadata(obj).get("ownerReferences") or () if ref.get("name")]


def owner_workload_name(pr: Mapping[str, Any]) -> str | None:
    """The Workload controlling a ProvisioningRequest (by name, as upstream's index does)."""
    ref = controller_of(pr)
    if ref is None or ref.get("kind") != "Workload" or _group_of(str(ref.get("apiVersion", ""))) != r.KUEUE:
        return None
    return str(ref.get("name"))


def _merge_pod_set_info(
    template: dict[str, Any],
    annotations: dict[str, str],
    node_selector: dict[str, str],
    tolerations: list[Any],
    scheduling_gates: list[Any],
) -> None:
    """``podset.Merge`` of what ``podset.FromAssignment`` gives into a pod template: annotations
    and node selector added (a key the template sets to another value is an error), tolerations
    and scheduling gates appended unless present."""
    meta = template.setdefault("metadata", {})
    spec = template.setdefault("spec", {})
    current_annotations = dict(meta.get("annotations") or {})
    current_selector = dict(spec.get("nodeSelector") or {})
    for field_name, current, new in (
        ("annotations", current_annotations, annotations),
        ("nodeSelector", current_selector, node_selector),
    ):
        for key, value in current.items():
            if key in new and new[key] != value:
                raise ValueError(
                    f"invalid admission check PodSetUpdate: conflict for {field_name}: "
                    f"conflict for key={key}, value1={value}, value2={new[key]}"
                )
    current_annotations.update(annotations)
    current_selector.update(node_selector)
    if current_annotations:
        meta["annotations"] = current_annotations
    if not meta:
        del template["metadata"]
    if current_selector:
        spec["nodeSelector"] = current_selector
    for key, extra in (("tolerations", tolerations), ("schedulingGates", scheduling_gates)):
        items = list(spec.get(key) or [])
        for item in extra:
            if item not in items:
                items.append(item)
        if items:
            spec[key] = items


def _use_limits_as_missing_requests(pod_spec: dict[str, Any]) -> None:
    for key in ("initContainers", "containers"):
        for c in pod_spec.get(key) or ():
            res = c.get("resources")
            if not res or not res.get("limits"):
                continue
            requests = res.setdefault("requests", {})
            for name, value in res["limits"].items():
                requests.setdefault(name, value)


# --- the controller -------------------------------------------------------------------------------


@dataclass
class _StateSync:
    """The outcome of one check-state pass: events to record and whether it was aborted."""

    notes: list[str] = field(default_factory=list)
    aborted: bool = False


_VIEW_METADATA = ("name", "namespace", "uid", "resourceVersion")


def check_view(workload: dict[str, Any]) -> dict[str, Any]:
    """What this controller's Workload cache keeps: kind, key and ``status.admissionChecks``.

    Its reconcile reads the Workload fresh before it decides anything (``_reconcile_workload``);
    the cache only routes changes and tells which Workloads carry a check. Whole Workloads, even
    without managedFields, were about 5 KiB each of the controller process's RSS (16 dicts: pod
    set templates, admission, conditions) for every Workload of the cluster."""
    meta = workload.get("metadata") or {}
    view: dict[str, Any] = {
        "apiVersion": sys.intern(str(workload.get("apiVersion", ""))),
        "kind": "Workload",
        "metadata": {k: meta[k] for k in _VIEW_METADATA if k in meta},
    }
    checks = (workload.get("status") or {}).get("admissionChecks")
    if checks:
        view["status"] = {"admissionChecks": checks}
    return view


class ProvisioningRequestController(RuntimeComponent):
    """The ``kueue.x-k8s.io/provisioning-request`` admission check controller (component).

    ``start()`` starts its informers and worker thread; ``stop()`` stops and joins them.
    ``gates`` supplies ``CleanupProvisioningRequestsOnEviction`` (default on). ``informers``: the
    controller manager's (:attr:`pykueue.controllers.manager.ControllerManager.informers`); the
    collections they watch (Workloads, AdmissionChecks) are read through them, as upstream's
    controller is built on the manager's shared cache, instead of being watched and decoded again.
    """

    def __init__(
        self,
        client: Client,
        clock: Clock = system_clock,
        *,
        gates: FeatureGates | None = None,
        poll_interval: float = 0.2,
        informers: Mapping[Resource, Informer] | None = None,
    ) -> None:
        self.client = client
        self.clock = clock
        self.gates = gates if gates is not None else FeatureGates()
        self.recorder = EventRecorder(
            client, EVENT_REPORTER, clock, instance=reporting_instance(EVENT_REPORTER)
        )
        self.runtime = ControllerRuntime(
            client, name="provisioning", clock=clock, poll_interval=poll_interval, shared=informers
        )
        # Cached without managedFields, as Kueue's manager caches everything (pkg/config/config.go
        # sets Cache.DefaultTransform = ctrlcache.TransformStripManagedFields()): they are most of a
        # Workload's bytes, and this informer holds every Workload of the cluster (50,000 in
        # Kueue's large-scale benchmark: about 10 KiB each of the controller process's RSS).
        strip = strip_managed_fields
        # (namespace, owner name) -> names of the ProvisioningRequests one of whose owner references
        # names it, and each request's owners: upstream's field index on the owner references
        # (provisioning/indexer.go, indexRequestsOwner: every reference's name, whatever its kind
        # or controller flag), kept by _on_request from the requests informer's changes. owned_requests runs on the manager's Workload informer
        # thread (_on_workload through _concerns_us): a scan of every cached request there would
        # hold up the manager's own intake.
        self._owned: dict[ObjectKey, dict[str, None]] = {}
        self._owner_of: dict[ObjectKey, frozenset[ObjectKey]] = {}
        self._owned_lock = threading.Lock()
        self.checks = self.runtime.informer(r.ADMISSION_CHECKS, self._on_check, transform=strip)
        self.configs = self.runtime.informer(r.PROVISIONING_REQUEST_CONFIGS, self._on_config, transform=strip)
        self.requests = self.runtime.informer(r.PROVISIONING_REQUESTS, self._on_request, transform=strip)
        # Of a Workload only its key and check states: every reconcile that acts reads the Workload
        # fresh, so the cache only routes changes and skips Workloads without a provisioning check.
        self.workloads = self.runtime.informer(r.WORKLOADS, self._on_workload, transform=check_view)
        self.runtime.register(_CHECK, self._reconcile_check)
        self.runtime.register(_WORKLOAD, self._reconcile_workload)

    # -- event routing (informer threads) --------------------------------------------------------

    def _enqueue_workloads_using(self, check: str) -> None:
        for wl in self.workloads.items():
            if st.find_check(wl, check) is not None:
                ns, name = object_key(wl)
                self.runtime.enqueue(_WORKLOAD, ns, name)

    def _on_check(self, change: Change) -> None:
        if change.type == SYNCED:
            return
        ours = [
            obj
            for obj in (change.old, change.new)
            if obj is not None and (obj.get("spec") or {}).get("controllerName") == CONTROLLER_NAME
        ]
        if not ours:
            return
        name = str(st.metadata(change.object).get("name"))
        if change.type != DELETED:
            self.runtime.enqueue(_CHECK, "", name)
        self._enqueue_workloads_using(name)

    def _on_config(self, change: Change) -> None:
        if change.type == SYNCED:
            return
        name = str(st.metadata(change.object).get("name"))
        users = [str(st.metadata(ac).get("name")) for ac in self.checks.items() if config_name_of(ac) == name]
        for check in users:
            self.runtime.enqueue(_CHECK, "", check)
        if change.type == MODIFIED and change.old is not None and change.new is not None:
            old, new = change.old.get("spec") or {}, change.new.get("spec") or {}
            if (
                old.get("provisioningClassName") == new.get("provisioningClassName")
                and (old.get("parameters") or {}) == (new.get("parameters") or {})
                and set(old.get("managedResources") or ()) == set(new.get("managedResources") or ())
            ):
                return
        for check in users:
            self._enqueue_workloads_using(check)

    def _on_request(self, change: Change) -> None:
        if change.type == SYNCED:
            return
        self._index_request(change)
        # Owns(&ProvisioningRequest{}): the change reconciles the Workload controlling the request.
        owner = owner_workload_name(change.object)
        if owner is not None:
            self.runtime.enqueue(_WORKLOAD, str(st.metadata(change.object).get("namespace") or ""), owner)

    def _index_request(self, change: Change) -> None:
        """Keep the owner index in step with the requests informer's cache."""
        key = object_key(change.object)
        ns, name = key
        now = (
            frozenset((ns, owner) for owner in owner_names(change.object))
            if change.type != DELETED
            else frozenset()
        )
        with self._owned_lock:
            prev = self._owner_of.pop(key, frozenset())  # the owners it was indexed under
            if now:
                self._owner_of[key] = now
            if prev == now:  # most changes: the owners stay, and so does the request's place
                return
            for owner_key in prev - now:
                names = self._owned.get(owner_key)
                if names is not None:
                    names.pop(name, None)
                    if not names:
                        del self._owned[owner_key]
            for owner_key in now - prev:
                self._owned.setdefault(owner_key, {})[name] = None

    def _on_workload(self, change: Change) -> None:
        if change.type in (SYNCED, DELETED):
            return  # deletion: owner references let the garbage collector remove the requests
        if not self._concerns_us(change.object):
            # Its reconcile would return at once (_reconcile_workload's first test, on a cache at
            # least this new); a check or request that makes it ours later queues it again
            # (_on_check, _on_request). Most Workloads of most clusters: no queue round per change.
            return
        ns, name = object_key(change.object)
        self.runtime.enqueue(_WORKLOAD, ns, name)

    def _concerns_us(self, cached: Mapping[str, Any]) -> bool:
        """Whether a cached Workload has a check of this controller or a request to clean up."""
        return bool(self._relevant_checks(cached) or self.owned_requests(cached))

    # -- AdmissionCheck Active condition ---------------------------------------------------------

    def _reconcile_check(self, _namespace: str, name: str) -> float | None:
        ac = self.checks.get(("", name))
        if ac is None or (ac.get("spec") or {}).get("controllerName") != CONTROLLER_NAME:
            return None
        status, reason, message = "True", st.ACTIVE_REASON, st.ACTIVE_MESSAGE
        error = parameters_ref_error((ac.get("spec") or {}).get("parameters"))
        if error is None:
            # The informer's cache, as upstream's cached client: a config created later queues this
            # check again (_on_config), so no GET per reconcile is needed.
            name_ = str(ac["spec"]["parameters"]["name"])
            if self.configs.get(("", name_)) is None:
                res = r.PROVISIONING_REQUEST_CONFIGS
                error = f'{res.plural}.{res.group} "{name_}" not found'
        if error is not None:
            status, reason, message = "False", "BadParametersRef", error

        def mutate(obj: dict[str, Any]) -> bool:
            if (obj.get("spec") or {}).get("controllerName") != CONTROLLER_NAME:
                return False
            current = st.find_condition(obj, st.ACTIVE)
            # Upstream rewrites the condition only when its status flips.
            if current is not None and current.get("status") == status:
                return False
            generation = int(st.metadata(obj).get("generation") or 0)
            return st.set_condition(obj, st.ACTIVE, status, reason, message, self.clock(), generation)

        update_status(self.client, r.ADMISSION_CHECKS, ac, mutate)
        return None

    # -- Workloads -------------------------------------------------------------------------------

    def config_for_check(self, check: str) -> dict[str, Any] | None:
        """The ProvisioningRequestConfig of an AdmissionCheck (upstream ``ConfigForAdmissionCheck``).

        None when the check or its config is not found (the check is not active); a parameters
        reference that cannot name a config raises :class:`BadParametersRef`, which fails the
        reconcile as upstream's error, not being a NotFound, does.
        """
        ac = self.checks.get(("", check))
        if ac is None:
            return None
        ref = (ac.get("spec") or {}).get("parameters")
        error = parameters_ref_error(ref)
        if error is not None:
            raise BadParametersRef(error)
        assert ref is not None
        return self.configs.get(("", str(ref["name"])))

    def _relevant_checks(self, wl: Mapping[str, Any]) -> list[str]:
        out = []
        for entry in st.check_states(wl):
            ac = self.checks.get(("", str(entry.get("name"))))
            if ac is not None and (ac.get("spec") or {}).get("controllerName") == CONTROLLER_NAME:
                out.append(str(entry.get("name")))
        return out

    def owned_requests(self, wl: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Cached ProvisioningRequests one of whose owner references names the Workload (same
        namespace; upstream's List by ``RequestsOwnedByWorkloadKey``)."""
        ns, name = object_key(dict(wl))
        with self._owned_lock:
            names = list(self._owned.get((ns, name), ()))
        out = []
        for pr_name in names:
            pr = self.requests.get((ns, pr_name))
            # The cache may be a step ahead of the index (its informer updates the cache before
            # calling _on_request): the owner is checked on the cached object itself; a request
            # added meanwhile queues its Workload again once indexed.
            if pr is not None and name in owner_names(pr):
                out.append(pr)
        return out

    def active_or_last(
        self,
        wl: Mapping[str, Any],
        configs: Mapping[str, dict[str, Any] | None],
        owned: list[dict[str, Any]],
    ) -> dict[str, dict[str, Any]]:
        """Per check, the needed, config-synced request with the highest attempt number."""
        wl_name = str(st.metadata(wl).get("name"))
        out: dict[str, dict[str, Any]] = {}
        best: dict[str, int] = {}
        for check, prc in configs.items():
            if prc is None or not request_is_needed(wl, prc):
                continue
            for pr in owned:
                attempt = attempt_of(str(st.metadata(pr).get("name")), wl_name, check)
                if attempt is None or not request_synced_with_config(pr, prc, wl):
                    continue
                if check not in best or best[check] < attempt:
                    best[check] = attempt
                    out[check] = pr
        return out

    def _reconcile_workload(self, namespace: str, name: str) -> float | None:
        cached = self.workloads.get((namespace, name))
        if cached is None or not self._concerns_us(cached):
            # Nothing of this controller's (no provisioning check, no request to clean up): the
            # cache is at least as new as the change that queued the Workload, so the fresh read
            # below would only cost a round trip per Workload change.
            return None
        try:
            # A fresh read: decisions about attempts must not be made from a cached copy that
            # predates this controller's own last status write.
            wl = self.client.get(r.WORKLOADS, name, namespace)
        except NotFound:
            return None
        finished = st.is_finished(wl)
        evicted = st.is_evicted(wl)
        if not st.has_quota_reservation(wl) and not finished and not evicted:
            return None
        owned = self.owned_requests(wl)
        if finished or (evicted and self.gates.enabled(CLEANUP_GATE)):
            self._delete_requests(owned, keep=set())
            return None
        if evicted:
            return None
        # With no check of this controller left, no request is kept: the cleanup below deletes them.
        relevant = self._relevant_checks(wl)
        configs = {check: self.config_for_check(check) for check in relevant}
        active = self.active_or_last(wl, configs, owned)
        synced = self._sync_check_states(wl, configs, active)
        if synced is None:
            return None
        self._delete_requests(owned, keep={str(st.metadata(pr).get("name")) for pr in active.values()})
        self._sync_owned_requests(synced, configs, active)
        return None

    def _delete_requests(self, owned: list[dict[str, Any]], keep: set[str]) -> None:
        for pr in owned:
            meta = st.metadata(pr)
            if meta.get("name") in keep:
                continue
            with contextlib.suppress(NotFound):  # already gone is what we want
                self.client.delete(r.PROVISIONING_REQUESTS, str(meta.get("name")), str(meta.get("namespace")))

    # -- check states ----------------------------------------------------------------------------

    def _next_check_state(
        self,
        wl: Mapping[str, Any],
        check: str,
        entry: dict[str, Any],
        prc: dict[str, Any] | None,
        pr: dict[str, Any] | None,
    ) -> dict[str, Any] | None:
        """The entry after this pass (a copy), or None to abort the whole pass (the check-state sync of ``provisioning/controller.go``)."""
        new = copy.deepcopy(entry)
        if prc is None:
            update_check_state(new, st.PENDING)
            update_check_message(new, CHECK_INACTIVE_MESSAGE)
            return new
        if not request_is_needed(wl, prc):
            if update_check_state(new, st.READY):
                new["message"] = NO_REQUEST_NEEDED
                new.pop("podSetUpdates", None)
            return new
        if pr is None:
            return None
        wl_name = str(st.metadata(wl).get("name"))
        attempt = attempt_of(str(st.metadata(pr).get("name")), wl_name, check) or 1
        strategy = RetryStrategy.of(prc)

        def retry_or_reject(cond: dict[str, Any], prefix: str) -> None:
            cond_message = str(cond.get("message") or "")
            if attempt <= strategy.backoff_limit_count:
                update_check_message(new, f"{prefix}{cond_message}")
                retry_count = int(new.get("retryCount") or 0)
                # A request older than the retries already taken must not trigger another one.
                if attempt > retry_count:
                    update_check_state(new, st.RETRY)
                    new["requeueAfterSeconds"] = st.requeue_after_seconds(
                        retry_count, strategy.backoff_base_seconds, strategy.backoff_max_seconds
                    )
            else:
                new["state"] = st.REJECTED
                new["message"] = cond_message

        failed = _true_condition(pr, FAILED)
        revoked = _true_condition(pr, CAPACITY_REVOKED)
        expired = _true_condition(pr, BOOKING_EXPIRED)
        provisioned = _true_condition(pr, PROVISIONED)
        if failed is not None:
            retry_or_reject(failed, "Retrying after failure: ")
        elif revoked is not None:
            if st.is_active(wl) and not st.is_finished(wl):
                # Rejecting deactivates the workload: its pods could never run again, the nodes
                # are already gone.
                update_check_state(new, st.REJECTED)
                update_check_message(new, str(revoked.get("message") or ""))
        elif expired is not None:
            if not st.is_admitted(wl):
                retry_or_reject(expired, "Retrying after booking expired: ")
        elif provisioned is not None:
            if update_check_state(new, st.READY):
                updates = pod_set_updates(wl, pr, prc)
                if updates:
                    new["podSetUpdates"] = updates
                else:
                    new.pop("podSetUpdates", None)
                # The request's message replaces the previous one, an empty one included.
                update_check_message(new, str(provisioned.get("message") or ""))
        elif _true_condition(pr, ACCEPTED) is not None:
            eta = st.find_condition(pr, PROVISIONED)
            if eta is not None:
                update_check_message(new, str(eta.get("message") or ""))
                update_check_state(new, st.PENDING)
        else:
            # Nothing to report until the autoscaler sets a condition, and whatever the previous
            # state left behind (e.g. a FailedCreate message) no longer holds.
            update_check_message(new, "")
            update_check_state(new, st.PENDING)
        return new

    def _sync_check_states(
        self,
        wl: dict[str, Any],
        configs: Mapping[str, dict[str, Any] | None],
        active: Mapping[str, dict[str, Any]],
    ) -> dict[str, Any] | None:
        """One status write for every relevant check; returns the Workload as now stored."""
        result = _StateSync()

        def mutate(obj: dict[str, Any]) -> bool:
            result.notes.clear()
            result.aborted = False
            now = self.clock()
            changed = False
            for check, prc in configs.items():
                entry = st.find_check(obj, check)
                if entry is None:
                    continue
                new = self._next_check_state(obj, check, entry, prc, active.get(check))
                if new is None:
                    result.aborted = True
                    return False
                old_state = str(entry.get("state"))
                if old_state != new["state"]:
                    result.notes.append(
                        st.state_change_note(
                            check, old_state, str(new["state"]), str(new.get("message") or "")
                        )
                    )
                changed |= st.set_check_state(
                    obj,
                    check,
                    str(new["state"]),
                    str(new.get("message") or ""),
                    now,
                    pod_set_updates=new.get("podSetUpdates"),
                    requeue_after_seconds=new.get("requeueAfterSeconds"),
                )
            return changed

        stored = update_status(self.client, r.WORKLOADS, wl, mutate)
        if stored is None:
            return None
        if not result.aborted:
            for note in result.notes:
                self.recorder.event(stored, NORMAL, EVENT_CHECK_UPDATED, note)
        return stored

    # -- requests and pod templates --------------------------------------------------------------

    def _sync_owned_requests(
        self,
        wl: dict[str, Any],
        configs: Mapping[str, dict[str, Any] | None],
        active: Mapping[str, dict[str, Any]],
    ) -> None:
        wl_name = str(st.metadata(wl).get("name"))
        for check, prc in configs.items():
            if prc is None or not request_is_needed(wl, prc):
                continue
            entry = st.find_check(wl, check)
            if entry is not None and entry.get("state") == st.READY:
                continue  # provisioned: nothing to create, the templates were passed on already
            pr = active.get(check)
            # After a cleanup deleted the previous request, the retry count names the next attempt.
            attempt = int((entry or {}).get("retryCount") or 0) + 1
            if pr is None:
                pr = self._create_request(wl, check, entry, prc, attempt)
            elif (
                _true_condition(pr, FAILED) is not None
                or (_true_condition(pr, BOOKING_EXPIRED) is not None and not st.is_admitted(wl))
            ) and entry is not None and entry.get("state") == st.PENDING:
                # Failed (or expired before admission) and Pending again: the next attempt. In
                # Retry or Rejected no other request is created.
                attempt = (attempt_of(str(st.metadata(pr).get("name")), wl_name, check) or 1) + 1
                pr = self._create_request(wl, check, entry, prc, attempt)
            self._adopt_pod_templates(wl, pr)

    def _create_request(
        self,
        wl: dict[str, Any],
        check: str,
        entry: dict[str, Any] | None,
        prc: dict[str, Any],
        attempt: int,
    ) -> dict[str, Any]:
        """Create attempt ``attempt`` of the check's request and its missing PodTemplates (upstream
        ``syncOwnedProvisionRequest``); a failed create is reported and raised (the reconcile fails
        and is retried with backoff)."""
        meta = st.metadata(wl)
        namespace = str(meta.get("namespace"))
        name = provisioning_request_name(str(meta.get("name")), check, attempt)
        pod_sets: list[dict[str, Any]] = []
        for merged in merge_pod_sets(wl, prc):
            template_name = pod_template_name(name, merged.name)
            try:
                self.client.get(r.POD_TEMPLATES, template_name, namespace)
            except NotFound:
                try:
                    self.client.create(r.POD_TEMPLATES, self._build_pod_template(wl, template_name, merged))
                except (APIError, ValueError) as err:
                    self._handle_create_error(
                        wl,
                        check,
                        entry,
                        (r.POD_TEMPLATES, template_name, namespace),
                        f'Error creating PodTemplate "{template_name}": {_err_text(err)}',
                        err,
                    )
            pod_sets.append({"podTemplateRef": {"name": template_name}, "count": merged.count})
        body: dict[str, Any] = {
            "apiVersion": r.PROVISIONING_REQUESTS.api_version,
            "kind": r.PROVISIONING_REQUESTS.kind,
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {MANAGED_LABEL: "true"},
                "ownerReferences": [controller_ref(wl)],
            },
            "spec": {"provisioningClassName": (prc.get("spec") or {}).get("provisioningClassName", "")},
        }
        params = request_parameters(wl, prc)
        if params:
            body["spec"]["parameters"] = params
        body["spec"]["podSets"] = pod_sets
        try:
            created = self.client.create(r.PROVISIONING_REQUESTS, body)
        except APIError as err:
            self._handle_create_error(
                wl,
                check,
                entry,
                (r.PROVISIONING_REQUESTS, name, namespace),
                f'Error creating ProvisioningRequest "{name}": {_err_text(err)}',
                err,
            )
        self.recorder.event(
            wl, NORMAL, EVENT_REQUEST_CREATED, f'Created ProvisioningRequest: "{name}"', action="Created"
        )
        return created

    def _build_pod_template(self, wl: dict[str, Any], name: str, merged: MergedPodSet) -> dict[str, Any]:
        template = copy.deepcopy(merged.pod_set.get("template") or {})
        # podset.FromAssignment: the flavors' node labels and tolerations and, for a topology
        # assignment, the topology scheduling gate.
        annotations: dict[str, str] = {}
        scheduling_gates: list[Any] = []
        if self.gates.enabled(TAS_GATE) and merged.assignment.get("topologyAssignment") is not None:
            request = merged.pod_set.get("topologyRequest") or {}
            if all(request.get(k) is None for k in ("preferred", "required", "unconstrained")):
                annotations[PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION] = "true"
            scheduling_gates.append({"name": TOPOLOGY_SCHEDULING_GATE})
        node_selector: dict[str, str] = {}
        tolerations: list[Any] = []
        seen: set[str] = set()
        for flavor in (merged.assignment.get("flavors") or {}).values():
            if flavor in seen:
                continue
            seen.add(flavor)
            rf = self.client.get(r.RESOURCE_FLAVORS, str(flavor))
            rf_spec = rf.get("spec") or {}
            node_selector.update(rf_spec.get("nodeLabels") or {})
            tolerations.extend(rf_spec.get("tolerations") or ())
        _merge_pod_set_info(template, annotations, node_selector, tolerations, scheduling_gates)
        _use_limits_as_missing_requests(template.setdefault("spec", {}))
        return {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {
                "name": name,
                "namespace": st.metadata(wl).get("namespace"),
                "labels": {MANAGED_LABEL: "true"},
                # Owned by the Workload until the request exists, so a failed request creation
                # leaves no orphan; ownership moves to the request afterwards.
                "ownerReferences": [controller_ref(wl)],
            },
            "template": template,
        }

    def _adopt_pod_templates(self, wl: dict[str, Any], pr: dict[str, Any]) -> None:
        namespace = str(st.metadata(pr).get("namespace"))
        for ps in (pr.get("spec") or {}).get("podSets") or ():
            template_name = str((ps.get("podTemplateRef") or {}).get("name"))
            try:
                pt = self.client.get(r.POD_TEMPLATES, template_name, namespace)
            except NotFound:
                continue
            refs = list(st.metadata(pt).get("ownerReferences") or ())
            changed = False
            if _is_controlled_by(pt, wl):
                wl_uid = st.metadata(wl).get("uid")
                refs = [ref for ref in refs if ref.get("uid") != wl_uid]
                changed = True
            if not _is_controlled_by({"metadata": {"ownerReferences": refs}}, pr):
                refs = [ref for ref in refs if ref.get("uid") != st.metadata(pr).get("uid")]
                refs.append(controller_ref(pr))
                changed = True
            if changed:
                pt["metadata"]["ownerReferences"] = refs
                self.client.replace(r.POD_TEMPLATES, pt)

    def is_missing_in_cache(self, res: Resource, name: str, namespace: str) -> bool:
        """Whether the object is absent from what this controller reads (upstream ``isMissingInCache``).

        Paired with an AlreadyExists from the API server, it means an earlier reconcile created
        the object and the cache has not observed it yet. ProvisioningRequests are read from
        the requests informer; PodTemplates, which this controller reads from the API server
        itself, from there.
        """
        if res.plural == r.PROVISIONING_REQUESTS.plural and res.group == r.PROVISIONING_REQUESTS.group:
            return self.requests.get((namespace, name)) is None
        try:
            self.client.get(res, name, namespace)
        except NotFound:
            return True
        return False

    def _handle_create_error(
        self,
        wl: dict[str, Any],
        check: str,
        entry: dict[str, Any] | None,
        obj: tuple[Resource, str, str],
        message: str,
        err: Exception,
    ) -> NoReturn:
        """Report a failed create on the Workload (a FailedCreate event, the message on the check)
        and raise ``err`` (upstream ``handleError``).

        An AlreadyExists for an object the cache has not observed yet is an earlier reconcile's
        own creation that this one raced: the message would outlive the state it describes (it
        stays on the check and is appended to every event built from it), so nothing is
        reported and only the error is raised."""
        if isinstance(err, AlreadyExists) and self.is_missing_in_cache(*obj):
            log.debug("%s already exists but is not in the cache yet, not recording: %s", obj[1], message)
            raise err
        self.recorder.event(wl, WARNING, EVENT_FAILED_CREATE, message, action=EVENT_FAILED_CREATE)
        if entry is None:
            raise err
        state = str(entry.get("state"))
        updates = entry.get("podSetUpdates")
        requeue = entry.get("requeueAfterSeconds")

        def mutate(obj: dict[str, Any]) -> bool:
            if st.find_check(obj, check) is None:
                return False
            return st.set_check_state(
                obj,
                check,
                state,
                message,
                self.clock(),
                pod_set_updates=updates,
                requeue_after_seconds=requeue,
            )

        update_status(self.client, r.WORKLOADS, wl, mutate)
        raise err


ProvisioningCheckController = ProvisioningRequestController
"""Alias under which ``pykueue.cli.components`` wires the controller."""


def _true_condition(obj: Mapping[str, Any], ctype: str) -> dict[str, Any] | None:
    cond = st.find_condition(obj, ctype)
    return cond if cond is not None and cond.get("status") == "True" else None


def _err_text(err: Exception) -> str:
    return err.message if isinstance(err, APIError) else str(err)
