"""The admission-check SDK: write a function, get a controller (upstream's contract for an
admission-check controller: ``pkg/workload/patching/patching.go`` ``SetAdmissionCheckState``).

An admission-check controller owns the AdmissionChecks whose ``spec.controllerName`` is its
name. :class:`AdmissionCheckController` does everything that contract asks except the decision:

* it watches AdmissionChecks and Workloads through any :class:`~pykueue.client.interface.Client`
  (the embedded :class:`~pykueue.client.inprocess.InProcessClient` or an HTTP client);
* it keeps each owned AdmissionCheck's ``Active`` condition: True / ``Active`` /
  ``The admission check is active``, or, when the optional parameters validator returns an error
  message, False / ``BadParametersRef`` / that message;
* for every Workload entry in ``status.admissionChecks`` that names an owned, active check and is
  ``Pending`` it calls the check function with a :class:`CheckRequest`; by default only once the
  Workload has QuotaReserved=True (and is not being evicted, finished or deactivated), or also
  before reservation with ``before_reservation=True``;
* it writes the returned :class:`CheckResult` with Kueue's helper semantics
  (:func:`pykueue.checks.states.set_check_state`) as a status update carrying the
  resourceVersion, re-applied on a fresh read after a Conflict, and records an
  ``AdmissionCheckUpdated`` event when the state changes;
* it calls the function again whenever the Workload changes, after ``recheck_after`` seconds when
  the result asks for it, and every ``resync_seconds`` if set.

The check function receives the Workload twice: typed (:class:`pykueue.api.kueue.Workload`,
converted with :func:`pykueue.api.conversion.to_internal`) and as the JSON dict the API served.
It must be idempotent and quick: it is called from the controller's single worker thread, on
every change of the Workload. Returning None leaves the entry untouched.

Time comes from the injected ``clock`` only (see :mod:`pykueue.runtime.clock`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from pykueue.api import kueue as k
from pykueue.api.conversion import to_internal
from pykueue.checks import states as st
from pykueue.client import resources as r
from pykueue.client.interface import Client
from pykueue.runtime.clock import Clock, system_clock
from pykueue.runtime.controller import ControllerRuntime, RuntimeComponent, update_status
from pykueue.runtime.informer import DELETED, SYNCED, Change, object_key
from pykueue.runtime.recorder import NORMAL, EventRecorder

log = logging.getLogger(__name__)

BAD_PARAMETERS_REASON = "BadParametersRef"
EVENT_CHECK_UPDATED = "AdmissionCheckUpdated"

_WORKLOAD = "workload"
_CHECK = "admissioncheck"


@dataclass(frozen=True)
class CheckResult:
    """What a check decided for one Workload.

    ``state`` is one of ``Pending``/``Ready``/``Retry``/``Rejected``. ``message``,
    ``pod_set_updates`` (with Ready: typed :class:`pykueue.api.kueue.PodSetUpdate` or JSON dicts)
    and ``requeue_after_seconds`` (with Retry: how long Kueue keeps the Workload requeued; None
    means immediately) are written as given. ``recheck_after`` asks the SDK to call the check again
    after that many clock seconds even if nothing changes (typically with Pending).
    """

    state: str
    message: str = ""
    pod_set_updates: Sequence[k.PodSetUpdate | Mapping[str, Any]] = ()
    requeue_after_seconds: int | None = None
    recheck_after: float | None = None

    def __post_init__(self) -> None:
        if self.state not in st.CHECK_STATES:
            raise ValueError(f"unknown admission check state {self.state!r}; want one of {st.CHECK_STATES}")

    @classmethod
    def ready(
        cls, message: str = "", pod_set_updates: Sequence[k.PodSetUpdate | Mapping[str, Any]] = ()
    ) -> CheckResult:
        """The check passed; ``pod_set_updates`` are applied to the job's pods when it starts."""
        return cls(st.READY, message, pod_set_updates)

    @classmethod
    def pending(cls, message: str = "", recheck_after: float | None = None) -> CheckResult:
        """Not decided yet; optionally look again after ``recheck_after`` seconds."""
        return cls(st.PENDING, message, recheck_after=recheck_after)

    @classmethod
    def retry(cls, message: str = "", requeue_after_seconds: int | None = None) -> CheckResult:
        """Cannot pass now: Kueue evicts (releasing quota) and requeues after the delay."""
        return cls(st.RETRY, message, requeue_after_seconds=requeue_after_seconds)

    @classmethod
    def rejected(cls, message: str = "") -> CheckResult:
        """Will not pass: Kueue deactivates the Workload."""
        return cls(st.REJECTED, message)


@dataclass(frozen=True)
class CheckRequest:
    """One Pending check entry of one Workload, handed to the check function."""

    workload: k.Workload
    """The Workload, typed (v1beta2 model)."""
    object: dict[str, Any]
    """The Workload as the API served it (do not mutate)."""
    check: k.AdmissionCheck
    """The AdmissionCheck this entry names."""
    state: k.AdmissionCheckState
    """The entry itself (``state`` is Pending)."""
    now: datetime
    """The controller clock's current time."""

    @property
    def namespace(self) -> str:
        """The Workload's namespace."""
        return self.workload.metadata.namespace

    @property
    def name(self) -> str:
        """The Workload's name."""
        return self.workload.metadata.name

    @property
    def retry_count(self) -> int:
        """How many times Kueue evicted the Workload because of this check being in Retry."""
        return self.state.retry_count or 0

    @property
    def quota_reserved(self) -> bool:
        """Whether the Workload currently holds a quota reservation."""
        return st.has_quota_reservation(self.object)

    def backoff_seconds(
        self, base: int = st.DEFAULT_BACKOFF_BASE_SECONDS, max_seconds: int = st.DEFAULT_BACKOFF_MAX_SECONDS
    ) -> int:
        """Kueue's helper delay for a Retry now: ``floor(backoff(retryCount + 1))`` (``workload.UpdateAdmissionCheckRequeueState``)."""
        return st.requeue_after_seconds(self.retry_count, base, max_seconds)


CheckFunction = Callable[[CheckRequest], CheckResult | None]
"""The decision: called for each Pending entry; None leaves the entry as it is."""

ParametersValidator = Callable[[k.AdmissionCheck], str | None]
"""Returns None when the AdmissionCheck's parameters are usable, else the error message for the
``Active=False`` condition (reason ``BadParametersRef``)."""


@dataclass
class _Decision:
    check: str
    result: CheckResult


@dataclass
class _Outcome:
    events: list[str] = field(default_factory=list)


class AdmissionCheckController(RuntimeComponent):
    """Runs a check function as an admission-check controller; see the module docstring.

    ``start()`` starts the watches and the worker thread and returns; ``stop()`` stops and joins
    them. ``namespace`` limits the Workload watch to one namespace (AdmissionChecks are
    cluster-scoped and always watched whole).
    """

    def __init__(
        self,
        client: Client,
        controller_name: str,
        check: CheckFunction,
        *,
        clock: Clock = system_clock,
        validate_parameters: ParametersValidator | None = None,
        before_reservation: bool = False,
        resync_seconds: float | None = None,
        namespace: str | None = None,
        record_events: bool = True,
        poll_interval: float = 0.2,
    ) -> None:
        if not controller_name:
            raise ValueError("controller_name must not be empty")
        self.client = client
        self.controller_name = controller_name
        self.check = check
        self.clock = clock
        self.validate_parameters = validate_parameters
        self.before_reservation = before_reservation
        self.resync_seconds = resync_seconds
        self.recorder = EventRecorder(client, controller_name, clock) if record_events else None
        self.runtime = ControllerRuntime(
            client, name=f"check-{controller_name}", clock=clock, poll_interval=poll_interval
        )
        self.checks = self.runtime.informer(r.ADMISSION_CHECKS, self._on_check)
        self.workloads = self.runtime.informer(r.WORKLOADS, self._on_workload, namespace)
        self.runtime.register(_CHECK, self._reconcile_check)
        self.runtime.register(_WORKLOAD, self._reconcile_workload)

    def enqueue_workload(self, namespace: str, name: str, after: float | None = None) -> None:
        """Ask for the Workload's checks to be evaluated again (now or after ``after`` seconds)."""
        self.runtime.enqueue(_WORKLOAD, namespace, name, after)

    def refresh(self) -> None:
        """Re-validate every owned AdmissionCheck and re-evaluate every Workload (e.g. after the
        objects a parameters validator reads have changed)."""
        for ac in self.checks.items():
            if self._owns(ac):
                self.runtime.enqueue(_CHECK, "", str(st.metadata(ac).get("name")))
        for wl in self.workloads.items():
            ns, name = object_key(wl)
            self.runtime.enqueue(_WORKLOAD, ns, name)

    # -- routing ---------------------------------------------------------------------------------

    def _owns(self, ac: Mapping[str, Any] | None) -> bool:
        spec = (ac or {}).get("spec") or {}
        return bool(spec.get("controllerName") == self.controller_name)

    def owned_check(self, name: str) -> dict[str, Any] | None:
        """The cached AdmissionCheck ``name`` when this controller owns it."""
        ac = self.checks.get(("", name))
        return ac if self._owns(ac) else None

    def _on_check(self, change: Change) -> None:
        if change.type == SYNCED:
            return
        if not (self._owns(change.old) or self._owns(change.new)):
            return
        name = str(st.metadata(change.object).get("name"))
        if change.type != DELETED:
            self.runtime.enqueue(_CHECK, "", name)
        # Workloads may have been waiting for this check to appear or to become usable.
        for wl in self.workloads.items():
            if st.find_check(wl, name) is not None:
                ns, wl_name = object_key(wl)
                self.runtime.enqueue(_WORKLOAD, ns, wl_name)

    def _on_workload(self, change: Change) -> None:
        if change.type in (SYNCED, DELETED):
            return
        wl = change.object
        if any(self.owned_check(str(s.get("name"))) is not None for s in st.check_states(wl)):
            ns, name = object_key(wl)
            self.runtime.enqueue(_WORKLOAD, ns, name)

    # -- AdmissionCheck Active condition ---------------------------------------------------------

    def parameters_error(self, ac: Mapping[str, Any]) -> str | None:
        """The validator's verdict on ``ac`` (None: usable). A validator that raises makes the
        check inactive with the exception text."""
        if self.validate_parameters is None:
            return None
        try:
            typed, _ = to_internal(ac)
            return self.validate_parameters(cast(k.AdmissionCheck, typed))
        except Exception as err:
            log.exception("%s: parameters validator failed for %s", self.controller_name, ac.get("metadata"))
            return str(err) or type(err).__name__

    def _reconcile_check(self, _namespace: str, name: str) -> float | None:
        ac = self.owned_check(name)
        if ac is None:
            return None
        error = self.parameters_error(ac)
        status, reason, message = ("True", st.ACTIVE_REASON, st.ACTIVE_MESSAGE)
        if error is not None:
            status, reason, message = ("False", BAD_PARAMETERS_REASON, error)

        def mutate(obj: dict[str, Any]) -> bool:
            if not self._owns(obj):
                return False
            generation = int(st.metadata(obj).get("generation") or 0)
            return st.set_condition(obj, st.ACTIVE, status, reason, message, self.clock(), generation)

        update_status(self.client, r.ADMISSION_CHECKS, ac, mutate)
        return self.resync_seconds

    def check_usable(self, name: str) -> dict[str, Any] | None:
        """The owned AdmissionCheck ``name`` if its parameters are valid, else None."""
        ac = self.owned_check(name)
        if ac is None or self.parameters_error(ac) is not None:
            return None
        return ac

    # -- Workloads -------------------------------------------------------------------------------

    def eligible(self, wl: Mapping[str, Any]) -> bool:
        """Whether the Workload's checks are evaluated now (see the module docstring)."""
        if st.is_finished(wl) or not st.is_active(wl):
            return False
        if st.has_quota_reservation(wl):
            # Eviction in progress: Kueue resets every check to Pending and releases the quota.
            return not st.is_evicted(wl)
        return self.before_reservation

    def _reconcile_workload(self, namespace: str, name: str) -> float | None:
        wl = self.workloads.get((namespace, name))
        if wl is None or not self.eligible(wl):
            return None
        now = self.clock()
        decisions: list[_Decision] = []
        rechecks: list[float] = []
        typed: k.Workload | None = None
        for entry in st.check_states(wl):
            if entry.get("state") != st.PENDING:
                continue
            check_name = str(entry.get("name"))
            ac = self.check_usable(check_name)
            if ac is None:
                continue
            if typed is None:
                converted, _ = to_internal(wl)
                typed = cast(k.Workload, converted)
            request = CheckRequest(
                workload=typed,
                object=wl,
                check=cast(k.AdmissionCheck, to_internal(ac)[0]),
                state=next(s for s in typed.status.admission_checks if s.name == check_name),
                now=now,
            )
            result = self.check(request)
            if result is None:
                continue
            decisions.append(_Decision(check_name, result))
            if result.recheck_after is not None:
                rechecks.append(result.recheck_after)
        if decisions:
            self._write(wl, decisions)
        if self.resync_seconds is not None:
            rechecks.append(self.resync_seconds)
        return min(rechecks) if rechecks else None

    def _write(self, wl: dict[str, Any], decisions: list[_Decision]) -> None:
        outcome = _Outcome()

        def mutate(obj: dict[str, Any]) -> bool:
            outcome.events.clear()
            if not self.eligible(obj):
                return False
            now = self.clock()
            changed = False
            for d in decisions:
                entry = st.find_check(obj, d.check)
                # Only Pending entries are ours to decide; a fresh read may show that Kueue (or
                # an earlier write) already moved this one on.
                if entry is None or entry.get("state") != st.PENDING:
                    continue
                res = d.result
                if st.set_check_state(
                    obj,
                    d.check,
                    res.state,
                    res.message,
                    now,
                    pod_set_updates=res.pod_set_updates,
                    requeue_after_seconds=res.requeue_after_seconds,
                ):
                    changed = True
                if res.state != st.PENDING:
                    outcome.events.append(st.state_change_note(d.check, st.PENDING, res.state, res.message))
            return changed

        stored = update_status(self.client, r.WORKLOADS, wl, mutate)
        if stored is not None and self.recorder is not None:
            for note in outcome.events:
                self.recorder.event(stored, NORMAL, EVENT_CHECK_UPDATED, note)
