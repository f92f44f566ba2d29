"""Upstream's webhook integration tables (``test/integration/singlecluster/webhook/core``), ported.

Each case keeps upstream's name (the pytest id) and sends upstream's objects, in upstream's order
of writes, to pykueue's embedded API server (:class:`APIServerApp`, the request path ``pykueue
serve`` runs: pruning, the CRD's required properties, schema and CEL rules of the version written,
Kueue's mutating and validating webhooks). The answer is compared as upstream's matchers compare
it: ``Succeed``; ``BeInvalidError`` (``apierrors.IsInvalid``: 422, reason Invalid, the CRD's
rules); ``BeForbiddenError`` (``apierrors.IsForbidden``: 403, here always a Kueue webhook's
``admission webhook "<name>" denied the request: ...``). Where a denial's text follows from
upstream's code, the message is asserted verbatim too.

Upstream runs the core controllers beside the webhooks; no case's expectation depends on them
(the two priority-mutability ``It``s only wait for the workload controller's first condition
before updating, which changes nothing the webhook reads).

Ported: ``workload_test.go`` ("Workload defaulting webhook", "Workload validating webhook" create
and update tables and ``It``s, "Workload validating webhook ClusterName - Dispatcher AllAtOnce" and
"- Dispatcher Incremental", "Workload v1beta1 CEL validation"), ``localqueue_test.go``,
``resourceflavor_test.go`` and ``admissioncheck_test.go``: every case, except

- not ported: "TopologyAssignment validation" (4 entries) — Topology Aware Scheduling: pykueue's
  typed model has no v1beta2 ``topologyAssignment`` slices (``status.admission`` topology
  assignments are not modelled).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from pykueue.api.feature_gates import FeatureGates
from pykueue.apiserver.app import APIServerApp
from pykueue.apiserver.handlers import APIRequest
from pykueue.kube.status import StatusError
from pykueue.store import Store

G = "kueue.x-k8s.io"
V1BETA2 = f"{G}/v1beta2"
V1BETA1 = f"{G}/v1beta1"
NS = "core"
OK, INVALID_ERROR, FORBIDDEN_ERROR = "Succeed", "BeInvalidError", "BeForbiddenError"
NOW = "2024-01-01T00:00:00Z"

Obj = dict[str, Any]
PLURALS = {
    "Workload": "workloads",
    "LocalQueue": "localqueues",
    "ResourceFlavor": "resourceflavors",
    "AdmissionCheck": "admissionchecks",
    "WorkloadPriorityClass": "workloadpriorityclasses",
    "ClusterQueue": "clusterqueues",
    "Cohort": "cohorts",
}


@dataclass
class Answer:
    code: int
    body: Obj

    @property
    def outcome(self) -> str:
        """Which of upstream's matchers this answer meets."""
        if self.code < 300:
            return OK
        reason = self.body.get("reason")
        if self.code == 422 and reason == "Invalid":
            return INVALID_ERROR
        if self.code == 403 and reason == "Forbidden":
            return FORBIDDEN_ERROR
        return f"{self.code} {reason}: {self.body.get('message')}"

    @property
    def message(self) -> str:
        return str(self.body.get("message"))


class Api:
    """A client of a fresh embedded API server (``k8sClient`` in upstream's suite)."""

    def __init__(self, gates: Mapping[str, bool] | None = None) -> None:
        self.app = APIServerApp(Store(None), gates=FeatureGates(dict(gates or {})))
        self.app.bootstrap()
        assert (
            self.send(
                "POST", "", "v1", "namespaces", None, None, {"kind": "Namespace", "metadata": {"name": NS}}
            ).code
            == 201
        )

    def send(
        self,
        method: str,
        group: str,
        version: str,
        resource: str,
        namespace: str | None,
        name: str | None,
        body: Any,
        subresource: str | None = None,
    ) -> Answer:
        req = APIRequest(
            method,
            group,
            version,
            resource,
            namespace=namespace,
            name=name,
            subresource=subresource,
            body=json.dumps(body).encode() if body is not None else b"",
            content_type="application/json",
        )
        try:
            resp = self.app.handlers.handle(req)
        except StatusError as err:
            return Answer(err.code, err.status())
        return Answer(resp.status, json.loads(resp.body) if resp.body else {})

    def _where(self, obj: Mapping[str, Any]) -> tuple[str, str, str, str | None]:
        group, _, version = str(obj["apiVersion"]).rpartition("/")
        plural = PLURALS[obj["kind"]]
        namespace = (
            (obj.get("metadata") or {}).get("namespace")
            if obj["kind"] in ("Workload", "LocalQueue")
            else None
        )
        return group, version, plural, namespace

    def create(self, obj: Mapping[str, Any]) -> Answer:
        group, version, plural, namespace = self._where(obj)
        return self.send("POST", group, version, plural, namespace, None, obj)

    def must_create(self, obj: Mapping[str, Any]) -> Obj:
        answer = self.create(obj)
        assert answer.code == 201, answer.body
        return answer.body

    def get(self, obj: Mapping[str, Any], api_version: str = V1BETA2) -> Obj:
        group, _, plural, namespace = self._where(obj)
        version = api_version.rpartition("/")[2]
        answer = self.send("GET", group, version, plural, namespace, obj["metadata"]["name"], None)
        assert answer.code == 200, answer.body
        return answer.body

    def update(self, obj: Mapping[str, Any], *, status: bool = False) -> Answer:
        group, version, plural, namespace = self._where(obj)
        return self.send(
            "PUT",
            group,
            version,
            plural,
            namespace,
            obj["metadata"]["name"],
            obj,
            "status" if status else None,
        )

    def must_update(self, obj: Mapping[str, Any], *, status: bool = False) -> Obj:
        answer = self.update(obj, status=status)
        assert answer.code == 200, answer.body
        return answer.body

    def change(
        self,
        obj: Mapping[str, Any],
        mutate: Callable[[Obj], Any],
        *,
        status: bool = False,
        api_version: str = V1BETA2,
    ) -> Answer:
        """``Get`` the live object (in ``api_version``), ``mutate`` it, ``Update`` it (or its status)."""
        live = self.get(obj, api_version)
        mutate(live)
        return self.update(live, status=status)


def denied(webhook: str, message: str) -> str:
    return f'admission webhook "{webhook}" denied the request: {message}'


# --- builders (pkg/util/testing/v1beta2 wrappers) ----------------------------------------------------


def pod_set(name: str = "main", count: int = 1, **extra: Any) -> Obj:
    """``MakePodSet(name, count)``: one container "c" with empty requests, restartPolicy Never."""
    out: Obj = {
        "name": name,
        "count": count,
        "template": {
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "resources": {"requests": {}}}]}
        },
    }
    out.update(extra)
    return out


def with_requests(ps: Obj, **requests: str) -> Obj:
    """``.Request(resource, quantity)`` on the first container."""
    ps["template"]["spec"]["containers"][0]["resources"]["requests"].update(requests)
    return ps


def workload(*pod_sets: Obj, name: str = "workload-test", **spec: Any) -> Obj:
    """``MakeWorkload(name, ns)`` (one pod set "main" of 1) with spec fields."""
    return {
        "apiVersion": V1BETA2,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"podSets": list(pod_sets) or [pod_set()], **spec},
    }


def wpc_ref(name: str) -> Obj:
    """``kueue.NewWorkloadPriorityClassRef(name)``."""
    return {"group": G, "kind": "WorkloadPriorityClass", "name": name}


def pod_pc_ref(name: str) -> Obj:
    """``kueue.NewPodPriorityClassRef(name)``."""
    return {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": name}


def ps_assignment(name: str = "main", count: int | None = 1, **usage: tuple[str, str]) -> Obj:
    """``MakePodSetAssignment(name)`` (count 1) with ``Assignment(resource, flavor, quantity)``;
    ``count=None``: a ``kueue.PodSetAssignment{Name: name}`` literal."""
    out: Obj = {"name": name}
    if count is not None:
        out |= {
            "flavors": {r: f for r, (f, _) in usage.items()},
            "resourceUsage": {r: q for r, (_, q) in usage.items()},
            "count": count,
        }
    return out


def admission(cq: str, *assignments: Obj) -> Obj:
    """``MakeAdmission(cq).PodSets(...)`` (one assignment "main" when none is given)."""
    return {"clusterQueue": cq, "podSetAssignments": list(assignments) or [ps_assignment()]}


def admission_of(cq: str, *names: str) -> Obj:
    """``MakeAdmission(cq, names...)``."""
    return admission(cq, *[ps_assignment(n) for n in names])


def condition(ctype: str, reason: str, message: str, status: str = "True") -> Obj:
    return {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": NOW}


def set_quota_reservation(wl: Obj, adm: Obj) -> None:
    """``workload.SetQuotaReservation``: the admission and ``QuotaReserved=True``."""
    status = wl.setdefault("status", {})
    status["admission"] = adm
    conds = [c for c in status.get("conditions") or [] if c["type"] != "QuotaReserved"]
    reserved = condition(
        "QuotaReserved", "QuotaReserved", f"Quota reserved in ClusterQueue {adm['clusterQueue']}"
    )
    status["conditions"] = [*conds, reserved]


def reserve_quota_at(wl: Obj, adm: Obj) -> Obj:
    """``ReserveQuotaAt(admission, now)``: status.admission and ``QuotaReserved=True`` (reason
    AdmittedByTest) as the created object carries them (a create ignores status)."""
    wl["status"] = {
        "admission": adm,
        "conditions": [
            condition("QuotaReserved", "AdmittedByTest", f"Admitted by ClusterQueue {adm['clusterQueue']}")
        ],
    }
    return wl


def reserve(api: Api, wl: Obj, adm: Obj) -> None:
    """``util.SetQuotaReservation``: a status write reserving quota with ``adm``."""
    assert api.change(wl, lambda live: set_quota_reservation(live, adm), status=True).outcome == OK


def sync_admitted(api: Api, wl: Obj) -> None:
    """``util.SyncAdmittedConditionForWorkloads``: ``Admitted=True`` once quota is reserved and
    every admission check is Ready."""

    def mutate(live: Obj) -> None:
        status = live.setdefault("status", {})
        conds = status.get("conditions") or []
        reserved = any(c["type"] == "QuotaReserved" and c["status"] == "True" for c in conds)
        checks_ready = all(c.get("state") == "Ready" for c in status.get("admissionChecks") or [])
        if reserved and checks_ready:
            conds = [c for c in conds if c["type"] != "Admitted"]
            status["conditions"] = [*conds, condition("Admitted", "Admitted", "The workload is admitted")]

    assert api.change(wl, mutate, status=True).outcome == OK


@pytest.fixture
def api() -> Api:
    return Api()


# --- workload_test.go: "Workload defaulting webhook" -------------------------------------------------


UNNAMED: Obj = {"count": 1, "template": {"spec": {"containers": [{"name": "", "resources": {}}]}}}
"""``MakePodSet("", 1).Containers(corev1.Container{})`` as Go sends it (the pod set's name is
``omitempty``, a container's is not)."""


def test_should_set_default_pod_set_name(api: Api) -> None:
    """``Should set default podSet name``: a lone unnamed pod set is named ``main``."""
    created = api.must_create(workload(UNNAMED))
    assert created["spec"]["podSets"][0]["name"] == "main"


def test_shouldnt_set_pod_set_name_if_multiple(api: Api) -> None:
    """``Shouldn't set podSet name if multiple``: BeInvalidError."""
    assert api.create(workload(UNNAMED, copy.deepcopy(UNNAMED))).outcome == INVALID_ERROR


# --- workload_test.go: "Should have valid PodSet when creating" ----------------------------------------

POD_SETS_MAX_ITEMS = 18
"""``jobframework.MaxPodSets``."""


@pytest.mark.parametrize(
    ("capacity", "count", "expected"),
    [
        pytest.param(0, 1, INVALID_ERROR, id="podSets count less than 1"),
        pytest.param(POD_SETS_MAX_ITEMS, 1, OK, id="podSets count at the maximum"),
        pytest.param(POD_SETS_MAX_ITEMS + 1, 1, INVALID_ERROR, id="podSets count more than the maximum"),
        pytest.param(3, 0, OK, id="valid podSet, count can be 0"),
        pytest.param(3, 3, OK, id="valid podSet"),
    ],
)
def test_should_have_valid_pod_set_when_creating(api: Api, capacity: int, count: int, expected: str) -> None:
    wl = workload()
    wl["spec"]["podSets"] = [pod_set(f"ps{i}", count) for i in range(capacity)]
    assert api.create(wl).outcome == expected


# --- workload_test.go: "Should have valid values when creating" ----------------------------------------


def _num_pods_requests() -> Obj:
    ps = pod_set("bad", 1)
    spec = ps["template"]["spec"]
    spec["initContainers"] = [{"name": "c", "resources": {"requests": {"pods": "1"}}}]
    spec["containers"] = [{"name": "c", "resources": {"requests": {"pods": "1"}}}]
    return workload(ps)


def _num_pods_limit() -> Obj:
    ps = pod_set("bad", 1)
    ps["template"]["spec"]["containers"] = [{"name": "", "resources": {"limits": {"pods": "1"}}}]
    return workload(ps)


def _negative_request() -> Obj:
    ps = pod_set("bad", 1)
    ps["template"]["spec"]["containers"] = [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]
    return workload(ps)


def _negative_pod_level_request() -> Obj:
    ps = pod_set("bad", 1)
    ps["template"]["spec"]["resources"] = {"requests": {"cpu": "-1"}}
    return workload(ps)


def _pod_set_updates() -> Obj:
    wl = workload(pod_set("first"), pod_set("second"))
    toleration = {"operator": "Equal", "effect": "NoExecute"}
    wl["status"] = {
        "admissionChecks": [
            {
                "name": "",
                "state": "",
                "lastTransitionTime": None,
                "podSetUpdates": [
                    {
                        "name": "first",
                        "labels": {"l1": "first"},
                        "annotations": {"foo": "bar"},
                        "tolerations": [{"key": "t1", "value": "t1v", "tolerationSeconds": 5, **toleration}],
                        "nodeSelector": {"type": "first"},
                    },
                    {
                        "name": "second",
                        "labels": {"l2": "second"},
                        "annotations": {"foo": "baz"},
                        "tolerations": [{"key": "t2", "value": "t2v", "tolerationSeconds": 10, **toleration}],
                        "nodeSelector": {"type": "second"},
                    },
                ],
            }
        ]
    }
    return wl


def _empty_check_state() -> Obj:
    wl = workload()
    wl["status"] = {"admissionChecks": [{"name": "", "state": "", "lastTransitionTime": None}]}
    return wl


CREATE_CASES: list[tuple[str, Callable[[], Obj], str]] = [
    ("valid workload", lambda: workload(pod_set("driver", 1), pod_set("workers", 100)), OK),
    ("invalid podSet name", lambda: workload(pod_set("@driver", 1)), INVALID_ERROR),
    (
        "invalid priorityClassRef.name",
        lambda: workload(priorityClassRef=pod_pc_ref("invalid_class"), priority=0),
        INVALID_ERROR,
    ),
    (
        "invalid priorityClassRef.group",
        lambda: workload(
            priorityClassRef={"group": "test", "kind": "PriorityClass", "name": "low"}, priority=100
        ),
        INVALID_ERROR,
    ),
    (
        "invalid priorityClassRef.kind",
        lambda: workload(
            priorityClassRef={"group": "scheduling.k8s.io", "kind": "test", "name": "low"}, priority=100
        ),
        INVALID_ERROR,
    ),
    (
        "incompatible priorityClassRef.kind (scheduling.k8s.io)",
        lambda: workload(
            priorityClassRef={"group": "scheduling.k8s.io", "kind": "WorkloadPriorityClass", "name": "low"},
            priority=100,
        ),
        INVALID_ERROR,
    ),
    (
        "incompatible priorityClassRef.kind (kueue.x-k8s.io)",
        lambda: workload(priorityClassRef={"group": G, "kind": "PriorityClass", "name": "low"}, priority=100),
        INVALID_ERROR,
    ),
    ("omitted priorityClassRef is valid", lambda: workload(priority=0), OK),
    (
        "priority should not be nil when priorityClassRef is set",
        lambda: workload(priorityClassRef=pod_pc_ref("priority")),
        INVALID_ERROR,
    ),
    ("invalid queueName", lambda: workload(queueName="@invalid"), INVALID_ERROR),
    ("should not request num-pods resource", _num_pods_requests, FORBIDDEN_ERROR),
    ("should not limit num-pods resource", _num_pods_limit, FORBIDDEN_ERROR),
    ("should not allow negative resource requests", _negative_request, FORBIDDEN_ERROR),
    ("should not allow negative pod-level resource requests", _negative_pod_level_request, FORBIDDEN_ERROR),
    ("empty podSetUpdates should be valid since it is optional", _empty_check_state, OK),
    ("matched names in podSetUpdates with names in podSets", _pod_set_updates, OK),
    ("invalid podSet minCount (negative)", lambda: workload(pod_set("ps1", 3, minCount=-1)), INVALID_ERROR),
    ("invalid podSet minCount (too big)", lambda: workload(pod_set("ps1", 3, minCount=4)), INVALID_ERROR),
    (
        "too many variable count podSets",
        lambda: workload(pod_set("ps1", 3, minCount=2), pod_set("ps2", 3, minCount=1)),
        FORBIDDEN_ERROR,
    ),
    ("invalid maximumExexcutionTimeSeconds", lambda: workload(maximumExecutionTimeSeconds=0), INVALID_ERROR),
    ("valid maximumExexcutionTimeSeconds", lambda: workload(maximumExecutionTimeSeconds=1), OK),
]


@pytest.mark.parametrize(
    ("make", "expected"), [c[1:] for c in CREATE_CASES], ids=[c[0] for c in CREATE_CASES]
)
def test_should_have_valid_values_when_creating(
    api: Api, make: Callable[[], Obj], expected: str, request: pytest.FixtureRequest
) -> None:
    answer = api.create(make())
    assert answer.outcome == expected
    if expected == FORBIDDEN_ERROR:  # upstream's pkg/webhooks/workload_webhook.go messages
        assert answer.message == denied("vworkload.kb.io", CREATE_DENIALS[request.node.callspec.id])


_PS0 = "spec.podSets[0].template.spec"
_RESERVED = 'Invalid value: "pods": the key is reserved for internal kueue use'
CREATE_DENIALS = {
    "should not request num-pods resource": f"[{_PS0}.initContainers[0].resources.requests[pods]: {_RESERVED}, "
    f"{_PS0}.containers[0].resources.requests[pods]: {_RESERVED}]",
    "should not limit num-pods resource": f"{_PS0}.containers[0].resources.limits[pods]: {_RESERVED}",
    "should not allow negative resource requests": f'{_PS0}.containers[0].resources.requests[cpu]: Invalid value: "-1": '
    "must be greater than or equal to 0",
    "should not allow negative pod-level resource requests": f'{_PS0}.resources.requests[cpu]: Invalid value: "-1": '
    "must be greater than or equal to 0",
    "too many variable count podSets": "spec.podSets: Invalid value: 2: at most one podSet can use minCount",
}


# --- workload_test.go: "Should have valid values when setting Admission" --------------------------------

_CPU3 = [pod_set("main", 3)]
with_requests(_CPU3[0], cpu="1")


def _delayed(state: str) -> Obj:
    return admission(
        "cluster-queue", {**ps_assignment("main", 3, cpu=("flv", "3")), "delayedTopologyRequest": state}
    )


ADMISSION_CASES: list[tuple[str, list[Obj], Obj, str]] = [
    ("invalid clusterQueue name", [], admission_of("@invalid"), INVALID_ERROR),
    (
        "invalid podSet name in status assignment",
        [],
        admission_of("cluster-queue", "@invalid"),
        INVALID_ERROR,
    ),
    (
        "mismatched names in admission with names in podSets",
        [pod_set("main2"), pod_set("main1")],
        admission_of("cluster-queue", "main1", "main2", "main3"),
        INVALID_ERROR,
    ),
    (
        "assignment usage should be divisible by count",
        _CPU3,
        admission("cluster-queue", ps_assignment("main", 3, cpu=("flv", "1"))),
        FORBIDDEN_ERROR,
    ),
    ("Pending delayedTopologyRequest", _CPU3, _delayed("Pending"), OK),
    ("Ready delayedTopologyRequest", _CPU3, _delayed("Ready"), OK),
    ("invalid delayedTopologyRequest", _CPU3, _delayed("invalid"), INVALID_ERROR),
]


@pytest.mark.parametrize(
    ("pod_sets", "adm", "expected"), [c[1:] for c in ADMISSION_CASES], ids=[c[0] for c in ADMISSION_CASES]
)
def test_should_have_valid_values_when_setting_admission(
    api: Api, pod_sets: list[Obj], adm: Obj, expected: str
) -> None:
    """``workloadpatching.PatchAdmissionStatus`` with ``workload.SetQuotaReservation(wl, a)``."""
    wl = api.must_create(workload(*copy.deepcopy(pod_sets)))
    assert (
        api.change(wl, lambda live: set_quota_reservation(live, copy.deepcopy(adm)), status=True).outcome
        == expected
    )


# --- workload_test.go: "Should have valid values when setting AdmissionCheckState" ----------------------


def set_check_state(live: Obj, state: Obj) -> None:
    """``workloadpatching.SetAdmissionCheckState``: add or replace the check of that name."""
    status = live.setdefault("status", {})
    checks = [c for c in status.get("admissionChecks") or [] if c["name"] != state["name"]]
    status["admissionChecks"] = [*checks, {"lastTransitionTime": NOW, "message": "", **state}]


CHECK_STATE_CASES: list[tuple[str, list[Obj], list[Obj]]] = [
    (
        "mismatched names in podSetUpdates with names in podSets",
        [pod_set("first"), pod_set("second")],
        [{"name": "first"}, {"name": "third"}],
    ),
    ("invalid label name of podSetUpdate", [], [{"name": "main", "labels": {"@abc": "foo"}}]),
    ("invalid node selector name of podSetUpdate", [], [{"name": "main", "nodeSelector": {"@abc": "foo"}}]),
    ("invalid label value of podSetUpdate", [], [{"name": "main", "labels": {"foo": "@abc"}}]),
]


@pytest.mark.parametrize(
    ("pod_sets", "updates"), [c[1:] for c in CHECK_STATE_CASES], ids=[c[0] for c in CHECK_STATE_CASES]
)
def test_should_have_valid_values_when_setting_admission_check_state(
    api: Api, pod_sets: list[Obj], updates: list[Obj]
) -> None:
    """Every entry expects ``BeForbiddenError`` from the status update."""
    wl = api.must_create(workload(*copy.deepcopy(pod_sets)))
    state = {"name": "check", "state": "Ready", "podSetUpdates": updates}
    assert api.change(wl, lambda live: set_check_state(live, state), status=True).outcome == FORBIDDEN_ERROR


def update_reclaimable_pods(api: Api, wl: Obj, pods: list[Obj]) -> Answer:
    """``workload.UpdateReclaimablePods``: a status write of ``status.reclaimablePods``."""
    return api.change(
        wl, lambda live: live.setdefault("status", {}).__setitem__("reclaimablePods", pods), status=True
    )


def test_invalid_reclaimable_pods(api: Api) -> None:
    """``invalid reclaimablePods``: ps1 4 of 3, ps2 not a pod set: BeForbiddenError."""
    wl = api.must_create(workload(pod_set("ps1", 3)))
    answer = update_reclaimable_pods(api, wl, [{"name": "ps1", "count": 4}, {"name": "ps2", "count": 1}])
    assert answer.outcome == FORBIDDEN_ERROR
    assert answer.message == denied(
        "vworkload.kb.io",
        "[status.reclaimablePods[ps1].count: Invalid value: 4: should be less or equal to 3, "
        'status.reclaimablePods[ps2].name: Unsupported value: "ps2": supported values: "ps1"]',
    )


# --- workload_test.go: "When updating a Workload" ----------------------------------------------------------


def test_should_refuse_a_status_update_reserving_quota_with_no_admission(api: Api) -> None:
    wl = api.must_create(workload())

    def mutate(live: Obj) -> None:
        live.setdefault("status", {})["conditions"] = [condition("QuotaReserved", "Admitted", "admitted")]

    answer = api.change(wl, mutate, status=True)
    assert answer.outcome == FORBIDDEN_ERROR
    assert answer.message == denied(
        "vworkload.kb.io",
        "status.admission: Required value: must be set while the QuotaReserved condition is true",
    )


def _set(path: str, value: Any) -> Callable[[Obj], None]:
    """An ``updateWl`` that sets one dotted field (``spec.podSets.0.count``); None removes it."""

    def mutate(live: Obj) -> None:
        *parents, last = path.split(".")
        node: Any = live
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        if value is None:
            if isinstance(node, dict):
                node.pop(last, None)
        elif isinstance(node, list):
            node[int(last)] = copy.deepcopy(value)
        else:
            node[last] = copy.deepcopy(value)

    return mutate


def _both(*mutations: Callable[[Obj], None]) -> Callable[[Obj], None]:
    def mutate(live: Obj) -> None:
        for m in mutations:
            m(live)

    return mutate


C_AFTER = {
    "name": "main",
    "count": 1,
    "template": {"spec": {"containers": [{"name": "c-after", "resources": {"requests": {}}}]}},
}
"""The ``kueue.PodSet{...}`` literal with container "c-after" (Go sends an empty metadata)."""


def _with_checks(wl: Obj) -> Obj:
    wl["status"] = {
        "admissionChecks": [
            {
                "name": "ac1",
                "message": "old",
                "lastTransitionTime": NOW,
                "podSetUpdates": [{"name": "first", "labels": {"foo": "bar"}}, {"name": "second"}],
                "state": "Ready",
            }
        ]
    }
    return wl


def _reclaimable_ps() -> Obj:
    wl = reserve_quota_at(
        workload(pod_set("ps1", 3), pod_set("ps2", 3)),
        admission("cluster-queue", ps_assignment("ps1", None), ps_assignment("ps2", None)),
    )
    wl["status"]["reclaimablePods"] = [{"name": "ps1", "count": 2}, {"name": "ps2", "count": 1}]
    return wl


def _checks_and_reclaimable(live: Obj) -> None:
    """``reclaimable pod count can go to 0 if the job is suspended``'s update (a main-resource
    Update: the status it sets is not written)."""
    status = live.setdefault("status", {})
    status["admissionChecks"] = [{"podSetUpdates": [{"name": "ps1"}, {"name": "ps2"}], "state": "Ready"}]
    status["reclaimablePods"] = [{"name": "ps1", "count": 0}, {"name": "ps2", "count": 1}]


UPDATE_CASES: list[tuple[str, Callable[[], Obj], bool, Callable[[Obj], None], str]] = [
    (
        "podSets should not be updated when has quota reservation: count",
        workload,
        True,
        _set("spec.podSets", [pod_set("main", 2)]),
        FORBIDDEN_ERROR,
    ),
    (
        "podSets should not be updated: podSpec",
        workload,
        True,
        _set("spec.podSets", [C_AFTER]),
        FORBIDDEN_ERROR,
    ),
    (
        "queueName can be updated when not admitted",
        lambda: workload(queueName="q1"),
        False,
        _set("spec.queueName", "q2"),
        OK,
    ),
    ("queueName can be updated when admitting", workload, False, _set("spec.queueName", "q"), OK),
    (
        "queueName should not be updated once admitted",
        lambda: workload(queueName="q1"),
        True,
        _set("spec.queueName", "q2"),
        INVALID_ERROR,
    ),
    (
        "queueName can be updated when admission is reset",
        lambda: reserve_quota_at(workload(queueName="q1"), admission_of("cq")),
        False,
        _both(_set("spec.queueName", "q2"), _set("status", {})),
        OK,
    ),
    (
        "admission can be set",
        workload,
        False,
        _set(
            "status",
            {
                "admission": admission(
                    "cluster-queue", ps_assignment("main", 1, **{"on-demand": ("5", "1")})
                ),
                "conditions": [
                    condition("QuotaReserved", "AdmittedByTest", "Admitted by ClusterQueue cluster-queue")
                ],
            },
        ),
        OK,
    ),
    (
        "admission can be unset",
        lambda: reserve_quota_at(
            workload(), admission("cluster-queue", ps_assignment("main", 1, **{"on-demand": ("5", "1")}))
        ),
        False,
        _set("status", {}),
        OK,
    ),
    (
        "should change other fields of admissionchecks when podSetUpdates is immutable",
        lambda: _with_checks(workload(pod_set("first"), pod_set("second"))),
        False,
        _set(
            "status.admissionChecks",
            [
                {
                    "name": "ac1",
                    "message": "new",
                    "lastTransitionTime": NOW,
                    "podSetUpdates": [{"name": "first", "labels": {"foo": "bar"}}, {"name": "second"}],
                    "state": "Ready",
                }
            ],
        ),
        OK,
    ),
    (
        "updating podSets before setting reserve quota for workload",
        workload,
        False,
        _set("spec.podSets", [C_AFTER]),
        OK,
    ),
    (
        "Should forbid the change of spec.podSet",
        workload,
        True,
        _set("spec.podSets.0.count", 10),
        FORBIDDEN_ERROR,
    ),
    (
        "reclaimable pod count can go to 0 if the job is suspended",
        _reclaimable_ps,
        False,
        _checks_and_reclaimable,
        OK,
    ),
    (
        "can add maximum execution time when not admitted",
        workload,
        False,
        _set("spec.maximumExecutionTimeSeconds", 1),
        OK,
    ),
    (
        "can update maximum execution time when not admitted",
        lambda: workload(maximumExecutionTimeSeconds=1),
        False,
        _set("spec.maximumExecutionTimeSeconds", 2),
        OK,
    ),
    (
        "cannot add maximum execution time when admitted",
        workload,
        True,
        _set("spec.maximumExecutionTimeSeconds", 1),
        INVALID_ERROR,
    ),
    (
        "cannot update maximum execution time when admitted",
        lambda: workload(maximumExecutionTimeSeconds=1),
        True,
        _set("spec.maximumExecutionTimeSeconds", 2),
        INVALID_ERROR,
    ),
    (
        "Should allow to change priority when QuotaReserved=false",
        workload,
        False,
        _set("spec.priority", 10),
        OK,
    ),
    (
        "Should allow to change priority when QuotaReserved=true",
        workload,
        False,
        _set("spec.priority", 10),
        OK,
    ),
    (
        "Should allow to change priority with priorityClassRef when QuotaReserved=false",
        lambda: workload(priority=0, priorityClassRef=pod_pc_ref("low")),
        False,
        _set("spec.priority", 10),
        OK,
    ),
    (
        "Should allow to change priority with priorityClassRef when QuotaReserved=true",
        lambda: workload(priority=0, priorityClassRef=pod_pc_ref("low")),
        False,
        _set("spec.priority", 10),
        OK,
    ),
    (
        "can set workload priorityClassRef when QuotaReserved=false",
        workload,
        False,
        _both(_set("spec.priorityClassRef", wpc_ref("low")), _set("spec.priority", 100)),
        OK,
    ),
    (
        "can't set workload priority class when QuotaReserved=true",
        workload,
        True,
        _both(_set("spec.priorityClassRef", wpc_ref("low")), _set("spec.priority", 100)),
        INVALID_ERROR,
    ),
    (
        "can update workload priority class when QuotaReserved=false",
        lambda: workload(priorityClassRef=wpc_ref("high"), priority=1000),
        False,
        _both(_set("spec.priorityClassRef.name", "low"), _set("spec.priority", 100)),
        OK,
    ),
    (
        "can update workload priority class when QuotaReserved=true",
        lambda: workload(priorityClassRef=wpc_ref("high"), priority=1000),
        True,
        _both(_set("spec.priorityClassRef.name", "low"), _set("spec.priority", 100)),
        OK,
    ),
    (
        "can delete workload priority class when QuotaReserved=false",
        lambda: workload(priorityClassRef=wpc_ref("high"), priority=1000),
        False,
        _both(_set("spec.priorityClassRef", None), _set("spec.priority", None)),
        OK,
    ),
    (
        "can't delete workload priority class when quota reserved when QuotaReserved=true",
        lambda: workload(priorityClassRef=wpc_ref("high"), priority=1000),
        True,
        _both(_set("spec.priorityClassRef", None), _set("spec.priority", None)),
        INVALID_ERROR,
    ),
    (
        "can set pod priority class QuotaReserved=false",
        workload,
        False,
        _both(_set("spec.priorityClassRef", pod_pc_ref("low")), _set("spec.priority", 100)),
        OK,
    ),
    (
        "can't set pod priority class when QuotaReserved=true",
        workload,
        True,
        _both(_set("spec.priorityClassRef", pod_pc_ref("low")), _set("spec.priority", 100)),
        INVALID_ERROR,
    ),
    (
        "can update pod priority class when QuotaReserved=false",
        lambda: workload(priorityClassRef=pod_pc_ref("high"), priority=1000),
        False,
        _both(_set("spec.priorityClassRef.name", "low"), _set("spec.priority", 100)),
        OK,
    ),
    (
        "can't update pod priority class when QuotaReserved=true",
        lambda: workload(priorityClassRef=pod_pc_ref("high"), priority=1000),
        True,
        _both(_set("spec.priorityClassRef.name", "low"), _set("spec.priority", 100)),
        INVALID_ERROR,
    ),
    (
        "can delete pod priority class when QuotaReserved=false",
        lambda: workload(priorityClassRef=pod_pc_ref("high"), priority=1000),
        False,
        _both(_set("spec.priorityClassRef", None), _set("spec.priority", None)),
        OK,
    ),
    (
        "can't delete pod priority class when QuotaReserved=true",
        lambda: workload(priorityClassRef=pod_pc_ref("high"), priority=1000),
        True,
        _both(_set("spec.priorityClassRef", None), _set("spec.priority", None)),
        INVALID_ERROR,
    ),
]


def _created_and_reserved(api: Api, make: Callable[[], Obj], reserve_quota: bool) -> Obj:
    """``MustCreate``, then with ``setQuotaReservation`` ``SetQuotaReservation(MakeAdmission("cq"))``
    and ``SyncAdmittedConditionForWorkloads``."""
    wl = api.must_create(make())
    if reserve_quota:
        reserve(api, wl, admission_of("cq"))
        sync_admitted(api, wl)
    return wl


@pytest.mark.parametrize(
    ("make", "reserve_quota", "mutate", "expected"),
    [c[1:] for c in UPDATE_CASES],
    ids=[c[0] for c in UPDATE_CASES],
)
def test_validate_workload_on_update(
    api: Api, make: Callable[[], Obj], reserve_quota: bool, mutate: Callable[[Obj], None], expected: str
) -> None:
    wl = _created_and_reserved(api, make, reserve_quota)
    assert api.change(wl, mutate).outcome == expected


def test_should_forbid_the_change_of_spec_queue_name_of_an_admitted_workload(api: Api) -> None:
    wl = api.must_create(workload(queueName="queue1"))
    reserve(api, wl, admission_of("cq"))
    assert api.change(wl, _set("spec.queueName", "queue2")).outcome == INVALID_ERROR


def test_should_prevent_removing_queue_name_on_admitted_workload_issue_12552(api: Api) -> None:
    """``Should prevent removing queueName on admitted workload (issue 12552)``."""
    wl = api.must_create(workload(queueName="queue1"))
    reserve(api, wl, admission_of("cq"))
    answer = api.change(wl, _set("spec.queueName", None))
    assert answer.outcome == INVALID_ERROR
    assert "queueName is immutable while workload quota reserved" in answer.message


def test_should_forbid_the_change_of_status_admission(api: Api) -> None:
    wl = api.must_create(workload())
    reserve(api, wl, admission_of("cluster-queue"))
    sync_admitted(api, wl)
    answer = api.change(wl, _set("status.admission.clusterQueue", "foo-cluster-queue"), status=True)
    assert answer.outcome == FORBIDDEN_ERROR


def test_should_have_priority_once_priority_class_name_is_set(api: Api) -> None:
    assert api.create(workload(priorityClassRef=pod_pc_ref("priority"))).outcome == INVALID_ERROR


@pytest.mark.parametrize(
    ("ref", "initial", "updated"),
    [
        pytest.param(
            wpc_ref("workload-priority-class"),
            200,
            150,
            id="workload's priority should be mutable when referencing WorkloadPriorityClass",
        ),
        pytest.param(
            pod_pc_ref("priority-class"),
            100,
            50,
            id="workload's priority should be mutable when referencing PriorityClass",
        ),
    ],
)
def test_workload_priority_is_mutable(api: Api, ref: Obj, initial: int, updated: int) -> None:
    wl = workload(
        with_requests(pod_set(), cpu="1"), name="wl", queueName="lq", priorityClassRef=ref, priority=initial
    )
    created = api.must_create(wl)
    assert created["spec"]["priority"] == initial
    api.must_update({**created, "spec": {**created["spec"], "priority": updated}})
    assert api.get(wl)["spec"]["priority"] == updated


def test_admission_should_not_be_updated_once_set(api: Api) -> None:
    wl = api.must_create(workload())
    reserve(api, wl, admission_of("cluster-queue"))
    new = admission("cluster-queue", ps_assignment("main", 1, **{"on-demand": ("5", "1")}))
    assert api.change(wl, _set("status.admission", new), status=True).outcome == FORBIDDEN_ERROR


def _two_pod_sets_reserved(api: Api, reclaimable: list[Obj]) -> Obj:
    wl = api.must_create(workload(pod_set("ps1", 3), pod_set("ps2", 3)))
    assert update_reclaimable_pods(api, wl, reclaimable).outcome == OK
    reserve(api, wl, admission("cluster-queue", ps_assignment("ps1", None), ps_assignment("ps2", None)))
    return wl


def test_reclaimable_pod_count_can_change_up(api: Api) -> None:
    wl = _two_pod_sets_reserved(api, [{"name": "ps1", "count": 1}])
    answer = update_reclaimable_pods(api, wl, [{"name": "ps1", "count": 2}, {"name": "ps2", "count": 1}])
    assert answer.outcome == OK


def test_reclaimable_pod_count_cannot_change_down(api: Api) -> None:
    wl = _two_pod_sets_reserved(api, [{"name": "ps1", "count": 2}, {"name": "ps2", "count": 1}])
    answer = update_reclaimable_pods(api, wl, [{"name": "ps1", "count": 1}])
    assert answer.outcome == FORBIDDEN_ERROR
    assert answer.message == denied(
        "vworkload.kb.io",
        "[status.reclaimablePods[ps1].count: Invalid value: 1: cannot be less than 2, "
        "status.reclaimablePods[ps2]: Required value: cannot be removed]",
    )


def test_pod_set_updates_should_be_immutable_when_state_is_ready(api: Api) -> None:
    wl = api.must_create(workload(pod_set("first"), pod_set("second")))

    def state(value: str, message: str) -> Obj:
        return {
            "name": "ac1",
            "message": message,
            "podSetUpdates": [{"name": "first", "labels": {"foo": value}}, {"name": "second"}],
            "state": "Ready",
        }

    assert api.change(wl, lambda live: set_check_state(live, state("bar", "old")), status=True).outcome == OK
    answer = api.change(wl, lambda live: set_check_state(live, state("baz", "new")), status=True)
    assert answer.outcome == FORBIDDEN_ERROR


ELASTIC = {"ElasticJobsViaWorkloadSlices": True}
ELASTIC_ANNOTATION = {"kueue.x-k8s.io/elastic-job": "true"}


def _admitted_at(api: Api, wl: Obj, count: int | None) -> None:
    """``workload.SetQuotaReservation`` with an admission of "default" (cpu on flavor "default")."""
    assignment = ps_assignment("main", 1, cpu=("default", "1"))
    if count is not None:
        assignment["count"] = count
    assert (
        api.change(
            wl, lambda live: set_quota_reservation(live, admission("default", assignment)), status=True
        ).outcome
        == OK
    )


def test_should_not_allow_workload_pod_sets_count_increase_even_when_elastic_jobs_via_workload_slices_feature_gate_is_enabled() -> (
    None
):
    api = Api(ELASTIC)
    wl = api.must_create(workload(with_requests(pod_set("main", 1), cpu="1")))
    _admitted_at(api, wl, None)
    assert api.change(wl, _set("spec.podSets.0.count", 2)).outcome == FORBIDDEN_ERROR


def test_should_allow_workload_pod_sets_count_decrease_when_elastic_jobs_via_workload_slices_feature_gate_is_enabled() -> (
    None
):
    api = Api(ELASTIC)
    wl = api.must_create(workload(with_requests(pod_set("main", 10), cpu="1")))
    _admitted_at(api, wl, 10)
    assert api.change(wl, _set("spec.podSets.0.count", 5)).outcome == OK


def test_should_allow_elastic_workload_reclaimable_pod_count_to_decrease_after_a_scale_down_below_the_admitted_count() -> (
    None
):
    api = Api(ELASTIC)
    wl = workload(with_requests(pod_set("main", 20), cpu="1"))
    wl["metadata"]["annotations"] = dict(ELASTIC_ANNOTATION)
    wl = api.must_create(wl)
    _admitted_at(api, wl, 20)
    assert update_reclaimable_pods(api, wl, [{"name": "main", "count": 9}]).outcome == OK
    assert api.change(wl, _set("spec.podSets.0.count", 10)).outcome == OK
    assert update_reclaimable_pods(api, wl, [{"name": "main", "count": 0}]).outcome == OK
    assert api.change(wl, _set("status.reclaimablePods", None), status=True).outcome == OK


# --- workload_test.go: "Workload validating webhook ClusterName - Dispatcher AllAtOnce / Incremental" ----


def _cluster(nominated: list[str] | None, name: str | None) -> Callable[[Obj], None]:
    return _both(_set("status.nominatedClusterNames", nominated), _set("status.clusterName", name))


def _keep(live: Obj) -> None:
    """``func(wl *kueue.Workload) {}``."""


_NOT_NOMINATED = "when setting clusterName it must be one of the nominatedClusterNames"
CLUSTER_NAME_CASES: list[tuple[str, Callable[[Obj], None], Callable[[Obj], None], str, str]] = [
    (
        "Valid: ClusterName is in NominatedClusters",
        _cluster(["worker1", "worker2"], None),
        _cluster(None, "worker2"),
        OK,
        OK,
    ),
    (
        "Invalid: ClusterName is not in NominatedClusters",
        _cluster(["worker1", "worker2"], None),
        _cluster(None, "worker3"),
        OK,
        FORBIDDEN_ERROR,
    ),
    (
        "Invalid: ClusterName is set when NominatedClusters is empty",
        _cluster(None, None),
        _cluster(None, "worker1"),
        OK,
        FORBIDDEN_ERROR,
    ),
    (
        "Invalid: ClusterName and NominatedClusters are mutually exclusive",
        _keep,
        _cluster(["worker1", "worker2"], "worker1"),
        OK,
        INVALID_ERROR,
    ),
    ("Valid: neither ClusterName nor NominatedClusters is set", _keep, _cluster(None, None), OK, OK),
]
INCREMENTAL_ONLY = [
    (
        "Invalid: ClusterName is changed",
        _cluster(None, "worker1"),
        _cluster(None, "worker2"),
        FORBIDDEN_ERROR,
        FORBIDDEN_ERROR,
    ),
]


CLUSTER_NAME_TABLES = [
    pytest.param(*case[1:], id=f"{dispatcher}/{case[0]}")
    for dispatcher, cases in (
        ("Dispatcher AllAtOnce", CLUSTER_NAME_CASES),
        ("Dispatcher Incremental", CLUSTER_NAME_CASES[:2] + INCREMENTAL_ONLY + CLUSTER_NAME_CASES[2:]),
    )
    for case in cases
]


@pytest.mark.parametrize(("setup", "update", "setup_expected", "update_expected"), CLUSTER_NAME_TABLES)
def test_validate_workload_status_on_update(
    api: Api,
    setup: Callable[[Obj], None],
    update: Callable[[Obj], None],
    setup_expected: str,
    update_expected: str,
) -> None:
    """Both Describes run the same manager (``managerSetup``; the webhook reads no dispatcher)."""
    wl = workload()
    del wl["metadata"]["name"]
    wl["metadata"]["generateName"] = "workload-test"
    wl = api.must_create(wl)
    assert api.change(wl, setup, status=True).outcome == setup_expected
    answer = api.change(wl, update, status=True)
    assert answer.outcome == update_expected
    if update_expected == FORBIDDEN_ERROR:
        assert _NOT_NOMINATED in answer.message


def test_should_allow_to_set_cluster_name_without_previous_nominated_cluster_names_when_elastic_jobs_via_workload_slices_feature_gate_is_enabled() -> (
    None
):
    api = Api(ELASTIC)
    wl = workload(with_requests(pod_set("main", 1), cpu="1"))
    wl["metadata"]["annotations"] = {"kueue.x-k8s.io/workload-slice-replacement-for": f"{NS}/workload-test"}
    wl = api.must_create(wl)

    def mutate(live: Obj) -> None:
        _set("status.admission", admission("default", ps_assignment("main", 1, cpu=("default", "1"))))(live)
        _set("status.clusterName", "worker1")(live)

    assert api.change(wl, mutate, status=True).outcome == OK


# --- workload_test.go: "Workload v1beta1 CEL validation" ------------------------------------------------

V1BETA1_CASES: list[tuple[str, Callable[[], Obj], bool, Callable[[Obj], None], str]] = [
    (
        "can toggle active on workload without priorityClassRef when QuotaReserved=true",
        workload,
        True,
        _set("spec.active", False),
        OK,
    ),
    (
        "can toggle active on workload without priorityClassRef when QuotaReserved=false",
        workload,
        False,
        _set("spec.active", False),
        OK,
    ),
    (
        "can toggle active on workload with pod priorityClassRef when QuotaReserved=true",
        lambda: workload(priorityClassRef=pod_pc_ref("default"), priority=0),
        True,
        _set("spec.active", False),
        OK,
    ),
    (
        "can't change priorityClassSource via v1beta1 when QuotaReserved=true",
        lambda: workload(priorityClassRef=pod_pc_ref("default"), priority=0),
        True,
        _set("spec.priorityClassSource", "kueue.x-k8s.io/workloadpriorityclass"),
        INVALID_ERROR,
    ),
    (
        "can change priorityClassSource via v1beta1 when QuotaReserved=false",
        lambda: workload(priorityClassRef=pod_pc_ref("default"), priority=0),
        False,
        _set("spec.priorityClassSource", "kueue.x-k8s.io/workloadpriorityclass"),
        OK,
    ),
    (
        "can toggle active on workload with workload priorityClassRef when QuotaReserved=true",
        lambda: workload(priorityClassRef=wpc_ref("default"), priority=0),
        True,
        _set("spec.active", False),
        OK,
    ),
    (
        "can't change priorityClassName via v1beta1 when QuotaReserved=true and source is pod priorityClass",
        lambda: workload(priorityClassRef=pod_pc_ref("default"), priority=0),
        True,
        _set("spec.priorityClassName", "other"),
        INVALID_ERROR,
    ),
    (
        "can change priorityClassName via v1beta1 when QuotaReserved=true and source is workloadpriorityclass",
        lambda: workload(priorityClassRef=wpc_ref("default"), priority=0),
        True,
        _set("spec.priorityClassName", "other"),
        OK,
    ),
]


@pytest.mark.parametrize(
    ("make", "reserve_quota", "mutate", "expected"),
    [c[1:] for c in V1BETA1_CASES],
    ids=[c[0] for c in V1BETA1_CASES],
)
def test_validate_v1beta1_cel_rules_for_priority_class_source(
    api: Api, make: Callable[[], Obj], reserve_quota: bool, mutate: Callable[[Obj], None], expected: str
) -> None:
    wl = _created_and_reserved(api, make, reserve_quota)
    answer = api.change(wl, mutate, api_version=V1BETA1)
    assert answer.outcome == expected
    if (
        expected == INVALID_ERROR
    ):  # v1beta1's own rule on the field changed, not v1beta2's priorityClassRef rules
        probe: Obj = {"spec": {}}
        mutate(probe)
        (changed,) = probe["spec"]
        assert answer.message == f"{V1BETA1_RULE}{V1BETA1_MESSAGES[changed]}"


V1BETA1_RULE = 'Workload.kueue.x-k8s.io "workload-test" is invalid: <nil>: Invalid value: '
V1BETA1_MESSAGES = {
    "priorityClassSource": "priorityClassSource is immutable while workload quota reserved",
    "priorityClassName": "priorityClassName is immutable while workload quota reserved and priorityClassSource "
    "is not equal to kueue.x-k8s.io/workloadpriorityclass",
}


# --- localqueue_test.go ------------------------------------------------------------------------------------

FLAVORS_MAX_ITEMS = 64
"""``flavorsMaxItems`` (clusterqueue_test.go): the CRD's ``maxItems`` of a flavor list."""


def local_queue(cluster_queue: str) -> Obj:
    """``MakeLocalQueue("queue-test", ns).ClusterQueue(cq)``."""
    return {
        "apiVersion": V1BETA2,
        "kind": "LocalQueue",
        "metadata": {"name": "queue-test", "namespace": NS},
        "spec": {"clusterQueue": cluster_queue},
    }


def local_queue_flavor_usage(quantity: int) -> list[Obj]:
    """``makeLocalQueueFlavorUsage``: flavors f0..fN-1, each one resource ``cpu`` (a zero total)."""
    return [{"name": f"f{i}", "resources": [{"name": "cpu", "total": "0"}]} for i in range(quantity)]


def test_should_reject_bad_value_for_spec_cluster_queue(api: Api) -> None:
    assert api.create(local_queue("invalid_name")).outcome == INVALID_ERROR


def test_should_reject_the_change_of_spec_cluster_queue(api: Api) -> None:
    lq = api.must_create(local_queue("foo"))
    answer = api.change(lq, _set("spec.clusterQueue", "bar"))
    assert answer.outcome == INVALID_ERROR
    assert answer.message == (
        'LocalQueue.kueue.x-k8s.io "queue-test" is invalid: spec.clusterQueue: Invalid value: "bar": '
        "field is immutable"
    )


@pytest.mark.parametrize(
    ("reservation", "usage", "expected"),
    [
        pytest.param(
            FLAVORS_MAX_ITEMS,
            FLAVORS_MAX_ITEMS,
            OK,
            id="Should allow flavors quantity up to the limit in flavorsReservation and flavorsUsage",
        ),
        pytest.param(
            FLAVORS_MAX_ITEMS + 1,
            None,
            INVALID_ERROR,
            id="Should reject flavors quantity over the limit in flavorsReservation",
        ),
        pytest.param(
            None,
            FLAVORS_MAX_ITEMS + 1,
            INVALID_ERROR,
            id="Should reject flavors quantity over the limit in flavorsUsage",
        ),
    ],
)
def test_updating_the_status_of_a_queue(
    api: Api, reservation: int | None, usage: int | None, expected: str
) -> None:
    lq = api.must_create(local_queue("foo"))

    def mutate(live: Obj) -> None:
        status = live.setdefault("status", {})
        if reservation is not None:
            status["flavorsReservation"] = local_queue_flavor_usage(reservation)
        if usage is not None:
            status["flavorsUsage"] = local_queue_flavor_usage(usage)

    answer = api.change(lq, mutate, status=True)
    assert answer.outcome == expected
    if expected == INVALID_ERROR:
        field = "flavorsReservation" if reservation else "flavorsUsage"
        assert f"status.{field}: Too many: 65: must have at most 64 items" in answer.message


# --- resourceflavor_test.go --------------------------------------------------------------------------------

NODE_SELECTOR_MAX_PROPERTIES = 8
TAINTS_MAX_ITEMS = 8


def resource_flavor(
    *,
    labels: Mapping[str, str] | None = None,
    taints: list[Obj] | None = None,
    tolerations: list[Obj] | None = None,
) -> Obj:
    """``MakeResourceFlavor("resource-flavor")`` with ``NodeLabel``, ``Taint`` and ``Toleration``."""
    spec: Obj = {}
    if labels is not None:
        spec["nodeLabels"] = dict(labels)
    if taints is not None:
        spec["nodeTaints"] = taints
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": V1BETA2,
        "kind": "ResourceFlavor",
        "metadata": {"name": "resource-flavor"},
        "spec": spec,
    }


def test_resource_flavor_should_be_valid(api: Api) -> None:
    """``Creating a ResourceFlavor`` / ``Should be valid``."""
    rf = resource_flavor(
        labels={"foo": "bar"}, taints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}]
    )
    api.must_create(rf)


def test_resource_flavor_should_have_a_finalizer(api: Api) -> None:
    created = api.must_create(resource_flavor())
    assert created["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]


@pytest.mark.parametrize(
    ("taints", "labels", "expected"),
    [
        pytest.param(TAINTS_MAX_ITEMS + 1, 0, INVALID_ERROR, id="invalid number of taint"),
        pytest.param(0, NODE_SELECTOR_MAX_PROPERTIES + 1, INVALID_ERROR, id="invalid number of nodeSelector"),
        pytest.param(
            TAINTS_MAX_ITEMS, NODE_SELECTOR_MAX_PROPERTIES, OK, id="valid number of nodeSelector and taint"
        ),
    ],
)
def test_invalid_number_of_properties(api: Api, taints: int, labels: int, expected: str) -> None:
    rf = resource_flavor(
        taints=[{"key": f"t{i}", "effect": "NoExecute"} for i in range(taints)] or None,
        labels={f"l{i}": "" for i in range(labels)} or None,
    )
    assert api.create(rf).outcome == expected


def test_updating_a_resource_flavor_with_invalid_taints_should_fail_to_update(api: Api) -> None:
    """``Updating a ResourceFlavor with invalid taints`` / ``Should fail to update``."""
    rf = api.must_create(resource_flavor())
    answer = api.change(rf, _set("spec.nodeTaints", [{"key": "foo", "value": "bar", "effect": "Invalid"}]))
    assert answer.outcome == INVALID_ERROR


RF_CREATE_CASES: list[tuple[str, Obj, str]] = [
    (
        "Should fail to create with invalid taints",
        resource_flavor(taints=[{"key": "skdajf"}, {"key": "@foo", "value": "bar", "effect": "NoSchedule"}]),
        INVALID_ERROR,
    ),
    (
        "Should fail to create with invalid label name",
        resource_flavor(labels={"@abc": "foo"}),
        FORBIDDEN_ERROR,
    ),
    (
        "Should fail to create with invalid tolerations",
        resource_flavor(
            tolerations=[
                {"key": "@abc", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
                {"key": "abc", "operator": "Exists", "value": "v", "effect": "NoSchedule"},
                {"key": "abc", "operator": "Equal", "value": "v", "effect": "not-valid"},
                {"key": "abc", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
            ]
        ),
        INVALID_ERROR,
    ),
]


@pytest.mark.parametrize(
    ("rf", "expected"), [c[1:] for c in RF_CREATE_CASES], ids=[c[0] for c in RF_CREATE_CASES]
)
def test_validate_resource_flavor_on_creation(api: Api, rf: Obj, expected: str) -> None:
    assert api.create(rf).outcome == expected


# --- admissioncheck_test.go --------------------------------------------------------------------------------


def admission_check(name: str = "", controller: str | None = None, parameters: Obj | None = None) -> Obj:
    """A ``kueue.AdmissionCheck{...}`` literal as Go sends it (``controllerName`` is not
    ``omitempty``; an unset name is omitted)."""
    spec: Obj = {"controllerName": controller or ""}
    if parameters is not None:
        spec["parameters"] = parameters
    meta: Obj = {"name": name} if name else {}
    return {"apiVersion": V1BETA2, "kind": "AdmissionCheck", "metadata": meta, "spec": spec}


def test_admission_check_defaulting_on_creating_all_defaults(api: Api) -> None:
    """``Defaulting on creating`` / ``All defaults``: the spec is stored as sent."""
    created = api.must_create(admission_check("foo", "ac-controller"))
    assert created["spec"] == {"controllerName": "ac-controller"}


def _params(api_group: str = "", kind: str = "", name: str = "") -> Obj:
    """An ``AdmissionCheckParametersReference`` (its three fields are not ``omitempty``)."""
    return {"apiGroup": api_group, "kind": kind, "name": name}


AC_CREATE_CASES: list[tuple[str, Obj, str]] = [
    (
        "Should fail to create AdmissionCheck with no controller name",
        admission_check(parameters=_params("ref.api.group", "RefKind", "ref-name")),
        INVALID_ERROR,
    ),
    (
        "Should fail to create AdmissionCheck with bad ref api group",
        admission_check(
            controller="controller-name", parameters=_params("ref.api.group/Bad", "RefKind", "ref-name")
        ),
        INVALID_ERROR,
    ),
    (
        "Should fail to create AdmissionCheck with no ref api group",
        admission_check(controller="controller-name", parameters=_params("", "RefKind", "ref-name")),
        INVALID_ERROR,
    ),
    (
        "Should fail to create AdmissionCheck with bad ref kind",
        admission_check(
            controller="controller-name", parameters=_params("ref.api.group", "RefKind/Bad", "ref-name")
        ),
        INVALID_ERROR,
    ),
    (
        "Should fail to create AdmissionCheck with no ref kind",
        admission_check(controller="controller-name", parameters=_params("ref.api.group", "", "ref-name")),
        INVALID_ERROR,
    ),
    (
        "Should fail to create AdmissionCheck with bad ref name",
        admission_check(
            controller="controller-name", parameters=_params("ref.api.group", "RefKind", "ref-name/Bad")
        ),
        INVALID_ERROR,
    ),
    (
        "Should fail to create AdmissionCheck with no ref name",
        admission_check(controller="controller-name", parameters=_params("ref.api.group", "RefKind", "")),
        INVALID_ERROR,
    ),
    (
        "Should allow to create AdmissionCheck with no parameters",
        admission_check("foo", "controller-name"),
        OK,
    ),
    (
        "Should allow to create AdmissionCheck with valid spec",
        admission_check("foo", "controller-name", _params("ref.api.group", "RefKind", "ref-name")),
        OK,
    ),
]


@pytest.mark.parametrize(
    ("ac", "expected"), [c[1:] for c in AC_CREATE_CASES], ids=[c[0] for c in AC_CREATE_CASES]
)
def test_validate_admission_check_on_creation(api: Api, ac: Obj, expected: str) -> None:
    assert api.create(ac).outcome == expected


def _admission_check_with_parameters(api: Api) -> Obj:
    """``MakeAdmissionCheck("admission-check").ControllerName(...).Parameters(...)``."""
    return api.must_create(
        admission_check("admission-check", "controller-name", _params("ref.api.group", "RefKind", "ref-name"))
    )


AC_UPDATE_CASES: list[tuple[str, Callable[[Obj], None], str]] = [
    (
        "Should allow to update AdmissionCheck when changing parameters",
        _set("spec.parameters", _params("ref.api.group2", "RefKind2", "ref-name2")),
        OK,
    ),
    ("Should allow to update AdmissionCheck when removing parameters", _set("spec.parameters", None), OK),
    # upstream has two Its of this name: the first empties parameters.name, the second changes controllerName
    (
        "Should fail to update AdmissionCheck when breaking parameters",
        _set("spec.parameters.name", ""),
        INVALID_ERROR,
    ),
    (
        "Should fail to update AdmissionCheck when breaking parameters (controllerName)",
        _set("spec.controllerName", "controller-name2"),
        INVALID_ERROR,
    ),
]


@pytest.mark.parametrize(
    ("mutate", "expected"), [c[1:] for c in AC_UPDATE_CASES], ids=[c[0] for c in AC_UPDATE_CASES]
)
def test_admission_check_update(api: Api, mutate: Callable[[Obj], None], expected: str) -> None:
    ac = _admission_check_with_parameters(api)
    assert api.change(ac, mutate).outcome == expected
