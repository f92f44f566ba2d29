"""Events: ``events.k8s.io/v1`` schema, its mapping to ``core/v1`` Event, and event validation.

Both APIs serve the same stored objects (core/v1 is the storage form, as in Kubernetes): Kueue
records through ``events.k8s.io/v1`` and ``kubectl describe`` reads ``core/v1``. The field
mapping is Kubernetes' conversion: ``regarding``↔``involvedObject``, ``note``↔``message``,
``reportingController``↔``reportingComponent``, ``deprecatedSource``↔``source``,
``deprecatedFirstTimestamp``/``deprecatedLastTimestamp``/``deprecatedCount``↔``firstTimestamp``/
``lastTimestamp``/``count``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api.validation import FieldError, invalid, required
from pykueue.apiserver.builtin import core, meta
from pykueue.apiserver.builtin.pods import mapping, validate_object_meta
from pykueue.apiserver.builtin.schema import define, integer, obj, ref, string
from pykueue.kube.validation import is_dns1123_subdomain, is_qualified_name

EVENTS_V1_EVENT = "io.k8s.api.events.v1.Event"
EVENTS_API_VERSION = "events.k8s.io/v1"
CORE_API_VERSION = "v1"
REPORTING_INSTANCE_LIMIT = 128
ACTION_LIMIT = 128
REASON_LIMIT = 128
NOTE_LIMIT = 1024
EVENT_TYPES = ("Normal", "Warning")

_CORE_TO_EVENTS = {
    "involvedObject": "regarding",
    "message": "note",
    "reportingComponent": "reportingController",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
}
_EVENTS_TO_CORE = {v: k for k, v in _CORE_TO_EVENTS.items()}
_CORE_ORDER = (
    "apiVersion",
    "kind",
    "metadata",
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "type",
    "eventTime",
    "series",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
)
_EVENTS_ORDER = (
    "apiVersion",
    "kind",
    "metadata",
    "eventTime",
    "series",
    "reportingController",
    "reportingInstance",
    "action",
    "reason",
    "regarding",
    "related",
    "note",
    "type",
    "deprecatedSource",
    "deprecatedFirstTimestamp",
    "deprecatedLastTimestamp",
    "deprecatedCount",
)

define(
    EVENTS_V1_EVENT,
    obj(
        {
            "apiVersion": meta.api_version_field(),
            "kind": meta.kind_field(),
            "metadata": meta.metadata_field(),
            "eventTime": ref(
                meta.MICRO_TIME, "eventTime is the time when this Event was first observed. It is required."
            ),
            "series": obj(
                {
                    "count": integer(
                        "count is the number of occurrences in this series up to the last heartbeat time."
                    ),
                    "lastObservedTime": ref(
                        meta.MICRO_TIME,
                        "lastObservedTime is the time when last Event from the series was seen before last heartbeat.",
                    ),
                },
                "series is data about the Event series this event represents or nil if it's a singleton Event.",
                required_fields=("count", "lastObservedTime"),
            ),
            "reportingController": string(
                "reportingController is the name of the controller that emitted this Event."
            ),
            "reportingInstance": string("reportingInstance is the ID of the controller instance."),
            "action": string("action is what action was taken/failed regarding to the regarding object."),
            "reason": string("reason is why the action was taken. It is human-readable."),
            "regarding": ref(
                core.OBJECT_REFERENCE, "regarding contains the object this Event is about.", default={}
            ),
            "related": ref(
                core.OBJECT_REFERENCE, "related is the optional secondary object for more complex actions."
            ),
            "note": string("note is a human-readable description of the status of this operation."),
            "type": string(
                "type is the type of this event (Normal, Warning), new types could be added in the future."
            ),
            "deprecatedSource": ref(
                core.EVENT_SOURCE,
                "deprecatedSource is the deprecated field assuring backward compatibility with core.v1 Event type.",
                default={},
            ),
            "deprecatedFirstTimestamp": ref(
                meta.TIME,
                "deprecatedFirstTimestamp is the deprecated field assuring backward compatibility with core.v1 Event type.",
            ),
            "deprecatedLastTimestamp": ref(
                meta.TIME,
                "deprecatedLastTimestamp is the deprecated field assuring backward compatibility with core.v1 Event type.",
            ),
            "deprecatedCount": integer(
                "deprecatedCount is the deprecated field assuring backward compatibility with core.v1 Event type."
            ),
        },
        "Event is a report of an event somewhere in the cluster.",
        required_fields=("eventTime",),
    ),
    gvk=("events.k8s.io", "v1", "Event"),
)


def _renamed(
    event: Mapping[str, Any], names: Mapping[str, str], order: tuple[str, ...], api_version: str
) -> dict[str, Any]:
    renamed = {names.get(name, name): value for name, value in event.items()} if names else dict(event)
    renamed["apiVersion"] = api_version
    renamed["kind"] = "Event"
    head = {name: renamed[name] for name in order if name in renamed}
    return head | {name: value for name, value in renamed.items() if name not in head}


def to_core(event: Mapping[str, Any]) -> dict[str, Any]:
    """An Event of either API as a ``core/v1`` Event (the storage form)."""
    if event.get("apiVersion") == EVENTS_API_VERSION:
        return _renamed(event, _EVENTS_TO_CORE, _CORE_ORDER, CORE_API_VERSION)
    return _renamed(event, {}, _CORE_ORDER, CORE_API_VERSION)


def to_events_v1(event: Mapping[str, Any]) -> dict[str, Any]:
    """An Event of either API as an ``events.k8s.io/v1`` Event."""
    if event.get("apiVersion") == EVENTS_API_VERSION:
        return _renamed(event, {}, _EVENTS_ORDER, EVENTS_API_VERSION)
    return _renamed(event, _CORE_TO_EVENTS, _EVENTS_ORDER, EVENTS_API_VERSION)


# --- validation (core/v1 form) ---------------------------------------------------------------------------


def validate_core_event(event: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """``ValidateEventCreate`` for requests through ``core/v1`` (legacy rules only)."""
    return _legacy_rules(_core_for_rules(event), "reportingComponent")


def validate_events_v1_event(event: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """``ValidateEventCreate`` for requests through ``events.k8s.io/v1`` (legacy + strict rules)."""
    ev = _core_for_rules(event)
    errs = _legacy_rules(ev, "reportingController")
    errs += validate_object_meta(ev, namespaced=True)
    if not ev.get("eventTime"):
        errs.append(required("eventTime"))
    if ev.get("type") not in EVENT_TYPES:
        errs.append(invalid("type", "", f"has invalid value: {ev.get('type') or ''}"))
    for field in ("firstTimestamp", "lastTimestamp"):
        if ev.get(field):
            errs.append(invalid(field, "", "needs to be unset"))
    if ev.get("count"):
        errs.append(invalid("count", "", "needs to be unset"))
    source = mapping(ev.get("source"))
    if source.get("component") or source.get("host"):
        errs.append(invalid("source", "", "needs to be unset"))
    return errs


def _core_for_rules(event: dict[str, Any]) -> Mapping[str, Any]:
    """What the rules read of ``event`` in the core/v1 form: the event itself when it is one already
    (what the API server validates: the storage form), since :func:`to_core` would only reorder its
    members and set its ``kind``, which no rule reads."""
    return event if event.get("apiVersion") == CORE_API_VERSION else to_core(event)


def _legacy_rules(ev: Mapping[str, Any], controller_field: str) -> list[FieldError]:
    namespace = str(mapping(ev.get("metadata")).get("namespace") or "")
    involved_ns = str(mapping(ev.get("involvedObject")).get("namespace") or "")
    errs: list[FieldError] = []
    if not ev.get("eventTime"):
        if (involved_ns and namespace != involved_ns) or (
            not involved_ns and namespace not in ("", "default")
        ):
            errs.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            errs.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
        errs += _new_style_rules(ev, controller_field)
    errs += [invalid("namespace", namespace, msg) for msg in is_dns1123_subdomain(namespace)]
    return errs


def _new_style_rules(ev: Mapping[str, Any], controller_field: str) -> list[FieldError]:
    errs: list[FieldError] = []
    controller = str(ev.get("reportingComponent") or "")
    if not controller:
        errs.append(required(controller_field))
    errs += [invalid(controller_field, controller, msg) for msg in is_qualified_name(controller)]
    for field, limit in (
        ("reportingInstance", REPORTING_INSTANCE_LIMIT),
        ("action", ACTION_LIMIT),
        ("reason", REASON_LIMIT),
    ):
        value = str(ev.get(field) or "")
        if not value:
            errs.append(required(field))
        elif len(value) > limit:
            errs.append(invalid(field, "", f"can have at most {limit} characters"))
    if len(str(ev.get("message") or "")) > NOTE_LIMIT:
        errs.append(invalid("message", "", f"can have at most {NOTE_LIMIT} characters"))
    return errs


def event_source(ev: Mapping[str, Any]) -> str:
    """The ``source`` selectable field: ``source.component`` or else the reporting controller."""
    return str(mapping(ev.get("source")).get("component") or ev.get("reportingComponent") or "")
