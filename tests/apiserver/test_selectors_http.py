"""Label and field selectors at the HTTP layer: the one parser (``pykueue.kube.selectors``) answers.

The store's lists and the HTTP list/watch/deletecollection path parse selectors with the same
port of ``labels.Parse`` / ``fields.ParseSelector``, so a malformed selector is the same 400
``Status`` (k8s' exact wording) whether it reaches the store or the request handler first.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pykueue.apiserver.app import APIServerApp
from pykueue.apiserver.handlers import APIRequest
from pykueue.kube.status import StatusError
from pykueue.store import Store

G = "kueue.x-k8s.io"
V = "v1beta2"


@pytest.fixture(scope="module")
def app() -> APIServerApp:
    server = APIServerApp(Store(None))
    server.bootstrap()
    for name, labels in (("a", {"team": "x", "tier": "1"}), ("b", {"team": "y", "tier": "3"}), ("c", {})):
        body = {"apiVersion": f"{G}/{V}", "kind": "ResourceFlavor", "metadata": {"name": name, "labels": labels}}
        req = APIRequest("POST", G, V, "resourceflavors", body=json.dumps(body).encode())
        req.content_type = "application/json"
        assert server.handlers.handle(req).status == 201
    return server


def _list(app: APIServerApp, **query: str) -> tuple[int, dict[str, Any]]:
    req = APIRequest("GET", G, V, "resourceflavors", query={k: [v] for k, v in query.items()})
    try:
        resp = app.handlers.handle(req)
    except StatusError as err:
        return err.code, err.status()
    return resp.status, json.loads(resp.body)


def _names(body: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        ("team", ["a", "b"]),
        ("team notin (x)", ["b", "c"]),
        ("!team", ["c"]),
        ("tier>2", ["b"]),
        ("team=x,tier in (1,2)", ["a"]),
        ("", ["a", "b", "c"]),
    ],
)
def test_label_selector_filters_a_list(app: APIServerApp, selector: str, names: list[str]) -> None:
    code, body = _list(app, labelSelector=selector)
    assert code == 200, body
    assert _names(body) == names


# Messages of k8s.io/apimachinery/pkg/labels/selector.go (parseValues, parseOperator,
# NewRequirement's field paths); the HTTP layer used to answer with a parser of its own wording.
@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("team in", "unable to parse requirement: found '' expected: '('"),
        ("(", "found '(', expected: !, identifier, or 'end of string'"),
        ("team in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a,=b", "found '=', expected: identifier after ','"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("Bad Key!=x", "unable to parse requirement: found 'Key', expected: in, notin, =, ==, !=, >, <"),
        (
            "tier>y",
            "unable to parse requirement: values[0]: Invalid value: \"y\": for 'Gt', 'Lt' operators, "
            "the value must be an integer",
        ),
    ],
)
def test_malformed_label_selector_is_a_400_in_k8s_wording(
    app: APIServerApp, selector: str, message: str
) -> None:
    code, status = _list(app, labelSelector=selector)
    assert code == 400
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
    }


def test_field_selector_filters_and_refuses_unknown_fields(app: APIServerApp) -> None:
    code, body = _list(app, fieldSelector="metadata.name!=b")
    assert code == 200 and _names(body) == ["a", "c"]
    code, status = _list(app, fieldSelector="spec.nodeLabels=x")
    assert code == 400 and status["reason"] == "BadRequest"
    assert status["message"] == (
        '"spec.nodeLabels" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
