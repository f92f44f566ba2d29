"""Crash-test worker: writes to a store forever, printing each acknowledged write.

Usage: ``python storecrash_worker.py DB_PATH ROUND``. Each line is ``<resourceVersion> <name>``,
written (and flushed) only after the store call returned. The test SIGKILLs this process.
"""

from __future__ import annotations

import random
import sys

from pykueue.store import ResourceKey, Store

CM = ResourceKey("", "configmaps", namespaced=True)


def main() -> None:
    path, round_no = sys.argv[1], int(sys.argv[2])
    store = Store(path, history=300)
    rng = random.Random(round_no)
    out = sys.stdout
    created: list[str] = []
    i = 0
    while True:
        i += 1
        if created and rng.random() < 0.4:
            name = rng.choice(created)
            obj = store.get(CM, "default", name)
            obj["data"] = {"n": str(i), "pad": "x" * rng.randint(0, 2000)}
            result = store.update(CM, obj)
        else:
            name = f"r{round_no}-o{i}"
            manifest = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "default", "labels": {"round": str(round_no)}},
                "data": {"n": str(i), "pad": "y" * rng.randint(0, 3000)},
            }
            result = store.create(CM, manifest)
            created.append(name)
        out.write(f"{result['metadata']['resourceVersion']} {name}\n")
        out.flush()


if __name__ == "__main__":
    main()
