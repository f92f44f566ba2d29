"""The batched retry of parked workloads is due exactly 1 s after the change that requests it.

Upstream's requeuer (``pkg/cache/queue/inadmissible_workloads.go``, ``workqueueRequeuer.notifyClusterQueue``
/ ``notifyCohort``) calls ``AddAfter(req, requeueBatchPeriod)`` on a client-go delaying queue,
whose clock is precise: the retry runs 1 s after the change, not on the next whole second (the
API's timestamps are whole seconds, the queue's are not). The manager's clock here starts
0.9 s past a whole second, where the two readings differ by 0.9 s.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from test_workload_lifecycle import Env, cond, has, setup_queues, wait, workload

from pykueue.client import resources as R
from pykueue.core.queue import RETRY_BATCH_PERIOD
from pykueue.core.queue.manager import RetryRequest
from pykueue.runtime.informer import Change


@pytest.fixture
def env() -> Iterator[Env]:
    e = Env()
    yield e
    e.close()


def _pending(env: Env) -> dict[RetryRequest, float]:
    return env.mgr.call_in_manager_thread(env.mgr.queues.pending_requests)


def _stepped(env: Env) -> dict[RetryRequest, float]:
    """The retry requests after at least one manager step ran at the clock's current time (a
    call is answered while the thread drains its inbox, which it does again only after a step)."""
    _pending(env)
    return _pending(env)


def _park_second_behind_first(env: Env) -> None:
    """One CPU of quota: "first" admitted, "second" parked behind it."""
    setup_queues(env, cpu=1)
    env.create(R.WORKLOADS, workload("first"))
    wait(has(env, "first", "Admitted"))
    env.create(R.WORKLOADS, workload("second"))
    wait(has(env, "second", "QuotaReserved", status="False"))


def _finish(env: Env) -> None:
    env.finish("first")


def _delete(env: Env) -> None:
    env.client.delete(R.WORKLOADS, "first", "default")


def _deactivate(env: Env) -> None:
    env.patch(R.WORKLOADS, "first", {"spec": {"active": False}})


def _more_quota(env: Env) -> None:
    env.patch(
        R.CLUSTER_QUEUES,
        "cq",
        {"spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 2}]}]}]}},
        None,
    )


def _new_cohort(env: Env) -> None:
    env.create(R.COHORTS, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "co"}})
    _more_quota(env)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_finish, id="workload-finished"),
        pytest.param(_delete, id="workload-deleted"),
        pytest.param(_deactivate, id="workload-deactivated"),
        pytest.param(_more_quota, id="clusterqueue-updated"),
        pytest.param(_new_cohort, id="cohort-created"),
    ],
)
def test_the_retry_of_parked_workloads_is_due_one_second_after_the_change(
    env: Env, change: Callable[[Env], None]
) -> None:
    env.clock.now += timedelta(seconds=0.9)
    _park_second_behind_first(env)
    # Let the retries requested while setting up run (a waiting request keeps its earlier due time).
    env.clock.advance(2)
    wait(lambda: not _stepped(env) and env.mgr.call_in_manager_thread(lambda: env.mgr.queues.pending_breakdown("cq")) == (0, 1))
    changed_at = env.clock().timestamp()
    assert changed_at % 1 == pytest.approx(0.9)

    change(env)
    requests: dict[RetryRequest, Any] = wait(lambda: _pending(env))
    assert set(requests.values()) == {changed_at + RETRY_BATCH_PERIOD}
    # On the next whole second (0.1 s later) the retry is not due yet: the manager keeps it...
    env.clock.advance(0.1)
    assert set(_stepped(env).values()) == {changed_at + RETRY_BATCH_PERIOD}
    assert cond(env.get(R.WORKLOADS, "second"), "QuotaReserved")["status"] == "False"  # type: ignore[index]
    # ...and runs it once 1 s has passed since the change: the parked workload is admitted.
    env.clock.advance(0.9)
    wait(has(env, "second", "Admitted"))
    assert _pending(env) == {}


def test_the_retry_runs_one_second_after_the_watch_event_arrived_not_after_the_manager_got_to_it(env: Env) -> None:
    """Upstream's event handlers request the retry on the informer's goroutine as the event
    arrives; the manager thread here may be busy (a cycle, a batch of reconciles) when it does.
    The 1 s runs from the arrival, so the manager's lag is not added to Kueue's batch period."""
    _park_second_behind_first(env)
    env.clock.advance(2)
    wait(lambda: not _stepped(env) and env.mgr.call_in_manager_thread(lambda: env.mgr.queues.pending_breakdown("cq")) == (0, 1))

    entered, release = threading.Event(), threading.Event()

    def busy() -> None:  # the manager thread in the middle of something long
        entered.set()
        release.wait(10)

    blocker = threading.Thread(target=lambda: env.mgr.call_in_manager_thread(busy, timeout=15))
    blocker.start()
    assert entered.wait(10)
    arrived_at = env.clock().timestamp()
    _finish(env)

    def finished_waiting() -> bool:  # the informer has handed the Finished change to the busy thread
        changes = [item[0] if isinstance(item, tuple) else item for item in list(env.mgr._inbox.queue)]
        return any(
            isinstance(c, Change) and c.object["metadata"]["name"] == "first"
            and any(cond["type"] == "Finished" for cond in c.object.get("status", {}).get("conditions", []))
            for c in changes
        )

    wait(finished_waiting)
    env.clock.advance(0.5)  # the manager gets to the change half a second later
    release.set()
    blocker.join(10)
    requests: dict[RetryRequest, Any] = wait(lambda: _pending(env))
    assert set(requests.values()) == {arrived_at + RETRY_BATCH_PERIOD}
    env.clock.advance(0.5)
    wait(has(env, "second", "Admitted"))
