"""Upstream ``pkg/controller/admissionchecks/provisioning/`` unit tests, ported case by case (ids
are upstream's case names): ``TestReconcile``, ``TestActiveOrLastPRForChecks``,
``TestIsMissingInCache``, ``TestUpdateCheckMessage``, ``TestReqIsNeeded``,
``TestMergePodSetsSkipsZeroCounts`` (``controller_test.go``), ``TestReconcileAdmissionCheck``
(``admissioncheck_reconciler_test.go``) and ``TestIndexProvisioningRequests``, ``TestIndexWorkload``,
``TestIndexAdmissionChecks`` (``indexer_test.go``).

``TestReconcile`` runs one reconcile over a fake client seeded with the case's objects; here the
objects are seeded in an embedded API server (no garbage collector, as the fake client), the
controller's informers list them (its worker is not started, so nothing else reconciles), and one
``_reconcile_workload`` runs. Then the Workload's check states, the ProvisioningRequests, the
PodTemplates and the recorded events are compared with the case's.

Where the embedded API server validates what upstream's fake client does not, a case's input is
made valid without changing what it exercises:
- upstream's requests name their owner only (``OwnerReferences: [{Name: "wl"}]``); here they carry
  the Workload's full controller reference (the index keys on the owner's name either way);
- a ProvisioningRequestConfig needs a ``provisioningClassName`` (CRD ``MinLength=1``): the configs
  upstream builds without one get ``class0``, which the expected requests then carry;
- a ProvisioningRequest needs a class and at least one podSet: the bare requests of "remove
  unnecessary requests" and "when the existing request is already visible in the cache" get one.

Not ported: the ``WorkloadRequestUseMergePatch`` variants (pykueue writes statuses with an update).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from pykueue.api.feature_gates import FeatureGates
from pykueue.api.meta import format_time
from pykueue.apiserver.app import create_app
from pykueue.checks import testing as t
from pykueue.client import resources as r
from pykueue.client.inprocess import InProcessClient
from pykueue.client.interface import AlreadyExists, APIError, Client, NotFound, Resource
from pykueue.controllers.admissionchecks.provisioning import (
    CHECK_INACTIVE_MESSAGE,
    CONTROLLER_NAME,
    NO_REQUEST_NEEDED,
    BadParametersRef,
    InconsistentPodSetAssignments,
    ProvisioningRequestController,
    config_name_of,
    merge_pod_sets,
    provisioning_request_name,
    request_is_needed,
    update_check_message,
)
from pykueue.store import Store
from pykueue.store.types import ResourceKey

NS = "ns"
KUEUE = "kueue.x-k8s.io/v1beta2"
AUTOSCALING = "autoscaling.x-k8s.io/v1"
MANAGED = {"kueue.x-k8s.io/managed": "true"}
CONSUME = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS = "autoscaling.x-k8s.io/provisioning-class-name"
BACKOFF_BASE_SECONDS = 60


# --- builders (upstream's wrappers) -------------------------------------------------------------


def pod_set(
    name: str,
    count: int,
    *,
    requests: Mapping[str, str] | None = None,
    priority_class: str | None = None,
    required_topology: str | None = None,
    required_node_affinity: list[dict[str, Any]] | None = None,
    node_selector: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``MakePodSet(name, count)`` with one container ``c`` and ``RestartPolicy: Never``."""
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": dict(requests or {})}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if required_node_affinity:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": required_node_affinity
                }
            }
        }
    ps: dict[str, Any] = {"name": name, "count": count, "template": {"spec": spec}}
    if required_topology:
        ps["topologyRequest"] = {"required": required_topology}
    return ps


def assignment(
    name: str,
    count: int | None = 1,
    flavors: Mapping[str, str] | None = None,
    usage: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``MakePodSetAssignment(name)`` (count 1, no flavors) or a literal ``PodSetAssignment``."""
    psa: dict[str, Any] = {"name": name, "flavors": dict(flavors or {}), "resourceUsage": dict(usage or {})}
    if count is not None:
        psa["count"] = count
    return psa


def check_state(name: str, state: str = "Pending", message: str = "", **extra: Any) -> dict[str, Any]:
    return {"name": name, "state": state, "message": message, **extra}


def condition(ctype: str, status: str, reason: str = "ByTest", message: str = "") -> dict[str, Any]:
    return {"type": ctype, "status": status, "reason": reason, "message": message}


def workload(
    pod_sets: list[dict[str, Any]] | None = None,
    assignments: list[dict[str, Any]] | None = None,
    checks: list[dict[str, Any]] | None = None,
    *,
    annotations: Mapping[str, str] | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``MakeWorkload("wl", "ns")`` (podSet ``main`` ×1 by default), ``ReserveQuotaAt`` an admission
    in ``q1`` (``MakeAdmission("q1")``: ``main`` ×1 by default), the check states, more conditions."""
    meta: dict[str, Any] = {"name": "wl", "namespace": NS}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": meta,
        "spec": {"podSets": pod_sets or [pod_set("main", 1)]},
        "status": {
            "admission": {"clusterQueue": "q1", "podSetAssignments": assignments or [assignment("main")]},
            "conditions": [
                condition("QuotaReserved", "True", "AdmittedByTest", "Admitted by ClusterQueue q1"),
                *(conditions or []),
            ],
            "admissionChecks": checks or [],
        },
    }


def base_workload(**kw: Any) -> dict[str, Any]:
    """Upstream's ``baseWorkload``: ps1 4×1 cpu on flv1 (4 admitted), ps2 4×1M memory on flv2 (3
    admitted), checks ``check1`` and ``not-provisioning`` Pending."""
    kw.setdefault("checks", [check_state("check1"), check_state("not-provisioning")])
    return workload(
        [pod_set("ps1", 4, requests={"cpu": "1"}), pod_set("ps2", 4, requests={"memory": "1M"})],
        [
            assignment("ps1", 4, {"cpu": "flv1"}, {"cpu": "4"}),
            assignment("ps2", 3, {"cpu": "flv2"}, {"cpu": "3M"}),
        ],
        **kw,
    )


def with_limit(wl: dict[str, Any], resource: str, quantity: str) -> dict[str, Any]:
    """``WorkloadWrapper.Limit``: a limit on the first container of the first podSet."""
    wl = copy.deepcopy(wl)
    wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["limits"] = {
        resource: quantity
    }
    return wl


def all_zero_count_workload() -> dict[str, Any]:
    wl = base_workload()
    for ps in wl["spec"]["podSets"]:
        ps["count"] = 0
    for psa in wl["status"]["admission"]["podSetAssignments"]:
        psa["count"] = 0
    return wl


TOLERATION = {"key": "f1t1k", "value": "f1t1v", "operator": "Equal", "effect": "NoSchedule"}


def flavors() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": "flv1"},
            "spec": {"nodeLabels": {"f1l1": "v1"}, "tolerations": [TOLERATION]},
        },
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": "flv2"},
            "spec": {"nodeLabels": {"f2l1": "v1"}},
        },
    ]


def config(
    *,
    provisioning_class: str = "class1",
    parameters: Mapping[str, str] | None = None,
    retry_limit: int | None = 3,
    managed_resources: list[str] | None = None,
    pod_set_updates: dict[str, Any] | None = None,
    merge_policy: str | None = None,
) -> dict[str, Any]:
    """``config1``: upstream's ``baseConfig`` (class1, p1=v1) with ``baseConfigWithRetryStrategy``'s
    retry strategy (3 / 60 s / 1800 s) unless ``retry_limit`` is None."""
    spec: dict[str, Any] = {"provisioningClassName": provisioning_class}
    if parameters is None:
        parameters = {"p1": "v1"}
    if parameters:
        spec["parameters"] = dict(parameters)
    if retry_limit is not None:
        spec["retryStrategy"] = {
            "backoffLimitCount": retry_limit,
            "backoffBaseSeconds": BACKOFF_BASE_SECONDS,
            "backoffMaxSeconds": 1800,
        }
    if managed_resources:
        spec["managedResources"] = list(managed_resources)
    if pod_set_updates:
        spec["podSetUpdates"] = pod_set_updates
    if merge_policy:
        spec["podSetMergePolicy"] = merge_policy
    return {
        "apiVersion": KUEUE,
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": "config1"},
        "spec": spec,
    }


def bare_config() -> dict[str, Any]:
    """``MakeProvisioningRequestConfig("config1").Obj()`` (with the class the CRD requires)."""
    return config(provisioning_class="class0", parameters={}, retry_limit=None)


def admission_check(
    name: str = "check1", *, parameters: Mapping[str, str] | None = None, controller: str = CONTROLLER_NAME
) -> dict[str, Any]:
    """``baseCheck``: controlled by the provisioning controller, parameters ``config1``."""
    return t.admission_check(
        name,
        controller,
        {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "config1"}
        if parameters is None
        else parameters,
    )


def base_request_spec(name: str = "wl-check1-1") -> dict[str, Any]:
    return {
        "podSets": [
            {"podTemplateRef": {"name": f"ppt-{name}-ps1"}, "count": 4},
            {"podTemplateRef": {"name": f"ppt-{name}-ps2"}, "count": 3},
        ],
        "provisioningClassName": "class1",
        "parameters": {"p1": "v1"},
    }


def request(
    name: str = "wl-check1-1",
    spec: Mapping[str, Any] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    *,
    labels: Mapping[str, str] | None = MANAGED,
    owned: bool = True,
    details: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``baseRequest`` (``owned``: its owner reference is filled in with the seeded Workload's)."""
    pr: dict[str, Any] = {
        "apiVersion": AUTOSCALING,
        "kind": "ProvisioningRequest",
        "metadata": {"name": name, "namespace": NS},
        "spec": copy.deepcopy(dict(spec if spec is not None else base_request_spec(name))),
    }
    if labels:
        pr["metadata"]["labels"] = dict(labels)
    if owned:
        pr["metadata"]["ownerReferences"] = "wl"  # resolved when seeded
    status: dict[str, Any] = {}
    if conditions:
        status["conditions"] = conditions
    if details:
        status["provisioningClassDetails"] = dict(details)
    if status:
        pr["status"] = status
    return pr


def by_test(ctype: str) -> list[dict[str, Any]]:
    """``requestWithCondition(r, type, True)``: the condition with message "By test"."""
    return [condition(ctype, "True", ctype, "By test")]


def template(
    name: str,
    requests: Mapping[str, str],
    node_selector: Mapping[str, str],
    *,
    tolerations: list[dict[str, Any]] | None = None,
    limits: Mapping[str, str] | None = None,
    priority_class: str | None = None,
    affinity: dict[str, Any] | None = None,
    annotations: Mapping[str, str] | None = None,
    scheduling_gates: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``MakePodTemplate(name, ns)`` as the controller builds it (container ``c``)."""
    resources: dict[str, Any] = {"requests": dict(requests)}
    if limits:
        resources["limits"] = dict(limits)
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "pause", "resources": resources}],
        "nodeSelector": dict(node_selector),
    }
    if tolerations:
        spec["tolerations"] = tolerations
    if priority_class:
        spec["priorityClassName"] = priority_class
    if affinity:
        spec["affinity"] = affinity
    if scheduling_gates:
        spec["schedulingGates"] = scheduling_gates
    pod: dict[str, Any] = {"spec": spec}
    if annotations:
        pod["metadata"] = {"annotations": dict(annotations)}
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": name, "namespace": NS, "labels": dict(MANAGED)},
        "template": pod,
    }


def base_template1(prefix: str = "ppt-wl-check1-1") -> dict[str, Any]:
    return template(f"{prefix}-ps1", {"cpu": "1"}, {"f1l1": "v1"}, tolerations=[TOLERATION])


def base_template2(prefix: str = "ppt-wl-check1-1") -> dict[str, Any]:
    return template(f"{prefix}-ps2", {"memory": "1M"}, {"f2l1": "v1"})


def owned_by_workload(pt: dict[str, Any]) -> dict[str, Any]:
    pt = copy.deepcopy(pt)
    pt["metadata"]["ownerReferences"] = "wl"
    return pt


# --- the harness --------------------------------------------------------------------------------


CreateHook = Callable[[Resource, Mapping[str, Any]], APIError | None]


class _InterceptingClient:
    """Upstream's ``interceptor.Funcs{Create: ...}``: the hook may fail a create (nothing stored)."""

    def __init__(self, inner: Client, create: CreateHook | None) -> None:
        self._inner = inner
        self._create = create

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        if self._create is not None:
            err = self._create(res, obj)
            if err is not None:
                raise err
        return self._inner.create(res, obj)


class _Recorder:
    """Upstream's ``utiltesting.EventRecorder``: (key, type, reason, message) of each event."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []
        self._lock = threading.Lock()

    def event(
        self, obj: Mapping[str, Any], type_: str, reason: str, note: str, action: str | None = None
    ) -> None:
        meta = obj.get("metadata") or {}
        with self._lock:
            self.events.append((f"{meta.get('namespace')}/{meta.get('name')}", type_, reason, note))


@dataclass
class World:
    client: Client
    store: Store
    clock: t.FakeClock
    controller: ProvisioningRequestController
    recorder: _Recorder
    workload: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        for inf in self.controller.runtime._informers:
            inf.stop()
        self.store.close()


def _controller_ref(owner: Mapping[str, Any]) -> dict[str, Any]:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def make_world(
    *,
    workload_obj: dict[str, Any] | None = None,
    requests: list[dict[str, Any]] = (),  # type: ignore[assignment]
    templates: list[dict[str, Any]] = (),  # type: ignore[assignment]
    checks: list[dict[str, Any]] = (),  # type: ignore[assignment]
    configs: list[dict[str, Any]] = (),  # type: ignore[assignment]
    flavor_objs: list[dict[str, Any]] = (),  # type: ignore[assignment]
    gates: Mapping[str, bool] | None = None,
    create_hook: CreateHook | None = None,
    unvalidated_status: bool = False,
) -> World:
    """Seed the API server with the case's objects, then list them into a controller whose worker
    is not started: only the reconcile the test runs acts."""
    store = Store(None, garbage_collection=False)
    _, parts = create_app(store)
    parts.bootstrap()
    client: Client = InProcessClient(parts.handlers)
    client.create(r.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    clock = t.FakeClock()
    now = format_time(clock())
    for obj in flavor_objs:
        client.create(r.RESOURCE_FLAVORS, obj)
    for obj in configs:
        client.create(r.PROVISIONING_REQUEST_CONFIGS, obj)
    for obj in checks:
        client.create(r.ADMISSION_CHECKS, obj)
    wl: dict[str, Any] = {}
    if workload_obj is not None:
        body = copy.deepcopy(workload_obj)
        status = body.pop("status", None)
        wl = client.create(r.WORKLOADS, body)
        if status:
            for cond in status.get("conditions") or ():
                cond.setdefault("lastTransitionTime", now)
            for state in status.get("admissionChecks") or ():
                state.setdefault("lastTransitionTime", now)
            wl["status"] = status
            if unvalidated_status:
                wl = store.update(ResourceKey(r.KUEUE, r.WORKLOADS.plural, True), wl, subresource="status")
            else:
                wl = client.replace(r.WORKLOADS, wl, subresource="status")

    def owned(obj: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(obj)
        if obj["metadata"].get("ownerReferences") == "wl":
            obj["metadata"]["ownerReferences"] = [_controller_ref(wl)]
        return obj

    for obj in templates:
        client.create(r.POD_TEMPLATES, owned(obj))
    for obj in requests:
        body = owned(obj)
        status = body.pop("status", None)
        pr = client.create(r.PROVISIONING_REQUESTS, body)
        if status:
            for cond in status.get("conditions") or ():
                cond.setdefault("lastTransitionTime", now)
            pr["status"] = status
            client.replace(r.PROVISIONING_REQUESTS, pr, subresource="status")
    ctl = ProvisioningRequestController(
        _InterceptingClient(client, create_hook),  # type: ignore[arg-type]
        clock,
        gates=FeatureGates(dict(gates or {})),
    )
    recorder = _Recorder()
    ctl.recorder = recorder  # type: ignore[assignment]
    for inf in ctl.runtime._informers:
        inf.start()
    assert ctl.wait_synced(10)
    return World(client, store, clock, ctl, recorder, wl)


# --- reading back -------------------------------------------------------------------------------


def _strip_times(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_times(v) for k, v in obj.items() if k != "lastTransitionTime"}
    if isinstance(obj, list):
        return [_strip_times(v) for v in obj]
    return obj


def _get(client: Client, res: Resource, name: str) -> dict[str, Any] | None:
    try:
        return client.get(res, name, NS)
    except NotFound:
        return None


def _owner(obj: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    return [
        (str(ref.get("kind")), str(ref.get("name")), bool(ref.get("controller")))
        for ref in obj["metadata"].get("ownerReferences") or ()
    ]


def _template_view(pt: Mapping[str, Any]) -> dict[str, Any]:
    """What upstream compares of a PodTemplate (its spec less RestartPolicy; name, labels, owners)."""
    spec = copy.deepcopy((pt.get("template") or {}).get("spec") or {})
    spec.pop("restartPolicy", None)
    containers = [
        {"name": c.get("name"), "resources": c.get("resources") or {}} for c in spec.pop("containers", [])
    ]
    kept = {
        k: spec[k]
        for k in ("nodeSelector", "tolerations", "priorityClassName", "affinity", "schedulingGates")
        if spec.get(k)
    }
    annotations = ((pt.get("template") or {}).get("metadata") or {}).get("annotations")
    if annotations:
        kept["annotations"] = annotations
    return {
        "name": pt["metadata"]["name"],
        "labels": pt["metadata"].get("labels") or {},
        "owners": _owner(pt),
        "containers": containers,
        **kept,
    }


def _expected_template(pt: dict[str, Any], owner: tuple[str, str]) -> dict[str, Any]:
    view = _template_view({**pt, "metadata": {**pt["metadata"], "ownerReferences": []}})
    view["owners"] = [(owner[0], owner[1], True)]
    return view


PR_OWNER = ("ProvisioningRequest", "wl-check1-1")
WL_OWNER = ("Workload", "wl")


# --- TestReconcile ------------------------------------------------------------------------------


@dataclass
class Case:
    workload: dict[str, Any]
    requests: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    configs: list[dict[str, Any]] = field(default_factory=list)
    flavors: list[dict[str, Any]] = field(default_factory=list)
    gates: dict[str, bool] = field(default_factory=dict)
    create_hook: CreateHook | None = None
    unvalidated_status: bool = False
    """Write the Workload's status past the API server's validation (which upstream's fake client lacks)."""
    want_error: type[Exception] | None = None
    want_error_text: str | None = None
    want_checks: list[dict[str, Any]] | None = None
    """The Workload's check states afterwards (None: as seeded); the rest of it must not change."""
    want_requests: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    """name -> (spec, labels, owner) expected, or None for "not found" (upstream's empty object)."""
    want_templates: dict[str, tuple[dict[str, Any], tuple[str, str]]] = field(default_factory=dict)
    want_requests_not_found: list[str] = field(default_factory=list)
    want_events: list[tuple[str, str, str]] = field(default_factory=list)


def _fail_create(kind: str, err: APIError) -> CreateHook:
    def hook(res: Resource, obj: Mapping[str, Any]) -> APIError | None:
        return err if res.kind == kind else None

    return hook


ERR_INVALID_POD_TEMPLATE = APIError(500, "InternalError", "invalid PodTemplate error")
ERR_INVALID_PROVISIONING_REQUEST = APIError(500, "InternalError", "invalid ProvisioningRequest error")
ERR_PROVISIONING_REQUEST_EXISTS = AlreadyExists(
    409, "AlreadyExists", 'provisioningrequests.autoscaling.x-k8s.io "wl-check1-1" already exists'
)

CREATED = ("Normal", "ProvisioningRequestCreated", 'Created ProvisioningRequest: "wl-check1-1"')


def _updated(note: str) -> tuple[str, str, str]:
    return ("Normal", "AdmissionCheckUpdated", note)


def _want_request(spec: dict[str, Any], labels: Mapping[str, str] = MANAGED) -> dict[str, Any]:
    return {"spec": spec, "labels": dict(labels), "owners": [("Workload", "wl", True)]}


READY_UPDATES = [
    {"name": ps, "annotations": {CONSUME: "wl-check1-1", CLASS: "class1"}} for ps in ("ps1", "ps2")
]

CAPACITY_REVOKED_CONDITIONS = [
    condition("Failed", "False"),
    condition("Provisioned", "True"),
    condition("Accepted", "True"),
    condition("CapacityRevoked", "True"),
]


def _booking_expired(message: str = "") -> list[dict[str, Any]]:
    return [
        condition("Failed", "False"),
        condition("Provisioned", "True"),
        condition("Accepted", "True"),
        condition("BookingExpired", "True", message=message),
    ]


PROVREQ_ANNOTATIONS = {
    "provreq.kueue.x-k8s.io/ValidUntilSeconds": "0",
    "invalid-provreq-prefix/Foo1": "Bar1",
    "another-invalid-provreq-prefix/Foo2": "Bar2",
}

MERGE_ASSIGNMENTS = [
    assignment("ps1", 1, {"cpu": "flv1"}, {"cpu": "1"}),
    assignment("ps2", 2, {"cpu": "flv1"}, {"cpu": "1"}),
    assignment("ps3", 2, {"cpu": "flv2"}, {"memory": "1M"}),
    assignment("ps4", 1, {"cpu": "flv2"}, {"memory": "1M"}),
    assignment("ps5", 1, {"cpu": "flv2"}, {"memory": "1M"}),
]

AFFINITY_TERMS = [{"matchExpressions": [{"key": "type", "operator": "In", "values": ["two"]}]}]

MERGED_REQUEST_SPEC = {
    "provisioningClassName": "class0",
    "podSets": [
        {"podTemplateRef": {"name": "ppt-wl-check1-1-ps1"}, "count": 3},
        {"podTemplateRef": {"name": "ppt-wl-check1-1-ps3"}, "count": 3},
        {"podTemplateRef": {"name": "ppt-wl-check1-1-ps5"}, "count": 1},
    ],
}

TWO_CHECKS = [check_state("check1"), check_state("not-provisioning")]


def _checks(first: dict[str, Any]) -> list[dict[str, Any]]:
    return [first, check_state("not-provisioning")]


CASES: dict[str, Case] = {
    "unrelated workload": Case(
        workload={**workload(), "status": {}},
    ),
    "unrelated workload with reservation": Case(workload=workload()),
    "unrelated admitted workload": Case(
        workload=workload(
            conditions=[condition("Admitted", "True", "ByTest", "Admitted by ClusterQueue q1")]
        ),
    ),
    "missing config": Case(
        workload=base_workload(),
        checks=[admission_check()],
        want_checks=_checks(check_state("check1", "Pending", CHECK_INACTIVE_MESSAGE)),
    ),
    "with config": Case(
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        want_checks=TWO_CHECKS,
        want_requests={"wl-check1-1": _want_request(base_request_spec())},
        want_templates={
            "ppt-wl-check1-1-ps1": (base_template1(), PR_OWNER),
            "ppt-wl-check1-1-ps2": (base_template2(), PR_OWNER),
        },
        want_events=[CREATED],
    ),
    "with only zero-count PodSets": Case(
        workload=all_zero_count_workload(),
        requests=[request()],
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        want_checks=_checks(check_state("check1", "Ready", NO_REQUEST_NEEDED)),
        want_requests_not_found=["wl-check1-1"],
        want_events=[
            _updated(
                "Admission check check1 updated state from Pending to Ready with message: "
                "the provisioning request is not needed"
            )
        ],
    ),
    "workload with provreq annotation": Case(
        workload=workload(checks=[check_state("check1")], annotations=PROVREQ_ANNOTATIONS),
        checks=[admission_check()],
        configs=[bare_config()],
        want_requests={
            "wl-check1-1": _want_request(
                {
                    "provisioningClassName": "class0",
                    "parameters": {"ValidUntilSeconds": "0"},
                    "podSets": [{"podTemplateRef": {"name": "ppt-wl-check1-1-main"}, "count": 1}],
                }
            )
        },
        want_events=[CREATED],
    ),
    "remove unnecessary requests": Case(
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        requests=[
            request(
                "wl-check2",
                {
                    "provisioningClassName": "class1",
                    "podSets": [{"podTemplateRef": {"name": "x"}, "count": 1}],
                },
                labels=None,
            )
        ],
        want_checks=TWO_CHECKS,
        want_requests_not_found=["wl-check2"],
        want_events=[CREATED],
    ),
    "one template already created": Case(
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        templates=[owned_by_workload(base_template1())],
        want_checks=TWO_CHECKS,
        want_requests={"wl-check1-1": _want_request(base_request_spec())},
        want_templates={
            "ppt-wl-check1-1-ps1": (base_template1(), PR_OWNER),
            "ppt-wl-check1-1-ps2": (base_template2(), PR_OWNER),
        },
        want_events=[CREATED],
    ),
    "request out of sync": Case(
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        requests=[
            request(
                "wl-check1-1",
                {
                    "podSets": [{"podTemplateRef": {"name": "ppt-wl-check1-1-main"}, "count": 1}],
                    "provisioningClassName": "class1",
                    "parameters": {"p1": "v0"},
                },
                labels=None,
            )
        ],
        want_checks=TWO_CHECKS,
        want_requests={"wl-check1-1": _want_request(base_request_spec())},
        want_templates={
            "ppt-wl-check1-1-ps1": (base_template1(), PR_OWNER),
            "ppt-wl-check1-1-ps2": (base_template2(), PR_OWNER),
        },
        want_events=[CREATED],
    ),
    "request removed on workload finished": Case(
        workload=base_workload(conditions=[condition("Finished", "True")]),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        requests=[request()],
        templates=[base_template1(), base_template2()],
        want_requests_not_found=["wl-check1-1"],
    ),
    "request removed on workload evicted": Case(
        workload=base_workload(conditions=[condition("Evicted", "True", "Preempted")]),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        requests=[request()],
        templates=[base_template1(), base_template2()],
        want_requests_not_found=["wl-check1-1"],
    ),
    "request removed on workload evicted by admission check": Case(
        workload=base_workload(conditions=[condition("Evicted", "True", "AdmissionCheck")]),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        requests=[request()],
        templates=[base_template1(), base_template2()],
        want_requests_not_found=["wl-check1-1"],
    ),
    "request preserved on workload evicted when cleanup is disabled": Case(
        workload=base_workload(conditions=[condition("Evicted", "True", "AdmissionCheck")]),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        requests=[request()],
        templates=[base_template1(), base_template2()],
        gates={"CleanupProvisioningRequestsOnEviction": False},
        want_requests={"wl-check1-1": _want_request(base_request_spec())},
    ),
    "when retry count is preserved but provisioning request was cleaned up": Case(
        workload=base_workload(checks=_checks(check_state("check1", retryCount=1))),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        want_checks=_checks(check_state("check1", retryCount=1)),
        want_requests={"wl-check1-2": _want_request(base_request_spec("wl-check1-2"))},
        want_events=[("Normal", "ProvisioningRequestCreated", 'Created ProvisioningRequest: "wl-check1-2"')],
    ),
    "when request fails and is retried": Case(
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config(retry_limit=2)],
        requests=[request(conditions=by_test("Failed"))],
        templates=[base_template1(), base_template2()],
        want_checks=_checks(
            check_state(
                "check1", "Retry", "Retrying after failure: By test", requeueAfterSeconds=BACKOFF_BASE_SECONDS
            )
        ),
        want_events=[
            _updated(
                "Admission check check1 updated state from Pending to Retry with message: Retrying after failure: By test"
            )
        ],
    ),
    "when request fails, and there is no retry": Case(
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config(retry_limit=0)],
        requests=[request(conditions=by_test("Failed"))],
        templates=[base_template1(), base_template2()],
        want_checks=_checks(check_state("check1", "Rejected", "By test")),
        want_events=[
            _updated("Admission check check1 updated state from Pending to Rejected with message: By test")
        ],
    ),
    "when request is provisioned": Case(
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        requests=[request(conditions=by_test("Provisioned"))],
        templates=[base_template1(), base_template2()],
        want_checks=_checks(check_state("check1", "Ready", "By test", podSetUpdates=READY_UPDATES)),
        want_events=[
            _updated("Admission check check1 updated state from Pending to Ready with message: By test")
        ],
    ),
    "when no request is needed": Case(
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config(retry_limit=None, managed_resources=["example.org/gpu"])],
        want_checks=_checks(check_state("check1", "Ready", NO_REQUEST_NEEDED)),
        want_events=[
            _updated(
                "Admission check check1 updated state from Pending to Ready with message: "
                "the provisioning request is not needed"
            )
        ],
    ),
    "when request is needed for one PodSet (resource request)": Case(
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config(retry_limit=None, managed_resources=["memory"])],
        want_checks=TWO_CHECKS,
        want_requests={
            "wl-check1-1": _want_request(
                {
                    "podSets": [{"podTemplateRef": {"name": "ppt-wl-check1-1-ps2"}, "count": 3}],
                    "provisioningClassName": "class1",
                    "parameters": {"p1": "v1"},
                }
            )
        },
        want_templates={"ppt-wl-check1-1-ps2": (base_template2(), PR_OWNER)},
        want_events=[CREATED],
    ),
    "when request is needed for one PodSet (resource limit)": Case(
        workload=with_limit(base_workload(), "example.com/gpu", "1"),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config(retry_limit=None, managed_resources=["example.com/gpu"])],
        want_checks=TWO_CHECKS,
        want_requests={
            "wl-check1-1": _want_request(
                {
                    "podSets": [{"podTemplateRef": {"name": "ppt-wl-check1-1-ps1"}, "count": 4}],
                    "provisioningClassName": "class1",
                    "parameters": {"p1": "v1"},
                }
            )
        },
        want_templates={
            "ppt-wl-check1-1-ps1": (
                template(
                    "ppt-wl-check1-1-ps1",
                    {"cpu": "1", "example.com/gpu": "1"},
                    {"f1l1": "v1"},
                    tolerations=[TOLERATION],
                    limits={"example.com/gpu": "1"},
                ),
                PR_OWNER,
            )
        },
        want_events=[CREATED],
    ),
    "when the request is removed while the check is ready; don't create the ProvReq and keep Ready state": Case(
        workload=base_workload(checks=_checks(check_state("check1", "Ready"))),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        want_checks=_checks(check_state("check1", "Ready")),
        want_requests_not_found=[
            provisioning_request_name("wl", "check1", 1),
            provisioning_request_name("wl", "check2", 1),
        ],
    ),
    "workloads status gets updated based on the provisioning request": Case(
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        templates=[base_template1(), base_template2()],
        requests=[
            request(
                conditions=[
                    condition("Failed", "False"),
                    condition(
                        "Provisioned",
                        "False",
                        message="Provisioning Request wasn't provisioned. ETA: 2024-02-22T10:36:40Z",
                    ),
                    condition("Accepted", "True"),
                ]
            )
        ],
        want_checks=_checks(
            check_state(
                "check1", "Pending", "Provisioning Request wasn't provisioned. ETA: 2024-02-22T10:36:40Z"
            )
        ),
    ),
    "workload sets AdmissionCheck status to Rejected when it is not finished and receives the provisioning request's CapacityRevoked condition": Case(
        workload=base_workload(
            conditions=[condition("Admitted", "True", "ByTest", "Admitted by ClusterQueue q1")]
        ),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        requests=[request(conditions=CAPACITY_REVOKED_CONDITIONS)],
        want_checks=_checks(check_state("check1", "Rejected")),
        want_events=[_updated("Admission check check1 updated state from Pending to Rejected")],
    ),
    "workload sets AdmissionCheck status to Rejected when it is not admitted and receives the provisioning request's CapacityRevoked condition": Case(
        workload=base_workload(
            conditions=[condition("Admitted", "False", "ByTest", "Admitted by ClusterQueue q1")]
        ),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        requests=[request(conditions=CAPACITY_REVOKED_CONDITIONS)],
        want_checks=_checks(check_state("check1", "Rejected")),
        want_events=[_updated("Admission check check1 updated state from Pending to Rejected")],
    ),
    "workloads doesnt set AdmissionCheck status to Rejected when it is finished and receives the provisioning request's CapacityRevoked condition": Case(
        workload=base_workload(conditions=[condition("Finished", "True", "ByTest", "Finished by test")]),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        requests=[request(conditions=CAPACITY_REVOKED_CONDITIONS)],
        want_checks=TWO_CHECKS,
    ),
    "workload does nothing when admitted and receives the provisioning request's BookingExpired condition": Case(
        workload=base_workload(
            conditions=[condition("Admitted", "True", "ByTest", "Admitted by ClusterQueue q1")]
        ),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        requests=[request(conditions=_booking_expired())],
        want_checks=TWO_CHECKS,
    ),
    "workload retries the admission check when is not admitted and receives the provisioning request's BookingExpired condition": Case(
        workload=base_workload(
            conditions=[condition("Admitted", "False", "ByTest", "Admitted by ClusterQueue q1")]
        ),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config(retry_limit=1)],
        requests=[request(conditions=_booking_expired("Expired By test"))],
        want_checks=_checks(
            check_state(
                "check1",
                "Retry",
                "Retrying after booking expired: Expired By test",
                requeueAfterSeconds=BACKOFF_BASE_SECONDS,
            )
        ),
        want_events=[
            _updated(
                "Admission check check1 updated state from Pending to Retry with message: "
                "Retrying after booking expired: Expired By test"
            )
        ],
    ),
    "workload rejects the admission check when is not admitted and receives the provisioning request's BookingExpired condition": Case(
        workload=base_workload(
            conditions=[condition("Admitted", "False", "ByTest", "Admitted by ClusterQueue q1")]
        ),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config(retry_limit=0)],
        requests=[request(conditions=_booking_expired())],
        want_checks=_checks(check_state("check1", "Rejected")),
        want_events=[_updated("Admission check check1 updated state from Pending to Rejected")],
    ),
    "when pod template creation error": Case(
        create_hook=_fail_create("PodTemplate", ERR_INVALID_POD_TEMPLATE),
        workload=workload(checks=[check_state("check1")], annotations=PROVREQ_ANNOTATIONS),
        checks=[admission_check()],
        configs=[bare_config()],
        want_error=APIError,
        want_error_text="invalid PodTemplate error",
        want_checks=[
            check_state(
                "check1",
                "Pending",
                'Error creating PodTemplate "ppt-wl-check1-1-main": invalid PodTemplate error',
            )
        ],
        want_events=[
            (
                "Warning",
                "FailedCreate",
                'Error creating PodTemplate "ppt-wl-check1-1-main": invalid PodTemplate error',
            )
        ],
    ),
    "when provisioning request creation error": Case(
        create_hook=_fail_create("ProvisioningRequest", ERR_INVALID_PROVISIONING_REQUEST),
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        want_error=APIError,
        want_error_text="invalid ProvisioningRequest error",
        want_checks=_checks(
            check_state(
                "check1",
                "Pending",
                'Error creating ProvisioningRequest "wl-check1-1": invalid ProvisioningRequest error',
            )
        ),
        want_requests={"wl-check1-1": None},
        want_templates={
            "ppt-wl-check1-1-ps1": (base_template1(), WL_OWNER),
            "ppt-wl-check1-1-ps2": (base_template2(), WL_OWNER),
        },
        want_events=[
            (
                "Warning",
                "FailedCreate",
                'Error creating ProvisioningRequest "wl-check1-1": invalid ProvisioningRequest error',
            )
        ],
    ),
    "when the provisioning request already exists": Case(
        # The hook rejects the create without storing anything, so the cache misses it as well:
        # the reconcile that lost the race to a cache that has not caught up.
        create_hook=_fail_create("ProvisioningRequest", ERR_PROVISIONING_REQUEST_EXISTS),
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        want_error=AlreadyExists,
        want_checks=TWO_CHECKS,
        want_templates={
            "ppt-wl-check1-1-ps1": (base_template1(), WL_OWNER),
            "ppt-wl-check1-1-ps2": (base_template2(), WL_OWNER),
        },
    ),
    "when the existing request is already visible in the cache": Case(
        # The request carries no ownerReferences, so the owner index keeps it out of the owned
        # requests and the controller creates over it; the cache sees it, so the collision is
        # reported.
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        requests=[
            request(
                "wl-check1-1",
                {
                    "provisioningClassName": "other",
                    "podSets": [{"podTemplateRef": {"name": "x"}, "count": 1}],
                },
                labels=None,
                owned=False,
            )
        ],
        want_error=AlreadyExists,
        want_checks=_checks(
            check_state(
                "check1",
                "Pending",
                'Error creating ProvisioningRequest "wl-check1-1": '
                'provisioningrequests.autoscaling.x-k8s.io "wl-check1-1" already exists',
            )
        ),
        want_events=[
            (
                "Warning",
                "FailedCreate",
                'Error creating ProvisioningRequest "wl-check1-1": '
                'provisioningrequests.autoscaling.x-k8s.io "wl-check1-1" already exists',
            )
        ],
    ),
    "when the request has no conditions yet the previous check message is cleared": Case(
        workload=base_workload(
            checks=_checks(
                check_state(
                    "check1",
                    "Pending",
                    'Error creating ProvisioningRequest "wl-check1-1": '
                    'provisioningrequests.autoscaling.x-k8s.io "wl-check1-1" already exists',
                )
            )
        ),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        requests=[request()],
        templates=[base_template1(), base_template2()],
        want_checks=TWO_CHECKS,
    ),
    "when the request is provisioned the previous check message is cleared": Case(
        workload=base_workload(
            checks=_checks(
                check_state(
                    "check1",
                    "Pending",
                    'Error creating ProvisioningRequest "wl-check1-1": '
                    'provisioningrequests.autoscaling.x-k8s.io "wl-check1-1" already exists',
                )
            )
        ),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        requests=[request(conditions=[condition("Provisioned", "True", "Provisioned")])],
        templates=[base_template1(), base_template2()],
        want_checks=_checks(check_state("check1", "Ready", podSetUpdates=READY_UPDATES)),
        want_events=[_updated("Admission check check1 updated state from Pending to Ready")],
    ),
    "when request is provisioned and has NodeSelector specified via ProvisioningClassDetail": Case(
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[
            config(
                pod_set_updates={
                    "nodeSelector": [
                        {
                            "key": "node-selector-key",
                            "valueFromProvisioningClassDetail": "node-selector-value",
                        }
                    ]
                }
            )
        ],
        requests=[
            request(conditions=by_test("Provisioned"), details={"node-selector-value": "nodes-selector-xyz"})
        ],
        templates=[base_template1(), base_template2()],
        want_checks=_checks(
            check_state(
                "check1",
                "Ready",
                "By test",
                podSetUpdates=[
                    {**u, "nodeSelector": {"node-selector-key": "nodes-selector-xyz"}} for u in READY_UPDATES
                ],
            )
        ),
        want_events=[
            _updated("Admission check check1 updated state from Pending to Ready with message: By test")
        ],
    ),
    "when request is provisioned and has NodeSelector missing in the ProvisioningClassDetail": Case(
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[
            config(
                pod_set_updates={
                    "nodeSelector": [
                        {
                            "key": "node-selector-key",
                            "valueFromProvisioningClassDetail": "node-selector-value",
                        }
                    ]
                }
            )
        ],
        requests=[request(conditions=by_test("Provisioned"), details={"some-detail": "xyz"})],
        templates=[base_template1(), base_template2()],
        want_checks=_checks(check_state("check1", "Ready", "By test", podSetUpdates=READY_UPDATES)),
        want_events=[
            _updated("Admission check check1 updated state from Pending to Ready with message: By test")
        ],
    ),
    "with podSetMergePolicy IdenticalPodTemplates": Case(
        # ps1 and ps2 are identical, so are ps3 and ps4; ps5 differs from them in its priority
        # class only, which IdenticalPodTemplates does not overlook.
        workload=workload(
            [
                pod_set("ps1", 2, requests={"cpu": "1"}),
                pod_set("ps2", 2, requests={"cpu": "1"}),
                pod_set("ps3", 2, requests={"memory": "1M"}, priority_class="pc-100"),
                pod_set("ps4", 2, requests={"memory": "1M"}, priority_class="pc-100"),
                pod_set("ps5", 1, requests={"memory": "1M"}, priority_class="pc-200"),
            ],
            MERGE_ASSIGNMENTS,
            TWO_CHECKS,
        ),
        checks=[admission_check()],
        configs=[
            {**bare_config(), "spec": {**bare_config()["spec"], "podSetMergePolicy": "IdenticalPodTemplates"}}
        ],
        flavors=flavors(),
        want_requests={"wl-check1-1": _want_request(MERGED_REQUEST_SPEC)},
        want_events=[CREATED],
        want_templates={
            "ppt-wl-check1-1-ps1": (base_template1(), PR_OWNER),
            "ppt-wl-check1-1-ps3": (
                template("ppt-wl-check1-1-ps3", {"memory": "1M"}, {"f2l1": "v1"}, priority_class="pc-100"),
                PR_OWNER,
            ),
            "ppt-wl-check1-1-ps5": (
                template("ppt-wl-check1-1-ps5", {"memory": "1M"}, {"f2l1": "v1"}, priority_class="pc-200"),
                PR_OWNER,
            ),
        },
    ),
    "with podSetMergePolicy IdenticalWorkloadSchedulingRequirements": Case(
        # ps1 and ps2 merge (the priority class does not count under this policy), ps3 and ps4
        # too (nor does the topology request); ps5's extra affinity keeps it apart.
        workload=workload(
            [
                pod_set("ps1", 2, requests={"cpu": "1"}, priority_class="pc-100"),
                pod_set("ps2", 2, requests={"cpu": "1"}, priority_class="pc-200"),
                pod_set(
                    "ps3", 2, requests={"memory": "1M"}, priority_class="pc-100", required_topology="default1"
                ),
                pod_set(
                    "ps4", 2, requests={"memory": "1M"}, priority_class="pc-200", required_topology="default2"
                ),
                pod_set(
                    "ps5",
                    1,
                    requests={"memory": "1M"},
                    priority_class="pc-300",
                    required_node_affinity=AFFINITY_TERMS,
                ),
            ],
            MERGE_ASSIGNMENTS,
            TWO_CHECKS,
        ),
        checks=[admission_check()],
        configs=[
            {
                **bare_config(),
                "spec": {
                    **bare_config()["spec"],
                    "podSetMergePolicy": "IdenticalWorkloadSchedulingRequirements",
                },
            }
        ],
        flavors=flavors(),
        want_requests={"wl-check1-1": _want_request(MERGED_REQUEST_SPEC)},
        want_events=[CREATED],
        want_templates={
            "ppt-wl-check1-1-ps1": (
                template(
                    "ppt-wl-check1-1-ps1",
                    {"cpu": "1"},
                    {"f1l1": "v1"},
                    tolerations=[TOLERATION],
                    priority_class="pc-100",
                ),
                PR_OWNER,
            ),
            "ppt-wl-check1-1-ps3": (
                template("ppt-wl-check1-1-ps3", {"memory": "1M"}, {"f2l1": "v1"}, priority_class="pc-100"),
                PR_OWNER,
            ),
            "ppt-wl-check1-1-ps5": (
                template(
                    "ppt-wl-check1-1-ps5",
                    {"memory": "1M"},
                    {"f2l1": "v1"},
                    priority_class="pc-300",
                    affinity={
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": AFFINITY_TERMS
                            }
                        }
                    },
                ),
                PR_OWNER,
            ),
        },
    ),
    "with podSetMergePolicy but no PodSetAssignments": Case(
        workload=workload(
            [
                pod_set("ps11", 2, requests={"cpu": "1"}, priority_class="pc-100"),
                pod_set("ps22", 2, requests={"cpu": "1"}, priority_class="pc-200"),
            ],
            MERGE_ASSIGNMENTS,
            TWO_CHECKS,
        ),
        checks=[admission_check()],
        configs=[
            {
                **bare_config(),
                "spec": {
                    **bare_config()["spec"],
                    "podSetMergePolicy": "IdenticalWorkloadSchedulingRequirements",
                },
            }
        ],
        flavors=flavors(),
        # Its podSetAssignments name other podSets, which the API server's validation refuses.
        unvalidated_status=True,
        want_error=InconsistentPodSetAssignments,
    ),
}


PENDING: dict[str, str] = {
}
"""Cases pykueue decided differently before its fix (upstream is the authority): strict xfails."""


def cases(names: list[str] | dict[str, Any]) -> list[Any]:
    """Case names as pytest params (ids are upstream's names), the PENDING ones as strict xfails."""
    return [
        pytest.param(n, id=n, marks=pytest.mark.xfail(strict=True, reason=PENDING[n]))
        if n in PENDING
        else pytest.param(n, id=n)
        for n in names
    ]


def rows(*table: tuple[Any, ...]) -> list[Any]:
    """Table rows whose first column is the case name, as pytest params (see :func:`cases`)."""
    return [
        pytest.param(*row, id=row[0], marks=pytest.mark.xfail(strict=True, reason=PENDING[row[0]]))
        if row[0] in PENDING
        else pytest.param(*row, id=row[0])
        for row in table
    ]


@pytest.fixture
def world_factory() -> Iterator[Callable[..., World]]:
    made: list[World] = []

    def make(**kw: Any) -> World:
        w = make_world(**kw)
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()


def _checks_view(wl: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [_strip_times(s) for s in (wl.get("status") or {}).get("admissionChecks") or ()]


def _normalized_check(state: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if v not in (None, "", [], {})}


@pytest.mark.parametrize("name", cases(CASES))
def test_reconcile(name: str, world_factory: Callable[..., World]) -> None:
    run_case(CASES[name], world_factory)


def run_case(tc: Case, world_factory: Callable[..., World]) -> None:
    """Seed, reconcile once, compare (the body of upstream's ``TestReconcile`` loop)."""
    w = world_factory(
        workload_obj=tc.workload,
        requests=tc.requests,
        templates=tc.templates,
        checks=tc.checks,
        configs=tc.configs,
        flavor_objs=tc.flavors,
        gates=tc.gates,
        create_hook=tc.create_hook,
        unvalidated_status=tc.unvalidated_status,
    )
    seeded = w.workload
    if tc.want_error is None:
        w.controller._reconcile_workload(NS, "wl")
    else:
        with pytest.raises(tc.want_error) as info:
            w.controller._reconcile_workload(NS, "wl")
        if tc.want_error_text is not None:
            assert tc.want_error_text in str(info.value)

    got = w.client.get(r.WORKLOADS, "wl", NS)
    want_checks = tc.want_checks if tc.want_checks is not None else _checks_view(seeded)
    assert [_normalized_check(s) for s in _checks_view(got)] == [_normalized_check(s) for s in want_checks]
    # Nothing else of the Workload changes.
    assert got["spec"] == seeded["spec"]
    assert {k: v for k, v in (got.get("status") or {}).items() if k != "admissionChecks"} == {
        k: v for k, v in (seeded.get("status") or {}).items() if k != "admissionChecks"
    }

    for pr_name, want in tc.want_requests.items():
        pr = _get(w.client, r.PROVISIONING_REQUESTS, pr_name)
        if want is None:
            assert pr is None, f"request {pr_name} should not exist"
            continue
        assert pr is not None, f"request {pr_name} not found"
        assert {
            "spec": pr["spec"],
            "labels": pr["metadata"].get("labels") or {},
            "owners": _owner(pr),
        } == want, pr_name

    for pt_name, (want_pt, owner) in tc.want_templates.items():
        pt = _get(w.client, r.POD_TEMPLATES, pt_name)
        assert pt is not None, f"template {pt_name} not found"
        assert _template_view(pt) == _expected_template(want_pt, owner), pt_name

    for pr_name in tc.want_requests_not_found:
        assert _get(w.client, r.PROVISIONING_REQUESTS, pr_name) is None, (
            f"request {pr_name} should no longer be found"
        )

    assert [(typ, reason, msg) for _key, typ, reason, msg in w.recorder.events] == tc.want_events
    assert all(key == f"{NS}/wl" for key, *_ in w.recorder.events)


# --- beyond upstream's cases ---------------------------------------------------------------------
#
# Decisions upstream's Reconcile makes that no TestReconcile case exercises, in the same form.


TOPOLOGY = {
    "levels": ["rack"],
    "slices": [{"domainCount": 1, "podCounts": {"universal": 1}, "valuesPerLevel": [{"universal": "r1"}]}],
}
MERGE_CONFLICT = (
    'Error creating PodTemplate "ppt-wl-check1-1-main": invalid admission check PodSetUpdate: '
    "conflict for nodeSelector: conflict for key=f1l1, value1=other, value2=v1"
)

EXTRA_CASES: dict[str, Case] = {
    # Reconcile: with no check of this controller left, checkConfig is empty and
    # deleteUnusedProvisioningRequests keeps none of the Workload's requests.
    "requests removed when no check of the controller is left": Case(
        workload=base_workload(checks=[check_state("not-provisioning")]),
        flavors=flavors(),
        configs=[config()],
        requests=[request()],
        templates=[base_template1(), base_template2()],
        want_requests_not_found=["wl-check1-1"],
    ),
    # Reconcile: ConfigForAdmissionCheck's error for a bad parameters reference is not a NotFound,
    # so the reconcile fails before anything is written or deleted (only a missing config makes
    # the check inactive).
    "a bad parameters reference fails the reconcile": Case(
        workload=base_workload(),
        checks=[
            admission_check(parameters={"apiGroup": "kueue.x-k8s.io", "kind": "BadKind", "name": "config1"})
        ],
        flavors=flavors(),
        configs=[config()],
        requests=[request()],
        want_error=BadParametersRef,
        want_error_text='wrong kind "BadKind", expecting "ProvisioningRequestConfig": bad parameters reference',
        want_checks=TWO_CHECKS,
        want_requests={"wl-check1-1": _want_request(base_request_spec())},
    ),
    "a missing parameters reference fails the reconcile": Case(
        workload=base_workload(),
        checks=[t.admission_check("check1", CONTROLLER_NAME)],
        flavors=flavors(),
        configs=[config()],
        want_error=BadParametersRef,
        want_error_text="missing parameters reference",
        want_checks=TWO_CHECKS,
        want_requests={"wl-check1-1": None},
    ),
    # syncOwnedProvisionRequest skips a Ready check only: a check in Retry or Rejected still has
    # its request's PodTemplates passed to the request...
    "a failed request's templates pass to it while the check is in Retry": Case(
        workload=base_workload(),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config(retry_limit=2)],
        requests=[request(conditions=by_test("Failed"))],
        templates=[owned_by_workload(base_template1()), base_template2()],
        want_checks=_checks(
            check_state(
                "check1", "Retry", "Retrying after failure: By test", requeueAfterSeconds=BACKOFF_BASE_SECONDS
            )
        ),
        want_templates={
            "ppt-wl-check1-1-ps1": (base_template1(), PR_OWNER),
            "ppt-wl-check1-1-ps2": (base_template2(), PR_OWNER),
        },
        want_events=[
            _updated(
                "Admission check check1 updated state from Pending to Retry with message: "
                "Retrying after failure: By test"
            )
        ],
    ),
    # ... and gets one when it has none (e.g. its request went out of sync with the config).
    "a check in Retry without a request gets one": Case(
        workload=base_workload(checks=_checks(check_state("check1", "Retry", "Retrying after failure: x"))),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        want_checks=_checks(check_state("check1", "Retry", "Retrying after failure: x")),
        want_requests={"wl-check1-1": _want_request(base_request_spec())},
        want_events=[CREATED],
    ),
    # createPodTemplate: podset.FromAssignment gates the pods of a podSet with a topology
    # assignment (TopologyAwareScheduling), marking them unconstrained unless the podSet requests
    # a topology...
    "a topology assignment gates the PodTemplate": Case(
        workload=workload(
            [pod_set("main", 1, requests={"cpu": "1"})],
            [{**assignment("main", 1, {"cpu": "flv1"}, {"cpu": "1"}), "topologyAssignment": TOPOLOGY}],
            [check_state("check1")],
        ),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        want_checks=[check_state("check1")],
        want_requests={
            "wl-check1-1": _want_request(
                {
                    **base_request_spec(),
                    "podSets": [{"podTemplateRef": {"name": "ppt-wl-check1-1-main"}, "count": 1}],
                }
            )
        },
        want_templates={
            "ppt-wl-check1-1-main": (
                template(
                    "ppt-wl-check1-1-main",
                    {"cpu": "1"},
                    {"f1l1": "v1"},
                    tolerations=[TOLERATION],
                    annotations={"kueue.x-k8s.io/podset-unconstrained-topology": "true"},
                    scheduling_gates=[{"name": "kueue.x-k8s.io/topology"}],
                ),
                PR_OWNER,
            )
        },
        want_events=[CREATED],
    ),
    "a topology assignment of a podSet requesting a topology gates the PodTemplate": Case(
        workload=workload(
            [pod_set("main", 1, requests={"cpu": "1"}, required_topology="rack")],
            [{**assignment("main", 1, {"cpu": "flv2"}, {"cpu": "1"}), "topologyAssignment": TOPOLOGY}],
            [check_state("check1")],
        ),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        want_checks=[check_state("check1")],
        want_templates={
            "ppt-wl-check1-1-main": (
                template(
                    "ppt-wl-check1-1-main",
                    {"cpu": "1"},
                    {"f2l1": "v1"},
                    scheduling_gates=[{"name": "kueue.x-k8s.io/topology"}],
                ),
                PR_OWNER,
            )
        },
        want_events=[CREATED],
    ),
    # ... and podset.Merge refuses a flavor label the podSet selects another value of.
    "a node selector conflicting with the flavor's fails the PodTemplate": Case(
        workload=workload(
            [pod_set("main", 1, requests={"cpu": "1"}, node_selector={"f1l1": "other"})],
            [assignment("main", 1, {"cpu": "flv1"}, {"cpu": "1"})],
            [check_state("check1")],
        ),
        checks=[admission_check()],
        flavors=flavors(),
        configs=[config()],
        want_error=ValueError,
        want_checks=[check_state("check1", "Pending", MERGE_CONFLICT)],
        want_requests={"wl-check1-1": None},
        want_events=[("Warning", "FailedCreate", MERGE_CONFLICT)],
    ),
}


@pytest.mark.parametrize("name", cases(EXTRA_CASES))
def test_reconcile_beyond_upstream_cases(name: str, world_factory: Callable[..., World]) -> None:
    run_case(EXTRA_CASES[name], world_factory)


# --- TestReconcileAdmissionCheck ----------------------------------------------------------------


AC_CASES: dict[str, tuple[dict[str, Any], list[dict[str, Any]], tuple[str, str, str] | None]] = {
    "unrelated check": (admission_check(controller="other-controller", parameters={}), [], None),
    "no parameters specified": (
        {**t.admission_check("check1", CONTROLLER_NAME)},
        [],
        ("False", "BadParametersRef", "missing parameters reference"),
    ),
    "bad ref group": (
        admission_check(
            parameters={"apiGroup": "bad.group", "kind": "ProvisioningRequestConfig", "name": "config1"}
        ),
        [],
        (
            "False",
            "BadParametersRef",
            'wrong group "bad.group", expecting "kueue.x-k8s.io": bad parameters reference',
        ),
    ),
    "bad ref kind": (
        admission_check(parameters={"apiGroup": "kueue.x-k8s.io", "kind": "BadKind", "name": "config1"}),
        [],
        (
            "False",
            "BadParametersRef",
            'wrong kind "BadKind", expecting "ProvisioningRequestConfig": bad parameters reference',
        ),
    ),
    "config missing": (
        admission_check(),
        [],
        ("False", "BadParametersRef", 'provisioningrequestconfigs.kueue.x-k8s.io "config1" not found'),
    ),
    "config found": (admission_check(), [bare_config()], ("True", "Active", "The admission check is active")),
}


@pytest.mark.parametrize("name", cases(AC_CASES))
def test_reconcile_admission_check(name: str, world_factory: Callable[..., World]) -> None:
    check, configs, want = AC_CASES[name]
    if check["spec"].get("parameters") == {}:
        del check["spec"]["parameters"]
    w = world_factory(checks=[check], configs=configs)
    w.controller._reconcile_check("", "check1")
    got = w.client.get(r.ADMISSION_CHECKS, "check1")
    conds = [c for c in (got.get("status") or {}).get("conditions") or () if c["type"] == "Active"]
    if want is None:
        assert conds == []
        return
    (cond,) = conds
    generation = got["metadata"]["generation"]
    assert (cond["status"], cond["reason"], cond["message"], cond.get("observedGeneration")) == (
        *want,
        generation,
    )


# --- TestActiveOrLastPRForChecks ----------------------------------------------------------------


def _active_or_last_world(world_factory: Callable[..., World], requests: list[dict[str, Any]]) -> World:
    wl = workload(
        [pod_set("main", 4, requests={"cpu": "1"})],
        [assignment("main", 4, {"cpu": "flv1"}, {"cpu": "4"})],
        [check_state("check"), check_state("not-provisioning")],
    )
    return world_factory(workload_obj=wl, requests=requests)


def _pr_check(name: str, conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return request(
        name,
        {
            "podSets": [{"podTemplateRef": {"name": "ppt-wl-check-1-ps1"}, "count": 4}],
            "provisioningClassName": "class1",
            "parameters": {"p1": "v1"},
        },
        conditions,
        labels=None,
    )


ACTIVE_OR_LAST_CASES: dict[str, tuple[list[dict[str, Any]], str | None]] = {
    "no provisioning requests": ([], None),
    "two provisioning requests; 1 then 2": (
        [_pr_check("wl-check-1", by_test("Failed")), _pr_check("wl-check-2")],
        "wl-check-2",
    ),
    "two provisioning requests; 2 then 1": (
        [_pr_check("wl-check-2"), _pr_check("wl-check-1", by_test("Failed"))],
        "wl-check-2",
    ),
}


@pytest.mark.parametrize("name", cases(ACTIVE_OR_LAST_CASES))
def test_active_or_last_pr_for_checks(name: str, world_factory: Callable[..., World]) -> None:
    requests, want = ACTIVE_OR_LAST_CASES[name]
    w = _active_or_last_world(world_factory, requests)
    owned = [w.client.get(r.PROVISIONING_REQUESTS, pr["metadata"]["name"], NS) for pr in requests]
    got = w.controller.active_or_last(w.workload, {"check": config(retry_limit=None)}, owned)
    assert {check: pr["metadata"]["name"] for check, pr in got.items()} == ({"check": want} if want else {})


# --- TestIsMissingInCache -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "seeded", "want"),
    rows(
        ("the cache has not observed the request yet", False, True),
        ("the request is already visible", True, False),
    ),
)
def test_is_missing_in_cache(
    name: str, seeded: bool, want: bool, world_factory: Callable[..., World]
) -> None:
    requests = [_pr_check("wl-check1-1")] if seeded else []
    for pr in requests:
        pr["metadata"].pop("ownerReferences")
    w = world_factory(requests=requests)
    assert w.controller.is_missing_in_cache(r.PROVISIONING_REQUESTS, "wl-check1-1", NS) is want


# --- TestUpdateCheckMessage ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message", "new_message", "want_message", "want_changed"),
    rows(
        ("sets a message on a check that has none", "", "provisioned", "provisioned", True),
        ("replaces an existing message", "waiting for capacity", "provisioned", "provisioned", True),
        (
            "clears an existing message when the new one is empty",
            'Error creating ProvisioningRequest "wl-check1-1": already exists',
            "",
            "",
            True,
        ),
        (
            "reports no change when the message is unchanged",
            "provisioned",
            "provisioned",
            "provisioned",
            False,
        ),
        ("reports no change when both messages are empty", "", "", "", False),
    ),
)
def test_update_check_message(
    name: str, message: str, new_message: str, want_message: str, want_changed: bool
) -> None:
    state: dict[str, Any] = {"name": "check1", "message": message}
    assert update_check_message(state, new_message) is want_changed
    assert state.get("message", "") == want_message


# --- TestReqIsNeeded ----------------------------------------------------------------------------


def _req_workload(spec_count: int, admission_count: int | None, include_assignment: bool) -> dict[str, Any]:
    wl = workload([pod_set("ps", spec_count, requests={"cpu": "1"})])
    wl["status"]["admission"]["podSetAssignments"] = (
        [assignment("ps", admission_count)] if include_assignment else []
    )
    return wl


_NEEDED_SHORT_CIRCUIT = workload(
    [pod_set("ps1", 1, requests={"cpu": "1"}), pod_set("ps2", 1, requests={"cpu": "1"})],
    [assignment("ps1", 1)],
)


@pytest.mark.parametrize(
    ("name", "wl", "want", "want_error"),
    rows(
        ("positive admitted count needs request", _req_workload(1, 1, True), True, False),
        ("missing admitted count falls back to spec count", _req_workload(1, None, True), True, False),
        ("zero admitted count does not need request", _req_workload(1, 0, True), False, False),
        ("zero spec count does not require assignment", _req_workload(0, None, False), False, False),
        ("missing assignment returns inconsistency error", _req_workload(1, None, False), False, True),
        ("needed podset short circuits later missing assignment", _NEEDED_SHORT_CIRCUIT, True, False),
    ),
)
def test_req_is_needed(name: str, wl: dict[str, Any], want: bool, want_error: bool) -> None:
    prc = config(retry_limit=None, parameters={}, managed_resources=["cpu"])
    if want_error:
        with pytest.raises(InconsistentPodSetAssignments):
            request_is_needed(wl, prc)
        return
    assert request_is_needed(wl, prc) is want


# --- TestMergePodSetsSkipsZeroCounts ------------------------------------------------------------


def _merge_workload(spec_counts: list[int], admission_counts: list[int]) -> dict[str, Any]:
    return workload(
        [pod_set(f"ps{i}", c, requests={"cpu": "1"}) for i, c in enumerate(spec_counts)],
        [assignment(f"ps{i}", c) for i, c in enumerate(admission_counts)],
    )


@pytest.mark.parametrize(
    ("name", "wl", "policy", "want_names", "want_counts"),
    rows(
        ("zero spec count", _merge_workload([0, 2], [0, 2]), None, ["ps1"], [2]),
        ("zero admission count override", _merge_workload([1, 2], [0, 2]), None, ["ps1"], [2]),
        (
            "zero count does not block compatible merging",
            _merge_workload([1, 2, 3], [0, 2, 3]),
            "IdenticalPodTemplates",
            ["ps1"],
            [5],
        ),
    ),
)
def test_merge_pod_sets_skips_zero_counts(
    name: str, wl: dict[str, Any], policy: str | None, want_names: list[str], want_counts: list[int]
) -> None:
    prc: dict[str, Any] = {"spec": {"podSetMergePolicy": policy} if policy else {}}
    got = merge_pod_sets(wl, prc)
    assert [m.name for m in got] == want_names
    assert [m.count for m in got] == want_counts


# --- indexer_test.go ----------------------------------------------------------------------------


def _owner_ref(name: str) -> dict[str, Any]:
    """An owner reference naming ``name`` only, as upstream's (not a controller reference)."""
    return {"apiVersion": KUEUE, "kind": "Workload", "name": name, "uid": f"uid-{name}"}


def _index_request(name: str, *owners: str) -> dict[str, Any]:
    pr = request(
        name,
        {"provisioningClassName": "class1", "podSets": [{"podTemplateRef": {"name": "x"}, "count": 1}]},
        labels=None,
        owned=False,
    )
    if owners:
        pr["metadata"]["ownerReferences"] = [_owner_ref(o) for o in owners]
    return pr


@pytest.mark.parametrize(
    ("name", "requests", "want"),
    rows(
        ("no owner", [_index_request("name")], []),
        ("single owner, single match", [_index_request("name"), _index_request("name2", "wl")], ["name2"]),
        (
            "multiple owners, multiple matches",
            [_index_request("name"), _index_request("name2", "wl"), _index_request("name3", "wl-2", "wl")],
            ["name2", "name3"],
        ),
    ),
)
def test_index_provisioning_requests(
    name: str, requests: list[dict[str, Any]], want: list[str], world_factory: Callable[..., World]
) -> None:
    """``RequestsOwnedByWorkloadKey``: the requests any of whose owner references names the Workload
    (upstream's ``wl_2`` is ``wl-2`` here: an owner name must be a valid object name)."""
    w = world_factory(requests=requests)
    got = w.controller.owned_requests({"metadata": {"namespace": NS, "name": "wl"}})
    assert sorted(pr["metadata"]["name"] for pr in got) == want


def _index_workload(name: str, *checks: str) -> dict[str, Any]:
    wl = workload()
    wl["metadata"]["name"] = name
    wl["status"] = {"admissionChecks": [check_state(c) for c in checks]} if checks else {}
    return wl


@pytest.mark.parametrize(
    ("name", "workloads", "want"),
    rows(
        ("no checks", [_index_workload("name")], []),
        (
            "single check, single match",
            [_index_workload("name"), _index_workload("name2", "check")],
            ["name2"],
        ),
        (
            "multiple checks, multiple matches",
            [
                _index_workload("name"),
                _index_workload("name2", "check"),
                _index_workload("name3", "check2", "check"),
            ],
            ["name2", "name3"],
        ),
    ),
)
def test_index_workload(
    name: str, workloads: list[dict[str, Any]], want: list[str], world_factory: Callable[..., World]
) -> None:
    """``WorkloadsWithAdmissionCheckKey``: the Workloads an AdmissionCheck change queues."""
    w = world_factory()
    now = format_time(w.clock())
    for wl in workloads:
        body = copy.deepcopy(wl)
        status = body.pop("status")
        stored = w.client.create(r.WORKLOADS, body)
        if status:
            for state in status["admissionChecks"]:
                state["lastTransitionTime"] = now
            stored["status"] = status
            w.client.replace(r.WORKLOADS, stored, subresource="status")
    t.wait_for(
        lambda: (
            len(w.controller.workloads.items()) == len(workloads)
            and all(
                len((c.get("status") or {}).get("admissionChecks") or ())
                == len(wl["status"].get("admissionChecks") or ())
                for c, wl in zip(
                    sorted(w.controller.workloads.items(), key=lambda o: o["metadata"]["name"]),
                    sorted(workloads, key=lambda o: o["metadata"]["name"]),
                    strict=True,
                )
            )
        )
    )
    queue = w.controller.runtime.queue
    for key in queue.take_ready():
        queue.done(key)
    w.controller._enqueue_workloads_using("check")
    taken = queue.take_ready()
    for key in taken:
        queue.done(key)
    assert sorted(name for _kind, _ns, name in taken) == want


def _index_check(name: str, controller: str, group: str, kind: str, config_name: str) -> dict[str, Any]:
    return t.admission_check(name, controller, {"apiGroup": group, "kind": kind, "name": config_name})


@pytest.mark.parametrize(
    ("name", "checks", "config_name", "want"),
    rows(
        (
            "different controller",
            [_index_check("check1", "other", "kueue.x-k8s.io", "ProvisioningRequestConfig", "config1")],
            "config1",
            [],
        ),
        (
            "bad ref group",
            [_index_check("check1", CONTROLLER_NAME, "core", "ProvisioningRequestConfig", "config1")],
            "config1",
            [],
        ),
        (
            "bad ref kind",
            [_index_check("check1", CONTROLLER_NAME, "kueue.x-k8s.io", "kind", "config1")],
            "config1",
            [],
        ),
        (
            "empty name",
            [_index_check("check1", CONTROLLER_NAME, "kueue.x-k8s.io", "ProvisioningRequestConfig", "")],
            "",
            [],
        ),
        (
            "match",
            [
                _index_check(
                    "check1", CONTROLLER_NAME, "kueue.x-k8s.io", "ProvisioningRequestConfig", "config1"
                )
            ],
            "config1",
            ["check1"],
        ),
        (
            "multiple checks, partial match",
            [
                _index_check(
                    "check1", CONTROLLER_NAME, "kueue.x-k8s.io", "ProvisioningRequestConfig", "config1"
                ),
                _index_check(
                    "check2", CONTROLLER_NAME, "kueue.x-k8s.io", "ProvisioningRequestConfig", "config1"
                ),
                _index_check(
                    "check3", CONTROLLER_NAME, "kueue.x-k8s.io", "ProvisioningRequestConfig", "config2"
                ),
            ],
            "config1",
            ["check1", "check2"],
        ),
    ),
)
def test_index_admission_checks(
    name: str, checks: list[dict[str, Any]], config_name: str, want: list[str]
) -> None:
    """``AdmissionCheckUsingConfigKey``: the checks of this controller validly referencing a config."""
    assert sorted(ac["metadata"]["name"] for ac in checks if config_name_of(ac) == config_name) == want
