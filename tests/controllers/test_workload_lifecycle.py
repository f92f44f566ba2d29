"""The controller manager over a real embedded API server (in-process client, no HTTP).

Scenarios are named after the upstream tests they follow (upstream
``pkg/controller/core/*_controller_test.go``). Time is a manual clock the test moves, so timeouts and
backoffs of minutes take no wall time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pykueue.api.config import load_config
from pykueue.apiserver.app import create_app
from pykueue.client import resources as R
from pykueue.client.inprocess import InProcessClient
from pykueue.client.interface import Conflict
from pykueue.controllers.manager import ControllerManager
from pykueue.controllers.options import ControllerOptions, default_options
from pykueue.store import Store


class ManualClock:
    """Wall-clock-free time for the controllers."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Env:
    """An API server, a client and a running controller manager."""

    def __init__(self, options: ControllerOptions | None = None) -> None:
        self.store = Store(None)
        _, parts = create_app(self.store)
        parts.bootstrap()
        self.client = InProcessClient(parts.handlers)
        self.clock = ManualClock()
        self.mgr = ControllerManager(self.client, options, clock=self.clock)
        self.mgr.start()
        assert self.mgr.wait_ready(10)

    def close(self) -> None:
        self.mgr.stop()
        self.store.close()

    def create(self, res: Any, obj: dict[str, Any]) -> dict[str, Any]:
        return self.client.create(res, obj)

    def get(self, res: Any, name: str, namespace: str | None = "default") -> dict[str, Any]:
        return self.client.get(res, name, namespace if res.namespaced else None)

    def patch(self, res: Any, name: str, patch: dict[str, Any], namespace: str | None = "default") -> None:
        self.client.patch(res, name, patch, namespace if res.namespaced else None)

    def finish(self, name: str) -> None:
        """Mark the Workload ``name`` Finished, as its job's integration does when the job ends."""
        wl = self.get(R.WORKLOADS, name)
        wl["status"]["conditions"].append(
            {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done", "lastTransitionTime": "2026-11-22T12:00:00Z"}
        )
        self.client.replace(R.WORKLOADS, wl, subresource="status")


@pytest.fixture
def env() -> Iterator[Env]:
    e = Env()
    yield e
    e.close()


def wait(predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Poll ``predicate`` until it is truthy. 30 s: it returns as soon as it holds, and a 10 s
    bound timed out under a loaded whole-suite run (load 5-6 on 2 cores) while the same test passed
    alone."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def change_status_concurrently(api: Any, name: str, namespace: str = "default") -> None:
    """Another writer changes the Workload's status (a condition of its own): a scheduler's status
    write computed from the version before it gets a 409 that its loose retry does not override
    (the status it was computed from is gone), so the decision is forgotten."""
    current = api.get(R.WORKLOADS, name, namespace)
    conditions = [*((current.get("status") or {}).get("conditions") or [])]
    conditions.append({
        "type": "Touched", "status": "True", "reason": "ByTest", "message": "a concurrent status change",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    })  # fmt: skip
    api.patch(R.WORKLOADS, name, {"status": {"conditions": conditions}}, namespace, subresource="status")


def cond(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == ctype:
            return dict(c)
    return None


def has(env: Env, name: str, ctype: str, status: str = "True", reason: str | None = None) -> Callable[[], Any]:
    def check() -> dict[str, Any] | None:
        wl = env.get(R.WORKLOADS, name)
        c = cond(wl, ctype)
        if c is not None and c["status"] == status and (reason is None or c["reason"] == reason):
            return wl
        return None

    return check


def setup_queues(env: Env, cpu: int = 2, stop_policy: str | None = None, lq_stop: str | None = None) -> None:
    env.create(R.RESOURCE_FLAVORS, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "f"}})
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}
        ],
    }
    if stop_policy:
        spec["stopPolicy"] = stop_policy
    env.create(R.CLUSTER_QUEUES, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec})
    lq_spec: dict[str, Any] = {"clusterQueue": "cq"}
    if lq_stop:
        lq_spec["stopPolicy"] = lq_stop
    env.create(
        R.LOCAL_QUEUES,
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "default"}, "spec": lq_spec},
    )


def workload(name: str, cpu: str = "1", queue: str = "lq", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}},
                }
            ],
            **spec,
        },
    }


# --- admission ------------------------------------------------------------------------------------------


def test_admit(env: Env) -> None:
    setup_queues(env)
    env.create(R.WORKLOADS, workload("a"))
    wl = wait(has(env, "a", "Admitted", reason="Admitted"))
    assert cond(wl, "QuotaReserved")["message"] == "Quota reserved in ClusterQueue cq"  # type: ignore[index]
    env.clock.advance(1.1)  # queue status is refreshed within the 1s batch period (``UpdatesBatchPeriod``)
    cq = wait(lambda: (c := env.get(R.CLUSTER_QUEUES, "cq")).get("status", {}).get("admittedWorkloads") == 1 and c)
    assert cq["status"]["reservingWorkloads"] == 1
    assert cq["status"]["flavorsUsage"] == [{"name": "f", "resources": [{"name": "cpu", "total": "1", "borrowed": "0"}]}]
    assert "kueue.x-k8s.io/resource-in-use" in cq["metadata"]["finalizers"]


def test_local_queue_missing_is_misconfigured(env: Env) -> None:
    setup_queues(env)
    env.create(R.WORKLOADS, workload("orphan", queue="nope"))
    wl = wait(has(env, "orphan", "QuotaReserved", status="False", reason="Misconfigured"))
    assert cond(wl, "QuotaReserved")["message"] == "LocalQueue nope doesn't exist"  # type: ignore[index]


def test_waiting_for_quota_then_admitted_when_quota_frees(env: Env) -> None:
    setup_queues(env, cpu=1)
    env.create(R.WORKLOADS, workload("first"))
    wait(has(env, "first", "Admitted"))
    env.create(R.WORKLOADS, workload("second"))
    # QuotaReserved=False / PendingEvaluation may come first while the workload waits for its
    # evaluation: wait for the scheduler's reason itself.
    wait(lambda: (c := cond(env.get(R.WORKLOADS, "second"), "QuotaReserved")) is not None
         and c["status"] == "False" and c["reason"] in ("WaitingForQuota", "Pending"))  # fmt: skip
    # A bare Workload (no job integration): finishing it frees the quota at once
    # (``WorkloadReconciler.Update``).
    env.finish("first")
    admitted = has(env, "second", "Admitted")

    def admitted_later() -> Any:
        env.clock.advance(1)  # parked workloads are retried in 1s batches
        return admitted()

    wait(admitted_later)


# --- stopPolicy (upstream ``reconcileOnClusterQueueActiveState``) ----------------------------------------


def test_hold_and_drain_evicts_admitted_workload(env: Env) -> None:
    setup_queues(env)
    env.create(R.WORKLOADS, workload("running"))
    wait(has(env, "running", "Admitted"))
    env.patch(R.CLUSTER_QUEUES, "cq", {"spec": {"stopPolicy": "HoldAndDrain"}}, None)
    wl = wait(has(env, "running", "Evicted", reason="ClusterQueueStopped"))
    assert cond(wl, "Evicted")["message"] == "The ClusterQueue is stopped"  # type: ignore[index]
    cq = wait(lambda: (c := cond(env.get(R.CLUSTER_QUEUES, "cq", None), "Active")) and c["status"] == "False" and c)
    assert cq["reason"] == "Stopped"
    assert cq["message"] == "Can't admit new workloads: is stopped."


def test_hold_keeps_admitted_and_suspends_pending(env: Env) -> None:
    setup_queues(env, cpu=1)
    env.create(R.WORKLOADS, workload("running"))
    wait(has(env, "running", "Admitted"))
    env.patch(R.CLUSTER_QUEUES, "cq", {"spec": {"stopPolicy": "Hold"}}, None)
    env.create(R.WORKLOADS, workload("waiting"))
    wl = wait(has(env, "waiting", "QuotaReserved", status="False", reason="Suspended"))
    assert cond(wl, "QuotaReserved")["message"] == "ClusterQueue cq is inactive"  # type: ignore[index]
    time.sleep(0.3)
    assert cond(env.get(R.WORKLOADS, "running"), "Evicted") is None


def test_local_queue_with_hold_stop_policy(env: Env) -> None:
    setup_queues(env, lq_stop="Hold")
    env.create(R.WORKLOADS, workload("held"))
    wl = wait(has(env, "held", "QuotaReserved", status="False", reason="Suspended"))
    assert cond(wl, "QuotaReserved")["message"] == "LocalQueue lq is inactive"  # type: ignore[index]

    def lq_stopped() -> dict[str, Any] | None:
        c = cond(env.get(R.LOCAL_QUEUES, "lq"), "Active")
        return c if c is not None and c["reason"] == "Stopped" else None

    assert wait(lq_stopped)["message"] == "LocalQueue is stopped"


# --- PodsReady timeout (upstream ``reconcileNotReadyTimeout``) -------------------------------------------


def test_admitted_workload_exceeding_pods_ready_timeout_is_evicted_with_backoff(env: Env) -> None:
    setup_queues(env)
    env.create(R.WORKLOADS, workload("slow"))
    wait(has(env, "slow", "Admitted"))
    env.clock.advance(1801)  # default timeout 30m; nothing reports PodsReady for a bare Workload
    wl = wait(has(env, "slow", "Evicted", reason="PodsReadyTimeout"))
    assert cond(wl, "Evicted")["message"] == "Exceeded the PodsReady timeout default/slow"  # type: ignore[index]
    assert wl["status"]["requeueState"]["count"] == 1
    assert wl["status"]["schedulingStats"]["evictions"] == [
        {"reason": "PodsReadyTimeout", "underlyingCause": "WaitForStart", "count": 1}
    ]


# --- maximum execution time (upstream ``reconcileMaxExecutionTime``) ----------------------------------------


MAX_EXEC_TARGET = ("True", "MaximumExecutionTimeExceeded", "exceeding the maximum execution time")
MAX_EXEC_DEACTIVATED = "The workload is deactivated due to exceeding the maximum execution time"


def _evict_by_test(env: Env, name: str) -> None:
    """Another controller evicts the Workload (upstream's integration test writes Evicted ``ByTest``)."""
    wl = env.get(R.WORKLOADS, name)
    wl["status"]["conditions"].append(
        {"type": "Evicted", "status": "True", "reason": "ByTest", "message": "by test",
         "lastTransitionTime": "2026-11-22T12:00:00Z"}
    )  # fmt: skip
    env.client.replace(R.WORKLOADS, wl, subresource="status")
    wait(has(env, name, "Evicted", reason="ByTest"))


def _deactivate_by_user(env: Env, name: str) -> None:
    env.patch(R.WORKLOADS, name, {"spec": {"active": False}})
    wait(has(env, name, "Evicted", reason="Deactivated"))


# name, what happens once admitted (before the time runs out); want: the Evicted condition's reason
# and message, how many MaximumExecutionTimeExceeded events. Nothing releases a bare Workload's
# quota (no job integration), so ``reconcileMaxExecutionTime`` (which reads only Admitted, within
# ``Reconcile``'s ``HasQuotaReservation`` block) keeps seeing it after any eviction.
MAX_EXEC_CASES: list[tuple[str, Callable[[Env, str], None] | None, tuple[str, str], int]] = [
    # Upstream TestReconcile "admitted workload with max execution time - expired", then what
    # ``Reconcile`` does next: spec.active=false, the eviction (which removes the target), then,
    # the evicted inactive Workload still holding quota, the target set again with a second event.
    (
        "admitted workload with max execution time - expired",
        None,
        ("DeactivatedDueToMaximumExecutionTimeExceeded", MAX_EXEC_DEACTIVATED),
        2,
    ),
    # An active Workload evicted by someone else, its quota not released yet: the rule still runs
    # (``reconcileNotReadyTimeout`` skips evicted Workloads, ``reconcileMaxExecutionTime`` does not);
    # spec.active=false follows, and the Workload, already evicted, is not evicted again.
    ("evicted workload still holding quota", _evict_by_test, ("ByTest", "by test"), 1),
    # A Workload the user deactivated, evicted, its quota not released yet: ``Reconcile``'s inactive
    # branch writes nothing more (evicted, no requeue state) and goes on to the rule.
    (
        "deactivated workload still holding quota",
        _deactivate_by_user,
        ("Deactivated", "The workload is deactivated"),
        1,
    ),
]


@pytest.mark.parametrize(
    ("then", "want_evicted", "want_events"), [c[1:] for c in MAX_EXEC_CASES], ids=[c[0] for c in MAX_EXEC_CASES]
)
def test_reconcile_max_execution_time(
    env: Env, then: Callable[[Env, str], None] | None, want_evicted: tuple[str, str], want_events: int
) -> None:
    setup_queues(env)
    env.create(R.WORKLOADS, workload("limited", maximumExecutionTimeSeconds=60))
    wait(has(env, "limited", "Admitted"))
    if then is not None:
        then(env, "limited")
    env.clock.advance(61)

    def settled() -> dict[str, Any] | None:
        wl = env.get(R.WORKLOADS, "limited")
        target, evicted = cond(wl, "DeactivationTarget"), cond(wl, "Evicted")
        if wl["spec"].get("active") is False and target is not None and evicted is not None:
            return wl if evicted["reason"] == want_evicted[0] else None
        return None

    def exceeded() -> list[dict[str, Any]]:
        events, _ = env.client.list(R.EVENTS, "default")
        return [e for e in events if e["reason"] == "MaximumExecutionTimeExceeded"]

    wait(settled)
    wait(lambda: sum(e.get("count") or 1 for e in exceeded()) >= want_events)
    time.sleep(0.3)  # nothing more comes
    wl = env.get(R.WORKLOADS, "limited")
    target = cond(wl, "DeactivationTarget")
    assert target is not None and (target["status"], target["reason"], target["message"]) == MAX_EXEC_TARGET
    evicted = cond(wl, "Evicted")
    assert evicted is not None and (evicted["reason"], evicted["message"]) == want_evicted
    assert cond(wl, "Admitted")["status"] == "True"  # type: ignore[index]
    assert "accumulatedPastExecutionTimeSeconds" not in wl["status"]
    recorded = exceeded()
    assert {(e["type"], e["message"]) for e in recorded} == {("Warning", "The maximum execution time (60s) exceeded")}
    assert sum(e.get("count") or 1 for e in recorded) == want_events


# --- a rejected check's message and the DeactivationTarget (upstream ``workload.SetDeactivationTarget``) -----


def _queues_with_check(env: Env) -> None:
    env.create(
        R.ADMISSION_CHECKS,
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "AdmissionCheck",
            "metadata": {"name": "chk"},
            "spec": {"controllerName": "example.com/nobody"},
        },
    )
    env.client.patch(
        R.ADMISSION_CHECKS,
        "chk",
        {"status": {"conditions": [
            {"type": "Active", "status": "True", "reason": "Active", "message": "ok", "lastTransitionTime": "2026-11-22T12:00:00Z"}
        ]}},
        None,
        subresource="status",
    )  # fmt: skip
    setup_queues(env)
    env.patch(R.CLUSTER_QUEUES, "cq", {"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "chk"}]}}}, None)


# name, the rejected check's message length; want: deactivated. ``reconcileCheckBasedEviction``
# sets DeactivationTarget to ``AdmissionCheck in Rejected state: "chk" (<message>)`` untruncated:
# past the CRD's 32768 characters the API server refuses the write (422), no event is recorded and
# the reconcile is retried after its backoff, as upstream's returned error is.
LONG_REJECTION_CASES = [
    ("rejected message that fits the target: deactivated", 32700, True),
    ("rejected message longer than a condition's: the target is refused, the Workload kept", 32768, False),
]


@pytest.mark.parametrize(
    ("length", "deactivated"), [c[1:] for c in LONG_REJECTION_CASES], ids=[c[0] for c in LONG_REJECTION_CASES]
)
def test_rejected_check_with_a_long_message(env: Env, length: int, deactivated: bool) -> None:
    _queues_with_check(env)
    env.create(R.WORKLOADS, workload("w"))
    wl = wait(lambda: (w := has(env, "w", "QuotaReserved")()) and (w["status"].get("admissionChecks") or []) and w)
    stamp = env.clock.now.strftime("%Y-%m-%dT%H:%M:%SZ")
    wl["status"]["admissionChecks"] = [
        {"name": "chk", "state": "Rejected", "message": "x" * length, "lastTransitionTime": stamp}
    ]
    env.client.replace(R.WORKLOADS, wl, subresource="status")

    def rejected_events() -> list[dict[str, Any]]:
        events, _ = env.client.list(R.EVENTS, "default")
        return [e for e in events if e["reason"] == "AdmissionCheckRejected"]

    if deactivated:
        evicted = wait(has(env, "w", "Evicted", reason="DeactivatedDueToAdmissionCheck"))
        assert evicted["spec"]["active"] is False
        assert len(cond(evicted, "Evicted")["message"]) == 32768  # type: ignore[index]
        assert len(wait(rejected_events)) == 1
        return
    # The refused write is retried after its backoff (the manual clock does not reach it).
    wait(lambda: ("workload", "default/w") in env.mgr.call_in_manager_thread(env.mgr.work.delayed))
    time.sleep(0.3)
    kept = env.get(R.WORKLOADS, "w")
    assert kept["spec"].get("active", True) is True
    assert cond(kept, "DeactivationTarget") is None and cond(kept, "Evicted") is None
    assert cond(kept, "QuotaReserved")["status"] == "True"  # type: ignore[index]
    assert rejected_events() == []


# --- finalizers (upstream ``kueue.ResourceInUseFinalizerName``) ---------------------------------------------


def test_reserving_workload_keeps_cluster_queue_terminating(env: Env) -> None:
    setup_queues(env)
    env.create(R.WORKLOADS, workload("holder"))
    wait(has(env, "holder", "Admitted"))
    env.client.delete(R.CLUSTER_QUEUES, "cq")

    def terminating() -> dict[str, Any] | None:
        c = cond(env.get(R.CLUSTER_QUEUES, "cq", None), "Active")
        return c if c is not None and c["reason"] == "Terminating" else None

    assert wait(terminating)["message"] == "Can't admit new workloads; clusterQueue is terminating"
    env.client.delete(R.WORKLOADS, "holder", "default")

    def gone() -> bool:
        env.clock.advance(1)  # the status refresh after a workload change waits for the batch period
        try:
            env.get(R.CLUSTER_QUEUES, "cq", None)
        except Exception:
            return True
        return False

    wait(gone)


def test_flavor_in_use_is_kept_until_cluster_queue_goes(env: Env) -> None:
    setup_queues(env)
    wait(lambda: "kueue.x-k8s.io/resource-in-use" in (env.get(R.RESOURCE_FLAVORS, "f", None)["metadata"].get("finalizers") or []))
    # The controllers must have seen the ClusterQueue before the flavor is deleted: flavors and
    # ClusterQueues come through separate watches, and a flavor no known queue uses rightly goes at
    # once. The queue's finalizer does not show that (the API's defaulting adds it on create); its
    # Active condition does (the ClusterQueue controller writes it from its cache).
    wait(lambda: cond(env.get(R.CLUSTER_QUEUES, "cq", None), "Active"))
    env.client.delete(R.RESOURCE_FLAVORS, "f")
    time.sleep(0.3)
    assert env.get(R.RESOURCE_FLAVORS, "f", None)["metadata"].get("deletionTimestamp")
    env.client.delete(R.CLUSTER_QUEUES, "cq")

    def gone() -> bool:
        try:
            env.get(R.RESOURCE_FLAVORS, "f", None)
        except Exception:
            return True
        return False

    wait(gone)


def test_options_from_default_config() -> None:
    opts = default_options()
    assert opts.scheduler.wait_for_pods_ready
    assert opts.pods_ready_timeout_seconds == 1800.0


def test_cluster_queue_recreated_counts_existing_reservations(env: Env) -> None:
    setup_queues(env, cpu=1)
    env.create(R.WORKLOADS, workload("holder"))
    wait(has(env, "holder", "Admitted"))
    env.client.delete(R.CLUSTER_QUEUES, "cq")
    env.patch(R.CLUSTER_QUEUES, "cq", {"metadata": {"finalizers": None}}, None)  # forced away

    def gone() -> bool:
        try:
            env.get(R.CLUSTER_QUEUES, "cq", None)
        except Exception:
            return True
        return False

    wait(gone)
    spec = {
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}
        ],
    }
    env.create(R.CLUSTER_QUEUES, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": spec})
    env.create(R.WORKLOADS, workload("newcomer"))
    # QuotaReserved=False / PendingEvaluation may come first (the workload waits for its
    # evaluation): wait for the scheduler's reason itself. Seen once in a full run under load.
    wait(has(env, "newcomer", "QuotaReserved", status="False", reason="WaitingForQuota"))


def test_should_set_the_workload_requeued_condition_to_true_on_reactivated(env: Env) -> None:
    setup_queues(env)
    env.create(R.WORKLOADS, workload("toggled"))
    wait(has(env, "toggled", "Admitted"))
    env.patch(R.WORKLOADS, "toggled", {"spec": {"active": False}})
    wl = wait(has(env, "toggled", "Evicted", reason="Deactivated"))
    assert cond(wl, "Evicted")["message"] == "The workload is deactivated"  # type: ignore[index]
    # Nothing releases a bare Workload's quota (no job integration): play the integration's part.
    wl = env.get(R.WORKLOADS, "toggled")
    wl["status"].pop("admission", None)
    for c in wl["status"]["conditions"]:
        if c["type"] == "QuotaReserved":
            c.update(status="False", reason="PendingEvaluation", message="The workload is deactivated")
        if c["type"] == "Admitted":
            c.update(status="False", reason="NoReservation", message="The workload has no reservation")
    wl["status"]["conditions"].append(
        {"type": "Requeued", "status": "False", "reason": "Deactivated", "message": "The workload is deactivated",
         "lastTransitionTime": "2026-11-22T12:00:00Z"}
    )  # fmt: skip
    env.client.replace(R.WORKLOADS, wl, subresource="status")
    env.patch(R.WORKLOADS, "toggled", {"spec": {"active": True}})
    back = wait(has(env, "toggled", "Requeued", reason="Reactivated"))
    assert cond(back, "Requeued")["message"] == "The workload was reactivated"  # type: ignore[index]
    wait(has(env, "toggled", "Admitted"))


# --- the decision trail (KueueCore.story) ------------------------------------------------------------------


def test_story_names_the_cycle_and_the_watch_event_behind_each_write(env: Env) -> None:
    """The scheduler's reservation is tagged with its cycle; the workload controller's steps with the
    resourceVersion of the Workload they reacted to."""
    setup_queues(env)
    env.create(R.WORKLOADS, workload("a"))
    env.create(R.WORKLOADS, workload("orphan", queue="nope"))
    wait(has(env, "a", "Admitted", reason="Admitted"))
    orphan = wait(has(env, "orphan", "QuotaReserved", status="False", reason="Misconfigured"))

    def stories() -> tuple[list[Any], list[Any]]:
        return env.mgr.core.story("default/a"), env.mgr.core.story("default/orphan")

    # The controller's status writes are sent ahead: a step joins the trail when its answer comes
    # back, which may be after the watch (and this test's GET) has shown the written status.
    def recorded() -> tuple[list[Any], list[Any]] | None:
        admitted, misconfigured = env.mgr.call_in_manager_thread(stories)
        return (admitted, misconfigured) if admitted and misconfigured else None

    admitted, misconfigured = wait(recorded)
    reserved = [t for t in admitted if t.reason in ("QuotaReserved", "Admitted")]
    assert reserved and reserved[0].stimulus.startswith("cycle-") and reserved[0].outcome == "applied"
    assert [(t.reason, t.outcome) for t in misconfigured] == [("Misconfigured", "applied")]
    # The controller reacted to the version kubectl created, older than the one it wrote.
    kind, _, version = misconfigured[0].stimulus.partition("-")
    assert kind == "watch" and 0 < int(version) < int(orphan["metadata"]["resourceVersion"])


def test_story_names_the_timer_behind_a_backoff_requeue(env: Env) -> None:
    """A Workload whose requeue backoff expires is requeued by the controller's timer, and its trail
    says so (``timer-workload/<key>``), not the watch event it last saw."""
    env.create(R.WORKLOADS, workload("b", queue="nope"))
    wait(has(env, "b", "QuotaReserved", status="False", reason="Misconfigured"))
    requeue_at = (env.clock() + timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    env.client.patch(
        R.WORKLOADS, "b", {"status": {"requeueState": {"count": 1, "requeueAt": requeue_at}}}, "default",
        subresource="status",
    )
    wait(lambda: ("workload", "default/b") in env.mgr.work.delayed())  # the controller armed its timer
    env.clock.advance(31)
    wait(lambda: (env.get(R.WORKLOADS, "b")["status"].get("requeueState") or {}).get("requeueAt") is None)

    def backoff_steps() -> list[Any]:
        # The write is sent ahead: its step joins the trail when the answer is back.
        trail = env.mgr.call_in_manager_thread(lambda: env.mgr.core.story("default/b"))
        return [t for t in trail if t.reason == "BackoffFinished"]

    backoff = wait(backoff_steps)
    assert [(t.stimulus, t.outcome) for t in backoff] == [("timer-workload/default/b", "applied")]


def test_a_workload_change_asks_for_each_of_its_queues_status_once(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    # The old and the new version of a changed Workload are in the same queues: one status
    # refresh request for each (a second one of a key already due sooner changed nothing).
    setup_queues(env)
    env.create(R.WORKLOADS, workload("a"))
    wait(has(env, "a", "Admitted"))

    def admission_routed() -> bool:
        # The API shows the admission before the manager has run the write's completion (or seen
        # its watch event) and routed that change, which asks for the same two refreshes: record
        # only once the manager holds the version the API serves, with no write of its own
        # pending, and nothing left to route or reconcile.
        version = env.get(R.WORKLOADS, "a")["metadata"]["resourceVersion"]

        def check() -> bool:
            env.mgr.cluster.deliver_updates()
            held = env.mgr.cluster.workloads.get("default/a")
            return (
                held is not None
                and held.metadata.resource_version == version
                and env.mgr.writes.pending() == 0
                and env.mgr.work.idle()
            )

        return env.mgr.call_in_manager_thread(check)

    wait(admission_routed)
    requested: list[tuple[str, object]] = []
    real = env.mgr.cluster.schedule_status

    def recording(kind: str, key: Any) -> None:
        requested.append((kind, key))
        real(kind, key)

    monkeypatch.setattr(env.mgr.cluster, "schedule_status", recording)
    env.patch(R.WORKLOADS, "a", {"metadata": {"labels": {"touched": "yes"}}})
    wait(lambda: env.mgr.call_in_manager_thread(lambda: "touched" in env.mgr.cluster.workloads["default/a"].metadata.labels))
    env.mgr.call_in_manager_thread(env.mgr.cluster.deliver_updates)
    assert requested == [("cq", "cq"), ("lq", "default/lq")]
    # It still refreshes them: the batch period later, from the manager's timer.
    assert ("cq", "cq") in env.mgr.work.delayed() and ("lq", "default/lq") in env.mgr.work.delayed()


def test_retry_check_delay_sets_requeue_at_of_a_workload_without_quota(env: Env) -> None:
    """Upstream ``Reconcile`` runs ``NeedsRequeueAtUpdate`` before it looks at the quota: a Retry
    check with a delay on a pending Workload moves ``requeueState.requeueAt`` too."""
    setup_queues(env)
    env.create(R.WORKLOADS, workload("w", queue="nope"))  # stays pending: no LocalQueue
    wl = wait(has(env, "w", "QuotaReserved", status="False", reason="Misconfigured"))
    when = env.clock.now
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    wl["status"]["admissionChecks"] = [
        {"name": "check", "state": "Retry", "message": "later", "lastTransitionTime": stamp, "requeueAfterSeconds": 30}
    ]
    env.client.replace(R.WORKLOADS, wl, subresource="status")
    state = wait(lambda: (env.get(R.WORKLOADS, "w").get("status") or {}).get("requeueState"))
    assert state == {"requeueAt": (when + timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    assert cond(env.get(R.WORKLOADS, "w"), "QuotaReserved")["reason"] == "Misconfigured"  # type: ignore[index]


def test_a_pending_workload_waiting_out_its_backoff_is_left_alone(env: Env) -> None:
    """Upstream ``Reconcile`` returns at "Waiting for backoff to finish" for an active Workload whose
    ``requeueAt`` is ahead, before ``syncQuotaReservedFalseCondition``: a stale QuotaReserved=False
    reason is kept until the backoff ends (the controller used to rewrite it at once), then the
    timer clears ``requeueAt`` and the queue rules run."""
    setup_queues(env)
    env.create(R.WORKLOADS, workload("w", queue="nope"))  # stays pending: no LocalQueue
    wl = wait(has(env, "w", "QuotaReserved", status="False", reason="Misconfigured"))
    stamp = env.clock.now.strftime("%Y-%m-%dT%H:%M:%SZ")
    requeue_at = (env.clock.now + timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%SZ")
    stale = {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "stale", "lastTransitionTime": stamp}
    wl["status"]["conditions"] = [c if c["type"] != "QuotaReserved" else stale for c in wl["status"]["conditions"]]
    wl["status"]["requeueState"] = {"count": 1, "requeueAt": requeue_at}
    env.client.replace(R.WORKLOADS, wl, subresource="status")
    wait(lambda: ("workload", "default/w") in env.mgr.work.delayed())  # the controller armed its timer
    wait(lambda: env.mgr.call_in_manager_thread(env.mgr.work.idle))
    waiting = env.get(R.WORKLOADS, "w")
    assert cond(waiting, "QuotaReserved") == stale
    assert waiting["status"]["requeueState"] == {"count": 1, "requeueAt": requeue_at}
    env.clock.advance(61)
    done = wait(has(env, "w", "QuotaReserved", status="False", reason="Misconfigured"))
    assert done["status"]["requeueState"] == {"count": 1}


def test_a_reserved_workload_with_its_checks_ready_is_admitted_before_a_hold_and_drain_evicts_it(env: Env) -> None:
    """Upstream ``Reconcile`` syncs the checks and ``SyncAdmittedCondition`` (all checks Ready:
    Admitted) before ``reconcileOnLocalQueueActiveState``, which then evicts the admitted Workload of
    a HoldAndDrain LocalQueue (``workloadevict.Evict``). The controller ran the queue rules first
    and released the reservation silently ("LocalQueue lq is stopped", no Admitted, no eviction)."""
    _queues_with_check(env)
    env.create(R.WORKLOADS, workload("w"))
    wl = wait(lambda: (w := has(env, "w", "QuotaReserved")()) and (w["status"].get("admissionChecks") or []) and w)
    assert cond(wl, "Admitted") is None or cond(wl, "Admitted")["status"] == "False"  # type: ignore[index]
    wl["status"]["admissionChecks"] = [dict(c, state="Ready", message="ok") for c in wl["status"]["admissionChecks"]]

    def both_at_once() -> None:
        # In one manager step: the LocalQueue stops and the check turns Ready, so the Workload's
        # next reconcile sees both.
        env.patch(R.LOCAL_QUEUES, "lq", {"spec": {"stopPolicy": "HoldAndDrain"}})
        env.client.replace(R.WORKLOADS, wl, subresource="status")

    env.mgr.call_in_manager_thread(both_at_once)
    evicted = wait(has(env, "w", "Evicted", reason="LocalQueueStopped"))
    assert cond(evicted, "Evicted")["message"] == "The LocalQueue is stopped"  # type: ignore[index]
    assert cond(evicted, "Admitted")["status"] == "True"  # type: ignore[index]


def test_a_retry_check_the_cluster_queue_does_not_require_is_dropped_not_evicting(env: Env) -> None:
    """Upstream ``Reconcile`` runs ``reconcileSyncAdmissionChecks`` before
    ``reconcileCheckBasedEviction``: a check in Retry that the ClusterQueue does not require is
    removed from the Workload's status first, so it evicts nothing. The controller evicted first."""
    setup_queues(env)
    env.create(R.WORKLOADS, workload("w"))
    wl = wait(has(env, "w", "Admitted", reason="Admitted"))
    stamp = env.clock.now.strftime("%Y-%m-%dT%H:%M:%SZ")
    wl["status"]["admissionChecks"] = [{"name": "chk", "state": "Retry", "message": "later", "lastTransitionTime": stamp}]
    env.client.replace(R.WORKLOADS, wl, subresource="status")
    synced = wait(lambda: (w := env.get(R.WORKLOADS, "w"))["status"].get("admissionChecks") is None and w)
    wait(lambda: env.mgr.call_in_manager_thread(env.mgr.work.idle))
    synced = env.get(R.WORKLOADS, "w")
    assert cond(synced, "Evicted") is None
    assert cond(synced, "Admitted")["status"] == "True"  # type: ignore[index]


def _check_finalizers(env: Env) -> list[str]:
    return list(env.get(R.ADMISSION_CHECKS, "check", None)["metadata"].get("finalizers") or [])


def _gone(env: Env, res: Any, name: str) -> Callable[[], bool]:
    def check() -> bool:
        try:
            env.get(res, name, None)
        except Exception:
            return True
        return False

    return check


@pytest.mark.parametrize("release", ["delete the ClusterQueue", "drop the check from the ClusterQueue"])
def test_admission_check_in_use_is_kept_until_no_cluster_queue_names_it(env: Env, release: str) -> None:
    # Upstream ``AdmissionCheckReconciler.Reconcile`` (pkg/controller/core/admissioncheck_controller.go):
    # a deleted AdmissionCheck keeps its finalizer while ``Cache.ClusterQueuesUsingAdmissionCheck``
    # names a ClusterQueue; dropping the check from the ClusterQueue's spec (quota unchanged) or
    # deleting the ClusterQueue lets it go.
    env.create(
        R.ADMISSION_CHECKS,
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "check"}, "spec": {"controllerName": "example.com/none"}},
    )
    setup_queues(env)
    wait(lambda: "kueue.x-k8s.io/resource-in-use" in _check_finalizers(env))
    # Merge patches, not read-modify-PUTs: the controllers write the ClusterQueue meanwhile (its
    # status, its finalizer), and a PUT of the version read got a 409 in a loaded CI run.
    env.client.patch(R.CLUSTER_QUEUES, "cq", {"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "check"}]}}})
    # The ClusterQueue controller has seen the check once the Active condition names it.
    wait(lambda: "check" in (cond(env.get(R.CLUSTER_QUEUES, "cq", None), "Active") or {}).get("message", ""))
    env.client.delete(R.ADMISSION_CHECKS, "check")
    time.sleep(0.3)
    assert env.get(R.ADMISSION_CHECKS, "check", None)["metadata"].get("deletionTimestamp")
    if release == "delete the ClusterQueue":
        env.client.delete(R.CLUSTER_QUEUES, "cq")
    else:
        env.client.patch(R.CLUSTER_QUEUES, "cq", {"spec": {"admissionChecksStrategy": None}})
    wait(_gone(env, R.ADMISSION_CHECKS, "check"))


@pytest.mark.parametrize(
    ("base", "cap", "want_delay"),
    [
        # ``workload.UpdateRequeueState`` for the 2nd requeue: ``base * 2``, capped by backoffMaxSeconds.
        pytest.param(10, 15, 15, id="wait time should be limited to backoffMaxSeconds"),
        # ``pkg/util/wait.NewBackoff``: a zero cap is ``MaxInt64 / 2`` ns, i.e. no cap (validation
        # only rejects negative backoffMaxSeconds); the wait is not zeroed.
        pytest.param(10, 0, 20, id="backoffMaxSeconds 0 leaves the backoff uncapped"),
    ],
)
def test_pods_ready_timeout_requeue_backoff(base: int, cap: int, want_delay: int) -> None:
    cfg = f"""apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
waitForPodsReady:
  timeout: 5m
  requeuingStrategy: {{backoffBaseSeconds: {base}, backoffMaxSeconds: {cap}}}
"""
    env = Env(ControllerOptions.from_config(load_config(cfg)))
    try:
        # Created before its queues, so the requeue count of an earlier eviction lands first.
        env.create(R.WORKLOADS, workload("slow"))
        for _ in range(50):  # the controllers write its pending condition meanwhile: retry a 409
            wl = env.get(R.WORKLOADS, "slow")
            wl.setdefault("status", {})["requeueState"] = {"count": 1}
            try:
                env.client.replace(R.WORKLOADS, wl, subresource="status")
                break
            except Conflict:
                continue
        setup_queues(env)
        wait(has(env, "slow", "Admitted"))
        env.clock.advance(301)
        evicted_at = env.clock.now
        wl = wait(has(env, "slow", "Evicted", reason="PodsReadyTimeout"))
        want_at = (evicted_at + timedelta(seconds=want_delay)).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert wl["status"]["requeueState"] == {"count": 2, "requeueAt": want_at}
    finally:
        env.close()
