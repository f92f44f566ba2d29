"""API discovery documents, exactly as kube-apiserver serves them.

* legacy discovery: ``/api`` (``APIVersions``), ``/api/v1`` and ``/apis/{g}/{v}``
  (``APIResourceList``), ``/apis`` (``APIGroupList``), ``/apis/{g}`` (``APIGroup``);
* aggregated discovery (``apidiscovery.k8s.io/v2`` and ``v2beta1`` ``APIGroupDiscoveryList``) for
  ``/api`` and ``/apis`` when the client asks for it, as kubectl 1.32 does;
* ``/version``.

The registry is static, so every document is built once, encoded once and served with an ETag.
"""

from __future__ import annotations

import base64
import hashlib
import platform
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SUBRESOURCE_VERBS = ["get", "patch", "update"]
KUBE_MAJOR = "1"
KUBE_MINOR = "32"
KUBE_GIT_VERSION = "v1.32.0"
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


class ResourceLike(Protocol):
    """The parts of ``resources.ResourceInfo`` discovery reads."""

    @property
    def group(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def plural(self) -> str: ...
    @property
    def singular(self) -> str: ...
    @property
    def namespaced(self) -> bool: ...
    @property
    def versions(self) -> tuple[str, ...]: ...
    @property
    def storage_version(self) -> str: ...
    @property
    def short_names(self) -> tuple[str, ...]: ...
    @property
    def categories(self) -> tuple[str, ...]: ...
    @property
    def status_subresource(self) -> bool: ...


@dataclass(frozen=True)
class Document:
    """An encoded discovery document with its ETag and content type."""

    body: bytes
    etag: str
    content_type: str = "application/json"


def _document(obj: Any, content_type: str = "application/json") -> Document:
    body = msgspec.json.encode(obj)
    etag = '"' + hashlib.sha256(body).hexdigest()[:32].upper() + '"'
    return Document(body, etag, content_type)


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """``storageversionhash.StorageVersionHash``: base64 of the first 8 bytes of sha256(g/v/k)."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def group_version(group: str, version: str) -> str:
    """``group/version`` (just ``version`` for the core group)."""
    return f"{group}/{version}" if group else version


def version_info() -> dict[str, str]:
    """The ``/version`` document (``version.Info``)."""
    return {
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": KUBE_GIT_VERSION,
        "gitCommit": "pykueue",
        "gitTreeState": "clean",
        "buildDate": "2024-12-11T00:00:00Z",
        "goVersion": f"python{sys.version_info.major}.{sys.version_info.minor}",
        "compiler": "cpython",
        "platform": f"{sys.platform}/{platform.machine().lower().replace('x86_64', 'amd64')}",
    }


class Discovery:
    """All discovery documents of a static set of resources, built once."""

    def __init__(self, resources: Iterable[ResourceLike]) -> None:
        self.resources: list[ResourceLike] = list(resources)
        self.groups = self._group_versions()
        self.external: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._cache: dict[tuple[str, ...], Document | None] = {}

    def add_external_group(self, name: str, api_group: dict[str, Any], aggregated: dict[str, Any]) -> None:
        """List a group served outside the registry (like an APIService-backed group): its
        ``APIGroup`` entry in ``/apis`` and its ``APIGroupDiscovery`` in aggregated discovery.
        Its own documents are served by whoever serves the group."""
        self.external[name] = (api_group, aggregated)
        self._cache.clear()

    # -- structure --------------------------------------------------------------------------------

    def _group_versions(self) -> dict[str, list[str]]:
        """Group -> served versions, preferred first; the core group first, then registry order."""
        groups: dict[str, list[str]] = {"": []}
        for info in self.resources:
            versions = groups.setdefault(info.group, [])
            for v in info.versions:
                if v not in versions:
                    versions.append(v)
        if not groups[""]:
            del groups[""]
        return groups

    def resources_in(self, group: str, version: str) -> list[ResourceLike]:
        """The resources served in one group version, in registry order."""
        return [r for r in self.resources if r.group == group and version in r.versions]

    def has_group_version(self, group: str, version: str) -> bool:
        """Whether ``group/version`` is served."""
        return version in self.groups.get(group, [])

    # -- legacy documents -------------------------------------------------------------------------

    def _version_entries(self, group: str) -> list[dict[str, str]]:
        return [{"groupVersion": group_version(group, v), "version": v} for v in self.groups[group]]

    def _api_group(self, group: str) -> dict[str, Any]:
        entries = self._version_entries(group)
        return {"name": group, "versions": entries, "preferredVersion": entries[0]}

    def api_versions(self, server_address: str) -> Document:
        """``/api``: ``APIVersions`` (not cached: it names the address the client used)."""
        return _document(
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
            }
        )

    def api_group_list(self) -> Document:
        """``/apis``: every non-core group."""
        return self._cached(
            ("groups",),
            lambda: {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [self._api_group(g) for g in self.groups if g] + [e[0] for e in self.external.values()],
            },
        )

    def api_group(self, group: str) -> Document | None:
        """``/apis/{group}``."""
        if not group or group not in self.groups:
            return None
        return self._cached(
            ("group", group), lambda: {"kind": "APIGroup", "apiVersion": "v1", **self._api_group(group)}
        )

    def api_resource_list(self, group: str, version: str) -> Document | None:
        """``/api/v1`` or ``/apis/{group}/{version}``: ``APIResourceList``."""
        if not self.has_group_version(group, version):
            return None
        return self._cached(("resources", group, version), lambda: self._resource_list(group, version))

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        resources: list[dict[str, Any]] = []
        for info in self.resources_in(group, version):
            resources.append(self._api_resource(info))
            if info.status_subresource:
                resources.append(
                    {
                        "name": f"{info.plural}/status",
                        "singularName": "",
                        "namespaced": info.namespaced,
                        "kind": info.kind,
                        "verbs": SUBRESOURCE_VERBS,
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version(group, version),
            "resources": resources,
        }

    @staticmethod
    def _api_resource(info: ResourceLike) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": VERBS,
        }
        if info.short_names:
            entry["shortNames"] = list(info.short_names)
        if info.categories:
            entry["categories"] = list(info.categories)
        entry["storageVersionHash"] = storage_version_hash(info.group, info.storage_version, info.kind)
        return entry

    # -- aggregated documents ---------------------------------------------------------------------

    def aggregated(self, legacy: bool, content_type: str = AGGREGATED_V2) -> Document:
        """``APIGroupDiscoveryList`` for ``/api`` (``legacy``) or ``/apis``."""
        api_version = "apidiscovery.k8s.io/v2beta1" if "v2beta1" in content_type else "apidiscovery.k8s.io/v2"
        groups = [g for g in self.groups if (g == "") == legacy]
        return self._cached(
            ("aggregated", str(legacy), api_version),
            lambda: {
                "kind": "APIGroupDiscoveryList",
                "apiVersion": api_version,
                "metadata": {},
                "items": [self._group_discovery(g) for g in groups]
                + ([] if legacy else [e[1] for e in self.external.values()]),
            },
            content_type,
        )

    def _group_discovery(self, group: str) -> dict[str, Any]:
        versions = [
            {
                "version": v,
                "resources": [self._resource_discovery(info, v) for info in self.resources_in(group, v)],
                "freshness": "Current",
            }
            for v in self.groups[group]
        ]
        return {"metadata": {"name": group, "creationTimestamp": None}, "versions": versions}

    @staticmethod
    def _resource_discovery(info: ResourceLike, version: str) -> dict[str, Any]:
        kind = {"group": info.group, "version": version, "kind": info.kind}
        entry: dict[str, Any] = {
            "resource": info.plural,
            "responseKind": kind,
            "scope": "Namespaced" if info.namespaced else "Cluster",
            "singularResource": info.singular,
            "verbs": VERBS,
        }
        if info.short_names:
            entry["shortNames"] = list(info.short_names)
        if info.categories:
            entry["categories"] = list(info.categories)
        if info.status_subresource:
            entry["subresources"] = [
                {"subresource": "status", "responseKind": kind, "verbs": SUBRESOURCE_VERBS}
            ]
        return entry

    # -- cache ------------------------------------------------------------------------------------

    def _cached(self, key: tuple[str, ...], build: Any, content_type: str = "application/json") -> Document:
        doc = self._cache.get(key)
        if doc is None:
            doc = _document(build(), content_type)
            self._cache[key] = doc
        return doc


def wants_aggregated(accept: str) -> str | None:
    """The aggregated-discovery content type the ``Accept`` header asks for first, if any."""
    for media in parse_accept(accept):
        params = media.params
        if (
            media.type == "application/json"
            and params.get("g") == "apidiscovery.k8s.io"
            and params.get("as") == "APIGroupDiscoveryList"
        ):
            if params.get("v") == "v2":
                return AGGREGATED_V2
            if params.get("v") == "v2beta1":
                return AGGREGATED_V2BETA1
        if media.type in ("application/json", "*/*", "application/*") and not params.get("as"):
            return None
    return None


@dataclass(frozen=True)
class MediaRange:
    """One entry of an ``Accept`` header."""

    type: str
    params: Mapping[str, str]


def parse_accept(header: str) -> Sequence[MediaRange]:
    """Split an ``Accept`` header into media ranges, in the order given (q-values ignored like kube)."""
    out: list[MediaRange] = []
    for part in header.split(","):
        pieces = [p.strip() for p in part.split(";")]
        if not pieces[0]:
            continue
        params: dict[str, str] = {}
        for p in pieces[1:]:
            if "=" in p:
                k, v = p.split("=", 1)
                params[k.strip().lower()] = v.strip().strip('"')
        out.append(MediaRange(pieces[0].lower(), params))
    return out
