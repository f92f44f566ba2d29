"""The write path's shortcuts give exactly what the general code they bypass gives.

Each shortcut (bench/RESULTS.md, API section) is checked against the general implementation,
which stays in the code, on valid manifests of every kind and on random mutations of them
(wrong types, nulls, unknown fields, duplicate list keys, odd quantities).
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pykueue.api.conversion import ABSENT, ConversionError, encode_status, to_external, to_internal
from pykueue.api.validation import TYPE_INVALID
from pykueue.apiserver import crdgen
from pykueue.apiserver import resources as R
from pykueue.apiserver.app import RegistryBackend
from pykueue.apiserver.builtin import schema as sch
from pykueue.apiserver.patch import apply as A
from pykueue.apiserver.patch import fieldpath as F
from pykueue.apiserver.patch import typed as T
from pykueue.store import ops as store_ops

G = "kueue.x-k8s.io"
POD = {"spec": {"restartPolicy": "Never", "containers": [
    {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1000m", "memory": "1024Mi"}}}]}}  # fmt: skip
BASES: list[dict[str, Any]] = [
    {"apiVersion": f"{G}/v1beta2", "kind": "Workload", "metadata": {"name": "w", "namespace": "ns", "labels": {"a": "b"}},
     "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 3, "minCount": 1, "template": POD},
                                             {"name": "aux", "count": 1, "template": POD}]}},
    {"apiVersion": f"{G}/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq", "finalizers": ["x.io/y"]},
     "spec": {"cohortName": "c", "namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"],
              "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 12},
                                                      {"name": "memory", "nominalQuota": "1.5Gi", "borrowingLimit": "1024Mi"}]}]}]}},
    {"apiVersion": f"{G}/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "rf"},
     "spec": {"nodeLabels": {"pool": "a"}, "nodeTaints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}},
    {"apiVersion": f"{G}/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "ns"},
     "spec": {"clusterQueue": "cq"}},
    {"apiVersion": f"{G}/v1beta2", "kind": "Cohort", "metadata": {"name": "co"}, "spec": {"parentName": "root"}},
    {"apiVersion": f"{G}/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "ac"},
     "spec": {"controllerName": "x.io/y"}},
    {"apiVersion": f"{G}/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "p"}, "value": 5},
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
     "spec": {"parallelism": 2, "template": POD}},
    {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l", "namespace": "ns"},
     "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}},
    {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "ns"}, "reason": "R",
     "involvedObject": {"kind": "Job", "name": "j", "namespace": "ns"}},
]  # fmt: skip
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(["", "x", "1000m", "1.5", "12", "1Gi", "main", "Never", "cpu"]),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(["name", "a", "x"]), children, max_size=3),
    ),
    max_leaves=6,
)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


@st.composite
def manifests(draw: st.DrawFn) -> dict[str, Any]:
    """A base manifest with up to three random changes (never to apiVersion/kind)."""
    obj = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(0, 3))):
        target = _draw_member(draw, obj, lambda path: path[0] not in ("apiVersion", "kind"))
        if target is None:
            break
        parent, key = target
        action = draw(st.sampled_from(["replace", "delete", "add", "duplicate"]))
        if action == "replace":
            parent[key] = draw(values)
        elif action == "delete" and isinstance(parent, dict):
            del parent[key]
        elif action == "add" and isinstance(parent[key], dict):
            parent[key][draw(st.sampled_from(["zz", "name", "labels"]))] = draw(values)
        elif action == "duplicate" and isinstance(parent[key], list) and parent[key]:
            parent[key].append(copy.deepcopy(parent[key][0]))
    return obj


def _draw_member(draw: st.DrawFn, obj: Any, keep: Callable[[tuple[Any, ...]], bool]) -> tuple[Any, Any] | None:
    """A random member of ``obj`` (its container and key or index) among the non-empty paths
    ``keep`` accepts, or None when there is none."""
    candidates = [p for p in _paths(obj) if p and keep(p)]
    if not candidates:
        return None
    path = draw(st.sampled_from(candidates))
    parent = obj
    for step in path[:-1]:
        parent = parent[step]
    return parent, path[-1]


def _info(obj: dict[str, Any]) -> R.ResourceInfo:
    group, _, version = obj["apiVersion"].rpartition("/")
    info = R.REGISTRY.by_gvk(group, version, obj["kind"])
    assert info is not None
    return info


_BACKEND = RegistryBackend()


def _node(obj: dict[str, Any]) -> Any:
    info = _info(obj)
    return _BACKEND._schema_node(info, info.storage_version)  # the node the handlers use


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    """A function's result or the type and message of what it raised."""
    try:
        return ("ok", fn(*args))
    except Exception as err:  # compared, not swallowed
        return ("raised", (type(err).__name__, str(err)))


@SETTINGS
@given(manifests())
def test_compare_created_is_compare_from_empty(obj: dict[str, Any]) -> None:
    node = _node(obj)
    fast = _outcome(lambda: T.compare_created(obj, node))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(T, "ONE_SIDED_WALK", False)  # the pairwise walk, as the reference
        slow = _outcome(lambda: T.compare({}, obj, node))
    assert fast[0] == slow[0]
    if fast[0] == "ok":
        assert (fast[1].added, fast[1].modified, fast[1].removed) == (
            slow[1].added,
            slow[1].modified,
            slow[1].removed,
        )


@SETTINGS
@given(manifests(), st.sampled_from([(), ("status",)]))
def test_created_fields_v1_is_the_general_encoding(obj: dict[str, Any], reset: tuple[str, ...]) -> None:
    node = _node(obj)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(T, "ONE_SIDED_WALK", False)  # the pairwise walk, as the reference
            changed = T.compare({}, obj, node).filtered(A._scope("", reset)).changed()
    except T.TypedError:
        with pytest.raises(T.TypedError):
            T.created_fields_v1(obj, node, exclude=reset, strip=A._STRIP_ORDER)
        return
    fast = T.created_fields_v1(obj, node, exclude=reset, strip=A._STRIP_ORDER)
    expected = F.to_fields_v1(A.strip_meta(changed))
    assert fast is not None
    assert json.dumps(fast) == json.dumps(expected)  # key order included


@SETTINGS
@given(manifests())
def test_create_managed_fields_shortcut(obj: dict[str, Any]) -> None:
    if not isinstance(obj.get("metadata"), dict):
        return  # the handlers always hand over an object with metadata
    node = _node(obj)
    fast = copy.deepcopy(obj)
    A.update_managed_fields(None, fast, "mgr", schema=node, reset_fields=("status",))
    general = copy.deepcopy(obj)
    # A requested entry that decodes to no fields forces the general path (same result).
    general["metadata"]["managedFields"] = [{"manager": "x", "operation": "Update"}]
    A.update_managed_fields(None, general, "mgr", schema=node, reset_fields=("status",))
    fast_entries = (fast.get("metadata") or {}).get("managedFields")
    general_entries = (general.get("metadata") or {}).get("managedFields")
    for entries in (fast_entries, general_entries):
        for entry in entries or []:
            entry.pop("time", None)
    assert json.dumps(fast_entries) == json.dumps(general_entries)


@SETTINGS
@given(manifests())
def test_type_errors_are_the_type_errors_of_validate(obj: dict[str, Any]) -> None:
    info = _info(obj)
    schema = info.openapi_schema(info.storage_version)
    assert sch.type_errors(obj, schema) == [e for e in sch.validate(obj, schema) if e.type == TYPE_INVALID]


@SETTINGS
@given(manifests())
def test_typed_round_trip_shortcuts(obj: dict[str, Any]) -> None:
    if obj["apiVersion"].partition("/")[0] != G:
        return
    fast = _outcome(R._typed, obj)
    slow = _outcome(lambda o: to_internal(o)[0], copy.deepcopy(obj))
    assert fast == slow
    if fast[0] == "ok":
        assert json.dumps(R._external(fast[1])) == json.dumps(to_external(slow[1]))


@SETTINGS
@given(manifests())
def test_default_for_create_is_default_then_prepare(obj: dict[str, Any]) -> None:
    info = _info(obj)
    fused = _outcome(info.default_for_create, copy.deepcopy(obj))
    stepwise = _outcome(lambda o: info.prepare_for_create(info.default(o)), copy.deepcopy(obj))
    if obj["kind"] == "Job":  # a generated uid differs run to run
        return
    assert json.dumps(fused, default=str) == json.dumps(stepwise, default=str)


@SETTINGS
@given(
    st.lists(
        st.lists(
            st.sampled_from(["f:a", "f:b", 'k:{"name":"x"}', "v:1", "i:0", "f:c"]), min_size=1, max_size=4
        )
    )
)
def test_to_fields_v1_round_trips_in_order(raw: list[list[str]]) -> None:
    paths = frozenset(tuple(p) for p in raw)
    encoded = F.to_fields_v1(paths)
    assert F.from_fields_v1(encoded) == paths

    def ordered(doc: dict[str, Any]) -> bool:
        keys = [k for k in doc if k != "."]
        return keys == sorted(keys, key=F.element_sort_key) and all(ordered(v) for v in doc.values())

    assert ordered(encoded)


@given(
    st.dictionaries(
        st.sampled_from(["name", "port", "protocol"]),
        st.one_of(st.booleans(), st.integers(-2, 2), st.none(), st.text(max_size=3)),
        min_size=1,
    )
)
def test_key_element_memo(keys: dict[str, Any]) -> None:
    from pykueue.apiserver.patch._values import go_json

    assert F.key_element(keys) == "k:" + go_json({n: keys[n] for n in sorted(keys)}, sort_keys=False)


@pytest.mark.parametrize("value", ["1000m", "1.5", 12, 1.5, "1024Mi", "x", "", True, "12e3"])
def test_canonical_quantities_memo(value: Any) -> None:
    schema = crdgen.shared_kueue_schema("ClusterQueue", "v1beta2")
    quota = schema["properties"]["spec"]["properties"]["resourceGroups"]["items"]["properties"]["flavors"][
        "items"
    ]
    resource = quota["properties"]["resources"]["items"]["properties"]["nominalQuota"]
    first = sch.canonicalize_quantities(value, resource)
    assert sch.canonicalize_quantities(value, resource) == first
    assert type(sch.canonicalize_quantities(value, resource)) is type(first)
    if value in (True, "x", ""):
        assert first == value


def test_typed_decode_error_matches_to_internal() -> None:
    bad = copy.deepcopy(BASES[0])
    bad["spec"]["podSets"][0]["count"] = "three"
    with pytest.raises(ConversionError) as fast:
        R._typed(bad)
    with pytest.raises(ConversionError) as slow:
        to_internal(bad)
    assert str(fast.value) == str(slow.value)


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=12,
)


@SETTINGS
@given(json_values)
def test_raw_fields_encode_as_the_recursive_encoder(value: Any) -> None:
    from pykueue.api import conversion as C

    fast = C.msgspec.to_builtins(value)
    assert fast == C._encode_value(value)
    if isinstance(value, dict | list) and value:
        assert fast is not value, "a copy, never the typed object's own container"


def test_the_pod_template_is_a_raw_field_and_typed_fields_are_not() -> None:
    from pykueue.api import conversion as C
    from pykueue.api import kueue as K

    raw = {name for name, _, _, _, is_raw in C._encoding_plan(K.PodTemplateSpec) if is_raw}
    assert raw == {"metadata", "spec"}
    plan = {name: is_raw for name, _, _, _, is_raw in C._encoding_plan(K.PodSet)}
    assert plan["name"] and not plan["template"]


def test_a_quantity_plan_is_used_only_once_complete() -> None:
    """Another thread canonicalizing while a plan is being built gets a complete one (review find)."""
    import threading

    quantity = {sch.INT_OR_STRING: True, "pattern": sch.QUANTITY_PATTERN}
    entered, release = threading.Event(), threading.Event()

    class SlowSchema(dict[str, Any]):
        def get(self, key: str, default: Any = None) -> Any:
            if key == sch.INT_OR_STRING:
                entered.set()
                release.wait(5)
            return super().get(key, default)

    schema = {"type": "object", "properties": {"a": quantity, "z": SlowSchema(type="string")}}
    builder = threading.Thread(target=lambda: sch.canonicalize_quantities({"a": "1.5"}, schema))
    builder.start()
    try:
        assert entered.wait(5)
        assert sch.canonicalize_quantities({"a": "1.5"}, schema) == {"a": "1500m"}
    finally:
        release.set()
        builder.join()
    assert sch.canonicalize_quantities({"a": "1.5"}, schema) == {"a": "1500m"}


@pytest.mark.parametrize(
    ("resource", "namespace", "body", "message"),
    [
        (
            "resourceflavors",
            None,
            {"apiVersion": f"{G}/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "rf1"},
             "spec": {"nodeTaints": [None], "tolerations": [None]}},
            'ResourceFlavor.kueue.x-k8s.io "rf1" is invalid: [spec.nodeTaints[0]: Invalid value: "null": '
            'spec.nodeTaints[0] in body must be of type object: "null", spec.tolerations[0]: Invalid value: '
            '"null": spec.tolerations[0] in body must be of type object: "null"]',
        ),
        (
            "workloads",
            "default",
            {"apiVersion": f"{G}/v1beta2", "kind": "Workload", "metadata": {"name": "w"},
             "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1,
                                                     "template": {"spec": {"containers": [None]}}}]}},
            'Workload.kueue.x-k8s.io "w" is invalid: spec.podSets[0].template.spec.containers[0]: Invalid '
            'value: "null": spec.podSets[0].template.spec.containers[0] in body must be of type object: "null"',
        ),
    ],
)  # fmt: skip
def test_null_list_items_get_the_full_type_check(
    resource: str, namespace: str | None, body: dict[str, Any], message: str
) -> None:
    """The pruning walk passes over null list items, so validation must still type-check them."""
    from pykueue.apiserver.app import APIServerApp
    from pykueue.apiserver.handlers import APIRequest
    from pykueue.store import Store

    app = APIServerApp(Store(None))
    app.bootstrap()
    req = APIRequest("POST", G, "v1beta2", resource, namespace=namespace, body=json.dumps(body).encode())
    with pytest.raises(Exception) as caught:
        app.handlers.handle(req)
    assert (getattr(caught.value, "code", None), getattr(caught.value, "message", None)) == (422, message)


@SETTINGS
@given(manifests(), manifests())
def test_compare_skips_members_shared_by_both_sides(old: dict[str, Any], changes: dict[str, Any]) -> None:
    """A member that is the same object on both sides (the live spec under a status update) is not
    walked, with the walk's result: ``new`` takes some members from ``old`` as they are (shared)
    and others from another manifest. Objects that do not fit their schema are left out: the
    walk raises for them, and the store holds none (upstream: "[SHOULD NOT HAPPEN] failed to
    update managedFields")."""
    node = _node(old)
    if _outcome(lambda: T.compare(old, copy.deepcopy(old), node))[0] == "raised":
        return
    new = {name: (old[name] if i % 2 == 0 or name not in changes else changes[name]) for i, name in enumerate(old)}
    shared = _outcome(lambda: T.compare(old, new, node))
    walked = _outcome(lambda: T.compare(old, copy.deepcopy(new), node))
    assert shared == walked


@contextlib.contextmanager
def _workload_server() -> Iterator[tuple[Callable[..., Any], dict[str, Any]]]:
    """A bootstrapped in-memory API server's handlers with ``BASES[0]`` created in ``default``:
    ``req(method, body, **APIRequest fields)`` for Workloads, and the created object."""
    from pykueue.apiserver.app import APIServerApp
    from pykueue.apiserver.handlers import APIRequest
    from pykueue.store import Store

    with Store(None) as store:
        app = APIServerApp(store)
        app.bootstrap()
        wl = copy.deepcopy(BASES[0])
        wl["metadata"]["namespace"] = "default"

        def req(method: str, body: dict[str, Any], **kw: Any) -> Any:
            return app.handlers.handle(APIRequest(method, G, "v1beta2", "workloads", namespace="default",
                                                  body=json.dumps(body).encode(), **kw))  # fmt: skip

        yield req, json.loads(req("POST", wl).body)


def test_status_update_does_not_walk_the_unchanged_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Workload status PUT through the handlers: defaulting rebuilds the object, yet the managed
    fields' comparison sees the live spec itself and skips it (it walked it whole before)."""
    with _workload_server() as (req, created):
        walked: list[tuple[Any, ...]] = []
        real = T._compare

        def spy(lhs: Any, rhs: Any, node: Any, path: tuple[Any, ...], out: Any) -> None:
            walked.append(path)
            real(lhs, rhs, node, path, out)

        monkeypatch.setattr(T, "_compare", spy)
        created["status"] = {"conditions": [{"type": "Finished", "status": "True", "reason": "R", "message": "m",
                                             "lastTransitionTime": "2026-11-26T10:00:00Z"}]}  # fmt: skip
        resp = req("PUT", created, name="w", subresource="status")
        assert resp.status == 200
        assert walked, "the comparison did not run"
        assert not [p for p in walked if p[:1] == ("f:spec",) and len(p) > 1], "the unchanged spec was walked"
        stored = json.loads(resp.body)
        assert stored["spec"] == created["spec"]
        status_entry = [m for m in stored["metadata"]["managedFields"] if m.get("subresource") == "status"]
        assert status_entry and set(status_entry[0]["fieldsV1"]) == {"f:status"}


@SETTINGS
@given(manifests())
def test_managed_fields_memo_is_the_encoding(obj: dict[str, Any]) -> None:
    """The remembered FieldsV1 encodings and decodings are those of fieldpath's functions, and a
    caller changing what it got does not change what the next caller gets."""
    from pykueue.apiserver.patch import managed_fields as M

    outcome = _outcome(lambda: frozenset(T.compare_created(obj, _node(obj)).added))
    if outcome[0] == "raised":
        return
    fields = outcome[1]
    first = M._fields_v1(fields)
    assert first == F.to_fields_v1(fields)
    first["f:zz"] = {}
    assert M._fields_v1(fields) == F.to_fields_v1(fields)
    assert M._fields_of(F.to_fields_v1(fields)) == F.from_fields_v1(F.to_fields_v1(fields))


def test_managed_fields_of_the_same_shape_are_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Workload's admission writes the same status paths: the second object's entry is not
    decoded again (nor its new entry encoded again)."""
    from pykueue.apiserver.patch import managed_fields as M

    calls = {"from": 0, "to": 0}
    real_from, real_to = M.from_fields_v1, M.to_fields_v1

    def counting_from(doc: Any) -> Any:
        calls["from"] += 1
        return real_from(doc)

    def counting_to(paths: Any) -> Any:
        calls["to"] += 1
        return real_to(paths)

    monkeypatch.setattr(M, "from_fields_v1", counting_from)
    monkeypatch.setattr(M, "to_fields_v1", counting_to)
    entry = {"manager": "kueue-admission", "operation": "Update", "apiVersion": "kueue.x-k8s.io/v1beta2",
             "time": "2026-11-26T10:00:00Z", "fieldsType": "FieldsV1", "subresource": "status",
             "fieldsV1": {"f:status": {"f:conditions": {".": {}, 'k:{"type":"Admitted"}': {".": {}, "f:status": {}}}}}}  # fmt: skip
    decoded = [M.decode_entry(copy.deepcopy(entry)) for _ in range(3)]
    encoded = [e.encode() for e in decoded]
    assert decoded[0] == decoded[1] == decoded[2] and encoded[0] == encoded[1] == encoded[2]
    assert encoded[0]["fieldsV1"] == entry["fieldsV1"]
    assert calls == {"from": 1, "to": 1}


@SETTINGS
@given(manifests(), manifests(), st.booleans())
def test_one_sided_compare_is_the_pairwise_walk(old: dict[str, Any], new: dict[str, Any], drop: bool) -> None:
    """A member present on one side only (the first status of a workload, a removed label) is
    walked once, one-sided, with the pairwise walk's paths (and its errors): ``new`` keeps some
    of ``old``'s members, lacks others and adds others of its own."""
    node = _node(old)
    mixed = {name: value for i, name in enumerate(old) if not (drop and i % 2) for value in [old[name]]}
    mixed.update({name: value for name, value in new.items() if name not in old})
    if "metadata" in new and "metadata" in old:
        meta = dict(old["metadata"]) if isinstance(old["metadata"], dict) else {}
        meta.update((k, v) for k, v in (new["metadata"] or {}).items() if k not in meta) if isinstance(
            new["metadata"], dict) else None  # fmt: skip
        mixed["metadata"] = meta

    def outcome() -> tuple[str, Any]:
        result = _outcome(lambda: T.compare(old, mixed, node))
        if result[0] == "ok":
            return ("ok", (result[1].added, result[1].modified, result[1].removed))
        return result

    fast = outcome()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(T, "ONE_SIDED_WALK", False)
        slow = outcome()
    assert fast == slow


STATUSES: list[dict[str, Any]] = [
    {"admission": {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "3"}, "count": 3},
        {"flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "1000m"}, "count": 1}]},
     "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "observedGeneration": 1,
                     "message": "m", "lastTransitionTime": "2026-11-26T10:00:00Z"}],
     "resourceRequests": [{"name": "main", "resources": {"cpu": "3"}}]},
    {"pendingWorkloads": 1, "admittedWorkloads": 0, "conditions": []},
    {"conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "ok",
                     "lastTransitionTime": "2026-11-26T10:00:00.5+01:00"}]},
    {},
]  # fmt: skip


@st.composite
def statuses(draw: st.DrawFn) -> Any:
    """A status of some kind, with up to two random changes (or a random value)."""
    if draw(st.integers(0, 9)) == 0:
        return draw(values)
    status = copy.deepcopy(draw(st.sampled_from(STATUSES)))
    for _ in range(draw(st.integers(0, 2))):
        target = _draw_member(draw, status, lambda path: True)
        if target is None:
            break
        parent, key = target
        if draw(st.booleans()):
            parent[key] = draw(values)
        elif isinstance(parent, dict):
            del parent[key]
    return status


@SETTINGS
@given(manifests(), statuses())
def test_status_member_is_the_external_encodings(obj: dict[str, Any], status: Any) -> None:
    """The status a status update stores is encoded as the whole object's encoding has it."""
    if obj["apiVersion"].partition("/")[0] != G:
        return
    obj["status"] = status
    outcome = _outcome(R._typed, obj)
    if outcome[0] == "raised":
        return
    typed = outcome[1]
    R.apply_defaults(typed)
    whole = R._external(typed)
    assert json.dumps(encode_status(typed) if "status" in whole else None) == json.dumps(whole.get("status"))
    if "status" not in whole:
        assert encode_status(typed) is ABSENT


_STATUS_APP: list[Any] = []


def _status_app() -> Any:
    """One API server for the examples (each example writes objects of its own names)."""
    if not _STATUS_APP:
        from pykueue.apiserver.app import APIServerApp
        from pykueue.store import Store

        app = APIServerApp(Store(None))
        app.bootstrap()
        _STATUS_APP.append(app)
    return _STATUS_APP[0]


def _without_times(body: bytes) -> Any:
    doc = json.loads(body)
    for entry in (doc.get("metadata") or {}).get("managedFields") or []:
        entry.pop("time", None)  # the two writes may straddle a second
    return doc


Caller = Callable[..., tuple[int, Any, list[str]]]


def _status_example(obj: dict[str, Any]) -> Caller | None:
    """Name ``obj`` afresh on the shared server and return a caller of the handlers for its kind
    (status, body or error message, warnings), or None for a kind without a Kueue status."""
    from pykueue.apiserver import handlers as H
    from pykueue.apiserver.handlers import APIRequest
    from pykueue.kube.status import StatusError

    info = _info(obj)
    if not info.status_subresource or obj["apiVersion"].partition("/")[0] != G:
        return None
    app = _status_app()
    namespace = "default" if info.namespaced else None
    name = f"s{len(_STATUS_APP)}"
    _STATUS_APP.append(None)  # a fresh name per example
    obj["metadata"] = {**(obj.get("metadata") or {}), "name": name} if isinstance(obj.get("metadata"), dict) else {
        "name": name}  # fmt: skip
    obj["metadata"].pop("namespace", None)
    group, _, version = obj["apiVersion"].rpartition("/")

    def call(method: str, body: Any, content_type: str = H.JSON, **kw: Any) -> tuple[int, Any, list[str]]:
        raw = json.dumps(body, separators=(",", ":")).encode()
        req = APIRequest(method, group, version, info.plural, namespace=namespace, body=raw,
                         content_type=content_type, **kw)  # fmt: skip
        try:
            resp = app.handlers.handle(req)
        except StatusError as err:
            return (err.code, err.message, [])
        return (resp.status, _without_times(resp.body), resp.warnings)

    return call


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(manifests(), statuses(), st.sampled_from(["Warn", "Strict"]), st.data())
def test_status_update_shortcuts_are_the_whole_objects(
    obj: dict[str, Any], status: Any, mode: str, data: st.DataObject
) -> None:
    """A status update through the handlers answers (and would store) the same with the status-only
    defaulting and managed-fields comparison, the pruning walk skipping the members equal to
    the live ones and the store copying only the request's metadata and status, as with the whole
    object's: objects created from
    random manifests, then a dry-run status PUT of a random status with each, compared byte for
    byte (warnings, errors and managedFields too)."""
    from pykueue.apiserver import handlers as H

    call = _status_example(obj)
    if call is None:
        return
    name = obj["metadata"]["name"]
    code, created, _ = call("POST", obj)
    event(f"create: {code}")
    if code != 201:
        return
    created["status"] = status
    if data.draw(st.booleans()):
        created["spec" if "spec" in created else "zz"] = data.draw(values)  # ignored by a status update
    query = {"dryRun": ["All"], "fieldValidation": [mode]}
    fast = call("PUT", created, name=name, subresource="status", query=query)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(H, "STATUS_ONLY_DEFAULTING", False)
        mp.setattr(A, "STATUS_SCOPED_COMPARE", False)
        mp.setattr(H, "SKIP_UNCHANGED_MEMBERS", False)
        mp.setattr(store_ops, "COPY_STATUS_ONLY", False)
        general = call("PUT", created, name=name, subresource="status", query=query)
    event(f"status update: {fast[0]}")
    assert fast == general


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


bracket_strings = st.text(alphabet='{}[]"\\ab\n', max_size=6)
nested_json = st.recursive(
    st.one_of(st.none(), st.integers(), bracket_strings),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(bracket_strings, children, max_size=3)
    ),
    max_leaves=12,
)


@SETTINGS
@given(nested_json, st.integers(0, 8), st.booleans())
def test_nesting_bound_bounds_the_documents_depth(value: Any, wrap: int, pretty: bool) -> None:
    """The bracket counts of a JSON text bound its document's depth, strings full of brackets,
    quotes and escapes included."""
    from pykueue.apiserver import handlers as H

    for _ in range(wrap):
        value = [value] if wrap % 2 else {"k": value}
    body = json.dumps(value, indent=1 if pretty else None).encode()
    assert _depth(value) <= H._nesting_bound(body)


@SETTINGS
@given(st.lists(st.sampled_from([b"{", b"}", b"[", b"]", b"{}", b"[]", b"a", b'"']), max_size=260).map(b"".join),
       st.integers(0, 110))  # fmt: skip
def test_shallow_text_is_the_bound_within_the_limit(text: bytes, opened: int) -> None:
    """``_shallow_text`` answers what comparing ``_nesting_bound`` with the limit answers, around
    the limit of openings too (where it starts counting the empty pairs)."""
    from pykueue.apiserver import handlers as H

    for body in (text, b"[" * opened + text, b"{}" * opened + text, b"[" * opened + b"[]" * (opened // 2)):
        assert H._shallow_text(body) == (H._nesting_bound(body) <= H.MAX_NESTING_DEPTH)


def test_deep_bodies_are_refused_either_way() -> None:
    """A body nested one level too deep is refused, empty brackets in its strings and its
    containers notwithstanding."""
    from pykueue.apiserver import handlers as H
    from pykueue.kube.status import StatusError

    ok = ("[" * H.MAX_NESTING_DEPTH + "]" * H.MAX_NESTING_DEPTH).encode()
    deep = b'{"a":' + ok + b',"b":"]]]"}'
    assert H.decode_document(ok, H.JSON) is not None
    with pytest.raises(StatusError, match="exceeded max depth"):
        H.decode_document(deep, H.JSON)
    hidden = b'{"a":' + ok.replace(b"]", b"{}]", 1) + b',"b":"' + b"{}" * 50 + b'"}'
    with pytest.raises(StatusError, match="exceeded max depth"):
        H.decode_document(hidden, H.JSON)


@SETTINGS
@given(manifests(), statuses(), statuses())
def test_status_scoped_compare_is_the_filtered_whole(obj: dict[str, Any], old_status: Any, new_status: Any) -> None:
    """A status update's comparison of the status alone finds the in-scope paths of the whole
    objects' comparison, and only those (objects that do not fit their schema are left out, as
    above)."""
    node = _node(obj)
    old = copy.deepcopy(obj)
    old["status"] = old_status
    new = copy.deepcopy(obj)
    new["status"] = new_status
    if isinstance(new.get("metadata"), dict):
        new["metadata"]["labels"] = {"changed": "yes"}  # out of scope
    whole = _outcome(lambda: T.compare(old, new, node))
    if whole[0] == "raised":
        return
    scope = A._scope("status", ())
    unfiltered = _outcome(lambda: T.compare(A._status_only(old), A._status_only(new), node))
    assert unfiltered[0] == "ok"
    scoped = _outcome(lambda: unfiltered[1].filtered(scope))
    # every path it finds is in scope already (update_managed_fields does not filter it)
    assert (scoped[1].added, scoped[1].modified, scoped[1].removed) == (
        unfiltered[1].added, unfiltered[1].modified, unfiltered[1].removed)  # fmt: skip
    expected = whole[1].filtered(scope)
    assert (scoped[1].added, scoped[1].modified, scoped[1].removed) == (
        expected.added, expected.modified, expected.removed)  # fmt: skip


def test_status_update_does_not_prune_the_unchanged_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Workload status PUT whose spec is the live one is not walked there; a changed spec is
    (its unknown fields are reported, as before), and a missing object is still a 404 after them."""
    from pykueue.apiserver import handlers as H
    from pykueue.kube.status import StatusError

    with _workload_server() as (req, created):
        walked: list[str] = []
        real = H._walk_value

        def spy(value: Any, node: Any, path: str, result: Any) -> None:
            walked.append(path)
            real(value, node, path, result)

        monkeypatch.setattr(H, "_walk_value", spy)
        created["status"] = {"conditions": []}
        assert req("PUT", created, name="w", subresource="status").status == 200
        assert walked and not [p for p in walked if p.startswith("spec")], walked
        created["spec"]["zz"] = 1
        resp = req("PUT", created, name="w", subresource="status")
        assert resp.status == 200 and resp.warnings == ['unknown field "spec.zz"']
        created["metadata"]["name"] = "x"
        with pytest.raises(StatusError) as missing:
            req("PUT", created, name="x", subresource="status", query={"fieldValidation": ["Strict"]})
        assert missing.value.code == 400 and 'unknown field "spec.zz"' in missing.value.message
        with pytest.raises(StatusError) as missing:
            req("PUT", created, name="x", subresource="status")
        assert missing.value.code == 404


@given(st.sampled_from(["type", "name", "a<b"]), st.text(max_size=4))
def test_single_key_element_is_the_key_element(name: str, value: str) -> None:
    """The memoised element of a one-string-key item is the general one (HTML escapes included)."""
    assert F.single_key_element(name, value) == F.key_element({name: value})



@SETTINGS
@given(manifests(), statuses())
def test_walk_type_shortcut_is_the_full_check(obj: dict[str, Any], status: Any) -> None:
    """The pruning walk finds and drops the same with the types decided by the node's accepted
    types as with the full check of every value (random manifests and statuses: wrong types,
    integral floats, booleans for integers, nulls, unknown fields)."""
    obj["status"] = status
    _assert_walk_is_the_full_check(obj)


def _assert_walk_is_the_full_check(obj: dict[str, Any]) -> None:
    """The pruning walk of ``obj`` (a copy) finds and leaves the same with its type shortcuts as
    with the full check of every value."""
    from pykueue.apiserver import handlers as H

    info = _info(obj)
    schema = info.openapi_schema(info.storage_version)
    resolver = _BACKEND.schema_resolver(info, info.storage_version)
    fast_obj, slow_obj = copy.deepcopy(obj), copy.deepcopy(obj)
    fast = H.walk_schema(fast_obj, schema, resolver)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(H, "WALK_FAST_TYPES", False)
        slow = H.walk_schema(slow_obj, schema, resolver)
    assert fast == slow
    assert repr(fast_obj) == repr(slow_obj)  # repr: NaN and the order of members too


def test_accepted_types_pass_the_full_type_check() -> None:
    """Every value whose type a node accepts outright passes that node's full type check: over
    every node of every kind's schema and values of every JSON type (a bool is no integer, an
    integral float is an integer only after the full check)."""
    from pykueue.apiserver import handlers as H

    samples = [True, False, 0, 1, -3, 1.0, 1.5, "", "x", "12", None, {}, {"a": 1}, [], [1]]
    seen: set[int] = set()
    checked = 0
    for info in R.REGISTRY.all():
        version = info.storage_version
        stack = [H._compiled(info.openapi_schema(version), _BACKEND.schema_resolver(info, version))]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            for value in samples:
                if type(value) in node.ok_types:
                    checked += 1
                    assert H._type_ok(value, node) is None, (node.expected, node.int_or_string, value)
            stack.extend(node.prop(name) for name in node.props)
            if node.additional is not None:
                stack.append(node.additional_node())
            if node.items is not None:
                stack.append(node.items_node())
    assert checked > 1000


@SETTINGS

def _assert_unchanged_items_skip_as_walked(old: dict[str, Any], new: dict[str, Any], node: Any) -> None:
    """``compare(old, new)`` gives the same sets, or the same error, with and without passing over
    list items that are the same JSON on both sides (``SKIP_UNCHANGED_ITEMS``)."""

    def outcome() -> tuple[str, Any]:
        result = _outcome(lambda: T.compare(old, new, node))
        return ("ok", (result[1].added, result[1].modified, result[1].removed)) if result[0] == "ok" else result

    fast = outcome()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(T, "SKIP_UNCHANGED_ITEMS", False)
        slow = outcome()
    assert fast == slow

@given(manifests(), statuses(), statuses(), st.booleans())
def test_unchanged_items_are_what_the_walk_finds(
    obj: dict[str, Any], old_status: Any, new_status: Any, share: bool
) -> None:
    """List items equal on both sides are passed over with the walk's result (and its errors):
    random statuses, the new one sharing the old one's items (as copies) half the time."""
    old = copy.deepcopy(obj)
    old["status"] = old_status
    new = copy.deepcopy(obj)
    new["status"] = copy.deepcopy(old_status) if share else new_status
    if share and isinstance(new["status"], dict) and isinstance(new_status, dict):
        new["status"].update(copy.deepcopy(new_status))
    _assert_unchanged_items_skip_as_walked(old, new, _node(obj))


@pytest.mark.parametrize(
    ("old_item", "new_item"),
    [
        ({"name": "a", "state": "Ready", "podSetUpdates": [{"labels": {}}]},) * 2,  # the walk raises
        ({"name": "a", "state": "Ready", "message": "1"}, {"name": "a", "state": "Ready", "message": 1}),
        ({"name": "a", "state": "Ready", "retryCount": 1}, {"name": "a", "state": "Ready", "retryCount": True}),
        ({"name": "a", "state": "Ready", "message": None}, {"name": "a", "state": "Ready", "message": float("nan")}),
        ({"name": "a", "state": "Ready", "message": "m"},) * 2,
    ],
)  # fmt: skip
def test_unchanged_items_only_where_the_walk_finds_nothing(old_item: Any, new_item: Any) -> None:
    """Items the same as JSON but holding a malformed list, items equal in Python but not in JSON,
    and null against NaN are walked, with the walk's result or error."""
    obj = copy.deepcopy(BASES[0])
    old, new = copy.deepcopy(obj), copy.deepcopy(obj)
    old["status"] = {"admissionChecks": [old_item]}
    new["status"] = {"admissionChecks": [copy.deepcopy(new_item)]}
    _assert_unchanged_items_skip_as_walked(old, new, _node(obj))


_CONDITION_TYPES = ["Admitted", "kueue.x-k8s.io/Ready", "", "a" * 64, "a" * 317, "bad type", "-x", "x/", "/x",
                    "a/b/c", "Ex.io/" + "a" * 63, "UPPER.io/x", "x\n"]  # fmt: skip
_CONDITION_REASONS = ["QuotaReserved", "", "a", "A,B", "A:b_", "bad reason", "a,", "1x", "x" * 1025, "x\n"]


@st.composite
def conditions(draw: st.DrawFn) -> Any:
    """A valid condition with up to two of its fields set to a value some rule may refuse."""
    from datetime import UTC, datetime

    from pykueue.api.meta import EPOCH, Condition

    fields: dict[str, Any] = {"type": "Admitted", "status": "True", "observed_generation": 1,
                              "last_transition_time": datetime(2026, 11, 26, 10, tzinfo=UTC),
                              "reason": "QuotaReserved", "message": "m"}  # fmt: skip
    odd: dict[str, Any] = {
        "type": st.sampled_from(_CONDITION_TYPES) | st.text(max_size=6),
        "status": st.sampled_from(["False", "Unknown", "", "true"]),
        "observed_generation": st.sampled_from([0, -1]),
        "last_transition_time": st.just(EPOCH),
        "reason": st.sampled_from(_CONDITION_REASONS) | st.text(max_size=6),
        "message": st.sampled_from(["", "x" * 32768, "x" * 32769]),
    }
    for name in draw(st.lists(st.sampled_from(sorted(odd)), max_size=2)):
        fields[name] = draw(odd[name])
    return Condition(**fields)


@SETTINGS
@given(st.lists(conditions(), max_size=4))
def test_clean_conditions_skip_as_checked(conds: list[Any]) -> None:
    """A condition the shortcut passes over is one the webhook's and the CRD's rules find nothing
    about; both validations answer the same with and without it (duplicates, bad values too)."""
    from pykueue.api import validation as V

    for cond in conds:
        if V._clean_condition(cond):
            assert V._validate_condition(cond, "status.conditions[0]") == []
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(V, "SKIP_CLEAN_CONDITIONS", False)
                assert V._schema_conditions([cond], "status.conditions") == []
    fast = (V.validate_conditions(conds, "status.conditions"), V._schema_conditions(conds, "status.conditions"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(V, "SKIP_CLEAN_CONDITIONS", False)
        general = (V.validate_conditions(conds, "status.conditions"), V._schema_conditions(conds, "status.conditions"))
    event(f"clean: {sum(map(V._clean_condition, conds))} of {len(conds)}")
    assert [str(e) for e in fast[0]] == [str(e) for e in general[0]]
    assert [str(e) for e in fast[1]] == [str(e) for e in general[1]]
    assert fast == general


_EVENT_MEMBERS = ["metadata", "involvedObject", "regarding", "reason", "message", "note", "type", "eventTime",
                  "reportingComponent", "reportingController", "reportingInstance", "action", "source",
                  "deprecatedSource", "count", "firstTimestamp", "lastTimestamp", "series", "zz"]  # fmt: skip
_EVENT_VALUES = st.one_of(
    values,
    st.sampled_from(["Normal", "Warning", "R", "x" * 129, "2026-11-26T10:00:00.000000Z", "kueue-admission", "a/b"]),
    st.fixed_dictionaries({}, optional={"name": st.sampled_from(["e", "E_", ""]),
                                        "namespace": st.sampled_from(["default", "ns", "", "kube-system"]),
                                        "component": st.sampled_from(["c", ""])}),
)  # fmt: skip


@SETTINGS
@given(st.sampled_from(["v1", "events.k8s.io/v1"]), st.dictionaries(st.sampled_from(_EVENT_MEMBERS), _EVENT_VALUES))
def test_event_rules_read_a_core_event_as_is(api_version: str, members: dict[str, Any]) -> None:
    """Both APIs' Event rules find the same on a core/v1 Event as on its :func:`to_core` copy, and
    ``_renamed`` without renames keeps the order and members of the general comprehension."""
    from pykueue.apiserver.builtin import events as EV

    event = {"apiVersion": api_version, **members}
    for names in ({}, EV._EVENTS_TO_CORE):
        renamed = {names.get(name, name): value for name, value in event.items()}
        renamed["apiVersion"], renamed["kind"] = "v1", "Event"
        head = {name: renamed[name] for name in EV._CORE_ORDER if name in renamed}
        general = head | {name: value for name, value in renamed.items() if name not in head}
        assert list(EV._renamed(event, names, EV._CORE_ORDER, "v1").items()) == list(general.items())
    for validate in (EV.validate_core_event, EV.validate_events_v1_event):
        fast = _outcome(validate, event, None)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(EV, "_core_for_rules", EV.to_core)
            assert _outcome(validate, event, None) == fast


@SETTINGS
@given(st.lists(st.datetimes(min_value=__import__("datetime").datetime(1000, 1, 2), timezones=st.none() | st.timezones()),
                min_size=1, max_size=4))  # fmt: skip
def test_time_format_memo_is_strftime(times: list[Any]) -> None:
    """The memoised time formatting gives what ``strftime`` of the normalised time gives, for naive
    and zoned times, fractions of a second, equal instants in other zones, repeated times (from the
    year 1000: before it strftime drops the 4-digit year RFC 3339 wants, tests/api/test_meta_time.py)."""
    from datetime import UTC

    from pykueue.api.meta import format_time, to_time

    for value in [*times, *(t.astimezone(UTC) for t in times if t.tzinfo is not None), *times]:
        assert format_time(value) == to_time(value).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- server-side apply of a status (upstream's scheduler-perf runner's Finished condition) ----------

_PLAIN_CHARS = st.sampled_from(["a", "Z", "0", " ", "  ", ":", "#", "'", '"', "\\", "/", "\t", "\n", "\r", "é",
                                "\x85", "\u2028", "{", "]", ",", "&", "*", "!", "- ", "? ", "%", "@", "`"])  # fmt: skip
_plain_texts = st.one_of(
    st.lists(_PLAIN_CHARS, max_size=5).map("".join),
    st.sampled_from(["true", "no", "null", "~", "1e3", "0x1F", "1.5", "-0", "<<", "=", "2026-11-26", "1_000"]),
    st.sampled_from([999, 1000, 1001, 1100]).map(lambda n: "k" * n),
)
_plain_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), _plain_texts,
)  # fmt: skip
_plain_docs = st.dictionaries(
    _plain_texts,
    st.recursive(_plain_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(_plain_texts, c, max_size=3),
                 max_leaves=8),
    max_size=4,
)  # fmt: skip


@SETTINGS
@given(_plain_docs, st.sampled_from([(",", ":"), (", ", ": "), (",", " " * 15 + ":"), (",", " " * 16 + ":")]),
       st.sampled_from([None, 1]), st.booleans())  # fmt: skip
def test_apply_bodies_read_as_json_are_the_yaml_documents(
    doc: dict[str, Any], separators: tuple[str, str], indent: int | None, ascii_only: bool
) -> None:
    """An apply body the handlers read as JSON (``decode_apply``) decodes to what the YAML decoder
    gives it, values and types alike; other bodies (escapes, floats, long keys, line breaks,
    non-ASCII, ...) are left to the YAML decoder, errors included."""
    from pykueue.apiserver import handlers as H

    body = json.dumps(doc, separators=separators, indent=indent, ensure_ascii=ascii_only).encode()
    plain = H._plain_json(body)
    event(f"plain: {plain is not None}")
    reference = _outcome(H.decode_document, body, H.APPLY_PATCH)
    if plain is not None:
        assert reference[0] == "ok"
        assert json.dumps(plain) == json.dumps(reference[1])
        assert [type(v) for v in _paths_values(plain)] == [type(v) for v in _paths_values(reference[1])]
    fast = _outcome(H.decode_apply, body, H.APPLY_PATCH)
    assert (fast[0], json.dumps(fast[1])) == (reference[0], json.dumps(reference[1]))


def _paths_values(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for member in value.values():
            yield from _paths_values(member)
    elif isinstance(value, list):
        for item in value:
            yield from _paths_values(item)


_BODY_BYTES = st.sampled_from([b"a", b" ", b" " * 8, b" " * 15, b" " * 16, b"\\", b"\t", b"\n", b"\r", b"\x00",
                                b"\x1f", b"\x7e", b"\x7f", b"\x80", b"\xc3\xa9", b"\xff", b"{", b"}", b'"'])  # fmt: skip


@SETTINGS
@given(st.lists(_BODY_BYTES, max_size=40).map(b"".join) | st.binary(max_size=64))
def test_not_plain_finds_what_the_regular_expression_found(body: bytes) -> None:
    """``_not_plain``'s three scans answer as the expression they replace did: a byte outside
    printable ASCII, a backslash, or 16 spaces in a row, anywhere in the body."""
    import re

    from pykueue.apiserver import handlers as H

    assert H._not_plain(body) == (re.search(rb"[^\x20-\x7e]|\\| {16}", body) is not None)


RUNNER_FINISHED_APPLY = (
    b'{"kind":"Workload","apiVersion":"kueue.x-k8s.io/v1beta2","metadata":{"name":"small-0-0-0",'
    b'"namespace":"cq-0-0-cohort-0","uid":"36f85cf2-f340-4a35-b1fc-88095f066e8e","resourceVersion":"165",'
    b'"generation":1,"labels":{"kueue.x-k8s.io/performance-scheduler-class":"small",'
    b'"kueue.x-k8s.io/performance-scheduler-running-ms":"200"}},"spec":{"podSets":null},"status":{"conditions":'
    b'[{"type":"Finished","status":"True","observedGeneration":1,"lastTransitionTime":"2026-11-26T19:28:34Z",'
    b'"reason":"ByTest","message":"By test runner"}]}}'
)
"""A Finished apply as upstream's scheduler-perf runner sent it to ``pykueue serve``."""


def test_the_runners_apply_body_is_read_as_json() -> None:
    from pykueue.apiserver import handlers as H

    assert H._plain_json(RUNNER_FINISHED_APPLY) == H.decode_document(RUNNER_FINISHED_APPLY, H.APPLY_PATCH)
    assert H._plain_json(RUNNER_FINISHED_APPLY) is not None
    assert H._plain_json(RUNNER_FINISHED_APPLY.replace(b'"ByTest"', b'"By\\u0054est"')) is None  # an escape
    long_key = b'{"' + b"k" * 1100 + b'":1}'  # YAML's keys end within 1024 characters
    assert H._plain_json(long_key) is None
    with pytest.raises(Exception, match="error converting YAML to JSON"):
        H.decode_apply(long_key, H.APPLY_PATCH)


_APPLY_MANAGERS = ["kueue-job-controller-Finished", "kubectl", "other"]


@st.composite
def _status_configs(draw: st.DrawFn, obj: dict[str, Any]) -> dict[str, Any]:
    """An apply configuration of ``obj``'s kind: identity, maybe other members (a spec, labels,
    random values), maybe a status."""
    config: dict[str, Any] = {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                              "metadata": {"name": (obj.get("metadata") or {}).get("name", "x")}}  # fmt: skip
    if draw(st.booleans()):
        config["metadata"]["labels"] = {"a": draw(st.sampled_from(["b", "c"]))}
    if draw(st.booleans()):
        config["spec"] = draw(st.sampled_from([{"podSets": None}, None, {}])) if draw(st.booleans()) else draw(values)
    if draw(st.integers(0, 4)):
        config["status"] = draw(statuses())
    keys = list(config)
    return {k: config[k] for k in draw(st.permutations(keys))}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(manifests(), statuses(), st.data())
def test_status_scoped_apply_is_the_whole_object_apply(obj: dict[str, Any], status: Any, data: st.DataObject) -> None:
    """A status apply merging, pruning and comparing the status alone gives what the whole-object
    apply gives (object, managedFields, conflicts and errors), the live object untouched: after
    earlier applies of the same and other managers and a status update, with and without force
    (live objects that do not fit their schema outside the status are left out: none is stored)."""
    from datetime import UTC, datetime

    if not isinstance(obj.get("metadata"), dict):  # stored objects have metadata
        return
    node = _node(obj)
    now = datetime(2026, 11, 26, 10, tzinfo=UTC)
    live: Any = copy.deepcopy(obj)
    live["status"] = status
    A.update_managed_fields(None, live, "creator", now=now, schema=node)
    for _ in range(data.draw(st.integers(0, 3))):  # earlier writes (the general path's results)
        config = data.draw(_status_configs(obj))
        manager = data.draw(st.sampled_from(_APPLY_MANAGERS))
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(A, "STATUS_SCOPED_APPLY", False)
            step = _outcome(lambda live=live, config=config, manager=manager: A.server_side_apply(
                live, config, manager, force=True, schema=node, subresource="status", now=now))  # fmt: skip
        if step[0] == "ok":
            live = step[1]
    if data.draw(st.booleans()):  # another manager's status update
        new = copy.deepcopy(live)
        new["status"] = data.draw(statuses())
        A.update_managed_fields(live, new, "updater", subresource="status", schema=node, now=now)
        live = new
    outside = {k: v for k, v in live.items() if k not in ("status", "metadata")}
    if _outcome(T.to_field_set, outside, node)[0] == "raised":
        return  # a stored object fits its schema (outside the status, which either walk reads)
    config = data.draw(_status_configs(obj))
    manager = data.draw(st.sampled_from(_APPLY_MANAGERS))
    force = data.draw(st.booleans())
    before = json.dumps(live)

    def apply() -> Any:
        return json.dumps(A.server_side_apply(live, config, manager, force=force, schema=node,
                                              subresource="status", now=now))  # fmt: skip

    fast = _outcome(apply)
    assert json.dumps(live) == before
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(A, "STATUS_SCOPED_APPLY", False)
        general = _outcome(apply)
    event(f"apply: {fast[0]}")
    assert fast == general
    if fast[0] == "ok":  # the new status is the result's own: no container of the live object or the configuration
        status = A.server_side_apply(live, config, manager, force=force, schema=node, subresource="status",
                                     now=now).get("status")  # fmt: skip
        assert not _containers(status) & (_containers(live) | _containers(config))


def _containers(value: Any) -> set[int]:
    """The ids of the dicts and lists in ``value`` (``value`` included)."""
    found: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.add(id(item))
            stack.extend(item.values())
        elif isinstance(item, list):
            found.add(id(item))
            stack.extend(item)
    return found


def test_check_merge_raises_what_merge_raises() -> None:
    """The walk without copies raises the merge's first error (a live map-list item that is not a
    map, under a configuration that merges into that list)."""
    node = _node(BASES[0])
    live = copy.deepcopy(BASES[0])
    live["spec"]["podSets"].insert(1, "not a pod set")
    config = {"spec": {"podSets": None}}
    expected = _outcome(T.merge, live, config, node)
    assert expected[0] == "raised"
    assert _outcome(T.check_merge, live, config, node) == expected
    assert _outcome(T.check_merge, BASES[0], config, node) == ("ok", None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(manifests(), statuses(), st.data())
def test_status_apply_through_the_handlers_is_the_general_path(
    obj: dict[str, Any], status: Any, data: st.DataObject
) -> None:
    """A status apply through the handlers (JSON read directly, status-scoped apply) answers what
    the YAML decoder and the whole-object apply answer, byte for byte (dry run)."""
    from pykueue.apiserver import handlers as H

    call = _status_example(obj)
    if call is None:
        return
    name = obj["metadata"]["name"]
    code, created, _ = call("POST", obj)
    if code != 201:
        return
    created["status"] = status
    call("PUT", created, name=name, subresource="status")  # a status of the controller's, when valid
    config = data.draw(_status_configs(obj))
    config["metadata"] = {**config["metadata"], "name": name}
    query = {"dryRun": ["All"], "fieldManager": [data.draw(st.sampled_from(_APPLY_MANAGERS))],
             "force": [data.draw(st.sampled_from(["true", "false"]))]}  # fmt: skip
    fast = call("PATCH", config, H.APPLY_PATCH, name=name, subresource="status", query=query)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(A, "STATUS_SCOPED_APPLY", False)
        mp.setattr(H, "decode_apply", H.decode_document)
        general = call("PATCH", config, H.APPLY_PATCH, name=name, subresource="status", query=query)
    event(f"apply: {fast[0]}")
    assert fast == general


def test_the_runners_finished_apply_takes_the_status_scoped_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream's runner's Finished apply of an admitted Workload is read as JSON and applied to the
    status alone (neither the YAML decoder nor the whole-object merge runs), and stores the
    condition with the runner's manager owning it."""
    from pykueue.apiserver import handlers as H
    from pykueue.apiserver.handlers import APIRequest

    app = _status_app()
    name = f"s{len(_STATUS_APP)}"
    _STATUS_APP.append(None)
    wl = copy.deepcopy(BASES[0])
    wl["metadata"] = {"name": name, "labels": {"kueue.x-k8s.io/performance-scheduler-class": "small"}}

    def call(method: str, body: bytes, **kw: Any) -> dict[str, Any]:
        req = APIRequest(method, G, "v1beta2", "workloads", namespace="default", body=body, **kw)
        resp = app.handlers.handle(req)
        assert resp.status in (200, 201), resp.body
        doc: dict[str, Any] = json.loads(resp.body)
        return doc

    created = call("POST", json.dumps(wl).encode())
    body = json.loads(RUNNER_FINISHED_APPLY)
    body["metadata"].update(name=name, namespace="default", uid=created["metadata"]["uid"],
                            resourceVersion=created["metadata"]["resourceVersion"])  # fmt: skip
    monkeypatch.setattr(A, "merge", None)  # the whole-object merge would fail
    monkeypatch.setattr(H, "decode_document", None)  # and so would the YAML decoder
    applied = call("PATCH", json.dumps(body, separators=(",", ":")).encode(), name=name, subresource="status",
                   content_type=H.APPLY_PATCH,
                   query={"fieldManager": ["kueue-job-controller-Finished"], "force": ["true"]})  # fmt: skip
    assert [c["type"] for c in applied["status"]["conditions"]] == ["Finished"]
    entry = next(e for e in applied["metadata"]["managedFields"] if e["operation"] == "Apply")
    assert (entry["manager"], entry["subresource"]) == ("kueue-job-controller-Finished", "status")
    assert entry["fieldsV1"] == {"f:status": {"f:conditions": {'k:{"type":"Finished"}': {
        ".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:observedGeneration": {}, "f:reason": {},
        "f:status": {}, "f:type": {}}}}}  # fmt: skip


_CORE_EVENT = {
    "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e.1", "namespace": "default"},
    "involvedObject": {"kind": "Workload", "namespace": "default", "name": "w"},
    "reason": "QuotaReserved", "message": "m", "type": "Normal", "source": {"component": "c"},
    "firstTimestamp": "2026-11-26T10:00:00Z", "lastTimestamp": "2026-11-26T10:00:00Z", "count": 1,
    "reportingComponent": "c", "eventTime": None, "series": None, "zz": 1,
}  # fmt: skip


@SETTINGS
@given(st.dictionaries(st.sampled_from(_EVENT_MEMBERS), _EVENT_VALUES, max_size=6))
def test_walk_top_level_scalars_are_the_full_check(changes: dict[str, Any]) -> None:
    """A core/v1 Event's top-level scalars skip the walk when their node accepts their type
    (``walk_schema``'s shortcut): the walk finds and drops the same as with the full check of every
    value (random values of every JSON type at every member of either Event API: a string or
    float count, a number for a string, objects and lists for scalars, nulls, unknown members)."""
    _assert_walk_is_the_full_check(_CORE_EVENT | changes)
