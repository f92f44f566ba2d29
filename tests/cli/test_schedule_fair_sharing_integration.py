"""``pykueue schedule`` with fair sharing reaches the end states of upstream's integration tests.

Each case is an ``It`` of upstream ``test/integration/singlecluster/scheduler/fairsharing/fair_sharing_test.go``
under its name: the workloads the test creates one by one are given at once (those it waits to be
admitted first already hold their quota), the evictions it finishes by hand complete in the dry run,
and the end state is compared: how many workloads each ClusterQueue holds quota for, which flavors
they got, and the ``status.fairSharing.weightedShare`` of ClusterQueues and Cohorts (upstream checks
the gauge, ``ceil`` of which is the status value).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOW = "2025-03-10T09:00:00Z"
CONFIG = """apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing:
  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
"""
FUNGIBLE = "{whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor}"
ANY_LOWER = "{reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}"


def flavors(*names: str) -> str:
    return "".join(
        f"---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {{name: {n}}}\n"
        for n in names
    )


def groups(quotas: dict[str, tuple[int, int | None]]) -> str:
    out = "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
    for flv, (nominal, borrowing) in quotas.items():
        limit = "" if borrowing is None else f", borrowingLimit: {borrowing}"
        out += f"    - name: {flv}\n      resources: [{{name: cpu, nominalQuota: {nominal}{limit}}}]\n"
    return out


def cohort(
    name: str,
    parent: str | None = None,
    weight: str | None = None,
    quotas: dict[str, tuple[int, int | None]] | None = None,
) -> str:
    spec = ""
    if parent:
        spec += f"  parentName: {parent}\n"
    if weight:
        spec += f'  fairSharing: {{weight: "{weight}"}}\n'
    if quotas:
        spec += groups(quotas)
    body = spec or "  {}\n"
    return f"---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: {name}}}\nspec:\n{body}"


def cq(
    name: str,
    parent: str,
    quotas: dict[str, tuple[int, int | None]],
    weight: str | None = None,
    preemption: str | None = None,
    fungibility: str | None = None,
) -> str:
    spec = f"  namespaceSelector: {{}}\n  cohortName: {parent}\n"
    if weight:
        spec += f'  fairSharing: {{weight: "{weight}"}}\n'
    if preemption:
        spec += f"  preemption: {preemption}\n"
    if fungibility:
        spec += f"  flavorFungibility: {fungibility}\n"
    return (
        f"---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n{spec}"
        + groups(quotas)
        + f"---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {{namespace: ns, name: {name}}}\n"
        f"spec: {{clusterQueue: {name}}}\n"
    )


def wl(
    name: str, queue: str, cpu: int, priority: int, minute: int, second: int, held: str | None = None
) -> str:
    """A workload; ``held`` = ``flavor`` when it already holds quota in ``queue`` (admitted)."""
    ts = f"2025-03-10T08:{minute:02d}:{second:02d}Z"
    out = (
        f"---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\n"
        f'metadata: {{namespace: ns, name: {name}, creationTimestamp: "{ts}"}}\n'
        f"spec:\n  queueName: {queue}\n  priority: {priority}\n  podSets:\n  - name: main\n    count: 1\n"
        f'    template: {{spec: {{containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "{cpu}"}}}}}}]}}}}\n'
    )
    if held:
        out += (
            f"status:\n  admission:\n    clusterQueue: {queue}\n    podSetAssignments:\n"
            f'    - {{name: main, count: 1, flavors: {{cpu: {held}}}, resourceUsage: {{cpu: "{cpu}"}}}}\n'
            f"  conditions:\n"
            f'  - {{type: QuotaReserved, status: "True", reason: QuotaReserved, message: m, lastTransitionTime: "{ts}"}}\n'
            f'  - {{type: Admitted, status: "True", reason: Admitted, message: m, lastTransitionTime: "{ts}"}}\n'
        )
    return out


@dataclass(frozen=True)
class Case:
    state: str
    holding: dict[str, int]
    """Workloads holding quota per ClusterQueue at the end (ClusterQueues not named hold none)."""
    shares: dict[str, int]
    """``status.fairSharing.weightedShare`` per ClusterQueue or Cohort name."""
    flavors: dict[str, int] = field(default_factory=dict)
    """Workloads holding quota per flavor, when the case checks it."""


def _hierarchical_preemption() -> str:
    zero = {"default": (0, None)}
    lower = "{reclaimWithinCohort: LowerPriority}"
    out = flavors("default") + cohort("root", quotas={"default": (12, None)}) + cohort("research", "root")
    out += cohort("chemistry", "research") + cohort("physics", "research") + cohort("llm", "research", "2.0")
    out += cohort("best-effort", "root", "0.5")
    out += cq("chemistry-queue", "chemistry", zero, preemption=lower) + cq(
        "physics-queue", "physics", zero, preemption=lower
    )
    out += cq("llm-queue", "llm", zero, preemption=lower) + cq("best-effort-queue", "best-effort", zero)
    for i in range(6):
        out += wl(f"be-low-{i}", "best-effort-queue", 1, -1, 0, 2 * i, held="default")
        out += wl(f"ph-low-{i}", "physics-queue", 1, -1, 0, 2 * i + 1, held="default")
    for i in range(6):
        for j, queue in enumerate(("chemistry-queue", "physics-queue", "llm-queue", "best-effort-queue")):
            out += wl(f"{queue[:3]}-high-{i}", queue, 1, 100, 10, 4 * i + j)
    return out


def _zero_weights() -> str:
    zero = {"default": (0, None)}
    out = flavors("default") + cohort("top-cohort", quotas={"default": (8, None)})
    out += cq("cq-a", "top-cohort", zero, "0", "{reclaimWithinCohort: Any}")
    out += cq("cq-b", "top-cohort", zero, "0", "{reclaimWithinCohort: Any}")
    return (
        out
        + wl("a1", "cq-a", 4, 9001, 0, 1, "default")
        + wl("a2", "cq-a", 4, 100, 0, 2, "default")
        + wl("b1", "cq-b", 4, 100, 10, 0)
    )


def _ineligible_head(pending: str) -> str:
    zero = {"flavor1": (0, None)}
    out = flavors("flavor1") + cohort("cohort-a", "root-cohort", "1", {"flavor1": (9, None)})
    out += cq("cq-p1", "cohort-a", zero, "1", ANY_LOWER, FUNGIBLE) + cq(
        "cq-p2", "cohort-a", zero, "1", ANY_LOWER, FUNGIBLE
    )
    return out + "".join(wl(f"p1-{i}", "cq-p1", 2, 0, 0, i, "flavor1") for i in range(4)) + pending


def _inadmissible_head() -> str:
    zero = {"flavor1": (0, None)}
    out = flavors("flavor1") + cohort("cohort-a", "root", "1", {"flavor1": (3, None)})
    out += cq("cq1", "cohort-a", zero, "1", ANY_LOWER, FUNGIBLE) + cq(
        "cq2", "root", zero, "1", ANY_LOWER, FUNGIBLE
    )
    out += wl("c2-a", "cq2", 1, 0, 0, 1, "flavor1") + wl("c2-b", "cq2", 1, 0, 0, 2, "flavor1")
    return out + wl("c1-4", "cq1", 4, 999, 10, 0) + wl("c1-3", "cq1", 3, 0, 11, 0)


def _several_flavors() -> str:
    out = flavors("flavor1", "flavor2") + cohort("root-cohort")
    both = {"flavor1": (0, 10), "flavor2": (0, 10)}
    out += cohort("cohort-a", "root-cohort", "1", both) + cohort("cohort-b", "root-cohort", "1", both)
    for name, parent, f1, f2 in (
        ("cq-p1", "cohort-a", 3, 3),
        ("cq-p2", "cohort-a", 3, 3),
        ("cq-p3", "cohort-a", 2, 4),
        ("cq-p4", "cohort-b", 2, 0),
    ):
        out += cq(name, parent, {"flavor1": (f1, 10), "flavor2": (f2, 10)}, "1", ANY_LOWER, FUNGIBLE)
    return out + "".join(wl(f"w{i:02d}", "cq-p1", 1, 0, 0, i) for i in range(18))


def _large_weights() -> str:
    out = flavors("default")
    out += cq("a", "all", {"default": (600, None)}, "300", ANY_LOWER) + cq(
        "b", "all", {"default": (600, None)}, "300", ANY_LOWER
    )
    return (
        out
        + "".join(wl(f"a{i}", "a", 100, 0, 0, i, "default") for i in range(10))
        + wl("b0", "b", 500, 0, 10, 0)
    )


def _best_effort() -> str:
    zero = {"default": (0, None)}
    out = flavors("default") + cq("best-effort-a", "all", zero) + cq("best-effort-b", "all", zero)
    out += cq("guaranteed", "all", {"default": (8, None)}, preemption="{reclaimWithinCohort: Any}")
    out += wl("be-a", "best-effort-a", 4, 2, 0, 1, "default") + wl(
        "be-b", "best-effort-b", 4, 1, 0, 2, "default"
    )
    return out + wl("guaranteed", "guaranteed", 4, 0, 10, 0)


CASES: dict[str, Case] = {
    "using hierarchical cohorts: preempts workloads to enforce fair share": Case(
        _hierarchical_preemption(),
        holding={"best-effort-queue": 4, "chemistry-queue": 2, "physics-queue": 2, "llm-queue": 4},
        # ceil of 4/12/0.5, 8/12, 2/12, 2/12 and 4/12/2 (x1000).
        shares={"best-effort": 667, "research": 667, "chemistry": 167, "physics": 167, "llm": 167},
    ),
    "Preemption is enabled and CQs have 0 weight: should not cause an infinite preemption cycle": Case(
        _zero_weights(), holding={"cq-a": 1, "cq-b": 1}, shares={"cq-a": 2**63 - 1, "cq-b": 2**63 - 1}
    ),
    "workload of size 5 preempts using LessThanInitialShare policy and admits": Case(
        _ineligible_head(wl("p2-5", "cq-p2", 5, 0, 10, 0)),
        holding={"cq-p1": 2, "cq-p2": 1},
        shares={"cq-p1": 445, "cq-p2": 556},
    ),
    "workload of size 5 admits with inadmissible higher priority workload at ClusterQueue head": Case(
        _ineligible_head(wl("p2-6", "cq-p2", 6, 999, 10, 0) + wl("p2-5", "cq-p2", 5, 0, 11, 0)),
        holding={"cq-p1": 2, "cq-p2": 1},
        shares={"cq-p1": 445, "cq-p2": 556},
    ),
    "workload of size 4 admits with inadmissible higher priority workload at ClusterQueue head": Case(
        _ineligible_head(wl("p2-6", "cq-p2", 6, 999, 10, 0) + wl("p2-4", "cq-p2", 4, 0, 11, 0)),
        holding={"cq-p1": 2, "cq-p2": 1},
        shares={"cq-p1": 445, "cq-p2": 445},
    ),
    "workload admits when several higher priority blocking workloads in front": Case(
        _ineligible_head(
            wl("p2-7", "cq-p2", 7, 999, 10, 0)
            + wl("p2-6", "cq-p2", 6, 999, 10, 30)
            + wl("p2-5", "cq-p2", 5, 0, 11, 0)
        ),
        holding={"cq-p1": 2, "cq-p2": 1},
        shares={"cq-p1": 445, "cq-p2": 556},
    ),
    "workload which fits behind ClusterQueue head is able to admit": Case(
        _inadmissible_head(), holding={"cq1": 1}, shares={"cq1": 1000, "cq2": 0}
    ),
    "Prefers flavor with remaining guarantees at Cohort level": Case(
        _several_flavors(),
        holding={"cq-p1": 18},
        shares={"cq-p1": 600, "cohort-a": 0},
        flavors={"flavor1": 8, "flavor2": 10},
    ),
    "Queue can reclaim its nominal quota": Case(_large_weights(), holding={"a": 7, "b": 1}, shares={"b": 0}),
    "Guaranteed workloads cause preemption of a single best effort workload": Case(
        _best_effort(), holding={"best-effort-a": 1, "guaranteed": 1}, shares={"best-effort-a": 500}
    ),
}


def _run(state: str, tmp_path: Path) -> list[dict[str, Any]]:
    (tmp_path / "state.yaml").write_text(state)
    (tmp_path / "config.yaml").write_text(CONFIG)
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "pykueue", "schedule", "-f", str(tmp_path / "state.yaml")),
            *("--config", str(tmp_path / "config.yaml"), "--until-quiet", "--now", NOW, "-o", "json"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    items: list[dict[str, Any]] = out["items"] if isinstance(out, dict) else out
    return items


@pytest.mark.parametrize("name", list(CASES))
def test_fair_sharing_integration_end_state(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    items = _run(case.state, tmp_path)
    holding: Counter[str] = Counter()
    by_flavor: Counter[str] = Counter()
    shares: dict[str, int] = {}
    for obj in items:
        status = obj.get("status") or {}
        if obj["kind"] == "Workload" and status.get("admission"):
            holding[status["admission"]["clusterQueue"]] += 1
            by_flavor[status["admission"]["podSetAssignments"][0]["flavors"]["cpu"]] += 1
        elif obj["kind"] in ("ClusterQueue", "Cohort") and status.get("fairSharing"):
            shares[obj["metadata"]["name"]] = int(status["fairSharing"]["weightedShare"])
    assert dict(holding) == case.holding
    assert {k: shares.get(k) for k in case.shares} == case.shares
    if case.flavors:
        assert dict(by_flavor) == case.flavors
