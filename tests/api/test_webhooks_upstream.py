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

Not ported (features pykueue does not implement, or inputs it cannot express):

- ``TestValidateClusterQueue`` / ``ConcurrentAdmissionPolicy ...``: none are skipped (the
  ``ConcurrentAdmission`` gate and ``spec.concurrentAdmissionPolicy`` exist).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from pykueue.api import kueue as k
from pykueue.api.conversion import to_internal
from pykueue.api.defaults import apply_defaults
from pykueue.api.feature_gates import FeatureGates
from pykueue.api.validation import (
    DUPLICATE,
    FORBIDDEN,
    INVALID,
    NOT_FOUND,
    NOT_SUPPORTED,
    REQUIRED,
    FieldError,
    ValidationFailed,
    validate,
    validate_or_raise,
    validate_schema,
    validate_webhook,
)

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
    if case.crd_first:
        schema = validate_schema(obj, old)
        assert schema, "the CRD stage accepts this input: drop crd_first"
        assert validate(obj, old, gates=gates) == schema
        return
    if got:
        with pytest.raises(ValidationFailed) as raised:
            validate_or_raise(obj, old, gates=gates)
        assert raised.value.errors == got
        assert raised.value.webhook is not None
    else:
        validate_or_raise(obj, old, gates=gates)


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
    return {"apiVersion": V1BETA2, "kind": "ClusterQueue", "metadata": {"name": "cluster-queue"}, "spec": spec}


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
    Case("extended resources with qualified names", make_cq(group(flavor("default", quota("example.com/gpu"))))),
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
        make_cq(
            group(
                flavor("alpha", quota("cpu", "0"), quota("memory", "0")),
                flavor("beta", quota("cpu", "0"), quota("memory", "0")),
            ),
            group(flavor("gamma", quota("example.com/gpu", "0")), flavor("omega", quota("example.com/gpu", "0"))),
        ),
    ),
    Case(
        "resources in a flavor in different order",
        bare_cq(
            resourceGroups=[
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        flavor("alpha", quota("cpu", "0"), quota("memory", "0")),
                        flavor("beta", quota("memory", "0"), quota("cpu", "0")),
                    ],
                }
            ]
        ),
        [
            Want(INVALID, f"{RG}[0].flavors[1].resources[0].name"),
            Want(INVALID, f"{RG}[0].flavors[1].resources[1].name"),
        ],
    ),
    Case(
        "resource in more than one resource group",
        make_cq(
            group(flavor("alpha", quota("cpu", "0"), quota("memory", "0"))),
            group(flavor("beta", quota("memory", "0"))),
        ),
        [Want(DUPLICATE, f"{RG}[1].coveredResources[0]")],
    ),
    Case(
        "flavor in more than one resource group",
        make_cq(
            group(flavor("alpha", quota("cpu")), flavor("beta", quota("cpu"))),
            group(flavor("beta", quota("memory"))),
        ),
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
        make_cq(group(flavor("flavor1", quota("cpu", "1"))), concurrentAdmissionPolicy=cap("TryPreferredFlavors")),
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
            group(flavor("flavor1", quota("cpu", "1"))), concurrentAdmissionPolicy=cap("TryPreferredFlavors", "flavor1")
        ),
    ),
    Case(
        "ConcurrentAdmissionPolicy constraints with RetainFirstAdmission mode is forbidden",
        make_cq(
            group(flavor("flavor1", quota("cpu", "1"))), concurrentAdmissionPolicy=cap("RetainFirstAdmission", "flavor1")
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
                'spec.concurrentAdmissionPolicy.migration.constraints.lastAcceptableFlavorName: Invalid value: '
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
        make_cq(ALPHA, queueingStrategy="BestEffortFIFO", admissionChecksStrategy=checks_strategy(("ac1", ["ghost"]))),
        old=make_cq(ALPHA, queueingStrategy="StrictFIFO", admissionChecksStrategy=checks_strategy(("ac1", ["ghost"]))),
        gates={"RejectUpdatesToCQWithInvalidOnFlavors": False},
    ),
    Case(
        "legacy cluster queue with invalid onFlavors rejects unrelated updates when the feature gate is enabled",
        make_cq(ALPHA, queueingStrategy="BestEffortFIFO", admissionChecksStrategy=checks_strategy(("ac1", ["ghost"]))),
        [Want(NOT_SUPPORTED, ON_FLAVORS0, f'{ON_FLAVORS0}: Unsupported value: "ghost": supported values: "alpha"')],
        old=make_cq(ALPHA, queueingStrategy="StrictFIFO", admissionChecksStrategy=checks_strategy(("ac1", ["ghost"]))),
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
        [Want(NOT_SUPPORTED, ON_FLAVORS0, f'{ON_FLAVORS0}: Unsupported value: "ghost": supported values: "alpha"')],
        old=make_cq(ALPHA),
    ),
    Case(
        "resourceGroup flavor change revalidates admissionCheck onFlavors for legacy cluster queue",
        make_cq(
            group(flavor("beta", quota("cpu", "1"))), admissionChecksStrategy=checks_strategy(("ac1", ["ghost"]))
        ),
        [Want(NOT_SUPPORTED, ON_FLAVORS0, f'{ON_FLAVORS0}: Unsupported value: "ghost": supported values: "beta"')],
        old=make_cq(ALPHA, admissionChecksStrategy=checks_strategy(("ac1", ["ghost"]))),
    ),
    Case(
        "changing invalid onFlavors for a legacy cluster queue revalidates the new ref",
        make_cq(ALPHA, admissionChecksStrategy=checks_strategy(("ac1", ["phantom"]))),
        [Want(NOT_SUPPORTED, ON_FLAVORS0, f'{ON_FLAVORS0}: Unsupported value: "phantom": supported values: "alpha"')],
        old=make_cq(ALPHA, admissionChecksStrategy=checks_strategy(("ac1", ["ghost"]))),
    ),
    Case(
        "changing admissionCheck name revalidates onFlavors for the new rule",
        make_cq(ALPHA, admissionChecksStrategy=checks_strategy(("ac2", ["ghost"]))),
        [Want(NOT_SUPPORTED, ON_FLAVORS0, f'{ON_FLAVORS0}: Unsupported value: "ghost": supported values: "alpha"')],
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
        [Want(INVALID, "spec.concurrentAdmissionPolicy", 'spec.concurrentAdmissionPolicy: Invalid value: "null": field is immutable')],
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
        group(*[flavor(f"f{i:03d}", *[quota(f"res{j:03d}", "1") for j in range(resources)]) for i in range(flavors)])
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


@pytest.mark.parametrize(("groups", "want_err"), [c[1:] for c in LIMIT_CASES], ids=[c[0] for c in LIMIT_CASES])
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
