"""OpenAPI v3 schema construction and structural-schema utilities.

Schemas are plain JSON-compatible dicts. Built-in kinds are declared as named components
(``io.k8s.api.core.v1.Container``, ...) that reference each other with ``$ref`` exactly like the
``/openapi/v3`` documents of a real API server; :func:`inline` resolves the references into one
self-contained *structural* schema (what a CRD embeds, and what pruning, defaulting, validation
and the patch engine walk).

The walkers here (:func:`prune`, :func:`apply_defaults`, :func:`validate`) implement the subset
of apiextensions semantics that pykueue needs: pruning of undeclared fields, ``default``
values, and the OpenAPI value checks (type, required, enum, pattern, lengths, item counts,
bounds, ``x-kubernetes-list-type`` uniqueness) with apimachinery-style field errors.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pykueue.api.quantity import Quantity, QuantityError
from pykueue.api.validation import (
    QUANTITY_PATTERN,
    ROOT_PATH,
    FieldError,
    duplicate,
    idx,
    invalid,
    list_map_key_value,
    not_supported,
    required,
    schema_items,
    schema_key,
    schema_properties,
    schema_string,
)
from pykueue.api.validation import TYPE_INVALID as _TYPE_INVALID

Schema = dict[str, Any]
"""One OpenAPI v3 schema object."""

REF_PREFIX = "#/components/schemas/"
GVK_EXTENSION = "x-kubernetes-group-version-kind"
INT_OR_STRING = "x-kubernetes-int-or-string"
PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"
LIST_TYPE = "x-kubernetes-list-type"
LIST_MAP_KEYS = "x-kubernetes-list-map-keys"
MAP_TYPE = "x-kubernetes-map-type"
PATCH_STRATEGY = "x-kubernetes-patch-strategy"
PATCH_MERGE_KEY = "x-kubernetes-patch-merge-key"
VALIDATIONS = "x-kubernetes-validations"

COMPONENTS: dict[str, Schema] = {}
"""Every named built-in schema, by its Kubernetes OpenAPI name."""

_OPTION_KEYS: Mapping[str, str] = {
    "enum": "enum",
    "pattern": "pattern",
    "max_length": "maxLength",
    "min_length": "minLength",
    "max_items": "maxItems",
    "min_items": "minItems",
    "max_properties": "maxProperties",
    "minimum": "minimum",
    "maximum": "maximum",
    "default": "default",
    "fmt": "format",
    "list_type": LIST_TYPE,
    "map_keys": LIST_MAP_KEYS,
    "map_type": MAP_TYPE,
    "patch_strategy": PATCH_STRATEGY,
    "patch_key": PATCH_MERGE_KEY,
    "validations": VALIDATIONS,
    "preserve_unknown": PRESERVE_UNKNOWN,
}


# --- construction ---------------------------------------------------------------------------------


def _build(base: Schema, description: str, options: Mapping[str, Any]) -> Schema:
    schema = dict(base)
    if description:
        schema["description"] = description
    for name, value in options.items():
        if value is None:
            continue
        schema[_OPTION_KEYS[name]] = list(value) if isinstance(value, tuple) else copy.deepcopy(value)
    return schema


def string(description: str = "", **options: Any) -> Schema:
    """``type: string``; ``options`` use snake_case names (``max_length``, ``enum``, ...)."""
    return _build({"type": "string"}, description, options)


def integer(description: str = "", fmt: str = "int32", **options: Any) -> Schema:
    """``type: integer`` with ``format`` int32 (default) or int64."""
    return _build({"type": "integer", "format": fmt}, description, options)


def number(description: str = "", **options: Any) -> Schema:
    """``type: number`` (``format: double``)."""
    return _build({"type": "number", "format": "double"}, description, options)


def boolean(description: str = "", **options: Any) -> Schema:
    """``type: boolean``."""
    return _build({"type": "boolean"}, description, options)


def date_time(description: str = "", **options: Any) -> Schema:
    """An RFC 3339 timestamp string (``metav1.Time`` inlined)."""
    return _build({"type": "string", "format": "date-time"}, description, options)


def obj(
    properties: Mapping[str, Schema] | None = None,
    description: str = "",
    *,
    required_fields: Sequence[str] = (),
    **options: Any,
) -> Schema:
    """``type: object`` with ``properties`` (and ``required`` when given)."""
    base: Schema = {"type": "object"}
    if properties is not None:
        base["properties"] = dict(properties)
    if required_fields:
        base["required"] = list(required_fields)
    return _build(base, description, options)


def map_of(values: Schema, description: str = "", **options: Any) -> Schema:
    """``type: object`` with ``additionalProperties`` (a map)."""
    return _build({"type": "object", "additionalProperties": values}, description, options)


def str_map(description: str = "", **options: Any) -> Schema:
    """``map[string]string``."""
    return map_of({"type": "string"}, description, **options)


def arr(items: Schema, description: str = "", **options: Any) -> Schema:
    """``type: array`` of ``items``."""
    return _build({"type": "array", "items": items}, description, options)


def str_list(description: str = "", **options: Any) -> Schema:
    """``[]string`` (atomic unless ``list_type`` says otherwise)."""
    options.setdefault("list_type", "atomic")
    return arr({"type": "string"}, description, **options)


def free_object(description: str = "") -> Schema:
    """An object whose content is kept as is (``x-kubernetes-preserve-unknown-fields``)."""
    return _build({"type": "object", PRESERVE_UNKNOWN: True}, description, {})


def int_or_string(description: str = "", **options: Any) -> Schema:
    """``x-kubernetes-int-or-string`` in the structural form CRDs use."""
    base: Schema = {"anyOf": [{"type": "integer"}, {"type": "string"}], INT_OR_STRING: True}
    return _build(base, description, options)


def ref(name: str, description: str = "", *, default: Any = None) -> Schema:
    """A reference to component ``name``; wrapped in ``allOf`` when it carries siblings (v3 style)."""
    target = {"$ref": REF_PREFIX + name}
    if not description and default is None:
        return target
    schema: Schema = {"allOf": [target]}
    if default is not None:
        schema["default"] = default
    if description:
        schema["description"] = description
    return schema


def gvk_extension(group: str, version: str, kind: str) -> list[dict[str, str]]:
    """The ``x-kubernetes-group-version-kind`` value of a kind schema."""
    return [{"group": group, "kind": kind, "version": version}]


def define(name: str, schema: Schema, *, gvk: tuple[str, str, str] | None = None) -> Schema:
    """Register component ``name`` (``gvk`` = (group, version, kind) for top-level kinds)."""
    if gvk is not None:
        schema[GVK_EXTENSION] = gvk_extension(*gvk)
    COMPONENTS[name] = schema
    return schema


# --- references -----------------------------------------------------------------------------------


def ref_name(schema: Mapping[str, Any]) -> str | None:
    """The component name a ``$ref`` (or single-``allOf`` wrapper) points to."""
    if "$ref" in schema:
        return str(schema["$ref"]).removeprefix(REF_PREFIX)
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return str(all_of[0]["$ref"]).removeprefix(REF_PREFIX)
    return None


def children(schema: Mapping[str, Any]) -> Iterator[Schema]:
    """Direct sub-schemas (properties, items, additionalProperties, allOf/anyOf/oneOf members)."""
    yield from (s for s in (schema.get("properties") or {}).values() if isinstance(s, dict))
    for name in ("items", "additionalProperties"):
        sub = schema.get(name)
        if isinstance(sub, dict):
            yield sub
    for name in ("allOf", "anyOf", "oneOf"):
        yield from (s for s in schema.get(name) or [] if isinstance(s, dict))


def referenced(names: Sequence[str], components: Mapping[str, Schema] = COMPONENTS) -> list[str]:
    """Transitive closure of components referenced from ``names`` (sorted, including ``names``)."""
    seen: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        stack.extend(_refs_in(components[name]))
    return sorted(seen)


def _refs_in(schema: Mapping[str, Any]) -> Iterator[str]:
    if "$ref" in schema:
        yield str(schema["$ref"]).removeprefix(REF_PREFIX)
    for child in children(schema):
        yield from _refs_in(child)


def inline(
    schema: Mapping[str, Any],
    components: Mapping[str, Schema] = COMPONENTS,
    overrides: Mapping[str, Schema] | None = None,
) -> Schema:
    """Resolve every ``$ref`` of ``schema`` into a copy of its target (recursively).

    ``overrides`` replaces named components (e.g. ``Quantity`` by its CRD int-or-string form).
    Sibling keys of a reference (``description``, ``default``) win over the target's; the
    target's ``x-kubernetes-group-version-kind`` is dropped.
    """
    return _inline(schema, components, overrides or {}, ())


def _inline(
    schema: Mapping[str, Any],
    components: Mapping[str, Schema],
    overrides: Mapping[str, Schema],
    stack: tuple[str, ...],
) -> Schema:
    name = ref_name(schema)
    if name is not None:
        if name in stack:
            raise ValueError(f"recursive schema reference: {' -> '.join((*stack, name))}")
        target = overrides.get(name) or components[name]
        resolved = _inline(target, components, overrides, (*stack, name))
        resolved.pop(GVK_EXTENSION, None)
        for sibling, value in schema.items():
            if sibling not in ("$ref", "allOf"):
                resolved[sibling] = copy.deepcopy(value)
        return resolved
    out: Schema = {}
    for field, value in schema.items():
        out[field] = _inline_field(field, value, components, overrides, stack)
    return out


def _inline_field(
    field: str,
    value: Any,
    components: Mapping[str, Schema],
    overrides: Mapping[str, Schema],
    stack: tuple[str, ...],
) -> Any:
    if field == "properties" and isinstance(value, dict):
        return {name: _inline(sub, components, overrides, stack) for name, sub in value.items()}
    if field in ("items", "additionalProperties") and isinstance(value, dict):
        return _inline(value, components, overrides, stack)
    if field in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
        return [_inline(sub, components, overrides, stack) for sub in value]
    return copy.deepcopy(value)


def strip_keys(schema: Schema, keys: frozenset[str]) -> Schema:
    """A copy of ``schema`` without ``keys`` at any depth (e.g. patch metadata inside a CRD)."""
    out: Schema = {}
    for field, value in schema.items():
        if field in keys:
            continue
        if field == "properties" and isinstance(value, dict):
            out[field] = {name: strip_keys(sub, keys) for name, sub in value.items()}
        elif field in ("items", "additionalProperties") and isinstance(value, dict):
            out[field] = strip_keys(value, keys)
        elif field in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            out[field] = [strip_keys(sub, keys) for sub in value]
        else:
            out[field] = copy.deepcopy(value)
    return out


# --- walking values against a structural schema ---------------------------------------------------


def _is_open(schema: Mapping[str, Any]) -> bool:
    return bool(schema.get(PRESERVE_UNKNOWN)) and "properties" not in schema


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def prune(value: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Remove fields ``schema`` does not declare from ``value`` in place; return their paths."""
    removed: list[str] = []
    if isinstance(value, dict) and schema.get("type", "object") == "object":
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for name in list(value):
            sub_path = _join(path, name)
            if props is not None and name in props:
                removed += prune(value[name], props[name], sub_path)
            elif isinstance(extra, dict):
                removed += prune(value[name], extra, sub_path)
            elif props is not None and not schema.get(PRESERVE_UNKNOWN) and extra is not True:
                del value[name]
                removed.append(sub_path)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            removed += prune(item, schema["items"], f"{path}[{i}]")
    return removed


def unknown_fields(value: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Paths of fields :func:`prune` would remove, without modifying ``value``."""
    return prune(copy.deepcopy(value), schema, path)


def apply_defaults(value: Any, schema: Mapping[str, Any]) -> None:
    """Fill absent properties that have a ``default`` (recursively, like structural defaulting)."""
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for name, sub in props.items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                apply_defaults(value[name], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name in set(value) - set(props):
                apply_defaults(value[name], extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_defaults(item, schema["items"])


def canonicalize_quantities(value: Any, schema: Mapping[str, Any]) -> Any:
    """Rewrite quantity fields (int-or-string with the quantity pattern) in canonical form.

    This is what a round trip through Go's ``resource.Quantity`` does (``12`` → ``"12"``,
    ``"1.5"`` → ``"1500m"``, ``"1024Mi"`` → ``"1Gi"``): Kueue's conversion and mutating
    webhooks decode objects into the Go types. Dicts and lists are updated in place; the
    (possibly new) value is returned. Invalid quantities are left as they are. Only the parts of
    the schema that can hold a quantity are walked (see :func:`_quantity_plan`).
    """
    plan = _quantity_plan(schema)
    return value if plan is None else _canonicalize(value, plan)


class _QuantityPlan:
    """Where quantities can be below a schema node: the node itself, or some of its children."""

    __slots__ = ("extra", "items", "props", "quantity")

    def __init__(self) -> None:
        self.quantity = False
        self.props: dict[str, _QuantityPlan | None] = {}
        """Every declared property; None for those that hold no quantity."""
        self.extra: _QuantityPlan | None = None
        self.items: _QuantityPlan | None = None


_PLANS: dict[int, tuple[Mapping[str, Any], _QuantityPlan | None]] = {}


def _quantity_plan(schema: Mapping[str, Any]) -> _QuantityPlan | None:
    """The plan of ``schema`` (None: nothing below it is a quantity). Memoised per schema object.

    Plans are built privately and published only when complete: handlers run on several threads,
    and a half-built plan would skip quantities.
    """
    hit = _PLANS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    building: dict[int, tuple[Mapping[str, Any], _QuantityPlan | None]] = {}
    plan = _build_plan(schema, building)
    if len(_PLANS) + len(building) > 65536:
        _PLANS.clear()
    _PLANS.update(building)
    return plan


def _build_plan(
    schema: Mapping[str, Any], building: dict[int, tuple[Mapping[str, Any], _QuantityPlan | None]]
) -> _QuantityPlan | None:
    for memo in (_PLANS, building):
        hit = memo.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
    plan = _QuantityPlan()
    building[id(schema)] = (schema, plan)  # provisional: a schema that contains itself ends here
    if schema.get(INT_OR_STRING) and schema.get("pattern") == QUANTITY_PATTERN:
        plan.quantity = True
    else:
        props = schema.get("properties") or {}
        plan.props = {name: _build_plan(sub, building) for name, sub in props.items()}
        extra = schema.get("additionalProperties")
        plan.extra = _build_plan(extra, building) if isinstance(extra, dict) else None
        items = schema.get("items")
        plan.items = _build_plan(items, building) if isinstance(items, dict) else None
    bearing = plan.quantity or plan.extra is not None or plan.items is not None or any(plan.props.values())
    result = plan if bearing else None
    building[id(schema)] = (schema, result)
    return result


def _canonicalize(value: Any, plan: _QuantityPlan) -> Any:
    if plan.quantity:
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            return _canonical_quantity(value)
        try:
            return str(Quantity.parse(value))
        except (QuantityError, TypeError, ValueError):
            return value
    if isinstance(value, dict):
        props, extra = plan.props, plan.extra
        for name in list(value):
            sub = props.get(name, extra)  # a declared property never falls back to extra
            if sub is not None:
                value[name] = _canonicalize(value[name], sub)
    elif isinstance(value, list) and plan.items is not None:
        items = plan.items
        for i, item in enumerate(value):
            value[i] = _canonicalize(item, items)
    return value


# --- required fields ------------------------------------------------------------------------------


class _RequiredPlan:
    """Where ``required`` properties (without a ``default``) are below a schema node."""

    __slots__ = ("extra", "items", "map_keys", "props", "required")

    def __init__(self) -> None:
        self.required: tuple[str, ...] = ()
        self.props: dict[str, _RequiredPlan] = {}
        """Only the properties with required fields below them."""
        self.extra: _RequiredPlan | None = None
        self.items: _RequiredPlan | None = None
        self.map_keys: tuple[str, ...] | None = None
        """``x-kubernetes-list-map-keys`` of a map list (how ratcheting pairs old and new items)."""


_REQUIRED_PLANS: dict[int, tuple[Mapping[str, Any], _RequiredPlan | None]] = {}


def missing_required(
    value: Any, schema: Mapping[str, Any], old: Any = None, path: str = ""
) -> list[FieldError]:
    """``Required value`` errors of the ``required`` properties absent from ``value``.

    What kube-apiserver reports for a custom resource: its OpenAPI ``default`` values are applied
    before validation, so a required property with a default is never missing; with ``old`` (an
    update), errors inside a value equal to the old one at the same place are dropped, as CRD
    validation ratcheting does (list items are paired by their map keys, other lists not at all).
    Only the parts of the schema with required properties are walked (memoised per schema object).
    """
    plan = _required_plan(schema)
    out: list[FieldError] = []
    if plan is not None:
        _collect_missing(value, old, plan, path, out)
    return out


def _required_plan(schema: Mapping[str, Any]) -> _RequiredPlan | None:
    hit = _REQUIRED_PLANS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    plan = _build_required_plan(schema)  # structural schemas are trees: no cycle to guard against
    if len(_REQUIRED_PLANS) > 4096:
        _REQUIRED_PLANS.clear()
    _REQUIRED_PLANS[id(schema)] = (schema, plan)
    return plan


def _build_required_plan(schema: Mapping[str, Any]) -> _RequiredPlan | None:
    plan = _RequiredPlan()
    props = schema.get("properties") or {}
    plan.required = tuple(
        name for name in schema.get("required") or [] if "default" not in (props.get(name) or {})
    )
    for name, sub in props.items():
        child = _build_required_plan(sub)
        if child is not None:
            plan.props[name] = child
    extra = schema.get("additionalProperties")
    plan.extra = _build_required_plan(extra) if isinstance(extra, dict) else None
    items = schema.get("items")
    plan.items = _build_required_plan(items) if isinstance(items, dict) else None
    if schema.get(LIST_TYPE) == "map":
        plan.map_keys = tuple(schema.get(LIST_MAP_KEYS) or ())
    if plan.required or plan.props or plan.extra is not None or plan.items is not None:
        return plan
    return None


def _collect_missing(value: Any, old: Any, plan: _RequiredPlan, path: str, out: list[FieldError]) -> None:
    if old is not None and old == value:  # ratcheting: an unchanged value keeps its errors
        return
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        for name in plan.required:
            if name not in value:
                out.append(required(_join(path, name)))
        for name, sub in plan.props.items():
            if name in value:
                _collect_missing(value[name], old_map.get(name), sub, _join(path, name), out)
        extra = plan.extra
        if extra is not None:
            for name, item in value.items():
                if name not in plan.props:
                    _collect_missing(item, old_map.get(name), extra, schema_key(path, name), out)
    elif isinstance(value, list) and plan.items is not None:
        olds = _paired_items(value, old, plan.map_keys)
        for i, item in enumerate(value):
            _collect_missing(item, olds[i], plan.items, idx(path, i), out)


def _paired_items(value: list[Any], old: Any, keys: tuple[str, ...] | None) -> list[Any]:
    """The old item each new item is compared with (None: none), by list-map keys."""
    if not keys or not isinstance(old, list):
        return [None] * len(value)
    try:  # map keys are scalars (strings, integers)
        by_key = {tuple(map(item.get, keys)): item for item in old if isinstance(item, dict)}
        return [by_key.get(tuple(map(item.get, keys))) if isinstance(item, dict) else None for item in value]
    except TypeError:  # an unhashable key value: such an item pairs with nothing
        return [None] * len(value)


# --- validation -----------------------------------------------------------------------------------

_JSON_TYPE_NAMES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array"}


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value (``null`` for None)."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "object"
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


@functools.lru_cache(maxsize=4096, typed=True)
def _canonical_quantity(value: str | int | float) -> str | int | float:
    """``str(Quantity.parse(value))`` or ``value`` itself when invalid (memoised: quantities repeat)."""
    try:
        return str(Quantity.parse(value))
    except (QuantityError, TypeError, ValueError):
        return value


def _type_matches(expected: str, value: Any) -> bool:
    actual = json_type(value)
    if expected == "number":
        return actual in ("number", "integer")
    if expected == "integer" and isinstance(value, float):
        return value.is_integer()
    return actual == expected


def _type_error(path: str, value: Any, expected: str) -> FieldError:
    got = json_type(value)
    return FieldError(path, _TYPE_INVALID, got, f'{path} in body must be of type {expected}: "{got}"')


def validate(value: Any, schema: Mapping[str, Any], path: str = "") -> list[FieldError]:
    """OpenAPI value checks of ``value`` against a structural ``schema`` (apiextensions style)."""
    if value is None:
        return [] if schema.get("nullable") else _null_error(path, schema)
    if schema.get(INT_OR_STRING):
        return _validate_int_or_string(value, schema, path)
    expected = schema.get("type")
    if expected and not _type_matches(expected, value):
        # kube-openapi runs every validator that applies to the value's kind: the enum's for any
        # kind, those of the schema's type (lengths, bounds, properties) for none of the others
        enum = schema.get("enum")
        wrong = [not_supported(path, value, [str(v) for v in enum])] if enum is not None and value not in enum else []
        return [_type_error(path, value, expected), *wrong]
    if isinstance(value, dict):
        return _validate_object(value, schema, path)
    if isinstance(value, list):
        return _validate_array(value, schema, path)
    return _validate_scalar(value, schema, path)


def type_errors(value: Any, schema: Mapping[str, Any], path: str = "") -> list[FieldError]:
    """The ``TypeInvalid`` errors of :func:`validate`, in the same order, without the other checks."""
    if _types_ok(value, schema):  # the usual case, checked without building any field path
        return []
    out: list[FieldError] = []
    _collect_type_errors(value, schema, path, out)
    return out


def _types_ok(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether :func:`type_errors` finds nothing."""
    if value is None:
        return bool(schema.get("nullable")) or not (schema.get(INT_OR_STRING) or schema.get("type"))
    if schema.get(INT_OR_STRING):
        return _int_or_string(value)
    expected = schema.get("type")
    if expected and not _type_matches(expected, value):
        return False
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        extra = extra if isinstance(extra, dict) else None
        for name, sub in value.items():
            sub_schema = props.get(name, extra)
            if sub_schema is not None and not _types_ok(sub, sub_schema):
                return False
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            return all(_types_ok(item, items) for item in value)
    return True


def _collect_type_errors(value: Any, schema: Mapping[str, Any], path: str, out: list[FieldError]) -> None:
    if value is None:
        if not schema.get("nullable"):
            out += [e for e in _null_error(path, schema) if e.type == _TYPE_INVALID]
        return
    if schema.get(INT_OR_STRING):
        if not _int_or_string(value):  # with the ``anyOf`` member's (``integer``)
            out += [e for e in _validate_int_or_string(value, schema, path) if e.type == _TYPE_INVALID]
        return
    expected = schema.get("type")
    if expected and not _type_matches(expected, value):
        out.append(_type_error(path, value, expected))
        return
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for name, sub in value.items():
            if name in props:
                _collect_type_errors(sub, props[name], _join(path, name), out)
            elif isinstance(extra, dict):
                _collect_type_errors(sub, extra, schema_key(path, name), out)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _collect_type_errors(item, items, idx(path, i), out)


def _null_error(path: str, schema: Mapping[str, Any]) -> list[FieldError]:
    expected = schema.get("type")
    if schema.get(INT_OR_STRING):
        expected = "integer,string"
    return [_type_error(path, None, expected)] if expected else []


def _int_or_string(value: Any) -> bool:
    """An integer (a float with an integral value decodes as one) or a string."""
    if isinstance(value, float):
        return value.is_integer()
    return not isinstance(value, bool) and isinstance(value, int | str)


def _validate_int_or_string(value: Any, schema: Mapping[str, Any], path: str) -> list[FieldError]:
    if not _int_or_string(value):
        return [_type_error(path, value, "integer,string"), *_any_of_errors(value, schema, path)]
    pattern = schema.get("pattern")
    if isinstance(value, str) and pattern:
        return schema_string(path, value, pattern=pattern)
    return []


def _any_of_errors(value: Any, schema: Mapping[str, Any], path: str) -> list[FieldError]:
    """kube-openapi's ``anyOf`` (``schemaPropsValidator``) when no member accepts ``value``:
    ``must validate at least one schema (anyOf)``, reported without a field path (``<nil>``, the
    value ``""``), then the errors of the member that failed best (most checks passed; the first
    on a tie). An int-or-string quantity's members, ``{type: integer}`` and ``{type: string}``,
    tie, so a wrong type reads three times: ``integer,string``, ``anyOf``, ``integer``."""
    members = schema.get("anyOf")
    if not isinstance(members, list) or not members or any(not validate(value, m, path) for m in members):
        return []
    return [invalid(ROOT_PATH, "", f'"{path}" must validate at least one schema (anyOf)'), *validate(value, members[0], path)]


def _validate_scalar(value: Any, schema: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        errs.append(not_supported(path, value, [str(v) for v in enum]))
    if isinstance(value, str):
        errs += schema_string(
            path,
            value,
            max_len=schema.get("maxLength"),
            min_len=schema.get("minLength"),
            pattern=schema.get("pattern"),
        )
    elif isinstance(value, int | float) and not isinstance(value, bool):
        errs += _bounds(value, schema, path)
    return errs


def _bounds(value: float, schema: Mapping[str, Any], path: str) -> list[FieldError]:
    minimum, maximum = schema.get("minimum"), schema.get("maximum")
    shown = int(value) if float(value).is_integer() else value
    if minimum is not None and value < minimum:
        return [invalid(path, shown, f"{path} in body should be greater than or equal to {minimum}")]
    if maximum is not None and value > maximum:
        return [invalid(path, shown, f"{path} in body should be less than or equal to {maximum}")]
    return []


def _validate_object(value: Mapping[str, Any], schema: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    props = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in value:
            errs.append(required(_join(path, name)))
    if "maxProperties" in schema:
        errs += schema_properties(path, value, schema["maxProperties"])
    extra = schema.get("additionalProperties")
    for name, sub in value.items():
        if name in props:
            errs += validate(sub, props[name], _join(path, name))
        elif isinstance(extra, dict):
            errs += validate(sub, extra, schema_key(path, name))
    return errs


def _validate_array(value: Sequence[Any], schema: Mapping[str, Any], path: str) -> list[FieldError]:
    errs = schema_items(path, value, min_items=schema.get("minItems"), max_items=schema.get("maxItems"))
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            errs += validate(item, items, idx(path, i))
    list_type = schema.get(LIST_TYPE)
    if list_type == "map":
        errs += list_map_duplicates(path, value, schema.get(LIST_MAP_KEYS) or [])
    elif list_type == "set":
        errs += _set_duplicates(path, value)
    return errs


def list_map_duplicates(path: str, items: Sequence[Any], keys: Sequence[str]) -> list[FieldError]:
    """``x-kubernetes-list-type: map`` uniqueness; duplicates are reported on the later item."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        values = {name: item.get(name) for name in keys if name in item}
        marker = json.dumps(values, sort_keys=True)
        if marker in seen:
            errs.append(duplicate(idx(path, i), list_map_key_value(values)))
        seen.add(marker)
    return errs


def _set_duplicates(path: str, items: Sequence[Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        marker = json.dumps(item, sort_keys=True)
        if marker in seen:
            errs.append(duplicate(idx(path, i), item))
        seen.add(marker)
    return errs


# --- structural checks ------------------------------------------------------------------------------

_FORBIDDEN_IN_STRUCTURAL = frozenset({"$ref", "definitions", "dependencies", "patternProperties"})


def structural_problems(schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Violations of the Kubernetes structural-schema rules (empty when structural).

    Checked: no ``$ref`` and other forbidden keywords; every non-root node has a ``type`` unless
    it is int-or-string or preserves unknown fields; ``anyOf``/``allOf``/``oneOf`` members carry
    no ``type`` (except the int-or-string pattern); list-map keys exist and are required or
    defaulted scalars; ``properties`` and ``additionalProperties`` are not both set.
    """
    problems = [
        f"{path or '<root>'}: forbidden keyword {kw}" for kw in _FORBIDDEN_IN_STRUCTURAL if kw in schema
    ]
    if path and "type" not in schema and not schema.get(INT_OR_STRING) and not schema.get(PRESERVE_UNKNOWN):
        problems.append(f"{path}: type is required")
    if "properties" in schema and isinstance(schema.get("additionalProperties"), dict):
        problems.append(f"{path}: properties and additionalProperties are mutually exclusive")
    problems += _junctor_problems(schema, path)
    problems += _list_map_problems(schema, path)
    for name, sub in (schema.get("properties") or {}).items():
        problems += structural_problems(sub, f"{path}.properties[{name}]")
    for name in ("items", "additionalProperties"):
        sub = schema.get(name)
        if isinstance(sub, dict):
            problems += structural_problems(sub, f"{path}.{name}")
    return problems


def _junctor_problems(schema: Mapping[str, Any], path: str) -> list[str]:
    problems = []
    for junctor in ("allOf", "anyOf", "oneOf"):
        for i, member in enumerate(schema.get(junctor) or []):
            if "type" in member and not (junctor == "anyOf" and schema.get(INT_OR_STRING)):
                problems.append(f"{path}.{junctor}[{i}]: must not specify type")
            if "$ref" in member:
                problems.append(f"{path}.{junctor}[{i}]: forbidden keyword $ref")
    return problems


def _list_map_problems(schema: Mapping[str, Any], path: str) -> list[str]:
    if schema.get(LIST_TYPE) != "map":
        return []
    items = schema.get("items") or {}
    props = items.get("properties") or {}
    problems = []
    for name in schema.get(LIST_MAP_KEYS) or []:
        prop = props.get(name)
        if prop is None:
            problems.append(f"{path}: list-map key {name} is not a property of the items")
        elif name not in (items.get("required") or []) and "default" not in prop:
            problems.append(f"{path}: list-map key {name} must be required or have a default")
    if not schema.get(LIST_MAP_KEYS):
        problems.append(f"{path}: x-kubernetes-list-map-keys is required for list-type map")
    return problems


# --- JSON-path helpers for selectable fields --------------------------------------------------------


def field_value(obj: Mapping[str, Any], dotted: str) -> Any:
    """The value at a dotted path (``status.admission.clusterQueue``) or None."""
    cur: Any = obj
    for part in dotted.split("."):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


def schema_at(schema: Mapping[str, Any], dotted: str) -> Mapping[str, Any] | None:
    """The sub-schema of an inlined schema at a dotted field path (list items are stepped into)."""
    cur: Mapping[str, Any] | None = schema
    for part in dotted.split("."):
        while cur is not None and cur.get("type") == "array":
            cur = cur.get("items")
        if cur is None:
            return None
        cur = (cur.get("properties") or {}).get(part)
    return cur
