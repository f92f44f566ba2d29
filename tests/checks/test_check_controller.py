"""The admission-check SDK with toy checks against a real embedded API server.

Kueue's part (quota reservation, Pending entries, eviction) is played through
``pykueue.checks.testing``; time is a :class:`FakeClock`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from pykueue.api.kueue import AdmissionCheck, PodSetUpdate
from pykueue.api.meta import format_time
from pykueue.checks import AdmissionCheckController, CheckRequest, CheckResult
from pykueue.checks import states as st
from pykueue.checks import testing as t
from pykueue.client import resources as r
from pykueue.client.interface import Client

NS = "default"
NAME = "example.com/toy"


@dataclass
class Toy:
    """A check whose answer the test sets; it records every call."""

    answer: Callable[[CheckRequest], CheckResult | None] = lambda req: CheckResult.pending()
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    """The Workload's resourceVersion each call saw."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, req: CheckRequest) -> CheckResult | None:
        with self.lock:
            self.calls.append((req.name, req.check.metadata.name, req.state.state))
            self.versions.append(str(req.object["metadata"]["resourceVersion"]))
        return self.answer(req)

    def count(self, wl: str) -> int:
        with self.lock:
            return sum(1 for c in self.calls if c[0] == wl)


@dataclass
class Env:
    client: Client
    clock: t.FakeClock
    toy: Toy
    controllers: list[AdmissionCheckController] = field(default_factory=list)

    def controller(self, **kw: Any) -> AdmissionCheckController:
        ctl = AdmissionCheckController(
            self.client, NAME, self.toy, clock=self.clock, poll_interval=0.02, **kw
        )
        ctl.start()
        assert ctl.wait_synced(10)
        self.controllers.append(ctl)
        return ctl

    def check(self, check: str = "toy", controller: str = NAME, **params: str) -> None:
        self.client.create(r.ADMISSION_CHECKS, t.admission_check(check, controller, params or None))

    def workload(self, name: str, **kw: Any) -> None:
        self.client.create(r.WORKLOADS, t.workload(name, NS, **kw))

    def reserve(self, name: str, checks: tuple[str, ...] = ("toy",)) -> None:
        t.reserve_quota(self.client, NS, name, list(checks), self.clock())

    def state(self, wl: str, check: str = "toy") -> dict[str, Any]:
        entry = st.find_check(self.client.get(r.WORKLOADS, wl, NS), check)
        assert entry is not None
        return entry

    def wait_state(self, wl: str, state: str, check: str = "toy") -> dict[str, Any]:
        try:
            return t.wait_for(lambda: (lambda e: e if e["state"] == state else None)(self.state(wl, check)))
        except AssertionError:
            raise AssertionError(f"want {state}, have {self.state(wl, check)}") from None

    def active(self, name: str = "toy") -> dict[str, Any] | None:
        return st.find_condition(self.client.get(r.ADMISSION_CHECKS, name), st.ACTIVE)

    def wait_active(self, status: str, name: str = "toy") -> dict[str, Any]:
        return t.wait_for(lambda: (lambda c: c if c and c["status"] == status else None)(self.active(name)))

    def events(self, reason: str) -> list[str]:
        return [str(e.get("message")) for e in self.client.list(r.EVENTS, NS)[0] if e.get("reason") == reason]


@pytest.fixture
def env() -> Iterator[Env]:
    e = Env(t.embedded_client(), t.FakeClock(), Toy())
    yield e
    for ctl in e.controllers:
        ctl.stop()


def _settle() -> None:
    time.sleep(0.3)


def test_active_condition_on_owned_checks_only(env: Env) -> None:
    env.check("toy")
    env.check("other", controller="example.com/other")
    env.controller()
    cond = env.wait_active("True")
    assert (cond["reason"], cond["message"], cond["observedGeneration"]) == (
        "Active",
        "The admission check is active",
        1,
    )
    _settle()
    assert env.active("other") is None


def test_parameters_validator_controls_activeness(env: Env) -> None:
    allowed = {"good"}

    def validate(ac: AdmissionCheck) -> str | None:
        assert ac.spec.parameters is not None
        return None if ac.spec.parameters.name in allowed else f"unknown config {ac.spec.parameters.name!r}"

    env.check("toy", apiGroup="example.com", kind="Config", name="bad")
    env.toy.answer = lambda req: CheckResult.ready()
    ctl = env.controller(validate_parameters=validate)
    cond = env.wait_active("False")
    assert (cond["reason"], cond["message"]) == ("BadParametersRef", "unknown config 'bad'")
    # An inactive check is not evaluated.
    env.workload("wl")
    env.reserve("wl")
    _settle()
    assert env.toy.count("wl") == 0
    allowed.add("bad")
    ctl.refresh()
    env.wait_active("True")
    env.wait_state("wl", "Ready")


def test_not_called_before_reservation_unless_opted_in(env: Env) -> None:
    env.check()
    env.toy.answer = lambda req: CheckResult.ready("fine")
    env.controller()
    env.workload("wl")
    t.add_pending_checks(env.client, NS, "wl", ["toy"], env.clock())
    _settle()
    assert env.toy.count("wl") == 0
    env.reserve("wl")
    entry = env.wait_state("wl", "Ready")
    assert entry["message"] == "fine"


def test_before_reservation_opt_in(env: Env) -> None:
    env.check()
    env.toy.answer = lambda req: CheckResult.ready(f"reserved={req.quota_reserved}")
    env.controller(before_reservation=True)
    env.workload("wl")
    t.add_pending_checks(env.client, NS, "wl", ["toy"], env.clock())
    assert env.wait_state("wl", "Ready")["message"] == "reserved=False"


def test_ready_with_pod_set_updates_and_event(env: Env) -> None:
    env.check()
    env.check("foreign", controller="example.com/other")
    env.toy.answer = lambda req: CheckResult.ready(
        "approved", [PodSetUpdate(name="main", labels={"approved-by": "toy"})]
    )
    env.controller()
    env.workload("wl")
    env.clock.advance(10)
    env.reserve("wl", checks=("toy", "foreign"))
    entry = env.wait_state("wl", "Ready")
    assert entry["podSetUpdates"] == [{"name": "main", "labels": {"approved-by": "toy"}}]
    assert entry["lastTransitionTime"] == format_time(env.clock())
    t.wait_for(
        lambda: (
            "Admission check toy updated state from Pending to Ready with message: approved"
            in env.events("AdmissionCheckUpdated")
        )
    )
    # Other controllers' entries are untouched, and only our check was asked about.
    assert env.state("wl", "foreign")["state"] == "Pending"
    assert {c[1] for c in env.toy.calls} == {"toy"}


def test_retry_uses_kueue_backoff_across_evictions(env: Env) -> None:
    env.check()
    env.toy.answer = lambda req: CheckResult.retry("busy", req.backoff_seconds())
    env.controller()
    env.workload("wl")
    env.reserve("wl")
    assert env.wait_state("wl", "Retry")["requeueAfterSeconds"] == 60
    t.evict(env.client, NS, "wl", env.clock())
    t.release_quota(env.client, NS, "wl", env.clock())
    env.reserve("wl")
    entry = env.wait_state("wl", "Retry")
    assert (entry["requeueAfterSeconds"], entry["retryCount"]) == (120, 1)


def test_rejected(env: Env) -> None:
    env.check()
    env.toy.answer = lambda req: CheckResult.rejected("too big")
    env.controller()
    env.workload("wl")
    env.reserve("wl")
    assert env.wait_state("wl", "Rejected")["message"] == "too big"


def test_pending_with_recheck_after_is_evaluated_again_on_the_clock(env: Env) -> None:
    env.check()
    approved = threading.Event()
    env.toy.answer = lambda req: (
        CheckResult.ready("approved")
        if approved.is_set()
        else CheckResult.pending("waiting", recheck_after=30)
    )
    ctl = env.controller()
    env.workload("wl")
    env.reserve("wl")
    t.wait_for(lambda: env.state("wl")["message"] == "waiting", what="the Pending result written")
    # The write's own watch event is a change: the SDK calls the check again (and the recheck is
    # scheduled from the clock when that call returns). Wait until the check has seen the version
    # the API holds and the controller rests with only the recheck queued, then move the clock.
    key = ("workload", NS, "wl")

    def resting() -> bool:
        version = env.client.get(r.WORKLOADS, "wl", NS)["metadata"]["resourceVersion"]
        with env.toy.lock:
            seen = env.toy.versions[-1:] == [version]
        return seen and ctl.runtime.queue.idle() and key in ctl.runtime.queue.delayed()

    t.wait_for(resting, what="the check called on the written version, only the recheck queued")
    calls = env.toy.count("wl")
    approved.set()
    env.clock.advance(29)
    _settle()
    assert env.state("wl")["state"] == "Pending"
    assert env.toy.count("wl") == calls  # not due yet, nothing changed: not called
    env.clock.advance(1)
    assert env.wait_state("wl", "Ready")["message"] == "approved"


def test_none_leaves_the_entry_alone(env: Env) -> None:
    env.check()
    env.toy.answer = lambda req: None
    env.controller()
    env.workload("wl")
    env.reserve("wl")
    t.wait_for(lambda: env.toy.count("wl") > 0)
    _settle()
    entry = env.state("wl")
    assert (entry["state"], entry["message"]) == ("Pending", "")


def test_write_retries_after_a_conflict(env: Env) -> None:
    """The check itself changes the Workload, so the SDK's write carries a stale resourceVersion."""
    env.check()
    bumped: list[str] = []

    def answer(req: CheckRequest) -> CheckResult:
        if not bumped:
            bumped.append(req.name)
            env.client.patch(r.WORKLOADS, req.name, {"metadata": {"labels": {"touched": "yes"}}}, NS)
        return CheckResult.ready("after conflict")

    env.toy.answer = answer
    env.controller()
    env.workload("wl")
    env.reserve("wl")
    assert env.wait_state("wl", "Ready")["message"] == "after conflict"
    assert env.client.get(r.WORKLOADS, "wl", NS)["metadata"]["labels"] == {"touched": "yes"}


def test_skips_finished_inactive_and_evicting_workloads(env: Env) -> None:
    env.check()
    env.toy.answer = lambda req: CheckResult.ready()
    for name in ("finished", "inactive", "evicting"):
        env.workload(name)
    t.set_conditions(env.client, NS, "finished", env.clock(), Finished="True")
    wl = env.client.get(r.WORKLOADS, "inactive", NS)
    wl["spec"]["active"] = False
    env.client.replace(r.WORKLOADS, wl)
    t.set_conditions(env.client, NS, "evicting", env.clock(), Evicted="True")
    for name in ("finished", "inactive", "evicting"):
        env.reserve(name)
    # reserve_quota clears Evicted; put it back to model an eviction in progress.
    t.set_conditions(env.client, NS, "evicting", env.clock(), Evicted="True")
    env.controller()  # started last: it sees the final states only
    _settle()
    for name in ("finished", "inactive", "evicting"):
        assert env.state(name)["state"] == "Pending", name


def test_a_failing_check_is_retried(env: Env) -> None:
    env.check()
    failures: list[int] = []

    def answer(req: CheckRequest) -> CheckResult:
        if len(failures) < 1:
            failures.append(1)
            raise RuntimeError("flaky backend")
        return CheckResult.ready("recovered")

    env.toy.answer = answer
    ctl = env.controller()
    env.workload("wl")
    env.reserve("wl")
    # The retry is due 0.5 s after the clock's time when the failure was caught, which follows the
    # check's raise: move the clock once it is queued (moved earlier, the due time moves with it).
    # A watch event of the Workload queued meanwhile (the reservation's) runs the check again at once.
    key = ("workload", NS, "wl")

    def retry_queued() -> bool:
        return bool(failures) and (key in ctl.runtime.queue.delayed() or env.state("wl")["state"] == "Ready")

    t.wait_for(retry_queued, what="the failed check's retry queued")
    env.clock.advance(1)  # the error backoff runs on the controller's clock
    assert env.wait_state("wl", "Ready")["message"] == "recovered"


def test_typed_request_fields(env: Env) -> None:
    env.check()
    seen: list[CheckRequest] = []

    def answer(req: CheckRequest) -> CheckResult:
        seen.append(req)
        return CheckResult.ready()

    env.toy.answer = answer
    env.controller()
    env.workload("wl", priority=7)
    env.reserve("wl")
    env.wait_state("wl", "Ready")
    req = seen[0]
    assert (req.namespace, req.name) == (NS, "wl")
    assert req.workload.spec.priority == 7
    assert req.object["spec"]["priority"] == 7
    assert req.check.spec.controller_name == NAME
    assert req.state.name == "toy" and req.retry_count == 0
    assert req.now == env.clock()
    assert req.quota_reserved


def test_check_result_validation() -> None:
    with pytest.raises(ValueError):
        CheckResult("Maybe")
    assert CheckResult.retry("x", 5).requeue_after_seconds == 5
    assert CheckResult.pending("x", recheck_after=3).recheck_after == 3
