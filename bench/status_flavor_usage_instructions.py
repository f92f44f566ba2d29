"""Instructions per ``validate(cq, old)`` with the status flavor-usage check (B) or a no-op (A).

Usage: python bench/status_flavor_usage_instructions.py
(runs itself under ``valgrind --tool=callgrind``: sides A and B, 100 and 600 calls each, and
prints the differenced count per call; needs valgrind).
"""

import re
import subprocess
import sys
import tempfile


def inner(side: str, n: int) -> None:
    from pykueue.api import validation as v
    from pykueue.api.conversion import to_internal
    from pykueue.api.defaults import apply_defaults
    RES = ("cpu", "memory", "gpu")
    usage = [{"name": f"f{i}", "resources": [{"name": r, "total": "10", "borrowed": "1"} for r in RES]} for i in range(4)]
    quota = [{"name": f"f{i}", "resources": [{"name": r, "nominalQuota": "10"} for r in RES]} for i in range(4)]
    obj = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
           "spec": {"resourceGroups": [{"coveredResources": list(RES), "flavors": quota}]},
           "status": {"flavorsUsage": usage, "flavorsReservation": usage}}
    cq, _ = to_internal(obj)
    apply_defaults(cq)
    if side == "A":
        v._schema_flavor_usage = lambda path, usages: []
    for _ in range(n):
        v.validate(cq, cq)

def count(side: str, n: int) -> int:
    with tempfile.NamedTemporaryFile(suffix=".out") as out:
        r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}", sys.executable, __file__, side, str(n)],
                           capture_output=True, text=True, check=True)
        return int(re.search(r"Collected : (\d+)", r.stderr).group(1))

if __name__ == "__main__" and len(sys.argv) == 3:
    inner(sys.argv[1], int(sys.argv[2]))
elif __name__ == "__main__":
    for side in ("A", "B"):
        small, large = count(side, 100), count(side, 600)
        print(f"{side}: {(large - small) / 500:,.0f} instructions per validate(cq, old)")
