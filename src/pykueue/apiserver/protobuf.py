"""Decoding Kubernetes protobuf request bodies (``application/vnd.kubernetes.protobuf``) to JSON dicts.

client-go's typed clients — and therefore ``kubectl create namespace|job|priorityclass`` — send
built-in objects as protobuf: the 4-byte magic ``k8s\\x00`` followed by a ``runtime.Unknown``
(``typeMeta``, ``raw`` bytes of the object message). The server answers in JSON (every response
is JSON), but it has to read these bodies.

The decoder is table-driven over the ``generated.proto`` field numbers of the built-in kinds
pykueue serves (Namespace, Job with its pod template, PriorityClass, Lease, core and events.k8s.io
Events, PodTemplate, LimitRange, RuntimeClass) and ``DeleteOptions``. Go's protobuf encoding writes every non-pointer field,
so zero scalars (``""``, ``0``, ``false``) are dropped unless the Go field is a pointer (flag
``p``), which is what the JSON encoding (``omitempty``) would have sent. A non-empty field the
tables do not know is refused (415) rather than silently lost.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
_ZERO_TIME_SECONDS = -62135596800


class ProtobufError(ValueError):
    """A body that is not a Kubernetes protobuf envelope pykueue can decode.

    ``unsupported`` tells a well-formed body using types or fields pykueue does not decode (415)
    from a malformed one (400).
    """

    def __init__(self, message: str, *, unsupported: bool = False) -> None:
        super().__init__(message)
        self.unsupported = unsupported


@dataclass(frozen=True)
class Field:
    """One message field: JSON name, value kind, repeated, pointer (zero kept), inlined."""

    name: str
    kind: str
    repeated: bool = False
    pointer: bool = False
    inline: bool = False


# field number, JSON name, kind ["*" prefix = repeated], flags (p = pointer: keep zero values;
# i = inline: the message's fields are merged into the parent). Kinds: s string, i integer,
# b bool, t Time, mt MicroTime, q Quantity, raw FieldsV1 (JSON bytes), map:<kind>, or a message.
_TABLES: dict[str, str] = {
    "TypeMeta": "1 apiVersion s;2 kind s",
    "Unknown": "1 typeMeta TypeMeta;2 raw bytes;3 contentEncoding s;4 contentType s",
    "ObjectMeta": (
        "1 name s;2 generateName s;3 namespace s;4 selfLink s;5 uid s;6 resourceVersion s;7 generation i;"
        "8 creationTimestamp t;9 deletionTimestamp t;10 deletionGracePeriodSeconds i p;11 labels map:s;"
        "12 annotations map:s;13 ownerReferences *OwnerReference;14 finalizers *s;17 managedFields *ManagedFieldsEntry"
    ),
    "OwnerReference": "1 kind s;3 name s;4 uid s;5 apiVersion s;6 controller b p;7 blockOwnerDeletion b p",
    "ManagedFieldsEntry": "1 manager s;2 operation s;3 apiVersion s;4 time t;6 fieldsType s;7 fieldsV1 raw;8 subresource s",
    "LabelSelector": "1 matchLabels map:s;2 matchExpressions *LabelSelectorRequirement",
    "LabelSelectorRequirement": "1 key s;2 operator s;3 values *s",
    "DeleteOptions": (
        "1 gracePeriodSeconds i p;2 preconditions Preconditions;3 orphanDependents b p;4 propagationPolicy s;5 dryRun *s"
    ),
    "Preconditions": "1 uid s p;2 resourceVersion s p",
    # core/v1
    "Namespace": "1 metadata ObjectMeta;2 spec NamespaceSpec;3 status NamespaceStatus",
    "NamespaceSpec": "1 finalizers *s",
    "NamespaceStatus": "1 phase s;2 conditions *NamespaceCondition",
    "NamespaceCondition": "1 type s;2 status s;4 lastTransitionTime t;5 reason s;6 message s",
    "PodTemplate": "1 metadata ObjectMeta;2 template PodTemplateSpec",
    "LimitRange": "1 metadata ObjectMeta;2 spec LimitRangeSpec",
    "LimitRangeSpec": "1 limits *LimitRangeItem",
    "LimitRangeItem": (
        "1 type s;2 max map:q;3 min map:q;4 default map:q;5 defaultRequest map:q;6 maxLimitRequestRatio map:q"
    ),
    "PodTemplateSpec": "1 metadata ObjectMeta;2 spec PodSpec",
    "PodSpec": (
        "2 containers *Container;3 restartPolicy s;4 terminationGracePeriodSeconds i p;5 activeDeadlineSeconds i p;"
        "6 dnsPolicy s;7 nodeSelector map:s;8 serviceAccountName s;9 serviceAccount s;10 nodeName s;"
        "11 hostNetwork b;12 hostPID b;13 hostIPC b;15 imagePullSecrets *LocalObjectReference;16 hostname s;"
        "17 subdomain s;19 schedulerName s;20 initContainers *Container;21 automountServiceAccountToken b p;"
        "22 tolerations *Toleration;24 priorityClassName s;25 priority i p;27 shareProcessNamespace b p;"
        "29 runtimeClassName s p;30 enableServiceLinks b p;31 preemptionPolicy s p;32 overhead map:q;"
        "35 setHostnameAsFQDN b p;37 hostUsers b p"
    ),
    "Container": (
        "1 name s;2 image s;3 command *s;4 args *s;5 workingDir s;6 ports *ContainerPort;7 env *EnvVar;"
        "8 resources ResourceRequirements;9 volumeMounts *VolumeMount;13 terminationMessagePath s;"
        "14 imagePullPolicy s;16 stdin b;17 stdinOnce b;18 tty b;20 terminationMessagePolicy s;24 restartPolicy s p"
    ),
    "ContainerPort": "1 name s;2 hostPort i;3 containerPort i;4 protocol s;5 hostIP s",
    "EnvVar": "1 name s;2 value s;3 valueFrom EnvVarSource",
    "EnvVarSource": "1 fieldRef ObjectFieldSelector",
    "ObjectFieldSelector": "1 apiVersion s;2 fieldPath s",
    "ResourceRequirements": "1 limits map:q;2 requests map:q",
    "VolumeMount": "1 name s;2 readOnly b;3 mountPath s;4 subPath s;5 mountPropagation s p;6 subPathExpr s",
    "LocalObjectReference": "1 name s",
    "Toleration": "1 key s;2 operator s;3 value s;4 effect s;5 tolerationSeconds i p",
    "Event": (
        "1 metadata ObjectMeta;2 involvedObject ObjectReference;3 reason s;4 message s;5 source EventSource;"
        "6 firstTimestamp t;7 lastTimestamp t;8 count i;9 type s;10 eventTime mt;11 series EventSeries;12 action s;"
        "13 related ObjectReference;14 reportingComponent s;15 reportingInstance s"
    ),
    "ObjectReference": "1 kind s;2 namespace s;3 name s;4 uid s;5 apiVersion s;6 resourceVersion s;7 fieldPath s",
    "EventSource": "1 component s;2 host s",
    "EventSeries": "1 count i;2 lastObservedTime mt",
    # events.k8s.io/v1
    "EventsV1Event": (
        "1 metadata ObjectMeta;2 eventTime mt;3 series EventsV1EventSeries;4 reportingController s;"
        "5 reportingInstance s;6 action s;7 reason s;8 regarding ObjectReference;9 related ObjectReference;"
        "10 note s;11 type s;12 deprecatedSource EventSource;13 deprecatedFirstTimestamp t;"
        "14 deprecatedLastTimestamp t;15 deprecatedCount i"
    ),
    "EventsV1EventSeries": "1 count i;2 lastObservedTime mt",
    # batch/v1
    "Job": "1 metadata ObjectMeta;2 spec JobSpec;3 status JobStatus",
    "JobSpec": (
        "1 parallelism i p;2 completions i p;3 activeDeadlineSeconds i p;4 selector LabelSelector;"
        "5 manualSelector b p;6 template PodTemplateSpec;7 backoffLimit i p;8 ttlSecondsAfterFinished i p;"
        "9 completionMode s p;10 suspend b p;12 backoffLimitPerIndex i p;13 maxFailedIndexes i p;"
        "14 podReplacementPolicy s p;15 managedBy s p"
    ),
    "JobStatus": (
        "1 conditions *JobCondition;2 startTime t;3 completionTime t;4 active i;5 succeeded i;6 failed i;"
        "7 completedIndexes s;9 ready i p;10 failedIndexes s p;11 terminating i p"
    ),
    "JobCondition": "1 type s;2 status s;3 lastProbeTime t;4 lastTransitionTime t;5 reason s;6 message s",
    # node.k8s.io/v1
    "RuntimeClass": "1 metadata ObjectMeta;2 handler s;3 overhead Overhead;4 scheduling Scheduling",
    "Overhead": "1 podFixed map:q",
    "Scheduling": "1 nodeSelector map:s;2 tolerations *Toleration",
    # scheduling.k8s.io/v1, coordination.k8s.io/v1
    "PriorityClass": "1 metadata ObjectMeta;2 value i p;3 globalDefault b;4 description s;5 preemptionPolicy s p",
    "Lease": "1 metadata ObjectMeta;2 spec LeaseSpec",
    "LeaseSpec": (
        "1 holderIdentity s p;2 leaseDurationSeconds i p;3 acquireTime mt;4 renewTime mt;5 leaseTransitions i p;"
        "6 strategy s p;7 preferredHolder s p"
    ),
}

ROOTS: dict[tuple[str, str], str] = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "Event"): "Event",
    ("v1", "PodTemplate"): "PodTemplate",
    ("v1", "LimitRange"): "LimitRange",
    ("node.k8s.io/v1", "RuntimeClass"): "RuntimeClass",
    ("batch/v1", "Job"): "Job",
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
    ("coordination.k8s.io/v1", "Lease"): "Lease",
    ("events.k8s.io/v1", "Event"): "EventsV1Event",
}
"""The message of each (apiVersion, kind) a protobuf body may carry."""


def _parse_tables(tables: dict[str, str]) -> dict[str, dict[int, Field]]:
    out: dict[str, dict[int, Field]] = {}
    for message, spec in tables.items():
        fields: dict[int, Field] = {}
        for entry in spec.split(";"):
            number, name, kind, *flags = entry.split()
            repeated = kind.startswith("*")
            fields[int(number)] = Field(name, kind.lstrip("*"), repeated, "p" in flags, "i" in flags)
        out[message] = fields
    return out


MESSAGES = _parse_tables(_TABLES)


# --- wire format ------------------------------------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) triples: ints for varints, bytes for length-delimited."""
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if number == 0:
            raise ProtobufError("field number 0")
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ProtobufError("truncated length-delimited field")
            value, pos = data[pos : pos + length], pos + length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > len(data):
                raise ProtobufError("truncated fixed-width field")
            value, pos = int.from_bytes(data[pos : pos + size], "little"), pos + size
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


# --- values -----------------------------------------------------------------------------------------


def _time(raw: bytes, micro: bool) -> str | None:
    seconds = nanos = 0
    for number, wire, value in _fields(raw):
        if wire != 0:
            raise ProtobufError("malformed timestamp")
        if number == 1:
            seconds = _signed(value)
        elif number == 2:
            nanos = _signed(value)
    if not raw or seconds == _ZERO_TIME_SECONDS:
        return None
    try:
        moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=nanos // 1000 if micro else 0)
    except (OverflowError, OSError, ValueError):
        raise ProtobufError("timestamp out of range") from None
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _quantity(raw: bytes) -> str:
    for number, wire, value in _fields(raw):
        if number == 1 and wire == 2:
            return _text(value)
    return "0"


def _text(value: Any) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a length-delimited string")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtobufError("invalid UTF-8 in a string field") from None


def _map_entry(raw: bytes, value_kind: str) -> tuple[str, Any]:
    key, val = "", None
    for number, _, value in _fields(raw):
        if number == 1:
            key = _text(value)
        elif number == 2:
            val = _scalar(value_kind, value)
    if val is None:
        val = "" if value_kind == "s" else "0"
    return key, val


def _scalar(kind: str, value: Any) -> Any:
    """A non-message value of ``kind`` (``value`` as read off the wire)."""
    decoders: dict[str, Callable[[Any], Any]] = {
        "s": _text,
        "i": lambda v: _signed(_int(v)),
        "b": lambda v: bool(_int(v)),
        "t": lambda v: _time(_bytes(v), False),
        "mt": lambda v: _time(_bytes(v), True),
        "q": lambda v: _quantity(_bytes(v)),
        "bytes": lambda v: base64.b64encode(_bytes(v)).decode(),
        "raw": lambda v: _raw_json(_bytes(v)),
    }
    if kind in decoders:
        return decoders[kind](value)
    return decode_message(kind, _bytes(value))


def _int(value: Any) -> int:
    if not isinstance(value, int):
        raise ProtobufError("expected a varint")
    return value


def _bytes(value: Any) -> bytes:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a length-delimited field")
    return value


def _raw_json(value: bytes) -> Any:
    try:
        return msgspec.json.decode(value) if value else {}
    except msgspec.DecodeError:
        raise ProtobufError("FieldsV1 is not JSON") from None


def _is_zero(value: Any) -> bool:
    return value is None or value == "" or value is False or (value == 0 and not isinstance(value, bool))


def _empty_wire(wire: int, value: Any) -> bool:
    return (wire == 0 and value == 0) or (wire == 2 and value == b"")


def decode_message(name: str, data: bytes) -> dict[str, Any]:
    """Decode one message of the tables into its JSON form."""
    table = MESSAGES.get(name)
    if table is None:
        raise ProtobufError(f"no protobuf schema for {name}")
    out: dict[str, Any] = {}
    for number, wire, value in _fields(data):
        fld = table.get(number)
        if fld is None:
            if _empty_wire(wire, value):
                continue  # a zero-valued field pykueue does not model: nothing is lost
            raise ProtobufError(
                f"field {number} of {name} is not supported in protobuf; send JSON", unsupported=True
            )
        _set(out, fld, wire, value)
    return out


def _set(out: dict[str, Any], fld: Field, wire: int, value: Any) -> None:
    if fld.kind.startswith("map:"):
        key, val = _map_entry(_bytes(value), fld.kind[4:])
        out.setdefault(fld.name, {})[key] = val
        return
    if fld.repeated and fld.kind in ("i", "b") and wire == 2:  # packed repeated scalars
        items = out.setdefault(fld.name, [])
        pos, data = 0, value
        while pos < len(data):
            item, pos = _varint(data, pos)
            items.append(_scalar(fld.kind, item))
        return
    decoded = _scalar(fld.kind, value)
    if fld.repeated:
        out.setdefault(fld.name, []).append(decoded)
    elif fld.inline and isinstance(decoded, dict):
        out.update(decoded)
    elif decoded is None or (_is_zero(decoded) and not fld.pointer):
        out.pop(fld.name, None)
    else:
        out[fld.name] = decoded


def decode_object(body: bytes) -> dict[str, Any]:
    """Decode a ``k8s\\x00`` + ``runtime.Unknown`` body into a JSON object with apiVersion and kind."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic number")
    envelope = decode_message("Unknown", body[len(MAGIC) :])
    type_meta = envelope.get("typeMeta") or {}
    api_version, kind = str(type_meta.get("apiVersion", "")), str(type_meta.get("kind", ""))
    if envelope.get("contentEncoding"):
        raise ProtobufError(f"unsupported content encoding {envelope['contentEncoding']!r}", unsupported=True)
    raw = base64.b64decode(envelope.get("raw", ""))
    root = "DeleteOptions" if kind == "DeleteOptions" else ROOTS.get((api_version, kind))
    if root is None:
        raise ProtobufError(
            f"protobuf bodies of {api_version}/{kind} are not supported; send JSON", unsupported=True
        )
    obj = decode_message(root, raw)
    result: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    result.update(obj)
    return result
