"""``scheduling.k8s.io/v1`` PriorityClass: schema, defaults and validation.

Validation follows ``ValidatePriorityClass`` / ``ValidatePriorityClassUpdate``: names with the
``system-`` prefix are reserved for the two system classes, user-defined values are at most
1000000000, ``value`` and ``preemptionPolicy`` are immutable. (The "only one globalDefault"
rule is an admission plugin that needs the other objects; it is not enforced here.)
"""

from __future__ import annotations

from typing import Any

from pykueue.api.validation import FIELD_IMMUTABLE_MSG, FieldError, forbidden, invalid, not_supported
from pykueue.apiserver.builtin import meta
from pykueue.apiserver.builtin.pods import validate_object_meta
from pykueue.apiserver.builtin.schema import boolean, define, integer, obj, string

PRIORITY_CLASS = "io.k8s.api.scheduling.v1.PriorityClass"
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PREFIX = "system-"
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")

define(
    PRIORITY_CLASS,
    obj(
        {
            "apiVersion": meta.api_version_field(),
            "kind": meta.kind_field(),
            "metadata": meta.metadata_field(),
            "value": integer("value represents the integer value of this priority class."),
            "globalDefault": boolean(
                "globalDefault specifies whether this PriorityClass should be considered as the default "
                "priority for pods that do not have any priority class."
            ),
            "description": string(
                "description is an arbitrary string that usually provides guidelines on when this priority class should be used."
            ),
            "preemptionPolicy": string(
                "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, "
                "PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
                enum=PREEMPTION_POLICIES,
            ),
        },
        "PriorityClass defines mapping from a priority class name to the priority integer value.",
        required_fields=("value",),
    ),
    gvk=("scheduling.k8s.io", "v1", "PriorityClass"),
)


def default_priority_class(pc: dict[str, Any]) -> None:
    """``preemptionPolicy`` defaults to ``PreemptLowerPriority``."""
    if not pc.get("preemptionPolicy"):
        pc["preemptionPolicy"] = "PreemptLowerPriority"


def validate_priority_class(pc: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """Create and update rules of a PriorityClass."""
    errs = validate_object_meta(pc, namespaced=False)
    name = str((pc.get("metadata") or {}).get("name") or "")
    value = pc.get("value")
    if name.startswith(SYSTEM_PREFIX):
        problem = _system_class_problem(name, value)
        if problem:
            errs.append(
                forbidden(
                    "metadata.name",
                    f"priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use only. error: {problem}",
                )
            )
    elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(
            forbidden(
                "value",
                f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    policy = pc.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        errs.append(not_supported("preemptionPolicy", policy, PREEMPTION_POLICIES))
    if old is not None:
        if value != old.get("value"):
            errs.append(forbidden("value", "may not be changed in an update."))
        if policy != old.get("preemptionPolicy"):
            errs.append(invalid("preemptionPolicy", policy, FIELD_IMMUTABLE_MSG))
    return errs


def _system_class_problem(name: str, value: Any) -> str:
    expected = SYSTEM_PRIORITY_CLASSES.get(name)
    if expected is None:
        return f"{name} is not a known system priority class"
    if value != expected:
        return f"value of {name} PriorityClass must be {expected}"
    return ""
