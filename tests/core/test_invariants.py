"""Property tests: quota-tree invariants of whole scheduling runs (upstream ``resource_node.go``,
``processEntry``, ``workloadFits``).

Random small clusters (1-3 flavors, cpu and/or memory, 1-6 ClusterQueues, optional hierarchical
cohorts owning quota, borrowing/lending limits, random preemption policies, queueing strategies,
fungibility, fair sharing on/off, 0-30 workloads, some pre-admitted within quota, some of those
already being evicted, some submitted late) are driven through ``SimulatedCluster``. After loading
and after every step (scheduling cycle, time advance that completes evictions, a workload
finishing, a pending workload (de)activated) the invariants below are checked against an
independent model of the tree formulas (``strategies.TreeModel``) and a cache rebuilt from scratch:

1a. Workloads holding quota and not being evicted never exceed any quota: roots stay within
    their subtree quota, nodes with a borrowing limit within subtree quota + limit.
1b. With no eviction in flight, that holds for every quota holder.
1c. Per cycle: every quota constraint that held at the start still holds at the end counting all
    holders but the victims chosen in that cycle — in-flight victims of earlier cycles keep their
    quota, so a preemptor is never admitted before its victims release it.
    (Counting *all* holders at every point is not an invariant of upstream Kueue: ``fits`` lets
    later entries of a cycle use same-cycle victims' quota early; pinned by
    ``test_same_cycle_victims_quota_is_reused_before_release``.)
2.  Lending limits: CQs outside a node X use at most the nominal quota outside X plus
    min(lendingLimit, subtreeQuota(X)) minus what X itself takes from its parent.
3.  CQ usage equals the admitted usage of its quota-holding workloads; every cohort's usage equals
    Σ max(0, child usage − child localQuota); subtree quotas and usages equal the model's.
4.  A workload without quota (evicted-and-released included) is back in its ClusterQueue and
    LocalQueue (not inflight), unless finished or inactive; a quota holder is in no queue; pending
    counts add up.
5.  QuotaReserved=True iff status.admission; Admitted implies QuotaReserved; a workload is
    counted by exactly its admission's CQ iff it actively holds quota, never twice.
6.  Snapshot simulations are fully undone: a cache rebuilt from the objects has the same usages.

Plus: runs are deterministic (same process, and across ``PYTHONHASHSEED``s), and on the quota tree
alone: incremental add/remove (any order, through lending limits) equals the tree formulas and
``recompute_tree``, and ``available``/``potential_available`` are exactly the largest admissible
amounts. ``PYKUEUE_PROPERTY_SCALE`` multiplies every example budget for longer bug hunts.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec
import pytest
from builders import (
    Q,
    admitted,
    build_cache,
    cluster_queue,
    flavor,
    flavor_quotas,
    local_queue,
    simulate,
    workload,
)
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from strategies import (
    FR,
    NOW,
    Scenario,
    Step,
    TreeModel,
    hold_usage,
    scenario,
    tree_with_usage,
)

from pykueue.api.kueue import ClusterQueue, Cohort, ResourceFlavor, Workload
from pykueue.core.cache.cache import Cache
from pykueue.core.quota.tree import (
    QuotaNode,
    add_usage,
    available,
    lowest_fitting_subtree,
    potential_available,
    quota_views,
    recompute_tree,
    remove_usage,
)
from pykueue.core.scheduler.entry import CycleResult
from pykueue.core.workload import transitions
from pykueue.core.workload.info import (
    admitted_usage,
    has_active_quota_reservation,
    has_quota_reservation,
    is_active,
    is_admitted,
    is_evicted,
    is_finished,
    workload_key,
)
from pykueue.sim.cluster import SimulatedCluster

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
SCALE = float(os.environ.get("PYKUEUE_PROPERTY_SCALE", "1"))
"""Multiply every example budget (e.g. ``PYKUEUE_PROPERTY_SCALE=20`` for a long bug hunt)."""


def examples(n: int) -> int:
    return max(1, int(n * SCALE))


def _nz(d: Mapping[FR, int]) -> dict[FR, int]:
    return {k: v for k, v in d.items() if v}


# --- driving a cluster ----------------------------------------------------------------------------


def new_cluster(sc: Scenario) -> SimulatedCluster:
    cluster = SimulatedCluster(sc.options(), NOW)
    cluster.load(sc.objects())
    return cluster


def _write(cluster: SimulatedCluster, wl: Workload) -> None:
    """An outside writer (job controller, user) updates a Workload; informers deliver it."""
    cluster.update_workload(wl)
    cluster._deliver_updates()


def finish_one(cluster: SimulatedCluster, pick: int) -> None:
    """The job of some quota-holding workload completes (Finished=True)."""
    holders = sorted(workload_key(w) for w in cluster.workloads() if has_active_quota_reservation(w))
    if not holders:
        return
    wl = cluster.get_workload(holders[pick % len(holders)])
    assert wl is not None
    updated = transitions.copy_for_status(wl)
    transitions.set_condition(
        updated, "Finished", "True", "Succeeded", "Job finished successfully", cluster.now
    )
    _write(cluster, updated)


def set_active(cluster: SimulatedCluster, pick: int, active: bool) -> None:
    """A user activates an inactive pending workload (a late arrival) or deactivates a pending one.

    Only workloads without a quota reservation: deactivating a quota holder goes through eviction
    by the workload controller, which the simulated cluster only models for rejected checks."""
    keys = sorted(
        workload_key(w)
        for w in cluster.workloads()
        if is_active(w) != active and not is_finished(w) and not has_quota_reservation(w)
    )
    if not keys:
        return
    wl = cluster.get_workload(keys[pick % len(keys)])
    assert wl is not None
    updated = transitions.copy_for_status(wl)
    updated.spec = msgspec.structs.replace(updated.spec, active=active)
    _write(cluster, updated)


def run_step(cluster: SimulatedCluster, step: Step) -> CycleResult | None:
    """One step of a scenario; a cycle's result."""
    if step.kind == "cycle":
        return cluster.run_cycle()
    if step.kind == "advance":
        cluster.advance(1.0)
    elif step.kind == "finish":
        finish_one(cluster, step.pick)
    else:
        set_active(cluster, step.pick, step.kind == "activate")
    return None


def run_steps(sc: Scenario, check: bool = True) -> SimulatedCluster:
    cluster = new_cluster(sc)
    model = sc.model()
    if check:
        check_invariants(cluster, sc, model, "after load")
    for i, step in enumerate(sc.steps):
        where = f"after step {i} ({step.kind})"
        held_before = model.violated_constraints(cq_usage_from_objects(cluster)) if step.kind == "cycle" else None
        result = run_step(cluster, step)
        if check and result is not None:
            assert held_before is not None
            _coverage_events(cluster, result)
            check_cycle_admissions(cluster, model, held_before, result, where)
        if check:
            check_invariants(cluster, sc, model, where)
    return cluster


def _coverage_events(cluster: SimulatedCluster, result: CycleResult) -> None:
    """Label examples (``--hypothesis-show-statistics``) to see what the generators exercise."""
    if not currently_in_test_context():
        return
    if result.admitted:
        event("cycle admitted")
    if result.preempted:
        event("cycle preempted")
    if any(
        e.assignment is not None and e.assignment.borrowing
        for e in result.entries
        if e.info.key in result.admitted
    ):
        event("admitted while borrowing")
    depth = max((len(cq.node.path_from_root()) for cq in cluster.cache.cluster_queues.values()), default=0)
    event(f"tree depth {depth}")


# --- the invariants -------------------------------------------------------------------------------


def cq_usage_from_objects(
    cluster: SimulatedCluster, skip: Callable[[Workload], bool] | None = None
) -> dict[str, dict[FR, int]]:
    """Usage of every ClusterQueue rebuilt from the workloads' ``status.admission``
    (``totalRequestsFromAdmission``), over the workloads actively holding quota (except those ``skip``
    selects)."""
    out: dict[str, dict[FR, int]] = {name: {} for name in cluster.cache.cluster_queues}
    for wl in cluster.workloads():
        if not has_active_quota_reservation(wl) or (skip is not None and skip(wl)):
            continue
        assert wl.status.admission is not None
        u = out.setdefault(wl.status.admission.cluster_queue, {})
        for fr, v in admitted_usage(wl, cluster.options).items():
            u[fr] = u.get(fr, 0) + v
    return out


def check_cycle_admissions(
    cluster: SimulatedCluster,
    model: TreeModel,
    violated_before: Mapping[tuple[tuple[str, str], FR], str],
    result: CycleResult,
    where: str,
) -> None:
    """Invariant 1c — admissions of one cycle never over-commit, and a preemptor is not admitted
    while its victims from earlier cycles still hold quota.

    Every quota constraint that held at the start of the cycle (counting every quota holder)
    still holds at the end counting every holder except the victims targeted in this very cycle:
    in-flight victims of earlier cycles are counted, exactly as the scheduler's ``fits``
    counts them. (Victims of the same cycle are excluded because ``fits`` lets later
    entries of the cycle use their quota before they release it; see
    ``test_same_cycle_victims_quota_is_reused_before_release``.)
    """
    victims = {
        t.workload.key
        for e in result.entries
        if e.quota_reserved_reason == "WaitingForPreemptedWorkloads"
        for t in e.targets
    }
    after = model.violated_constraints(cq_usage_from_objects(cluster, lambda w: workload_key(w) in victims))
    new = {k: v for k, v in after.items() if k not in violated_before}
    assert not new, (
        f"[{where}] cycle {result.cycle} over-committed (admitted {result.admitted}): {list(new.values())}"
    )


def _node(cache: Cache, key: tuple[str, str]) -> QuotaNode:
    return cache.cluster_queues[key[1]].node if key[0] == "cq" else cache.cohorts[key[1]]


def check_invariants(cluster: SimulatedCluster, sc: Scenario, model: TreeModel, where: str) -> None:
    cache = cluster.cache
    ctx = f"[{where}]"

    # 5. QuotaReserved=True iff status.admission; a workload is counted by at most one CQ, and by
    #    exactly the CQ of its admission iff it actively holds quota.
    for wl in cluster.workloads():
        key = workload_key(wl)
        assert has_quota_reservation(wl) == (wl.status.admission is not None), (
            f"{ctx} {key}: QuotaReserved vs admission"
        )
        if is_admitted(wl):
            assert has_quota_reservation(wl), f"{ctx} {key}: Admitted=True without QuotaReserved=True"
        counted_in = [name for name, cq in cache.cluster_queues.items() if key in cq.workloads]
        assert len(counted_in) <= 1, f"{ctx} {key} counted in several CQs: {counted_in}"
        if has_active_quota_reservation(wl):
            assert wl.status.admission is not None
            cq = wl.status.admission.cluster_queue
            assert counted_in == [cq], f"{ctx} {key} holds quota in {cq} but cache counts it in {counted_in}"
            assert cache.workload_cq.get(key) == cq, f"{ctx} {key}: workload_cq index out of sync"
        else:
            assert not counted_in, f"{ctx} {key} holds no quota but is counted in {counted_in}"
            assert key not in cache.workload_cq, f"{ctx} {key}: stale workload_cq entry"
    assert set(cache.workload_cq) <= {workload_key(w) for w in cluster.workloads()}, (
        f"{ctx} unknown keys cached"
    )
    # The queue manager's set of ClusterQueues with a non-empty heap is exact (``heads`` counts
    # an empty heap's pop cycle from it without popping).
    queues = cluster.queues
    assert queues._nonempty == {name for name, pq in queues._cqs.items() if pq.active}, f"{ctx} _nonempty"

    # 3a. Every CQ's usage equals the sum of its quota-holding workloads' admitted usage.
    cq_usage = cq_usage_from_objects(cluster)
    for name, cq in cache.cluster_queues.items():
        assert _nz(cq.node.usage) == _nz(cq_usage.get(name, {})), (
            f"{ctx} CQ {name} usage {_nz(cq.node.usage)} != recomputed {_nz(cq_usage.get(name, {}))}"
        )

    # 3b. Every cohort's usage equals Σ over children max(0, child.Usage − child.localQuota), using
    #     the implementation's own node values (local consistency of the incremental updates) ...
    for name, node in cache.cohorts.items():
        expected: dict[FR, int] = {}
        for child in [*node.child_cohorts.values(), *node.child_cqs.values()]:
            for fr, u in child.usage.items():
                expected[fr] = expected.get(fr, 0) + max(0, u - child.local_quota(fr))
        assert _nz(node.usage) == _nz(expected), (
            f"{ctx} cohort {name} usage {_nz(node.usage)} != {_nz(expected)}"
        )

    # ... and every node's structure, subtree quota and usage equal the independent model's.
    assert {("cohort", n) for n in cache.cohorts} | {("cq", n) for n in cache.cluster_queues} == set(
        model.nodes
    ), f"{ctx} tree nodes differ from the model"
    model_usage = model.usage(cq_usage)
    for key, mnode in model.nodes.items():
        node = _node(cache, key)
        parent = None if node.parent is None else ("cohort", node.parent.name)
        assert parent == mnode.parent, f"{ctx} {key} parent {parent} != model {mnode.parent}"
        assert _nz(node.subtree_quota) == _nz(model.subtree[key]), (
            f"{ctx} {key} subtree quota {_nz(node.subtree_quota)} != model {_nz(model.subtree[key])}"
        )
        assert _nz(node.usage) == _nz(model_usage[key]), (
            f"{ctx} {key} usage {_nz(node.usage)} != model {_nz(model_usage[key])}"
        )

    # 1a. No node exceeds its quota — roots within subtree quota, nodes with a borrowing limit within
    #     subtree quota + limit — counting every workload holding quota that is not being evicted.
    #     (Victims keep their quota until their eviction completes; see invariant 1c for them.)
    settled = cq_usage_from_objects(cluster, is_evicted)
    broken = model.violations(settled)
    assert not broken, f"{ctx} quota exceeded by workloads not being evicted: {broken}"

    # 1b. With no eviction in flight (e.g. after evictions completed), every holder counts.
    if not any(is_evicted(w) and has_active_quota_reservation(w) for w in cluster.workloads()):
        broken = model.violations(cq_usage)
        assert not broken, f"{ctx} quota exceeded: {broken}"

    # 2. Lending limits: what others use never eats more than a node lends.
    broken = model.lending_violations(settled)
    assert not broken, f"{ctx} lending limit exceeded: {broken}"

    # 4. A workload without quota (evicted-and-released included) is back in its queue — tracked
    #    by its ClusterQueue and LocalQueue, not inflight — unless finished/inactive; a workload
    #    holding quota is in no queue. Pending counts add up.
    pending_per_cq: dict[str, int] = {}
    for wl in cluster.workloads():
        key = workload_key(wl)
        cq_name = cluster.queues.cluster_queue_for_workload(wl)
        assert cq_name is not None
        pcq = cluster.queues.cluster_queue(cq_name)
        assert pcq is not None
        entry = pcq.tracked(key)
        if is_finished(wl) or not is_active(wl) or has_quota_reservation(wl):
            assert entry is None, f"{ctx} {key} holds quota or is finished but is queued"
            continue
        assert entry is not None, f"{ctx} {key} has no quota but is not in its queue"
        assert key not in pcq.inflight, f"{ctx} {key} still inflight after the cycle"
        lq_key = f"{wl.metadata.namespace}/{wl.spec.queue_name}"
        assert key in cluster.queues.local_queue_workload_keys(lq_key), f"{ctx} {key} missing from {lq_key}"
        pending_per_cq[cq_name] = pending_per_cq.get(cq_name, 0) + 1
    for name in cache.cluster_queues:
        assert cluster.queues.pending_count(name) == pending_per_cq.get(name, 0), (
            f"{ctx} pending count of {name}"
        )

    # 6. Snapshot simulations fully undone: a cache rebuilt from the same objects is identical.
    objs = [
        lo.obj
        for lo in cluster.objects.values()
        if isinstance(lo.obj, ResourceFlavor | Cohort | ClusterQueue)
    ]
    objs += [w for w in cluster.workloads() if has_active_quota_reservation(w)]
    fresh = build_cache(objs, cluster.options)
    assert set(fresh.cohorts) == set(cache.cohorts)
    for name, cq in cache.cluster_queues.items():
        f = fresh.cluster_queues[name]
        assert _nz(cq.node.usage) == _nz(f.node.usage), f"{ctx} CQ {name} usage differs from a fresh cache"
        assert _nz(cq.node.subtree_quota) == _nz(f.node.subtree_quota)
        assert set(cq.workloads) == set(f.workloads), f"{ctx} CQ {name} workloads differ from a fresh cache"
        for key, info in cq.workloads.items():
            assert _nz(info.usage) == _nz(f.workloads[key].usage), f"{ctx} {key}: cached usage != admission"
    for name, c in cache.cohorts.items():
        f = fresh.cohorts[name]
        assert _nz(c.usage) == _nz(f.usage), (
            f"{ctx} cohort {name} usage {_nz(c.usage)} != fresh {_nz(f.usage)}"
        )
        assert _nz(c.subtree_quota) == _nz(f.subtree_quota)


# --- properties: whole scheduling runs ------------------------------------------------------------


@settings(max_examples=examples(450), **SETTINGS)
@given(scenario())
def test_scheduling_runs_keep_quota_invariants(sc: Scenario) -> None:
    """Invariants 1-6 after load and after every cycle / eviction completion / finish."""
    note(sc.describe())
    run_steps(sc)


@settings(max_examples=examples(220), **SETTINGS)
@given(scenario(max_workloads=20, max_cqs=4, max_steps=4))
def test_preemption_pressure_keeps_quota_invariants(sc: Scenario) -> None:
    """Same invariants, biased towards preemption: every CQ may preempt, lots of cycles with and
    without eviction completion in between (victims keep quota until released)."""
    for q in sc.cqs:
        if q.within == "Never":
            q.within = "LowerPriority"
        if q.reclaim == "Never" and q.cohort:
            q.reclaim = "Any"
    sc.steps = [s for s in sc.steps for s in (s, s)] or sc.steps
    note(sc.describe())
    run_steps(sc)


@settings(max_examples=examples(40), **SETTINGS)
@given(scenario(max_workloads=15, max_cqs=4, max_steps=5))
def test_runs_are_deterministic(sc: Scenario) -> None:
    """Running the same input twice gives byte-identical objects and events."""
    note(sc.describe())

    a = run_steps(sc, check=False)
    b = run_steps(sc, check=False)
    assert run_digest(a) == run_digest(b)


_DIGEST_CHILD = """
import hashlib, pickle, sys
sys.path.insert(0, sys.argv[2])
import test_invariants as T
for sc in pickle.load(open(sys.argv[1], "rb")):
    print(hashlib.sha256(T.run_digest(T.run_steps(sc, check=False))).hexdigest())
"""


def run_digest(cluster: SimulatedCluster) -> bytes:
    """Every object (status included) and every event, serialised."""
    objs = [msgspec.to_builtins(obj) for obj, _ in cluster.output()]
    events = [msgspec.to_builtins(e) for e in cluster.events]
    return msgspec.json.encode([objs, events])


@settings(max_examples=examples(3), **SETTINGS)
@given(scenarios=st.lists(scenario(max_workloads=15, max_cqs=4, max_steps=5), min_size=5, max_size=5))
def test_runs_are_deterministic_across_hash_seeds(
    scenarios: list[Scenario], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The same inputs give byte-identical results in fresh interpreters with different
    ``PYTHONHASHSEED`` (no dependence on set/dict order of hashed strings)."""
    path = tmp_path_factory.mktemp("det") / "scenarios.pkl"
    path.write_bytes(pickle.dumps(scenarios))
    here = str(Path(__file__).parent)
    digests = []
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONWARNINGS": "ignore"}
        out = subprocess.run(
            [sys.executable, "-c", _DIGEST_CHILD, str(path), here], env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr[-2000:]
        digests.append(out.stdout.split())
    assert len(digests[0]) == len(scenarios)
    differing = [i for i, (a, b) in enumerate(zip(*digests, strict=True)) if a != b]
    assert not differing, "results depend on the hash seed:\n" + "\n\n".join(
        scenarios[i].describe() for i in differing
    )


def test_same_cycle_victims_quota_is_reused_before_release() -> None:
    """Pins upstream behaviour (``scheduler.go`` ``fits``): every entry's fit is
    checked with *all* victims chosen earlier in the cycle removed, so Fit entries processed after
    a preemptor can take the part of the victims' quota the preemptor does not need, before the
    victims release it. Quota holders transiently exceed the cohort (5 of 4 cpu) until the
    eviction completes; then the preemptor is admitted and usage is back within quota.

    This is why invariant 1 is checked over non-evicted holders (1a), over all holders once no
    eviction is in flight (1b), and per cycle excluding only that cycle's victims (1c).
    """
    objs = [
        flavor("f"),
        cluster_queue(
            "a",
            flavor_quotas("f", cpu=Q(2, borrowing_limit=0)),
            cohort="c",
            preemption={"within_cluster_queue": "LowerPriority"},
        ),
        cluster_queue("b", flavor_quotas("f", cpu=1), cohort="c"),
        cluster_queue("d", flavor_quotas("f", cpu=1), cohort="c"),
        local_queue("a"),
        local_queue("b"),
        local_queue("d"),
        admitted(
            workload("low", queue="a", priority=0, requests={"cpu": "2"}),
            "a",
            {"cpu": "f"},
            admitted_condition=True,
        ),
        workload("high", queue="a", priority=1, requests={"cpu": "1"}),
        workload("wb", queue="b", requests={"cpu": "2"}),
        workload("wd", queue="d", requests={"cpu": "1"}),
    ]
    cluster = simulate(objs)
    fr = ("f", "cpu")
    result = cluster.run_cycle()
    assert result.preempted == ["default/low"]
    assert sorted(result.admitted) == ["default/wb", "default/wd"]
    # "low" is evicted but still holds its 2 cpu: 2 + 2 + 1 = 5 cpu held in a 4 cpu cohort.
    assert cluster.cache.cohorts["c"].usage[fr] == 5000
    assert cluster.cache.cohorts["c"].subtree_quota[fr] == 4000
    cluster.advance(1.0)
    assert cluster.cache.cohorts["c"].usage[fr] == 3000
    result = cluster.run_cycle()
    assert result.admitted == ["default/high"]
    assert cluster.cache.cohorts["c"].usage[fr] == 4000


# --- properties: the quota tree alone -------------------------------------------------------------


def _live_tree(sc: Scenario) -> Cache:
    objs = [obj for obj, _ in sc.objects() if isinstance(obj, ResourceFlavor | Cohort | ClusterQueue)]
    return build_cache(objs)


def _cache_node_usage(cache: Cache) -> dict[tuple[str, str], dict[FR, int]]:
    out = {("cq", n): _nz(cq.node.usage) for n, cq in cache.cluster_queues.items()}
    out.update({("cohort", n): _nz(c.usage) for n, c in cache.cohorts.items()})
    return out


@settings(max_examples=examples(300), **SETTINGS)
@given(tree_with_usage(), st.randoms(use_true_random=False))
def test_incremental_usage_matches_recompute(case: tuple[Scenario, dict[str, dict[FR, int]]], rnd) -> None:
    """``addUsage``/``removeUsage``: adding usage FR by FR in any order (incrementally, through lending
    limits) gives the tree formulas' usages, and removing it again in any other order restores the empty
    tree."""
    sc, held = case
    note(sc.describe())
    note(f"usage={held}")
    cache = _live_tree(sc)
    model = sc.model()
    ops = [(cq, fr, v) for cq, u in held.items() for fr, v in u.items() for v in _split(v)]
    rnd.shuffle(ops)
    for cq, fr, v in ops:
        add_usage(cache.cluster_queues[cq].node, fr, v)
    expected = {k: _nz(u) for k, u in model.usage(held).items()}
    assert _cache_node_usage(cache) == expected
    for root in cache.roots():
        recompute_tree(root)
    assert _cache_node_usage(cache) == expected, "recompute_tree disagrees with the model"
    rnd.shuffle(ops)
    for cq, fr, v in ops:
        remove_usage(cache.cluster_queues[cq].node, fr, v)
    assert all(not u for u in _cache_node_usage(cache).values())


def _split(v: int) -> list[int]:
    """Split an amount in two pieces so the incremental path crosses local-quota boundaries."""
    return [v] if v < 2 else [v // 2, v - v // 2]


@settings(max_examples=examples(250), **SETTINGS)
@given(tree_with_usage())
def test_available_is_the_largest_admissible_amount(case: tuple[Scenario, dict[str, dict[FR, int]]]) -> None:
    """``available``: on a state within quota, ``Available(cq, fr)`` is exactly the largest amount the CQ can
    add without breaking a quota constraint (so admitting by ``Available`` keeps invariant 1),
    and ``potentialAvailable`` is that amount on an empty tree."""
    sc, held = case
    note(sc.describe())
    note(f"usage={held}")
    cache = _live_tree(sc)
    model = sc.model()
    for cq, u in held.items():
        for fr, v in u.items():
            add_usage(cache.cluster_queues[cq].node, fr, v)
    hi = 10**6
    for q in sc.cqs:
        node = cache.cluster_queues[q.name].node
        for fr in sorted({(f, r) for f in sc.flavors for r in sc.resources}):
            got = available(node, fr)
            want = model.max_addable(q.name, fr, held, hi)
            assert got == want, f"available({q.name}, {fr}) = {got}, largest admissible = {want}"
            empty_want = model.max_addable(q.name, fr, {}, hi)
            assert potential_available(node, fr) == empty_want, (
                f"potential_available({q.name}, {fr}) = {potential_available(node, fr)}, want {empty_want}"
            )


@settings(max_examples=examples(250), **SETTINGS)
@given(tree_with_usage(), st.integers(0, 10), st.lists(st.integers(0, 40_000), min_size=1, max_size=4))
def test_quota_views_equal_the_three_walks(
    case: tuple[Scenario, dict[str, dict[FR, int]]], extra: int, values: list[int]
) -> None:
    """``quota_views`` (one read of a flat ClusterQueue's two nodes) equals ``potential_available``,
    ``lowest_fitting_subtree`` and ``available`` walked separately, on every tree shape, within quota
    and with one ClusterQueue over it (borrowing), for amounts below, at and above the free quota."""
    sc, held = case
    note(sc.describe())
    cache = _live_tree(sc)
    frs = hold_usage(cache, sc, held, extra)
    for q in sc.cqs:
        node = cache.cluster_queues[q.name].node
        for fr in frs:
            free = available(node, fr)
            for value in {*values, free, free + 1, max(0, free - 1), 2**62, 2**63 - 1}:  # and int64's edge
                want = (potential_available(node, fr), *lowest_fitting_subtree(node, fr, value), free)
                assert quota_views(node, fr, value) == want, f"quota_views({q.name}, {fr}, {value})"


@settings(max_examples=examples(40), **SETTINGS)
@given(scenario(max_workloads=8, with_steps=False))
def test_generated_objects_are_valid(sc: Scenario) -> None:
    """The generators only produce objects the API server would accept."""
    from pykueue.api.validation import validate

    for obj, _ in sc.objects():
        errs = validate(obj)
        assert not errs, f"{obj.kind} {obj.metadata.name}: {[str(e) for e in errs]}"


def test_model_worked_example_a() -> None:
    """The reference model reproduces the worked lending- and borrowing-limit example."""
    from strategies import CohortGen, CQGen, GroupGen, QuotaGen

    def cq(name: str, q: QuotaGen) -> CQGen:
        return CQGen(
            name,
            "all",
            [GroupGen(("cpu",), ("f0",), {"f0": {"cpu": q}})],
            "Never",
            "Never",
            "",
            None,
            "",
            "MayStopSearch",
            "TryNextFlavor",
            "",
            None,
        )

    sc = Scenario(
        ("cpu",),
        ("f0",),
        [CohortGen("all", "", False, [])],
        [cq("A", QuotaGen(10)), cq("B", QuotaGen(10, borrowing_limit=2, lending_limit=4))],
        [],
        False,
    )
    model = sc.model()
    fr = ("f0", "cpu")
    usage = {"A": {fr: 12}, "B": {fr: 3}}
    assert model.subtree[("cohort", "all")][fr] == 14
    assert model.usage(usage)[("cohort", "all")][fr] == 12
    assert model.max_addable("A", fr, usage, 100) == 2
    assert model.max_addable("B", fr, usage, 100) == 5
    assert model.max_addable("A", fr, {}, 100) == 14
    assert model.max_addable("B", fr, {}, 100) == 12
    assert not model.violations(usage) and not model.lending_violations(usage)
    assert model.violations({"A": {fr: 15}})
    assert model.lending_violations({"A": {fr: 15}})


pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
