"""Admission Fair Sharing as the queue manager, the scheduler, the workload controller and the
LocalQueue controller drive it (upstream ``pkg/cache/queue/manager.go`` ``AfsUsageLedger``,
``pkg/scheduler/scheduler.go`` ``updateEntryPenalty``, ``pkg/controller/core/workload_controller.go``
``updateAfsConsumedUsage`` / ``reconcileAfsPenaltiesOnUpdate`` and
``pkg/controller/core/localqueue_controller.go`` ``initializeAfsIfNeeded`` / ``reconcileConsumedUsage``).

One :class:`AdmissionFairSharing` lives in the core's :class:`~pykueue.core.queue.manager.QueueManager`;
it is inert (``enabled`` false) unless the Configuration has ``admissionFairSharing`` and the
``AdmissionFairSharing`` gate is on (upstream ``admissionfairsharing.Enabled``). Times are epoch seconds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from pykueue.api.config import AdmissionFairSharingConfig
from pykueue.api.kueue import LocalQueue
from pykueue.api.meta import format_time, parse_time
from pykueue.api.quantity import CPU, QuantityFormat, format_quantity, parse_quantity
from pykueue.core.queue.afs.admission_fair_sharing import (
    ResourceList,
    calculate_decayed_consumed,
    calculate_entry_penalty,
    calculate_usage,
    duration_seconds,
    lq_weight_as_float,
    merge_keep_sum,
)
from pykueue.core.queue.afs.usage_ledger import AfsUsageLedger, UsageLedgerEntry

USAGE_BASED_ADMISSION_FAIR_SHARING = "UsageBasedAdmissionFairSharing"


def admission_fair_sharing_status(lq: LocalQueue) -> tuple[ResourceList, float] | None:
    """The LocalQueue's persisted ``status.fairSharing.admissionFairSharingStatus`` as
    (consumedResources, lastUpdate), None when absent."""
    fs = (lq.status.fair_sharing if lq.status is not None else None) or {}
    afs = fs.get("admissionFairSharingStatus")
    if not isinstance(afs, dict):
        return None
    consumed = {name: parse_quantity(v).value for name, v in (afs.get("consumedResources") or {}).items()}
    last = afs.get("lastUpdate")
    return consumed, (parse_time(last).timestamp() if isinstance(last, str) else 0.0)


def fair_sharing_status(lq: LocalQueue, sample: AfsSample) -> dict[str, Any]:
    """The LocalQueue's ``status.fairSharing`` with ``sample`` written into its
    ``admissionFairSharingStatus`` (upstream ``updateAdmissionFsStatus``)."""
    assert sample.consumed_resources is not None
    out = dict((lq.status.fair_sharing if lq.status is not None else None) or {})
    # ``LocalQueueFairSharingStatus.WeightedShare`` is an int64 without omitempty: always written.
    out.setdefault("weightedShare", 0)
    out["admissionFairSharingStatus"] = {
        "consumedResources": {
            name: format_quantity(v, QuantityFormat.DECIMAL_SI) for name, v in sorted(sample.consumed_resources.items())
        },
        "lastUpdate": format_time(datetime.fromtimestamp(sample.last_update, UTC)),
    }
    return out


def to_resource_list(amounts: Mapping[str, int]) -> ResourceList:
    """pykueue's integer amounts (milli-cpu, base units otherwise) as exact base-unit amounts."""
    return {name: Fraction(v, 1000) if name == CPU else Fraction(v) for name, v in amounts.items()}


@dataclass(frozen=True, slots=True)
class AfsSample:
    """What one LocalQueue reconcile computed (upstream ``LocalQueueReconciler.Reconcile``'s AFS branch)."""

    consumed_resources: ResourceList | None
    """The ``status.fairSharing.admissionFairSharingStatus.consumedResources`` to write, or None when
    the sampling interval has not elapsed (nothing written)."""
    last_update: float
    """``admissionFairSharingStatus.lastUpdate`` (with ``consumed_resources``)."""
    requeue_after: float
    """Seconds until the next reconcile (upstream ``RequeueAfter``)."""


class AdmissionFairSharing:
    """The AFS configuration, the usage ledger and the LocalQueue weights."""

    __slots__ = ("config", "enabled", "ledger", "local_queues", "weights")

    def __init__(self, config: AdmissionFairSharingConfig | None) -> None:
        self.config = config
        # Upstream ``admissionfairsharing.Enabled`` (the gate is applied when the config is read);
        # a plain attribute, read on every observed change.
        self.enabled = config is not None
        self.ledger = AfsUsageLedger()
        # The heap's LocalQueue weights (upstream ``ClusterQueue.lqWeights``: LocalQueues not stopped).
        self.weights: dict[str, float] = {}
        # Every LocalQueue object, stopped or not: its ``spec.clusterQueue`` (upstream's scheduler
        # cache lists it under that ClusterQueue, ``Cache.GetCacheLocalQueue``) and its weight (what
        # ``ResolveLQWeight`` reads from the API).
        self.local_queues: dict[str, tuple[str, float]] = {}

    def applies_to(self, admission_mode: str) -> bool:
        """Upstream ``ResourceWeights``'s first result: AFS on and the ClusterQueue opted in."""
        return self.config is not None and admission_mode == USAGE_BASED_ADMISSION_FAIR_SHARING

    # --- usage (upstream ``CalculateUsage`` on a ledger entry) ------------------------------------

    def usage(self, lq_key: str, ledger: Mapping[str, UsageLedgerEntry] | None = None) -> float:
        """The LocalQueue's fair-sharing usage: consumed plus pending penalty, weighted."""
        entry = self.ledger.get(lq_key) if ledger is None else ledger.get(lq_key)
        consumed = entry.resources if entry is not None else None
        penalty = entry.pending_penalty if entry is not None else None
        weights = self.config.resource_weights if self.config is not None else {}
        return calculate_usage(consumed, penalty, self.weights.get(lq_key, 1.0), weights)

    def candidate_usage(self, lq_key: str, ledger: Mapping[str, UsageLedgerEntry]) -> float:
        """Upstream ``Info.CalcLocalQueueFSUsage`` (the snapshot's ``LocalQueueFSUsage``): the weight
        is the LocalQueue object's (``ResolveLQWeight``; 1 when it is missing), stopped or not."""
        entry = ledger.get(lq_key)
        consumed = entry.resources if entry is not None else None
        penalty = entry.pending_penalty if entry is not None else None
        weights = self.config.resource_weights if self.config is not None else {}
        known = self.local_queues.get(lq_key)
        return calculate_usage(consumed, penalty, known[1] if known is not None else 1.0, weights)

    def reported_usage(self, lq_key: str, lq: LocalQueue) -> float | None:
        """Upstream ``LocalQueueReconciler.reportAfsUsage``'s value: ``CalculateUsage`` of the ledger
        entry's consumed history and pending penalty over the LocalQueue object's weight
        (``LQWeightAsFloat64``); None without an entry. Right after a :meth:`sample` that wrote a
        status, the entry's history is exactly the ``consumedResources`` written (``store`` decays
        the same entry over the same elapsed time; ``reset`` empties it), so this is also the value
        ``updateAdmissionFsStatus`` reports after its write."""
        entry = self.ledger.get(lq_key)
        if entry is None:
            return None
        weights = self.config.resource_weights if self.config is not None else {}
        return calculate_usage(entry.resources, entry.pending_penalty, lq_weight_as_float(lq), weights)

    def in_cluster_queue(self, lq_key: str, cq_name: str) -> bool:
        """Upstream ``Cache.GetCacheLocalQueue`` succeeds: the LocalQueue exists and names ``cq_name``."""
        known = self.local_queues.get(lq_key)
        return known is not None and known[0] == cq_name

    def has_pending_penalty(self, lq_keys: Iterable[str]) -> bool:
        """Upstream ``ClusterQueue.hasPendingPenalties`` over the ClusterQueue's LocalQueues."""
        return any(self.ledger.has_pending_penalty(k) for k in lq_keys)

    # --- entry penalties (upstream ``Scheduler.updateEntryPenalty``) ------------------------------

    def push_entry_penalty(self, lq_key: str, wl_key: str, total_requests: Mapping[str, int], now: float) -> None:
        """The penalty of an assumed Workload: its total requests times one sampling interval's alpha."""
        assert self.config is not None
        penalty = calculate_entry_penalty(to_resource_list(total_requests), self.config)
        self.ledger.push_penalty(lq_key, wl_key, penalty, now)

    def sub_penalty(self, lq_key: str, wl_key: str) -> None:
        """Drop a Workload's penalty that will never settle."""
        if self.config is not None:
            self.ledger.sub_penalty(lq_key, wl_key)

    # --- settlement (upstream ``WorkloadReconciler.updateAfsConsumedUsage``) ---------------------

    def settle(self, lq_key: str, wl_key: str, admitted_usage: Mapping[str, int], now: float) -> None:
        """On a transition into Admitted: decay the history with the LocalQueue's admitted usage
        and fold exactly the Workload's recorded penalty into it."""
        assert self.config is not None
        new_usage = to_resource_list(admitted_usage)
        half_life = duration_seconds(self.config.usage_half_life_time)

        def fn(old: UsageLedgerEntry, found: bool) -> UsageLedgerEntry:
            last_update = old.last_update if found else now
            elapsed = max(0.0, now - last_update)
            stored_last_update = max(now, last_update)
            new_consumed = calculate_decayed_consumed(old.resources, new_usage, elapsed, half_life)
            remaining, penalty = old.without_penalty(wl_key)
            return dataclasses.replace(
                remaining, resources=merge_keep_sum(new_consumed, penalty), last_update=stored_last_update
            )

        self.ledger.update(lq_key, fn)

    # --- LocalQueue reconcile (upstream ``LocalQueueReconciler``) ---------------------------------

    def set_weight(self, lq_key: str, weight: float) -> bool:
        """Record a LocalQueue's ``spec.fairSharing.weight``; whether it changed."""
        changed = self.weights.get(lq_key) != weight
        self.weights[lq_key] = weight
        return changed

    def observe_local_queue(self, lq_key: str, lq: LocalQueue) -> None:
        """A LocalQueue object created or updated, stopped or not (upstream ``Cache.AddLocalQueue`` /
        ``UpdateLocalQueue``)."""
        self.local_queues[lq_key] = (lq.spec.cluster_queue, lq_weight_as_float(lq))

    def forget_local_queue(self, lq_key: str) -> None:
        """Upstream ``LocalQueueReconciler.Delete``: drop the ledger entry (and ``Cache.DeleteLocalQueue``)."""
        self.local_queues.pop(lq_key, None)
        if self.config is not None:
            self.ledger.delete(lq_key)

    def sample(
        self,
        lq_key: str,
        status: tuple[ResourceList, float] | None,
        admitted_usage: Mapping[str, int],
        now: float,
    ) -> AfsSample:
        """One LocalQueue reconcile of an active LocalQueue: ``initializeAfsIfNeeded``, the
        sampling-interval gate, then ``reconcileConsumedUsage``.

        ``status`` is the persisted ``admissionFairSharingStatus`` (consumedResources, lastUpdate),
        None when the LocalQueue has none."""
        assert self.config is not None
        interval = duration_seconds(self.config.usage_sampling_interval)
        seeded: ResourceList = dict(status[0]) if status is not None else {}
        had_cache = self.ledger.get(lq_key) is not None

        def init(old: UsageLedgerEntry, found: bool) -> UsageLedgerEntry:
            if not found:
                return UsageLedgerEntry(resources=seeded, last_update=now, status_accounted=True)
            if not old.status_accounted:
                return dataclasses.replace(
                    old, resources=merge_keep_sum(old.resources, seeded), status_accounted=True
                )
            return old

        entry = self.ledger.update(lq_key, init)
        since_last_update = now - entry.last_update
        if had_cache and since_last_update < interval and not self.ledger.has_pending_penalty(lq_key):
            return AfsSample(None, entry.last_update, interval - since_last_update)
        half_life = duration_seconds(self.config.usage_half_life_time)
        if half_life == 0:

            def reset(old: UsageLedgerEntry, found: bool) -> UsageLedgerEntry:
                return dataclasses.replace(
                    old, resources={}, last_update=now, status_accounted=old.status_accounted or not found
                )

            self.ledger.update(lq_key, reset)
            return AfsSample({}, now, interval)
        new_usage = to_resource_list(admitted_usage)
        elapsed = max(0.0, now - entry.last_update)
        new_consumed = calculate_decayed_consumed(entry.resources, new_usage, elapsed, half_life)

        def store(old: UsageLedgerEntry, found: bool) -> UsageLedgerEntry:
            if not found:
                return UsageLedgerEntry(resources=new_consumed, last_update=now, status_accounted=True)
            el = max(0.0, now - old.last_update)
            return dataclasses.replace(
                old,
                resources=calculate_decayed_consumed(old.resources, new_usage, el, half_life),
                last_update=max(now, old.last_update),
            )

        self.ledger.update(lq_key, store)
        return AfsSample(new_consumed, now, interval)
