"""What one pod's supervisor (``podshim.py``) costs: wall time from spawning it to its recorded exit,
and the CPU it and the pod used, for pods that print ``--lines`` lines (0: ``true``).

Starts the shim exactly as the job runner does (``python -I -S <shim> DIR``, spec on stdin; the
runner runs the shim compiled once to ``WORK_DIR/.podshim.pyc``, as here unless ``--source``),
``--pods`` times one after the other, and prints the median and p90 wall time per pod and the mean
CPU (user + system of the shim and everything below it). The spec carries both the ``log`` (CRI log
file) of this version and the ``stdout`` / ``stderr`` files of older shims.

    python bench/pod_start.py [--pods 60] [--lines 0] [--source] [--shim PATH] [--against OLD_SHIM]

``--against`` alternates pod by pod between the shim and another one (e.g. the previous version:
``git show HEAD~1:src/pykueue/controllers/podshim.py > /tmp/old_podshim.py``), so that both see
the same load on a shared machine.

Measured 2026-11-26 02:00-02:20 UTC on the shared 2-core machine (load average 10-15), against the
shim before the CRI log (which the runner ran from source):

* the CRI-log shim from source vs the old one, ``true``: CPU of the shim itself +1.1 ms (user
  21.3 vs 20.6 ms, system 8.0 vs 7.7 ms; 150 pods each), wall medians within the noise (144 vs
  149, 92.8 vs 84.2 ms in two runs of 100 / 300 pods);
* fdatasync of the log before the exit record: +13 ms wall per pod on this disk; not done;
* compiled once (what the runner runs now) vs the old one from source, alternating: ``true``
  CPU 30.0 vs 33.7 ms per pod, wall median 152 vs 159 ms (200 pods each); 2,000 lines on each
  stream: CPU 38.7 vs 41.0 ms, wall median 128 vs 137 ms (30 pods each). So a pod starts cheaper
  than before even though the shim now reads and timestamps its output.
"""

from __future__ import annotations

import argparse
import marshal
import py_compile
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
    parser.add_argument("--shim", help="a podshim.py to run instead of the installed one")
    parser.add_argument("--source", action="store_true", help="run the shim's source, not compiled")
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
    shim = args.shim or SHIM
    if not args.source and shim.endswith(".py"):
        shim = py_compile.compile(shim, cfile=str(base / ".podshim.pyc"), doraise=True)
    shims = {"shim": shim, **({"against": args.against} if args.against else {})}
    results: dict[str, list[tuple[float, float]]] = {label: [] for label in shims}
    for i in range(args.pods):
        for label, shim in shims.items():
            results[label].append(one(base / f"{label}-{i}", argv, shim))
    for label in shims:
        report(label, results[label], args.lines)


if __name__ == "__main__":
    main()
