"""One reconcile of the batch/v1 Job reconciler over the embedded API server, as upstream's
``TestReconciler`` (``pkg/controller/jobs/job/job_controller_test.go``) runs one ``Reconcile`` over
a fake client seeded with the case's objects.

The controller manager runs as a standby (:meth:`ControllerManager.follow`): it watches and fills
its caches but reconciles nothing by itself, so the test decides the one reconcile that runs
(:meth:`JobReconcile.reconcile`, on the manager thread), then reads back the Job, the Workloads and
the Events the API server holds.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from pykueue.api.meta import LabelSelector
from pykueue.apiserver.app import create_app
from pykueue.client import resources as R
from pykueue.client.inprocess import InProcessClient
from pykueue.controllers.cluster_cache import WATCHED
from pykueue.controllers.manager import ControllerManager
from pykueue.controllers.options import ControllerOptions
from pykueue.core.options import DefaultGates, SchedulerOptions
from pykueue.store import Store

_T = TypeVar("_T")

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)
NOW_TEXT = "2026-11-22T12:00:00Z"
FINALIZER = "kueue.x-k8s.io/resource-in-use"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


class _Clock:
    def __call__(self) -> datetime:
        return NOW


def base_job(
    name: str = "job",
    namespace: str = "ns",
    *,
    suspend: bool = True,
    queue: str | None = "foo",
    parallelism: int = 10,
) -> dict[str, Any]:
    """Upstream's ``baseJobWrapper``: suspended, queue ``foo``, parallelism 10, 1 CPU per pod."""
    labels = {QUEUE_LABEL: queue} if queue else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "suspend": suspend,
            "parallelism": parallelism,
            "template": {
                "metadata": {},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}],
                },
            },
        },
    }


def condition(type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": NOW_TEXT,
    }


def base_workload(
    name: str = "wl",
    namespace: str = "ns",
    *,
    count: int = 10,
    reserve: bool = True,
    admitted: bool | None = None,
    queue: str = "foo",
    cq: str = "cq",
    assignment: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Upstream's ``baseWorkloadWrapper``: queue ``foo``, the finalizer, pod set ``main`` of 10×1 CPU,
    quota reserved in ``cq`` (``ReserveQuotaAt``), and ``AdmittedAt(admitted)`` unless None."""
    wl: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "finalizers": [FINALIZER]},
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": count,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}
                            ],
                        }
                    },
                }
            ],
        },
        "status": {},
    }
    if reserve:
        psa = {"name": "main", "flavors": {}, "count": count, **(assignment or {})}
        wl["status"] = {
            "admission": {"clusterQueue": cq, "podSetAssignments": [psa]},
            "conditions": [
                condition("QuotaReserved", "True", "AdmittedByTest", f"Admitted by ClusterQueue {cq}")
            ],
        }
        if admitted is not None:
            wl["status"]["conditions"].append(
                condition(
                    "Admitted", "True" if admitted else "False", "ByTest", f"Admitted by ClusterQueue {cq}"
                )
            )
    return wl


class JobReconcile:
    """An API server seeded with a case's objects and a standby manager to run one reconcile."""

    def __init__(
        self,
        gates: Mapping[str, bool] | None = None,
        *,
        wait_for_pods_ready: bool = False,
        manage_jobs_without_queue_name: bool = False,
        label_keys_to_copy: tuple[str, ...] = (),
        managed_jobs_namespace_selector: LabelSelector | None = None,
        deactivated_retention_seconds: float | None = None,
    ) -> None:
        # No garbage collector, as upstream's fake client: a Workload whose Job is gone stays for the
        # reconcile to find (a cluster's collector deletes it only later, asynchronously).
        self.store = Store(None, garbage_collection=False)
        _, parts = create_app(self.store)
        parts.bootstrap()
        self.client = InProcessClient(parts.handlers)
        options = ControllerOptions(
            scheduler=SchedulerOptions(
                gates=DefaultGates(dict(gates or {})), wait_for_pods_ready=wait_for_pods_ready
            ),
            manage_jobs_without_queue_name=manage_jobs_without_queue_name,
            label_keys_to_copy=label_keys_to_copy,
            managed_jobs_namespace_selector=managed_jobs_namespace_selector,
            deactivated_retention_seconds=deactivated_retention_seconds,
        )
        self.mgr = ControllerManager(self.client, options, clock=_Clock())
        self.mgr.follow()
        self.mgr.start()
        assert self.mgr.wait_ready(10)
        for ns, labels in (("ns", {}), ("labelled-ns", {"managed-by-kueue": "true"})):
            self.client.create(
                R.NAMESPACES,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}},
            )
        self.client.create(
            R.RESOURCE_FLAVORS,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": "default"},
            },
        )

    def close(self) -> None:
        self.mgr.stop()
        self.store.close()

    def __enter__(self) -> JobReconcile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- seeding -----------------------------------------------------------------------------------

    def add_job(
        self,
        job: Mapping[str, Any],
        status: Mapping[str, Any] | None = None,
        *,
        finalizers: Iterable[str] = (),
        deleted: bool = False,
    ) -> dict[str, Any]:
        """Create ``job`` as written (the webhook suspends a queued Job at creation, so an unsuspended
        one is unsuspended by an update afterwards), then its ``status``; ``deleted`` leaves it with a
        deletionTimestamp (held by ``finalizers``)."""
        body = copy.deepcopy(dict(job))
        if finalizers:
            body["metadata"]["finalizers"] = list(finalizers)
        out = self.client.create(R.JOBS, body)
        if out["spec"].get("suspend") != job["spec"].get("suspend"):
            out["spec"]["suspend"] = job["spec"].get("suspend")
            out = self.client.replace(R.JOBS, out)
        if status:
            out["status"] = dict(status)
            out = self.client.replace(R.JOBS, out, subresource="status")
        if deleted:
            self.client.delete(R.JOBS, out["metadata"]["name"], out["metadata"]["namespace"])
            out = self.client.get(R.JOBS, out["metadata"]["name"], out["metadata"]["namespace"])
        return out

    def add_workload(
        self, wl: Mapping[str, Any], owner: Mapping[str, Any] | None = None, *, owner_containers: bool = True
    ) -> dict[str, Any]:
        """Create ``wl`` with ``owner`` as its controller (upstream's ``SetControllerReference``), then its status.

        With ``owner_containers`` the pod sets' containers are the owner Job's as the API server
        stored them (defaults included), as the Workload built from that Job has them: upstream's
        fake client applies no defaults, so its cases write the same containers on both sides."""
        body = copy.deepcopy(dict(wl))
        status = body.pop("status", None)
        if owner is not None and "ownerReferences" not in body["metadata"]:
            body["metadata"]["ownerReferences"] = [controller_ref(owner)]
        if owner is not None and owner_containers and "spec" in owner:
            containers = owner["spec"]["template"]["spec"]["containers"]
            for ps in body["spec"]["podSets"]:
                ps["template"]["spec"]["containers"] = copy.deepcopy(containers)
        out = self.client.create(R.WORKLOADS, body)
        if status:
            out["status"] = status
            out = self.client.replace(R.WORKLOADS, out, subresource="status")
        return out

    def add(self, res: Any, obj: Mapping[str, Any]) -> dict[str, Any]:
        return self.client.create(res, obj)

    # --- one reconcile -----------------------------------------------------------------------------

    def _synced(self) -> bool:
        """Whether the manager's caches hold every object of every watched collection at the version
        the API server holds (namespaces, classes and flavors included: the reconcile reads them)."""
        listed = {res.plural: self.client.list(res)[0] for res in WATCHED}

        def check() -> bool:
            cluster = self.mgr.cluster
            for plural, items in listed.items():
                for obj in items:
                    meta = obj["metadata"]
                    if plural == R.WORKLOADS.plural:
                        typed = cluster.workloads.get(f"{meta['namespace']}/{meta['name']}")
                        rv = typed.metadata.resource_version if typed else None
                    else:
                        cached = cluster.raw[plural].get((meta.get("namespace") or "", meta["name"]))
                        rv = cached["metadata"].get("resourceVersion") if cached else None
                    if rv != meta["resourceVersion"]:
                        return False
            return True

        return self.mgr.call_in_manager_thread(check)

    def settle(self) -> None:
        """Wait until the manager's caches hold what the API holds (every watched change applied)."""
        deadline = time.monotonic() + 30
        while not self._synced():
            assert time.monotonic() < deadline, "the manager's caches did not catch up"
            time.sleep(0.01)

    def run(self, fn: Callable[[], _T]) -> _T:
        """Once the caches caught up, run ``fn`` on the manager thread (e.g. one reconcile of any
        controller) and flush the Events it recorded; its result, or its exception, is returned."""
        self.settle()
        try:
            return self.mgr.call_in_manager_thread(fn)
        finally:
            self.mgr.recorder.flush()

    def take_queued(self, kind: str) -> list[str]:
        """Take every key queued for the reconcilers (a standby reconciles none, so what a change
        queued shows): the keys of reconciler ``kind``, sorted."""

        def take() -> list[str]:
            taken = self.mgr.work.take_ready()
            for item in taken:
                self.mgr.work.done(item)
            return sorted(str(key) for k, key in taken if k == kind)

        return self.run(take)

    def reconcile(self, name: str = "job", namespace: str = "ns") -> None:
        """Wait until the manager's caches hold what the API holds, then reconcile Job ``namespace/name`` once."""
        self.run(lambda: self.mgr.job_controller.reconcile((namespace, name)))

    # --- reading back ------------------------------------------------------------------------------

    def job(self, name: str = "job", namespace: str = "ns") -> dict[str, Any] | None:
        items, _ = self.client.list(R.JOBS, namespace)
        return next((j for j in items if j["metadata"]["name"] == name), None)

    def workloads(self, namespace: str = "ns") -> list[dict[str, Any]]:
        items, _ = self.client.list(R.WORKLOADS, namespace)
        return sorted(items, key=lambda w: str(w["metadata"]["name"]))

    def events(self, namespace: str = "ns") -> list[tuple[str, str, str, str]]:
        """``(object name, type, reason, message)`` of every Event, in creation order."""
        items, _ = self.client.list(R.EVENTS, namespace)
        return [
            (e["involvedObject"]["name"], e["type"], e["reason"], e["message"])
            for e in sorted(items, key=lambda e: int(e["metadata"]["resourceVersion"]))
        ]


def controller_ref(owner: Mapping[str, Any]) -> dict[str, Any]:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def conditions(obj: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """``(type, status, reason, message)`` of each condition, in order (times are the clock's)."""
    return [
        (c["type"], c["status"], c["reason"], c.get("message", ""))
        for c in (obj.get("status") or {}).get("conditions") or ()
    ]
