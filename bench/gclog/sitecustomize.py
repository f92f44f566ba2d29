"""Log the full (generation 2) cyclic collections of every Python process started with it.

Usage (how bench/RESULTS.md measured serve's GC pauses under the scheduler benchmark):

    GCTAG=run1 PYTHONPATH=bench/gclog pykueue bench scheduler --config baseline --output /tmp/run1
    for f in /tmp/gclog-run1-*.log; do echo "$f $(wc -l < $f) collections, $(awk '{s+=$2} END {print s}' $f) s"; done

Each process appends ``<epoch> <pause seconds> <objects collected>`` per full collection to
``/tmp/gclog-$GCTAG-<pid>.log``. Optional, for experiments: ``GCTHRESH=a,b,c`` calls
``gc.set_threshold(a, b, c)`` (serve sets its own thresholds later, see ``cli/serve.py``) and
``SWITCH=s`` calls ``sys.setswitchinterval(s)``.
"""

import gc
import os
import sys
import time

_started = [0.0]
_log = open(f"/tmp/gclog-{os.environ.get('GCTAG', 'x')}-{os.getpid()}.log", "a", buffering=1)  # noqa: SIM115


def _on_gc(phase: str, info: dict) -> None:
    if info["generation"] != 2:
        return
    if phase == "start":
        _started[0] = time.perf_counter()
    else:
        _log.write(f"{time.time():.3f} {time.perf_counter() - _started[0]:.4f} {info['collected']}\n")


gc.callbacks.append(_on_gc)
if os.environ.get("GCTHRESH"):
    gc.set_threshold(*map(int, os.environ["GCTHRESH"].split(",")))
if os.environ.get("SWITCH"):
    sys.setswitchinterval(float(os.environ["SWITCH"]))
