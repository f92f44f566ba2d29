"""Instructions per ClusterQueue / LocalQueue ``/status`` PUT through the API server's handlers
(in process, no HTTP), for two ``src`` trees: what ``bench/http_instructions.py`` does not send.

Usage: python bench/queue_status_put_instructions.py BASE_SRC HEAD_SRC
(runs itself under ``valgrind --tool=callgrind``: per tree and kind, 50 and 250 PUTs, and prints
the differenced count per PUT; needs valgrind). The ClusterQueue has 4 flavors x 3 resources and
its status lists them in ``flavorsReservation`` and ``flavorsUsage``; each PUT changes one total,
as the controllers' status writes do. The LocalQueue's status lists the same usage.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile

RES = ("cpu", "memory", "gpu")
G = "kueue.x-k8s.io"


def inner(src: str, kind: str, n: int) -> None:
    sys.path.insert(0, src)
    from pykueue.apiserver.app import APIServerApp
    from pykueue.apiserver.handlers import APIRequest
    from pykueue.store import Store

    app = APIServerApp(Store(None))
    app.bootstrap()

    def send(method: str, resource: str, name: str | None, body: object, sub: str | None = None) -> dict[str, object]:
        ns = "default" if resource == "localqueues" else None
        req = APIRequest(method, G, "v1beta2", resource, namespace=ns, name=name, subresource=sub,
                         body=json.dumps(body).encode(), content_type="application/json", query={})  # fmt: skip
        out: dict[str, object] = json.loads(app.handlers.handle(req).body)
        return out

    quota = [{"name": f"f{i}", "resources": [{"name": r, "nominalQuota": "10"} for r in RES]} for i in range(4)]
    cq = {"apiVersion": f"{G}/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
          "spec": {"resourceGroups": [{"coveredResources": list(RES), "flavors": quota}]}}  # fmt: skip
    live = send("POST", "clusterqueues", None, cq)
    resource = "clusterqueues"
    if kind == "lq":
        lq = {"apiVersion": f"{G}/v1beta2", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "default"},
              "spec": {"clusterQueue": "cq"}}  # fmt: skip
        live = send("POST", "localqueues", None, lq)
        resource = "localqueues"
    name = "cq" if kind == "cq" else "lq"
    for i in range(n):
        extra = {"borrowed": "0"} if kind == "cq" else {}
        usage = [{"name": f"f{f}", "resources": [{"name": r, "total": str(i % 7 + f), **extra} for r in RES]}
                 for f in range(4)]  # fmt: skip
        live = send("PUT", resource, name, {**live, "status": {"flavorsUsage": usage, "flavorsReservation": usage}},
                    "status")  # fmt: skip


def count(src: str, kind: str, n: int) -> int:
    with tempfile.NamedTemporaryFile(suffix=".out") as out:
        r = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}", sys.executable, __file__,
             "--inner", src, kind, str(n)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        found = re.search(r"Collected : (\d+)", r.stderr)
        assert found is not None, r.stderr[-2000:]
        return int(found.group(1))


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "--inner":
    inner(sys.argv[2], sys.argv[3], int(sys.argv[4]))
elif __name__ == "__main__":
    for kind in ("cq", "lq"):
        for src in sys.argv[1:3]:
            small, large = count(src, kind, 50), count(src, kind, 250)
            print(f"{kind} {src}: {(large - small) / 200:,.0f} instructions per status PUT")
