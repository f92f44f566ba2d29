"""ClusterQueue, LocalQueue and Cohort status; finalizers of queues, flavors and checks
(upstream ``pkg/controller/core/{clusterqueue,localqueue,cohort,resourceflavor,admissioncheck}_controller.go``).

Status is computed by :mod:`pykueue.core.status` from the scheduler's cache and queues and
written with a full status update only when it differs from what the API holds. The
``kueue.x-k8s.io/resource-in-use`` finalizer keeps a ClusterQueue while it has reserving
workloads, and a ResourceFlavor or AdmissionCheck while a ClusterQueue references it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from pykueue.api.conversion import to_external
from pykueue.api.kueue import RESOURCE_IN_USE_FINALIZER as RESOURCE_IN_USE
from pykueue.api.kueue import LocalQueue
from pykueue.client import resources as R
from pykueue.client.interface import Resource
from pykueue.controllers.cluster_cache import CHECK, CLUSTER_QUEUE, COHORT, FLAVOR, LOCAL_QUEUE, WorkKey
from pykueue.core.cache.cache import cache_weight_of
from pykueue.core.status import cluster_queue_status, cohort_status, local_queue_status

if TYPE_CHECKING:
    from pykueue.controllers.context import ReconcileContext



class QueueControllers:
    """Reconcilers for ClusterQueues (``cq``), LocalQueues (``lq``), Cohorts, flavors (``rf``), checks (``ac``)."""

    def __init__(self, ctx: ReconcileContext) -> None:
        self.ctx = ctx

    def reconcilers(self) -> dict[str, Callable[[Any], None]]:
        """The reconciler of each kind, for the manager's work queue."""
        return {
            FLAVOR: self._reconcile_rf,
            CHECK: self._reconcile_ac,
            CLUSTER_QUEUE: self._reconcile_cq,
            LOCAL_QUEUE: self._reconcile_lq,
            COHORT: self._reconcile_cohort,
        }

    # --- helpers ------------------------------------------------------------------------------------

    def _write(self, res: Resource, typed: Any, status: bool) -> None:
        self.ctx.write(res, to_external(typed), subresource="status" if status else None)

    def _write_status(
        self, res: Resource, typed: Any, item: WorkKey, on_written: Callable[[], None] | None = None
    ) -> None:
        """A status summary recomputed from the caches: sent off the manager thread (nothing here
        depends on its answer but ``on_written``, run once it succeeded; a failure retries the
        reconcile)."""
        self.ctx.write_status_pipelined(res, typed, item, on_written)

    def _set_finalizer(self, res: Resource, typed: Any, present: bool) -> bool:
        finalizers = list(typed.metadata.finalizers)
        if (RESOURCE_IN_USE in finalizers) == present:
            return False
        if present:
            finalizers.append(RESOURCE_IN_USE)
        else:
            finalizers.remove(RESOURCE_IN_USE)
        meta = msgspec.structs.replace(typed.metadata, finalizers=finalizers)
        self._write(res, msgspec.structs.replace(typed, metadata=meta), status=False)
        return True

    # --- ClusterQueue (clusterqueue_controller.go) ---------------------------------------------------------------------------

    def _reconcile_cq(self, name: str) -> None:
        ctx = self.ctx
        cq = ctx.cluster_queues.get(name)
        state = ctx.cache.cluster_queues.get(name)
        if cq is None or state is None:
            return
        deleting = cq.metadata.deletion_timestamp is not None
        if not deleting:
            if self._set_finalizer(R.CLUSTER_QUEUES, cq, True):
                # The write is applied to the cache at once, so its watch event changes nothing and
                # would not bring this queue back: go on to the status with the written object.
                cq = ctx.cluster_queues.get(name)
                if cq is None:
                    return
        elif RESOURCE_IN_USE in cq.metadata.finalizers and not state.workloads:
            self._set_finalizer(R.CLUSTER_QUEUES, cq, False)
            return
        status = cluster_queue_status(
            state,
            cq.status,
            ctx.queues.pending_count(name),
            ctx.now(),
            ctx.sched_options.fair_sharing,
            cache_weight_of(ctx.cache),
        )
        if status != cq.status:
            self._write_status(R.CLUSTER_QUEUES, msgspec.structs.replace(cq, status=status), (CLUSTER_QUEUE, name))

    # --- LocalQueue (localqueue_controller.go) --------------------------------------------------------------------------------

    def _reconcile_lq(self, key: str) -> None:
        ctx = self.ctx
        lq = ctx.local_queues.get(key)
        if lq is None:
            return
        status = local_queue_status(lq, ctx.cache, ctx.queues.pending_count_local_queue(key), ctx.now())
        fair_sharing, requeue_after = ctx.core.reconcile_local_queue_usage(lq, ctx.now())
        report: Callable[[], None] | None = None
        if fair_sharing is not None:
            status = msgspec.structs.replace(status, fair_sharing=fair_sharing)
            report = self._afs_usage_report(lq, key)
        if requeue_after is not None:
            ctx.requeue_after(LOCAL_QUEUE, key, requeue_after)
        if status != lq.status:
            self._write_status(R.LOCAL_QUEUES, msgspec.structs.replace(lq, status=status), (LOCAL_QUEUE, key), report)
        elif report is not None:
            report()

    def _afs_usage_report(self, lq: LocalQueue, key: str) -> Callable[[], None] | None:
        """``updateAdmissionFsStatus`` reports the AFS usage after its status write succeeded, with
        the value of that reconcile's ledger read: computed now, set once the write succeeded."""
        metrics = self.ctx.metrics
        if metrics is None or metrics.metrics.lq is None:
            return None
        usage = self.ctx.queues.afs.reported_usage(key, lq)
        if usage is None:
            return None
        return lambda: metrics.local_queue_afs_usage(lq, usage)

    # --- Cohort (cohort_controller.go) ---------------------------------------------------------------------------------------

    def _reconcile_cohort(self, name: str) -> None:
        ctx = self.ctx
        cohort = ctx.cohorts.get(name)
        node = ctx.cache.cohorts.get(name)
        if cohort is None or node is None:
            return
        status = cohort_status(node, ctx.sched_options.fair_sharing)
        if status != cohort.status:
            self._write_status(R.COHORTS, msgspec.structs.replace(cohort, status=status), (COHORT, name))

    # --- ResourceFlavor and AdmissionCheck finalizers (resourceflavor/admissioncheck_controller.go) -------------------------------------------------

    def _reconcile_rf(self, name: str) -> None:
        rf = self.ctx.flavors.get(name)
        if rf is None:
            return
        if rf.metadata.deletion_timestamp is None:
            self._set_finalizer(R.RESOURCE_FLAVORS, rf, True)
        elif not self.ctx.cache.cluster_queues_using_flavor(name):
            self._set_finalizer(R.RESOURCE_FLAVORS, rf, False)

    def _reconcile_ac(self, name: str) -> None:
        ac = self.ctx.admission_checks.get(name)
        if ac is None:
            return
        if ac.metadata.deletion_timestamp is None:
            self._set_finalizer(R.ADMISSION_CHECKS, ac, True)
        elif not self.ctx.cache.cluster_queues_using_admission_check(name):
            self._set_finalizer(R.ADMISSION_CHECKS, ac, False)
