"""``pykueue.checks``: write Kueue admission checks in a few lines of Python.

An admission check is a function from a Workload to a decision::

    from pykueue.checks import AdmissionCheckController, CheckRequest, CheckResult

    def check(req: CheckRequest) -> CheckResult:
        if req.workload.spec.priority and req.workload.spec.priority >= 100:
            return CheckResult.ready("high priority")
        return CheckResult.retry("low priority; try later", req.backoff_seconds())

    ctl = AdmissionCheckController(client, "example.com/priority", check)
    ctl.start()

The controller watches AdmissionChecks with ``spec.controllerName == "example.com/priority"``,
keeps their ``Active`` condition, calls ``check`` for every Pending entry of those checks in
Workloads that hold a quota reservation and writes the result with Kueue's semantics. See
:mod:`pykueue.checks.controller` for the full contract, :mod:`pykueue.checks.states` for the
JSON helpers and :mod:`pykueue.runtime.controller` for the watch/queue machinery the built-in
ProvisioningRequest controller also runs on. ``client`` is any
:class:`pykueue.client.interface.Client`: the in-process client of ``pykueue serve`` or an HTTP
client built from a kubeconfig.
"""

from __future__ import annotations

from pykueue.checks.controller import (
    AdmissionCheckController,
    CheckFunction,
    CheckRequest,
    CheckResult,
    ParametersValidator,
)
from pykueue.checks.states import (
    PENDING,
    READY,
    REJECTED,
    RETRY,
    backoff_seconds,
    requeue_after_seconds,
    set_check_state,
    set_condition,
)
from pykueue.runtime.controller import ControllerRuntime, WorkQueue, update_status
from pykueue.runtime.recorder import EventRecorder

__all__ = [
    "PENDING",
    "READY",
    "REJECTED",
    "RETRY",
    "AdmissionCheckController",
    "CheckFunction",
    "CheckRequest",
    "CheckResult",
    "ControllerRuntime",
    "EventRecorder",
    "ParametersValidator",
    "WorkQueue",
    "backoff_seconds",
    "requeue_after_seconds",
    "set_check_state",
    "set_condition",
    "update_status",
]
