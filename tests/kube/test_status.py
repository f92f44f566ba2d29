"""The one ``Status`` error: raised by the store, rendered by the apiserver, parsed back by the client."""

from __future__ import annotations

from pykueue.apiserver.patch.errors import ApplyConflict, invalid
from pykueue.client.interface import Conflict, NotFound, error_from_status
from pykueue.kube.status import StatusError
from pykueue.store.errors import OBJECT_MODIFIED, Expired, InternalError, conflict, not_found


def test_store_error_is_the_status_error_and_renders_in_metav1_field_order() -> None:
    err = not_found("kueue.x-k8s.io", "clusterqueues", "cq")
    assert isinstance(err, StatusError)
    status = err.status()
    assert list(status) == ["kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code"]
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'clusterqueues.kueue.x-k8s.io "cq" not found',
        "reason": "NotFound",
        "details": {"name": "cq", "group": "kueue.x-k8s.io", "kind": "clusterqueues"},
        "code": 404,
    }


def test_unknown_reason_is_omitted_and_expired_carries_the_continue_token() -> None:
    assert "reason" not in InternalError("boom", reason="").status()
    status = Expired("too old", continue_token="tok").status()
    assert status["metadata"] == {"continue": "tok"} and status["code"] == 410


def test_patch_errors_render_through_the_same_builder() -> None:
    err = ApplyConflict([("kubectl", ".spec.x")], "Apply failed", [{"type": "FieldManagerConflict"}])
    assert isinstance(err, StatusError)
    assert list(err.status()) == ["kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code"]
    assert err.status()["details"] == {"causes": [{"type": "FieldManagerConflict"}]}
    generic = invalid("test failed at /a")
    assert str(generic) == "test failed at /a"
    assert generic.status()["message"] == "the server rejected our request due to an error in our request"


def test_client_parses_the_rendered_status_back() -> None:
    sent = not_found("", "pods", "p")
    got = error_from_status(404, sent.status())
    assert isinstance(got, NotFound) and isinstance(got, StatusError)
    assert got.status() == sent.status()
    assert str(got) == '404 NotFound: pods "p" not found'
    parsed = error_from_status(409, conflict("", "pods", "p", OBJECT_MODIFIED).status())
    assert isinstance(parsed, Conflict) and parsed.reason == "Conflict"
