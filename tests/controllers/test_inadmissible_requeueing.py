"""Upstream's ``test/integration/singlecluster/scheduler/inadmissible/requeueing_test.go``.

Requeue requests for the inadmissible workloads of a ClusterQueue (or of a Cohort's tree) that
arrive within the batch period collapse into one retry: ten quick quota changes cause between one
and five admission attempts of the no-fit workload, never an admission. The controller manager is
driven step by step on an injected clock (as in ``test_manager_wakeup``); admission attempts are
counted where ``kueue_admission_attempts_total`` is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from test_manager_wakeup import Driven

from pykueue.client import resources as R
from pykueue.client.interface import Conflict
from pykueue.controllers.cluster_cache import compact
from pykueue.runtime.informer import MODIFIED, Change


class Attempts:
    def __init__(self, d: Driven) -> None:
        self.counts: Counter[bool] = Counter()
        metrics = d.mgr.metrics.metrics
        real = metrics.admission_attempt

        def count(success: bool, seconds: float) -> None:
            self.counts[success] += 1
            real(success, seconds)

        metrics.admission_attempt = count  # type: ignore[method-assign]

    def reset(self) -> None:
        self.counts.clear()


def _modify(d: Driven, res: Any, name: str, bump: Any) -> None:
    """Get, change, update; again on a conflict (upstream's ``Eventually``)."""
    for _ in range(20):
        obj = d.client.get(res, name, None)
        bump(obj)
        try:
            new = d.client.replace(res, obj)
            break
        except Conflict:
            d.flush_writes()
    else:
        raise AssertionError(f"{name}: conflicts on every update")
    d.mgr._receive((Change(res, MODIFIED, None, compact(new)), d.clock()))


def _add_milli(quota: dict[str, Any]) -> None:
    value = str(quota["nominalQuota"])
    milli = int(value[:-1]) if value.endswith("m") else int(float(value) * 1000)
    quota["nominalQuota"] = f"{milli + 1}m"


def _no_fit(d: Driven, attempts: Attempts) -> None:
    d.create_workload("wl", cpu="2")
    d.settle()
    d.clock.advance(2.0)
    d.settle()
    assert d.mgr.core.queues.pending_breakdown("cq") == (0, 1)
    assert attempts.counts[True] == 0
    assert 1 <= attempts.counts[False] <= 2


def _ten_requeues_collapse(d: Driven, attempts: Attempts, res: Any, name: str, quota: Any) -> None:
    attempts.reset()
    for _ in range(10):
        _modify(d, res, name, lambda obj: _add_milli(quota(obj)))
        d.clock.advance(0.01)
        d.settle()
    for _ in range(5):  # well past the batch period
        d.clock.advance(1.0)
        d.settle()
    assert d.mgr.core.queues.pending_breakdown("cq") == (0, 1)
    assert attempts.counts[True] == 0
    assert 1 <= attempts.counts[False] <= 5
    assert not d.admitted("wl")


@pytest.fixture
def driven() -> Iterator[Driven]:
    d = Driven(cpu=1)
    yield d
    d.close()


def _cq_quota(obj: dict[str, Any]) -> dict[str, Any]:
    quota: dict[str, Any] = obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    return quota


def test_should_collapse_requeue_requests_to_cluster_queue(driven: Driven) -> None:
    attempts = Attempts(driven)
    _no_fit(driven, attempts)
    _ten_requeues_collapse(driven, attempts, R.CLUSTER_QUEUES, "cq", _cq_quota)


def test_should_collapse_requeue_requests_to_cohort(driven: Driven) -> None:
    d = driven
    attempts = Attempts(d)
    _modify(d, R.CLUSTER_QUEUES, "cq", lambda obj: obj["spec"].update(cohortName="cohort"))
    d._add(R.COHORTS, {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "cohort"},
        "spec": {"resourceGroups": [{"coveredResources": ["cpu"],
                                     "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 0}]}]}]},
    })  # fmt: skip
    d.settle()
    _no_fit(d, attempts)
    _ten_requeues_collapse(d, attempts, R.COHORTS, "cohort", _cq_quota)
