"""``pykueue schedule`` reaches the end states of upstream's preemption integration tests.

Each case is an ``It`` of upstream ``test/integration/singlecluster/scheduler/preemption_test.go``
under its name, with the conventions of ``test_schedule_fair_sharing_integration.py``: the
workloads the test creates one by one are given at once unless their order matters (those it waits
to be admitted first already hold their quota), and the evictions it finishes by hand complete in
the dry run. A test whose later steps act on the result of the earlier ones (finishing a workload,
creating another one) feeds the output of one run, so changed, into the next.

Upstream's priorities: low -1, mid 0, high 1, very high 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pykueue.api import manifests
from pykueue.api.config import load_config
from pykueue.api.meta import parse_time
from pykueue.cli.state import Document, admit_state
from pykueue.controllers.options import ControllerOptions
from pykueue.sim.cluster import SimulatedCluster

ROOT = Path(__file__).resolve().parents[2]
NOW = "2025-03-10T09:00:00Z"
NS = "preemption"
LOW, MID, HIGH, VERY_HIGH = -1, 0, 1, 2
REASONS = {
    "InClusterQueue": "prioritization in the ClusterQueue",
    "InCohortReclamation": "reclamation within the cohort",
    "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing",
}

Doc = dict[str, Any]


def flavor(name: str) -> Doc:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name}}


def quota(flv: str, nominal: str, borrowing: str | None = None, lending: str | None = None) -> Doc:
    res: Doc = {"name": "cpu", "nominalQuota": nominal}
    if borrowing is not None:
        res["borrowingLimit"] = borrowing
    if lending is not None:
        res["lendingLimit"] = lending
    return {"name": flv, "resources": [res]}


def cluster_queue(name: str, *quotas: Doc, cohort: str | None = None, **spec: Any) -> Doc:
    body: Doc = {
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": list(quotas)}],
        **spec,
    }
    if cohort:
        body["cohortName"] = cohort
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": body,
    }


def cohort_obj(name: str, parent: str | None = None, *quotas: Doc) -> Doc:
    spec: Doc = {}
    if parent:
        spec["parentName"] = parent
    if quotas:
        spec["resourceGroups"] = [{"coveredResources": ["cpu"], "flavors": list(quotas)}]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Cohort",
        "metadata": {"name": name},
        "spec": spec,
    }


def local_queue(name: str, cq: str) -> Doc:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"namespace": NS, "name": name},
        "spec": {"clusterQueue": cq},
    }


def workload(
    name: str,
    queue: str,
    cpu: str,
    priority: int | None,
    second: int,
    held: tuple[str, str] | None = None,
    count: int = 1,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Doc:
    """A workload created ``second`` s into the test; ``held`` = (ClusterQueue, flavor) when it
    already holds quota there (the test waited for its admission)."""
    ts = f"2025-03-10T08:{second // 60:02d}:{second % 60:02d}Z"
    meta: Doc = {"namespace": NS, "name": name, "creationTimestamp": ts}
    if labels:
        meta["labels"] = labels
    body: Doc = {
        "queueName": queue,
        "podSets": [
            {
                "name": "main",
                "count": count,
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                        ]
                    }
                },
            }
        ],
        **spec,
    }
    if priority is not None:
        body["priority"] = priority
    doc: Doc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": meta, "spec": body}
    if held:
        cq, flv = held
        total = _milli(cpu) * count
        doc["status"] = {
            "admission": {
                "clusterQueue": cq,
                "podSetAssignments": [
                    {
                        "name": "main",
                        "count": count,
                        "flavors": {"cpu": flv},
                        "resourceUsage": {"cpu": f"{total}m"},
                    }
                ],
            },
            "conditions": [
                {"type": t, "status": "True", "reason": t, "message": "m", "lastTransitionTime": ts}
                for t in ("QuotaReserved", "Admitted")
            ],
        }
    return doc


def _milli(q: str) -> int:
    return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)


class Result:
    def __init__(self, items: list[Doc]) -> None:
        self.items = items
        self.wls = {o["metadata"]["name"]: o for o in items if o["kind"] == "Workload"}
        self.events = [o for o in items if o["kind"] == "Event"]

    def cq_of(self, name: str) -> str | None:
        adm = (self.wls[name].get("status") or {}).get("admission")
        return adm["clusterQueue"] if adm else None

    def flavor_of(self, name: str) -> str:
        adm = self.wls[name]["status"]["admission"]
        return str(adm["podSetAssignments"][0]["flavors"]["cpu"])

    def admitted(self, *names: str) -> list[str]:
        return [n for n in names if self.cq_of(n) is not None]

    def cond(self, name: str, ctype: str) -> Doc | None:
        for c in (self.wls[name].get("status") or {}).get("conditions", []):
            if c["type"] == ctype:
                return dict(c)
        return None

    def uid(self, name: str) -> str:
        return str(self.wls[name]["metadata"]["uid"])

    def preempted(self, name: str) -> bool:
        c = self.cond(name, "Preempted")
        return c is not None and c["status"] == "True"

    def workload_docs(self) -> list[Doc]:
        """The state to feed into the next run: everything but the events."""
        return [o for o in self.items if o["kind"] != "Event"]


def run(docs: list[Doc], tmp_path: Path, gates: str | None = None) -> Result:
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    args = [sys.executable, "-m", "pykueue", "schedule", "-f", str(state), "--until-quiet", "--now", NOW]
    args += ["-o", "json", "--show-events"]
    if gates:
        args += ["--feature-gates", gates]
    proc = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    return Result(out["items"] if isinstance(out, dict) else out)


def finish(res: Result, *names: str) -> list[Doc]:
    """``util.FinishWorkloads``: the named workloads get ``Finished``."""
    docs = res.workload_docs()
    for d in docs:
        if d["kind"] == "Workload" and d["metadata"]["name"] in names:
            d["status"].setdefault("conditions", []).append(
                {
                    "type": "Finished",
                    "status": "True",
                    "reason": "ByTest",
                    "message": "Finished by test",
                    "lastTransitionTime": NOW,
                }
            )
    return docs


def preempted_message(
    reason: str, preemptor_uid: str, job_uid: str, preemptor_path: str, preemptee_path: str
) -> str:
    return (
        f"Preempted to accommodate a workload (UID: {preemptor_uid}, JobUID: {job_uid}) due to {REASONS[reason]}; "
        f"preemptor path: {preemptor_path}; preemptee path: {preemptee_path}"
    )


def expect_preempted(
    res: Result,
    name: str,
    reason: str,
    preemptor: str,
    pre_path: str,
    target_path: str,
    job_uid: str = "UNKNOWN",
    readmitted: bool = False,
) -> None:
    """``util.ExpectPreemptedCondition``; once the workload is admitted again (``readmitted``) the
    condition is False, ``QuotaReserved``, its message prefixed ``Previously: ``, and the
    ``Preempted`` event keeps what it said."""
    c = res.cond(name, "Preempted")
    assert c is not None, f"{name} has no Preempted condition"
    msg = preempted_message(reason, res.uid(preemptor), job_uid, pre_path, target_path)
    if readmitted:
        assert (c["status"], c["reason"], c["message"]) == ("False", "QuotaReserved", "Previously: " + msg)
    else:
        assert (c["status"], c["reason"], c["message"]) == ("True", reason, msg)
    notes = [e["note"] for e in res.events if e["reason"] == "Preempted" and e["regarding"]["name"] == name]
    assert len(notes) == 1 and notes[0].startswith(msg + "; preemptor effective priority: "), notes


def expect_evicted_by_preemption(res: Result, *names: str) -> None:
    """``util.ExpectWorkloadsToBePreempted`` then ``FinishEvictionForWorkloads``: evicted by
    ``Preempted``, no longer holding quota."""
    for n in names:
        ev = res.cond(n, "Evicted")
        assert ev is not None and (ev["status"], ev["reason"]) == ("True", "Preempted"), (n, ev)
        assert res.preempted(n), n
        assert res.cq_of(n) is None, n


# --- In a single ClusterQueue -------------------------------------------------------------------


def _single_cq(cpu: str = "4", policy: str = "LowerOrNewerEqualPriority") -> list[Doc]:
    return [
        flavor("alpha"),
        cluster_queue("cq", quota("alpha", cpu), preemption={"withinClusterQueue": policy}),
        local_queue("q", "cq"),
    ]


def test_should_preempt_workloads_with_lower_priority_when_there_is_not_enough_quota(tmp_path: Path) -> None:
    held = ("cq", "alpha")
    docs = [
        *_single_cq(),
        workload("low-wl-1", "q", "1", LOW, 1, held),
        workload("low-wl-2", "q", "1", LOW, 2, held),
        workload("mid-wl", "q", "1", MID, 3, held),
        workload("high-wl-1", "q", "1", HIGH, 4, held),
        workload("low-wl-3", "q", "1", LOW, 10),
        workload("high-wl-2", "q", "2", HIGH, 20),
    ]
    res = run(docs, tmp_path)
    expect_evicted_by_preemption(res, "low-wl-1", "low-wl-2")
    for n in ("low-wl-1", "low-wl-2"):
        expect_preempted(res, n, "InClusterQueue", "high-wl-2", "/cq", "/cq")
    assert res.cq_of("high-wl-2") == "cq"
    assert res.admitted("low-wl-1", "low-wl-2", "low-wl-3") == []
    assert res.admitted("mid-wl", "high-wl-1", "high-wl-2") == ["mid-wl", "high-wl-1", "high-wl-2"]


def test_should_preempt_newer_workloads_with_the_same_priority_when_there_is_not_enough_quota(
    tmp_path: Path,
) -> None:
    held = ("cq", "alpha")
    # wl-1 and wl-2 admitted, wl-3 (3 CPU) pending, then wl-4 (newer) admitted beside them.
    first = run(
        [
            *_single_cq(),
            workload("wl-1", "q", "1", LOW, 1, held),
            workload("wl-2", "q", "1", LOW, 2, held),
            workload("wl-3", "q", "3", LOW, 3),
            workload("wl-4", "q", "1", LOW, 5),
        ],
        tmp_path,
    )
    assert first.admitted("wl-1", "wl-2", "wl-3", "wl-4") == ["wl-1", "wl-2", "wl-4"]
    # Finishing wl-1 lets wl-3 preempt the newer wl-4.
    res = run(finish(first, "wl-1"), tmp_path)
    assert res.cq_of("wl-3") == "cq"
    expect_evicted_by_preemption(res, "wl-4")
    expect_preempted(res, "wl-4", "InClusterQueue", "wl-3", "/cq", "/cq")
    assert res.admitted("wl-2", "wl-3", "wl-4") == ["wl-2", "wl-3"]


def _preemptor_events(res: Result, reason: str) -> list[Doc]:
    return [e for e in res.events if e["reason"] == reason and e["regarding"]["kind"] == "Workload"]


def test_should_issue_preemption_exactly_once_for_each_preempted_workload(tmp_path: Path) -> None:
    lows = [f"low-priority-wl-{i + 1}" for i in range(8)]
    prio_ref = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "low-priority"}
    high_ref = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high-priority"}
    docs = _single_cq() + [
        workload(n, "q", "500m", 10, i, ("cq", "alpha"), priorityClassRef=prio_ref)
        for i, n in enumerate(lows)
    ]
    docs.append(workload("first-high-prio", "q", "4", 100, 20, priorityClassRef=high_ref))
    res = run(docs, tmp_path)
    expect_evicted_by_preemption(res, *lows)
    assert res.cq_of("first-high-prio") == "cq"
    # One Preempted event per preempted workload; the preemptor's PreemptedWorkload events share
    # (action, reason, regarding), which events.k8s.io/v1 collapses into one Event with a series.
    preempted = Counter(e["regarding"]["name"] for e in _preemptor_events(res, "Preempted"))
    assert preempted == Counter(lows)
    keys = {
        (e["action"], e["reason"], e["regarding"]["name"])
        for e in _preemptor_events(res, "PreemptedWorkload")
    }
    assert keys == {("PreemptedWorkload", "PreemptedWorkload", "first-high-prio")}

    # Finishing the first high priority workload re-admits all low priority ones...
    again = run(finish(res, "first-high-prio"), tmp_path)
    assert again.admitted(*lows) == lows
    # ...which a second high priority workload preempts again, each exactly once.
    docs = [
        *again.workload_docs(),
        workload("second-high-prio", "q", "4", 100, 40, priorityClassRef=high_ref),
    ]
    last = run(docs, tmp_path)
    expect_evicted_by_preemption(last, *lows)
    assert last.cq_of("second-high-prio") == "cq"
    assert Counter(e["regarding"]["name"] for e in _preemptor_events(last, "Preempted")) == Counter(lows)
    keys = {
        (e["action"], e["reason"], e["regarding"]["name"])
        for e in _preemptor_events(last, "PreemptedWorkload")
    }
    assert keys == {("PreemptedWorkload", "PreemptedWorkload", "second-high-prio")}


def test_should_include_job_uid_in_preemption_condition_when_the_label_is_set(tmp_path: Path) -> None:
    docs = [
        *_single_cq(),
        workload("low", "q", "4", LOW, 1, ("cq", "alpha")),
        workload("high", "q", "4", HIGH, 10, labels={"kueue.x-k8s.io/job-uid": "job-uid"}),
    ]
    res = run(docs, tmp_path)
    expect_preempted(res, "low", "InClusterQueue", "high", "/cq", "/cq", job_uid="job-uid")
    assert res.cq_of("high") == "cq"


# --- In a ClusterQueue that is part of a cohort ------------------------------------------------

ANY_LOWER = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}


def _cohort_all() -> list[Doc]:
    return [
        flavor("alpha"),
        cluster_queue("alpha-cq", quota("alpha", "2"), cohort="all", preemption=ANY_LOWER),
        local_queue("alpha-q", "alpha-cq"),
        cluster_queue("beta-cq", quota("alpha", "2"), cohort="all"),
        local_queue("beta-q", "beta-cq"),
        cluster_queue("gamma-cq", quota("alpha", "2"), cohort="all", preemption=ANY_LOWER),
        local_queue("gamma-q", "gamma-cq"),
    ]


def test_should_preempt_workloads_in_the_cohort_borrowing_quota_when_the_cluster_queue_is_using_less_than_nominal_quota(
    tmp_path: Path,
) -> None:
    alpha, beta = ("alpha-cq", "alpha"), ("beta-cq", "alpha")
    docs = [
        *_cohort_all(),
        workload("alpha-low", "alpha-q", "1", LOW, 1, alpha),
        workload("beta-mid", "beta-q", "1", MID, 2, beta),
        workload("beta-high", "beta-q", "4", HIGH, 3, beta),
        workload("alpha-mid", "alpha-q", "2", MID, 10),
    ]
    res = run(docs, tmp_path)
    assert res.cq_of("alpha-mid") == "alpha-cq"
    assert res.cq_of("beta-high") == "beta-cq"
    expect_evicted_by_preemption(res, "alpha-low", "beta-mid")
    expect_preempted(res, "alpha-low", "InClusterQueue", "alpha-mid", "/all/alpha-cq", "/all/alpha-cq")
    expect_preempted(res, "beta-mid", "InCohortReclamation", "alpha-mid", "/all/alpha-cq", "/all/beta-cq")

    # The preemptor finishes: both are re-admitted, their Preempted condition False, "Previously: ...".
    again = run(finish(res, "alpha-mid"), tmp_path)
    assert again.cq_of("alpha-low") == "alpha-cq"
    assert (again.cq_of("beta-mid"), again.cq_of("beta-high")) == ("beta-cq", "beta-cq")
    for name, reason, path in (
        ("alpha-low", "InClusterQueue", "/all/alpha-cq"),
        ("beta-mid", "InCohortReclamation", "/all/beta-cq"),
    ):
        c = again.cond(name, "Preempted")
        assert c is not None
        msg = "Previously: " + preempted_message(
            reason, res.uid("alpha-mid"), "UNKNOWN", "/all/alpha-cq", path
        )
        assert (c["status"], c["reason"], c["message"], c.get("observedGeneration")) == (
            "False",
            "QuotaReserved",
            msg,
            again.wls[name]["metadata"].get("generation"),
        )


def test_should_not_preempt_workloads_in_the_cohort_if_the_cluster_queue_requires_borrowing(
    tmp_path: Path,
) -> None:
    docs = [
        *_cohort_all(),
        workload("alpha-high-1", "alpha-q", "2", HIGH, 1, ("alpha-cq", "alpha")),
        workload("beta-low", "beta-q", "4", LOW, 2, ("beta-cq", "alpha")),
        workload("alpha-high-2", "alpha-q", "2", HIGH, 10),
    ]
    res = run(docs, tmp_path)
    assert res.cq_of("alpha-high-2") is None
    assert (res.cq_of("alpha-high-1"), res.cq_of("beta-low")) == ("alpha-cq", "beta-cq")
    assert not any(res.preempted(n) for n in res.wls)


def test_should_preempt_all_necessary_workloads_in_concurrent_scheduling_with_different_priorities(
    tmp_path: Path,
) -> None:
    beta = ("beta-cq", "alpha")
    docs = [
        *_cohort_all(),
        workload("beta-mid", "beta-q", "3", MID, 1, beta),
        workload("beta-high", "beta-q", "3", HIGH, 2, beta),
        workload("alpha-mid", "alpha-q", "2", MID, 10),
        workload("gamma-mid", "gamma-q", "2", MID, 11),
    ]
    res = run(docs, tmp_path)
    assert (res.cq_of("alpha-mid"), res.cq_of("gamma-mid")) == ("alpha-cq", "gamma-cq")
    expect_evicted_by_preemption(res, "beta-mid", "beta-high")
    assert res.cond("beta-mid", "Preempted")["reason"] == "InCohortReclamation"  # type: ignore[index]
    assert res.cond("beta-high", "Preempted")["reason"] == "InCohortReclamation"  # type: ignore[index]

    # In process, upstream's interim: once beta-mid's eviction is finished (beta-high's is not),
    # exactly one of alpha-mid and gamma-mid is admitted and beta-high still holds its quota.
    cluster = _simulated(docs)
    hold_evictions(cluster, {("Workload", NS, "beta-high")})
    for _ in range(5):
        cluster.run(cycles=1)
        cluster.advance(1.0)

    def reserved(name: str) -> bool:
        wl = cluster.get_workload(f"{NS}/{name}")
        return wl is not None and wl.status.admission is not None

    assert [reserved("alpha-mid"), reserved("gamma-mid")].count(True) == 1
    assert reserved("beta-high") and not reserved("beta-mid")


def _same_priority(tmp_path: Path, gate: str) -> None:
    betas = [f"beta-{i}" for i in range(3)]
    docs = _cohort_all() + [
        workload(n, "beta-q", "2", None, i, ("beta-cq", "alpha")) for i, n in enumerate(betas)
    ]
    docs += [workload("alpha", "alpha-q", "2", None, 10), workload("gamma", "gamma-q", "2", None, 11)]
    res = run(docs, tmp_path, gates=f"RecomputeAssignmentUponPreemptionTargetsOverlap={gate}")
    evicted = [n for n in betas if res.preempted(n)]
    assert len(evicted) == 2
    expect_evicted_by_preemption(res, *evicted)
    assert (res.cq_of("alpha"), res.cq_of("gamma")) == ("alpha-cq", "gamma-cq")
    assert len(res.admitted(*betas)) == 1

    # Upstream waits, before finishing any eviction, for 2 evicted workloads with the gate on (the
    # second preemptor recomputes its targets), for 1 with it off (the second one is skipped for
    # overlapping targets). In process, no eviction completes until then.
    cluster = _simulated(docs, f"RecomputeAssignmentUponPreemptionTargetsOverlap={gate}")
    cluster._complete_evictions = lambda: False  # type: ignore[method-assign]

    def evicted_now() -> list[str]:
        out = []
        for n in betas:
            wl = cluster.get_workload(f"{NS}/{n}")
            assert wl is not None
            if any(c.type == "Evicted" and c.status == "True" for c in wl.status.conditions):
                out.append(n)
        return out

    for _ in range(5):
        cluster.run(cycles=1)
        cluster.advance(1.0)
    assert len(evicted_now()) == (2 if gate == "true" else 1)


def test_should_preempt_all_necessary_workloads_in_concurrent_scheduling_with_the_same_priority_recompute_true(
    tmp_path: Path,
) -> None:
    """(RecomputeAssignmentUponPreemptionTargetsOverlap=true)"""
    _same_priority(tmp_path, "true")


def test_should_preempt_all_necessary_workloads_in_concurrent_scheduling_with_the_same_priority_recompute_false(
    tmp_path: Path,
) -> None:
    """(RecomputeAssignmentUponPreemptionTargetsOverlap=false)"""
    _same_priority(tmp_path, "false")


# --- In a cohort with StrictFIFO -----------------------------------------------------------------


def test_should_reclaim_from_cohort_even_if_another_cq_has_pending_workloads(tmp_path: Path) -> None:
    docs = [flavor("alpha"), flavor("one")]
    for name in ("alpha", "beta"):
        docs.append(
            cluster_queue(
                f"{name}-cq",
                quota("one", "2"),
                cohort="all",
                queueingStrategy="StrictFIFO",
                preemption=ANY_LOWER,
            )
        )
        docs.append(local_queue(f"{name}-lq", f"{name}-cq"))
    docs += [
        workload("use-all", "alpha-lq", "4", 1, 1, ("alpha-cq", "one")),
        workload("pending", "alpha-lq", "1", 0, 2),
        workload("preemptor", "beta-lq", "1", -1, 10),
    ]
    res = run(docs, tmp_path)
    expect_evicted_by_preemption(res, "use-all")
    assert res.cq_of("preemptor") == "beta-cq"


# --- When most quota is in a shared ClusterQueue in a cohort -------------------------------------


def test_should_allow_preempting_workloads_while_borrowing_shared_cluster_queue(tmp_path: Path) -> None:
    """``When most quota is in a shared ClusterQueue in a cohort``: should allow preempting workloads while borrowing"""
    docs = [flavor("alpha"), flavor("one"), flavor("fallback")]
    fung = {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}
    for name, threshold in (
        ("a-standard", MID),
        ("a-best-effort", None),
        ("b-best-effort", None),
        ("b-standard", MID),
    ):
        bwc: Doc = {"policy": "LowerPriority"}
        if threshold is not None:
            bwc["maxPriorityThreshold"] = threshold
        docs.append(
            cluster_queue(
                f"{name}-cq",
                quota("one", "1", "10"),
                quota("fallback", "10", "0"),
                cohort="all",
                flavorFungibility=fung,
                preemption={"reclaimWithinCohort": "LowerPriority", "borrowWithinCohort": bwc},
            )
        )
        docs.append(local_queue(f"{name}-lq", f"{name}-cq"))
    docs.append(cluster_queue("shared-cq", quota("one", "10"), cohort="all"))
    docs += [
        workload("a-best-effort-low", "a-best-effort-lq", "5", LOW, 1, ("a-best-effort-cq", "one")),
        workload("b-best-effort-low", "b-best-effort-lq", "1", LOW, 2, ("b-best-effort-cq", "one")),
        workload("b-standard-high", "b-standard-lq", "5", HIGH, 3, ("b-standard-cq", "one")),
        workload("a-standard-very-high", "a-standard-lq", "7", VERY_HIGH, 10),
    ]
    res = run(docs, tmp_path)
    expect_preempted(
        res,
        "a-best-effort-low",
        "InCohortReclaimWhileBorrowing",
        "a-standard-very-high",
        "/all/a-standard-cq",
        "/all/a-best-effort-cq",
        readmitted=True,
    )
    assert (res.cq_of("a-standard-very-high"), res.flavor_of("a-standard-very-high")) == (
        "a-standard-cq",
        "one",
    )
    # Re-admitted, on the fallback flavor.
    assert (res.cq_of("a-best-effort-low"), res.flavor_of("a-best-effort-low")) == (
        "a-best-effort-cq",
        "fallback",
    )
    assert (res.cq_of("b-standard-high"), res.flavor_of("b-standard-high")) == ("b-standard-cq", "one")
    assert (res.cq_of("b-best-effort-low"), res.flavor_of("b-best-effort-low")) == ("b-best-effort-cq", "one")


# --- With lending limit ------------------------------------------------------------------------


def test_should_be_able_to_preempt_when_lending_limit_enabled(tmp_path: Path) -> None:
    docs = [
        flavor("alpha"),
        cluster_queue(
            "prod-cq",
            quota("alpha", "5", lending="4"),
            cohort="all",
            preemption={"reclaimWithinCohort": "Any"},
        ),
        cluster_queue("dev-cq", quota("alpha", "5"), cohort="all"),
        local_queue("prod-queue", "prod-cq"),
        local_queue("dev-queue", "dev-cq"),
        workload("wl-1", "dev-queue", "4", 0, 1, ("dev-cq", "alpha")),
        workload("wl-2", "dev-queue", "5", 1, 2, ("dev-cq", "alpha")),
        workload("wl-3", "prod-queue", "4", None, 10),
    ]
    res = run(docs, tmp_path)
    expect_evicted_by_preemption(res, "wl-1")
    assert (res.cq_of("wl-3"), res.flavor_of("wl-3")) == ("prod-cq", "alpha")


# --- When borrowWithinCohort is used and PrioritySortingWithinCohort disabled -----------------


def test_should_allow_preempting_workloads_while_borrowing_priority_sorting_within_cohort_disabled(
    tmp_path: Path,
) -> None:
    """``When borrowWithinCohort is used and PrioritySortingWithinCohort disabled``: should allow preempting workloads while borrowing"""
    fung = {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}
    any_lower = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    docs = [
        flavor("alpha"),
        flavor("default"),
        cluster_queue(
            "a-cq", quota("default", "0", "10"), cohort="all", flavorFungibility=fung, preemption=any_lower
        ),
        local_queue("a-lq", "a-cq"),
        cluster_queue(
            "b-cq",
            quota("default", "5", "5"),
            cohort="all",
            flavorFungibility=fung,
            preemption={
                **any_lower,
                "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": VERY_HIGH},
            },
        ),
        local_queue("b-lq", "b-cq"),
        cluster_queue(
            "c-cq", quota("default", "5"), cohort="all", flavorFungibility=fung, preemption=any_lower
        ),
        workload("a-low", "a-lq", "4", MID, 1, ("a-cq", "default")),
        workload("b1-high", "b-lq", "4", HIGH, 2, ("b-cq", "default")),
        workload("b2-high", "b-lq", "4", HIGH, 10),
    ]
    res = run(docs, tmp_path, gates="PrioritySortingWithinCohort=false")
    expect_evicted_by_preemption(res, "a-low")
    assert (res.cq_of("b1-high"), res.cq_of("b2-high")) == ("b-cq", "b-cq")


# --- In a multi-level cohort -----------------------------------------------------------------------


def test_workloads_in_guaranteed_cq_should_have_preferential_access_to_the_resources(tmp_path: Path) -> None:
    lower_any = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
    docs = [
        flavor("alpha"),
        flavor("default"),
        cohort_obj("root"),
        cohort_obj("guaranteed", "root", quota("default", "3")),
        cluster_queue("best-effort", quota("default", "0"), cohort="root", preemption=lower_any),
        cluster_queue("guaranteed", quota("default", "0"), cohort="guaranteed", preemption=lower_any),
        local_queue("best-effort-lq", "best-effort"),
        local_queue("guaranteed-lq", "guaranteed"),
        workload("best-effort-wl", "best-effort-lq", "3", HIGH, 1, ("best-effort", "default")),
        workload("guaranteed-wl", "guaranteed-lq", "3", MID, 10),
    ]
    res = run(docs, tmp_path)
    expect_evicted_by_preemption(res, "best-effort-wl")
    assert res.cq_of("guaranteed-wl") == "guaranteed"


# --- In a cohort with multiple queues --------------------------------------------------------------


def test_should_prevent_other_workloads_from_stealing_quota_when_a_preemptor_is_waiting_for_multiple_evictions(
    tmp_path: Path,
) -> None:
    docs = [flavor("alpha"), flavor("one")]
    for name, nominal, reclaim in (
        ("alpha", "2", "Any"),
        ("beta", "1", "LowerPriority"),
        ("gamma", "1", "LowerPriority"),
    ):
        docs.append(
            cluster_queue(
                f"{name}-cq",
                quota("one", nominal),
                cohort="all",
                preemption={
                    "withinClusterQueue": "LowerPriority",
                    "reclaimWithinCohort": reclaim,
                    "borrowWithinCohort": {"policy": "LowerPriority"},
                },
            )
        )
        docs.append(local_queue(f"{name}-lq", f"{name}-cq"))
    docs += [
        workload("wl-a", "alpha-lq", "1", MID, 1, ("alpha-cq", "one")),
        workload("wl-b", "beta-lq", "3", MID, 2, ("beta-cq", "one")),
        workload("wl-c", "gamma-lq", "1", LOW, 10),
        workload("preemptor", "alpha-lq", "4", HIGH, 20),
    ]
    gates = "UnadmittedWorkloadsObservability=true,PrioritizePreemptorWorkloads=true"
    res = run(docs, tmp_path, gates=gates)
    expect_evicted_by_preemption(res, "wl-a", "wl-b")
    assert res.cq_of("preemptor") == "alpha-cq"
    assert res.cq_of("wl-c") is None

    # In between, in process: only wl-b's eviction completes; wl-a's waits (upstream finishes it
    # by hand later), and wl-c must not take the quota wl-b freed meanwhile.
    cluster = _simulated(docs, gates)
    held = {("Workload", NS, "wl-a")}
    hold_evictions(cluster, held)

    def reserved(name: str) -> bool:
        wl = cluster.get_workload(f"{NS}/{name}")
        return wl is not None and wl.status.admission is not None

    def evicted(name: str) -> bool:
        wl = cluster.get_workload(f"{NS}/{name}")
        return wl is not None and any(
            c.type == "Evicted" and c.status == "True" for c in wl.status.conditions
        )

    for _ in range(5):  # wl-c and the preemptor are heads of the first cycle together
        if evicted("wl-a") and evicted("wl-b"):
            break
        cluster.run(cycles=1)
        cluster.advance(1.0)
    for _ in range(5):  # upstream's Consistently
        assert evicted("wl-a") and evicted("wl-b")
        assert reserved("wl-a") and not reserved("wl-b")
        assert not reserved("wl-c") and not reserved("preemptor")
        cluster.run(cycles=1)
        cluster.advance(1.0)
    held.clear()
    wls = _quiet(cluster)
    assert wls["preemptor"].status.admission is not None
    assert wls["wl-c"].status.admission is None


# --- Queue head is preemption gated ---------------------------------------------------------------


def test_should_not_block_lower_priority_workloads_while_the_preemption_gate_is_closed(
    tmp_path: Path,
) -> None:
    docs = [
        *_single_cq("2", "LowerPriority"),
        workload("low", "q", "1.5", LOW, 1, ("cq", "alpha")),
        workload("high", "q", "1", HIGH, 10, preemptionGates=[{"name": "testgate"}]),
        workload("low2", "q", "0.5", LOW, 20),
    ]
    res = run(docs, tmp_path, gates="MultiKueueOrchestratedPreemption=true")
    assert res.cq_of("low") == "cq" and not res.preempted("low")
    assert res.cq_of("high") is None
    assert res.cq_of("low2") == "cq"


def _simulated(docs: list[Doc], gates: str | None = None) -> SimulatedCluster:
    """The cluster ``pykueue schedule`` loads, in process (for a step the CLI cannot express)."""
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    options = ControllerOptions.from_config(load_config(None, source="<config>", feature_gates_flag=gates))
    documents = [
        Document(obj, "state", index)
        for index, doc in manifests.load_yaml_documents(text, source="state")
        for obj in manifests.flatten(doc, "state", index)
    ]
    state = admit_state(documents, options, validate=True)
    cluster = SimulatedCluster(options.scheduler, parse_time(NOW))
    cluster.load(state.objects)
    return cluster


def hold_evictions(cluster: SimulatedCluster, held: set[tuple[str, str, str]]) -> None:
    """The evictions of the ``held`` workloads do not complete (the test has not finished them by
    hand yet) until they leave the set; the others complete as in the dry run."""
    real_complete = cluster._complete_evictions

    def complete_but_held() -> bool:
        saved = cluster._evicted_reserved
        cluster._evicted_reserved = saved - held
        try:
            return real_complete()
        finally:
            cluster._evicted_reserved |= saved & held

    cluster._complete_evictions = complete_but_held  # type: ignore[method-assign]


def test_should_retry_on_failed_preemptions() -> None:
    """The eviction writes fail (upstream injects an API server error into the status patch) until
    the test allows them."""
    docs = [
        *_single_cq(),
        workload("low-wl", "q", "3", LOW, 1, ("cq", "alpha")),
        workload("high-wl", "q", "3", HIGH, 10),
    ]
    cluster = _simulated(docs)
    attempts = 0
    allow = False
    real = cluster.write_workload_status

    def patch(wl: Any) -> bool:
        nonlocal attempts
        evicted = next((c for c in wl.status.conditions if c.type == "Evicted"), None)
        if evicted is None or evicted.status != "True":
            return real(wl)
        attempts += 1
        return real(wl) if allow else False

    cluster.write_workload_status = patch  # type: ignore[method-assign]
    cluster.run(cycles=3)
    high = cluster.get_workload("preemption/high-wl")
    assert high is not None
    cond = next(c for c in high.status.conditions if c.type == "QuotaReserved")
    assert cond.status == "False"
    assert "Preempting" in cond.message and "failed, will retry" in cond.message, cond.message
    assert attempts >= 1

    allow = True
    cluster.run(until_quiet=True)
    cluster.settle()
    by_name = {w.metadata.name: w for w in cluster.workloads()}
    assert by_name["high-wl"].status.admission is not None
    assert by_name["high-wl"].status.admission.cluster_queue == "cq"
    assert by_name["low-wl"].status.admission is None
    assert attempts >= 2


# --- inadmissible/equivalence_test.go: Using scheduling equivalence classes ------------------------
#
# Upstream checks the ``kueue_pending_workloads`` and ``kueue_pending_scheduling_hashes`` gauges
# (active, inadmissible) of the ClusterQueue; here they are read from the queue manager the same
# way ``pykueue.metrics.state`` reports them.


def _pending(cluster: SimulatedCluster, cq: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """((active, inadmissible) workloads, (active, inadmissible) scheduling hashes)."""
    pcq = cluster.queues._cqs[cq]
    waiting = [*pcq.active.items(), *pcq.inflight.values()]
    hashes = (
        len({e.info.scheduling_hash for e in waiting}),
        len({e.info.scheduling_hash for e in pcq.inadmissible.values()}),
    )
    return cluster.queues.pending_breakdown(cq), hashes


def _quiet(cluster: SimulatedCluster) -> dict[str, Any]:
    cluster.run(until_quiet=True)
    cluster.settle()
    return {w.metadata.name: w for w in cluster.workloads()}


def test_should_admit_a_fitting_workload_behind_identical_no_fit_workloads_in_best_effort_fifo() -> None:
    docs = [
        flavor("on-demand"),
        cluster_queue("equiv-cq", quota("on-demand", "2"), queueingStrategy="BestEffortFIFO"),
        local_queue("equiv-queue", "equiv-cq"),
        *(workload(f"nofit-{i}", "equiv-queue", "10", None, i) for i in range(10)),
        workload("fits", "equiv-queue", "1", None, 10),
    ]
    cluster = _simulated(docs)
    wls = _quiet(cluster)
    assert wls["fits"].status.admission is not None
    assert wls["fits"].status.admission.cluster_queue == "equiv-cq"
    assert _pending(cluster, "equiv-cq") == ((0, 10), (0, 1))


def test_should_not_hash_workloads_that_dont_fit_due_to_namespace_mismatch() -> None:
    """Should not hash workloads that don't fit due to namespace mismatch"""
    matching: Doc = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "matching", "labels": {"match": "true"}},
    }
    docs = [
        flavor("on-demand"),
        matching,
        cluster_queue(
            "ns-mismatch-cq",
            quota("on-demand", "5"),
            queueingStrategy="BestEffortFIFO",
            namespaceSelector={"matchLabels": {"match": "true"}},
        ),
        local_queue("ns-queue", "ns-mismatch-cq"),
        {
            **local_queue("match-queue", "ns-mismatch-cq"),
            "metadata": {"namespace": "matching", "name": "match-queue"},
        },
        *(workload(f"nomatch-{i}", "ns-queue", "1", None, i) for i in range(5)),
    ]
    fit = workload("matching-fit", "match-queue", "1", None, 10)
    fit["metadata"]["namespace"] = "matching"
    cluster = _simulated([*docs, fit])
    wls = _quiet(cluster)
    assert wls["matching-fit"].status.admission is not None
    assert wls["matching-fit"].status.admission.cluster_queue == "ns-mismatch-cq"
    assert _pending(cluster, "ns-mismatch-cq") == ((0, 5), (0, 1))


def test_should_bulk_move_equivalent_workloads_that_need_preemption_but_have_no_candidates() -> None:
    docs = [
        flavor("on-demand"),
        cluster_queue(
            "preempt-nocandidate-cq",
            quota("on-demand", "2"),
            queueingStrategy="BestEffortFIFO",
            preemption={"withinClusterQueue": "LowerPriority"},
        ),
        local_queue("preempt-queue", "preempt-nocandidate-cq"),
        workload("blocker", "preempt-queue", "2", None, 0, ("preempt-nocandidate-cq", "on-demand")),
        *(workload(f"blocked-{i}", "preempt-queue", "1", None, 10 + i) for i in range(10)),
    ]
    cluster = _simulated(docs)
    wls = _quiet(cluster)
    assert wls["blocker"].status.admission is not None
    assert _pending(cluster, "preempt-nocandidate-cq") == ((0, 10), (0, 1))


# --- ElasticJobs In a single ClusterQueue --------------------------------------------------------

SLICING = {"kueue.x-k8s.io/elastic-job": "true"}


@pytest.mark.xfail(
    strict=True,
    reason="workload slices (ElasticJobsViaWorkloadSlices) are not implemented in the scheduler: upstream "
    "scheduler.go getInitialAssignments/workloadslicing.ReplacedWorkloadSlice count only the scale-up "
    "delta and finish the replaced slice on admission",
)
def test_should_preempt_on_scale_up_workloads_with_lower_priority_when_there_is_not_enough_quota(
    tmp_path: Path,
) -> None:
    held = ("cq", "alpha")
    low = workload("low", "q", "1", LOW, 1, held)
    high = workload("high", "q", "1", HIGH, 2, held)
    # The scaled-up slice: the high workload's pod sets with count 2, no priority of its own.
    high2 = workload("high-2", "q", "1", None, 10, count=2)
    for d in (low, high, high2):
        d["metadata"]["annotations"] = dict(SLICING)
    high2["metadata"]["annotations"]["kueue.x-k8s.io/workload-slice-replacement-for"] = f"{NS}/high"
    res = run([*_single_cq("2"), low, high, high2], tmp_path, gates="ElasticJobsViaWorkloadSlices=true")
    expect_evicted_by_preemption(res, "low")
    finished = res.cond("high", "Finished")
    assert finished is not None and finished["status"] == "True"
    assert res.cq_of("high-2") == "cq"
