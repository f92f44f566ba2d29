"""Hypothesis strategies for random small clusters, and an independent reference model of quota trees.

The model (``TreeModel``) re-derives subtree quotas, local quotas, usages and the quota constraints
of upstream ``resource_node.go`` from plain integers, without touching ``pykueue.core.quota.tree``; the
property tests in ``test_invariants.py`` compare the implementation against it.

Amounts are integers in the implementation's units: milli-cores for ``cpu``, plain units for
``memory``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from builders import T0, admitted, cluster_queue, cohort, flavor, pod_set, resource_group, workload
from hypothesis import strategies as st

from pykueue.api.kueue import (
    BEST_EFFORT_FIFO,
    BORROWING_OVER_PREEMPTION,
    MAY_STOP_SEARCH,
    PREEMPT_ANY,
    PREEMPT_LOWER_OR_NEWER_EQUAL_PRIORITY,
    PREEMPT_LOWER_PRIORITY,
    PREEMPT_NEVER,
    PREEMPTION_OVER_BORROWING,
    STRICT_FIFO,
    TRY_NEXT_FLAVOR,
    V1BETA2,
    FlavorQuotas,
    LocalQueue,
    LocalQueueSpec,
    ResourceQuota,
    Workload,
)
from pykueue.api.meta import Condition, ObjectMeta
from pykueue.core.options import SchedulerOptions
from pykueue.core.quota.tree import add_usage

FR = tuple[str, str]
CPU, MEMORY = "cpu", "memory"
FLAVORS = ("f0", "f1", "f2")
COHORTS = ("c0", "c1", "c2")
NAMESPACE = "default"
NOW = T0 + timedelta(hours=1)


def manifest_amount(resource: str, amount: int) -> str:
    """An integer amount written as a manifest quantity (cpu amounts are milli-cores)."""
    return f"{amount}m" if resource == CPU else str(amount)


# --- scenario description -------------------------------------------------------------------------


@dataclass(frozen=True)
class QuotaGen:
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass
class GroupGen:
    covered: tuple[str, ...]
    flavors: tuple[str, ...]
    quotas: dict[str, dict[str, QuotaGen]]  # flavor -> resource -> quota


@dataclass
class CohortGen:
    name: str
    parent: str  # "" for none
    explicit: bool  # backed by a Cohort object
    groups: list[GroupGen]
    weight: str | None = None


@dataclass
class CQGen:
    name: str
    cohort: str
    groups: list[GroupGen]
    within: str
    reclaim: str
    borrow_within: str
    threshold: int | None
    strategy: str
    when_can_borrow: str
    when_can_preempt: str
    preference: str
    weight: str | None

    def flavor_for(self, resource: str) -> tuple[str, ...]:
        for g in self.groups:
            if resource in g.covered:
                return g.flavors
        return ()


@dataclass
class PodSetGen:
    count: int
    min_count: int | None
    requests: dict[str, int]


@dataclass
class WorkloadGen:
    name: str
    cq: str
    priority: int
    created: int  # seconds after T0
    pod_sets: list[PodSetGen]
    admission: list[dict[str, str]] | None = None  # per pod set: resource -> flavor
    evicted: bool = False
    inactive: bool = False  # spec.active=false at load; an "activate" step submits it later

    def usage(self) -> dict[FR, int]:
        """Quota this workload holds when admitted with ``admission`` (``totalRequestsFromAdmission``)."""
        out: dict[FR, int] = {}
        for ps, fl in zip(self.pod_sets, self.admission or [], strict=False):
            for res, per_pod in ps.requests.items():
                fr = (fl[res], res)
                out[fr] = out.get(fr, 0) + per_pod * ps.count
        return out


@dataclass
class Step:
    kind: str  # "cycle" | "advance" | "finish" | "activate" | "deactivate"
    pick: int = 0


@dataclass
class Scenario:
    resources: tuple[str, ...]
    flavors: tuple[str, ...]
    cohorts: list[CohortGen]
    cqs: list[CQGen]
    workloads: list[WorkloadGen]
    fair_sharing: bool
    steps: list[Step] = field(default_factory=list)

    def options(self) -> SchedulerOptions:
        return SchedulerOptions(fair_sharing=self.fair_sharing)

    def model(self) -> TreeModel:
        return TreeModel.from_scenario(self)

    def objects(self) -> list[tuple[Any, str]]:
        """Fresh API objects (loading mutates metadata, so build new ones for every cluster)."""
        out: list[tuple[Any, str]] = [(flavor(f), V1BETA2) for f in self.flavors]
        for c in self.cohorts:
            if c.explicit:
                out.append(
                    (cohort(c.name, *_groups(c.groups), parent=c.parent, fair_weight=c.weight), V1BETA2)
                )
        for q in self.cqs:
            preemption: dict[str, Any] = {
                "within_cluster_queue": q.within,
                "reclaim_within_cohort": q.reclaim,
            }
            if q.borrow_within:
                preemption["borrow_within_cohort"] = q.borrow_within
                preemption["max_priority_threshold"] = q.threshold
            fungibility = {"when_can_borrow": q.when_can_borrow, "when_can_preempt": q.when_can_preempt}
            if q.preference:
                fungibility["preference"] = q.preference
            out.append(
                (
                    cluster_queue(
                        q.name,
                        *_groups(q.groups),
                        cohort=q.cohort,
                        preemption=preemption,
                        fungibility=fungibility,
                        queueing_strategy=q.strategy,
                        fair_weight=q.weight,
                    ),
                    V1BETA2,
                )
            )
            lq = LocalQueue(
                metadata=ObjectMeta(name=f"lq-{q.name}", namespace=NAMESPACE),
                spec=LocalQueueSpec(cluster_queue=q.name),
            )
            out.append((lq, V1BETA2))
        for w in self.workloads:
            out.append((build_workload(w), V1BETA2))
        return out

    def describe(self) -> str:
        """A compact, readable dump for failure reports."""
        lines = [f"resources={self.resources} flavors={self.flavors} fair_sharing={self.fair_sharing}"]
        for c in self.cohorts:
            lines.append(
                f"  cohort {c.name} parent={c.parent!r} explicit={c.explicit} groups={_fmt_groups(c.groups)}"
            )
        for q in self.cqs:
            lines.append(
                f"  cq {q.name} cohort={q.cohort!r} groups={_fmt_groups(q.groups)} within={q.within} "
                f"reclaim={q.reclaim} bwc={q.borrow_within}/{q.threshold} strategy={q.strategy} "
                f"fung={q.when_can_borrow}/{q.when_can_preempt}/{q.preference} w={q.weight}"
            )
        for w in self.workloads:
            lines.append(
                f"  wl {w.name} cq={w.cq} prio={w.priority} t={w.created} "
                f"podsets={[(p.count, p.min_count, p.requests) for p in w.pod_sets]} "
                f"admission={w.admission} evicted={w.evicted} inactive={w.inactive}"
            )
        lines.append(f"  steps={[(s.kind, s.pick) for s in self.steps]}")
        return "\n".join(lines)


def _fmt_groups(groups: Sequence[GroupGen]) -> str:
    return "; ".join(
        f"{list(g.covered)}:"
        + ",".join(
            f"{f}{{"
            + " ".join(
                f"{r}={q.nominal}"
                + (f"/bl{q.borrowing_limit}" if q.borrowing_limit is not None else "")
                + (f"/ll{q.lending_limit}" if q.lending_limit is not None else "")
                for r, q in g.quotas[f].items()
            )
            + "}"
            for f in g.flavors
        )
        for g in groups
    )


def _groups(groups: Sequence[GroupGen]) -> list[Any]:
    out = []
    for g in groups:
        fqs = [
            FlavorQuotas(
                name=f,
                resources=[
                    ResourceQuota(
                        r,
                        manifest_amount(r, g.quotas[f][r].nominal),
                        None
                        if g.quotas[f][r].borrowing_limit is None
                        else manifest_amount(r, g.quotas[f][r].borrowing_limit),  # type: ignore[arg-type]
                        None
                        if g.quotas[f][r].lending_limit is None
                        else manifest_amount(r, g.quotas[f][r].lending_limit),  # type: ignore[arg-type]
                    )
                    for r in g.covered
                ],
            )
            for f in g.flavors
        ]
        out.append(resource_group(*fqs, covered=list(g.covered)))
    return out


def build_workload(w: WorkloadGen) -> Workload:
    sets = [
        pod_set(
            f"ps{i}",
            ps.count,
            {r: manifest_amount(r, v) for r, v in ps.requests.items()},
            min_count=ps.min_count,
        )
        for i, ps in enumerate(w.pod_sets)
    ]
    wl = workload(
        w.name,
        ns=NAMESPACE,
        queue=f"lq-{w.cq}",
        priority=w.priority,
        created=T0 + timedelta(seconds=w.created),
        pod_sets=sets,
    )
    if w.inactive:
        wl.spec.active = False
    if w.admission is not None:
        admitted(wl, w.cq, w.admission, at_time=T0 + timedelta(seconds=w.created), admitted_condition=True)
        if w.evicted:
            msg = "Preempted to accommodate a workload (UID: x, JobUID: UNKNOWN) due to test"
            when = NOW - timedelta(seconds=1)
            wl.status.conditions.append(
                Condition(
                    type="Evicted", status="True", reason="Preempted", message=msg, last_transition_time=when
                )
            )
            wl.status.conditions.append(
                Condition(
                    type="Preempted",
                    status="True",
                    reason="InClusterQueue",
                    message=msg,
                    last_transition_time=when,
                )
            )
    return wl


# --- independent reference model of the quota tree (upstream ``resource_node.go``) ----------------

NodeKey = tuple[str, str]  # ("cq" | "cohort", name)


@dataclass
class ModelNode:
    key: NodeKey
    parent: NodeKey | None
    quotas: dict[FR, QuotaGen]
    children: list[NodeKey] = field(default_factory=list)


class TreeModel:
    """Quota trees from plain integers: subtree quotas, local quotas, usage and constraints."""

    def __init__(self, nodes: dict[NodeKey, ModelNode]) -> None:
        self.nodes = nodes
        for n in nodes.values():
            n.children = []
        for key in sorted(nodes):
            p = nodes[key].parent
            if p is not None:
                nodes[p].children.append(key)
        self.subtree: dict[NodeKey, dict[FR, int]] = {}
        for key in nodes:
            self._subtree(key)

    @classmethod
    def from_scenario(cls, sc: Scenario) -> TreeModel:
        nodes: dict[NodeKey, ModelNode] = {}

        def quotas(groups: Sequence[GroupGen]) -> dict[FR, QuotaGen]:
            return {(f, r): q for g in groups for f in g.flavors for r, q in g.quotas[f].items()}

        referenced = {q.cohort for q in sc.cqs if q.cohort} | {c.parent for c in sc.cohorts if c.parent}
        for c in sc.cohorts:
            if c.explicit or c.name in referenced:
                nodes[("cohort", c.name)] = ModelNode(
                    ("cohort", c.name),
                    ("cohort", c.parent) if c.parent and c.explicit else None,
                    quotas(c.groups) if c.explicit else {},
                )
        for q in sc.cqs:
            nodes[("cq", q.name)] = ModelNode(
                ("cq", q.name), ("cohort", q.cohort) if q.cohort else None, quotas(q.groups)
            )
        return cls(nodes)

    def _subtree(self, key: NodeKey) -> dict[FR, int]:
        if key in self.subtree:
            return self.subtree[key]
        n = self.nodes[key]
        out = {fr: q.nominal for fr, q in n.quotas.items()}
        for c in n.children:
            for fr, v in self._subtree(c).items():
                out[fr] = out.get(fr, 0) + v - self.local_quota(c, fr)
        self.subtree[key] = out
        return out

    def local_quota(self, key: NodeKey, fr: FR) -> int:
        q = self.nodes[key].quotas.get(fr)
        if q is None or q.lending_limit is None:
            return 0
        return max(0, self._subtree(key).get(fr, 0) - q.lending_limit)

    def root(self, key: NodeKey) -> NodeKey:
        while self.nodes[key].parent is not None:
            key = self.nodes[key].parent  # type: ignore[assignment]
        return key

    def subtree_cqs(self, key: NodeKey) -> list[str]:
        if key[0] == "cq":
            return [key[1]]
        return [cq for c in self.nodes[key].children for cq in self.subtree_cqs(c)]

    def total_nominal(self, key: NodeKey, fr: FR) -> int:
        q = self.nodes[key].quotas.get(fr)
        own = q.nominal if q else 0
        return own + sum(self.total_nominal(c, fr) for c in self.nodes[key].children)

    def usage(self, cq_usage: Mapping[str, Mapping[FR, int]]) -> dict[NodeKey, dict[FR, int]]:
        """Usage of every node: CQs from ``cq_usage``, cohorts Σ max(0, child usage − localQuota)."""
        out: dict[NodeKey, dict[FR, int]] = {}

        def walk(key: NodeKey) -> dict[FR, int]:
            if key in out:
                return out[key]
            if key[0] == "cq":
                u = {fr: v for fr, v in cq_usage.get(key[1], {}).items() if v}
            else:
                u = {}
                for c in self.nodes[key].children:
                    for fr, v in walk(c).items():
                        contribution = max(0, v - self.local_quota(c, fr))
                        if contribution:
                            u[fr] = u.get(fr, 0) + contribution
            out[key] = u
            return u

        for key in self.nodes:
            walk(key)
        return out

    def violations(self, cq_usage: Mapping[str, Mapping[FR, int]]) -> list[str]:
        """Quota constraints broken by ``cq_usage`` (invariant 1), as messages."""
        return list(self.violated_constraints(cq_usage).values())

    def violated_constraints(self, cq_usage: Mapping[str, Mapping[FR, int]]) -> dict[tuple[NodeKey, FR], str]:
        """Quota constraints broken by ``cq_usage``, keyed by (node, flavor-resource):

        * a root never uses more than its subtree quota;
        * a node with a borrowing limit never uses more than subtree quota + borrowing limit.
        """
        usage = self.usage(cq_usage)
        out: dict[tuple[NodeKey, FR], str] = {}
        for key, n in sorted(self.nodes.items()):
            frs = set(usage[key]) | set(self.subtree[key])
            for fr in sorted(frs):
                u = usage[key].get(fr, 0)
                sq = self.subtree[key].get(fr, 0)
                if n.parent is None and u > sq:
                    out[(key, fr)] = f"root {key} uses {u} of {fr} > subtree quota {sq}"
                q = n.quotas.get(fr)
                bl = q.borrowing_limit if q is not None and n.parent is not None else None
                if bl is not None and u > sq + bl:
                    out[(key, fr)] = f"{key} uses {u} of {fr} > subtree quota {sq} + borrowingLimit {bl}"
        return out

    def lending_violations(self, cq_usage: Mapping[str, Mapping[FR, int]]) -> list[str]:
        """Invariant 2, in raw CQ usages: for every non-root node X with lendingLimit LL, the CQs
        outside X's subtree together use at most (all nominal quota outside X's subtree)
        + min(LL, subtreeQuota(X)) − what X itself takes from its parent.

        This follows from the root constraint through the tree formulas, and says that X lends
        no more than LL and what X takes from its parent is not lent to others at the same time.
        """
        usage = self.usage(cq_usage)
        out: list[str] = []
        for key, n in sorted(self.nodes.items()):
            if n.parent is None:
                continue
            root = self.root(key)
            inside = set(self.subtree_cqs(key))
            others = [cq for cq in self.subtree_cqs(root) if cq not in inside]
            for fr, q in sorted(n.quotas.items()):
                if q.lending_limit is None:
                    continue
                used_by_others = sum(cq_usage.get(cq, {}).get(fr, 0) for cq in others)
                sq = self.subtree[key].get(fr, 0)
                lq = self.local_quota(key, fr)
                own_outside = self.total_nominal(root, fr) - self.total_nominal(key, fr)
                bound = own_outside + min(q.lending_limit, sq) - max(0, usage[key].get(fr, 0) - lq)
                if used_by_others > bound:
                    out.append(
                        f"CQs outside {key} use {used_by_others} of {fr} > {bound} "
                        f"(nominal outside {own_outside}, lendingLimit {q.lending_limit}, subtree {sq})"
                    )
        return out

    def max_addable(self, cq: str, fr: FR, cq_usage: Mapping[str, Mapping[FR, int]], hi: int) -> int:
        """The largest v ≤ hi such that ``cq`` holding v more of ``fr`` breaks no constraint."""

        def ok(v: int) -> bool:
            trial = {k: dict(u) for k, u in cq_usage.items()}
            trial.setdefault(cq, {})
            trial[cq][fr] = trial[cq].get(fr, 0) + v
            return not self.violations(trial)

        if not ok(0):
            return -1
        lo, top = 0, hi
        while lo < top:
            mid = (lo + top + 1) // 2
            if ok(mid):
                lo = mid
            else:
                top = mid - 1
        return lo


# --- strategies ------------------------------------------------------------------------------------

CPU_QUOTA = st.sampled_from([4000, 6000, 2000, 8000, 3000, 10000, 1000, 0])
MEM_QUOTA = st.sampled_from([8, 12, 4, 6, 10, 2, 1, 0])
CPU_REQ = st.sampled_from([1000, 500, 1500, 2000])
MEM_REQ = st.sampled_from([1, 2, 3])


def _amount(resource: str) -> st.SearchStrategy[int]:
    return CPU_QUOTA if resource == CPU else MEM_QUOTA


@st.composite
def quota_gen(draw: st.DrawFn, resource: str, has_parent: bool, lending_within_nominal: bool) -> QuotaGen:
    nominal = draw(_amount(resource))
    bl = ll = None
    if has_parent:
        if draw(st.booleans()):
            bl = draw(_amount(resource))
        if draw(st.booleans()):
            ll = draw(_amount(resource))
            if lending_within_nominal:
                ll = min(ll, nominal)
    return QuotaGen(nominal, bl, ll)


@st.composite
def groups_gen(
    draw: st.DrawFn,
    resources: tuple[str, ...],
    flavors: tuple[str, ...],
    has_parent: bool,
    lending_within_nominal: bool,
    allow_split: bool,
) -> list[GroupGen]:
    """One resource group over all resources, or (2 resources, ≥2 flavors) one group per resource."""
    order = draw(st.permutations(flavors))
    if allow_split and len(resources) == 2 and len(flavors) >= 2 and draw(st.integers(0, 3)) == 0:
        cut = draw(st.integers(1, len(order) - 1))
        parts = [(resources[:1], tuple(order[:cut])), (resources[1:], tuple(order[cut:]))]
    else:
        n = draw(st.integers(1, len(order)))
        parts = [(resources, tuple(order[:n]))]
    out = []
    for covered, fls in parts:
        quotas = {
            f: {r: draw(quota_gen(r, has_parent, lending_within_nominal)) for r in covered} for f in fls
        }
        out.append(GroupGen(tuple(covered), fls, quotas))
    return out


PREEMPTION_WITHIN = st.sampled_from(
    [PREEMPT_NEVER, PREEMPT_LOWER_PRIORITY, PREEMPT_LOWER_OR_NEWER_EQUAL_PRIORITY]
)
PREEMPTION_RECLAIM = st.sampled_from([PREEMPT_NEVER, PREEMPT_LOWER_PRIORITY, PREEMPT_ANY])
WEIGHTS = st.sampled_from([None, "1", "2", "500m", "0"])


@st.composite
def cq_gen(
    draw: st.DrawFn, name: str, resources: tuple[str, ...], flavors: tuple[str, ...], cohorts: Sequence[str]
) -> CQGen:
    cohort_name = draw(st.sampled_from([*cohorts, ""])) if cohorts else ""
    groups = draw(groups_gen(resources, flavors, bool(cohort_name), True, True))
    within = draw(PREEMPTION_WITHIN)
    reclaim = draw(PREEMPTION_RECLAIM)
    borrow_within = ""
    threshold = None
    if reclaim != PREEMPT_NEVER and draw(st.booleans()):
        borrow_within = draw(st.sampled_from([PREEMPT_NEVER, PREEMPT_LOWER_PRIORITY]))
        threshold = draw(st.one_of(st.none(), st.integers(0, 3)))
    preference = draw(st.sampled_from(["", "", BORROWING_OVER_PREEMPTION, PREEMPTION_OVER_BORROWING]))
    if preference:
        wcb = wcp = TRY_NEXT_FLAVOR
    else:
        wcb = draw(st.sampled_from([MAY_STOP_SEARCH, TRY_NEXT_FLAVOR]))
        wcp = draw(st.sampled_from([TRY_NEXT_FLAVOR, MAY_STOP_SEARCH]))
    return CQGen(
        name=name,
        cohort=cohort_name,
        groups=groups,
        within=within,
        reclaim=reclaim,
        borrow_within=borrow_within,
        threshold=threshold,
        strategy=draw(st.sampled_from(["", STRICT_FIFO, BEST_EFFORT_FIFO])),
        when_can_borrow=wcb,
        when_can_preempt=wcp,
        preference=preference,
        weight=draw(WEIGHTS),
    )


@st.composite
def cohorts_gen(draw: st.DrawFn, resources: tuple[str, ...], flavors: tuple[str, ...]) -> list[CohortGen]:
    """0-3 cohorts; cohort i's parent is an earlier cohort (no cycles)."""
    n = draw(st.sampled_from([1, 2, 3, 0]))
    out: list[CohortGen] = []
    for i in range(n):
        name = COHORTS[i]
        parent = draw(st.sampled_from(["", *COHORTS[:i]])) if i > 0 else ""
        explicit = bool(parent) or draw(st.booleans())
        groups: list[GroupGen] = []
        if explicit and draw(st.booleans()):
            fls = tuple(draw(st.lists(st.sampled_from(flavors), min_size=1, unique=True)))
            groups = [
                GroupGen(
                    resources,
                    fls,
                    {f: {r: draw(quota_gen(r, bool(parent), False)) for r in resources} for f in fls},
                )
            ]
        out.append(CohortGen(name, parent, explicit, groups, draw(WEIGHTS) if explicit else None))
    # A parent named by a cohort must exist as a node; an implicit parent is fine (no quota).
    return out


@st.composite
def pod_set_gen(draw: st.DrawFn, resources: tuple[str, ...]) -> PodSetGen:
    used = draw(st.lists(st.sampled_from(resources), min_size=1, unique=True))
    requests = {r: draw(CPU_REQ if r == CPU else MEM_REQ) for r in sorted(used)}
    count = draw(st.integers(1, 3))
    min_count = draw(st.one_of(st.none(), st.integers(1, count))) if count > 1 else None
    return PodSetGen(count, min_count, requests)


@st.composite
def scenario(
    draw: st.DrawFn,
    max_workloads: int = 30,
    max_cqs: int = 6,
    max_steps: int = 8,
    with_steps: bool = True,
) -> Scenario:
    resources = tuple(draw(st.sampled_from([(CPU,), (MEMORY,), (CPU, MEMORY)])))
    flavors = FLAVORS[: draw(st.integers(1, len(FLAVORS)))]
    cohorts = draw(cohorts_gen(resources, flavors))
    n_cq = draw(st.sampled_from([n for n in (3, 4, 2, 5, 6, 1) if n <= max_cqs]))
    cqs = [draw(cq_gen(f"cq{i}", resources, flavors, [c.name for c in cohorts])) for i in range(n_cq)]
    sc = Scenario(resources, flavors, cohorts, cqs, [], draw(st.booleans()))
    model = sc.model()
    held: dict[str, dict[FR, int]] = {}
    n_wl = draw(st.integers(max_workloads // 3, max_workloads) | st.integers(0, max_workloads))
    for i in range(n_wl):
        cq = draw(st.sampled_from(cqs))
        w = WorkloadGen(
            name=f"w{i:02d}",
            cq=cq.name,
            priority=draw(st.integers(0, 3)),
            created=draw(st.integers(0, 20)),
            pod_sets=[draw(pod_set_gen(resources)) for _ in range(draw(st.integers(1, 2)))],
        )
        for ps in [p for p in w.pod_sets if p.min_count is not None][1:]:
            ps.min_count = None  # validation: at most one pod set can use minCount
        if draw(st.integers(0, 2)) == 0:
            # Pre-admit with a random flavor per resource, only if the quota constraints still hold.
            w.admission = [
                {r: draw(st.sampled_from(cq.flavor_for(r))) for r in sorted(ps.requests)} for ps in w.pod_sets
            ]
            trial = {k: dict(v) for k, v in held.items()}
            for fr, v in w.usage().items():
                trial.setdefault(cq.name, {})
                trial[cq.name][fr] = trial[cq.name].get(fr, 0) + v
            if model.violations(trial):
                w.admission = None
            else:
                held = trial
                w.evicted = draw(st.integers(0, 5)) == 0
        if w.admission is None:
            w.inactive = draw(st.integers(0, 4)) == 0
        sc.workloads.append(w)
    if with_steps:
        sc.steps = draw(
            st.lists(
                st.one_of(
                    st.just(Step("cycle")),
                    st.just(Step("cycle")),
                    st.just(Step("advance")),
                    st.builds(Step, st.just("finish"), st.integers(0, 30)),
                    st.builds(Step, st.sampled_from(["activate", "deactivate"]), st.integers(0, 30)),
                ),
                min_size=min(2, max_steps),
                max_size=max_steps,
            )
        )
    return sc


@st.composite
def tree_with_usage(draw: st.DrawFn) -> tuple[Scenario, dict[str, dict[FR, int]]]:
    """A random tree (no workloads) and a random *valid* usage assignment of its CQs."""
    sc = draw(scenario(max_workloads=0, with_steps=False))
    model = sc.model()
    held: dict[str, dict[FR, int]] = {}
    frs = [(f, r) for f in sc.flavors for r in sc.resources]
    for _ in range(draw(st.integers(0, 12))):
        cq = draw(st.sampled_from(sc.cqs))
        fr = draw(st.sampled_from(frs))
        v = draw(CPU_REQ if fr[1] == CPU else MEM_REQ)
        trial = {k: dict(u) for k, u in held.items()}
        trial.setdefault(cq.name, {})
        trial[cq.name][fr] = trial[cq.name].get(fr, 0) + v
        if not model.violations(trial):
            held = trial
    return sc, held


def hold_usage(cache: Any, sc: Scenario, held: Mapping[str, Mapping[FR, int]], extra: int) -> list[FR]:
    """Put ``held`` (from :func:`tree_with_usage`) on ``cache``'s ClusterQueues, then ``extra``
    thousand more of every flavor-resource on one of them (over its quota: borrowing); return the
    flavor-resources, sorted."""
    for cq_name, u in held.items():
        for fr, v in u.items():
            add_usage(cache.cluster_queues[cq_name].node, fr, v)
    frs = sorted({(f, r) for f in sc.flavors for r in sc.resources})
    over = sc.cqs[extra % len(sc.cqs)].name
    for fr in frs:
        add_usage(cache.cluster_queues[over].node, fr, extra * 1000)
    return frs

