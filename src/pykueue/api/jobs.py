"""Reading Kueue's settings off a ``batch/v1`` Job (upstream ``pkg/controller/constants`` and ``jobframework``), shared by the Job webhook
in the API server and the Job integration in the controllers, so both read a Job the same way.

Jobs are plain JSON dicts as the API serves them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from pykueue.api.meta import LabelSelector, controller_of, label_selector_matches

QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL: Final = "kueue.x-k8s.io/priority-class"
STOPPING_ANNOTATION: Final = "kueue.x-k8s.io/stopping"

# Topology-aware scheduling requests on a Job's pod template.
PODSET_REQUIRED_TOPOLOGY_ANNOTATION: Final = "kueue.x-k8s.io/podset-required-topology"
PODSET_PREFERRED_TOPOLOGY_ANNOTATION: Final = "kueue.x-k8s.io/podset-preferred-topology"
PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION: Final = "kueue.x-k8s.io/podset-unconstrained-topology"
PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION: Final = "kueue.x-k8s.io/podset-slice-required-topology"
TOPOLOGY_REQUEST_ANNOTATIONS: Final = (
    PODSET_REQUIRED_TOPOLOGY_ANNOTATION,
    PODSET_PREFERRED_TOPOLOGY_ANNOTATION,
    PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION,
    PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION,
)

# Owner kinds whose child Jobs Kueue manages through the parent (``IsOwnerManagedByKueue``).
MANAGED_OWNER_KINDS: Final = frozenset({("batch/v1", "Job")})


def sub(obj: Mapping[str, Any] | None, key: str) -> Mapping[str, Any]:
    """``obj[key]`` when it is a mapping, else an empty one."""
    value = obj.get(key) if obj is not None else None
    return value if isinstance(value, Mapping) else {}


def job_labels(job: Mapping[str, Any]) -> Mapping[str, Any]:
    """``metadata.labels``."""
    return sub(sub(job, "metadata"), "labels")


def job_annotations(job: Mapping[str, Any]) -> Mapping[str, Any]:
    """``metadata.annotations``."""
    return sub(sub(job, "metadata"), "annotations")


def int_field(obj: Mapping[str, Any], key: str) -> int | None:
    """An integer field (booleans are not integers here)."""
    value = obj.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def queue_name(job: Mapping[str, Any]) -> str:
    """The LocalQueue the Job asks for: its ``kueue.x-k8s.io/queue-name`` label, or ``""``."""
    return str(job_labels(job).get(QUEUE_NAME_LABEL) or "")


def workload_priority_class_name(job: Mapping[str, Any]) -> str:
    """The ``kueue.x-k8s.io/priority-class`` label, or ``""``."""
    return str(job_labels(job).get(PRIORITY_CLASS_LABEL) or "")


def parallelism(job: Mapping[str, Any]) -> int:
    """``spec.parallelism``; the API server defaults it to 1."""
    value = int_field(sub(job, "spec"), "parallelism")
    return 1 if value is None else value


def completions(job: Mapping[str, Any]) -> int | None:
    """``spec.completions`` (``None`` for a work-queue Job)."""
    return int_field(sub(job, "spec"), "completions")


def pods_count(job: Mapping[str, Any]) -> int:
    """Pods the Job runs at once: ``min(parallelism, completions)``."""
    count = parallelism(job)
    done = completions(job)
    return done if done is not None and done < count else count


def is_suspended(job: Mapping[str, Any]) -> bool:
    """``spec.suspend`` is true and no stop is half-way (a Job with the stopping annotation is not)."""
    return sub(job, "spec").get("suspend") is True and job_annotations(job).get(STOPPING_ANNOTATION) != "true"


def owner_managed_by_kueue(obj: Mapping[str, Any]) -> bool:
    """``IsOwnerManagedByKueueForObject``: the controller owner is of a Kueue-managed kind, so the
    Job is not top-level (its parent's Workload stands for it)."""
    owner = controller_of(obj)
    return owner is not None and (owner.get("apiVersion"), owner.get("kind")) in MANAGED_OWNER_KINDS


MANAGED_OWNERS_CHAIN_LIMIT: Final = 10
"""``managedOwnersChainLimit`` (jobframework/reconciler.go)."""

CYCLIC_OWNERSHIP: Final = "cyclic ownership"
"""``jobframework.ErrCyclicOwnership``."""
WORKLOAD_OWNER_NOT_FOUND: Final = "workload owner not found"
"""``jobframework.ErrWorkloadOwnerNotFound``."""
CHAIN_LIMIT_REACHED: Final = "managed owner chain limit reached"
"""``jobframework.ErrManagedOwnersChainLimitReached``."""


class AncestorSearchError(Exception):
    """Why :func:`find_managed_ancestor` failed: ``reason`` is one of :data:`CYCLIC_OWNERSHIP`,
    :data:`WORKLOAD_OWNER_NOT_FOUND` (``owner``: the name of the missing Job) and
    :data:`CHAIN_LIMIT_REACHED`. The webhook and the Job reconciler each answer it their own way."""

    def __init__(self, reason: str, owner: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.owner = owner


def find_managed_ancestor(
    job: Mapping[str, Any],
    get_job: Callable[[str], Mapping[str, Any] | None],
    manage_jobs_without_queue_name: bool,
) -> Mapping[str, Any] | None:
    """``IntegrationManager.FindAncestorJobManagedByKueue``: the top-most Job up ``job``'s controller
    chain that Kueue manages (with a queue name, or any under ``manageJobsWithoutQueueName``), None
    when there is none. ``get_job(name)``: the Job of that name in ``job``'s namespace, or None.

    The walk stops at an owner of a kind Kueue does not manage (Jobs are the only integration here)
    or one whose uid differs from the reference; a missing owner, a cycle, or a chain longer than
    :data:`MANAGED_OWNERS_CHAIN_LIMIT` raises :class:`AncestorSearchError`."""
    seen: set[str] = set()
    current = job
    top: Mapping[str, Any] | None = None
    while True:
        uid = str(sub(current, "metadata").get("uid") or "")
        if uid in seen:
            raise AncestorSearchError(CYCLIC_OWNERSHIP)
        seen.add(uid)
        owner = controller_of(current)
        if owner is None or (owner.get("apiVersion"), owner.get("kind")) not in MANAGED_OWNER_KINDS:
            return top
        name = str(owner.get("name") or "")
        parent = get_job(name)
        if parent is None:
            raise AncestorSearchError(WORKLOAD_OWNER_NOT_FOUND, name)
        if sub(parent, "metadata").get("uid") != owner.get("uid"):
            return top  # a stale or mismatched reference
        if manage_jobs_without_queue_name or queue_name(parent):
            top = parent
        current = parent
        if len(seen) > MANAGED_OWNERS_CHAIN_LIMIT:
            raise AncestorSearchError(CHAIN_LIMIT_REACHED)


def is_managed(
    job: Mapping[str, Any],
    namespace_labels: Mapping[str, str] | None,
    namespace_selector: LabelSelector | None,
    manage_jobs_without_queue_name: bool,
) -> bool:
    """Whether the Job integration manages ``job``: its namespace is known and matches
    ``managedJobsNamespaceSelector`` (None: every namespace), and it names a LocalQueue or
    ``manageJobsWithoutQueueName`` is on (jobframework's ``ShouldManage`` / ``ManagedNamespace``)."""
    if namespace_labels is None:
        return False
    if namespace_selector is not None and not label_selector_matches(namespace_selector, dict(namespace_labels)):
        return False
    return bool(queue_name(job)) or manage_jobs_without_queue_name
