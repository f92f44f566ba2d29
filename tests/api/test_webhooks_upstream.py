"""Upstream's webhook test tables (``pkg/webhooks/*_webhook_test.go``), ported case by case.

Each case keeps upstream's name (the pytest id), its input and its expectation. Upstream calls
the webhook's function directly (``ValidateClusterQueue`` ...) and compares the error list by
``(Type, Field)`` (``cmpopts.IgnoreFields(field.Error{}, "Detail", "BadValue")``); where a case
also states the detail or the bad value, the rendered error is asserted verbatim here.

Every case goes through :func:`pykueue.api.validation.validate` (CRD schema and CEL rules, then
the webhook, as the API server runs them). Upstream's unit tests skip the CRD stage; an input
that the CRD already refuses (``crd_first``) is asserted twice: the webhook stage alone gives
upstream's errors, and :func:`validate` stops at the CRD's (whose messages the existing tests in
``test_validation.py`` pin).

Ported: every case of ``clusterqueue_webhook_test.go`` (``TestValidateClusterQueue``,
``TestValidateClusterQueueUpdate``, ``TestValidateTotalFlavors``, ``TestValidateTotalCoveredResources``,
``TestValidateFlavorResourceCombinations``), ``workload_webhook_test.go`` (``TestValidateWorkload``,
``TestValidateWorkloadUpdate``), ``cohort_webhook_test.go`` and ``resourceflavor_webhook_test.go``;
of the integration tests under ``test/integration/singlecluster/webhook/core``, the create tables
of ``clusterqueue_test.go`` and ``cohort_test.go`` (which stage refuses: ``BeInvalidError`` is the
CRD's 422, ``BeForbiddenError`` the webhook's 403) and the ClusterQueue update ``It``s.

Not asserted or not ported:

- the error's ``Origin`` (``WithOrigin("format=k8s-label-key")``): pykueue's errors do not carry
  it, and it is not part of the message; upstream's ``wantWarnings`` are all empty, and
  pykueue's webhooks give no warnings.
- upstream's tables have no LocalQueue webhook (``pkg/webhooks/localqueue_webhook_test.go`` does
  not exist: LocalQueue has CRD rules only, covered in ``test_validation.py``).
- integration ``cohort_test.go`` "Updating a Cohort" (``Should update parent``, ``Should reject
  invalid parent``, ``Should reject negative borrowing limit``): the same rules as the create
  entries ported here. The integration tables of ``workload_test.go``, ``localqueue_test.go``,
  ``resourceflavor_test.go`` and ``admissioncheck_test.go`` are ported in
  ``tests/apiserver/test_webhook_integration_upstream.py``, through the embedded API server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from pykueue.api import kueue as k
from pykueue.api.conversion import to_internal
from pykueue.api.defaults import apply_defaults
from pykueue.api.feature_gates import DEFAULT_GATES, FeatureGates
from pykueue.api.validation import (
    DUPLICATE,
    FORBIDDEN,
    INVALID,
    NOT_FOUND,
    NOT_SUPPORTED,
    REQUIRED,
    ValidationFailed,
    validate,
    validate_or_raise,
    validate_schema,
    validate_webhook,
)
from pykueue.apiserver.resources import REGISTRY, ResourceInfo

V1BETA2 = "kueue.x-k8s.io/v1beta2"


def typed(obj: Mapping[str, Any]) -> k.KueueObject:
    """The object as the API server validates it: decoded into v1beta2 and defaulted."""
    out, _ = to_internal(obj)
    apply_defaults(out)
    return out


@dataclass(frozen=True)
class Want:
    """One expected error: ``(type, field)``, and where upstream states them, its rendering."""

    type: str
    field: str
    text: str | None = None
    value: Any = None
    """The bad value, where upstream compares it but not the detail (None: not compared)."""


@dataclass
class Case:
    name: str
    obj: dict[str, Any]
    want: list[Want] = field(default_factory=list)
    old: dict[str, Any] | None = None
    gates: Mapping[str, bool] = field(default_factory=dict)
    crd_first: bool = False
    """The CRD (OpenAPI/CEL) stage refuses upstream's input before the webhook runs."""


def check(case: Case) -> None:
    gates = FeatureGates(dict(case.gates))
    obj = typed(case.obj)
    old = typed(case.old) if case.old is not None else None
    got = validate_webhook(obj, old, gates=gates) if case.crd_first else validate(obj, old, gates=gates)
    assert [(e.type, e.field) for e in got] == [(w.type, w.field) for w in case.want]
    for error, wanted in zip(got, case.want, strict=True):
        if wanted.text is not None:
            assert str(error) == wanted.text
        if wanted.value is not None:
            assert error.value == wanted.value
    missing = _resource(case.obj).missing_required(case.obj, case.old, "v1beta2")
    if case.crd_first:
        schema = validate_schema(obj, old)
        assert missing or schema, "the CRD stage accepts this input: drop crd_first"
        if not missing:
            assert validate(obj, old, gates=gates) == schema
        return
    assert not missing
    if got:
        with pytest.raises(ValidationFailed) as raised:
            validate_or_raise(obj, old, gates=gates)
        assert raised.value.errors == got
        assert raised.value.webhook is not None
    else:
        validate_or_raise(obj, old, gates=gates)


def _resource(obj: Mapping[str, Any]) -> ResourceInfo:
    info = REGISTRY.by_kind(k.GROUP, obj["kind"])
    assert info is not None
    return info


def params(cases: list[Case]) -> Any:
    return pytest.mark.parametrize("case", cases, ids=[c.name for c in cases])


# --- ClusterQueue (clusterqueue_webhook_test.go) --------------------------------------------------


def quota(name: str, nominal: str = "0", borrowing: str = "", lending: str = "") -> dict[str, Any]:
    """``FlavorQuotasWrapper.Resource(name, qs...)`` (an unset nominal quota is a zero Quantity)."""
    out: dict[str, Any] = {"name": name, "nominalQuota": nominal}
    if borrowing:
        out["borrowingLimit"] = borrowing
    if lending:
        out["lendingLimit"] = lending
    return out


def flavor(name: str, *resources: dict[str, Any]) -> dict[str, Any]:
    """``MakeFlavorQuotas(name)...Obj()``."""
    return {"name": name, "resources": list(resources)}


def group(*flavors: dict[str, Any]) -> dict[str, Any]:
    """``utiltestingapi.ResourceGroup``: coveredResources are the first flavor's resources."""
    covered = [r["name"] for r in flavors[0]["resources"]] if flavors else []
    return {"coveredResources": covered, "flavors": list(flavors)}


def make_cq(*groups: dict[str, Any], name: str = "cluster-queue", **spec: Any) -> dict[str, Any]:
    """``MakeClusterQueue(name)`` (its defaults) with ``ResourceGroup(...)`` and other spec fields."""
    base: dict[str, Any] = {
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
    }
    if groups:
        base["resourceGroups"] = list(groups)
    base.update(spec)
    return {"apiVersion": V1BETA2, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": base}


def bare_cq(**spec: Any) -> dict[str, Any]:
    """A ``&kueue.ClusterQueue{...}`` literal (no wrapper defaults)."""
    return {
        "apiVersion": V1BETA2,
        "kind": "ClusterQueue",
        "metadata": {"name": "cluster-queue"},
        "spec": spec,
    }


def checks_strategy(*rules: tuple[str, list[str]]) -> dict[str, Any]:
    """``AdmissionCheckStrategy(MakeAdmissionCheckStrategyRule(name, flavors...)...)``."""
    return {"admissionChecks": [{"name": n, "onFlavors": f} for n, f in rules]}


def cap(mode: str, last: str | None = None) -> dict[str, Any]:
    """``ConcurrentAdmissionPolicy(mode)`` and ``LastAcceptableFlavorName(last)``."""
    migration: dict[str, Any] = {"mode": mode}
    if last is not None:
        migration["constraints"] = {"lastAcceptableFlavorName": last}
    return {"migration": migration}


def fungibility(borrow: str, preempt: str, preference: str) -> dict[str, Any]:
    return {"whenCanBorrow": borrow, "whenCanPreempt": preempt, "preference": preference}


RG = "spec.resourceGroups"
RES0 = f"{RG}[0].flavors[0].resources[0]"
PREFERENCE_DETAIL = "requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor"


def _preference_error(preference: str) -> Want:
    return Want(
        INVALID,
        "spec.flavorFungibility.preference",
        f'spec.flavorFungibility.preference: Invalid value: "{preference}": preference "{preference}" '
        + PREFERENCE_DETAIL,
    )


def _f(i: int) -> dict[str, Any]:
    return flavor(f"f{i:03d}", quota("cpu", "1"))


def different_order() -> list[dict[str, Any]]:
    """Resource groups whose second flavor lists the covered resources in another order."""
    return [
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [
                flavor("alpha", quota("cpu", "0"), quota("memory", "0")),
                flavor("beta", quota("memory", "0"), quota("cpu", "0")),
            ],
        }
    ]


def resource_in_two_groups() -> list[dict[str, Any]]:
    return [
        group(flavor("alpha", quota("cpu", "0"), quota("memory", "0"))),
        group(flavor("beta", quota("memory", "0"))),
    ]


def flavor_in_two_groups() -> list[dict[str, Any]]:
    return [
        group(flavor("alpha", quota("cpu")), flavor("beta", quota("cpu"))),
        group(flavor("beta", quota("memory"))),
    ]


def multiple_groups() -> list[dict[str, Any]]:
    return [
        group(
            flavor("alpha", quota("cpu", "0"), quota("memory", "0")),
            flavor("beta", quota("cpu", "0"), quota("memory", "0")),
        ),
        group(flavor("gamma", quota("example.com/gpu", "0")), flavor("omega", quota("example.com/gpu", "0"))),
    ]


def mismatched_flavor(covered: list[str], *resources: str) -> list[dict[str, Any]]:
    """One group covering ``covered`` whose flavor "alpha" lists ``resources`` (zero quotas)."""
    return [{"coveredResources": covered, "flavors": [flavor("alpha", *[quota(r, "0") for r in resources])]}]


CONCURRENT = {"ConcurrentAdmission": True}
"""``TestValidateClusterQueue`` runs every case with ``features.ConcurrentAdmission`` on."""

CQ_CASES = [
    Case("built-in resources with qualified names", make_cq(group(flavor("default", quota("cpu"))))),
    Case(
        "invalid resource name",
        make_cq(group(flavor("default", quota("@cpu")))),
        [Want(INVALID, f"{RG}[0].coveredResources[0]")],
    ),
    Case("admissionChecks defined", make_cq(admissionChecksStrategy={"admissionChecks": [{"name": "ac1"}]})),
    Case(
        "admissionCheckStrategy defined with a valid flavor",
        make_cq(group(flavor("flavor1")), admissionChecksStrategy=checks_strategy(("ac1", ["flavor1"]))),
        crd_first=True,
    ),
    Case(
        "admissionCheckStrategy refers to a flavor that is not in quota",
        make_cq(admissionChecksStrategy=checks_strategy(("ac1", ["flavor1"]))),
        [
            Want(
                NOT_SUPPORTED,
                "spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]",
                'spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]: Unsupported value: "flavor1"',
            )
        ],
    ),
    Case("in cohort", make_cq(cohortName="prod")),
    Case(
        "extended resources with qualified names", make_cq(group(flavor("default", quota("example.com/gpu"))))
    ),
    Case("flavor with qualified names", make_cq(group(flavor("x86"))), crd_first=True),
    Case(
        "flavor quota with negative value",
        make_cq(group(flavor("x86", quota("cpu", "-1")))),
        [Want(INVALID, f"{RES0}.nominalQuota")],
    ),
    Case("flavor quota with zero value", make_cq(group(flavor("x86", quota("cpu", "0"))))),
    Case(
        "flavor quota with borrowingLimit 0",
        make_cq(group(flavor("x86", quota("cpu", "1", "0"))), cohortName="cohort"),
    ),
    Case(
        "flavor quota with negative borrowingLimit",
        make_cq(group(flavor("x86", quota("cpu", "1", "-1"))), cohortName="cohort"),
        [Want(INVALID, f"{RES0}.borrowingLimit")],
    ),
    Case(
        "flavor quota with lendingLimit 0",
        make_cq(group(flavor("x86", quota("cpu", "1", "", "0"))), cohortName="cohort"),
    ),
    Case(
        "flavor quota with negative lendingLimit",
        make_cq(group(flavor("x86", quota("cpu", "1", "", "-1"))), cohortName="cohort"),
        [Want(INVALID, f"{RES0}.lendingLimit")],
    ),
    Case(
        "flavor quota with lendingLimit and empty cohort",
        make_cq(group(flavor("x86", quota("cpu", "1", "", "1")))),
        [Want(INVALID, f"{RES0}.lendingLimit")],
    ),
    Case(
        "flavor quota with lendingLimit greater than nominalQuota",
        make_cq(group(flavor("x86", quota("cpu", "1", "", "2"))), cohortName="cohort"),
        [Want(INVALID, f"{RES0}.lendingLimit")],
    ),
    Case("empty queueing strategy is supported", make_cq(queueingStrategy="")),
    Case(
        "namespaceSelector with invalid labels",
        make_cq(namespaceSelector={"matchLabels": {"nospecialchars^=@": "bar"}}),
        [Want(INVALID, "spec.namespaceSelector.matchLabels")],
    ),
    Case(
        "namespaceSelector with invalid expressions",
        make_cq(namespaceSelector={"matchExpressions": [{"key": "key", "operator": "In"}]}),
        [Want(REQUIRED, "spec.namespaceSelector.matchExpressions[0].values")],
    ),
    Case(
        "multiple resource groups",
        make_cq(*multiple_groups()),
    ),
    Case(
        "resources in a flavor in different order",
        bare_cq(resourceGroups=different_order()),
        [
            Want(INVALID, f"{RG}[0].flavors[1].resources[0].name"),
            Want(INVALID, f"{RG}[0].flavors[1].resources[1].name"),
        ],
    ),
    Case(
        "resource in more than one resource group",
        make_cq(*resource_in_two_groups()),
        [Want(DUPLICATE, f"{RG}[1].coveredResources[0]")],
    ),
    Case(
        "flavor in more than one resource group",
        make_cq(*flavor_in_two_groups()),
        [Want(DUPLICATE, f"{RG}[1].flavors[0].name")],
    ),
    Case(
        "valid preemption with borrowWithinCohort",
        bare_cq(
            preemption={
                "reclaimWithinCohort": "LowerPriority",
                "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 10},
            }
        ),
    ),
    Case(
        "existing cluster queue created with older Kueue version that has a nil borrowWithinCohort field",
        bare_cq(preemption={"reclaimWithinCohort": "Never"}),
    ),
    Case(
        "flavorFungibility preference set but whenCanPreempt != TryNextFlavor",
        make_cq(flavorFungibility=fungibility("TryNextFlavor", "MayStopSearch", "BorrowingOverPreemption")),
        [_preference_error("BorrowingOverPreemption")],
        crd_first=True,
    ),
    Case(
        "flavorFungibility preference set but whenCanBorrow != TryNextFlavor",
        make_cq(flavorFungibility=fungibility("MayStopSearch", "MayStopSearch", "BorrowingOverPreemption")),
        [_preference_error("BorrowingOverPreemption")],
        crd_first=True,
    ),
    Case(
        "flavorFungibility preference BorrowingOverPreemption with both TryNextFlavor is valid",
        make_cq(flavorFungibility=fungibility("TryNextFlavor", "TryNextFlavor", "BorrowingOverPreemption")),
    ),
    Case(
        "flavorFungibility preference PreemptionOverBorrowing with both TryNextFlavor is valid",
        make_cq(flavorFungibility=fungibility("TryNextFlavor", "TryNextFlavor", "PreemptionOverBorrowing")),
    ),
    Case(
        "flavorFungibility preference PreemptionOverBorrowing but whenCanBorrow != TryNextFlavor",
        make_cq(flavorFungibility=fungibility("MayStopSearch", "TryNextFlavor", "PreemptionOverBorrowing")),
        [_preference_error("PreemptionOverBorrowing")],
        crd_first=True,
    ),
    Case(
        "valid ConcurrentAdmissionPolicy",
        make_cq(
            group(flavor("flavor1", quota("cpu", "1"))), concurrentAdmissionPolicy=cap("TryPreferredFlavors")
        ),
    ),
    Case(
        "ConcurrentAdmissionPolicy with StrictFIFO queueing strategy is invalid",
        make_cq(
            group(flavor("flavor1", quota("cpu", "1"))),
            concurrentAdmissionPolicy=cap("TryPreferredFlavors"),
            queueingStrategy="StrictFIFO",
        ),
        [
            Want(
                INVALID,
                "spec.queueingStrategy",
                'spec.queueingStrategy: Invalid value: "StrictFIFO": StrictFIFO queueing strategy cannot be used '
                "when ConcurrentAdmissionPolicy is defined",
            )
        ],
    ),
    Case(
        "ConcurrentAdmissionPolicy with more than one ResourceGroup",
        make_cq(
            group(flavor("flavor1", quota("cpu", "1"))),
            group(flavor("flavor2", quota("memory", "1"))),
            concurrentAdmissionPolicy=cap("TryPreferredFlavors"),
        ),
        [
            Want(
                INVALID,
                RG,
                f"{RG}: Invalid value: 2: must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is defined",
            )
        ],
    ),
    Case(
        "ConcurrentAdmissionPolicy with more than 16 flavors",
        make_cq(group(*[_f(i) for i in range(17)]), concurrentAdmissionPolicy=cap("TryPreferredFlavors")),
        [
            Want(
                INVALID,
                f"{RG}[0].flavors",
                f"{RG}[0].flavors: Invalid value: 17: cannot have more than 16 resource flavors in the "
                "ResourceGroup when ConcurrentAdmissionPolicy is defined",
            )
        ],
    ),
    Case(
        "ConcurrentAdmissionPolicy with empty ResourceGroups",
        make_cq(concurrentAdmissionPolicy=cap("TryPreferredFlavors")),
        [
            Want(
                INVALID,
                RG,
                f"{RG}: Invalid value: 0: must have exactly one ResourceGroup when ConcurrentAdmissionPolicy is defined",
            )
        ],
    ),
    Case(
        "ConcurrentAdmissionPolicy with valid LastAcceptableFlavorName",
        make_cq(
            group(flavor("flavor1", quota("cpu", "1"))),
            concurrentAdmissionPolicy=cap("TryPreferredFlavors", "flavor1"),
        ),
    ),
    Case(
        "ConcurrentAdmissionPolicy constraints with RetainFirstAdmission mode is forbidden",
        make_cq(
            group(flavor("flavor1", quota("cpu", "1"))),
            concurrentAdmissionPolicy=cap("RetainFirstAdmission", "flavor1"),
        ),
        [
            Want(
                FORBIDDEN,
                "spec.concurrentAdmissionPolicy.migration.constraints",
                "spec.concurrentAdmissionPolicy.migration.constraints: Forbidden: may only be set when "
                'migration.mode is "TryPreferredFlavors" (got "RetainFirstAdmission")',
            )
        ],
    ),
    Case(
        "ConcurrentAdmissionPolicy constraints with empty migration mode is allowed",
        make_cq(group(flavor("flavor1", quota("cpu", "1"))), concurrentAdmissionPolicy=cap("", "flavor1")),
    ),
    Case(
        "ConcurrentAdmissionPolicy with invalid LastAcceptableFlavorName",
        make_cq(
            group(flavor("flavor1", quota("cpu", "1"))),
            concurrentAdmissionPolicy=cap("TryPreferredFlavors", "non-existent-flavor"),
        ),
        [
            Want(
                INVALID,
                "spec.concurrentAdmissionPolicy.migration.constraints.lastAcceptableFlavorName",
                "spec.concurrentAdmissionPolicy.migration.constraints.lastAcceptableFlavorName: Invalid value: "
                '"non-existent-flavor": must be one of the flavors defined in the ClusterQueue: [flavor1]',
            )
        ],
    ),
]
for _case in CQ_CASES:
    _case.gates = CONCURRENT


@params(CQ_CASES)
def test_validate_cluster_queue(case: Case) -> None:
    check(case)


ALPHA = group(flavor("alpha", quota("cpu", "1")))
ON_FLAVORS0 = "spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]"

CQ_UPDATE_CASES = [
    Case(
        "queueingStrategy can be updated",
        make_cq(queueingStrategy="BestEffortFIFO"),
        old=make_cq(queueingStrategy="StrictFIFO"),
    ),
    Case(
        "same queueingStrategy",
        make_cq(queueingStrategy="BestEffortFIFO"),
        old=make_cq(queueingStrategy="BestEffortFIFO"),
    ),
    Case(
        "legacy cluster queue with invalid onFlavors allows unrelated updates when the feature gate is disabled",
        make_cq(
            ALPHA,
            queueingStrategy="BestEffortFIFO",
            admissionChecksStrategy=checks_strategy(("ac1", ["ghost"])),
        ),
        old=make_cq(
            ALPHA, queueingStrategy="StrictFIFO", admissionChecksStrategy=checks_strategy(("ac1", ["ghost"]))
        ),
        gates={"RejectUpdatesToCQWithInvalidOnFlavors": False},
    ),
    Case(
        "legacy cluster queue with invalid onFlavors rejects unrelated updates when the feature gate is enabled",
        make_cq(
            ALPHA,
            queueingStrategy="BestEffortFIFO",
            admissionChecksStrategy=checks_strategy(("ac1", ["ghost"])),
        ),
        [
            Want(
                NOT_SUPPORTED,
                ON_FLAVORS0,
                f'{ON_FLAVORS0}: Unsupported value: "ghost": supported values: "alpha"',
            )
        ],
        old=make_cq(
            ALPHA, queueingStrategy="StrictFIFO", admissionChecksStrategy=checks_strategy(("ac1", ["ghost"]))
        ),
        gates={"RejectUpdatesToCQWithInvalidOnFlavors": True},
    ),
    Case(
        "valid admissionCheckStrategy can be added when the old cluster queue has no strategy",
        make_cq(ALPHA, admissionChecksStrategy=checks_strategy(("ac1", ["alpha"]))),
        old=make_cq(ALPHA),
    ),
    Case(
        "invalid admissionCheckStrategy is rejected when the old cluster queue has no strategy",
        make_cq(ALPHA, admissionChecksStrategy=checks_strategy(("ac1", ["ghost"]))),
        [
            Want(
                NOT_SUPPORTED,
                ON_FLAVORS0,
                f'{ON_FLAVORS0}: Unsupported value: "ghost": supported values: "alpha"',
            )
        ],
        old=make_cq(ALPHA),
    ),
    Case(
        "resourceGroup flavor change revalidates admissionCheck onFlavors for legacy cluster queue",
        make_cq(
            group(flavor("beta", quota("cpu", "1"))),
            admissionChecksStrategy=checks_strategy(("ac1", ["ghost"])),
        ),
        [
            Want(
                NOT_SUPPORTED,
                ON_FLAVORS0,
                f'{ON_FLAVORS0}: Unsupported value: "ghost": supported values: "beta"',
            )
        ],
        old=make_cq(ALPHA, admissionChecksStrategy=checks_strategy(("ac1", ["ghost"]))),
    ),
    Case(
        "changing invalid onFlavors for a legacy cluster queue revalidates the new ref",
        make_cq(ALPHA, admissionChecksStrategy=checks_strategy(("ac1", ["phantom"]))),
        [
            Want(
                NOT_SUPPORTED,
                ON_FLAVORS0,
                f'{ON_FLAVORS0}: Unsupported value: "phantom": supported values: "alpha"',
            )
        ],
        old=make_cq(ALPHA, admissionChecksStrategy=checks_strategy(("ac1", ["ghost"]))),
    ),
    Case(
        "changing admissionCheck name revalidates onFlavors for the new rule",
        make_cq(ALPHA, admissionChecksStrategy=checks_strategy(("ac2", ["ghost"]))),
        [
            Want(
                NOT_SUPPORTED,
                ON_FLAVORS0,
                f'{ON_FLAVORS0}: Unsupported value: "ghost": supported values: "alpha"',
            )
        ],
        old=make_cq(ALPHA, admissionChecksStrategy=checks_strategy(("ac1", ["ghost"]))),
    ),
    Case(
        "ConcurrentAdmissionPolicy cannot be added",
        make_cq(ALPHA, concurrentAdmissionPolicy=cap("TryPreferredFlavors")),
        [
            Want(
                INVALID,
                "spec.concurrentAdmissionPolicy",
                'spec.concurrentAdmissionPolicy: Invalid value: {"migration":{"mode":"TryPreferredFlavors"}}: '
                "field is immutable",
            )
        ],
        old=make_cq(ALPHA),
        gates=CONCURRENT,
    ),
    Case(
        "ConcurrentAdmissionPolicy cannot be removed",
        make_cq(ALPHA),
        [
            Want(
                INVALID,
                "spec.concurrentAdmissionPolicy",
                # a nil *ConcurrentAdmissionPolicy: field.Error renders it with json.Marshal
                "spec.concurrentAdmissionPolicy: Invalid value: null: field is immutable",
            )
        ],
        old=make_cq(ALPHA, concurrentAdmissionPolicy=cap("TryPreferredFlavors")),
        gates=CONCURRENT,
    ),
]


@params(CQ_UPDATE_CASES)
def test_validate_cluster_queue_update(case: Case) -> None:
    check(case)


def _groups_of_flavors(n: int) -> list[dict[str, Any]]:
    """``makeFlavors(n)`` in one ResourceGroup."""
    return [group(*[_f(i) for i in range(n)])]


def _covered(n: int) -> list[dict[str, Any]]:
    """``makeCoveredResources(n)``."""
    return [group(flavor("default", *[quota(f"res{i:03d}", "1") for i in range(n)]))]


def _combinations(flavors: int, resources: int) -> list[dict[str, Any]]:
    """``makeFlavorResourceCombinations(flavors, resources)``."""
    return [
        group(
            *[
                flavor(f"f{i:03d}", *[quota(f"res{j:03d}", "1") for j in range(resources)])
                for i in range(flavors)
            ]
        )
    ]


LIMIT_CASES = [
    # TestValidateTotalFlavors
    ("within limit (10 flavors)", _groups_of_flavors(10), False),
    ("At limit (256 flavors)", _groups_of_flavors(256), False),
    ("over limit (257 flavors)", _groups_of_flavors(257), True),
    # TestValidateTotalCoveredResources
    ("within limit (10 covered resources)", _covered(10), False),
    ("At limit (256 covered resources)", _covered(256), False),
    ("over limit (257 covered resources)", _covered(257), True),
    # TestValidateFlavorResourceCombinations
    ("within limit (1 flavor × 10 resources = 10)", _combinations(1, 10), False),
    ("at limit (8 flavors × 64 resources = 512)", _combinations(8, 64), False),
    ("over limit (9 flavors × 64 resources = 576)", _combinations(9, 64), True),
]


@pytest.mark.parametrize(
    ("groups", "want_err"), [c[1:] for c in LIMIT_CASES], ids=[c[0] for c in LIMIT_CASES]
)
def test_validate_cluster_queue_limits(groups: list[dict[str, Any]], want_err: bool) -> None:
    """Upstream checks only whether ``ValidateClusterQueue`` returns errors (the webhook stage).
    More than 64 flavors or covered resources in one group is refused by the CRD's ``maxItems``
    before: the API server reports those, the webhook's totals never run."""
    obj = typed(make_cq(*groups))
    assert bool(validate_webhook(obj)) == want_err
    schema = validate_schema(obj)
    crd_refuses = any(len(g["flavors"]) > 64 or len(g["coveredResources"]) > 64 for g in groups)
    assert bool(schema) == crd_refuses
    assert bool(validate(obj)) == (want_err or crd_refuses)


def test_concurrent_admission_rules_wait_for_their_gate() -> None:
    """``validateConcurrentAdmissionPolicy`` returns at once while ``ConcurrentAdmission`` is off
    (upstream's ``pkg/features``: alpha, off by default), as the API server runs it: a policy
    every one of its rules would refuse is stored. With the gate on, 16 flavors is the most a
    policy's single resource group may have (``> 16`` is refused)."""
    assert not DEFAULT_GATES.enabled("ConcurrentAdmission")
    refused_when_gated = make_cq(
        *multiple_groups(),
        queueingStrategy="StrictFIFO",
        concurrentAdmissionPolicy=cap("RetainFirstAdmission", "nowhere"),
    )
    validate_or_raise(typed(refused_when_gated))
    with pytest.raises(ValidationFailed) as gated:
        validate_or_raise(typed(refused_when_gated), gates=FeatureGates(CONCURRENT))
    assert [e.field for e in gated.value.errors] == [
        RG,
        "spec.concurrentAdmissionPolicy.migration.constraints",
        "spec.queueingStrategy",
    ]
    sixteen = make_cq(
        group(*[_f(i) for i in range(16)]), concurrentAdmissionPolicy=cap("TryPreferredFlavors")
    )
    validate_or_raise(typed(sixteen), gates=FeatureGates(CONCURRENT))


# --- Workload (workload_webhook_test.go) ------------------------------------------------------------

NOW = "2024-01-01T00:00:00Z"
ELASTIC = {"kueue.x-k8s.io/elastic-job": "true"}
"""``workloadslicing.EnabledAnnotationKey: EnabledAnnotationValue``."""
GATED_BY = "kueue.x-k8s.io/admission-gated-by"
PRIORITY_BOOST = "kueue.x-k8s.io/priority-boost"


def container(
    requests: Mapping[str, str] | None = None, limits: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``utiltesting.SingleContainerForRequest`` / a ``corev1.Container{Resources: ...}`` literal
    (no name: the CRD's pod template schema requires one)."""
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    return {"resources": resources}


def pod_set(
    name: str = "main",
    count: int = 1,
    *,
    requests: Mapping[str, str] | None = None,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    pod_resources: Mapping[str, Mapping[str, str]] | None = None,
    min_count: int | None = None,
    topology_request: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``MakePodSet(name, count)`` (one container "c", restartPolicy Never) and its setters."""
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": containers
        if containers is not None
        else [{"name": "c", "resources": {"requests": dict(requests or {})}}],
    }
    if init_containers is not None:
        spec["initContainers"] = init_containers
    if pod_resources is not None:
        spec["resources"] = {section: dict(values) for section, values in pod_resources.items()}
    out: dict[str, Any] = {"name": name, "count": count, "template": {"spec": spec}}
    if min_count is not None:
        out["minCount"] = min_count
    if topology_request is not None:
        out["topologyRequest"] = dict(topology_request)
    return out


def literal_pod_set(
    name: str,
    count: int,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A ``kueue.PodSet{Name, Count, Template: {ObjectMeta: ...}}`` literal (an empty pod spec)."""
    meta: dict[str, Any] = {}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"name": name, "count": count, "template": {"metadata": meta, "spec": {}}}


def assignment(name: str = "main", count: int | None = 1, **usage: tuple[str, str]) -> dict[str, Any]:
    """``MakePodSetAssignment(name)`` (count 1) with ``Assignment(resource, flavor, quantity)``;
    ``count=None`` is a ``kueue.PodSetAssignment{Name: name}`` literal."""
    out: dict[str, Any] = {
        "name": name,
        "flavors": {r: f for r, (f, _) in usage.items()},
        "resourceUsage": {r: q for r, (_, q) in usage.items()},
    }
    if count is not None:
        out["count"] = count
    return out


def reserved(*assignments: dict[str, Any], cq: str = "cluster-queue") -> dict[str, Any]:
    """``ReserveQuotaAt(MakeAdmission(cq).PodSets(...).Obj(), now)``: status with the admission
    and the QuotaReserved condition."""
    return {
        "admission": {"clusterQueue": cq, "podSetAssignments": list(assignments) or [assignment()]},
        "conditions": [quota_reserved_condition(f"Admitted by ClusterQueue {cq}")],
    }


def quota_reserved_condition(message: str) -> dict[str, Any]:
    return {
        "type": "QuotaReserved",
        "status": "True",
        "reason": "AdmittedByTest",
        "message": message,
        "lastTransitionTime": NOW,
    }


def make_wl(
    *pod_sets: dict[str, Any],
    annotations: Mapping[str, str] | None = None,
    status: dict[str, Any] | None = None,
    finalizers: list[str] | None = None,
) -> dict[str, Any]:
    """``MakeWorkload("test-workload", "test-ns")`` (one pod set "main" of 1) and its setters."""
    meta: dict[str, Any] = {"name": "test-workload", "namespace": "test-ns"}
    if annotations:
        meta["annotations"] = dict(annotations)
    if finalizers:
        meta["finalizers"] = finalizers
    out: dict[str, Any] = {
        "apiVersion": V1BETA2,
        "kind": "Workload",
        "metadata": meta,
        "spec": {"podSets": list(pod_sets) or [pod_set()]},
    }
    if status is not None:
        out["status"] = status
    return out


def quota_reserved_without_admission() -> dict[str, Any]:
    """``quotaReservedWithoutAdmission(now)``."""
    return make_wl(pod_set("driver", 1), status={"conditions": [quota_reserved_condition("admitted")]})


def check_state(
    *updates: dict[str, Any], name: str = "", state: str = "", message: str = ""
) -> dict[str, Any]:
    """A ``kueue.AdmissionCheckState{...}`` literal (Go's zero name and state included). Go sends
    a zero ``lastTransitionTime`` as null, which the CRD refuses as missing; pykueue's typed model
    cannot hold a state without one, so it is set here: the webhook does not read it, and the
    CRD refuses the empty name and state anyway."""
    out: dict[str, Any] = {
        "name": name,
        "state": state,
        "podSetUpdates": list(updates),
        "lastTransitionTime": NOW,
    }
    if message:
        out["message"] = message
    return out


PS0 = "spec.podSets[0].template.spec"
PSU0 = "status.admissionChecks[0].podSetUpdates"
GATED_BY_PATH = f"metadata.annotations[{GATED_BY}]"
BOOST_PATH = f"metadata.annotations[{PRIORITY_BOOST}]"
BAD_METADATA = literal_pod_set(
    "bad-metadata",
    1,
    labels={"valid": "invalid value with spaces, test-wec1"},
    annotations={"invalid/annotation/key/too/long/invalid": "val"},
)
LABEL_VALUE_DETAIL = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
ANNOTATION_KEY_DETAIL = (
    "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
    "'example.com/MyName')"
)


def _gated(value: str) -> dict[str, Any]:
    return make_wl(pod_set("main", 1), annotations={GATED_BY: value})


def _boost(value: str | None) -> dict[str, Any]:
    return make_wl(pod_set("main", 1), annotations={PRIORITY_BOOST: value} if value is not None else None)


ADMISSION_GATED = {"AdmissionGatedBy": True}
BOOST_ON = {"PriorityBoost": True}

WL_CASES = [
    Case("valid", make_wl(pod_set("driver", 1), pod_set("workers", 100))),
    Case(
        "quota reserved without an admission is refused, not a panic",
        quota_reserved_without_admission(),
        [
            Want(
                REQUIRED,
                "status.admission",
                "status.admission: Required value: must be set while the QuotaReserved condition is true",
            )
        ],
    ),
    Case(
        "should have a valid podSet name in status assignment",
        make_wl(status=reserved(assignment("@invalid"))),
        [Want(NOT_FOUND, "status.admission.podSetAssignments[0].name")],
        crd_first=True,
    ),
    Case(
        "assignment usage should be divisible by count",
        make_wl(
            pod_set("main", 3, requests={"cpu": "1"}),
            status=reserved(assignment("main", 3, cpu=("flv", "1"))),
        ),
        [Want(INVALID, "status.admission.podSetAssignments[0].resourceUsage[cpu]")],
    ),
    Case(
        "should not request num-pods resource",
        make_wl(
            pod_set(
                "bad", 1, init_containers=[container({"pods": "1"})], containers=[container({"pods": "1"})]
            )
        ),
        [
            Want(INVALID, f"{PS0}.initContainers[0].resources.requests[pods]"),
            Want(INVALID, f"{PS0}.containers[0].resources.requests[pods]"),
        ],
        crd_first=True,
    ),
    Case(
        "should reject reserved pods resource key in limits",
        make_wl(
            pod_set(
                "bad",
                1,
                init_containers=[container(limits={"pods": "1"})],
                containers=[container(limits={"pods": "1"})],
            )
        ),
        [
            Want(INVALID, f"{PS0}.initContainers[0].resources.limits[pods]"),
            Want(INVALID, f"{PS0}.containers[0].resources.limits[pods]"),
        ],
        crd_first=True,
    ),
    Case(
        "should reject negative container resource request",
        make_wl(pod_set("bad", 1, containers=[container({"cpu": "-1"})])),
        [Want(INVALID, f"{PS0}.containers[0].resources.requests[cpu]")],
        crd_first=True,
    ),
    Case(
        "should reject negative initContainer resource request",
        make_wl(pod_set("bad", 1, init_containers=[container({"cpu": "-1"})])),
        [Want(INVALID, f"{PS0}.initContainers[0].resources.requests[cpu]")],
        crd_first=True,
    ),
    Case(
        "should accept invalid podSet template metadata when WorkloadValidationForPodSetMetadata is disabled",
        make_wl(BAD_METADATA),
        gates={"WorkloadValidationForPodSetMetadata": False},
        crd_first=True,
    ),
    Case(
        "should reject invalid podSet template label value",
        make_wl(literal_pod_set("bad-metadata", 1, labels={"valid": "invalid value with spaces"})),
        [
            Want(
                INVALID,
                "spec.podSets[0].template.metadata.labels",
                'spec.podSets[0].template.metadata.labels: Invalid value: "invalid value with spaces": '
                + LABEL_VALUE_DETAIL,
            )
        ],
        gates={"WorkloadValidationForPodSetMetadata": True},
        crd_first=True,
    ),
    Case(
        "should reject invalid podSet template annotation key",
        make_wl(
            literal_pod_set("bad-metadata", 1, annotations={"invalid/annotation/key/too/long/invalid": "val"})
        ),
        [
            Want(
                INVALID,
                "spec.podSets[0].template.metadata.annotations",
                'spec.podSets[0].template.metadata.annotations: Invalid value: "invalid/annotation/key/too/long/invalid": '
                + ANNOTATION_KEY_DETAIL,
            )
        ],
        gates={"WorkloadValidationForPodSetMetadata": True},
        crd_first=True,
    ),
    Case(
        "should reject negative container resource limit",
        make_wl(pod_set("bad", 1, containers=[container(limits={"cpu": "-1"})])),
        [Want(INVALID, f"{PS0}.containers[0].resources.limits[cpu]")],
        crd_first=True,
    ),
    Case(
        "should reject negative resource among multiple valid requests and limits",
        make_wl(
            pod_set(
                "bad",
                1,
                containers=[container({"cpu": "1", "memory": "-1Gi"}, {"cpu": "2", "memory": "-2Gi"})],
            )
        ),
        [
            Want(INVALID, f"{PS0}.containers[0].resources.requests[memory]"),
            Want(INVALID, f"{PS0}.containers[0].resources.limits[memory]"),
        ],
        crd_first=True,
    ),
    Case(
        "should reject negative pod-level resource request",
        make_wl(pod_set("bad", 1, pod_resources={"requests": {"cpu": "-1"}})),
        [Want(INVALID, f"{PS0}.resources.requests[cpu]")],
    ),
    Case(
        "should reject negative pod-level resource limit",
        make_wl(pod_set("bad", 1, pod_resources={"limits": {"memory": "-1Gi"}})),
        [Want(INVALID, f"{PS0}.resources.limits[memory]")],
    ),
    Case(
        "should accept negative container resource request when WorkloadValidateResourcesAreNonNegative is disabled",
        make_wl(pod_set("ok", 1, containers=[container({"cpu": "-1"})])),
        gates={"WorkloadValidateResourcesAreNonNegative": False},
        crd_first=True,
    ),
    Case(
        "should accept zero container resource request",
        make_wl(pod_set("ok", 1, containers=[container({"cpu": "0"})])),
        crd_first=True,
    ),
    Case(
        "should reject non-positive podSetSliceSize when TASValidateWorkloadSliceSize is enabled",
        make_wl(
            pod_set(
                "bad",
                1,
                topology_request={
                    "podSetSliceRequiredTopology": "kubernetes.io/hostname",
                    "podSetSliceSize": 0,
                },
            )
        ),
        [Want(INVALID, "spec.podSets[0].topologyRequest.podSetSliceSize")],
        crd_first=True,
    ),
    Case(
        "should reject podSetSliceSize without podSetSliceRequiredTopology when TASValidateWorkloadSliceSize is enabled",
        make_wl(pod_set("bad", 1, topology_request={"podSetSliceSize": 1})),
        [Want(FORBIDDEN, "spec.podSets[0].topologyRequest.podSetSliceSize")],
    ),
    Case(
        "should reject non-positive podsetSliceRequiredTopologyConstraints size when TASValidateWorkloadSliceSize is enabled",
        make_wl(
            pod_set(
                "bad",
                1,
                topology_request={
                    "podsetSliceRequiredTopologyConstraints": [
                        {"topology": "kubernetes.io/hostname", "size": 0}
                    ]
                },
            )
        ),
        [Want(INVALID, "spec.podSets[0].topologyRequest.podsetSliceRequiredTopologyConstraints[0].size")],
        crd_first=True,
    ),
    Case(
        "should accept non-positive podSetSliceSize when TASValidateWorkloadSliceSize is disabled",
        make_wl(
            pod_set(
                "ok",
                1,
                topology_request={
                    "podSetSliceRequiredTopology": "kubernetes.io/hostname",
                    "podSetSliceSize": 0,
                },
            )
        ),
        gates={"TASValidateWorkloadSliceSize": False},
        crd_first=True,
    ),
    Case("empty podSetUpdates", make_wl(status={"admissionChecks": [check_state()]}), crd_first=True),
    Case(
        "should accept podSetUpdates for only a subset of podSets",
        make_wl(
            pod_set("first", 1),
            pod_set("second", 1),
            status={"admissionChecks": [check_state({"name": "first"})]},
        ),
        crd_first=True,
    ),
    Case(
        "mismatched names in podSetUpdates with names in podSets",
        make_wl(
            pod_set("first", 1),
            pod_set("second", 1),
            status={"admissionChecks": [check_state({"name": "first"}, {"name": "third"})]},
        ),
        [Want(NOT_SUPPORTED, f"{PSU0}[1].name")],
        crd_first=True,
    ),
    Case(
        "matched names in podSetUpdates with names in podSets",
        make_wl(
            pod_set("first", 1),
            pod_set("second", 1),
            status={
                "admissionChecks": [
                    check_state(
                        {
                            "name": "first",
                            "labels": {"l1": "first"},
                            "annotations": {"foo": "bar"},
                            "tolerations": [
                                {
                                    "key": "t1",
                                    "operator": "Equal",
                                    "value": "t1v",
                                    "effect": "NoExecute",
                                    "tolerationSeconds": 5,
                                }
                            ],
                            "nodeSelector": {"type": "first"},
                        },
                        {
                            "name": "second",
                            "labels": {"l2": "second"},
                            "annotations": {"foo": "baz"},
                            "tolerations": [
                                {
                                    "key": "t2",
                                    "operator": "Equal",
                                    "value": "t2v",
                                    "effect": "NoExecute",
                                    "tolerationSeconds": 10,
                                }
                            ],
                            "nodeSelector": {"type": "second"},
                        },
                    )
                ]
            },
        ),
        crd_first=True,
    ),
    Case(
        "invalid label name of podSetUpdate",
        make_wl(status={"admissionChecks": [check_state({"name": "main", "labels": {"@abc": "foo"}})]}),
        [Want(INVALID, f"{PSU0}[0].labels")],
        crd_first=True,
    ),
    Case(
        "invalid node selector name of podSetUpdate",
        make_wl(status={"admissionChecks": [check_state({"name": "main", "nodeSelector": {"@abc": "foo"}})]}),
        [Want(INVALID, f"{PSU0}[0].nodeSelector")],
        crd_first=True,
    ),
    Case(
        "invalid label value of podSetUpdate",
        make_wl(status={"admissionChecks": [check_state({"name": "main", "labels": {"foo": "@abc"}})]}),
        [Want(INVALID, f"{PSU0}[0].labels")],
        crd_first=True,
    ),
    Case(
        "invalid reclaimablePods",
        make_wl(
            pod_set("ps1", 3),
            status={"reclaimablePods": [{"name": "ps1", "count": 4}, {"name": "ps2", "count": 1}]},
        ),
        [
            Want(INVALID, "status.reclaimablePods[ps1].count"),
            Want(NOT_SUPPORTED, "status.reclaimablePods[ps2].name"),
        ],
    ),
    Case(
        "too many variable count podSets",
        make_wl(pod_set("ps1", 3, min_count=2), pod_set("ps2", 3, min_count=1)),
        [Want(INVALID, "spec.podSets")],
    ),
    Case("valid priority-boost", _boost("10"), gates=BOOST_ON),
    Case("valid priority-boost zero", _boost("0"), gates=BOOST_ON),
    Case("valid priority-boost negative", _boost("-5"), gates=BOOST_ON),
    Case(
        "invalid priority-boost",
        _boost("invalid"),
        [
            Want(
                INVALID, BOOST_PATH, f'{BOOST_PATH}: Invalid value: "invalid": must be a valid signed integer'
            )
        ],
        gates=BOOST_ON,
    ),
    Case(
        "empty string priority-boost",
        _boost(""),
        [
            Want(
                INVALID,
                BOOST_PATH,
                f'{BOOST_PATH}: Invalid value: "": must be a valid signed integer; use "0" explicitly, '
                "empty string is not allowed",
            )
        ],
        gates=BOOST_ON,
    ),
    Case("missing priority-boost annotation", _boost(None), gates=BOOST_ON),
    Case("invalid priority-boost when feature off", _boost("invalid"), gates={"PriorityBoost": False}),
    Case(
        "valid AdmissionGatedBy annotation with single gate",
        _gated("example.com/controller"),
        gates=ADMISSION_GATED,
    ),
    Case(
        "valid AdmissionGatedBy annotation with multiple gates",
        _gated("example.com/a,not.example.com/b"),
        gates=ADMISSION_GATED,
    ),
    Case("AdmissionGatedBy annotation - leading space", _gated(" example.com/gate"), gates=ADMISSION_GATED),
    Case(
        "AdmissionGatedBy annotation - space before comma",
        _gated("example.com/gate ,example.com/gate2"),
        gates=ADMISSION_GATED,
    ),
    Case(
        "AdmissionGatedBy annotation - space after comma",
        _gated("example.com/gate, example.com/gate2"),
        gates=ADMISSION_GATED,
    ),
    Case("AdmissionGatedBy annotation - trailing space", _gated("example.com/gate "), gates=ADMISSION_GATED),
    Case(
        "invalid AdmissionGatedBy annotation - not in subdomain/path format",
        _gated("this is an invalid value"),
        [Want(INVALID, GATED_BY_PATH)],
        gates=ADMISSION_GATED,
    ),
    Case(
        "invalid AdmissionGatedBy annotation - duplicate gates",
        _gated("duplicates.are/invalid,duplicates.are/invalid"),
        [Want(INVALID, GATED_BY_PATH)],
        gates=ADMISSION_GATED,
    ),
    Case(
        "invalid AdmissionGatedBy annotation - space in path component",
        _gated("example.com/gate name"),
        [Want(INVALID, GATED_BY_PATH)],
        gates=ADMISSION_GATED,
    ),
    Case(
        "invalid AdmissionGatedBy annotation - space in domain component",
        _gated("example .com/gate"),
        [Want(INVALID, GATED_BY_PATH)],
        gates=ADMISSION_GATED,
    ),
    Case(
        "invalid AdmissionGatedBy annotation - multiple gates with one containing space",
        _gated("valid.com/gate,invalid gate.com/controller"),
        [Want(INVALID, GATED_BY_PATH)],
        gates=ADMISSION_GATED,
    ),
    Case(
        "partial admission and elastic job cannot be used together",
        make_wl(pod_set("main", 10, min_count=5), annotations=ELASTIC),
        [
            Want(
                INVALID,
                "spec.podSets",
                "spec.podSets: Invalid value: 1: partial admission and elastic job cannot be used together",
            )
        ],
        gates={"ElasticJobsViaWorkloadSlices": True},
    ),
    Case(
        "non-negative subGroupCount is accepted without warning",
        make_wl(pod_set("main", 1, topology_request={"subGroupCount": 0})),
    ),
]


@params(WL_CASES)
def test_validate_workload(case: Case) -> None:
    check(case)


def test_the_spec_memo_answers_for_the_tas_slice_size_gate() -> None:
    """The webhook's per-spec memo (``_webhook_workload_spec``) keys on the gates its pod-set rules
    read: one spec checked with ``TASValidateWorkloadSliceSize`` on, off and on again answers for
    the gate's value each time, as upstream's ``validateTASSliceSize`` does on every request."""
    obj = typed(make_wl(pod_set("memo", 1, topology_request={"podSetSliceSize": 1})))
    denied = [(FORBIDDEN, "spec.podSets[0].topologyRequest.podSetSliceSize")]
    for enabled, want in ((True, denied), (False, []), (True, denied)):
        got = validate(obj, gates=FeatureGates({"TASValidateWorkloadSliceSize": enabled}))
        assert [(e.type, e.field) for e in got] == want


def _reclaimable(*counts: tuple[str, int]) -> list[dict[str, Any]]:
    return [{"name": n, "count": c} for n, c in counts]


def _with_reclaimable(status: dict[str, Any], *counts: tuple[str, int]) -> dict[str, Any]:
    return {**status, "reclaimablePods": _reclaimable(*counts)}


PS12 = (pod_set("ps1", 3), pod_set("ps2", 3))
RESERVED12 = reserved(assignment("ps1", None), assignment("ps2", None))


def _elastic(size: int, admitted: int | None, counts: tuple[tuple[str, int], ...]) -> dict[str, Any]:
    """An elastic workload of one pod set "ps1" of ``size``, admitted (``Count`` ``admitted``),
    with the reclaimable ``counts``."""
    status = reserved(assignment("ps1", admitted))
    if counts:
        status = _with_reclaimable(status, *counts)
    return make_wl(pod_set("ps1", size), annotations=ELASTIC, status=status)


ELASTIC_ON = {"ElasticJobsViaWorkloadSlices": True}
RECLAIM1 = "status.reclaimablePods[ps1]"


def _gated_update(name: str, old: str | None, new: str | None, want: list[Want]) -> Case:
    def wl(value: str | None) -> dict[str, Any]:
        return make_wl(pod_set("main", 1), annotations={GATED_BY: value} if value is not None else None)

    return Case(name, wl(new), want, old=wl(old), gates=ADMISSION_GATED)


def _topology(count: int) -> dict[str, Any]:
    """``tas.V1Beta2From`` of one domain ``abc`` at level ``level`` with ``count`` pods."""
    return {
        "levels": ["level"],
        "slices": [
            {"domainCount": 1, "podCounts": {"universal": count}, "valuesPerLevel": [{"universal": "abc"}]}
        ],
    }


def _ready_updates(labels: Mapping[str, str], name: str = "", message: str = "") -> dict[str, Any]:
    return make_wl(
        pod_set("first", 1),
        pod_set("second", 1),
        status={
            "admissionChecks": [
                check_state(
                    {"name": "first", "labels": dict(labels)},
                    {"name": "second"},
                    name=name,
                    state="Ready",
                    message=message,
                )
            ]
        },
    )


WL_UPDATE_CASES = [
    Case(
        "an update may not put a workload in quota reserved with no admission",
        quota_reserved_without_admission(),
        [Want(REQUIRED, "status.admission")],
        old=make_wl(pod_set("driver", 1)),
    ),
    Case(
        "a workload already in that state stays updatable so it can be removed",
        quota_reserved_without_admission(),
        old=quota_reserved_without_admission(),
    ),
    Case(
        "reclaimable pod count can change up",
        make_wl(*PS12, status=_with_reclaimable(RESERVED12, ("ps1", 2), ("ps2", 1))),
        old=make_wl(*PS12, status=_with_reclaimable(RESERVED12, ("ps1", 1))),
    ),
    Case(
        "should accept invalid podSet template metadata on update when WorkloadValidationForPodSetMetadata is disabled",
        make_wl(
            literal_pod_set(
                "driver",
                1,
                labels={"valid": "invalid value with spaces, test-wec1"},
                annotations={"invalid/annotation/key/too/long/invalid": "val"},
            )
        ),
        old=make_wl(pod_set("driver", 1)),
        gates={"WorkloadValidationForPodSetMetadata": False},
        crd_first=True,
    ),
    Case(
        "should reject invalid podSet template label value on update",
        make_wl(literal_pod_set("driver", 1, labels={"valid": "invalid value with spaces"})),
        [Want(INVALID, "spec.podSets[0].template.metadata.labels")],
        old=make_wl(pod_set("driver", 1)),
        gates={"WorkloadValidationForPodSetMetadata": True},
        crd_first=True,
    ),
    Case(
        "reclaimable pod count cannot change down",
        make_wl(*PS12, status=_with_reclaimable(RESERVED12, ("ps1", 1))),
        [
            Want(
                INVALID,
                "status.reclaimablePods[ps1].count",
                "status.reclaimablePods[ps1].count: Invalid value: 1: cannot be less than 2",
            ),
            Want(
                REQUIRED,
                "status.reclaimablePods[ps2]",
                "status.reclaimablePods[ps2]: Required value: cannot be removed",
            ),
        ],
        old=make_wl(*PS12, status=_with_reclaimable(RESERVED12, ("ps1", 2), ("ps2", 1))),
    ),
    Case(
        "elastic workload: unchanged reclaimable pod count is tolerated while its podSet scales down below it",
        _elastic(3, None, (("ps1", 4),)),
        old=_elastic(8, None, (("ps1", 4),)),
        gates=ELASTIC_ON,
    ),
    Case(
        "elastic workload: changed reclaimable pod count above the podSet count is rejected",
        _elastic(3, None, (("ps1", 5),)),
        [
            Want(
                INVALID,
                f"{RECLAIM1}.count",
                f"{RECLAIM1}.count: Invalid value: 5: should be less or equal to 3",
            )
        ],
        old=_elastic(8, None, (("ps1", 4),)),
        gates=ELASTIC_ON,
    ),
    Case(
        "elastic workload: reclaimable pod count can decrease after its podSet scaled down below the admitted count",
        _elastic(3, 8, (("ps1", 3),)),
        old=_elastic(3, 8, (("ps1", 4),)),
        gates=ELASTIC_ON,
    ),
    Case(
        "elastic workload: reclaimable pod count can decrease when scaled down below the admitted count even if the podSet still exceeds it",
        _elastic(10, 20, (("ps1", 0),)),
        old=_elastic(10, 20, (("ps1", 9),)),
        gates=ELASTIC_ON,
    ),
    Case(
        "elastic workload: reclaimable pod count cannot decrease without a podSet scale-down",
        _elastic(8, None, (("ps1", 2),)),
        [Want(INVALID, f"{RECLAIM1}.count")],
        old=_elastic(8, None, (("ps1", 4),)),
        gates=ELASTIC_ON,
    ),
    Case(
        "elastic workload: reclaimable pod entry can be removed after its podSet scaled down below the admitted count",
        _elastic(1, 8, ()),
        old=_elastic(8, 8, (("ps1", 4),)),
        gates=ELASTIC_ON,
    ),
    Case(
        "elastic workload: reclaimable pod entry cannot be removed without a podSet scale-down",
        _elastic(8, None, ()),
        [Want(REQUIRED, RECLAIM1)],
        old=_elastic(8, None, (("ps1", 4),)),
        gates=ELASTIC_ON,
    ),
    Case(
        "non-elastic workload: stale reclaimable pod count is still rejected when its podSet scales down",
        make_wl(pod_set("ps1", 3), status=_with_reclaimable(reserved(assignment("ps1", None)), ("ps1", 4))),
        [Want(INVALID, f"{RECLAIM1}.count")],
        old=make_wl(
            pod_set("ps1", 8), status=_with_reclaimable(reserved(assignment("ps1", None)), ("ps1", 4))
        ),
        gates=ELASTIC_ON,
    ),
    Case(
        "reclaimable pod count can go to 0 if the job is suspended",
        make_wl(
            *PS12,
            status={
                "admissionChecks": [check_state({"name": "ps1"}, {"name": "ps2"}, state="Ready")],
                "reclaimablePods": _reclaimable(("ps1", 0), ("ps2", 1)),
            },
        ),
        old=make_wl(*PS12, status=_with_reclaimable(RESERVED12, ("ps1", 2), ("ps2", 1))),
        crd_first=True,
    ),
    Case(
        "podSetUpdates should be immutable when state is ready",
        _ready_updates({"foo": "baz"}),
        [Want(INVALID, "status.admissionChecks[0].podSetUpdates")],
        old=_ready_updates({"foo": "bar"}),
        crd_first=True,
    ),
    Case(
        "should change other fields of admissionchecks when podSetUpdates is immutable",
        _ready_updates({"foo": "bar"}, name="ac1", message="new"),
        old=_ready_updates({"foo": "bar"}, name="ac1", message="old"),
    ),
    Case(
        "TopologyAssignment can be mutated",
        make_wl(
            pod_set("ps1", 3),
            status=reserved({**assignment("ps1", None), "topologyAssignment": _topology(3)}),
        ),
        old=make_wl(
            pod_set("ps1", 3),
            status=reserved({**assignment("ps1", None), "topologyAssignment": _topology(2)}),
        ),
        gates={"TopologyAwareScheduling": True},
    ),
    Case(
        "PodSets cannot be removed from admission",
        make_wl(*PS12, status=reserved(assignment("ps1", None))),
        [Want(INVALID, "status.admission")],
        old=make_wl(*PS12, status=RESERVED12),
        gates={"TopologyAwareScheduling": True},
        crd_first=True,
    ),
    Case(
        "PodSets cannot be added to admission",
        make_wl(*PS12, status=RESERVED12),
        [Want(INVALID, "status.admission")],
        old=make_wl(*PS12, status=reserved(assignment("ps1", None))),
        gates={"TopologyAwareScheduling": True},
    ),
    Case(
        "workload.podSets[].count is immutable",
        make_wl(pod_set("ps1", 3), pod_set("ps2", 3), status=RESERVED12),
        [Want(INVALID, "spec.podSets.1")],
        old=make_wl(pod_set("ps1", 3), pod_set("ps2", 4), status=RESERVED12),
        gates={"ElasticJobsViaWorkloadSlices": False},
    ),
    Case(
        "workload.podSets[].count is mutable with ElasticJobs feature gate",
        make_wl(pod_set("ps1", 3), pod_set("ps2", 3), status=RESERVED12),
        old=make_wl(pod_set("ps1", 3), pod_set("ps2", 4), status=RESERVED12),
        gates=ELASTIC_ON,
    ),
    Case(
        "ClusterName doesn't have to be one of the nominatedClusterNames with ElasticJobs feature gate",
        make_wl(
            pod_set("ps1", 3),
            pod_set("ps2", 4),
            status={**RESERVED12, "clusterName": "worker1"},
            annotations={"kueue.x-k8s.io/workload-slice-replacement-for": "test-ns/test-workload"},
        ),
        old=make_wl(pod_set("ps1", 3), pod_set("ps2", 4)),
        gates=ELASTIC_ON,
    ),
    _gated_update(
        "reject adding AdmissionGatedBy annotation after workload creation",
        None,
        "example.com/controller",
        [Want(FORBIDDEN, GATED_BY_PATH)],
    ),
    _gated_update(
        "allow removing AdmissionGatedBy annotation with single gate",
        "example.com/controller1",
        None,
        [],
    ),
    _gated_update(
        "allow removing AdmissionGatedBy annotation with multiple gates",
        "example.com/controller1,example.com/controller2",
        None,
        [],
    ),
    _gated_update(
        "allow removing one gate from AdmissionGatedBy annotation",
        "example.com/controller1,example.com/controller2",
        "example.com/controller2",
        [],
    ),
    _gated_update(
        "reject injecting new gate in AdmissionGatedBy annotation",
        "example.com/controller1,example.com/controller2",
        "example.com/controller3",
        [Want(FORBIDDEN, GATED_BY_PATH)],
    ),
    _gated_update(
        "allow reordering gates in AdmissionGatedBy annotation",
        "example.com/controller1,example.com/controller2",
        "example.com/controller2,example.com/controller1",
        [],
    ),
    Case(
        "a workload whose quota reservation lost its admission can still drop its finalizer",
        quota_reserved_without_admission(),
        old={
            **quota_reserved_without_admission(),
            "metadata": {
                "name": "test-workload",
                "namespace": "test-ns",
                "finalizers": ["kueue.x-k8s.io/resource-in-use"],
            },
        },
    ),
]


@params(WL_UPDATE_CASES)
def test_validate_workload_update(case: Case) -> None:
    check(case)


# --- Cohort (cohort_webhook_test.go) and ResourceFlavor (resourceflavor_webhook_test.go) ---------------


def make_cohort(*groups: dict[str, Any], name: str = "cohort") -> dict[str, Any]:
    """``MakeCohort(name)`` with ``ResourceGroup(...)``."""
    spec: dict[str, Any] = {"resourceGroups": list(groups)} if groups else {}
    return {"apiVersion": V1BETA2, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


COHORT_CASES = [
    # upstream compares the detail (only BadValue is ignored)
    Case(
        "flavor quota with lendingLimit and empty parent",
        make_cohort(group(flavor("x86", quota("cpu", "1", "", "1")))),
        [
            Want(
                INVALID,
                f"{RES0}.lendingLimit",
                f'{RES0}.lendingLimit: Invalid value: "1": must be nil when parent is empty',
            )
        ],
    ),
]


@params(COHORT_CASES)
def test_validate_cohort(case: Case) -> None:
    check(case)


def make_rf(
    node_labels: Mapping[str, str] | None = None, taints: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """``MakeResourceFlavor("resource-flavor")`` (empty nodeLabels) with ``NodeLabel``/``Taint``."""
    spec: dict[str, Any] = {"nodeLabels": dict(node_labels or {})}
    if taints:
        spec["nodeTaints"] = taints
    return {
        "apiVersion": V1BETA2,
        "kind": "ResourceFlavor",
        "metadata": {"name": "resource-flavor"},
        "spec": spec,
    }


RF_CASES = [
    # upstream compares the bad value (the detail is ignored; so is the error's Origin, which
    # pykueue's errors do not carry: it is not part of the message)
    Case("empty", make_rf()),
    Case("valid", make_rf({"foo": "bar"}, [{"key": "spot", "value": "true", "effect": "NoSchedule"}])),
    Case("invalid label name", make_rf({"@abc": "foo"}), [Want(INVALID, "spec.nodeLabels", value="@abc")]),
    Case("invalid label value", make_rf({"foo": "@abc"}), [Want(INVALID, "spec.nodeLabels", value="@abc")]),
]


@params(RF_CASES)
def test_validate_resource_flavor(case: Case) -> None:
    check(case)


# --- ClusterQueue as the API server answers (test/integration/.../webhook/core/clusterqueue_test.go) --

OK, INVALID_ERROR, FORBIDDEN_ERROR = "Succeed", "BeInvalidError", "BeForbiddenError"
"""The outcomes the integration tests expect: stored, refused by the CRD (422 Invalid), or denied
by the validating webhook (403 Forbidden, ``admission webhook ... denied the request``)."""


def outcome(obj: Mapping[str, Any], gates: Mapping[str, bool] | None = None) -> str:
    """What the API server answers a create of ``obj`` (the CRD's required properties, then its
    schema and CEL rules, then the webhook: :meth:`ResourceInfo.validation_failure`'s order)."""
    missing = _resource(obj).missing_required(obj, None, "v1beta2")
    if missing:
        return INVALID_ERROR
    try:
        validate_or_raise(typed(obj), gates=FeatureGates(dict(gates or {})))
    except ValidationFailed as failed:
        return FORBIDDEN_ERROR if failed.webhook else INVALID_ERROR
    return OK


def _many_resources(n: int) -> dict[str, Any]:
    return group(flavor("flavor", *[quota(f"r{i}") for i in range(n)]))


def _weight(weight: str) -> dict[str, Any]:
    return bare_cq(fairSharing={"weight": weight})


CQ_INTEGRATION_CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "Should have non-negative borrowing limit",
        make_cq(group(flavor("x86", quota("cpu", "2", "-1"))), cohortName="cohort"),
        FORBIDDEN_ERROR,
    ),
    (
        "Should have non-negative quota value",
        make_cq(group(flavor("x86", quota("cpu", "-1")))),
        FORBIDDEN_ERROR,
    ),
    ("Should have at least one flavor", make_cq({"flavors": []}), INVALID_ERROR),
    ("Should have at least one resource", make_cq(group(flavor("foo"))), INVALID_ERROR),
    (
        "Should have qualified flavor name",
        make_cq(group(flavor("invalid_name", quota("cpu", "5")))),
        INVALID_ERROR,
    ),
    (
        "Should have qualified resource name",
        make_cq(group(flavor("x86", quota("@cpu", "5")))),
        FORBIDDEN_ERROR,
    ),
    ("Should have valid resources quantity", make_cq(_many_resources(65)), INVALID_ERROR),
    (
        "Should have valid flavors quantity",
        make_cq(group(*[flavor(f"f{i}", quota("cpu")) for i in range(65)])),
        INVALID_ERROR,
    ),
    (
        "Should forbid clusterQueue creation with unqualified labelSelector",
        make_cq(namespaceSelector={"matchLabels": {"nospecialchars^=@": "bar"}}),
        FORBIDDEN_ERROR,
    ),
    (
        "Should forbid to create clusterQueue with unknown clusterQueueingStrategy",
        make_cq(queueingStrategy="unknown"),
        INVALID_ERROR,
    ),
    (
        "Should allow to create clusterQueue with empty clusterQueueingStrategy",
        make_cq(queueingStrategy=""),
        OK,
    ),
    ("Should allow to create clusterQueue with empty preemption", make_cq(preemption={}), OK),
    (
        "Should allow to create clusterQueue with preemption policies",
        make_cq(preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}),
        OK,
    ),
    (
        "Should forbid to create clusterQueue with unknown preemption.withinCohort",
        make_cq(preemption={"reclaimWithinCohort": "unknown"}),
        INVALID_ERROR,
    ),
    (
        "Should forbid to create clusterQueue with unknown preemption.withinClusterQueue",
        make_cq(preemption={"withinClusterQueue": "unknown"}),
        INVALID_ERROR,
    ),
    (
        "Should allow to create clusterQueue with built-in resources with qualified names",
        make_cq(group(flavor("default", quota("cpu")))),
        OK,
    ),
    (
        "Should forbid to create clusterQueue with invalid resource name",
        make_cq(group(flavor("default", quota("@cpu")))),
        FORBIDDEN_ERROR,
    ),
    ("Should allow to create clusterQueue with valid cohort", make_cq(cohortName="prod"), OK),
    ("Should forbid to create clusterQueue with invalid cohort", make_cq(cohortName="@prod"), INVALID_ERROR),
    (
        "Should allow to create clusterQueue with extended resources with qualified names",
        make_cq(group(flavor("default", quota("example.com/gpu")))),
        OK,
    ),
    (
        "Should allow to create clusterQueue with flavor with qualified names",
        make_cq(group(flavor("x86", quota("cpu")))),
        OK,
    ),
    (
        "Should forbid to create clusterQueue with flavor with unqualified names",
        make_cq(group(flavor("invalid_name"))),
        INVALID_ERROR,
    ),
    (
        "Should forbid to create clusterQueue with flavor quota with negative value",
        make_cq(group(flavor("x86", quota("cpu", "-1")))),
        FORBIDDEN_ERROR,
    ),
    (
        "Should allow to create clusterQueue with flavor quota with zero values",
        make_cq(group(flavor("x86", quota("cpu", "0")))),
        OK,
    ),
    (
        "Should allow to create clusterQueue with flavor quota with borrowingLimit 0",
        make_cq(group(flavor("x86", quota("cpu", "1", "0"))), cohortName="cohort"),
        OK,
    ),
    (
        "Should forbid to create clusterQueue with flavor quota with negative borrowingLimit",
        make_cq(group(flavor("x86", quota("cpu", "1", "-1"))), cohortName="cohort"),
        FORBIDDEN_ERROR,
    ),
    (
        "Should forbid to create clusterQueue with flavor quota with borrowingLimit and empty cohort",
        make_cq(group(flavor("x86", quota("cpu", "1", "1")))),
        INVALID_ERROR,
    ),
    ("Should allow to create clusterQueue with empty queueing strategy", make_cq(queueingStrategy=""), OK),
    (
        "Should forbid to create clusterQueue with namespaceSelector with invalid labels",
        make_cq(namespaceSelector={"matchLabels": {"nospecialchars^=@": "bar"}}),
        FORBIDDEN_ERROR,
    ),
    (
        "Should forbid to create clusterQueue with namespaceSelector with invalid expressions",
        make_cq(namespaceSelector={"matchExpressions": [{"key": "key", "operator": "In"}]}),
        FORBIDDEN_ERROR,
    ),
    (
        "Should allow to create clusterQueue with multiple resource groups",
        make_cq(*multiple_groups()),
        OK,
    ),
    (
        "Should forbid to create clusterQueue with resources in a flavor in different order",
        bare_cq(resourceGroups=different_order()),
        FORBIDDEN_ERROR,
    ),
    (
        "Should forbid to create clusterQueue missing resources in a flavor",
        bare_cq(resourceGroups=mismatched_flavor(["cpu", "memory"], "cpu")),
        INVALID_ERROR,
    ),
    (
        # upstream's second entry of that name: more resources than coveredResources
        "Should forbid to create clusterQueue missing resources in a flavor (more resources)",
        bare_cq(resourceGroups=mismatched_flavor(["cpu"], "cpu", "memory")),
        INVALID_ERROR,
    ),
    (
        "Should forbid to create clusterQueue missing resources in a flavor and mismatch",
        bare_cq(resourceGroups=mismatched_flavor(["blah"], "cpu", "memory")),
        INVALID_ERROR,
    ),
    (
        "Should forbid to create clusterQueue with resource in more than one resource group",
        make_cq(*resource_in_two_groups()),
        FORBIDDEN_ERROR,
    ),
    (
        "Should forbid to create clusterQueue with flavor in more than one resource group",
        make_cq(*flavor_in_two_groups()),
        FORBIDDEN_ERROR,
    ),
    (
        "Should forbid to create clusterQueue missing with invalid preemption due to reclaimWithinCohort=Never, "
        "while borrowWithinCohort!=nil",
        bare_cq(
            preemption={"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}
        ),
        INVALID_ERROR,
    ),
    (
        "Should allow to create clusterQueue with valid preemption with borrowWithinCohort",
        bare_cq(
            preemption={
                "reclaimWithinCohort": "LowerPriority",
                "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 10},
            }
        ),
        OK,
    ),
    (
        "Should allow to create clusterQueue with existing cluster queue created with older Kueue version that has "
        "a nil borrowWithinCohort field",
        bare_cq(preemption={"reclaimWithinCohort": "Never"}),
        OK,
    ),
    ("Should allow zero FairSharing weight", _weight("0"), OK),
    ("Should allow fractional FairSharing weight", _weight("0.1"), OK),
    ("Should allow small FairSharing weight", _weight("1m"), OK),
    ("Should allow even smaller FairSharing weight", _weight("1u"), OK),
    ("Should allow smallest FairSharing weight", _weight("2n"), OK),
    ("Should forbid threshold FairSharing weight", _weight("1n"), FORBIDDEN_ERROR),
    ("Should forbid collapsed FairSharing weight", _weight("0.0000000001"), FORBIDDEN_ERROR),
    ("Should forbid negative FairSharing weight", _weight("-1"), FORBIDDEN_ERROR),
]


@pytest.mark.parametrize(
    ("obj", "expected"), [c[1:] for c in CQ_INTEGRATION_CASES], ids=[c[0] for c in CQ_INTEGRATION_CASES]
)
def test_cluster_queue_create_as_the_api_server_answers(obj: dict[str, Any], expected: str) -> None:
    assert outcome(obj) == expected


def test_cluster_queue_flavor_name_update_must_be_qualified() -> None:
    """``Should have qualified flavor names when updating``: BeInvalidError."""
    old = make_cq(group(flavor("x86", quota("memory"))))
    new = make_cq(group(flavor("@x86", quota("memory"))))
    with pytest.raises(ValidationFailed) as failed:
        validate_or_raise(typed(new), typed(old))
    assert failed.value.webhook is None


def test_cluster_queue_queueing_strategy_update() -> None:
    """``Should allow to update queueingStrategy with different value``: Succeed."""
    old = make_cq(group(flavor("x86", quota("memory"))), queueingStrategy="StrictFIFO")
    validate_or_raise(
        typed(make_cq(group(flavor("x86", quota("memory"))), queueingStrategy="BestEffortFIFO")), typed(old)
    )


# --- Cohort as the API server answers (test/integration/.../webhook/core/cohort_test.go) ---------------


def _cohort(
    *groups: dict[str, Any], name: str = "cohort", parent: str = "", weight: str = ""
) -> dict[str, Any]:
    """``MakeCohort(name)`` with ``ResourceGroup``, ``Parent`` and ``FairWeight``."""
    obj = make_cohort(*groups, name=name)
    if parent:
        obj["spec"]["parentName"] = parent
    if weight:
        obj["spec"]["fairSharing"] = {"weight": weight}
    return obj


COHORT_INTEGRATION_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("Should disallow empty name", _cohort(name=""), INVALID_ERROR),
    ("Should allow default Cohort", _cohort(), OK),
    ("Should allow valid parent name", _cohort(parent="prod"), OK),
    ("Should reject invalid parent name", _cohort(parent="@prod"), INVALID_ERROR),
    ("ResourceGroup should have at least one flavor", _cohort({"flavors": []}), INVALID_ERROR),
    ("FlavorQuota should have at least one resource", _cohort(group(flavor("foo"))), INVALID_ERROR),
    ("Should reject invalid flavor name", _cohort(group(flavor("@x86", quota("cpu", "5")))), INVALID_ERROR),
    # upstream's name says "allow"; its expectation is BeForbiddenError
    ("Should allow valid resource name", _cohort(group(flavor("x86", quota("@cpu", "5")))), FORBIDDEN_ERROR),
    (
        "Should reject too many flavors in resource group",
        _cohort(group(*[flavor(f"f{i}", quota("cpu")) for i in range(65)])),
        INVALID_ERROR,
    ),
    (
        "Should reject too many resources in resource group",
        _cohort(group(flavor("flavor", *[quota(f"cpu{i}") for i in range(65)]))),
        INVALID_ERROR,
    ),
    ("Should allow resource with valid name", _cohort(group(flavor("default", quota("cpu")))), OK),
    (
        "Should reject resource with invalid name",
        _cohort(group(flavor("default", quota("@cpu")))),
        FORBIDDEN_ERROR,
    ),
    (
        "Should allow extended resources with valid name",
        _cohort(group(flavor("default", quota("example.com/gpu")))),
        OK,
    ),
    ("Should allow flavor with valid name", _cohort(group(flavor("x86", quota("cpu")))), OK),
    ("Should reject flavor with invalid name", _cohort(group(flavor("x_86", quota("cpu")))), INVALID_ERROR),
    (
        "Should reject negative nominal quota",
        _cohort(group(flavor("x86", quota("cpu", "-1")))),
        FORBIDDEN_ERROR,
    ),
    (
        "Should reject negative borrowing limit",
        _cohort(group(flavor("x86", quota("cpu", "1", "-1")))),
        FORBIDDEN_ERROR,
    ),
    (
        "Should reject negative lending limit",
        _cohort(group(flavor("x86", quota("cpu", "1", "", "-1")))),
        FORBIDDEN_ERROR,
    ),
    (
        "Should reject borrowingLimit when no parent",
        _cohort(group(flavor("x86", quota("cpu", "1", "1")))),
        FORBIDDEN_ERROR,
    ),
    (
        "Should allow borrowingLimit 0 when parent exists",
        _cohort(group(flavor("x86", quota("cpu", "1", "0"))), parent="parent"),
        OK,
    ),
    (
        "Should allow borrowingLimit when parent exists",
        _cohort(group(flavor("x86", quota("cpu", "1", "1"))), parent="parent"),
        OK,
    ),
    (
        "Should reject lendingLimit when no parent",
        _cohort(group(flavor("x86", quota("cpu", "1", "", "1")))),
        FORBIDDEN_ERROR,
    ),
    (
        "Should allow lendingLimit when parent exists",
        _cohort(group(flavor("x86", quota("cpu", "1", "", "1"))), parent="parent"),
        OK,
    ),
    (
        "Should allow lendingLimit 0 when parent exists",
        _cohort(group(flavor("x86", quota("cpu", "0", "", "0"))), parent="parent"),
        OK,
    ),
    (
        "Should allow lending limit to exceed nominal quota",
        _cohort(group(flavor("x86", quota("cpu", "3", "", "5"))), parent="parent"),
        OK,
    ),
    (
        "Should allow multiple resource groups",
        _cohort(*multiple_groups()),
        OK,
    ),
    (
        "Should reject resources in a flavor in different order",
        make_cohort(*different_order()),
        FORBIDDEN_ERROR,
    ),
    (
        "Should reject missing resources in a flavor",
        make_cohort(*mismatched_flavor(["cpu", "memory"], "cpu")),
        INVALID_ERROR,
    ),
    (
        "Should reject resource not defined in resource group",
        make_cohort(*mismatched_flavor(["cpu"], "cpu", "memory")),
        INVALID_ERROR,
    ),
    (
        "Should reject resource in more than one resource group",
        _cohort(*resource_in_two_groups()),
        FORBIDDEN_ERROR,
    ),
    (
        "Should reject flavor in more than one resource group",
        _cohort(*flavor_in_two_groups()),
        FORBIDDEN_ERROR,
    ),
    ("Should allow FairSharing weight", _cohort(weight="1"), OK),
    ("Should allow zero FairSharing weight", _cohort(weight="0"), OK),
    ("Should forbid negative FairSharing weight", _cohort(weight="-1"), FORBIDDEN_ERROR),
    ("Should allow fractional FairSharing weight", _cohort(weight="0.5"), OK),
    ("Should allow small FairSharing weight", _cohort(weight="1m"), OK),
    ("Should allow even smaller FairSharing weight", _cohort(weight="1u"), OK),
    ("Should allow smallest FairSharing weight", _cohort(weight="2n"), OK),
    ("Should forbid threshold FairSharing weight", _cohort(weight="1n"), FORBIDDEN_ERROR),
    ("Should forbid collapsed FairSharing weight", _cohort(weight="0.0000000001"), FORBIDDEN_ERROR),
]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [c[1:] for c in COHORT_INTEGRATION_CASES],
    ids=[c[0] for c in COHORT_INTEGRATION_CASES],
)
def test_cohort_create_as_the_api_server_answers(obj: dict[str, Any], expected: str) -> None:
    assert outcome(obj) == expected
