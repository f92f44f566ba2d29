"""Options of Kueue's controllers beyond the scheduling core (the Configuration's fields they read)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pykueue.api.config import KueueConfig, load_config
from pykueue.api.meta import LabelSelector
from pykueue.core.options import SchedulerOptions, options_from_config
from pykueue.runtime.writes import DEFAULT_MAX_IN_FLIGHT


@dataclass
class ControllerOptions:
    """Configuration the controllers (beyond the scheduling core) read."""

    scheduler: SchedulerOptions = field(default_factory=SchedulerOptions)
    pods_ready_timeout_seconds: float | None = 1800.0
    pods_ready_recovery_timeout_seconds: float | None = None
    finished_retention_seconds: float | None = None
    deactivated_retention_seconds: float | None = None
    """``objectRetentionPolicies.workloads.afterDeactivatedByKueue``: how long a Job whose Workload
    Kueue deactivated is kept before the Job reconciler deletes it (None: kept)."""
    label_keys_to_copy: tuple[str, ...] = ()
    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: LabelSelector | None = None
    """``managedJobsNamespaceSelector`` (None: every namespace)."""
    max_writes_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    """Admissions whose status write may be in flight at once (pykueue's; upstream's goroutines are
    bounded by the client's QPS only)."""

    @staticmethod
    def from_config(cfg: KueueConfig) -> ControllerOptions:
        """The options of a loaded Kueue Configuration."""
        conf = cfg.configuration
        wait = cfg.wait_for_pods_ready
        retention = conf.object_retention_policies
        after = retention.workloads.after_finished if retention and retention.workloads else None
        deactivated = retention.workloads.after_deactivated_by_kueue if retention and retention.workloads else None
        return ControllerOptions(
            scheduler=options_from_config(cfg),
            pods_ready_timeout_seconds=_seconds(wait.timeout) if wait is not None else None,
            pods_ready_recovery_timeout_seconds=_seconds(wait.recovery_timeout) if wait is not None else None,
            finished_retention_seconds=_seconds(after),
            deactivated_retention_seconds=_seconds(deactivated),
            label_keys_to_copy=tuple(conf.integrations.label_keys_to_copy) if conf.integrations else (),
            manage_jobs_without_queue_name=conf.manage_jobs_without_queue_name,
            managed_jobs_namespace_selector=conf.managed_jobs_namespace_selector,
        )


def _seconds(duration: Any) -> float | None:
    if duration is None:
        return None
    return float(duration.nanoseconds) / 1e9


def default_options() -> ControllerOptions:
    """The options of the default (empty) Kueue Configuration."""
    return ControllerOptions.from_config(load_config(None))


