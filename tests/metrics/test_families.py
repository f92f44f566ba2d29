"""The metric families themselves: upstream's names, label names, buckets, gating and cached children."""

from __future__ import annotations

import time
from typing import Any

import pytest
from conftest import labels, parse
from prometheus_client import Counter, Histogram

from pykueue.api.config import load_config
from pykueue.metrics import KueueMetrics, from_config
from pykueue.metrics.families import H14, H16, HDEF, HLAT, generate_exponential_buckets
from pykueue.metrics.recorder import ControllerMetrics

CONFIG = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nmetrics:\n"


def test_generate_exponential_buckets() -> None:
    # pkg/metrics/metrics_test.go TestGenerateExponentialBuckets
    assert generate_exponential_buckets(5) == [1, 2.5, 5, 10, 20]
    assert H14 == [1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 10240]
    assert [*H14, 20480, 40960] == H16
    assert HDEF == [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    assert pytest.approx([0.01 * 2**k for k in range(11)]) == HLAT


def _bucket_bounds(samples: dict[str, Any], name: str) -> list[float]:
    return sorted({float(dict(k)["le"]) for k in samples[f"{name}_bucket"]})


def test_histograms_use_upstreams_buckets() -> None:
    m = KueueMetrics()
    m.quota_reserved("cq", "", 3.0, ("lq", "ns"))
    m.admitted("cq", "", 3.0, 1.0, (), ("lq", "ns"))
    m.admission_attempt(True, 0.01)
    m.evicted("cq", "PodsReadyTimeout", "WaitForStart", "", True, 2.0, ("lq", "ns"))
    m.finished("cq", "", 9.0, ("lq", "ns"))
    s = parse(m.exposition().decode())
    inf = float("inf")
    assert _bucket_bounds(s, "kueue_quota_reserved_wait_time_seconds") == [*H14, inf]
    assert _bucket_bounds(s, "kueue_admission_wait_time_seconds") == [*H16, inf]
    assert _bucket_bounds(s, "kueue_admission_checks_wait_time_seconds") == [*H14, inf]
    assert _bucket_bounds(s, "kueue_admission_attempt_duration_seconds") == [*HDEF, inf]
    assert _bucket_bounds(s, "kueue_pods_ready_to_evicted_time_seconds") == [*H14, inf]
    assert _bucket_bounds(s, "kueue_execution_time_seconds") == [*H16, inf]
    # LocalQueue admission wait uses 14 buckets upstream (the ClusterQueue one 16).
    assert _bucket_bounds(s, "kueue_local_queue_admission_wait_time_seconds") == [*H14, inf]
    assert _bucket_bounds(s, "kueue_local_queue_execution_time_seconds") == [*H16, inf]


def test_label_sets_and_replica_role() -> None:
    m = KueueMetrics()
    m.evicted("cq", "Deactivated", "AdmissionCheck", "high", True, None, ("lq", "ns"))
    m.preempted("cq-b", "InCohortReclamation")
    m.admission_attempt(False, 0.5)
    s = parse(m.exposition().decode())
    ev = labels(cluster_queue="cq", reason="Deactivated", underlying_cause="AdmissionCheck", priority_class="high")
    assert s["kueue_evicted_workloads_total"] == {ev: 1.0}
    assert s["kueue_evicted_workloads_once_total"] == {ev: 1.0}
    assert s["kueue_local_queue_evicted_workloads_total"] == {
        labels(name="lq", namespace="ns", reason="Deactivated", underlying_cause="AdmissionCheck", priority_class="high"): 1.0
    }
    assert s["kueue_preempted_workloads_total"] == {
        labels(preempting_cluster_queue="cq-b", reason="InCohortReclamation"): 1.0
    }
    assert s["kueue_admission_attempts_total"] == {labels(result="inadmissible"): 1.0}
    # Without PodsReady there is no ready-to-evicted observation.
    assert "kueue_pods_ready_to_evicted_time_seconds_count" not in s
    # kueue_build_info is the one family without replica_role.
    (build,) = s["kueue_build_info"]
    assert "replica_role" not in dict(build)
    assert {k for k, _ in build} == {"git_version", "git_commit", "build_date", "go_version", "compiler", "platform"}


def test_local_queue_families_follow_the_gate_and_config() -> None:
    on = from_config(load_config(None))
    assert on.lq is not None  # LocalQueueMetrics is on by default, localQueueMetrics.enable defaults to true
    off = from_config(load_config(None, feature_gates_flag="LocalQueueMetrics=false"))
    assert off.lq is None
    off.quota_reserved("cq", "", 1.0, ("lq", "ns"))
    text = off.exposition().decode()
    assert "kueue_quota_reserved_workloads_total" in text and "local_queue" not in text


def test_local_queue_selector_limits_which_queues_report() -> None:
    from pykueue.api.kueue import LocalQueue
    from pykueue.api.meta import ObjectMeta

    m = from_config(
        load_config(CONFIG + "  localQueueMetrics:\n    enable: true\n    localQueueSelector:\n      matchLabels: {team: a}\n")
    )
    rec = ControllerMetrics(m)
    yes = LocalQueue(metadata=ObjectMeta(name="a", namespace="ns", labels={"team": "a"}))
    no = LocalQueue(metadata=ObjectMeta(name="b", namespace="ns", labels={"team": "b"}))
    assert rec.expose_local_queue(yes) and not rec.expose_local_queue(no)


def test_cluster_queue_resource_gauges_follow_config() -> None:
    assert not from_config(load_config(None)).cluster_queue_resources
    assert from_config(load_config(CONFIG + "  enableClusterQueueResources: true\n")).cluster_queue_resources


def test_children_are_cached_so_hooks_do_no_label_lookups(monkeypatch: pytest.MonkeyPatch) -> None:
    m = KueueMetrics()
    m.admission_attempt(True, 0.1)
    m.admission_attempt(False, 0.1)
    m.quota_reserved("cq", "", 1.0, ("lq", "ns"))
    m.admitted("cq", "", 1.0, None, ("co",), ("lq", "ns"))

    def no_lookup(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("labels() called on a hot path")

    monkeypatch.setattr(Counter, "labels", no_lookup)
    monkeypatch.setattr(Histogram, "labels", no_lookup)
    for success in (True, False):
        m.admission_attempt(success, 0.1)
    m.quota_reserved("cq", "", 1.0, ("lq", "ns"))
    m.admitted("cq", "", 1.0, None, ("co",), ("lq", "ns"))
    s = parse(m.exposition().decode())
    assert s["kueue_quota_reserved_workloads_total"][labels(cluster_queue="cq", priority_class="")] == 2.0


class _Result:
    """The fields of the core's CycleResult the cycle hook reads."""

    def __init__(self, heads: int, admitted: list[str]) -> None:
        self.heads = heads
        self.admitted = admitted
        self.preempted: list[str] = []
        self.entries: list[Any] = []


def test_cycle_hook_cost_is_negligible() -> None:
    rec = ControllerMetrics(KueueMetrics())
    results = [_Result(3, ["ns/a"]), _Result(2, [])]
    n = 20_000
    start = time.perf_counter()
    for i in range(n):
        rec.cycle(results[i & 1], 0.001)
    per_call = (time.perf_counter() - start) / n
    # Two cached children, one inc and one observe: a few microseconds, far below a cycle's cost.
    assert per_call < 50e-6, per_call
    s = parse(rec.metrics.exposition().decode())
    assert s["kueue_admission_attempts_total"] == {labels(result="success"): n / 2, labels(result="inadmissible"): n / 2}


def test_cycle_reports_preemption_skips_as_upstream() -> None:
    from types import SimpleNamespace

    from pykueue.core.scheduler.flavorassigner.assignment import Mode
    from pykueue.metrics.recorder import OVERLAPPING_TARGETS

    def entry(cq: str, status: str, message: str, mode: Mode) -> Any:
        return SimpleNamespace(
            info=SimpleNamespace(cluster_queue=cq),
            status=status,
            message=message,
            mode=mode,
            targets=[],
            deferred_fit=False,
            overlap_recomputation="",
        )

    result = _Result(4, [])
    result.entries = [
        entry("a", "skipped", OVERLAPPING_TARGETS, Mode.FIT),  # overlap: counted whatever the mode
        entry("a", "skipped", "Workload no longer fits after processing another workload", Mode.PREEMPT),
        entry("b", "skipped", "Workload no longer fits after processing another workload", Mode.FIT),  # not counted
        entry("b", "", "", Mode.PREEMPT),  # not skipped
    ]
    rec = ControllerMetrics(KueueMetrics())
    rec.cycle(result, 0.001)
    s = parse(rec.metrics.exposition().decode())
    assert s["kueue_admission_cycle_preemption_skips"] == {labels(cluster_queue="a"): 2.0}


def test_cycle_counts_preemption_target_recomputations_until_the_cluster_queue_goes() -> None:
    # Upstream ReportPreemptionTargetRecomputation per recomputed entry; ClearClusterQueueMetrics.
    from types import SimpleNamespace

    def entry(cq: str, result: str) -> Any:
        return SimpleNamespace(
            info=SimpleNamespace(cluster_queue=cq),
            status="",
            message="",
            mode=None,
            targets=[],
            deferred_fit=result == "deferred_fit",
            overlap_recomputation=result,
        )

    result = _Result(4, [])
    result.entries = [entry("a", "new_targets"), entry("a", "deferred_fit"), entry("b", "skipped"), entry("b", "")]
    rec = ControllerMetrics(KueueMetrics())
    rec.cycle(result, 0.001)
    rec.cycle(result, 0.001)
    name = "kueue_preemption_target_recomputations_total"
    assert parse(rec.metrics.exposition().decode())[name] == {
        labels(cluster_queue="a", result="new_targets"): 2.0,
        labels(cluster_queue="a", result="deferred_fit"): 2.0,
        labels(cluster_queue="b", result="skipped"): 2.0,
    }
    rec.metrics.clear_cluster_queue("a")
    assert parse(rec.metrics.exposition().decode())[name] == {labels(cluster_queue="b", result="skipped"): 2.0}


def test_cycle_without_heads_is_not_an_attempt() -> None:
    rec = ControllerMetrics(KueueMetrics())
    rec.cycle(_Result(0, []), 0.001)
    assert "kueue_admission_attempts_total" not in parse(rec.metrics.exposition().decode())
