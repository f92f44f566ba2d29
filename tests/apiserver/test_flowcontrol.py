"""Fair turns between flows (``pykueue.apiserver.flowcontrol.FairDispatcher``) on a real event loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykueue.apiserver import flowcontrol
from pykueue.apiserver.app import APIServerApp
from pykueue.apiserver.flowcontrol import FairDispatcher, flow_of
from pykueue.store import Store


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A real event loop of the test's own, not running (the tests turn it)."""
    new = asyncio.new_event_loop()
    try:
        yield new
    finally:
        new.close()


def _served(loop: asyncio.AbstractEventLoop, d: FairDispatcher, requests: list[tuple[str, str]]) -> list[str]:
    order: list[str] = []
    for flow, name in requests:
        d.submit(flow, lambda name=name: order.append(name))

    async def settle() -> None:
        while d.queued():
            await asyncio.sleep(0)

    loop.run_until_complete(settle())
    return order


def test_queued_requests_are_served_one_per_flow_in_turn_and_in_order_within_a_flow(loop: asyncio.AbstractEventLoop) -> None:
    d = FairDispatcher(loop, budget=0.0)  # the loop is always busy: everything waits its turn
    order = _served(loop, d, [("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"), ("c", "c1"), ("b", "b2")])
    assert order == ["a1", "b1", "c1", "a2", "b2", "a3"]


def test_a_request_is_served_at_once_while_the_turn_has_budget_and_nothing_waits(loop: asyncio.AbstractEventLoop) -> None:
    d = FairDispatcher(loop, budget=10.0)
    served: list[str] = []
    d.submit("a", lambda: served.append("a1"))
    assert served == ["a1"] and d.queued() == 0  # synchronously, as the direct path did


def test_past_the_turn_budget_requests_wait_for_the_next_turns(loop: asyncio.AbstractEventLoop) -> None:
    d = FairDispatcher(loop, budget=0.005)
    served: list[str] = []

    def slow(name: str) -> None:
        served.append(name)
        time.sleep(0.006)  # spends the turn's budget

    d.submit("a", lambda: slow("a1"))
    d.submit("b", lambda: served.append("b1"))  # same turn, budget spent: queued
    d.submit("a", lambda: served.append("a2"))  # queued behind b1's turn
    assert served == ["a1"] and d.queued() == 2
    loop.run_until_complete(asyncio.sleep(0.01))
    assert served == ["a1", "b1", "a2"]
    d.submit("c", lambda: served.append("c1"))  # a new turn, nothing queued: at once
    assert served[-1] == "c1"


def test_a_request_that_raises_does_not_stop_the_others(loop: asyncio.AbstractEventLoop) -> None:
    d = FairDispatcher(loop, budget=0.0)

    def boom() -> None:
        raise RuntimeError("a bug in serving")

    served: list[str] = []
    d.submit("a", boom)
    d.submit("b", lambda: served.append("b1"))
    loop.run_until_complete(asyncio.sleep(0.01))
    assert served == ["b1"]


def test_the_flow_is_the_applications_or_else_the_listener() -> None:
    assert flow_of({"pykueue.flow": ("pykueue-admin", ("127.0.0.1", 1)), "server": ("127.0.0.1", 1)}) == (
        "pykueue-admin",
        ("127.0.0.1", 1),
    )
    assert flow_of({"server": ("127.0.0.1", 2)}) == ("", ("127.0.0.1", 2))


def test_loop_busy_is_whether_the_running_loops_dispatcher_has_requests_queued(loop: asyncio.AbstractEventLoop) -> None:
    assert flowcontrol.loop_busy() is False  # off any loop
    d = flowcontrol.dispatcher(loop)
    d.budget = 0.0
    seen: list[bool] = []

    async def scenario() -> None:
        seen.append(flowcontrol.loop_busy())
        d.submit("a", lambda: None)  # budget 0: queued
        seen.append(flowcontrol.loop_busy())
        while d.queued():
            await asyncio.sleep(0)
        seen.append(flowcontrol.loop_busy())

    loop.run_until_complete(scenario())
    assert seen == [False, True, False]


def test_the_api_server_tells_its_store_when_its_loop_is_busy(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "store.db"))
    try:
        APIServerApp(store)
        assert store.loop_busy is flowcontrol.loop_busy
    finally:
        store.close()
