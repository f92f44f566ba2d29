"""The controller manager's work loop: a reconciler that fails loses nothing but its own attempt.

controller-runtime's semantics (``controllerutil``/``workqueue``): a key whose reconcile returns an
error is re-queued alone with a per-item exponential backoff; every other key queued with it is
still reconciled.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_workload_lifecycle import ManualClock, cond, wait, workload

from pykueue.apiserver.app import create_app
from pykueue.client import resources as R
from pykueue.client.inprocess import InProcessClient
from pykueue.controllers.manager import ControllerManager
from pykueue.controllers.workload_controller import WorkloadController
from pykueue.store import Store

NAMES = ("a", "b", "c")


class Boom(Exception):
    """Not an APIError: the kind of failure the old loop let drop a whole batch."""


@pytest.fixture
def client() -> Iterator[InProcessClient]:
    store = Store(None)
    _, parts = create_app(store)
    parts.bootstrap()
    yield InProcessClient(parts.handlers)
    store.close()


def _misconfigured(client: InProcessClient, name: str) -> bool:
    c = cond(client.get(R.WORKLOADS, name, "default"), "QuotaReserved")
    return c is not None and c["reason"] == "Misconfigured"


def test_a_reconciler_raising_once_does_not_drop_the_rest_of_its_batch(
    client: InProcessClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three Workloads whose LocalQueue is missing exist before the manager starts, so its initial
    # sync queues all three keys together; the workload controller marks each Misconfigured.
    for name in NAMES:
        client.create(R.WORKLOADS, workload(name, queue="missing"))
    failed: list[str] = []
    real = WorkloadController.reconcile

    def fail_first_key_once(self: WorkloadController, key: Any) -> Any:
        if not failed:
            failed.append(str(key))
            raise Boom(f"reconciling {key} failed")
        return real(self, key)

    monkeypatch.setattr(WorkloadController, "reconcile", fail_first_key_once)
    clock = ManualClock()
    mgr = ControllerManager(client, clock=clock)
    mgr.start()
    try:
        assert mgr.wait_ready(10)
        wait(lambda: failed)
        failed_name = failed[0].split("/")[1]
        others = [n for n in NAMES if n != failed_name]
        # The other keys of the batch are reconciled although the manager's clock stands still.
        wait(lambda: all(_misconfigured(client, n) for n in others))
        # The failed key is retried alone, after its backoff on the manager's clock.
        clock.advance(1)
        wait(lambda: _misconfigured(client, failed_name))
    finally:
        mgr.stop()
