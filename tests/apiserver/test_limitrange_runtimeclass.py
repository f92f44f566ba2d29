"""core/v1 LimitRange and node.k8s.io/v1 RuntimeClass: defaults, validation, tables and protobuf.

The validation cases are upstream's: ``TestValidateLimitRange`` and ``TestValidateResourceNames``
(``pkg/apis/core/validation``), ``TestValidateRuntimeClass``, ``TestValidateRuntimeUpdate``,
``TestValidateOverhead`` and ``TestValidateScheduling`` (``pkg/apis/node/validation``), with
their names; upstream checks that every error's detail contains the expected text.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from pykueue.api.validation import FieldError
from pykueue.apiserver.app import APIServerApp
from pykueue.apiserver.builtin import limitrange, node
from pykueue.apiserver.builtin.resourcenames import go_quantity, validate_resource_name
from pykueue.apiserver.handlers import APIRequest
from pykueue.apiserver.protobuf import MAGIC, decode_object
from pykueue.apiserver.resources import REGISTRY, ResourceInfo
from pykueue.apiserver.tables import to_table
from pykueue.kube.status import StatusError
from pykueue.store import Store

NOW = datetime(2025, 1, 10, 12, 0, 0, tzinfo=UTC)


def _info(group: str, plural: str) -> ResourceInfo:
    info = REGISTRY.get(group, "v1", plural)
    assert info is not None
    return info


def _messages(errs: list[FieldError]) -> list[str]:
    return [str(e) for e in errs]


def _resources(cpu: str = "", memory: str = "") -> dict[str, str]:
    """``getResourceList``."""
    out = {}
    if cpu:
        out["cpu"] = cpu
    if memory:
        out["memory"] = memory
    return out


def _storage(storage: str) -> dict[str, str]:
    """``getStorageResourceList``."""
    return {"storage": storage} if storage else {}


def _item(limit_type: str, **sections: dict[str, str]) -> dict[str, Any]:
    return {"type": limit_type, **{k: v for k, v in sections.items() if v}}


def _limit_range(*items: dict[str, Any], name: str = "abc", namespace: str = "foo") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"limits": list(items)},
    }


# --- LimitRange: TestValidateLimitRange --------------------------------------------------------------

LIMIT_RANGE_SUCCESS = {
    "all-fields-valid": [
        _item(
            "Pod",
            max=_resources("100m", "10000Mi"),
            min=_resources("5m", "100Mi"),
            maxLimitRequestRatio=_resources("10"),
        ),
        _item(
            "Container",
            max=_resources("100m", "10000Mi"),
            min=_resources("5m", "100Mi"),
            default=_resources("50m", "500Mi"),
            defaultRequest=_resources("10m", "200Mi"),
            maxLimitRequestRatio=_resources("10"),
        ),
        _item("PersistentVolumeClaim", max=_storage("10Gi"), min=_storage("5Gi")),
    ],
    "pvc-min-only": [_item("PersistentVolumeClaim", min=_storage("5Gi"))],
    "pvc-max-only": [_item("PersistentVolumeClaim", max=_storage("10Gi"))],
    "all-fields-valid-big-numbers": [
        _item(
            "Container",
            max=_resources("100m", "10000T"),
            min=_resources("5m", "100Mi"),
            default=_resources("50m", "500Mi"),
            defaultRequest=_resources("10m", "200Mi"),
            maxLimitRequestRatio=_resources("10"),
        )
    ],
    "thirdparty-fields-all-valid-standard-container-resources": [
        _item(
            "thirdparty.com/foo",
            max=_resources("100m", "10000T"),
            min=_resources("5m", "100Mi"),
            default=_resources("50m", "500Mi"),
            defaultRequest=_resources("10m", "200Mi"),
            maxLimitRequestRatio=_resources("10"),
        )
    ],
    "thirdparty-fields-all-valid-storage-resources": [
        _item(
            "thirdparty.com/foo",
            max=_storage("10000T"),
            min=_storage("100Mi"),
            default=_storage("500Mi"),
            defaultRequest=_storage("200Mi"),
        )
    ],
}


@pytest.mark.parametrize("name", LIMIT_RANGE_SUCCESS)
def test_validate_limit_range_success(name: str) -> None:
    assert limitrange.validate_limit_range(_limit_range(*LIMIT_RANGE_SUCCESS[name], name=name), None) == []


DNS_SUBDOMAIN = "a lowercase RFC 1123 subdomain must consist of"
DNS_LABEL = "a lowercase RFC 1123 label must consist of"

LIMIT_RANGE_ERRORS: dict[str, tuple[dict[str, Any], str]] = {
    "zero-length-name": (_limit_range(name=""), "name or generateName is required"),
    "invalid-name": (_limit_range(name="^Invalid"), DNS_SUBDOMAIN),
    "invalid-namespace": (_limit_range(namespace="^Invalid"), DNS_LABEL),
    "duplicate-limit-type": (
        _limit_range(
            _item("Pod", max=_resources("100m", "10000m"), min=_resources("0m", "100m")),
            _item("Pod", min=_resources("0m", "100m")),
        ),
        "",
    ),
    "default-limit-type-pod": (
        _limit_range(
            _item(
                "Pod",
                max=_resources("100m", "10000m"),
                min=_resources("0m", "100m"),
                default=_resources("10m", "100m"),
            )
        ),
        "may not be specified when `type` is 'Pod'",
    ),
    "default-request-limit-type-pod": (
        _limit_range(
            _item(
                "Pod",
                max=_resources("100m", "10000m"),
                min=_resources("0m", "100m"),
                defaultRequest=_resources("10m", "100m"),
            )
        ),
        "may not be specified when `type` is 'Pod'",
    ),
    "min value 100m is greater than max value 10m": (
        _limit_range(_item("Pod", max=_resources("10m"), min=_resources("100m"))),
        "min value 100m is greater than max value 10m",
    ),
    "invalid spec default outside range": (
        _limit_range(
            _item("Container", max=_resources("1"), min=_resources("100m"), default=_resources("2000m"))
        ),
        "default value 2 is greater than max value 1",
    ),
    "invalid spec default request outside range": (
        _limit_range(
            _item(
                "Container", max=_resources("1"), min=_resources("100m"), defaultRequest=_resources("2000m")
            )
        ),
        "default request value 2 is greater than max value 1",
    ),
    "invalid spec default request more than default": (
        _limit_range(
            _item(
                "Container",
                max=_resources("2"),
                min=_resources("100m"),
                default=_resources("500m"),
                defaultRequest=_resources("800m"),
            )
        ),
        "default request value 800m is greater than default limit value 500m",
    ),
    "invalid spec maxLimitRequestRatio less than 1": (
        _limit_range(_item("Pod", maxLimitRequestRatio=_resources("800m"))),
        "ratio 800m is less than 1",
    ),
    "invalid spec maxLimitRequestRatio greater than max/min": (
        _limit_range(
            _item(
                "Container",
                max=_resources(memory="2Gi"),
                min=_resources(memory="512Mi"),
                maxLimitRequestRatio=_resources(memory="10"),
            )
        ),
        "ratio 10 is greater than max/min = 4.000000",
    ),
    "invalid non standard limit type": (
        _limit_range(
            _item(
                "foo",
                max=_storage("10000T"),
                min=_storage("100Mi"),
                default=_storage("500Mi"),
                defaultRequest=_storage("200Mi"),
            )
        ),
        "must be a standard limit type or fully qualified",
    ),
    "min and max values missing, one required": (
        _limit_range(_item("PersistentVolumeClaim")),
        "either minimum or maximum storage value is required, but neither was provided",
    ),
    "invalid min greater than max": (
        _limit_range(_item("PersistentVolumeClaim", min=_storage("10Gi"), max=_storage("1Gi"))),
        "min value 10Gi is greater than max value 1Gi",
    ),
}


@pytest.mark.parametrize("name", LIMIT_RANGE_ERRORS)
def test_validate_limit_range_errors(name: str) -> None:
    obj, detail = LIMIT_RANGE_ERRORS[name]
    errs = limitrange.validate_limit_range(obj, None)
    assert errs
    assert all(detail in e.detail for e in errs), _messages(errs)


def test_limit_range_messages_render_quantities_as_go_does() -> None:
    """``field.Invalid`` gets a ``resource.Quantity`` by value: Go prints the struct (``%#v``)."""
    errs = limitrange.validate_limit_range(
        _limit_range(
            _item("Container", max=_resources("1"), min=_resources("100m"), default=_resources("2"))
        ),
        None,
    )
    assert _messages(errs) == [
        "spec.limits[0].default[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:1, scale:0}, "
        'd:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"1", Format:"DecimalSI"}: '
        "default value 2 is greater than max value 1"
    ]
    errs = limitrange.validate_limit_range(
        _limit_range(_item("Pod", max={"foo": "1", "example.com/gpu": "1", "hugepages-2Mi": "2Mi"})), None
    )
    assert _messages(errs) == [
        'spec.limits[0].max[foo]: Invalid value: "foo": must be a standard resource type or fully qualified',
        'spec.limits[0].max[foo]: Invalid value: "foo": must be a standard resource for containers',
    ]
    errs = limitrange.validate_limit_range(_limit_range(_item(""), _item("a/b/c")), None)
    assert _messages(errs) == [
        'spec.limits[0].type: Invalid value: "": name part must be non-empty',
        'spec.limits[0].type: Invalid value: "": name part must consist of alphanumeric characters, '
        "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
        "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        'spec.limits[1].type: Invalid value: "a/b/c": a qualified name must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  "
        "or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
        "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ]


def test_limit_range_non_overcommitable_defaults_must_match() -> None:
    errs = limitrange.validate_limit_range(
        _limit_range(
            _item("Container", default={"hugepages-2Mi": "4Mi"}, defaultRequest={"hugepages-2Mi": "2Mi"})
        ),
        None,
    )
    assert [e.detail for e in errs] == [
        "default value 4Mi must equal to defaultRequest value 2Mi in hugepages-2Mi"
    ]


@pytest.mark.parametrize(
    ("value", "rendered"),
    [
        (
            "500m",
            'value:500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"500m", Format:"DecimalSI"}',
        ),
        ("0", 'value:0, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"0", Format:"DecimalSI"}'),
        (
            "1Gi",
            'value:1073741824, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"1Gi", Format:"BinarySI"}',
        ),
        # ParseQuantity keeps the string only when it is surely canonical (low bits of the mantissa set)
        (
            "8Gi",
            'value:8589934592, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"", Format:"BinarySI"}',
        ),
        (
            "1e3",
            'value:1, scale:3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"1e3", Format:"DecimalExponent"}',
        ),
        (
            "-2k",
            'value:-2, scale:3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"-2k", Format:"DecimalSI"}',
        ),
        (4, 'value:4, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"4", Format:"DecimalSI"}'),
    ],
)
def test_go_quantity(value: Any, rendered: str) -> None:
    assert go_quantity(value) == "resource.Quantity{i:resource.int64Amount{" + rendered


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("memory", True),
        ("cpu", True),
        ("storage", True),
        ("requests.cpu", True),
        ("requests.memory", True),
        ("requests.storage", True),
        ("limits.cpu", True),
        ("limits.memory", True),
        ("network", False),
        ("disk", False),
        ("", False),
        (".", False),
        ("..", False),
        ("my.favorite.app.co/12345", True),
        ("my.favorite.app.co/_12345", False),
        ("my.favorite.app.co/12345_", False),
        ("kubernetes.io/..", False),
        ("kubernetes.io/" + "a" * 64, False),
        ("kubernetes.io/" + "a" * 63, True),
        ("kubernetes.io//", False),
        ("kubernetes.io", False),
        ("kubernetes.io/will/not/work/", False),
    ],
)
def test_validate_resource_names(name: str, ok: bool) -> None:
    """``TestValidateResourceNames``."""
    assert (validate_resource_name(name, "field") == []) is ok


def test_limit_range_defaults_container_items() -> None:
    """``SetDefaults_LimitRangeItem``: default ← max, then defaultRequest ← default, then ← min."""
    info = _info("", "limitranges")
    obj = info.default(
        _limit_range(
            _item(
                "Container",
                max={"cpu": "2", "memory": "1Gi"},
                min={"cpu": "100m", "ephemeral-storage": "1Gi"},
            ),
            _item("Container", default={"cpu": "1"}, defaultRequest={"cpu": "500m"}),
            _item("Pod", max={"cpu": "4"}),
        )
    )
    first, second, pod = obj["spec"]["limits"]
    assert first["default"] == {"cpu": "2", "memory": "1Gi"}
    assert first["defaultRequest"] == {"cpu": "2", "memory": "1Gi", "ephemeral-storage": "1Gi"}
    assert second == {"type": "Container", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "500m"}}
    assert pod == {"type": "Pod", "max": {"cpu": "4"}}
    assert _messages(info.validate(obj, None)) == ['spec.limits[1].type: Duplicate value: "Container"']


def test_a_limit_range_without_name_gets_a_uuid() -> None:
    info = _info("", "limitranges")
    obj = info.default_for_create(_limit_range(_item("Pod"), name=""))
    assert len(obj["metadata"]["name"]) == 36 and info.validate(obj, None) == []
    generated = _limit_range(_item("Pod"), name="")
    generated["metadata"]["generateName"] = "lr-"
    assert info.default_for_create(generated)["metadata"]["name"] == ""  # generateName is drawn later


def test_limit_range_failure_message_and_quantities_canonical() -> None:
    info = _info("", "limitranges")
    obj = info.default(_limit_range(_item("Pod", max={"cpu": "1500m", "memory": 1024})))
    assert obj["spec"]["limits"][0]["max"] == {"cpu": "1500m", "memory": "1024"}
    bad = info.default(_limit_range(_item("Pod", default={"cpu": "1"})))
    failure = info.validation_failure(bad, None)
    assert failure is not None
    assert failure.message == (
        "LimitRange \"abc\" is invalid: spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"
    )


# --- RuntimeClass: pkg/apis/node/validation ------------------------------------------------------------


def _runtime_class(name: str = "foo", handler: str = "bar", **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": handler,
        **fields,
    }


@pytest.mark.parametrize(
    ("name", "rc", "expect_error"),
    [
        ("invalid name", _runtime_class(name="&!@#", handler="foo"), True),
        ("invalid Handler name", _runtime_class(handler="&@#$"), True),
        ("invalid empty RuntimeClass", _runtime_class(name="empty", handler=""), True),
        ("valid Handler", _runtime_class(handler="bar-baz"), False),
    ],
)
def test_validate_runtime_class(name: str, rc: dict[str, Any], expect_error: bool) -> None:
    assert bool(node.validate_runtime_class(rc, None)) is expect_error


@pytest.mark.parametrize(
    ("name", "new", "expect_error"),
    [
        ("valid metadata update", {"metadata": {"name": "foo", "labels": {"foo": "bar"}}}, False),
        ("invalid metadata update", {"metadata": {"name": "empty", "namespace": "somethingelse"}}, True),
        ("invalid Handler update", {"handler": "somethingelse"}, True),
    ],
)
def test_validate_runtime_class_update(name: str, new: dict[str, Any], expect_error: bool) -> None:
    """``TestValidateRuntimeUpdate``."""
    old = _runtime_class()
    assert bool(node.validate_runtime_class({**old, **new}, old)) is expect_error


def test_runtime_class_handler_is_immutable() -> None:
    old = _runtime_class()
    assert _messages(node.validate_runtime_class(_runtime_class(handler="other"), old)) == [
        'handler: Invalid value: "other": field is immutable'
    ]


def test_validate_overhead() -> None:
    """``TestValidateOverhead``, then the messages of ``ValidateContainerResourceRequirements``."""
    ok = _runtime_class(overhead={"podFixed": {"cpu": "10", "memory": "10G"}})
    assert node.validate_runtime_class(ok, None) == []
    assert node.validate_runtime_class(_runtime_class(overhead={"podFixed": {"my.org": "10m"}}), None)
    errs = node.validate_runtime_class(
        _runtime_class(
            overhead={"podFixed": {"cpu": "-1", "example.com/dev": "500m", "hugepages-2Mi": "3Mi"}}
        ),
        None,
    )
    assert _messages(errs) == [
        'overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0',
        "overhead.limits[example.com/dev]: Invalid value: resource.Quantity{i:resource.int64Amount{value:500, "
        'scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"500m", Format:"DecimalSI"}: must be an integer',
        'overhead.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi',
    ]
    only_hugepages = _runtime_class(overhead={"podFixed": {"hugepages-2Mi": "2Mi"}})
    assert _messages(node.validate_runtime_class(only_hugepages, None)) == [
        "overhead: Forbidden: HugePages require cpu or memory"
    ]


def _toleration(key: str, operator: str, effect: str, seconds: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator, "effect": effect}
    if seconds is not None:
        out["tolerationSeconds"] = seconds
    return out


VALID_TOLERATION = _toleration("valid", "Exists", "NoSchedule")


@pytest.mark.parametrize(
    ("name", "scheduling", "expect_errs"),
    [
        ("valid scheduling", {"nodeSelector": {"valid": "yes"}, "tolerations": [VALID_TOLERATION]}, 0),
        ("empty scheduling", {}, 0),
        ("invalid nodeSelector", {"nodeSelector": {"not a valid key!!!": "nope"}}, 1),
        (
            "invalid toleration",
            {"tolerations": [VALID_TOLERATION, _toleration("not a valid key!!!", "Exists", "NoSchedule")]},
            1,
        ),
        (
            "duplicate tolerations",
            {
                "tolerations": [
                    _toleration("valid", "Exists", "NoExecute", 5),
                    _toleration("valid", "Exists", "NoExecute", 10),
                ]
            },
            1,
        ),
        (
            "invalid scheduling",
            {
                "nodeSelector": {"not a valid key!!!": "nope"},
                "tolerations": [
                    VALID_TOLERATION,
                    _toleration("not a valid toleration key!!!", "Exists", "NoSchedule"),
                ],
            },
            2,
        ),
    ],
)
def test_validate_scheduling(name: str, scheduling: dict[str, Any], expect_errs: int) -> None:
    assert len(node.validate_runtime_class(_runtime_class(scheduling=scheduling), None)) == expect_errs


def test_scheduling_messages() -> None:
    scheduling = {
        "tolerations": [
            {"key": "a", "operator": "Exists", "value": "x"},
            {"key": "b", "operator": "Equal", "value": "y", "effect": "NoSchedule"},
            {"key": "b", "operator": "Equal", "value": "y", "effect": "NoSchedule"},
            {"operator": "Equal", "effect": "Bogus", "tolerationSeconds": 3},
        ]
    }
    assert _messages(node.validate_runtime_class(_runtime_class(scheduling=scheduling), None)) == [
        'scheduling.tolerations[0].operator: Invalid value: core.Toleration{Key:"a", Operator:"Exists", '
        'Value:"x", Effect:"", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is \'Exists\'',
        'scheduling.tolerations[3].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, '
        'which means "match all values and all keys"',
        "scheduling.tolerations[3].effect: Invalid value: \"Bogus\": effect must be 'NoExecute' when "
        "`tolerationSeconds` is set",
        'scheduling.tolerations[3].effect: Unsupported value: "Bogus": supported values: "NoSchedule", '
        '"PreferNoSchedule", "NoExecute"',
        'scheduling.tolerations[2]: Duplicate value: core.Toleration{Key:"b", Operator:"Equal", Value:"y", '
        'Effect:"NoSchedule", TolerationSeconds:(*int64)(nil)}',
    ]


def test_runtime_class_failure_names_the_group() -> None:
    info = _info("node.k8s.io", "runtimeclasses")
    failure = info.validation_failure(info.default(_runtime_class(handler="")), None)
    assert failure is not None
    assert failure.message.startswith(
        'RuntimeClass.node.k8s.io "foo" is invalid: handler: Invalid value: "": '
    )


# --- tables and protobuf ---------------------------------------------------------------------------------


def test_tables() -> None:
    lr = {"metadata": {"name": "limits", "creationTimestamp": "2025-01-09T12:00:00Z"}, "spec": {"limits": []}}
    table = to_table(_info("", "limitranges"), [lr], "v1", now=NOW)
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [
        ("Name", "string"),
        ("Created At", "date"),
    ]
    assert table["rows"][0]["cells"] == ["limits", "2025-01-09T12:00:00Z"]
    rc = {"metadata": {"name": "gvisor", "creationTimestamp": "2025-01-09T12:00:00Z"}, "handler": "runsc"}
    table = to_table(_info("node.k8s.io", "runtimeclasses"), [rc], "v1", now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Handler", "Age"]
    assert table["rows"][0]["cells"] == ["gvisor", "runsc", "24h"]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _entry(key: str, quantity: str) -> bytes:
    return _field(1, key.encode()) + _field(2, _field(1, quantity.encode()))


def test_protobuf_bodies_decode() -> None:
    item = _field(1, b"Container") + _field(2, _entry("cpu", "2")) + _field(5, _entry("cpu", "500m"))
    limit_range = _field(1, _field(1, b"lr")) + _field(2, _field(1, item))
    type_meta = _field(1, b"v1") + _field(2, b"LimitRange")
    body = MAGIC + _field(1, type_meta) + _field(2, limit_range)
    assert decode_object(body) == {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "lr"},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "defaultRequest": {"cpu": "500m"}}]},
    }
    toleration = _field(1, b"k") + _field(2, b"Exists")
    rc = _field(1, _field(1, b"rc")) + _field(2, b"runc") + _field(3, _field(1, _entry("cpu", "1")))
    rc += _field(4, _field(1, _field(1, b"a") + _field(2, b"b")) + _field(2, toleration))
    type_meta = _field(1, b"node.k8s.io/v1") + _field(2, b"RuntimeClass")
    assert decode_object(MAGIC + _field(1, type_meta) + _field(2, rc)) == {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "rc"},
        "handler": "runc",
        "overhead": {"podFixed": {"cpu": "1"}},
        "scheduling": {"nodeSelector": {"a": "b"}, "tolerations": [{"key": "k", "operator": "Exists"}]},
    }


# --- LimitRanger admission on Pod create (plugin/pkg/admission/limitranger) -------------------------------


def _app() -> APIServerApp:
    app = APIServerApp(Store(None))
    app.bootstrap()
    return app


def _request(app: APIServerApp, method: str, resource: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
    req = APIRequest(method, "", "v1", resource, body=json.dumps(body).encode() if body else b"", **kw)
    try:
        resp = app.handlers.handle(req)
    except StatusError as err:
        return err.code, err.status()
    return resp.status, json.loads(resp.body)


def _pod(name: str = "p", *containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": list(containers) or [{"name": "c", "image": "busybox:1"}], **spec},
    }


def _container(name: str = "c", **resources: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "image": "busybox:1", "resources": resources}


def _with_limit_range(*items: dict[str, Any]) -> APIServerApp:
    app = _app()
    status, body = _request(
        app, "POST", "limitranges", _limit_range(*items, name="lr", namespace="default"), namespace="default"
    )
    assert status == 201, body
    return app


def test_limit_ranger_defaults_container_resources() -> None:
    app = _with_limit_range(
        _item("Container", default={"cpu": "1", "memory": "512Mi"}, defaultRequest={"cpu": "250m"})
    )
    pod = _pod("p", _container("a"), _container("b", limits={"memory": "1Gi"}))
    pod["spec"]["initContainers"] = [_container("init", requests={"cpu": "100m"})]
    status, created = _request(app, "POST", "pods", pod, namespace="default")
    assert status == 201, created
    a, b = created["spec"]["containers"]
    assert a["resources"] == {
        "limits": {"cpu": "1", "memory": "512Mi"},
        "requests": {"cpu": "250m", "memory": "512Mi"},
    }
    # SetDefaults_Pod made b's memory request its limit before the plugin ran
    assert b["resources"] == {
        "limits": {"memory": "1Gi", "cpu": "1"},
        "requests": {"memory": "1Gi", "cpu": "250m"},
    }
    assert created["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container a; cpu, memory limit for container a; "
        "cpu request for container b; cpu limit for container b; "
        "memory request for init container init; cpu, memory limit for init container init"
    )
    assert created["status"]["qosClass"] == "Burstable"


def test_limit_ranger_forbids_pods_outside_the_bounds() -> None:
    app = _with_limit_range(
        _item("Container", max={"cpu": "2"}, min={"memory": "64Mi"}),
        _item("Pod", max={"memory": "1Gi"}),
    )
    pod = _pod(
        "big",
        _container("a", limits={"cpu": "3", "memory": "600Mi"}),
        _container("b", limits={"cpu": "1", "memory": "600Mi"}),
    )
    status, body = _request(app, "POST", "pods", pod, namespace="default")
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        'pods "big" is forbidden: [maximum cpu usage per Container is 2, but limit is 3, '
        "maximum memory usage per Pod is 1Gi, but limit is 1200Mi]"
    )
    # the Container item's max cpu became its default limit (SetDefaults_LimitRangeItem), set by the plugin
    status, body = _request(
        app, "POST", "pods", _pod("small", _container("a", requests={"memory": "1Mi"})), namespace="default"
    )
    assert status == 403
    assert body["message"] == (
        'pods "small" is forbidden: [minimum memory usage per Container is 64Mi, but request is 1Mi, '
        "maximum memory usage per Pod is 1Gi.  No limit is specified]"
    )
    ok = _pod("ok", _container("a", limits={"cpu": "2", "memory": "1Gi"}))
    status, body = _request(app, "POST", "pods", ok, namespace="default")
    assert status == 201, body


def test_limit_ranger_ratio_and_other_namespaces() -> None:
    app = _with_limit_range(_item("Container", maxLimitRequestRatio={"cpu": "2"}))
    pod = _pod("r", _container("a", requests={"cpu": "100m"}, limits={"cpu": "300m"}))
    status, body = _request(app, "POST", "pods", pod, namespace="default")
    assert status == 403
    assert body["message"] == (
        'pods "r" is forbidden: cpu max limit to request ratio per Container is 2, but provided ratio is 3.000000'
    )
    _request(
        app, "POST", "namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "free"}}
    )
    pod["metadata"]["namespace"] = "free"
    status, body = _request(app, "POST", "pods", pod, namespace="free")
    assert status == 201, body


def test_limit_ranger_pod_totals_take_init_containers_and_sidecars() -> None:
    app = _with_limit_range(_item("Pod", max={"cpu": "2"}))
    pod = _pod("init", _container("a", limits={"cpu": "1"}))
    pod["spec"]["initContainers"] = [_container("setup", limits={"cpu": "3"})]
    status, body = _request(app, "POST", "pods", pod, namespace="default")
    assert (status, body["message"]) == (
        403,
        'pods "init" is forbidden: maximum cpu usage per Pod is 2, but limit is 3',
    )
    sidecar = {**_container("proxy", limits={"cpu": "1500m"}), "restartPolicy": "Always"}
    pod = _pod("sidecar", _container("a", limits={"cpu": "1"}))
    pod["spec"]["initContainers"] = [sidecar]
    status, body = _request(app, "POST", "pods", pod, namespace="default")
    assert (status, body["message"]) == (
        403,
        'pods "sidecar" is forbidden: maximum cpu usage per Pod is 2, but limit is 2500m',
    )
