"""Patches and server-side apply: pure functions over JSON-like dicts (docs/design/control-plane.md §3).

* :func:`json_patch` – RFC 6902 JSON patch (``application/json-patch+json``);
* :func:`merge_patch` – RFC 7386 JSON merge patch (``application/merge-patch+json``) and
  :func:`create_merge_patch`, its inverse;
* :func:`strategic_merge_patch` – Kubernetes strategic merge patch for built-in kinds;
* :func:`server_side_apply` / :func:`update_managed_fields` – server-side apply and the
  ``metadata.managedFields`` bookkeeping of every write;
* :class:`SchemaNode` / :func:`schema_node_from_openapi` – the list/map semantics driving the
  last three, read from OpenAPI ``x-kubernetes-*`` extensions.
"""

from pykueue.apiserver.patch._values import MISSING, json_equal
from pykueue.apiserver.patch.apply import (
    STRIPPED_PATHS,
    apply_conflict,
    server_side_apply,
    strip_meta,
    update_managed_fields,
)
from pykueue.apiserver.patch.errors import INVALID_MESSAGE, ApplyConflict, PatchError
from pykueue.apiserver.patch.fieldpath import (
    FieldSet,
    Path,
    field_element,
    field_path,
    from_fields_v1,
    iter_paths,
    key_element,
    path_to_string,
    to_fields_v1,
    value_element,
)
from pykueue.apiserver.patch.json_patch import (
    MAX_JSON_PATCH_OPERATIONS,
    apply_operations,
    escape_token,
    json_patch,
    parse_pointer,
    resolve_pointer,
)
from pykueue.apiserver.patch.managed_fields import (
    ANCIENT_CHANGES,
    APPLY,
    MAX_UPDATE_MANAGERS,
    UPDATE,
    ManagedEntry,
    cap_update_managers,
    decode_managed_fields,
    encode_managed_fields,
    manager_identifier,
)
from pykueue.apiserver.patch.merge_patch import create_merge_patch, merge_patch, merge_patch_value
from pykueue.apiserver.patch.schema_node import (
    DEDUCED,
    OBJECT_META,
    SCALAR,
    SchemaNode,
    kind_schema,
    schema_node_from_openapi,
)
from pykueue.apiserver.patch.strategic import strategic_merge_patch
from pykueue.apiserver.patch.typed import (
    Comparison,
    TypedError,
    compare,
    ensure_named_fields_are_members,
    merge,
    remove_items,
    to_field_set,
)

__all__ = [
    "ANCIENT_CHANGES",
    "APPLY",
    "DEDUCED",
    "INVALID_MESSAGE",
    "MAX_JSON_PATCH_OPERATIONS",
    "MAX_UPDATE_MANAGERS",
    "MISSING",
    "OBJECT_META",
    "SCALAR",
    "STRIPPED_PATHS",
    "UPDATE",
    "ApplyConflict",
    "Comparison",
    "FieldSet",
    "ManagedEntry",
    "PatchError",
    "Path",
    "SchemaNode",
    "TypedError",
    "apply_conflict",
    "apply_operations",
    "cap_update_managers",
    "compare",
    "create_merge_patch",
    "decode_managed_fields",
    "encode_managed_fields",
    "ensure_named_fields_are_members",
    "escape_token",
    "field_element",
    "field_path",
    "from_fields_v1",
    "iter_paths",
    "json_equal",
    "json_patch",
    "key_element",
    "kind_schema",
    "manager_identifier",
    "merge",
    "merge_patch",
    "merge_patch_value",
    "parse_pointer",
    "path_to_string",
    "remove_items",
    "resolve_pointer",
    "schema_node_from_openapi",
    "server_side_apply",
    "strategic_merge_patch",
    "strip_meta",
    "to_field_set",
    "to_fields_v1",
    "update_managed_fields",
    "value_element",
]
