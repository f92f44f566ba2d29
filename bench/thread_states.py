"""Where one thread of a running process is, sampled with ``py-spy dump`` (blocked time included).

Usage: python bench/thread_states.py PID [--thread kueue-manager] [--samples 30] [--interval 1]

``py-spy record`` leaves idle threads out, so a thread that spends its time waiting for an HTTP
answer (the controllers' manager thread writing a status synchronously) looks cheap in a flame
graph while it is what holds everything else up. This takes ``--samples`` stack dumps of the
thread (``py-spy dump --nonblocking``; py-spy must be on PATH or in /work/venv-go/bin) and counts
the innermost pykueue frames and the calls under the outermost one, e.g. for serve's controller
process in Kueue's large-scale benchmark (bench/RESULTS.md, issue 16 large-scale)::

    python bench/thread_states.py $(pgrep -f "pykueue controller" | head -1)
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import time
from pathlib import Path


def stack_of(dump: str, thread: str) -> list[str]:
    """The frames (innermost first) of the thread named ``thread`` in a ``py-spy dump``."""
    frames: list[str] = []
    inside = False
    for line in dump.splitlines():
        if line.startswith("Thread "):
            if inside:
                break
            inside = f'"{thread}"' in line
            continue
        if inside and line.startswith("    ") and not line.startswith("     "):
            frames.append(line.strip())
    return frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pid", type=int)
    parser.add_argument("--thread", default="kueue-manager")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    spy = shutil.which("py-spy") or ("/work/venv-go/bin/py-spy" if Path("/work/venv-go/bin/py-spy").exists() else None)
    if spy is None:
        raise SystemExit("py-spy not found: pip install py-spy")
    innermost: collections.Counter[str] = collections.Counter()
    paths: collections.Counter[str] = collections.Counter()
    taken = 0
    for _ in range(args.samples):
        out = subprocess.run([spy, "dump", "-p", str(args.pid), "--nonblocking"], capture_output=True, text=True)
        frames = [f for f in stack_of(out.stdout, args.thread) if "pykueue/" in f]
        if frames:
            taken += 1
            innermost[frames[0].split(" (")[0]] += 1
            # The pykueue calls from the thread's loop inwards, four deep: what the thread is doing.
            paths[" > ".join(f.split(" (")[0] for f in reversed(frames))[-220:]] += 1
        time.sleep(args.interval)
    print(f"{taken} samples of thread {args.thread!r} in pid {args.pid}")
    print("\ninnermost pykueue frame:")
    for frame, n in innermost.most_common(12):
        print(f"  {n:4d}  {frame}")
    print("\npykueue call path (tail):")
    for path, n in paths.most_common(8):
        print(f"  {n:4d}  {path}")


if __name__ == "__main__":
    main()
