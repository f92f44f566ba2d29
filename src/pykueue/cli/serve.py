"""``pykueue serve``: run the embedded Kubernetes-compatible API server."""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path
from typing import Any

from pykueue.cli.components import add_component_arguments, runner_argument_error

EXIT_USAGE = 2

GC_THRESHOLDS = (50_000, 20, 20)
"""``gc.set_threshold`` of a serving process (CPython's default is (700, 10, 10)).

A control plane holding tens of thousands of objects (millions of Python objects: stored,
cached and typed copies) paid a full cyclic collection of 0.7–1.3 s, holding the GIL, about
every 5 s under Kueue's scheduler benchmark (17 in its first 90 s, 13 % of the wall time); API
requests, watches and scheduling cycles all stopped meanwhile. Almost all of the garbage is
freed by reference counting; collecting young objects every 50,000 allocations instead of every
700, and the old generations 20× less often, leaves the cycle collector a background cost.
"""


def tune_gc() -> None:
    """Apply :data:`GC_THRESHOLDS` (see there why)."""
    gc.set_threshold(*GC_THRESHOLDS)


def freeze_gc() -> None:
    """Once a driver's initial load or sync is done: collect, then move every object alive into
    the cyclic collector's permanent generation (``gc.freeze``).

    The loaded state (caches, queues, workload infos: hundreds of thousands of tracked objects)
    lives as long as the process; left in the generations, every full collection scans it again
    (0.5–1 µs per object, about 1 s per pass with 100,000 pending workloads, holding the GIL). Frozen
    objects are still freed by reference counting when replaced; only cycles among them are never
    collected, which that state does not form. Called by the driver that owns the process
    (``pykueue controller`` and serve's in-process controllers after their initial sync, serve
    once its store is loaded, ``pykueue schedule`` after loading), never by a library import.
    """
    gc.collect()
    gc.freeze()


def add_parser(sub: Any) -> None:
    """Register the ``serve`` subcommand."""
    p = sub.add_parser(
        "serve",
        help="run the embedded control plane (a Kubernetes-compatible API server on SQLite)",
        description="Serve the Kubernetes API for Kueue's kinds (and the built-in kinds Kueue uses) on a "
        "SQLite store, write a kubeconfig for kubectl and the Kubernetes clients, and run until Ctrl-C.",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1); HTTPS with the server's own CA and a bearer token "
        "(both written into the kubeconfig) on every address",
    )
    p.add_argument(
        "--insecure-loopback",
        action="store_true",
        help="serve plain HTTP without authentication (loopback --host only): every local user and "
        "process, and any web page that reaches the port, can then use the API",
    )
    p.add_argument("--port", type=int, default=6443, help="port to bind (default 6443; 0 picks a free port)")
    p.add_argument(
        "--data-dir",
        type=Path,
        help="state directory (default $XDG_STATE_HOME/pykueue, i.e. ~/.local/state/pykueue)",
    )
    p.add_argument(
        "--kubeconfig", type=Path, help="where to write the kubeconfig (default DATA_DIR/kubeconfig)"
    )
    p.add_argument(
        "--no-controllers", action="store_true", help="serve the API only, without Kueue's controllers"
    )
    p.add_argument(
        "--controllers-in-process",
        action="store_true",
        help="run Kueue's controllers (and the job runner) in the API server's process, as before; by "
        "default they run in a process of their own (`pykueue controller`, restarted if it crashes) that "
        "talks to the API over HTTPS, so they do not slow the API down",
    )
    p.add_argument(
        "--watch-history",
        type=int,
        default=100_000,
        metavar="N",
        help="changes kept for resuming watches (older resourceVersions get 410 Expired; default 100000)",
    )
    p.add_argument(
        "--log-level",
        default="warning",
        choices=("critical", "error", "warning", "info", "debug"),
        help="server log level (default warning)",
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="close keep-alive connections idle this long (default 120, above client-go's 90 s reuse)",
    )
    p.add_argument(
        "--header-timeout",
        type=float,
        default=32.0,
        metavar="SECONDS",
        help="close connections that do not send a request's headers in this time, counted from the "
        "connection's start or the request's first byte (default 32, as kube-apiserver)",
    )
    p.add_argument(
        "--body-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="close connections that do not send a request's body in this time (default 60)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=10_000,
        metavar="N",
        help="open connections served at once (watches included); more get 503 and a log line "
        "(default 10000, lowered to what the open-file limit allows)",
    )
    add_component_arguments(p, embedded=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the server with the parsed options."""
    from pykueue.api.feature_gates import DEFAULT_GATES
    from pykueue.apiserver.protocol import ConnectionLimits
    from pykueue.apiserver.server import ServeOptions, is_loopback, serve

    if not 0 <= args.port <= 65535:
        print(f"error: --port {args.port} is not a valid port", flush=True)
        return EXIT_USAGE
    if args.watch_history < 1:
        print("error: --watch-history must be at least 1", flush=True)
        return EXIT_USAGE
    problem = runner_argument_error(args)
    if problem is not None:
        print(f"error: {problem}", flush=True)
        return EXIT_USAGE
    if args.insecure_loopback and not is_loopback(args.host):
        print(
            f"error: --insecure-loopback serves without authentication and is refused for --host {args.host}, "
            "which is not a loopback address",
            flush=True,
        )
        return EXIT_USAGE
    for flag in ("idle_timeout", "header_timeout", "body_timeout"):
        if not getattr(args, flag) > 0:
            print(f"error: --{flag.replace('_', '-')} must be greater than 0", flush=True)
            return EXIT_USAGE
    if args.max_connections < 1:
        print("error: --max-connections must be at least 1", flush=True)
        return EXIT_USAGE
    gates = DEFAULT_GATES
    if args.config is not None and not args.no_controllers:
        # Checked here so a bad file is a usage error before serving, wherever the controllers run.
        from pykueue.api.config import ConfigError, load_config_file

        try:
            # serve admits as Kueue's webhooks would, which read the controller manager's gates
            gates = load_config_file(str(args.config)).feature_gates
        except ConfigError as err:
            print(f"error: {err}", flush=True)  # names the file
            return EXIT_USAGE
        except OSError as err:
            print(f"error: --config {args.config}: {err.strerror or err}", flush=True)
            return EXIT_USAGE
    options = ServeOptions(
        host=args.host,
        port=args.port,
        data_dir=args.data_dir,
        kubeconfig=args.kubeconfig,
        controllers=not args.no_controllers,
        log_level=args.log_level,
        watch_history=args.watch_history,
        insecure_loopback=args.insecure_loopback,
        limits=ConnectionLimits(args.idle_timeout, args.header_timeout, args.body_timeout, args.max_connections),
        gates=gates,
        start_components=_starter(args),
    )
    tune_gc()
    return serve(options)


CONTROLLER_KUBECONFIG = "kubeconfig-controller"
"""The controller process's kubeconfig in the data directory (serve's admin credential and CA)."""


def _mount_visibility(parts: Any, components: list[Any]) -> None:
    """The in-process controllers answer the visibility API (upstream: the controller manager's
    visibility server), from their queue manager."""
    from pykueue.controllers.manager import ControllerManager
    from pykueue.visibility.api import mount
    from pykueue.visibility.source import ManagerSource

    for comp in components:
        if isinstance(comp, ControllerManager):
            mount(parts, ManagerSource(comp))


def _starter(args: argparse.Namespace) -> Any:
    """Starts the components once the API server is ready (None: nothing to start): the controllers
    in a process of their own (the default), or in this one."""
    if args.no_controllers and args.provisioner is None:
        return None
    if args.no_controllers or args.controllers_in_process:
        return _in_process_starter(args)
    return _process_starter(args)


def controller_argv(args: argparse.Namespace, kubeconfig: Path, data_dir: Path) -> list[str]:
    """The ``pykueue controller`` command line of serve's controller process: serve's API through
    ``kubeconfig``, no webhooks (serve admits itself), no metrics or visibility ports of its own
    (serve proxies both from its local endpoint), the job runner on serve's data directory (so
    ``pods/log`` finds the pods' files), no client rate limit unless ``--config`` sets
    ``clientConnection``, and serve's component flags."""
    argv = [
        sys.executable, "-m", "pykueue", "controller", "--kubeconfig", str(kubeconfig),
        "--work-dir", str(data_dir), "--log-level", args.log_level, "--no-webhooks",
        "--metrics-bind-address", "0", "--visibility-port", "-1",
        "--local-endpoint", "127.0.0.1:0", "--exit-with-parent",
        # serve's own API server over loopback, no cluster's shared one: upstream's 300 QPS client
        # limit would only slow the controllers down (unless --config sets clientConnection).
        "--no-default-rate-limit",
    ]  # fmt: skip
    if not args.no_job_runner:
        argv += ["--run-jobs", "--publish-pods"]
    for flag in ("config", "provisioner", "time_offset_file", "pod_scratch_dir"):
        value = getattr(args, flag)
        if value is not None:
            argv += [f"--{flag.replace('_', '-')}", str(Path(value).resolve())]
    if args.run_unmanaged_jobs:
        argv.append("--run-unmanaged-jobs")
    if args.run_as_user:
        argv += ["--run-as-user", str(args.run_as_user)]
    if args.pod_runtime != "process":
        argv += ["--pod-runtime", args.pod_runtime]
    if args.max_pod_processes is not None:
        argv += ["--max-pod-processes", str(args.max_pod_processes)]
    return argv


def _process_starter(args: argparse.Namespace) -> Any:
    def start(parts: Any, serving: Any) -> Any:
        from pykueue.apiserver.server import write_kubeconfig
        from pykueue.cli.embedded import ControllerProcess, RemoteVisibility
        from pykueue.controllers.podobjects import pod_log_dir
        from pykueue.visibility.api import GROUP, aggregated_group, api_group

        data_dir: Path = serving.data_dir
        kubeconfig = data_dir / CONTROLLER_KUBECONFIG
        write_kubeconfig(kubeconfig, serving.url, serving.token, serving.ca_data, user_name="pykueue-controller")
        process = ControllerProcess(controller_argv(args, kubeconfig, data_dir), serving.out, on_fatal=serving.fail)
        parts.mount_group(GROUP, RemoteVisibility(process), api_group(), aggregated_group())
        parts.metrics_source = process.metrics
        if not args.no_job_runner:
            pods = data_dir / "pods"
            parts.pod_logs = lambda pod: pod_log_dir(pods, pod)
        freeze_gc()  # the API server is ready (its store opened): before the controller process starts
        process.start()
        return process.stop

    return start


def _in_process_starter(args: argparse.Namespace) -> Any:
    run_jobs = not args.no_controllers and not args.no_job_runner

    def start(parts: Any, serving: Any) -> Any:
        from pykueue.cli.components import build_components, metrics_registry, start_all
        from pykueue.client.inprocess import InProcessClient

        # The controllers write sequentially: each write must not wait for its own fsync.
        client = InProcessClient(parts.handlers, background_acks=True)
        components = build_components(
            client, args, serving.data_dir, run_jobs=run_jobs, controllers=not args.no_controllers
        )
        _mount_visibility(parts, components)
        for comp in components:
            locate = getattr(comp, "pod_log_dir", None)
            if locate is not None:  # the job runner: pods/log reads its pods' files
                parts.pod_logs = locate
        parts.metrics_registry = metrics_registry(components)
        stop = start_all(components)
        freeze_gc()
        what = "components" if args.no_controllers else "controllers"
        print(f"{what}: started in this process, initial sync done", file=serving.out, flush=True)
        return stop

    return start
