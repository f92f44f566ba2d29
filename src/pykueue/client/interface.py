"""The one API client interface the controllers talk through (design: docs/design/controllers.md).

Two implementations: :class:`pykueue.client.inprocess.InProcessClient` (the embedded control plane,
no HTTP) and :class:`pykueue.client.http.HTTPClient` (any Kubernetes API server via a kubeconfig).
Objects are plain JSON dicts in the version the :class:`Resource` names, exactly as the API serves
them; errors are :class:`APIError` subclasses keyed by the HTTP status code, so callers handle
conflicts and missing objects the same way whichever transport is used.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pykueue.kube.status import StatusError


@dataclass(frozen=True)
class Resource:
    """One served collection: ``/apis/{group}/{version}/{plural}`` (``/api/v1/...`` for core)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """``apiVersion`` of the objects (``v1`` for the core group)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The URL path of the collection, an object or its subresource."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


class APIError(StatusError):
    """A failed request as the client sees it: the :class:`StatusError` parsed from the server's answer.

    The subclasses below let callers catch by meaning (:class:`NotFound`, :class:`Conflict`, ...);
    ``str()`` reads ``<code> <reason>: <message>`` for logs.
    """

    def __init__(
        self, code: int, reason: str, message: str, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(code, reason, message, details)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"


class NotFound(APIError):
    """404: the object (or its namespace) does not exist."""


class Conflict(APIError):
    """409 Conflict: a stale resourceVersion; re-read and try again."""


class AlreadyExists(APIError):
    """409 AlreadyExists: create of an existing name."""


class Gone(APIError):
    """410 Expired: a watch resourceVersion older than the server keeps; relist."""


class Invalid(APIError):
    """422: the object failed validation; retrying the same write cannot succeed."""


def error_for(
    code: int, reason: str, message: str, details: Mapping[str, Any] | None = None
) -> APIError:
    """The :class:`APIError` subclass for a ``Status`` (code + reason)."""
    cls = APIError
    if code == 404:
        cls = NotFound
    elif code == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
    elif code == 410:
        cls = Gone
    elif code == 422:
        cls = Invalid
    return cls(code, reason, message, details)


def error_from_status(code: int, status: Any) -> APIError:
    """The error a ``Status`` body (or anything else the server sent) stands for."""
    if isinstance(status, Mapping):
        details = status.get("details")
        return error_for(
            int(status.get("code") or code),
            str(status.get("reason") or ""),
            str(status.get("message") or ""),
            details if isinstance(details, Mapping) else None,
        )
    return error_for(code, "", str(status))


@dataclass(frozen=True)
class WatchEvent:
    """``ADDED`` / ``MODIFIED`` / ``DELETED`` (``BOOKMARK`` events are consumed by the client)."""

    type: str
    object: dict[str, Any]


class Watch(Protocol):
    """A running watch: iterate for events; ends when the server closes it or on ``close()``."""

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


class Client(Protocol):
    """Kubernetes API verbs on JSON objects; see the module docstring."""

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        """GET one object (raises :class:`NotFound`)."""
        ...

    def list(self, res: Resource, namespace: str | None = None) -> tuple[list[dict[str, Any]], str]:
        """Every object of a collection (all namespaces when ``namespace`` is None) and the list's resourceVersion."""
        ...

    def watch(self, res: Resource, resource_version: str, namespace: str | None = None) -> Watch:
        """Changes after ``resource_version`` (raises or ends with :class:`Gone` when it is too old)."""
        ...

    def create(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """POST; the namespace comes from ``obj.metadata.namespace``."""
        ...

    def replace(self, res: Resource, obj: Mapping[str, Any], subresource: str | None = None) -> dict[str, Any]:
        """PUT (``subresource="status"`` for the status); a set resourceVersion is a precondition."""
        ...

    def patch(
        self,
        res: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        patch_type: str = "merge",
    ) -> dict[str, Any]:
        """PATCH with ``merge`` (RFC 7386) or ``json`` (RFC 6902) semantics."""
        ...

    def delete(
        self, res: Resource, name: str, namespace: str | None = None, *, propagation: str | None = None
    ) -> None:
        """DELETE (raises :class:`NotFound`); ``propagation`` is Background/Foreground/Orphan."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


PATCH_CONTENT_TYPES: Mapping[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
