"""Building the controller components for ``pykueue serve`` and ``pykueue controller``.

The CLI is the only place that knows every layer: it picks the client (in-process or HTTP), the
clock, the configuration, and which components run (controller manager, local job runner, local
provisioner).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pykueue.client.interface import Client

if TYPE_CHECKING:
    from pykueue.api.config import KueueConfig

log = logging.getLogger(__name__)


def add_component_arguments(p: argparse.ArgumentParser, *, embedded: bool) -> None:
    """Flags shared by ``serve`` and ``controller``."""
    p.add_argument("--config", type=Path, help="a Kueue Configuration file (config.kueue.x-k8s.io v1beta1/v1beta2)")
    p.add_argument(
        "--provisioner",
        type=Path,
        metavar="FILE",
        help="run the local provisioner, answering ProvisioningRequests from this capacity file",
    )
    p.add_argument(
        "--max-writes-in-flight",
        type=int,
        default=None,
        metavar="N",
        help="status writes (admissions, queue status) that may be in flight at once (default 64)",
    )
    p.add_argument(
        "--time-offset-file",
        type=Path,
        metavar="PATH",
        help="testing: the controllers' clock is wall time plus the seconds written in this file",
    )
    if not embedded:
        from pykueue.metrics.server import DEFAULT_BIND_ADDRESS

        p.add_argument(
            "--metrics-bind-address",
            metavar="ADDR",
            help=f"serve Prometheus metrics at http://ADDR/metrics (HOST:PORT or :PORT; 0 disables; "
            f"default {DEFAULT_BIND_ADDRESS}, skipped with a warning when that port is taken)",
        )
    if embedded:
        p.add_argument("--no-job-runner", action="store_true", help="do not run admitted Jobs' pods as local processes")
        p.set_defaults(publish_pods=True)
    else:
        p.add_argument(
            "--run-jobs",
            action="store_true",
            help="also run admitted Jobs' pods as local processes (off by default: the cluster runs them)",
        )
        p.add_argument(
            "--publish-pods",
            action="store_true",
            help="with --run-jobs: also write Pod objects and a Node for this machine (for an API server without "
            "kubelets, e.g. serve --no-controllers; never on a real cluster, whose scheduler and kubelets own Pods)",
        )
    runner = p.add_argument_group("local job runner")
    runner.add_argument(
        "--run-unmanaged-jobs",
        action="store_true",
        help="also run Jobs that Kueue does not manage (no kueue.x-k8s.io/queue-name label); by default they "
        "are left alone with a NotManagedByKueue Event",
    )
    runner.add_argument(
        "--run-as-user",
        metavar="USER",
        help="run pods as this user (name or uid; the server must run as root), so they cannot read its files",
    )
    runner.add_argument(
        "--pod-scratch-dir",
        type=Path,
        metavar="DIR",
        help="where pods get their working directories (default: a private directory under $TMPDIR)",
    )
    runner.add_argument(
        "--pod-runtime",
        choices=("process", "podman", "docker"),
        default="process",
        help="how pods run: their first container's command + args as a local process (the default), or its "
        "image with podman/docker (entrypoint, command, args, env, limits; images are not pulled)",
    )
    runner.add_argument(
        "--max-pod-processes",
        type=int,
        metavar="N",
        help="run at most N pods at once across all Jobs (default: only Kueue's admission bounds them)",
    )


def runner_argument_error(args: argparse.Namespace) -> str | None:
    """The problem with the local job runner's flags, or None (checked before anything starts)."""
    if args.max_pod_processes is not None and args.max_pod_processes < 1:
        return f"--max-pod-processes {args.max_pod_processes}: must be at least 1"
    if args.pod_runtime != "process":
        if args.run_as_user:
            return f"--run-as-user is not supported with --pod-runtime {args.pod_runtime} (use the runtime's own user mapping)"
        from pykueue.controllers.podruntime import ContainerRuntime

        try:
            ContainerRuntime.find(args.pod_runtime)
        except ValueError as err:
            return str(err)
    if args.run_as_user:
        from pykueue.controllers.podsandbox import resolve_user

        try:
            resolve_user(args.run_as_user)
        except ValueError as err:
            return str(err)
    return None


def build_components(
    client: Client, args: argparse.Namespace, data_dir: Path, *, run_jobs: bool, controllers: bool = True
) -> list[Any]:
    """The components to start, in start order."""
    from pykueue.api.config import load_config, load_config_file
    from pykueue.controllers.manager import ControllerManager
    from pykueue.controllers.options import ControllerOptions
    from pykueue.runtime.clock import clock_from

    clock = clock_from(args.time_offset_file)
    out: list[Any] = []
    if controllers:
        cfg = load_config_file(str(args.config)) if args.config else load_config(None)
        from pykueue.metrics import from_config as metrics_from_config

        options = ControllerOptions.from_config(cfg)
        if getattr(args, "max_writes_in_flight", None) is not None:
            options.max_writes_in_flight = args.max_writes_in_flight
        manager = ControllerManager(
            client,
            options,
            clock=clock,
            metrics=metrics_from_config(cfg),
            event_client=_apply_client_connection(client, cfg, unthrottled=getattr(args, "no_default_rate_limit", False)),
        )
        try:
            from pykueue.controllers.admissionchecks.provisioning import ProvisioningCheckController
        except ImportError:  # pragma: no cover - shipped with the package
            ProvisioningCheckController = None  # type: ignore[assignment,misc]
        if ProvisioningCheckController is not None:
            # On the manager's informers: one Workload watch for the whole process (upstream's
            # controllers share the manager's cache).
            manager.add(ProvisioningCheckController(client, clock=clock, informers=manager.informers))
        out.append(manager)
    if run_jobs:
        from pykueue.controllers.jobrunner import JobRunner
        from pykueue.controllers.podruntime import ContainerRuntime
        from pykueue.controllers.podsandbox import resolve_user

        out.append(
            JobRunner(
                client,
                data_dir / "pods",
                clock=clock,
                max_processes=args.max_pod_processes,
                scratch_dir=args.pod_scratch_dir.resolve() if args.pod_scratch_dir else None,
                run_unmanaged_jobs=args.run_unmanaged_jobs,
                run_as_user=resolve_user(args.run_as_user) if args.run_as_user else None,
                pod_runtime=ContainerRuntime.find(args.pod_runtime) if args.pod_runtime != "process" else None,
                publish_pods=args.publish_pods,
            )
        )
    if args.provisioner is not None:
        from pykueue.controllers.provisioner import LocalProvisioner

        out.append(LocalProvisioner(client, args.provisioner, clock))
    return out


def client_rate_limit(cfg: KueueConfig, *, unthrottled: bool = False) -> tuple[float | None, int | None]:
    """The (qps, burst) the controllers' client uses: ``clientConnection`` (upstream's defaults
    300/500), or no limit (None, None) when ``unthrottled`` and the configuration file did not set
    ``clientConnection`` itself. ``unthrottled`` is serve's controller process: its API server is
    serve's own, over loopback, not an API server shared with a cluster's other clients."""
    conn = cfg.configuration.client_connection
    assert conn is not None  # defaulted by load_config
    if unthrottled and not cfg.client_connection_set:
        return None, None
    return conn.qps, conn.burst


def _apply_client_connection(client: Client, cfg: KueueConfig, *, unthrottled: bool = False) -> Client | None:
    """``clientConnection.qps``/``burst`` on an HTTP client (the in-process one has no network), and
    the Events' client: the same connections, a token bucket of its own (controller-runtime's
    recorder provider builds its own clientset from the same rest config)."""
    from pykueue.client.http import HTTPClient

    if not isinstance(client, HTTPClient):
        return None
    qps, burst = client_rate_limit(cfg, unthrottled=unthrottled)
    client.set_rate_limit(qps, burst)
    return client.with_rate_limit(qps, burst)


def metrics_registry(components: list[Any]) -> Any:
    """The controller manager's Prometheus registry among ``components`` (None without one)."""
    for comp in components:
        metrics = getattr(comp, "metrics", None)
        if metrics is not None and hasattr(metrics, "metrics"):
            return metrics.metrics.registry
    return None


def start_all(components: list[Any], wait_seconds: float = 30.0) -> Callable[[], None]:
    """Start components (waiting for the manager's initial sync); returns the stop function."""
    for comp in components:
        comp.start()
        wait = getattr(comp, "wait_ready", None)
        if wait is not None and not wait(wait_seconds):
            log.warning("%s did not finish its initial sync within %ss", type(comp).__name__, wait_seconds)

    def stop() -> None:
        for comp in reversed(components):
            try:
                comp.stop()
            except Exception:  # stopping must go on for the others
                log.exception("stopping %s", type(comp).__name__)

    return stop
