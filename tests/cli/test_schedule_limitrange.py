"""``pykueue schedule`` reads LimitRanges and RuntimeClasses as Kueue does: the real command in a
subprocess. The objects go through the API server's own pipeline first (a LimitRange's Container
``max`` defaults its ``default`` and ``defaultRequest``, as kube-apiserver's
``SetDefaults_LimitRangeItem``), then the core adjusts and bounds the pending Workloads
(``workload.AdjustResources``, ``ValidateLimitRange``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]

STATE = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default
      resources:
      - {name: cpu, nominalQuota: 6}
      - {name: memory, nominalQuota: 4Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lq, namespace: team}
spec: {clusterQueue: cq}
---
apiVersion: v1
kind: LimitRange
metadata: {name: bounds, namespace: team}
spec:
  limits:
  - type: Container
    min: {cpu: "1"}
    max: {cpu: "2"}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead: {podFixed: {cpu: 250m, memory: 100Mi}}
"""


def workload(name: str, resources: dict[str, Any], **pod_spec: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": "c", "image": "pause", "resources": resources}], **pod_spec}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "team"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": {"spec": spec}}]},
    }


def schedule(*workloads: dict[str, Any]) -> dict[str, dict[str, Any]]:
    docs = STATE + "".join("---\n" + yaml.safe_dump(w) for w in workloads)
    done = subprocess.run(
        [sys.executable, "-m", "pykueue", "schedule", "-f", "-", "--until-quiet", "--now", "2025-03-10T08:00:00Z"],
        input=docs,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(done.stdout) if d}  # type: ignore[misc]


def quota_reserved(wl: dict[str, Any]) -> tuple[str, str, str]:
    c = next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")
    return c["status"], c["reason"], c["message"]


def test_defaults_overhead_and_bounds() -> None:
    out = schedule(
        workload("defaulted", {}),
        workload("kata", {"requests": {"cpu": "1"}}, runtimeClassName="kata"),
        workload("below-min", {"requests": {"cpu": "500m"}}),
    )
    # kube-apiserver's defaulting of the LimitRange: the Container max becomes default and defaultRequest.
    item = out[("LimitRange", "bounds")]["spec"]["limits"][0]
    assert (item["default"], item["defaultRequest"]) == ({"cpu": "2"}, {"cpu": "2"})
    defaulted = out[("Workload", "defaulted")]
    assert quota_reserved(defaulted)[:2] == ("True", "QuotaReserved")
    assert defaulted["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] == {"cpu": "4"}
    # The stored Workload keeps the spec it was given.
    assert defaulted["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] == {}
    kata = out[("Workload", "kata")]
    assert quota_reserved(kata)[:2] == ("False", "WaitingForQuota")  # 2 × (1 + 250m) > the 2 cpu left
    assert "insufficient unused quota for cpu in flavor default, 500m more needed" in quota_reserved(kata)[2]
    assert quota_reserved(out[("Workload", "below-min")]) == (
        "False",
        "Misconfigured",
        "resources didn't satisfy LimitRange constraints: spec.podSets[0].template.spec.containers[0]: "
        'Invalid value: ["cpu"]: requests must not be below the limitRange min',
    )
