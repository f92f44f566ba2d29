"""Roughly how many CPU instructions one function of the write path costs per request: the
requests of ``bench/status_put_instructions.py`` run under callgrind with that function called twice
(its second result returned), minus the same run with it called once, divided by the requests.

Usage: python bench/phase_instructions.py --mode put [--objects 100] [--src DIR] [--jobs 3] TARGET...

TARGET: ``module:attribute`` (``pykueue.apiserver.handlers:Handlers._validate``,
``pykueue.store.ops:_copy``). ``--mode`` is one of ``status_put_instructions.py``'s runs
(``create``, ``put``, ``finished``, ``event``): a run includes the writes before its own (``put``
creates first), so a function both kinds of write call is counted for each (subtract the
``create`` figure). A rough figure: a function that changes its arguments runs differently the
second time, and the extra allocations move the garbage collector's passes (±50 k).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from instructions import callgrind_collected  # bench/ is the script's directory

ROOT = Path(__file__).resolve().parents[1]


def doubled(target: str) -> None:
    """Replace ``target`` by a function that calls it twice and returns the second result."""
    module_name, attribute = target.split(":")
    owner: Any = importlib.import_module(module_name)
    *parents, name = attribute.split(".")
    for part in parents:
        owner = getattr(owner, part)
    real = getattr(owner, name)
    static = isinstance(owner, type) and isinstance(owner.__dict__.get(name), staticmethod)

    def twice(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)
        return real(*args, **kwargs)

    setattr(owner, name, staticmethod(twice) if static else twice)


def run(mode: str, objects: int, src: str, target: str) -> int:
    return callgrind_collected([__file__, "--inner", target, "--mode", mode, "--objects", str(objects), "--src", src])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("create", "put", "finished", "event"), default="put")
    parser.add_argument("--objects", type=int, default=100)
    parser.add_argument("--src", default=str(ROOT / "src"))
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    parser.add_argument("targets", nargs="*")
    args = parser.parse_args()
    if args.inner is not None:
        sys.path.insert(0, args.src)
        import status_put_instructions  # bench/ is the script's directory

        if args.inner != "none":
            doubled(args.inner)
        status_put_instructions.inner(args.objects, args.mode, args.src)
        return
    targets = ["none", *args.targets]
    with ThreadPoolExecutor(args.jobs) as pool:
        counts = list(pool.map(lambda t: run(args.mode, args.objects, args.src, t), targets))
    for target, count in zip(targets[1:], counts[1:], strict=True):
        print(f"{target:60s} {(count - counts[0]) // args.objects:>12,d}")


if __name__ == "__main__":
    main()
