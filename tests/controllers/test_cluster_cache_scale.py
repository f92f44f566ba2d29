"""A queue's create or delete finds its Workloads through ClusterCache's indexes, not a walk over
every cached Workload.

Kueue's large-scale benchmark creates (and its runner's clean-up deletes) 1,000 LocalQueues and
1,000 ClusterQueues while 50,000 Workloads are cached: a walk per queue event is 50 million
visits on the controllers' one thread. Each test fails on the cache that walked ``workloads``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_workload_lifecycle import Env, cond, has, setup_queues, wait, workload

from pykueue.client import resources as R


class NoWalk(dict[str, Any]):
    """``ClusterCache.workloads`` that counts whole-collection walks (lookups stay free)."""

    walks = 0

    def values(self) -> Any:
        NoWalk.walks += 1
        return super().values()

    def items(self) -> Any:
        NoWalk.walks += 1
        return super().items()

    def __iter__(self) -> Iterator[str]:
        NoWalk.walks += 1
        return super().__iter__()


@pytest.fixture
def env() -> Iterator[Env]:
    e = Env()
    yield e
    e.close()


def _lq(name: str, cq: str = "cq") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"clusterQueue": cq},
    }


def _cq(name: str, cpu: int = 1) -> dict[str, Any]:
    spec = {
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}
        ],
    }
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def _swap_in_no_walk(env: Env) -> None:
    def swap() -> None:
        env.mgr.cluster.workloads = NoWalk(env.mgr.cluster.workloads)

    env.mgr.call_in_manager_thread(swap)
    NoWalk.walks = 0


def test_local_queue_created_late_adopts_its_workloads_without_walking_all(env: Env) -> None:
    setup_queues(env, cpu=1)
    env.create(R.WORKLOADS, workload("admitted"))
    wait(has(env, "admitted", "Admitted"))
    env.create(R.WORKLOADS, workload("early", queue="late"))
    wait(has(env, "early", "QuotaReserved", status="False", reason="Misconfigured"))
    _swap_in_no_walk(env)
    env.create(R.CLUSTER_QUEUES, _cq("cq2"))
    env.create(R.LOCAL_QUEUES, _lq("late", cq="cq2"))
    # The new LocalQueue's pending Workload is found and admitted to its ClusterQueue.
    admitted = wait(has(env, "early", "Admitted"))
    assert admitted["status"]["admission"]["clusterQueue"] == "cq2"
    assert env.mgr.call_in_manager_thread(lambda: NoWalk.walks) == 0


def test_queue_deletes_reach_their_workloads_without_walking_all(env: Env) -> None:
    setup_queues(env, cpu=1)
    env.create(R.LOCAL_QUEUES, _lq("other"))
    env.create(R.WORKLOADS, workload("holder"))
    wait(has(env, "holder", "Admitted"))
    env.create(R.WORKLOADS, workload("waiting", queue="other"))
    wait(has(env, "waiting", "QuotaReserved", status="False"))
    _swap_in_no_walk(env)
    env.client.delete(R.LOCAL_QUEUES, "other", "default")
    # Its Workload is reconciled again and told its LocalQueue is gone (upstream's message).
    gone = wait(has(env, "waiting", "QuotaReserved", status="False", reason="Misconfigured"))
    assert "LocalQueue other doesn't exist" in next(
        c["message"] for c in gone["status"]["conditions"] if c["type"] == "QuotaReserved"
    )
    env.client.delete(R.CLUSTER_QUEUES, "cq")
    # The ClusterQueue stays while a Workload reserves its quota (the finalizer), found by index.
    # The API server marks it at once; wait for the manager to have handled the deletion (upstream's
    # Active=False "Terminating" condition), so the walk count below covers it.
    wait(
        lambda: any(
            c["type"] == "Active" and c["reason"] == "Terminating"
            for c in env.get(R.CLUSTER_QUEUES, "cq", None).get("status", {}).get("conditions", [])
        )
    )
    assert env.mgr.call_in_manager_thread(lambda: NoWalk.walks) == 0


def test_indexes_follow_queue_name_and_admission_changes(env: Env) -> None:
    setup_queues(env, cpu=1)
    env.create(R.LOCAL_QUEUES, _lq("second"))
    env.create(R.WORKLOADS, workload("a"))
    env.create(R.WORKLOADS, workload("b", queue="nowhere"))
    wait(has(env, "a", "Admitted"))
    wait(has(env, "b", "QuotaReserved", status="False", reason="Misconfigured"))
    env.patch(R.WORKLOADS, "b", {"spec": {"queueName": "second"}})
    wait(lambda: cond(env.get(R.WORKLOADS, "b"), "QuotaReserved")["reason"] != "Misconfigured")  # type: ignore[index]

    def view() -> tuple[object, ...]:
        c = env.mgr.cluster
        return (
            [k for k, _ in c.workloads_of_local_queue("default", "lq")],
            [k for k, _ in c.workloads_of_local_queue("default", "second")],
            [k for k, _ in c.workloads_of_local_queue("default", "nowhere")],
            sorted(k for k, _ in c.workloads_of_cluster_queue("cq")),
            # The brute-force answer the indexes replace.
            sorted(k for k, wl in c.workloads.items() if c.cluster_queue_of(wl) == "cq"),
        )

    lq, second, nowhere, cq, brute = env.mgr.call_in_manager_thread(view)
    assert (lq, second, nowhere) == (["default/a"], ["default/b"], [])
    assert cq == brute == ["default/a", "default/b"]
    # A finished Workload frees its quota and keeps its admission: still in its ClusterQueue.
    env.finish("a")
    wait(lambda: env.mgr.call_in_manager_thread(lambda: env.mgr.cluster.workloads["default/a"].status.conditions[-1].type) == "Finished")
    lq, second, nowhere, cq, brute = env.mgr.call_in_manager_thread(view)
    assert (lq, second, nowhere) == (["default/a"], ["default/b"], [])
    assert cq == brute == ["default/a", "default/b"]
