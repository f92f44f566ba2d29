"""The ``/openapi/v3`` documents (OpenAPI 3.0), shaped like kube-apiserver's.

* :func:`openapi_v3_index` — ``{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=…"}, …}}``.
* :func:`openapi_v3_document` — one group version: ``components.schemas`` named like Kubernetes
  (``io.k8s.api.batch.v1.Job``, ``io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta``; CRDs as
  ``io.x-k8s.kueue.v1beta2.ClusterQueue``, the group reversed), each kind carrying
  ``x-kubernetes-group-version-kind``, plus the ``…List`` kinds and the standard meta types
  (ObjectMeta, ListMeta, Status, DeleteOptions, WatchEvent, Patch, Time, Quantity, ...); and
  ``paths`` for every resource with its operations (list with ``watch``, create, deletecollection,
  read, replace, patch, delete, and the ``/status`` subresource), each tagged with
  ``x-kubernetes-action`` and ``x-kubernetes-group-version-kind`` and carrying the query parameters
  ``dryRun``, ``fieldManager``, ``fieldValidation`` and ``force`` where Kubernetes has them —
  kubectl detects server-side field validation from ``fieldValidation`` on the PATCH operation,
  ``kubectl explain`` finds the kind through the paths and the GVK extension, and client-side
  ``kubectl apply`` reads ``x-kubernetes-patch-strategy``/``-merge-key`` from built-in schemas.

CRD schemas are the structural CRD schemas with ``metadata`` replaced by a reference to
ObjectMeta, as the apiextensions OpenAPI builder publishes them.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from pykueue.apiserver.builtin import meta
from pykueue.apiserver.builtin.schema import (
    COMPONENTS,
    GVK_EXTENSION,
    REF_PREFIX,
    Schema,
    arr,
    gvk_extension,
    obj,
    ref,
    referenced,
)
from pykueue.apiserver.resources import REGISTRY, Registry, ResourceInfo

OPENAPI_VERSION = "3.0.0"
KUBERNETES_VERSION = "v1.32.0"
JSON_MEDIA = "application/json"
YAML_MEDIA = "application/yaml"
PATCH_MEDIA = ("application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json")
STRATEGIC_PATCH_MEDIA = "application/strategic-merge-patch+json"

# --- names ------------------------------------------------------------------------------------------------


def crd_component_name(group: str, version: str, kind: str) -> str:
    """``io.x-k8s.kueue.v1beta2.ClusterQueue``: the group's labels reversed, then version and kind."""
    return ".".join([*reversed(group.split(".")), version, kind])


def component_name(info: ResourceInfo, version: str) -> str:
    """The ``components.schemas`` name of a kind."""
    return info.component or crd_component_name(info.group, version, info.kind)


def _operation_prefix(group: str, version: str) -> str:
    if not group:
        return f"Core{version.capitalize()}"
    base = group.removesuffix(".k8s.io") if group.endswith(".k8s.io") and group.count(".") == 2 else group
    words = re.split(r"[.\-]", base)
    return "".join(w[:1].upper() + w[1:] for w in words) + version.capitalize()


def _tag(group: str, version: str) -> str:
    prefix = _operation_prefix(group, version).removesuffix(version.capitalize())
    return f"{prefix[:1].lower()}{prefix[1:]}_{version}"


def document_path(group: str, version: str) -> str:
    """``api/v1`` or ``apis/{group}/{version}`` (the key in the index)."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


# --- parameters ---------------------------------------------------------------------------------------------

_QUERY_DOCS: Mapping[str, tuple[str, str]] = {
    "allowWatchBookmarks": ("boolean", 'allowWatchBookmarks requests watch events with type "BOOKMARK".'),
    "continue": ("string", "The continue option should be set when retrieving more results from the server."),
    "dryRun": (
        "string",
        "When present, indicates that modifications should not be persisted. Valid value: All",
    ),
    "fieldManager": (
        "string",
        "fieldManager is a name associated with the actor or entity that is making these changes.",
    ),
    "fieldSelector": (
        "string",
        "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
    ),
    "fieldValidation": (
        "string",
        "fieldValidation instructs the server on how to handle objects in the request containing unknown or "
        "duplicate fields. Valid values are: Ignore, Warn (default) and Strict.",
    ),
    "force": (
        "boolean",
        'Force is going to "force" Apply requests. It must be unset for non-apply patch requests.',
    ),
    "gracePeriodSeconds": ("integer", "The duration in seconds before the object should be deleted."),
    "labelSelector": (
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
    ),
    "limit": ("integer", "limit is a maximum number of responses to return for a list call."),
    "orphanDependents": ("boolean", "Deprecated: please use the PropagationPolicy."),
    "pretty": ("string", "If 'true', then the output is pretty printed."),
    "propagationPolicy": (
        "string",
        "Whether and how garbage collection will be performed: Orphan, Background or Foreground.",
    ),
    "resourceVersion": (
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served from.",
    ),
    "resourceVersionMatch": (
        "string",
        "resourceVersionMatch determines how resourceVersion is applied to list calls.",
    ),
    "sendInitialEvents": ("boolean", "`sendInitialEvents=true` may be set together with `watch=true`."),
    "timeoutSeconds": ("integer", "Timeout for the list/watch call."),
    "watch": (
        "boolean",
        "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
    ),
}

_LIST_PARAMS = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_PATCH_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force")
_DELETE_PARAMS = ("dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy")
_DELETE_COLLECTION_PARAMS = (
    "continue",
    "dryRun",
    "fieldSelector",
    "gracePeriodSeconds",
    "labelSelector",
    "limit",
    "orphanDependents",
    "propagationPolicy",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
)


def query_parameter(name: str) -> dict[str, Any]:
    """One query parameter object (inline, as kube-apiserver's v3 documents have them)."""
    type_, description = _QUERY_DOCS[name]
    schema: dict[str, Any] = {"type": type_, "uniqueItems": True}
    return {"name": name, "in": "query", "description": description, "schema": schema}


def _path_parameter(name: str, kind: str) -> dict[str, Any]:
    description = (
        f"name of the {kind}"
        if name == "name"
        else "object name and auth scope, such as for teams and projects"
    )
    return {
        "name": name,
        "in": "path",
        "description": description,
        "required": True,
        "schema": {"type": "string", "uniqueItems": True},
    }


# --- operations -----------------------------------------------------------------------------------------------


def _content(schema_ref: str, media: Iterable[str] = (JSON_MEDIA, YAML_MEDIA)) -> dict[str, Any]:
    return {m: {"schema": {"$ref": REF_PREFIX + schema_ref}} for m in media}


def _responses(codes: Mapping[str, str], schema_ref: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        code: {"description": text, "content": _content(schema_ref)} for code, text in codes.items()
    }
    out["401"] = {"description": "Unauthorized"}
    return out


def _operation(
    info: ResourceInfo,
    version: str,
    action: str,
    operation_id: str,
    description: str,
    params: Iterable[str],
    responses: dict[str, Any],
    body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "tags": [_tag(info.group, version)],
        "description": description,
        "operationId": operation_id,
        "parameters": [query_parameter(p) for p in params],
        "responses": responses,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": info.group, "version": version, "kind": info.kind},
    }
    if body is not None:
        op["requestBody"] = body
    return op


def _collection_path(info: ResourceInfo, version: str, kind_ref: str, list_ref: str) -> dict[str, Any]:
    scope = "Namespaced" if info.namespaced else ""
    prefix = _operation_prefix(info.group, version)
    ok = {"200": "OK"}
    created = {"200": "OK", "201": "Created", "202": "Accepted"}
    body = {"content": _content(kind_ref, (JSON_MEDIA, YAML_MEDIA)), "required": True}
    delete_body = {"content": _content(meta.DELETE_OPTIONS, (JSON_MEDIA, YAML_MEDIA))}
    item: dict[str, Any] = {
        "get": _operation(
            info,
            version,
            "list",
            f"list{prefix}{scope}{info.kind}",
            f"list or watch objects of kind {info.kind}",
            _LIST_PARAMS,
            _responses(ok, list_ref),
        ),
        "post": _operation(
            info,
            version,
            "post",
            f"create{prefix}{scope}{info.kind}",
            f"create a {info.kind}",
            _WRITE_PARAMS,
            _responses(created, kind_ref),
            body,
        ),
        "delete": _operation(
            info,
            version,
            "deletecollection",
            f"deleteCollection{prefix}{scope}{info.kind}",
            f"delete collection of {info.kind}",
            _DELETE_COLLECTION_PARAMS,
            _responses(ok, meta.STATUS),
            delete_body,
        ),
        "parameters": _scope_parameters(info, with_name=False),
    }
    return item


def _scope_parameters(info: ResourceInfo, *, with_name: bool) -> list[dict[str, Any]]:
    params = [_path_parameter("name", info.kind)] if with_name else []
    if info.namespaced:
        params.append(_path_parameter("namespace", info.kind))
    params.append(query_parameter("pretty"))
    return params


def _patch_body(info: ResourceInfo) -> dict[str, Any]:
    media = [*PATCH_MEDIA, STRATEGIC_PATCH_MEDIA] if info.builtin else list(PATCH_MEDIA)
    return {"content": _content(meta.PATCH, sorted(media)), "required": True}


def _item_path(info: ResourceInfo, version: str, kind_ref: str, *, status: bool = False) -> dict[str, Any]:
    scope = "Namespaced" if info.namespaced else ""
    prefix = _operation_prefix(info.group, version)
    suffix = "Status" if status else ""
    what = f"status of the specified {info.kind}" if status else f"the specified {info.kind}"
    ok = {"200": "OK"}
    body = {"content": _content(kind_ref, (JSON_MEDIA, YAML_MEDIA)), "required": True}
    item: dict[str, Any] = {
        "get": _operation(
            info,
            version,
            "get",
            f"read{prefix}{scope}{info.kind}{suffix}",
            f"read {what}",
            ("resourceVersion",),
            _responses(ok, kind_ref),
        ),
        "put": _operation(
            info,
            version,
            "put",
            f"replace{prefix}{scope}{info.kind}{suffix}",
            f"replace {what}",
            _WRITE_PARAMS,
            _responses({"200": "OK", "201": "Created"}, kind_ref),
            body,
        ),
        "patch": _operation(
            info,
            version,
            "patch",
            f"patch{prefix}{scope}{info.kind}{suffix}",
            f"partially update {what}",
            _PATCH_PARAMS,
            _responses({"200": "OK", "201": "Created"}, kind_ref),
            _patch_body(info),
        ),
    }
    if not status:
        item["delete"] = _operation(
            info,
            version,
            "delete",
            f"delete{prefix}{scope}{info.kind}",
            f"delete a {info.kind}",
            _DELETE_PARAMS,
            _responses({"200": "OK", "202": "Accepted"}, meta.STATUS),
            {"content": _content(meta.DELETE_OPTIONS, (JSON_MEDIA, YAML_MEDIA))},
        )
    item["parameters"] = _scope_parameters(info, with_name=True)
    return item


def _all_namespaces_path(info: ResourceInfo, version: str, list_ref: str) -> dict[str, Any]:
    prefix = _operation_prefix(info.group, version)
    return {
        "get": _operation(
            info,
            version,
            "list",
            f"list{prefix}{info.kind}ForAllNamespaces",
            f"list or watch objects of kind {info.kind}",
            _LIST_PARAMS,
            _responses({"200": "OK"}, list_ref),
        ),
        "parameters": [query_parameter("pretty")],
    }


def resource_paths(info: ResourceInfo, version: str) -> dict[str, dict[str, Any]]:
    """The ``paths`` entries of one resource in one version."""
    kind_ref = component_name(info, version)
    list_ref = kind_ref + "List"
    base = f"/apis/{info.group}/{version}" if info.group else f"/api/{version}"
    collection = (
        f"{base}/namespaces/{{namespace}}/{info.plural}" if info.namespaced else f"{base}/{info.plural}"
    )
    paths = {
        collection: _collection_path(info, version, kind_ref, list_ref),
        f"{collection}/{{name}}": _item_path(info, version, kind_ref),
    }
    if info.status_subresource:
        paths[f"{collection}/{{name}}/status"] = _item_path(info, version, kind_ref, status=True)
    if info.namespaced:
        paths[f"{base}/{info.plural}"] = _all_namespaces_path(info, version, list_ref)
    return paths


# --- schemas ---------------------------------------------------------------------------------------------------


def crd_component(info: ResourceInfo, version: str) -> Schema:
    """A CRD kind as published: structural schema, ``metadata`` → ObjectMeta, GVK extension."""
    schema = copy.deepcopy(info.openapi_schema(version))
    props = schema.setdefault("properties", {})
    props["metadata"] = meta.metadata_field()
    props["apiVersion"] = meta.api_version_field()
    props["kind"] = meta.kind_field()
    schema["type"] = "object"
    schema[GVK_EXTENSION] = gvk_extension(info.group, version, info.kind)
    return schema


def list_component(info: ResourceInfo, version: str) -> Schema:
    """The ``<Kind>List`` schema."""
    schema = obj(
        {
            "apiVersion": meta.api_version_field(),
            "items": arr(ref(component_name(info, version)), f"List of {info.plural}."),
            "kind": meta.kind_field(),
            "metadata": meta.metadata_field()
            | {"allOf": [{"$ref": REF_PREFIX + meta.LIST_META}], "description": meta.LIST_METADATA_DOC},
        },
        f"{info.kind}List is a list of {info.kind}",
        required_fields=("items",),
    )
    schema[GVK_EXTENSION] = gvk_extension(info.group, version, info.kind + "List")
    return schema


def _standard_components(group: str, version: str) -> dict[str, Schema]:
    names = referenced(meta.STANDARD_COMPONENTS)
    out = {name: copy.deepcopy(COMPONENTS[name]) for name in names}
    for name, kind in ((meta.DELETE_OPTIONS, "DeleteOptions"), (meta.WATCH_EVENT, "WatchEvent")):
        gvks = gvk_extension("", "v1", kind)
        if group:
            gvks += gvk_extension(group, version, kind)
        out[name][GVK_EXTENSION] = gvks
    out[meta.STATUS][GVK_EXTENSION] = gvk_extension("", "v1", "Status")
    return out


def _components(resources: list[ResourceInfo], group: str, version: str) -> dict[str, Schema]:
    schemas = _standard_components(group, version)
    builtin_roots = [info.component for info in resources if info.builtin]
    for name in referenced(builtin_roots):
        schemas.setdefault(name, copy.deepcopy(COMPONENTS[name]))
    for info in resources:
        if not info.builtin:
            schemas[component_name(info, version)] = crd_component(info, version)
        schemas[component_name(info, version) + "List"] = list_component(info, version)
    return dict(sorted(schemas.items()))


# --- documents -------------------------------------------------------------------------------------------------


@cache
def _document(group: str, version: str, registry: Registry) -> dict[str, Any]:
    resources = registry.resources_in(group, version)
    if not resources:
        raise KeyError(f"group version {group}/{version} is not served")
    paths: dict[str, Any] = {}
    for info in resources:
        paths.update(resource_paths(info, version))
    return {
        "openapi": OPENAPI_VERSION,
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": _components(resources, group, version),
            "securitySchemes": {
                "BearerToken": {
                    "type": "apiKey",
                    "description": "Bearer Token authentication",
                    "name": "authorization",
                    "in": "header",
                }
            },
        },
    }


def openapi_v3_document(group: str, version: str, registry: Registry = REGISTRY) -> dict[str, Any]:
    """The OpenAPI 3.0 document of one group version (``""`` = core); KeyError if not served."""
    return copy.deepcopy(_document(group, version, registry))


def openapi_v3_paths(registry: Registry = REGISTRY) -> list[str]:
    """Every document path of the index (``api/v1``, ``apis/batch/v1``, ...)."""
    return [document_path(group, v) for group, versions in registry.groups() for v in versions]


def document_for_path(path: str, registry: Registry = REGISTRY) -> dict[str, Any]:
    """The document of an index path (``api/v1`` or ``apis/{g}/{v}``); KeyError if unknown."""
    parts = path.strip("/").split("/")
    if len(parts) == 2 and parts[0] == "api":
        return openapi_v3_document("", parts[1], registry)
    if len(parts) == 3 and parts[0] == "apis":
        return openapi_v3_document(parts[1], parts[2], registry)
    raise KeyError(f"no OpenAPI document at {path}")


def document_hash(document: Mapping[str, Any]) -> str:
    """The ETag-style hash kube-apiserver puts in ``serverRelativeURL`` (upper-case SHA-512)."""
    body = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha512(body).hexdigest().upper()


@cache
def _index(registry: Registry) -> dict[str, Any]:
    paths = {}
    for path in openapi_v3_paths(registry):
        digest = document_hash(document_for_path(path, registry))
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def openapi_v3_index(registry: Registry = REGISTRY) -> dict[str, Any]:
    """The ``/openapi/v3`` discovery document."""
    return copy.deepcopy(_index(registry))
