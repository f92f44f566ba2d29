"""Listing: key order, namespaces, selectors, pagination with consistent continue tokens."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from storetesting import CQ, WL, check_invariants, cq, names, open_store, wl

from pykueue.store import (
    BadRequest,
    Expired,
    Store,
    TooLargeResourceVersion,
    decode_continue,
    encode_continue,
)


@pytest.fixture
def store() -> Store:
    s = open_store()
    for ns in ("b", "a", "a-b"):
        for name in ("y", "x"):
            s.create(WL, wl(name, ns, labels={"ns": ns, "name": name}))
    return s


def keys(items: list[dict]) -> list[str]:
    return [f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in items]


def test_list_all_namespaces_in_etcd_key_order(store: Store) -> None:
    items, rev, token = store.list(WL)
    # "/registry/workloads/a-b/x" sorts before "/registry/workloads/a/x": '-' < '/'
    assert keys(items) == ["a-b/x", "a-b/y", "a/x", "a/y", "b/x", "b/y"]
    assert rev == store.revision == 6 and token is None


def test_list_one_namespace(store: Store) -> None:
    assert keys(store.list(WL, "a")[0]) == ["a/x", "a/y"]
    assert store.list(WL, "missing")[0] == []
    assert store.count(WL, "a") == 2 and store.count(WL) == 6


def test_list_cluster_scoped_ignores_namespace() -> None:
    s = open_store()
    for name in ("b", "a"):
        s.create(CQ, cq(name))
    assert names(s.list(CQ, "whatever")[0]) == ["a", "b"]


def test_list_with_selectors(store: Store) -> None:
    assert keys(store.list(WL, label_selector="name=x")[0]) == ["a-b/x", "a/x", "b/x"]
    assert keys(store.list(WL, field_selector=lambda o: o["metadata"]["namespace"] == "b")[0]) == [
        "b/x",
        "b/y",
    ]
    assert keys(store.list(WL, "a", label_selector="name=x", field_selector=lambda o: True)[0]) == ["a/x"]


def collect(store: Store, **kwargs: object) -> tuple[list[list[str]], set[int]]:
    pages, revs, token = [], set(), None
    while True:
        items, rev, token = store.list(WL, continue_token=token, **kwargs)  # type: ignore[arg-type]
        pages.append(keys(items))
        revs.add(rev)
        if token is None:
            return pages, revs


@pytest.mark.parametrize(
    ("limit", "pages"),
    [
        (1, [["a-b/x"], ["a-b/y"], ["a/x"], ["a/y"], ["b/x"], ["b/y"]]),
        (4, [["a-b/x", "a-b/y", "a/x", "a/y"], ["b/x", "b/y"]]),
        (6, [["a-b/x", "a-b/y", "a/x", "a/y", "b/x", "b/y"]]),
        (100, [["a-b/x", "a-b/y", "a/x", "a/y", "b/x", "b/y"]]),
    ],
)
def test_pagination(store: Store, limit: int, pages: list[list[str]]) -> None:
    got, revs = collect(store, limit=limit)
    assert got == pages and revs == {6}


def test_pagination_with_selector_counts_matches(store: Store) -> None:
    got, _ = collect(store, limit=2, label_selector="name=y")
    assert got == [["a-b/y", "a/y"], ["b/y"]]


def test_pagination_in_namespace(store: Store) -> None:
    got, _ = collect(store, limit=1, namespace="a")
    assert got == [["a/x"], ["a/y"]]


def test_continue_token_format(store: Store) -> None:
    _, _, token = store.list(WL, limit=2)
    assert token is not None
    payload = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert payload == {"v": "meta.k8s.io/v1", "rv": 6, "start": "a-b/y\x00"}
    assert decode_continue(token) == (6, "a-b/y")
    assert decode_continue(encode_continue(-1, "k")) == (-1, "k")


def test_continuation_is_consistent_with_the_first_page(store: Store) -> None:
    first, rev, token = store.list(WL, limit=3)
    assert keys(first) == ["a-b/x", "a-b/y", "a/x"]
    # writes after the first page: none may show up in the following pages
    ay = store.get(WL, "a", "y")
    store.update(WL, dict(ay, spec={"queueName": "changed"}))
    store.delete(WL, "b", "x")
    store.create(WL, wl("z", "a"))
    store.create(WL, wl("0", "c"))
    store.delete(WL, "a-b", "x")  # before the cursor: irrelevant
    rest, rev2, token2 = store.list(WL, limit=10, continue_token=token)
    assert rev2 == rev and token2 is None
    assert keys(rest) == ["a/y", "b/x", "b/y"]
    assert rest[0]["spec"]["queueName"] == "q", "the state at the list revision"
    assert rest[0]["metadata"]["resourceVersion"] == ay["metadata"]["resourceVersion"]
    assert rest[1]["metadata"]["name"] == "x", "deleted later, still listed"
    # a fresh list sees the new state
    assert keys(store.list(WL)[0]) == ["a-b/y", "a/x", "a/y", "a/z", "b/y", "c/0"]


def test_consistent_pages_over_many_chunks() -> None:
    s = open_store()
    for i in range(2500):
        s.create(WL, wl(f"w{i:05d}"))
    _, rev, token = s.list(WL, limit=1)
    for i in range(0, 2500, 2):
        s.delete(WL, "default", f"w{i:05d}")
    rest, _, _ = s.list(WL, continue_token=token)
    assert len(rest) == 2499 and rev == 2500


def test_at_revision(store: Store) -> None:
    store.delete(WL, "a", "x")
    store.create(WL, wl("new", "a"))
    assert keys(store.list(WL, "a", at_revision=6)[0]) == ["a/x", "a/y"]
    assert keys(store.list(WL, "a", at_revision=7)[0]) == ["a/y"]
    assert keys(store.list(WL, "a", at_revision=0)[0]) == []
    with pytest.raises(TooLargeResourceVersion) as err:
        store.list(WL, at_revision=99)
    assert err.value.code == 504 and err.value.message == "Too large resource version: 99, current: 8"


def test_expired_continue_token(tmp_path: Path) -> None:
    path = str(tmp_path / "db.sqlite")
    s = open_store(path, history=5)
    for i in range(6):
        s.create(CQ, cq(f"c{i}"))
    _, rev, token = s.list(CQ, limit=2)
    assert token is not None
    for i in range(10):
        obj = s.get(CQ, None, "c5")
        s.update(CQ, dict(obj, spec={"round": i}))
    with pytest.raises(Expired) as err:
        s.list(CQ, limit=2, continue_token=token)
    assert err.value.code == 410 and err.value.reason == "Expired"
    assert err.value.message.startswith(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list "
        "without the continue parameter, or use the continue token in this response to retrieve the remainder of "
        "the results."
    )
    status = err.value.status()
    assert status["metadata"]["continue"] == err.value.continue_token
    inconsistent = err.value.continue_token
    assert inconsistent is not None and decode_continue(inconsistent)[0] == -1
    rest, rev2, _ = s.list(CQ, continue_token=inconsistent)
    assert names(rest) == ["c2", "c3", "c4", "c5"] and rev2 == s.revision
    assert rest[-1]["spec"] == {"round": 9}
    with pytest.raises(Expired, match=r"^The resourceVersion for the provided list is too old\.$"):
        s.list(CQ, at_revision=rev)
    s.close()
    check_invariants(path)


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("%%%", "invalid continue token: continue key is not valid: "),
        (
            base64.urlsafe_b64encode(b'{"v":"x","rv":1,"start":"a"}').decode(),
            "invalid continue token: continue key is not valid: server does not recognize this encoded version",
        ),
        (
            base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":0,"start":"a"}').decode(),
            "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ),
    ],
)
def test_invalid_continue_token(store: Store, token: str, message: str) -> None:
    with pytest.raises(BadRequest) as err:
        store.list(WL, continue_token=token)
    assert err.value.message.startswith(message)
