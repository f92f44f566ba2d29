"""Plain-words explanations of why pending workloads are not admitted (``schedule --explain``)."""

from __future__ import annotations

from pykueue.api.meta import find_condition
from pykueue.core.scheduler.entry import Entry
from pykueue.core.scheduler.flavorassigner.assignment import PreemptionMode
from pykueue.core.workload.info import has_quota_reservation, is_finished, workload_key
from pykueue.core.workload.transitions import SCHEDULER_REASONS
from pykueue.sim.cluster import RunResult, SimulatedCluster

_MODE_WORDS = {
    PreemptionMode.NO_FIT: "does not fit",
    PreemptionMode.NO_CANDIDATES: "would need preemption, but nothing can be preempted",
    PreemptionMode.PREEMPT: "fits by preempting workloads in the same ClusterQueue",
    PreemptionMode.RECLAIM: "fits by reclaiming quota lent to other ClusterQueues",
    PreemptionMode.FIT: "fits",
}


# QuotaReserved=False reasons of workloads that sit in their ClusterQueue's queue.
_QUEUED_REASONS = SCHEDULER_REASONS | {"", "Pending"}


def explain(cluster: SimulatedCluster, run: RunResult) -> str:
    """One paragraph per workload still without quota."""
    lines: list[str] = []
    for wl in cluster.workloads():
        if has_quota_reservation(wl) or is_finished(wl):
            continue
        key = workload_key(wl)
        cq = cluster.queues.cluster_queue_for_workload(key) or "?"
        lines.append(f"Workload {key} (LocalQueue {wl.spec.queue_name or '-'}, ClusterQueue {cq}) is not admitted.")
        qr = find_condition(wl.status.conditions, "QuotaReserved")
        if qr is not None:
            lines.append(f"  Reason: {qr.reason}: {qr.message}")
        entry = run.last_entry.get(key)
        bypass = cluster.queues.is_inadmissible_with_bulk_reason(key)
        if entry is None and qr is not None and qr.status == "False" and qr.reason not in _QUEUED_REASONS:
            # Misconfigured, Suspended, Deactivated, ...: the workload controller holds it out of
            # the scheduler's queues, so it waits for that to be fixed, not behind other workloads.
            lines.append(f"  It is not queued for scheduling until that changes ({qr.reason}).")
        elif entry is None and bypass is not None:
            lines.append(
                f"  It was not evaluated: a workload of the same shape recently failed ({bypass or 'PendingEvaluation'}); "
                "it is retried when capacity is freed or the queues change."
            )
        elif entry is None:
            lines.append(
                "  It was not tried in the last cycles: it waits behind other workloads of its ClusterQueue "
                "(one head per ClusterQueue per cycle) or for a change that frees capacity."
            )
        else:
            lines.extend(_entry_lines(entry))
        lines.append("")
    if not lines:
        return "Every workload holds quota or has finished.\n"
    return "\n".join(lines).rstrip("\n") + "\n"


def _entry_lines(entry: Entry) -> list[str]:
    out: list[str] = []
    if entry.assignment is None:
        out.append(f"  The scheduler did not try flavors: {entry.message}")
        return out
    for ps in entry.assignment.pod_sets:
        if not ps.attempts and not ps.reasons:
            continue
        out.append(f"  Pod set {ps.name} ({ps.count} pods):")
        if ps.error:
            out.append(f"    error: {ps.error}")
        for attempt in ps.attempts:
            words = _MODE_WORDS[attempt.mode.preemption_mode]
            if attempt.mode.borrowing_level:
                words += f" (borrowing at cohort level {attempt.mode.borrowing_level})"
            detail = "; ".join(attempt.reasons)
            out.append(f"    flavor {attempt.flavor}: {words}" + (f" — {detail}" if detail else ""))
        if not ps.attempts:
            for reason in sorted(ps.reasons):
                out.append(f"    {reason}")
    if entry.targets:
        victims = ", ".join(sorted(t.workload.key for t in entry.targets))
        out.append(f"  Preemption targets: {victims}")
    return out
