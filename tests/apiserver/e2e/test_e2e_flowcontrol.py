"""One client's burst does not hold another client's request behind all of it (a real ``pykueue
serve`` over HTTPS; ``pykueue.apiserver.flowcontrol``)."""

from __future__ import annotations

import asyncio
import time

from conftest import ServerProcess

from pykueue.bench.http import AsyncAPI

BURST = 1200
"""The admin's Event POSTs, at most ``POOL`` at the server at once: far more than one turn of the
loop serves (2 ms), so most of them wait for their turn when the reader's request arrives."""
POOL = 256


def _event(i: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"burst-{i:04d}", "namespace": "default"},
        "involvedObject": {"kind": "Namespace", "name": "default", "apiVersion": "v1"},
        "reason": "Burst",
        "message": f"event {i}",
        "type": "Normal",
    }


async def _burst_and_read(server: ServerProcess) -> tuple[int, int]:
    admin = AsyncAPI.from_kubeconfig(str(server.kubeconfig), pool=POOL)
    assert server.readonly_kubeconfig is not None
    reader = AsyncAPI.from_kubeconfig(str(server.readonly_kubeconfig), pool=1)
    answered: list[float] = []
    try:
        await reader.request("GET", "/api/v1/namespaces/default")  # its connection is open

        async def post(i: int) -> None:
            await admin.request("POST", "/api/v1/namespaces/default/events", _event(i))
            answered.append(time.perf_counter())

        burst = [asyncio.create_task(post(i)) for i in range(BURST)]
        while len(answered) < BURST // 4:  # the burst is in full flow
            await asyncio.sleep(0.001)
        before = len(answered)
        await reader.request("GET", "/api/v1/namespaces/default")
        after = len(answered)
        await asyncio.gather(*burst)
        return before, after
    finally:
        await admin.close()
        await reader.close()


def test_a_burst_of_one_client_does_not_hold_another_clients_request(server: ServerProcess) -> None:
    # The admin keeps POOL Event POSTs at the server; the read-only user (another flow) sends one
    # GET meanwhile. Served in turns, the GET waits for about one turn of the loop, not for the
    # admin's requests already queued: far fewer of those are answered before the GET than the
    # POOL in flight. (Served in the order read, the GET waited behind most of them.)
    before, after = asyncio.run(_burst_and_read(server))
    assert after - before < POOL // 2, (before, after)
