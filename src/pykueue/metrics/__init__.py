"""Prometheus metrics with upstream Kueue's names, labels and buckets (``pkg/metrics``).

:class:`~pykueue.metrics.families.KueueMetrics` holds the families in a registry of its own;
:class:`~pykueue.metrics.recorder.ControllerMetrics` counts what the controllers do into it;
:mod:`pykueue.metrics.server` exposes a registry over HTTP (the controller's metrics port) and
:func:`pykueue.metrics.server.exposition` serves ``/metrics`` on ``pykueue serve``.
"""

from __future__ import annotations

from typing import Any

from pykueue.metrics.families import KueueMetrics
from pykueue.metrics.recorder import ControllerMetrics

__all__ = ["ControllerMetrics", "KueueMetrics", "for_manager", "from_config"]


def from_config(cfg: Any) -> KueueMetrics:
    """The families a Kueue Configuration asks for (gates ``LocalQueueMetrics``, ``MetricsForCohorts``;
    ``metrics.enableClusterQueueResources``, ``metrics.localQueueMetrics``)."""
    conf = cfg.configuration
    gates = cfg.feature_gates
    lq_cfg = conf.metrics.local_queue_metrics
    enable_lq, selector = ControllerMetrics.selector_from_config(lq_cfg)
    metrics = KueueMetrics(
        local_queue_metrics=gates.enabled("LocalQueueMetrics") and enable_lq,
        cluster_queue_resources=conf.metrics.enable_cluster_queue_resources,
        cohort_info=gates.enabled("MetricsForCohorts"),
        scheduling_hashes=gates.enabled("SchedulingEquivalenceHashing"),
        unadmitted=gates.enabled("UnadmittedWorkloadsObservability"),
        creation_latency=gates.enabled("MetricForWorkloadCreationLatency"),
    )
    metrics.local_queue_selector = selector
    return metrics


def for_manager(mgr: Any, metrics: KueueMetrics | None) -> ControllerMetrics:
    """Bind ``metrics`` (default: the default configuration's families) to a controller manager."""
    metrics = metrics if metrics is not None else KueueMetrics()

    def cohorts_of(cq: str) -> list[str]:
        # ``workloadAncestors``: every cohort above the ClusterQueue, nearest first.
        state = mgr.cache.cluster_queues.get(cq)
        out: list[str] = []
        node = state.node.parent if state is not None else None
        while node is not None:
            out.append(node.name)
            node = node.parent
        return out

    recorder = ControllerMetrics(metrics, cohorts_of=cohorts_of, local_queue=mgr.local_queues.get, now=mgr.now)
    metrics.state.source = mgr
    return recorder
