"""Server-side printing: ``meta.k8s.io/v1`` ``Table`` responses, as kube-apiserver builds them.

* CRDs (Kueue kinds, ProvisioningRequest) follow apiextensions' table convertor: a ``Name``
  column (format ``name``) followed by the version's ``additionalPrinterColumns`` (or a single
  ``Age`` column of type ``date`` when the CRD declares none); cells are evaluated with a small
  JSONPath engine (``.a.b``, ``[n]``, ``[*]``, ``['key']``, ``[?(@.type=='X')]``) and converted by
  column type (integers, numbers, booleans, strings, dates as :func:`human_duration`).
* Built-in kinds use the columns and cell functions of ``pkg/printers/internalversion`` (the
  server always generates the wide cells; kubectl hides ``priority > 0`` columns without
  ``-o wide``).

Rows carry ``object`` per ``includeObject``: ``Metadata`` (default) → ``PartialObjectMetadata``,
``Object`` → the full object, ``None`` → no object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pykueue.apiserver.builtin import events
from pykueue.apiserver.builtin.meta import CREATION_TIMESTAMP_DOC, NAME_DOC

if TYPE_CHECKING:
    from pykueue.apiserver.resources import PrinterColumn, ResourceInfo

Obj = Mapping[str, Any]
Cell = Any
RowFn = Callable[[Obj, datetime], list[Cell]]

INCLUDE_NONE = "None"
INCLUDE_METADATA = "Metadata"
INCLUDE_OBJECT = "Object"

# --- durations ---------------------------------------------------------------------------------------


def human_duration(seconds: float) -> str:
    """apimachinery ``duration.HumanDuration`` (``5m``, ``2d3h``, ``3y45d``, ``<invalid>``)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    return _human_hours(whole // 3600, minutes % 60)


def _human_hours(hours: int, minutes: int) -> str:
    if hours < 8:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def parse_timestamp(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (``Z`` or offset, optional fraction) or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def since(value: Any, now: datetime) -> str:
    """``translateTimestampSince``: ``<unknown>`` for a zero/absent time."""
    parsed = parse_timestamp(value)
    if parsed is None:
        return "<unknown>"
    return human_duration((now - parsed).total_seconds())


# --- JSONPath ----------------------------------------------------------------------------------------

_FILTER = re.compile(r"^\?\(@((?:\.[\w-]+|\['[^']*'\])*)\s*(?:(==|!=|<=|>=|<|>)\s*(.+?))?\s*\)$")


class JSONPathError(ValueError):
    """An expression outside the supported subset."""


def _split_steps(expr: str) -> list[str]:
    """``.status.conditions[?(@.type=='A')].status`` → ``['status', 'conditions', '[?(...)]', 'status']``."""
    steps: list[str] = []
    i, text = 0, expr.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    while i < len(text):
        char = text[i]
        if char == ".":
            j = i + 1
            while j < len(text) and text[j] not in ".[":
                j += 1
            if j > i + 1:
                steps.append(text[i + 1 : j])
            i = j
        elif char == "[":
            j = _closing_bracket(text, i)
            steps.append(text[i : j + 1])
            i = j + 1
        else:
            j = i
            while j < len(text) and text[j] not in ".[":
                j += 1
            steps.append(text[i:j])
            i = j
    return steps


def _closing_bracket(text: str, start: int) -> int:
    depth, quote = 0, ""
    for j in range(start, len(text)):
        char = text[j]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return j
    raise JSONPathError(f"unterminated [ in {text!r}")


def _literal(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise JSONPathError(f"unsupported literal {text!r}") from err


def _compare(left: Any, op: str, right: Any) -> bool:
    if op == "==":
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    both_numbers = isinstance(left, int | float) and isinstance(right, int | float)
    if not both_numbers:
        return False
    return bool({"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[op])


def _apply_filter(step: str, values: list[Any]) -> list[Any]:
    match = _FILTER.match(step)
    if match is None:
        raise JSONPathError(f"unsupported filter {step!r}")
    path, op, literal = match.group(1), match.group(2), match.group(3)
    out = []
    for value in values:
        for item in value if isinstance(value, list) else []:
            found = jsonpath(item, path) if path else [item]
            if op is None:
                if found:
                    out.append(item)
            elif found and _compare(found[0], op, _literal(literal)):
                out.append(item)
    return out


def _apply_bracket(step: str, values: list[Any]) -> list[Any]:
    inner = step[1:-1].strip()
    if inner.startswith("?"):
        return _apply_filter(inner, values)
    if inner == "*":
        out: list[Any] = []
        for value in values:
            if isinstance(value, list):
                out.extend(value)
            elif isinstance(value, dict):
                out.extend(value.values())
        return out
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
        return _apply_field(inner[1:-1], values)
    if ":" in inner:
        start_text, _, end_text = inner.partition(":")
        start = int(start_text) if start_text else None
        end = int(end_text) if end_text else None
        return [item for value in values if isinstance(value, list) for item in value[start:end]]
    try:
        index = int(inner)
    except ValueError as err:
        raise JSONPathError(f"unsupported subscript {step!r}") from err
    return [value[index] for value in values if isinstance(value, list) and -len(value) <= index < len(value)]


def _apply_field(name: str, values: list[Any]) -> list[Any]:
    if name in ("", "@", "$"):
        return values
    if name == "*":
        return [v for value in values if isinstance(value, dict) for v in value.values()]
    return [value[name] for value in values if isinstance(value, dict) and name in value]


def jsonpath(obj: Any, expr: str) -> list[Any]:
    """All values ``expr`` selects in ``obj`` (missing keys select nothing)."""
    values = [obj]
    for step in _split_steps(expr):
        values = _apply_bracket(step, values) if step.startswith("[") else _apply_field(step, values)
    return values


# --- CRD tables ----------------------------------------------------------------------------------------


def _go_text(value: Any) -> str:
    """How client-go's jsonpath prints a value in a string column."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def crd_cell(column_type: str, value: Any, now: datetime) -> Cell:
    """``cellForJSONValue`` (plus the string path): a typed cell or None."""
    if value is None:
        return None
    if column_type == "string":
        return _go_text(value)
    if column_type == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if column_type == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if column_type == "boolean" and isinstance(value, bool):
        return value
    if column_type == "date" and isinstance(value, str):
        parsed = parse_timestamp(value)
        return "<invalid>" if parsed is None else human_duration((now - parsed).total_seconds())
    return None


def _column_definition(
    name: str, type_: str, description: str, *, fmt: str = "", priority: int = 0
) -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


NAME_COLUMN = _column_definition("Name", "string", NAME_DOC, fmt="name")


def crd_columns(info: ResourceInfo, version: str) -> list[PrinterColumn]:
    """The printer columns a CRD version serves (the default ``Age`` column when none)."""
    from pykueue.apiserver.resources import PrinterColumn

    columns = list(info.columns(version))
    if not columns:
        columns = [
            PrinterColumn("Age", "date", ".metadata.creationTimestamp", description=CREATION_TIMESTAMP_DOC)
        ]
    return columns


def _crd_definitions(columns: Sequence[PrinterColumn]) -> list[dict[str, Any]]:
    defs = [dict(NAME_COLUMN)]
    for col in columns:
        description = (
            col.description or f"Custom resource definition column (in JSONPath format): {col.json_path}"
        )
        defs.append(
            _column_definition(col.name, col.type, description, fmt=col.format, priority=col.priority)
        )
    return defs


def _crd_row(columns: Sequence[PrinterColumn], obj: Obj, now: datetime) -> list[Cell]:
    cells: list[Cell] = [str((obj.get("metadata") or {}).get("name") or "")]
    for col in columns:
        try:
            found = jsonpath(obj, col.json_path)
        except JSONPathError:
            found = []
        cells.append(crd_cell(col.type, found[0], now) if found else None)
    return cells


# --- built-in tables -----------------------------------------------------------------------------------

_AGE = _column_definition("Age", "string", CREATION_TIMESTAMP_DOC)
_CONTAINERS = _column_definition(
    "Containers", "string", "Names of each container in the template.", priority=1
)
_IMAGES = _column_definition(
    "Images", "string", "Images referenced by each container in the template.", priority=1
)


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _age(obj: Obj, now: datetime) -> str:
    return since((obj.get("metadata") or {}).get("creationTimestamp"), now)


def _containers(pod_spec: Any) -> tuple[str, str]:
    """``layoutContainerCells``: comma-joined names and images."""
    containers = [c for c in (pod_spec or {}).get("containers") or [] if isinstance(c, Mapping)]
    return ",".join(str(c.get("name") or "") for c in containers), ",".join(
        str(c.get("image") or "") for c in containers
    )


def format_labels(labels: Mapping[str, Any] | None) -> str:
    """``labels.FormatLabels``: sorted ``k=v`` pairs, ``<none>`` when empty."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def format_label_selector(selector: Mapping[str, Any] | None) -> str:
    """``metav1.FormatLabelSelector`` (``<none>`` for a nil or empty selector)."""
    if selector is None:
        return "<none>"
    parts: list[tuple[str, str]] = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for req in selector.get("matchExpressions") or []:
        key_, op = str(req.get("key")), req.get("operator")
        values = ",".join(sorted(str(v) for v in req.get("values") or []))
        text = {
            "In": f"{key_} in ({values})",
            "NotIn": f"{key_} notin ({values})",
            "Exists": key_,
            "DoesNotExist": f"!{key_}",
        }.get(str(op), "<error>")
        parts.append((key_, text))
    text = ",".join(p for _, p in sorted(parts, key=lambda item: item[0]))
    return text or "<none>"


def _condition_true(conditions: Any, ctype: str) -> bool:
    for cond in conditions or []:
        if isinstance(cond, Mapping) and cond.get("type") == ctype:
            return bool(cond.get("status") == "True")
    return False


def _job_status(job: Obj) -> str:
    conditions = (job.get("status") or {}).get("conditions")
    if _condition_true(conditions, "Complete"):
        return "Complete"
    if _condition_true(conditions, "Failed"):
        return "Failed"
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    if _condition_true(conditions, "Suspended"):
        return "Suspended"
    if _condition_true(conditions, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def _job_completions(spec: Mapping[str, Any], succeeded: int) -> str:
    completions = spec.get("completions")
    if completions is not None:
        return f"{succeeded}/{completions}"
    parallelism = spec.get("parallelism") or 0
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _job_duration(status: Mapping[str, Any], now: datetime) -> str:
    start = parse_timestamp(status.get("startTime"))
    if start is None:
        return ""
    end = parse_timestamp(status.get("completionTime")) or now
    return human_duration((end - start).total_seconds())


def _job_row(job: Obj, now: datetime) -> list[Cell]:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    names, images = _containers((spec.get("template") or {}).get("spec"))
    return [
        _name(job),
        _job_status(job),
        _job_completions(spec, int(status.get("succeeded") or 0)),
        _job_duration(status, now),
        _age(job, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


def _micro_since(value: Any, now: datetime) -> str:
    return since(value, now)


def _event_row(event: Obj, now: datetime) -> list[Cell]:
    ev = events.to_core(event)
    first = (
        since(ev.get("firstTimestamp"), now)
        if ev.get("firstTimestamp")
        else _micro_since(ev.get("eventTime"), now)
    )
    last = since(ev.get("lastTimestamp"), now) if ev.get("lastTimestamp") else first
    count = int(ev.get("count") or 0)
    series = ev.get("series")
    if isinstance(series, Mapping):
        last = _micro_since(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1
    involved = ev.get("involvedObject") or {}
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = ev.get("source") or {}
    component = source.get("component") or ev.get("reportingComponent") or ""
    instance = source.get("host") or ev.get("reportingInstance") or ""
    return [
        last,
        ev.get("type") or "",
        ev.get("reason") or "",
        target,
        involved.get("fieldPath") or "",
        f"{component}, {instance}" if instance else component,
        str(ev.get("message") or "").strip(),
        first,
        count,
        _name(ev),
    ]


def _namespace_row(ns: Obj, now: datetime) -> list[Cell]:
    return [_name(ns), str((ns.get("status") or {}).get("phase") or ""), _age(ns, now)]


def _pod_template_row(pt: Obj, now: datetime) -> list[Cell]:
    template = pt.get("template") or {}
    names, images = _containers(template.get("spec"))
    return [_name(pt), names, images, format_labels((template.get("metadata") or {}).get("labels"))]


def _priority_class_row(pc: Obj, now: datetime) -> list[Cell]:
    return [
        _name(pc),
        int(pc.get("value") or 0),
        bool(pc.get("globalDefault")),
        _age(pc, now),
        str(pc.get("preemptionPolicy") or ""),
    ]


def _created_at_row(obj: Obj, now: datetime) -> list[Cell]:
    """``DefaultTableConvertor``'s row: the name and the creation time in RFC 3339 (UTC)."""
    created = parse_timestamp((obj.get("metadata") or {}).get("creationTimestamp"))
    when = created.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if created else "0001-01-01T00:00:00Z"
    return [_name(obj), when]


def _runtime_class_row(rc: Obj, now: datetime) -> list[Cell]:
    return [_name(rc), str(rc.get("handler") or ""), _age(rc, now)]


def _lease_row(lease: Obj, now: datetime) -> list[Cell]:
    return [_name(lease), str((lease.get("spec") or {}).get("holderIdentity") or ""), _age(lease, now)]


_EVENT_COLUMNS = [
    _column_definition(
        "Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."
    ),
    _column_definition(
        "Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"
    ),
    _column_definition(
        "Reason",
        "string",
        "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
    ),
    _column_definition("Object", "string", "The object that this event is about."),
    _column_definition(
        "Subobject",
        "string",
        "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement.",
        priority=1,
    ),
    _column_definition(
        "Source",
        "string",
        "The component reporting this event. Should be a short machine understandable string.",
        priority=1,
    ),
    _column_definition("Message", "string", "A human-readable description of the status of this operation."),
    _column_definition(
        "First Seen",
        "string",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        priority=1,
    ),
    _column_definition("Count", "string", "The number of times this event has occurred.", priority=1),
    _column_definition("Name", "string", NAME_DOC, fmt="name", priority=1),
]

def _pod_row(pod: Obj, now: datetime) -> list[Cell]:
    """``printPod``: READY, STATUS (container reasons, Completed/Error, Terminating), RESTARTS."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    meta = pod.get("metadata") or {}
    reason = str(status.get("reason") or status.get("phase") or "")
    total = len(spec.get("containers") or [])
    ready = restarts = 0
    last_restart: Any = None
    has_running = False
    for cs in reversed(status.get("containerStatuses") or []):
        restarts += int(cs.get("restartCount") or 0)
        last = ((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
        if last and (last_restart is None or str(last) > str(last_restart)):
            last_restart = last
        state = cs.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason"):
            reason = str(waiting["reason"])
        elif terminated and terminated.get("reason"):
            reason = str(terminated["reason"])
        elif terminated:
            signal = terminated.get("signal")
            reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode', 0)}"
        elif cs.get("ready") and state.get("running") is not None:
            has_running = True
            ready += 1
    if reason == "Completed" and has_running:
        reason = "Running" if _condition_true(status.get("conditions"), "Ready") else "NotReady"
    if meta.get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    restart_text = str(restarts)
    if restarts and last_restart:
        restart_text = f"{restarts} ({since(last_restart, now)} ago)"
    gates = spec.get("readinessGates") or []
    return [
        _name(pod),
        f"{ready}/{total}",
        reason,
        restart_text,
        _age(pod, now),
        str(status.get("podIP") or "<none>"),
        str(spec.get("nodeName") or "<none>"),
        str(status.get("nominatedNodeName") or "<none>"),
        f"{sum(1 for g in gates if _condition_true(status.get('conditions'), g.get('conditionType')))}/{len(gates)}"
        if gates
        else "<none>",
    ]


def _node_row(node: Obj, now: datetime) -> list[Cell]:
    """``printNode``: Ready/NotReady/Unknown (+ SchedulingDisabled), roles from the role labels."""
    spec, status = node.get("spec") or {}, node.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    states = ["Unknown" if ready is None or ready.get("status") == "Unknown" else
              "Ready" if ready.get("status") == "True" else "NotReady"]  # fmt: skip
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    labels = (node.get("metadata") or {}).get("labels") or {}
    roles = sorted(
        {k.partition("/")[2] for k in labels if k.startswith("node-role.kubernetes.io/") and k.partition("/")[2]}
        | ({str(labels["kubernetes.io/role"])} if labels.get("kubernetes.io/role") else set())
    )
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [
        _name(node),
        ",".join(states),
        ",".join(roles) or "<none>",
        _age(node, now),
        str(info.get("kubeletVersion") or ""),
        str(addresses.get("InternalIP") or "<none>"),
        str(addresses.get("ExternalIP") or "<none>"),
        str(info.get("osImage") or "<unknown>"),
        str(info.get("kernelVersion") or "<unknown>"),
        str(info.get("containerRuntimeVersion") or "<unknown>"),
    ]


BUILTIN_TABLES: Mapping[tuple[str, str], tuple[list[dict[str, Any]], RowFn]] = {
    ("", "Pod"): (
        [
            NAME_COLUMN,
            _column_definition("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
            _column_definition("Status", "string", "The aggregate status of the containers in this pod."),
            _column_definition("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
            _AGE,
            _column_definition("IP", "string", "IP address allocated to the pod.", priority=1),
            _column_definition("Node", "string", "Name of the node where the pod is running.", priority=1),
            _column_definition("Nominated Node", "string", "Name of the node where the pod may be scheduled after preemption.", priority=1),
            _column_definition("Readiness Gates", "string", "Pod readiness gates", priority=1),
        ],
        _pod_row,
    ),
    ("", "Node"): (
        [
            NAME_COLUMN,
            _column_definition("Status", "string", "The status of the node"),
            _column_definition("Roles", "string", "The roles of the node"),
            _AGE,
            _column_definition("Version", "string", "Kubelet Version reported by the node."),
            _column_definition("Internal-IP", "string", "List of addresses reachable to the node.", priority=1),
            _column_definition("External-IP", "string", "List of addresses reachable to the node.", priority=1),
            _column_definition("OS-Image", "string", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", priority=1),
            _column_definition("Kernel-Version", "string", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", priority=1),
            _column_definition("Container-Runtime", "string", "Container runtime version reported by the node through runtime remote API (e.g. containerd://1.4.2).", priority=1),
        ],
        _node_row,
    ),
    ("", "Namespace"): (
        [NAME_COLUMN, _column_definition("Status", "string", "The status of the namespace"), _AGE],
        _namespace_row,
    ),
    ("", "Event"): (_EVENT_COLUMNS, _event_row),
    ("events.k8s.io", "Event"): (_EVENT_COLUMNS, _event_row),
    ("", "PodTemplate"): (
        [
            NAME_COLUMN,
            _column_definition("Containers", "string", "Names of each container in the template."),
            _column_definition("Images", "string", "Images referenced by each container in the template."),
            _column_definition("Pod Labels", "string", "The labels for the pod template."),
        ],
        _pod_template_row,
    ),
    ("", "LimitRange"): (
        # kube-apiserver has no printer for LimitRange: its default table convertor's columns
        [NAME_COLUMN, _column_definition("Created At", "date", CREATION_TIMESTAMP_DOC)],
        _created_at_row,
    ),
    ("batch", "Job"): (
        [
            NAME_COLUMN,
            _column_definition("Status", "string", "Status of the job."),
            _column_definition("Completions", "string", "The number of pods which reached phase Succeeded."),
            _column_definition("Duration", "string", "Time required to complete the job."),
            _AGE,
            _CONTAINERS,
            _IMAGES,
            _column_definition(
                "Selector", "string", "A label query over pods that should match the pod count.", priority=1
            ),
        ],
        _job_row,
    ),
    ("scheduling.k8s.io", "PriorityClass"): (
        [
            NAME_COLUMN,
            _column_definition(
                "Value", "integer", "value represents the integer value of this priority class."
            ),
            _column_definition(
                "Global-Default",
                "boolean",
                "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class.",
            ),
            _AGE,
            _column_definition(
                "PreemptionPolicy",
                "string",
                "preemptionPolicy is the Policy for preempting pods with lower priority.",
            ),
        ],
        _priority_class_row,
    ),
    ("node.k8s.io", "RuntimeClass"): (
        [
            NAME_COLUMN,
            _column_definition(
                "Handler", "string", "Handler is the name of the underlying runtime and configuration"
            ),
            _AGE,
        ],
        _runtime_class_row,
    ),
    ("coordination.k8s.io", "Lease"): (
        [
            NAME_COLUMN,
            _column_definition(
                "Holder", "string", "holderIdentity contains the identity of the holder of a current lease."
            ),
            _AGE,
        ],
        _lease_row,
    ),
}
"""Column definitions and row function of each built-in kind (``pkg/printers/internalversion``)."""


# --- the Table ---------------------------------------------------------------------------------------


def column_definitions(info: ResourceInfo, version: str) -> list[dict[str, Any]]:
    """The ``columnDefinitions`` the server returns for ``info`` in ``version``."""
    builtin = BUILTIN_TABLES.get((info.group, info.kind))
    if builtin is not None:
        return [dict(col) for col in builtin[0]]
    return _crd_definitions(crd_columns(info, version))


def row_cells(info: ResourceInfo, obj: Obj, version: str, now: datetime | None = None) -> list[Cell]:
    """The cells of one object's row."""
    now = now or datetime.now(UTC)
    builtin = BUILTIN_TABLES.get((info.group, info.kind))
    if builtin is not None:
        return builtin[1](obj, now)
    return _crd_row(crd_columns(info, version), obj, now)


def partial_object_metadata(obj: Obj) -> dict[str, Any]:
    """``meta.k8s.io/v1`` ``PartialObjectMetadata`` of an object."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(obj.get("metadata") or {}),
    }


def _row_object(obj: Obj, include_object: str) -> dict[str, Any] | None:
    if include_object == INCLUDE_NONE:
        return None
    if include_object == INCLUDE_OBJECT:
        return dict(obj)
    return partial_object_metadata(obj)


def to_table(
    info: ResourceInfo,
    objs: Sequence[Obj],
    version: str,
    include_object: str = INCLUDE_METADATA,
    *,
    now: datetime | None = None,
    resource_version: str | None = None,
    continue_token: str = "",
    remaining_item_count: int | None = None,
    no_headers: bool = False,
) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` ``Table`` of ``objs`` (already in ``version``).

    ``include_object`` is the ``includeObject`` query parameter (``None``, ``Metadata``,
    ``Object``); ``resource_version`` defaults to the single object's for a one-object table.
    """
    now = now or datetime.now(UTC)
    if resource_version is None:
        resource_version = (
            str((objs[0].get("metadata") or {}).get("resourceVersion") or "") if len(objs) == 1 else ""
        )
    metadata: dict[str, Any] = {}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    if continue_token:
        metadata["continue"] = continue_token
    if remaining_item_count is not None:
        metadata["remainingItemCount"] = remaining_item_count
    rows = []
    for obj in objs:
        row: dict[str, Any] = {"cells": row_cells(info, obj, version, now)}
        row_object = _row_object(obj, include_object)
        if row_object is not None:
            row["object"] = row_object
        rows.append(row)
    table: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata}
    if not no_headers:
        table["columnDefinitions"] = column_definitions(info, version)
    table["rows"] = rows
    return table
