"""Fixtures of the metrics tests: the controller manager over an in-process API, scraped in-process."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pykueue.apiserver.app import create_app
from pykueue.client import resources as R
from pykueue.client.inprocess import InProcessClient
from pykueue.controllers.manager import ControllerManager
from pykueue.controllers.options import ControllerOptions
from pykueue.metrics import KueueMetrics
from pykueue.store import Store

KUEUE = "kueue.x-k8s.io/v1beta2"

Samples = dict[str, dict[frozenset[tuple[str, str]], float]]


class ManualClock:
    """The controllers' time, moved by the test."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class MetricsEnv:
    """An in-process API server and a running controller manager with its own metrics."""

    def __init__(
        self, metrics: KueueMetrics | None = None, *, standby: bool = False, options: ControllerOptions | None = None
    ) -> None:
        self.store = Store(None)
        _, self.parts = create_app(self.store)
        self.parts.bootstrap()
        self.client = InProcessClient(self.parts.handlers)
        self.clock = ManualClock()
        self.mgr = ControllerManager(self.client, options, clock=self.clock, metrics=metrics)
        self.metrics = self.mgr.metrics.metrics
        if standby:
            self.mgr.follow()
        self.mgr.start()
        assert self.mgr.wait_ready(10)

    def close(self) -> None:
        self.mgr.stop()
        self.store.close()

    def create(self, res: Any, obj: dict[str, Any]) -> dict[str, Any]:
        return self.client.create(res, obj)

    def get(self, res: Any, name: str, namespace: str | None = "default") -> dict[str, Any]:
        return self.client.get(res, name, namespace if res.namespaced else None)

    def patch(self, res: Any, name: str, patch: dict[str, Any], namespace: str | None = "default") -> None:
        self.client.patch(res, name, patch, namespace if res.namespaced else None)

    def scrape(self) -> Samples:
        return parse(self.metrics.exposition().decode())

    def queues(self, cohort: str = "co", cpu: int = 1, names: tuple[str, ...] = ("cq-a", "cq-b")) -> None:
        """A flavor, ClusterQueues ``names`` in ``cohort`` (reclaim Any) and a LocalQueue per ClusterQueue."""
        self.create(R.RESOURCE_FLAVORS, {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "f"}})
        for name in names:
            spec: dict[str, Any] = {
                "namespaceSelector": {},
                "cohortName": cohort,
                "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
                    }
                ],
            }
            self.create(R.CLUSTER_QUEUES, {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec})
            self.create(
                R.LOCAL_QUEUES,
                {
                    "apiVersion": KUEUE,
                    "kind": "LocalQueue",
                    "metadata": {"name": name.replace("cq", "lq"), "namespace": "default"},
                    "spec": {"clusterQueue": name},
                },
            )


def parse(text: str) -> Samples:
    """Samples by name, keyed by their label set, parsed with prometheus_client's text parser."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, {})[frozenset(s.labels.items())] = s.value
    return out


def labels(**kv: str) -> frozenset[tuple[str, str]]:
    """A label set, with ``replica_role="standalone"``."""
    return frozenset({**kv, "replica_role": "standalone"}.items())


def job(name: str, queue: str, cpu: str = "1") -> dict[str, Any]:
    """A queued batch/v1 Job (nothing runs its pods here)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "x", "command": ["true"], "resources": {"requests": {"cpu": cpu}}}],
                }
            },
        },
    }


def wait(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in time: {what}")
        time.sleep(0.02)


ABSENT = None
"""In :func:`scrape_until`'s expectations: the family (or series) is not exposed."""

Expected = dict[str | tuple[str, frozenset[tuple[str, str]]], Any]


def scrape_until(scrape: Callable[[], Samples], expected: Expected, what: str, timeout: float = 30.0) -> Samples:
    """A scrape (``scrape()``) in which every expectation holds at once; an AssertionError naming ``what`` and the
    expectations the last scrape missed when none does in ``timeout``.

    A family name expects the family's whole series (``{labels: value}``, or :data:`ABSENT`); a
    ``(name, labels)`` key expects that one series' value. The controllers count and update the
    state the gauges read after the writes the API already shows, family by family (an admission
    bumps its counters one after the other): a test that sees an object or one series must wait
    for the others, not read them in the same scrape."""

    def missed(s: Samples) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, want in expected.items():
            got = s.get(key) if isinstance(key, str) else s.get(key[0], {}).get(key[1])
            if got != want:
                out[str(key)] = got
        return out

    deadline = time.monotonic() + timeout
    while True:
        s = scrape()
        last = missed(s)
        if not last:
            return s
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met in time: {what}; last scrape differs in {last}")
        time.sleep(0.02)


@pytest.fixture
def env() -> Iterator[MetricsEnv]:
    e = MetricsEnv()
    yield e
    e.close()
