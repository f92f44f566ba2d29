"""The per-cycle view of the cache (upstream ``pkg/cache/scheduler/snapshot.go`` ``Cache.Snapshot``).

Instead of copying every ClusterQueue each cycle, a ``Snapshot`` works on the live cache and
records every simulated change; ``close()`` undoes what is still outstanding. Usage updates are
exact, commutative inverses (``quota.tree``), so undo order does not matter.
"""

from __future__ import annotations

from pykueue.api.kueue import ResourceFlavor
from pykueue.core.cache.cache import Cache, ClusterQueueState
from pykueue.core.quota.tree import FlavorResource, add_usage_map, remove_usage_map
from pykueue.core.workload.info import WorkloadInfo

NOT_ACTIVE = "NotActive"
HAS_CYCLE = "HasCycle"


class Snapshot:
    """Cluster state for one scheduling cycle, with undoable simulations."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self.flavors: dict[str, ResourceFlavor] = cache.flavors
        self.inactive: dict[str, str] = {}
        for name, cq in cache.cluster_queues.items():
            if cq.has_cycle:
                self.inactive[name] = HAS_CYCLE
            elif not cq.is_active():
                self.inactive[name] = NOT_ACTIVE
        self._bookings: list[tuple[ClusterQueueState, dict[FlavorResource, int]]] = []
        self.changes: list[ClusterQueueState] = []
        """Every ClusterQueue whose usage a simulation changed, in order (repeats allowed): during a
        cycle the tree's usage changes only through this snapshot, so this is where it may have
        changed (that CQ's node and its ancestors)."""

    def cluster_queue(self, name: str) -> ClusterQueueState | None:
        """The active ClusterQueue ``name`` (None when missing or inactive)."""
        if name in self.inactive:
            return None
        return self.cache.cluster_queues.get(name)

    # --- simulations ------------------------------------------------------------------------

    def remove_workload(self, wl: WorkloadInfo) -> None:
        """Simulate ``wl`` releasing its quota (undo with ``add_workload``)."""
        cq = self.cache.cluster_queues[wl.cluster_queue]
        if cq.workloads.pop(wl.key, None) is not None:
            remove_usage_map(cq.node, wl.usage)
            self.changes.append(cq)

    def add_workload(self, wl: WorkloadInfo) -> None:
        """Undo ``remove_workload``."""
        cq = self.cache.cluster_queues[wl.cluster_queue]
        if wl.key not in cq.workloads:
            cq.workloads[wl.key] = wl
            add_usage_map(cq.node, wl.usage)
            self.changes.append(cq)

    def add_usage(self, cq: ClusterQueueState, usage: dict[FlavorResource, int]) -> None:
        """Simulate ``cq`` holding ``usage`` more (undo with ``remove_usage``)."""
        add_usage_map(cq.node, usage)
        self.changes.append(cq)

    def remove_usage(self, cq: ClusterQueueState, usage: dict[FlavorResource, int]) -> None:
        remove_usage_map(cq.node, usage)
        self.changes.append(cq)

    def book(self, cq: ClusterQueueState, usage: dict[FlavorResource, int]) -> None:
        """Hold ``usage`` in ``cq`` until the end of the cycle."""
        add_usage_map(cq.node, usage)
        self._bookings.append((cq, usage))
        self.changes.append(cq)

    def unbook(self, cq: ClusterQueueState, usage: dict[FlavorResource, int]) -> None:
        """Release a booking early (e.g. when it becomes a real admission)."""
        for i, (bcq, busage) in enumerate(self._bookings):
            if bcq is cq and busage is usage:
                del self._bookings[i]
                remove_usage_map(cq.node, usage)
                self.changes.append(cq)
                return

    def close(self, keep: list[dict[FlavorResource, int]] | None = None) -> None:
        """Undo every booking still held, except those whose usage map is (identically) in ``keep``:
        their usage stays in the tree for the caller to hand to the workloads that now hold it."""
        kept = {id(u) for u in keep} if keep else set()
        for cq, usage in self._bookings:
            if id(usage) not in kept:
                remove_usage_map(cq.node, usage)
                self.changes.append(cq)
        self._bookings.clear()
