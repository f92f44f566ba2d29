"""Where the control plane spends its time under Kueue's scheduler benchmark.

Usage: python bench/profile_scheduler.py [--config baseline|large-scale|FILE] [--after 30] [--seconds 30] [--out DIR]
       python bench/profile_scheduler.py --report DIR/serve.raw

Both of serve's processes are recorded at once: the API process (DIR/serve.raw) and its
``pykueue controller`` child (DIR/controller.raw).

Runs ``pykueue bench scheduler --config CONFIG --output DIR`` and, ``--after`` seconds in, attaches
py-spy (``pip install py-spy``; root or ptrace rights) to the ``pykueue serve`` it started for
``--seconds`` seconds, all threads, idle ones excluded (a thread waiting in fsync counts: it is in
the kernel, not idle). Then prints, per thread, the frames with the most samples (inclusive) and
the leaves (self), so a profile is read without a flame-graph viewer. ``--report`` only prints
the tables of an earlier raw profile.

The figures are samples, not CPU seconds: a thread blocked in a system call (fsync) is sampled
like one computing. ``--rate`` is samples per second per thread.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path


def serve_child(pid: int) -> int | None:
    """The ``pykueue serve`` child of the benchmark process."""
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        if b"serve" in cmdline:
            return int(child)
    return None


def controller_child(pid: int) -> int | None:
    """The ``pykueue controller`` child of serve (its controllers' process).

    Serve starts it from a thread other than its main one, so its pid is in that thread's
    ``/proc/PID/task/TID/children``, not the main thread's.
    """
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if b"controller" in cmdline:
                return int(child)
    return None


def report(raw: Path, top: int = 25) -> None:
    """Inclusive and self sample counts of a py-spy raw (collapsed stacks) file, per thread."""
    inclusive: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    leaf: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    threads: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        n = int(count)
        # The thread is named by its outermost pykueue frame (ControllerManager._run, Server.run...).
        thread = next((f.split(" (")[0] for f in frames if "pykueue/" in f or "uvicorn" in f), frames[0])
        threads[thread] += n
        for f in set(frames):
            inclusive[thread][f] += n
        leaf[thread][frames[-1]] += n
    total = sum(threads.values())
    print(f"{total} samples")
    for thread, n in threads.most_common(6):
        print(f"\n== {thread}: {n} samples ({100 * n / total:.0f} %)")
        print("  inclusive:")
        for f, c in inclusive[thread].most_common(top):
            print(f"  {c:6d}  {f[:140]}")
        print("  self:")
        for f, c in leaf[thread].most_common(top // 2):
            print(f"  {c:6d}  {f[:140]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="baseline")
    parser.add_argument("--after", type=float, default=30.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=int, default=50)
    parser.add_argument("--out", type=Path, default=Path("bench-profile"))
    parser.add_argument("--report", type=Path, help="print the tables of this raw profile and exit")
    args = parser.parse_args()
    if args.report:
        report(args.report)
        return
    spy = shutil.which("py-spy")
    if spy is None:
        raise SystemExit("py-spy not found: pip install py-spy")
    args.out.mkdir(parents=True, exist_ok=True)
    bench = subprocess.Popen(
        [sys.executable, "-m", "pykueue", "bench", "scheduler", "--config", args.config, "--output", str(args.out)]
    )
    time.sleep(args.after)
    pid = serve_child(bench.pid)
    if pid is None:
        bench.wait()
        raise SystemExit("no pykueue serve child found (did the run end already?)")
    targets = {"serve": pid}
    controller = controller_child(pid)
    if controller is not None:
        targets["controller"] = controller
    spies = [
        subprocess.Popen(
            [spy, "record", "-p", str(p), "-d", str(int(args.seconds)), "-r", str(args.rate), "-f", "raw",
             "-o", str(args.out / f"{name}.raw"), "--nonblocking"],
        )
        for name, p in targets.items()
    ]  # fmt: skip
    for s in spies:
        s.wait()
    bench.wait()
    for name in targets:
        raw = args.out / f"{name}.raw"
        print(f"\n######## {name} ({raw})")
        report(raw)
    print("\nraw profiles: py-spy's raw format is flamegraph.pl's input", file=sys.stderr)
    os.sync()


if __name__ == "__main__":
    main()
