"""A namespace's LimitRanges as Kueue reads them (upstream ``pkg/util/limitrange``).

Kueue folds every LimitRange of a namespace into one item per type (:func:`summarize`), fills
the pod templates of a pending Workload from the ``Container`` and ``Pod`` defaults
(``workload.AdjustResources``, :func:`adjust_pod_spec`) and refuses to
admit one whose requests fall outside the summarised ``min``/``max``
(``workload.ValidateLimitRange``, :func:`validate_pod_spec`). Pure functions over the raw
``spec`` dicts of LimitRange objects and raw PodSpecs; nothing here mutates its inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pykueue.api import podspec

LIMIT_TYPE_POD = "Pod"
LIMIT_TYPE_CONTAINER = "Container"

REQUESTS_ABOVE_MAX_MESSAGE = "requests must not be above the limitRange max"
REQUESTS_BELOW_MIN_MESSAGE = "requests must not be below the limitRange min"
ERR_LIMIT_RANGE_CONSTRAINTS = "resources didn't satisfy LimitRange constraints"

ResourceList = Mapping[str, podspec.QuantityLike]


class SummaryItem:
    """One ``LimitRangeItem`` summarising every item of its type (``addToSummary``)."""

    __slots__ = ("default", "default_request", "max", "max_limit_request_ratio", "min")

    def __init__(self) -> None:
        self.max: dict[str, podspec.QuantityLike] = {}
        self.min: dict[str, podspec.QuantityLike] = {}
        self.default: dict[str, podspec.QuantityLike] = {}
        self.default_request: dict[str, podspec.QuantityLike] = {}
        self.max_limit_request_ratio: dict[str, podspec.QuantityLike] = {}


Summary = dict[str, SummaryItem]
"""Summarised item per LimitRange type (``limitrange.Summary``)."""


def _merge(target: dict[str, Any], other: Mapping[str, Any] | None, keep: str) -> None:
    """``resource.MergeResourceListKeep{First,Min,Max}`` into ``target``."""
    for name, value in (other or {}).items():
        current = target.get(name)
        if (
            current is None
            or (keep == "min" and podspec.quantity_value(value) < podspec.quantity_value(current))
            or (keep == "max" and podspec.quantity_value(value) > podspec.quantity_value(current))
        ):
            target[name] = value


def summarize(limit_ranges: Iterable[Mapping[str, Any]]) -> Summary:
    """``limitrange.Summarize``: per type the lowest ``max`` and ``maxLimitRequestRatio``, the
    highest ``min``, the first ``default`` and ``defaultRequest`` seen per resource.

    ``limit_ranges`` are LimitRange objects or their ``spec``s, in list order."""
    summary: Summary = {}
    for lr in limit_ranges:
        spec = lr.get("spec", lr)
        for item in (spec or {}).get("limits") or ():
            kind = str(item.get("type") or "")
            s = summary.get(kind)
            if s is None:
                s = summary[kind] = SummaryItem()
            _merge(s.max, item.get("max"), "min")
            _merge(s.min, item.get("min"), "max")
            _merge(s.default, item.get("default"), "first")
            _merge(s.default_request, item.get("defaultRequest"), "first")
            _merge(s.max_limit_request_ratio, item.get("maxLimitRequestRatio"), "min")
    return summary


def has_defaults(limit_ranges: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any item is of type ``Container`` or ``Pod`` (upstream's
    ``LimitRangeHasContainerOrPodType`` index: only those ranges can adjust a pod template)."""
    for lr in limit_ranges:
        spec = lr.get("spec", lr)
        for item in (spec or {}).get("limits") or ():
            if item.get("type") in (LIMIT_TYPE_CONTAINER, LIMIT_TYPE_POD):
                return True
    return False


def _greater_keys(values: Mapping[str, Any], bounds: Mapping[str, Any]) -> list[str]:
    """``Requests.GreaterKeys``: names in both whose Kueue integer in ``values`` exceeds ``bounds``'s, sorted."""
    return sorted(
        name
        for name, v in values.items()
        if name in bounds and podspec.integer_value(name, v) > podspec.integer_value(name, bounds[name])
    )


def _keep(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, keep: str) -> dict[str, Any]:
    """``MergeResourceListKeepMin``/``KeepMax`` of two lists into a new one."""
    out: dict[str, Any] = dict(a or {})
    _merge(out, b, keep)
    return out


def _validate_containers(containers: Any, item: SummaryItem, path: str) -> list[str]:
    errors: list[str] = []
    for i, c in enumerate(containers or ()):
        resources = c.get("resources") or {}
        requests, limits = resources.get("requests"), resources.get("limits")
        c_min = _keep(requests, limits, "min")
        c_max = _keep(requests, limits, "max")
        where = f"{path}[{i}]"
        names = _greater_keys(c_max, item.max)
        if names:
            errors.append(podspec.field_invalid(where, names, REQUESTS_ABOVE_MAX_MESSAGE))
        names = _greater_keys(item.min, c_min)
        if names:
            errors.append(podspec.field_invalid(where, names, REQUESTS_BELOW_MIN_MESSAGE))
    return errors


def validate_pod_spec(summary: Summary, spec: Mapping[str, Any], path: str, *, limits_as_requests: bool) -> list[str]:
    """``Summary.ValidatePodSpec``: field errors of a pod template outside the summary's bounds.

    Init containers, then containers, against the ``Container`` item (each container's highest
    of request and limit against ``max``, lowest against ``min``); then the pod's total request
    (Kubernetes ``PodRequests``) against the ``Pod`` item. ``limits_as_requests`` says whether
    the template was adjusted (the scheduler's view: limit-only resources count as requests) or
    is read as stored (the workload controller's)."""
    errors: list[str] = []
    container = summary.get(LIMIT_TYPE_CONTAINER)
    if container is not None:
        errors.extend(_validate_containers(spec.get("initContainers"), container, f"{path}.initContainers"))
        errors.extend(_validate_containers(spec.get("containers"), container, f"{path}.containers"))
    pod = summary.get(LIMIT_TYPE_POD)
    if pod is not None:
        total = podspec.pod_requests(spec, limits_as_requests=limits_as_requests)
        names = _greater_keys(total, pod.max)
        if names:
            errors.append(podspec.field_invalid(path, names, REQUESTS_ABOVE_MAX_MESSAGE))
        names = _greater_keys(pod.min, total)
        if names:
            errors.append(podspec.field_invalid(path, names, REQUESTS_BELOW_MIN_MESSAGE))
    return errors


def limit_range_error(
    summary: Summary, pod_specs: Iterable[Mapping[str, Any]], *, limits_as_requests: bool
) -> str | None:
    """``ValidateLimitRange`` as ``ValidateAdmissibility`` words it:
    ``resources didn't satisfy LimitRange constraints: <aggregate>``, or None."""
    errors: list[str] = []
    for i, spec in enumerate(pod_specs):
        errors.extend(
            validate_pod_spec(summary, spec, f"spec.podSets[{i}].template.spec", limits_as_requests=limits_as_requests)
        )
    if not errors:
        return None
    return f"{ERR_LIMIT_RANGE_CONSTRAINTS}: {podspec.aggregate_error_text(errors)}"


# --- adjustments (``workload.AdjustResources``) ------------------------------------------------------


def adjust_pod_spec(
    spec: Mapping[str, Any],
    *,
    runtime_class_overhead: ResourceList | None = None,
    limit_ranges: Iterable[Mapping[str, Any]] | None = None,
    summary: Summary | None = None,
) -> dict[str, Any]:
    """The RuntimeClass and LimitRange steps of ``workload.AdjustResources`` on one pod template.

    Returns a copy of ``spec`` (containers are copied only when touched); ``spec`` is not mutated.

    * ``runtime_class_overhead``: the ``overhead.podFixed`` of the RuntimeClass named by
      ``spec.runtimeClassName`` (the caller looks it up; ``handlePodOverhead``). Applied only when
      the spec names a RuntimeClass and has no ``overhead``.
    * ``limit_ranges`` (the namespace's LimitRanges or their ``spec``s, in list order) or their
      ``summary`` (``handlePodLimitRange``): the ``Container`` item fills missing container and
      init-container ``limits`` from ``default`` and ``requests`` from ``defaultRequest``; the
      ``Pod`` item does the same for pod-level ``resources`` when the spec has them.

    ``AdjustResources``' last step, limits as missing requests, needs no copy:
    :func:`pykueue.api.podspec.pod_requests` applies it itself.
    """
    out = dict(spec)
    if runtime_class_overhead is not None and out.get("runtimeClassName") is not None and not out.get("overhead"):
        out["overhead"] = dict(runtime_class_overhead)
    if summary is None and limit_ranges is not None:
        summary = summarize(limit_ranges)
    if summary:
        container = summary.get(LIMIT_TYPE_CONTAINER)
        if container is not None:
            for key in ("initContainers", "containers"):
                if out.get(key):
                    out[key] = [
                        _with_resource_defaults(c, container.default, container.default_request) for c in out[key]
                    ]
        pod = summary.get(LIMIT_TYPE_POD)
        if pod is not None and out.get("resources") is not None:
            out["resources"] = _fill_requirements(out["resources"], pod.default, pod.default_request)
    return out


def _fill_requirements(
    resources: Mapping[str, Any], default: Mapping[str, Any], default_request: Mapping[str, Any]
) -> dict[str, Any]:
    """``MergeResourceListKeepFirst`` of the limits with ``default``, of the requests with ``defaultRequest``."""
    out = dict(resources)
    if default:
        out["limits"] = {**default, **(resources.get("limits") or {})}
    if default_request:
        out["requests"] = {**default_request, **(resources.get("requests") or {})}
    return out


def _with_resource_defaults(
    container: Mapping[str, Any], default: Mapping[str, Any], default_request: Mapping[str, Any]
) -> dict[str, Any]:
    out = dict(container)
    out["resources"] = _fill_requirements(container.get("resources") or {}, default, default_request)
    return out
