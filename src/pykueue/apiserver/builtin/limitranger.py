"""kube-apiserver's ``LimitRanger`` admission plugin for the Pods pykueue serves.

``plugin/pkg/admission/limitranger``: on Pod create (not on updates, nor subresources), for each
LimitRange of the Pod's namespace (in name order; upstream reads its informer's order):

* mutation (``PodMutateLimitFunc``): every (init) container without a request/limit for a
  resource gets the ``defaultRequest``/``default`` of the ``Container`` items, and the Pod is
  annotated ``kubernetes.io/limit-ranger: LimitRanger plugin set: cpu request for container c``;
* validation (``PodValidateLimitFunc``): ``Container`` items bound every (init) container's
  requests and limits (``min``, ``max``, ``maxLimitRequestRatio``), ``Pod`` items bound the Pod's
  effective requests and limits (the plugin's ``podRequests``/``podLimits``: containers summed,
  init containers as a running maximum with their sidecars). A violation is a
  403 ``pods "<name>" is forbidden: maximum cpu usage per Container is 2, but limit is 3`` (several:
  ``[a, b]``, duplicates dropped, as ``utilerrors.NewAggregate`` prints them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api.quantity import Quantity, QuantityError
from pykueue.apiserver import errors as E
from pykueue.apiserver.admission import Lister
from pykueue.apiserver.builtin.podnode import qos_class
from pykueue.apiserver.builtin.pods import mapping, sequence
from pykueue.apiserver.builtin.resourcenames import MAX_MILLI_VALUE
from pykueue.kube.status import StatusError

ANNOTATION = "kubernetes.io/limit-ranger"
LIMIT_TYPE_POD = "Pod"
LIMIT_TYPE_CONTAINER = "Container"
_ZERO = Quantity.parse("0")

ResourceList = dict[str, Quantity]


def _limit_ranges(pod: Mapping[str, Any], lister: Lister) -> list[dict[str, Any]]:
    namespace = str(mapping(pod.get("metadata")).get("namespace") or "")
    items = lister("", "limitranges", namespace)
    return sorted(items, key=lambda lr: str(mapping(lr.get("metadata")).get("name") or ""))


def _items(limit_range: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [mapping(item) for item in sequence(mapping(limit_range.get("spec")).get("limits"))]


def _containers(spec: Mapping[str, Any], field: str) -> list[dict[str, Any]]:
    return [c for c in sequence(spec.get(field)) if isinstance(c, dict)]


# --- mutation ----------------------------------------------------------------------------------------


def mutate_pod(pod: dict[str, Any], lister: Lister) -> None:
    """``LimitRanger.Admit`` of a Pod create (the QoS class follows the defaulted resources:
    kube-apiserver computes it in ``PrepareForCreate``, after the admission)."""
    changed = False
    for limit_range in _limit_ranges(pod, lister):
        changed |= _mutate_with(pod, limit_range)
    spec = pod.get("spec")
    status = pod.get("status")
    if changed and isinstance(spec, dict) and isinstance(status, dict) and "qosClass" in status:
        status["qosClass"] = qos_class(spec)


def _mutate_with(pod: dict[str, Any], limit_range: Mapping[str, Any]) -> bool:
    """``PodMutateLimitFunc``: ``defaultContainerResourceRequirements`` then
    ``mergePodResourceRequirements``."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    for item in _items(limit_range):
        if item.get("type") == LIMIT_TYPE_CONTAINER:
            requests.update(mapping(item.get("defaultRequest")))
            limits.update(mapping(item.get("default")))
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return False
    notes: list[str] = []
    for field, prefix in (("containers", "container"), ("initContainers", "init container")):
        for container in _containers(spec, field):
            notes += _merge_container(container, requests, limits, prefix)
    if not notes:
        return False
    meta = pod.setdefault("metadata", {})
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = meta["annotations"] = {}
    annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)
    return True


def _merge_container(
    container: dict[str, Any], requests: Mapping[str, Any], limits: Mapping[str, Any], prefix: str
) -> list[str]:
    """``mergeContainerResources``: fill the missing entries, say which were set."""
    resources = container.get("resources")
    if not isinstance(resources, dict):
        resources = container["resources"] = {}
    set_requests = _fill(resources, "requests", requests)
    set_limits = _fill(resources, "limits", limits)
    name = str(container.get("name") or "")
    notes = []
    if set_requests:
        notes.append(f"{', '.join(sorted(set_requests))} request for {prefix} {name}")
    if set_limits:
        notes.append(f"{', '.join(sorted(set_limits))} limit for {prefix} {name}")
    return notes


def _fill(resources: dict[str, Any], section: str, defaults: Mapping[str, Any]) -> list[str]:
    current = resources.get(section)
    current = dict(current) if isinstance(current, dict) else {}
    added = [name for name in defaults if name not in current]
    for name in added:
        current[name] = defaults[name]
    if current:  # Go's empty map is omitted when encoded
        resources[section] = current
    return added


# --- validation --------------------------------------------------------------------------------------


def validate_pod(pod: dict[str, Any], old: dict[str, Any] | None, lister: Lister) -> None:
    """``LimitRanger.Validate`` of a Pod create: raises the 403 of the first violated LimitRange."""
    if old is not None:  # pods are only checked on create (resizes must not be blocked)
        return
    for limit_range in _limit_ranges(pod, lister):
        problems = pod_problems(limit_range, pod)
        if problems:
            meta = mapping(pod.get("metadata"))
            name = str(meta.get("name") or meta.get("generateName") or "Unknown")
            raise forbidden(name, problems)


def forbidden(name: str, problems: list[str]) -> StatusError:
    """``admission.NewForbidden`` of the aggregate (``pods "<name>" is forbidden: …``)."""
    unique = list(dict.fromkeys(problems))
    detail = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    return E.forbidden("", "pods", name, detail)


def pod_problems(limit_range: Mapping[str, Any], pod: Mapping[str, Any]) -> list[str]:
    """``PodValidateLimitFunc``: the violated constraints, in upstream's order (resources by name)."""
    spec = mapping(pod.get("spec"))
    problems: list[str] = []
    for item in _items(limit_range):
        limit_type = item.get("type")
        if limit_type == LIMIT_TYPE_CONTAINER:
            for field in ("containers", "initContainers"):
                for container in _containers(spec, field):
                    resources = mapping(container.get("resources"))
                    problems += _constraints(
                        LIMIT_TYPE_CONTAINER,
                        item,
                        _resource_list(resources.get("requests")),
                        _resource_list(resources.get("limits")),
                    )
        if limit_type == LIMIT_TYPE_POD:
            problems += _constraints(LIMIT_TYPE_POD, item, pod_requests(spec), pod_limits(spec))
    return problems


def _constraints(
    limit_type: str, item: Mapping[str, Any], requests: ResourceList, limits: ResourceList
) -> list[str]:
    problems: list[str] = []
    checks = (("min", _min_problem), ("max", _max_problem), ("maxLimitRequestRatio", _ratio_problem))
    for section, check in checks:
        for name, value in sorted(mapping(item.get(section)).items()):
            enforced = _parse(value)
            if enforced is None:
                continue
            problem = check(limit_type, name, enforced, requests.get(name), limits.get(name))
            if problem:
                problems.append(problem)
    return problems


def _observed(request: Quantity | None, limit: Quantity | None, enforced: Quantity) -> tuple[int, int, int]:
    """``requestLimitEnforcedValues``: milli-values when none overflows, else values."""
    req, lim = request or _ZERO, limit or _ZERO
    values = (req.int_value(), lim.int_value(), enforced.int_value())
    if all(v <= MAX_MILLI_VALUE for v in values):
        return req.milli_value(), lim.milli_value(), enforced.milli_value()
    return values


def _min_problem(
    limit_type: str, name: str, enforced: Quantity, request: Quantity | None, limit: Quantity | None
) -> str:
    req, lim, bound = _observed(request, limit, enforced)
    if request is None:
        return f"minimum {name} usage per {limit_type} is {enforced}.  No request is specified"
    if req < bound:
        return f"minimum {name} usage per {limit_type} is {enforced}, but request is {request}"
    if limit is not None and lim < bound:
        return f"minimum {name} usage per {limit_type} is {enforced}, but limit is {limit}"
    return ""


def _max_problem(
    limit_type: str, name: str, enforced: Quantity, request: Quantity | None, limit: Quantity | None
) -> str:
    req, lim, bound = _observed(request, limit, enforced)
    if limit is None:
        return f"maximum {name} usage per {limit_type} is {enforced}.  No limit is specified"
    if lim > bound:
        return f"maximum {name} usage per {limit_type} is {enforced}, but limit is {limit}"
    if request is not None and req > bound:
        return f"maximum {name} usage per {limit_type} is {enforced}, but request is {request}"
    return ""


def _ratio_problem(
    limit_type: str, name: str, enforced: Quantity, request: Quantity | None, limit: Quantity | None
) -> str:
    req, lim, _ = _observed(request, limit, enforced)
    prefix = f"{name} max limit to request ratio per {limit_type} is {enforced}"
    if request is None or req == 0:
        return f"{prefix}, but no request is specified or request is 0"
    if limit is None or lim == 0:
        return f"{prefix}, but no limit is specified or limit is 0"
    observed = float(lim) / float(req)
    shown = observed
    maximum = float(enforced.int_value())
    if enforced.int_value() <= MAX_MILLI_VALUE:
        observed *= 1000
        maximum = float(enforced.milli_value())
    if observed > maximum:
        return f"{prefix}, but provided ratio is {shown:f}"
    return ""


# --- effective pod requests and limits (the plugin's podRequests/podLimits) ---------------------------


def _parse(value: Any) -> Quantity | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return Quantity.parse(value)
    except (QuantityError, TypeError, ValueError):
        return None


def _resource_list(value: Any) -> ResourceList:
    out: ResourceList = {}
    for name, raw in mapping(value).items():
        quantity = _parse(raw)
        if quantity is not None:
            out[name] = quantity
    return out


def _add(target: ResourceList, other: ResourceList) -> None:
    """``addResourceList`` (a sum keeps the format of its first non-zero term, as ``Quantity.Add``)."""
    for name, quantity in other.items():
        current = target.get(name)
        if current is None:
            target[name] = quantity
        else:
            fmt = quantity.format if current.value == 0 else current.format
            target[name] = Quantity(current.value + quantity.value, fmt)


def _max(target: ResourceList, other: ResourceList) -> None:
    """``maxResourceList``."""
    for name, quantity in other.items():
        current = target.get(name)
        if current is None or quantity.value > current.value:
            target[name] = quantity


def _aggregate(spec: Mapping[str, Any], section: str) -> ResourceList:
    total: ResourceList = {}
    for container in _containers(spec, "containers"):
        _add(total, _resource_list(mapping(container.get("resources")).get(section)))
    sidecars: ResourceList = {}
    init_max: ResourceList = {}
    for container in _containers(spec, "initContainers"):
        own = _resource_list(mapping(container.get("resources")).get(section))
        if container.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            stage = dict(sidecars)
        else:
            stage = {}
            _add(stage, own)
            _add(stage, sidecars)
        _max(init_max, stage)
    _max(total, init_max)
    return total


def pod_requests(spec: Mapping[str, Any]) -> ResourceList:
    """The plugin's ``podRequests``: containers summed, init containers as a running maximum with
    their sidecars (no overhead, no pod-level resources)."""
    return _aggregate(spec, "requests")


def pod_limits(spec: Mapping[str, Any]) -> ResourceList:
    """The plugin's ``podLimits`` (as :func:`pod_requests`)."""
    return _aggregate(spec, "limits")
