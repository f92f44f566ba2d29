"""Classical preemption (upstream ``preemption.go``, ``classical/``): target search, ordering, policies,
oracle, eviction.

Upstream's tables in ``pkg/scheduler/preemption/preemption_test.go`` and
``preemption_hierarchical_test.go``, with upstream's case names as ids:

- ``TestPreemption``: every case, in ``PREEMPTION_CASES`` (targets with their reason and the preemptor
  and preemptee paths of the Preempted condition's message).
- ``TestHierarchicalPreemptions``: every case; "preempt with hierarchical advantage" is
  ``test_worked_example_j_hierarchical_advantage_and_message``, and "avoid queues within nominal
  quota", "prefer to preempt evicted workloads", "respect lending limits" and "reclaim in complex
  hierarchy" are the ``test_<name>`` functions below; the rest are in ``HIERARCHICAL_CASES``.
- ``TestCandidatesOrdering`` (``ORDERING_CASES``), ``TestPreemptionMessage`` (its cases are unnamed)
  and ``TestPriorityInfo``: every case.

Upstream's other functions there (``TestPreemptionWhenWorkloadModifiedConcurrently``,
``TestIssuePreemptions*``) test the API writes of ``IssuePreemptions``, not the decision.

not ported: ``preempted_workloads_test.go`` (TestWorkloadsToRemove, TestWorkloadsToRemoveNilReceiver)
— the Go map helper ``PreemptedWorkloads.MergeWithTargets`` (a clone, nil receiver, the later
value kept for a repeated key); the rule it serves, each victim's usage removed once in ``fits``,
is ``Cycle._without`` (victims de-duplicated by key).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from builders import (
    T0,
    Q,
    admitted,
    at,
    build,
    cluster_queue,
    cohort,
    flavor,
    flavor_quotas,
    info,
    options,
    pod_set,
    resource_group,
    workload,
)

from pykueue.api.kueue import (
    CHECK_PENDING,
    CHECK_READY,
    CHECK_RETRY,
    JOB_UID_LABEL,
    PRIORITY_BOOST_ANNOTATION,
    AdmissionCheckState,
    ClusterQueue,
    PodSet,
    Workload,
)
from pykueue.api.meta import Condition, find_condition
from pykueue.core.cache.cache import Cache
from pykueue.core.options import SchedulerOptions
from pykueue.core.scheduler.flavorassigner.assignment import (
    Assignment,
    FlavorAssignment,
    Mode,
    PodSetAssignmentResult,
    PreemptionMode,
)
from pykueue.core.scheduler.preemption.common import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAIM_WHILE_BORROWING,
    IN_COHORT_RECLAMATION,
    Target,
    compare_candidates,
    cq_path,
    preemption_message,
    priority_info,
    satisfies_preemption_policy,
    sort_candidates,
)
from pykueue.core.scheduler.preemption.preemptor import Preemptor, apply_eviction_for_preemption
from pykueue.core.workload.info import WorkloadInfo

NOW = T0 + timedelta(hours=1)
CPU = ("default", "cpu")
LP, LONEP, ANY, NEVER = "LowerPriority", "LowerOrNewerEqualPriority", "Any", "Never"


# --- helpers ----------------------------------------------------------------------------------


def adm(
    name: str,
    cq: str,
    cpu: str | int = 1,
    prio: int = 0,
    reserved: float = 0,
    fl: str = "default",
    **req: str,
) -> Workload:
    """A workload holding quota in ``cq`` (cpu plus optional other resources, all on flavor ``fl``)."""
    requests: dict[str, str | int] = {"cpu": cpu, **req}
    wl = workload(name, priority=prio, requests=requests, created=T0)
    return admitted(wl, cq, {r: fl for r in requests}, at_time=at(reserved))


def incoming(cpu: str | int = 1, prio: int = 0, created: float = 0, name: str = "in", **req: str) -> Workload:
    return workload(
        name,
        priority=prio,
        requests={"cpu": cpu, **req},
        created=at(created),
        uid="wl-in",
        labels={JOB_UID_LABEL: "job-in"},
    )


def multi_incoming(pod_sets: list[PodSet], prio: int = 0) -> Workload:
    """The incoming workload with several pod sets."""
    return workload(
        "in", priority=prio, pod_sets=pod_sets, created=T0, uid="wl-in", labels={JOB_UID_LABEL: "job-in"}
    )


def make_assignment(
    wl: WorkloadInfo, flavors: dict[str, str] | list[dict[str, str]], modes: dict[str, Mode] | None = None
) -> Assignment:
    """An assignment of every requested resource to ``flavors`` (mode Preempt unless overridden);
    ``flavors`` is one mapping for every pod set or one per pod set."""
    modes = modes or {}
    per_ps = flavors if isinstance(flavors, list) else [flavors] * len(wl.pod_sets)
    pod_sets = []
    for ps, fl in zip(wl.pod_sets, per_ps, strict=True):
        fas = {r: FlavorAssignment(fl[r], modes.get(r, Mode.PREEMPT), 0) for r in ps.total if r in fl}
        pod_sets.append(PodSetAssignmentResult(ps.name, fas, dict(ps.total), ps.count))
    return Assignment(pod_sets)


def usage_state(cache: Cache) -> tuple[dict[str, dict[tuple[str, str], int]], dict[str, set[str]]]:
    """Every node's non-zero usage and every CQ's workload keys."""
    usage = {}
    for name, cq in cache.cluster_queues.items():
        usage["cq/" + name] = {fr: v for fr, v in cq.node.usage.items() if v}
    for name, c in cache.cohorts.items():
        usage["cohort/" + name] = {fr: v for fr, v in c.usage.items() if v}
    return usage, {name: set(cq.workloads) for name, cq in cache.cluster_queues.items()}


def run_targets(
    objs: list[object],
    wl: Workload,
    cq: str,
    flavors: dict[str, str] | list[dict[str, str]] | None = None,
    modes: dict[str, Mode] | None = None,
    fair: bool = False,
) -> tuple[list[Target], Cache]:
    cache, snap = build([flavor("default"), flavor("alpha"), flavor("beta"), *objs])  # type: ignore[list-item]
    before = usage_state(cache)
    inf = info(wl)
    inf.cluster_queue = cq
    preemptor = Preemptor(options(fair_sharing=fair), clock=NOW.timestamp)
    a = make_assignment(inf, flavors or {"cpu": "default"}, modes)
    targets = preemptor.get_targets(inf, a, snap, cache.cluster_queues[cq])
    assert usage_state(cache) == before, "get_targets must leave the snapshot unchanged"
    return targets, cache


def got(targets: list[Target]) -> set[str]:
    return {f"{t.workload.name}:{t.reason}" for t in targets}


# --- the default ClusterQueues of upstream's TestPreemption ----------------------------------------


def _pre(
    within: str = NEVER, reclaim: str = NEVER, bwc: str | None = None, threshold: int | None = None
) -> dict:
    p: dict[str, object] = {"within_cluster_queue": within, "reclaim_within_cohort": reclaim}
    if bwc is not None:
        p["borrow_within_cohort"] = bwc
        p["max_priority_threshold"] = threshold
    return p


def default_cqs() -> list[ClusterQueue]:
    shared_bwc = {"bwc": LP, "threshold": 0}
    return [
        cluster_queue(
            "standalone",
            resource_group(flavor_quotas("default", cpu=6)),
            resource_group(flavor_quotas("alpha", memory="3Gi"), flavor_quotas("beta", memory="3Gi")),
            preemption=_pre(within=LP),
        ),
        cluster_queue(
            "c1",
            flavor_quotas("default", cpu=Q(6, borrowing_limit=6), memory=Q("3Gi", borrowing_limit="3Gi")),
            cohort="cohort",
            preemption=_pre(within=LP, reclaim=LP),
        ),
        cluster_queue(
            "c2",
            flavor_quotas("default", cpu=Q(6, borrowing_limit=6), memory=Q("3Gi", borrowing_limit="3Gi")),
            cohort="cohort",
            preemption=_pre(within=NEVER, reclaim=ANY),
        ),
        cluster_queue(
            "d1",
            flavor_quotas("default", cpu=6, memory="3Gi"),
            cohort="cohort-no-limits",
            preemption=_pre(within=LP, reclaim=LP),
        ),
        cluster_queue(
            "d2",
            flavor_quotas("default", cpu=6, memory="3Gi"),
            cohort="cohort-no-limits",
            preemption=_pre(within=NEVER, reclaim=ANY),
        ),
        cluster_queue(
            "l1",
            flavor_quotas("default", cpu=Q(6, borrowing_limit=12), memory=Q("3Gi", borrowing_limit="6Gi")),
            cohort="legion",
            preemption=_pre(within=LP, reclaim=LP),
        ),
        cluster_queue("preventStarvation", flavor_quotas("default", cpu=6), preemption=_pre(within=LONEP)),
        cluster_queue(
            "a_standard",
            flavor_quotas("default", cpu=Q(1, borrowing_limit=12)),
            cohort="with_shared_cq",
            preemption=_pre(NEVER, LP, **shared_bwc),  # type: ignore[arg-type]
        ),
        cluster_queue(
            "b_standard",
            flavor_quotas("default", cpu=Q(1, borrowing_limit=12)),
            cohort="with_shared_cq",
            preemption=_pre(LP, ANY, **shared_bwc),  # type: ignore[arg-type]
        ),
        cluster_queue(
            "a_best_effort",
            flavor_quotas("default", cpu=Q(1, borrowing_limit=12)),
            cohort="with_shared_cq",
            preemption=_pre(NEVER, LP, **shared_bwc),  # type: ignore[arg-type]
        ),
        cluster_queue(
            "b_best_effort",
            flavor_quotas("default", cpu=Q(0, borrowing_limit=13)),
            cohort="with_shared_cq",
            preemption=_pre(NEVER, LP, **shared_bwc),  # type: ignore[arg-type]
        ),
        cluster_queue("shared", flavor_quotas("default", cpu=10), cohort="with_shared_cq"),
        cluster_queue(
            "lend1",
            flavor_quotas("default", cpu=Q(6, lending_limit=4)),
            cohort="cohort-lend",
            preemption=_pre(LP, LP),
        ),
        cluster_queue(
            "lend2",
            flavor_quotas("default", cpu=Q(6, lending_limit=2)),
            cohort="cohort-lend",
            preemption=_pre(LP, LP),
        ),
        cluster_queue(
            "a", flavor_quotas("default", cpu=2, memory=2), cohort="cohort-three", preemption=_pre(LP, ANY)
        ),
        cluster_queue("b", flavor_quotas("default", cpu=2, memory=2), cohort="cohort-three"),
        cluster_queue("c", flavor_quotas("default", cpu=2, memory=2), cohort="cohort-three"),
    ]


def icq(name: str, path: str) -> str:
    """A target preempted within its own ClusterQueue at ``path``."""
    return f"{name}:{IN_CLUSTER_QUEUE}:{path}->{path}"


def rec(name: str, preemptor: str, preemptee: str) -> str:
    return f"{name}:{IN_COHORT_RECLAMATION}:{preemptor}->{preemptee}"


def rwb(name: str, preemptor: str, preemptee: str) -> str:
    return f"{name}:{IN_COHORT_RECLAIM_WHILE_BORROWING}:{preemptor}->{preemptee}"


def got_paths(targets: list[Target]) -> set[str]:
    """Each target as ``name:reason:preemptor path->preemptee path`` (upstream's expected
    Preempted condition: its reason and the two paths of its message)."""
    return {f"{t.workload.name}:{t.reason}:{t.preemptor_path}->{t.preemptee_path}" for t in targets}


def mem_adm(name: str, cq: str, memory: str, fl: str, prio: int = 0) -> Workload:
    """A workload holding only memory quota in ``cq`` on flavor ``fl``."""
    return admitted(workload(name, priority=prio, requests={"memory": memory}), cq, {"memory": fl})


SA = "/standalone"
C1, C2 = "/cohort/c1", "/cohort/c2"
WS = "/with_shared_cq/"
L1, L2 = "/cohort-lend/lend1", "/cohort-lend/lend2"
CA, CB = "/cohort-three/a", "/cohort-three/b"


@dataclass
class Case:
    admitted: list[Workload]
    incoming: Workload
    cq: str
    want: set[str]
    flavors: dict[str, str] | list[dict[str, str]] = field(default_factory=lambda: {"cpu": "default"})
    modes: dict[str, Mode] = field(default_factory=dict)
    objs: list[object] | None = None
    """Replaces upstream's ``defaultClusterQueues`` when set (with its cohorts)."""


def _three(cpu_mem: bool, specs: list[tuple[str, str, int]]) -> list[Workload]:
    """Workloads of 1 cpu (and 1 byte of memory with ``cpu_mem``) in the ``cohort-three`` CQs."""
    if cpu_mem:
        return [adm(name, cq, 1, prio, memory="1") for name, cq, prio in specs]
    return [adm(name, cq, 1, prio) for name, cq, prio in specs]


_EXHAUSTED = [("a1", "a", -2), ("a2", "a", -2), ("a3", "a", -1), ("b1", "b", 0), ("b2", "b", 0), ("b3", "b", 0)]
_CPU_MEM = {"cpu": "default", "memory": "default"}

# Upstream ``TestPreemption`` (pkg/scheduler/preemption/preemption_test.go), every case. Upstream
# checks the workloads after ``IssuePreemptions``; here the targets of ``GetTargets`` with the
# reason and the two paths of the Preempted condition's message.
PREEMPTION_CASES: dict[str, Case] = {
    "preempt lowest priority": Case(
        [adm("low", "standalone", 2, -1), adm("mid", "standalone", 2, 0), adm("high", "standalone", 2, 1)],
        incoming(2, 1),
        "standalone",
        {icq("low", SA)},
    ),
    "preempt multiple": Case(
        [adm("low", "standalone", 2, -1), adm("mid", "standalone", 2, 0), adm("high", "standalone", 2, 1)],
        incoming(3, 1),
        "standalone",
        {icq("low", SA), icq("mid", SA)},
    ),
    "no preemption for low priority": Case(
        [adm("low", "standalone", 3, -1), adm("mid", "standalone", 3, 0)],
        incoming(1, -1),
        "standalone",
        set(),
    ),
    "not enough low priority workloads": Case(
        [adm("low", "standalone", 3, -1), adm("mid", "standalone", 3, 0)],
        incoming(4, 0),
        "standalone",
        set(),
    ),
    "some free quota, preempt low priority": Case(
        [adm("low", "standalone", 1, -1), adm("mid", "standalone", 1, 0), adm("high", "standalone", 3, 1)],
        incoming(2, 1),
        "standalone",
        {icq("low", SA)},
    ),
    "minimal set excludes low priority": Case(
        [adm("low", "standalone", 1, -1), adm("mid", "standalone", 2, 0), adm("high", "standalone", 3, 1)],
        incoming(2, 1),
        "standalone",
        {icq("mid", SA)},
    ),
    "only preempt workloads using the chosen flavor": Case(
        [
            mem_adm("low", "standalone", "2Gi", "alpha", -1),
            mem_adm("mid", "standalone", "1Gi", "beta", 0),
            mem_adm("high", "standalone", "1Gi", "beta", 1),
        ],
        incoming(1, 1, memory="2Gi"),
        "standalone",
        {icq("mid", SA)},
        flavors={"cpu": "default", "memory": "beta"},
        modes={"cpu": Mode.FIT},
    ),
    "reclaim quota from borrower": Case(
        [adm("c1-low", "c1", 3, -1), adm("c2-mid", "c2", 3, 0), adm("c2-high", "c2", 6, 1)],
        incoming(3, 1),
        "c1",
        {rec("c2-mid", C1, C2)},
    ),
    "reclaim quota if workload requests 0 resources for a resource at nominal quota": Case(
        [adm("c1-low", "c1", 3, -1, memory="3Gi"), adm("c2-mid", "c2", 3, 0), adm("c2-high", "c2", 6, 1)],
        incoming(3, 1, memory="0"),
        "c1",
        {rec("c2-mid", C1, C2)},
        flavors=_CPU_MEM,
        modes={"memory": Mode.FIT},
    ),
    "no workloads borrowing": Case(
        [adm("c1-high", "c1", 4, 1), adm("c2-low-1", "c2", 4, -1)],
        incoming(4, 1),
        "c1",
        set(),
    ),
    "not enough workloads borrowing": Case(
        [adm("c1-high", "c1", 4, 1), adm("c2-low-1", "c2", 4, -1), adm("c2-low-2", "c2", 4, -1)],
        incoming(4, 1),
        "c1",
        set(),
    ),
    "preempting locally and borrowing other resources in cohort, without cohort candidates": Case(
        [adm("c1-low", "c1", 4, -1), adm("c2-low-1", "c2", 4, -1), adm("c2-high-2", "c2", 4, 1)],
        incoming(4, 1, memory="5Gi"),
        "c1",
        {icq("c1-low", C1)},
        flavors=_CPU_MEM,
    ),
    "preempting locally and borrowing same resource in cohort": Case(
        [adm("c1-med", "c1", 4, 0), adm("c1-low", "c1", 4, -1), adm("c2-low-1", "c2", 4, -1)],
        incoming(4, 1),
        "c1",
        {icq("c1-low", C1)},
    ),
    "preempting locally and borrowing same resource in cohort; no borrowing limit in the cohort": Case(
        [adm("d1-med", "d1", 4, 0), adm("d1-low", "d1", 4, -1), adm("d2-low-1", "d2", 4, -1)],
        incoming(4, 1),
        "d1",
        {icq("d1-low", "/cohort-no-limits/d1")},
    ),
    "preempting locally and borrowing other resources in cohort, with cohort candidates": Case(
        [
            adm("c1-med", "c1", 4, 0),
            adm("c2-low-1", "c2", 5, -1),
            adm("c2-low-2", "c2", 1, -1),
            adm("c2-low-3", "c2", 1, -1),
        ],
        incoming(2, 1, memory="5Gi"),
        "c1",
        {icq("c1-med", C1)},
        flavors=_CPU_MEM,
    ),
    "preempting locally and not borrowing same resource in 1-queue cohort": Case(
        [adm("l1-med", "l1", 4, 0), adm("l1-low", "l1", 2, -1)],
        incoming(4, 1),
        "l1",
        {icq("l1-med", "/legion/l1")},
    ),
    "do not reclaim borrowed quota from same priority for withinCohort=ReclaimFromLowerPriority": Case(
        [adm("c1", "c1", 2, 0), adm("c2-1", "c2", 4, 0), adm("c2-2", "c2", 4, 0)],
        incoming(4, 0),
        "c1",
        set(),
    ),
    "reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny": Case(
        [adm("c1-1", "c1", 4, 0), adm("c1-2", "c1", 4, 1), adm("c2", "c2", 2, 0)],
        incoming(4, 0),
        "c2",
        {rec("c1-1", C2, C1)},
    ),
    "preempt from all ClusterQueues in cohort": Case(
        [
            adm("c1-low", "c1", 3, -1),
            adm("c1-mid", "c1", 2, 0),
            adm("c2-low", "c2", 3, -1),
            adm("c2-mid", "c2", 4, 0),
        ],
        incoming(4, 0),
        "c1",
        {icq("c1-low", C1), rec("c2-low", C1, C2)},
    ),
    "can't preempt workloads in ClusterQueue for withinClusterQueue=Never": Case(
        [adm("c2-low", "c2", 3, -1)],
        incoming(4, 1),
        "c2",
        set(),
    ),
    "each podset preempts a different flavor": Case(
        [mem_adm("low-alpha", "standalone", "2Gi", "alpha", -1), mem_adm("low-beta", "standalone", "2Gi", "beta", -1)],
        multi_incoming([pod_set("launcher", 1, {"memory": "2Gi"}), pod_set("workers", 2, {"memory": "1Gi"})]),
        "standalone",
        {icq("low-alpha", SA), icq("low-beta", SA)},
        flavors=[{"memory": "alpha"}, {"memory": "beta"}],
    ),
    "preempt newer workloads with the same priority": Case(
        [
            adm("wl1", "preventStarvation", 2, 2),
            adm("wl2", "preventStarvation", 2, 1, reserved=1),
            adm("wl3", "preventStarvation", 2, 1),
        ],
        incoming(2, 1, created=-15),
        "preventStarvation",
        {icq("wl2", "/preventStarvation")},
    ),
    "use BorrowWithinCohort; allow preempting a lower-priority workload from another ClusterQueue while borrowing": Case(
        [adm("a_best_effort_low", "a_best_effort", 10, -1), adm("b_best_effort_low", "b_best_effort", 1, -1)],
        incoming(10, 0),
        "a_standard",
        {rwb("a_best_effort_low", WS + "a_standard", WS + "a_best_effort")},
    ),
    "use BorrowWithinCohort; don't allow preempting a lower-priority workload with priority above MaxPriorityThreshold, if borrowing is required even after the preemption": Case(
        [adm("b_standard", "b_standard", 10, 1)],
        incoming(10, 2),
        "a_standard",
        set(),
    ),
    "use BorrowWithinCohort; allow preempting a lower-priority workload with priority above MaxPriorityThreshold, if borrowing is not required after the preemption": Case(
        [adm("b_standard", "b_standard", 13, 1)],
        incoming(1, 2),
        "a_standard",
        {rec("b_standard", WS + "a_standard", WS + "b_standard")},
    ),
    "use BorrowWithinCohort; don't allow for preemption of lower-priority workload from the same ClusterQueue": Case(
        [adm("a_standard", "a_standard", 13, 1)],
        incoming(1, 2),
        "a_standard",
        set(),
    ),
    "use BorrowWithinCohort; only preempt from CQ if no workloads below threshold and already above nominal": Case(
        [
            adm("a_standard_1", "a_standard", 10, 1),
            adm("a_standard_2", "a_standard", 1, 1),
            adm("b_standard_1", "b_standard", 1, 1),
            adm("b_standard_2", "b_standard", 1, 2),
        ],
        incoming(1, 3),
        "b_standard",
        {icq("b_standard_1", WS + "b_standard")},
    ),
    "use BorrowWithinCohort; preempt from CQ and from other CQs with workloads below threshold": Case(
        [
            adm("b_standard_high", "b_standard", 10, 2),
            adm("b_standard_mid", "b_standard", 1, 1),
            adm("a_best_effort_low", "a_best_effort", 1, -1),
            adm("a_best_effort_lower", "a_best_effort", 1, -2),
        ],
        incoming(2, 2),
        "b_standard",
        {icq("b_standard_mid", WS + "b_standard"), rwb("a_best_effort_lower", WS + "b_standard", WS + "a_best_effort")},
    ),
    "reclaim quota from lender": Case(
        [adm("lend1-low", "lend1", 3, -1), adm("lend2-mid", "lend2", 3, 0), adm("lend2-high", "lend2", 4, 1)],
        incoming(3, 1),
        "lend1",
        {rec("lend2-mid", L1, L2)},
    ),
    "preempt from all ClusterQueues in cohort-lend": Case(
        [
            adm("lend1-low", "lend1", 3, -1),
            adm("lend1-mid", "lend1", 2, 0),
            adm("lend2-low", "lend2", 3, -1),
            adm("lend2-mid", "lend2", 4, 0),
        ],
        incoming(4, 0),
        "lend1",
        {icq("lend1-low", L1), rec("lend2-low", L1, L2)},
    ),
    "cannot preempt from other ClusterQueues if exceeds requestable quota including lending limit": Case(
        [adm("lend2-low", "lend2", 10, -1)],
        incoming(9, 0),
        "lend1",
        set(),
    ),
    "preemptions from cq when target queue is exhausted for the single requested resource": Case(
        _three(False, _EXHAUSTED),
        incoming(2, 0),
        "a",
        {icq("a1", CA), icq("a2", CA)},
    ),
    "preemptions from cq when target queue is exhausted for two requested resources": Case(
        _three(True, _EXHAUSTED),
        incoming(2, 0, memory="2"),
        "a",
        {icq("a1", CA), icq("a2", CA)},
        flavors=_CPU_MEM,
    ),
    "preemptions from cq when target queue is exhausted for one requested resource, but not the other": Case(
        _three(False, _EXHAUSTED),
        incoming(2, 0, memory="2"),
        "a",
        {icq("a1", CA), icq("a2", CA)},
        flavors=_CPU_MEM,
    ),
    "allow preemption from other cluster queues if target cq is not exhausted for the requested resource": Case(
        _three(
            False,
            [("a1", "a", -1), ("b1", "b", 0), ("b2", "b", 0), ("b3", "b", 0), ("b4", "b", 0), ("b5", "b", -1)],
        ),
        incoming(2, 0),
        "a",
        {icq("a1", CA), rec("b5", CA, CB)},
    ),
    "long range preemption": Case(
        [adm("to-be-preempted", "cq-right", 5, 0)],
        incoming(8, 0),
        "cq-left",
        {rec("to-be-preempted", "/root/cohort-left/cq-left", "/root/cohort-right/cq-right")},
        objs=[
            cluster_queue("cq-left", flavor_quotas("default", cpu=10), cohort="cohort-left", preemption=_pre(reclaim=ANY)),
            cluster_queue("cq-right", flavor_quotas("default", cpu=0), cohort="cohort-right"),
            cohort("cohort-left", parent="root"),
            cohort("cohort-right", parent="root"),
        ],
    ),
}


@pytest.mark.parametrize("name", list(PREEMPTION_CASES))
def test_preemption(name: str) -> None:
    case = PREEMPTION_CASES[name]
    cqs = default_cqs() if case.objs is None else case.objs
    targets, _ = run_targets([*cqs, *case.admitted], case.incoming, case.cq, case.flavors, case.modes)
    assert got_paths(targets) == case.want


# --- worked examples H, I, J -----------------------------------------------------------------------


def test_worked_example_h_minimal_set_in_one_cq() -> None:
    q = cluster_queue("q", flavor_quotas("default", cpu=6), preemption=_pre(within=LP))
    wls = [adm("w1", "q", 3, 1, reserved=1), adm("w2", "q", 1, 1, reserved=2), adm("w3", "q", 2, 3)]
    targets, _ = run_targets([q, *wls], incoming(3, 2), "q")
    assert got(targets) == {"w1:InClusterQueue"}


def _example_i_cqs() -> list[ClusterQueue]:
    pre = {
        "within_cluster_queue": NEVER,
        "reclaim_within_cohort": LP,
        "borrow_within_cohort": LP,
        "max_priority_threshold": 0,
    }
    return [
        cluster_queue(
            "a", flavor_quotas("default", cpu=Q(1, borrowing_limit=12)), cohort="all", preemption=pre
        ),
        cluster_queue(
            "b", flavor_quotas("default", cpu=Q(1, borrowing_limit=12)), cohort="all", preemption=pre
        ),
        cluster_queue(
            "c", flavor_quotas("default", cpu=Q(1, borrowing_limit=12)), cohort="all", preemption=pre
        ),
        cluster_queue(
            "d", flavor_quotas("default", cpu=Q(0, borrowing_limit=13)), cohort="all", preemption=pre
        ),
        cluster_queue("shared", flavor_quotas("default", cpu=10), cohort="all"),
    ]


@pytest.mark.parametrize(
    ("b_cpu", "in_cpu", "want"),
    [
        pytest.param(10, 10, set(), id="borrowing required after preemption: no preemption"),
        pytest.param(13, 1, {"b1:InCohortReclamation"}, id="fits nominal after preemption"),
    ],
)
def test_worked_example_i_max_priority_threshold(b_cpu: int, in_cpu: int, want: set[str]) -> None:
    targets, _ = run_targets([*_example_i_cqs(), adm("b1", "b", b_cpu, 1)], incoming(in_cpu, 2), "a")
    assert got(targets) == want


def _example_j_objects() -> list[object]:
    pre = _pre(within=LP, reclaim=ANY)
    return [
        cohort("r"),
        cohort("c", flavor_quotas("default", cpu=2), parent="r"),
        cluster_queue("q", flavor_quotas("default"), cohort="c", preemption=pre),
        cluster_queue("q_borrowing", flavor_quotas("default"), cohort="r", preemption=pre),
        adm("admitted2", "q_borrowing", 2, 0),
    ]


def test_worked_example_j_hierarchical_advantage_and_message() -> None:
    targets, cache = run_targets(_example_j_objects(), incoming(2, 0), "q")
    assert got(targets) == {"admitted2:InCohortReclamation"}
    t = targets[0]
    assert t.preemptor_path == "/r/c/q"
    assert t.preemptee_path == "/r/q_borrowing"
    assert cq_path(cache.cluster_queues["q"].node) == "/r/c/q"
    preemptor = info(incoming(2, 0))
    assert preemption_message(preemptor, t.reason, t.preemptor_path, t.preemptee_path) == (
        "Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the "
        "cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing"
    )


# --- hierarchical cases (upstream TestHierarchicalPreemptions) -------------------------------------

_HPRE = _pre(within=LP, reclaim=ANY)
_HPRE_BWC = _pre(LP, ANY, bwc=LP, threshold=0)


def _hcq(name: str, parent: str, pre: dict[str, object] | None = None, cpu: int | None = None) -> ClusterQueue:
    """A ClusterQueue of upstream's hierarchical cases: flavor ``default`` (no quota unless ``cpu``)."""
    quotas = flavor_quotas("default") if cpu is None else flavor_quotas("default", cpu=cpu)
    return cluster_queue(name, quotas, cohort=parent, preemption=pre or _HPRE)


def _r_c(c_cpu: int, r_cpu: int | None = None) -> list[object]:
    """Root cohort ``r`` (quota ``r_cpu`` if given) and its child ``c`` with ``c_cpu``."""
    r = cohort("r") if r_cpu is None else cohort("r", flavor_quotas("default", cpu=r_cpu))
    return [r, cohort("c", flavor_quotas("default", cpu=c_cpu), parent="r")]


def _with_usage(wl: Workload, **usage: str) -> Workload:
    """``wl`` whose admission charges ``usage`` instead of its requests."""
    assert wl.status.admission is not None
    wl.status.admission.pod_set_assignments[0].resource_usage.update(usage)
    return wl


Q_PATH, QB_PATH, QS_PATH = "/r/c/q", "/r/q_borrowing", "/r/c/q_same_cohort"


@dataclass
class HCase:
    objs: list[object]
    incoming: Workload
    want: set[str]
    flavors: dict[str, str] = field(default_factory=lambda: {"cpu": "default"})


HIERARCHICAL_CASES: dict[str, HCase] = {
    "preempt multiple with hierarchical advantage": HCase(
        [
            *_r_c(2),
            _hcq("q", "c"),
            _hcq("q_borrowing", "r"),
            adm("admitted1", "q_borrowing", 1, 1),
            adm("admitted2", "q_borrowing", 1, 2),
        ],
        incoming(2, 0),
        {rec("admitted1", Q_PATH, QB_PATH), rec("admitted2", Q_PATH, QB_PATH)},
    ),
    "preempt in cohort and own CQ": HCase(
        [
            *_r_c(3),
            _hcq("q", "c", _HPRE_BWC),
            _hcq("q_same_cohort", "c"),
            adm("admitted_not_preemptible", "q_same_cohort", 1, 1),
            _with_usage(adm("admitted_preemptible", "q_same_cohort", 1, 0), cpu="2"),
            adm("admitted_own_queue", "q", 1, -1),
        ],
        incoming(2, 1),
        {icq("admitted_own_queue", Q_PATH), rwb("admitted_preemptible", Q_PATH, QS_PATH)},
    ),
    "prefer to preempt hierarchical candidate": HCase(
        [
            *_r_c(2),
            _hcq("q", "c"),
            _hcq("q_borrowing", "r"),
            adm("admitted_borrowing", "q_borrowing", 1, 1),
            adm("admitted_same_queue", "q", 1, -2),
        ],
        incoming(1, 0),
        {rec("admitted_borrowing", Q_PATH, QB_PATH)},
    ),
    "forced to preempt priority candidate": HCase(
        [
            *_r_c(2),
            _hcq("q", "c", _HPRE_BWC),
            _hcq("q_nominal", "r", cpu=2),
            _hcq("q_same_cohort", "c"),
            adm("admitted_nominal", "q_nominal", 2, -10),
            adm("admitted_same_cohort", "q_same_cohort", 2, -1),
        ],
        incoming(2, 0),
        {rwb("admitted_same_cohort", Q_PATH, QS_PATH)},
    ),
    "incoming workload fits in CQ nominal quota": HCase(
        [
            *_r_c(2),
            _hcq("q", "c", cpu=4),
            _hcq("q_borrowing", "r"),
            _hcq("q_same_cohort", "c"),
            adm("admitted_borrowing", "q_borrowing", 3, 10),
            adm("admitted_same_cohort", "q_same_cohort", 3, 10),
        ],
        incoming(4, 0),
        {rec("admitted_borrowing", Q_PATH, QB_PATH), rec("admitted_same_cohort", Q_PATH, QS_PATH)},
    ),
    "preempt hierarchical and priority candidates": HCase(
        [
            *_r_c(4, r_cpu=1),
            _hcq("q", "c", _pre(LP, LP, bwc=LP, threshold=0)),
            _hcq("q_borrowing", "r"),
            _hcq("q_same_cohort", "c"),
            adm("admitted_borrowing", "q_borrowing", 2, -1),
            adm("admitted_same_cohort_preemptible", "q_same_cohort", 1, -1),
            adm("admitted_borrowing_not_preemptible", "q_borrowing", 2, 1),
        ],
        incoming(3, 0),
        {rec("admitted_borrowing", Q_PATH, QB_PATH), rwb("admitted_same_cohort_preemptible", Q_PATH, QS_PATH)},
    ),
    "preempt hierarchical candidates and inside CQ": HCase(
        [
            *_r_c(4, r_cpu=1),
            _hcq("q", "c", _pre(LP, LP, bwc=LP, threshold=0)),
            _hcq("q_borrowing", "r"),
            _hcq("q_same_cohort", "c"),
            adm("admitted_borrowing", "q_borrowing", 2, -1),
            adm("admitted_same_queue_preemptible", "q", 1, -1),
            adm("admitted_borrowing_not_preemptible", "q_borrowing", 2, 1),
        ],
        incoming(3, 0),
        {rec("admitted_borrowing", Q_PATH, QB_PATH), icq("admitted_same_queue_preemptible", Q_PATH)},
    ),
    "reclaim nominal quota from lowest priority workload, excluding non-borrowing": HCase(
        [
            *_r_c(3),
            _hcq("q", "c"),
            _hcq("q_borrowing", "r"),
            _hcq("q_nominal", "r", cpu=2),
            adm("admitted_borrowing_prio_8", "q_borrowing", 1, 8),
            adm("admitted_borrowing_prio_9", "q_borrowing", 1, 9),
            adm("admitted_borrowing_prio_10", "q_borrowing", 1, 9),
            adm("admitted_nominal", "q_nominal", 2, -2),
        ],
        incoming(1, 0),
        {rec("admitted_borrowing_prio_8", Q_PATH, QB_PATH)},
    ),
    "infeasible preemption all available workloads in pruned subtrees": HCase(
        [
            *_r_c(2),
            cohort("c_other", flavor_quotas("default", cpu=2), parent="r"),
            _hcq("q_other", "c_other"),
            _hcq("q", "c"),
            _hcq("q_same_cohort", "c"),
            adm("admitted_other_1", "q_other", 1, -10),
            adm("admitted_other_2", "q_other", 1, -10),
            adm("admitted_same_cohort", "q_same_cohort", 2, 0),
        ],
        incoming(2, 0),
        set(),
    ),
    "hiearchical preemption with multiple resources": HCase(
        [
            cohort("r", flavor_quotas("default", cpu=3)),
            cohort("c", flavor_quotas("default", cpu=4, memory="4Gi"), parent="r"),
            _hcq("q", "c"),
            _hcq("q_borrowing", "r"),
            _hcq("q_same_cohort", "c"),
            adm("admitted_borrowing", "q_borrowing", 3, 0, memory="1Gi"),
            adm("admitted_same_cohort", "q_same_cohort", 1, -2, memory="3Gi"),
        ],
        incoming(2, -2, memory="1Gi"),
        {rec("admitted_borrowing", Q_PATH, QB_PATH)},
        flavors={"cpu": "default", "memory": "default"},
    ),
}


@pytest.mark.parametrize("name", list(HIERARCHICAL_CASES))
def test_hierarchical_preemptions(name: str) -> None:
    case = HIERARCHICAL_CASES[name]
    targets, _ = run_targets(case.objs, case.incoming, "q", case.flavors)
    assert got_paths(targets) == case.want


def test_avoid_queues_within_nominal_quota() -> None:
    pre = _pre(within=LP, reclaim=ANY)
    objs = [
        cohort("r"),
        cohort("c", flavor_quotas("default", cpu=2), parent="r"),
        cluster_queue("q_nominal", flavor_quotas("default", cpu=2), cohort="r", preemption=pre),
        cluster_queue("q", flavor_quotas("default"), cohort="c", preemption=pre),
        cluster_queue("q_borrowing", flavor_quotas("default"), cohort="r", preemption=pre),
        adm("admitted1", "q_nominal", 2, -10),
        adm("admitted2", "q_borrowing", 2, 0),
    ]
    targets, _ = run_targets(objs, incoming(2, 0), "q")
    assert got(targets) == {"admitted2:InCohortReclamation"}


def test_prefer_to_preempt_evicted_workloads() -> None:
    pre = _pre(within=LP, reclaim=ANY)
    evicted = adm("evicted_same_cohort", "q_same_cohort", 1, -1)
    evicted.status.conditions.append(Condition(type="Evicted", status="True", reason="Preempted", message="", last_transition_time=T0))
    objs = [
        cohort("r"),
        cohort("c", flavor_quotas("default", cpu=2), parent="r"),
        cluster_queue(
            "q", flavor_quotas("default"), cohort="c", preemption=_pre(LP, ANY, bwc=LP, threshold=0)
        ),
        cluster_queue("q_borrowing", flavor_quotas("default"), cohort="r", preemption=pre),
        cluster_queue("q_same_cohort", flavor_quotas("default"), cohort="c", preemption=pre),
        adm("admitted_borrowing", "q_borrowing", 1, -10),
        evicted,
    ]
    targets, _ = run_targets(objs, incoming(1, 0), "q")
    assert {t.workload.name for t in targets} == {"evicted_same_cohort"}


def test_respect_lending_limits() -> None:
    pre = _pre(within=LP, reclaim=ANY)
    objs = [
        cohort("r"),
        cohort("c", flavor_quotas("default", cpu=2), parent="r"),
        cluster_queue("q", flavor_quotas("default", cpu=Q(3, lending_limit=2)), cohort="c", preemption=pre),
        cluster_queue("q_borrowing", flavor_quotas("default"), cohort="r", preemption=pre),
        adm("admitted_borrowing", "q_borrowing", 4, 0),
    ]
    targets, _ = run_targets(objs, incoming(5, -2), "q")
    assert got(targets) == {"admitted_borrowing:InCohortReclamation"}


def test_reclaim_in_complex_hierarchy() -> None:
    pre = _pre(within=LP, reclaim=ANY)
    four = flavor_quotas("default", cpu=4)
    objs: list[object] = [
        cohort("r"),
        cohort("c11", four, parent="r"),
        cohort("c12", four, parent="r"),
        cohort("c21", four, parent="c11"),
        cohort("c22", four, parent="c11"),
        cohort("c23", four, parent="c11"),
        cohort("c31", four, parent="c21"),
        cohort("c32", four, parent="c21"),
    ]
    for name, parent in (("q1", "c12"), ("q2", "c23"), ("q3", "c22"), ("q4", "c32"), ("q5", "c31")):
        objs.append(cluster_queue(name, flavor_quotas("default"), cohort=parent, preemption=pre))
    objs += [
        adm("admitted_borrowing_1", "q1", 4, -6),
        adm("admitted_borrowing_2", "q1", 4, -5),
        adm("admitted_borrowing_3", "q2", 4, -9),
        adm("admitted_borrowing_4", "q2", 4, -10),
        adm("admitted_borrowing_5", "q3", 4, -4),
        adm("admitted_borrowing_6", "q3", 3, -3),
        adm("admitted_borrowing_7", "q4", 2, 4),
        adm("admitted_borrowing_8", "q4", 3, 2),
    ]
    targets, _ = run_targets(objs, incoming(7, -2), "q5")
    assert got(targets) == {
        "admitted_borrowing_1:InCohortReclamation",
        "admitted_borrowing_4:InCohortReclamation",
    }
    by_name = {t.workload.name: t for t in targets}
    assert by_name["admitted_borrowing_1"].preemptor_path == "/r/c11/c21/c31/q5"
    assert by_name["admitted_borrowing_1"].preemptee_path == "/r/c12/q1"
    assert by_name["admitted_borrowing_4"].preemptee_path == "/r/c11/c23/q2"


# --- ordering and policies (upstream ``CandidatesOrdering``, ``SatisfiesPreemptionPolicy``) --------


def _reserved(name: str, cq: str, prio: int, when: float, uid: str | None = None) -> WorkloadInfo:
    return info(admitted(workload(name, priority=prio, uid=uid), cq, {"cpu": "default"}, at_time=at(when)))


def test_candidates_ordering() -> None:
    evicted = workload("evicted")
    evicted.status.conditions.append(Condition(type="Evicted", status="True", reason="Preempted", message="", last_transition_time=at(0)))
    candidates = [
        _reserved("high", "self", 10, 0),
        _reserved("low", "self", -10, 0),
        _reserved("other", "other", 10, 0),
        info(evicted),
        _reserved("old-a", "self", 0, 0, uid="old-a"),
        _reserved("old-b", "self", 0, 0, uid="old-b"),
        _reserved("current", "self", 0, 1),
    ]
    sort_candidates(candidates, "self", at(0).timestamp())
    assert [c.name for c in candidates] == ["evicted", "other", "low", "current", "old-a", "old-b", "high"]


def test_candidates_ordering_admission_fair_sharing_hook() -> None:
    low = info(admitted(workload("low_lq_usage", priority=1, queue="low"), "preemptor", {"cpu": "default"}, at_time=at(0)))
    mid = info(admitted(workload("mid_lq_usage", priority=10, queue="mid"), "preemptor", {"cpu": "default"}, at_time=at(0)))
    usage = {"default/low": 0.1, "default/mid": 0.5}
    now = at(0).timestamp()
    assert compare_candidates(low, mid, "preemptor", now) < 0
    assert compare_candidates(low, mid, "preemptor", now, lambda w: usage[w.local_queue]) > 0
    # ``resourceUsagePreemptionEnabled`` compares queue names, not namespaces: the same queue name
    # in another namespace is not compared by usage.
    other_ns = info(
        admitted(workload("other_ns", "team-b", priority=10, queue="low"), "preemptor", {"cpu": "default"}, at_time=at(0))
    )
    usage["team-b/low"] = 0.9
    assert compare_candidates(low, other_ns, "preemptor", now, lambda w: usage[w.local_queue]) < 0


# Upstream ``TestCandidatesOrdering`` (preemption_test.go): sorting with ``CandidatesOrdering`` for a
# preemptor in ClusterQueue "preemptor" at time 0.

_BOOST_ON = options(gates={"PriorityBoost": True})


def _cand(
    name: str,
    prio: int = 0,
    when: float = 0,
    cq: str = "preemptor",
    *,
    boost: str | None = None,
    queue: str = "lq",
    opts: SchedulerOptions | None = None,
) -> WorkloadInfo:
    """A candidate reserved in ``cq`` at ``when`` (``ReserveQuotaAt``), optionally boosted."""
    annotations = {PRIORITY_BOOST_ANNOTATION: boost} if boost is not None else None
    wl = workload(name, priority=prio, queue=queue, annotations=annotations)
    return info(admitted(wl, cq, {"cpu": "default"}, at_time=at(when)), opts)


def _evicted_unreserved(name: str) -> WorkloadInfo:
    wl = workload(name, priority=None)
    wl.status.conditions.append(
        Condition(type="Evicted", status="True", reason="", message="", last_transition_time=at(0))
    )
    return info(wl)


_LQ_USAGE = {"low_usage_lq": 0.1, "mid_usage_lq": 0.5, "high_usage_lq_different_cq": 1.0}


def _afs_cands() -> dict[str, WorkloadInfo]:
    return {
        "low": _cand("low_lq_usage", 1, queue="low_usage_lq"),
        "mid": _cand("mid_lq_usage", 10, queue="mid_usage_lq"),
        "high_dif_cq": _cand("high_lq_usage_different_cq", 1, cq="different_cq", queue="high_usage_lq_different_cq"),
    }


ORDERING_CASES: dict[str, tuple[Callable[[], list[WorkloadInfo]], list[str], bool]] = {
    "workloads sorted by priority": (lambda: [_cand("high", 10), _cand("low", -10)], ["low", "high"], False),
    "workloads sorted by effective priority with boost": (
        lambda: [_cand("high-boost", 10, boost="100", opts=_BOOST_ON), _cand("low-boost", 10, boost="5", opts=_BOOST_ON)],
        ["low-boost", "high-boost"],
        False,
    ),
    "workload missing priority boost defaults to zero": (
        lambda: [_cand("missing-boost", 10, opts=_BOOST_ON), _cand("has-boost", 10, boost="5", opts=_BOOST_ON)],
        ["missing-boost", "has-boost"],
        False,
    ),
    "invalid priority boost defaults to zero": (
        lambda: [
            _cand("invalid-boost", 10, boost="invalid", opts=_BOOST_ON),
            _cand("valid-boost", 10, boost="5", opts=_BOOST_ON),
        ],
        ["invalid-boost", "valid-boost"],
        False,
    ),
    "evicted workload first": (lambda: [_cand("other", 10), _evicted_unreserved("evicted")], ["evicted", "other"], False),
    "workload from different CQ first": (
        lambda: [_cand("preemptorCq", 10), _cand("other", 10, cq="other")],
        ["other", "preemptorCq"],
        False,
    ),
    "old workloads last": (
        lambda: [_cand("older", when=-1), _cand("younger", when=1), _cand("current")],
        ["younger", "current", "older"],
        False,
    ),
    "workloads with higher LQ usage first": (
        lambda: [_afs_cands()["low"], _afs_cands()["mid"]],
        ["mid_lq_usage", "low_lq_usage"],
        True,
    ),
    "workloads from different CQ are sorted based on priority and timestamp": (
        lambda: [_afs_cands()["mid"], _afs_cands()["high_dif_cq"]],
        ["high_lq_usage_different_cq", "mid_lq_usage"],
        True,
    ),
}


@pytest.mark.parametrize("name", list(ORDERING_CASES))
def test_candidates_ordering_upstream(name: str) -> None:
    build_candidates, want, afs = ORDERING_CASES[name]
    candidates = build_candidates()
    lq_usage = (lambda w: _LQ_USAGE.get(w.local_queue.removeprefix("default/"))) if afs else None
    sort_candidates(candidates, "preemptor", at(0).timestamp(), lq_usage)
    assert [c.name for c in candidates] == want


@pytest.mark.parametrize(
    ("policy", "preemptor_prio", "preemptor_ts", "candidate_prio", "candidate_ts", "want"),
    [
        pytest.param(NEVER, 10, 0, 0, 0, False, id="Never"),
        pytest.param(ANY, 0, 0, 10, 0, True, id="Any"),
        pytest.param(LP, 1, 0, 0, 0, True, id="LowerPriority: lower"),
        pytest.param(LP, 1, 0, 1, 0, False, id="LowerPriority: equal"),
        pytest.param(LP, 1, 0, 2, 0, False, id="LowerPriority: higher"),
        pytest.param(LONEP, 1, 0, 0, 0, True, id="LowerOrNewerEqualPriority: lower"),
        pytest.param(LONEP, 1, 0, 1, 5, True, id="LowerOrNewerEqualPriority: equal and newer"),
        pytest.param(LONEP, 1, 5, 1, 5, False, id="LowerOrNewerEqualPriority: equal and same time"),
        pytest.param(LONEP, 1, 5, 1, 0, False, id="LowerOrNewerEqualPriority: equal and older"),
        pytest.param(LONEP, 1, 0, 2, 5, False, id="LowerOrNewerEqualPriority: higher"),
    ],
)
def test_satisfies_preemption_policy(
    policy: str,
    preemptor_prio: int,
    preemptor_ts: float,
    candidate_prio: int,
    candidate_ts: float,
    want: bool,
) -> None:
    preemptor = info(workload("p", priority=preemptor_prio, created=at(preemptor_ts)))
    candidate = info(workload("c", priority=candidate_prio, created=at(candidate_ts)))
    assert satisfies_preemption_policy(preemptor, candidate, policy) is want


# --- oracle (upstream ``PreemptionOracle.SimulatePreemption``) ------------------------------------


def test_oracle_preempt_reclaim_and_no_candidates() -> None:
    cache, snap = build(
        [
            flavor("default"),
            *default_cqs(),
            adm("low", "standalone", 2, -1),
            adm("mid", "standalone", 2, 0),
            adm("high", "standalone", 2, 1),
            adm("c2-mid", "c2", 3, 0),
            adm("c2-high", "c2", 6, 1),
            adm("c1-low", "c1", 3, -1),
        ]
    )
    before = usage_state(cache)
    oracle = Preemptor(options(), clock=NOW.timestamp).make_oracle(snap)
    p = info(incoming(2, 1))
    assert oracle(cache.cluster_queues["standalone"], p, CPU, 2000) == (PreemptionMode.PREEMPT, 0)
    # c1 uses 3 of 6: reclaiming 3 from the borrowing c2 leaves c1 within nominal.
    assert oracle(cache.cluster_queues["c1"], p, CPU, 3000)[0] is PreemptionMode.RECLAIM
    # Nothing lower than priority 1 can free 6 cpu in standalone.
    mode, level = oracle(cache.cluster_queues["standalone"], info(incoming(6, -5)), CPU, 6000)
    assert (mode, level) == (PreemptionMode.NO_CANDIDATES, 0)
    assert usage_state(cache) == before


def test_oracle_borrowing_level_after_reclaim() -> None:
    """The level is computed with every target's usage released from its own ClusterQueue."""
    cache, snap = build(
        [
            flavor("default"),
            *default_cqs(),
            adm("a_best_effort_low", "a_best_effort", 10, -1),
            adm("b_best_effort_low", "b_best_effort", 1, -1),
        ]
    )
    oracle = Preemptor(options(), clock=NOW.timestamp).make_oracle(snap)
    assert oracle(cache.cluster_queues["a_standard"], info(incoming(10, 0)), CPU, 10000) == (
        PreemptionMode.RECLAIM,
        1,
    )


# --- eviction write and events (upstream ``IssuePreemptions``) -------------------------------------


def test_apply_eviction_for_preemption() -> None:
    victim_obj = adm("admitted2", "q_borrowing", 2, 3)
    victim_obj.metadata.generation = 4
    victim_obj.status.admission_checks = [
        AdmissionCheckState("ready", CHECK_READY, at(0), "ok"),
        AdmissionCheckState("retry", CHECK_RETRY, at(0), "again", requeue_after_seconds=30, retry_count=2),
        AdmissionCheckState("pending", CHECK_PENDING, at(0), "wait"),
    ]
    victim_obj.status.conditions.append(
        Condition(
            type="BlockedOnPreemptionGates", status="True", reason="PreemptionGated", message="", last_transition_time=at(0)
        )
    )
    victim_obj.status.cluster_name = "worker"
    victim_obj.status.nominated_cluster_names = ["worker"]
    victim = info(victim_obj)
    preemptor = info(incoming(2, 5))
    target = Target(victim, IN_COHORT_RECLAMATION, "/r/c/q", "/r/q_borrowing")
    events = apply_eviction_for_preemption(victim_obj, preemptor, target, NOW)

    msg = (
        "Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the "
        "cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing"
    )
    st = victim_obj.status
    evicted = find_condition(st.conditions, "Evicted")
    preempted = find_condition(st.conditions, "Preempted")
    assert evicted == Condition(type="Evicted", status="True", reason="Preempted", message=msg, last_transition_time=NOW, observed_generation=4)
    assert preempted == Condition(type="Preempted", status="True", reason=IN_COHORT_RECLAMATION, message=msg, last_transition_time=NOW, observed_generation=0)
    blocked = find_condition(st.conditions, "BlockedOnPreemptionGates")
    assert blocked is not None and blocked.status == "False" and blocked.reason == "Preempted"
    assert st.cluster_name is None and st.nominated_cluster_names == []
    checks = {c.name: c for c in st.admission_checks}
    assert checks["ready"].state == CHECK_PENDING
    assert checks["ready"].message == "Reset to Pending after eviction. Previously: Ready"
    assert checks["ready"].retry_count is None
    assert checks["retry"].retry_count == 3 and checks["retry"].requeue_after_seconds == 30
    assert checks["pending"].message == "wait"
    assert st.scheduling_stats is not None
    assert [(e.reason, e.count) for e in st.scheduling_stats.evictions] == [("Preempted", 1)]

    prios = "; preemptor effective priority: 5 (base: 5, boost: 0); preemptee effective priority: 3 (base: 3, boost: 0)"
    assert [(e.namespace, e.name, e.type, e.reason, e.note) for e in events] == [
        ("default", "admitted2", "Normal", "EvictedDueToPreempted", msg),
        ("default", "admitted2", "Normal", "Preempted", msg + prios),
        (
            "default",
            "in",
            "Normal",
            "PreemptedWorkload",
            "Preempted workload default/admitted2 (UID: uid-default-admitted2) in ClusterQueue q_borrowing"
            + prios,
        ),
    ]
    # A second preemption counts again.
    apply_eviction_for_preemption(victim_obj, preemptor, target, NOW)
    assert [(e.reason, e.count) for e in st.scheduling_stats.evictions] == [("Preempted", 2)]


@pytest.mark.parametrize(
    ("reason", "human"),
    [
        (IN_CLUSTER_QUEUE, "prioritization in the ClusterQueue"),
        (IN_COHORT_RECLAMATION, "reclamation within the cohort"),
        (IN_COHORT_FAIR_SHARING, "Fair Sharing within the cohort"),
        (IN_COHORT_RECLAIM_WHILE_BORROWING, "reclamation within the cohort while borrowing"),
        ("", "UNKNOWN"),
    ],
)
def test_preemption_message(reason: str, human: str) -> None:
    p = info(incoming())
    assert preemption_message(p, reason, "/a", "/b") == (
        f"Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to {human}; "
        "preemptor path: /a; preemptee path: /b"
    )


def test_preemption_message_unknowns() -> None:
    p = info(workload("x", uid=""))
    p.uid = ""
    assert preemption_message(p, IN_CLUSTER_QUEUE, "", "") == (
        "Preempted to accommodate a workload (UID: UNKNOWN, JobUID: UNKNOWN) due to prioritization in the "
        "ClusterQueue; preemptor path: UNKNOWN; preemptee path: UNKNOWN"
    )


def _message_preemptor(uid: str = "", job_uid: str | None = None) -> WorkloadInfo:
    """An info of a workload with only ``uid`` and the job-uid label set, like upstream's bare
    ``kueue.Workload`` literals."""
    wl = workload("x", uid="placeholder", labels={JOB_UID_LABEL: job_uid} if job_uid else None)
    wl.metadata.uid = uid
    p = info(wl)
    p.uid = uid
    return p


@pytest.mark.parametrize(
    ("uid", "job_uid", "reason", "paths", "want"),
    [
        pytest.param(
            "", None, "", ("", ""),
            "Preempted to accommodate a workload (UID: UNKNOWN, JobUID: UNKNOWN) due to UNKNOWN; "
            "preemptor path: UNKNOWN; preemptee path: UNKNOWN",
            id="empty workload",
        ),
        pytest.param(
            "uid", None, "", ("", ""),
            "Preempted to accommodate a workload (UID: uid, JobUID: UNKNOWN) due to UNKNOWN; "
            "preemptor path: UNKNOWN; preemptee path: UNKNOWN",
            id="uid only",
        ),
        pytest.param(
            "uid", "juid", "", ("", ""),
            "Preempted to accommodate a workload (UID: uid, JobUID: juid) due to UNKNOWN; "
            "preemptor path: UNKNOWN; preemptee path: UNKNOWN",
            id="uid and job uid",
        ),
        pytest.param(
            "uid", "juid", IN_CLUSTER_QUEUE, ("/a", "/b"),
            "Preempted to accommodate a workload (UID: uid, JobUID: juid) due to prioritization in the "
            "ClusterQueue; preemptor path: /a; preemptee path: /b",
            id="uid, job uid, reason and paths",
        ),
    ],
)
def test_preemption_message_upstream(
    uid: str, job_uid: str | None, reason: str, paths: tuple[str, str], want: str
) -> None:
    """Upstream ``TestPreemptionMessage`` (its cases are unnamed; ids describe them)."""
    assert preemption_message(_message_preemptor(uid, job_uid), reason, *paths) == want


_INT32_MAX = 2**31 - 1


@pytest.mark.parametrize(
    ("priority", "boost", "gate", "want"),
    [
        pytest.param(None, None, True, "0 (base: 0, boost: 0)", id="empty workload"),
        pytest.param(100, None, True, "100 (base: 100, boost: 0)", id="workload with priority only"),
        pytest.param(200, "50", True, "250 (base: 200, boost: 50)", id="workload with priority and positive boost"),
        pytest.param(100, "-30", True, "70 (base: 100, boost: -30)", id="workload with priority and negative boost"),
        pytest.param(
            100, "not-a-number", True, "100 (base: 100, boost: 0)",
            id="workload with invalid boost annotation falls back to zero",
        ),
        pytest.param(
            _INT32_MAX, "1", True, f"{_INT32_MAX + 1} (base: {_INT32_MAX}, boost: 1)",
            id="workload with effective priority above int32 max",
        ),
        pytest.param(100, "50", False, "100 (base: 100, boost: 0)", id="feature disabled: boost annotation ignored"),
        # Not upstream cases: values Python's ``int`` accepts but ``strconv.ParseInt(v, 10, 32)`` rejects.
        pytest.param(100, " 5", True, "100 (base: 100, boost: 0)", id="pykueue: boost with a space falls back to zero"),
        pytest.param(100, "1_0", True, "100 (base: 100, boost: 0)", id="pykueue: boost with an underscore falls back to zero"),
        pytest.param(100, "2147483648", True, "100 (base: 100, boost: 0)", id="pykueue: boost out of int32 range falls back to zero"),
    ],
)
def test_priority_info(priority: int | None, boost: str | None, gate: bool, want: str) -> None:
    """Upstream ``TestPriorityInfo``: the ``<effective> (base: <base>, boost: <boost>)`` of the events."""
    annotations = {PRIORITY_BOOST_ANNOTATION: boost} if boost is not None else None
    wl = workload("w", priority=priority, annotations=annotations)
    assert priority_info(info(wl, options(gates={"PriorityBoost": gate}))) == want


def test_cq_without_cohort_path() -> None:
    cache, _ = build([flavor("default"), cluster_queue("solo", flavor_quotas("default", cpu=1))])
    assert cq_path(cache.cluster_queues["solo"].node) == "/solo"
