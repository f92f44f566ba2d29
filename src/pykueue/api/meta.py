"""Object metadata, conditions and time, shared by every kind.

Conditions follow Kubernetes ``meta.SetStatusCondition`` exactly (apimachinery ``pkg/api/meta/conditions.go``):
``lastTransitionTime`` moves only when ``status`` changes; reason, message and
observedGeneration are always overwritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

Time = datetime
"""All timestamps are timezone-aware UTC datetimes with whole-second precision."""

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_time(value: datetime) -> datetime:
    """Normalise to UTC whole seconds, as metav1.Time serialises."""
    if value.tzinfo is UTC and not value.microsecond:
        return value  # already normal (the common case: the scheduler's clock, stored times)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).replace(microsecond=0)


def parse_time(text: str) -> datetime:
    """Parse an RFC3339 timestamp (``2024-01-02T03:04:05Z``)."""
    return to_time(msgspec.convert(text, datetime))


_FORMATTED: dict[datetime, str] = {}
_FORMATTED_MAX = 4096


def format_time(value: datetime) -> str:
    """metav1.Time's text form: RFC 3339, UTC, whole seconds (``2024-01-02T03:04:05Z``)."""
    # Every timestamp of every object written is formatted, and the same few repeat (a condition
    # keeps its lastTransitionTime, a scheduling cycle shares its time): remembered, bounded.
    # isoformat of a UTC whole-second time is "YYYY-MM-DDTHH:MM:SS+00:00": a third of strftime's
    # cost, and always a 4-digit year as RFC 3339 wants.
    text = _FORMATTED.get(value)
    if text is None:
        if len(_FORMATTED) >= _FORMATTED_MAX:
            _FORMATTED.clear()
        text = _FORMATTED[value] = to_time(value).isoformat()[:19] + "Z"
    return text


def add_seconds(value: datetime, seconds: float) -> datetime:
    return value + timedelta(seconds=seconds)


class OwnerReference(msgspec.Struct, rename="camel", omit_defaults=True):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(msgspec.Struct, rename="camel", omit_defaults=True):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    finalizers: list[str] = []
    owner_references: list[OwnerReference] = []
    managed_fields: list[dict[str, Any]] = []


class Condition(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """``metav1.Condition`` in upstream's field order; ``reason`` and ``message`` always serialised."""

    type: str
    status: str
    observed_generation: int = 0
    last_transition_time: datetime = EPOCH
    reason: str
    message: str


CONDITION_TRUE = "True"
CONDITION_FALSE = "False"
CONDITION_UNKNOWN = "Unknown"


def find_condition(conditions: list[Condition], ctype: str) -> Condition | None:
    for c in conditions:
        if c.type == ctype:
            return c
    return None


def is_condition_true(conditions: list[Condition], ctype: str) -> bool:
    c = find_condition(conditions, ctype)
    return c is not None and c.status == CONDITION_TRUE


def set_status_condition(conditions: list[Condition], new: Condition, now: datetime) -> bool:
    """Kubernetes ``meta.SetStatusCondition``; returns whether anything changed."""
    for i, existing in enumerate(conditions):
        if existing.type != new.type:
            continue
        changed = False
        if existing.status != new.status:
            existing = msgspec.structs.replace(
                existing,
                status=new.status,
                last_transition_time=new.last_transition_time
                if new.last_transition_time != EPOCH
                else to_time(now),
            )
            changed = True
        if (
            existing.reason != new.reason
            or existing.message != new.message
            or existing.observed_generation != new.observed_generation
        ):
            existing = msgspec.structs.replace(
                existing,
                reason=new.reason,
                message=new.message,
                observed_generation=new.observed_generation,
            )
            changed = True
        conditions[i] = existing
        return changed
    if new.last_transition_time == EPOCH:
        new = msgspec.structs.replace(new, last_transition_time=to_time(now))
    conditions.append(new)
    return True


def remove_condition(conditions: list[Condition], ctype: str) -> bool:
    for i, c in enumerate(conditions):
        if c.type == ctype:
            del conditions[i]
            return True
    return False


CONDITION_MESSAGE_LIMIT = 32768
EVENT_NOTE_LIMIT = 1024

# Event types (k8s.io/api/core/v1 EventTypeNormal / EventTypeWarning): the one definition.
NORMAL = "Normal"
WARNING = "Warning"


def truncate_message(message: str, limit: int = CONDITION_MESSAGE_LIMIT) -> str:
    """Keep the first ``limit-4`` bytes and append `` ...`` when over ``limit`` bytes."""
    raw = message.encode()
    if len(raw) <= limit:
        return message
    return raw[: limit - 4].decode(errors="ignore") + " ..."


class LabelSelectorRequirement(msgspec.Struct, rename="camel", omit_defaults=True):
    key: str
    operator: str
    values: list[str] = []


class LabelSelector(msgspec.Struct, rename="camel", omit_defaults=True):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``metav1.GetControllerOf`` on a JSON object: its first owner reference with ``controller: true``."""
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    for ref in refs or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def label_selector_matches(selector: LabelSelector, labels: dict[str, str]) -> bool:
    """Standard label-selector semantics (an empty selector matches everything)."""
    for k, v in selector.match_labels.items():
        if labels.get(k) != v:
            return False
    for req in selector.match_expressions:
        present = req.key in labels
        if req.operator == "In":
            if not present or labels[req.key] not in req.values:
                return False
        elif req.operator == "NotIn":
            if present and labels[req.key] in req.values:
                return False
        elif req.operator == "Exists":
            if not present:
                return False
        elif req.operator == "DoesNotExist":
            if present:
                return False
        else:
            return False
    return True
