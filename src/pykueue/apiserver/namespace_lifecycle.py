"""Namespace termination: the namespace controller's and the NamespaceLifecycle admission's part.

Deleting a Namespace marks it (``deletionTimestamp``, ``status.phase: Terminating``) while its
``spec.finalizers`` hold it (the store applies that rule); then its content is deleted and, once
nothing is left in it, the ``kubernetes`` finalizer is removed and the Namespace goes. Content
held by finalizers keeps the Namespace Terminating until the last of it is deleted. Meanwhile
creates in the Namespace are refused with the apiserver's 403. The kube-controller-manager does
this asynchronously; here it runs inline on the delete and on each later deletion of content.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import msgspec

from pykueue.apiserver import errors as E
from pykueue.apiserver.builtin.namespaces import NAMESPACE_FINALIZER
from pykueue.kube.status import StatusError
from pykueue.store.errors import qualified_resource
from pykueue.store.tx import NAMESPACES, loc_namespace

log = logging.getLogger("pykueue.apiserver")


class NamespaceLifecycle:
    """Tracks terminating Namespaces, deletes their content and finalizes them when empty."""

    def __init__(self, store: Any, resources: Sequence[Any], namespace_key: Any) -> None:
        self.store = store
        self.namespace_key = namespace_key
        self.content_keys = list({info.key() for info in resources if info.namespaced})
        items, _, _ = store.list(namespace_key)
        self.terminating: set[str] = {
            str(ns["metadata"]["name"]) for ns in items if ns["metadata"].get("deletionTimestamp")
        }
        self._unsubscribe = store.subscribe_raw(self._on_event)

    def close(self) -> None:
        """Stop following the store."""
        self._unsubscribe()

    def recover(self) -> None:
        """Finish namespaces left Terminating and already empty (e.g. by a crash mid-termination)."""
        for name in sorted(self.terminating):
            self.finalize_if_empty(name)

    # --- admission -----------------------------------------------------------------------------

    def check_create(self, group: str, plural: str, namespace: str | None, name: str) -> None:
        """403 for a create in a Namespace being terminated (NamespaceLifecycle admission)."""
        if namespace is None or namespace not in self.terminating:
            return
        detail = f"unable to create new content in namespace {namespace} because it is being terminated"
        if name:
            err = E.forbidden(group, plural, name, detail)
        else:  # generateName: NewForbidden without a name
            resource = qualified_resource(group, plural)
            err = StatusError(
                403, "Forbidden", f"{resource} is forbidden: {detail}", {"group": group, "kind": plural}
            )
            if not group:
                err.details.pop("group")
        err.details.setdefault("causes", []).append(
            {
                "reason": "NamespaceTerminating",
                "message": f"namespace {namespace} is being terminated",
                "field": "metadata.namespace",
            }
        )
        raise err

    # --- the namespace controller --------------------------------------------------------------

    def terminate(self, name: str) -> None:
        """Delete everything in a Namespace that is being deleted, then finalize it if empty."""
        self.terminating.add(name)
        for key in self.content_keys:
            items, _, _ = self.store.list(key, name)
            for obj in items:
                try:
                    self.store.delete(key, name, obj["metadata"].get("name", ""), propagation="Background")
                except Exception as err:
                    if getattr(err, "code", None) != 404:
                        raise
        self.finalize_if_empty(name)

    def finalize_if_empty(self, name: str) -> None:
        """Remove the ``kubernetes`` finalizer once nothing is left in the Namespace."""
        if any(self.store.count(key, name) for key in self.content_keys):
            return
        try:
            ns = self.store.get(self.namespace_key, "", name)
        except Exception as err:
            if getattr(err, "code", None) == 404:
                self.terminating.discard(name)
                return
            raise
        spec = ns.get("spec") or {}
        fins = list(spec.get("finalizers") or [])
        if not ns["metadata"].get("deletionTimestamp") or NAMESPACE_FINALIZER not in fins:
            return
        ns["spec"] = dict(spec, finalizers=[f for f in fins if f != NAMESPACE_FINALIZER])
        self.store.update(self.namespace_key, ns)  # the store deletes it when nothing holds it

    def _on_event(self, event: Any, key: Any) -> None:
        if (event.group, event.resource) == NAMESPACES:
            if event.type == "DELETED":
                self.terminating.discard(event.k)
            elif msgspec.json.decode(event.data)["metadata"].get("deletionTimestamp"):
                self.terminating.add(event.k)
            return
        if event.type != "DELETED" or not self.terminating:
            return
        namespace = loc_namespace(event.k)
        if namespace in self.terminating:
            try:
                self.finalize_if_empty(namespace)
            except Exception:  # the next deletion in the namespace tries again
                log.exception("finalizing namespace %s failed", namespace)
