"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's ``leaderelection`` package.

Kueue runs with ``leaderElection.leaderElect: true`` (``resourceName`` ``c1f6bfd2.kueue.x-k8s.io``,
``leaseDuration`` 15s, ``renewDeadline`` 10s, ``retryPeriod`` 2s): every replica serves the webhooks
and health probes, only the holder of the Lease runs the controllers and the scheduler.

Semantics kept from client-go (``tryAcquireOrRenew``):

* a Lease held by another identity counts as expired only once this replica has seen the same
  record, unchanged, for ``leaseDuration`` of its *own* monotonic clock (clocks of different
  machines are never compared);
* the leader renews every ``retryPeriod``; if no renewal succeeded within ``renewDeadline`` it has
  lost the lease and must stop at once. Because ``renewDeadline`` < ``leaseDuration``, it stops
  before any standby can consider the lease expired, so two leaders never write together;
* taking over increments ``leaseTransitions`` and sets ``acquireTime``.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pykueue.client.interface import AlreadyExists, APIError, Client, Conflict, NotFound, Resource

log = logging.getLogger(__name__)

LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
DEFAULT_LEASE_NAME = "c1f6bfd2.kueue.x-k8s.io"

LEADER = "leader"
FOLLOWER = "follower"


def default_identity() -> str:
    """``<hostname>_<uuid>``, as controller-runtime names a candidate."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def _micro_time(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class ElectionConfig:
    """Where the Lease lives, who we are, and the timings (seconds)."""

    namespace: str
    name: str = DEFAULT_LEASE_NAME
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError(
                "leaderElection: leaseDuration must be greater than renewDeadline, and renewDeadline "
                f"greater than retryPeriod (got {self.lease_duration}s, {self.renew_deadline}s, {self.retry_period}s)"
            )


class LeaderElector:
    """Campaign for the Lease; call ``on_started`` once leading and ``on_lost`` if the lease is lost."""

    def __init__(
        self,
        client: Client,
        config: ElectionConfig,
        *,
        on_started: Callable[[], None],
        on_lost: Callable[[], None],
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client = client
        self.config = config
        self.identity = config.identity or default_identity()
        self.on_started = on_started
        self.on_lost = on_lost
        self._monotonic = monotonic
        self._wall = wall
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._lease: dict[str, Any] | None = None
        self.role = FOLLOWER
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        """Campaign in a background thread."""
        self._thread.start()

    def stop(self, release: bool = True) -> None:
        """Stop campaigning; a leader gives the Lease up so a standby takes over at once."""
        self._stop.set()
        self._thread.join(timeout=self.config.retry_period + 5)
        if release and self.role == LEADER:
            self._release()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.try_acquire_or_renew():
                break
            self._stop.wait(self.config.retry_period)
        if self._stop.is_set():
            return
        self.role = LEADER
        log.info("leader election: %s acquired lease %s/%s", self.identity, self.config.namespace, self.config.name)
        self.on_started()
        last_renew = self._monotonic()
        while not self._stop.wait(self.config.retry_period):
            if self.try_acquire_or_renew():
                last_renew = self._monotonic()
            elif self._monotonic() - last_renew >= self.config.renew_deadline:
                self.role = FOLLOWER
                log.error("leader election: %s lost lease %s/%s", self.identity, self.config.namespace, self.config.name)
                self.on_lost()
                return

    # -- one attempt ------------------------------------------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        """One ``tryAcquireOrRenew``: True when this candidate holds the Lease afterwards."""
        now = self._wall()
        try:
            lease = self.client.get(LEASES, self.config.name, self.config.namespace)
        except NotFound:
            return self._create(now)
        except APIError as err:
            log.warning("leader election: reading lease: %s", err)
            return False
        spec = lease.get("spec") or {}
        record = (
            spec.get("holderIdentity"),
            spec.get("renewTime"),
            spec.get("leaseTransitions"),
            spec.get("leaseDurationSeconds"),
        )
        if record != self._observed:
            self._observed = record
            self._observed_at = self._monotonic()
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.config.lease_duration)
        if holder and holder != self.identity and self._observed_at + duration > self._monotonic():
            return False  # held by another and not yet expired by our own observation
        new_spec = dict(spec)
        if holder != self.identity:
            new_spec["acquireTime"] = _micro_time(now)
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if holder else 0)
        new_spec["holderIdentity"] = self.identity
        new_spec["leaseDurationSeconds"] = int(self.config.lease_duration)
        new_spec["renewTime"] = _micro_time(now)
        try:
            self._lease = self.client.replace(LEASES, {**lease, "spec": new_spec})
        except (Conflict, NotFound):
            return False
        except APIError as err:
            log.warning("leader election: updating lease: %s", err)
            return False
        self._observed = None
        return True

    def _create(self, now: datetime) -> bool:
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.config.name, "namespace": self.config.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": int(self.config.lease_duration),
                "acquireTime": _micro_time(now),
                "renewTime": _micro_time(now),
                "leaseTransitions": 0,
            },
        }
        try:
            self._lease = self.client.create(LEASES, lease)
        except AlreadyExists:
            return False
        except APIError as err:
            log.warning("leader election: creating lease: %s", err)
            return False
        return True

    def _release(self) -> None:
        """client-go's ReleaseOnCancel: an empty holder and a 1s duration, so a standby takes over."""
        if self._lease is None:
            return
        spec = dict(self._lease.get("spec") or {})
        spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=_micro_time(self._wall()))
        try:
            self.client.replace(LEASES, {**self._lease, "spec": spec})
        except APIError as err:
            log.warning("leader election: releasing lease: %s", err)
        self.role = FOLLOWER
