"""The WorkloadPriorityClass reconciler (upstream
``pkg/controller/core/workloadpriorityclass_controller.go``): a class's value reaches the
``spec.priority`` of every Workload that references it.

Its watch predicates (``Create``, ``Update``, ``Delete``, ``Generic``) are
:func:`reconciles_on_change`, applied by :class:`~pykueue.controllers.cluster_cache.ClusterCache`
to each observed WorkloadPriorityClass change. The Workloads are found by their
``spec.priorityClassRef`` (upstream's ``indexer.WorkloadPriorityClassKey`` index,
``IndexWorkloadPriorityClass``), and the new priority reaches the queues and the cache through
each written Workload's change, as any Workload update does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from pykueue.api.conversion import to_external
from pykueue.client import resources as R
from pykueue.client.interface import APIError, NotFound

if TYPE_CHECKING:
    from pykueue.controllers.context import ReconcileContext

WPC_GROUP = "kueue.x-k8s.io"
WPC_KIND = "WorkloadPriorityClass"


def reconciles_on_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> bool:
    """Whether an observed change reconciles the class: ``WorkloadPriorityClassReconciler``'s
    ``Create`` (always: the class may have been re-created with another value while Workloads
    still reference it), ``Update`` (only when ``value`` changed) and ``Delete`` (never)."""
    if new is None:
        return False
    if old is None:
        return True
    return bool(old.get("value") != new.get("value"))


class UpdateErrors(APIError):
    """The Workload updates of one reconcile that failed (upstream's ``errors.Join``): the reconcile
    is retried with backoff."""

    def __init__(self, errors: list[APIError]) -> None:
        first = errors[0]
        super().__init__(first.code, first.reason, "; ".join(str(e) for e in errors))
        self.errors = errors


class WorkloadPriorityClassController:
    """Reconciles WorkloadPriorityClasses (work-queue kind ``wpc``, key: the class's name)."""

    def __init__(self, ctx: ReconcileContext) -> None:
        self.ctx = ctx

    def reconcile(self, name: str) -> None:
        """``WorkloadPriorityClassReconciler.Reconcile``: set ``spec.priority`` to the class's value
        on each Workload referencing it whose priority differs; a Workload gone meanwhile is
        skipped, any other failed update fails the reconcile after the others were tried."""
        wpc = self.ctx.raw[R.WORKLOAD_PRIORITY_CLASSES.plural].get(("", name))
        if wpc is None:
            return  # not found: nothing to do
        value = int(wpc.get("value") or 0)
        failed: list[APIError] = []
        for _, wl in sorted(self.ctx.workloads.items()):
            ref = wl.spec.priority_class_ref
            if ref is None or ref.kind != WPC_KIND or ref.group != WPC_GROUP or ref.name != name:
                continue
            if wl.spec.priority is not None and wl.spec.priority == value:
                continue  # already up to date
            updated = msgspec.structs.replace(wl, spec=msgspec.structs.replace(wl.spec, priority=value))
            try:
                self.ctx.write(R.WORKLOADS, to_external(updated))
            except NotFound:
                continue
            except APIError as err:
                failed.append(err)
        if failed:
            raise UpdateErrors(failed)

