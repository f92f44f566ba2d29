"""The real kubectl 1.32 against a real ``pykueue serve`` process.

Each test uses its own object names, so one server serves the whole module.
"""

from __future__ import annotations

import json
import re
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import SEEDS, ServerProcess, wait_for

CQ = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "{name}"
spec:
  namespaceSelector: {{}} # match all.
  resourceGroups:
  - coveredResources: ["cpu", "memory", "pods"]
    flavors:
    - name: "default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: {cpu}
      - name: "memory"
        nominalQuota: 36Gi
      - name: "pods"
        nominalQuota: 5
"""

CQ_V1BETA2 = """\
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: {name}
spec:
  cohortName: {cohort}
  queueingStrategy: StrictFIFO
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources:
      - name: cpu
        nominalQuota: "4"
"""


def cq(name: str, cpu: int | str = 9) -> str:
    return CQ.format(name=name, cpu=cpu)


def get_json(server: ServerProcess, *args: str) -> Any:
    return json.loads(server.kubectl("get", *args, "-o", "json").stdout)


def release(server: ServerProcess, resource: str, name: str) -> None:
    """Remove every finalizer (Kueue's controllers would drop resource-in-use when unused)."""
    patch = '[{"op":"remove","path":"/metadata/finalizers"}]'
    out = server.kubectl("patch", resource, name, "--type=json", "-p", patch, check=False)
    assert out.returncode == 0 or "NotFound" in out.stderr, out.stderr


def table(text: str) -> list[list[str]]:
    """Split kubectl's table output on runs of 2+ spaces."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


# --- discovery -----------------------------------------------------------------------------------------


def test_api_versions_lists_every_group_version(server: ServerProcess) -> None:
    out = server.kubectl("api-versions").stdout.split()
    for gv in (
        "v1",
        "batch/v1",
        "scheduling.k8s.io/v1",
        "coordination.k8s.io/v1",
        "kueue.x-k8s.io/v1beta1",
        "kueue.x-k8s.io/v1beta2",
        "autoscaling.x-k8s.io/v1",
    ):
        assert gv in out


def test_api_resources_show_short_names_and_kinds(server: ServerProcess) -> None:
    out = server.kubectl("api-resources", "--api-group=kueue.x-k8s.io").stdout
    rows = {r[0]: r for r in table(out)[1:]}
    assert rows["clusterqueues"] == ["clusterqueues", "cq", "kueue.x-k8s.io/v1beta2", "false", "ClusterQueue"]
    assert rows["localqueues"][1:] == ["queue,queues,lq", "kueue.x-k8s.io/v1beta2", "true", "LocalQueue"]
    assert rows["resourceflavors"][1] == "flavor,flavors,rf"
    assert rows["workloads"][1] == "kwl,kueueworkload,kueueworkloads"
    core = table(server.kubectl("api-resources", "--api-group=").stdout)
    assert ["namespaces", "ns", "v1", "false", "Namespace"] in core


def test_version_reports_kubernetes_1_32(server: ServerProcess) -> None:
    out = json.loads(server.kubectl("version", "-o", "json").stdout)
    assert out["serverVersion"]["major"] == "1"
    assert out["serverVersion"]["minor"] == "32"


# --- apply, get, describe ------------------------------------------------------------------------------


def test_client_side_apply_create_unchanged_configured(server: ServerProcess, tmp_path: Path) -> None:
    path = tmp_path / "cq.yaml"
    # quantities as strings: Kueue's webhook re-encodes numbers as strings, which a re-apply
    # of `nominalQuota: 9` reports as "configured" on a real cluster too
    path.write_text(cq("apply-cs", cpu='"9"').replace("nominalQuota: 5", 'nominalQuota: "5"'))
    out = server.kubectl("apply", "-f", str(path))
    assert out.stdout.strip() == "clusterqueue.kueue.x-k8s.io/apply-cs created"
    assert "deprecated" in out.stderr  # v1beta1 is served with the CRD's deprecation warning
    assert (
        server.kubectl("apply", "-f", str(path)).stdout.strip()
        == "clusterqueue.kueue.x-k8s.io/apply-cs unchanged"
    )
    path.write_text(cq("apply-cs", cpu='"12"').replace("nominalQuota: 5", 'nominalQuota: "5"'))
    assert (
        server.kubectl("apply", "-f", str(path)).stdout.strip()
        == "clusterqueue.kueue.x-k8s.io/apply-cs configured"
    )
    obj = get_json(server, "clusterqueue", "apply-cs", "--show-managed-fields")
    assert obj["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    resources = obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert resources[0] == {"name": "cpu", "nominalQuota": "12"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in obj["metadata"]["annotations"]
    assert obj["metadata"]["generation"] == 2
    managers = {m["manager"] for m in obj["metadata"]["managedFields"]}
    assert "kubectl-client-side-apply" in managers


def test_get_prints_printer_columns_and_wide(server: ServerProcess) -> None:
    server.kubectl("apply", "-f", "-", stdin=CQ_V1BETA2.format(name="cols", cohort="team"))
    rows = table(server.kubectl("get", "cq", "cols").stdout)
    assert rows[0] == ["NAME", "COHORT", "PENDING WORKLOADS"]
    assert rows[1] == ["cols", "team", "0"] or rows[1][:2] == ["cols", "team"]
    wide = table(server.kubectl("get", "clusterqueues", "cols", "-o", "wide").stdout)
    assert wide[0] == ["NAME", "COHORT", "STRATEGY", "PENDING WORKLOADS", "ADMITTED WORKLOADS"]
    assert wide[1][:3] == ["cols", "team", "StrictFIFO"]


def test_get_yaml_json_in_each_version(server: ServerProcess) -> None:
    server.kubectl("apply", "-f", "-", stdin=CQ_V1BETA2.format(name="versions", cohort="c1"))
    v2 = yaml.safe_load(server.kubectl("get", "cq", "versions", "-o", "yaml").stdout)
    assert v2["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert v2["spec"]["cohortName"] == "c1"
    out = server.kubectl("get", "clusterqueues.v1beta1.kueue.x-k8s.io", "versions", "-o", "json")
    v1 = json.loads(out.stdout)
    assert v1["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert v1["spec"]["cohort"] == "c1"
    assert "cohortName" not in v1["spec"]
    assert "Warning:" in out.stderr and "deprecated" in out.stderr
    assert v1["metadata"]["uid"] == v2["metadata"]["uid"]


def test_get_by_short_name_and_chunked_list(server: ServerProcess) -> None:
    for i in range(3):
        server.kubectl(
            "apply",
            "-f",
            "-",
            stdin=f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: chunk-{i}\n",
        )
    names = server.kubectl("get", "rf", "-o", "name", "--chunk-size=1").stdout.split()
    assert {f"resourceflavor.kueue.x-k8s.io/chunk-{i}" for i in range(3)} <= set(names)
    rows = table(server.kubectl("get", "flavors", "chunk-0").stdout)
    assert rows[0] == ["NAME", "AGE"]


def test_describe_shows_object_and_events(server: ServerProcess) -> None:
    server.kubectl("apply", "-f", "-", stdin=cq("describe-me"))
    out = server.kubectl("describe", "cq", "describe-me").stdout
    assert re.search(r"^Name:\s+describe-me$", out, re.M)
    assert re.search(r"^API Version:\s+kueue.x-k8s.io/v1beta2$", out, re.M)
    assert re.search(r"^Kind:\s+ClusterQueue$", out, re.M)
    assert "Nominal Quota:" in out
    assert re.search(r"^Events:\s+<none>$", out, re.M)


def test_explain_uses_openapi_v3(server: ServerProcess) -> None:
    out = server.kubectl("explain", "clusterqueue.spec.resourceGroups").stdout
    assert "GROUP:      kueue.x-k8s.io" in out
    assert "KIND:       ClusterQueue" in out
    assert "VERSION:    v1beta2" in out
    assert "coveredResources" in out
    job = server.kubectl("explain", "jobs.spec.backoffLimit").stdout
    assert "KIND:       Job" in job and "backoffLimit" in job


# --- server-side apply ---------------------------------------------------------------------------------


def test_server_side_apply_conflict_and_force(server: ServerProcess) -> None:
    doc = CQ_V1BETA2.format(name="ssa", cohort="a")
    out = server.kubectl("apply", "--server-side", "-f", "-", stdin=doc)
    assert out.stdout.strip() == "clusterqueue.kueue.x-k8s.io/ssa serverside-applied"
    other = doc.replace("cohortName: a", "cohortName: b")
    failed = server.kubectl(
        "apply", "--server-side", "--field-manager=other", "-f", "-", stdin=other, check=False
    )
    assert failed.returncode != 0
    assert 'conflict with "kubectl"' in failed.stderr
    assert ".spec.cohortName" in failed.stderr
    forced = server.kubectl(
        "apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-", stdin=other
    )
    assert "serverside-applied" in forced.stdout
    obj = get_json(server, "cq", "ssa", "--show-managed-fields")
    assert obj["spec"]["cohortName"] == "b"
    ops = {(m["manager"], m["operation"]) for m in obj["metadata"]["managedFields"]}
    assert ("other", "Apply") in ops


# --- patch, label, annotate, replace --------------------------------------------------------------------


def test_patch_merge_json_and_strategic_refused_for_crds(server: ServerProcess) -> None:
    server.kubectl("apply", "-f", "-", stdin=CQ_V1BETA2.format(name="patchme", cohort="a"))
    server.kubectl("patch", "cq", "patchme", "--type=merge", "-p", '{"spec":{"cohortName":"merged"}}')
    assert get_json(server, "cq", "patchme")["spec"]["cohortName"] == "merged"
    server.kubectl(
        "patch",
        "cq",
        "patchme",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/queueingStrategy","value":"BestEffortFIFO"}]',
    )
    assert get_json(server, "cq", "patchme")["spec"]["queueingStrategy"] == "BestEffortFIFO"
    failed = server.kubectl("patch", "cq", "patchme", "-p", '{"spec":{"cohortName":"x"}}', check=False)
    assert failed.returncode != 0
    assert "application/strategic-merge-patch+json is not supported" in failed.stderr
    bad_test = server.kubectl(
        "patch",
        "cq",
        "patchme",
        "--type=json",
        "-p",
        '[{"op":"test","path":"/spec/cohortName","value":"nope"}]',
        check=False,
    )
    assert bad_test.returncode != 0
    assert get_json(server, "cq", "patchme")["spec"]["cohortName"] == "merged"


def test_patch_invalid_value_is_rejected_with_422(server: ServerProcess) -> None:
    server.kubectl("apply", "-f", "-", stdin=CQ_V1BETA2.format(name="immutable", cohort="a"))
    failed = server.kubectl(
        "patch",
        "cq",
        "immutable",
        "--type=merge",
        "-p",
        '{"spec":{"queueingStrategy":"Sometimes"}}',
        check=False,
    )
    assert failed.returncode != 0
    assert 'The ClusterQueue "immutable" is invalid' in failed.stderr  # kubectl's rendering of a 422
    assert "spec.queueingStrategy" in failed.stderr
    assert get_json(server, "cq", "immutable")["spec"]["queueingStrategy"] == "StrictFIFO"


def test_label_annotate_and_selectors(server: ServerProcess) -> None:
    server.kubectl("apply", "-f", "-", stdin=CQ_V1BETA2.format(name="labelled", cohort="a"))
    server.kubectl("apply", "-f", "-", stdin=CQ_V1BETA2.format(name="unlabelled", cohort="a"))
    assert "labeled" in server.kubectl("label", "cq", "labelled", "team=ml").stdout
    assert "annotated" in server.kubectl("annotate", "cq", "labelled", "owner=alice").stdout
    names = server.kubectl("get", "cq", "-l", "team=ml", "-o", "name").stdout.split()
    assert names == ["clusterqueue.kueue.x-k8s.io/labelled"]
    names = server.kubectl("get", "cq", "-l", "team!=ml", "-o", "name").stdout.split()
    assert (
        "clusterqueue.kueue.x-k8s.io/unlabelled" in names
        and "clusterqueue.kueue.x-k8s.io/labelled" not in names
    )
    by_name = server.kubectl(
        "get", "cq", "--field-selector", "metadata.name=unlabelled", "-o", "name"
    ).stdout.split()
    assert by_name == ["clusterqueue.kueue.x-k8s.io/unlabelled"]
    obj = get_json(server, "cq", "labelled")
    assert obj["metadata"]["labels"] == {"team": "ml"}
    assert obj["metadata"]["annotations"]["owner"] == "alice"
    assert "labeled" in server.kubectl("label", "cq", "labelled", "team-").stdout
    assert not get_json(server, "cq", "labelled")["metadata"].get("labels")


def test_replace_with_stale_resource_version_conflicts(server: ServerProcess) -> None:
    server.kubectl("apply", "-f", "-", stdin=CQ_V1BETA2.format(name="stale", cohort="a"))
    obj = get_json(server, "cq", "stale")
    server.kubectl("label", "cq", "stale", "bump=1")
    obj["spec"]["cohortName"] = "b"
    failed = server.kubectl("replace", "-f", "-", stdin=json.dumps(obj), check=False)
    assert failed.returncode != 0
    assert (
        "the object has been modified; please apply your changes to the latest version and try again"
        in failed.stderr
    )
    assert 'Operation cannot be fulfilled on clusterqueues.kueue.x-k8s.io "stale"' in failed.stderr
    fresh = get_json(server, "cq", "stale")
    fresh["spec"]["cohortName"] = "b"
    assert "replaced" in server.kubectl("replace", "-f", "-", stdin=json.dumps(fresh)).stdout


def test_create_twice_already_exists(server: ServerProcess) -> None:
    doc = CQ_V1BETA2.format(name="twice", cohort="a")
    server.kubectl("create", "-f", "-", stdin=doc)
    failed = server.kubectl("create", "-f", "-", stdin=doc, check=False)
    assert 'clusterqueues.kueue.x-k8s.io "twice" already exists' in failed.stderr


def test_edit_with_an_editor(server: ServerProcess, tmp_path: Path) -> None:
    server.kubectl("apply", "-f", "-", stdin=CQ_V1BETA2.format(name="edited", cohort="before"))
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i "s/cohortName: before/cohortName: after/" "$1"\n')
    editor.chmod(0o755)
    out = server.kubectl("edit", "cq", "edited", env={"EDITOR": str(editor), "KUBE_EDITOR": str(editor)})
    assert out.stdout.strip() == "clusterqueue.kueue.x-k8s.io/edited edited"
    assert get_json(server, "cq", "edited")["spec"]["cohortName"] == "after"


def test_diff_uses_server_dry_run(server: ServerProcess) -> None:
    server.kubectl("apply", "-f", "-", stdin=CQ_V1BETA2.format(name="diffed", cohort="one"))
    same = server.kubectl(
        "diff", "-f", "-", stdin=CQ_V1BETA2.format(name="diffed", cohort="one"), check=False
    )
    assert same.returncode == 0 and same.stdout == ""
    changed = server.kubectl(
        "diff", "-f", "-", stdin=CQ_V1BETA2.format(name="diffed", cohort="two"), check=False
    )
    assert changed.returncode == 1
    assert "-  cohortName: one" in changed.stdout and "+  cohortName: two" in changed.stdout
    assert get_json(server, "cq", "diffed")["spec"]["cohortName"] == "one"


# --- dry run, validation -----------------------------------------------------------------------------


def test_create_dry_run_server_stores_nothing(server: ServerProcess) -> None:
    out = server.kubectl("create", "--dry-run=server", "-f", "-", "-o", "json", stdin=cq("dry"))
    obj = json.loads(out.stdout)
    assert obj["metadata"]["name"] == "dry" and obj["metadata"]["uid"]
    assert "(server dry run)" not in out.stdout
    missing = server.kubectl("get", "cq", "dry", check=False)
    assert missing.returncode != 0 and 'clusterqueues.kueue.x-k8s.io "dry" not found' in missing.stderr
    text = server.kubectl("create", "--dry-run=server", "-f", "-", stdin=cq("dry")).stdout
    assert text.strip() == "clusterqueue.kueue.x-k8s.io/dry created (server dry run)"


def test_unknown_field_strict_warn_ignore(server: ServerProcess) -> None:
    doc = CQ_V1BETA2.format(name="unknown", cohort="a").replace(
        "  queueingStrategy:", "  bogusField: 1\n  queueingStrategy:"
    )
    strict = server.kubectl("apply", "-f", "-", stdin=doc, check=False)
    assert strict.returncode != 0
    assert 'strict decoding error: unknown field "spec.bogusField"' in strict.stderr
    warn = server.kubectl("apply", "--validate=warn", "-f", "-", stdin=doc)
    assert 'unknown field "spec.bogusField"' in warn.stderr
    assert "bogusField" not in get_json(server, "cq", "unknown")["spec"]
    ignore = server.kubectl("apply", "--validate=false", "-f", "-", stdin=doc)
    assert "unknown field" not in ignore.stderr


def test_invalid_object_is_rejected_with_field_and_rule(server: ServerProcess) -> None:
    doc = cq("bad-quota", cpu='"-1"')
    failed = server.kubectl("apply", "-f", "-", stdin=doc, check=False)
    assert failed.returncode != 0
    # refused by Kueue's webhook (the CRD allows a negative quantity): 403 Forbidden
    assert "Error from server (Forbidden)" in failed.stderr
    assert 'admission webhook "vclusterqueue.kb.io" denied the request' in failed.stderr
    assert "nominalQuota" in failed.stderr
    assert server.kubectl("get", "cq", "bad-quota", check=False).returncode != 0


# --- namespaces, namespaced kinds, jobs ----------------------------------------------------------------


def test_namespaced_objects_and_all_namespaces(server: ServerProcess) -> None:
    assert "namespace/team-a created" in server.kubectl("create", "namespace", "team-a").stdout
    ns = get_json(server, "namespace", "team-a")
    assert ns["status"]["phase"] == "Active"
    assert ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == "team-a"
    lq = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: user-queue\nspec:\n  clusterQueue: cluster-queue\n"
    server.kubectl("apply", "-n", "team-a", "-f", "-", stdin=lq)
    server.kubectl("apply", "-f", "-", stdin=lq)  # the kubeconfig's namespace: default
    rows = table(server.kubectl("get", "lq", "-A").stdout)
    assert rows[0][:3] == ["NAMESPACE", "NAME", "CLUSTERQUEUE"]
    assert rows[1][:3] == ["default", "user-queue", "cluster-queue"] or [
        "default",
        "user-queue",
        "cluster-queue",
    ] in [r[:3] for r in rows]
    assert ["team-a", "user-queue", "cluster-queue"] in [r[:3] for r in rows]
    missing = server.kubectl("apply", "-n", "nowhere", "-f", "-", stdin=lq, check=False)
    assert 'namespaces "nowhere" not found' in missing.stderr


def test_jobs_get_defaults_and_columns(server: ServerProcess) -> None:
    server.kubectl("create", "job", "hello", "--image=busybox", "--", "echo", "hi")
    job = get_json(server, "job", "hello")
    assert job["spec"]["backoffLimit"] == 6
    assert job["spec"]["completions"] == 1 and job["spec"]["parallelism"] == 1
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"] == uid
    rows = table(server.kubectl("get", "jobs").stdout)
    assert rows[0][0] == "NAME" and "COMPLETIONS" in rows[0]
    wide = table(server.kubectl("get", "jobs", "-o", "wide").stdout)
    assert "IMAGES" in wide[0] and "busybox" in wide[1]


def test_strategic_merge_patch_for_builtin_kinds(server: ServerProcess) -> None:
    server.kubectl("create", "job", "smp", "--image=busybox")
    server.kubectl(
        "patch",
        "job",
        "smp",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"smp","image":"alpine"}]}}}}',
        check=False,
    )
    server.kubectl("patch", "job", "smp", "-p", '{"metadata":{"labels":{"x":"y"}}}')
    job = get_json(server, "job", "smp")
    assert job["metadata"]["labels"]["x"] == "y"
    server.kubectl("patch", "namespace", "default", "-p", '{"metadata":{"labels":{"smp":"yes"}}}')
    assert get_json(server, "namespace", "default")["metadata"]["labels"]["smp"] == "yes"


def test_delete_namespace_deletes_its_contents(server: ServerProcess) -> None:
    server.kubectl("create", "namespace", "doomed")
    server.kubectl("create", "job", "inside", "--image=busybox", "-n", "doomed")
    server.kubectl("delete", "namespace", "doomed")
    assert server.kubectl("get", "jobs", "-n", "doomed", "-o", "name").stdout.strip() == ""
    forbidden = server.kubectl("delete", "namespace", "default", check=False)
    assert 'namespaces "default" is forbidden: this namespace may not be deleted' in forbidden.stderr


def test_namespace_held_by_content_stays_terminating(server: ServerProcess) -> None:
    server.kubectl("create", "namespace", "held")
    workload = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: held, finalizers: [example.com/hold]}
spec:
  queueName: q
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c, image: busybox}]}}}]
"""
    server.kubectl("apply", "-f", "-", stdin=workload)
    out = server.kubectl("delete", "namespace", "held", "--wait=false").stdout
    assert 'namespace "held" deleted' in out
    status = server.kubectl("get", "namespace", "held", "--no-headers").stdout.split()
    assert status[:2] == ["held", "Terminating"]
    refused = server.kubectl("create", "job", "late", "--image=busybox", "-n", "held", check=False)
    assert refused.returncode != 0
    assert "unable to create new content in namespace held because it is being terminated" in refused.stderr
    server.kubectl("patch", "workload", "w", "-n", "held", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    gone = server.kubectl("get", "namespace", "held", check=False)
    assert 'namespaces "held" not found' in gone.stderr


# --- delete --------------------------------------------------------------------------------------------


def test_delete_with_finalizer_waits_for_removal(server: ServerProcess) -> None:
    doc = CQ_V1BETA2.format(name="final", cohort="a").replace(
        "  name: final\n", "  name: final\n  finalizers: [example.com/hold]\n"
    )
    server.kubectl("apply", "-f", "-", stdin=doc)
    out = server.kubectl("delete", "cq", "final", "--wait=false")
    assert 'clusterqueue.kueue.x-k8s.io "final" deleted' in out.stdout
    obj = get_json(server, "cq", "final")
    assert obj["metadata"]["deletionTimestamp"]
    server.kubectl(
        "patch", "cq", "final", "--type=json", "-p", '[{"op":"remove","path":"/metadata/finalizers"}]'
    )
    assert server.kubectl("get", "cq", "final", check=False).returncode != 0


def test_delete_cascades_to_owned_objects(server: ServerProcess) -> None:
    server.kubectl("create", "job", "owner", "--image=busybox")
    job = get_json(server, "job", "owner")
    wl = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "job-owner",
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "owner", "uid": job["metadata"]["uid"],
                 "controller": True, "blockOwnerDeletion": True}
            ],
        },
        "spec": {"queueName": "user-queue", "podSets": [{"name": "main", "count": 1, "template": {
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}]},
    }  # fmt: skip
    server.kubectl("apply", "-f", "-", stdin=json.dumps(wl))
    assert (
        server.kubectl("get", "workloads", "job-owner", "-o", "name").stdout.strip()
        == "workload.kueue.x-k8s.io/job-owner"
    )
    server.kubectl("delete", "job", "owner")
    wait_for(lambda: server.kubectl("get", "kwl", "job-owner", check=False).returncode != 0)


def test_delete_all_with_selector(server: ServerProcess) -> None:
    for i in range(3):
        server.kubectl(
            "apply",
            "-f",
            "-",
            stdin=f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: sweep-{i}\n  labels: {{sweep: 'yes'}}\n",
        )
    out = server.kubectl("delete", "rf", "-l", "sweep=yes", "--wait=false")
    assert out.stdout.count("deleted") == 3
    for item in get_json(server, "rf", "-l", "sweep=yes")["items"]:
        assert item["metadata"]["deletionTimestamp"]  # held by Kueue's resource-in-use finalizer
        release(server, "rf", item["metadata"]["name"])
    assert server.kubectl("get", "rf", "-l", "sweep=yes", "-o", "name").stdout.strip() == ""


# --- watch ---------------------------------------------------------------------------------------------


class KubectlWatch:
    """A background ``kubectl get -w`` (at ``-v=6``, which logs each request as its answer
    arrives): :meth:`started` waits until its watch request was answered, :meth:`stop` until it
    printed ``lines`` lines, then interrupts it. Waits on what kubectl did, not fixed pauses."""

    def __init__(self, server: ServerProcess, *args: str) -> None:
        self.proc = server.kubectl_popen("-v=6", *args)
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: Any, into: list[str]) -> None:
        for line in stream:
            into.append(line)

    def started(self) -> None:
        def watching() -> bool:
            return any("watch=true" in line and " 200 OK " in line for line in list(self.err))

        wait_for(watching, timeout=30, what=f"kubectl's watch answered; stderr: {''.join(self.err)[-2000:]}")

    def stop(self, lines: int) -> list[list[str]]:
        """The output split into fields, once it has ``lines`` non-empty lines."""

        def printed() -> list[list[str]] | None:
            fields = [line.split() for line in list(self.out) if line.strip()]
            return fields if len(fields) >= lines else None

        try:
            wait_for(printed, timeout=30, what=f"{lines} lines from kubectl get -w; have {self.out}")
        finally:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=20)
            for reader in self._readers:
                reader.join(10)
        return [line.split() for line in self.out if line.strip()]


def test_get_watch_prints_changes(server: ServerProcess) -> None:
    watch = KubectlWatch(server, "get", "cq", "--watch", "--output-watch-events", "--field-selector", "metadata.name=watched")
    watch.started()
    server.kubectl("apply", "-f", "-", stdin=CQ_V1BETA2.format(name="watched", cohort="a"))
    server.kubectl("label", "cq", "watched", "seen=yes")
    server.kubectl("delete", "cq", "watched", "--wait=false")
    release(server, "cq", "watched")
    lines = watch.stop(5)
    assert lines[0] == ["EVENT", "NAME", "COHORT", "PENDING", "WORKLOADS"]
    assert [line[:3] for line in lines[1:]] == [
        ["ADDED", "watched", "a"],
        ["MODIFIED", "watched", "a"],  # labelled
        ["MODIFIED", "watched", "a"],  # deletionTimestamp set, finalizer pending
        ["DELETED", "watched", "a"],  # finalizer removed
    ]


def test_get_watch_table_and_selectors(server: ServerProcess) -> None:
    bad = server.kubectl_popen("get", "cq", "-w", "--field-selector", "spec.x=1")
    _, err = bad.communicate(timeout=20)
    assert bad.returncode != 0 and '"spec.x" is not a known field selector' in err
    server.kubectl("apply", "-f", "-", stdin=CQ_V1BETA2.format(name="tw-1", cohort="x"))
    watch = KubectlWatch(server, "get", "cq", "-w", "-l", "watch-table=yes")
    watch.started()
    server.kubectl("apply", "-f", "-", stdin=CQ_V1BETA2.format(name="tw-2", cohort="yy"))
    server.kubectl("label", "cq", "tw-2", "watch-table=yes")
    lines = watch.stop(2)
    assert lines[0] == ["NAME", "COHORT", "PENDING", "WORKLOADS"]
    assert [line[:2] for line in lines[1:]] == [["tw-2", "yy"]]


# --- seeds ---------------------------------------------------------------------------------------------

INVALID_SEEDS = {("003_86873e8ca846a752.txt", 5), ("003_86873e8ca846a752.txt", 6)}
"""The BorrowingLimit example ClusterQueues: ``coveredResources`` names memory but the flavor lists
only cpu, which the upstream CRD rejects (flavors must have the same number of resources)."""


def seed_blocks() -> list[tuple[str, int, str]]:
    blocks: list[tuple[str, int, str]] = []
    for path in sorted(SEEDS.glob("*")):
        text = path.read_text()
        if "site/content" in text.splitlines()[0]:
            text = re.sub(r"^ *\d+  ", "", text, flags=re.M)
        for i, block in enumerate(re.findall(r"```yaml\n(.*?)```", text, re.S)):
            try:
                docs = [d for d in yaml.safe_load_all(block) if d]
            except yaml.YAMLError:
                continue  # fragments with "<...>" placeholders
            if docs and all(
                isinstance(d, dict)
                and d.get("apiVersion")
                and d.get("kind")
                and (d.get("metadata") or {}).get("name")
                for d in docs
            ):
                blocks.append((path.name, i, block))
    return blocks


def test_every_complete_seed_object_applies_verbatim(server: ServerProcess, tmp_path: Path) -> None:
    blocks = seed_blocks()
    assert len(blocks) == 13  # 2 AdmissionChecks, 11 ClusterQueues (2 of them invalid upstream)
    for seed, index, block in blocks:
        path = tmp_path / f"{seed}-{index}.yaml"
        path.write_text(block)
        result = server.kubectl("apply", "-f", str(path), check=False)
        if (seed, index) in INVALID_SEEDS:
            assert result.returncode != 0, (seed, index)
            assert re.search(
                r'The ClusterQueue "team-[ab]-cq" is invalid: spec.resourceGroups\[0\]', result.stderr
            )
            assert "flavors must have the same number of resources as the coveredResources" in result.stderr
            name = yaml.safe_load(block)["metadata"]["name"]
            raw = server.http.post(f"{server.url}/apis/kueue.x-k8s.io/v1beta1/clusterqueues", data=block,
                                headers={"Content-Type": "application/yaml"}, timeout=10)  # fmt: skip
            assert raw.status_code == 422
            status = raw.json()
            assert status["reason"] == "Invalid" and status["details"]["name"] == name
            assert status["message"].startswith(
                f'ClusterQueue.kueue.x-k8s.io "{name}" is invalid: spec.resourceGroups[0]: '
            )
            assert status["details"]["causes"][0]["field"] == "spec.resourceGroups[0]"
            assert server.kubectl("get", "cq", name, check=False).returncode != 0
            continue
        assert result.returncode == 0, (seed, index, result.stderr)
        assert re.fullmatch(r"\S+ created\n", result.stdout), result.stdout
        server.kubectl("delete", "-f", str(path), "--wait=false")
        kind, name = result.stdout.split()[0].split("/")
        release(server, kind, name)


@pytest.mark.parametrize("output", ["yaml", "json"])
def test_get_all_kinds_output(server: ServerProcess, output: str) -> None:
    out = server.kubectl("get", "namespaces", "-o", output).stdout
    data = yaml.safe_load(out)
    assert data["kind"] == "List"
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= {
        i["metadata"]["name"] for i in data["items"]
    }
