"""``pykueue bench scheduler``: start a fresh control plane (or use a cluster), play the
benchmark over HTTP, and write summary.json and timeline.png."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pykueue.bench.config import PUBLISHED, BenchConfig
from pykueue.bench.http import AsyncAPI
from pykueue.bench.ideal import greedy_schedule, ideal_wall_seconds
from pykueue.bench.scheduler import SchedulerBench, print_table, summarize, upstream_usage, upstream_waits
from pykueue.bench.timeline import write_timeline

SERVE_START_SECONDS = 120.0


@dataclass
class ControlPlane:
    """A ``pykueue serve`` child process on a fresh data directory."""

    proc: subprocess.Popen[bytes]
    kubeconfig: Path
    log: Path

    def pids(self) -> list[int]:
        """serve and its live children (the controller process serve starts by default)."""
        out = [self.proc.pid]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == self.proc.pid:
                    out.append(int(stat.parent.name))
        return out

    def peak_rss(self) -> int | None:
        """VmHWM (peak resident set) of serve plus that of its controller process, in bytes."""
        total: int | None = None
        for pid in self.pids():
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        total = (total or 0) + int(line.split()[1]) * 1024
        return total

    def cpu_seconds(self) -> float | None:
        total: float | None = None
        for pid in self.pids():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total = (total or 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_control_plane(data_dir: Path, extra_args: list[str]) -> ControlPlane:
    """``pykueue serve --port 0 --no-job-runner`` (controllers in their own process); returns once the
    controllers' initial sync is done. Its output goes to DATA_DIR/serve.log."""
    kubeconfig = data_dir / "kubeconfig"
    log = data_dir / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pykueue", "serve", "--port", "0", "--data-dir", str(data_dir / "state"),
             "--kubeconfig", str(kubeconfig), "--no-job-runner", *extra_args],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )  # fmt: skip
    plane = ControlPlane(proc, kubeconfig, log)
    deadline = time.monotonic() + SERVE_START_SECONDS
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "controllers: started" in text:
            return plane
        if proc.poll() is not None or "error:" in text:
            plane.stop()
            raise RuntimeError(f"pykueue serve did not start:\n{text}")
        time.sleep(0.05)
    plane.stop()
    raise RuntimeError(f"pykueue serve did not start in {SERVE_START_SECONDS:g}s:\n{log.read_text(errors='replace')}")


def run_scheduler_bench(
    config: BenchConfig,
    output: Path,
    kubeconfig: str | None,
    timeout: float,
    serve_args: list[str],
    progress: TextIO | None = sys.stderr,
    runner_workers: int = 0,
    out: TextIO = sys.stdout,
) -> dict[str, object]:
    """The whole run; returns the summary (also written to OUTPUT/summary.json)."""
    output.mkdir(parents=True, exist_ok=True)
    ideal = ideal_wall_seconds(config)
    greedy = greedy_schedule(config)
    out.write(
        f"config {config.name}: {config.workload_count} workloads; physical limit from the config: "
        f"ideal wall {ideal:.1f}s; greedy wall {greedy.wall_seconds:.1f}s, greedy avg time to admission "
        + ", ".join(f"{c} {v:.2f}s" for c, v in greedy.avg_time_to_admission_seconds.items())
        + "\n"
    )
    published = PUBLISHED.get(config.name)
    if published is not None:
        out.write(
            f"upstream Kueue's published figures: wall {published.wall_seconds:g}s, usage "
            f"{published.usage_percent:g} %, avg time to admission "
            + ", ".join(f"{c} {v:g}s" for c, v in published.avg_time_to_admission_seconds.items())
            + "\n"
        )
    out.flush()
    with tempfile.TemporaryDirectory(prefix="pykueue-bench-") as tmp:
        t0 = time.monotonic()
        plane: ControlPlane | None = None
        if kubeconfig is None:
            plane = start_control_plane(Path(tmp), serve_args)
            kubeconfig = str(plane.kubeconfig)
            out.write(f"control plane: pykueue serve (pid {plane.proc.pid}) ready after {time.monotonic() - t0:.1f}s\n")
            out.flush()
        try:
            bench = _run_loop(_play(config, kubeconfig, t0, timeout, progress, plane is None, runner_workers))
            rss = plane.peak_rss() if plane is not None else None
            cpu = plane.cpu_seconds() if plane is not None else None
        finally:
            if plane is not None:
                plane.stop()
                with contextlib.suppress(OSError):
                    (output / "serve.log").write_text(plane.log.read_text(errors="replace"))
    summary = summarize(bench, ideal, greedy.avg_time_to_admission_seconds, rss)
    (output / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print_table(summary, out)
    upstream = upstream_waits(bench.rec)
    out.write(
        "avg time to admission by upstream's recorder's definition (server timestamps, whole seconds): "
        + ", ".join(f"{c} {v:.2f}s" for c, v in upstream.items())
        + "\n"
    )
    out.write(
        "usage by upstream's recorder's definition (ClusterQueue status flavorsUsage between its events): "
        + ", ".join(f"{c} {v:g} %" for c, v in upstream_usage(bench.rec).items())
        + "\n"
    )
    notes = [f"connection retries {bench.api.connection_retries}", f"status conflicts {bench.conflicts}"]
    if cpu is not None:
        notes.append(f"control plane CPU {cpu:.1f}s ({1000 * cpu / max(1, config.workload_count):.1f} ms/workload)")
    out.write("; ".join(notes) + "\n")
    why = write_timeline(bench.rec, output / "timeline.png")
    out.write(f"timeline: {why}\n" if why else f"wrote {output / 'summary.json'} and {output / 'timeline.png'}\n")
    for err in bench.errors[:10]:
        out.write(f"error: {err}\n")
    return summary


async def _play(config: BenchConfig, kubeconfig: str, t0: float, timeout: float, progress: TextIO | None,
                cleanup: bool, runner_workers: int) -> SchedulerBench:  # fmt: skip
    api = AsyncAPI.from_kubeconfig(kubeconfig)
    bench = SchedulerBench(api, config, t0, progress, runner_workers)
    try:
        await bench.run(timeout)
        if cleanup:
            await bench.cleanup()
    finally:
        await api.close()
    return bench


def _run_loop(coro: Coroutine[Any, Any, SchedulerBench]) -> SchedulerBench:
    """On uvloop when installed (it comes with uvicorn[standard]): the runner keeps up with the
    server's event rate on a fraction of a core."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.run(coro)
    return uvloop.run(coro)
