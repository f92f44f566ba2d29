"""LocalQueues as the queue manager tracks them (upstream ``pkg/cache/queue/local_queue.go``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pykueue.api.kueue import STOP_NONE, LocalQueue
from pykueue.core.workload.info import WorkloadInfo


def local_queue_key(namespace: str, name: str) -> str:
    """``namespace/name``, the key of a LocalQueue."""
    return f"{namespace}/{name}"


def key_of_local_queue(lq: LocalQueue) -> str:
    return local_queue_key(lq.metadata.namespace, lq.metadata.name)


def is_stopped(lq: LocalQueue) -> bool:
    """A LocalQueue with a stop policy other than ``None`` is not tracked by the manager."""
    return (lq.spec.stop_policy or STOP_NONE) != STOP_NONE


@dataclass(slots=True)
class LocalQueueState:
    """A LocalQueue: its ClusterQueue and the pending workloads it holds (not the popped ones)."""

    key: str
    cluster_queue: str
    items: dict[str, WorkloadInfo] = field(default_factory=dict)

    @classmethod
    def from_api(cls, lq: LocalQueue) -> LocalQueueState:
        return cls(key=key_of_local_queue(lq), cluster_queue=lq.spec.cluster_queue)
