"""Pure helpers on Workload / AdmissionCheck JSON, with Kueue's exact update semantics.

Everything here works on the JSON dicts the :class:`pykueue.client.interface.Client` serves
(``kueue.x-k8s.io/v1beta2``), so a status write carries every field the server sent, including
fields this package does not model.

* :func:`set_check_state` is Kueue's ``SetAdmissionCheckState`` (``pkg/workload/patching/patching.go``):
  ``lastTransitionTime`` changes only when ``state`` changes; ``message``, ``podSetUpdates`` and
  ``requeueAfterSeconds`` are always overwritten; ``retryCount`` belongs to Kueue's eviction and
  is never touched.
* :func:`set_condition` is ``meta.SetStatusCondition`` (apimachinery ``pkg/api/meta/conditions.go``).
* :func:`requeue_after_seconds` is Kueue's retry delay, ``floor(backoff(retryCount + 1))`` with
  the requeue backoff formula of ``workload_controller.go``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec

from pykueue.api.meta import EVENT_NOTE_LIMIT, format_time, truncate_message
from pykueue.core.workload.transitions import backoff_seconds as backoff_seconds  # Kueue's formula, one copy

PENDING = "Pending"
READY = "Ready"
RETRY = "Retry"
REJECTED = "Rejected"
CHECK_STATES = (PENDING, READY, RETRY, REJECTED)

ACTIVE = "Active"
ACTIVE_REASON = "Active"
ACTIVE_MESSAGE = "The admission check is active"

QUOTA_RESERVED = "QuotaReserved"
ADMITTED = "Admitted"
EVICTED = "Evicted"
FINISHED = "Finished"

DEFAULT_BACKOFF_BASE_SECONDS = 60
DEFAULT_BACKOFF_MAX_SECONDS = 1800


# --- generic JSON access ------------------------------------------------------------------------


def metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` of a JSON object ({} when absent)."""
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def status_of(obj: dict[str, Any]) -> dict[str, Any]:
    """``status`` of a JSON object, created when missing (for in-place edits of a copy)."""
    status = obj.get("status")
    if not isinstance(status, dict):
        status = {}
        obj["status"] = status
    return status


def conditions_of(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``status.conditions`` (never None; a fresh list when absent)."""
    status = obj.get("status")
    if not isinstance(status, Mapping):
        return []
    conds = status.get("conditions")
    return conds if isinstance(conds, list) else []


def find_condition(obj: Mapping[str, Any], ctype: str) -> dict[str, Any] | None:
    """The condition of ``type == ctype`` in ``status.conditions``."""
    for cond in conditions_of(obj):
        if cond.get("type") == ctype:
            return cond
    return None


def condition_true(obj: Mapping[str, Any], ctype: str) -> bool:
    """Whether ``status.conditions[type=ctype].status == "True"``."""
    cond = find_condition(obj, ctype)
    return cond is not None and cond.get("status") == "True"


def set_condition(
    obj: dict[str, Any],
    ctype: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
    observed_generation: int | None = None,
) -> bool:
    """Kubernetes ``meta.SetStatusCondition`` on ``obj.status.conditions``; True when changed."""
    st = status_of(obj)
    conds = st.get("conditions")
    if not isinstance(conds, list):
        conds = []
        st["conditions"] = conds
    message = truncate_message(message)
    for cond in conds:
        if cond.get("type") != ctype:
            continue
        before = dict(cond)
        if cond.get("status") != status:
            cond["status"] = status
            cond["lastTransitionTime"] = format_time(now)
        cond["reason"] = reason
        cond["message"] = message
        if observed_generation is not None:
            cond["observedGeneration"] = observed_generation
        return bool(cond != before)
    new: dict[str, Any] = {"type": ctype, "status": status}
    if observed_generation is not None:
        new["observedGeneration"] = observed_generation
    new.update(lastTransitionTime=format_time(now), reason=reason, message=message)
    conds.append(new)
    return True


# --- Workload predicates (pkg/workload) ---------------------------------------------------------


def has_quota_reservation(wl: Mapping[str, Any]) -> bool:
    """QuotaReserved=True."""
    return condition_true(wl, QUOTA_RESERVED)


def is_admitted(wl: Mapping[str, Any]) -> bool:
    """Admitted=True."""
    return condition_true(wl, ADMITTED)


def is_evicted(wl: Mapping[str, Any]) -> bool:
    """Evicted=True."""
    return condition_true(wl, EVICTED)


def is_finished(wl: Mapping[str, Any]) -> bool:
    """Finished=True."""
    return condition_true(wl, FINISHED)


def is_active(wl: Mapping[str, Any]) -> bool:
    """``spec.active`` is not false (nil means active)."""
    spec = wl.get("spec")
    return not (isinstance(spec, Mapping) and spec.get("active") is False)


# --- admission check states ---------------------------------------------------------------------


def check_states(wl: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``status.admissionChecks`` (an empty list when absent)."""
    status = wl.get("status")
    if not isinstance(status, Mapping):
        return []
    states = status.get("admissionChecks")
    return states if isinstance(states, list) else []


def find_check(wl: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """The ``status.admissionChecks`` entry called ``name``."""
    for state in check_states(wl):
        if state.get("name") == name:
            return state
    return None


def normalize_pod_set_updates(updates: Iterable[Any] | None) -> list[dict[str, Any]]:
    """podSetUpdates as JSON: typed :class:`pykueue.api.kueue.PodSetUpdate` values are encoded,
    mappings copied; empty maps and lists are dropped (the API omits them)."""
    out: list[dict[str, Any]] = []
    for update in updates or ():
        raw = (
            msgspec.to_builtins(update) if isinstance(update, msgspec.Struct) else copy.deepcopy(dict(update))
        )
        item: dict[str, Any] = {"name": raw["name"]}
        for key in ("labels", "annotations", "nodeSelector", "tolerations"):
            value = raw.get(key)
            if value:
                item[key] = value
        out.append(item)
    return out


def set_check_state(
    wl: dict[str, Any],
    name: str,
    state: str,
    message: str,
    now: datetime,
    *,
    pod_set_updates: Sequence[Any] | None = None,
    requeue_after_seconds: int | None = None,
) -> bool:
    """Kueue's ``SetAdmissionCheckState`` on ``wl.status.admissionChecks``; True when changed.

    A missing entry is appended (lastTransitionTime now). For an existing entry the transition
    time moves only when ``state`` differs; message, podSetUpdates and requeueAfterSeconds are
    replaced by the given values (None / empty removes them); retryCount is left alone.
    """
    if state not in CHECK_STATES:
        raise ValueError(f"unknown admission check state {state!r}")
    st = status_of(wl)
    states = st.get("admissionChecks")
    if not isinstance(states, list):
        states = []
        st["admissionChecks"] = states
    updates = normalize_pod_set_updates(pod_set_updates)
    message = truncate_message(message)
    entry = next((s for s in states if s.get("name") == name), None)
    if entry is None:
        entry = {"name": name, "state": state, "lastTransitionTime": format_time(now)}
        states.append(entry)
        before: dict[str, Any] = {}
    else:
        before = copy.deepcopy(entry)
        if entry.get("state") != state:
            entry["state"] = state
            entry["lastTransitionTime"] = format_time(now)
    entry["message"] = message
    if updates:
        entry["podSetUpdates"] = updates
    else:
        entry.pop("podSetUpdates", None)
    if requeue_after_seconds is not None:
        entry["requeueAfterSeconds"] = int(requeue_after_seconds)
    else:
        entry.pop("requeueAfterSeconds", None)
    return entry != before



def requeue_after_seconds(
    retry_count: int | None,
    base: float = DEFAULT_BACKOFF_BASE_SECONDS,
    cap: float = DEFAULT_BACKOFF_MAX_SECONDS,
) -> int:
    """``floor(backoff(retryCount + 1))`` — the delay Kueue's helper puts on a Retry (``workload.UpdateAdmissionCheckRequeueState``)."""
    return math.floor(backoff_seconds((retry_count or 0) + 1, base, cap))


def state_change_note(name: str, old: str, new: str, message: str) -> str:
    """The ``AdmissionCheckUpdated`` event note (as ``provisioning/controller.go`` records it)."""
    note = f"Admission check {name} updated state from {old} to {new}"
    if message:
        note += f" with message: {message}"
    return truncate_message(note, EVENT_NOTE_LIMIT)
