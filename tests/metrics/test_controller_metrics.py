"""Counting where upstream counts: the controller manager's writes, observed changes and cycles.

A real in-process API server and controller manager (Jobs handled by the Job integration, nothing
runs their pods); the registry is scraped and parsed with prometheus_client's text parser.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import ABSENT, KUEUE, MetricsEnv, job, labels, scrape_until, wait

from pykueue.api.meta import format_time
from pykueue.client import resources as R
from pykueue.client.interface import Conflict
from pykueue.metrics import KueueMetrics


def cond(obj: dict[str, Any] | None, ctype: str) -> dict[str, Any] | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c["type"] == ctype:
            return dict(c)
    return None


def true(obj: dict[str, Any] | None, ctype: str) -> bool:
    c = cond(obj, ctype)
    return c is not None and c["status"] == "True"


def workload_of(env: MetricsEnv, job_name: str) -> dict[str, Any] | None:
    items, _ = env.client.list(R.WORKLOADS, "default")
    for wl in items:
        if any(r["name"] == job_name for r in wl["metadata"].get("ownerReferences") or []):
            return dict(wl)
    return None


def admitted(env: MetricsEnv, job_name: str) -> Any:
    return lambda: (wl := workload_of(env, job_name)) is not None and true(wl, "Admitted") and wl


def bare_workload(name: str, queue: str, cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "queueName": queue,
            "podSets": [
                {"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}
            ],
        },
    }


def update_status(env: MetricsEnv, res: Any, name: str, namespace: str | None, mutate: Any) -> None:
    """Read-modify-write of a status, retried when the controllers wrote in between."""
    for _ in range(50):
        obj = env.get(res, name, namespace)
        mutate(obj)
        try:
            env.client.replace(res, obj, subresource="status")
            return
        except Conflict:
            continue
    raise AssertionError(f"could not update {name}")


def scrape_when(env: MetricsEnv, name: str, key: frozenset[tuple[str, str]]) -> Any:
    """A scrape once series ``key`` of ``name`` exists."""
    return wait(lambda: key in (s := env.scrape()).get(name, {}) and s, what=f"{name} {set(key)}")


def counters(env: MetricsEnv, name: str) -> dict[frozenset[tuple[str, str]], float]:
    return env.scrape().get(name, {})


def test_borrowing_preemption_and_evictions_are_counted_where_upstream_counts(env: MetricsEnv) -> None:
    env.queues()
    env.create(R.JOBS, job("borrower", "lq-a", cpu="2"))  # nominal 1 in cq-a: borrows 1 from cq-b
    borrower = wait(admitted(env, "borrower"), what="borrower admitted")
    cq_a = labels(cluster_queue="cq-a", priority_class="")
    cq_b = labels(cluster_queue="cq-b", priority_class="")
    # Counted right after the write the API already shows: wait for the counts, not just the object.
    s = scrape_until(
        env.scrape,
        {
            "kueue_quota_reserved_workloads_total": {cq_a: 1.0},
            "kueue_admitted_workloads_total": {cq_a: 1.0},
            "kueue_quota_reserved_wait_time_seconds_count": {cq_a: 1.0},
            "kueue_admission_wait_time_seconds_count": {cq_a: 1.0},
            "kueue_cohort_subtree_admitted_workloads_total": {labels(cohort="co", priority_class=""): 1.0},
            "kueue_local_queue_admitted_workloads_total": {labels(name="lq-a", namespace="default", priority_class=""): 1.0},
            # The Job integration created the Workload (job generation 1): one creation-latency sample.
            "kueue_workload_creation_latency_seconds_count": {labels(job_kind="Job"): 1.0},
        },
        what="the borrower's reservation and admission counted",
    )
    assert "kueue_admission_checks_wait_time_seconds_count" not in s  # no checks: not reported
    wait(
        lambda: counters(env, "kueue_admission_attempts_total").get(labels(result="success")) == 1.0,
        what="first success",
    )
    assert "kueue_preempted_workloads_total" not in s

    # The owner reclaims its nominal quota: the borrower is preempted (evicted, reason Preempted).
    env.create(R.JOBS, job("owner", "lq-b", cpu="1"))
    owner = wait(admitted(env, "owner"), what="owner admitted after the reclaim")
    victim = workload_of(env, "borrower")
    assert cond(victim, "Preempted")["reason"] == "InCohortReclamation"  # type: ignore[index]
    preempted = labels(cluster_queue="cq-a", reason="Preempted", underlying_cause="", priority_class="")
    scrape_until(
        env.scrape,
        {
            "kueue_preempted_workloads_total": {labels(preempting_cluster_queue="cq-b", reason="InCohortReclamation"): 1.0},
            "kueue_evicted_workloads_total": {preempted: 1.0},
            "kueue_evicted_workloads_once_total": {preempted: 1.0},
            "kueue_local_queue_evicted_workloads_total": {
                labels(name="lq-a", namespace="default", reason="Preempted", underlying_cause="", priority_class=""): 1.0
            },
            "kueue_workload_eviction_latency_seconds_count": {labels(cluster_queue="cq-a", reason="Preempted"): 1.0},
            "kueue_quota_reserved_workloads_total": {cq_a: 1.0, cq_b: 1.0},
            "kueue_admitted_workloads_total": {cq_a: 1.0, cq_b: 1.0},
            "kueue_reserving_active_workloads": {labels(cluster_queue="cq-a"): 0.0, labels(cluster_queue="cq-b"): 1.0},
        },
        what="the preemption, the borrower's eviction and the owner's admission counted",
    )
    # Two cycles admitted; the preempting one only issued the preemption (inadmissible, as upstream).
    # A cycle is counted when it ends, after its writes: wait for it.
    success = labels(result="success")
    wait(lambda: counters(env, "kueue_admission_attempts_total").get(success) == 2.0, what="second success")

    def pending_a() -> float:
        pending = counters(env, "kueue_pending_workloads")
        return sum(pending[labels(cluster_queue="cq-a", status=st)] for st in ("active", "inadmissible"))

    # The pending gauge follows the manager's queues, which take the evicted borrower back after
    # the eviction write the API shows.
    wait(lambda: pending_a() == 1.0, what="the preempted borrower waits again in cq-a")

    # Deactivating the owner evicts it with reason Deactivated (no underlying cause).
    env.patch(R.WORKLOADS, owner["metadata"]["name"], {"spec": {"active": False}})
    wait(lambda: true(env.get(R.WORKLOADS, owner["metadata"]["name"]), "Evicted"), what="owner evicted")
    deactivated = labels(cluster_queue="cq-b", reason="Deactivated", underlying_cause="", priority_class="")
    scrape_until(env.scrape, {"kueue_evicted_workloads_total": {preempted: 1.0, deactivated: 1.0}}, what="owner's eviction counted")
    # The borrower gets the freed quota back and is counted again (a second reservation).
    readmitted = admitted(env, "borrower")
    # Parked workloads are retried in 1s batches of the controllers' (manual) clock.
    wait(lambda: readmitted() or env.clock.advance(1.1), what="borrower readmitted")
    # Counted right after the write the API already shows: wait for the count, not just the object.
    wait(lambda: counters(env, "kueue_quota_reserved_workloads_total")[cq_a] == 2.0, what="second reservation counted")
    assert borrower["metadata"]["name"] != owner["metadata"]["name"]


def test_admission_checks_wait_time_is_reservation_to_admission(env: MetricsEnv) -> None:
    env.create(
        R.ADMISSION_CHECKS,
        {"apiVersion": KUEUE, "kind": "AdmissionCheck", "metadata": {"name": "check"}, "spec": {"controllerName": "example.com/c"}},
    )
    active = {"type": "Active", "status": "True", "reason": "Active", "message": "ok", "lastTransitionTime": format_time(env.clock())}
    update_status(env, R.ADMISSION_CHECKS, "check", None, lambda ac: ac.update(status={"conditions": [active]}))
    env.queues(names=("cq-a",))
    env.patch(R.CLUSTER_QUEUES, "cq-a", {"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": "check"}]}}}, None)
    wait(lambda: true(env.get(R.CLUSTER_QUEUES, "cq-a", None), "Active") or env.clock.advance(1.1), what="cq active")
    env.create(R.WORKLOADS, bare_workload("w", "lq-a"))
    wait(
        lambda: true(w := env.get(R.WORKLOADS, "w"), "QuotaReserved") and w["status"].get("admissionChecks"),
        what="reserved, check listed",
    )
    cq = labels(cluster_queue="cq-a", priority_class="")
    s = scrape_when(env, "kueue_quota_reserved_workloads_total", cq)
    assert s["kueue_quota_reserved_workloads_total"] == {cq: 1.0}
    assert "kueue_admitted_workloads_total" not in s
    env.clock.advance(42)
    # The check's controller marks it Ready; the workload controller then admits.

    def ready(obj: dict[str, Any]) -> None:
        for entry in obj["status"]["admissionChecks"]:
            entry.update(state="Ready", message="ok", lastTransitionTime=format_time(env.clock()))

    update_status(env, R.WORKLOADS, "w", "default", ready)
    wait(lambda: true(env.get(R.WORKLOADS, "w"), "Admitted"), what="admitted after the check")
    s = scrape_until(
        env.scrape,
        {
            "kueue_admitted_workloads_total": {cq: 1.0},
            "kueue_admission_checks_wait_time_seconds_count": {cq: 1.0},
            "kueue_local_queue_admission_checks_wait_time_seconds_count": {
                labels(name="lq-a", namespace="default", priority_class=""): 1.0
            },
        },
        what="admission and its checks' wait counted",
    )
    assert s["kueue_admission_checks_wait_time_seconds_sum"][cq] == pytest.approx(42, abs=1)


def test_finish_is_counted_once_with_execution_time(env: MetricsEnv) -> None:
    env.queues(names=("cq-a",))
    env.create(R.WORKLOADS, bare_workload("w", "lq-a"))
    wl = wait(lambda: true(w := env.get(R.WORKLOADS, "w"), "Admitted") and w, what="admitted")
    scrape_when(env, "kueue_admitted_workloads_total", labels(cluster_queue="cq-a", priority_class=""))
    assert cond(wl, "Admitted")["lastTransitionTime"] == format_time(env.clock())  # type: ignore[index]
    env.clock.advance(30)
    finished_at = format_time(env.clock())
    finished = {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done", "lastTransitionTime": finished_at}
    update_status(env, R.WORKLOADS, "w", "default", lambda obj: obj["status"]["conditions"].append(finished))
    cq = labels(cluster_queue="cq-a", priority_class="")
    s = scrape_until(
        env.scrape,
        {
            "kueue_finished_workloads_total": {cq: 1.0},
            "kueue_execution_time_seconds_count": {cq: 1.0},
            ("kueue_finished_workloads", labels(cluster_queue="cq-a")): 1.0,
            "kueue_local_queue_finished_workloads_total": {labels(name="lq-a", namespace="default", priority_class=""): 1.0},
        },
        what="finish counted",
    )
    assert s["kueue_execution_time_seconds_sum"][cq] == pytest.approx(30, abs=1)
    # A later status write of the finished workload is not a second finish.

    def reword(obj: dict[str, Any]) -> None:
        for c in obj["status"]["conditions"]:
            if c["type"] == "Finished":
                c["message"] = "done, really"

    update_status(env, R.WORKLOADS, "w", "default", reword)
    wait(lambda: any(c.type == "Finished" and c.message == "done, really" for c in env.mgr.cluster.workloads["default/w"].status.conditions))
    assert counters(env, "kueue_finished_workloads_total") == {cq: 1.0}


def test_state_gauges_quota_usage_and_status() -> None:
    env = MetricsEnv(KueueMetrics(cluster_queue_resources=True))
    try:
        env.queues()
        env.create(R.JOBS, job("borrower", "lq-a", cpu="2"))
        wait(admitted(env, "borrower"), what="borrower admitted")
        env.create(R.JOBS, job("waiter", "lq-a", cpu="1"))
        wait(lambda: (wl := workload_of(env, "waiter")) is not None and cond(wl, "QuotaReserved"), what="waiter evaluated")
        # The waiter: neither admitted nor finished; QuotaReserved=False with the scheduler's reason.
        waiter = workload_of(env, "waiter")
        reason = cond(waiter, "QuotaReserved")["reason"]  # type: ignore[index]
        a = {"cohort": "co", "cluster_queue": "cq-a", "flavor": "f", "resource": "cpu"}
        b = {**a, "cluster_queue": "cq-b"}
        # The gauges read the manager's state, which takes the waiter's write (the API shows it)
        # into its queues afterwards: wait for the whole state.
        s = scrape_until(
            env.scrape,
            {
                "kueue_cluster_queue_nominal_quota": {labels(**a): 1.0, labels(**b): 1.0},
                ("kueue_cluster_queue_borrowing_limit", labels(**a)): float("inf"),
                ("kueue_cluster_queue_lending_limit", labels(**a)): float("inf"),
                "kueue_cluster_queue_resource_reservation": {labels(**a): 2.0, labels(**b): 0.0},
                "kueue_cluster_queue_resource_usage": {labels(**a): 2.0, labels(**b): 0.0},
                # The waiter's request, not yet on a flavor; cq-b's covered cpu at 0.
                "kueue_cluster_queue_resource_pending": {
                    labels(cluster_queue="cq-a", resource="cpu"): 1.0,
                    labels(cluster_queue="cq-b", resource="cpu"): 0.0,
                },
                "kueue_pending_workloads": {
                    labels(cluster_queue="cq-a", status="active"): 0.0,
                    labels(cluster_queue="cq-a", status="inadmissible"): 1.0,
                    labels(cluster_queue="cq-b", status="active"): 0.0,
                    labels(cluster_queue="cq-b", status="inadmissible"): 0.0,
                },
                ("kueue_local_queue_pending_workloads", labels(name="lq-a", namespace="default", status="inadmissible")): 1.0,
                ("kueue_admitted_active_workloads", labels(cluster_queue="cq-a")): 1.0,
                "kueue_cluster_queue_status": {
                    labels(cluster_queue=cq, status=st): 1.0 if st == "active" else 0.0
                    for cq in ("cq-a", "cq-b")
                    for st in ("pending", "active", "terminating")
                },
                "kueue_cohort_subtree_quota": {labels(cohort="co", flavor="f", resource="cpu"): 2.0},
                "kueue_cohort_subtree_resource_reservations": {labels(cohort="co", flavor="f", resource="cpu"): 2.0},
                ("kueue_cluster_queue_info", labels(cluster_queue="cq-a", parent_cohort="co", root_cohort="co")): 1.0,
                ("kueue_local_queue_status", labels(name="lq-a", namespace="default", active="True")): 1.0,
                "kueue_unadmitted_workloads": {
                    labels(cluster_queue="cq-a", reason="NoReservation", underlying_cause=reason): 1.0
                },
                "kueue_local_queue_unadmitted_workloads": {
                    labels(
                        name="lq-a", namespace="default", cluster_queue="cq-a", reason="NoReservation", underlying_cause=reason
                    ): 1.0
                },
            },
            what="the state gauges after the borrower's admission and the waiter's evaluation",
        )
        hashes = s["kueue_pending_scheduling_hashes"]
        assert hashes[labels(cluster_queue="cq-a", status="active")] + hashes[
            labels(cluster_queue="cq-a", status="inadmissible")
        ] == 1.0
        # Stopping a ClusterQueue makes it pending; deleting it removes its series.
        env.patch(R.CLUSTER_QUEUES, "cq-b", {"spec": {"stopPolicy": "Hold"}}, None)
        pending_b = labels(cluster_queue="cq-b", status="pending")
        wait(lambda: env.scrape()["kueue_cluster_queue_status"].get(pending_b) == 1.0, what="cq-b pending")
        env.client.delete(R.CLUSTER_QUEUES, "cq-b")
        wait(lambda: labels(cluster_queue="cq-b") not in env.scrape()["kueue_reserving_active_workloads"], what="cq-b gone")
    finally:
        env.close()


def test_scrapes_during_an_admission_storm_read_consistent_state(env: MetricsEnv, caplog: pytest.LogCaptureFixture) -> None:
    import threading

    env.queues(cpu=20)
    stop = threading.Event()
    errors: list[BaseException] = []
    scrapes = [0]

    def scraper() -> None:
        while not stop.is_set():
            try:
                env.scrape()
                scrapes[0] += 1
            except BaseException as err:  # reported below
                errors.append(err)

    t = threading.Thread(target=scraper)
    t.start()
    try:
        for i in range(60):
            env.create(R.WORKLOADS, bare_workload(f"s{i}", "lq-a" if i % 2 else "lq-b"))
        cq_total = labels(cluster_queue="cq-a", priority_class="")
        wait(
            lambda: sum(counters(env, "kueue_quota_reserved_workloads_total").values()) == 40,
            timeout=30,
            what="40 reservations (20 cpu per ClusterQueue)",
        )
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    assert scrapes[0] > 0
    assert not [r for r in caplog.records if r.name == "pykueue.metrics.state"]
    s = env.scrape()
    assert s["kueue_quota_reserved_workloads_total"][cq_total] == 20.0
    # The reservation counter moves at the write, the pending gauge when the manager has routed the
    # written Workload out of its queue: under load a scrape can fall between the two.
    wait(
        lambda: sum(env.scrape()["kueue_pending_workloads"].values()) == 20.0,
        timeout=10,
        what="20 pending workloads once the reservations are routed",
    )


def test_deleting_queues_clears_their_series(env: MetricsEnv) -> None:
    env.queues(names=("cq-a",))
    env.create(R.WORKLOADS, bare_workload("w", "lq-a"))
    cq = labels(cluster_queue="cq-a", priority_class="")
    lq = labels(name="lq-a", namespace="default", priority_class="")
    scrape_until(
        env.scrape,
        {"kueue_admitted_workloads_total": {cq: 1.0}, "kueue_local_queue_admitted_workloads_total": {lq: 1.0}},
        what="admission counted",
    )
    env.client.delete(R.WORKLOADS, "w", "default")
    env.client.delete(R.LOCAL_QUEUES, "lq-a", "default")
    wait(lambda: lq not in counters(env, "kueue_local_queue_admitted_workloads_total"), what="LocalQueue series cleared")
    assert counters(env, "kueue_admitted_workloads_total") == {cq: 1.0}  # the ClusterQueue's stay
    env.client.delete(R.CLUSTER_QUEUES, "cq-a")
    scrape_until(
        env.scrape,
        {
            ("kueue_admitted_workloads_total", cq): ABSENT,
            "kueue_quota_reserved_wait_time_seconds_count": ABSENT,
            ("kueue_cluster_queue_status", labels(cluster_queue="cq-a", status="active")): ABSENT,
        },
        what="the ClusterQueue's series cleared",
    )


# --- kueue_cohort_weighted_share ----------------------------------------------------------------------------

FAIR_SHARING_CONFIG = """apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing:
  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
"""

WEIGHTED_SHARE = "kueue_cohort_weighted_share"


def _cohort(name: str, parent: str = "") -> dict[str, Any]:
    spec = {"parentName": parent} if parent else {}
    return {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


# name, Cohort objects (name, parent) created, a Cohort then deleted; want: the series by cohort.
# Upstream reports the gauge from the Cohort reconciler (cohort_controller.go
# updateCohortStatusIfChanged, with fair sharing) for a Cohort object it reads; when the read is
# NotFound it clears the cohort's series (metrics.ClearCohortMetrics). A cohort that exists only
# because ClusterQueues (or a Cohort's parentName) name it has no object: no series.
COHORT_SHARE_CASES: list[tuple[str, list[tuple[str, str]], str | None, dict[str, float]]] = [
    ("cohort named only by its ClusterQueues: no series", [], None, {}),
    ("Cohort object: reported", [("co", "")], None, {"co": 0.0}),
    ("Cohort object whose parent has no object: only the Cohort's", [("co", "top")], None, {"co": 0.0}),
    ("Cohort deleted while its ClusterQueues still name it: cleared", [("co", "")], "co", {}),
]


@pytest.mark.parametrize(
    ("cohorts", "deleted", "want"), [c[1:] for c in COHORT_SHARE_CASES], ids=[c[0] for c in COHORT_SHARE_CASES]
)
def test_cohort_weighted_share_is_reported_for_cohort_objects(
    cohorts: list[tuple[str, str]], deleted: str | None, want: dict[str, float]
) -> None:
    from pykueue.api.config import load_config
    from pykueue.controllers.options import ControllerOptions

    env = MetricsEnv(options=ControllerOptions.from_config(load_config(FAIR_SHARING_CONFIG)))
    try:
        for name, parent in cohorts:
            env.create(R.COHORTS, _cohort(name, parent))
        env.queues()
        quota = ("kueue_cohort_subtree_quota", labels(cohort="co", flavor="f", resource="cpu"))
        if deleted is not None:
            scrape_until(env.scrape, {quota: 2.0, (WEIGHTED_SHARE, labels(cohort=deleted)): 0.0}, what="reported")
            env.client.delete(R.COHORTS, deleted)
        series = {labels(cohort=name): value for name, value in want.items()} or ABSENT
        # The subtree quota (reported for every cohort) shows the controllers have the queues.
        scrape_until(env.scrape, {quota: 2.0, WEIGHTED_SHARE: series}, what="the cohorts' weighted shares")
    finally:
        env.close()


def _delete_queues(env: MetricsEnv) -> None:
    for name in ("cq-a", "cq-b"):
        env.client.delete(R.LOCAL_QUEUES, name.replace("cq", "lq"), "default")
        env.client.delete(R.CLUSTER_QUEUES, name)
    wait(lambda: not env.mgr.call_in_manager_thread(lambda: "co" in env.mgr.cache.cohorts), what="co gone")


def _cohort_comes_and_goes(env: MetricsEnv) -> None:
    env.create(R.COHORTS, _cohort("co"))
    scrape_until(env.scrape, {(WEIGHTED_SHARE, labels(cohort="co")): 0.0}, what="the Cohort reported")
    env.client.delete(R.COHORTS, "co")
    wait(lambda: env.mgr.call_in_manager_thread(lambda: "co" not in env.mgr.cache.cohort_objects), what="co deleted")


# name, queues (in the implicit cohort "co") made before the election, what follows it; want: the
# series of "co". With leader election, upstream's ``roleTracker.OnElected`` runs
# ``Cache.ResyncGaugeMetrics``, which reports every cohort's weighted share, implicit ones too
# (a root's: 0); nothing reconciles an implicit cohort afterwards, so its series stays until a
# Cohort object of that name is reconciled (reported, then cleared on its deletion's NotFound).
ELECTED_SHARE_CASES: list[tuple[str, bool, Any, float | None]] = [
    ("implicit cohort at the election: reported by the resync", True, None, 0.0),
    ("implicit cohort at the election, its ClusterQueues deleted since: kept", True, _delete_queues, 0.0),
    ("implicit cohort at the election, a Cohort object of its name created and deleted: cleared", True,
     _cohort_comes_and_goes, ABSENT),
    ("implicit cohort made after the election: no series", False, None, ABSENT),
]  # fmt: skip


@pytest.mark.parametrize(
    ("before", "then", "want"), [c[1:] for c in ELECTED_SHARE_CASES], ids=[c[0] for c in ELECTED_SHARE_CASES]
)
def test_cohort_weighted_share_resynced_on_election(before: bool, then: Any, want: float | None) -> None:
    from pykueue.api.config import load_config
    from pykueue.controllers.options import ControllerOptions

    env = MetricsEnv(options=ControllerOptions.from_config(load_config(FAIR_SHARING_CONFIG)), standby=True)
    try:
        quota = ("kueue_cohort_subtree_quota", labels(cohort="co", flavor="f", resource="cpu"))
        if before:
            env.queues()
            scrape_until(env.scrape, {quota: 2.0, WEIGHTED_SHARE: ABSENT}, what="a follower's cache has the queues")
        env.mgr.lead()
        env.mgr.call_in_manager_thread(lambda: None)  # after the election's resync
        if not before:
            env.queues()
            scrape_until(env.scrape, {quota: 2.0}, what="the queues")
        if then is not None:
            then(env)
        assert env.scrape().get(WEIGHTED_SHARE, {}).get(labels(cohort="co"), ABSENT) == want
    finally:
        env.close()


# --- kueue_local_queue_admission_fair_sharing_usage ------------------------------------------------------

AFS_CONFIG = """apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
admissionFairSharing:
  usageHalfLifeTime: 5m
  usageSamplingInterval: 5m
  resourceWeights:
    cpu: 2
    GPU: 10
"""

AFS_SERIES = "kueue_local_queue_admission_fair_sharing_usage"


def _afs_env(metrics: KueueMetrics | None = None, labels_: dict[str, str] | None = None) -> MetricsEnv:
    from pykueue.api.config import load_config
    from pykueue.controllers.options import ControllerOptions

    env = MetricsEnv(metrics, options=ControllerOptions.from_config(load_config(AFS_CONFIG)))
    env.create(R.RESOURCE_FLAVORS, {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "f"}})
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 1}]}]}
        ],
    }
    env.create(R.CLUSTER_QUEUES, {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "cq-afs"}, "spec": spec})
    env.create(
        R.LOCAL_QUEUES,
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "lq-afs", "namespace": "default", "labels": labels_ or {}},
            "spec": {"clusterQueue": "cq-afs", "fairSharing": {"weight": "2"}},
        },
    )
    return env


def _seed_ledger_and_reconcile(env: MetricsEnv) -> None:
    """Upstream's test fixture, on the manager thread: a history of cpu 8, GPU 4 one half-life old
    and a pending penalty of cpu 1, GPU 1; then a reconcile of the LocalQueue."""
    from fractions import Fraction

    from pykueue.controllers.cluster_cache import LOCAL_QUEUE

    def seed() -> None:
        now = env.clock.now.timestamp()
        ledger = env.mgr.queues.afs.ledger
        ledger.set_for_test("default/lq-afs", {"cpu": Fraction(8), "GPU": Fraction(4)}, now - 300)
        ledger.push_penalty("default/lq-afs", "default/pending", {"cpu": Fraction(1), "GPU": Fraction(1)}, now)
        env.mgr.work.add((LOCAL_QUEUE, "default/lq-afs"))

    env.mgr.call_in_manager_thread(seed)


def test_local_queue_afs_usage_is_reported_by_the_local_queue_reconcile_and_cleared_on_delete() -> None:
    # Upstream pkg/controller/core/localqueue_controller_test.go
    # TestLocalQueueReconcileReportsAdmissionFairSharingUsageMetric, through the controller manager.
    env = _afs_env()
    try:
        series = labels(name="lq-afs", namespace="default", cluster_queue="cq-afs")
        # The first reconcile writes an empty history: usage 0.
        scrape_until(env.scrape, {AFS_SERIES: {series: 0.0}}, what="the first reconcile's usage")
        _seed_ledger_and_reconcile(env)
        # One half-life decays the history to cpu 4, GPU 2; the pending penalty adds cpu 1, GPU 1:
        # ((4+1)*2 + (2+1)*10) / 2 = 20.
        scrape_until(env.scrape, {AFS_SERIES: {series: 20.0}}, what="the decayed usage with the pending penalty")
        afs = ((env.get(R.LOCAL_QUEUES, "lq-afs").get("status") or {}).get("fairSharing") or {}).get(
            "admissionFairSharingStatus"
        )
        assert afs is not None and afs["consumedResources"] == {"GPU": "2", "cpu": "4"}  # the status written with it
        env.client.delete(R.LOCAL_QUEUES, "lq-afs", "default")
        scrape_until(env.scrape, {AFS_SERIES: ABSENT}, what="the deleted LocalQueue's usage series cleared")
    finally:
        env.close()


def test_local_queue_afs_usage_follows_the_local_queue_selector() -> None:
    metrics = KueueMetrics()
    from pykueue.api.meta import LabelSelector

    metrics.local_queue_selector = LabelSelector(match_labels={"env": "prod"})
    env = _afs_env(metrics, {"env": "prod"})
    try:
        series = labels(name="lq-afs", namespace="default", cluster_queue="cq-afs")
        scrape_until(env.scrape, {AFS_SERIES: {series: 0.0}}, what="the first reconcile's usage")
        _seed_ledger_and_reconcile(env)
        scrape_until(env.scrape, {AFS_SERIES: {series: 20.0}}, what="the seeded usage")
        # No longer selected: the LocalQueue's series are cleared (upstream Update: clearLocalQueueMetrics).
        env.patch(R.LOCAL_QUEUES, "lq-afs", {"metadata": {"labels": {"env": "dev"}}})
        scrape_until(env.scrape, {AFS_SERIES: ABSENT}, what="the unselected LocalQueue's usage cleared")
        # Selected again: reported at once from the ledger (resyncLocalQueueGaugeMetrics), with no reconcile.
        env.mgr.call_in_manager_thread(lambda: env.mgr.queues.afs.ledger.sub_penalty("default/lq-afs", "default/pending"))
        env.patch(R.LOCAL_QUEUES, "lq-afs", {"metadata": {"labels": {"env": "prod"}}})
        # The ledger holds the decayed history (cpu 4, GPU 2) without the dropped penalty: (4*2 + 2*10) / 2 = 14.
        scrape_until(env.scrape, {AFS_SERIES: {series: 14.0}}, what="the reselected LocalQueue's usage from the ledger")
    finally:
        env.close()


def test_cluster_queue_resource_pending_sums_the_pending_total_requests() -> None:
    # Upstream pkg/cache/queue/metrics.go reportCQPendingWorkloads: every pod set's requests times
    # its count, for each resource requested, covered by the ClusterQueue or not.
    env = MetricsEnv(KueueMetrics(cluster_queue_resources=True))
    try:
        env.queues(names=("cq-a",))
        wl = bare_workload("big", "lq-a")
        main = wl["spec"]["podSets"][0]
        main["count"] = 3
        main["template"]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "500m", "memory": "1Gi"}
        side = {"name": "side", "count": 2, "template": {"spec": {"containers": [{"name": "s", "resources": {"requests": {"cpu": "250m"}}}]}}}
        wl["spec"]["podSets"].append(side)
        env.create(R.WORKLOADS, wl)
        cpu = labels(cluster_queue="cq-a", resource="cpu")
        memory = labels(cluster_queue="cq-a", resource="memory")
        # 3 x 500m + 2 x 250m = 2 cpu (nominal 1: it stays pending); memory is not covered and is counted.
        scrape_until(
            env.scrape,
            {"kueue_cluster_queue_resource_pending": {cpu: 2.0, memory: 3.0 * 2**30}},
            what="the pending workload's total requests",
        )
        env.client.delete(R.WORKLOADS, "big", "default")
        scrape_until(env.scrape, {("kueue_cluster_queue_resource_pending", cpu): 0.0}, what="nothing pending")
        env.client.delete(R.LOCAL_QUEUES, "lq-a", "default")
        env.client.delete(R.CLUSTER_QUEUES, "cq-a")
        scrape_until(env.scrape, {"kueue_cluster_queue_resource_pending": ABSENT}, what="the ClusterQueue's series cleared")
    finally:
        env.close()
