"""config/prometheus: the dashboard and the scrape example refer to metrics pykueue exposes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from pykueue.metrics import KueueMetrics

CONFIG = Path(__file__).resolve().parents[2] / "config" / "prometheus"


def _families() -> set[str]:
    """Every family name pykueue can expose (all options on), from the exposition's TYPE lines."""
    m = KueueMetrics(cluster_queue_resources=True)
    text = m.exposition().decode()
    names = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
    # Scrape-time gauges need a controller manager to produce samples; their families are declared anyway.
    names |= {f.name for f in m.state._families().values()}
    return names


def test_dashboard_queries_use_exposed_metrics() -> None:
    dashboard = json.loads((CONFIG / "grafana-dashboard.json").read_text())
    families = _families()
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 10
    used = {m for e in exprs for m in re.findall(r"\bkueue_[a-z_]+", e)}
    unknown = set()
    for name in used:
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        if name not in families and base not in families:
            unknown.add(name)
    assert not unknown, unknown
    titles = {p["title"] for p in dashboard["panels"]}
    for wanted in ("Pending workloads by ClusterQueue", "Admission rate", "Usage vs nominal quota",
                   "Evictions by reason", "Preemptions by reason"):  # fmt: skip
        assert wanted in titles
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_scrape_example_targets_metrics_path() -> None:
    doc = yaml.safe_load((CONFIG / "prometheus.yml").read_text())
    jobs = {j["job_name"]: j for j in doc["scrape_configs"]}
    assert set(jobs) == {"pykueue-serve", "pykueue-controller"}
    assert all(j["metrics_path"] == "/metrics" for j in jobs.values())
    assert jobs["pykueue-serve"]["authorization"]["type"] == "Bearer"
    assert jobs["pykueue-controller"]["static_configs"][0]["targets"] == ["127.0.0.1:8080"]
