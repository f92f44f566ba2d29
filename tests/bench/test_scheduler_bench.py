"""``pykueue bench scheduler``: the config reader, the physical limit, and a short run end to end."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pykueue.bench.config import ConfigError, load_config, parse_config
from pykueue.bench.ideal import greedy_schedule, ideal_wall_seconds
from pykueue.bench.scheduler import QueueInfo, Recorder, SchedulerBench, upstream_usage


def _config(**queue: object) -> dict[str, object]:
    q: dict[str, object] = {
        "className": "cq", "count": 1, "nominalQuota": 2, "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
        "workloadsSets": [{"count": 4, "creationIntervalMs": 0,
                           "workloads": [{"className": "small", "runtimeMs": 1000, "priority": 1, "request": 1}]}],
    }  # fmt: skip
    q.update(queue)
    return {"cohorts": [{"className": "cohort", "count": 1, "queuesSets": [q]}]}


def test_shipped_configs_are_upstreams() -> None:
    base = load_config("baseline")
    assert base.workload_count == 15_000
    qs = base.cohorts[0].queues_sets[0]
    assert (base.cohorts[0].count, qs.count, qs.nominal_quota, qs.borrowing_limit) == (5, 6, "20", "100")
    assert [(ws.count, ws.creation_interval_ms, ws.workloads[0].runtime_ms, ws.workloads[0].request_milli)
            for ws in qs.workloads_sets] == [(350, 100, 200, 1000), (100, 500, 500, 5000), (50, 1200, 1000, 20000)]  # fmt: skip
    assert load_config("large-scale").workload_count == 50_000


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_config(withinClusterQueue="Sometimes"), "cohorts[0].queuesSets[0].withinClusterQueue: must be one of"),
        (_config(nominalQuota="lots"), "cohorts[0].queuesSets[0].nominalQuota: not a quantity"),
        (_config(extra=1), "cohorts[0].queuesSets[0].extra: unknown field"),
        (_config(workloadsSets=[]), "cohorts[0].queuesSets[0].workloadsSets: must be a non-empty list"),
        ({"cohorts": [], "topology": {"name": "t"}}, "topology: TAS configurations are not supported"),
    ],
)
def test_bad_config_names_field_and_rule(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_config(doc, "gen.yaml", "gen")


def test_ideal_and_greedy_by_hand() -> None:
    # 4 × (1 CPU, 1 s) arriving at once into 2 CPU: perfect packing needs 2 s; a greedy scheduler
    # admits two at once and two a second later (average wait 0.5 s).
    cfg = parse_config(_config(), "gen.yaml", "gen")
    assert ideal_wall_seconds(cfg) == pytest.approx(2.0)
    greedy = greedy_schedule(cfg)
    assert greedy.avg_time_to_admission_seconds == {"small": pytest.approx(0.5)}
    assert greedy.wall_seconds == pytest.approx(2.0)
    # Baseline: 7,920 CPU-seconds per cohort into 120 CPU is 66 s; arrivals make it a little more.
    assert 66.0 <= ideal_wall_seconds(load_config("baseline")) < 68.0


SMOKE = {
    "cohorts": [{"className": "cohort", "count": 2, "queuesSets": [{
        "className": "cq", "count": 2, "nominalQuota": 4, "borrowingLimit": 4, "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
        "workloadsSets": [
            {"count": 15, "creationIntervalMs": 50,
             "workloads": [{"className": "small", "runtimeMs": 200, "priority": 50, "request": 1}]},
            # Larges hold quota 1.5 s each: ClusterQueue statuses are written at most once a
            # second (UpdatesBatchPeriod), so upstream's usage needs one written mid-reservation.
            {"count": 3, "creationIntervalMs": 300,
             "workloads": [{"className": "large", "runtimeMs": 1500, "priority": 200, "request": 4}]},
        ]}]}],
}  # fmt: skip


def test_short_run_end_to_end(tmp_path: Path) -> None:
    """CI's smoke test of the benchmark: a fresh serve, generator/runner/recorder over HTTP."""
    config = tmp_path / "smoke.yaml"
    config.write_text(yaml.safe_dump(SMOKE))
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "pykueue", "bench", "scheduler", "--config", str(config), "--output", str(out),
         "--timeout", "240"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) == {
        "wall_seconds", "ideal_wall_seconds", "admissions_per_second", "peak_admissions_per_second",
        "usage_percent", "useful_usage_percent", "upstream_usage_percent", "peak_rss_bytes", "classes",
    }  # fmt: skip
    assert summary["classes"]["small"]["count"] == 60 and summary["classes"]["large"]["count"] == 12
    for figures in summary["classes"].values():
        assert set(figures) == {"avg_time_to_admission_seconds", "ideal_avg_time_to_admission_seconds", "count",
                                "evictions"}  # fmt: skip
        assert figures["avg_time_to_admission_seconds"] >= 0
    # Every workload ran its runtime, so the wall is at least the physical limit; all of the work
    # that was done is counted as useful, and never more than was reserved.
    assert summary["wall_seconds"] >= summary["ideal_wall_seconds"] > 0
    assert summary["admissions_per_second"] >= 72 / summary["wall_seconds"] - 0.05  # rounded to 0.1
    assert 0 < summary["useful_usage_percent"]["cq"] <= summary["usage_percent"]["cq"] <= 100
    assert 0 < summary["upstream_usage_percent"]["cq"] <= 100  # from the ClusterQueues' status
    assert summary["peak_rss_bytes"]["control_plane"] > 0
    assert (out / "timeline.png").read_bytes().startswith(b"\x89PNG")
    assert "ratio" in proc.stdout and "finished 72" in proc.stderr
    assert "by upstream's recorder's definition (server timestamps, whole seconds): large " in proc.stdout
    assert "usage by upstream's recorder's definition (ClusterQueue status flavorsUsage between its events): cq " in proc.stdout


def _cq(usage: str | None) -> dict[str, object]:
    status = {} if usage is None else {"flavorsUsage": [{"name": "rf", "resources": [{"name": "cpu", "total": usage}]}]}
    return {"metadata": {"name": "q"}, "status": status}


def test_upstream_usage_follows_cluster_queue_status_events() -> None:
    # recorder.go recordCQEvent + checker_test.go: each event's flavorsUsage holds until the next
    # event of that ClusterQueue; the class's window runs from its first event to its last.
    rec = Recorder(0.0)
    rec.queues["q"] = QueueInfo("q", "cohort-0", "cq", 20_000)
    rec.queues["r"] = QueueInfo("r", "cohort-0", "cq", 20_000)
    rec.observe_cluster_queue("q", _cq(None), 0.0)  # created, no status yet
    rec.observe_cluster_queue("r", _cq(None), 0.0)
    rec.observe_cluster_queue("q", _cq("20"), 1.0)  # 20 CPU used from 1 s...
    rec.observe_cluster_queue("q", _cq("500m"), 3.0)  # ...to 3 s, then 0.5 CPU...
    rec.observe_cluster_queue("q", _cq("0"), 5.0)  # ...to 5 s
    rec.observe_cluster_queue("r", _cq("0"), 10.0)
    # (20 CPU × 2 s + 0.5 CPU × 2 s) / (40 CPU × 10 s)
    assert upstream_usage(rec) == {"cq": round(100 * (40 + 1) / 400, 2)}
    assert upstream_usage(Recorder(0.0)) == {}


def test_bad_config_is_a_usage_error(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump(_config(withinClusterQueue="Sometimes")))
    proc = subprocess.run(
        [sys.executable, "-m", "pykueue", "bench", "scheduler", "--config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "withinClusterQueue: must be one of" in proc.stderr


class _CountingAPI:
    """An API whose status writes wait for the test to let them through, counting how many are open."""

    def __init__(self) -> None:
        self.open = 0
        self.most = 0
        self.release = asyncio.Event()

    async def request(self, method: str, path: str, body: object = None) -> dict[str, object]:
        self.open += 1
        self.most = max(self.most, self.open)
        await self.release.wait()
        self.open -= 1
        return {}


@pytest.mark.parametrize(("workers", "expected"), [(2, 2), (0, 10)])
def test_runner_status_writes_in_flight_are_bounded_like_upstreams_workers(workers: int, expected: int) -> None:
    # Upstream's runner finishes workloads from 5 reconcile workers, one write each at a time.
    async def play() -> int:
        api = _CountingAPI()
        bench = SchedulerBench(api, parse_config(SMOKE, "smoke", "smoke"), 0.0, None, workers)  # type: ignore[arg-type]
        obj = {"metadata": {"namespace": "ns", "name": "wl"}, "status": {}}
        writes = [asyncio.ensure_future(bench._write_status(dict(obj), lambda o: True)) for _ in range(10)]
        for _ in range(50):
            await asyncio.sleep(0)
        most = api.most
        api.release.set()
        await asyncio.gather(*writes)
        return most

    assert asyncio.run(play()) == expected
