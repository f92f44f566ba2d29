"""The visibility API (``visibility.kueue.x-k8s.io`` v1beta1 and v1beta2), as upstream serves it.

Upstream: ``apis/visibility/v1beta2`` (types, ``SetDefaults_PendingWorkloadOptions``, the generated
``url.Values`` conversion) and ``pkg/visibility/storage`` (``pendingWorkloadsInCqREST.Get``,
``pendingWorkloadsInLqREST.Get``, ``boundedLimitOffset``, ``newPendingWorkload``). Both versions
have identical shapes.

The positions come from a :class:`PendingSource` (the scheduler's queue manager): the pending
workloads of a ClusterQueue in queue order, heap, inadmissible and inflight together
(``ClusterQueue.Snapshot``).

This module is transport-free: :class:`VisibilityAPI` turns a request (method, path below
``/apis/visibility.kueue.x-k8s.io``, query, ``Accept``) into a status and a body; the embedded
API server and the controller's own HTTPS port both mount it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec
import yaml

from pykueue.apiserver import errors as E
from pykueue.apiserver.handlers import negotiate
from pykueue.kube.status import StatusError
from pykueue.store.errors import not_found

GROUP = "visibility.kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")
"""Served versions, preferred first (``install``'s ``PrioritizedVersions``)."""
KIND = "PendingWorkloadsSummary"
DEFAULT_PENDING_WORKLOADS_LIMIT = 1000
"""``constants.DefaultPendingWorkloadsLimit``."""
MAX_PENDING_WORKLOADS_LIMIT = 100_000
"""``constants.MaxPendingWorkloadsLimit``."""
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_DECIMAL = re.compile(r"[+-]?[0-9]+")
JSON = "application/json"
YAML = "application/yaml"


@dataclass(frozen=True, slots=True)
class PendingWorkloadInfo:
    """What the visibility API reports of one pending workload (copied out of the queue manager)."""

    name: str
    namespace: str
    local_queue: str
    priority: int
    """``priority.Priority``: ``spec.priority``, 0 when unset; a priority boost is not applied."""
    creation_timestamp: str | None = None
    owner_references: tuple[Mapping[str, str], ...] = ()


class PendingSource(Protocol):
    """The queue manager questions the visibility API asks (thread-safe snapshots)."""

    def pending_workloads(self, cluster_queue: str) -> Sequence[PendingWorkloadInfo] | None:
        """``Manager.PendingWorkloadsInfo``: the ClusterQueue's pending workloads in queue order,
        None when the queue manager does not know the ClusterQueue."""
        ...

    def cluster_queue_of(self, namespace: str, local_queue: str) -> str | None:
        """``Manager.ClusterQueueFromLocalQueue``: None when the LocalQueue is not tracked
        (missing, or stopped)."""
        ...


class Unavailable(Exception):
    """The source cannot answer now (the controllers are not running or did not respond)."""


# --- options ----------------------------------------------------------------------------------------


def _parse_int64(values: Sequence[str]) -> int:
    """``runtime.Convert_Slice_string_To_int64``: the first value, ``strconv.ParseInt(s, 10, 64)``."""
    text = values[0]
    if not _DECIMAL.fullmatch(text):
        raise E.bad_request(f'strconv.ParseInt: parsing "{_go_quote(text)}": invalid syntax')
    value = int(text)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise E.bad_request(f'strconv.ParseInt: parsing "{_go_quote(text)}": value out of range')
    return value


def _go_quote(text: str) -> str:
    """The inside of Go's ``strconv.Quote`` for the characters a query value can carry."""
    out: list[str] = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def pending_workload_options(query: Mapping[str, Sequence[str]]) -> tuple[int, int]:
    """``(limit, offset)`` after decoding, defaulting and ``boundedLimitOffset``.

    Decoding (``DecodeParameters`` with the generated conversion): without any query parameter
    the options keep ``NewGetOptions``' limit 1000; otherwise a missing or empty-list ``limit``
    or ``offset`` becomes 0, a malformed one is a 400 ``BadRequest`` carrying ``strconv``'s
    message, and ``SetDefaults_PendingWorkloadOptions`` turns limit 0 into 1000. Then a negative
    limit or offset is clamped to 0 and the limit capped at 100000."""
    limit = DEFAULT_PENDING_WORKLOADS_LIMIT
    offset = 0
    if query:
        offset_values = query.get("offset") or []
        limit_values = query.get("limit") or []
        offset = _parse_int64(offset_values) if offset_values else 0
        limit = _parse_int64(limit_values) if limit_values else 0
        if limit == 0:
            limit = DEFAULT_PENDING_WORKLOADS_LIMIT
    limit = min(max(limit, 0), MAX_PENDING_WORKLOADS_LIMIT)
    return limit, max(offset, 0)


# --- summaries --------------------------------------------------------------------------------------


def _pending_workload(info: PendingWorkloadInfo, position_in_lq: int, position_in_cq: int) -> dict[str, Any]:
    """``newPendingWorkload`` (field order as upstream's JSON)."""
    meta: dict[str, Any] = {"name": info.name, "namespace": info.namespace}
    if info.creation_timestamp:
        meta["creationTimestamp"] = info.creation_timestamp
    if info.owner_references:
        meta["ownerReferences"] = [
            {"apiVersion": r["apiVersion"], "kind": r["kind"], "name": r["name"], "uid": r["uid"]}
            for r in info.owner_references
        ]
    return {
        "metadata": meta,
        "priority": info.priority,
        "localQueueName": info.local_queue,
        "positionInClusterQueue": position_in_cq,
        "positionInLocalQueue": position_in_lq,
    }


def _summary(version: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    # An empty ObjectMeta encodes as {} (creationTimestamp is omitzero in current apimachinery).
    return {"kind": KIND, "apiVersion": f"{GROUP}/{version}", "metadata": {}, "items": items}


def cluster_queue_pending(
    source: PendingSource, version: str, name: str, query: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """``pendingWorkloadsInCqREST.Get``: walk the ordering up to ``offset + limit`` counting
    LocalQueue positions, return the entries from ``offset`` on."""
    limit, offset = pending_workload_options(query)
    pending = source.pending_workloads(name)
    if pending is None:
        raise not_found(GROUP, "clusterqueue", name)
    items: list[dict[str, Any]] = []
    lq_positions: dict[tuple[str, str], int] = {}
    for index, info in enumerate(pending[: offset + limit]):
        key = (info.namespace, info.local_queue)
        position_in_lq = lq_positions.get(key, 0)
        lq_positions[key] = position_in_lq + 1
        if index >= offset:
            items.append(_pending_workload(info, position_in_lq, index))
    return _summary(version, items)


def local_queue_pending(
    source: PendingSource, version: str, namespace: str, name: str, query: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """``pendingWorkloadsInLqREST.Get``: the LocalQueue's entries of its ClusterQueue's ordering,
    skipping ``offset`` of them, at most ``limit``."""
    limit, offset = pending_workload_options(query)
    cq = source.cluster_queue_of(namespace, name)
    if cq is None:
        raise not_found(GROUP, "localqueue", name)
    items: list[dict[str, Any]] = []
    skipped = 0
    for index, info in enumerate(source.pending_workloads(cq) or ()):
        if len(items) >= limit:
            break
        if info.namespace == namespace and info.local_queue == name:
            if skipped < offset:
                skipped += 1
            else:
                items.append(_pending_workload(info, len(items) + offset, index))
    return _summary(version, items)


# --- discovery --------------------------------------------------------------------------------------


def _resources(version: str) -> list[dict[str, Any]]:
    """``APIResourceList`` entries as genericapiserver installs ``storage.NewStorage``: the
    parents have no verbs (``CqREST``/``LqREST`` only exist to hang the subresource on), so
    ``kubectl api-resources`` skips them, as against a real cluster."""
    out: list[dict[str, Any]] = []
    for plural, singular, namespaced in (("clusterqueues", "clusterqueue", False), ("localqueues", "localqueue", True)):
        out.append({"name": plural, "singularName": singular, "namespaced": namespaced, "kind": KIND, "verbs": []})
        out.append(
            {
                "name": f"{plural}/pendingworkloads",
                "singularName": "",
                "namespaced": namespaced,
                "kind": KIND,
                "verbs": ["get"],
            }
        )
    return out


def api_resource_list(version: str) -> dict[str, Any]:
    """``/apis/visibility.kueue.x-k8s.io/{version}``."""
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/{version}", "resources": _resources(version)}


def api_group() -> dict[str, Any]:
    """The group's ``APIGroup`` entry (``/apis/visibility.kueue.x-k8s.io`` and in ``/apis``)."""
    versions = [{"groupVersion": f"{GROUP}/{v}", "version": v} for v in VERSIONS]
    return {"name": GROUP, "versions": versions, "preferredVersion": versions[0]}


def aggregated_group() -> dict[str, Any]:
    """The group's entry of an aggregated ``APIGroupDiscoveryList`` (``apidiscovery.k8s.io/v2``)."""
    versions = []
    for v in VERSIONS:
        kind = {"group": GROUP, "version": v, "kind": KIND}
        resources = [
            {
                "resource": plural,
                "responseKind": kind,
                "scope": scope,
                "singularResource": singular,
                "verbs": [],
                "subresources": [{"subresource": "pendingworkloads", "responseKind": kind, "verbs": ["get"]}],
            }
            for plural, singular, scope in (("clusterqueues", "clusterqueue", "Cluster"), ("localqueues", "localqueue", "Namespaced"))
        ]
        versions.append({"version": v, "resources": resources, "freshness": "Current"})
    return {"metadata": {"name": GROUP, "creationTimestamp": None}, "versions": versions}


# --- requests ---------------------------------------------------------------------------------------


@dataclass
class VisibilityResponse:
    """A status code, body and content type."""

    status: int
    body: bytes
    content_type: str = JSON
    headers: dict[str, str] = field(default_factory=dict)


class VisibilityAPI:
    """Serves ``/apis/visibility.kueue.x-k8s.io[/{version}[/...]]`` from a :class:`PendingSource`.

    Without a source (attached later, once the controllers run) every resource request is a 503,
    as the aggregator answers while the APIService's backend is not available."""

    def __init__(self, source: PendingSource | None = None) -> None:
        self.source = source

    def attach(self, source: PendingSource) -> None:
        """Serve from ``source`` from now on."""
        self.source = source

    def handle(
        self, method: str, rest: str, query: Mapping[str, Sequence[str]], accept: str = JSON
    ) -> VisibilityResponse:
        """``rest`` is the path below ``/apis/visibility.kueue.x-k8s.io`` (e.g. ``/v1beta2/...``)."""
        try:
            doc = self._dispatch(method, rest, query)
            fmt = negotiate(accept)
        except StatusError as err:
            return VisibilityResponse(err.code, msgspec.json.encode(err.status()))
        if fmt.kind == "yaml":
            return VisibilityResponse(200, yaml.safe_dump(doc, sort_keys=False).encode(), YAML)
        return VisibilityResponse(200, msgspec.json.encode(doc))

    def _dispatch(self, method: str, rest: str, query: Mapping[str, Sequence[str]]) -> dict[str, Any]:
        parts = [p for p in rest.split("/") if p]
        if not parts:
            return {"kind": "APIGroup", "apiVersion": "v1", **api_group()}
        version, parts = parts[0], parts[1:]
        if version not in VERSIONS:
            raise E.path_not_found()
        if not parts:
            return api_resource_list(version)
        namespace: str | None = None
        if len(parts) == 5 and parts[0] == "namespaces":
            namespace, parts = parts[1], parts[2:]
        plural = "localqueues" if namespace is not None else "clusterqueues"
        if len(parts) != 3 or parts[0] != plural or parts[2] != "pendingworkloads":
            raise E.path_not_found()
        if method not in ("GET", "HEAD"):
            # go-restful's answer for a method no route serves (only GET is installed).
            raise StatusError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})
        source = self.source
        if source is None:
            raise _service_unavailable()
        try:
            if namespace is None:
                return cluster_queue_pending(source, version, parts[1], query)
            return local_queue_pending(source, version, namespace, parts[1], query)
        except Unavailable as err:
            raise _service_unavailable(str(err)) from None


def _service_unavailable(detail: str = "") -> StatusError:
    message = "the server is currently unable to handle the request"
    return StatusError(503, "ServiceUnavailable", message + (f" ({detail})" if detail else ""), {})


class Mountable(Protocol):
    """The API server's ``mount_group`` (``pykueue.apiserver.app.APIServerApp``)."""

    def mount_group(
        self, group: str, api: Any, api_group: dict[str, Any], aggregated: dict[str, Any]
    ) -> None: ...


def mount(server: Mountable, source: PendingSource | None = None) -> VisibilityAPI:
    """Serve the visibility API from ``server`` (``pykueue serve --controllers-in-process``; its default child process serves it on its endpoint)."""
    api = VisibilityAPI(source)
    server.mount_group(GROUP, api, api_group(), aggregated_group())
    return api
