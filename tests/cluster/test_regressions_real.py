"""Cluster-mode bugs that only a real kube-apiserver shows (issue 14), each against the real server.

The controller runs with ``--no-webhooks``: nothing but the controller itself touches the objects
(``pykueue serve`` and the webhooks add the ClusterQueue finalizer at creation, which hid the first
bug), and kube-apiserver's audit log counts the controller's requests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import support
from realcluster import start_real_kueue

CONTROLLER_AGENT = "pykueue-controller"


@pytest.fixture(scope="module")
def kueue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[support.Kueue]:
    k = start_real_kueue(tmp_path_factory.mktemp("regressions-real"), ["--no-webhooks"], run_jobs=False)
    yield k
    k.stop()


FLAVOR = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: {name}
"""

CQ = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: {name}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: {flavor}
      resources:
      - name: cpu
        nominalQuota: {cpu}
"""

WORKLOAD = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: {name}
  namespace: default
spec:
  queueName: {queue}
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: c
          image: busybox
          resources:
            requests:
              cpu: "1"
"""


def test_untouched_cluster_queue_gets_finalizer_and_status(kueue: support.Kueue) -> None:
    kueue.apply(FLAVOR.format(name="untouched-flavor"))
    kueue.apply(CQ.format(name="untouched-cq", flavor="untouched-flavor", cpu=3))

    def active() -> dict[str, Any] | None:
        cq = kueue.get("clusterqueue", "untouched-cq", None)
        return cq if support.is_true(cq, "Active") else None

    cq = support.wait_for(active, timeout=30, what="Active condition on a ClusterQueue nothing else touches")
    assert "kueue.x-k8s.io/resource-in-use" in cq["metadata"]["finalizers"]
    condition = support.condition(cq, "Active")
    assert condition is not None and (condition["reason"], condition["message"]) == ("Ready", "Can admit new workloads")
    assert cq["status"]["pendingWorkloads"] == 0 and cq["status"]["reservingWorkloads"] == 0
    usage = {r["name"]: r["total"] for f in cq["status"]["flavorsReservation"] for r in f["resources"]}
    assert usage == {"cpu": "0"}


def _controller_requests(kueue: support.Kueue, verb: str, resource: str) -> list[dict[str, Any]]:
    return [
        e
        for e in kueue.server.audit_events()
        if str(e.get("userAgent", "")).startswith(CONTROLLER_AGENT)
        and e.get("verb") == verb
        and (e.get("objectRef") or {}).get("resource") == resource
        and not (e.get("objectRef") or {}).get("subresource")
    ]


def test_no_workload_reads_without_admission_checks(kueue: support.Kueue) -> None:
    """Without any AdmissionCheck the ProvisioningRequest check has nothing to read: admitting
    Workloads costs no GET of a Workload (the informers' LIST+WATCH carry them)."""
    kueue.apply(FLAVOR.format(name="reads-flavor"))
    kueue.apply(CQ.format(name="reads-cq", flavor="reads-flavor", cpu=100))
    kueue.apply(support.local_queue("reads-lq", "reads-cq"))
    count = 20
    kueue.apply("---".join(WORKLOAD.format(name=f"reads-{i}", queue="reads-lq") for i in range(count)))

    def all_admitted() -> bool:
        wls = [w for w in kueue.items("workloads") if w["metadata"]["name"].startswith("reads-")]
        return len(wls) == count and all(support.is_true(w, "Admitted") for w in wls)

    support.wait_for(all_admitted, timeout=60, what="workloads admitted")
    status_writes = _controller_requests(kueue, "update", "workloads")
    assert status_writes == [] or all((e["objectRef"].get("name") or "").startswith("reads-") for e in status_writes)
    gets = _controller_requests(kueue, "get", "workloads")
    assert gets == [], f"{len(gets)} GETs of Workloads: {[e['objectRef']['name'] for e in gets][:10]}"


def test_admission_check_config_is_read_from_the_cache(kueue: support.Kueue) -> None:
    """The check's Active condition names a missing ProvisioningRequestConfig without a GET per
    reconcile (the informer has them); it turns Active once the config is created."""
    kueue.apply(
        """
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: reads-check
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters:
    apiGroup: kueue.x-k8s.io
    kind: ProvisioningRequestConfig
    name: reads-config
"""
    )

    def active() -> dict[str, Any] | None:
        return support.condition(kueue.get("admissioncheck", "reads-check", None), "Active")

    bad = support.wait_for(active, timeout=30, what="Active condition")
    assert (bad["status"], bad["reason"]) == ("False", "BadParametersRef")
    assert bad["message"] == 'provisioningrequestconfigs.kueue.x-k8s.io "reads-config" not found'
    kueue.apply(
        """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ProvisioningRequestConfig
metadata:
  name: reads-config
spec:
  provisioningClassName: class.example.com
"""
    )
    support.wait_for(lambda: (c := active()) is not None and c["status"] == "True", timeout=30, what="Active")
    assert _controller_requests(kueue, "get", "provisioningrequestconfigs") == []
