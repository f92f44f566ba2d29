"""Object-metadata checks and pod-template defaulting/validation shared by built-in kinds.

Defaults follow ``k8s.io/kubernetes/pkg/apis/core/v1/defaults.go`` for the fields pykueue serves
(``restartPolicy: Always``, ``dnsPolicy: ClusterFirst``, ``schedulerName: default-scheduler``,
``terminationGracePeriodSeconds: 30``, ``securityContext: {}``; per container
``terminationMessagePath``, ``terminationMessagePolicy: File``, ``imagePullPolicy`` from the image
tag, ``resources: {}``, port ``protocol: TCP``); validation covers the essential rules of
``ValidatePodTemplateSpec`` (containers present, names, images, ports, env, volumes and mounts,
tolerations, resource quantities and requests ≤ limits).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pykueue.api.quantity import Quantity, QuantityError
from pykueue.api.validation import (
    FieldError,
    Raw,
    duplicate,
    forbidden,
    generate_name_errors,
    idx,
    invalid,
    key,
    not_found,
    not_supported,
    required,
    validate_annotations,
    validate_labels,
)
from pykueue.kube.validation import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
)

NameCheck = Callable[[str], list[str]]

DEFAULT_TERMINATION_GRACE_PERIOD = 30
DEFAULT_SCHEDULER = "default-scheduler"
TERMINATION_MESSAGE_PATH = "/dev/termination-log"
QUANTITY_REGEX_MSG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_TOLERATION_OPERATORS = ("Equal", "Exists")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_PROTOCOLS = ("SCTP", "TCP", "UDP")


def mapping(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty dict (tolerates malformed input)."""
    return value if isinstance(value, dict) else {}


def sequence(value: Any) -> list[Any]:
    """``value`` if it is a list, else an empty list."""
    return value if isinstance(value, list) else []


# --- object metadata ---------------------------------------------------------------------------------


def validate_object_meta(
    obj: Mapping[str, Any],
    *,
    namespaced: bool,
    name_check: NameCheck = is_dns1123_subdomain,
    path: str = "metadata",
) -> list[FieldError]:
    """``ValidateObjectMeta``: name/generateName, namespace presence, labels and annotations."""
    meta = mapping(obj.get("metadata"))
    name, generate = meta.get("name") or "", meta.get("generateName") or ""
    errs = generate_name_errors(str(generate), name_check, path)
    if not name and not generate:
        errs.append(required(f"{path}.name", "name or generateName is required"))
    elif name:
        errs += [invalid(f"{path}.name", name, msg) for msg in name_check(str(name))]
    namespace = meta.get("namespace") or ""
    if namespaced and namespace:
        errs += [invalid(f"{path}.namespace", namespace, msg) for msg in is_dns1123_label(str(namespace))]
    elif not namespaced and namespace:
        errs.append(forbidden(f"{path}.namespace", "not allowed on this type"))
    errs += validate_labels(_str_dict(meta.get("labels")), f"{path}.labels")
    errs += validate_annotations(_str_dict(meta.get("annotations")), f"{path}.annotations")
    return errs


def _str_dict(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in mapping(value).items()}


# --- defaults ----------------------------------------------------------------------------------------


def default_pod_template(template: dict[str, Any]) -> None:
    """Apply the core/v1 PodTemplateSpec defaults in place."""
    spec = template.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", DEFAULT_SCHEDULER)
    spec.setdefault("terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD)
    spec.setdefault("securityContext", {})
    for field in ("initContainers", "containers"):
        for container in sequence(spec.get(field)):
            if isinstance(container, dict):
                default_container(container)


def default_container(container: dict[str, Any]) -> None:
    """Container defaults (termination message, pull policy, resources, port protocols)."""
    container.setdefault("terminationMessagePath", TERMINATION_MESSAGE_PATH)
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    image = container.get("image")
    if isinstance(image, str) and image:
        container.setdefault("imagePullPolicy", image_pull_policy(image))
    for port in sequence(container.get("ports")):
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def image_pull_policy(image: str) -> str:
    """``Always`` for ``:latest`` or untagged images (without digest), else ``IfNotPresent``."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


# --- validation ----------------------------------------------------------------------------------------


def validate_pod_template(template: Any, path: str) -> list[FieldError]:
    """Essential ``ValidatePodTemplateSpec`` rules for the template at ``path``."""
    template = mapping(template)
    meta = mapping(template.get("metadata"))
    errs = validate_labels(_str_dict(meta.get("labels")), f"{path}.metadata.labels")
    errs += validate_annotations(_str_dict(meta.get("annotations")), f"{path}.metadata.annotations")
    return errs + validate_pod_spec(mapping(template.get("spec")), f"{path}.spec")


def validate_pod_spec(spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """Essential ``ValidatePodSpec`` rules."""
    volumes, errs = _validate_volumes(sequence(spec.get("volumes")), f"{path}.volumes")
    containers = sequence(spec.get("containers"))
    if not containers:
        errs.append(required(f"{path}.containers"))
    names: set[str] = set()
    for field in ("initContainers", "containers"):
        for i, container in enumerate(sequence(spec.get(field))):
            errs += _validate_container(mapping(container), idx(f"{path}.{field}", i), names, volumes)
    policy = spec.get("restartPolicy")
    if policy not in ("Always", "OnFailure", "Never"):
        errs.append(not_supported(f"{path}.restartPolicy", policy, ("Always", "OnFailure", "Never")))
    errs += validate_tolerations([mapping(t) for t in sequence(spec.get("tolerations"))], f"{path}.tolerations")
    selector = _str_dict(spec.get("nodeSelector"))
    errs += validate_labels(selector, f"{path}.nodeSelector")
    if "resources" in spec:
        errs += validate_resources(mapping(spec.get("resources")), f"{path}.resources")
    return errs


def _validate_volumes(volumes: Sequence[Any], path: str) -> tuple[set[str], list[FieldError]]:
    names: set[str] = set()
    errs: list[FieldError] = []
    for i, volume in enumerate(volumes):
        name = mapping(volume).get("name") or ""
        p = f"{idx(path, i)}.name"
        if not name:
            errs.append(required(p))
        elif name in names:
            errs.append(duplicate(p, name))
        else:
            errs += [invalid(p, name, msg) for msg in is_dns1123_label(str(name))]
        names.add(str(name))
    return names, errs


def _validate_container(
    container: Mapping[str, Any], path: str, names: set[str], volumes: set[str]
) -> list[FieldError]:
    errs: list[FieldError] = []
    name = container.get("name") or ""
    if not name:
        errs.append(required(f"{path}.name"))
    elif name in names:
        errs.append(duplicate(f"{path}.name", name))
    else:
        errs += [invalid(f"{path}.name", name, msg) for msg in is_dns1123_label(str(name))]
    names.add(str(name))
    if not container.get("image"):
        errs.append(required(f"{path}.image"))
    errs += _validate_ports(sequence(container.get("ports")), f"{path}.ports")
    for i, env in enumerate(sequence(container.get("env"))):
        if not mapping(env).get("name"):
            errs.append(required(f"{idx(f'{path}.env', i)}.name"))
    errs += _validate_mounts(sequence(container.get("volumeMounts")), f"{path}.volumeMounts", volumes)
    if "resources" in container:
        errs += validate_resources(mapping(container.get("resources")), f"{path}.resources")
    return errs


def _validate_ports(ports: Sequence[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, port in enumerate(ports):
        p, port = idx(path, i), mapping(port)
        number = port.get("containerPort")
        if number is None:
            errs.append(required(f"{p}.containerPort"))
        elif not isinstance(number, int) or not 1 <= number <= 65535:
            errs.append(invalid(f"{p}.containerPort", number, "must be between 1 and 65535, inclusive"))
        protocol = port.get("protocol", "TCP")
        if protocol not in _PROTOCOLS:
            errs.append(not_supported(f"{p}.protocol", protocol, _PROTOCOLS))
    return errs


def _validate_mounts(mounts: Sequence[Any], path: str, volumes: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, mount in enumerate(mounts):
        p, mount = idx(path, i), mapping(mount)
        name = mount.get("name") or ""
        if not name:
            errs.append(required(f"{p}.name"))
        elif name not in volumes:
            errs.append(not_found(f"{p}.name", name))
        if not mount.get("mountPath"):
            errs.append(required(f"{p}.mountPath"))
    return errs


def validate_tolerations(tolerations: Sequence[Mapping[str, Any]], path: str) -> list[FieldError]:
    """``ValidateTolerations``, in upstream's order of checks."""
    errs: list[FieldError] = []
    for i, toleration in enumerate(tolerations):
        errs += _validate_toleration(toleration, idx(path, i))
    return errs


def _validate_toleration(toleration: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    toleration_key = str(toleration.get("key") or "")
    operator = str(toleration.get("operator") or "")
    effect = str(toleration.get("effect") or "")
    value = str(toleration.get("value") or "")
    if toleration_key:
        errs += [invalid(f"{path}.key", toleration_key, msg) for msg in is_qualified_name(toleration_key)]
    if not toleration_key and operator != "Exists":
        errs.append(
            invalid(
                f"{path}.operator",
                operator,
                'operator must be Exists when `key` is empty, which means "match all values and all keys"',
            )
        )
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        errs.append(invalid(f"{path}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
    if operator in ("Equal", ""):
        problems = is_valid_label_value(value)
        if problems:
            errs.append(invalid(f"{path}.operator", value, ";".join(problems)))
    elif operator == "Exists":
        if value:
            errs.append(
                invalid(f"{path}.operator", go_toleration(toleration), "value must be empty when `operator` is 'Exists'")
            )
    else:
        errs.append(not_supported(f"{path}.operator", operator, _TOLERATION_OPERATORS))
    if effect and effect not in _TAINT_EFFECTS:
        errs.append(not_supported(f"{path}.effect", effect, _TAINT_EFFECTS))
    return errs


def go_toleration(toleration: Mapping[str, Any]) -> Raw:
    """Go's ``%#v`` of a ``core.Toleration`` (a set ``tolerationSeconds`` prints a pointer address)."""
    fields = ", ".join(
        f"{name}:{_go_quote(str(toleration.get(field) or ''))}"
        for name, field in (("Key", "key"), ("Operator", "operator"), ("Value", "value"), ("Effect", "effect"))
    )
    seconds = "(nil)" if toleration.get("tolerationSeconds") is None else "(0xc000000000)"
    return Raw(f"core.Toleration{{{fields}, TolerationSeconds:(*int64){seconds}}}")


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def validate_resources(resources: Mapping[str, Any], path: str) -> list[FieldError]:
    """Quantities parse and are non-negative; every request is ≤ its limit."""
    errs: list[FieldError] = []
    parsed: dict[str, dict[str, Quantity]] = {}
    for section in ("limits", "requests"):
        parsed[section] = {}
        for name, value in mapping(resources.get(section)).items():
            p = key(f"{path}.{section}", name)
            try:
                quantity = Quantity.parse(value)
            except (QuantityError, TypeError, ValueError):
                errs.append(invalid(p, value, QUANTITY_REGEX_MSG))
                continue
            if quantity.value < 0:
                errs.append(invalid(p, value, "must be greater than or equal to 0"))
            parsed[section][name] = quantity
    for name, request in parsed["requests"].items():
        limit = parsed["limits"].get(name)
        if limit is not None and request.value > limit.value:
            errs.append(
                invalid(  # upstream names the requests map, not the entry (reqPath)
                    f"{path}.requests",
                    str(request),
                    f"must be less than or equal to {name} limit of {limit}",
                )
            )
    return errs
