"""One client's burst does not hold another client's request behind all of it (a real ``pykueue
serve`` over HTTPS; ``pykueue.apiserver.flowcontrol``)."""

from __future__ import annotations

import asyncio

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


async def _burst_and_read(server: ServerProcess) -> int:
    """The admin's requests the server handled between the reader's LIST being sent and being
    served (by resourceVersion: each create's, and the revision the LIST was served at)."""
    admin = AsyncAPI.from_kubeconfig(str(server.kubeconfig), pool=POOL)
    assert server.readonly_kubeconfig is not None
    reader = AsyncAPI.from_kubeconfig(str(server.readonly_kubeconfig), pool=1)
    created: list[int] = []
    try:
        await reader.request("GET", "/api/v1/namespaces")  # its connection is open

        async def post(i: int) -> None:
            out = await admin.request("POST", "/api/v1/namespaces/default/events", _event(i))
            created.append(int(out["metadata"]["resourceVersion"]))

        burst = [asyncio.create_task(post(i)) for i in range(BURST)]
        while len(created) < BURST // 4:  # the burst is in full flow
            await asyncio.sleep(0.001)
        at_send = max(created)
        listed = await reader.request("GET", "/api/v1/namespaces")
        served_at = int(listed["metadata"]["resourceVersion"])
        await asyncio.gather(*burst)
        return sum(1 for rv in created if at_send < rv <= served_at)
    finally:
        await admin.close()
        await reader.close()


def test_a_burst_of_one_client_does_not_hold_another_clients_request(server: ServerProcess) -> None:
    # The admin keeps POOL Event POSTs at the server; the read-only user (another flow) sends one
    # LIST meanwhile. Served in turns, the LIST waits for about one turn of the loop, not for the
    # admin's requests already queued: far fewer of those are handled before it than the POOL in
    # flight. (Served in the order read, the LIST waited behind most of them.) Counted by the
    # server's revisions, so a client slow to read its answers does not change the count.
    ahead = asyncio.run(_burst_and_read(server))
    assert ahead < POOL // 2, ahead
