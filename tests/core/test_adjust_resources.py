"""``workload.AdjustResources`` and ``ValidateLimitRange`` in the core: a namespace's LimitRanges
and the RuntimeClasses reach the queued view of a pending Workload (its requests, its scheduling
hash) and the admissibility checks of the scheduler (on the adjusted copy) and of the workload
controller (on the Workload as stored), as upstream's queue manager, scheduler and
``resourceUpdatesHandler`` do. Driven through the simulator, which the ``schedule`` CLI uses."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pykueue.api.conversion import to_internal
from pykueue.core.options import SchedulerOptions
from pykueue.core.workload.info import workload_key
from pykueue.sim.cluster import SimulatedCluster

NOW = datetime(2025, 3, 10, 8, 0, tzinfo=UTC)
NS = "default"


def _queues(cpu: str = "4", memory: str = "4Gi") -> list[dict[str, Any]]:
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "default",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": cpu},
                                    {"name": "memory", "nominalQuota": memory},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": NS},
            "spec": {"clusterQueue": "cq"},
        },
    ]


def _limit_range(name: str, *items: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"limits": list(items)},
    }


def _runtime_class(name: str, pod_fixed: dict[str, str] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": name}
    if pod_fixed is not None:
        obj["overhead"] = {"podFixed": pod_fixed}
    return obj


def _workload(name: str, resources: dict[str, Any] | None = None, count: int = 1, **pod_spec: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": "c", "image": "pause", "resources": resources or {}}], **pod_spec}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": count, "template": {"spec": spec}}]},
    }


def _run(*objects: dict[str, Any]) -> SimulatedCluster:
    sim = SimulatedCluster(SchedulerOptions(), NOW)
    sim.load([to_internal(obj) for obj in objects])
    sim.run(until_quiet=True)
    return sim


def _state(sim: SimulatedCluster, name: str) -> tuple[str, str, str, dict[str, str] | None]:
    wl = next(w for w in sim.workloads() if w.metadata.name == name)
    qr = next(c for c in wl.status.conditions if c.type == "QuotaReserved")
    usage = dict(wl.status.admission.pod_set_assignments[0].resource_usage) if wl.status.admission else None
    return qr.status, qr.reason, qr.message, usage


def test_limit_range_defaults_fill_missing_requests_and_limits() -> None:
    """``handlePodLimitRange`` then ``handleLimitsToRequests``: the container's cpu request comes
    from ``defaultRequest``, its memory request from the ``default`` limit; the stored Workload
    keeps its spec."""
    lr = _limit_range("lr", {"type": "Container", "defaultRequest": {"cpu": "3"}, "default": {"cpu": "3", "memory": "1Gi"}})
    sim = _run(*_queues(), lr, _workload("a"), _workload("b", {"requests": {"cpu": "500m"}}))
    assert _state(sim, "a")[3] == {"cpu": "3", "memory": "1Gi"}
    assert _state(sim, "b")[3] == {"cpu": "500m", "memory": "1Gi"}
    wl = next(w for w in sim.workloads() if w.metadata.name == "a")
    assert wl.spec.pod_sets[0].template.spec["containers"][0]["resources"] == {}


def test_limit_range_defaults_make_a_workload_not_fit() -> None:
    lr = _limit_range("lr", {"type": "Container", "defaultRequest": {"cpu": "3"}})
    sim = _run(*_queues(), lr, _workload("a"), _workload("b"))
    assert _state(sim, "a")[:2] == ("True", "QuotaReserved")
    status, reason, message, _ = _state(sim, "b")
    assert (status, reason) == ("False", "WaitingForQuota")
    assert "insufficient unused quota for cpu in flavor default, 2 more needed" in message


def test_runtime_class_overhead_is_added_per_pod() -> None:
    sim = _run(
        *_queues(),
        _runtime_class("kata", {"cpu": "250m", "memory": "100Mi"}),
        _runtime_class("runc", None),
        _workload("kata", {"requests": {"cpu": "1"}}, count=2, runtimeClassName="kata"),
        _workload("runc", {"requests": {"cpu": "1"}}, runtimeClassName="runc"),
        _workload("own", {"requests": {"cpu": "100m"}}, runtimeClassName="kata", overhead={"cpu": "50m"}),
        _workload("missing", {"requests": {"cpu": "100m"}}, runtimeClassName="gvisor"),
    )
    assert _state(sim, "kata")[3] == {"cpu": "2500m", "memory": "200Mi"}
    assert _state(sim, "runc")[3] == {"cpu": "1"}
    assert _state(sim, "own")[3] == {"cpu": "150m"}  # the template's own overhead wins
    assert _state(sim, "missing")[3] == {"cpu": "100m"}  # lookup failure: logged, not adjusted


def test_limit_range_bounds_make_a_workload_inadmissible() -> None:
    lr = _limit_range("lr", {"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"}}, {"type": "Pod", "max": {"memory": "1Gi"}})
    sim = _run(
        *_queues(),
        lr,
        _workload("small", {"requests": {"cpu": "500m"}}),
        _workload("big", {"requests": {"cpu": "3", "memory": "2Gi"}}),
        _workload("fits", {"requests": {"cpu": "1500m", "memory": "1Gi"}}),
    )
    path = "spec.podSets[0].template.spec"
    assert _state(sim, "small")[:3] == (
        "False",
        "Misconfigured",
        f"resources didn't satisfy LimitRange constraints: {path}.containers[0]: Invalid value: [\"cpu\"]: "
        "requests must not be below the limitRange min",
    )
    assert _state(sim, "big")[:3] == (
        "False",
        "Misconfigured",
        f"resources didn't satisfy LimitRange constraints: [{path}.containers[0]: Invalid value: [\"cpu\"]: "
        f"requests must not be above the limitRange max, {path}: Invalid value: [\"memory\"]: "
        "requests must not be above the limitRange max]",
    )
    assert _state(sim, "fits")[:2] == ("True", "QuotaReserved")


def test_requests_above_limits_after_defaults_are_invalid() -> None:
    """``ValidateResources`` runs on the scheduler's adjusted copy: a ``defaultRequest`` above the
    container's own limit is refused there (``Misconfigured``, with the message). The workload
    controller then checks the Workload as stored, which passes, and ``Misconfigured`` is no
    scheduler reason it keeps (``schedulerSetReasons``): it ends as ``PendingEvaluation``, as
    upstream's ``resolveGranularUnadmittedQuotaReservedCondition`` leaves it."""
    lr = _limit_range("lr", {"type": "Container", "defaultRequest": {"cpu": "2"}})
    sim = _run(*_queues(), lr, _workload("a", {"limits": {"cpu": "1"}}))
    refused = [e.note for e in sim.events if e.reason == "Misconfigured"]
    assert refused == [
        "resources validation failed: spec.podSets[0].template.spec.containers[0]: "
        'Invalid value: ["cpu"]: requests must not exceed its limits'
    ]
    assert _state(sim, "a")[:3] == ("False", "PendingEvaluation", "Workload is pending evaluation in the scheduling queue")


def test_limit_range_change_readjusts_parked_workloads() -> None:
    """``resourceUpdatesHandler``: a LimitRange change re-adds the namespace's pending Workloads
    with their templates adjusted again; one parked as inadmissible moves back to the heap when its
    adjusted templates changed."""
    lr = _limit_range("lr", {"type": "Container", "defaultRequest": {"cpu": "8"}})
    sim = _run(*_queues(), lr, _workload("a"))
    assert _state(sim, "a")[1] == "ExceedsMaxQuota"
    key = workload_key(next(w for w in sim.workloads() if w.metadata.name == "a"))
    cq = sim.queues.cluster_queue("cq")
    assert cq is not None and key in cq.inadmissible
    sim.core.observe_limit_range(NS, "lr", {"limits": [{"type": "Container", "defaultRequest": {"cpu": "2"}}]}, sim.now)
    assert key not in cq.inadmissible
    assert sim.queues.cluster_queue("cq") is cq
    sim.run(until_quiet=True)
    assert _state(sim, "a")[:2] == ("True", "QuotaReserved")
    assert _state(sim, "a")[3] == {"cpu": "2"}


def test_no_adjustment_keeps_the_spec_shared() -> None:
    """Without LimitRanges or RuntimeClasses the queued view reads the spec's own templates (the
    memoised requests shared with the workload controller's check), and the queue manager does
    not even ask; a LimitRange without defaults bounds but adjusts nothing."""
    sim = SimulatedCluster(SchedulerOptions(), NOW)
    sim.load([to_internal(obj) for obj in (*_queues(), _workload("a", {"requests": {"cpu": "1"}}))])
    wl = next(w for w in sim.workloads() if w.metadata.name == "a")
    assert sim.queues.adjust_pod_specs is None
    assert sim.core.adjusted_pod_specs(wl) is None
    sim.core.observe_limit_range(NS, "bounds", {"limits": [{"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}}]})
    assert sim.queues.adjust_pod_specs is None and sim.core.limit_range_summary(NS) is not None
    sim.core.observe_limit_range(NS, "defaults", {"limits": [{"type": "Container", "defaultRequest": {"memory": "1Gi"}}]})
    assert sim.queues.adjust_pod_specs is not None
    adjusted = sim.core.adjusted_pod_specs(wl)
    assert adjusted is not None and adjusted[0]["containers"][0]["resources"]["requests"] == {"memory": "1Gi", "cpu": "1"}
    sim.core.observe_limit_range(NS, "defaults", None)
    sim.core.observe_limit_range(NS, "bounds", None)
    assert sim.queues.adjust_pod_specs is None and sim.core.limit_range_summary(NS) is None
    cq = sim.queues.cluster_queue("cq")
    assert cq is not None
    entry = cq.tracked(workload_key(wl))
    assert entry is not None and entry.info.adjusted_specs is None
