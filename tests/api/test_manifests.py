"""Manifest loading/dumping and parse_object (convert + default + validate)."""

from __future__ import annotations

import json

import pytest

from pykueue.api import kueue as k
from pykueue.api.conversion import to_external
from pykueue.api.manifests import (
    ManifestError,
    dump_json,
    dump_objects,
    dump_yaml,
    load_manifests,
    parse_manifests,
    parse_object,
)
from pykueue.api.validation import ValidationFailed

FLAVOR = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: {name}\n"


# --- loading -----------------------------------------------------------------------------------------------

LOAD_CASES = [
    ("single document", FLAVOR.format(name="a"), ["a"]),
    (
        "multi document with empty ones",
        "---\n" + FLAVOR.format(name="a") + "---\n---\n" + FLAVOR.format(name="b"),
        ["a", "b"],
    ),
    (
        "kind List flattened",
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: a}}\n"
        "- {apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: b}}\n",
        ["a", "b"],
    ),
    (
        "typed list flattened",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavorList\nitems:\n- {apiVersion: kueue.x-k8s.io/v1beta2, "
        "kind: ResourceFlavor, metadata: {name: a}}\n",
        ["a"],
    ),
    (
        "JSON input",
        json.dumps(
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "j"}}
        ),
        ["j"],
    ),
    ("empty input", "", []),
]


@pytest.mark.parametrize(("text", "names"), [c[1:] for c in LOAD_CASES], ids=[c[0] for c in LOAD_CASES])
def test_load_manifests(text: str, names: list[str]) -> None:
    assert [obj["metadata"]["name"] for obj in load_manifests(text)] == names


def test_timestamps_and_dates_stay_strings() -> None:
    [obj] = load_manifests(
        "kind: X\nmetadata: {creationTimestamp: 2024-01-02T03:04:05Z, labels: {day: 2024-01-02}}\n"
    )
    assert obj["metadata"] == {"creationTimestamp": "2024-01-02T03:04:05Z", "labels": {"day": "2024-01-02"}}


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("!!timestamp 2001-12-14 21:59:43", "2001-12-14T21:59:43Z"),
        ("!!timestamp 2001-12-14", "2001-12-14T00:00:00Z"),
        ("!!timestamp 2001-12-14t21:59:43.10-05:00", "2001-12-14T21:59:43.1-05:00"),
        ("!!timestamp 2001-12-15T02:59:43.000001+00:00", "2001-12-15T02:59:43.000001Z"),
    ],
)
def test_an_explicit_timestamp_becomes_the_string_go_marshals(value: str, want: str) -> None:
    """sigs.k8s.io/yaml decodes an explicit ``!!timestamp`` to a Go ``time.Time`` and marshals it
    as RFC 3339 JSON; a manifest is a JSON tree (validation's spec memo relies on it: a datetime
    and its ISO string encoded alike there, and one instant at two offsets too)."""
    [obj] = load_manifests(f"kind: X\nmetadata: {{labels: {{at: {value}}}}}\n")
    assert obj["metadata"]["labels"] == {"at": want}


LOAD_ERRORS = [
    ("yaml syntax", "a: [1, 2\n", "queues.yaml: error parsing YAML: "),
    (
        "scalar document",
        FLAVOR.format(name="a") + "---\njust text\n",
        "queues.yaml: document 2: expected an object, got string",
    ),
    ("list document", "- a\n- b\n", "queues.yaml: document 1: expected an object, got array"),
    (
        "items not a list",
        "kind: List\nitems: {a: 1}\n",
        "queues.yaml: document 1: 'items' must be a list, got object",
    ),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in LOAD_ERRORS], ids=[c[0] for c in LOAD_ERRORS])
def test_load_errors_name_source_and_document(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as info:
        load_manifests(text, source="queues.yaml")
    assert str(info.value).startswith(message)


def test_yaml_error_names_line_and_column() -> None:
    with pytest.raises(ManifestError, match=r"\(line 2, column 1\)$"):
        load_manifests("a: 'unterminated\n", source="x.yaml")


# --- dumping -----------------------------------------------------------------------------------------------


def test_dump_yaml_block_style_order_and_separators() -> None:
    objs = [{"apiVersion": "v1", "kind": "A", "spec": {"z": 1, "a": [1, 2]}}, {"kind": "B"}]
    assert dump_yaml(objs) == "apiVersion: v1\nkind: A\nspec:\n  z: 1\n  a:\n  - 1\n  - 2\n---\nkind: B\n"


def test_dump_yaml_round_trips_and_uses_literal_blocks() -> None:
    objs = [{"kind": "A", "message": "line one\nline two\n", "flag": "true", "empty": []}]
    text = dump_yaml(objs)
    assert "message: |\n  line one\n  line two\n" in text
    assert load_manifests(text) == objs


def test_dump_json_single_and_list() -> None:
    assert json.loads(dump_json([{"kind": "A"}])) == {"kind": "A"}
    assert json.loads(dump_json([{"kind": "A"}, {"kind": "B"}])) == {
        "apiVersion": "v1",
        "items": [{"kind": "A"}, {"kind": "B"}],
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }
    assert dump_json([{"kind": "A"}]).startswith('{\n    "kind"')


def test_dump_objects_in_requested_version() -> None:
    [(cq, _)] = parse_manifests(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: c}\nspec: {cohortName: t}\n"
    )
    text = dump_objects([cq], "kueue.x-k8s.io/v1beta1")
    assert text.startswith(
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: c\nspec:\n  cohort: t\n"
    )


# --- parse_object --------------------------------------------------------------------------------------------


def test_parse_object_converts_defaults_and_returns_version() -> None:
    [data] = load_manifests(
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: c}\nspec: {cohort: team}\n"
    )
    typed, version = parse_object(data)
    assert version == "kueue.x-k8s.io/v1beta1"
    assert isinstance(typed, k.ClusterQueue)
    assert (typed.spec.cohort_name, typed.spec.queueing_strategy, typed.spec.stop_policy) == (
        "team",
        "BestEffortFIFO",
        "None",
    )
    assert to_external(typed, version)["spec"]["cohort"] == "team"


PARSE_ERRORS = [
    (
        "wrong type names the field",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: ns}\nspec: {clusterQueue: [a]}\n",
        'LocalQueue "ns/q": spec.clusterQueue: Invalid value: "array": spec.clusterQueue in body must be of type string: "array"',
        "spec.clusterQueue",
    ),
    (
        "missing required field",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: c}\nspec:\n  resourceGroups:\n"
        "  - coveredResources: [cpu]\n    flavors: [{name: f}]\n",
        'ClusterQueue "c": spec.resourceGroups[0].flavors[0].resources: Required value',
        "spec.resourceGroups[0].flavors[0].resources",
    ),
    (
        "unknown kind",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Queue\nmetadata: {name: q}\n",
        'no matches for kind "Queue" in version "kueue.x-k8s.io/v1beta2" (Queue "q")',
        "",
    ),
]


@pytest.mark.parametrize(
    ("text", "message", "field"), [c[1:] for c in PARSE_ERRORS], ids=[c[0] for c in PARSE_ERRORS]
)
def test_parse_object_structure_errors(text: str, message: str, field: str) -> None:
    [data] = load_manifests(text)
    with pytest.raises(ManifestError) as info:
        parse_object(data)
    assert str(info.value) == message
    assert info.value.field == field


def test_parse_object_strict_rejects_unknown_fields() -> None:
    [data] = load_manifests(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: c, selfLink: x}\n"
        "spec: {cohortName: t, colour: red, preemption: {mode: x}}\n"
    )
    parse_object(data)
    with pytest.raises(ManifestError) as info:
        parse_object(data, strict=True)
    assert str(info.value) == (
        'ClusterQueue "c": strict decoding error: unknown field "spec.colour", unknown field "spec.preemption.mode"'
    )


def test_parse_object_raises_validation_failed_with_v1beta1_field_names() -> None:
    [data] = load_manifests(
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: c}\nspec: {cohort: Bad}\n"
    )
    with pytest.raises(ValidationFailed) as info:
        parse_object(data)
    assert str(info.value).startswith(
        'ClusterQueue.kueue.x-k8s.io "c" is invalid: spec.cohort: Invalid value: "Bad": spec.cohortName in body'
    )


def test_parse_manifests_names_the_document() -> None:
    text = (
        FLAVOR.format(name="a")
        + "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: w, namespace: n}\n"
        "spec: {podSets: [{count: x}]}\n"
    )
    with pytest.raises(ManifestError) as info:
        parse_manifests(text, source="jobs.yaml")
    assert str(info.value).startswith(
        'jobs.yaml: document 2: Workload "n/w": spec.podSets[0].count: Invalid value: "string"'
    )
    assert info.value.index == 2 and info.value.source == "jobs.yaml"
