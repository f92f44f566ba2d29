"""A local provisioner: answers ProvisioningRequests the way cluster-autoscaler would.

``pykueue serve --provisioner=FILE`` runs it next to Kueue's controllers. It watches
``autoscaling.x-k8s.io/v1`` ProvisioningRequests whose ``spec.provisioningClassName`` is listed
in the capacity file, reads the PodTemplates they reference and decides, through the API only:

1. ``Accepted=True`` as soon as it sees a request of a class it serves;
2. after the class's ``delaySeconds`` (measured on the injected clock from acceptance):
   ``Failed=True`` for an injected failure, ``Provisioned=True`` when the pods fit the remaining
   capacity (the capacity is then held until the request is deleted, revoked or expired), else
   ``Failed=True`` (``whenFull: Fail``) or ``Provisioned=False`` while waiting for capacity to be
   freed (``whenFull: Wait``);
3. later, optionally, ``CapacityRevoked=True`` or ``BookingExpired=True``.

Capacity file (YAML)::

    classes:
      queued-provisioning.gke.io:          # a provisioningClassName this provisioner serves
        delaySeconds: 30                   # time from Accepted to the answer (default 0)
        whenFull: Wait                     # Fail (default) or Wait for capacity to be freed
        capacity:                          # optional: total over the requests holding capacity
          cpu: "64"
          nvidia.com/gpu: 8
        pools:                             # optional: node shapes; every pod must fit one node
          - name: a100
            flavor: gpu-a100               # optional: node labels = this ResourceFlavor's nodeLabels
            labels: {example.com/pool: a100}   # more node labels
            nodes: 4                       # nodes of this shape that can exist at once (omit: any)
            resources: {cpu: "32", memory: 256Gi, nvidia.com/gpu: 8}   # allocatable per node
            details: {acceleratorType: a100}   # copied into status.provisioningClassDetails
        details: {zone: local-a}           # class-wide provisioningClassDetails
        failAttempts: 1                    # injected: attempts 1..N of every workload fail
        failMessage: "stockout"            # injected failure message
        revokeAfterSeconds: 600            # injected: CapacityRevoked this long after Provisioned
        bookingExpiresAfterSeconds: 900    # BookingExpired this long after Provisioned

``classes`` may also be a list of mappings with a ``provisioningClassName`` key. Amounts are
Kubernetes quantities. A pod fits a pool node when the pod's ``nodeSelector`` is a subset of the
node labels and each requested resource (Kueue's per-pod requests: containers summed, init
containers maxed, limits standing in for missing requests) fits what is left on the node;
resources a pool does not list are absent from its nodes. The "attempt" of a request is the
number after its last ``-`` (Kueue names requests ``<workload>-<check>-<attempt>``), 1 otherwise.
The file is re-read when its modification time changes.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from pykueue.api.meta import format_time, parse_time
from pykueue.api.podspec import per_pod_integer_requests
from pykueue.api.quantity import format_amount, resource_value
from pykueue.checks import states as st
from pykueue.client import resources as r
from pykueue.client.interface import Client, NotFound
from pykueue.runtime.clock import Clock, system_clock
from pykueue.runtime.controller import ControllerRuntime, RuntimeComponent, update_status
from pykueue.runtime.informer import SYNCED, Change, object_key

log = logging.getLogger(__name__)

ACCEPTED = "Accepted"
PROVISIONED = "Provisioned"
FAILED = "Failed"
CAPACITY_REVOKED = "CapacityRevoked"
BOOKING_EXPIRED = "BookingExpired"

WHEN_FULL_FAIL = "Fail"
WHEN_FULL_WAIT = "Wait"

CONTROLLER = "pykueue-local-provisioner"
_REQUEST = "request"
_TEMPLATE_RETRY_SECONDS = 1.0
_ATTEMPT = re.compile(r"-([0-9]+)$")


class CapacityFileError(ValueError):
    """The capacity file cannot be used."""


# --- the capacity file ----------------------------------------------------------------------------


def _amounts(value: Any, where: str) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise CapacityFileError(f"{where}: want a map of resource name to quantity")
    try:
        return {
            str(k): resource_value(str(k), v if isinstance(v, int | float) else str(v))
            for k, v in value.items()
        }
    except (ValueError, TypeError) as err:
        raise CapacityFileError(f"{where}: {err}") from None


def _str_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise CapacityFileError(f"{where}: want a map of strings")
    return {str(k): str(v) for k, v in value.items()}


def _number(value: Any, where: str, *, allow_none: bool = True) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise CapacityFileError(f"{where}: want a non-negative number")
    return float(value)


@dataclass(frozen=True)
class Pool:
    """A node shape: ``nodes`` nodes (None: unlimited) with ``resources`` each."""

    name: str
    resources: dict[str, int]
    labels: dict[str, str] = field(default_factory=dict)
    flavor: str | None = None
    nodes: int | None = None
    details: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProvisioningClass:
    """How one provisioningClassName is answered."""

    name: str
    delay_seconds: float = 0.0
    when_full: str = WHEN_FULL_FAIL
    capacity: dict[str, int] | None = None
    pools: tuple[Pool, ...] = ()
    details: dict[str, str] = field(default_factory=dict)
    fail_attempts: int = 0
    fail_message: str = "injected provisioning failure"
    revoke_after_seconds: float | None = None
    booking_expires_after_seconds: float | None = None


@dataclass(frozen=True)
class CapacitySpec:
    """A parsed capacity file: the classes served, by provisioningClassName."""

    classes: dict[str, ProvisioningClass]

    @classmethod
    def load(cls, path: Path) -> CapacitySpec:
        """Read and parse a capacity file."""
        try:
            data = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as err:
            raise CapacityFileError(f"{path}: {err}") from None
        return cls.parse(data, str(path))

    @classmethod
    def parse(cls, data: Any, where: str = "capacity file") -> CapacitySpec:
        """Parse the YAML document (see the module docstring)."""
        if data is None:
            return cls({})
        if not isinstance(data, Mapping) or not set(data) <= {"classes"}:
            raise CapacityFileError(f"{where}: want a mapping with a single key 'classes'")
        raw = data.get("classes") or {}
        items: list[tuple[str, Any]]
        if isinstance(raw, Mapping):
            items = [(str(k), v) for k, v in raw.items()]
        elif isinstance(raw, list):
            items = []
            for i, entry in enumerate(raw):
                if not isinstance(entry, Mapping) or "provisioningClassName" not in entry:
                    raise CapacityFileError(f"{where}: classes[{i}] needs provisioningClassName")
                items.append((str(entry["provisioningClassName"]), entry))
        else:
            raise CapacityFileError(f"{where}: classes must be a map or a list")
        classes = {name: _parse_class(name, body or {}, f"{where}: classes[{name}]") for name, body in items}
        return cls(classes)


_CLASS_KEYS = {
    "provisioningClassName",
    "delaySeconds",
    "whenFull",
    "capacity",
    "pools",
    "details",
    "failAttempts",
    "failMessage",
    "revokeAfterSeconds",
    "bookingExpiresAfterSeconds",
}
_POOL_KEYS = {"name", "resources", "labels", "flavor", "nodes", "details"}


def _parse_class(name: str, body: Any, where: str) -> ProvisioningClass:
    if not isinstance(body, Mapping):
        raise CapacityFileError(f"{where}: want a mapping")
    unknown = set(body) - _CLASS_KEYS
    if unknown:
        raise CapacityFileError(f"{where}: unknown keys {sorted(unknown)}")
    when_full = str(body.get("whenFull", WHEN_FULL_FAIL))
    if when_full not in (WHEN_FULL_FAIL, WHEN_FULL_WAIT):
        raise CapacityFileError(f"{where}.whenFull: want Fail or Wait")
    pools: list[Pool] = []
    for i, p in enumerate(body.get("pools") or ()):
        pw = f"{where}.pools[{i}]"
        if not isinstance(p, Mapping) or not set(p) <= _POOL_KEYS:
            raise CapacityFileError(f"{pw}: want a mapping with keys among {sorted(_POOL_KEYS)}")
        nodes = _number(p.get("nodes"), f"{pw}.nodes")
        pools.append(
            Pool(
                name=str(p.get("name") or f"pool-{i}"),
                resources=_amounts(p.get("resources"), f"{pw}.resources"),
                labels=_str_map(p.get("labels"), f"{pw}.labels"),
                flavor=str(p["flavor"]) if p.get("flavor") else None,
                nodes=None if nodes is None else int(nodes),
                details=_str_map(p.get("details"), f"{pw}.details"),
            )
        )
    capacity = body.get("capacity")
    fail_attempts = _number(body.get("failAttempts", 0), f"{where}.failAttempts", allow_none=False)
    return ProvisioningClass(
        name=name,
        delay_seconds=_number(body.get("delaySeconds", 0), f"{where}.delaySeconds", allow_none=False) or 0.0,
        when_full=when_full,
        capacity=None if capacity is None else _amounts(capacity, f"{where}.capacity"),
        pools=tuple(pools),
        details=_str_map(body.get("details"), f"{where}.details"),
        fail_attempts=int(fail_attempts or 0),
        fail_message=str(body.get("failMessage") or "injected provisioning failure"),
        revoke_after_seconds=_number(body.get("revokeAfterSeconds"), f"{where}.revokeAfterSeconds"),
        booking_expires_after_seconds=_number(
            body.get("bookingExpiresAfterSeconds"), f"{where}.bookingExpiresAfterSeconds"
        ),
    )


# --- placement ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodGroup:
    """``count`` identical pods of one PodTemplate."""

    template: str
    count: int
    requests: dict[str, int]
    node_selector: dict[str, str]


@dataclass
class Allocation:
    """What a provisioned request holds: nodes per pool and total resources."""

    nodes: dict[str, int] = field(default_factory=dict)
    resources: dict[str, int] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)


def _fits(requests: Mapping[str, int], free: Mapping[str, int]) -> bool:
    return all(amount <= free.get(name, 0) for name, amount in requests.items() if amount > 0)


def _describe(requests: Mapping[str, int]) -> str:
    return ", ".join(f"{name}: {format_amount(name, v)}" for name, v in sorted(requests.items()) if v > 0)


def place(
    cls: ProvisioningClass,
    groups: list[PodGroup],
    pool_labels: Mapping[str, dict[str, str]],
    held: list[Allocation],
) -> tuple[Allocation | None, str]:
    """Try to provision ``groups`` next to the ``held`` allocations.

    Returns the allocation, or None and the reason the pods do not fit.
    """
    alloc = Allocation(details=dict(cls.details))
    for g in groups:
        for name, amount in g.requests.items():
            alloc.resources[name] = alloc.resources.get(name, 0) + amount * g.count
    if cls.capacity is not None:
        for name, limit in sorted(cls.capacity.items()):
            used = sum(a.resources.get(name, 0) for a in held)
            want = alloc.resources.get(name, 0)
            if used + want > limit:
                return None, (
                    f"insufficient {name}: requested {format_amount(name, want)}, "
                    f"available {format_amount(name, max(0, limit - used))}"
                )
    if not cls.pools:
        return alloc, ""
    used_nodes: dict[str, int] = {}
    for a in held:
        for pool_name, n in a.nodes.items():
            used_nodes[pool_name] = used_nodes.get(pool_name, 0) + n
    opened: list[tuple[Pool, dict[str, int]]] = []  # this request's new nodes and their free room
    for g in groups:
        for _ in range(g.count):
            node = next(
                (
                    free
                    for open_pool, free in opened
                    if _selects(g.node_selector, pool_labels[open_pool.name]) and _fits(g.requests, free)
                ),
                None,
            )
            if node is None:
                new_pool = next(
                    (
                        p
                        for p in cls.pools
                        if _selects(g.node_selector, pool_labels[p.name])
                        and _fits(g.requests, p.resources)
                        and (
                            p.nodes is None
                            or used_nodes.get(p.name, 0) + alloc.nodes.get(p.name, 0) < p.nodes
                        )
                    ),
                    None,
                )
                if new_pool is None:
                    return None, f"no free node fits a pod of {g.template} ({_describe(g.requests)})"
                node = dict(new_pool.resources)
                opened.append((new_pool, node))
                alloc.nodes[new_pool.name] = alloc.nodes.get(new_pool.name, 0) + 1
                alloc.details.update(new_pool.details)
            for name, amount in g.requests.items():
                node[name] = node.get(name, 0) - amount
    return alloc, ""


def _selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def attempt_number(request_name: str) -> int:
    """The number after the last ``-`` of a request name (1 when there is none)."""
    m = _ATTEMPT.search(request_name)
    return int(m.group(1)) if m else 1


# --- the component --------------------------------------------------------------------------------


def _true(obj: Mapping[str, Any], ctype: str) -> bool:
    return st.condition_true(obj, ctype)


class LocalProvisioner(RuntimeComponent):
    """Answers ProvisioningRequests from a capacity file (component; see the module docstring).

    ``start()`` starts the watch and worker threads, ``stop()`` stops and joins them.
    """

    def __init__(
        self, client: Client, capacity_file: Path, clock: Clock = system_clock, *, poll_interval: float = 0.2
    ) -> None:
        self.client = client
        self.capacity_file = Path(capacity_file)
        self.clock = clock
        self.spec = CapacitySpec.load(self.capacity_file)
        self._mtime = self._file_mtime()
        self._pool_labels: dict[tuple[str, str], dict[str, str]] = {}
        # key -> (class, allocation); written by the worker thread only, read by allocations().
        self._allocations: dict[tuple[str, str], tuple[str, Allocation]] = {}
        self._alloc_lock = threading.Lock()
        self._rebuilt = False
        self.runtime = ControllerRuntime(
            client, name="local-provisioner", clock=clock, poll_interval=poll_interval
        )
        self.requests = self.runtime.informer(r.PROVISIONING_REQUESTS, self._on_request)
        self.runtime.register(_REQUEST, self._reconcile)

    def allocations(self) -> dict[tuple[str, str], Allocation]:
        """Capacity currently held, by request (namespace, name)."""
        with self._alloc_lock:
            return {key: alloc for key, (_cls, alloc) in self._allocations.items()}

    # -- capacity file ---------------------------------------------------------------------------

    def _file_mtime(self) -> float | None:
        try:
            return self.capacity_file.stat().st_mtime
        except OSError:
            return None

    def _maybe_reload(self) -> None:
        mtime = self._file_mtime()
        if mtime == self._mtime:
            return
        self._mtime = mtime
        try:
            self.spec = CapacitySpec.load(self.capacity_file)
        except CapacityFileError as err:
            log.error("keeping the previous capacity: %s", err)
            return
        self._pool_labels.clear()
        log.info("reloaded capacity file %s", self.capacity_file)
        self._enqueue_waiting(None)

    def _labels_of(self, pool: Pool) -> dict[str, str]:
        key = (pool.name, pool.flavor or "")
        labels = self._pool_labels.get(key)
        if labels is None:
            labels = {}
            if pool.flavor:
                try:
                    rf = self.client.get(r.RESOURCE_FLAVORS, pool.flavor)
                    labels.update((rf.get("spec") or {}).get("nodeLabels") or {})
                except NotFound:
                    log.warning("pool %s: ResourceFlavor %s not found", pool.name, pool.flavor)
            labels.update(pool.labels)
            self._pool_labels[key] = labels
        return labels

    # -- routing ---------------------------------------------------------------------------------

    def _on_request(self, change: Change) -> None:
        if change.type == SYNCED:
            return
        ns, name = object_key(change.object)
        self.runtime.enqueue(_REQUEST, ns, name)

    def _enqueue_waiting(self, class_name: str | None) -> None:
        waiting = [
            pr
            for pr in self.requests.items()
            if (class_name is None or _class_of(pr) == class_name) and not _answered(pr)
        ]
        waiting.sort(key=lambda pr: (str(st.metadata(pr).get("creationTimestamp") or ""), object_key(pr)))
        for pr in waiting:
            ns, name = object_key(pr)
            self.runtime.enqueue(_REQUEST, ns, name)

    # -- reconcile -------------------------------------------------------------------------------

    def _release(self, key: tuple[str, str]) -> None:
        with self._alloc_lock:
            held = self._allocations.pop(key, None)
        if held is not None:
            self._enqueue_waiting(held[0])

    def _hold(self, key: tuple[str, str], class_name: str, alloc: Allocation) -> None:
        with self._alloc_lock:
            self._allocations[key] = (class_name, alloc)

    def _held(self, class_name: str, exclude: tuple[str, str]) -> list[Allocation]:
        return [a for key, (c, a) in self._allocations.items() if c == class_name and key != exclude]

    def _rebuild(self) -> None:
        """Re-count the capacity held by requests provisioned before this process started."""
        self._rebuilt = True
        for pr in self.requests.items():
            cls = self.spec.classes.get(_class_of(pr))
            if cls is None or not _holding(pr):
                continue
            groups = self._pod_groups(pr)
            if groups is None:
                continue
            alloc, _ = place(cls, groups, self._labels_for(cls), [])
            if alloc is not None:
                self._hold(object_key(pr), cls.name, alloc)

    def _labels_for(self, cls: ProvisioningClass) -> dict[str, dict[str, str]]:
        return {p.name: self._labels_of(p) for p in cls.pools}

    def _pod_groups(self, pr: Mapping[str, Any]) -> list[PodGroup] | None:
        namespace = str(st.metadata(pr).get("namespace") or "")
        groups: list[PodGroup] = []
        for ps in (pr.get("spec") or {}).get("podSets") or ():
            name = str((ps.get("podTemplateRef") or {}).get("name"))
            try:
                pt = self.client.get(r.POD_TEMPLATES, name, namespace)
            except NotFound:
                return None
            spec = (pt.get("template") or {}).get("spec") or {}
            groups.append(
                PodGroup(
                    template=name,
                    count=int(ps.get("count") or 0),
                    requests=per_pod_integer_requests(spec),
                    node_selector={str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()},
                )
            )
        return groups

    def _reconcile(self, namespace: str, name: str) -> float | None:
        self._maybe_reload()
        if not self._rebuilt:
            self._rebuild()
        key = (namespace, name)
        pr = self.requests.get(key)
        if pr is None:
            self._release(key)
            return None
        cls = self.spec.classes.get(_class_of(pr))
        if cls is None:
            return None  # another provisioner's class
        if not _holding(pr):
            self._release(key)
        if _true(pr, FAILED) or _true(pr, CAPACITY_REVOKED) or _true(pr, BOOKING_EXPIRED):
            return None
        now = self.clock()
        if _true(pr, PROVISIONED):
            return self._after_provisioned(pr, cls, now)
        accepted = st.find_condition(pr, ACCEPTED)
        accepted_at = (
            parse_time(str(accepted["lastTransitionTime"])) if _true(pr, ACCEPTED) and accepted else now
        )
        due = accepted_at + timedelta(seconds=cls.delay_seconds)
        if now < due:
            remaining = (due - now).total_seconds()
            self._write(
                pr,
                now,
                [
                    (
                        ACCEPTED,
                        "True",
                        "Accepted",
                        "The ProvisioningRequest was accepted by the local provisioner",
                    ),
                    (PROVISIONED, "False", "Provisioning", f"Provisioning; ETA {format_time(due)}"),
                ],
            )
            return remaining
        accept = (
            ACCEPTED,
            "True",
            "Accepted",
            "The ProvisioningRequest was accepted by the local provisioner",
        )
        if attempt_number(name) <= cls.fail_attempts:
            self._write(
                pr,
                now,
                [accept, (PROVISIONED, "False", "ProvisioningFailed", cls.fail_message),
                 (FAILED, "True", "ProvisioningFailed", cls.fail_message)],
            )  # fmt: skip
            return None
        groups = self._pod_groups(pr)
        if groups is None:
            # Kueue creates the templates before the request; wait for them to show up.
            return _TEMPLATE_RETRY_SECONDS
        alloc, reason = place(cls, groups, self._labels_for(cls), self._held(cls.name, key))
        if alloc is None:
            message = f"Capacity is not available: {reason}"
            if cls.when_full == WHEN_FULL_WAIT:
                self._write(pr, now, [accept, (PROVISIONED, "False", "CapacityIsNotFound", message)])
            else:
                self._write(
                    pr,
                    now,
                    [accept, (PROVISIONED, "False", "CapacityIsNotFound", message),
                     (FAILED, "True", "CapacityIsNotFound", message)],
                )  # fmt: skip
            return None
        self._hold(key, cls.name, alloc)
        nodes = ", ".join(f"{n}x {pool}" for pool, n in sorted(alloc.nodes.items()))
        message = "Capacity is provisioned" + (f": {nodes}" if nodes else "")
        stored = self._write(pr, now, [accept, (PROVISIONED, "True", "Provisioned", message)], alloc.details)
        if stored is None:
            self._release(key)
            return None
        return self._after_provisioned(stored, cls, now)

    def _after_provisioned(self, pr: dict[str, Any], cls: ProvisioningClass, now: datetime) -> float | None:
        key = object_key(pr)
        if key not in self._allocations:
            groups = self._pod_groups(pr)
            alloc = place(cls, groups, self._labels_for(cls), [])[0] if groups is not None else None
            self._hold(key, cls.name, alloc or Allocation())
        cond = st.find_condition(pr, PROVISIONED)
        since = parse_time(str((cond or {}).get("lastTransitionTime") or format_time(now)))
        waits: list[float] = []
        for delay, ctype, reason, message in (
            (
                cls.revoke_after_seconds,
                CAPACITY_REVOKED,
                "CapacityRevoked",
                "The provisioned capacity was revoked",
            ),
            (
                cls.booking_expires_after_seconds,
                BOOKING_EXPIRED,
                "BookingExpired",
                "The capacity booking expired",
            ),
        ):
            if delay is None:
                continue
            at = since + timedelta(seconds=delay)
            if now >= at:
                self._write(pr, now, [(ctype, "True", reason, message)])
                self._release(key)
                return None
            waits.append((at - now).total_seconds())
        return min(waits) if waits else None

    def _write(
        self,
        pr: dict[str, Any],
        now: datetime,
        conditions: list[tuple[str, str, str, str]],
        details: Mapping[str, str] | None = None,
    ) -> dict[str, Any] | None:
        def mutate(obj: dict[str, Any]) -> bool:
            changed = False
            for ctype, status, reason, message in conditions:
                changed |= st.set_condition(obj, ctype, status, reason, message, now, _generation(obj))
            if details:
                current = st.status_of(obj).get("provisioningClassDetails") or {}
                merged = {**current, **details}
                if merged != current:
                    st.status_of(obj)["provisioningClassDetails"] = merged
                    changed = True
            return changed

        return update_status(self.client, r.PROVISIONING_REQUESTS, pr, mutate)


def _generation(obj: Mapping[str, Any]) -> int:
    return int(st.metadata(obj).get("generation") or 0)


def _class_of(pr: Mapping[str, Any]) -> str:
    return str((pr.get("spec") or {}).get("provisioningClassName") or "")


def _answered(pr: Mapping[str, Any]) -> bool:
    return any(_true(pr, c) for c in (PROVISIONED, FAILED, CAPACITY_REVOKED, BOOKING_EXPIRED))


def _holding(pr: Mapping[str, Any]) -> bool:
    """Provisioned and neither revoked nor expired: the request holds capacity."""
    return _true(pr, PROVISIONED) and not _true(pr, CAPACITY_REVOKED) and not _true(pr, BOOKING_EXPIRED)


__all__ = [
    "Allocation",
    "CapacityFileError",
    "CapacitySpec",
    "LocalProvisioner",
    "Pool",
    "ProvisioningClass",
    "attempt_number",
    "place",
]
