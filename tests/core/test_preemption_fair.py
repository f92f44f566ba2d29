"""Fair-sharing preemption (upstream ``Preemptor.fairPreemptions``) and a property test of both algorithms.

``FAIR_CASES`` holds every case of upstream ``TestFairPreemptions`` (``preemption_fair_test.go``) under
upstream's name, except "hierarchical preemption" and "borrowing cq in non-borrowing cohort is
protected", which are ``test_hierarchical_fair_preemption`` and
``test_borrowing_cq_in_non_borrowing_cohort_is_protected``. Upstream
``TestFairPreemptionSkipsUnsatisfiableTournament`` is
``test_fair_preemption_skips_unsatisfiable_tournament``; upstream ``TestMakeClusterQueueOrdering``
(``fairsharing/ordering_test.go``) is ``test_make_cluster_queue_ordering``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

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
    workload,
)
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pykueue.api.kueue import ClusterQueue, Cohort, Workload
from pykueue.core.cache.cache import Cache
from pykueue.core.options import LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE
from pykueue.core.quota.tree import available
from pykueue.core.scheduler.flavorassigner.assignment import (
    Assignment,
    FlavorAssignment,
    Mode,
    PodSetAssignmentResult,
)
from pykueue.core.scheduler.preemption.common import Target
from pykueue.core.scheduler.preemption.fairsharing import (
    ShareCalculator,
    TargetOrdering,
    parse_strategies,
)
from pykueue.core.scheduler.preemption.preemptor import Preemptor
from pykueue.core.workload.info import WorkloadInfo

NOW = T0 + timedelta(hours=1)
LP, ANY, NEVER = "LowerPriority", "Any", "Never"


# --- helpers ----------------------------------------------------------------------------------


def adm(
    name: str, cq: str, cpu: str | int = 1, prio: int = 0, reserved: float = 0, flv: str = "default"
) -> Workload:
    wl = workload(name, priority=prio, requests={"cpu": cpu})
    return admitted(wl, cq, {"cpu": flv}, at_time=at(reserved))


def make_assignment(wl: WorkloadInfo, flavor_name: str = "default") -> Assignment:
    pod_sets = [
        PodSetAssignmentResult(
            ps.name,
            {r: FlavorAssignment(flavor_name, Mode.PREEMPT, 0) for r in ps.total},
            dict(ps.total),
            ps.count,
        )
        for ps in wl.pod_sets
    ]
    return Assignment(pod_sets)


def usage_state(cache: Cache) -> tuple[dict[str, dict[tuple[str, str], int]], dict[str, set[str]]]:
    usage = {}
    for name, cq in cache.cluster_queues.items():
        usage["cq/" + name] = {fr: v for fr, v in cq.node.usage.items() if v}
    for name, c in cache.cohorts.items():
        usage["cohort/" + name] = {fr: v for fr, v in c.usage.items() if v}
    return usage, {name: set(cq.workloads) for name, cq in cache.cluster_queues.items()}


def fair_targets(
    objs: list[object],
    incoming: Workload,
    cq: str,
    strategies: tuple[str, ...] = (),
    gates: dict[str, bool] | None = None,
    flavors: tuple[str, ...] = ("default",),
    assignment_flavor: str = "default",
) -> list[Target]:
    cache, snap = build([*(flavor(f) for f in flavors), *objs])  # type: ignore[list-item]
    before = usage_state(cache)
    inf = info(incoming)
    inf.cluster_queue = cq
    opts = options(fair_sharing=True, fair_sharing_strategies=strategies, gates=gates)
    targets = Preemptor(opts, clock=NOW.timestamp).get_targets(
        inf, make_assignment(inf, assignment_flavor), snap, cache.cluster_queues[cq]
    )
    assert usage_state(cache) == before, "get_targets must leave the snapshot unchanged"
    return targets


def got(targets: list[Target]) -> set[str]:
    return {f"{t.workload.name}:{t.reason}" for t in targets}


def base_cqs() -> list[ClusterQueue]:
    pre = {
        "within_cluster_queue": LP,
        "reclaim_within_cohort": ANY,
        "borrow_within_cohort": LP,
        "max_priority_threshold": -3,
    }
    return [
        cluster_queue("a", flavor_quotas("default", cpu=3), cohort="all", preemption=pre),
        cluster_queue("b", flavor_quotas("default", cpu=3), cohort="all", preemption=pre),
        cluster_queue("c", flavor_quotas("default", cpu=3), cohort="all", preemption=pre),
        cluster_queue("preemptible", flavor_quotas("default", cpu=0), cohort="all"),
    ]


def units(cq: str, *names: str, prio: int = 0) -> list[Workload]:
    return [adm(n, cq, 1, prio) for n in names]


@dataclass
class Case:
    admitted: list[Workload]
    incoming: Workload
    cq: str
    want: set[str]
    cqs: list[ClusterQueue] = field(default_factory=base_cqs)
    cohorts: list[Cohort] = field(default_factory=list)
    strategies: tuple[str, ...] = ()
    flavors: tuple[str, ...] = ("default",)
    assignment_flavor: str = "default"


FS = "InCohortFairSharing"
RECLAIM = "InCohortReclamation"
IN_CQ = "InClusterQueue"

FAIR_CASES: dict[str, Case] = {
    "reclaim nominal from user using the most": Case(
        [*units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3", "b4", "b5"), *units("c", "c1")],
        workload("c_incoming", requests={"cpu": 1}),
        "c",
        {f"b1:{RECLAIM}"},
    ),
    "can reclaim from queue using less, if taking the latest workload from user using the most isn't enough": Case(
        [adm("a1", "a", 3), adm("a2", "a", 1), adm("b1", "b", 2), adm("b2", "b", 3)],
        # Upstream's incoming holds a reservation in "a"; GetTargets takes its usage from the assignment.
        adm("c_incoming", "a", 3),
        "c",
        {f"a1:{RECLAIM}"},
    ),
    "reclaim borrowable quota from user using the most": Case(
        [*units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3", "b4", "b5"), *units("c", "c1")],
        workload("a_incoming", requests={"cpu": 1}),
        "a",
        {f"b1:{FS}"},
    ),
    "preempt one from each CQ borrowing": Case(
        [
            adm("a1", "a", "0.5"),
            adm("a2", "a", "0.5"),
            adm("a3", "a", 3),
            adm("b1", "b", "0.5"),
            adm("b2", "b", "0.5"),
            adm("b3", "b", 3),
        ],
        workload("c_incoming", requests={"cpu": 2}),
        "c",
        {f"a1:{RECLAIM}", f"b1:{RECLAIM}"},
    ),
    "can't preempt when everyone under nominal": Case(
        [*units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3"), *units("c", "c1", "c2", "c3")],
        workload("c_incoming", requests={"cpu": 1}),
        "c",
        set(),
    ),
    "can't preempt when it would switch the imbalance": Case(
        [*units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3", "b4", "b5")],
        workload("a_incoming", requests={"cpu": 2}),
        "a",
        set(),
    ),
    "can preempt lower priority workloads from same CQ": Case(
        [
            *units("a", "a1_low", "a2_low", prio=-1),
            *units("a", "a3", "a4"),
            *units("b", "b1", "b2", "b3", "b4", "b5"),
        ],
        workload("a_incoming", requests={"cpu": 2}),
        "a",
        {f"a1_low:{IN_CQ}", f"a2_low:{IN_CQ}"},
    ),
    "can preempt a combination of same CQ and highest user": Case(
        [
            *units("a", "a_low", prio=-1),
            *units("a", "a2", "a3"),
            *units("b", "b1", "b2", "b3", "b4", "b5", "b6"),
        ],
        workload("a_incoming", requests={"cpu": 2}),
        "a",
        {f"a_low:{IN_CQ}", f"b1:{FS}"},
    ),
    "preempt huge workload if there is no other option, as long as the target CQ gets a lower share": Case(
        [adm("b1", "b", 9)],
        workload("a_incoming", requests={"cpu": 2}),
        "a",
        {f"b1:{RECLAIM}"},
    ),
    "can't preempt huge workload if the incoming is also huge": Case(
        [adm("a1", "a", 2), adm("b1", "b", 7)],
        workload("a_incoming", requests={"cpu": 5}),
        "a",
        set(),
    ),
    "can't preempt 2 smaller workloads if the incoming is huge": Case(
        [adm("b1", "b", 2), adm("b2", "b", 2), adm("b3", "b", 3)],
        workload("a_incoming", requests={"cpu": 6}),
        "a",
        set(),
    ),
    "preempt from target and others even if over nominal": Case(
        [adm("a1_low", "a", 2, -1), adm("a2_low", "a", 1, -1), adm("b1", "b", 3), adm("b2", "b", 3)],
        workload("a_incoming", requests={"cpu": 4}),
        "a",
        {f"a1_low:{IN_CQ}", f"b1:{FS}"},
    ),
    "prefer to preempt workloads that don't make the target CQ have the biggest share": Case(
        [adm("b1", "b", 2), adm("b2", "b", 1), adm("b3", "b", 2), adm("c1", "c", 1)],
        workload("a_incoming", requests={"cpu": "3.5"}),
        "a",
        {f"b2:{FS}"},
    ),
    "can preempt anything borrowing from CQ with 0 weight": Case(
        [*units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3", "b4", "b5", "b6")],
        workload("a_incoming", requests={"cpu": 3}),
        "a",
        {f"b1:{FS}", f"b2:{FS}", f"b3:{FS}"},
        cqs=[
            cluster_queue(
                "a",
                flavor_quotas("default", cpu=3),
                cohort="all",
                preemption={"within_cluster_queue": LP, "reclaim_within_cohort": ANY},
            ),
            cluster_queue(
                "b",
                flavor_quotas("default", cpu=3),
                cohort="all",
                preemption={"within_cluster_queue": LP, "reclaim_within_cohort": ANY},
                fair_weight=0,
            ),
            cluster_queue(
                "c",
                flavor_quotas("default", cpu=3),
                cohort="all",
                preemption={"within_cluster_queue": LP, "reclaim_within_cohort": ANY},
            ),
        ],
    ),
    "can't preempt nominal from CQ with 0 weight": Case(
        [*units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3")],
        workload("a_incoming", requests={"cpu": 1}),
        "a",
        set(),
        cqs=[
            cluster_queue(
                "a",
                flavor_quotas("default", cpu=3),
                cohort="all",
                preemption={"within_cluster_queue": LP, "reclaim_within_cohort": ANY},
            ),
            cluster_queue(
                "b",
                flavor_quotas("default", cpu=3),
                cohort="all",
                preemption={"within_cluster_queue": LP, "reclaim_within_cohort": ANY},
                fair_weight=0,
            ),
        ],
    ),
    "can't preempt nominal from Cohort with 0 weight": Case(
        [adm("right-1", "right-cq", 1)],
        workload("left-1", requests={"cpu": 1}),
        "left-cq",
        set(),
        cqs=[
            cluster_queue(
                "left-cq",
                flavor_quotas("default", cpu=0),
                cohort="root",
                preemption={"reclaim_within_cohort": ANY},
            ),
            cluster_queue(
                "right-cq",
                flavor_quotas("default", cpu=0),
                cohort="right-cohort",
                preemption={"reclaim_within_cohort": ANY},
                fair_weight=0,
            ),
        ],
        cohorts=[cohort("right-cohort", flavor_quotas("default", cpu=1), parent="root", fair_weight=0)],
    ),
    "can preempt within cluster queue when no cohort": Case(
        [adm("a1", "a", 1)],
        workload("a_incoming", requests={"cpu": 1}, priority=1000),
        "a",
        {f"a1:{IN_CQ}"},
        cqs=[cluster_queue("a", flavor_quotas("default", cpu=1), preemption={"within_cluster_queue": LP})],
    ),
    "zero weight borrowing preemptor cannot preempt from a borrowing CQ with a non-zero weight": Case(
        [adm("a1", "a"), adm("b1", "b"), adm("b2", "b")],
        workload("a_incoming", requests={"cpu": 1}),
        "a",
        set(),
        cqs=[
            cluster_queue(
                "a",
                flavor_quotas("default", cpu=1),
                cohort="all",
                fair_weight=0,
                preemption={"reclaim_within_cohort": ANY},
            ),
            cluster_queue("b", flavor_quotas("default", cpu=1), cohort="all", fair_weight=1),
        ],
    ),
}

LP_IN_CQ_ANY = {"within_cluster_queue": LP, "reclaim_within_cohort": ANY}


def lp_any_cqs(a_weight: int | None = None) -> list[ClusterQueue]:
    """Upstream "CQ with higher weight can preempt more": a, b, c without borrowWithinCohort."""
    return [
        cluster_queue(
            n,
            flavor_quotas("default", cpu=3),
            cohort="all",
            preemption=LP_IN_CQ_ANY,
            fair_weight=a_weight if n == "a" else None,
        )
        for n in "abc"
    ]


def two_cqs(
    a_weight: str | int,
    b_weight: str | int,
    b_nominal: int,
    *,
    a_nominal: int = 1,
    a_parent: str = "all",
    b_parent: str = "all",
) -> list[ClusterQueue]:
    """Preemptor ``a`` (reclaimWithinCohort Any) and target ``b``, with fair weights."""
    return [
        cluster_queue(
            "a",
            flavor_quotas("default", cpu=a_nominal),
            cohort=a_parent,
            fair_weight=a_weight,
            preemption={"reclaim_within_cohort": ANY},
        ),
        cluster_queue("b", flavor_quotas("default", cpu=b_nominal), cohort=b_parent, fair_weight=b_weight),
    ]


def chain(*names: str, parent: str) -> list[Cohort]:
    out = []
    for n in names:
        out.append(cohort(n, parent=parent))
        parent = n
    return out


# Upstream TestFairPreemptions cases not in FAIR_CASES above (same names, same inputs and wants).
FAIR_CASES.update(
    {
        "preempt from different cluster queues if the end result has a smaller max share": Case(
            [adm("b1", "b", 2), adm("b2", "b", "2.5"), adm("c1", "c", 2), adm("c2", "c", "2.5")],
            workload("a_incoming", requests={"cpu": "3.5"}),
            "a",
            {f"b1:{FS}", f"c1:{FS}"},
        ),
        "scenario above does not flap": Case(
            [adm("a1", "a", "3.5"), adm("b2", "b", "2.5"), adm("c2", "c", "2.5")],
            workload("b_incoming", requests={"cpu": 2}),
            "b",
            set(),
        ),
        "cannot preempt if it would make the candidate CQ go under nominal after preempting one element": Case(
            [adm("b1", "b", 3), adm("b2", "b", 3), adm("c1", "c", 3)],
            workload("a_incoming", requests={"cpu": 4}),
            "a",
            set(),
        ),
        "workloads under priority threshold not capriciously preempted": Case(
            [
                *units("a", "a1", "a2", "a3"),
                *units("b", "b1", "b2", "b3"),
                *units("preemptible", "preemptible1", "preemptible2", "preemptible3", prio=-3),
            ],
            workload("a_incoming", requests={"cpu": 2}),
            "a",
            set(),
        ),
        "preempt lower priority first, even if big": Case(
            [adm("a1", "a", 3), adm("b_low", "b", 5, 0), adm("b_high", "b", 1, 1)],
            workload("a_incoming", requests={"cpu": 1}),
            "a",
            {f"b_low:{FS}"},
            strategies=(LESS_THAN_INITIAL_SHARE,),
        ),
        "preempt workload that doesn't transfer the imbalance, even if high priority": Case(
            [adm("a1", "a", 3), adm("b_low", "b", 5, 0), adm("b_high", "b", 1, 1)],
            workload("a_incoming", requests={"cpu": 1}),
            "a",
            {f"b_high:{FS}"},
            strategies=(LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,),
        ),
        "CQ with higher weight can preempt more": Case(
            [*units("a", "a1", "a2", "a3"), *units("b", "b1", "b2", "b3", "b4", "b5", "b6")],
            workload("a_incoming", requests={"cpu": 2}),
            "a",
            {f"b1:{FS}", f"b2:{FS}"},
            cqs=lp_any_cqs(a_weight=2),
        ),
        "forced to preempt within clusterqueue because borrowing workload too important": Case(
            [*units("a", "a1", "a2", "a3", prio=-1), adm("b1", "b", 4, 100)],
            workload("unit", requests={"cpu": 4}),
            "a",
            {f"a1:{IN_CQ}", f"a2:{IN_CQ}", f"a3:{IN_CQ}"},
            cqs=[
                cluster_queue(
                    "a",
                    flavor_quotas("default", cpu=5),
                    cohort="ROOT",
                    fair_weight=10,
                    preemption={"reclaim_within_cohort": LP, "within_cluster_queue": LP},
                ),
                cluster_queue("b", cohort="RIGHT", fair_weight="0.1"),
            ],
            cohorts=[
                cohort("ROOT"),
                cohort("RIGHT", flavor_quotas("default", cpu=3), parent="ROOT", fair_weight="0.1"),
            ],
        ),
        "deep preemption": Case(
            [adm("b1", "b")],
            workload("a1", requests={"cpu": 1}),
            "a",
            {f"b1:{FS}"},
            cqs=[
                cluster_queue(
                    "a",
                    flavor_quotas("default", cpu=0),
                    cohort="AAA",
                    preemption={"reclaim_within_cohort": ANY},
                ),
                cluster_queue("b", flavor_quotas("default", cpu=0), cohort="BBB"),
            ],
            cohorts=[
                cohort("ROOT"),
                cohort("A", parent="ROOT", fair_weight="1.01"),
                *chain("AA", "AAA", parent="A"),
                cohort("B", parent="ROOT", fair_weight="0.99"),
                *chain("BB", "BBB", parent="B"),
                *chain("C", "CC", "CCC", parent="ROOT"),
                cohort("CCCC", flavor_quotas("default", cpu=1), parent="CCC"),
            ],
        ),
        "cq with zero weight can reclaim nominal quota": Case(
            [adm("b1", "b")],
            workload("a1", requests={"cpu": 1}),
            "a",
            {f"b1:{RECLAIM}"},
            cqs=two_cqs("0.0", "1.0", 0, a_parent="ROOT", b_parent="ROOT"),
        ),
        "cohort with zero weight can reclaim nominal quota": Case(
            [adm("b1", "b")],
            workload("a1", requests={"cpu": 1}),
            "a",
            {f"b1:{FS}"},
            cqs=two_cqs("0.0", "1.0", 0, a_nominal=0, a_parent="A", b_parent="ROOT"),
            cohorts=[cohort("A", flavor_quotas("default", cpu=1), parent="ROOT", fair_weight="0.0")],
        ),
        "nominal first: workload fitting within nominal can preempt despite high aggregate DRS": Case(
            [
                *(adm(n, "a", flv="premium") for n in ("a_prem1", "a_prem2")),
                *(adm(f"a_cheap{i}", "a", flv="cheap") for i in range(1, 6)),
                adm("b_prem1", "b", flv="premium"),
            ],
            workload("a_incoming", requests={"cpu": 1}),
            "a",
            {f"b_prem1:{RECLAIM}"},
            cqs=[
                cluster_queue(
                    "a",
                    flavor_quotas("premium", cpu=3),
                    flavor_quotas("cheap", cpu=0),
                    cohort="all",
                    preemption={"reclaim_within_cohort": ANY},
                    fungibility={"when_can_borrow": "MayStopSearch", "when_can_preempt": "MayStopSearch"},
                ),
                cluster_queue(
                    "b", flavor_quotas("premium", cpu=0), flavor_quotas("cheap", cpu=6), cohort="all"
                ),
            ],
            flavors=("premium", "cheap"),
            assignment_flavor="premium",
        ),
        "zero weight borrowing preemptor can preempt from a borrowing CQ which also has zero weight": Case(
            units("b", "b1", "b2", "b3"),
            workload("a_incoming", requests={"cpu": 2}),
            "a",
            {f"b1:{FS}"},
            cqs=two_cqs(0, 0, 0),
            cohorts=[cohort("all", flavor_quotas("default", cpu=3))],
        ),
        "non-zero weight borrowing preemptor preempts from a borrowing CQ": Case(
            units("b", "b1", "b2", "b3"),
            workload("a_incoming", requests={"cpu": 2}),
            "a",
            {f"b1:{FS}"},
            cqs=two_cqs(1, 1, 0),
            cohorts=[cohort("all", flavor_quotas("default", cpu=3))],
        ),
        "candidates skipped by the first strategy are still available to the second strategy": Case(
            [adm("p1", "p", 2), adm("y1", "y", 2), adm("y2", "y", 2), *units("x", "x1", "x2")],
            workload("p_incoming", requests={"cpu": 1}),
            "p",
            {f"y1:{FS}", f"x1:{FS}"},
            cqs=[
                cluster_queue(
                    "p",
                    flavor_quotas("default", cpu=2),
                    cohort="A",
                    fair_weight=1,
                    preemption={"reclaim_within_cohort": ANY},
                ),
                cluster_queue("y", flavor_quotas("default", cpu=2), cohort="A", fair_weight=1),
                cluster_queue("x", flavor_quotas("default", cpu=1), cohort="ROOT", fair_weight=1),
            ],
            cohorts=[cohort("A", flavor_quotas("default", cpu=1), parent="ROOT", fair_weight=0)],
        ),
    }
)


@pytest.mark.parametrize("name", list(FAIR_CASES))
def test_fair_preemptions(name: str) -> None:
    case = FAIR_CASES[name]
    targets = fair_targets(
        [*case.cohorts, *case.cqs, *case.admitted],
        case.incoming,
        case.cq,
        strategies=case.strategies,
        flavors=case.flavors,
        assignment_flavor=case.assignment_flavor,
    )
    assert got(targets) == case.want


@pytest.mark.parametrize(
    ("weight", "want_first", "want_second", "want_skipped"),
    [
        pytest.param("0", 0, 1, 1, id="zero weight preemptor: share is +Inf and the tournament is skipped"),
        pytest.param("1", 1, 1, 0, id="non-zero weight preemptor: share is finite so the tournament runs"),
    ],
)
def test_fair_preemption_skips_unsatisfiable_tournament(
    monkeypatch: pytest.MonkeyPatch, weight: str, want_first: int, want_second: int, want_skipped: int
) -> None:
    """Upstream ``TestFairPreemptionSkipsUnsatisfiableTournament``.

    Upstream counts its V(4) log lines; here the real share computations are wrapped to count the same
    events: a target CQ whose candidates are simulated one by one in the first strategy (one per CQ, as
    upstream's collapsed log entry), a target CQ evaluated by the second strategy, and a target CQ whose
    tournament is skipped because the preemptor's share is +Inf (``fsStrategyUnsatisfiable``).
    """
    from pykueue.core.scheduler.preemption import fairsharing

    phase = ["first"]
    shares_in_first: list[str] = []
    simulated_in_first: set[str] = set()
    second_evals: list[str] = []
    compute_shares = fairsharing._Search.compute_shares
    after_removal = fairsharing._Search.target_share_after_removal
    second_strategy = fairsharing._second_strategy

    def counting_compute_shares(self: Any, ordering: TargetOrdering, cq: str) -> Any:
        (shares_in_first if phase[0] == "first" else second_evals).append(cq)
        # A skip that leaves the CQ's candidates in place would spin (upstream's comment warns of it):
        # fail instead of hanging.
        assert len(shares_in_first) + len(second_evals) < 50, "the tournament does not progress"
        return compute_shares(self, ordering, cq)

    def counting_after_removal(self: Any, ordering: TargetOrdering, cq: str, wl: WorkloadInfo) -> Any:
        simulated_in_first.add(cq)
        return after_removal(self, ordering, cq, wl)

    def second_phase(search: Any, retry: list[WorkloadInfo]) -> bool:
        phase[0] = "second"
        return second_strategy(search, retry)

    monkeypatch.setattr(fairsharing._Search, "compute_shares", counting_compute_shares)
    monkeypatch.setattr(fairsharing._Search, "target_share_after_removal", counting_after_removal)
    monkeypatch.setattr(fairsharing, "_second_strategy", second_phase)
    reclaim = {"reclaim_within_cohort": ANY}
    objs: list[object] = [
        cluster_queue(
            "a", flavor_quotas("default", cpu=1), cohort="all", fair_weight=weight, preemption=reclaim
        ),
        cluster_queue("b", flavor_quotas("default", cpu=1), cohort="all", fair_weight=1),
        *units("a", "a1"),
        *units("b", "b1", "b2"),
    ]
    targets = fair_targets(objs, workload("a_incoming", requests={"cpu": 1}), "a")
    assert targets == []
    assert len(simulated_in_first) == want_first
    assert len(second_evals) == want_second
    assert len([cq for cq in shares_in_first if cq not in simulated_in_first]) == want_skipped


def test_hierarchical_fair_preemption() -> None:
    """Upstream "hierarchical preemption": a can preempt in every branch of the tree."""
    reclaim = {"reclaim_within_cohort": ANY}
    objs: list[object] = [
        cohort("ROOT", flavor_quotas("default", cpu=5)),
        cohort("LEFT", flavor_quotas("default", cpu=5), parent="ROOT", fair_weight=2),
        cohort("RIGHT", flavor_quotas("default", cpu=5), parent="ROOT"),
        cluster_queue("a", flavor_quotas("default", cpu=1), cohort="LEFT", fair_weight=2, preemption=reclaim),
        cluster_queue("b", flavor_quotas("default", cpu=1), cohort="LEFT"),
        cluster_queue("c", flavor_quotas("default", cpu=1), cohort="ROOT"),
        cluster_queue("d", flavor_quotas("default", cpu=1), cohort="RIGHT"),
        cluster_queue("e", flavor_quotas("default", cpu=1), cohort="RIGHT", fair_weight="0.99"),
    ]
    for q in "bcde":
        objs += [adm(f"{q}{i}", q, 1, i) for i in range(1, 6)]
    targets = fair_targets(objs, workload("unit", requests={"cpu": 5}), "a")
    assert got(targets) == {f"b1:{FS}", f"b2:{FS}", f"c1:{FS}", f"c2:{FS}", f"e1:{FS}"}


def test_borrowing_cq_in_non_borrowing_cohort_is_protected() -> None:
    objs: list[object] = [
        cohort("ROOT"),
        cohort("RIGHT", flavor_quotas("default", cpu=1), parent="ROOT", fair_weight="0.1"),
        cluster_queue(
            "a",
            flavor_quotas("default", cpu=5),
            cohort="ROOT",
            fair_weight=10,
            preemption={"reclaim_within_cohort": ANY, "within_cluster_queue": LP},
        ),
        cluster_queue("b", flavor_quotas("default"), cohort="RIGHT", fair_weight="0.1"),
        *[adm(n, "a", 1, -1) for n in ("a1", "a2", "a3")],
        adm("b1", "b", 1, -1),
    ]
    targets = fair_targets(objs, workload("unit", requests={"cpu": 5}), "a")
    assert got(targets) == {f"a1:{IN_CQ}", f"a2:{IN_CQ}", f"a3:{IN_CQ}"}


# --- worked example M -------------------------------------------------------------------------------


def _example_m(incoming_cpu: int) -> list[Target]:
    pre = {"reclaim_within_cohort": ANY}
    objs: list[object] = [
        cluster_queue("A", flavor_quotas("default", cpu=10), cohort="root", preemption=pre),
        cluster_queue("B", flavor_quotas("default", cpu=10), cohort="root", preemption=pre),
        adm("a0", "A", 2),
        adm("b2", "B", 13, reserved=0),
        adm("b1", "B", 1, reserved=10),
    ]
    return fair_targets(objs, workload("a1", requests={"cpu": incoming_cpu}), "A")


def test_worked_example_m_s2a_then_s2b() -> None:
    assert got(_example_m(10)) == {f"b2:{FS}"}


def test_worked_example_m_within_nominal_variant() -> None:
    assert got(_example_m(6)) == {f"b2:{RECLAIM}"}


def test_worked_example_m_only_first_strategy() -> None:
    """Without S2-b the huge workload can't be taken: removing it would leave B below A."""
    pre = {"reclaim_within_cohort": ANY}
    objs: list[object] = [
        cluster_queue("A", flavor_quotas("default", cpu=10), cohort="root", preemption=pre),
        cluster_queue("B", flavor_quotas("default", cpu=10), cohort="root", preemption=pre),
        adm("a0", "A", 2),
        adm("b2", "B", 13),
        adm("b1", "B", 1, reserved=10),
    ]
    targets = fair_targets(
        objs, workload("a1", requests={"cpu": 10}), "A", strategies=(LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,)
    )
    assert targets == []


def test_within_nominal_gate_off_requires_strategy() -> None:
    """With FairSharingPreemptWithinNominal off, the 6-cpu variant goes through the strategies."""
    pre = {"reclaim_within_cohort": ANY}
    objs: list[object] = [
        cluster_queue("A", flavor_quotas("default", cpu=10), cohort="root", preemption=pre),
        cluster_queue("B", flavor_quotas("default", cpu=10), cohort="root", preemption=pre),
        adm("a0", "A", 2),
        adm("b2", "B", 13),
        adm("b1", "B", 1, reserved=10),
    ]
    targets = fair_targets(
        objs, workload("a1", requests={"cpu": 6}), "A", gates={"FairSharingPreemptWithinNominal": False}
    )
    assert {t.reason for t in targets} == {FS}


def test_parse_strategies() -> None:
    assert len(parse_strategies(())) == 2
    assert len(parse_strategies((LESS_THAN_INITIAL_SHARE,))) == 1
    with pytest.raises(ValueError, match="unknown fair sharing preemption strategy"):
        parse_strategies(("Bogus",))


def test_target_ordering_ties_prefer_first_candidate_under_ordering() -> None:
    """Equal DRS between two CQs: the CQ whose head candidate sorts first is yielded."""
    pre = {"reclaim_within_cohort": ANY}
    cache, snap = build(
        [
            flavor("default"),
            cluster_queue("p", flavor_quotas("default", cpu=2), cohort="root", preemption=pre),
            cluster_queue("x", flavor_quotas("default", cpu=2), cohort="root"),
            cluster_queue("y", flavor_quotas("default", cpu=2), cohort="root"),
            adm("x1", "x", 3, prio=5),
            adm("y1", "y", 3, prio=1),
        ]
    )
    from pykueue.core.cache.cache import cache_weight_of
    from pykueue.core.scheduler.preemption.common import PreemptionContext
    from pykueue.core.scheduler.preemption.fairsharing import find_candidates

    p = info(workload("in", requests={"cpu": 1}))
    p.cluster_queue = "p"
    ctx = PreemptionContext(
        p,
        cache.cluster_queues["p"],
        snap,
        frozenset({("default", "cpu")}),
        {("default", "cpu"): 1000},
        NOW.timestamp(),
        options(fair_sharing=True),
    )
    cands = find_candidates(ctx)
    ordering = TargetOrdering(ctx, cands, ShareCalculator(cache_weight_of(cache)))
    first = next(iter(ordering))
    assert first == "y"


# --- property: simulations are undone and targets make room ------------------------------------------


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[object], Workload, str, bool]:
    n = draw(st.integers(2, 4))
    policies = st.sampled_from([NEVER, LP, ANY])
    objs: list[object] = []
    names = [f"q{i}" for i in range(n)]
    nested = draw(st.booleans())
    if nested:
        objs += [
            cohort("root", flavor_quotas("default", cpu=draw(st.integers(0, 4)))),
            cohort("mid", parent="root"),
        ]
    for i, name in enumerate(names):
        nominal = draw(st.integers(0, 6))
        bl = draw(st.none() | st.integers(0, 6))
        ll = draw(st.none() | st.integers(0, nominal))
        pre = {
            "within_cluster_queue": draw(st.sampled_from([NEVER, LP])),
            "reclaim_within_cohort": draw(policies),
        }
        if draw(st.booleans()) and pre["reclaim_within_cohort"] != NEVER:
            pre["borrow_within_cohort"] = LP
            pre["max_priority_threshold"] = draw(st.none() | st.integers(-1, 2))
        parent = ("mid" if i % 2 else "root") if nested else "all"
        objs.append(
            cluster_queue(
                name,
                flavor_quotas("default", cpu=Q(nominal, borrowing_limit=bl, lending_limit=ll)),
                cohort=parent,
                preemption=pre,
                fair_weight=draw(st.sampled_from([None, 0, 1, 2])),
            )
        )
    wls = draw(
        st.lists(st.tuples(st.sampled_from(names), st.integers(1, 4), st.integers(-2, 2)), max_size=10)
    )
    for j, (q, cpu, prio) in enumerate(wls):
        objs.append(adm(f"w{j}", q, cpu, prio, reserved=j))
    target = draw(st.sampled_from(names))
    incoming = workload("in", priority=draw(st.integers(-1, 3)), requests={"cpu": draw(st.integers(1, 6))})
    return objs, incoming, target, draw(st.booleans())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_property_get_targets_restores_usage_and_makes_room(
    scenario: tuple[list[object], Workload, str, bool],
) -> None:
    objs, incoming, cq_name, fair = scenario
    cache, snap = build([flavor("default"), *objs])  # type: ignore[list-item]
    before = usage_state(cache)
    inf = info(incoming)
    inf.cluster_queue = cq_name
    cq = cache.cluster_queues[cq_name]
    preemptor = Preemptor(options(fair_sharing=fair), clock=NOW.timestamp)
    targets = preemptor.get_targets(inf, make_assignment(inf), snap, cq)
    assert usage_state(cache) == before
    oracle_mode, _ = preemptor.make_oracle(snap)(cq, inf, ("default", "cpu"), inf.pod_sets[0].total["cpu"])
    assert usage_state(cache) == before
    assert (oracle_mode.name == "NO_CANDIDATES") == (not targets)
    event(f"fair={fair} targets={len(targets)}")
    if not targets:
        return
    assert len({t.workload.key for t in targets}) == len(targets)
    for t in targets:
        snap.remove_workload(t.workload)
    try:
        need = inf.pod_sets[0].total["cpu"]
        assert need <= available(cq.node, ("default", "cpu"))
    finally:
        for t in targets:
            snap.add_workload(t.workload)
    assert usage_state(cache) == before


# --- upstream TestMakeClusterQueueOrdering (fairsharing/ordering_test.go) --------------------------


@dataclass
class OrderingCase:
    cqs: list[ClusterQueue]
    admitted: list[Workload]
    preemptor: str
    candidate_cqs: set[str]
    want: list[str]
    actions: list[str] = field(default_factory=list)
    cohorts: list[Cohort] = field(default_factory=list)


def plain_cq(name: str, cpu: int, parent: str = "") -> ClusterQueue:
    return cluster_queue(name, flavor_quotas("default", cpu=cpu), cohort=parent)


def three_in_all() -> list[ClusterQueue]:
    return [plain_cq("preemptor", 4, "all"), plain_cq("high", 2, "all"), plain_cq("low", 2, "all")]


ORDERING_CASES: dict[str, OrderingCase] = {
    "no cohort: preemptor CQ yielded for in-CQ preemption; repro for nil pointer panic issue": OrderingCase(
        [plain_cq("preemptor", 4)], [adm("wl1", "preemptor")], "preemptor", {"preemptor"}, ["preemptor"]
    ),
    "no cohort: DropQueue ends the iteration with candidates remaining": OrderingCase(
        [plain_cq("preemptor", 4)],
        [adm("wl1", "preemptor"), adm("wl2", "preemptor")],
        "preemptor",
        {"preemptor"},
        ["preemptor"],
        actions=["drop"],
    ),
    "non-borrowing CQ is pruned even with candidates": OrderingCase(
        [plain_cq("preemptor", 4, "all"), plain_cq("target", 5, "all")],
        [adm("t1", "target", 2)],
        "preemptor",
        {"target"},
        [],
    ),
    "higher DRS CQ returned before lower DRS CQ": OrderingCase(
        three_in_all(),
        [adm("h1", "high", 5), adm("l1", "low", 3)],
        "preemptor",
        {"high", "low"},
        ["high", "low"],
    ),
    "CQ with highest DRS returned again while it still has candidates": OrderingCase(
        three_in_all(),
        [adm("h1", "high", 3), adm("h2", "high", 2), adm("l1", "low", 3)],
        "preemptor",
        {"high", "low"},
        ["high", "high", "low"],
    ),
    "drop queue prevents CQ from being returned again": OrderingCase(
        three_in_all(),
        [adm("h1", "high", 3), adm("h2", "high", 2), adm("l1", "low", 3)],
        "preemptor",
        {"high", "low"},
        ["high", "low"],
        actions=["drop", "pop"],
    ),
    "hierarchical cohorts: higher-DRS subtree visited first": OrderingCase(
        [
            plain_cq("preemptor-cq", 4, "root"),
            plain_cq("left-cq", 2, "left-cohort"),
            plain_cq("right-cq", 2, "right-cohort"),
        ],
        [adm("lc1", "left-cq", 5), adm("rc1", "right-cq", 3)],
        "preemptor-cq",
        {"left-cq", "right-cq"},
        ["left-cq", "right-cq"],
        cohorts=[cohort("root"), cohort("left-cohort", parent="root"), cohort("right-cohort", parent="root")],
    ),
}


@pytest.mark.parametrize("name", list(ORDERING_CASES))
def test_make_cluster_queue_ordering(name: str) -> None:
    """Upstream ``TestMakeClusterQueueOrdering``: the CQs ``TargetClusterQueueOrdering`` yields, popping a
    candidate after each (or dropping the CQ where the case says so)."""
    from pykueue.core.cache.cache import cache_weight_of
    from pykueue.core.scheduler.preemption.common import PreemptionContext

    case = ORDERING_CASES[name]
    cache, snap = build([flavor("default"), *case.cohorts, *case.cqs, *case.admitted])  # type: ignore[list-item]
    p = info(workload("preemptor-wl", requests={"cpu": 1}))
    p.cluster_queue = case.preemptor
    ctx = PreemptionContext(
        p,
        cache.cluster_queues[case.preemptor],
        snap,
        frozenset({("default", "cpu")}),
        {("default", "cpu"): 1000},
        NOW.timestamp(),
        options(fair_sharing=True),
    )
    # Upstream hands the candidates over in the order the workloads were listed.
    candidates = [info(w) for w in case.admitted if w.status.admission is not None]
    candidates = [c for c in candidates if c.cluster_queue in case.candidate_cqs]
    ordering = TargetOrdering(ctx, candidates, ShareCalculator(cache_weight_of(cache)))
    got_order: list[str] = []
    for i, cq in enumerate(ordering):
        got_order.append(cq)
        if i < len(case.actions) and case.actions[i] == "drop":
            ordering.drop(cq)
        else:
            ordering.pop(cq)
        assert len(got_order) <= 50, "exceeded 50 iterations, likely an infinite loop"
    assert got_order == case.want
