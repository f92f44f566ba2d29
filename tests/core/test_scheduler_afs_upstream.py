"""Admission Fair Sharing through whole scheduling cycles, ported from upstream Kueue's
``pkg/scheduler/scheduler_afs_test.go`` (``TestScheduleForAFS``, ``TestShouldApplyEntryPenalty``),
case names verbatim.

Rules ported: in a ClusterQueue with ``admissionScope.admissionMode:
UsageBasedAdmissionFairSharing`` (and the Configuration's ``admissionFairSharing``), the heap is
ordered first by the LocalQueue's usage (``CalculateUsage`` of the ledger's consumed history plus
pending entry penalties, over the LocalQueue's weight; a zero weight gives +Inf), then by the
usual priority / creation order; each assumed workload pushes an entry penalty (its requests times
one sampling interval's alpha) into its LocalQueue's ledger entry, so the next head of a
LocalQueue that was just served sorts after the others. Without the gate the usage is ignored.

As upstream's table, each case seeds the ledger (``SetForTest``) at the clock's time and runs one
cycle per workload without advancing the clock. Upstream's ``deleteQueue`` deletes the LocalQueue
from the API client only (the queue manager keeps it, and the heap reads cached weights): pykueue's
core reads no API client, so those cases run with the LocalQueue in place, which is what upstream's
queue manager sees. Upstream runs each case under four ``WorkloadRequestUseMergePatch`` /
``UnadmittedWorkloadsObservability`` scenarios that do not change these outcomes; pykueue runs it once.

Not ported: ``scheduler_afs_secondpass_test.go`` ``TestSecondPassDoesNotRepushEntryPenalty`` — the
second scheduling pass (delayed topology assignment, node-failure replacement) belongs to Topology
Aware Scheduling, which pykueue does not implement; the rule it pins (a workload that already holds
a reservation pushes no second penalty) is the last ``TestShouldApplyEntryPenalty`` case below.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest
from builders import (
    admitted,
    at,
    cluster_queue,
    conditions,
    flavor,
    flavor_quotas,
    info,
    namespace,
    options,
    simulate,
    workload,
)

from pykueue.api.config import AdmissionFairSharingConfig, Duration
from pykueue.api.kueue import AdmissionScope, ClusterQueue, FairSharing, LocalQueue, LocalQueueSpec, Workload
from pykueue.api.meta import ObjectMeta
from pykueue.api.quantity import parse_quantity
from pykueue.core.options import SchedulerOptions

NOW = at(3600)
AFS_CONFIG = AdmissionFairSharingConfig(
    usage_half_life_time=Duration.parse("10s"), usage_sampling_interval=Duration.parse("1s")
)

ADMITTED = {
    "QuotaReserved": ("True", "QuotaReserved", "Quota reserved in ClusterQueue cq1"),
    "Admitted": ("True", "Admitted", "The workload is admitted"),
}


def waiting(more: str) -> dict[str, tuple[str, str, str]]:
    return {
        "QuotaReserved": (
            "False",
            "WaitingForQuota",
            f"couldn't assign flavors to pod set one: insufficient unused quota for cpu in flavor default, {more} more needed",
        ),
    }


def _lq(name: str, weight: str) -> LocalQueue:
    return LocalQueue(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=LocalQueueSpec(cluster_queue="cq1", fair_sharing=FairSharing(weight=weight)),
    )


def _cq() -> object:
    cq = cluster_queue("cq1", flavor_quotas("default", cpu="8", memory="8Gi"))
    cq.spec.admission_scope = AdmissionScope(admission_mode="UsageBasedAdmissionFairSharing")
    return cq


QUEUES = [_lq("lq-a", "1"), _lq("lq-b", "1"), _lq("lq-c", "1"), _lq("lq-zero", "0")]


@dataclass
class Case:
    workloads: list[tuple[str, str, str, int]]  # (name, queue, cpu, creation offset in seconds)
    initial_usage: Mapping[str, str]
    want: Mapping[
        str, tuple[str | None, dict[str, tuple[str, str, str]]]
    ]  # name -> (cpu admitted, conditions)
    afs: bool = True
    extra: dict[str, object] = field(default_factory=dict)


CASES: dict[str, Case] = {
    "admits workload from less active localqueue": Case(
        [("wl-a1", "lq-a", "8", 0), ("wl-b1", "lq-b", "8", 1)],
        {"lq-a": "8", "lq-b": "2"},
        {"wl-a1": (None, waiting("8")), "wl-b1": ("8", ADMITTED)},
    ),
    "does not prioritize a zero-weight localqueue": Case(
        [("wl-z1", "lq-zero", "8", 0), ("wl-a1", "lq-a", "8", 1)],
        {"lq-a": "0", "lq-zero": "0"},
        {"wl-a1": ("8", ADMITTED), "wl-z1": (None, waiting("8"))},
    ),
    "admits workload when another LQ is deleted": Case(
        [("wl-a1", "lq-a", "4", 0), ("wl-b1", "lq-b", "4", 0)],
        {"lq-a": "0", "lq-b": "0"},
        {"wl-a1": ("4", ADMITTED), "wl-b1": ("4", ADMITTED)},
    ),
    "admits workload even if its localqueue was deleted": Case(
        [("wl-a1", "lq-a", "8", 0)],
        {"lq-a": "0"},
        {"wl-a1": ("8", ADMITTED)},
    ),
    "without AFS: classic admission decision ignores queue usage": Case(
        [("wl-a1", "lq-a", "8", 0), ("wl-b1", "lq-b", "8", 1)],
        {"lq-a": "8", "lq-b": "2"},
        {"wl-a1": ("8", ADMITTED), "wl-b1": (None, waiting("8"))},
        afs=False,
    ),
    "admits one workload from each localqueue when quota is limited": Case(
        [
            ("wl-a1", "lq-a", "4", 0),
            ("wl-a2", "lq-a", "4", 1),
            ("wl-b1", "lq-b", "4", 2),
            ("wl-b2", "lq-b", "4", 3),
        ],
        {"lq-a": "4", "lq-b": "4"},
        # wl-b2 has no condition: it is bulk-moved to inadmissible with wl-a2's scheduling hash.
        {
            "wl-a1": ("4", ADMITTED),
            "wl-a2": (None, waiting("4")),
            "wl-b1": ("4", ADMITTED),
            "wl-b2": (None, {}),
        },
    ),
    "schedules normally when queues have equal usage": Case(
        [("wl-a1", "lq-a", "4", 0), ("wl-b1", "lq-b", "3", 0), ("wl-c1", "lq-c", "1", 0)],
        {"lq-a": "2", "lq-b": "2", "lq-c": "2"},
        {"wl-a1": ("4", ADMITTED), "wl-b1": ("3", ADMITTED), "wl-c1": ("1", ADMITTED)},
    ),
    "admits workload from lq-b with uninitialized cache": Case(
        [("wl-a1", "lq-a", "8", 0), ("wl-b1", "lq-b", "8", 1)],
        {"lq-a": "8"},
        {"wl-a1": (None, waiting("8")), "wl-b1": ("8", ADMITTED)},
    ),
}


def _options(afs: bool) -> SchedulerOptions:
    if not afs:
        return options(gates={"AdmissionFairSharing": False})
    return options(gates={"AdmissionFairSharing": True}, fair_sharing=True, admission_fair_sharing=AFS_CONFIG)


@pytest.mark.parametrize("name", list(CASES))
def test_schedule_for_afs(name: str) -> None:
    case = CASES[name]
    wls = [
        workload(
            wl_name,
            queue=queue,
            created=NOW + timedelta(seconds=offset),
            pod_sets=None,
            requests={"cpu": cpu},
        )
        for wl_name, queue, cpu, offset in case.workloads
    ]
    for wl in wls:
        wl.spec.pod_sets[0].name = "one"
    cluster = simulate(
        [namespace("default"), flavor("default"), _cq(), *QUEUES, *wls], _options(case.afs), NOW
    )
    for lq, cpu in case.initial_usage.items():
        cluster.queues.afs.ledger.set_for_test(
            f"default/{lq}", {"cpu": parse_quantity(cpu).value}, NOW.timestamp()
        )
    # Upstream seeds the ledger before the queue manager lists the workloads; here they are
    # loaded first, so the heap is re-sorted once after seeding.
    cluster.queues.rebuild_heap("cq1")
    for _ in wls:
        cluster.run_cycle()
    for wl_name, (cpu, conds) in case.want.items():
        got = cluster.get_workload(f"default/{wl_name}")
        assert got is not None
        adm = got.status.admission
        if cpu is None:
            assert adm is None, wl_name
        else:
            assert adm is not None, wl_name
            (psa,) = adm.pod_set_assignments
            assert (adm.cluster_queue, psa.name, dict(psa.flavors), str(psa.resource_usage["cpu"])) == (
                "cq1",
                "one",
                {"cpu": "default"},
                cpu,
            )
        got_conds = conditions(got)
        for ctype, want in conds.items():
            assert got_conds.get(ctype) == want, (wl_name, ctype)
        if not conds:
            assert "QuotaReserved" not in got_conds, wl_name


SHOULD_APPLY_CASES = {
    "pushes for a first-pass workload on a usage-based ClusterQueue": (
        True,
        "UsageBasedAdmissionFairSharing",
        False,
        True,
    ),
    "skips when no AdmissionFairSharing config is set": (
        False,
        "UsageBasedAdmissionFairSharing",
        False,
        False,
    ),
    "skips for a ClusterQueue without usage-based admission mode": (True, "", False, False),
    "skips a second-pass workload that already holds a quota reservation": (
        True,
        "UsageBasedAdmissionFairSharing",
        True,
        False,
    ),
}


@pytest.mark.parametrize(
    ("config", "mode", "reserved", "want"), SHOULD_APPLY_CASES.values(), ids=list(SHOULD_APPLY_CASES)
)
def test_should_apply_entry_penalty(config: bool, mode: str, reserved: bool, want: bool) -> None:
    cq = cluster_queue("cq", flavor_quotas("default", cpu="8"))
    if mode:
        cq.spec.admission_scope = AdmissionScope(admission_mode=mode)
    opts = options(
        gates={"AdmissionFairSharing": True}, admission_fair_sharing=AFS_CONFIG if config else None
    )
    cluster = simulate([namespace("ns"), flavor("default"), cq], opts, NOW)
    wl = workload("wl", "ns", queue="lq", requests={"cpu": "4"})
    if reserved:
        wl = admitted(wl, "cq", {"cpu": "default"}, at_time=NOW)
    assert cluster.scheduler._should_apply_entry_penalty(info(wl), cluster.cache.cluster_queues["cq"]) is want


def _preemption_setup(
    victim_a: tuple[str, datetime], victim_b: tuple[str, datetime]
) -> tuple[ClusterQueue, list[Workload], Workload]:
    """An AFS ClusterQueue of 2 cpu (preemption within it by lower priority) full with one
    admitted 1-cpu victim from lq-a and one from lq-b (name, admission time), and a high-priority
    1-cpu preemptor in lq-c."""
    cq = cluster_queue(
        "cq1", flavor_quotas("default", cpu="2"), preemption={"within_cluster_queue": "LowerPriority"}
    )
    cq.spec.admission_scope = AdmissionScope(admission_mode="UsageBasedAdmissionFairSharing")
    victims = [
        admitted(
            workload(name, queue=queue, priority=0, requests={"cpu": "1"}),
            "cq1",
            {"cpu": "default"},
            at_time=when,
            admitted_condition=True,
        )
        for queue, (name, when) in (("lq-a", victim_a), ("lq-b", victim_b))
    ]
    preemptor = workload("high", queue="lq-c", priority=100, created=NOW, requests={"cpu": "1"})
    return cq, victims, preemptor


@pytest.mark.parametrize(
    ("afs_on", "want_victim"), [(True, "a-old"), (False, "b-new")], ids=["afs", "no afs"]
)
def test_preemption_prefers_candidates_of_the_busier_local_queue(afs_on: bool, want_victim: str) -> None:
    """Not an upstream table: ``CandidatesOrdering``'s AFS rule through a whole cycle. Of two
    equal-priority candidates in the preemptor's ClusterQueue, the one whose LocalQueue has the
    higher usage goes first (upstream ``snapshotClusterQueue`` gives each an ``LocalQueueFSUsage``);
    without AFS the more recently admitted one does."""
    cq, victims, preemptor = _preemption_setup(("a-old", NOW - timedelta(hours=1)), ("b-new", NOW - timedelta(minutes=1)))
    cluster = simulate(
        [namespace("default"), flavor("default"), cq, *QUEUES, *victims, preemptor], _options(afs_on), NOW
    )
    cluster.queues.afs.ledger.set_for_test(
        "default/lq-a", {"cpu": parse_quantity("8").value}, NOW.timestamp()
    )
    cluster.run_cycle()
    evicted = [
        wl.metadata.name
        for wl in cluster.workloads()
        if conditions(wl).get("Evicted", ("False",))[0] == "True"
    ]
    assert evicted == [want_victim]


def test_settlement_skips_a_local_queue_not_in_the_admitting_cluster_queue() -> None:
    """Not an upstream table: ``WorkloadReconciler.updateAfsConsumedUsage`` settles nothing when
    ``Cache.GetCacheLocalQueue(admission.clusterQueue, lq)`` fails, here because the LocalQueue now
    names another ClusterQueue: the workload's entry penalty stays pending (it goes when the
    workload finishes or is deleted), and no history is folded. With the LocalQueue in place the
    same transition settles it."""
    cq2 = cluster_queue("cq2", flavor_quotas("default", cpu="8"))
    pending = workload("wl", queue="lq-a", created=NOW, requests={"cpu": "4"})
    cluster = simulate(
        [namespace("default"), flavor("default"), _cq(), cq2, *QUEUES, pending], _options(True), NOW
    )
    afs = cluster.queues.afs
    for moved in (False, True):
        afs.push_entry_penalty("default/lq-a", "default/wl", {"cpu": 4000}, NOW.timestamp())
        lq = _lq("lq-a", "1")
        if moved:
            lq.spec.cluster_queue = "cq2"
        cluster.queues.update_local_queue(lq)
        done = admitted(pending, "cq1", {"cpu": "default"}, at_time=NOW, admitted_condition=True)
        old = workload("wl", queue="lq-a", created=NOW, requests={"cpu": "4"})
        cluster.core.observe(old, done, NOW)
        entry = afs.ledger.get("default/lq-a")
        assert entry is not None
        assert entry.has_penalty_record("default/wl") is moved, moved
        cluster.core.observe(done, None, NOW)  # deleted: the penalty goes either way
        assert not afs.ledger.has_pending_penalty("default/lq-a")


def test_preemption_candidate_usage_reads_a_stopped_local_queue_weight() -> None:
    """Upstream ``snapshotClusterQueue`` gives each candidate ``CalcLocalQueueFSUsage``, whose weight
    is the LocalQueue object's (``ResolveLQWeight``), stopped or not; the heap's weights are only of
    LocalQueues not stopped. lq-a (stopped, weight 4, consumed 8) has usage 2, lq-b (weight 1,
    consumed 3) usage 3: lq-b's candidate goes first although lq-a's is the newer."""
    stopped = _lq("lq-a", "4")
    stopped.spec.stop_policy = "Hold"
    cq, victims, preemptor = _preemption_setup(("a-new", NOW - timedelta(minutes=1)), ("b-old", NOW - timedelta(hours=1)))
    cluster = simulate(
        [namespace("default"), flavor("default"), cq, stopped, _lq("lq-b", "1"), _lq("lq-c", "1"), *victims, preemptor],
        _options(True),
        NOW,
    )
    for lq, cpu in (("lq-a", "8"), ("lq-b", "3")):
        cluster.queues.afs.ledger.set_for_test(f"default/{lq}", {"cpu": parse_quantity(cpu).value}, NOW.timestamp())
    cluster.run_cycle()
    evicted = [wl.metadata.name for wl in cluster.workloads() if conditions(wl).get("Evicted", ("False",))[0] == "True"]
    assert evicted == ["b-old"]


def test_usage_is_read_as_upstream_as_approximate_float64() -> None:
    """Not an upstream table: ``CalculateUsage`` reads each amount with ``AsApproximateFloat64``
    (``unscaled * 10^-scale``; the ledger's amounts are ``inf.Dec`` of scale nine) and
    ``LQWeightAsFloat64`` the stored weight (``0.7`` is stored as ``700m``, read as ``700 * 1e-3``),
    not as correctly rounded floats. lq-a (weight 0.7, consumed 7) then has usage
    9.999999999999998, below lq-b's 10 (weight 1, consumed 10): lq-a's workload goes first
    although lq-b's is older (correctly rounded, both are 10 and the older one would go)."""
    queues = [_lq("lq-a", "0.7"), _lq("lq-b", "1")]
    wls = [
        workload("wl-b1", queue="lq-b", created=NOW, requests={"cpu": "8"}),
        workload("wl-a1", queue="lq-a", created=NOW + timedelta(seconds=1), requests={"cpu": "8"}),
    ]
    cluster = simulate([namespace("default"), flavor("default"), _cq(), *queues, *wls], _options(True), NOW)
    for lq, cpu in (("lq-a", "7"), ("lq-b", "10")):
        cluster.queues.afs.ledger.set_for_test(f"default/{lq}", {"cpu": parse_quantity(cpu).value}, NOW.timestamp())
    cluster.queues.rebuild_heap("cq1")
    assert cluster.queues.afs.usage("default/lq-a") == 9.999999999999998
    cluster.run_cycle()
    admitted_names = [wl.metadata.name for wl in cluster.workloads() if wl.status.admission is not None]
    assert admitted_names == ["wl-a1"]


def test_entry_penalty_covers_only_declared_resources_when_undeclared_are_ignored() -> None:
    """Upstream ``Scheduler.updateEntryPenalty``: with ``IgnoreUndeclared`` the penalty is of the
    requests of the ClusterQueue's covered resources only (``filterByNames``)."""
    wl = workload("wl", queue="lq-a", created=NOW, requests={"cpu": "4", "example.com/gpu": "1"})
    opts = options(
        gates={"AdmissionFairSharing": True},
        admission_fair_sharing=AFS_CONFIG,
        ignore_undeclared_resources=True,
    )
    cluster = simulate([namespace("default"), flavor("default"), _cq(), *QUEUES, wl], opts, NOW)
    cluster.run_cycle()
    got = cluster.get_workload("default/wl")
    assert got is not None and got.status.admission is not None
    entry = cluster.queues.afs.ledger.get("default/lq-a")
    assert entry is not None
    assert set(entry.resources) == {"cpu"}


def test_candidate_usage_is_the_snapshots_not_the_penalties_of_the_cycle() -> None:
    """Not an upstream table: upstream ``snapshotClusterQueue`` computes every AFS candidate's
    ``LocalQueueFSUsage`` when the cycle's snapshot is taken, so the entry penalties the cycle's own
    assumes push (``updateEntryPenalty``) reach no candidate of that cycle; the next snapshot sees
    them. pykueue reads a candidate's usage lazily (the overlap recomputation reads it after earlier
    entries were assumed) from the ledger copied at the snapshot. Here the cycle admits a workload
    of lq-a (pushing its penalty, settled at once by the admission): a candidate of lq-a read after
    the cycle still has the snapshot's usage, 2, and the next cycle's snapshot has 2 + the penalty."""
    cq = _cq()
    old = admitted(
        workload("old", queue="lq-a", requests={"cpu": "1"}), "cq1", {"cpu": "default"}, at_time=NOW, admitted_condition=True
    )
    new = workload("new", queue="lq-a", created=NOW, requests={"cpu": "4"})
    cluster = simulate([namespace("default"), flavor("default"), cq, *QUEUES, old, new], _options(True), NOW)
    afs = cluster.queues.afs
    afs.ledger.set_for_test("default/lq-a", {"cpu": parse_quantity("2").value}, NOW.timestamp())
    cluster.run_cycle()
    assert conditions(cluster.get_workload("default/new"))["QuotaReserved"][0] == "True"  # type: ignore[arg-type]
    live = afs.candidate_usage("default/lq-a", afs.ledger.copy())
    assert live > 2.0  # the assume's penalty is in the ledger now
    scheduler = cluster.scheduler
    assert scheduler._candidate_lq_usage(info(old)) == 2.0
    # The next cycle (it needs a head) snapshots the ledger again.
    cluster.load([(workload("later", queue="lq-b", created=NOW, requests={"cpu": "8"}), "")])
    cluster.run_cycle()
    assert scheduler._candidate_lq_usage(info(old)) == live
