"""The in-process client: the embedded API server's request pipeline, called without HTTP.

Requests go through :class:`pykueue.apiserver.handlers.Handlers` (admission webhooks, defaulting,
validation, version conversion, resourceVersion preconditions) exactly as HTTP requests do, so the
controllers see the same behaviour embedded and against a real cluster; only the socket and the
HTTP framing are skipped. Watches read the store's change log directly and convert each object to
the requested version, as the API server's watch endpoint does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from pykueue.apiserver.handlers import APIRequest, Handlers
from pykueue.client.interface import (
    PATCH_CONTENT_TYPES,
    Gone,
    Resource,
    WatchEvent,
    error_for,
)
from pykueue.kube.status import StatusError

USER_AGENT = "pykueue-controller/in-process"
_POLL_SECONDS = 0.5


class InProcessClient:
    """:class:`pykueue.client.interface.Client` over an embedded API server's handlers."""

    def __init__(self, handlers: Handlers, *, background_acks: bool = False) -> None:
        self.handlers = handlers
        self.store = handlers.store
        self.background_acks = background_acks
        """Writes return once committed, without waiting for their fsync (Store.background_acks)."""

    # -- plumbing ---------------------------------------------------------------------------------

    def _call(
        self,
        method: str,
        res: Resource,
        namespace: str | None,
        name: str | None,
        *,
        subresource: str | None = None,
        body: Any = None,
        content_type: str = "application/json",
        query: Mapping[str, list[str]] | None = None,
    ) -> dict[str, Any]:
        req = APIRequest(
            method=method,
            group=res.group,
            version=res.version,
            resource=res.plural,
            namespace=namespace if res.namespaced else None,
            name=name,
            subresource=subresource,
            query=dict(query or {}),
            content_type=content_type,
            user_agent=USER_AGENT,
            body=b"" if body is None else msgspec.json.encode(body),
        )
        try:
            if self.background_acks and method != "GET":
                with self.store.background_acks():
                    resp = self.handlers.handle(req)
            else:
                resp = self.handlers.handle(req)
        except StatusError as err:
            raise error_for(err.code, err.reason, err.message) from None
        if resp.status >= 400:
            status = msgspec.json.decode(resp.body) if resp.body else {}
            raise error_for(resp.status, str(status.get("reason", "")), str(status.get("message", "")))
        decoded: dict[str, Any] = msgspec.json.decode(resp.body) if resp.body else {}
        return decoded

    # -- verbs ------------------------------------------------------------------------------------

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        """GET one object."""
        return self._call("GET", res, namespace, name)

    def list(self, res: Resource, namespace: str | None = None) -> tuple[list[dict[str, Any]], str]:
        """LIST a collection (every namespace when ``namespace`` is None)."""
        out = self._call("GET", res, namespace, None)
        items = out.get("items") or []
        for item in items:  # list items carry no kind/apiVersion on the wire; informers want them
            item.setdefault("apiVersion", res.api_version)
            item.setdefault("kind", res.kind)
        return items, str((out.get("metadata") or {}).get("resourceVersion", ""))

    def create(self, res: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """POST an object."""
        namespace = (obj.get("metadata") or {}).get("namespace")
        return self._call("POST", res, namespace, None, body=obj)

    def replace(self, res: Resource, obj: Mapping[str, Any], subresource: str | None = None) -> dict[str, Any]:
        """PUT an object (or its status)."""
        meta = obj.get("metadata") or {}
        return self._call("PUT", res, meta.get("namespace"), meta.get("name"), subresource=subresource, body=obj)

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
        """PATCH an object (or its status)."""
        return self._call(
            "PATCH",
            res,
            namespace,
            name,
            subresource=subresource,
            body=patch,
            content_type=PATCH_CONTENT_TYPES[patch_type],
        )

    def delete(
        self, res: Resource, name: str, namespace: str | None = None, *, propagation: str | None = None
    ) -> None:
        """DELETE an object."""
        query = {"propagationPolicy": [propagation]} if propagation else None
        self._call("DELETE", res, namespace, name, query=query)

    def watch(self, res: Resource, resource_version: str, namespace: str | None = None) -> InProcessWatch:
        """Changes after ``resource_version`` from the store's change log."""
        info = self.handlers.backend.lookup(res.group, res.version, res.plural)
        if info is None:
            raise error_for(404, "NotFound", f"the server could not find the requested resource ({res.plural})")
        try:
            since = int(resource_version) if resource_version else None
        except ValueError:
            raise error_for(400, "BadRequest", f"invalid resource version: {resource_version}") from None
        try:
            raw = self.store.watch(info.key(), namespace if res.namespaced else None, since=since)
        except StatusError as err:
            raise error_for(err.code, err.reason, str(err)) from None
        return InProcessWatch(raw, lambda obj: info.from_storage(obj, res.version))

    def close(self) -> None:
        """Nothing to release: the store belongs to the server."""


class InProcessWatch:
    """Iterates a store watch, converting objects to the requested version."""

    def __init__(self, raw: Any, convert: Any) -> None:
        self._raw = raw
        self._convert = convert
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[WatchEvent]:
        while not self._closed.is_set():
            try:
                ev = self._raw.next(_POLL_SECONDS)
            except StatusError as err:
                if err.code == 410:
                    raise Gone(410, "Expired", str(err)) from None
                raise error_for(err.code, err.reason, str(err)) from None
            if ev is None:
                if self._raw.closed:
                    return
                continue
            if ev.type == "BOOKMARK":
                continue
            yield WatchEvent(ev.type, self._convert(ev.object))

    def close(self) -> None:
        """End the watch (from any thread)."""
        self._closed.set()
        self._raw.close()
