"""``replica_role`` follows leadership (upstream ``pkg/util/roletracker``): a ``--leader-elect``
standby keeps its caches and queues and reports its gauges as ``follower``; once it leads, it
reconciles, schedules and counts as ``leader``."""

from __future__ import annotations

import time

from conftest import MetricsEnv, scrape_until, wait
from test_controller_metrics import bare_workload, true

from pykueue.client import resources as R
from pykueue.client.interface import Conflict
from pykueue.metrics import KueueMetrics
from pykueue.metrics.families import ROLE_FOLLOWER, ROLE_LEADER, ROLE_STANDALONE


def key(role: str, **kv: str) -> frozenset[tuple[str, str]]:
    return frozenset({**kv, "replica_role": role}.items())


def test_standby_reports_follower_then_leader_after_winning() -> None:
    role = {"now": ROLE_FOLLOWER}
    env = MetricsEnv(KueueMetrics(replica_role=lambda: role["now"]), standby=True)
    try:
        env.queues(cpu=1, names=("cq-a",))
        env.create(R.WORKLOADS, bare_workload("w", "lq-a"))
        pending = key(ROLE_FOLLOWER, cluster_queue="cq-a", status="active")
        # The standby's queue manager holds the workload (the visibility API and gauges need it) ...
        wait(lambda: env.scrape().get("kueue_pending_workloads", {}).get(pending) == 1, what="follower pending gauge")
        time.sleep(0.5)  # several manager passes: a standby must not have scheduled anything by now
        assert not true(env.get(R.WORKLOADS, "w"), "QuotaReserved"), "a standby admitted a workload"
        assert "kueue_quota_reserved_workloads_total" not in env.scrape()
        assert not env.mgr.leading

        # ... and once it leads (role first, as roletracker flips before the controllers start):
        role["now"] = ROLE_LEADER
        env.mgr.lead()
        wait(lambda: true(env.get(R.WORKLOADS, "w"), "Admitted"), what="admitted by the new leader")
        # Counted right after the write the API already shows: wait for the counts, not just the object.
        samples = scrape_until(
            env.scrape,
            {
                "kueue_quota_reserved_workloads_total": {key(ROLE_LEADER, cluster_queue="cq-a", priority_class=""): 1.0},
                "kueue_admitted_workloads_total": {key(ROLE_LEADER, cluster_queue="cq-a", priority_class=""): 1.0},
                "kueue_admitted_active_workloads": {key(ROLE_LEADER, cluster_queue="cq-a"): 1.0},
            },
            what="the new leader's admission counted",
        )
        assert {dict(k)["replica_role"] for k in samples["kueue_pending_workloads"]} == {ROLE_LEADER}

        # A lost lease (the elector sets follower again) relabels every series reported from then on.
        role["now"] = ROLE_FOLLOWER
        assert {dict(k)["replica_role"] for k in env.scrape()["kueue_admitted_active_workloads"]} == {ROLE_FOLLOWER}
    finally:
        env.close()


def test_without_leader_election_the_role_is_standalone(env: MetricsEnv) -> None:
    env.queues(cpu=1, names=("cq-a",))
    env.create(R.WORKLOADS, bare_workload("w", "lq-a"))
    wait(lambda: true(env.get(R.WORKLOADS, "w"), "Admitted"), what="admitted")
    # Counted right after the write the API already shows: wait for the count, not just the object.
    scrape_until(
        env.scrape,
        {"kueue_admitted_workloads_total": {key(ROLE_STANDALONE, cluster_queue="cq-a", priority_class=""): 1.0}},
        what="the admission counted as standalone",
    )


def test_role_follows_a_real_election_and_returns_to_follower_when_the_lease_is_lost() -> None:
    """The controller's wiring: ``track_role(lambda: elector.role)`` with client-go's semantics."""
    import threading

    from pykueue.apiserver.app import create_app
    from pykueue.client.inprocess import InProcessClient
    from pykueue.controllers.leaderelection import LEASES, ElectionConfig, LeaderElector
    from pykueue.store import Store

    store = Store(None)
    _, parts = create_app(store)
    parts.bootstrap()
    client = InProcessClient(parts.handlers)
    client.create(R.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}})
    started, lost = threading.Event(), threading.Event()
    config = ElectionConfig(namespace="kueue-system", identity="me", lease_duration=1.5, renew_deadline=1.0, retry_period=0.2)
    elector = LeaderElector(client, config, on_started=started.set, on_lost=lost.set)
    metrics = KueueMetrics()
    metrics.track_role(lambda: elector.role)
    try:
        metrics.preempted("cq", "InClusterQueue")
        elector.start()
        assert started.wait(10)
        metrics.preempted("cq", "InClusterQueue")
        # Somebody else takes the Lease: renewals fail until the renew deadline, then it is lost.
        # The holder renews every 0.2 s: a renewal between the read and the write makes the write
        # a Conflict, and the contender reads again.
        def take_the_lease() -> bool:
            lease = client.get(LEASES, config.name, "kueue-system")
            try:
                client.replace(LEASES, {**lease, "spec": {**lease["spec"], "holderIdentity": "other"}})
            except Conflict:
                return False
            return True

        wait(take_the_lease, what="the Lease taken by another holder")
        assert lost.wait(10)
        metrics.preempted("cq", "InClusterQueue")
        samples = {
            dict(s.labels)["replica_role"]: s.value
            for fam in metrics.registry.collect()
            for s in fam.samples
            if s.name == "kueue_preempted_workloads_total"
        }
        assert samples == {ROLE_FOLLOWER: 2.0, ROLE_LEADER: 1.0}
    finally:
        elector.stop(release=False)
        store.close()
