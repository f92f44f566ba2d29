"""The HTTP client's ``clientConnection`` QPS/burst (client-go's token bucket) and its connection
pool: concurrent requests overlap on keep-alive connections, Events get a bucket of their own."""

from __future__ import annotations

import argparse
import itertools
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from httpclient_support import flavor

from pykueue.cli.components import build_components
from pykueue.client.http import HTTPClient
from pykueue.client.ratelimit import TokenBucket, limiter_for
from pykueue.client.resources import RESOURCE_FLAVORS
from pykueue.controllers.manager import ControllerManager
from pykueue.runtime.writes import DEFAULT_MAX_IN_FLIGHT


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


def test_token_bucket_allows_a_burst_then_qps() -> None:
    t = FakeTime()
    bucket = TokenBucket(10, 3, clock=t.clock, sleep=t.sleep)
    for _ in range(3):
        assert bucket.wait() == 0  # the bucket starts full
    assert bucket.wait() == pytest.approx(0.1)
    assert bucket.wait() == pytest.approx(0.1)
    t.now += 10  # idle: refills up to the burst, not beyond
    assert [bucket.wait() for _ in range(4)][:3] == [0, 0, 0]
    assert t.slept[-1] == pytest.approx(0.1)


def test_token_bucket_spaces_concurrent_callers() -> None:
    bucket = TokenBucket(50, 1)
    started = time.monotonic()
    threads = [threading.Thread(target=bucket.wait) for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    # 1 at once, 5 more at 50/s: at least 0.1 s in all.
    assert time.monotonic() - started >= 0.09


def test_no_limiter_without_a_positive_qps() -> None:
    assert limiter_for(None, 10) is None
    assert limiter_for(0, 10) is None
    assert limiter_for(-1, 10) is None
    bucket = limiter_for(5, 0)
    assert bucket is not None and bucket.burst == 1


def test_requests_wait_for_the_client_rate_limit(client: HTTPClient) -> None:
    client.set_rate_limit(20, 1)
    started = time.monotonic()
    for i in range(5):
        client.create(RESOURCE_FLAVORS, flavor(f"rl-{i}"))
    assert time.monotonic() - started >= 0.19  # 4 requests after the first, 50 ms apart
    client.set_rate_limit(None, None)
    assert client.limiter is None


def test_a_client_with_its_own_limiter_shares_the_connections(client: HTTPClient) -> None:
    events = client.with_rate_limit(0.2, 1)
    events.create(RESOURCE_FLAVORS, flavor("rl-events-1"))
    started = time.monotonic()
    client.create(RESOURCE_FLAVORS, flavor("rl-main"))  # the main client's bucket is untouched
    assert time.monotonic() - started < 4  # the events' emptied bucket would hold it 5 s
    events.close()  # closing it leaves the shared connections open
    assert client.get(RESOURCE_FLAVORS, "rl-main")["metadata"]["name"] == "rl-main"


def test_the_pool_keeps_a_connection_per_write_in_flight(client: HTTPClient) -> None:
    # Concurrent requests each hold a connection; the pool must keep at least as many alive as the
    # pipelined writes in flight (plus the Events' sender and the other threads), or every round of
    # writes would reconnect (a TLS handshake each against a real server).
    transport: Any = client._http._transport  # ShardedTransport over httpcore ConnectionPools
    pools = [shard._pool for shard in transport.shards]
    assert sum(pool._max_keepalive_connections for pool in pools) >= DEFAULT_MAX_IN_FLIGHT + 16

    def create_all() -> None:
        threads = [threading.Thread(target=client.create, args=(RESOURCE_FLAVORS, flavor(f"pool-{next(names)}"))) for _ in range(16)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()

    names = itertools.count()
    before = sum(len(pool.connections) for pool in pools)
    create_all()
    opened = sum(len(pool.connections) for pool in pools)
    create_all()  # new threads, pinned round-robin to the same pools: they reuse the kept connections
    client.create(RESOURCE_FLAVORS, flavor("pool-after"))
    kept = sum(len(pool.connections) for pool in pools)
    assert opened <= kept <= before + 16  # none closed; at most one per request ever in flight at once


def test_controller_applies_client_connection_from_config(client: HTTPClient, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                "kind": "Configuration",
                "clientConnection": {"qps": 123, "burst": 45},
            }
        )
    )
    args = argparse.Namespace(
        config=config, time_offset_file=None, provisioner=None, max_writes_in_flight=7
    )
    (manager,) = build_components(client, args, tmp_path, run_jobs=False)
    assert isinstance(manager, ControllerManager)
    assert client.limiter is not None and (client.limiter.qps, client.limiter.burst) == (123, 45)
    events = manager.recorder.client
    assert isinstance(events, HTTPClient) and events is not client
    assert events.limiter is not None and events.limiter is not client.limiter
    assert (events.limiter.qps, events.limiter.burst) == (123, 45)
    assert manager.writes.max_in_flight == 7
    client.set_rate_limit(None, None)


def test_controller_defaults_client_connection_to_kueue_defaults(client: HTTPClient, tmp_path: Path) -> None:
    args = argparse.Namespace(config=None, time_offset_file=None, provisioner=None, max_writes_in_flight=None)
    (manager,) = build_components(client, args, tmp_path, run_jobs=False)
    assert client.limiter is not None and (client.limiter.qps, client.limiter.burst) == (300, 500)
    assert manager.writes.max_in_flight == 64
    client.set_rate_limit(None, None)


def _client_connection_config(tmp_path: Path, section: dict[str, object] | None) -> Path:
    doc: dict[str, object] = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}
    if section is not None:
        doc["clientConnection"] = section
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps(doc))
    return config


def test_serves_controller_process_is_not_throttled_by_default(client: HTTPClient, tmp_path: Path) -> None:
    """`pykueue controller --no-default-rate-limit` (serve's child): no limiter without clientConnection,
    with or without a config file; the Events' client neither."""
    for config in (None, _client_connection_config(tmp_path, None)):
        args = argparse.Namespace(
            config=config, time_offset_file=None, provisioner=None, max_writes_in_flight=None, no_default_rate_limit=True
        )
        (manager,) = build_components(client, args, tmp_path, run_jobs=False)
        assert isinstance(manager, ControllerManager)
        assert client.limiter is None
        events = manager.recorder.client
        assert isinstance(events, HTTPClient) and events.limiter is None


def test_serves_controller_process_keeps_an_explicit_client_connection(client: HTTPClient, tmp_path: Path) -> None:
    """A clientConnection the user's --config sets applies even to serve's child; an empty section
    means Kueue's defaults, as for `pykueue controller`."""
    for section, want in (({"qps": 50, "burst": 60}, (50, 60)), ({}, (300, 500))):
        args = argparse.Namespace(
            config=_client_connection_config(tmp_path, section), time_offset_file=None, provisioner=None,
            max_writes_in_flight=None, no_default_rate_limit=True,
        )  # fmt: skip
        (manager,) = build_components(client, args, tmp_path, run_jobs=False)
        assert client.limiter is not None and (client.limiter.qps, client.limiter.burst) == want
        events = manager.recorder.client
        assert isinstance(events, HTTPClient) and events.limiter is not None
        assert (events.limiter.qps, events.limiter.burst) == want
    client.set_rate_limit(None, None)
