"""LimitRanges and RuntimeClasses end to end: upstream's integration tests of
``workload.AdjustResources`` and ``ValidateLimitRange``, ported.

The ``It``s of ``test/integration/singlecluster/scheduler/workload_controller_test.go`` ("Workload
with RuntimeClass defined", "... non-existent RuntimeClass ...", "LimitRanges are defined",
"RuntimeClass is defined and change", "LimitRanges are defined and change") and the LimitRange
entries of ``test/integration/singlecluster/scheduler/scheduler_test.go``, against real ``pykueue
serve`` (embedded controllers, and ``serve --no-controllers`` with ``pykueue controller``) driven
by the real kubectl. ``tests/cluster/test_resource_adjustments_real.py`` runs the same functions
against a real kube-apiserver. Each test works in a namespace of its own, with its own
ClusterQueue (upstream's: cpu nominal 5, borrowing limit 5, in a cohort).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from support import Kueue, condition, is_true, start_kueue, wait_for

QUEUES = """
apiVersion: v1
kind: Namespace
metadata: {{name: {ns}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: {ns}-on-demand}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {ns}-cq}}
spec:
  cohortName: {ns}-cohort
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: {ns}-on-demand
      resources:
      - {{name: cpu, nominalQuota: "5", borrowingLimit: "5"}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: queue, namespace: {ns}}}
spec: {{clusterQueue: {ns}-cq}}
"""

LIMIT_RANGE = """
apiVersion: v1
kind: LimitRange
metadata: {{name: limits, namespace: {ns}}}
spec:
  limits:
  - type: {type}
{values}
"""

RUNTIME_CLASS = """
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {{name: {name}}}
handler: bar-handler
overhead:
  podFixed: {{cpu: "{cpu}"}}
"""


def workload(ns: str, name: str, *, requests: str = "", limits: str = "", runtime_class: str = "") -> str:
    """A Workload of one pod ("c") for ``queue`` in ``ns`` (JSON, which kubectl applies as YAML)."""
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = {"cpu": requests}
    if limits:
        resources["limits"] = {"cpu": limits}
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "pause", "resources": resources}]}
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    return json.dumps(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"queueName": "queue", "podSets": [{"name": "main", "count": 1, "template": {"spec": spec}}]},
        }
    )


@pytest.fixture(scope="module", params=["embedded", "cluster"])
def kueue(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    k = start_kueue(tmp_path_factory.mktemp(f"adjust-{request.param}"), request.param, run_jobs=False)
    yield k
    k.stop()


def _setup(kueue: Kueue, ns: str, *before: str) -> None:
    for manifest in before:
        kueue.apply(manifest)
    kueue.apply(QUEUES.format(ns=ns))


def _reserved(kueue: Kueue, ns: str, name: str) -> bool:
    return is_true(kueue.get("workload", name, ns), "QuotaReserved")


def _wait_reserved(kueue: Kueue, ns: str, name: str) -> None:
    wait_for(lambda: _reserved(kueue, ns, name), timeout=60, what=f"{ns}/{name} holds quota")


def _cq_usage(kueue: Kueue, ns: str) -> tuple[int, int, dict[str, str]]:
    status: dict[str, Any] = kueue.get("clusterqueue", f"{ns}-cq", None).get("status") or {}
    usage = {r["name"]: r["total"] for f in status.get("flavorsReservation") or [] for r in f["resources"]}
    return status.get("pendingWorkloads", 0), status.get("reservingWorkloads", 0), usage


def _wait_usage(kueue: Kueue, ns: str, want: tuple[int, int, dict[str, str]]) -> None:
    got: list[Any] = []

    def reached() -> bool:
        got[:] = [_cq_usage(kueue, ns)]
        return got[0] == want

    wait_for(reached, timeout=60, what=f"ClusterQueue {ns}-cq status {want} (last {got})")


def test_should_accumulate_runtime_class_overhead(kueue: Kueue) -> None:
    ns = "rc-overhead"
    _setup(kueue, ns, RUNTIME_CLASS.format(name="kata", cpu="1"))
    kueue.apply(workload(ns, "one", requests="1", runtime_class="kata"))
    _wait_reserved(kueue, ns, "one")
    _wait_usage(kueue, ns, (0, 1, {"cpu": "2"}))


def test_should_not_accumulate_overhead_of_a_non_existent_runtime_class(kueue: Kueue) -> None:
    ns = "rc-missing"
    _setup(kueue, ns)
    kueue.apply(workload(ns, "one", requests="1", runtime_class="kata-missing"))
    _wait_reserved(kueue, ns, "one")
    _wait_usage(kueue, ns, (0, 1, {"cpu": "1"}))


def test_should_use_the_range_defined_default_requests(kueue: Kueue) -> None:
    ns = "lr-defaults"
    _setup(kueue, ns, QUEUES.format(ns=ns).split("---")[0], LIMIT_RANGE.format(ns=ns, type="Container", values='    defaultRequest: {cpu: "3"}'))
    kueue.apply(workload(ns, "one"))
    _wait_reserved(kueue, ns, "one")
    _wait_usage(kueue, ns, (0, 1, {"cpu": "3"}))
    stored = kueue.get("workload", "one", ns)
    assert stored["spec"]["podSets"][0]["template"]["spec"]["containers"][0].get("resources") in (None, {})


def test_should_sync_the_resource_requests_with_the_new_overhead(kueue: Kueue) -> None:
    ns = "rc-change"
    rc = RUNTIME_CLASS.format(name="kata-change", cpu="2")
    _setup(kueue, ns, rc)
    kueue.apply(workload(ns, "one", requests="1", runtime_class="kata-change"))
    _wait_reserved(kueue, ns, "one")
    kueue.apply(workload(ns, "two", requests="1", runtime_class="kata-change"))
    _wait_usage(kueue, ns, (1, 1, {"cpu": "3"}))
    assert not _reserved(kueue, ns, "two")
    kueue.apply(RUNTIME_CLASS.format(name="kata-change", cpu="1"))
    _wait_reserved(kueue, ns, "two")
    # 3 = 1 + 2 (the overhead when "one" was admitted), 2 = 1 + 1 (the new overhead)
    _wait_usage(kueue, ns, (0, 2, {"cpu": "5"}))


def test_should_sync_the_resource_requests_with_the_limit(kueue: Kueue) -> None:
    ns = "lr-change"
    _setup(kueue, ns, QUEUES.format(ns=ns).split("---")[0], LIMIT_RANGE.format(ns=ns, type="Container", values='    defaultRequest: {cpu: "3"}'))
    kueue.apply(workload(ns, "one"))
    _wait_reserved(kueue, ns, "one")
    kueue.apply(workload(ns, "two"))
    _wait_usage(kueue, ns, (1, 1, {"cpu": "3"}))
    assert not _reserved(kueue, ns, "two")
    kueue.apply(LIMIT_RANGE.format(ns=ns, type="Container", values='    defaultRequest: {cpu: "2"}'))
    _wait_reserved(kueue, ns, "two")
    _wait_usage(kueue, ns, (0, 2, {"cpu": "5"}))


@pytest.mark.parametrize(
    ("entry", "limit_type", "bound"),
    [
        ("request over container limits", "Container", 'max: {cpu: "1"}'),
        ("request under container limits", "Container", 'min: {cpu: "3"}'),
        ("request over pod limits", "Pod", 'max: {cpu: "1"}'),
        ("request under pod limits", "Pod", 'min: {cpu: "3"}'),
    ],
)
def test_limit_range_constraints_block_admission(kueue: Kueue, entry: str, limit_type: str, bound: str) -> None:
    """scheduler_test.go "Should not admit workloads ... LimitRange" entries: requests 2, limits 3."""
    ns = "lr-" + entry.replace(" ", "-")
    _setup(kueue, ns, QUEUES.format(ns=ns).split("---")[0], LIMIT_RANGE.format(ns=ns, type=limit_type, values=f"    {bound}"))
    kueue.apply(workload(ns, "wl", requests="2", limits="3"))

    def message() -> str | None:
        cond = condition(kueue.get("workload", "wl", ns), "QuotaReserved")
        text = cond.get("message") if cond is not None else None
        return text if text and text.startswith("resources didn't satisfy LimitRange constraints:") else None

    wait_for(message, timeout=60, what=f"{ns}/wl refused for its LimitRange")
    assert not _reserved(kueue, ns, "wl")


def test_nothing_written_into_the_stored_workload(kueue: Kueue) -> None:
    """The adjustments are the scheduler's view only: the Workload keeps the spec it was created with."""
    ns = "lr-spec-kept"
    _setup(
        kueue,
        ns,
        QUEUES.format(ns=ns).split("---")[0],
        LIMIT_RANGE.format(ns=ns, type="Container", values='    defaultRequest: {cpu: "1"}\n    default: {cpu: "2"}'),
    )
    kueue.apply(workload(ns, "one"))
    _wait_reserved(kueue, ns, "one")
    container = kueue.get("workload", "one", ns)["spec"]["podSets"][0]["template"]["spec"]["containers"][0]
    assert container.get("resources") in (None, {})
    _wait_usage(kueue, ns, (0, 1, {"cpu": "1"}))
