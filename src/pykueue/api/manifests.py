"""Reading and writing Kubernetes manifests (multi-document YAML / JSON).

YAML is parsed with libyaml (``CSafeLoader``, falling back to the pure-Python ``SafeLoader``),
like ``sigs.k8s.io/yaml``: timestamps stay strings (JSON has no date type), an explicit
``!!timestamp`` becomes its RFC 3339 string. ``kind: List`` (and
``<Kind>List``) documents are flattened into their ``items``. :func:`parse_object` turns one
manifest into a validated, defaulted typed object the way ``kubectl apply`` + the API server would.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from typing import Any

import msgspec
import yaml

from pykueue.api import kueue as k
from pykueue.api.conversion import (
    CORE_KIND_VERSIONS,
    ConversionError,
    DecodeError,
    convert,
    identify,
    internal_version,
    object_ref,
    to_external,
    to_internal,
)
from pykueue.api.defaults import apply_defaults
from pykueue.api.feature_gates import DEFAULT_GATES, FeatureGates
from pykueue.api.validation import FieldError, ValidationFailed, validate_or_raise

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class KubeLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    """Safe loader that keeps YAML timestamps as strings."""


KubeLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}


def _timestamp_as_json(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    """An explicit ``!!timestamp`` becomes the string ``sigs.k8s.io/yaml`` gives it: the Go
    ``time.Time`` it decodes to (no zone is UTC), marshalled as JSON (RFC 3339, nanoseconds
    without trailing zeros, ``Z`` for UTC). A manifest is a JSON tree, as kubectl sends it."""
    value = loader.construct_yaml_timestamp(node)
    if not isinstance(value, datetime.datetime):  # a date alone: midnight UTC
        value = datetime.datetime(value.year, value.month, value.day)
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    offset = value.utcoffset() or datetime.timedelta(0)
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


KubeLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_json)


class KubeDumper(_BaseDumper):  # type: ignore[valid-type,misc]
    """Safe dumper writing multi-line strings as literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


KubeDumper.add_representer(str, _represent_str)


class ManifestError(ValueError):
    """A manifest that cannot be read: bad YAML, bad structure, unknown kind or field."""

    def __init__(
        self,
        detail: str,
        *,
        source: str = "",
        index: int | None = None,
        obj_ref: str = "",
        field: str = "",
    ) -> None:
        self.detail = detail
        self.source = source
        self.index = index
        self.obj_ref = obj_ref
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [self.source] if self.source else []
        if self.index is not None:
            parts.append(f"document {self.index}")
        if self.obj_ref:
            parts.append(self.obj_ref)
        if self.field:
            parts.append(self.field)
        parts.append(self.detail)
        return ": ".join(parts)

    def located(self, source: str, index: int | None) -> ManifestError:
        """A copy of this error that also names the source and document index."""
        return ManifestError(self.detail, source=source, index=index, obj_ref=self.obj_ref, field=self.field)


# --- reading --------------------------------------------------------------------------------------------


def load_yaml_documents(text: str, source: str = "<stdin>") -> list[tuple[int, Any]]:
    """Parse every YAML document; return ``(1-based index, data)`` pairs, empty documents skipped."""
    try:
        documents = list(yaml.load_all(text, Loader=KubeLoader))
    except yaml.YAMLError as err:
        raise ManifestError(f"error parsing YAML: {_yaml_problem(err)}", source=source) from None
    return [(i, doc) for i, doc in enumerate(documents, start=1) if doc is not None]


def _yaml_problem(err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    if mark is None:
        return str(problem)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})"


def load_manifests(text: str, source: str = "<stdin>") -> list[dict[str, Any]]:
    """Parse multi-document YAML (or JSON) into object dicts, flattening ``List`` documents."""
    return [obj for _, obj in _load_indexed(text, source)]


def _load_indexed(text: str, source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for index, doc in load_yaml_documents(text, source):
        for obj in flatten(doc, source, index):
            yield index, obj


def flatten(doc: Any, source: str, index: int) -> Iterator[dict[str, Any]]:
    """The objects of one document: itself, or the items of a ``List`` (recursively)."""
    if not isinstance(doc, dict):
        raise ManifestError(f"expected an object, got {_json_type(doc)}", source=source, index=index)
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise ManifestError(
                f"'items' must be a list, got {_json_type(items)}", source=source, index=index
            )
        for item in items:
            yield from flatten(item, source, index)
        return
    yield doc


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else type(value).__name__


def load_manifest_file(path: str) -> list[dict[str, Any]]:
    """Read and parse a manifest file (``-`` is not special here)."""
    with open(path, encoding="utf-8") as handle:
        return load_manifests(handle.read(), source=path)


# --- writing --------------------------------------------------------------------------------------------


def dump_yaml(objs: Sequence[Mapping[str, Any]]) -> str:
    """Multi-document block-style YAML, key order preserved, documents separated by ``---``."""
    return str(
        yaml.dump_all(
            [dict(obj) for obj in objs],
            Dumper=KubeDumper,
            default_flow_style=False,
            sort_keys=False,
            allow_unicode=True,
        )
    )


def dump_json(objs: Sequence[Mapping[str, Any]]) -> str:
    """JSON like ``kubectl -o json``: one object as is, several wrapped in a ``v1`` ``List``."""
    if len(objs) == 1:
        payload: Any = objs[0]
    else:
        payload = {
            "apiVersion": "v1",
            "items": list(objs),
            "kind": "List",
            "metadata": {"resourceVersion": ""},
        }
    return json.dumps(payload, indent=4, ensure_ascii=False) + "\n"


def dump_objects(objs: Sequence[k.KueueObject], api_version: str | None = None, output: str = "yaml") -> str:
    """Encode typed objects (optionally in ``api_version``) as YAML or JSON."""
    dicts = [
        to_external(obj, api_version if obj.kind not in CORE_KIND_VERSIONS else None)
        for obj in objs
    ]
    return dump_json(dicts) if output == "json" else dump_yaml(dicts)


# --- parsing into typed objects ----------------------------------------------------------------------------


def parse_object(
    data: Mapping[str, Any],
    *,
    old: k.KueueObject | None = None,
    strict: bool = False,
    gates: FeatureGates = DEFAULT_GATES,
) -> tuple[k.KueueObject, str]:
    """Convert, default and validate one manifest; return the typed object and its apiVersion.

    Raises :class:`ManifestError` for bad structure (naming the object and the field) and
    :class:`~pykueue.api.validation.ValidationFailed` when the API server would refuse it.
    With ``strict``, fields unknown to the schema are errors (``kubectl --validate=strict``).
    """
    ref = object_ref(data)
    try:
        kind, version = identify(data)
        if strict:
            _reject_unknown_fields(convert(data, internal_version(kind)), kind, ref)
        typed, version = to_internal(data)
    except DecodeError as err:
        raise ManifestError(err.detail, obj_ref=err.obj_ref, field=err.field) from None
    except ConversionError as err:
        raise ManifestError(str(err)) from None
    apply_defaults(typed)
    try:
        validate_or_raise(typed, old, gates=gates)
    except ValidationFailed as err:
        if version == k.V1BETA1:
            err = _v1beta1_paths(err)
        raise err from None
    return typed, version


def parse_manifests(
    text: str, source: str = "<stdin>", *, strict: bool = False, gates: FeatureGates = DEFAULT_GATES
) -> list[tuple[k.KueueObject, str]]:
    """Load every object of ``text`` and :func:`parse_object` it; errors name the document."""
    parsed = []
    for index, data in _load_indexed(text, source):
        try:
            parsed.append(parse_object(data, strict=strict, gates=gates))
        except ManifestError as err:
            raise err.located(source, index) from None
    return parsed


_V1BETA1_FIELDS = {("ClusterQueue", "spec.cohortName"): "spec.cohort"}


def _v1beta1_paths(err: ValidationFailed) -> ValidationFailed:
    """Schema-stage errors name the fields of the request's version (webhooks see v1beta2)."""
    if err.webhook:
        return err
    errors = [
        FieldError(_V1BETA1_FIELDS.get((err.kind, e.field), e.field), e.type, e.value, e.detail)
        for e in err.errors
    ]
    return ValidationFailed(err.kind, err.name, errors, webhook=err.webhook)


# --- strict field checking --------------------------------------------------------------------------------


@cache
def _type_info(kind: str) -> msgspec.inspect.Type:
    return msgspec.inspect.type_info(k.KIND_TYPES[kind])


def _reject_unknown_fields(data: Mapping[str, Any], kind: str, ref: str) -> None:
    if kind not in k.KIND_TYPES:
        return
    unknown = [path for path in unknown_fields(data, _type_info(kind)) if not path.startswith("metadata.")]
    if unknown:
        fields = ", ".join(f'unknown field "{path}"' for path in unknown)
        raise ManifestError(f"strict decoding error: {fields}", obj_ref=ref)


def unknown_fields(data: Any, info: msgspec.inspect.Type, path: str = "") -> Iterator[str]:
    """Paths of keys in ``data`` that the msgspec type ``info`` does not declare."""
    info = _pick_union_member(data, info)
    if isinstance(info, msgspec.inspect.StructType) and isinstance(data, Mapping):
        fields = {f.encode_name: f for f in info.fields}
        for name, value in data.items():
            child = f"{path}.{name}" if path else str(name)
            field = fields.get(name)
            if field is None:
                yield child
            else:
                yield from unknown_fields(value, field.type, child)
    elif isinstance(info, msgspec.inspect.ListType) and isinstance(data, list):
        for i, item in enumerate(data):
            yield from unknown_fields(item, info.item_type, f"{path}[{i}]")
    elif isinstance(info, msgspec.inspect.DictType) and isinstance(data, Mapping):
        for name, value in data.items():
            yield from unknown_fields(value, info.value_type, f"{path}[{name}]")


def _pick_union_member(data: Any, info: msgspec.inspect.Type) -> msgspec.inspect.Type:
    if not isinstance(info, msgspec.inspect.UnionType):
        return info
    for member in info.types:
        if isinstance(member, msgspec.inspect.StructType | msgspec.inspect.DictType) and isinstance(
            data, Mapping
        ):
            return member
        if isinstance(member, msgspec.inspect.ListType) and isinstance(data, list):
            return member
    return info
