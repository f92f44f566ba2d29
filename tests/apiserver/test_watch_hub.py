"""The watch hub hands live events over as stored JSON and decodes only for watchers that need it."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from pykueue.apiserver.app import APIServerApp
from pykueue.apiserver.handlers import APIRequest, negotiate
from pykueue.apiserver.watch import HubEvent
from pykueue.store import Store

G = "kueue.x-k8s.io"
WORKLOAD = {
    "apiVersion": f"{G}/v1beta2",
    "kind": "Workload",
    "metadata": {"name": "w", "namespace": "default", "labels": {"a": "b"}},
    "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}]},
}  # fmt: skip


def _post(app: APIServerApp, obj: dict[str, Any]) -> None:
    req = APIRequest("POST", G, "v1beta2", "workloads", namespace="default", body=json.dumps(obj).encode())
    assert app.handlers.handle(req).status == 201


def _live_event(app: APIServerApp) -> HubEvent:
    sub = app.hub.subscribe(G, "workloads", None)
    _post(app, WORKLOAD)  # no loop bound: the hub dispatches on the writing thread
    (event,) = sub.drain()
    return event


def _encoder(app: APIServerApp, version: str, accept: str = "application/json") -> Any:
    info = app.backend.lookup(G, version, "workloads")
    req = APIRequest("GET", G, version, "workloads", accept=accept)
    return app.handlers._event_encoder(req, info, negotiate(accept))


def test_storage_version_watchers_get_the_stored_bytes_undecoded() -> None:
    app = APIServerApp(Store(None))
    app.bootstrap()
    event = _live_event(app)
    assert event.raw is not None and event.namespace == "default"
    sent = _encoder(app, "v1beta2")(event)
    assert sent is event.raw, "no decode, no re-encode"
    assert event._object is None
    assert msgspec.json.decode(sent) == app.store.get(app.backend.lookup(G, "v1beta2", "workloads").key(),
                                                      "default", "w")  # fmt: skip


def test_other_versions_and_tables_decode_once_and_convert() -> None:
    app = APIServerApp(Store(None))
    app.bootstrap()
    event = _live_event(app)
    old = msgspec.json.decode(_encoder(app, "v1beta1")(event))
    assert old["apiVersion"] == f"{G}/v1beta1" and old["metadata"]["name"] == "w"
    table = msgspec.json.decode(
        _encoder(app, "v1beta2", "application/json;as=Table;v=v1;g=meta.k8s.io")(event)
    )
    assert table["kind"] == "Table" and table["rows"][0]["cells"][0] == "w"
    assert event.object is event.object, "decoded once, shared"


def test_a_hub_event_needs_an_object_or_its_json() -> None:
    with pytest.raises(ValueError):
        HubEvent("ADDED", None, 1, G, "workloads", "default")


def test_a_loop_thread_write_does_not_overtake_one_from_another_thread() -> None:
    """Events are dispatched in revision order whichever thread wrote them (review find)."""
    import asyncio
    import threading

    from pykueue.apiserver.watch import WatchHub
    from pykueue.store import ResourceKey

    store = Store(None)
    configmaps = ResourceKey("", "configmaps", namespaced=True)
    hub = WatchHub(store)

    def config_map(name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}

    async def scenario() -> list[tuple[int, str]]:
        hub.start(asyncio.get_running_loop())
        sub = hub.subscribe("", "configmaps", None)
        writer = threading.Thread(target=lambda: store.create(configmaps, config_map("from-thread")))
        writer.start()
        writer.join()  # its event is handed over to the loop, not dispatched yet
        store.create(configmaps, config_map("from-loop"))
        await asyncio.sleep(0.05)
        return [(e.revision, e.object["metadata"]["name"]) for e in sub.drain()]

    assert asyncio.run(scenario()) == [(1, "from-thread"), (2, "from-loop")]


def test_a_busy_watch_stream_keeps_its_bookmarks_and_timeout_without_a_timer_per_batch(tmp_path: Any) -> None:
    """A live watch stream wakes for each batch of events, for its bookmarks (every
    ``bookmark_interval``) and at its timeout; its waits share one timer per wake-up time instead of
    one timer (and one task) per batch, as ``asyncio.wait_for`` made."""
    import asyncio
    import threading
    import time

    store = Store(str(tmp_path / "store.db"))
    app = APIServerApp(store, bookmark_interval=0.3)
    lines: list[dict[str, Any]] = []
    timers: list[float] = []

    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        app.hub.start(loop)
        app.bootstrap()
        real_call_later = loop.call_later

        def counting_call_later(delay: float, *args: Any, **kwargs: Any) -> Any:
            timers.append(delay)
            return real_call_later(delay, *args, **kwargs)

        loop.call_later = counting_call_later  # type: ignore[method-assign]
        # 4 s: the writer's 40 posts (about 1 s) end well before the timeout on a busy machine.
        query = {"watch": ["true"], "allowWatchBookmarks": ["true"], "timeoutSeconds": ["4"]}
        req = APIRequest("GET", G, "v1beta2", "workloads", namespace="default", query=query)
        started = time.monotonic()  # before the handler starts the stream's timeout, not after
        resp = await app.handlers.handle_async(req)

        def writer() -> None:  # on a thread of its own: its pauses make no timers on the loop
            for i in range(40):
                _post(app, {**WORKLOAD, "metadata": {"name": f"w{i}", "namespace": "default"}})
                time.sleep(0.02)

        thread = threading.Thread(target=writer)
        thread.start()
        async for chunk in resp.stream:
            lines.extend(json.loads(line) for line in chunk.splitlines() if line)
        thread.join()
        return time.monotonic() - started

    try:
        elapsed = asyncio.run(scenario())
    finally:
        app.hub.close()
        store.close()
    added = [e for e in lines if e["type"] == "ADDED"]
    bookmarks = [e for e in lines if e["type"] == "BOOKMARK"]
    assert [e["object"]["metadata"]["name"] for e in added] == [f"w{i}" for i in range(40)]
    assert 3.9 <= elapsed < 10, elapsed  # the timeout ends the stream
    assert len(bookmarks) >= 3, [e["type"] for e in lines]  # every 0.3 s, also while events flow
    # the 40 batches made no timers: the bookmarks' and the timeout's did (asyncio.wait_for: one each)
    assert len(timers) <= len(bookmarks) + 3, (timers, len(bookmarks))
