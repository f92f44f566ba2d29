"""timeline.png: admitted and pending workloads and reserved CPU over time, per cohort."""

from __future__ import annotations

from pathlib import Path

from pykueue.bench.scheduler import Recorder


def write_timeline(rec: Recorder, path: Path) -> str | None:
    """Draw the run's samples; returns why nothing was drawn (matplotlib missing), else None."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display: render straight to the file
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install 'pykueue[bench]')"
    cohorts = sorted({q.cohort for q in rec.queues.values()})
    capacity: dict[str, float] = {}
    for q in rec.queues.values():
        capacity[q.cohort] = capacity.get(q.cohort, 0.0) + q.nominal_milli / 1000
    t = [s.t for s in rec.samples]
    fig, axes = plt.subplots(3, 1, figsize=(11, 10), sharex=True)
    for cohort in cohorts:
        axes[0].plot(t, [s.admitted.get(cohort, 0) for s in rec.samples], lw=0.8, label=cohort)
        axes[1].plot(t, [s.pending.get(cohort, 0) for s in rec.samples], lw=0.8, label=cohort)
        axes[2].plot(t, [s.reserved_milli.get(cohort, 0) / 1000 for s in rec.samples], lw=0.8, label=cohort)
    for quota in sorted(set(capacity.values())):
        axes[2].axhline(quota, color="black", ls="--", lw=1, label=f"cohort quota ({quota:g} CPU)")
    axes[0].set_ylabel("admitted workloads")
    axes[1].set_ylabel("pending workloads")
    axes[2].set_ylabel("reserved CPU")
    axes[2].set_xlabel("seconds since the control plane started")
    if len(cohorts) <= 12:
        axes[2].legend(fontsize="small", ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return None
