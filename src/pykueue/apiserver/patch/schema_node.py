"""``SchemaNode``: the merge semantics of every path of a kind, derived from its OpenAPI schema.

One node per schema location describes

* its *kind*: ``map`` (object with ``properties`` and/or ``additionalProperties``), ``list``,
  ``scalar`` or ``any`` (untyped/``x-kubernetes-preserve-unknown-fields``: maps are granular,
  lists atomic, like structured-merge-diff's deduced type);
* server-side apply relationships: ``map_type`` (``granular``/``atomic``, from
  ``x-kubernetes-map-type``) and ``list_type`` (``atomic``/``set``/``map`` with
  ``list_map_keys``, from ``x-kubernetes-list-type``/``x-kubernetes-list-map-keys``, falling back
  to ``x-kubernetes-patch-strategy: merge`` + ``x-kubernetes-patch-merge-key`` exactly like
  ``kube-openapi/pkg/schemaconv``; lists default to atomic);
* strategic merge patch metadata: ``patch_strategy`` and ``patch_merge_key``.

Children are resolved lazily, so recursive schemas (``JSONSchemaProps``) are fine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from pykueue.apiserver.patch._values import MISSING

PATCH_STRATEGY: Final = "x-kubernetes-patch-strategy"
PATCH_MERGE_KEY: Final = "x-kubernetes-patch-merge-key"
LIST_TYPE: Final = "x-kubernetes-list-type"
LIST_MAP_KEYS: Final = "x-kubernetes-list-map-keys"
MAP_TYPE: Final = "x-kubernetes-map-type"
INT_OR_STRING: Final = "x-kubernetes-int-or-string"
PRESERVE_UNKNOWN: Final = "x-kubernetes-preserve-unknown-fields"
EMBEDDED_RESOURCE: Final = "x-kubernetes-embedded-resource"

_SCALAR_TYPES: Final = frozenset({"string", "integer", "number", "boolean"})


class SchemaNode:
    """Merge/patch semantics of one schema location (see the module docstring)."""

    __slots__ = (
        "_fields",
        "_items",
        "_values",
        "default",
        "kind",
        "list_map_keys",
        "list_type",
        "map_type",
        "patch_merge_key",
        "patch_strategy",
    )

    def __init__(
        self,
        kind: str = "any",
        *,
        fields: Mapping[str, SchemaNode] | Callable[[], Mapping[str, SchemaNode]] | None = None,
        values: SchemaNode | Callable[[], SchemaNode | None] | None = None,
        items: SchemaNode | Callable[[], SchemaNode] | None = None,
        map_type: str = "granular",
        list_type: str = "atomic",
        list_map_keys: tuple[str, ...] = (),
        patch_strategy: str = "",
        patch_merge_key: str = "",
        default: Any = MISSING,
    ) -> None:
        if kind not in ("map", "list", "scalar", "any"):
            raise ValueError(f"unknown schema node kind {kind!r}")
        self.kind = kind
        self._fields = fields
        self._values = values
        self._items = items
        self.map_type = map_type
        self.list_type = list_type
        self.list_map_keys = tuple(list_map_keys)
        self.patch_strategy = patch_strategy
        self.patch_merge_key = patch_merge_key
        self.default = default

    # --- constructors -----------------------------------------------------------------------

    @classmethod
    def struct(
        cls, fields: Mapping[str, SchemaNode], *, map_type: str = "granular", patch_strategy: str = ""
    ) -> SchemaNode:
        """An object with declared ``fields``."""
        return cls("map", fields=dict(fields), map_type=map_type, patch_strategy=patch_strategy)

    @classmethod
    def map_of(cls, values: SchemaNode | None = None, *, map_type: str = "granular") -> SchemaNode:
        """A ``map[string]X`` (``additionalProperties``)."""
        return cls("map", values=values or SCALAR, map_type=map_type)

    @classmethod
    def list_of(
        cls,
        items: SchemaNode | None = None,
        *,
        list_type: str = "atomic",
        keys: tuple[str, ...] = (),
        patch_strategy: str = "",
        patch_merge_key: str = "",
    ) -> SchemaNode:
        """A list; ``list_type`` ``map`` needs ``keys``."""
        return cls(
            "list",
            items=items or SCALAR,
            list_type=list_type,
            list_map_keys=keys,
            patch_strategy=patch_strategy,
            patch_merge_key=patch_merge_key,
        )

    @classmethod
    def scalar(cls, default: Any = MISSING) -> SchemaNode:
        """A string/number/boolean (or int-or-string) leaf."""
        return cls("scalar", default=default)

    # --- navigation -------------------------------------------------------------------------

    @property
    def fields(self) -> Mapping[str, SchemaNode]:
        """Declared properties (empty for maps without ``properties``)."""
        if callable(self._fields):
            self._fields = self._fields()
        return self._fields or {}

    @property
    def values(self) -> SchemaNode | None:
        """Schema of undeclared members (``additionalProperties``), None when not given."""
        if callable(self._values):
            self._values = self._values()
        return self._values

    @property
    def items(self) -> SchemaNode:
        """Schema of list items (:data:`DEDUCED` when unknown)."""
        if callable(self._items):
            self._items = self._items()
        return self._items or DEDUCED

    def has_field(self, name: str) -> bool:
        """True when ``name`` is a declared property (a "named field" for SSA)."""
        return self.kind == "map" and name in self.fields

    def field(self, name: str) -> SchemaNode:
        """Schema of member ``name``: the property, else ``additionalProperties``, else deduced."""
        if self.kind != "map":
            return DEDUCED
        fields = self._fields
        if fields is None or callable(fields):
            fields = self.fields
        found = fields.get(name)
        if found is not None:
            return found
        return self.values or DEDUCED

    def child(self, element: str) -> SchemaNode:
        """Schema below a FieldsV1 path element (``f:name`` -> member, ``k:``/``v:``/``i:`` -> item)."""
        if element.startswith("f:"):
            return self.field(element[2:])
        return self.items if self.kind == "list" else DEDUCED

    @property
    def patch_strategies(self) -> frozenset[str]:
        """``x-kubernetes-patch-strategy`` split on commas (``merge``, ``retainKeys``, ``replace``)."""
        return frozenset(s.strip() for s in self.patch_strategy.split(",") if s.strip())

    def __repr__(self) -> str:
        bits = [self.kind]
        if self.kind == "map":
            bits.append(f"{self.map_type}, fields={sorted(self.fields)}")
        if self.kind == "list":
            bits.append(f"{self.list_type}{list(self.list_map_keys) if self.list_map_keys else ''}")
        if self.patch_strategy:
            bits.append(f"patch={self.patch_strategy}:{self.patch_merge_key}")
        return f"SchemaNode({', '.join(bits)})"


DEDUCED: Final = SchemaNode("any")
"""Untyped content: granular maps, atomic lists, scalar leaves."""

SCALAR: Final = SchemaNode("scalar")


def _object_meta() -> SchemaNode:
    owner_reference = SchemaNode.struct(
        {name: SCALAR for name in ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")},
        map_type="atomic",
    )
    fields: dict[str, SchemaNode] = {
        name: SCALAR
        for name in (
            "name",
            "generateName",
            "namespace",
            "selfLink",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        )
    }
    fields["labels"] = SchemaNode.map_of(SCALAR)
    fields["annotations"] = SchemaNode.map_of(SCALAR)
    fields["ownerReferences"] = SchemaNode.list_of(
        owner_reference, list_type="map", keys=("uid",), patch_strategy="merge", patch_merge_key="uid"
    )
    fields["finalizers"] = SchemaNode.list_of(SCALAR, list_type="set", patch_strategy="merge")
    fields["managedFields"] = SchemaNode.list_of(DEDUCED)
    return SchemaNode.struct(fields)


OBJECT_META: Final = _object_meta()
"""``metav1.ObjectMeta``: labels/annotations granular, finalizers a merged set, ownerReferences
keyed by ``uid`` (atomic items), managedFields atomic."""


def kind_schema(fields: Mapping[str, SchemaNode]) -> SchemaNode:
    """A top-level kind: ``apiVersion``, ``kind``, ``metadata`` (ObjectMeta) plus ``fields``."""
    return SchemaNode.struct({"apiVersion": SCALAR, "kind": SCALAR, "metadata": OBJECT_META, **fields})


# --- OpenAPI conversion -------------------------------------------------------------------------


def schema_node_from_openapi(
    schema: Mapping[str, Any], components: Mapping[str, Any] | None = None
) -> SchemaNode:
    """Convert an OpenAPI v3 (or v2) schema of a kind into a :class:`SchemaNode`.

    ``components`` maps component names to schemas; ``$ref`` values ``#/components/schemas/X``
    and ``#/definitions/X`` are resolved against it (or against ``components["schemas"]`` when
    it is a whole ``components`` section). ``allOf`` members are merged; extensions written next
    to a ``$ref``/``allOf`` win over the target's. The root (and every
    ``x-kubernetes-embedded-resource``) gets :data:`OBJECT_META` for ``metadata`` unless the
    schema declares ObjectMeta properties itself, as the real server does for CRDs.
    """
    return _Converter(components or {}).node(schema, resource=True)


class _Converter:
    """Lazy OpenAPI -> SchemaNode conversion with a cache for plain component references."""

    def __init__(self, components: Mapping[str, Any]) -> None:
        named = components.get("schemas")
        self.components: Mapping[str, Any] = named if isinstance(named, Mapping) else components
        self.cache: dict[str, SchemaNode] = {}

    def resolve(self, ref: str) -> Mapping[str, Any]:
        """The component a ``$ref`` points to."""
        name = ref.rsplit("/", 1)[-1]
        target = self.components.get(name)
        if not isinstance(target, Mapping):
            raise KeyError(f"unresolvable schema reference {ref!r}")
        return target

    def flatten(self, schema: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
        """Merge ``$ref`` targets and ``allOf`` members into one schema dict (own keys win)."""
        if depth > 32:
            raise ValueError("schema reference chain too deep")
        out: dict[str, Any] = {}
        if isinstance(schema.get("$ref"), str):
            _merge_schema(out, self.flatten(self.resolve(schema["$ref"]), depth + 1))
        for member in schema.get("allOf") or ():
            if isinstance(member, Mapping):
                _merge_schema(out, self.flatten(member, depth + 1))
        own = {k: v for k, v in schema.items() if k not in ("$ref", "allOf")}
        _merge_schema(out, own)
        return out

    def node(self, schema: Mapping[str, Any], *, resource: bool = False) -> SchemaNode:
        """The node of ``schema`` (cached when it is a bare ``$ref``)."""
        ref = schema.get("$ref") if len(schema) == 1 else None
        if isinstance(ref, str) and not resource and ref in self.cache:
            return self.cache[ref]
        flat = self.flatten(schema)
        node = self.build(flat, resource=resource or bool(flat.get(EMBEDDED_RESOURCE)))
        if isinstance(ref, str) and not resource:
            self.cache[ref] = node
        return node

    def build(self, flat: Mapping[str, Any], *, resource: bool) -> SchemaNode:
        """The node of a flattened schema."""
        kind = _node_kind(flat)
        common: dict[str, Any] = {
            "patch_strategy": str(flat.get(PATCH_STRATEGY) or ""),
            "patch_merge_key": str(flat.get(PATCH_MERGE_KEY) or ""),
            "default": flat.get("default", MISSING),
        }
        if kind == "map":
            return SchemaNode(
                "map",
                fields=lambda: self.fields(flat, resource=resource),
                values=lambda: self.values(flat),
                map_type="atomic" if flat.get(MAP_TYPE) == "atomic" else "granular",
                **common,
            )
        if kind == "list":
            list_type, keys = _list_relationship(flat)
            items = flat.get("items")
            return SchemaNode(
                "list",
                items=(lambda: self.node(items)) if isinstance(items, Mapping) else None,
                list_type=list_type,
                list_map_keys=keys,
                **common,
            )
        return SchemaNode(kind, **common)

    def fields(self, flat: Mapping[str, Any], *, resource: bool) -> dict[str, SchemaNode]:
        """Declared properties of an object schema."""
        props = flat.get("properties") or {}
        out = {name: self.node(sub) for name, sub in props.items() if isinstance(sub, Mapping)}
        if resource:
            meta = out.get("metadata")
            if meta is None or not meta.fields:
                out["metadata"] = OBJECT_META
            out.setdefault("apiVersion", SCALAR)
            out.setdefault("kind", SCALAR)
        return out

    def values(self, flat: Mapping[str, Any]) -> SchemaNode | None:
        """``additionalProperties`` of an object schema."""
        extra = flat.get("additionalProperties")
        if isinstance(extra, Mapping):
            return self.node(extra)
        if extra is True or flat.get(PRESERVE_UNKNOWN):
            return DEDUCED
        return None


def _merge_schema(out: dict[str, Any], extra: Mapping[str, Any]) -> None:
    """Overlay ``extra`` onto ``out``; ``properties`` are merged member-wise."""
    for key, value in extra.items():
        if key == "properties" and isinstance(out.get(key), Mapping) and isinstance(value, Mapping):
            out[key] = {**out[key], **value}
        else:
            out[key] = value


def _node_kind(flat: Mapping[str, Any]) -> str:
    if flat.get(INT_OR_STRING):
        return "scalar"
    kind = flat.get("type")
    if kind == "object" or (kind is None and ("properties" in flat or "additionalProperties" in flat)):
        return "map"
    if kind == "array" or (kind is None and "items" in flat):
        return "list"
    if kind in _SCALAR_TYPES:
        return "scalar"
    return "any"


def _list_relationship(flat: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """``getListElementRelationship`` of kube-openapi: list-type first, then patch strategy."""
    list_type = flat.get(LIST_TYPE)
    if list_type is not None:
        if list_type == "map":
            keys = flat.get(LIST_MAP_KEYS) or ()
            return "map", tuple(str(k) for k in keys)
        if list_type == "set":
            return "set", ()
        return "atomic", ()
    strategy = flat.get(PATCH_STRATEGY)
    if strategy in ("merge", "merge,retainKeys"):
        key = flat.get(PATCH_MERGE_KEY)
        return ("map", (str(key),)) if key else ("set", ())
    return "atomic", ()


def walk(node: SchemaNode, path: tuple[str, ...]) -> SchemaNode:
    """The node below FieldsV1 path elements ``path``."""
    for element in path:
        node = node.child(element)
    return node
