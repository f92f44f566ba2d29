"""Events the core asks its driver to record (upstream ``scheduler.go``
``Scheduler.requeueAndUpdate``, ``recordWorkloadAdmissionEvents``)."""

from __future__ import annotations

import msgspec

from pykueue.api.meta import EVENT_NOTE_LIMIT, NORMAL, WARNING, truncate_message

__all__ = ["ADMISSION", "NORMAL", "WARNING", "WORKLOAD_CONTROLLER", "Event"]

ADMISSION = "kueue-admission"
"""The scheduler's reporting controller (upstream ``constants.AdmissionName``)."""
WORKLOAD_CONTROLLER = "kueue-workload-controller"
"""The workload controller's (upstream ``constants.WorkloadControllerName``)."""


class Event(msgspec.Struct, frozen=True, gc=False):
    """An event about one object (``events.k8s.io/v1`` semantics: ``action`` equals ``reason``).

    Untracked by the cyclic GC (``gc=False``: only strings, no cycle possible): a cycle emits one
    or more per decision, which a driver may keep for a while (the simulator keeps them all)."""

    namespace: str
    name: str
    type: str
    reason: str
    note: str
    kind: str = "Workload"
    controller: str = ADMISSION
    """Who reports it: upstream's components each record through a recorder of their own name
    (``mgr.GetEventRecorder``), shown as the Event's ``reportingController``."""

    @staticmethod
    def for_workload(
        namespace: str, name: str, type_: str, reason: str, note: str, controller: str = ADMISSION
    ) -> Event:
        return Event(
            namespace, name, type_, reason, truncate_message(note, EVENT_NOTE_LIMIT), controller=controller
        )
