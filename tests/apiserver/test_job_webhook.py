"""Kueue's batch/v1 Job webhook in the API server's request path (upstream ``JobWebhook``).

Requests go through the real handlers on a real (in-memory) store, as the HTTP layer sends them;
the e2e module drives the same rules with kubectl against ``pykueue serve``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from pykueue.api import strconv
from pykueue.apiserver.app import APIServerApp
from pykueue.apiserver.builtin import job_webhook as jw
from pykueue.apiserver.handlers import APIRequest
from pykueue.kube.status import StatusError
from pykueue.store import Store

QN = jw.QUEUE_NAME_LABEL
PC = jw.PRIORITY_CLASS_LABEL
MAX_EXEC = jw.MAX_EXEC_TIME_LABEL
MIN_PAR = jw.MIN_PARALLELISM_ANNOTATION
SYNC = jw.COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION
KUEUE = "kueue.x-k8s.io"
DENIED = 'admission webhook "vjob.kb.io" denied the request: '

Obj = dict[str, Any]


class Server:
    """The handlers of a fresh API server (bootstrap namespaces created)."""

    def __init__(self) -> None:
        self.store = Store(None)
        self.app = APIServerApp(self.store)
        self.app.bootstrap()

    def call(
        self,
        method: str,
        group: str,
        resource: str,
        *,
        ns: str | None = None,
        name: str | None = None,
        body: Any = None,
        content_type: str = "application/json",
        subresource: str | None = None,
        version: str = "v1",
        query: dict[str, list[str]] | None = None,
    ) -> Obj:
        req = APIRequest(
            method=method,
            group=group,
            version=version,
            resource=resource,
            namespace=ns,
            name=name,
            subresource=subresource,
            body=json.dumps(body).encode() if body is not None else b"",
            content_type=content_type,
            query=query or {},
        )
        resp = self.app.handlers.handle(req)
        assert resp.status < 300, resp.body
        result: Obj = json.loads(resp.body)
        return result

    def create_job(self, job: Obj, ns: str = "default", **kw: Any) -> Obj:
        return self.call("POST", "batch", "jobs", ns=ns, body=job, **kw)

    def patch_job(self, name: str, patch: Any, ns: str = "default", *, json_patch: bool = False) -> Obj:
        ctype = "application/json-patch+json" if json_patch else "application/merge-patch+json"
        return self.call("PATCH", "batch", "jobs", ns=ns, name=name, body=patch, content_type=ctype)

    def local_queue(self, name: str = "default", ns: str = "default") -> Obj:
        body = {"apiVersion": f"{KUEUE}/v1beta2", "kind": "LocalQueue", "metadata": {"name": name},
                "spec": {"clusterQueue": "cq"}}  # fmt: skip
        return self.call("POST", KUEUE, "localqueues", ns=ns, body=body, version="v1beta2")

    def priority_class(self, name: str = "default", value: int = 100) -> Obj:
        body = {"apiVersion": f"{KUEUE}/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": name},
                "value": value}  # fmt: skip
        return self.call("POST", KUEUE, "workloadpriorityclasses", body=body, version="v1beta2")

    def namespace(self, name: str) -> Obj:
        return self.call(
            "POST",
            "",
            "namespaces",
            body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        )


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    yield srv
    srv.store.close()


def job(
    name: str,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owner: Obj | None = None,
    **spec: Any,
) -> Obj:
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
            },
            **spec,
        },
    }


def job_owner(parent: Obj) -> Obj:
    meta = parent["metadata"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
    }


def denial(server: Server, fn: Any, *args: Any, **kw: Any) -> StatusError:
    with pytest.raises(StatusError) as info:
        fn(*args, **kw)
    return info.value


# --- defaulting ------------------------------------------------------------------------------------


def test_job_with_queue_name_is_suspended_and_others_are_not(server: Server) -> None:
    plain = server.create_job(job("plain"))
    assert plain["spec"]["suspend"] is False
    assert QN not in (plain["metadata"].get("labels") or {})
    queued = server.create_job(job("queued", {QN: "user-queue"}))
    assert queued["spec"]["suspend"] is True
    assert queued["metadata"]["labels"][QN] == "user-queue"


def test_default_local_queue_and_priority_class_are_defaulted(server: Server) -> None:
    server.local_queue()
    server.priority_class()
    created = server.create_job(job("defaulted"))
    assert created["metadata"]["labels"][QN] == "default"
    assert created["metadata"]["labels"][PC] == "default"
    assert created["spec"]["suspend"] is True
    # Webhook mutations happen after managedFields are recorded: the labels belong to no manager.
    fields = json.dumps(created["metadata"]["managedFields"])
    assert QN not in fields and PC not in fields
    # What the client set is kept.
    explicit = server.create_job(job("explicit", {QN: "other", PC: "high"}))
    assert explicit["metadata"]["labels"][QN] == "other"
    assert explicit["metadata"]["labels"][PC] == "high"


def test_default_local_queue_is_per_namespace(server: Server) -> None:
    server.namespace("team-a")
    server.local_queue(ns="team-a")
    in_default = server.create_job(job("no-lq"))
    assert QN not in (in_default["metadata"].get("labels") or {})
    assert in_default["spec"]["suspend"] is False
    in_team = server.create_job(job("with-lq"), ns="team-a")
    assert in_team["metadata"]["labels"][QN] == "default"


def test_priority_class_defaulting_alone_does_not_suspend(server: Server) -> None:
    server.priority_class()
    created = server.create_job(job("only-priority"))
    assert created["metadata"]["labels"] == {PC: "default"}
    assert created["spec"]["suspend"] is False


def test_excluded_namespaces_are_not_defaulted_nor_validated(server: Server) -> None:
    server.local_queue(ns="kube-system")
    created = server.create_job(job("system", {MAX_EXEC: "0"}), ns="kube-system")
    assert QN not in created["metadata"]["labels"]
    assert created["spec"]["suspend"] is False
    server.namespace("kueue-system")
    other = server.create_job(job("kueue-ns", {QN: "Not_A_Name"}), ns="kueue-system")
    assert other["spec"]["suspend"] is False


def test_child_of_a_kueue_managed_job_is_not_defaulted(server: Server) -> None:
    server.local_queue()
    server.priority_class()
    parent = server.create_job(job("parent", {QN: "user-queue"}))
    child = server.create_job(job("child", {QN: "user-queue"}, owner=job_owner(parent)))
    assert child["spec"]["suspend"] is False  # the ancestor is managed: Kueue suspends only the top
    unlabelled = server.create_job(job("child-2", owner=job_owner(parent)))
    assert QN not in (unlabelled["metadata"].get("labels") or {})  # owner kind is Kueue-managed
    assert PC not in (unlabelled["metadata"].get("labels") or {})
    assert unlabelled["spec"]["suspend"] is False


def test_child_of_an_unqueued_job_gets_suspended(server: Server) -> None:
    parent = server.create_job(job("free-parent"))
    child = server.create_job(job("queued-child", {QN: "user-queue"}, owner=job_owner(parent)))
    assert child["spec"]["suspend"] is True  # the ancestor has no queue-name: not managed


def test_owner_of_another_kind_stops_the_ancestor_walk(server: Server) -> None:
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "u-1", "controller": True}
    created = server.create_job(job("owned", {QN: "q"}, owner=owner))
    assert created["spec"]["suspend"] is True


def test_missing_owner_job_denies_the_request(server: Server) -> None:
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "gone", "uid": "u-2", "controller": True}
    err = denial(server, server.create_job, job("orphan", {QN: "q"}, owner=owner))
    assert err.code == 404 and err.reason == "NotFound"
    assert err.message == 'admission webhook "mjob.kb.io" denied the request: jobs.batch "gone" not found'


def test_job_being_deleted_is_not_suspended(server: Server) -> None:
    body = job("deleting", {QN: "q"})
    body["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    created = server.create_job(body)
    assert created["spec"]["suspend"] is False


def test_dry_run_create_is_defaulted_too(server: Server) -> None:
    server.local_queue()
    created = server.create_job(job("dry"), query={"dryRun": ["All"]})
    assert created["metadata"]["labels"][QN] == "default" and created["spec"]["suspend"] is True


# --- validation on create -----------------------------------------------------------------------------


def test_queue_name_must_be_a_dns_subdomain(server: Server) -> None:
    err = denial(server, server.create_job, job("bad-queue", {QN: "Bad_Queue"}))
    # controller-runtime's admission.Denied: 403 Forbidden, the message only (no details)
    assert err.code == 403 and err.reason == "Forbidden"
    assert err.message.startswith(
        DENIED + f'metadata.labels[{QN}]: Invalid value: "Bad_Queue": a lowercase RFC 1123'
    )
    assert not err.details
    assert server.store.count(server.app.handlers.backend.lookup("batch", "v1", "jobs").key()) == 0  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", 'Invalid value: "abc": strconv.Atoi: parsing "abc": invalid syntax'),
        ("1.5", 'Invalid value: "1.5": strconv.Atoi: parsing "1.5": invalid syntax'),
        ("99999999999999999999", 'Invalid value: "99999999999999999999": strconv.Atoi: parsing "99999999999999999999": value out of range'),
        ("0", "Invalid value: 0: should be greater than 0"),
        ("00", "Invalid value: 0: should be greater than 0"),
    ],
)  # fmt: skip
def test_max_exec_time_label(server: Server, value: str, message: str) -> None:
    err = denial(server, server.create_job, job("max-exec", {MAX_EXEC: value}))
    assert err.message == f"{DENIED}metadata.labels[{MAX_EXEC}]: {message}"


def test_max_exec_time_label_accepts_positive_ints(server: Server) -> None:
    # (signs are not valid label values: the built-in label validation refuses them first)
    assert server.create_job(job("ok-exec", {MAX_EXEC: "030"}))["metadata"]["labels"][MAX_EXEC] == "030"


@pytest.mark.parametrize(
    ("annotation", "spec", "message"),
    [
        ("x", {"parallelism": 4}, 'Invalid value: "x": strconv.Atoi: parsing "x": invalid syntax'),
        ("4", {"parallelism": 4}, "Invalid value: 4: should be between 0 and 3"),
        ("0", {"parallelism": 4}, "Invalid value: 0: should be between 0 and 3"),
        ("3", {"parallelism": 4, "completions": 3}, "Invalid value: 3: should be between 0 and 2"),
        ("1", {}, "Invalid value: 1: should be between 0 and 0"),
    ],
)
def test_min_parallelism_annotation(server: Server, annotation: str, spec: Obj, message: str) -> None:
    err = denial(server, server.create_job, job("min-par", annotations={MIN_PAR: annotation}, **spec))
    assert err.message == f"{DENIED}metadata.annotations[{MIN_PAR}]: {message}"


def test_min_parallelism_in_range_is_accepted(server: Server) -> None:
    server.create_job(job("min-ok", annotations={MIN_PAR: "2"}, parallelism=4))


def test_completions_equal_parallelism_rules(server: Server) -> None:
    path = f"metadata.annotations[{SYNC}]"
    err = denial(server, server.create_job, job("sync-bool", annotations={SYNC: "yes"}))
    assert (
        err.message
        == f'{DENIED}{path}: Invalid value: "yes": strconv.ParseBool: parsing "yes": invalid syntax'
    )
    err = denial(server, server.create_job, job("sync-nonindexed", annotations={SYNC: "true"}))
    assert err.message == f'{DENIED}{path}: Invalid value: "true": should not be enabled for NonIndexed jobs'
    err = denial(
        server,
        server.create_job,
        job("sync-neq", annotations={SYNC: "True"}, completionMode="Indexed", parallelism=4, completions=6),
    )
    assert err.message == (
        f"{DENIED}spec.completions: Invalid value: 6: should be equal to parallelism when {SYNC} annotation is true"
    )
    server.create_job(
        job("sync-ok", annotations={SYNC: "1"}, completionMode="Indexed", parallelism=3, completions=3)
    )
    server.create_job(job("sync-off", annotations={SYNC: "false"}))


def test_several_errors_are_aggregated_in_order(server: Server) -> None:
    err = denial(
        server, server.create_job, job("many", {QN: "Q", MAX_EXEC: "0"}, {MIN_PAR: "9"}, parallelism=2)
    )
    assert err.message.startswith(DENIED + "[")
    fields = [
        f"metadata.labels[{QN}]: ",
        f"metadata.labels[{MAX_EXEC}]: ",
        f"metadata.annotations[{MIN_PAR}]: ",
    ]
    positions = [err.message.find(f) for f in fields]
    assert -1 not in positions and positions == sorted(positions)


def test_builtin_validation_comes_first(server: Server) -> None:
    body = job("bad-both", {QN: "Q"})
    body["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    err = denial(server, server.create_job, body)
    assert err.message.startswith('Job.batch "bad-both" is invalid: ')


# --- validation on update -----------------------------------------------------------------------------


def test_queue_name_is_immutable_while_running(server: Server) -> None:
    server.create_job(job("running", {QN: "q1"}))
    server.patch_job("running", {"spec": {"suspend": False}})
    err = denial(server, server.patch_job, "running", {"metadata": {"labels": {QN: "q2"}}})
    assert err.message == f'{DENIED}metadata.labels[{QN}]: Invalid value: "q2": field is immutable'
    # Suspended again: the queue can change.
    server.patch_job("running", {"spec": {"suspend": True}})
    assert server.patch_job("running", {"metadata": {"labels": {QN: "q2"}}})["metadata"]["labels"][QN] == "q2"


def test_stopping_job_counts_as_not_suspended(server: Server) -> None:
    server.create_job(job("stopping", {QN: "q1"}, {jw.STOPPING_ANNOTATION: "true"}))
    err = denial(server, server.patch_job, "stopping", {"metadata": {"labels": {QN: "q2"}}})
    assert "field is immutable" in err.message


def test_queue_name_removal_rejected_with_default_local_queue(server: Server) -> None:
    server.create_job(job("keep-queue", {QN: "q1"}))
    patch = [{"op": "remove", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name"}]
    server.local_queue()
    err = denial(server, server.patch_job, "keep-queue", patch, json_patch=True)
    assert err.message == (
        f'{DENIED}metadata.labels[{QN}]: Invalid value: "": queue-name must not be empty in namespace with default queue'
    )
    other = server.create_job(job("drop-queue", {QN: "q1"}), ns="kube-public")
    assert other["spec"]["suspend"] is True
    patched = server.patch_job("drop-queue", patch, ns="kube-public", json_patch=True)
    assert QN not in patched["metadata"]["labels"]


def test_priority_class_cannot_be_removed_nor_added_while_running(server: Server) -> None:
    server.create_job(job("prio", {QN: "q", PC: "low"}))
    patch = [{"op": "remove", "path": "/metadata/labels/kueue.x-k8s.io~1priority-class"}]
    err = denial(server, server.patch_job, "prio", patch, json_patch=True)
    assert (
        err.message
        == f'{DENIED}metadata.labels[{PC}]: Invalid value: "": WorkloadPriorityClass cannot be removed from a workload'
    )
    # Changing it is allowed (the Job controller updates the Workload's priority).
    assert (
        server.patch_job("prio", {"metadata": {"labels": {PC: "high"}}})["metadata"]["labels"][PC] == "high"
    )
    server.create_job(job("prio-run"))  # no queue: runs
    err = denial(server, server.patch_job, "prio-run", {"metadata": {"labels": {PC: "high"}}})
    assert err.message == (
        f'{DENIED}metadata.labels[{PC}]: Invalid value: "high": WorkloadPriorityClass cannot be added to a non-suspended workload'
    )
    server.create_job(job("prio-suspended", {QN: "q"}))
    server.patch_job("prio-suspended", {"metadata": {"labels": {PC: "high"}}})


def test_max_exec_time_immutable_unless_both_suspended(server: Server) -> None:
    server.create_job(job("exec", {QN: "q", MAX_EXEC: "10"}))
    assert (
        server.patch_job("exec", {"metadata": {"labels": {MAX_EXEC: "20"}}})["metadata"]["labels"][MAX_EXEC]
        == "20"
    )
    err = denial(
        server,
        server.patch_job,
        "exec",
        {"metadata": {"labels": {MAX_EXEC: "30"}}, "spec": {"suspend": False}},
    )
    assert err.message == f'{DENIED}metadata.labels[{MAX_EXEC}]: Invalid value: "30": field is immutable'
    server.patch_job("exec", {"spec": {"suspend": False}})
    err = denial(
        server,
        server.patch_job,
        "exec",
        {"metadata": {"labels": {MAX_EXEC: "30"}}, "spec": {"suspend": True}},
    )
    assert "field is immutable" in err.message


def test_parallelism_immutable_with_partial_admission_while_running(server: Server) -> None:
    server.create_job(job("partial", {QN: "q"}, {MIN_PAR: "2"}, parallelism=4))
    assert server.patch_job("partial", {"spec": {"parallelism": 3}})["spec"]["parallelism"] == 3
    server.patch_job("partial", {"spec": {"suspend": False}})
    err = denial(server, server.patch_job, "partial", {"spec": {"parallelism": 2}})
    assert err.message == (
        f"{DENIED}spec.parallelism: Forbidden: cannot change when partial admission is enabled and the job is not suspended"
    )


def test_min_parallelism_revalidated_only_when_changed(server: Server) -> None:
    server.create_job(job("minpar", {QN: "q"}, {MIN_PAR: "2"}, parallelism=4))
    server.patch_job("minpar", {"spec": {"parallelism": 2}})  # now outside the range, annotation unchanged
    err = denial(server, server.patch_job, "minpar", {"metadata": {"annotations": {MIN_PAR: "3"}}})
    assert (
        err.message == f"{DENIED}metadata.annotations[{MIN_PAR}]: Invalid value: 3: should be between 0 and 1"
    )


def test_completions_equal_parallelism_immutable_while_running(server: Server) -> None:
    server.create_job(
        job("sync-run", annotations={SYNC: "true"}, completionMode="Indexed", parallelism=2, completions=2)
    )
    err = denial(server, server.patch_job, "sync-run", {"metadata": {"annotations": {SYNC: "false"}}})
    assert (
        err.message
        == f"{DENIED}metadata.annotations[{SYNC}]: Forbidden: field is immutable while the job is not suspended"
    )


def test_status_updates_skip_the_webhook(server: Server) -> None:
    server.create_job(job("status-only", {QN: "q1"}))
    server.patch_job("status-only", {"spec": {"suspend": False}})
    # Make the stored object invalid for the webhook behind its back (a running Job whose
    # label a controller changed before the rule existed): /status writes must still work.
    key = server.app.handlers.backend.lookup("batch", "v1", "jobs").key()  # type: ignore[union-attr]
    stored = server.store.get(key, "default", "status-only")
    stored["metadata"]["labels"][QN] = "Bad_Name"
    server.store.update(key, stored)
    result = server.call(
        "PATCH", "batch", "jobs", ns="default", name="status-only", subresource="status",
        body={"status": {"active": 1}}, content_type="application/merge-patch+json",
    )  # fmt: skip
    assert result["status"]["active"] == 1


# --- pure helpers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "error"),
    [
        ("12", 12, ""),
        ("+7", 7, ""),
        ("-7", -7, ""),
        ("", None, 'strconv.Atoi: parsing "": invalid syntax'),
        (" 1", None, 'strconv.Atoi: parsing " 1": invalid syntax'),
        ("1_0", None, 'strconv.Atoi: parsing "1_0": invalid syntax'),
        ("9223372036854775807", 9223372036854775807, ""),
        ("9223372036854775808", None, 'strconv.Atoi: parsing "9223372036854775808": value out of range'),
    ],
)
def test_go_atoi(text: str, value: int | None, error: str) -> None:
    assert strconv.parse_int(text) == (value, error)


def test_go_parse_int_32_bits_and_no_trailing_newline() -> None:
    assert strconv.parse_int("2147483647", strconv.INT32, "ParseInt") == (2147483647, "")
    assert strconv.parse_int("2147483648", strconv.INT32, "ParseInt") == (
        None,
        'strconv.ParseInt: parsing "2147483648": value out of range',
    )
    assert strconv.parse_int("12\n")[0] is None, "Go rejects what Python's re '$' would let through"


def test_go_parse_bool() -> None:
    assert strconv.parse_bool("T") == (True, "")
    assert strconv.parse_bool("FALSE") == (False, "")
    assert strconv.parse_bool("no") == (None, 'strconv.ParseBool: parsing "no": invalid syntax')


def test_ancestor_chain_limits() -> None:
    store: dict[str, Obj] = {}

    def lookup(group: str, plural: str, namespace: str, name: str) -> Obj | None:
        return store.get(name) if (group, plural) == ("batch", "jobs") else None

    def chain_job(name: str, parent: str | None, queue: str = "") -> Obj:
        obj = job(name, {QN: queue} if queue else None)
        obj["metadata"].update(namespace="ns", uid=f"uid-{name}")
        if parent is not None:
            obj["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": parent,
                    "uid": f"uid-{parent}",
                    "controller": True,
                }
            ]
        return obj

    store["a"] = chain_job("a", "b")
    store["b"] = chain_job("b", "a")
    with pytest.raises(StatusError) as err:
        jw.has_managed_ancestor(chain_job("new", "a"), lookup)
    assert err.value.code == 403 and err.value.message.endswith("denied the request: cyclic ownership")
    store.clear()
    for i in range(12):
        store[f"j{i}"] = chain_job(f"j{i}", f"j{i + 1}" if i < 11 else None, "q")
    with pytest.raises(StatusError) as err:
        jw.has_managed_ancestor(chain_job("leaf", "j0"), lookup)
    assert err.value.message.endswith("managed owner chain limit reached")
    store.clear()
    store["top"] = chain_job("top", None, "q")
    store["mid"] = chain_job("mid", "top")
    assert jw.has_managed_ancestor(chain_job("leaf", "mid"), lookup) is True
    store["top"] = chain_job("top", None)
    assert jw.has_managed_ancestor(chain_job("leaf", "mid"), lookup) is False
    config = jw.JobWebhookConfig(manage_jobs_without_queue_name=True)
    assert jw.has_managed_ancestor(chain_job("leaf", "mid"), lookup, config) is True
    # An owner reference whose uid is not the named Job's stops the walk (upstream
    # FindAncestorJobManagedByKueue: "owner reference UID does not match the referenced object").
    store["top"] = chain_job("top", None, "q")
    store["mid"]["metadata"]["ownerReferences"][0]["uid"] = "uid-of-an-earlier-top"
    assert jw.has_managed_ancestor(chain_job("leaf", "mid"), lookup) is False


def test_manage_jobs_without_queue_name_suspends_in_managed_namespaces() -> None:
    config = jw.JobWebhookConfig(manage_jobs_without_queue_name=True)
    namespaces = {"team": {"metadata": {"name": "team", "labels": {jw.NAMESPACE_NAME_LABEL: "team"}}}}

    def lookup(group: str, plural: str, namespace: str, name: str) -> Obj | None:
        return namespaces.get(name) if plural == "namespaces" else None

    obj = job("free")
    obj["metadata"]["namespace"] = "team"
    obj["spec"]["suspend"] = False
    jw.default_job(obj, lookup, config)
    assert obj["spec"]["suspend"] is True
    jw.default_job(other := {**job("x"), "metadata": {"name": "x", "namespace": "nowhere"}}, lookup, config)
    assert "suspend" not in other["spec"]
