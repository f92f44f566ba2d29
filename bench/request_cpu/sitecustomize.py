"""serve's handler CPU by kind of request, for a benchmark run (not product code).

Usage: PYTHONPATH=bench/request_cpu[:OTHER/src] python bench/cp_cpu_split.py --config FILE ...
       (or any command that starts ``pykueue serve``); REQUEST_CPU_OUT=DIR (default /tmp).

Python imports this ``sitecustomize`` in every process it starts with that PYTHONPATH; in a
``pykueue serve`` process it wraps ``Handlers.handle`` (the synchronous part of every request:
decode, validation, managedFields, the store write, the answer's encoding), the watch hub's event
intake and fan-out and the watch streams' batch encoding with ``time.thread_time()``, and at exit
writes ``DIR/request_cpu.PID.json``: the process's CPU seconds and, per ``METHOD resource[/sub]``,
the count and the CPU seconds. What is left of the process's CPU is the HTTP layer (uvicorn,
httptools, TLS, the ASGI app), the sends, the fsync thread and start-up.
"""

from __future__ import annotations

import atexit
import collections
import importlib
import importlib.abc
import json
import os
import sys
import time
from typing import Any

_STATS: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])


def _timed(label: Any, fn: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            entry = _STATS[label(*args) if callable(label) else label]
            entry[0] += 1
            entry[1] += time.thread_time() - t0

    return wrapper


def _request_label(_self: Any, req: Any) -> str:
    sub = f"/{req.subresource}" if req.subresource else ""
    return f"{req.method} {req.resource}{sub}{' watch' if req.flag('watch') else ''}"


def _install() -> None:
    handlers = importlib.import_module("pykueue.apiserver.handlers")
    watch = importlib.import_module("pykueue.apiserver.watch")
    handlers.Handlers.handle = _timed(_request_label, handlers.Handlers.handle)
    # _on_event runs _dispatch inline when it is called on the loop thread: report them apart
    watch.WatchHub._on_event = _timed(
        "watch hub: event intake (includes fan-out on the loop)", watch.WatchHub._on_event
    )
    watch.WatchHub._dispatch = _timed("watch hub: fan-out", watch.WatchHub._dispatch)
    watch._encode_batch = _timed("watch streams: batch encoding", watch._encode_batch)


class _Hook(importlib.abc.MetaPathFinder):
    """Installs the wrappers when the app module is first imported (its imports are loaded by then)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> None:
        if name == "pykueue.apiserver.app":
            sys.meta_path.remove(self)
            _install()
        return None


def _dump() -> None:
    times = os.times()
    out = {"process_cpu_seconds": times.user + times.system, "requests": dict(_STATS)}
    path = os.path.join(os.environ.get("REQUEST_CPU_OUT", "/tmp"), f"request_cpu.{os.getpid()}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


with open("/proc/self/cmdline", "rb") as _f:
    if b"serve" in _f.read().split(b"\0")[:5]:
        sys.meta_path.insert(0, _Hook())
        atexit.register(_dump)
