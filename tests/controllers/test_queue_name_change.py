"""A pending Workload moved from a LocalQueue that does not exist to one that exists.

Upstream's ``WorkloadReconciler.Update`` (``pkg/controller/core/workload_controller.go``) treats a
Pending → Pending update as ``Manager.AddOrUpdateWorkload`` (``pkg/cache/queue/manager.go``): the
workload leaves the queue it was assigned to (none here: the missing LocalQueue never held it) and
joins the new LocalQueue's ClusterQueue, where it waits for quota like any other; a change that
frees quota retries it. Whatever the order of the move and the release, it is admitted.

A Workload owned by a Job follows the Job's ``kueue.x-k8s.io/queue-name`` label instead: while the
Job is suspended, upstream's job reconciler (``jobframework.QueueNameChange``) writes the label back
into ``spec.queueName``, so the Workload is moved by relabelling its Job, not by editing it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from test_job_integration import job, workload_of
from test_workload_lifecycle import Env, cond, has, setup_queues, wait, workload

from pykueue.client import resources as R


@pytest.fixture
def env() -> Iterator[Env]:
    e = Env()
    yield e
    e.close()


def _finish_first(env: Env) -> None:
    env.finish("first")


def _delete_first(env: Env) -> None:
    env.client.delete(R.WORKLOADS, "first", "default")


def _move_second(env: Env) -> None:
    env.patch(R.WORKLOADS, "second", {"spec": {"queueName": "lq"}})


@pytest.mark.parametrize(
    ("created_before_queues", "steps"),
    [
        pytest.param(False, (_move_second, _finish_first), id="move-then-finish"),
        pytest.param(False, (_move_second, _delete_first), id="move-then-delete"),
        pytest.param(False, (_finish_first, _move_second), id="finish-then-move"),
        pytest.param(True, (_move_second, _finish_first), id="created-before-the-queues"),
    ],
)
def test_a_workload_moved_from_a_missing_local_queue_is_admitted_once_quota_frees(
    env: Env, created_before_queues: bool, steps: tuple[Callable[[Env], None], ...]
) -> None:
    if created_before_queues:
        env.create(R.WORKLOADS, workload("second", queue="missing"))
    setup_queues(env, cpu=1)
    env.create(R.WORKLOADS, workload("first"))
    wait(has(env, "first", "Admitted"))
    if not created_before_queues:
        env.create(R.WORKLOADS, workload("second", queue="missing"))
    wl = wait(has(env, "second", "QuotaReserved", status="False", reason="Misconfigured"))
    assert cond(wl, "QuotaReserved")["message"] == "LocalQueue missing doesn't exist"  # type: ignore[index]
    for step in steps:
        step(env)
    admitted = has(env, "second", "Admitted")

    def admitted_later() -> Any:
        env.clock.advance(0.5)  # the retry of parked workloads is batched (``RETRY_BATCH_PERIOD``)
        return admitted()

    wl = wait(admitted_later)
    assert wl["status"]["admission"]["clusterQueue"] == "cq"


def test_a_job_owned_workload_follows_its_jobs_queue_name_label(env: Env) -> None:
    setup_queues(env, cpu=1)
    env.create(R.WORKLOADS, workload("first"))
    wait(has(env, "first", "Admitted"))
    env.create(R.JOBS, job("second", labels={"kueue.x-k8s.io/queue-name": "missing"}))
    name = wait(lambda: workload_of(env, "second"))["metadata"]["name"]
    wl = wait(has(env, name, "QuotaReserved", status="False", reason="Misconfigured"))
    generation = wl["metadata"]["generation"]
    # Editing the Workload is undone: the suspended Job's label is written back.
    env.patch(R.WORKLOADS, name, {"spec": {"queueName": "lq"}})
    wl = wait(lambda: (w := env.get(R.WORKLOADS, name))["metadata"]["generation"] >= generation + 2 and w)
    assert wl["spec"]["queueName"] == "missing"
    # Relabelling the Job moves its Workload, which is admitted once quota frees.
    env.patch(R.JOBS, "second", {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "lq"}}})
    wait(lambda: env.get(R.WORKLOADS, name)["spec"]["queueName"] == "lq")
    _finish_first(env)
    admitted = has(env, name, "Admitted")

    def admitted_later() -> Any:
        env.clock.advance(0.5)  # the retry of parked workloads is batched (``RETRY_BATCH_PERIOD``)
        return admitted()

    wait(admitted_later)
