"""The generated CRDs' rules as a real kube-apiserver evaluates them (no controller runs here):
the cases issue 14 found, each with upstream's message (as kubectl prints a 422's causes)."""

from __future__ import annotations

import json
from typing import Any

from realcluster import RealCluster

WORKLOAD = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "Workload",
    "metadata": {"name": "", "namespace": "default"},
    "spec": {
        "queueName": "a",
        "podSets": [
            {
                "name": "main",
                "count": 1,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}},
            }
        ],
    },
}

RESERVED = {
    "conditions": [
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": "Quota reserved in ClusterQueue cq",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ],
    "admission": {
        "clusterQueue": "cq",
        "podSetAssignments": [{"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "1"}, "count": 1}],
    },
}


def _workload(cluster: RealCluster, name: str, status: dict[str, Any] | None = None) -> None:
    obj = json.loads(json.dumps(WORKLOAD))
    obj["metadata"]["name"] = name
    cluster.kubectl("create", "-f", "-", stdin=json.dumps(obj))
    if status is not None:
        cluster.kubectl(
            "patch", "workload", name, "-n", "default", "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": status}),
        )  # fmt: skip


def _patch(cluster: RealCluster, name: str, patch: dict[str, Any], *, status: bool = False) -> Any:
    args = ["patch", "workload", name, "-n", "default", "--type=merge", "-p", json.dumps(patch)]
    return cluster.kubectl(*args, *(["--subresource=status"] if status else []), check=False)


def test_queue_name_is_immutable_while_quota_is_reserved(real_cluster: RealCluster) -> None:
    _workload(real_cluster, "reserved", RESERVED)
    changed = _patch(real_cluster, "reserved", {"spec": {"queueName": "b"}})
    assert changed.returncode != 0
    assert 'The Workload "reserved" is invalid: <nil>: Invalid value: queueName is immutable while workload quota reserved' in changed.stderr
    removed = _patch(real_cluster, "reserved", {"spec": {"queueName": None}})
    assert "queueName is immutable while workload quota reserved" in removed.stderr
    _workload(real_cluster, "free")
    assert _patch(real_cluster, "free", {"spec": {"queueName": "b"}}).returncode == 0


def test_cluster_name_can_be_removed_but_not_changed(real_cluster: RealCluster) -> None:
    _workload(real_cluster, "remote", {"clusterName": "worker-1"})
    changed = _patch(real_cluster, "remote", {"status": {"clusterName": "worker-2"}}, status=True)
    assert 'status: Invalid value: clusterName is immutable once set' in changed.stderr
    removed = _patch(real_cluster, "remote", {"status": {"clusterName": None}}, status=True)
    assert removed.returncode == 0, removed.stderr  # no CEL "no such key" error


def test_priority_class_ref_kind_must_match_its_group(real_cluster: RealCluster) -> None:
    obj = json.loads(json.dumps(WORKLOAD))
    obj["metadata"]["name"] = "wrong-kind"
    obj["spec"]["priority"] = 1
    obj["spec"]["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "PriorityClass", "name": "p"}
    result = real_cluster.kubectl("create", "-f", "-", stdin=json.dumps(obj), check=False)
    assert (
        'spec.priorityClassRef: Invalid value: only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group'
        in result.stderr
    ), result.stderr


def test_topology_hostname_only_at_the_lowest_level(real_cluster: RealCluster) -> None:
    topology = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "hostname-first"},
        "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "cloud.com/rack"}]},
    }
    result = real_cluster.kubectl("create", "-f", "-", stdin=json.dumps(topology), check=False)
    assert (
        'spec.levels: Invalid value: the kubernetes.io/hostname label can only be used at the lowest level of topology'
        in result.stderr
    ), result.stderr
    topology["metadata"]["name"] = "regrouped"
    topology["spec"]["levels"] = [{"nodeLabel": "cloud.com/block"}, {"nodeLabel": "kubernetes.io/hostname"}]
    real_cluster.kubectl("create", "-f", "-", stdin=json.dumps(topology))
    levels = [{"nodeLabel": "cloud.com/rack"}, {"nodeLabel": "kubernetes.io/hostname"}]
    patch = json.dumps({"spec": {"levels": levels}})
    regrouped = real_cluster.kubectl("patch", "topology", "regrouped", "--type=merge", "-p", patch, check=False)
    assert regrouped.returncode == 0, regrouped.stderr


# --- embedded pod templates: serve and the real server apply the same schema ------------------------

_TEMPLATE_CASES: dict[str, Any] = {
    "wrong-type": lambda spec, wl: spec["containers"][0].__setitem__("image", 5),
    "no-container-name": lambda spec, wl: spec["containers"][0].pop("name"),
    "duplicate-container": lambda spec, wl: spec["containers"].append({"name": "c", "image": "x"}),
    "duplicate-port": lambda spec, wl: spec["containers"][0].__setitem__(
        "ports", [{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}]
    ),
    "bad-quantity": lambda spec, wl: spec["containers"][0].__setitem__("resources", {"requests": {"cpu": "1x"}}),
    "nfs-without-path": lambda spec, wl: spec.__setitem__("volumes", [{"name": "v", "nfs": {"server": "s"}}]),
    "bad-enum": lambda spec, wl: wl["spec"].__setitem__(
        "priorityClassRef", {"group": "bogus.io", "kind": "PriorityClass", "name": "p"}
    ),
}


def _causes(message: str) -> set[str]:
    """The field errors of an ``is invalid:`` message, as kubectl or serve print them."""
    body = message.split(" is invalid: ", 1)[1].strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    parts = body.replace("\n* ", ", ").lstrip("* ").split(", spec.")
    causes = {parts[0], *("spec." + p for p in parts[1:])}
    # the "rules were not checked" marker is added after the blocking errors on both sides
    return {c.split(", <nil>: ")[0].strip() for c in causes if not c.startswith("<nil>")}


def test_pod_template_rules_match_serve(real_cluster: RealCluster) -> None:
    """Invalid pod templates (and an enum beside them) are refused by the real server with the
    same field errors ``serve`` reports for the same object: one schema for both."""
    from pykueue.apiserver.resources import REGISTRY

    info = REGISTRY.get("kueue.x-k8s.io", "v1beta2", "workloads")
    assert info is not None
    for name, mutate in _TEMPLATE_CASES.items():
        obj = json.loads(json.dumps(WORKLOAD))
        obj["metadata"]["name"] = name
        mutate(obj["spec"]["podSets"][0]["template"]["spec"], obj)
        real = real_cluster.kubectl("create", "-f", "-", stdin=json.dumps(obj), check=False)
        assert real.returncode != 0, f"{name}: the real server accepted it"
        failure = info.validation_failure(info.default(info.to_storage(obj)), None)
        assert failure is not None, f"{name}: serve accepted what the real server refused: {real.stderr}"
        assert _causes(failure.message) == _causes(real.stderr.replace("Error from server (Invalid): ", "")), name


def test_pod_template_enums_are_not_in_the_crd(real_cluster: RealCluster) -> None:
    """controller-gen does not turn the core types' ``+enum`` comments into CRD enums: the real
    server stores a template with an unknown restartPolicy (a Job's pods are validated later), and
    so does serve."""
    from pykueue.apiserver.resources import REGISTRY

    info = REGISTRY.get("kueue.x-k8s.io", "v1beta2", "workloads")
    assert info is not None
    obj = json.loads(json.dumps(WORKLOAD))
    obj["metadata"]["name"] = "odd-restart-policy"
    obj["spec"]["podSets"][0]["template"]["spec"]["restartPolicy"] = "Sometimes"
    real = real_cluster.kubectl("create", "-f", "-", stdin=json.dumps(obj), check=False)
    assert real.returncode == 0, real.stderr
    assert info.validation_failure(info.default(info.to_storage(obj)), None) is None


# --- rules that cannot be evaluated, and the OpenAPI errors of a wrong type -------------------------


def _create(cluster: RealCluster, obj: dict[str, Any]) -> str:
    result = cluster.kubectl("create", "-f", "-", stdin=json.dumps(obj), check=False)
    assert result.returncode != 0
    return str(result.stderr)


def test_a_rule_selecting_an_absent_field_fails_to_evaluate(real_cluster: RealCluster) -> None:
    """``self.nodeLabels.size()`` without ``nodeLabels``, ``x.operator`` without ``operator``:
    kube-apiserver reports the evaluation error with the schema type as the value."""
    rf = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "topo"},
          "spec": {"topologyName": "default"}}  # fmt: skip
    assert (
        'spec: Invalid value: "object": no such key: nodeLabels evaluating rule: at least one nodeLabel is '
        "required when topology is set" in _create(real_cluster, rf)
    )
    rf["metadata"]["name"] = "tolerations"
    rf["spec"] = {"tolerations": [{"effect": "NoSchedule"}]}
    assert (
        'spec.tolerations: Invalid value: "array": no such key: operator evaluating rule: operator must be '
        "Exists when 'key' is empty" in _create(real_cluster, rf)
    )
    _workload(real_cluster, "no-assignments")
    status = {"conditions": RESERVED["conditions"], "admission": {"clusterQueue": "cq"}}
    result = _patch(real_cluster, "no-assignments", {"status": status}, status=True)
    assert (
        '<nil>: Invalid value: "object": no such key: podSetAssignments evaluating rule: podSetAssignments '
        "must have the same number of podSets as the spec" in result.stderr
    ), result.stderr


def test_a_quantity_of_the_wrong_type_reads_four_times(real_cluster: RealCluster) -> None:
    """An int-or-string quantity of another JSON type: the type error, kube-openapi's ``anyOf``
    error, the first member's type error, and the CEL notice."""
    path = "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"
    flavor = {"name": "f", "resources": [{"name": "cpu", "nominalQuota": 0.5}]}
    cohort = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "half"},
              "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [flavor]}]}}  # fmt: skip
    stderr = _create(real_cluster, cohort)
    for line in (
        f'{path}: Invalid value: "number": {path} in body must be of type integer,string: "number"',
        f'<nil>: Invalid value: "": "{path}" must validate at least one schema (anyOf)',
        f'{path}: Invalid value: "number": {path} in body must be of type integer: "number"',
        "<nil>: Invalid value: null: some validation rules were not checked",
    ):
        assert line in stderr, stderr
