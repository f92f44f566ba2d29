"""Where the time of serve's event loop goes, from a py-spy raw profile of the API process
(``SERVE_SPY=1 bash bench/upstream_baseline.sh RUN``, py-spy with ``--idle --threads``, so every
sample of the loop's thread is a slice of its wall time).

    python bench/serve_loop_profile.py RUN/serve.raw

Prints the loop thread's samples: idle (waiting for I/O), blocked waiting for the sync thread's
fsync (``GroupCommit.try_sync``; at the end of a turn or mid-turn), asking for an fsync
(``GroupCommit.request``), TLS handshakes, the handlers, and the rest by innermost frame.
"""

from __future__ import annotations

import sys
from collections import Counter


def category(frames: list[str]) -> str:
    """The share a sample of the loop's thread counts in (first matching rule)."""
    stack = ";".join(frames)
    leaf = frames[-1] if frames else ""
    if leaf.startswith(("Runner.run", "run_forever")):
        return "idle (waiting for I/O)"
    if "GroupCommit.try_sync" in stack and leaf.startswith("Condition.wait"):
        where = "end of turn" if "_sync_for_loop" in stack else "mid-turn"
        return f"blocked: waiting for the fsync ({where})"
    if "GroupCommit.request" in stack:
        return "asking the sync thread for an fsync"
    if "do_handshake" in stack:
        return "TLS handshakes"
    if "Handlers.handle" in stack:
        return "handlers (validation, managed fields, store writes)"
    return "other: " + leaf.split(" (")[0]


def main() -> None:
    shares: Counter[str] = Counter()
    with open(sys.argv[1]) as raw:
        for line in raw:
            stack, _, count = line.rstrip().rpartition(" ")
            frames = stack.split(";")
            if "MainThread" in frames[0]:
                shares[category(frames[1:])] += int(count)
    total = sum(shares.values()) or 1
    print(f"loop thread: {total} samples")
    for name, n in shares.most_common(25):
        print(f"{n:7d} {100 * n / total:5.1f} %  {name}")


if __name__ == "__main__":
    main()
