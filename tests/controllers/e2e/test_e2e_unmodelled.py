"""Manifests using Kueue features pykueue does not implement are answered honestly, end to end.

Real ``pykueue serve`` with its controllers, real kubectl: the write is accepted with a
``Warning`` that kubectl prints, and the controllers record a ``Warning`` Event
``UnsupportedFeature`` on the watched objects. Kinds pykueue does not serve get kubectl's own
"no matches for kind" answer, not "failed to download openapi".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import Kueue, start_kueue, wait_for

FEATURES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: default}
spec:
  levels:
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: tas-flavor}
spec:
  nodeLabels: {pool: tas}
  topologyName: default
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: mk}
spec:
  controllerName: kueue.x-k8s.io/multikueue
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {name: mkc}
spec:
  clusters: [worker]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: tas-job
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: lq}
spec:
  template:
    metadata:
      annotations: {kueue.x-k8s.io/podset-required-topology: kubernetes.io/hostname}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, resources: {requests: {cpu: "1"}}}]
"""

UNSERVED = """
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: default}
spec:
  schedule: "0 0 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox}]
---
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: default}
spec: {}
"""


@pytest.fixture(scope="module")
def kueue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kueue]:
    k = start_kueue(tmp_path_factory.mktemp("unmodelled"), "embedded", ["--no-job-runner"])
    yield k
    k.stop()


def test_writes_are_answered_with_a_warning(kueue: Kueue) -> None:
    result = kueue.kubectl("apply", "-f", "-", stdin=FEATURES)
    warnings = result.stderr
    assert "Warning: pykueue does not implement Topology Aware Scheduling: Topology is ignored" in warnings
    assert "Topology Aware Scheduling: spec.topologyName is ignored" in warnings
    assert "MultiKueue: spec.controllerName: kueue.x-k8s.io/multikueue is ignored" in warnings
    assert "MultiKueue: MultiKueueConfig is ignored" in warnings
    assert (
        "Topology Aware Scheduling: spec.template.metadata.annotations"
        "[kueue.x-k8s.io/podset-required-topology] is ignored" in warnings
    )


def test_controllers_record_an_event_on_the_object(kueue: Kueue) -> None:
    kueue.kubectl("apply", "-f", "-", stdin=FEATURES)

    def unsupported() -> dict[str, str] | None:
        events = json.loads(kueue.kubectl("get", "events", "-A", "-o", "json").stdout)["items"]
        found = {
            e["involvedObject"]["kind"]: e["message"]
            for e in events
            if e["reason"] == "UnsupportedFeature" and e["type"] == "Warning"
        }
        return found if {"ResourceFlavor", "AdmissionCheck", "Job", "Workload"} <= found.keys() else None

    found = wait_for(unsupported, timeout=30, what="UnsupportedFeature events")
    assert "spec.podSets[0].topologyRequest is ignored" in found["Workload"]
    assert found["AdmissionCheck"].startswith("pykueue does not implement MultiKueue")


def test_unserved_integration_kinds_get_kubectls_answer(kueue: Kueue, tmp_path: Path) -> None:
    manifest = tmp_path / "unserved.yaml"
    manifest.write_text(UNSERVED)
    result = kueue.kubectl("apply", "-f", str(manifest), check=False)
    assert result.returncode != 0
    assert "failed to download openapi" not in result.stderr
    assert 'no matches for kind "CronJob" in version "batch/v1"' in result.stderr
    assert 'no matches for kind "JobSet" in version "jobset.x-k8s.io/v1alpha2"' in result.stderr
