"""The resource registry: lookups, conversion, defaulting, validation, schemas, selectable fields."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pykueue.api.feature_gates import FeatureGates
from pykueue.api.validation import ValidationFailed
from pykueue.apiserver.builtin.schema import structural_problems, unknown_fields
from pykueue.apiserver.resources import REGISTRY, ResourceInfo
from pykueue.store import ResourceKey


def _info(group: str, version: str, plural: str) -> ResourceInfo:
    info = REGISTRY.get(group, version, plural)
    assert info is not None, (group, version, plural)
    return info


def _messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


# --- registry lookups ---------------------------------------------------------------------------------


def test_lookup_by_group_version_plural() -> None:
    cq = _info("kueue.x-k8s.io", "v1beta1", "clusterqueues")
    assert cq is REGISTRY.get("kueue.x-k8s.io", "v1beta2", "clusterqueues")
    assert cq.kind == "ClusterQueue"
    assert cq.versions == ("v1beta2", "v1beta1")
    assert cq.storage_version == "v1beta2"
    assert cq.key() == ResourceKey("kueue.x-k8s.io", "clusterqueues", False)
    assert REGISTRY.get("kueue.x-k8s.io", "v1alpha1", "clusterqueues") is None
    assert REGISTRY.get("", "v1", "services") is None


@pytest.mark.parametrize(
    ("short", "kind"),
    [
        ("cq", "ClusterQueue"),
        ("rf", "ResourceFlavor"),
        ("flavor", "ResourceFlavor"),
        ("co", "Cohort"),
        ("lq", "LocalQueue"),
        ("queue", "LocalQueue"),
        ("kwl", "Workload"),
        ("kueueworkloads", "Workload"),
        ("wpc", "WorkloadPriorityClass"),
        ("ac", "AdmissionCheck"),
        ("prc", "ProvisioningRequestConfig"),
        ("mkconf", "MultiKueueConfig"),
        ("mkc", "MultiKueueCluster"),
        ("topo", "Topology"),
        ("ns", "Namespace"),
        ("pc", "PriorityClass"),
        ("limits", "LimitRange"),
        ("provreq", "ProvisioningRequest"),
    ],
)
def test_short_names(short: str, kind: str) -> None:
    info = REGISTRY.by_short_name(short)
    assert info is not None and info.kind == kind


def test_kinds_scopes_subresources_and_categories() -> None:
    assert [i.kind for i in REGISTRY.by_category("all")] == ["Pod", "Job"]
    assert all(not i.categories for i in REGISTRY.all() if i.group == "kueue.x-k8s.io")
    namespaced = {i.kind for i in REGISTRY.all() if i.group == "kueue.x-k8s.io" and i.namespaced}
    assert namespaced == {"LocalQueue", "Workload"}
    with_status = {i.kind for i in REGISTRY.all() if i.group == "kueue.x-k8s.io" and i.status_subresource}
    assert with_status == {
        "ClusterQueue",
        "Cohort",
        "LocalQueue",
        "Workload",
        "AdmissionCheck",
        "MultiKueueCluster",
    }
    assert {i.kind for i in REGISTRY.all() if i.builtin} == {
        "Namespace",
        "Event",
        "Pod",
        "Node",
        "PodTemplate",
        "LimitRange",
        "Job",
        "PriorityClass",
        "RuntimeClass",
        "Lease",
    }


def test_by_kind_gvk_and_resolve() -> None:
    assert REGISTRY.by_kind("batch", "Job") is REGISTRY.by_api_version("batch/v1", "Job")
    assert REGISTRY.by_gvk("kueue.x-k8s.io", "v1beta3", "Workload") is None
    assert [i.kind for i in REGISTRY.resolve("Workload")] == ["Workload"]
    assert [i.group for i in REGISTRY.resolve("events")] == ["", "events.k8s.io"]
    assert [i.group for i in REGISTRY.resolve("events.events.k8s.io")] == ["events.k8s.io"]


def test_deprecation_warnings() -> None:
    assert _info("kueue.x-k8s.io", "v1beta2", "workloads").deprecated_versions == {
        "v1beta1": "This version is deprecated. Use v1beta2 instead."
    }
    assert _info("kueue.x-k8s.io", "v1beta2", "multikueueconfigs").deprecated_versions == {}


def test_discovery_documents() -> None:
    resources = REGISTRY.api_resource_list("kueue.x-k8s.io", "v1beta2")
    names = [r["name"] for r in resources["resources"]]
    assert "workloads" in names and "workloads/status" in names and "resourceflavors/status" not in names
    workloads = next(r for r in resources["resources"] if r["name"] == "workloads")
    assert workloads["shortNames"] == ["kwl", "kueueworkload", "kueueworkloads"]
    assert workloads["namespaced"] is True
    groups = REGISTRY.api_group_list()["groups"]
    kueue = next(g for g in groups if g["name"] == "kueue.x-k8s.io")
    assert kueue["preferredVersion"] == {"groupVersion": "kueue.x-k8s.io/v1beta2", "version": "v1beta2"}
    assert REGISTRY.api_resource_list("", "v1")["groupVersion"] == "v1"


# --- Kueue kinds ------------------------------------------------------------------------------------


def _cq_v1beta1(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {
            "cohort": "team",
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": 9}]}],
                }
            ],
            **spec,
        },
    }


def test_kueue_conversion_defaults_and_round_trip() -> None:
    info = _info("kueue.x-k8s.io", "v1beta1", "clusterqueues")
    storage = info.default(info.to_storage(_cq_v1beta1()))
    assert storage["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    spec = storage["spec"]
    assert spec["cohortName"] == "team" and "cohort" not in spec
    assert spec["queueingStrategy"] == "BestEffortFIFO"
    assert spec["stopPolicy"] == "None"
    assert spec["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
    assert spec["preemption"]["borrowWithinCohort"] == {"policy": "Never"}
    back = info.from_storage(storage, "v1beta1")
    assert back["apiVersion"] == "kueue.x-k8s.io/v1beta1" and back["spec"]["cohort"] == "team"
    assert info.convert(storage, "kueue.x-k8s.io/v1beta1") == back
    assert info.validate(storage, None) == []


def test_kueue_mutating_webhook_is_the_kinds_admission() -> None:
    """Kueue's defaulting webhooks are mutating admission (run with the server's gates, after
    managedFields, before validation), not part of the defaulting: the finalizer comes from
    ``admit``, and the Go round trip's canonical quantities only with a change
    (controller-runtime's ``defaulterForType.Handle`` answers no patch otherwise)."""
    info = _info("kueue.x-k8s.io", "v1beta2", "clusterqueues")
    prepared = info.prepare_for_create(info.default(info.to_storage(_cq_v1beta1())))
    assert "finalizers" not in prepared["metadata"]
    info.admit(prepared, lambda *_: None)
    assert prepared["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    workloads = _info("kueue.x-k8s.io", "v1beta2", "workloads")
    wl: dict[str, Any] = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w", "namespace": "ns"},
          "spec": {"podSets": [{"name": "main", "count": 3, "minCount": 2, "template": {"spec": {"containers": [
              {"name": "c", "resources": {"requests": {"cpu": "1000m"}}}]}}}]}}  # fmt: skip
    unchanged = copy.deepcopy(wl)
    workloads.admit(unchanged, lambda *_: None)  # PartialAdmission on: Default changes nothing
    assert unchanged == wl
    workloads.admit(wl, lambda *_: None, gates=FeatureGates({"PartialAdmission": False}))
    assert wl["spec"]["podSets"][0] == {"name": "main", "count": 3, "template": {"spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}  # fmt: skip


def test_kueue_schema_errors_and_webhook_denials() -> None:
    info = _info("kueue.x-k8s.io", "v1beta2", "clusterqueues")
    bad_enum = info.default(info.to_storage(_cq_v1beta1(queueingStrategy="Random")))
    failure = info.validation_failure(bad_enum, None)
    assert failure is not None and failure.webhook is None
    assert failure.message.startswith('ClusterQueue.kueue.x-k8s.io "cq" is invalid: ')
    assert 'spec.queueingStrategy: Unsupported value: "Random"' in failure.message
    negative = _cq_v1beta1()
    negative["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "-1"
    denied = info.validation_failure(info.default(info.to_storage(negative)), None)
    assert denied is not None and denied.webhook == "vclusterqueue.kb.io"
    assert denied.message.startswith('admission webhook "vclusterqueue.kb.io" denied the request: ')


def test_kueue_type_errors_are_reported_not_raised() -> None:
    info = _info("kueue.x-k8s.io", "v1beta2", "clusterqueues")
    obj = info.to_storage(_cq_v1beta1(resourceGroups="nope"))
    assert info.default(obj) is obj
    errs = info.validate(obj, None)
    assert _messages(errs) == [
        'spec.resourceGroups: Invalid value: "string": spec.resourceGroups in body must be of type array: "string"'
    ]


def test_workload_v1beta1_priority_and_selectable_field() -> None:
    info = _info("kueue.x-k8s.io", "v1beta1", "workloads")
    wl = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": {
            "queueName": "lq",
            "priorityClassName": "high",
            "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
            "priority": 100,
            "podSets": [{"count": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}],
        },
        "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main"}]}},
    }
    storage = info.default(info.to_storage(wl))
    assert storage["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "high",
    }
    assert storage["spec"]["active"] is True
    assert storage["spec"]["podSets"][0]["name"] == "main"
    assert info.selectable_fields() == ("status.admission.clusterQueue",)
    assert info.selectable_fields_for("v1beta1") == ()
    assert info.field_value(storage, "status.admission.clusterQueue") == "cq"
    assert info.field_value(storage, "metadata.namespace") == "ns"
    assert info.field_value(storage, "spec.queueName") is None
    assert info.validate(storage, None) == []


def test_admission_check_v1beta1_shows_retry_delay_default() -> None:
    info = _info("kueue.x-k8s.io", "v1beta2", "admissionchecks")
    ac = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck",
        "metadata": {"name": "ac"},
        "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"},
    }
    assert info.from_storage(ac, "v1beta1")["spec"]["retryDelayMinutes"] == 15
    schema = info.openapi_schema("v1beta1")
    assert schema["properties"]["spec"]["properties"]["retryDelayMinutes"]["default"] == 15
    assert "retryDelayMinutes" not in info.openapi_schema("v1beta2")["properties"]["spec"]["properties"]


def test_multikueue_cluster_schema_driven() -> None:
    info = _info("kueue.x-k8s.io", "v1beta1", "multikueueclusters")
    v1beta1 = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "MultiKueueCluster",
        "metadata": {"name": "w1"},
        "spec": {"kubeConfig": {"location": "secret-w1"}},
    }
    storage = info.default(info.to_storage(v1beta1))
    assert storage["spec"] == {
        "clusterSource": {"kubeConfig": {"location": "secret-w1", "locationType": "Secret"}}
    }
    assert info.validate(storage, None) == []
    both = copy.deepcopy(storage)
    both["spec"]["clusterSource"]["clusterProfileRef"] = {"name": "p"}
    assert _messages(info.validate(both, None)) == [
        'spec.clusterSource: Invalid value: exactly one of the fields in [kubeConfig clusterProfileRef] must be set'
    ]
    bad_type = copy.deepcopy(storage)
    bad_type["spec"]["clusterSource"]["kubeConfig"]["locationType"] = "Disk"
    failure = info.validation_failure(bad_type, None)
    assert failure is not None
    assert 'spec.clusterSource.kubeConfig.locationType: Unsupported value: "Disk"' in failure.message
    assert failure.message.startswith('MultiKueueCluster.kueue.x-k8s.io "w1" is invalid')


def test_multikueue_config_and_topology_rules() -> None:
    mk = _info("kueue.x-k8s.io", "v1beta2", "multikueueconfigs")
    config = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "MultiKueueConfig",
        "metadata": {"name": "m"},
        "spec": {"clusters": ["a", "a"]},
    }
    assert _messages(mk.validate(config, None)) == ['spec.clusters: Invalid value: must be unique']
    topo = _info("kueue.x-k8s.io", "v1beta2", "topologies")
    levels = [{"nodeLabel": "cloud.com/block"}, {"nodeLabel": "kubernetes.io/hostname"}]
    obj: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "t"},
        "spec": {"levels": levels},
    }
    assert topo.validate(obj, None) == []
    changed = copy.deepcopy(obj)
    changed["spec"]["levels"] = levels[:1]
    assert _messages(topo.validate(changed, obj)) == [
        'spec.levels: Invalid value: levels are mutable only when kubernetes.io/hostname is the '
        "lowest level both before and after the change"
    ]
    regrouped = copy.deepcopy(obj)  # upstream v1beta2: hostname stays the lowest level, so allowed
    regrouped["spec"]["levels"] = [{"nodeLabel": "cloud.com/rack"}, {"nodeLabel": "kubernetes.io/hostname"}]
    assert topo.validate(regrouped, obj) == []
    hostname_first = copy.deepcopy(obj)
    hostname_first["spec"]["levels"] = list(reversed(levels))
    assert _messages(topo.validate(hostname_first, None)) == [
        'spec.levels: Invalid value: the kubernetes.io/hostname label can only be used at the '
        "lowest level of topology"
    ]
    v1beta1 = {**changed, "apiVersion": "kueue.x-k8s.io/v1beta1"}
    assert _messages(topo.validate(v1beta1, {**obj, "apiVersion": "kueue.x-k8s.io/v1beta1"})) == [
        'spec.levels: Invalid value: field is immutable'
    ]
    empty = {**obj, "spec": {"levels": []}}
    assert _messages(topo.validate(empty, None)) == [
        "spec.levels: Invalid value: 0: spec.levels in body should have at least 1 items"
    ]


def test_topology_rules_run_after_non_blocking_openapi_errors() -> None:
    """apiextensions-apiserver skips the CEL rules only after a blocking OpenAPI error (and says
    so); ``minItems`` is not one, so emptying the levels also meets the transition rule, which
    cannot evaluate ``self[size(self) - 1]`` when the old lowest level was the hostname
    (kube-apiserver v1.35 with upstream's CRD: ``index out of bounds: -1``), and is false when
    it was not (CEL's ``&&``: false wins over an error)."""
    topo = _info("kueue.x-k8s.io", "v1beta2", "topologies")

    def topology(*labels: str) -> dict[str, Any]:
        return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "t"},
                "spec": {"levels": [{"nodeLabel": label} for label in labels]}}  # fmt: skip

    min_items = "spec.levels: Invalid value: 0: spec.levels in body should have at least 1 items"
    rule = "levels are mutable only when kubernetes.io/hostname is the lowest level both before and after the change"
    assert _messages(topo.validate(topology(), topology("kubernetes.io/hostname"))) == [
        min_items,
        f'spec.levels: Invalid value: "array": index out of bounds: -1 evaluating rule: {rule}',
    ]
    assert _messages(topo.validate(topology(), topology("a"))) == [min_items, f"spec.levels: Invalid value: {rule}"]
    removed = topology("a")
    del removed["spec"]["levels"]
    assert _messages(topo.validate(removed, topology("a"))) == [
        "spec.levels: Required value",
        "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
        "correct the existing errors to complete validation",
    ]


# --- built-in kinds ----------------------------------------------------------------------------------


def _job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "perl:5"}]}
            },
            **spec,
        },
    }


def test_job_defaults_and_generated_selector() -> None:
    info = _info("batch", "v1", "jobs")
    job = info.prepare_for_create(_job())
    job = info.default(job)
    uid = job["metadata"]["uid"]
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["completionMode"] == "NonIndexed" and spec["suspend"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert "manualSelector" not in spec
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"] == {
        "job-name": "pi",
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": uid,
        "batch.kubernetes.io/controller-uid": uid,
    }
    pod = spec["template"]["spec"]
    assert pod["dnsPolicy"] == "ClusterFirst" and pod["terminationGracePeriodSeconds"] == 30
    assert pod["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert pod["containers"][0]["terminationMessagePolicy"] == "File"
    assert info.validate(job, None) == []


def test_job_defaulting_alone_generates_the_selector() -> None:
    info = _info("batch", "v1", "jobs")
    job = info.default(_job(parallelism=3))
    assert "completions" not in job["spec"] and job["spec"]["parallelism"] == 3
    assert (
        job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"] == job["metadata"]["uid"]
    )
    assert info.validate(job, None) == []


def test_job_restart_policy_and_container_rules() -> None:
    info = _info("batch", "v1", "jobs")
    job = _job()
    del job["spec"]["template"]["spec"]["restartPolicy"]
    job["spec"]["template"]["spec"]["containers"][0].pop("image")
    failure = info.validation_failure(info.default(job), None)
    assert failure is not None
    assert failure.message == (
        'Job.batch "pi" is invalid: [spec.template.spec.containers[0].image: Required value, '
        'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"]'
    )


def test_job_update_immutability_and_suspended_mutation() -> None:
    info = _info("batch", "v1", "jobs")
    old = info.default(_job(suspend=True))
    scheduling = copy.deepcopy(old)
    scheduling["spec"]["template"]["spec"]["nodeSelector"] = {"cloud.com/flavor": "spot"}
    scheduling["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "lq"
    assert info.validate(scheduling, old) == []
    image = copy.deepcopy(old)
    image["spec"]["template"]["spec"]["containers"][0]["image"] = "perl:6"
    assert [e.field for e in info.validate(image, old)] == ["spec.template"]
    started = copy.deepcopy(old)
    started["status"] = {"startTime": "2025-01-01T00:00:00Z"}
    assert [e.field for e in info.validate(scheduling, started)] == ["spec.template"]
    completions = copy.deepcopy(old)
    completions["spec"]["completions"] = 5
    assert _messages(info.validate(completions, old)) == [
        "spec.completions: Invalid value: 5: field is immutable"
    ]


def test_namespace_defaults_and_validation() -> None:
    info = _info("", "v1", "namespaces")
    ns = info.default(
        info.prepare_for_create(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "team-a"},
                "status": {"phase": "Terminating"},
            }
        )
    )
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert ns["spec"] == {"finalizers": ["kubernetes"]}
    assert ns["status"] == {"phase": "Active"}
    assert info.validate(ns, None) == []
    bad = info.default({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}})
    assert _messages(info.validate(bad, None)) == [
        'metadata.name: Invalid value: "a.b": must not contain dots'
    ]


def test_priority_class_rules() -> None:
    info = _info("scheduling.k8s.io", "v1", "priorityclasses")
    pc = info.default(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
    )
    assert pc["preemptionPolicy"] == "PreemptLowerPriority"
    assert info.validate(pc, None) == []
    huge = {**pc, "value": 2_000_000_000}
    assert _messages(info.validate(huge, None)) == [
        "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
    ]
    system = {**pc, "metadata": {"name": "system-custom"}}
    assert _messages(info.validate(system, None))[0].startswith(
        "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only."
    )
    changed = {**pc, "value": 5}
    assert _messages(info.validate(changed, pc)) == ["value: Forbidden: may not be changed in an update."]
    failure = info.validation_failure(huge, None)
    assert failure is not None and failure.message.startswith(
        'PriorityClass.scheduling.k8s.io "high" is invalid: '
    )


def test_lease_validation() -> None:
    info = _info("coordination.k8s.io", "v1", "leases")
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "namespace": "kueue"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 0},
    }
    assert _messages(info.validate(lease, None)) == [
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"
    ]


def test_events_share_the_core_collection() -> None:
    core_info = _info("", "v1", "events")
    events_info = _info("events.k8s.io", "v1", "events")
    assert events_info.key() == core_info.key() == ResourceKey("", "events", True)
    assert events_info.storage_api_version == "v1"
    new_style = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "wl.1", "namespace": "ns"},
        "eventTime": "2025-01-10T11:58:00.000000Z",
        "reportingController": "kueue-admission",
        "reportingInstance": "kueue-0",
        "action": "QuotaReserved",
        "reason": "QuotaReserved",
        "regarding": {"kind": "Workload", "name": "wl", "namespace": "ns"},
        "note": "Quota reserved",
        "type": "Normal",
    }
    stored = events_info.to_storage(new_style)
    assert stored["apiVersion"] == "v1"
    assert stored["involvedObject"]["name"] == "wl" and stored["message"] == "Quota reserved"
    assert stored["reportingComponent"] == "kueue-admission"
    assert events_info.default(copy.deepcopy(new_style)) == stored
    assert events_info.validate(stored, None) == []
    assert events_info.from_storage(stored, "v1") == new_style
    assert core_info.from_storage(stored, "v1") == stored
    assert core_info.field_value(stored, "involvedObject.name") == "wl"
    assert events_info.field_value(stored, "regarding.kind") == "Workload"
    assert events_info.field_value(stored, "reportingController") == "kueue-admission"
    missing = {**stored, "reportingComponent": ""}
    assert "reportingController: Required value" in _messages(events_info.validate(missing, None))


def test_core_event_namespace_must_match() -> None:
    info = _info("", "v1", "events")
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "Workload", "name": "wl", "namespace": "other"},
    }
    assert _messages(info.validate(event, None)) == [
        'involvedObject.namespace: Invalid value: "other": does not match event.namespace'
    ]


def test_provisioning_request_versions_and_immutability() -> None:
    info = _info("autoscaling.x-k8s.io", "v1beta1", "provisioningrequests")
    assert info.builtin is False and info.storage_version == "v1"
    pr = {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "ProvisioningRequest",
        "metadata": {"name": "pr", "namespace": "ns"},
        "spec": {
            "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
            "podSets": [{"podTemplateRef": {"name": "ppt"}, "count": 2}],
        },
    }
    stored = info.default(info.to_storage(pr))
    assert stored["apiVersion"] == "autoscaling.x-k8s.io/v1"
    assert info.validate(stored, None) == []
    changed = copy.deepcopy(stored)
    changed["spec"]["podSets"][0]["count"] = 3
    assert _messages(info.validate(changed, stored)) == [
        'spec.podSets: Invalid value: "array": Value is immutable'
    ]
    zero = copy.deepcopy(stored)
    zero["spec"]["podSets"][0]["count"] = 0
    assert _messages(info.validate(zero, None)) == [
        "spec.podSets[0].count: Invalid value: 0: spec.podSets[0].count in body should be greater than or equal to 1"
    ]


def test_pod_template_defaults_and_validation() -> None:
    info = _info("", "v1", "podtemplates")
    pt = info.default(
        {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "ppt", "namespace": "ns"},
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "img:latest",
                            "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
                        }
                    ]
                }
            },
        }
    )
    assert pt["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    assert _messages(info.validate(pt, None)) == [
        'template.spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'
    ]


def test_unserved_version_is_rejected() -> None:
    info = _info("kueue.x-k8s.io", "v1beta2", "workloads")
    with pytest.raises(ValueError):
        info.convert({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload"}, "v1alpha1")
    with pytest.raises(KeyError):
        info.openapi_schema("v1")


# --- schemas ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("info", REGISTRY.all(), ids=lambda i: f"{i.group}/{i.kind}")
def test_every_schema_is_structural(info: ResourceInfo) -> None:
    for version in info.versions:
        schema = info.openapi_schema(version)
        assert structural_problems(schema) == []
        assert "$ref" not in str(schema)


def test_schema_knows_every_field_of_defaulted_objects() -> None:
    info = _info("kueue.x-k8s.io", "v1beta2", "clusterqueues")
    storage = info.default(info.to_storage(_cq_v1beta1()))
    assert (
        unknown_fields({k: v for k, v in storage.items() if k != "metadata"}, info.openapi_schema("v1beta2"))
        == []
    )
    v1beta1 = info.from_storage(storage, "v1beta1")
    assert (
        unknown_fields({k: v for k, v in v1beta1.items() if k != "metadata"}, info.openapi_schema("v1beta1"))
        == []
    )
    job_info = _info("batch", "v1", "jobs")
    job = job_info.default(_job())
    assert unknown_fields(job, job_info.openapi_schema("v1")) == []


def test_validation_failed_is_an_exception_type() -> None:
    info = _info("batch", "v1", "jobs")
    failure = info.validation_failure({"apiVersion": "batch/v1", "kind": "Job", "metadata": {}}, None)
    assert isinstance(failure, ValidationFailed)
    assert "metadata.name: Required value: name or generateName is required" in str(failure)


def test_webhook_round_trips_canonicalize_quantities() -> None:
    info = _info("kueue.x-k8s.io", "v1beta1", "clusterqueues")
    obj = _cq_v1beta1()
    obj["spec"]["resourceGroups"][0]["coveredResources"] = ["cpu", "memory"]
    obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"] = [
        {"name": "cpu", "nominalQuota": 12, "borrowingLimit": "1.5"},
        {"name": "memory", "nominalQuota": "1024Mi"},
    ]
    stored = info.to_storage(obj)  # conversion webhook: through the Go types
    resources = stored["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert resources == [
        {"name": "cpu", "nominalQuota": "12", "borrowingLimit": "1500m"},
        {"name": "memory", "nominalQuota": "1Gi"},
    ]
    same_version = _cq_v1beta1()
    same_version["apiVersion"] = "kueue.x-k8s.io/v1beta2"
    same_version["spec"]["cohortName"] = same_version["spec"].pop("cohort")
    untouched = info.to_storage(same_version)
    assert untouched["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 9
    created = info.prepare_for_create(info.default(untouched))
    info.admit(created, lambda *_: None)  # mutating webhook on create: adds the finalizer
    assert created["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "9"


def _workload_with(mutate: Any) -> dict[str, Any]:
    wl: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": {
            "queueName": "lq",
            "podSets": [
                {"name": "main", "count": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}
            ],
        },
    }
    mutate(wl["spec"]["podSets"][0]["template"]["spec"], wl)
    return wl


@pytest.mark.parametrize(
    ("mutate", "cause"),
    [
        (
            lambda spec, wl: spec["containers"][0].__setitem__("image", 5),
            "spec.podSets[0].template.spec.containers[0].image: Invalid value: \"integer\": "
            "spec.podSets[0].template.spec.containers[0].image in body must be of type string: \"integer\"",
        ),
        (
            lambda spec, wl: spec["containers"][0].pop("name"),
            "spec.podSets[0].template.spec.containers[0].name: Required value",
        ),
        (
            lambda spec, wl: spec.__setitem__("volumes", [{"name": "v", "nfs": {"server": "s"}}]),
            "spec.podSets[0].template.spec.volumes[0].nfs.path: Required value",
        ),
        (  # the absent protocol defaults to TCP (the schema's default) before the uniqueness check
            lambda spec, wl: spec["containers"][0].__setitem__(
                "ports", [{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}]
            ),
            'spec.podSets[0].template.spec.containers[0].ports[1]: Duplicate value: {"containerPort":80,"protocol":"TCP"}',
        ),
        (
            lambda spec, wl: spec["containers"][0].__setitem__("resources", {"limits": {"cpu": "1x"}}),
            'spec.podSets[0].template.spec.containers[0].resources.limits.cpu: Invalid value: "1x": '
            "spec.podSets[0].template.spec.containers[0].resources.limits.cpu in body should match '^(\\+|-)?",
        ),
        (
            lambda spec, wl: wl["spec"].__setitem__(
                "priorityClassRef", {"group": "bogus.io", "kind": "PriorityClass", "name": "p"}
            ),
            'spec.priorityClassRef.group: Unsupported value: "bogus.io": supported values: '
            '"kueue.x-k8s.io", "scheduling.k8s.io"',
        ),
    ],
    ids=["wrong-type", "no-container-name", "nfs-without-path", "duplicate-port", "bad-quantity", "bad-enum"],
)
def test_workload_pod_templates_are_validated_by_the_crd_schema(mutate: Any, cause: str) -> None:
    """serve applies the Workload CRD's embedded core/v1 schema (tests/cluster/test_crd_rules_real.py
    compares the same cases with a real kube-apiserver)."""
    info = _info("kueue.x-k8s.io", "v1beta2", "workloads")
    failure = info.validation_failure(info.default(info.to_storage(_workload_with(mutate))), None)
    assert failure is not None
    assert failure.message.startswith('Workload.kueue.x-k8s.io "wl" is invalid: ')
    assert cause in failure.message


def test_workload_pod_template_defaults_come_from_the_crd_schema() -> None:
    info = _info("kueue.x-k8s.io", "v1beta2", "workloads")
    original = _workload_with(lambda spec, wl: spec["containers"][0].__setitem__("ports", [{"containerPort": 80}]))
    stored = info.default(info.to_storage(original))
    assert stored["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["ports"] == [
        {"containerPort": 80, "protocol": "TCP"}
    ]
    assert original["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["ports"] == [{"containerPort": 80}]
    # controller-gen writes no enums into the embedded core types: an odd restartPolicy is stored
    odd = _workload_with(lambda spec, wl: spec.__setitem__("restartPolicy", "Sometimes"))
    assert info.validation_failure(info.default(info.to_storage(odd)), None) is None
