"""Helpers for testing admission checks against the real embedded API server.

Check authors (and pykueue's own tests) exercise a check with real components and no mocks:
an embedded API server reached through :class:`~pykueue.client.inprocess.InProcessClient`
(:func:`embedded_client`), a :class:`FakeClock` to move time without sleeping, and small
builders that play Kueue's part — creating Workloads and writing the quota reservation and
Pending check entries Kueue's scheduler and workload controller would write
(:func:`reserve_quota`), or the eviction reset (:func:`evict`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from pykueue.api.meta import format_time
from pykueue.checks import states as st
from pykueue.client import resources as r
from pykueue.client.interface import Client

T = TypeVar("T")

KUEUE_API_VERSION = f"{r.KUEUE}/{r.KUEUE_VERSION}"


class FakeClock:
    """A settable clock (a :data:`pykueue.runtime.clock.Clock`) for tests; thread-safe."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2025, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward."""
        with self._lock:
            self._now += timedelta(seconds=seconds)

    def set(self, when: datetime) -> None:
        """Jump to ``when``."""
        with self._lock:
            self._now = when


def embedded_client() -> Client:
    """An :class:`~pykueue.client.inprocess.InProcessClient` on a fresh in-memory API server."""
    from pykueue.apiserver.app import create_app
    from pykueue.client.inprocess import InProcessClient
    from pykueue.store import Store

    store = Store(None)
    _app, parts = create_app(store)
    parts.bootstrap()
    return InProcessClient(parts.handlers)


def wait_for(predicate: Callable[[], T | None], timeout: float = 10.0, interval: float = 0.02, *, what: str = "") -> T:
    """Poll ``predicate`` until it returns a truthy value and return it (AssertionError on timeout,
    naming ``what`` was awaited)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in time: {what}" if what else "condition not met in time")
        time.sleep(interval)


def admission_check(
    name: str, controller_name: str, parameters: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """An AdmissionCheck manifest."""
    spec: dict[str, Any] = {"controllerName": controller_name}
    if parameters is not None:
        spec["parameters"] = dict(parameters)
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "spec": spec,
    }


def pod_set(
    name: str = "main",
    count: int = 1,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Workload podSet with one container."""
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = dict(requests)
    if limits:
        resources["limits"] = dict(limits)
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if resources:
        container["resources"] = resources
    spec: dict[str, Any] = {"containers": [container], "restartPolicy": "Never"}
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    return {"name": name, "count": count, "template": {"spec": spec}}


def workload(
    name: str,
    namespace: str = "default",
    pod_sets: Sequence[Mapping[str, Any]] | None = None,
    *,
    queue: str = "lq",
    priority: int | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Workload manifest (one ``main`` podSet with 1 cpu by default)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = dict(annotations)
    spec: dict[str, Any] = {
        "queueName": queue,
        "podSets": [dict(p) for p in (pod_sets or [pod_set(requests={"cpu": "1"})])],
    }
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": KUEUE_API_VERSION, "kind": "Workload", "metadata": meta, "spec": spec}


def reserve_quota(
    client: Client,
    namespace: str,
    name: str,
    checks: Sequence[str],
    now: datetime,
    *,
    flavors: Mapping[str, str] | None = None,
    counts: Mapping[str, int] | None = None,
    cluster_queue: str = "cq",
) -> dict[str, Any]:
    """Play the scheduler: QuotaReserved=True with ``status.admission`` (every resource of every
    podSet on ``flavors[resource]``, default flavor ``default``) and a Pending entry per check
    (existing entries are kept, Evicted is cleared)."""

    def mutate(wl: dict[str, Any]) -> bool:
        assignments = []
        for ps in wl["spec"]["podSets"]:
            names: set[str] = set()
            for c in ps["template"]["spec"].get("containers") or ():
                res = c.get("resources") or {}
                names |= set(res.get("requests") or {}) | set(res.get("limits") or {})
            count = (counts or {}).get(ps["name"], ps.get("count", 1))
            assignments.append(
                {
                    "name": ps["name"],
                    "flavors": {res: (flavors or {}).get(res, "default") for res in sorted(names)},
                    "resourceUsage": {},
                    "count": count,
                }
            )
        status = st.status_of(wl)
        status["admission"] = {"clusterQueue": cluster_queue, "podSetAssignments": assignments}
        st.set_condition(
            wl,
            st.QUOTA_RESERVED,
            "True",
            "QuotaReserved",
            f"Quota reserved in ClusterQueue {cluster_queue}",
            now,
        )
        if st.find_condition(wl, st.EVICTED) is not None:
            st.set_condition(wl, st.EVICTED, "False", "QuotaReserved", "Previously evicted", now)
        states = list(st.check_states(wl))
        for check in checks:
            if st.find_check(wl, check) is None:
                states.append(
                    {
                        "name": check,
                        "state": st.PENDING,
                        "lastTransitionTime": format_time(now),
                        "message": "",
                    }
                )
        status["admissionChecks"] = sorted(states, key=lambda s: str(s["name"]))
        return True

    return _write_status(client, namespace, name, mutate)


def add_pending_checks(
    client: Client, namespace: str, name: str, checks: Sequence[str], now: datetime
) -> dict[str, Any]:
    """Play the workload controller for a pending Workload: list ``checks`` as Pending."""

    def mutate(wl: dict[str, Any]) -> bool:
        states = list(st.check_states(wl))
        for check in checks:
            if st.find_check(wl, check) is None:
                states.append(
                    {
                        "name": check,
                        "state": st.PENDING,
                        "lastTransitionTime": format_time(now),
                        "message": "",
                    }
                )
        st.status_of(wl)["admissionChecks"] = sorted(states, key=lambda s: str(s["name"]))
        return True

    return _write_status(client, namespace, name, mutate)


def evict(
    client: Client, namespace: str, name: str, now: datetime, *, reason: str = "AdmissionCheck"
) -> dict[str, Any]:
    """Play Kueue's eviction (``pkg/workload/evict/evict.go``): Evicted=True and every non-Pending check reset to Pending
    (``retryCount`` + 1 for Retry checks)."""

    def mutate(wl: dict[str, Any]) -> bool:
        st.set_condition(wl, st.EVICTED, "True", reason, "Evicted by test", now)
        new_states = []
        for entry in st.check_states(wl):
            old = entry.get("state")
            if old == st.PENDING:
                new_states.append(entry)
                continue
            item: dict[str, Any] = {
                "name": entry["name"],
                "state": st.PENDING,
                "lastTransitionTime": format_time(now),
                "message": f"Reset to Pending after eviction. Previously: {old}",
            }
            if entry.get("requeueAfterSeconds") is not None:
                item["requeueAfterSeconds"] = entry["requeueAfterSeconds"]
            if old == st.RETRY:
                item["retryCount"] = int(entry.get("retryCount") or 0) + 1
            new_states.append(item)
        if new_states:
            st.status_of(wl)["admissionChecks"] = new_states
        return True

    return _write_status(client, namespace, name, mutate)


def release_quota(client: Client, namespace: str, name: str, now: datetime) -> dict[str, Any]:
    """Play the job reconciler after an eviction: QuotaReserved=False, no admission."""

    def mutate(wl: dict[str, Any]) -> bool:
        st.set_condition(wl, st.QUOTA_RESERVED, "False", "PendingEvaluation", "Evicted", now)
        st.status_of(wl).pop("admission", None)
        return True

    return _write_status(client, namespace, name, mutate)


def set_conditions(
    client: Client, namespace: str, name: str, now: datetime, **conditions: str
) -> dict[str, Any]:
    """Set Workload conditions, e.g. ``Finished="True"``, ``Admitted="True"``."""

    def mutate(wl: dict[str, Any]) -> bool:
        for ctype, status in conditions.items():
            st.set_condition(wl, ctype, status, ctype, f"{ctype} set by test", now)
        return True

    return _write_status(client, namespace, name, mutate)


def _write_status(
    client: Client, namespace: str, name: str, mutate: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    from pykueue.runtime.controller import update_status

    current = client.get(r.WORKLOADS, name, namespace)
    stored = update_status(client, r.WORKLOADS, current, mutate)
    assert stored is not None, f"workload {namespace}/{name} disappeared"
    return stored
