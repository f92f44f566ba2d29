"""A decision the core takes about one Workload, as its drivers apply it and its transition log keeps it.

Every write the core asks for — a status patch from the scheduling cycle, an outcome of the workload
controller's rules — travels as a :class:`Decision` tagged with the stimulus that caused it
(``cycle-<n>``, ``watch-<resourceVersion>``, ``timer-<key>``), so each status write can be traced
back to why it was made (dask's ``stimulus_id``; see ``KueueCore.story``).
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from pykueue.api.kueue import Workload
from pykueue.core.events import Event


class Decision(msgspec.Struct, frozen=True):
    """One decision about Workload ``workload`` (``namespace/name``).

    ``status`` is written through the status subresource, ``spec`` with a plain update (at most one
    of them); ``events`` are recorded once that write succeeded, or at once when there is no
    write, or whatever became of the write when ``events_if_unwritten`` (a pending head's Warning:
    upstream's ``requeueAndUpdate`` records it after its patch, failed or not). A decision with
    neither is a note for the transition log only. ``related`` names the
    other Workloads the decision is about (a preemptor and its victims name each other).

    ``assumed``: the core already counts this write as done (the scheduler's admission, which it
    assumes in its cache as upstream's ``cache.AssumeWorkload``), so a driver may apply it
    asynchronously, off the decision path, and report a failure later through
    ``KueueCore.forget_admission`` (upstream's ``admissionRoutineWrapper`` routine).

    A msgspec Struct, not a frozen dataclass: one per decision, built in C (a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__``, about ten times slower).
    """

    stimulus: str
    at: datetime
    workload: str
    reason: str
    message: str = ""
    status: Workload | None = None
    spec: Workload | None = None
    events: tuple[Event, ...] = ()
    related: tuple[str, ...] = ()
    assumed: bool = False
    events_if_unwritten: bool = False

    @property
    def writes(self) -> bool:
        return self.status is not None or self.spec is not None


def cycle_stimulus(cycle: int) -> str:
    return f"cycle-{cycle}"


def watch_stimulus(resource_version: str | int) -> str:
    return f"watch-{resource_version}"


def timer_stimulus(key: str) -> str:
    return f"timer-{key}"
