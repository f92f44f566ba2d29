"""Pods per second through the local job runner, with and without its Pod objects (issue 12).

Runs one Job of ``--pods`` completions (``true``, parallelism 8) through the runner on the
embedded API (in-process client, in-memory store), once with ``publish_pods=False`` (no Pod or
Node objects: the runner as it was before) and once with them, alternating ``--rounds`` times,
and prints pods/s until the Job is Complete. With Pod objects it then waits for the publisher to
catch up and checks every Pod ended ``Succeeded``.

    python bench/pods.py [--pods 120] [--rounds 2]

Measured 2026-11-26 on the shared 2-core machine (other engineers' tests running; the same
configuration varies by up to 25 % between runs):

* Pod objects only (120 pods): off 33.5 / 38.6 pods/s, on 34.8 / 35.3 pods/s.
* Pod objects plus the Scheduled / Started Events (200 pods): off 38.4 / 38.4, on 34.6 / 30.2.

So about 10 % fewer pods/s with everything on; the cost is the publisher thread's API writes
(create, status, two Events per pod) competing for the interpreter, never a wait on the runner's
own thread.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from pykueue.apiserver.app import create_app
from pykueue.client.inprocess import InProcessClient
from pykueue.client.resources import JOBS, PODS
from pykueue.controllers.jobrunner import JobRunner
from pykueue.store import Store


def run(publish: bool, n: int) -> float:
    """Pods/s of one Job of ``n`` pods."""
    _, parts = create_app(Store(None))
    parts.bootstrap()
    client = InProcessClient(parts.handlers)
    work = Path(tempfile.mkdtemp())
    runner = JobRunner(
        client, work / "pods", run_unmanaged_jobs=True, pod_failure_backoff=0, cgroups=False, publish_pods=publish
    )
    runner.start()
    runner.wait_ready(10)
    container = {"name": "c", "image": "x", "command": ["true"]}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "bench", "namespace": "default"},
        "spec": {
            "completions": n,
            "parallelism": 8,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }
    start = time.monotonic()
    client.create(JOBS, job)
    while True:
        status = client.get(JOBS, "bench", "default").get("status") or {}
        if any(c["type"] == "Complete" and c["status"] == "True" for c in status.get("conditions") or []):
            break
        time.sleep(0.02)
    elapsed = time.monotonic() - start
    if runner.publisher is not None:
        runner.publisher.wait_idle(30)
        pods, _ = client.list(PODS, "default")
        assert len(pods) == n and all(p["status"]["phase"] == "Succeeded" for p in pods), len(pods)
    runner.stop()
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for _ in range(args.rounds):
        for publish in (False, True):
            rate = run(publish, args.pods)
            print(f"Pod objects {'on ' if publish else 'off'}: {rate:.1f} pods/s ({args.pods} pods, parallelism 8)")


if __name__ == "__main__":
    main()
