"""The queue manager (upstream ``pkg/cache/queue``), split by concern.

``heap`` (keyed binary heap), ``cluster_queue`` (per-ClusterQueue heap / inadmissible / inflight
state), ``local_queue`` and ``manager`` (:class:`QueueManager`, retry batching, cohort-tree
adapter). Import the public names from this package.
"""

from __future__ import annotations

from pykueue.core.queue.cluster_queue import (
    QUOTA_RESERVED_REASON_PENDING_EVALUATION,
    REQUEUE_REASON_FAILED_AFTER_NOMINATION,
    REQUEUE_REASON_GENERIC,
    REQUEUE_REASON_NAMESPACE_MISMATCH,
    REQUEUE_REASON_NO_FIT,
    REQUEUE_REASON_PENDING_MIGRATION,
    REQUEUE_REASON_PENDING_PREEMPTION,
    REQUEUE_REASON_PREEMPTION_FAILED,
    REQUEUE_REASON_PREEMPTION_GATED,
    REQUEUE_REASON_PREEMPTION_NO_CANDIDATES,
    REQUEUE_REASON_UNACCOUNTABLE,
    SCHEDULING_HASH_UNKNOWN,
    AfsUsage,
    PendingClusterQueue,
    PendingEntry,
    PreemptorRecord,
    backoff_expired,
    has_closed_preemption_gate,
    is_immediate,
)
from pykueue.core.queue.heap import KeyedHeap
from pykueue.core.queue.local_queue import LocalQueueState, is_stopped, key_of_local_queue, local_queue_key
from pykueue.core.queue.manager import (
    REQUEST_CLUSTER_QUEUE,
    REQUEST_COHORT,
    RETRY_BATCH_PERIOD,
    CacheCohortTree,
    CohortTree,
    Now,
    QueueManager,
    RetryRequest,
    RootOfCohortTree,
    seconds,
)

__all__ = [
    "QUOTA_RESERVED_REASON_PENDING_EVALUATION",
    "REQUEST_CLUSTER_QUEUE",
    "REQUEST_COHORT",
    "REQUEUE_REASON_FAILED_AFTER_NOMINATION",
    "REQUEUE_REASON_GENERIC",
    "REQUEUE_REASON_NAMESPACE_MISMATCH",
    "REQUEUE_REASON_NO_FIT",
    "REQUEUE_REASON_PENDING_MIGRATION",
    "REQUEUE_REASON_PENDING_PREEMPTION",
    "REQUEUE_REASON_PREEMPTION_FAILED",
    "REQUEUE_REASON_PREEMPTION_GATED",
    "REQUEUE_REASON_PREEMPTION_NO_CANDIDATES",
    "REQUEUE_REASON_UNACCOUNTABLE",
    "RETRY_BATCH_PERIOD",
    "SCHEDULING_HASH_UNKNOWN",
    "AfsUsage",
    "CacheCohortTree",
    "CohortTree",
    "KeyedHeap",
    "LocalQueueState",
    "Now",
    "PendingClusterQueue",
    "PendingEntry",
    "PreemptorRecord",
    "QueueManager",
    "RetryRequest",
    "RootOfCohortTree",
    "backoff_expired",
    "has_closed_preemption_gate",
    "is_immediate",
    "is_stopped",
    "key_of_local_queue",
    "local_queue_key",
    "seconds",
]
