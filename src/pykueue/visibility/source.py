"""The visibility API's view of a running controller manager's queue manager.

The manager's state belongs to its thread; every question is answered there
(``ControllerManager.call_in_manager_thread``) and the answer is copied into immutable
:class:`~pykueue.visibility.api.PendingWorkloadInfo` values before it leaves that thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from pykueue.api.meta import format_time
from pykueue.core.queue import QueueManager, local_queue_key
from pykueue.core.workload.info import WorkloadInfo
from pykueue.visibility.api import PendingWorkloadInfo, Unavailable

if TYPE_CHECKING:
    from pykueue.controllers.manager import ControllerManager

_T = TypeVar("_T")


def pending_workload_info(info: WorkloadInfo) -> PendingWorkloadInfo:
    """The reported fields of one queued workload (``newPendingWorkload``'s inputs)."""
    meta = info.obj.metadata
    refs = tuple(
        {"apiVersion": r.api_version, "kind": r.kind, "name": r.name, "uid": r.uid} for r in meta.owner_references
    )
    return PendingWorkloadInfo(
        name=meta.name,
        namespace=meta.namespace,
        local_queue=info.obj.spec.queue_name,
        priority=info.obj.spec.priority or 0,
        creation_timestamp=format_time(meta.creation_timestamp) if meta.creation_timestamp else None,
        owner_references=refs,
    )


def snapshot_pending(queues: QueueManager, cluster_queue: str) -> list[PendingWorkloadInfo] | None:
    """``Manager.PendingWorkloadsInfo`` on a queue manager (call it on the thread that owns it)."""
    if not queues.has_cluster_queue(cluster_queue):
        return None
    return [pending_workload_info(info) for info in queues.pending_workloads(cluster_queue)]


class ManagerSource:
    """:class:`~pykueue.visibility.api.PendingSource` over an in-process ControllerManager."""

    def __init__(self, manager: ControllerManager, timeout: float = 10.0) -> None:
        self.manager = manager
        self.timeout = timeout

    def pending_workloads(self, cluster_queue: str) -> Sequence[PendingWorkloadInfo] | None:
        return self._ask(lambda: snapshot_pending(self.manager.queues, cluster_queue))

    def cluster_queue_of(self, namespace: str, local_queue: str) -> str | None:
        key = local_queue_key(namespace, local_queue)

        def lookup() -> str | None:
            # The queue manager tracks only LocalQueues that exist and are not stopped.
            if not self.manager.queues.has_local_queue(key):
                return None
            lq = self.manager.cluster.local_queues.get(key)
            return lq.spec.cluster_queue if lq is not None else None

        return self._ask(lookup)

    def _ask(self, fn: Callable[[], _T]) -> _T:
        if not self.manager.running():
            raise Unavailable("the controller manager is not running")
        try:
            return self.manager.call_in_manager_thread(fn, self.timeout)
        except TimeoutError as err:
            raise Unavailable(str(err)) from None
