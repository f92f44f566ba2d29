"""What one pod's supervisor (``podshim.py``) costs: wall time from spawning it to its recorded exit,
and the CPU it and the pod used, for pods that print ``--lines`` lines (0: ``true``).

Starts the shim exactly as the job runner does (``python -I -S podshim.py DIR``, spec on stdin),
``--pods`` times one after the other, and prints the median and p90 wall time per pod and the mean
CPU (user + system of the shim and everything below it). The spec is built for whichever shim is
installed: ``log`` (the CRI log file) when the shim reads it, else ``stdout`` / ``stderr``.

    python bench/pod_start.py [--pods 60] [--lines 0] [--against OLD_SHIM]

``--against`` alternates pod by pod between the installed shim and another one (e.g. the previous
version: ``git show HEAD~1:src/pykueue/controllers/podshim.py > /tmp/old_podshim.py``), so that
both see the same load on a shared machine.
"""

from __future__ import annotations

import argparse
import marshal
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pykueue.controllers import podshim

SHIM = str(Path(podshim.__file__).resolve())


def one(directory: Path, argv: list[str], shim: str = SHIM) -> tuple[float, float]:
    """Wall time and CPU (shim and pod) of one pod."""
    directory.mkdir(mode=0o700)
    spec = {
        "argv": argv,
        "env": {"PATH": "/usr/bin:/bin"},
        "cwd": str(directory),
        "log": str(directory / "container.log"),
        "stdout": str(directory / "stdout.log"),
        "stderr": str(directory / "stderr.log"),
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", shim, str(directory)],
        cwd=directory,
        env={},
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert proc.stdin is not None
    proc.stdin.write(marshal.dumps(spec))
    proc.stdin.close()
    proc.wait()
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert (directory / "exit").read_text().find('"exitCode": 0') >= 0, (directory / "exit").read_text()
    return elapsed, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def report(label: str, results: list[tuple[float, float]], lines: int) -> None:
    times = sorted(r[0] for r in results)
    cpu = sum(r[1] for r in results) / len(results)
    print(
        f"{label}: {len(results)} pods, {lines} lines each: wall median {statistics.median(times) * 1000:.1f} ms, "
        f"p90 {times[int(len(times) * 0.9)] * 1000:.1f} ms; CPU {cpu * 1000:.1f} ms/pod"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=60)
    parser.add_argument("--lines", type=int, default=0)
    parser.add_argument("--against", help="another podshim.py to alternate with")
    args = parser.parse_args()
    argv = (
        ["true"]
        if not args.lines
        else [
            "sh",
            "-c",
            f"i=0; while [ $i -lt {args.lines} ]; do echo line $i; echo err $i >&2; i=$((i+1)); done",
        ]
    )
    base = Path(tempfile.mkdtemp())
    shims = {"installed": SHIM, **({"against": args.against} if args.against else {})}
    results: dict[str, list[tuple[float, float]]] = {label: [] for label in shims}
    for i in range(args.pods):
        for label, shim in shims.items():
            results[label].append(one(base / f"{label}-{i}", argv, shim))
    for label in shims:
        report(label, results[label], args.lines)


if __name__ == "__main__":
    main()
