"""Many clients at once: N concurrent TLS connections, each authenticating and sending one GET.

Usage: python bench/connections.py --kubeconfig DATA_DIR/kubeconfig [--connections 2000]

Opens every connection at the same moment against a running ``pykueue serve`` (its kubeconfig
gives the URL, CA and token), keeps them all open until every answer is in, and prints how many
got which status (or which error) and how long it took. Checks the listen backlog and the
connection cap under a burst (issue 16: thousands of clients without ``connection reset``).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import ssl
import time
from pathlib import Path

import yaml


async def burst(url: str, ctx: ssl.SSLContext | None, token: str | None, n: int) -> None:
    host, port = url.split("://", 1)[1].rstrip("/").rsplit(":", 1)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    request = f"GET /api/v1/namespaces/default HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}\r\n".encode()
    results: collections.Counter[str] = collections.Counter()
    start = asyncio.Event()
    writers: list[asyncio.StreamWriter] = []

    async def one() -> None:
        await start.wait()
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port), ssl=ctx), 120)
            writers.append(writer)
            writer.write(request)
            line = await asyncio.wait_for(reader.readline(), 120)
            results[line.split()[1].decode() if line else "closed"] += 1
        except Exception as err:  # every failure is counted by kind
            results[type(err).__name__] += 1

    tasks = [asyncio.create_task(one()) for _ in range(n)]
    began = time.monotonic()
    start.set()
    await asyncio.gather(*tasks)
    print(f"{n} concurrent connections: {dict(results)} in {time.monotonic() - began:.1f}s")
    for writer in writers:
        writer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--connections", type=int, default=2000)
    args = parser.parse_args()
    doc = yaml.safe_load(Path(args.kubeconfig).read_text())
    cluster, user = doc["clusters"][0]["cluster"], doc["users"][0]["user"]
    ca = cluster.get("certificate-authority-data")
    ctx = ssl.create_default_context(cadata=base64.b64decode(ca).decode()) if ca else None
    asyncio.run(burst(cluster["server"], ctx, user.get("token"), args.connections))


if __name__ == "__main__":
    main()
