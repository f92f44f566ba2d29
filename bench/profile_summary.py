"""Summarise a py-spy raw profile of the controller (``bench/cluster_throughput.py --profile FILE``):
samples per thread, and where the manager thread's samples go (waiting for a write slot, waiting
for its inbox, the cycle, the reconciles, the watch changes and completions).

    python bench/cluster_throughput.py --server serve --qps 5000 --burst 5000 --profile /tmp/prof.txt
    python bench/profile_summary.py /tmp/prof.txt [--depth 3]

py-spy runs with ``--idle --threads`` there, so every thread is sampled at the same rate and a
thread's share of samples is its share of wall time (uvloop's C loop shows as ``EventLoopThread._run``
whether it polls or works).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("profile")
    p.add_argument("--depth", type=int, default=2, help="frames below each anchor to group by")
    p.add_argument("--top", type=int, default=12)
    args = p.parse_args()
    threads: Counter[str] = Counter()
    stacks: list[tuple[list[str], int]] = []
    for line in Path(args.profile).read_text().splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        frames = stack.split(";")
        n = int(count)
        name = frames[0].split(": ", 1)[-1]
        threads[name.split("-")[0] if name.startswith("informer-") else name] += n
        if "kueue-manager" in frames[0]:
            stacks.append(([f.split(" (")[0] for f in frames], n))
    print("samples per thread (informers summed):")
    for name, n in threads.most_common(args.top):
        print(f"  {n:6d}  {name}")
    total = sum(n for _, n in stacks) or 1
    waits = {"write slot": "WritePipeline.submit", "inbox": "ControllerManager._drain;Queue.get"}
    print(f"manager thread: {total} samples")
    for what, marker in waits.items():
        n = sum(c for names, c in stacks if marker in ";".join(names))
        print(f"  waiting for a {what}: {n} ({100 * n / total:.0f}%)")
    for anchor in ("KueueCore.cycle", "ControllerManager._reconcile_ready", "ControllerManager._receive"):
        groups: Counter[str] = Counter()
        for names, n in stacks:
            joined = ";".join(names)
            if anchor in names and not any(m in joined for m in waits.values()):
                i = names.index(anchor)
                groups[";".join(names[i + 1 : i + 1 + args.depth])] += n
        print(f"  {anchor} (busy): {sum(groups.values())} ({100 * sum(groups.values()) / total:.0f}%)")
        for key, n in groups.most_common(args.top):
            print(f"    {n:6d}  {key}")


if __name__ == "__main__":
    main()
