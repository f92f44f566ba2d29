"""The ClusterQueue concept page's worked examples, end to end (seed 003: quotas, cohorts and borrowing,
borrowingLimit, lendingLimit, preemption policies, flavorFungibility, queueing strategies).

Manifests are the page's YAML (v1beta1), read through ``to_internal`` + ``apply_defaults`` (and, where
the page is invalid, ``validation``); workloads are built with the builders.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from builders import (
    admitted,
    at,
    conditions,
    events,
    local_queue,
    pod_set,
    queued,
    simulate,
    workload,
)

from pykueue.api.conversion import to_internal
from pykueue.api.defaults import apply_defaults
from pykueue.api.kueue import ClusterQueue, Workload
from pykueue.api.manifests import parse_object
from pykueue.api.validation import ValidationFailed, validate, validate_or_raise
from pykueue.sim.cluster import SimulatedCluster

NOW = at(3600)
NO_RESERVATION = ("False", "NoReservation", "The workload has no reservation")


def load(text: str) -> list[Any]:
    """Typed, defaulted objects from (multi-document) YAML; each must pass API validation."""
    out = []
    for doc in yaml.safe_load_all(text):
        obj, _ = to_internal(doc)
        apply_defaults(obj)
        assert validate(obj) == [], obj.metadata.name
        out.append(obj)
    return out


def flavor_yaml(*names: str) -> str:
    return "".join(
        f"---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: {n}\n"
        for n in names
    )


def job(
    name: str, ns: str, queue: str, count: int = 1, created: float = 0, prio: int = 0, **requests: Any
) -> Workload:
    return workload(
        name,
        ns,
        queue,
        priority=prio,
        created=at(created),
        pod_sets=[pod_set("main", count, {k.replace("_", "."): v for k, v in requests.items()})],
    )


def run(objs: list[Any], cycles: int) -> SimulatedCluster:
    cluster = simulate(objs, now=NOW)
    cluster.run(cycles=cycles)
    cluster.finalize_status()
    return cluster


def cq_status(cluster: SimulatedCluster, name: str) -> dict[str, Any]:
    """flavorsReservation as {flavor: {resource: (total, borrowed)}} plus the counters."""
    status = cluster.objects[("ClusterQueue", "", name)].obj.status
    reservation = {
        f.name: {r.name: (str(r.total), None if r.borrowed is None else str(r.borrowed)) for r in f.resources}
        for f in status.flavors_reservation
    }
    return {
        "reservation": reservation,
        "counts": (status.pending_workloads, status.reserving_workloads, status.admitted_workloads),
    }


def admitted_keys(cluster: SimulatedCluster) -> set[str]:
    return {wl.key for wl in cluster.cache.iter_workloads()}


# --- "A sample ClusterQueue": cpu 9, memory 36Gi, pods 5 ------------------------------------------------

SAMPLE_CQ = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "cluster-queue"
spec:
  namespaceSelector: {} # match all.
  resourceGroups:
  - coveredResources: ["cpu", "memory", "pods"]
    flavors:
    - name: "default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 9
      - name: "memory"
        nominalQuota: 36Gi
      - name: "pods"
        nominalQuota: 5
"""


def test_sample_cluster_queue_counts_pods() -> None:
    """The ``pods`` quota limits the number of admitted pods even when cpu and memory are left."""
    objs = [
        *load(flavor_yaml("default-flavor") + "---" + SAMPLE_CQ),
        local_queue("lq", "default", "cluster-queue"),
        *[job(f"w{i}", "default", "lq", created=i, cpu="100m", memory="1Mi") for i in range(6)],
    ]
    cluster = run(objs, cycles=6)
    assert admitted_keys(cluster) == {f"default/w{i}" for i in range(5)}
    assert conditions(cluster.get_workload("default/w5"))["QuotaReserved"] == (  # type: ignore[arg-type]
        "False",
        "WaitingForQuota",
        "couldn't assign flavors to pod set main: insufficient unused quota for pods in flavor default-flavor, "
        "1 more needed",
    )
    w0 = cluster.get_workload("default/w0")
    assert w0 is not None and w0.status.admission is not None
    psa = w0.status.admission.pod_set_assignments[0]
    assert (psa.flavors, psa.resource_usage, psa.count) == (
        {"cpu": "default-flavor", "memory": "default-flavor", "pods": "default-flavor"},
        {"cpu": "100m", "memory": "1Mi", "pods": "1"},
        1,
    )
    assert cq_status(cluster, "cluster-queue") == {
        "reservation": {
            "default-flavor": {"cpu": ("500m", "0"), "memory": ("5Mi", "0"), "pods": ("5", "0")}
        },
        "counts": (1, 5, 5),
    }


RESOURCE_GROUPS_CQ = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "cluster-queue"
spec:
  namespaceSelector: {} # match all.
  resourceGroups:
  - coveredResources: ["cpu", "memory", "pods"]
    flavors:
    - name: "spot"
      resources:
      - name: "cpu"
        nominalQuota: 9
      - name: "memory"
        nominalQuota: 36Gi
      - name: "pods"
        nominalQuota: 50
    - name: "on-demand"
      resources:
      - name: "cpu"
        nominalQuota: 18
      - name: "memory"
        nominalQuota: 72Gi
      - name: "pods"
        nominalQuota: 100
  - coveredResources: ["gpu"]
    flavors:
    - name: "vendor1"
      resources:
      - name: "gpu"
        nominalQuota: 10
    - name: "vendor2"
      resources:
      - name: "gpu"
        nominalQuota: 10
"""


def test_resource_groups_pick_one_flavor_per_group() -> None:
    """cpu, memory and pods share a flavor (first that fits, in order); gpu is assigned separately."""
    objs = [
        *load(flavor_yaml("spot", "on-demand", "vendor1", "vendor2") + "---" + RESOURCE_GROUPS_CQ),
        local_queue("lq", "default", "cluster-queue"),
        job("small", "default", "lq", count=2, created=1, cpu="4", memory="8Gi", gpu="4"),
        job("big", "default", "lq", count=2, created=2, cpu="4", memory="8Gi", gpu="4"),
    ]
    cluster = run(objs, cycles=2)
    small = cluster.get_workload("default/small")
    big = cluster.get_workload("default/big")
    assert small is not None and small.status.admission is not None
    assert big is not None and big.status.admission is not None
    assert small.status.admission.pod_set_assignments[0].flavors == {
        "cpu": "spot",
        "gpu": "vendor1",
        "memory": "spot",
        "pods": "spot",
    }
    # spot has 1 cpu left and vendor1 2 gpus: both groups move to their next flavor.
    assert big.status.admission.pod_set_assignments[0].flavors == {
        "cpu": "on-demand",
        "gpu": "vendor2",
        "memory": "on-demand",
        "pods": "on-demand",
    }


# --- Borrowing example: team-a-cq (9) and team-b-cq (12) in cohort team-ab ------------------------------

TEAM_A_BORROWING = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "team-a-cq"
spec:
  namespaceSelector: {} # match all.
  cohort: "team-ab"
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: "default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 9
      - name: "memory"
        nominalQuota: 36Gi
"""

TEAM_B_BORROWING = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "team-b-cq"
spec:
  namespaceSelector: {} # match all.
  cohort: "team-ab"
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: "default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 12
      - name: "memory"
        nominalQuota: 48Gi
"""


def borrowing_objects(team_a: str = TEAM_A_BORROWING, team_b: str = TEAM_B_BORROWING) -> list[Any]:
    return [
        *load(flavor_yaml("default-flavor") + "---" + team_a + "---" + team_b),
        local_queue("team-a-queue", "team-a", "team-a-cq"),
        local_queue("team-b-queue", "team-b", "team-b-cq"),
    ]


def test_borrowing_team_a_uses_21_cpus_when_team_b_is_idle() -> None:
    """Seed: "team-a-cq can admit Workloads with resources adding up to 12+9=21 CPUs"."""
    objs = [
        *borrowing_objects(),
        job("job-1", "team-a", "team-a-queue", count=7, created=1, cpu="1", memory="4Gi"),
        job("job-2", "team-a", "team-a-queue", count=7, created=2, cpu="1", memory="4Gi"),
        job("job-3", "team-a", "team-a-queue", count=7, created=3, cpu="1", memory="1Gi"),
        job("job-4", "team-a", "team-a-queue", count=1, created=4, cpu="1", memory="1Gi"),
    ]
    cluster = run(objs, cycles=4)
    assert admitted_keys(cluster) == {"team-a/job-1", "team-a/job-2", "team-a/job-3"}
    assert conditions(cluster.get_workload("team-a/job-4")) == {  # type: ignore[arg-type]
        "QuotaReserved": (
            "False",
            "WaitingForQuota",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, "
            "1 more needed",
        ),
        "Admitted": NO_RESERVATION,
    }
    assert cq_status(cluster, "team-a-cq") == {
        "reservation": {"default-flavor": {"cpu": ("21", "12"), "memory": ("63Gi", "27Gi")}},
        "counts": (1, 3, 3),
    }
    assert cq_status(cluster, "team-b-cq") == {
        "reservation": {"default-flavor": {"cpu": ("0", "0"), "memory": ("0", "0")}},
        "counts": (0, 0, 0),
    }
    lq = cluster.objects[("LocalQueue", "team-a", "team-a-queue")].obj.status
    assert (lq.pending_workloads, lq.reserving_workloads, lq.admitted_workloads) == (1, 3, 3)
    assert [(r.name, str(r.total)) for r in lq.flavors_reservation[0].resources] == [
        ("cpu", "21"),
        ("memory", "63Gi"),
    ]
    # The borrowing admissions say so in their QuotaReserved event.
    assert events(cluster, "team-a/job-2")[0][3] == (
        "Quota reserved in ClusterQueue team-a-cq, wait time since queued was 3599s; Flavors considered: "
        "main: default-flavor(Fit;borrow=1)"
    )


def test_borrowing_team_a_uses_84gi_when_team_b_is_idle() -> None:
    """Seed: "... and 48+36=84Gi of memory"; one byte more does not fit anywhere."""
    objs = [
        *borrowing_objects(),
        job("all-memory", "team-a", "team-a-queue", created=1, cpu="1", memory="84Gi"),
        job("too-much", "team-a", "team-a-queue", created=2, cpu="1", memory="84Gi"),
    ]
    cluster = run(objs, cycles=2)
    assert admitted_keys(cluster) == {"team-a/all-memory"}
    assert cq_status(cluster, "team-a-cq")["reservation"] == {
        "default-flavor": {"cpu": ("1", "0"), "memory": ("84Gi", "48Gi")}
    }


def test_borrowing_team_b_nominal_before_team_a_borrowing() -> None:
    """Seed: "Kueue will admit Workloads in team-b-cq before admitting any new Workloads in team-a-cq"
    (``makeClassicalIterator``)."""
    running = job("running", "team-a", "team-a-queue", count=9, cpu="1", memory="1Gi")
    objs = [
        *borrowing_objects(),
        admitted(running, "team-a-cq", {"cpu": "default-flavor", "memory": "default-flavor"}),
        # team-a's new workload is older and has higher priority, but needs to borrow.
        job("a-new", "team-a", "team-a-queue", count=12, created=1, prio=100, cpu="1", memory="1Gi"),
        job("b-new", "team-b", "team-b-queue", count=12, created=2, cpu="1", memory="1Gi"),
    ]
    cluster = simulate(objs, now=NOW)
    assert cluster.run(cycles=1).cycles[0].admitted == ["team-b/b-new"]
    assert conditions(cluster.get_workload("team-a/a-new")) == {  # type: ignore[arg-type]
        "QuotaReserved": (
            "False",
            "WaitingForQuota",
            "Workload no longer fits after processing another workload",
        ),
        "Admitted": NO_RESERVATION,
    }


# --- BorrowingLimit example ----------------------------------------------------------------------------

SEED_BORROWING_LIMIT_TEAM_A = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "team-a-cq"
spec:
  namespaceSelector: {} # match all.
  cohort: "team-ab"
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: "default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 9
        borrowingLimit: 1
"""


def test_seed_borrowing_limit_manifest_is_rejected() -> None:
    """The page's borrowingLimit manifest covers memory without giving it a quota: the API refuses it."""
    doc = yaml.safe_load(SEED_BORROWING_LIMIT_TEAM_A)
    with pytest.raises(ValidationFailed) as err:
        parse_object(doc)
    assert str(err.value) == (
        'ClusterQueue.kueue.x-k8s.io "team-a-cq" is invalid: spec.resourceGroups[0]: Invalid value: '
        "flavors must have the same number of resources as the coveredResources"
    )
    obj, _ = to_internal(doc)
    apply_defaults(obj)
    with pytest.raises(ValidationFailed):
        validate_or_raise(obj)


def corrected(manifest: str) -> str:
    """The page's manifest with memory dropped from the covered resources."""
    return manifest.replace('coveredResources: ["cpu", "memory"]', 'coveredResources: ["cpu"]')


SEED_BORROWING_LIMIT_TEAM_B = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "team-b-cq"
spec:
  namespaceSelector: {} # match all.
  cohort: "team-ab"
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: "default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 12
"""


def borrowing_limit_objects() -> list[Any]:
    return borrowing_objects(corrected(SEED_BORROWING_LIMIT_TEAM_A), corrected(SEED_BORROWING_LIMIT_TEAM_B))


def test_borrowing_limit_team_a_can_use_10() -> None:
    """Seed: "team-a-cq can admit Workloads with resources adding up to 9+1=10 CPUs"."""
    cq = next(
        o for o in borrowing_limit_objects() if isinstance(o, ClusterQueue) and o.metadata.name == "team-a-cq"
    )
    quota = cq.spec.resource_groups[0].flavors[0].resources[0]
    assert (quota.nominal_quota, quota.borrowing_limit) == (9, 1)
    objs = [
        *borrowing_limit_objects(),
        job("fits", "team-a", "team-a-queue", count=10, created=1, cpu="1"),
        job("one-more", "team-a", "team-a-queue", count=1, created=2, cpu="1"),
        job("too-big", "team-a", "team-a-queue", count=11, created=3, cpu="1"),
    ]
    cluster = run(objs, cycles=3)
    assert admitted_keys(cluster) == {"team-a/fits"}
    assert conditions(cluster.get_workload("team-a/too-big"))["QuotaReserved"] == (  # type: ignore[arg-type]
        "False",
        "ExceedsMaxQuota",
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default-flavor, previously "
        "considered podsets requests (0) + current podset request (11) > maximum capacity (10)",
    )
    assert conditions(cluster.get_workload("team-a/one-more"))["QuotaReserved"] == (  # type: ignore[arg-type]
        "False",
        "WaitingForQuota",
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, "
        "1 more needed",
    )
    assert cq_status(cluster, "team-a-cq")["reservation"] == {"default-flavor": {"cpu": ("10", "1")}}


def test_borrowing_limit_unset_team_b_can_use_21() -> None:
    """Seed: "team-b-cq can use up to 12+9 CPUs" (no borrowingLimit)."""
    objs = [
        *borrowing_limit_objects(),
        job("all", "team-b", "team-b-queue", count=21, cpu="1"),
    ]
    cluster = run(objs, cycles=1)
    assert admitted_keys(cluster) == {"team-b/all"}
    assert cq_status(cluster, "team-b-cq")["reservation"] == {"default-flavor": {"cpu": ("21", "9")}}


# --- LendingLimit example ------------------------------------------------------------------------------

LENDING_TEAM_A = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "team-a-cq"
spec:
  namespaceSelector: {} # match all.
  cohort: "team-ab"
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: "default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 9
"""

LENDING_TEAM_B = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "team-b-cq"
spec:
  namespaceSelector: {} # match all.
  cohort: "team-ab"
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: "default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 12
        lendingLimit: 1
"""


def test_lending_limit_team_a_can_use_10_team_b_keeps_11() -> None:
    """lendingLimit 1: team-a reaches 9+1=10 CPUs; team-b keeps 12-1=11 for itself."""
    objs = [
        *borrowing_objects(LENDING_TEAM_A, LENDING_TEAM_B),
        job("a-10", "team-a", "team-a-queue", count=10, created=1, cpu="1"),
        job("a-more", "team-a", "team-a-queue", count=1, created=2, cpu="1"),
        job("b-11", "team-b", "team-b-queue", count=11, created=3, cpu="1"),
        job("b-more", "team-b", "team-b-queue", count=1, created=4, cpu="1"),
    ]
    cluster = run(objs, cycles=3)
    assert admitted_keys(cluster) == {"team-a/a-10", "team-b/b-11"}
    assert cq_status(cluster, "team-a-cq")["reservation"] == {"default-flavor": {"cpu": ("10", "1")}}
    assert cq_status(cluster, "team-b-cq")["reservation"] == {"default-flavor": {"cpu": ("11", "0")}}
    for key in ("team-a/a-more", "team-b/b-more"):
        assert conditions(cluster.get_workload(key))["QuotaReserved"] == (  # type: ignore[arg-type]
            "False",
            "WaitingForQuota",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, "
            "1 more needed",
        ), key


def test_lending_limit_caps_team_a_max_capacity_at_10() -> None:
    objs = [
        *borrowing_objects(LENDING_TEAM_A, LENDING_TEAM_B),
        job("a-11", "team-a", "team-a-queue", count=11, cpu="1"),
    ]
    cluster = run(objs, cycles=1)
    assert conditions(cluster.get_workload("team-a/a-11"))["QuotaReserved"] == (  # type: ignore[arg-type]
        "False",
        "ExceedsMaxQuota",
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default-flavor, previously "
        "considered podsets requests (0) + current podset request (11) > maximum capacity (10)",
    )


def test_lending_limit_unset_team_b_can_use_21() -> None:
    """Seed: "If the lendingLimit field is not specified, a ClusterQueue can lend out all of its resources"."""
    objs = [
        *borrowing_objects(LENDING_TEAM_A, LENDING_TEAM_B),
        job("b-21", "team-b", "team-b-queue", count=21, cpu="1"),
    ]
    cluster = run(objs, cycles=1)
    assert admitted_keys(cluster) == {"team-b/b-21"}


# --- Preemption -----------------------------------------------------------------------------------------

SEED_PREEMPTION = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "team-a-cq"
spec:
  preemption:
    reclaimWithinCohort: Any
    borrowWithinCohort:
      policy: LowerPriority
      maxPriorityThreshold: 100
    withinClusterQueue: LowerPriority
"""


def preemption_cq(name: str, nominal: int, preemption: str, cohort: str | None = "team-ab") -> str:
    """A ClusterQueue with the seed's ``preemption`` stanza shape and one cpu quota."""
    return (
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\n"
        f"metadata:\n  name: {name}\nspec:\n  namespaceSelector: {{}}\n"
        + (f"  cohort: {cohort}\n" if cohort else "")
        + f"  preemption:\n{preemption}"
        "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: default-flavor\n"
        f"      resources:\n      - name: cpu\n        nominalQuota: {nominal}\n"
    )


def test_seed_preemption_stanza_defaults_and_validates() -> None:
    (cq,) = load(SEED_PREEMPTION)
    p = cq.spec.preemption
    assert (p.reclaim_within_cohort, p.within_cluster_queue) == ("Any", "LowerPriority")
    assert (p.borrow_within_cohort.policy, p.borrow_within_cohort.max_priority_threshold) == (
        "LowerPriority",
        100,
    )
    # borrowWithinCohort is only supported when reclaimWithinCohort is not Never.
    bad = SEED_PREEMPTION.replace("reclaimWithinCohort: Any", "reclaimWithinCohort: Never")
    obj, _ = to_internal(yaml.safe_load(bad))
    apply_defaults(obj)
    assert validate(obj) != []


def msg(human: str, preemptor: str, preemptor_path: str, preemptee_path: str) -> str:
    return (
        f"Preempted to accommodate a workload (UID: uid-{preemptor}, JobUID: UNKNOWN) due to {human}; "
        f"preemptor path: {preemptor_path}; preemptee path: {preemptee_path}"
    )


@pytest.mark.parametrize(
    ("policy", "running_prio", "running_created", "incoming_prio", "preempted"),
    [
        ("LowerPriority", 0, 0, 10, True),
        ("LowerPriority", 10, 0, 10, False),
        ("LowerPriority", 10, 20, 10, False),
        ("LowerOrNewerEqualPriority", 0, 0, 10, True),
        ("LowerOrNewerEqualPriority", 10, 20, 10, True),
        ("LowerOrNewerEqualPriority", 10, 0, 10, False),
        ("Never", 0, 0, 10, False),
    ],
    ids=[
        "LowerPriority preempts lower priority",
        "LowerPriority spares equal priority",
        "LowerPriority spares newer equal priority",
        "LowerOrNewerEqualPriority preempts lower priority",
        "LowerOrNewerEqualPriority preempts newer equal priority",
        "LowerOrNewerEqualPriority spares older equal priority",
        "Never",
    ],
)
def test_within_cluster_queue_policies(
    policy: str, running_prio: int, running_created: float, incoming_prio: int, preempted: bool
) -> None:
    """withinClusterQueue: which running workloads of the same ClusterQueue an incoming one may preempt."""

    def base() -> list[Any]:
        text = (
            flavor_yaml("default-flavor")
            + "---\n"
            + preemption_cq("q", 4, f"    withinClusterQueue: {policy}\n", None)
        )
        return [*load(text), local_queue("lq", "default", "q")]

    # The running workload is admitted first; the incoming one is created afterwards (a second cluster
    # starts from the admitted state).
    first = run(
        [
            *base(),
            job("running", "default", "lq", count=4, created=running_created, prio=running_prio, cpu="1"),
        ],
        1,
    )
    running = first.get_workload("default/running")
    assert running is not None and running.status.admission is not None
    incoming = job("incoming", "default", "lq", count=4, created=10, prio=incoming_prio, cpu="1")
    cluster = simulate([*base(), running, incoming], now=NOW)
    result = cluster.run(cycles=1).cycles[0]
    assert result.preempted == (["default/running"] if preempted else [])
    cond = conditions(cluster.get_workload("default/incoming"))["QuotaReserved"]  # type: ignore[arg-type]
    if preempted:
        assert cond == (
            "False",
            "WaitingForPreemptedWorkloads",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, "
            "4 more needed. Pending the preemption of 1 workload(s)",
        )
        assert conditions(cluster.get_workload("default/running"))["Preempted"] == (  # type: ignore[arg-type]
            "True",
            "InClusterQueue",
            msg("prioritization in the ClusterQueue", "default-incoming", "/q", "/q"),
        )
    else:
        assert cond == (
            "False",
            "WaitingForQuota",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default-flavor, "
            "4 more needed",
        )


def cohort_pair(
    team_a_preemption: str,
    borrower_prio: int,
    borrower_pods: int,
    incoming_pods: int,
    incoming_prio: int = 50,
) -> SimulatedCluster:
    """team-a (nominal 6, given policy) and team-b (nominal 6) in one cohort; team-b borrows first."""
    text = (
        flavor_yaml("default-flavor")
        + "---\n"
        + preemption_cq("team-a-cq", 6, team_a_preemption)
        + "---\n"
        + preemption_cq("team-b-cq", 6, "    withinClusterQueue: Never\n")
    )

    def base() -> list[Any]:
        return [
            *load(text),
            local_queue("team-a-queue", "team-a", "team-a-cq"),
            local_queue("team-b-queue", "team-b", "team-b-cq"),
        ]

    borrower = job("borrower", "team-b", "team-b-queue", count=borrower_pods, prio=borrower_prio, cpu="1")
    first = run([*base(), borrower], cycles=1)
    running = first.get_workload("team-b/borrower")
    assert running is not None and running.status.admission is not None
    incoming = job(
        "incoming", "team-a", "team-a-queue", count=incoming_pods, created=10, prio=incoming_prio, cpu="1"
    )
    return simulate([*base(), running, incoming], now=NOW)


@pytest.mark.parametrize(
    ("policy", "borrower_prio", "preempted"),
    [("Any", 100, True), ("LowerPriority", 100, False), ("LowerPriority", 10, True), ("Never", 10, False)],
    ids=[
        "reclaimWithinCohort Any reclaims from a higher-priority borrower",
        "reclaimWithinCohort LowerPriority spares a higher-priority borrower",
        "reclaimWithinCohort LowerPriority reclaims from a lower-priority borrower",
        "reclaimWithinCohort Never",
    ],
)
def test_reclaim_within_cohort_policies(policy: str, borrower_prio: int, preempted: bool) -> None:
    """reclaimWithinCohort: a workload fitting its nominal quota reclaims what another queue borrowed."""
    cluster = cohort_pair(
        f"    reclaimWithinCohort: {policy}\n", borrower_prio, borrower_pods=10, incoming_pods=4
    )
    result = cluster.run(cycles=1).cycles[0]
    assert result.preempted == (["team-b/borrower"] if preempted else [])
    if preempted:
        assert conditions(cluster.get_workload("team-b/borrower"))["Preempted"] == (  # type: ignore[arg-type]
            "True",
            "InCohortReclamation",
            msg(
                "reclamation within the cohort", "team-a-incoming", "/team-ab/team-a-cq", "/team-ab/team-b-cq"
            ),
        )
    else:
        assert conditions(cluster.get_workload("team-a/incoming"))["QuotaReserved"][1] == "WaitingForQuota"  # type: ignore[arg-type]


SEED_STANZA = (
    "    reclaimWithinCohort: Any\n"
    "    borrowWithinCohort:\n      policy: LowerPriority\n      maxPriorityThreshold: 100\n"
    "    withinClusterQueue: LowerPriority\n"
)


@pytest.mark.parametrize(
    ("borrower_prio", "incoming_prio", "preempted"),
    [(100, 200, True), (101, 200, False), (100, 100, False)],
    ids=[
        "lower priority at maxPriorityThreshold is preempted while borrowing",
        "priority above maxPriorityThreshold is spared",
        "equal priority is spared (LowerPriority)",
    ],
)
def test_borrow_within_cohort_max_priority_threshold(
    borrower_prio: int, incoming_prio: int, preempted: bool
) -> None:
    """The seed's stanza: preempt while borrowing only lower-priority workloads up to maxPriorityThreshold
    (``SatisfiesPreemptionPolicy``).

    team-a (nominal 6) asks 8 cpus while team-b borrows 4: even after the preemption team-a borrows 2.
    """
    cluster = cohort_pair(
        SEED_STANZA, borrower_prio, borrower_pods=10, incoming_pods=8, incoming_prio=incoming_prio
    )
    result = cluster.run(cycles=1).cycles[0]
    assert result.preempted == (["team-b/borrower"] if preempted else [])
    if preempted:
        assert conditions(cluster.get_workload("team-b/borrower"))["Preempted"] == (  # type: ignore[arg-type]
            "True",
            "InCohortReclaimWhileBorrowing",
            msg(
                "reclamation within the cohort while borrowing",
                "team-a-incoming",
                "/team-ab/team-a-cq",
                "/team-ab/team-b-cq",
            ),
        )


# --- FlavorFungibility -----------------------------------------------------------------------------------

FUNGIBILITY = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "team-a-cq"
spec:
  namespaceSelector: {{}}
  cohort: team-ab
{fungibility}  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: on-demand
      resources:
      - name: cpu
        nominalQuota: 4
    - name: spot
      resources:
      - name: cpu
        nominalQuota: 8
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "team-b-cq"
spec:
  namespaceSelector: {{}}
  cohort: team-ab
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: on-demand
      resources:
      - name: cpu
        nominalQuota: 10
    - name: spot
      resources:
      - name: cpu
        nominalQuota: 0
"""


@pytest.mark.parametrize(
    ("fungibility", "flavor"),
    [
        ("", "on-demand"),
        ("  flavorFungibility:\n    whenCanBorrow: TryNextFlavor\n    whenCanPreempt: Preempt\n", "spot"),
    ],
    ids=["default whenCanBorrow (Borrow) stops at the first flavor", "whenCanBorrow TryNextFlavor"],
)
def test_flavor_fungibility_when_can_borrow(fungibility: str, flavor: str) -> None:
    """Seed: "By default, the incoming workload stops trying the next flavor if [it] can get enough borrowed resources"."""
    objs = [
        *load(flavor_yaml("on-demand", "spot") + "---" + FUNGIBILITY.format(fungibility=fungibility)),
        local_queue("team-a-queue", "team-a", "team-a-cq"),
        job("w", "team-a", "team-a-queue", count=6, cpu="1"),
    ]
    cluster = run(objs, cycles=1)
    w = cluster.get_workload("team-a/w")
    assert w is not None and w.status.admission is not None
    assert w.status.admission.pod_set_assignments[0].flavors == {"cpu": flavor}


# --- Queueing strategy -----------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["StrictFIFO", "BestEffortFIFO"])
def test_queueing_strategy_head_of_line_blocking(strategy: str) -> None:
    """StrictFIFO: "Older workloads that can't be admitted will block newer workloads"; BestEffortFIFO: they won't."""
    text = (
        flavor_yaml("default-flavor")
        + "---\n"
        + preemption_cq("q", 4, "    withinClusterQueue: Never\n", None).replace(
            "spec:\n", f"spec:\n  queueingStrategy: {strategy}\n"
        )
    )
    objs = [
        *load(text),
        local_queue("lq", "default", "q"),
        job("old-big", "default", "lq", count=6, created=1, cpu="1"),
        job("new-small", "default", "lq", count=2, created=2, cpu="1"),
    ]
    cluster = run(objs, cycles=5)
    assert conditions(cluster.get_workload("default/old-big"))["QuotaReserved"] == (  # type: ignore[arg-type]
        "False",
        "ExceedsMaxQuota",
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default-flavor, previously "
        "considered podsets requests (0) + current podset request (6) > maximum capacity (4)",
    )
    if strategy == "StrictFIFO":
        assert admitted_keys(cluster) == set()
        assert conditions(cluster.get_workload("default/new-small")) == {}  # type: ignore[arg-type]
        assert queued(cluster) == ({"q": ["default/new-small", "default/old-big"]}, {})
    else:
        assert admitted_keys(cluster) == {"default/new-small"}
        assert queued(cluster) == ({}, {"q": ["default/old-big"]})
