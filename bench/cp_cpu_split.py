"""Control-plane CPU of a ``pykueue bench scheduler`` run, split between serve's two processes.

Usage: python bench/cp_cpu_split.py --config large-scale|FILE [--src DIR] [--out DIR] [--threads PY_SPY]
       [-- BENCH-ARGS]

Runs ``python -m pykueue bench scheduler --config CONFIG --output OUT`` (with ``PYTHONPATH=DIR``
when ``--src`` names another tree's ``src``, e.g. ``git archive main src | tar -x -C /tmp/base``)
and polls ``/proc`` every 0.2 s for the CPU seconds (utime + stime) of the ``pykueue serve`` it
started (the API process) and of serve's ``pykueue controller`` child. Prints one line: wall,
peak admissions/s, API / controller / total CPU seconds (and their kernel part), ms per Workload,
peak RSS. ``--threads PY_SPY`` also splits each process's CPU by Python thread.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        with contextlib.suppress(OSError):
            out += [int(c) for c in (task / "children").read_text().split()]
    return out


def _cmdline(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _cpu(pid: int) -> tuple[float, float] | None:
    """(user, system) CPU seconds of ``pid``."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) / TICK, int(fields[12]) / TICK


def _thread_cpu(pid: int) -> dict[int, float]:
    out: dict[int, float] = {}
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
                out[int(task.name)] = (int(fields[11]) + int(fields[12])) / TICK
    return out


def _thread_names(pid: int, py_spy: str) -> dict[int, str]:
    """Python thread names by native thread id, from ``py-spy dump`` (3.11 does not name threads)."""
    text = subprocess.run(
        [py_spy, "dump", "--nonblocking", "-p", str(pid)], capture_output=True, text=True
    ).stdout
    out: dict[int, str] = {}
    for line in text.splitlines():
        match = re.match(r'Thread (\d+) \([^)]*\): "([^"]*)"', line)
        if match:
            out[int(match.group(1))] = match.group(2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default="large-scale")
    parser.add_argument("--src", help="run this tree's src (PYTHONPATH) instead of the installed one")
    parser.add_argument("--out", type=Path, default=Path("bench-cpu-split"))
    parser.add_argument(
        "--threads",
        metavar="PY_SPY",
        help="also split each process's CPU by Python thread "
        "(names from this py-spy's dump, taken --names-after seconds in)",
    )
    parser.add_argument("--names-after", type=float, default=10.0)
    parser.add_argument("rest", nargs="*", help="further arguments of pykueue bench scheduler (after --)")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = args.src
    cmd = [sys.executable, "-m", "pykueue", "bench", "scheduler", "--config", args.config, "--output", str(args.out),
           *args.rest]  # fmt: skip
    bench = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    api = ctl = None
    last: dict[str, float] = {"api": 0.0, "controller": 0.0}
    system: dict[str, float] = {"api": 0.0, "controller": 0.0}
    threads: dict[str, dict[int, float]] = {"api": {}, "controller": {}}
    names: dict[int, str] = {}
    started = time.monotonic()
    while bench.poll() is None:
        if args.threads and not names and time.monotonic() - started > args.names_after and ctl is not None:
            names = {**_thread_names(api or 0, args.threads), **_thread_names(ctl, args.threads)}
        if api is None:
            api = next((c for c in _children(bench.pid) if b"serve" in _cmdline(c)), None)
        if api is not None and ctl is None:
            ctl = next((c for c in _children(api) if b"controller" in _cmdline(c)), None)
        for name, pid in (("api", api), ("controller", ctl)):
            if pid is not None and (cpu := _cpu(pid)) is not None:
                last[name] = cpu[0] + cpu[1]
                system[name] = cpu[1]
                if args.threads:
                    threads[name].update(_thread_cpu(pid))
        time.sleep(0.2)
    text = bench.stdout.read() if bench.stdout else ""
    summary = json.loads((args.out / "summary.json").read_text())
    workloads = sum(int(c["count"]) for c in summary["classes"].values()) if "classes" in summary else 0
    total = last["api"] + last["controller"]
    line = (
        f"wall {summary['wall_seconds']:.1f}s peak {summary['peak_admissions_per_second']:.1f}/s "
        f"overall {summary['admissions_per_second']:.1f}/s cpu api {last['api']:.1f}s controller "
        f"{last['controller']:.1f}s total {total:.1f}s"
    )
    if workloads:
        line += (
            f" = {1000 * total / workloads:.2f} ms/Workload (api {1000 * last['api'] / workloads:.2f}, "
            f"controller {1000 * last['controller'] / workloads:.2f})"
        )
    line += f" (system: api {system['api']:.1f}s, controller {system['controller']:.1f}s)"
    rss = summary.get("peak_rss_bytes") or {}
    line += f" rss {(rss.get('control_plane') or 0) / 2**20:.0f} MiB"
    print(line)
    if args.threads:
        for name, per in threads.items():
            by_name: dict[str, float] = {}
            for tid, cpu in per.items():
                label = names.get(tid, "?")
                by_name[label] = by_name.get(label, 0.0) + cpu
            print(
                f"  {name}: "
                + ", ".join(
                    f"{k} {v:.1f}s" for k, v in sorted(by_name.items(), key=lambda kv: -kv[1]) if v >= 0.1
                )
            )
    if bench.returncode:
        print(text, file=sys.stderr)
        raise SystemExit(bench.returncode)


if __name__ == "__main__":
    main()
