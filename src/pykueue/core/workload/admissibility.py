"""Whether a Workload may be admitted to a ClusterQueue at all (upstream ``pkg/scheduler``'s
``validateResources``/namespace-selector checks, which the workload controller repeats for its
``QuotaReserved`` message)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

from pykueue.api.kueue import Workload, WorkloadSpec
from pykueue.api.limitrange import Summary, limit_range_error
from pykueue.api.meta import LabelSelector, label_selector_matches
from pykueue.api.podspec import (
    per_pod_integer_requests,
    resources_validation_error,
    validate_requests_within_limits,
)
from pykueue.api.quantity import MAX_BOUNDED, resource_quantity_string


class Problem(enum.Enum):
    """Why a Workload is inadmissible; the scheduler maps each to its requeue reason."""

    NAMESPACE_MISSING = "NamespaceMissing"
    NAMESPACE_MISMATCH = "NamespaceMismatch"
    INVALID_REQUESTS = "InvalidRequests"
    LIMIT_RANGE = "LimitRange"
    UNACCOUNTABLE = "Unaccountable"

NAMESPACE_MISMATCH_MESSAGE = "workload namespace doesn't match ClusterQueue selector"


PodSetRequests = Sequence[tuple[int, Mapping[str, int]]]
"""(count, per-pod Kueue integer requests) of each pod set."""


def admissibility_error(
    wl: Workload,
    selector: LabelSelector | None,
    namespace_labels: dict[str, str] | None,
    pod_sets: PodSetRequests | None = None,
    *,
    limit_ranges: Summary | None = None,
) -> str | None:
    """``workload.ValidateAdmissibility`` (from ``Scheduler.nominate`` and the workload controller):
    why ``wl`` may not be admitted to a ClusterQueue, if at all. ``limit_ranges``: the summary of
    the namespace's LimitRanges, if it has any."""
    if limit_ranges is None:
        problem = admissibility_problem(wl, selector, namespace_labels, pod_sets)
    else:
        problem = admissibility_problem(wl, selector, namespace_labels, pod_sets, limit_ranges=limit_ranges)
    return problem[0] if problem is not None else None


def admissibility_problem(
    wl: Workload,
    selector: LabelSelector | None,
    namespace_labels: dict[str, str] | None,
    pod_sets: PodSetRequests | None = None,
    *,
    spec_derived: bool = False,
    pod_specs: Sequence[Mapping[str, Any]] | None = None,
    limit_ranges: Summary | None = None,
    limits_as_requests: bool = False,
) -> tuple[str, Problem] | None:
    """:func:`admissibility_error` with what kind of problem it is: (message, kind) or None.

    ``pod_sets`` are the scheduler's already computed requests (else computed from ``wl``);
    ``spec_derived`` says they are exactly what ``wl``'s spec gives without them (no excluded
    prefixes, no transformations, no reclaimable pods, no adjustment), so the outcome is
    remembered for the spec. ``pod_specs``: the pod templates after ``AdjustResources`` when
    they differ from the spec's (the scheduler checks its queued, adjusted copy; the workload
    controller the Workload as stored). ``limit_ranges``: the namespace's LimitRange summary, if
    it has any (``ValidateLimitRange``); ``limits_as_requests`` says the templates were adjusted,
    so a limit without a request counts as one in a pod's total.
    """
    ns = wl.metadata.namespace
    if namespace_labels is None:
        return f'workload namespace "{ns}" does not exist: namespaces "{ns}" not found', Problem.NAMESPACE_MISSING
    if selector is None or not label_selector_matches(selector, namespace_labels):
        return NAMESPACE_MISMATCH_MESSAGE, Problem.NAMESPACE_MISMATCH
    if pod_specs is not None or limit_ranges:
        return _adjusted_problem(wl, pod_sets, pod_specs, limit_ranges, limits_as_requests)
    memo = _spec_memo(wl.spec)
    if memo.invalid_requests is not None:
        return memo.invalid_requests, Problem.INVALID_REQUESTS
    if pod_sets is None:
        if memo.unaccountable is _UNSET:
            memo.unaccountable = resources_validation_error(request_overflow_errors(spec_pod_requests(wl.spec)))
        message = memo.unaccountable
    elif spec_derived and memo.unaccountable is not _UNSET:
        # The requests are what the spec gives: the outcome remembered for the spec is theirs.
        message = memo.unaccountable
    else:
        message = resources_validation_error(request_overflow_errors(pod_sets))
        if spec_derived:
            memo.unaccountable = message
    return (message, Problem.UNACCOUNTABLE) if message is not None else None


def _adjusted_problem(
    wl: Workload,
    pod_sets: PodSetRequests | None,
    pod_specs: Sequence[Mapping[str, Any]] | None,
    limit_ranges: Summary | None,
    limits_as_requests: bool,
) -> tuple[str, Problem] | None:
    """:func:`admissibility_problem`'s resource checks of adjusted templates or under LimitRanges
    (``ValidateResources``, ``ValidateLimitRange``, then the int64 bound), without the spec memo."""
    specs = pod_specs if pod_specs is not None else [ps.template.spec for ps in wl.spec.pod_sets]
    invalid = _invalid_requests(specs)
    if invalid is not None:
        return invalid, Problem.INVALID_REQUESTS
    if limit_ranges:
        violation = limit_range_error(limit_ranges, specs, limits_as_requests=limits_as_requests)
        if violation is not None:
            return violation, Problem.LIMIT_RANGE
    if pod_sets is None:
        pod_sets = [(ps.count, per_pod_integer_requests(spec)) for ps, spec in zip(wl.spec.pod_sets, specs, strict=True)]
    message = resources_validation_error(request_overflow_errors(pod_sets))
    return (message, Problem.UNACCOUNTABLE) if message is not None else None


# --- per-spec memo ------------------------------------------------------------------------------------
#
# Both checks above read only the Workload's spec, and a status write shares the spec object with
# the Workload it replaces (``transitions.copy_for_status``); the scheduler checks a head at
# nomination and the workload controller checks it again after every status write the cycle
# makes. Keyed by the spec object's identity (the entry holds the spec, so the id cannot be
# reused while cached), on the same premise as ``new_workload_info``'s reuse of pod-set requests:
# a spec object is never mutated in place once observed. Bounded: cleared when full.

_UNSET = "\0unset"
_MEMO_LIMIT = 8192


class _SpecMemo:
    __slots__ = ("invalid_requests", "spec", "unaccountable")

    def __init__(self, spec: WorkloadSpec, invalid_requests: str | None) -> None:
        self.spec = spec
        self.invalid_requests = invalid_requests
        self.unaccountable: str | None = _UNSET


_memo: dict[int, _SpecMemo] = {}


def _invalid_requests(pod_specs: Sequence[Mapping[str, Any]]) -> str | None:
    """``ValidateResources``' message for these pod templates, or None."""
    errors: list[str] = []
    for i, spec in enumerate(pod_specs):
        errors.extend(validate_requests_within_limits(spec, f"spec.podSets[{i}].template.spec"))
    return resources_validation_error(errors)


def _spec_memo(spec: WorkloadSpec) -> _SpecMemo:
    memo = _memo.get(id(spec))
    if memo is not None and memo.spec is spec:
        return memo
    errors: list[str] = []  # ``_invalid_requests`` inline: once per spec, without a list of templates
    for i, ps in enumerate(spec.pod_sets):
        errors.extend(validate_requests_within_limits(ps.template.spec, f"spec.podSets[{i}].template.spec"))
    memo = _SpecMemo(spec, resources_validation_error(errors))
    if len(_memo) >= _MEMO_LIMIT:
        _memo.clear()
    _memo[id(spec)] = memo
    return memo


_requests_memo: dict[int, tuple[WorkloadSpec, list[tuple[int, dict[str, int]]]]] = {}


def spec_pod_requests(spec: WorkloadSpec) -> list[tuple[int, dict[str, int]]]:
    """(count, per-pod Kueue integer requests) of each pod set of ``spec``, without excluded
    prefixes or transformations, remembered per spec object (as :func:`_spec_memo`, on the same
    premise). Computed once per Workload spec for both of its readers: the scheduler's pod sets
    (``info.build_pod_sets`` when no exclusion or transformation is configured) and the workload
    controller's check above, which parsed every pod template's quantities again. The lists and
    dicts are shared: read only."""
    entry = _requests_memo.get(id(spec))
    if entry is not None and entry[0] is spec:
        return entry[1]
    own = [(ps.count, per_pod_integer_requests(ps.template.spec)) for ps in spec.pod_sets]
    if len(_requests_memo) >= _MEMO_LIMIT:
        _requests_memo.clear()
    _requests_memo[id(spec)] = (spec, own)
    return own


def request_overflow_errors(pod_sets: PodSetRequests) -> list[str]:
    """Pod sets whose requests × count leave what Kueue's int64 accounting can hold.

    Usage is int64 (milli-units for cpu) and saturates (upstream ``SaturatingMul``): such a
    total reads as the unlimited sentinel, fits any quota, and its admission (``resourceUsage``
    not a multiple of the count) is refused by validation on every retry, holding the
    ClusterQueue's head. Such a Workload is inadmissible instead, with the pod set, the
    resource and the bound named.
    """
    errors: list[str] = []
    for i, (count, per_pod) in enumerate(pod_sets):
        for v in per_pod.values():
            if v * count > MAX_BOUNDED:
                break
        else:
            continue  # the common case, without sorting the names (a loop: no generator per pod set)
        for name in sorted(per_pod):
            if per_pod[name] * count > MAX_BOUNDED:
                bound = resource_quantity_string(name, MAX_BOUNDED)
                errors.append(
                    f'spec.podSets[{i}].count: Invalid value: {count}: the total request for "{name}" '
                    f"(per-pod request × count) exceeds the largest quantity Kueue can account for ({bound})"
                )
    return errors
