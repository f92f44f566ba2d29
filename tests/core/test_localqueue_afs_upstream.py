"""The Admission Fair Sharing branch of the LocalQueue reconcile, ported from upstream Kueue's
``pkg/controller/core/localqueue_controller_test.go`` ``TestLocalQueueReconcile`` (the AFS cases,
case names verbatim), through ``KueueCore.reconcile_local_queue_usage`` on a simulated cluster.

Rules ported (``LocalQueueReconciler.Reconcile``, ``initializeAfsIfNeeded``,
``reconcileConsumedUsage``): the first reconcile creates the ledger entry from the persisted
``status.fairSharing.admissionFairSharingStatus.consumedResources`` (never from live usage), or
merges it once into an entry settlement created first (``StatusAccounted``); an entry that existed
before and was sampled less than ``usageSamplingInterval`` ago, with no pending penalty, is left
alone and the reconcile requeues after the rest of the interval; otherwise the consumed usage decays
toward the LocalQueue's admitted usage (``old*(1-alpha) + live*alpha``, alpha for the elapsed time,
a future ``LastUpdate`` clamped to zero elapsed and kept), is written to the status with
``lastUpdate`` now, and the reconcile requeues after the interval; a zero half-life resets it.

Not ported (no AFS content): the StopPolicy, inactive and deleted ClusterQueue cases (covered by the
LocalQueue status tests), and ``TestLocalQueueReconcileReportsAdmissionFairSharingUsageMetric``:
pykueue exports no ``local_queue_admission_fair_sharing_usage`` metric.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from fractions import Fraction
from typing import Any

import pytest
from builders import admitted, at, cluster_queue, flavor, namespace, options, simulate, workload

from pykueue.api.config import AdmissionFairSharingConfig, Duration
from pykueue.api.kueue import FairSharing, LocalQueue, LocalQueueSpec, LocalQueueStatus
from pykueue.api.meta import ObjectMeta, format_time
from pykueue.api.quantity import parse_quantity
from pykueue.core.queue.afs import UsageLedgerEntry

NOW = at(3600)
PENDING_WL = "default/pending-wl"


def q(text: str) -> Fraction:
    return parse_quantity(text).value


def afs(half_life: str, sampling: str = "5m") -> AdmissionFairSharingConfig:
    return AdmissionFairSharingConfig(
        usage_half_life_time=Duration.parse(half_life), usage_sampling_interval=Duration.parse(sampling)
    )


@dataclass
class Case:
    config: AdmissionFairSharingConfig
    running: list[tuple[str, str, str, str]]  # (name, resource, amount, flavor)
    initial: UsageLedgerEntry | None
    want_consumed: Mapping[str, str] | None  # None: the status is not written
    persisted: tuple[Mapping[str, str], float] | None = None  # (consumedResources, lastUpdate offset s)
    pending_penalty: Mapping[str, str] | None = None
    want_requeue_after: float | None = None
    want_entry: UsageLedgerEntry | None = None


def entry(resources: Mapping[str, str], offset: float, accounted: bool = True) -> UsageLedgerEntry:
    return UsageLedgerEntry(
        resources={k: q(v) for k, v in resources.items()},
        last_update=(NOW + timedelta(seconds=offset)).timestamp(),
        status_accounted=accounted,
    )


CASES: dict[str, Case] = {
    "local queue decaying usage decays if there is no running workloads": Case(
        afs("5m"), [], entry({"cpu": "8"}, -300), {"cpu": "4"}
    ),
    "clamps a future LastUpdate stamped by a concurrent settlement": Case(
        afs("5m"),
        [],
        entry({"cpu": "8"}, 300),
        {"cpu": "8"},
        pending_penalty={"cpu": "1"},
        want_requeue_after=300,
        want_entry=entry({"cpu": "8"}, 300),
    ),
    "local queue decaying usage sums the previous state and running workloads": Case(
        afs("5m"), [("wl", "cpu", "4", "rf")], entry({"cpu": "8"}, -300), {"cpu": "6"}
    ),
    "local queue decaying usage sums the usage from different flavors and resources": Case(
        afs("5m"),
        [("wl-1", "cpu", "2", "rf-1"), ("wl-2", "cpu", "2", "rf-2"), ("wl-3", "GPU", "4", "rf-3")],
        entry({"cpu": "8", "GPU": "16"}, -300),
        {"cpu": "6", "GPU": "10"},
    ),
    "local queue decaying usage sums the previous state and running workloads half time twice larger than sampling": Case(
        afs("10m"), [("wl", "cpu", "4", "rf")], entry({"cpu": "8"}, -300), {"cpu": "6828427124n"}
    ),
    "local queue decaying usage sums the previous state and running workloads with long half time": Case(
        afs("24h"), [], entry({"cpu": "8"}, -300), {"cpu": "7980769063n"}
    ),
    "local queue decaying usage sums the previous state and running GPU workloads half time twice larger than sampling": Case(
        afs("10m"), [("wl", "GPU", "4", "rf")], entry({"GPU": "8"}, -300), {"GPU": "6828427124n"}
    ),
    "local queue decaying usage resets to 0 when half life is 0": Case(
        afs("0s"), [("wl", "GPU", "4", "rf")], entry({"GPU": "8"}, -300), {}
    ),
    "local queue decaying usage is not reconciled if not enough time has passed": Case(
        afs("5m"),
        [],
        entry({"cpu": "8"}, -240),
        None,
        persisted=({"cpu": "8"}, -240),
        want_requeue_after=60,
    ),
    "local queue with uninitialized cache initializes status": Case(afs("5m"), [], None, {}),
    "local queue with uninitialized cache and no prior status seeds empty usage": Case(
        afs("5m"), [("wl", "cpu", "4", "rf")], None, {"cpu": "0"}
    ),
    "local queue with uninitialized cache seeds from persisted status usage": Case(
        afs("5m"), [("wl", "cpu", "4", "rf")], None, {"cpu": "8"}, persisted=({"cpu": "8"}, -300)
    ),
    "local queue seed merges persisted status into a settlement-created entry": Case(
        afs("5m"),
        [("wl", "cpu", "4", "rf")],
        entry({"cpu": "2"}, -300, accounted=False),
        {"cpu": "7"},
        persisted=({"cpu": "8"}, -300),
        want_entry=entry({"cpu": "7"}, 0),
    ),
    "local queue seed does not re-merge persisted status into an accounted entry": Case(
        afs("5m"),
        [("wl", "cpu", "4", "rf")],
        entry({"cpu": "2"}, -300),
        {"cpu": "3"},
        persisted=({"cpu": "8"}, -300),
        want_entry=entry({"cpu": "3"}, 0),
    ),
    "AFS reconcile skips when cache is recent but status lacks AdmissionFairSharingStatus": Case(
        afs("60s", "5s"), [], entry({"cpu": "500m"}, -1), None, want_requeue_after=4
    ),
}


def _lq(persisted: tuple[Mapping[str, str], float] | None) -> LocalQueue:
    status = None
    if persisted is not None:
        consumed, offset = persisted
        status = LocalQueueStatus(
            fair_sharing={
                "admissionFairSharingStatus": {
                    "consumedResources": dict(consumed),
                    "lastUpdate": format_time(NOW + timedelta(seconds=offset)),
                }
            }
        )
    return LocalQueue(
        metadata=ObjectMeta(name="lq", namespace="default"),
        spec=LocalQueueSpec(cluster_queue="cq", fair_sharing=FairSharing(weight="1")),
        status=status,
    )


@pytest.mark.parametrize("name", list(CASES))
def test_local_queue_reconcile_afs(name: str) -> None:
    case = CASES[name]
    running = [
        admitted(
            workload(wl, queue="lq", requests={res: amount}),
            "cq",
            {res: fl},
            at_time=NOW,
            admitted_condition=True,
        )
        for wl, res, amount, fl in case.running
    ]
    flavors = sorted({fl for _, _, _, fl in case.running})
    lq = _lq(case.persisted)
    opts = options(gates={"AdmissionFairSharing": True}, admission_fair_sharing=case.config)
    cluster = simulate(
        [namespace("default"), *(flavor(f) for f in flavors), cluster_queue("cq"), lq, *running], opts, NOW
    )
    ledger = cluster.queues.afs.ledger
    initial = case.initial
    if initial is not None:
        ledger.update("default/lq", lambda _e, _f: initial)
    if case.pending_penalty is not None:
        ledger.push_penalty(
            "default/lq", PENDING_WL, {k: q(v) for k, v in case.pending_penalty.items()}, NOW.timestamp()
        )
    fair_sharing, requeue_after = cluster.core.reconcile_local_queue_usage(lq, NOW)
    if case.want_consumed is None:
        assert fair_sharing is None
    else:
        assert fair_sharing is not None
        status: dict[str, Any] = fair_sharing["admissionFairSharingStatus"]
        got = {k: q(v) for k, v in status["consumedResources"].items()}
        assert got == {k: q(v) for k, v in case.want_consumed.items()}
        assert status["lastUpdate"] == format_time(NOW)
    if case.want_requeue_after is not None:
        assert requeue_after == pytest.approx(case.want_requeue_after)
    if case.pending_penalty is not None:
        got_entry = ledger.get("default/lq")
        assert got_entry is not None and got_entry.has_penalty_record(PENDING_WL)
    if case.want_entry is not None:
        got_entry = ledger.get("default/lq")
        assert got_entry is not None
        assert dict(got_entry.resources) == dict(case.want_entry.resources)
        assert got_entry.last_update == case.want_entry.last_update
        assert got_entry.status_accounted == case.want_entry.status_accounted
