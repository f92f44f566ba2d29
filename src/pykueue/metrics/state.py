"""Scrape-time gauges: Kueue's state gauges computed from the controller manager's caches.

Upstream keeps these gauges current by reporting on every cache and queue change
(``pkg/cache/scheduler``, ``pkg/cache/queue/metrics.go``); computing them when Prometheus scrapes
gives the same values without putting any metric work on the scheduling cycle. The manager thread
owns the caches: this collector only reads, takes atomic copies (``list(dict)``) before iterating,
and retries the rare read that races a resize.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from pykueue.api.quantity import CPU, UNLIMITED

if TYPE_CHECKING:
    from pykueue.metrics.families import KueueMetrics

log = logging.getLogger(__name__)

_ATTEMPTS = 5


def resource_float(resource: str, value: int) -> float:
    """``Quantity.AsApproximateFloat64``: pykueue keeps CPU in milli-units."""
    if value >= UNLIMITED:
        return math.inf
    return value / 1000.0 if resource == CPU else float(value)


class StateCollector(Collector):
    """Yields the gauge families; reads ``source`` (a ControllerManager) when set.

    It has no ``describe``: the Python client names a counter's family without ``_total``, so
    upstream's pairs ``kueue_finished_workloads`` (gauge) / ``kueue_finished_workloads_total``
    (counter) would look like a duplicate to the registry's name check, though their series differ.
    """

    def __init__(self, metrics: KueueMetrics) -> None:
        self.metrics = metrics
        self.source: Any = None
        self.elected_cohort_shares: dict[str, float] = {}
        """``kueue_cohort_weighted_share`` of the cohorts without a Cohort object at this replica's
        election (:meth:`resync_on_election`), kept as reported then."""

    def resync_on_election(self, mgr: Any) -> None:
        """On the manager thread, when this replica wins the Lease: upstream's
        ``roleTracker.OnElected`` runs ``Cache.ResyncGaugeMetrics``, whose
        ``ResyncCohortGaugeMetrics`` reports the weighted share (with fair sharing) of every cohort
        of the hierarchy not on a cycle, implicit ones included. The Cohort reconciler then keeps
        the Cohort objects' series, but never reconciles an implicit cohort (it has no parent, so no
        ClusterQueue event enqueues it: ``ClusterQueueAncestors`` leaves out the root), so that
        series stays as reported until a Cohort object of that name comes or goes
        (:meth:`forget_elected_cohort`), even after its ClusterQueues are gone."""
        from pykueue.core.cache.cache import cache_weight_of

        if not (self.metrics.fair_sharing and mgr.sched_options.fair_sharing):
            return
        cache = mgr.cache
        weight_of = cache_weight_of(cache)
        for name, node in sorted(cache.cohorts.items()):
            if name not in cache.cohort_objects and name not in cache.cycle_cohorts:
                self.elected_cohort_shares[name] = _weighted_share(node, weight_of, math.inf)

    def forget_elected_cohort(self, name: str) -> None:
        """A Cohort object ``name`` was created, changed or deleted: the Cohort reconciler reports
        its series, or clears it on the NotFound of a deletion (``metrics.ClearCohortMetrics``)."""
        self.elected_cohort_shares.pop(name, None)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        for attempt in range(_ATTEMPTS):
            families = self._families()
            try:
                if self.source is not None:
                    self._fill(self.source, families)
            except Exception:  # e.g. a dict resized under us by the manager thread: read again
                if attempt == _ATTEMPTS - 1:
                    log.exception("metrics: could not read the controller state; state gauges left empty")
                    families = self._families()
                    break
                continue
            break
        yield from families.values()

    # --- families --------------------------------------------------------------------------------------

    def _families(self) -> dict[str, GaugeMetricFamily]:
        m = self.metrics
        out: dict[str, GaugeMetricFamily] = {}

        def gauge(name: str, doc: str, labels: list[str]) -> None:
            out[name] = GaugeMetricFamily(f"kueue_{name}", doc, labels=[*labels, "replica_role"])

        pending_help = (
            "The number of pending workloads, per 'cluster_queue' and 'status'.\n"
            "'status' can have the following values:\n"
            '- "active" means that the workloads are in the admission queue.\n'
            '- "inadmissible" means there was a failed admission attempt for these workloads and they won\'t be '
            "retried until cluster conditions, which could make this workload admissible, change"
        )
        gauge("pending_workloads", pending_help, ["cluster_queue", "status"])
        if m.scheduling_hashes:
            gauge(
                "pending_scheduling_hashes",
                "The number of unique pending scheduling equivalence hashes, per 'cluster_queue' and 'status'. "
                "Reported only when SchedulingEquivalenceHashing is enabled.",
                ["cluster_queue", "status"],
            )
        if m.unadmitted:
            gauge(
                "unadmitted_workloads",
                "The number of unadmitted workloads, per 'cluster_queue', 'reason', and 'underlying_cause'. "
                "This metric is only emitted when UnadmittedWorkloadsObservability feature gate is enabled.",
                ["cluster_queue", "reason", "underlying_cause"],
            )
        gauge("finished_workloads", "The number of finished workloads per 'cluster_queue'.", ["cluster_queue"])
        gauge(
            "reserving_active_workloads",
            "The number of Workloads that are reserving quota, per 'cluster_queue'",
            ["cluster_queue"],
        )
        gauge(
            "admitted_active_workloads",
            "The number of admitted Workloads that are active, per 'cluster_queue'",
            ["cluster_queue"],
        )
        gauge(
            "cluster_queue_status",
            "Reports 'cluster_queue' with its 'status' (with possible values 'pending', 'active' or 'terminated').\n"
            "For a ClusterQueue, the metric only reports a value of 1 for one of the statuses.",
            ["cluster_queue", "status"],
        )
        if m.cluster_queue_resources:
            cq_res = ["cohort", "cluster_queue", "flavor", "resource"]
            gauge(
                "cluster_queue_resource_reservation",
                "Reports the cluster_queue's total resource reservation within all the flavors",
                cq_res,
            )
            gauge(
                "cluster_queue_resource_pending",
                "Reports the cluster_queue's total pending resource requests. Unlike resource_reservation, "
                "pending workloads have not yet been assigned to flavors.",
                ["cluster_queue", "resource"],
            )
            gauge("cluster_queue_resource_usage", "Reports the cluster_queue's total resource usage within all the flavors", cq_res)
            gauge("cluster_queue_nominal_quota", "Reports the cluster_queue's resource nominal quota within all the flavors", cq_res)
            gauge(
                "cluster_queue_borrowing_limit",
                "Reports the cluster_queue's resource borrowing limit within all the flavors. "
                "If borrowingLimit is unset, this metric reports +Inf.",
                cq_res,
            )
            gauge(
                "cluster_queue_lending_limit",
                "Reports the cluster_queue's resource lending limit within all the flavors. "
                "If lendingLimit is unset, this metric reports +Inf.",
                cq_res,
            )
        if m.cluster_queue_resources and m.fair_sharing:
            gauge(
                "cluster_queue_weighted_share",
                "Reports a value that representing the maximum of the ratios of usage above nominal\n"
                "quota to the lendable resources in the cohort, among all the resources provided by\n"
                "the ClusterQueue, and divided by the weight.\n"
                "If zero, it means that the usage of the ClusterQueue is below the nominal quota.\n"
                "If the ClusterQueue has a weight of zero and is borrowing, this will return NaN.",
                ["cluster_queue", "cohort"],
            )
        if m.fair_sharing:
            gauge(
                "cohort_weighted_share",
                "Reports a value that representing the maximum of the ratios of usage above nominal\n"
                "quota to the lendable resources in the Cohort, among all the resources provided by\n"
                "the Cohort, and divided by the weight.\n"
                "If zero, it means that the usage of the Cohort is below the nominal quota.\n"
                "If the Cohort has a weight of zero and is borrowing, this will return NaN.",
                ["cohort"],
            )
        gauge(
            "cohort_subtree_quota",
            "Reports the cohort's nominal quota aggregated within the cohort's subtree. "
            "The values are reported per resource and flavor",
            ["cohort", "flavor", "resource"],
        )
        gauge(
            "cohort_subtree_resource_reservations",
            "Reports the cohort's resource reservations aggregated within the cohort's subtree. "
            "The values are reported per resource and flavor",
            ["cohort", "flavor", "resource"],
        )
        gauge(
            "cohort_subtree_admitted_active_workloads",
            "The number of admitted Workloads that are active, per cohort's subtree",
            ["cohort"],
        )
        if m.cohort_info:
            gauge(
                "cohort_info",
                "Reports Cohort hierarchy information. The metric has value 1 and can be joined using labels.",
                ["cohort", "parent_cohort", "root_cohort"],
            )
            gauge(
                "cluster_queue_info",
                "Reports ClusterQueue hierarchy information. The metric has value 1 and can be joined using labels.",
                ["cluster_queue", "parent_cohort", "root_cohort"],
            )
        if m.local_queue_metrics:
            lq = ["name", "namespace"]
            gauge(
                "local_queue_pending_workloads",
                pending_help.replace("per 'cluster_queue'", "per 'local_queue'"),
                [*lq, "status"],
            )
            gauge("local_queue_finished_workloads", "The number of finished workloads, per 'local_queue'.", lq)
            gauge(
                "local_queue_reserving_active_workloads",
                "The number of Workloads that are reserving quota, per 'localQueue'",
                lq,
            )
            gauge(
                "local_queue_admitted_active_workloads",
                "The number of admitted Workloads that are active, per 'localQueue'",
                lq,
            )
            gauge(
                "local_queue_status",
                "Reports 'localQueue' with its 'active' status (with possible values 'True', 'False', or 'Unknown').\n"
                "For a LocalQueue, the metric only reports a value of 1 for one of the statuses.",
                [*lq, "active"],
            )
            if m.unadmitted:
                gauge(
                    "local_queue_unadmitted_workloads",
                    "The number of unadmitted workloads, per 'name', 'namespace', 'cluster_queue', 'reason', and "
                    "'underlying_cause'. This metric is only emitted when UnadmittedWorkloadsObservability feature "
                    "gate is enabled.",
                    [*lq, "cluster_queue", "reason", "underlying_cause"],
                )
            gauge(
                "local_queue_resource_reservation",
                "Reports the localQueue's total resource reservation within all the flavors",
                [*lq, "flavor", "resource"],
            )
            gauge(
                "local_queue_resource_usage",
                "Reports the localQueue's total resource usage within all the flavors",
                [*lq, "flavor", "resource"],
            )
        return out

    # --- values ----------------------------------------------------------------------------------------

    def _fill(self, mgr: Any, f: dict[str, GaugeMetricFamily]) -> None:
        from pykueue.core.cache.cache import cache_weight_of
        from pykueue.core.workload.info import is_admitted, is_finished
        from pykueue.metrics.families import CONDITION_STATUSES, CQ_STATUSES

        m = self.metrics
        role = m.role
        cache = mgr.cache
        fair_sharing = m.fair_sharing and bool(mgr.sched_options.fair_sharing)
        weight_of = cache_weight_of(cache)
        queues = mgr.queues
        cqs = dict(cache.cluster_queues)
        pending_cqs = dict(getattr(queues, "_cqs", {}))
        lq_inadmissible: dict[str, int] = {}
        lq_reserving: dict[str, int] = {}
        lq_admitted: dict[str, int] = {}
        lq_reserved_usage: dict[str, dict[tuple[str, str], int]] = {}
        lq_admitted_usage: dict[str, dict[tuple[str, str], int]] = {}
        cq_admitted_count: dict[str, int] = {}

        for name in sorted(cqs):
            cq = cqs[name]
            active, inadmissible = queues.pending_breakdown(name)
            f["pending_workloads"].add_metric([name, "active", role], active)
            f["pending_workloads"].add_metric([name, "inadmissible", role], inadmissible)
            pcq = pending_cqs.get(name)
            if pcq is not None:
                parked = list(pcq.inadmissible.values())
                for entry in parked:
                    key = entry.info.local_queue
                    lq_inadmissible[key] = lq_inadmissible.get(key, 0) + 1
                if m.scheduling_hashes:
                    waiting = [*pcq.active.items(), *list(pcq.inflight.values())]
                    hashes = f["pending_scheduling_hashes"]
                    hashes.add_metric([name, "active", role], len({e.info.scheduling_hash for e in waiting}))
                    hashes.add_metric([name, "inadmissible", role], len({e.info.scheduling_hash for e in parked}))
            workloads = list(cq.workloads.values())
            admitted_usage: dict[tuple[str, str], int] = {}
            n_admitted = 0
            for info in workloads:
                admitted = is_admitted(info.obj)
                lq_key = info.local_queue
                lq_reserving[lq_key] = lq_reserving.get(lq_key, 0) + 1
                _add(lq_reserved_usage.setdefault(lq_key, {}), info.usage)
                if admitted:
                    n_admitted += 1
                    lq_admitted[lq_key] = lq_admitted.get(lq_key, 0) + 1
                    _add(admitted_usage, info.usage)
                    _add(lq_admitted_usage.setdefault(lq_key, {}), info.usage)
            cq_admitted_count[name] = n_admitted
            f["reserving_active_workloads"].add_metric([name, role], len(workloads))
            f["admitted_active_workloads"].add_metric([name, role], n_admitted)
            status = "terminating" if cq.terminating else cq.status
            for s in CQ_STATUSES:
                f["cluster_queue_status"].add_metric([name, s, role], 1.0 if s == status else 0.0)
            if m.cohort_info:
                parent = cq.node.parent
                f["cluster_queue_info"].add_metric(
                    [name, parent.name if parent is not None else "", _root_name(parent), role], 1
                )
            if m.cluster_queue_resources and fair_sharing:
                f["cluster_queue_weighted_share"].add_metric(
                    [name, cq.cohort_name or "", role], _weighted_share(cq.node, weight_of, math.nan)
                )
            if m.cluster_queue_resources:
                for res, amount in sorted(_pending_requests(cq, pcq).items()):
                    f["cluster_queue_resource_pending"].add_metric([name, res, role], resource_float(res, amount))
                cohort = cq.cohort_name or ""
                usage = dict(cq.node.usage)
                quotas = dict(cq.node.quotas)
                for rg in cq.resource_groups:
                    for flavor in rg.flavors:
                        for res in rg.covered:
                            labels = [cohort, name, flavor, res, role]
                            q = quotas.get((flavor, res))
                            f["cluster_queue_resource_reservation"].add_metric(
                                labels, resource_float(res, usage.get((flavor, res), 0))
                            )
                            f["cluster_queue_resource_usage"].add_metric(
                                labels, resource_float(res, admitted_usage.get((flavor, res), 0))
                            )
                            nominal = q.nominal if q is not None else 0
                            f["cluster_queue_nominal_quota"].add_metric(labels, resource_float(res, nominal))
                            borrowing = q.borrowing_limit if q is not None else None
                            lending = q.lending_limit if q is not None else None
                            f["cluster_queue_borrowing_limit"].add_metric(
                                labels, math.inf if borrowing is None else resource_float(res, borrowing)
                            )
                            f["cluster_queue_lending_limit"].add_metric(
                                labels, math.inf if lending is None else resource_float(res, lending)
                            )

        finished_cq: dict[str, int] = {}
        finished_lq: dict[str, int] = {}
        unadmitted: dict[tuple[str, str, str], int] = {}
        lq_unadmitted: dict[tuple[str, str, str, str], int] = {}
        for wl in list(mgr.workloads.values()):
            if not is_finished(wl):
                if m.unadmitted and not is_admitted(wl) and wl.metadata.deletion_timestamp is None:
                    # pkg/cache/queue/unadmitted_workloads.go getUnadmittedWorkloadStatus
                    reason, cause = _unadmitted_reasons(wl)
                    cq_name = mgr.cluster_queue_of(wl) or ""
                    unadmitted[(cq_name, reason, cause)] = unadmitted.get((cq_name, reason, cause), 0) + 1
                    lq_key = f"{wl.metadata.namespace}/{wl.spec.queue_name}"
                    key4 = (lq_key, cq_name, reason, cause)
                    lq_unadmitted[key4] = lq_unadmitted.get(key4, 0) + 1
                continue
            cq_name = mgr.cluster_queue_of(wl)
            if cq_name:
                finished_cq[cq_name] = finished_cq.get(cq_name, 0) + 1
            if wl.spec.queue_name:
                key = f"{wl.metadata.namespace}/{wl.spec.queue_name}"
                finished_lq[key] = finished_lq.get(key, 0) + 1
        for name in sorted(cqs):
            f["finished_workloads"].add_metric([name, role], finished_cq.get(name, 0))
        for (cq_name, reason, cause), count in sorted(unadmitted.items()):
            f["unadmitted_workloads"].add_metric([cq_name, reason, cause, role], count)

        cohorts = dict(cache.cohorts)
        cohort_objects = dict(cache.cohort_objects)
        for name in sorted(cohorts):
            node = cohorts[name]
            if fair_sharing and name in cohort_objects:
                # Upstream's Cohort reconciler reports it (``updateCohortStatusIfChanged``) for a
                # Cohort object it reads and clears it when the read is NotFound: a cohort only
                # ClusterQueues or a parentName name (implicit) has no series, nor has a deleted one.
                f["cohort_weighted_share"].add_metric([name, role], _weighted_share(node, weight_of, math.inf))
            if m.cohort_info:
                parent = node.parent
                f["cohort_info"].add_metric(
                    [name, parent.name if parent is not None else "", _root_name(node), role], 1
                )
            reservations: dict[tuple[str, str], int] = {}
            admitted_active = 0
            for cq_node in node.iter_cluster_queues():
                _add(reservations, dict(cq_node.usage))
                admitted_active += cq_admitted_count.get(cq_node.name, 0)
            # Upstream clears a (flavor, resource) series whose value is not positive.
            for (flavor, res), value in sorted(dict(node.subtree_quota).items()):
                if value > 0:
                    f["cohort_subtree_quota"].add_metric([name, flavor, res, role], resource_float(res, value))
            for (flavor, res), value in sorted(reservations.items()):
                if value > 0:
                    f["cohort_subtree_resource_reservations"].add_metric(
                        [name, flavor, res, role], resource_float(res, value)
                    )
            f["cohort_subtree_admitted_active_workloads"].add_metric([name, role], admitted_active)
        if fair_sharing:
            for name, share in sorted(dict(self.elected_cohort_shares).items()):
                if name not in cohort_objects:
                    f["cohort_weighted_share"].add_metric([name, role], share)

        if not m.local_queue_metrics:
            return
        lqs = dict(mgr.local_queues)
        for key in sorted(lqs):
            lq = lqs[key]
            if not mgr.metrics.expose_local_queue(lq):
                continue
            ns, name = lq.metadata.namespace, lq.metadata.name
            total = queues.pending_count_local_queue(key)
            inadmissible = lq_inadmissible.get(key, 0)
            f["local_queue_pending_workloads"].add_metric([name, ns, "active", role], max(0, total - inadmissible))
            f["local_queue_pending_workloads"].add_metric([name, ns, "inadmissible", role], inadmissible)
            f["local_queue_finished_workloads"].add_metric([name, ns, role], finished_lq.get(key, 0))
            f["local_queue_reserving_active_workloads"].add_metric([name, ns, role], lq_reserving.get(key, 0))
            f["local_queue_admitted_active_workloads"].add_metric([name, ns, role], lq_admitted.get(key, 0))
            active = "Unknown"
            for c in lq.status.conditions if lq.status is not None else []:
                if c.type == "Active":
                    active = c.status
            for s in CONDITION_STATUSES:
                f["local_queue_status"].add_metric([name, ns, s, role], 1.0 if s == active else 0.0)
            if m.unadmitted:
                for (lq_key, cq_name, reason, cause), count in sorted(lq_unadmitted.items()):
                    if lq_key == key:
                        f["local_queue_unadmitted_workloads"].add_metric([name, ns, cq_name, reason, cause, role], count)
            cq = cqs.get(lq.spec.cluster_queue)
            if cq is None:
                continue
            reserved = lq_reserved_usage.get(key, {})
            used = lq_admitted_usage.get(key, {})
            for rg in cq.resource_groups:
                for flavor in rg.flavors:
                    for res in rg.covered:
                        labels = [name, ns, flavor, res, role]
                        f["local_queue_resource_reservation"].add_metric(
                            labels, resource_float(res, reserved.get((flavor, res), 0))
                        )
                        f["local_queue_resource_usage"].add_metric(labels, resource_float(res, used.get((flavor, res), 0)))


def _pending_requests(cq: Any, pcq: Any) -> dict[str, int]:
    """Upstream ``PendingWorkloads.PendingResources`` (``pkg/cache/queue/pending_workloads.go``): the
    total requests (``workload.Info.TotalRequests``) of the ClusterQueue's pending workloads, in the
    heap, parked inadmissible or popped by the scheduler (inflight), per resource; every resource the
    ClusterQueue covers is there, at 0 when nothing pending requests it (``UpdateConfiguredResources``).
    Upstream also keeps at 0, until the ClusterQueue's next update, a resource it does not cover that
    a pending workload requested before; computed here, such a series goes with the last request."""
    total = {res: 0 for rg in cq.resource_groups for res in rg.covered}
    if pcq is None:
        return total
    for entry in [*pcq.active.items(), *list(pcq.inadmissible.values()), *list(pcq.inflight.values())]:
        for ps in entry.info.pod_sets:
            for res, v in ps.total.items():
                total[res] = total.get(res, 0) + v
    return total


def _weighted_share(node: Any, weight_of: Any, infinite: float) -> float:
    """``PreciseWeightedShare``; a zero-weight node that borrows reports ``infinite``
    (NaN for ClusterQueues, +Inf for cohorts, as ``reportWeightedShare`` and the cache do)."""
    from pykueue.core.quota.drs import dominant_resource_share

    drs = dominant_resource_share(node, weight_of=weight_of)
    return infinite if drs.zero_weight_borrows() else float(drs.weighted())


def _unadmitted_reasons(wl: Any) -> tuple[str, str]:
    """(Admitted reason or ``NoReservation``, QuotaReserved reason or ``PendingEvaluation``)."""
    admitted = quota = None
    for c in wl.status.conditions:
        if c.type == "Admitted":
            admitted = c.reason
        elif c.type == "QuotaReserved":
            quota = c.reason
    return admitted or "NoReservation", quota or "PendingEvaluation"


def _add(total: dict[tuple[str, str], int], usage: dict[tuple[str, str], int]) -> None:
    for fr, v in usage.items():
        total[fr] = total.get(fr, 0) + v


def _root_name(node: Any) -> str:
    if node is None:
        return ""
    while node.parent is not None:
        node = node.parent
    return str(node.name)
