"""Kueue's Prometheus metric families: upstream's names, labels, help and buckets.

Mirrors ``pkg/metrics/metrics.go`` (``InitMetricVectors``, ``Register``, ``RegisterLQMetrics``):
subsystem ``kueue``, no namespace prefix, a trailing ``replica_role`` label on everything but
``kueue_build_info``. Counters and histograms live here as ``prometheus_client`` vectors whose
labelled children are cached (a scheduling cycle must not pay for label validation and the
client's locking lookup) and keep their values without the client's locks
(:mod:`pykueue.metrics.owned`: one thread writes them). The state gauges (pending, reserving/admitted, status, quota/usage,
cohort and LocalQueue gauges) are produced at scrape time by :mod:`pykueue.metrics.state`.

Custom metric labels (alpha gate ``CustomMetricLabels``, off by default) are not implemented.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable, Sequence
from typing import Any

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from pykueue.api.meta import LabelSelector
from pykueue.metrics.owned import OwnedCounter, OwnedHistogram

# Go's client does not expose ``*_created`` series; neither does upstream Kueue.
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

SUBSYSTEM = "kueue"

ROLE_STANDALONE = "standalone"
"""``roletracker.GetRole(nil)``: no leader election (``pykueue serve``, a controller without
``--leader-elect``)."""
ROLE_LEADER = "leader"
ROLE_FOLLOWER = "follower"
"""``roletracker.RoleLeader`` / ``RoleFollower``: a ``--leader-elect`` replica reports ``follower``
until it holds the Lease and ``leader`` from then on."""

RESULT_SUCCESS = "success"
RESULT_INADMISSIBLE = "inadmissible"
PENDING_STATUS_ACTIVE = "active"
PENDING_STATUS_INADMISSIBLE = "inadmissible"
CQ_STATUSES = ("pending", "active", "terminating")
CONDITION_STATUSES = ("True", "False", "Unknown")


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """``prometheus.ExponentialBuckets``."""
    out = []
    value = start
    for _ in range(count):
        out.append(value)
        value *= factor
    return out


def generate_exponential_buckets(count: int) -> list[float]:
    """``generateExponentialBuckets``: 1 then 2.5·2^k (``count`` buckets in all)."""
    return [1.0, *exponential_buckets(2.5, 2, count - 1)]


H14 = generate_exponential_buckets(14)
H16 = generate_exponential_buckets(16)
HLAT = exponential_buckets(0.01, 2, 11)
HDEF = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0]
"""Go's ``prometheus.DefBuckets`` (Python's client has more defaults)."""

_REASON_HELP = """
The label 'reason' can have the following values:
- "Preempted" means that the workload was evicted in order to free resources for a workload with a higher priority or reclamation of nominal quota.
- "PodsReadyTimeout" means that the eviction took place due to a PodsReady timeout.
- "AdmissionCheck" means that the workload was evicted because at least one admission check transitioned to False.
- "ClusterQueueStopped" means that the workload was evicted because the ClusterQueue is stopped.
- "LocalQueueStopped" means that the workload was evicted because the LocalQueue is stopped.
- "NodeFailures" means that the workload was evicted due to node failures when using TopologyAwareScheduling.
- "Deactivated" means that the workload was evicted because spec.active is set to false."""

_CAUSE_HELP = """
The label 'underlying_cause' can have the following values:
- "" means that the value in 'reason' label is the root cause for eviction.
- "AdmissionCheck" means that the workload was evicted by Kueue due to a rejected admission check.
- "MaximumExecutionTimeExceeded" means that the workload was evicted by Kueue due to maximum execution time exceeded.
- "RequeuingLimitExceeded" means that the workload was evicted by Kueue due to requeuing limit exceeded."""

_RESULT_HELP = """
The label 'result' can have the following values:
- 'success' means that at least one workload was admitted.,
- 'inadmissible' means that no workload was admitted."""


class KueueMetrics:
    """One set of Kueue metric families in its own registry (one per controller manager).

    ``local_queue_metrics``: the ``LocalQueueMetrics`` gate and ``metrics.localQueueMetrics.enable``
    (upstream registers the ``local_queue_*`` families only then). ``cluster_queue_resources``:
    ``metrics.enableClusterQueueResources``. ``cohort_info``: the ``MetricsForCohorts`` gate.
    """

    def __init__(
        self,
        *,
        local_queue_metrics: bool = True,
        cluster_queue_resources: bool = False,
        cohort_info: bool = True,
        fair_sharing: bool = True,
        creation_latency: bool = True,
        scheduling_hashes: bool = True,
        unadmitted: bool = True,
        replica_role: str | Callable[[], str] = ROLE_STANDALONE,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.local_queue_metrics = local_queue_metrics
        self.cluster_queue_resources = cluster_queue_resources
        self.cohort_info = cohort_info
        self.fair_sharing = fair_sharing
        self.scheduling_hashes = scheduling_hashes
        self.unadmitted = unadmitted
        # ``roletracker.GetRole``: read at every report, as upstream passes the tracker to each
        # Report* function, so the series follow leadership.
        self._role: Callable[[], str] = replica_role if callable(replica_role) else (lambda: replica_role)
        self.local_queue_selector: LabelSelector | None = None
        """``metrics.localQueueMetrics.localQueueSelector`` (None: every LocalQueue)."""
        self._children: dict[tuple[int, tuple[str, ...], str], Any] = {}
        r = self.registry

        # Written by the manager thread only: children without the client's locks (metrics/owned.py).
        def counter(name: str, doc: str, labels: Sequence[str]) -> Counter:
            return OwnedCounter(f"{SUBSYSTEM}_{name}", doc, [*labels, "replica_role"], registry=r)

        def histogram(name: str, doc: str, labels: Sequence[str], buckets: Sequence[float]) -> Histogram:
            return OwnedHistogram(f"{SUBSYSTEM}_{name}", doc, [*labels, "replica_role"], registry=r, buckets=buckets)

        build = Gauge(
            f"{SUBSYSTEM}_build_info",
            "Kueue build information. 1 labeled by git version, git commit, build date, go version, compiler, platform",
            ["git_version", "git_commit", "build_date", "go_version", "compiler", "platform"],
            registry=r,
        )
        build.labels(
            f"v{_version()}",
            "",
            "",
            f"python{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}",
            platform.python_implementation().lower(),
            f"{sys.platform}/{platform.machine().lower()}",
        ).set(1)

        # --- scheduler ------------------------------------------------------------------------------
        self.admission_attempts_total = counter(
            "admission_attempts_total",
            "The total number of attempts to admit workloads.\n"
            "Each admission attempt might try to admit more than one workload." + _RESULT_HELP,
            ["result"],
        )
        self.admission_attempt_duration = histogram(
            "admission_attempt_duration_seconds", "The latency of an admission attempt." + _RESULT_HELP, ["result"], HDEF
        )
        # Children are created on first use, as Go's WithLabelValues does: a series appears only
        # once something was counted into it.
        self._attempt: dict[tuple[bool, str], tuple[Any, Any]] = {}

        self.admission_cycle_preemption_skips = Gauge(
            f"{SUBSYSTEM}_admission_cycle_preemption_skips",
            "The number of Workloads in the ClusterQueue that got preemption candidates "
            "but had to be skipped because other ClusterQueues needed the same resources in the same cycle",
            ["cluster_queue", "replica_role"],
            registry=r,
        )
        self.preemption_target_recomputations_total = counter(
            "preemption_target_recomputations_total",
            "The total number of preemption target recomputations triggered when a workload's preemption\n"
            "targets overlap with targets selected by another workload in the same scheduling cycle.\n"
            "The label 'result' can have the following values:\n"
            "- 'new_targets' means the recomputation resolved the overlap by selecting non-overlapping targets.\n"
            "- 'deferred_fit' means the workload will fit only after earlier preemptions in the cycle complete.\n"
            "- 'skipped' means recomputation produced neither a deferred fit nor a fit with non-overlapping "
            "targets, including cases where overlap is removed but the workload still fails the fit check.\n"
            "Globally configured custom ClusterQueue labels are also appended to the base labels.",
            ["cluster_queue", "result"],
        )
        # Gate MetricForWorkloadCreationLatency (registered only when on, as upstream's Register).
        self.workload_creation_latency: Histogram | None = None
        if creation_latency:
            self.workload_creation_latency = histogram(
                "workload_creation_latency_seconds",
                "The time between a job was created until its workload was created, per 'job_kind'. "
                "Entries are only recorded for objects with generation 1.",
                ["job_kind"],
                HLAT,
            )

        # --- ClusterQueue counters and histograms ---------------------------------------------------
        cq_pc = ["cluster_queue", "priority_class"]
        self.quota_reserved_workloads_total = counter(
            "quota_reserved_workloads_total", "The total number of quota reserved workloads per 'cluster_queue'", cq_pc
        )
        self.quota_reserved_wait_time = histogram(
            "quota_reserved_wait_time_seconds",
            "The time between a workload was created or requeued until it got quota reservation, per 'cluster_queue'",
            cq_pc,
            H14,
        )
        self.admitted_workloads_total = counter(
            "admitted_workloads_total", "The total number of admitted workloads per 'cluster_queue'", cq_pc
        )
        self.admission_wait_time = histogram(
            "admission_wait_time_seconds",
            "The time between a workload was created or requeued until admission, per 'cluster_queue'",
            cq_pc,
            H16,
        )
        self.admission_checks_wait_time = histogram(
            "admission_checks_wait_time_seconds",
            "The time from when a workload got the quota reservation until admission, per 'cluster_queue'",
            cq_pc,
            H14,
        )
        self.ready_wait_time = histogram(
            "ready_wait_time_seconds",
            "The time between a workload was created or requeued until ready, per 'cluster_queue'",
            cq_pc,
            H14,
        )
        self.admitted_until_ready_wait_time = histogram(
            "admitted_until_ready_wait_time_seconds",
            "The time between a workload was admitted until ready, per 'cluster_queue'",
            cq_pc,
            H14,
        )
        self.finished_workloads_total = counter(
            "finished_workloads_total", "The total number of finished workloads per 'cluster_queue'", cq_pc
        )
        self.execution_time = histogram(
            "execution_time_seconds",
            "The total execution time of a finished admitted workload (from first admission to completion, "
            "including time across evict/readmit cycles), per 'cluster_queue'",
            cq_pc,
            H16,
        )
        evicted_labels = ["cluster_queue", "reason", "underlying_cause", "priority_class"]
        self.evicted_workloads_total = counter(
            "evicted_workloads_total",
            "The number of evicted workloads per 'cluster_queue'," + _REASON_HELP + _CAUSE_HELP,
            evicted_labels,
        )
        self.evicted_workloads_once_total = counter(
            "evicted_workloads_once_total",
            "The number of unique workload evictions per 'cluster_queue'," + _REASON_HELP + _CAUSE_HELP,
            evicted_labels,
        )
        self.pods_ready_to_evicted_time = histogram(
            "pods_ready_to_evicted_time_seconds",
            "The number of seconds between a workload's pods being ready and eviction workloads per 'cluster_queue',"
            + _REASON_HELP
            + _CAUSE_HELP,
            ["cluster_queue", "reason", "underlying_cause"],
            H14,
        )
        self.preempted_workloads_total = counter(
            "preempted_workloads_total",
            "The number of preempted workloads per 'preempting_cluster_queue',\n"
            "The label 'reason' can have the following values:\n"
            '- "InClusterQueue" means that the workload was preempted by a workload in the same ClusterQueue.\n'
            '- "InCohortReclamation" means that the workload was preempted by a workload in the same cohort due to '
            "reclamation of nominal quota.\n"
            '- "InCohortFairSharing" means that the workload was preempted by a workload in the same cohort Fair Sharing.\n'
            '- "InCohortReclaimWhileBorrowing" means that the workload was preempted by a workload in the same cohort '
            "due to reclamation of nominal quota while borrowing.",
            ["preempting_cluster_queue", "reason"],
        )
        self.workload_eviction_latency = histogram(
            "workload_eviction_latency_seconds",
            "The time from workload eviction (WorkloadEvicted condition becomes True) until the workload returns to "
            "Pending (quota released)." + _REASON_HELP,
            ["cluster_queue", "reason"],
            H14,
        )
        self.cohort_subtree_admitted_workloads_total = counter(
            "cohort_subtree_admitted_workloads_total",
            "The total number of admitted workloads per cohort's subtree",
            ["cohort", "priority_class"],
        )

        # --- LocalQueue counters and histograms (gate LocalQueueMetrics) -----------------------------
        self.lq: LocalQueueFamilies | None = None
        if local_queue_metrics:
            self.lq = LocalQueueFamilies(counter, histogram, r)

        # ``ClearClusterQueueMetrics`` / ``ClearLocalQueueMetrics``: the series a deleted queue leaves.
        self._cq_scoped: dict[int, Any] = {
            id(f): f
            for f in (
                self.quota_reserved_workloads_total,
                self.quota_reserved_wait_time,
                self.finished_workloads_total,
                self.execution_time,
                self.pods_ready_to_evicted_time,
                self.admitted_workloads_total,
                self.admission_wait_time,
                self.admission_checks_wait_time,
                self.ready_wait_time,
                self.admitted_until_ready_wait_time,
                self.evicted_workloads_total,
                self.evicted_workloads_once_total,
                self.preempted_workloads_total,
                self.workload_eviction_latency,
                self.admission_cycle_preemption_skips,
                self.preemption_target_recomputations_total,
            )
        }
        self._lq_scoped: dict[int, Any] = {}
        if self.lq is not None:
            self._lq_scoped = {id(f): f for f in vars(self.lq).values()}

        # Scrape-time gauges (imported here: state.py imports this module's constants).
        from pykueue.metrics.state import StateCollector

        self.state = StateCollector(self)
        r.register(self.state)

    @property
    def role(self) -> str:
        """The ``replica_role`` label value now."""
        return self._role()

    def track_role(self, role: Callable[[], str]) -> None:
        """Label from now on with what ``role`` says (``roletracker.NewRoleTracker(mgr.Elected())``)."""
        self._role = role

    # --- cached children ------------------------------------------------------------------------------

    def child(self, family: Any, *values: str) -> Any:
        """The labelled child of ``family`` for ``values`` (+ the current replica_role), created once."""
        role = self._role()
        key = (id(family), values, role)
        c = self._children.get(key)
        if c is None:
            c = family.labels(*values, role)
            self._children[key] = c
        return c

    def _clear(self, scoped: dict[int, Any], prefix: tuple[str, ...]) -> None:
        n = len(prefix)
        for key in [k for k in self._children if k[0] in scoped and k[1][:n] == prefix]:
            scoped[key[0]].remove(*key[1], key[2])
            del self._children[key]

    def clear_cluster_queue(self, cq: str) -> None:
        """``ClearClusterQueueMetrics``: a deleted ClusterQueue's counters and histograms go too
        (its state gauges disappear with it from the scrape)."""
        self._clear(self._cq_scoped, (cq,))

    def clear_local_queue(self, namespace: str, name: str) -> None:
        """``ClearLocalQueueMetrics``."""
        self._clear(self._lq_scoped, (name, namespace))

    # --- upstream's Report* functions -----------------------------------------------------------------

    def admission_attempt(self, success: bool, seconds: float) -> None:
        """``AdmissionAttempt``: one scheduling cycle that processed heads."""
        role = self._role()
        pair = self._attempt.get((success, role))
        if pair is None:
            res = RESULT_SUCCESS if success else RESULT_INADMISSIBLE
            pair = (self.admission_attempts_total.labels(res, role), self.admission_attempt_duration.labels(res, role))
            self._attempt[(success, role)] = pair
        total, duration = pair
        total.inc()
        duration.observe(seconds)

    def preemption_skips(self, cq: str, count: int) -> None:
        """``ReportAdmissionCyclePreemptionSkips``."""
        self.child(self.admission_cycle_preemption_skips, cq).set(count)

    def preemption_target_recomputation(self, cq: str, result: str) -> None:
        """``ReportPreemptionTargetRecomputation``."""
        self.child(self.preemption_target_recomputations_total, cq, result).inc()

    def workload_creation(self, job_kind: str, seconds: float) -> None:
        """``RecordWorkloadCreationLatency``."""
        if self.workload_creation_latency is not None:
            self.child(self.workload_creation_latency, job_kind).observe(seconds)

    def quota_reserved(self, cq: str, priority_class: str, wait: float, lq: tuple[str, str] | None) -> None:
        """``QuotaReservedWorkload`` (+ ``LocalQueueQuotaReservedWorkload``)."""
        self.child(self.quota_reserved_workloads_total, cq, priority_class).inc()
        self.child(self.quota_reserved_wait_time, cq, priority_class).observe(wait)
        if self.lq is not None and lq is not None:
            self.child(self.lq.quota_reserved_workloads_total, *lq, priority_class).inc()
            self.child(self.lq.quota_reserved_wait_time, *lq, priority_class).observe(wait)

    def admitted(
        self,
        cq: str,
        priority_class: str,
        wait: float,
        checks_wait: float | None,
        cohorts: Sequence[str],
        lq: tuple[str, str] | None,
    ) -> None:
        """``AdmittedWorkload`` (+ checks wait time, cohort subtree and LocalQueue variants)."""
        for cohort in cohorts:
            self.child(self.cohort_subtree_admitted_workloads_total, cohort, priority_class).inc()
        self.child(self.admitted_workloads_total, cq, priority_class).inc()
        self.child(self.admission_wait_time, cq, priority_class).observe(wait)
        if self.lq is not None and lq is not None:
            self.child(self.lq.admitted_workloads_total, *lq, priority_class).inc()
            self.child(self.lq.admission_wait_time, *lq, priority_class).observe(wait)
        if checks_wait is not None:
            self.child(self.admission_checks_wait_time, cq, priority_class).observe(checks_wait)
            if self.lq is not None and lq is not None:
                self.child(self.lq.admission_checks_wait_time, *lq, priority_class).observe(checks_wait)

    def evicted(
        self,
        cq: str,
        reason: str,
        cause: str,
        priority_class: str,
        once: bool,
        pods_ready_to_evicted: float | None,
        lq: tuple[str, str] | None,
    ) -> None:
        """``reportEvictedWorkload`` and ``ReportEvictedWorkloadsOnce`` (pkg/workload/evict)."""
        self.child(self.evicted_workloads_total, cq, reason, cause, priority_class).inc()
        if pods_ready_to_evicted is not None:
            self.child(self.pods_ready_to_evicted_time, cq, reason, cause).observe(pods_ready_to_evicted)
        if self.lq is not None and lq is not None:
            self.child(self.lq.evicted_workloads_total, *lq, reason, cause, priority_class).inc()
        if once:
            self.child(self.evicted_workloads_once_total, cq, reason, cause, priority_class).inc()

    def preempted(self, preempting_cq: str, reason: str) -> None:
        """``ReportPreemption``."""
        self.child(self.preempted_workloads_total, preempting_cq, reason).inc()

    def eviction_latency(self, cq: str, reason: str, seconds: float) -> None:
        """``ReportWorkloadEvictionLatency`` (negative skew clamped to 0)."""
        self.child(self.workload_eviction_latency, cq, reason).observe(max(0.0, seconds))

    def finished(self, cq: str, priority_class: str, execution: float | None, lq: tuple[str, str] | None) -> None:
        """``reportFinishedWorkload`` (workload controller)."""
        self.child(self.finished_workloads_total, cq, priority_class).inc()
        if self.lq is not None and lq is not None:
            self.child(self.lq.finished_workloads_total, *lq, priority_class).inc()
        if execution is not None:
            self.child(self.execution_time, cq, priority_class).observe(max(0.0, execution))
            if self.lq is not None and lq is not None:
                self.child(self.lq.execution_time, *lq, priority_class).observe(max(0.0, execution))

    def ready(self, cq: str, priority_class: str, queued: float, admitted: float | None, lq: tuple[str, str] | None) -> None:
        """``ReadyWaitTime`` and ``ReportAdmittedUntilReadyWaitTime`` (jobframework reconciler)."""
        self.child(self.ready_wait_time, cq, priority_class).observe(queued)
        if admitted is not None:
            self.child(self.admitted_until_ready_wait_time, cq, priority_class).observe(admitted)
        if self.lq is not None and lq is not None:
            self.child(self.lq.ready_wait_time, *lq, priority_class).observe(queued)
            if admitted is not None:
                self.child(self.lq.admitted_until_ready_wait_time, *lq, priority_class).observe(admitted)

    def local_queue_afs_usage(self, lq: tuple[str, str], cq: str, usage: float) -> None:
        """``ReportLocalQueueAdmissionFairSharingUsage``."""
        if self.lq is not None:
            self.child(self.lq.admission_fair_sharing_usage, *lq, cq).set(usage)

    def exposition(self) -> bytes:
        """The text exposition format of every family."""
        return prometheus_client.generate_latest(self.registry)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pykueue")
    except PackageNotFoundError:  # running from a source tree
        return "0.0.0"


class LocalQueueFamilies:
    """The ``local_queue_*`` counters and histograms (``RegisterLQMetrics``)."""

    def __init__(self, counter: Any, histogram: Any, registry: CollectorRegistry) -> None:
        lq_pc = ["name", "namespace", "priority_class"]
        self.quota_reserved_workloads_total: Counter = counter(
            "local_queue_quota_reserved_workloads_total", "The total number of quota reserved workloads per 'local_queue'", lq_pc
        )
        self.quota_reserved_wait_time: Histogram = histogram(
            "local_queue_quota_reserved_wait_time_seconds",
            "The time between a workload was created or requeued until it got quota reservation, per 'local_queue'",
            lq_pc,
            H14,
        )
        self.admitted_workloads_total: Counter = counter(
            "local_queue_admitted_workloads_total", "The total number of admitted workloads per 'local_queue'", lq_pc
        )
        self.admission_wait_time: Histogram = histogram(
            "local_queue_admission_wait_time_seconds",
            "The time between a workload was created or requeued until admission, per 'local_queue'",
            lq_pc,
            H14,
        )
        self.admission_checks_wait_time: Histogram = histogram(
            "local_queue_admission_checks_wait_time_seconds",
            "The time from when a workload got the quota reservation until admission, per 'local_queue'",
            lq_pc,
            H14,
        )
        self.ready_wait_time: Histogram = histogram(
            "local_queue_ready_wait_time_seconds",
            "The time between a workload was created or requeued until ready, per 'local_queue'",
            lq_pc,
            H14,
        )
        self.admitted_until_ready_wait_time: Histogram = histogram(
            "local_queue_admitted_until_ready_wait_time_seconds",
            "The time between a workload was admitted until ready, per 'local_queue'",
            lq_pc,
            H14,
        )
        self.finished_workloads_total: Counter = counter(
            "local_queue_finished_workloads_total", "The total number of finished workloads per 'local_queue'", lq_pc
        )
        self.execution_time: Histogram = histogram(
            "local_queue_execution_time_seconds",
            "The total execution time of a finished admitted workload (from first admission to completion, "
            "including time across evict/readmit cycles), per 'local_queue'",
            lq_pc,
            H16,
        )
        self.evicted_workloads_total: Counter = counter(
            "local_queue_evicted_workloads_total",
            "The number of evicted workloads per 'local_queue'," + _REASON_HELP + _CAUSE_HELP,
            ["name", "namespace", "reason", "underlying_cause", "priority_class"],
        )
        # A gauge set when reported (not computed at scrape): upstream reports it after the
        # LocalQueue controller's status write, from that reconcile's ledger read.
        self.admission_fair_sharing_usage: Gauge = Gauge(
            f"{SUBSYSTEM}_local_queue_admission_fair_sharing_usage",
            "Reports a value representing the LocalQueue's Admission Fair Sharing usage,\n"
            "calculated from the resource-weighted sum of consumed resources and pending\n"
            "admission penalties, divided by the LocalQueue's fair sharing weight",
            ["name", "namespace", "cluster_queue", "replica_role"],
            registry=registry,
        )
