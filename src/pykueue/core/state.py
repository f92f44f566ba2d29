"""Workload changes into the queues and the quota cache (API reference §3.14a).

The workload controller's watch handlers keep the in-memory queues and the cache in sync with
the Workloads the API holds. Both drivers of the core — the in-memory simulator behind
``pykueue schedule`` and the controller manager on the API — call :func:`route_workload_change`
for every observed create, update and delete, so they agree on every transition.
"""

from __future__ import annotations

from datetime import datetime

from pykueue.api.kueue import Workload
from pykueue.api.meta import to_time
from pykueue.core.cache.cache import Cache
from pykueue.core.options import SchedulerOptions
from pykueue.core.queue import QueueManager
from pykueue.core.scheduler.cycle import Scheduler
from pykueue.core.workload import transitions
from pykueue.core.workload.info import (
    has_active_quota_reservation,
    has_quota_reservation,
    is_active,
    is_admitted,
    is_evicted,
    is_finished,
    is_on_hold,
    new_workload_info,
    priority_parts,
    workload_key,
)


def queueable(wl: Workload) -> bool:
    """Whether a Workload may sit in its LocalQueue (§3.1 *admissible*, admission gates aside)."""
    return not is_finished(wl) and is_active(wl) and not has_quota_reservation(wl) and not is_on_hold(wl)


def route_workload_change(
    old: Workload | None,
    new: Workload | None,
    *,
    cache: Cache,
    queues: QueueManager,
    scheduler: Scheduler,
    options: SchedulerOptions,
    now: datetime,
    retry_from: datetime | None = None,
) -> None:
    """Apply one observed Workload change (``old`` None: created; ``new`` None: deleted).

    ``retry_from`` (default ``now``) is when the change happened, from which the batched retry
    of parked workloads it requests runs (``RETRY_BATCH_PERIOD``): the simulator observes some
    changes a tick after they happened.
    """
    wl = new if new is not None else old
    assert wl is not None
    key = workload_key(wl)
    ts = to_time(now).timestamp()
    retry_ts = ts if retry_from is None else to_time(retry_from).timestamp()

    def info(w: Workload) -> None:
        cache.add_workload(new_workload_info(w, options, cache.workload(key)))

    def release() -> None:
        """Free the workload's usage and retry what was parked behind it."""
        cq = cache.workload_cq.get(key)
        cache.delete_workload(key)
        if cq:
            queues.queue_inadmissible_workloads({cq}, retry_ts)

    if new is None:
        queues.delete_workload(key, forget=True)
        release()
        return
    if old is None:
        if is_finished(new):
            return
        if has_active_quota_reservation(new):
            info(new)
        elif queueable(new):
            queues.add_or_update_workload(new, ts)
        return
    if is_evicted(new) and not is_evicted(old):
        scheduler.observed_eviction(new.metadata.uid)
    was_reserved = has_quota_reservation(old)
    now_reserved = has_quota_reservation(new)
    if is_finished(new) or not is_active(new):
        # Finishing or deactivating frees the usage at once, although status.admission stays (§3.1).
        queues.delete_workload(key)
        release()
        return
    if not was_reserved and not now_reserved:
        if is_on_hold(new):
            queues.delete_workload(key)
        else:
            queues.add_or_update_workload(new, ts)
        return
    if not was_reserved and now_reserved:
        queues.delete_workload(key)
        info(new)
        return
    if was_reserved and not now_reserved:
        cq = cache.workload_cq.get(key)
        cache.delete_workload(key)
        at = transitions.requeue_at(new)
        if at is None or at <= to_time(now):
            queues.add_or_update_workload(new, ts)
        if cq:
            queues.queue_inadmissible_workloads({cq}, retry_ts)
        return
    info(new)
    # Reserved -> reserved: fewer pods or another priority can let parked workloads in
    # (scheduling reference §4.3, §4.7). Upstream's Update handler retries on reclaimable pods
    # only between two Admitted states; a reservation waiting for checks just updates the cache.
    if (
        (is_admitted(old) and is_admitted(new) and old.status.reclaimable_pods != new.status.reclaimable_pods)
        or priority_parts(old, options) != priority_parts(new, options)
        or old.spec.priority_class_ref != new.spec.priority_class_ref
    ):
        cq = cache.workload_cq.get(key)
        if cq:
            queues.queue_inadmissible_workloads({cq}, retry_ts)
