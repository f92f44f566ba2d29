"""HTTPClient verbs against a real ``pykueue serve --no-controllers``: results and error mapping."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

import pytest
from httpclient_support import (
    Starter,
    flavor,
    local_queue,
    namespace,
    pod_template,
    rv,
)

from pykueue.client.http import HTTPClient
from pykueue.client.interface import (
    AlreadyExists,
    APIError,
    Conflict,
    Gone,
    Invalid,
    NotFound,
)
from pykueue.client.resources import (
    LOCAL_QUEUES,
    NAMESPACES,
    POD_TEMPLATES,
    RESOURCE_FLAVORS,
)


def test_create_get_and_list_fill_kind(client: HTTPClient) -> None:
    created = client.create(RESOURCE_FLAVORS, flavor("v-get", {"team": "a"}))
    assert created["metadata"]["name"] == "v-get"
    assert created["metadata"]["uid"]
    got = client.get(RESOURCE_FLAVORS, "v-get")
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    assert got["kind"] == "ResourceFlavor" and got["apiVersion"] == "kueue.x-k8s.io/v1beta2"

    items, list_rv = client.list(RESOURCE_FLAVORS)
    mine = [o for o in items if o["metadata"]["name"] == "v-get"]
    assert len(mine) == 1
    assert int(list_rv) >= int(rv(created))
    # list items come without kind/apiVersion on the wire: the client fills them in
    assert all(o["kind"] == "ResourceFlavor" and o["apiVersion"] == "kueue.x-k8s.io/v1beta2" for o in items)


def test_namespaced_list_scoping(client: HTTPClient) -> None:
    client.create(NAMESPACES, namespace("v-ns-a"))
    client.create(NAMESPACES, namespace("v-ns-b"))
    client.create(LOCAL_QUEUES, local_queue("q1", "v-ns-a"))
    client.create(LOCAL_QUEUES, local_queue("q2", "v-ns-b"))
    in_a, _ = client.list(LOCAL_QUEUES, "v-ns-a")
    assert [o["metadata"]["name"] for o in in_a] == ["q1"]
    everywhere, _ = client.list(LOCAL_QUEUES)
    keys = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in everywhere}
    assert {("v-ns-a", "q1"), ("v-ns-b", "q2")} <= keys
    assert client.get(LOCAL_QUEUES, "q2", "v-ns-b")["kind"] == "LocalQueue"
    with pytest.raises(NotFound):
        client.get(LOCAL_QUEUES, "q2", "v-ns-a")


class PageCountingClient(HTTPClient):
    """Counts LIST pages and runs ``between_pages`` after the first one (real writes, real server)."""

    pages = 0
    between_pages: Callable[[], None] | None = None

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        out = super()._json(method, path, **kwargs)
        if method == "GET" and "items" in out:
            self.pages += 1
            if self.pages == 1 and self.between_pages is not None:
                self.between_pages()
        return out


def test_list_pages_through_continue(server: Any) -> None:
    small = PageCountingClient.from_kubeconfig(server.kubeconfig, page_size=2)
    assert isinstance(small, PageCountingClient)
    try:
        names = [f"v-page-{i}" for i in range(7)]
        for name in names:
            small.create(RESOURCE_FLAVORS, flavor(name, {"paged": "yes"}))
        _, before = small.list(NAMESPACES)
        small.pages = 0
        items, list_rv = small.list(RESOURCE_FLAVORS)
        assert small.pages >= 4, "the list was not paged"
        listed = [o["metadata"]["name"] for o in items]
        assert len(listed) == len(set(listed)), "a page repeated objects"
        assert set(names) <= set(listed)
        # every page belongs to the first page's snapshot: the list's rv is not older than the creates
        assert int(list_rv) >= int(before)
        assert all(o["kind"] == "ResourceFlavor" for o in items)
    finally:
        small.close()


def test_list_falls_back_to_a_full_list_when_continue_expires(start: Starter) -> None:
    srv = start("--watch-history", "3")
    c = PageCountingClient.from_kubeconfig(srv.kubeconfig, page_size=2)
    assert isinstance(c, PageCountingClient)
    try:
        for i in range(5):
            c.create(RESOURCE_FLAVORS, flavor(f"f{i}"))

        def churn() -> None:
            # after page 1: delete one listed object, add one, and push the snapshot out of history
            c.delete(RESOURCE_FLAVORS, "f4")
            c.create(RESOURCE_FLAVORS, flavor("late"))
            for j in range(6):
                c.patch(RESOURCE_FLAVORS, "f0", {"metadata": {"labels": {"j": str(j)}}})

        c.between_pages = churn
        items, list_rv = c.list(RESOURCE_FLAVORS)
        c.between_pages = None
        assert c.pages == 2, "expected page 1, a 410 on page 2, then one unpaged list"
        names = sorted(o["metadata"]["name"] for o in items)
        live = [o["metadata"]["name"] for o in items if not o["metadata"].get("deletionTimestamp")]
        assert "late" in names and "f4" not in live
        assert len(names) == len(set(names))
        assert int(list_rv) >= int(rv(c.get(RESOURCE_FLAVORS, "late")))
    finally:
        c.close()


def test_replace_with_stale_resource_version_conflicts(client: HTTPClient) -> None:
    created = client.create(RESOURCE_FLAVORS, flavor("v-conflict"))
    stale = copy.deepcopy(created)
    fresh = copy.deepcopy(created)
    fresh["metadata"]["labels"] = {"writer": "first"}
    updated = client.replace(RESOURCE_FLAVORS, fresh)
    assert updated["metadata"]["labels"] == {"writer": "first"}
    assert int(rv(updated)) > int(rv(created))

    stale["metadata"]["labels"] = {"writer": "second"}
    with pytest.raises(Conflict) as err:
        client.replace(RESOURCE_FLAVORS, stale)
    assert err.value.code == 409 and not isinstance(err.value, AlreadyExists)
    assert client.get(RESOURCE_FLAVORS, "v-conflict")["metadata"]["labels"] == {"writer": "first"}


def test_create_existing_is_already_exists(client: HTTPClient) -> None:
    client.create(RESOURCE_FLAVORS, flavor("v-dup"))
    with pytest.raises(AlreadyExists) as err:
        client.create(RESOURCE_FLAVORS, flavor("v-dup"))
    assert err.value.code == 409 and err.value.reason == "AlreadyExists"


def test_invalid_object_is_invalid(client: HTTPClient) -> None:
    with pytest.raises(Invalid) as err:
        client.create(RESOURCE_FLAVORS, flavor("Not_A_Valid_Name"))
    assert err.value.code == 422
    assert "metadata.name" in err.value.message


def test_not_found_everywhere(client: HTTPClient) -> None:
    with pytest.raises(NotFound):
        client.get(RESOURCE_FLAVORS, "v-missing")
    with pytest.raises(NotFound):
        client.delete(RESOURCE_FLAVORS, "v-missing")
    with pytest.raises(NotFound):
        client.patch(RESOURCE_FLAVORS, "v-missing", {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(NotFound):  # the namespace itself is missing
        client.create(LOCAL_QUEUES, local_queue("q", "v-no-such-namespace"))


def test_status_subresource(client: HTTPClient) -> None:
    lq = client.create(LOCAL_QUEUES, local_queue("v-status"))
    # the main resource ignores status changes ...
    lq["status"] = {"pendingWorkloads": 5}
    after_main = client.replace(LOCAL_QUEUES, lq)
    assert (after_main.get("status") or {}).get("pendingWorkloads", 0) == 0

    # ... the status subresource takes them, and ignores spec changes
    after_main["status"] = {"pendingWorkloads": 3}
    after_main["spec"]["clusterQueue"] = "other-cq"
    after_status = client.replace(LOCAL_QUEUES, after_main, subresource="status")
    assert after_status["status"]["pendingWorkloads"] == 3
    assert after_status["spec"]["clusterQueue"] == "cq"

    patched = client.patch(
        LOCAL_QUEUES, "v-status", {"status": {"reservingWorkloads": 2}}, "default", subresource="status"
    )
    assert patched["status"]["reservingWorkloads"] == 2
    assert patched["status"]["pendingWorkloads"] == 3

    # a stale resourceVersion is a precondition on the status too
    after_main["status"] = {"pendingWorkloads": 9}
    with pytest.raises(Conflict):
        client.replace(LOCAL_QUEUES, after_main, subresource="status")


def test_patch_types(client: HTTPClient) -> None:
    client.create(POD_TEMPLATES, pod_template("v-patch"))
    merged = client.patch(POD_TEMPLATES, "v-patch", {"metadata": {"labels": {"m": "1"}}}, "default")
    assert merged["metadata"]["labels"] == {"m": "1"}

    ops = [{"op": "add", "path": "/metadata/annotations", "value": {"j": "2"}}]
    jsoned = client.patch(POD_TEMPLATES, "v-patch", ops, "default", patch_type="json")
    assert jsoned["metadata"]["annotations"] == {"j": "2"}

    # strategic merge: containers merge by name (a merge patch would replace the whole list)
    side = {"template": {"spec": {"containers": [{"name": "side", "image": "sidecar"}]}}}
    strategic = client.patch(POD_TEMPLATES, "v-patch", side, "default", patch_type="strategic")
    names = [c["name"] for c in strategic["template"]["spec"]["containers"]]
    assert sorted(names) == ["main", "side"]

    failing = [{"op": "test", "path": "/metadata/labels/m", "value": "wrong"}]
    with pytest.raises(APIError) as err:
        client.patch(POD_TEMPLATES, "v-patch", failing, "default", patch_type="json")
    assert err.value.code in (409, 422)

    with pytest.raises(ValueError):
        client.patch(POD_TEMPLATES, "v-patch", {}, "default", patch_type="apply")


def test_strategic_patch_on_custom_resource_is_unsupported(client: HTTPClient) -> None:
    client.create(RESOURCE_FLAVORS, flavor("v-smp"))
    with pytest.raises(APIError) as err:
        client.patch(RESOURCE_FLAVORS, "v-smp", {"metadata": {"labels": {"a": "b"}}}, patch_type="strategic")
    assert err.value.code == 415


def test_delete_with_propagation(client: HTTPClient) -> None:
    client.create(POD_TEMPLATES, pod_template("v-del"))
    client.delete(POD_TEMPLATES, "v-del", "default", propagation="Background")
    with pytest.raises(NotFound):
        client.get(POD_TEMPLATES, "v-del", "default")
    client.create(POD_TEMPLATES, pod_template("v-del2"))
    with pytest.raises(Invalid):
        client.delete(POD_TEMPLATES, "v-del2", "default", propagation="Sideways")
    client.delete(POD_TEMPLATES, "v-del2", "default", propagation="Foreground")
    with pytest.raises(NotFound):
        client.get(POD_TEMPLATES, "v-del2", "default")


def test_watch_from_future_revision_is_an_error(client: HTTPClient) -> None:
    _, list_rv = client.list(RESOURCE_FLAVORS)
    with pytest.raises(APIError) as err:
        for _ in client.watch(RESOURCE_FLAVORS, str(int(list_rv) + 1000)):
            pass
    assert not isinstance(err.value, Gone)
    assert err.value.code >= 400


def test_concurrent_use_from_many_threads(client: HTTPClient) -> None:
    """Several threads share one client (as informers and the manager do)."""
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            name = f"v-thread-{i}"
            client.create(RESOURCE_FLAVORS, flavor(name))
            for j in range(5):
                client.patch(RESOURCE_FLAVORS, name, {"metadata": {"labels": {"n": str(j)}}})
                client.get(RESOURCE_FLAVORS, name)
            client.list(RESOURCE_FLAVORS)
            client.delete(RESOURCE_FLAVORS, name)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    items, _ = client.list(RESOURCE_FLAVORS)
    leftovers = [
        o
        for o in items
        if o["metadata"]["name"].startswith("v-thread-") and not o["metadata"].get("deletionTimestamp")
    ]
    assert leftovers == []


def test_closed_client_raises_connection_error(server: Any) -> None:
    c = HTTPClient.from_kubeconfig(server.kubeconfig)
    c.close()
    with pytest.raises(APIError) as err:
        c.get(RESOURCE_FLAVORS, "anything")
    assert err.value.code == 0
