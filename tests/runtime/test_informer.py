"""Informer options that cut what it keeps: ``transform`` and ``cache_objects=False``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pykueue.apiserver.app import create_app
from pykueue.client import resources as R
from pykueue.client.inprocess import InProcessClient
from pykueue.runtime.informer import (
    ADDED,
    DELETED,
    MODIFIED,
    SYNCED,
    Change,
    Informer,
    InformerView,
    ObjectKey,
    OwnWrites,
    strip_managed_fields,
)
from pykueue.store import Store


@pytest.fixture
def client() -> Iterator[InProcessClient]:
    store = Store(None)
    _, parts = create_app(store)
    parts.bootstrap()
    yield InProcessClient(parts.handlers)
    store.close()


def pod_template(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": name, "namespace": "default", "labels": {"v": "1"}},
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    }


class Sink:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.changes: list[Change] = []

    def __call__(self, change: Change) -> None:
        with self.lock:
            self.changes.append(change)

    def after(self, mark: int) -> list[Change]:
        with self.lock:
            return self.changes[mark:]


class HeldOwnWrites(OwnWrites):
    """:class:`OwnWrites` whose :meth:`echo` waits while the test holds :attr:`writing`.

    The consumer records its write's version after the write answered; the informer's thread may
    read that write's watch event first (a busy machine), and then rightly delivers it. A test of
    the skip holds :attr:`writing` over its write and :meth:`expect`, as if the consumer had been
    quicker than the watch."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = threading.Lock()

    def echo(self, plural: str, key: ObjectKey, version: str) -> bool:
        with self.writing:
            return super().echo(plural, key, version)


def wait(pred: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_strip_managed_fields_copies_the_metadata() -> None:
    obj = {"metadata": {"name": "a", "managedFields": [{"manager": "m"}]}, "data": {"v": "1"}}
    out = strip_managed_fields(obj)
    assert out == {"metadata": {"name": "a"}, "data": {"v": "1"}}
    assert obj["metadata"]["managedFields"] == [{"manager": "m"}], "the original is not changed"
    plain = {"metadata": {"name": "b"}}
    assert strip_managed_fields(plain) is plain


def test_versions_only_informer_reports_every_change_without_keeping_objects(client: InProcessClient) -> None:
    client.create(R.POD_TEMPLATES, pod_template("a"))
    client.create(R.POD_TEMPLATES, pod_template("b"))
    assert client.get(R.POD_TEMPLATES, "a", "default")["metadata"].get("managedFields")
    sink = Sink()
    inf = Informer(client, R.POD_TEMPLATES, sink, transform=strip_managed_fields, cache_objects=False)
    inf.start()
    try:
        assert inf.wait_synced(10)
        initial = sink.after(0)
        assert [c.type for c in initial] == [ADDED, ADDED, SYNCED]
        assert all("managedFields" not in c.object["metadata"] for c in initial[:2])
        assert inf._cache == {}, "no object kept"
        with pytest.raises(RuntimeError, match="keeps no objects"):
            inf.get(("default", "a"))

        mark = len(initial)
        client.patch(R.POD_TEMPLATES, "a", {"metadata": {"labels": {"v": "2"}}}, "default")
        client.create(R.POD_TEMPLATES, pod_template("c"))
        client.delete(R.POD_TEMPLATES, "b", "default")
        wait(lambda: len(sink.after(mark)) == 3)
        modified, added, deleted = sink.after(mark)
        assert (modified.type, modified.old, modified.object["metadata"]["labels"]) == (MODIFIED, None, {"v": "2"})
        assert "managedFields" not in modified.object["metadata"]
        assert (added.type, added.object["metadata"]["name"]) == (ADDED, "c")
        assert (deleted.type, deleted.new, deleted.object["metadata"]["name"]) == (DELETED, None, "b")
    finally:
        inf.stop()

    # A relist reports what changed while the watch was down; the gone object as a tombstone.
    rv_a = client.patch(R.POD_TEMPLATES, "a", {"metadata": {"labels": {"v": "3"}}}, "default")["metadata"]["resourceVersion"]
    rv_c = inf._versions[("default", "c")]
    client.delete(R.POD_TEMPLATES, "c", "default")
    mark = len(sink.after(0))
    inf._relist()
    changes = sink.after(mark)
    assert [(c.type, c.object["metadata"]["name"]) for c in changes] == [(DELETED, "c"), (MODIFIED, "a")]
    assert changes[0].object == {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "c", "namespace": "default", "resourceVersion": rv_c},
    }
    assert changes[1].object["metadata"]["labels"] == {"v": "3"} and inf._versions[("default", "a")] == rv_a


def test_the_echo_of_a_version_the_consumer_applied_itself_is_neither_transformed_nor_delivered(
    client: InProcessClient,
) -> None:
    # The controller manager applies its writes' answers to its cache at once (write-through);
    # the watch event of that same version used to be transformed on the informer's thread and
    # handed to the manager's, which then dropped it as not newer than its cache. Now it stops at
    # the informer; someone else's later version and deletions still get through.
    client.create(R.POD_TEMPLATES, pod_template("a"))
    sink = Sink()
    own = HeldOwnWrites()
    transformed: list[str] = []

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        transformed.append(obj["metadata"]["resourceVersion"])
        return strip_managed_fields(obj)

    inf = Informer(client, R.POD_TEMPLATES, sink, transform=transform, cache_objects=False, own_writes=own)
    inf.start()
    try:
        assert inf.wait_synced(10)
        mark = len(sink.after(0))
        with own.writing:
            ours = client.patch(R.POD_TEMPLATES, "a", {"metadata": {"labels": {"v": "2"}}}, "default")
            own.expect(R.POD_TEMPLATES.plural, ("default", "a"), ours["metadata"]["resourceVersion"])
        theirs = client.patch(R.POD_TEMPLATES, "a", {"metadata": {"labels": {"v": "3"}}}, "default")
        client.delete(R.POD_TEMPLATES, "a", "default")
        wait(lambda: len(sink.after(mark)) == 2)
        time.sleep(0.1)
        changes = sink.after(mark)
        assert [c.type for c in changes] == [MODIFIED, DELETED]
        assert changes[0].object["metadata"]["resourceVersion"] == theirs["metadata"]["resourceVersion"]
        assert ours["metadata"]["resourceVersion"] not in transformed
        assert own.skipped == 1 and len(own) == 0
    finally:
        inf.stop()
    with pytest.raises(ValueError, match="own_writes"):
        Informer(client, R.POD_TEMPLATES, sink, own_writes=own)


def test_own_writes_skip_older_versions_and_let_later_ones_through() -> None:
    own = OwnWrites()
    key = ("ns", "w")
    own.expect("workloads", key, "10")
    assert own.echo("workloads", key, "9")  # older than what the consumer holds: it would drop it
    assert own.echo("workloads", key, "10")  # the echo: skipped, and nothing expected any more
    assert not own.echo("workloads", key, "10")
    own.expect("workloads", key, "12")
    assert not own.echo("workloads", key, "13") and len(own) == 0  # someone else's later version
    own.expect("workloads", key, "14")
    own.expect("localqueues", key, "15")
    own.forget("workloads")  # a relist delivers every current version anyway
    assert len(own) == 1 and not own.echo("workloads", key, "14")


def test_a_view_of_a_shared_informer_sees_every_change_with_its_own_cache(client: InProcessClient) -> None:
    # controller-runtime's manager shares one informer per kind among its controllers: a second
    # consumer (the ProvisioningRequest check controller) gets every change of the owner's watch,
    # the echoes of the owner's own writes included, without a watch of its own.
    client.create(R.POD_TEMPLATES, pod_template("a"))
    client.create(R.POD_TEMPLATES, pod_template("b"))
    owner, other = Sink(), Sink()
    own = HeldOwnWrites()
    inf = Informer(client, R.POD_TEMPLATES, owner, transform=strip_managed_fields, cache_objects=False, own_writes=own)

    def labels_only(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        return {"metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": meta.get("labels")}}

    view = InformerView(inf, other, transform=labels_only)
    inf.start()
    try:
        assert view.wait_synced(10) and inf.wait_synced(10)
        initial = other.after(0)
        assert [c.type for c in initial] == [ADDED, ADDED, SYNCED]
        assert [c.object["metadata"]["name"] for c in initial[:2]] == ["a", "b"]
        assert view.get(("default", "a")) == {"metadata": {"name": "a", "namespace": "default", "labels": {"v": "1"}}}
        assert sorted(o["metadata"]["name"] for o in view.items()) == ["a", "b"]

        mark_owner, mark = len(owner.after(0)), len(other.after(0))
        with own.writing:
            ours = client.patch(R.POD_TEMPLATES, "a", {"metadata": {"labels": {"v": "2"}}}, "default")
            own.expect(R.POD_TEMPLATES.plural, ("default", "a"), ours["metadata"]["resourceVersion"])
        client.patch(R.POD_TEMPLATES, "b", {"metadata": {"labels": {"v": "3"}}}, "default")
        client.delete(R.POD_TEMPLATES, "b", "default")
        wait(lambda: len(other.after(mark)) == 3)
        wait(lambda: len(owner.after(mark_owner)) >= 2)
        time.sleep(0.1)
        # The owner applied its own write already: it sees only b's change and deletion.
        assert [(c.type, c.object["metadata"]["name"]) for c in owner.after(mark_owner)] == [
            (MODIFIED, "b"),
            (DELETED, "b"),
        ]
        # The view sees all three, with the previous state from its own cache, in its own shape.
        echo, modified, deleted = other.after(mark)
        assert (echo.type, echo.old, echo.new) == (
            MODIFIED,
            {"metadata": {"name": "a", "namespace": "default", "labels": {"v": "1"}}},
            {"metadata": {"name": "a", "namespace": "default", "labels": {"v": "2"}}},
        )
        assert (modified.type, modified.old and modified.old["metadata"]["labels"]) == (MODIFIED, {"v": "1"})
        assert (deleted.type, deleted.new, deleted.object["metadata"]["labels"]) == (DELETED, None, {"v": "3"})
        assert [o["metadata"]["name"] for o in view.items()] == ["a"]
    finally:
        inf.stop()

    # A relist (a watch too old) reports the differences to the view as well.
    client.create(R.POD_TEMPLATES, pod_template("c"))
    client.delete(R.POD_TEMPLATES, "a", "default")
    mark = len(other.after(0))
    inf._relist()
    changes = other.after(mark)
    assert [(c.type, c.object["metadata"]["name"]) for c in changes] == [(DELETED, "a"), (ADDED, "c")]
    assert changes[0].object["metadata"]["labels"] == {"v": "2"}, "the last state the view held"
    assert [o["metadata"]["name"] for o in view.items()] == ["c"]

    # Handlers are added before the informer runs, and only to one that keeps no objects.
    with pytest.raises(RuntimeError, match="before start"):
        InformerView(inf, other)
    with pytest.raises(ValueError, match="keeps no objects"):
        InformerView(Informer(client, R.POD_TEMPLATES, owner), other)


def test_a_relist_delivers_to_the_owner_before_the_views(client: InProcessClient) -> None:
    # The owner (the controller manager) gets its listed changes and SYNCED without waiting for a
    # slow added handler; each view still gets every change and SYNCED last.
    for i in range(20):
        client.create(R.POD_TEMPLATES, pod_template(f"p{i}"))
    owner_synced = threading.Event()
    at_owner_sync: list[int] = []
    other = Sink()

    def owner(change: Change) -> None:
        if change.type == SYNCED:
            at_owner_sync.append(len(other.after(0)))
            owner_synced.set()

    def slow(change: Change) -> None:
        time.sleep(0.01)
        other(change)

    inf = Informer(client, R.POD_TEMPLATES, owner, cache_objects=False)
    inf.add_handler(slow)
    inf.start()
    try:
        assert owner_synced.wait(10)
        assert at_owner_sync == [0], "the owner's SYNCED waited for the handler"
        wait(lambda: len(other.after(0)) == 21)
        changes = other.after(0)
        assert [c.type for c in changes] == [ADDED] * 20 + [SYNCED]
    finally:
        inf.stop()
