"""Upstream ``pkg/scheduler/flavorassigner/flavorassigner_test.go``: whole assignments.

The inputs are those of ``test_flavor_assignment`` (``CASES`` for ``TestAssignFlavors``, where
upstream's twins (``TWINS``) share their case's inputs; the ``*_TABLE`` rows and ``*_case`` builders
for the other tables). The ``WANT*`` tables hold, per upstream case name, what upstream's
``FlavorAssigner.Assign`` returns at the revision we follow (ff69552e79): representative mode; per
pod set the flavors (name, mode, ``TriedFlavorIdx``), the status reasons (sorted, as
``Status.Message`` prints them), the error, count, requests (``Quantity.String``) and the flavor
assignment attempts (mode, borrowing, preemption possibility, reasons, NoFit reason); the usage, the
borrowing level, the NoFit reason and ``Assignment.Message()``. They were read off upstream's run of
its own tables: where an upstream expectation lists more attempts than it computes
(``flexAssertConsidered`` lets a fitting flavor stand alone), or checks only part of the result (the
flavor names, the NoFit reasons), ``WANT*`` has everything upstream computes. With
``UnadmittedWorkloadsObservability`` off upstream leaves every NoFit reason empty and the rest is
the same.

``TestIsPreferred`` is in ``test_flavor_assignment`` (all its cases);
``TestAssignment_RequiresBorrowing`` and ``TestAssignment_TotalRequestsFor`` are at the end of this
file.

Not ported (features pykueue does not implement):
- TestAssignFlavors "workload slice preemption fits in the original workload resource flavor" and
  "workload slice preemption does not fit in the original workload resource flavor" — elastic
  workloads (``ElasticJobsViaWorkloadSlices``).
- TestAssignFlavors "multiple TAS flavors assigned to different resources in the same PodSet leads
  to NoFit" — Topology Aware Scheduling.
- TestIsNoFitDueToCapacityAndLimits "TAS not supported", "TAS level not supported", "TAS only
  flavor mismatch", "tas placement fails", "tas placement fails, cohort has no capacity", "tas
  placement fails, but queue has available capacity (waiting for preemption)" — Topology Aware
  Scheduling; "flavor mismatch for workload slices" — elastic workloads.
- TestAssignment_TotalRequestsFor "WorkloadWithReplacement" and
  "WorkloadWithMultiplePodSetsOneUnchangedReplacement" — the replaced workload slice
  (``replaceWorkloadSlice``) of elastic workloads (``ElasticJobsViaWorkloadSlices``).
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from builders import cluster_queue, flavor, flavor_quotas, pod_set, workload
from test_flavor_assignment import (
    CASES,
    DELETED_TABLE,
    HIERARCHICAL_TABLE,
    NOFIT_TABLE,
    RECLAIM_TABLE,
    Case,
    deleted_case,
    hierarchical_case,
    nofit_case,
    reclaim_case,
    run,
)

from pykueue.api.kueue import WORKLOAD_ALLOWED_RESOURCE_FLAVOR_ANNOTATION
from pykueue.api.quantity import resource_quantity_string
from pykueue.core.options import SchedulerOptions
from pykueue.core.scheduler.flavorassigner.assignment import (
    Assignment,
    FlavorAssignment,
    Mode,
    PodSetAssignmentResult,
)
from pykueue.core.workload.info import new_workload_info


class A(msgspec.Struct, frozen=True):
    """One ``FlavorAssignmentAttempt``: ``pp`` is its ``PreemptionPossibility`` ("" when nil)."""

    flavor: str
    mode: str
    borrow: int = 0
    pp: str = ""
    reasons: list[str] = []
    nfr: str = ""


class P(msgspec.Struct, frozen=True):
    """One ``PodSetAssignment``: flavors are resource -> (flavor, mode, ``TriedFlavorIdx``)."""

    name: str
    flavors: dict[str, tuple[str, str, int]]
    reasons: list[str] = []
    error: str = ""
    count: int = 1
    requests: dict[str, str] = {}
    attempts: list[A] = []


class W(msgspec.Struct, frozen=True):
    """Upstream's ``Assignment`` and ``RepresentativeMode()``."""

    mode: str
    pod_sets: list[P]
    usage: dict[tuple[str, str], int] = {}
    borrowing: int = 0
    no_fit_reason: str = ""
    message: str = ""


TWINS = {
    "preempt before try next flavor; using WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": (
        "preempt before try next flavor"
    ),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": (
        "when borrowing while preemption is needed for flavor one; WhenCanBorrow=MayStopSearch"
    ),
    "when borrowing while preemption is needed for flavor one, no borrowingLimit; WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": (
        "when borrowing while preemption is needed for flavor one, no borrowingLimit; WhenCanBorrow=MayStopSearch"
    ),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor,WhenCanPreempt=MayStopSearch": (
        "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor"
    ),
    "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which fits); using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": (
        "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which fits)"
    ),
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Any; using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": (
        "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Any"
    ),
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Never; using deprecated WhenCanBorrow=MayStopSearch,WhenCanPreempt=MayStopSearch": (
        "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Never"
    ),
}
"""Cases upstream keeps twice, with the same inputs and expectations, the second under the name of the
deprecated fungibility policies: twin -> the case it repeats (in ``CASES`` and ``WANT``)."""


def observed(a: Assignment) -> W:
    """``a`` in upstream's terms (``W``)."""
    pod_sets = [
        P(
            ps.name,
            {res: (fa.name, fa.mode.label(), fa.tried_flavor_idx) for res, fa in ps.flavors.items()},
            reasons=sorted(ps.reasons),
            error=ps.error or "",
            count=ps.count,
            requests={res: resource_quantity_string(res, v) for res, v in ps.requests.items()},
            attempts=[
                A(
                    at.flavor,
                    at.mode.preemption_mode.public().label(),
                    borrow=at.mode.borrowing_level,
                    pp=at.mode.preemption_mode.label() if at.preemption_simulated else "",
                    reasons=list(at.reasons),
                    nfr=at.no_fit_reason,
                )
                for at in ps.attempts
            ],
        )
        for ps in a.pod_sets
    ]
    return W(
        mode=a.representative_mode().label(),
        pod_sets=pod_sets,
        usage=dict(a.usage),
        borrowing=a.borrowing,
        no_fit_reason=a.no_fit_reason(),
        message=a.message(),
    )


def without_no_fit_reasons(w: W) -> W:
    """Upstream's result with ``UnadmittedWorkloadsObservability`` off."""
    pod_sets = [
        msgspec.structs.replace(p, attempts=[msgspec.structs.replace(at, nfr="") for at in p.attempts])
        for p in w.pod_sets
    ]
    return msgspec.structs.replace(w, pod_sets=pod_sets, no_fit_reason="")


def _case(name: str, gate: bool) -> Case:
    case = CASES[TWINS.get(name, name)]
    gates: dict[str, Any] = {**case.gates, "UnadmittedWorkloadsObservability": gate}
    return Case(**{**case.__dict__, "gates": gates})


WANT: dict[str, W] = {
    "borrow before try next flavor": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("one", "Fit", 0), "pods": ("one", "Fit", 0)},
                count=1,
                requests={"cpu": "9", "pods": "1"},
                attempts=[
                    A("one", "Fit", borrow=1),
                ],
            ),
        ],
        usage={("one", "cpu"): 9000, ("one", "pods"): 1},
        borrowing=1,
    ),
    "borrow try next flavor, found the first flavor": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("one", "Fit", -1), "pods": ("one", "Fit", -1)},
                count=1,
                requests={"cpu": "9", "pods": "1"},
                attempts=[
                    A("one", "Fit", borrow=1),
                    A(
                        "two",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor two, previously considered podsets requests (0) + current podset request (9) > maximum capacity (1)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                ],
            ),
        ],
        usage={("one", "cpu"): 9000, ("one", "pods"): 1},
        borrowing=1,
    ),
    "borrow try next flavor, found the second flavor": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("two", "Fit", -1), "pods": ("two", "Fit", -1)},
                count=1,
                requests={"cpu": "9", "pods": "1"},
                attempts=[
                    A("one", "Fit", borrow=1),
                    A("two", "Fit"),
                ],
            ),
        ],
        usage={("two", "cpu"): 9000, ("two", "pods"): 1},
    ),
    "can only preempt flavors that match affinity": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {"cpu": ("two", "Preempt", -1)},
                reasons=[
                    "flavor one doesn't match node affinity",
                    "insufficient unused quota for cpu in flavor two, 1 more needed",
                ],
                count=1,
                requests={"cpu": "2"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        reasons=["flavor one doesn't match node affinity"],
                        nfr="NoMatchingFlavor",
                    ),
                    A(
                        "two",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for cpu in flavor two, 1 more needed"],
                    ),
                ],
            ),
        ],
        usage={("two", "cpu"): 2000},
        message="couldn't assign flavors to pod set main: flavor one doesn't match node affinity, insufficient unused quota for cpu in flavor two, 1 more needed",
    ),
    "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor (which fits)": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("two", "Fit", -1)},
                count=1,
                requests={"cpu": "2"},
                attempts=[
                    A(
                        "one",
                        "Preempt",
                        pp="NoCandidates",
                        reasons=["insufficient unused quota for cpu in flavor one, 2 more needed"],
                    ),
                    A("two", "Fit", borrow=1),
                ],
            ),
        ],
        usage={("two", "cpu"): 2000},
        borrowing=1,
    ),
    "each podset requires preemption on a different flavor": W(
        mode="Preempt",
        pod_sets=[
            P(
                "launcher",
                {"cpu": ("one", "Preempt", -1)},
                reasons=[
                    "insufficient unused quota for cpu in flavor one, 1 more needed",
                    "untolerated taint {instance spot NoSchedule <nil>} in flavor tainted",
                ],
                count=1,
                requests={"cpu": "2"},
                attempts=[
                    A(
                        "one",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for cpu in flavor one, 1 more needed"],
                    ),
                    A(
                        "tainted",
                        "NoFit",
                        reasons=["untolerated taint {instance spot NoSchedule <nil>} in flavor tainted"],
                        nfr="NoMatchingFlavor",
                    ),
                ],
            ),
            P(
                "workers",
                {"cpu": ("tainted", "Preempt", -1)},
                reasons=[
                    "insufficient quota for cpu in flavor one, previously considered podsets requests (2) + current podset request (10) > maximum capacity (4)",
                    "insufficient unused quota for cpu in flavor tainted, 3 more needed",
                ],
                count=10,
                requests={"cpu": "10"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor one, previously considered podsets requests (2) + current podset request (10) > maximum capacity (4)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A(
                        "tainted",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for cpu in flavor tainted, 3 more needed"],
                    ),
                ],
            ),
        ],
        usage={("one", "cpu"): 2000, ("tainted", "cpu"): 10000},
        message="couldn't assign flavors to pod set launcher: insufficient unused quota for cpu in flavor one, 1 more needed, untolerated taint {instance spot NoSchedule <nil>} in flavor tainted; couldn't assign flavors to pod set workers: insufficient quota for cpu in flavor one, previously considered podsets requests (2) + current podset request (10) > maximum capacity (4), insufficient unused quota for cpu in flavor tainted, 3 more needed",
    ),
    "labelless flavor in group with labeled flavor, workload uses labeled selector": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("default", "Fit", 0)},
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A("default", "Fit"),
                ],
            ),
        ],
        usage={("default", "cpu"): 1000},
    ),
    "lend try next flavor, found the first flavor": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("one", "Fit", -1), "pods": ("one", "Fit", -1)},
                count=1,
                requests={"cpu": "9", "pods": "1"},
                attempts=[
                    A("one", "Fit", borrow=1),
                    A(
                        "two",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor two, previously considered podsets requests (0) + current podset request (9) > maximum capacity (1)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                ],
            ),
        ],
        usage={("one", "cpu"): 9000, ("one", "pods"): 1},
        borrowing=1,
    ),
    "lend try next flavor, found the second flavor": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("two", "Fit", -1), "pods": ("two", "Fit", -1)},
                count=1,
                requests={"cpu": "9", "pods": "1"},
                attempts=[
                    A("one", "Fit", borrow=1),
                    A("two", "Fit"),
                ],
            ),
        ],
        usage={("two", "cpu"): 9000, ("two", "pods"): 1},
    ),
    "multi-podset, one fits and another fails, fitting podset attempts skipped in resolveNoFitReason": W(
        mode="NoFit",
        pod_sets=[
            P(
                "fitting-podset",
                {"cpu": ("one", "Fit", 0)},
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A("one", "Fit"),
                ],
            ),
            P(
                "blocking-podset",
                {},
                reasons=[
                    "insufficient quota for cpu in flavor one, previously considered podsets requests (1) + current podset request (5) > maximum capacity (2)",
                    "insufficient quota for cpu in flavor two, previously considered podsets requests (0) + current podset request (5) > maximum capacity (2)",
                ],
                count=1,
                requests={"cpu": "5"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor one, previously considered podsets requests (1) + current podset request (5) > maximum capacity (2)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A(
                        "two",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor two, previously considered podsets requests (0) + current podset request (5) > maximum capacity (2)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                ],
            ),
        ],
        usage={("one", "cpu"): 1000},
        no_fit_reason="ExceedsMaxQuota",
        message="couldn't assign flavors to pod set blocking-podset: insufficient quota for cpu in flavor one, previously considered podsets requests (1) + current podset request (5) > maximum capacity (2), insufficient quota for cpu in flavor two, previously considered podsets requests (0) + current podset request (5) > maximum capacity (2)",
    ),
    "multiple flavors with different label keys, selector only uses flavor's own keys": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("label-x-a", "Fit", 0)},
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A("label-x-a", "Fit"),
                ],
            ),
        ],
        usage={("label-x-a", "cpu"): 1000},
    ),
    "multiple flavors, doesn't fit node affinity": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "flavor one doesn't match node affinity",
                    "flavor two doesn't match node affinity",
                ],
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        reasons=["flavor one doesn't match node affinity"],
                        nfr="NoMatchingFlavor",
                    ),
                    A(
                        "two",
                        "NoFit",
                        reasons=["flavor two doesn't match node affinity"],
                        nfr="NoMatchingFlavor",
                    ),
                ],
            ),
        ],
        no_fit_reason="NoMatchingFlavor",
        message="couldn't assign flavors to pod set main: flavor one doesn't match node affinity, flavor two doesn't match node affinity",
    ),
    "multiple flavors, fits a node selector": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("two", "Fit", -1)},
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        reasons=["flavor one doesn't match node affinity"],
                        nfr="NoMatchingFlavor",
                    ),
                    A("two", "Fit"),
                ],
            ),
        ],
        usage={("two", "cpu"): 1000},
    ),
    "multiple flavors, fits while skipping tainted flavor": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("two", "Fit", -1)},
                count=1,
                requests={"cpu": "3"},
                attempts=[
                    A(
                        "tainted",
                        "NoFit",
                        reasons=["untolerated taint {instance spot NoSchedule <nil>} in flavor tainted"],
                        nfr="NoMatchingFlavor",
                    ),
                    A("two", "Fit"),
                ],
            ),
        ],
        usage={("two", "cpu"): 3000},
    ),
    "multiple flavors, fits with node affinity": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("two", "Fit", -1), "memory": ("two", "Fit", -1)},
                count=1,
                requests={"cpu": "1", "memory": "1Mi"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        reasons=["flavor one doesn't match node affinity"],
                        nfr="NoMatchingFlavor",
                    ),
                    A("two", "Fit"),
                ],
            ),
        ],
        usage={("two", "cpu"): 1000, ("two", "memory"): 1048576},
    ),
    "multiple flavors, leader worker set, leader and workers request the same resources fits": W(
        mode="Fit",
        pod_sets=[
            P(
                "worker",
                {"cpu": ("two", "Fit", -1)},
                count=4,
                requests={"cpu": "8"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (9) > maximum capacity (4)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A("two", "Fit"),
                ],
            ),
            P(
                "leader",
                {"cpu": ("two", "Fit", -1)},
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (9) > maximum capacity (4)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A("two", "Fit"),
                ],
            ),
        ],
        usage={("two", "cpu"): 9000},
    ),
    "multiple flavors, leader worker set, workers request GPU, leader does not request GPU, does not fit, without group it would fit": W(
        mode="NoFit",
        pod_sets=[
            P(
                "worker",
                {},
                reasons=[
                    "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)",
                    "insufficient quota for example.com/gpu in flavor two, previously considered podsets requests (0) + current podset request (4) > maximum capacity (0)",
                ],
                count=4,
                requests={"cpu": "4", "example.com/gpu": "4"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A(
                        "two",
                        "NoFit",
                        reasons=[
                            "insufficient quota for example.com/gpu in flavor two, previously considered podsets requests (0) + current podset request (4) > maximum capacity (0)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                ],
            ),
            P(
                "leader",
                {},
                reasons=[
                    "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)",
                    "insufficient quota for example.com/gpu in flavor two, previously considered podsets requests (0) + current podset request (4) > maximum capacity (0)",
                ],
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A(
                        "two",
                        "NoFit",
                        reasons=[
                            "insufficient quota for example.com/gpu in flavor two, previously considered podsets requests (0) + current podset request (4) > maximum capacity (0)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                ],
            ),
        ],
        no_fit_reason="ExceedsMaxQuota",
        message="couldn't assign flavors to pod set worker: insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4), insufficient quota for example.com/gpu in flavor two, previously considered podsets requests (0) + current podset request (4) > maximum capacity (0); couldn't assign flavors to pod set leader: insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4), insufficient quota for example.com/gpu in flavor two, previously considered podsets requests (0) + current podset request (4) > maximum capacity (0)",
    ),
    "multiple flavors, leader worker set, workers request GPU, leader does not request GPU, fits": W(
        mode="Fit",
        pod_sets=[
            P(
                "worker",
                {
                    "cpu": ("two", "Fit", -1),
                    "example.com/gpu": ("two", "Fit", -1),
                    "memory": ("two", "Fit", -1),
                },
                count=4,
                requests={"cpu": "4", "example.com/gpu": "4", "memory": "4"},
                attempts=[
                    A("one", "Fit"),
                    A("two", "Fit"),
                ],
            ),
            P(
                "leader",
                {"cpu": ("two", "Fit", -1), "memory": ("two", "Fit", -1)},
                count=1,
                requests={"cpu": "1", "memory": "1"},
                attempts=[
                    A("one", "Fit"),
                    A("two", "Fit"),
                ],
            ),
        ],
        usage={("two", "cpu"): 5000, ("two", "example.com/gpu"): 4, ("two", "memory"): 5},
    ),
    "multiple flavors, node affinity fits any flavor": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("one", "Fit", 0)},
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A("one", "Fit"),
                ],
            ),
        ],
        usage={("one", "cpu"): 1000},
    ),
    "multiple resource groups with multiple resources, fits": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {
                    "cpu": ("two", "Fit", -1),
                    "example.com/gpu": ("b_one", "Fit", 0),
                    "memory": ("two", "Fit", -1),
                },
                count=1,
                requests={"cpu": "3", "example.com/gpu": "3", "memory": "10Mi"},
                attempts=[
                    A("b_one", "Fit"),
                    A(
                        "one",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A("two", "Fit"),
                ],
            ),
        ],
        usage={("b_one", "example.com/gpu"): 3, ("two", "cpu"): 3000, ("two", "memory"): 10485760},
    ),
    "multiple resource groups with multiple resources, fits with different modes": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {
                    "cpu": ("two", "Fit", -1),
                    "example.com/gpu": ("b_one", "Preempt", -1),
                    "memory": ("two", "Preempt", -1),
                },
                reasons=[
                    "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)",
                    "insufficient unused quota for example.com/gpu in flavor b_one, 1 more needed",
                    "insufficient unused quota for memory in flavor two, 5Mi more needed",
                ],
                count=1,
                requests={"cpu": "3", "example.com/gpu": "3", "memory": "10Mi"},
                attempts=[
                    A(
                        "b_one",
                        "Preempt",
                        pp="Preempt",
                        reasons=[
                            "insufficient unused quota for example.com/gpu in flavor b_one, 1 more needed"
                        ],
                    ),
                    A(
                        "one",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A(
                        "two",
                        "Preempt",
                        borrow=1,
                        pp="Preempt",
                        reasons=["insufficient unused quota for memory in flavor two, 5Mi more needed"],
                    ),
                ],
            ),
        ],
        usage={("b_one", "example.com/gpu"): 3, ("two", "cpu"): 3000, ("two", "memory"): 10485760},
        borrowing=1,
        message="couldn't assign flavors to pod set main: insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2), insufficient unused quota for example.com/gpu in flavor b_one, 1 more needed, insufficient unused quota for memory in flavor two, 5Mi more needed",
    ),
    "multiple resource groups, fits": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("two", "Fit", -1), "memory": ("b_one", "Fit", 0)},
                count=1,
                requests={"cpu": "3", "memory": "10Mi"},
                attempts=[
                    A("b_one", "Fit"),
                    A(
                        "one",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A("two", "Fit"),
                ],
            ),
        ],
        usage={("b_one", "memory"): 10485760, ("two", "cpu"): 3000},
    ),
    "multiple resource groups, one could fit with preemption, other doesn't fit": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "insufficient quota for memory in flavor b_one, previously considered podsets requests (0) + current podset request (10Mi) > maximum capacity (1Mi)",
                ],
                count=1,
                requests={"cpu": "3", "memory": "10Mi"},
                attempts=[
                    A(
                        "b_one",
                        "NoFit",
                        reasons=[
                            "insufficient quota for memory in flavor b_one, previously considered podsets requests (0) + current podset request (10Mi) > maximum capacity (1Mi)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                ],
            ),
        ],
        no_fit_reason="ExceedsMaxQuota",
        message="couldn't assign flavors to pod set main: insufficient quota for memory in flavor b_one, previously considered podsets requests (0) + current podset request (10Mi) > maximum capacity (1Mi)",
    ),
    "multiple resources in a group, doesn't fit": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)",
                    "insufficient quota for memory in flavor two, previously considered podsets requests (0) + current podset request (10Mi) > maximum capacity (5Mi)",
                ],
                count=1,
                requests={"cpu": "3", "memory": "10Mi"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A(
                        "two",
                        "NoFit",
                        reasons=[
                            "insufficient quota for memory in flavor two, previously considered podsets requests (0) + current podset request (10Mi) > maximum capacity (5Mi)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                ],
            ),
        ],
        no_fit_reason="ExceedsMaxQuota",
        message="couldn't assign flavors to pod set main: insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2), insufficient quota for memory in flavor two, previously considered podsets requests (0) + current podset request (10Mi) > maximum capacity (5Mi)",
    ),
    "multiple specs, fit different flavors": W(
        mode="Fit",
        pod_sets=[
            P(
                "driver",
                {"cpu": ("two", "Fit", -1)},
                count=1,
                requests={"cpu": "5"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A("two", "Fit"),
                ],
            ),
            P(
                "worker",
                {"cpu": ("one", "Fit", 0)},
                count=1,
                requests={"cpu": "3"},
                attempts=[
                    A("one", "Fit"),
                ],
            ),
        ],
        usage={("one", "cpu"): 3000, ("two", "cpu"): 5000},
    ),
    "multiple specs, fits borrowing": W(
        mode="Fit",
        pod_sets=[
            P(
                "driver",
                {"cpu": ("default", "Fit", -1), "memory": ("default", "Fit", -1)},
                count=1,
                requests={"cpu": "4", "memory": "1Gi"},
                attempts=[
                    A("default", "Fit", borrow=1),
                ],
            ),
            P(
                "worker",
                {"cpu": ("default", "Fit", -1), "memory": ("default", "Fit", -1)},
                count=1,
                requests={"cpu": "6", "memory": "4Gi"},
                attempts=[
                    A("default", "Fit", borrow=1),
                ],
            ),
        ],
        usage={("default", "cpu"): 10000, ("default", "memory"): 5368709120},
        borrowing=1,
    ),
    "not enough space to borrow": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (2) > maximum capacity (1)",
                ],
                count=1,
                requests={"cpu": "2"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (2) > maximum capacity (1)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                ],
            ),
        ],
        no_fit_reason="ExceedsMaxQuota",
        message="couldn't assign flavors to pod set main: insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (2) > maximum capacity (1)",
    ),
    "num pods don't fit": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "insufficient quota for pods in flavor default, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)",
                ],
                count=3,
                requests={"cpu": "3", "pods": "3"},
                attempts=[
                    A(
                        "default",
                        "NoFit",
                        reasons=[
                            "insufficient quota for pods in flavor default, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                ],
            ),
        ],
        no_fit_reason="ExceedsMaxQuota",
        message="couldn't assign flavors to pod set main: insufficient quota for pods in flavor default, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)",
    ),
    "num pods fit": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("default", "Fit", -1), "pods": ("default", "Fit", -1)},
                count=3,
                requests={"cpu": "3", "pods": "3"},
                attempts=[
                    A("default", "Fit"),
                ],
            ),
        ],
        usage={("default", "cpu"): 3000, ("default", "pods"): 3},
    ),
    "past max, but can preempt in ClusterQueue": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {"cpu": ("one", "Preempt", -1)},
                reasons=[
                    "insufficient unused quota for cpu in flavor one, 1 more needed",
                ],
                count=1,
                requests={"cpu": "2"},
                attempts=[
                    A(
                        "one",
                        "Preempt",
                        borrow=1,
                        pp="Preempt",
                        reasons=["insufficient unused quota for cpu in flavor one, 1 more needed"],
                    ),
                ],
            ),
        ],
        usage={("one", "cpu"): 2000},
        borrowing=1,
        message="couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor one, 1 more needed",
    ),
    "past min, but can preempt in ClusterQueue": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {"cpu": ("one", "Preempt", -1)},
                reasons=[
                    "insufficient unused quota for cpu in flavor one, 1 more needed",
                ],
                count=1,
                requests={"cpu": "2"},
                attempts=[
                    A(
                        "one",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for cpu in flavor one, 1 more needed"],
                    ),
                ],
            ),
        ],
        usage={("one", "cpu"): 2000},
        message="couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor one, 1 more needed",
    ),
    "past min, but can preempt in cohort and ClusterQueue": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {"cpu": ("one", "Preempt", -1)},
                reasons=[
                    "insufficient unused quota for cpu in flavor one, 2 more needed",
                ],
                count=1,
                requests={"cpu": "2"},
                attempts=[
                    A(
                        "one",
                        "Preempt",
                        borrow=1,
                        pp="Preempt",
                        reasons=["insufficient unused quota for cpu in flavor one, 2 more needed"],
                    ),
                ],
            ),
        ],
        usage={("one", "cpu"): 2000},
        borrowing=1,
        message="couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor one, 2 more needed",
    ),
    "preempt before try next flavor": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {"cpu": ("one", "Preempt", 0), "pods": ("one", "Fit", 0)},
                reasons=[
                    "insufficient unused quota for cpu in flavor one, 1 more needed",
                ],
                count=1,
                requests={"cpu": "9", "pods": "1"},
                attempts=[
                    A(
                        "one",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for cpu in flavor one, 1 more needed"],
                    ),
                ],
            ),
        ],
        usage={("one", "cpu"): 9000, ("one", "pods"): 1},
        message="couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor one, 1 more needed",
    ),
    "preempt try next flavor": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("two", "Fit", -1), "pods": ("two", "Fit", -1)},
                count=1,
                requests={"cpu": "9", "pods": "1"},
                attempts=[
                    A(
                        "one",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for cpu in flavor one, 1 more needed"],
                    ),
                    A("two", "Fit"),
                ],
            ),
        ],
        usage={("two", "cpu"): 9000, ("two", "pods"): 1},
    ),
    "quota exhausted, but can preempt in cohort and ClusterQueue": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {"cpu": ("one", "Preempt", -1), "pods": ("one", "Fit", -1)},
                reasons=[
                    "insufficient unused quota for cpu in flavor one, 1 more needed",
                ],
                count=1,
                requests={"cpu": "9", "pods": "1"},
                attempts=[
                    A(
                        "one",
                        "Preempt",
                        borrow=1,
                        pp="Preempt",
                        reasons=["insufficient unused quota for cpu in flavor one, 1 more needed"],
                    ),
                ],
            ),
        ],
        usage={("one", "cpu"): 9000, ("one", "pods"): 1},
        borrowing=1,
        message="couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor one, 1 more needed",
    ),
    "resource not listed in clusterQueue": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "resource example.com/gpu unavailable in ClusterQueue",
                ],
                count=1,
                requests={"example.com/gpu": "2"},
                attempts=[],
            ),
        ],
        no_fit_reason="NoMatchingFlavor",
        message="couldn't assign flavors to pod set main: resource example.com/gpu unavailable in ClusterQueue",
    ),
    "single flavor, fits": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("default", "Fit", -1), "memory": ("default", "Fit", -1)},
                count=1,
                requests={"cpu": "1", "memory": "1Mi"},
                attempts=[
                    A("default", "Fit"),
                ],
            ),
        ],
        usage={("default", "cpu"): 1000, ("default", "memory"): 1048576},
    ),
    "single flavor, fits tainted flavor": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("tainted", "Fit", -1)},
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A("tainted", "Fit"),
                ],
            ),
        ],
        usage={("tainted", "cpu"): 1000},
    ),
    "single flavor, fits tainted flavor with toleration": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("taint_and_toleration", "Fit", -1)},
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A("taint_and_toleration", "Fit"),
                ],
            ),
        ],
        usage={("taint_and_toleration", "cpu"): 1000},
    ),
    "single flavor, used resources, doesn't fit": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {"cpu": ("default", "Preempt", -1)},
                reasons=[
                    "insufficient unused quota for cpu in flavor default, 1 more needed",
                ],
                count=1,
                requests={"cpu": "2"},
                attempts=[
                    A(
                        "default",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for cpu in flavor default, 1 more needed"],
                    ),
                ],
            ),
        ],
        usage={("default", "cpu"): 2000},
        message="couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 1 more needed",
    ),
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Any": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {"cpu": ("one", "Preempt", 0)},
                reasons=[
                    "insufficient unused quota for cpu in flavor one, 10 more needed",
                ],
                count=1,
                requests={"cpu": "12"},
                attempts=[
                    A(
                        "one",
                        "Preempt",
                        borrow=1,
                        pp="Preempt",
                        reasons=["insufficient unused quota for cpu in flavor one, 10 more needed"],
                    ),
                ],
            ),
        ],
        usage={("one", "cpu"): 12000},
        borrowing=1,
        message="couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor one, 10 more needed",
    ),
    "when borrowing while preemption is needed for flavor one, fair sharing enabled, reclaimWithinCohort=Never": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("two", "Fit", -1)},
                count=1,
                requests={"cpu": "12"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        borrow=1,
                        reasons=["insufficient unused quota for cpu in flavor one, 10 more needed"],
                        nfr="WaitingForQuota",
                    ),
                    A("two", "Fit"),
                ],
            ),
        ],
        usage={("two", "cpu"): 12000},
    ),
    "when borrowing while preemption is needed for flavor one, no borrowingLimit; WhenCanBorrow=MayStopSearch": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {"cpu": ("one", "Preempt", 0)},
                reasons=[
                    "insufficient unused quota for cpu in flavor one, 10 more needed",
                ],
                count=1,
                requests={"cpu": "12"},
                attempts=[
                    A(
                        "one",
                        "Preempt",
                        borrow=1,
                        pp="Preempt",
                        reasons=["insufficient unused quota for cpu in flavor one, 10 more needed"],
                    ),
                ],
            ),
        ],
        usage={("one", "cpu"): 12000},
        borrowing=1,
        message="couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor one, 10 more needed",
    ),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=MayStopSearch": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {"cpu": ("one", "Preempt", 0)},
                reasons=[
                    "insufficient unused quota for cpu in flavor one, 10 more needed",
                ],
                count=1,
                requests={"cpu": "12"},
                attempts=[
                    A(
                        "one",
                        "Preempt",
                        borrow=1,
                        pp="Preempt",
                        reasons=["insufficient unused quota for cpu in flavor one, 10 more needed"],
                    ),
                ],
            ),
        ],
        usage={("one", "cpu"): 12000},
        borrowing=1,
        message="couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor one, 10 more needed",
    ),
    "when borrowing while preemption is needed for flavor one; WhenCanBorrow=TryNextFlavor": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("two", "Fit", -1)},
                count=1,
                requests={"cpu": "12"},
                attempts=[
                    A("one", "Fit", borrow=1),
                    A("two", "Fit"),
                ],
            ),
        ],
        usage={("two", "cpu"): 12000},
    ),
    "when borrowing while preemption is needed, but borrowingLimit exceeds the quota available in the cohort": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (12) > maximum capacity (11)",
                ],
                count=1,
                requests={"cpu": "12"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (12) > maximum capacity (11)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                ],
            ),
        ],
        no_fit_reason="ExceedsMaxQuota",
        message="couldn't assign flavors to pod set main: insufficient quota for cpu in flavor one, previously considered podsets requests (0) + current podset request (12) > maximum capacity (11)",
    ),
    "with reclaimable pods; reclaimablePods off": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("default", "Fit", -1), "pods": ("default", "Fit", -1)},
                count=5,
                requests={"cpu": "5", "pods": "5"},
                attempts=[
                    A("default", "Fit"),
                ],
            ),
        ],
        usage={("default", "cpu"): 5000, ("default", "pods"): 5},
    ),
    "with reclaimable pods; reclaimablePods on": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("default", "Fit", -1), "pods": ("default", "Fit", -1)},
                count=3,
                requests={"cpu": "3", "pods": "3"},
                attempts=[
                    A("default", "Fit"),
                ],
            ),
        ],
        usage={("default", "cpu"): 3000, ("default", "pods"): 3},
    ),
    "zero resource request defined in clusterQueue should get flavor assigned": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("default", "Fit", -1), "example.com/gpu": ("default", "Fit", -1)},
                count=1,
                requests={"cpu": "1", "example.com/gpu": "0"},
                attempts=[
                    A("default", "Fit"),
                ],
            ),
        ],
        usage={("default", "cpu"): 1000, ("default", "example.com/gpu"): 0},
    ),
    "zero resource request not in clusterQueue should succeed": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("default", "Fit", -1)},
                count=1,
                requests={"cpu": "1", "example.com/gpu": "0"},
                attempts=[
                    A("default", "Fit"),
                ],
            ),
        ],
        usage={("default", "cpu"): 1000},
    ),
}


WANT.update({twin: WANT[original] for twin, original in TWINS.items()})


@pytest.mark.parametrize("gate", [False, True], ids=["gate_false", "gate_true"])
@pytest.mark.parametrize("name", list(WANT), ids=list(WANT))
def test_assign_flavors_upstream(name: str, gate: bool) -> None:
    want = WANT[name] if gate else without_no_fit_reasons(WANT[name])
    assert observed(run(_case(name, gate))) == want


WANT_RECLAIM: dict[str, W] = {
    "Select first flavor when flavor fungibility is disabled": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {"gpu": ("uno", "Preempt", 0)},
                reasons=[
                    "insufficient unused quota for gpu in flavor uno, 1 more needed",
                ],
                count=1,
                requests={"gpu": "10"},
                attempts=[
                    A(
                        "uno",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for gpu in flavor uno, 1 more needed"],
                    ),
                ],
            ),
        ],
        usage={("uno", "gpu"): 10},
        message="couldn't assign flavors to pod set main: insufficient unused quota for gpu in flavor uno, 1 more needed",
    ),
    "Select first flavor where gpu reclamation is possible": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {"gpu": ("due", "Preempt", -1)},
                reasons=[
                    "insufficient unused quota for gpu in flavor due, 1 more needed",
                    "insufficient unused quota for gpu in flavor tre, 1 more needed",
                    "insufficient unused quota for gpu in flavor uno, 1 more needed",
                ],
                count=1,
                requests={"gpu": "10"},
                attempts=[
                    A(
                        "due",
                        "Preempt",
                        pp="Reclaim",
                        reasons=["insufficient unused quota for gpu in flavor due, 1 more needed"],
                    ),
                    A(
                        "tre",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for gpu in flavor tre, 1 more needed"],
                    ),
                    A(
                        "uno",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for gpu in flavor uno, 1 more needed"],
                    ),
                ],
            ),
        ],
        usage={("due", "gpu"): 10},
        message="couldn't assign flavors to pod set main: insufficient unused quota for gpu in flavor due, 1 more needed, insufficient unused quota for gpu in flavor tre, 1 more needed, insufficient unused quota for gpu in flavor uno, 1 more needed",
    ),
    "Select first flavor where priority based preemption is possible": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {"gpu": ("uno", "Preempt", -1)},
                reasons=[
                    "insufficient unused quota for gpu in flavor due, 1 more needed",
                    "insufficient unused quota for gpu in flavor tre, 1 more needed",
                    "insufficient unused quota for gpu in flavor uno, 1 more needed",
                ],
                count=1,
                requests={"gpu": "10"},
                attempts=[
                    A(
                        "due",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for gpu in flavor due, 1 more needed"],
                    ),
                    A(
                        "tre",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for gpu in flavor tre, 1 more needed"],
                    ),
                    A(
                        "uno",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for gpu in flavor uno, 1 more needed"],
                    ),
                ],
            ),
        ],
        usage={("uno", "gpu"): 10},
        message="couldn't assign flavors to pod set main: insufficient unused quota for gpu in flavor due, 1 more needed, insufficient unused quota for gpu in flavor tre, 1 more needed, insufficient unused quota for gpu in flavor uno, 1 more needed",
    ),
    "Select first flavor which fits": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"gpu": ("tre", "Fit", -1)},
                count=1,
                requests={"gpu": "10"},
                attempts=[
                    A(
                        "due",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for gpu in flavor due, 1 more needed"],
                    ),
                    A("tre", "Fit"),
                    A(
                        "uno",
                        "Preempt",
                        pp="Preempt",
                        reasons=["insufficient unused quota for gpu in flavor uno, 1 more needed"],
                    ),
                ],
            ),
        ],
        usage={("tre", "gpu"): 10},
    ),
    "Select second flavor where gpu reclamation is possible, as compute Fits": W(
        mode="Preempt",
        pod_sets=[
            P(
                "main",
                {"compute": ("tre", "Fit", -1), "gpu": ("tre", "Preempt", -1)},
                reasons=[
                    "insufficient unused quota for compute in flavor due, 1 more needed",
                    "insufficient unused quota for compute in flavor uno, 1 more needed",
                    "insufficient unused quota for gpu in flavor due, 1 more needed",
                    "insufficient unused quota for gpu in flavor tre, 1 more needed",
                    "insufficient unused quota for gpu in flavor uno, 1 more needed",
                ],
                count=1,
                requests={"compute": "10", "gpu": "10"},
                attempts=[
                    A(
                        "due",
                        "Preempt",
                        pp="Preempt",
                        reasons=[
                            "insufficient unused quota for compute in flavor due, 1 more needed",
                            "insufficient unused quota for gpu in flavor due, 1 more needed",
                        ],
                    ),
                    A(
                        "tre",
                        "Preempt",
                        pp="Reclaim",
                        reasons=["insufficient unused quota for gpu in flavor tre, 1 more needed"],
                    ),
                    A(
                        "uno",
                        "Preempt",
                        pp="Preempt",
                        reasons=[
                            "insufficient unused quota for compute in flavor uno, 1 more needed",
                            "insufficient unused quota for gpu in flavor uno, 1 more needed",
                        ],
                    ),
                ],
            ),
        ],
        usage={("tre", "compute"): 10, ("tre", "gpu"): 10},
        message="couldn't assign flavors to pod set main: insufficient unused quota for compute in flavor due, 1 more needed, insufficient unused quota for compute in flavor uno, 1 more needed, insufficient unused quota for gpu in flavor due, 1 more needed, insufficient unused quota for gpu in flavor tre, 1 more needed, insufficient unused quota for gpu in flavor uno, 1 more needed",
    ),
}
"""Upstream ``TestReclaimBeforePriorityPreemption``, whole assignments (upstream checks mode and flavors)."""


# Upstream's twin of "Select first flavor when flavor fungibility is disabled" (same inputs).
WANT_RECLAIM[
    "Select first flavor when flavor fungibility is disabled; using deprecated WhenCanPreempt=MayStopSearch"
] = WANT_RECLAIM["Select first flavor when flavor fungibility is disabled"]


WANT_HIERARCHICAL: dict[str, W] = {
    "Select deeper-borrowing flavor that fits when shallower-borrowing flavor has no preemption candidates": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("two", "Fit", -1)},
                count=1,
                requests={"cpu": "4"},
                attempts=[
                    A(
                        "one",
                        "Preempt",
                        borrow=1,
                        pp="NoCandidates",
                        reasons=["insufficient unused quota for cpu in flavor one, 4 more needed"],
                    ),
                    A("three", "Fit", borrow=3),
                    A("two", "Fit", borrow=2),
                ],
            ),
        ],
        usage={("two", "cpu"): 4000},
        borrowing=2,
    ),
    "Select the first flavor which fits": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("two", "Fit", 1)},
                count=1,
                requests={"cpu": "4"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        borrow=3,
                        reasons=["insufficient unused quota for cpu in flavor one, 4 more needed"],
                        nfr="WaitingForQuota",
                    ),
                    A("two", "Fit", borrow=2),
                ],
            ),
        ],
        usage={("two", "cpu"): 4000},
        borrowing=2,
    ),
    "Select the top flavor": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("three", "Fit", -1)},
                count=1,
                requests={"cpu": "4"},
                attempts=[
                    A(
                        "one",
                        "NoFit",
                        borrow=3,
                        reasons=["insufficient unused quota for cpu in flavor one, 4 more needed"],
                        nfr="WaitingForQuota",
                    ),
                    A("three", "Fit", borrow=3),
                    A(
                        "two",
                        "NoFit",
                        borrow=3,
                        reasons=["insufficient unused quota for cpu in flavor two, 4 more needed"],
                        nfr="WaitingForQuota",
                    ),
                ],
            ),
        ],
        usage={("three", "cpu"): 4000},
        borrowing=3,
    ),
}
"""Upstream ``TestHierarchical``, whole assignments (upstream checks mode and flavors)."""


WANT_DELETED: dict[str, W] = {
    "flavor not found": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "flavor deleted-flavor not found",
                ],
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A(
                        "deleted-flavor",
                        "NoFit",
                        reasons=["flavor deleted-flavor not found"],
                        nfr="NoMatchingFlavor",
                    ),
                ],
            ),
        ],
        no_fit_reason="NoMatchingFlavor",
        message="couldn't assign flavors to pod set main: flavor deleted-flavor not found",
    ),
    "multiple flavors, skip missing ResourceFlavor": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("flavor", "Fit", -1)},
                count=1,
                requests={"cpu": "3"},
                attempts=[
                    A(
                        "deleted-flavor",
                        "NoFit",
                        reasons=["flavor deleted-flavor not found"],
                        nfr="NoMatchingFlavor",
                    ),
                    A("flavor", "Fit"),
                ],
            ),
        ],
        usage={("flavor", "cpu"): 3000},
    ),
}
"""Upstream ``TestDeletedFlavors`` (gate on; off: no NoFit reasons)."""


WANT_NOFIT: dict[str, W] = {
    "exceeds borrowing limit but cohort has capacity": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "insufficient quota for cpu in flavor flavor-a, previously considered podsets requests (0) + current podset request (4) > maximum capacity (3)",
                    "untolerated taint {key val NoSchedule <nil>} in flavor flavor-b",
                ],
                count=1,
                requests={"cpu": "4"},
                attempts=[
                    A(
                        "flavor-a",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor flavor-a, previously considered podsets requests (0) + current podset request (4) > maximum capacity (3)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A(
                        "flavor-b",
                        "NoFit",
                        reasons=["untolerated taint {key val NoSchedule <nil>} in flavor flavor-b"],
                        nfr="NoMatchingFlavor",
                    ),
                ],
            ),
        ],
        no_fit_reason="ExceedsMaxQuota",
        message="couldn't assign flavors to pod set main: insufficient quota for cpu in flavor flavor-a, previously considered podsets requests (0) + current podset request (4) > maximum capacity (3), untolerated taint {key val NoSchedule <nil>} in flavor flavor-b",
    ),
    "exceeds cohort max capacity limits": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "insufficient quota for cpu in flavor flavor-a, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)",
                    "untolerated taint {key val NoSchedule <nil>} in flavor flavor-b",
                ],
                count=1,
                requests={"cpu": "5"},
                attempts=[
                    A(
                        "flavor-a",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor flavor-a, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A(
                        "flavor-b",
                        "NoFit",
                        reasons=["untolerated taint {key val NoSchedule <nil>} in flavor flavor-b"],
                        nfr="NoMatchingFlavor",
                    ),
                ],
            ),
        ],
        no_fit_reason="ExceedsMaxQuota",
        message="couldn't assign flavors to pod set main: insufficient quota for cpu in flavor flavor-a, previously considered podsets requests (0) + current podset request (5) > maximum capacity (4), untolerated taint {key val NoSchedule <nil>} in flavor flavor-b",
    ),
    "exceeds max capacity limits": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "insufficient quota for cpu in flavor flavor-a, previously considered podsets requests (0) + current podset request (5) > maximum capacity (2)",
                    "untolerated taint {key val NoSchedule <nil>} in flavor flavor-b",
                ],
                count=1,
                requests={"cpu": "5"},
                attempts=[
                    A(
                        "flavor-a",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor flavor-a, previously considered podsets requests (0) + current podset request (5) > maximum capacity (2)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A(
                        "flavor-b",
                        "NoFit",
                        reasons=["untolerated taint {key val NoSchedule <nil>} in flavor flavor-b"],
                        nfr="NoMatchingFlavor",
                    ),
                ],
            ),
        ],
        no_fit_reason="ExceedsMaxQuota",
        message="couldn't assign flavors to pod set main: insufficient quota for cpu in flavor flavor-a, previously considered podsets requests (0) + current podset request (5) > maximum capacity (2), untolerated taint {key val NoSchedule <nil>} in flavor flavor-b",
    ),
    "flavor spanning multiple resource groups": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "flavor flavor-shared doesn't match node affinity",
                ],
                count=1,
                requests={"cpu": "3", "memory": "3Gi"},
                attempts=[
                    A(
                        "flavor-shared",
                        "NoFit",
                        reasons=["flavor flavor-shared doesn't match node affinity"],
                        nfr="NoMatchingFlavor",
                    ),
                ],
            ),
        ],
        no_fit_reason="NoMatchingFlavor",
        message="couldn't assign flavors to pod set main: flavor flavor-shared doesn't match node affinity",
    ),
    "insufficient capacity, cohort has available capacity (waiting for quota)": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "insufficient unused quota for cpu in flavor flavor-a, 1 more needed",
                    "untolerated taint {key val NoSchedule <nil>} in flavor flavor-b",
                ],
                count=1,
                requests={"cpu": "3"},
                attempts=[
                    A(
                        "flavor-a",
                        "NoFit",
                        borrow=1,
                        reasons=["insufficient unused quota for cpu in flavor flavor-a, 1 more needed"],
                        nfr="WaitingForQuota",
                    ),
                    A(
                        "flavor-b",
                        "NoFit",
                        reasons=["untolerated taint {key val NoSchedule <nil>} in flavor flavor-b"],
                        nfr="NoMatchingFlavor",
                    ),
                ],
            ),
        ],
        no_fit_reason="WaitingForQuota",
        message="couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor flavor-a, 1 more needed, untolerated taint {key val NoSchedule <nil>} in flavor flavor-b",
    ),
    "insufficient quota": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "insufficient quota for cpu in flavor flavor-a, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)",
                    "untolerated taint {key val NoSchedule <nil>} in flavor flavor-b",
                ],
                count=1,
                requests={"cpu": "3"},
                attempts=[
                    A(
                        "flavor-a",
                        "NoFit",
                        reasons=[
                            "insufficient quota for cpu in flavor flavor-a, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2)"
                        ],
                        nfr="ExceedsMaxQuota",
                    ),
                    A(
                        "flavor-b",
                        "NoFit",
                        reasons=["untolerated taint {key val NoSchedule <nil>} in flavor flavor-b"],
                        nfr="NoMatchingFlavor",
                    ),
                ],
            ),
        ],
        no_fit_reason="ExceedsMaxQuota",
        message="couldn't assign flavors to pod set main: insufficient quota for cpu in flavor flavor-a, previously considered podsets requests (0) + current podset request (3) > maximum capacity (2), untolerated taint {key val NoSchedule <nil>} in flavor flavor-b",
    ),
    "node affinity mismatch when both flavors declare same key": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "flavor flavor-a doesn't match node affinity",
                    "flavor flavor-b doesn't match node affinity",
                ],
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A(
                        "flavor-a",
                        "NoFit",
                        reasons=["flavor flavor-a doesn't match node affinity"],
                        nfr="NoMatchingFlavor",
                    ),
                    A(
                        "flavor-b",
                        "NoFit",
                        reasons=["flavor flavor-b doesn't match node affinity"],
                        nfr="NoMatchingFlavor",
                    ),
                ],
            ),
        ],
        no_fit_reason="NoMatchingFlavor",
        message="couldn't assign flavors to pod set main: flavor flavor-a doesn't match node affinity, flavor flavor-b doesn't match node affinity",
    ),
    "prioritization of structural mismatch over capacity mismatch": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "resource memory unavailable in ClusterQueue",
                ],
                count=1,
                requests={"cpu": "3", "memory": "20Gi"},
                attempts=[],
            ),
        ],
        no_fit_reason="NoMatchingFlavor",
        message="couldn't assign flavors to pod set main: resource memory unavailable in ClusterQueue",
    ),
    "succeeds to schedule on flavor-a": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("flavor-a", "Fit", 0)},
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A("flavor-a", "Fit"),
                ],
            ),
        ],
        usage={("flavor-a", "cpu"): 1000},
    ),
    "succeeds to schedule on flavor-b with a tolerated taint": W(
        mode="Fit",
        pod_sets=[
            P(
                "main",
                {"cpu": ("flavor-b", "Fit", -1)},
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A(
                        "flavor-a",
                        "NoFit",
                        reasons=["flavor flavor-a doesn't match node affinity"],
                        nfr="NoMatchingFlavor",
                    ),
                    A("flavor-b", "Fit"),
                ],
            ),
        ],
        usage={("flavor-b", "cpu"): 1000},
    ),
    "taints mismatch": W(
        mode="NoFit",
        pod_sets=[
            P(
                "main",
                {},
                reasons=[
                    "flavor flavor-a doesn't match node affinity",
                    "untolerated taint {key val NoSchedule <nil>} in flavor flavor-b",
                ],
                count=1,
                requests={"cpu": "1"},
                attempts=[
                    A(
                        "flavor-a",
                        "NoFit",
                        reasons=["flavor flavor-a doesn't match node affinity"],
                        nfr="NoMatchingFlavor",
                    ),
                    A(
                        "flavor-b",
                        "NoFit",
                        reasons=["untolerated taint {key val NoSchedule <nil>} in flavor flavor-b"],
                        nfr="NoMatchingFlavor",
                    ),
                ],
            ),
        ],
        no_fit_reason="NoMatchingFlavor",
        message="couldn't assign flavors to pod set main: flavor flavor-a doesn't match node affinity, untolerated taint {key val NoSchedule <nil>} in flavor flavor-b",
    ),
}
"""Upstream ``TestIsNoFitDueToCapacityAndLimits``, whole assignments (upstream checks the NoFit
reasons; the gate is on)."""


def _rows(table: list[Any]) -> dict[str, tuple[Any, ...]]:
    return {row[0]: tuple(row[1:]) for row in table}


RECLAIM = _rows(RECLAIM_TABLE)
HIERARCHICAL = _rows(HIERARCHICAL_TABLE)
DELETED = _rows(DELETED_TABLE)
NOFIT = _rows(NOFIT_TABLE)


@pytest.mark.parametrize("name", list(WANT_RECLAIM), ids=list(WANT_RECLAIM))
def test_reclaim_before_priority_preemption_upstream(name: str) -> None:
    assert observed(run(reclaim_case(*RECLAIM[name][:5]))) == WANT_RECLAIM[name]


@pytest.mark.parametrize("name", list(WANT_HIERARCHICAL), ids=list(WANT_HIERARCHICAL))
def test_hierarchical_upstream(name: str) -> None:
    assert observed(run(hierarchical_case(*HIERARCHICAL[name][:5]))) == WANT_HIERARCHICAL[name]


@pytest.mark.parametrize("gate", [False, True], ids=["gate_false", "gate_true"])
@pytest.mark.parametrize("name", list(WANT_DELETED), ids=list(WANT_DELETED))
def test_deleted_flavors_upstream(name: str, gate: bool) -> None:
    cq_flavors, _, want_flavor, _ = DELETED[name]
    case = deleted_case(cq_flavors, want_flavor)
    case.gates = {"UnadmittedWorkloadsObservability": gate}
    want = WANT_DELETED[name] if gate else without_no_fit_reasons(WANT_DELETED[name])
    assert observed(run(case)) == want


@pytest.mark.parametrize("name", list(WANT_NOFIT), ids=list(WANT_NOFIT))
def test_is_no_fit_due_to_capacity_and_limits_upstream(name: str) -> None:
    assert observed(run(nofit_case(*NOFIT[name][:5]))) == WANT_NOFIT[name]


@pytest.mark.parametrize(
    ("name", "borrowing", "want"),
    [("no borrowing", 0, False), ("borrows at level 1", 1, True), ("borrows at level 2", 2, True)],
)
def test_assignment_requires_borrowing(name: str, borrowing: int, want: bool) -> None:
    """Upstream ``TestAssignment_RequiresBorrowing``."""
    assert Assignment(pod_sets=[], borrowing=borrowing).requires_borrowing() is want


MI = 1048576
# name: (assigned count, the workload's pod count, the workload's requests per pod, want)
TOTAL_REQUESTS_FOR: dict[str, tuple[int, int, dict[str, str], dict[tuple[str, str], int]]] = {
    # Regular workload without replacement workload-slice and with full admission (vs. partial).
    "RegularWorkload": (2, 2, {"cpu": "1", "memory": "1Mi"}, {("default", "cpu"): 2 * 1000, ("default", "memory"): 2 * MI}),
    "WorkloadWithPartialAdmission": (1, 2, {"cpu": "1", "memory": "1Mi"}, {("default", "cpu"): 1000, ("default", "memory"): MI}),
    "WorkloadWithZeroQuantityResourceNotInClusterQueueSkipsResourceWithoutFlavor": (
        2,
        2,
        {"cpu": "1", "memory": "1Mi", "example.com/gpu": "0"},
        {("default", "cpu"): 2 * 1000, ("default", "memory"): 2 * MI},
    ),
}


@pytest.mark.parametrize("name", list(TOTAL_REQUESTS_FOR), ids=list(TOTAL_REQUESTS_FOR))
def test_assignment_total_requests_for(name: str) -> None:
    """Upstream ``TestAssignment_TotalRequestsFor``: the workload's requests, scaled to each pod set's
    assigned count, on the assigned flavors; zero requests (which may have no flavor) are left out.
    As upstream's, the assignment's own per-pod-set requests are those of one pod: only the
    workload's requests and the assigned count decide."""
    assigned, pods, requests, want = TOTAL_REQUESTS_FOR[name]
    flavors = {res: FlavorAssignment("default", Mode.FIT, -1) for res in ("cpu", "memory")}
    assignment = Assignment(
        pod_sets=[PodSetAssignmentResult("main", flavors, {"cpu": 1000, "memory": MI}, assigned)]
    )
    wl = new_workload_info(workload("test", pod_sets=[pod_set("main", pods, requests)]), SchedulerOptions())
    assert assignment.total_requests_for(wl) == want


ALLOWED_FLAVORS_CQ = cluster_queue(
    "cq", flavor_quotas("f1", cpu=10), flavor_quotas("f2", cpu=10), flavor_quotas("occupied", cpu=1)
)


def _allowed_flavors_case(annotation: str | None, gate: bool = True) -> Case:
    """Upstream's ``TestAssignFlavorsWithAllowedFlavors`` setup: one pod of 2 CPUs on
    ``ALLOWED_FLAVORS_CQ``, with the allowed-flavors ``annotation`` (None: absent)."""
    return Case(
        cq=ALLOWED_FLAVORS_CQ,
        pod_sets=[pod_set("main", 1, {"cpu": "2"})],
        want_mode=Mode.FIT,
        want_flavors=[],
        flavors=[flavor("f1"), flavor("f2"), flavor("occupied")],
        gates={"ConcurrentAdmission": gate},
        annotations={} if annotation is None else {WORKLOAD_ALLOWED_RESOURCE_FLAVOR_ANNOTATION: annotation},
    )


@pytest.mark.parametrize(
    ("allowed", "want_flavor", "want_mode"),
    [
        pytest.param(["f2"], "f2", Mode.FIT, id="allow only f2"),
        pytest.param(["f1"], "f1", Mode.FIT, id="allow only f1"),
        pytest.param(["occupied"], "", Mode.NO_FIT, id="allow only the occupied flavor"),
        pytest.param(["f1", "f2"], "f1", Mode.FIT, id="allow f1 and f2"),
        pytest.param(None, "f1", Mode.FIT, id="no constraints"),
        pytest.param(["non-existent"], "", Mode.NO_FIT, id="allow non-existent"),
    ],
)
def test_assign_flavors_with_allowed_flavors(allowed: list[str] | None, want_flavor: str, want_mode: Mode) -> None:
    """Upstream ``TestAssignFlavorsWithAllowedFlavors`` (``ConcurrentAdmission`` on): the
    ``workload-allowed-resource-flavors`` annotation (``AllowedFlavors``: ``csv.Serialize``) limits
    the flavors tried (``IsFlavorAllowedForVariant``)."""
    got = run(_allowed_flavors_case(None if allowed is None else ",".join(allowed)))
    assert got.representative_mode() is want_mode
    if want_mode is Mode.FIT:
        assert got.pod_sets[0].flavors["cpu"].name == want_flavor


def test_allowed_flavors_annotation_needs_the_concurrent_admission_gate() -> None:
    """``IsFlavorAllowedForVariant`` returns true with ``ConcurrentAdmission`` off."""
    assert run(_allowed_flavors_case("f2", gate=False)).pod_sets[0].flavors["cpu"].name == "f1"


def test_is_no_fit_due_to_capacity_and_limits_flavor_not_allowed_by_annotations() -> None:
    """Upstream ``TestIsNoFitDueToCapacityAndLimits`` "flavor not allowed by annotations" (its
    checks: the NoFit reason, and the reason of each attempt it names that was made)."""
    case = nofit_case(pod_set("main", 1, {"cpu": "1"}), None, [], None, {})
    case.cq_usage = {("flavor-a", "cpu"): "4"}
    case.gates = {"ConcurrentAdmission": True}
    case.annotations = {WORKLOAD_ALLOWED_RESOURCE_FLAVOR_ANNOTATION: "flavor-a"}
    got = run(case)
    assert got.no_fit_reason() == ""
    want_attempts = {"flavor-b": "NoMatchingFlavor"}
    for attempt in got.pod_sets[0].attempts:
        assert want_attempts.get(attempt.flavor, attempt.no_fit_reason) == attempt.no_fit_reason
    assert [a.flavor for a in got.pod_sets[0].attempts] == ["flavor-a"]


@pytest.mark.parametrize(
    ("annotation", "want_flavor"),
    [
        pytest.param(" occupied , f2 ", "f2", id="entries are trimmed"),
        pytest.param("", "", id="an empty annotation allows no flavor"),
        pytest.param("  ", "", id="a blank annotation allows no flavor"),
    ],
)
def test_allowed_flavors_annotation_is_parsed_like_csv_parse(annotation: str, want_flavor: str) -> None:
    """``IsFlavorAllowedForVariant`` reads the annotation with ``csv.Parse`` (pkg/util/csv): each
    entry trimmed, and a present but blank annotation is an empty list, which allows no flavor
    (only an absent annotation allows every flavor)."""
    got = run(_allowed_flavors_case(annotation))
    if want_flavor:
        assert got.representative_mode() is Mode.FIT
        assert got.pod_sets[0].flavors["cpu"].name == want_flavor
    else:
        assert got.representative_mode() is Mode.NO_FIT
        assert got.pod_sets[0].attempts == []
