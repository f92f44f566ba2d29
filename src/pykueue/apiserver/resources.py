"""The resource registry: every kind the embedded API server serves (docs/design/control-plane.md §2).

A :class:`ResourceInfo` describes one resource (group, kind, names, scope, served and storage
versions, short names, categories, status subresource, printer columns) and carries its
behaviour: conversion between served versions, defaulting, create-time preparation, validation,
its structural OpenAPI schema and its selectable fields.

* Kueue kinds (``kueue.x-k8s.io`` v1beta2 storage + v1beta1) are wired to :mod:`pykueue.api`:
  :func:`~pykueue.api.conversion.convert`, :func:`~pykueue.api.defaults.apply_defaults` and
  :func:`~pykueue.api.validation.validate` (through the typed model); Kueue's mutating webhooks
  are their :class:`~pykueue.apiserver.admission.Admission` (:func:`kueue_mutating_webhook`). The kinds the model does
  not cover (MultiKueueConfig, MultiKueueCluster, Topology) use their structural schema for
  defaulting and value checks plus their CEL rules written in Python.
* Built-in kinds (Namespace, Event, Pod, Node, PodTemplate, LimitRange, Job, PriorityClass,
  RuntimeClass, Lease, events.k8s.io Event) use :mod:`pykueue.apiserver.builtin`.
* ProvisioningRequest (``autoscaling.x-k8s.io`` v1 storage + v1beta1) is served as a CRD.

``events.k8s.io/v1`` Events are stored with the ``core/v1`` Events (shared store key, core form),
as in Kubernetes; :meth:`ResourceInfo.to_storage` / :meth:`ResourceInfo.from_storage` do the
conversion for every kind and must be used for it (the plain version comparison is not enough
for this one resource).
"""

from __future__ import annotations

import copy
import functools
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pykueue.api import celrules
from pykueue.api import conversion as _conversion
from pykueue.api import kueue as k
from pykueue.api.conversion import (
    ConversionError,
    DecodeError,
    convert,
    describe_validation_error,
    identify,
    internal_version,
    object_ref,
    order_object_keys,
    to_internal,
)
from pykueue.api.conversion import encode as encode_typed
from pykueue.api.defaults import apply_defaults
from pykueue.api.feature_gates import DEFAULT_GATES, FeatureGates
from pykueue.api.validation import (
    OMIT,
    REQUIRED,
    CelEvalError,
    CelResult,
    FieldError,
    ValidationFailed,
    aggregate,
    cel,
    cel_and,
    cel_rule,
    cel_skipped,
    has_blocking_error,
    ratchet_openapi,
    ratchet_rules,
    required,
    validate_schema,
    validate_webhook,
    validate_written_schema,
    webhook_runs,
)
from pykueue.api.validation import TYPE_INVALID as _TYPE_INVALID
from pykueue.api.validation import WEBHOOK_NAMES as _KUEUE_WEBHOOKS
from pykueue.apiserver import crdgen
from pykueue.apiserver.admission import MAIN_WRITE, Admission, Lister, Lookup, Mutator, Write
from pykueue.apiserver.builtin import (
    autoscaling,
    batch,
    coordination,
    core,
    events,
    job_webhook,
    limitrange,
    limitranger,
    namespaces,
    node,
    podnode,
    scheduling,
)
from pykueue.apiserver.builtin import schema as sch
from pykueue.apiserver.builtin.pods import validate_object_meta
from pykueue.store import ResourceKey

Obj = dict[str, Any]
Defaulter = Callable[[Obj], None]
Validator = Callable[[Obj, "Obj | None"], list[FieldError]]
FieldGetter = Callable[[Mapping[str, Any]], str]

KUEUE_GROUP = k.GROUP
KUEUE_DEPRECATION = "This version is deprecated. Use v1beta2 instead."
VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class PrinterColumn:
    """One ``additionalPrinterColumns`` entry (or a built-in table column)."""

    name: str
    type: str
    json_path: str
    priority: int = 0
    format: str = ""
    description: str = ""


@dataclass(frozen=True)
class Behaviour:
    """The pluggable behaviour of a resource (conversion, defaults, validation, schema, fields)."""

    schema: Callable[[str], sch.Schema]
    """Structural (inlined) schema of a served version."""
    convert: Callable[[Mapping[str, Any], str], Obj]
    """Convert an object to a full apiVersion (``group/version`` or ``v1``)."""
    default: Callable[[Obj], Obj]
    prepare_for_create: Callable[[Obj], Obj]
    validate: Callable[[Obj, Obj | None, FeatureGates], list[FieldError]]
    failure: Callable[[Obj, Obj | None, FeatureGates, Write], ValidationFailed | None]
    selectable: Mapping[str, FieldGetter] = field(default_factory=dict)
    component: str = ""
    """OpenAPI component name of a built-in kind (empty for CRDs)."""
    default_for_create: Callable[[Obj], Obj] | None = None
    """``prepare_for_create(default(obj))`` done faster (None: the two steps)."""
    default_status: Callable[[Obj], Obj] | None = None
    """:attr:`default` of a status update, where only the defaulted ``status`` is kept (None: the
    kind has no such shortcut)."""
    failure_after_type_check: Callable[[Obj, Obj | None, FeatureGates, Write], ValidationFailed | None] | None = (
        None
    )
    """:attr:`failure` of an object whose JSON types were already checked (None: the same)."""
    failure_with_missing: (
        Callable[[Obj, Obj | None, FeatureGates, Sequence[FieldError]], ValidationFailed] | None
    ) = None
    """:attr:`failure` given the ``required`` properties the written object lacked (None: the kind's
    validation finds them itself, in the storage version)."""


@dataclass
class ResourceInfo:
    """One served resource (docs/design/control-plane.md §2)."""

    group: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    versions: tuple[str, ...]
    storage_version: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_subresource: bool = False
    printer_columns: tuple[PrinterColumn, ...] = ()
    builtin: bool = False
    deprecated_versions: dict[str, str] = field(default_factory=dict)
    version_columns: dict[str, tuple[PrinterColumn, ...]] = field(default_factory=dict)
    """Printer columns of versions that differ from :attr:`printer_columns`."""
    storage_group: str | None = None
    """Group of the store collection when it differs from :attr:`group` (events.k8s.io → core)."""
    verbs: tuple[str, ...] = VERBS
    extra_subresources: tuple[str, ...] = ()
    """Subresources served outside the store besides ``status`` (``pods/log``), listed in discovery."""
    behaviour: Behaviour | None = field(default=None, repr=False, compare=False)
    admission: Admission | None = field(default=None, repr=False, compare=False)
    """Webhooks that read other objects (see :mod:`pykueue.apiserver.admission`); None for most."""

    # --- identity -----------------------------------------------------------------------------

    def key(self) -> ResourceKey:
        """The store collection of this resource."""
        group = self.group if self.storage_group is None else self.storage_group
        return ResourceKey(group, self.plural, self.namespaced)

    def api_version(self, version: str) -> str:
        """``group/version`` (``version`` for the core group)."""
        return f"{self.group}/{version}" if self.group else version

    @property
    def storage_api_version(self) -> str:
        """The apiVersion objects are stored with."""
        group = self.group if self.storage_group is None else self.storage_group
        return f"{group}/{self.storage_version}" if group else self.storage_version

    @property
    def preferred_version(self) -> str:
        """The first served version."""
        return self.versions[0]

    def openapi_errors(self, obj: Mapping[str, Any], version: str) -> list[FieldError]:
        """Every OpenAPI error of a custom resource written in ``version`` (its metadata's too),
        then, after a blocking one, the notice that the CEL rules were skipped.

        For an object of the wrong JSON types, which the typed model cannot read: kube-apiserver
        finds a wrong type in the same OpenAPI pass as every other error (and an int-or-string
        one's ``anyOf`` errors with it), a type error being blocking.
        """
        schema = self.openapi_schema(version)
        errs = validate_object_meta(dict(obj), namespaced=self.namespaced)
        errs += sch.validate({name: value for name, value in obj.items() if name != "metadata"}, schema)
        return [*errs, cel_skipped()] if has_blocking_error(errs) and _any_rules(schema) else errs

    def columns(self, version: str) -> tuple[PrinterColumn, ...]:
        """Printer columns of ``version``."""
        return self.version_columns.get(version, self.printer_columns)

    def _behaviour(self) -> Behaviour:
        if self.behaviour is None:
            raise RuntimeError(f"{self.kind}: no behaviour registered")
        return self.behaviour

    # --- conversion ---------------------------------------------------------------------------

    def _target(self, to_version: str) -> str:
        if "/" in to_version or (not self.group and to_version in self.versions):
            return to_version
        if to_version in self.versions:
            return self.api_version(to_version)
        raise ConversionError(f'{self.kind}: version "{to_version}" is not served')

    def convert(self, obj: Mapping[str, Any], to_version: str) -> Obj:
        """Convert ``obj`` to a served version (``v1beta1``) or an apiVersion (``group/v``)."""
        return self._behaviour().convert(obj, self._target(to_version))

    def to_storage(self, obj: Mapping[str, Any]) -> Obj:
        """``obj`` (any served version) in the storage form."""
        if obj.get("apiVersion") == self.storage_api_version:
            return dict(obj)
        return self._behaviour().convert(obj, self.storage_api_version)

    def from_storage(self, obj: Mapping[str, Any], version: str) -> Obj:
        """A stored object as served in ``version``."""
        target = self._target(version)
        if obj.get("apiVersion") == target:
            return dict(obj)
        return self._behaviour().convert(obj, target)

    # --- defaulting, preparation, validation -------------------------------------------------------

    def default(self, obj: Obj) -> Obj:
        """Schema defaults of the storage version (every write); returns the defaulted object."""
        return self._behaviour().default(obj)

    def default_status(self, obj: Obj) -> Obj | None:
        """:meth:`default` of a status update: ``obj`` with its ``status`` defaulted and every other
        member ``obj``'s own, as they are (the live object's, which the status strategy keeps);
        None when the kind defaults only whole objects (the caller then takes :meth:`default`)."""
        behaviour = self._behaviour()
        return behaviour.default_status(obj) if behaviour.default_status is not None else None

    def prepare_for_create(self, obj: Obj) -> Obj:
        """Create-only mutations: Kueue's mutating webhooks, Job selector generation.

        Assigns ``metadata.uid`` (and a ``generateName`` name) when absent, since the Job
        selector embeds them; the store must keep a uid set here.
        """
        return self._behaviour().prepare_for_create(obj)

    def default_for_create(self, obj: Obj) -> Obj:
        """``prepare_for_create(default(obj))``: what a create stores before validation."""
        behaviour = self._behaviour()
        if behaviour.default_for_create is not None:
            return behaviour.default_for_create(obj)
        return behaviour.prepare_for_create(behaviour.default(obj))

    def validate(self, obj: Obj, old: Obj | None, *, gates: FeatureGates = DEFAULT_GATES) -> list[FieldError]:
        """Schema, CEL and webhook errors of a storage-version object (``old`` for updates)."""
        return self._behaviour().validate(obj, old, gates)

    @property
    def missing_required_checked(self) -> bool:
        """Whether :meth:`missing_required` can find anything (the Kueue kinds the model reads)."""
        return self._behaviour().failure_with_missing is not None

    def missing_required(
        self, obj: Mapping[str, Any], old: Mapping[str, Any] | None, version: str
    ) -> list[FieldError]:
        """``Required value`` errors of a written object as ``version`` of the CRD states them.

        kube-apiserver checks a custom resource in the version it was written in, after that
        version's OpenAPI defaults and before any conversion; the typed model behind the Kueue
        kinds fills its own defaults on decoding (an admission check's ``message``), so their
        ``required`` lists are checked here, on the object as written (``old``: the stored object
        in the same version, for ratcheting), from the same schema the generated CRDs carry.
        """
        if not self.missing_required_checked:
            return []
        return sch.missing_required(obj, self.openapi_schema(version), old)

    def validation_failure(
        self,
        obj: Obj,
        old: Obj | None,
        *,
        gates: FeatureGates = DEFAULT_GATES,
        types_checked: bool = False,
        missing: Sequence[FieldError] = (),
        write: Write = MAIN_WRITE,
    ) -> ValidationFailed | None:
        """Like :meth:`validate` but as the apiserver's error (message names a webhook if one denied).

        ``types_checked``: the request path already checked the object's JSON types against the
        schema (field pruning does, before conversion and defaulting, which only produce typed
        values), so the second walk of the whole object is skipped. ``missing``: the
        :meth:`missing_required` errors of the object as written (blocking: reported with the
        other OpenAPI errors, CEL rules and webhooks not run). ``write``: the version and
        subresource written (which schema applies, whether Kueue's webhook is called).
        """
        behaviour = self._behaviour()
        if missing and behaviour.failure_with_missing is not None:
            return behaviour.failure_with_missing(obj, old, gates, missing)
        if types_checked and behaviour.failure_after_type_check is not None:
            return behaviour.failure_after_type_check(obj, old, gates, write)
        return behaviour.failure(obj, old, gates, write)

    # --- admission that reads the cluster -------------------------------------------------------

    def admit(
        self,
        obj: Obj,
        lookup: Lookup,
        *,
        gates: FeatureGates = DEFAULT_GATES,
        lister: Lister | None = None,
    ) -> None:
        """Mutating admission on create (in place); may raise an ``StatusError`` denial.

        kube-apiserver's own plugins run only with a ``lister`` (the API server's handlers)."""
        if self.admission is None:
            return
        if lister is not None and self.admission.plugin_mutate is not None:
            self.admission.plugin_mutate(obj, lister)
        if self.admission.mutate is not None:
            self.admission.mutate(obj, lookup, gates)

    def admission_failure(
        self,
        obj: Obj,
        old: Obj | None,
        lookup: Lookup,
        *,
        gates: FeatureGates = DEFAULT_GATES,
        lister: Lister | None = None,
    ) -> ValidationFailed | None:
        """Validating admission of a create (``old`` None) or main-resource update (a plugin's
        denial is raised as its ``StatusError``)."""
        if self.admission is None:
            return None
        if lister is not None and self.admission.plugin_validate is not None:
            self.admission.plugin_validate(obj, old, lister)
        if self.admission.validate is None:
            return None
        return self.admission.validate(obj, old, lookup, gates)

    # --- schema and fields --------------------------------------------------------------------

    def openapi_schema(self, version: str) -> sch.Schema:
        """The structural OpenAPI v3 schema of the kind in ``version`` (no ``$ref``).

        The returned dict is shared and cached: treat it as read-only (copy before changing it).
        """
        if version not in self.versions:
            raise KeyError(f"{self.kind}: version {version} is not served")
        return self._behaviour().schema(version)

    @property
    def component(self) -> str:
        """OpenAPI component name of a built-in kind (empty for CRDs)."""
        return self._behaviour().component

    def selectable_fields(self) -> tuple[str, ...]:
        """Field-selector labels besides ``metadata.name`` and ``metadata.namespace``."""
        return tuple(self._behaviour().selectable)

    def selectable_fields_for(self, version: str) -> tuple[str, ...]:
        """CRD ``selectableFields`` of ``version`` (Workload: v1beta2 only)."""
        if self.group == KUEUE_GROUP and version != crdgen.V1BETA2:
            return ()
        return self.selectable_fields()

    def field_value(self, obj: Mapping[str, Any], label: str) -> str | None:
        """The string a field selector compares for ``label`` (None if not selectable)."""
        meta = obj.get("metadata") or {}
        if label in ("metadata.name", "metadata.namespace"):
            return str(meta.get(label.split(".", 1)[1]) or "")
        getter = self._behaviour().selectable.get(label)
        return getter(obj) if getter is not None else None


# --- registry --------------------------------------------------------------------------------------------


class Registry:
    """Lookups over the served resources."""

    def __init__(self, infos: Iterable[ResourceInfo]) -> None:
        self._infos = list(infos)
        self._by_gvr = {(i.group, v, i.plural): i for i in self._infos for v in i.versions}
        self._by_gk = {(i.group, i.kind): i for i in self._infos}

    def all(self) -> list[ResourceInfo]:
        """Every resource, in registration order."""
        return list(self._infos)

    def get(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        """The resource served at ``/apis/{group}/{version}/{plural}`` (None if not served)."""
        return self._by_gvr.get((group, version, plural))

    def by_kind(self, group: str, kind: str) -> ResourceInfo | None:
        """The resource of a group and kind."""
        return self._by_gk.get((group, kind))

    def by_gvk(self, group: str, version: str, kind: str) -> ResourceInfo | None:
        """The resource of a kind when ``version`` is served."""
        info = self.by_kind(group, kind)
        return info if info is not None and version in info.versions else None

    def by_api_version(self, api_version: str, kind: str) -> ResourceInfo | None:
        """The resource of an object's ``apiVersion`` and ``kind``."""
        group, _, version = api_version.rpartition("/")
        return self.by_gvk(group, version, kind)

    def by_short_name(self, name: str) -> ResourceInfo | None:
        """The resource with short name ``name``."""
        return next((i for i in self._infos if name in i.short_names), None)

    def by_category(self, category: str) -> list[ResourceInfo]:
        """Resources in ``category`` (``kubectl get all``)."""
        return [i for i in self._infos if category in i.categories]

    def resolve(self, name: str) -> list[ResourceInfo]:
        """Resources a kubectl-style name refers to: plural, singular, short name or kind (any case)."""
        lowered = name.lower()
        resource, _, group = lowered.partition(".")
        return [
            i
            for i in self._infos
            if resource in (i.plural, i.singular, i.kind.lower(), *i.short_names)
            and (not group or i.group == group)
        ]

    def groups(self) -> list[tuple[str, tuple[str, ...]]]:
        """``(group, versions in preference order)`` for every group (core first)."""
        out: dict[str, list[str]] = {}
        for info in self._infos:
            versions = out.setdefault(info.group, [])
            versions.extend(v for v in info.versions if v not in versions)
        return sorted(((g, tuple(vs)) for g, vs in out.items()), key=lambda item: item[0] != "")

    def resources_in(self, group: str, version: str) -> list[ResourceInfo]:
        """Resources served in one group version."""
        return [i for i in self._infos if i.group == group and version in i.versions]

    def api_resource_list(self, group: str, version: str) -> dict[str, Any]:
        """The ``APIResourceList`` discovery document of a group version."""
        resources: list[dict[str, Any]] = []
        for info in self.resources_in(group, version):
            entry: dict[str, Any] = {
                "name": info.plural,
                "singularName": info.singular,
                "namespaced": info.namespaced,
                "kind": info.kind,
                "verbs": list(info.verbs),
            }
            if info.short_names:
                entry["shortNames"] = list(info.short_names)
            if info.categories:
                entry["categories"] = list(info.categories)
            resources.append(entry)
            if info.status_subresource:
                resources.append(
                    {
                        "name": f"{info.plural}/status",
                        "singularName": "",
                        "namespaced": info.namespaced,
                        "kind": info.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
            for sub in info.extra_subresources:
                resources.append(
                    {
                        "name": f"{info.plural}/{sub}",
                        "singularName": "",
                        "namespaced": info.namespaced,
                        "kind": info.kind,
                        "verbs": ["get"],
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }

    def api_group_list(self) -> dict[str, Any]:
        """The ``APIGroupList`` discovery document (``/apis``)."""
        groups = []
        for group, versions in self.groups():
            if not group:
                continue
            entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
            groups.append({"name": group, "versions": entries, "preferredVersion": entries[0]})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


# --- Kueue behaviour --------------------------------------------------------------------------------------


def _decode_problem(err: DecodeError) -> FieldError:
    if err.detail == "Required value":
        return required(err.field)
    return FieldError(err.field or "<nil>", _TYPE_INVALID, None, err.detail)


def _type_errors(obj: Obj, kind: str) -> list[FieldError]:
    return sch.type_errors(obj, crdgen.shared_kueue_schema(kind, crdgen.V1BETA2))


def _typed(obj: Obj) -> k.KueueObject:
    """``to_internal(obj)`` without its defensive deep copy when ``obj`` is already v1beta2.

    Every write decodes the object into the typed model two or three times; the copy
    ``conversion.convert`` makes first was the largest single cost of a Kueue-kind write. The
    typed object may share raw sub-dicts (pod templates) with ``obj``: the defaulters, mutating
    webhooks and validators only read or replace typed fields, and :func:`_external` builds
    fresh values, so neither side sees the other change.
    """
    kind, version = identify(obj)
    typ = k.KIND_TYPES.get(kind)
    if typ is None or version != internal_version(kind):
        return to_internal(obj)[0]
    try:
        typed: k.KueueObject = msgspec.convert(obj, typ)
    except msgspec.ValidationError as err:
        field_path, detail = describe_validation_error(str(err))
        raise DecodeError(object_ref(obj), field_path, detail) from None
    return typed


def _external(typed: k.KueueObject) -> Obj:
    """``to_external(typed)`` without the deep copy of the freshly encoded dict (same result)."""
    data = encode_typed(typed)
    data["apiVersion"] = internal_version(typed.kind)
    data["kind"] = typed.kind
    return order_object_keys(data)


def _kueue_default(obj: Obj) -> Obj:
    try:
        typed = _typed(obj)
    except ConversionError:
        return obj
    apply_defaults(typed)
    return _keep_unknown_metadata(obj, _external(typed))


def _kueue_default_status(obj: Obj) -> Obj:
    """:func:`_kueue_default` of a status update, encoding only the status.

    A status update stores the live object with the new status (kube-apiserver's status strategy:
    ``PrepareForUpdate`` keeps the old spec and metadata); the general path defaulted the whole
    object, encoded it whole (a fifth of a Workload status update) and then took back the live
    members it rebuilt unchanged. The members of an object this server stored are fixed points of
    that round trip (tests/apiserver/test_fast_paths.py), so keeping them as they are gives the
    same object; the status is defaulted and encoded as :func:`_external` encodes it.
    """
    try:
        typed = _typed(obj)
    except ConversionError:
        return obj
    apply_defaults(typed)
    result = dict(obj)
    status = _conversion.encode_status(typed)
    if status is _conversion.ABSENT:
        result.pop("status", None)
    else:
        result["status"] = status
    return result


def _keep_unknown_metadata(original: Mapping[str, Any], result: Obj) -> Obj:
    """Metadata keys the typed model does not know (e.g. ``selfLink``) survive defaulting."""
    meta = result.setdefault("metadata", {})
    for name, value in (original.get("metadata") or {}).items():
        if name not in meta:
            meta[name] = copy.deepcopy(value)
    return result


def _kueue_validate(kind: str) -> Callable[[Obj, Obj | None, FeatureGates], list[FieldError]]:
    def check(obj: Obj, old: Obj | None, gates: FeatureGates) -> list[FieldError]:
        failure = _kueue_failure(kind)(obj, old, gates, MAIN_WRITE)
        return failure.errors if failure is not None else []

    return check


def _kueue_failure(
    kind: str, *, check_types: bool = True
) -> Callable[[Obj, Obj | None, FeatureGates, Write], ValidationFailed | None]:
    def check(obj: Obj, old: Obj | None, gates: FeatureGates, write: Write) -> ValidationFailed | None:
        name = str((obj.get("metadata") or {}).get("name") or "")
        errs = _type_errors(obj, kind) if check_types else []
        if errs:
            return ValidationFailed(kind, name, errs)
        try:
            typed = _typed(obj)
            old_typed = _typed(old) if old is not None else None
        except DecodeError as err:
            return ValidationFailed(kind, name, [_decode_problem(err)])
        if write.written is not None and write.version != crdgen.V1BETA2:
            errs = validate_written_schema(
                typed, old_typed, write.written, write.written_old, write.version, write.warnings
            )
        else:
            stored = (obj, old) if old is not None else None
            errs = validate_schema(typed, old_typed, stored=stored, written=write.written, warnings=write.warnings)
        if errs:
            return ValidationFailed(kind, name, errs)
        if not webhook_runs(kind, write.subresource):
            return None
        errs = validate_webhook(typed, old_typed, gates=gates)
        return ValidationFailed(kind, name, errs, webhook=_KUEUE_WEBHOOKS.get(kind)) if errs else None

    return check


def _kueue_failure_with_missing(
    kind: str,
) -> Callable[[Obj, Obj | None, FeatureGates, Sequence[FieldError]], ValidationFailed]:
    def check(
        obj: Obj, old: Obj | None, gates: FeatureGates, missing: Sequence[FieldError]
    ) -> ValidationFailed:
        name = str((obj.get("metadata") or {}).get("name") or "")
        try:
            typed = _typed(obj)
            old_typed = _typed(old) if old is not None else None
        except ConversionError:  # the model needs what is missing: only the OpenAPI errors found
            version = str(obj.get("apiVersion") or "").rpartition("/")[2] or crdgen.V1BETA2
            errs = [*missing, cel_skipped()] if _has_cel_rules(kind, version) else list(missing)
        else:
            absent = tuple(e.field for e in missing)
            errs = [
                e
                for e in validate_schema(typed, old_typed, prior=missing)
                # what the model checked of the defaults it filled in for the absent fields
                if (e.type == REQUIRED and e.field in absent) or not any(_within(e.field, p) for p in absent)
            ]
        # the embedded pod templates' own checks report their required fields too: once each
        return ValidationFailed(kind, name, list({str(e): e for e in errs}.values()))

    return check


def _within(field_path: str, path: str) -> bool:
    return field_path == path or field_path.startswith((f"{path}.", f"{path}["))


@functools.cache
def _has_cel_rules(kind: str, version: str) -> bool:
    """Whether the CRD of ``kind`` has CEL rules in ``version`` (kube-apiserver's celValidator)."""
    if version not in (crdgen.V1BETA1, crdgen.V1BETA2):
        version = crdgen.V1BETA2
    return _any_rules(crdgen.shared_kueue_schema(kind, version))


@functools.cache
def _version_rule_messages(kind: str, version: str) -> frozenset[str]:
    """The messages of the CEL rules ``version`` of ``kind``'s CRD has."""
    return frozenset(rule.message for rules in celrules.RULES.get((kind, version), {}).values() for rule in rules)


def _rule_message(err: FieldError) -> str:
    """The message of the rule ``err`` reports (false, or failed to evaluate)."""
    return err.detail.partition(" evaluating rule: ")[2] or err.detail


def _schema_has_rules(schema: Callable[[str], sch.Schema], version: str) -> bool:
    """Whether ``schema(version)`` has CEL rules anywhere (a CRD's ``celValidator``)."""
    return _any_rules(schema(version))


def _any_rules(schema: Mapping[str, Any]) -> bool:
    return sch.VALIDATIONS in schema or any(_any_rules(sub) for sub in sch.children(schema))


WEBHOOK_CONVERSION_KINDS = frozenset(
    {"LocalQueue", "ClusterQueue", "Cohort", "Workload", "MultiKueueCluster"}
)
"""Kueue kinds converted by a webhook (through the Go types); the others only change apiVersion."""
MUTATING_WEBHOOK_KINDS = frozenset({"ClusterQueue", "ResourceFlavor", "Workload"})
"""Kueue kinds with a mutating (defaulting) webhook on create."""


def _canonical(obj: Obj, kind: str) -> Obj:
    """Quantities as the Go types marshal them (a webhook's round trip)."""
    version = str(obj.get("apiVersion") or "").rpartition("/")[2]
    result: Obj = sch.canonicalize_quantities(obj, crdgen.shared_kueue_schema(kind, version))
    return result


def _kueue_convert(kind: str) -> Callable[[Mapping[str, Any], str], Obj]:
    def convert_(obj: Mapping[str, Any], api_version: str) -> Obj:
        converted = convert(obj, api_version)
        if kind in WEBHOOK_CONVERSION_KINDS and obj.get("apiVersion") != api_version:
            converted = _canonical(converted, kind)
        return converted

    return convert_


def kueue_mutating_webhook(kind: str) -> Mutator | None:
    """Kueue's defaulting webhook of ``kind`` (``mclusterqueue``, ``mresourceflavor``,
    ``mworkload``; upstream ``pkg/webhooks/*_webhook.go`` ``Default``, registered for CREATE
    only), on the storage-version object, with the server's feature gates (the controller
    manager's, which upstream's webhooks read).

    ``Default`` gives ClusterQueues and ResourceFlavors the ``kueue.x-k8s.io/resource-in-use``
    finalizer and drops a Workload's ``podSets[].minCount`` when ``PartialAdmission`` is off.
    controller-runtime's ``defaulterForType.Handle`` answers no patch when that changed nothing
    (``reflect.DeepEqual``); otherwise the diff of the request with the marshalled Go object,
    less the removals the Go round trip alone made (``dropSchemeRemovals``): the defaults, and
    the quantities as the Go types write them (``1000m`` becomes ``1``).
    """
    if kind not in MUTATING_WEBHOOK_KINDS:
        return None

    def mutate(obj: Obj, lookup: Lookup, gates: FeatureGates) -> None:
        changed = False
        if kind in ("ClusterQueue", "ResourceFlavor"):
            meta = obj.setdefault("metadata", {})
            finalizers = list(meta.get("finalizers") or [])
            if k.RESOURCE_IN_USE_FINALIZER not in finalizers:
                meta["finalizers"] = [*finalizers, k.RESOURCE_IN_USE_FINALIZER]
                changed = True
        elif kind == "Workload" and not gates.enabled("PartialAdmission"):
            for pod_set in (obj.get("spec") or {}).get("podSets") or []:
                if isinstance(pod_set, dict) and pod_set.pop("minCount", None) is not None:
                    changed = True
        if changed:
            _canonical(obj, kind)  # in place (the object is a dict)

    return mutate


def _kueue_behaviour(kind: str) -> Behaviour:
    return Behaviour(
        schema=lambda version: crdgen.shared_kueue_schema(kind, version),
        convert=_kueue_convert(kind),
        default=_kueue_default,
        default_status=_kueue_default_status,
        prepare_for_create=lambda o: o,  # Kueue's mutating webhooks: kueue_mutating_webhook
        validate=_kueue_validate(kind),
        failure=_kueue_failure(kind),
        failure_after_type_check=_kueue_failure(kind, check_types=False),
        failure_with_missing=_kueue_failure_with_missing(kind),
        selectable={"status.admission.clusterQueue": _path_getter("status.admission.clusterQueue")}
        if kind == "Workload"
        else {},
    )


# --- schema-driven behaviour (unmodelled Kueue kinds, ProvisioningRequest) ----------------------------


def _rules_multikueue_config(obj: Obj, old: Obj | None) -> list[FieldError]:
    clusters = (obj.get("spec") or {}).get("clusters") or []
    if len(set(map(str, clusters))) != len(clusters):
        return [cel("spec.clusters", OMIT, "must be unique")]
    return []


def _rules_multikueue_cluster(obj: Obj, old: Obj | None) -> list[FieldError]:
    spec = obj.get("spec") or {}
    source = spec.get("clusterSource", spec) if obj.get("apiVersion") == f"{KUEUE_GROUP}/v1beta2" else spec
    if not isinstance(source, dict):
        return []
    count = sum(1 for name in ("kubeConfig", "clusterProfileRef") if source.get(name) is not None)
    path = "spec.clusterSource" if "clusterSource" in spec else "spec"
    if count != 1:
        return [
            cel(path, OMIT, "exactly one of the fields in [kubeConfig clusterProfileRef] must be set")
        ]
    return []


def _rules_topology(obj: Obj, old: Obj | None) -> list[FieldError]:
    """Topology's CEL rules on ``spec.levels`` (messages from :mod:`pykueue.api.celrules`)."""
    version = str(obj.get("apiVersion") or "").rpartition("/")[2] or "v1beta2"
    levels = (obj.get("spec") or {}).get("levels") or []
    labels = [str(level.get("nodeLabel")) for level in levels if isinstance(level, dict)]

    def msg(starts: str) -> str:
        return celrules.message("Topology", "spec.levels", starts, version)

    errs: list[FieldError] = []
    old_levels = ((old or {}).get("spec") or {}).get("levels") or []
    if old is not None and levels != old_levels:
        if version == "v1beta1":
            errs.append(cel("spec.levels", OMIT, msg("field is immutable")))
        else:
            old_labels = [str(level.get("nodeLabel")) for level in old_levels if isinstance(level, dict)]
            # v1beta2 lets the levels change while the hostname level stays the lowest one:
            # ``self[size(self) - 1].nodeLabel == H && oldSelf[size(oldSelf) - 1].nodeLabel == H``
            # (an empty list has no last item: ``index out of bounds: -1``, unless the other
            # operand is false)
            result = cel_and(_lowest_is_hostname(labels), _lowest_is_hostname(old_labels))
            errs += cel_rule("spec.levels", result, msg("levels are mutable only"), "array")
    items = [repr(sorted(level.items())) if isinstance(level, dict) else repr(level) for level in levels]
    if len(set(items)) != len(items):  # whole items compared, as the rule's ``j == i``
        errs.append(cel("spec.levels", OMIT, msg("must be unique")))
    if HOSTNAME_LABEL in labels and labels[-1] != HOSTNAME_LABEL:
        errs.append(cel("spec.levels", OMIT, msg("the kubernetes.io/hostname label")))
    return errs


HOSTNAME_LABEL = "kubernetes.io/hostname"


def _lowest_is_hostname(labels: Sequence[str]) -> CelResult:
    """``levels[size(levels) - 1].nodeLabel == 'kubernetes.io/hostname'``."""
    return labels[-1] == HOSTNAME_LABEL if labels else CelEvalError("index out of bounds: -1")


def _schema_behaviour(
    *,
    schema: Callable[[str], sch.Schema],
    storage_api_version: str,
    kind: str,
    group: str,
    namespaced: bool,
    rules: Callable[[Obj, Obj | None], list[FieldError]],
) -> Behaviour:
    def convert_(obj: Mapping[str, Any], api_version: str) -> Obj:
        if group == KUEUE_GROUP:
            return convert(obj, api_version)
        return {**copy.deepcopy(dict(obj)), "apiVersion": api_version}

    def default(obj: Obj) -> Obj:
        sch.apply_defaults(obj, schema(storage_api_version.rpartition("/")[2]))
        return obj

    def validate_(
        obj: Obj, old: Obj | None, gates: FeatureGates, warnings: list[str] | None = None
    ) -> list[FieldError]:
        version = str(obj.get("apiVersion") or storage_api_version).rpartition("/")[2]
        errs = validate_object_meta(obj, namespaced=namespaced)
        openapi = sch.validate({k_: v for k_, v in obj.items() if k_ != "metadata"}, schema(version))
        errs += ratchet_openapi(openapi, obj, old, schema(version))
        # apiextensions-apiserver runs the CEL rules after every OpenAPI error but the blocking
        # ones (``hasBlockingErr``), which skip them with a notice when the CRD has rules.
        if has_blocking_error(errs):
            return [*errs, cel_skipped()] if _schema_has_rules(schema, version) else errs
        # the rules ``version`` of the CRD has (a rule only v1beta2 states is not v1beta1's)
        messages = _version_rule_messages(kind, version) if group == KUEUE_GROUP else None
        rule_errs = [e for e in rules(obj, old) if messages is None or _rule_message(e) in messages]
        return errs + ratchet_rules(kind, version, rule_errs, obj, old, schema(version), warnings)

    def failure(obj: Obj, old: Obj | None, gates: FeatureGates, write: Write) -> ValidationFailed | None:
        if write.written is not None and write.version and write.version != storage_api_version.rpartition("/")[2]:
            # kube-apiserver validates a custom resource in the version it was written in
            # (apiextensions-apiserver: one strategy, with its version's schema, per version)
            errs = validate_(write.written, write.written_old, gates, write.warnings)
        else:
            errs = validate_(obj, old, gates, write.warnings)
        name = str((obj.get("metadata") or {}).get("name") or "")
        return GroupValidationFailed(group, kind, name, errs) if errs else None

    return Behaviour(
        schema=schema,
        convert=convert_,
        default=default,
        prepare_for_create=lambda o: o,
        validate=validate_,
        failure=failure,
    )


class GroupValidationFailed(ValidationFailed):
    """:class:`ValidationFailed` for kinds outside the Kueue group (``Job.batch "x" is invalid``)."""

    def __init__(self, group: str, kind: str, name: str, errors: Sequence[FieldError]) -> None:
        self.group = group
        super().__init__(kind, name, errors)

    @property
    def qualified_kind(self) -> str:
        """``Kind.group`` (just ``Kind`` for the core group)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def message(self) -> str:
        """``Kind.group "name" is invalid: <errors>``."""
        return f'{self.qualified_kind} "{self.name}" is invalid: {aggregate(self.errors)}'


# --- built-in behaviour -----------------------------------------------------------------------------


def _path_getter(dotted: str) -> FieldGetter:
    def get(obj: Mapping[str, Any]) -> str:
        value = sch.field_value(obj, dotted)
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return get


_INLINED: dict[str, sch.Schema] = {}


def _inlined(component: str) -> sch.Schema:
    """The structural schema of a built-in component (cached, shared: read-only)."""
    if component not in _INLINED:
        _INLINED[component] = sch.inline({"$ref": sch.REF_PREFIX + component})
    return _INLINED[component]


def _identity_convert(obj: Mapping[str, Any], api_version: str) -> Obj:
    return {**copy.deepcopy(dict(obj)), "apiVersion": api_version}


def _builtin_behaviour(
    *,
    group: str,
    kind: str,
    component: str,
    validate_fn: Callable[[Obj, Obj | None], list[FieldError]],
    default_fn: Defaulter | None = None,
    prepare_fn: Defaulter | None = None,
    convert_fn: Callable[[Mapping[str, Any], str], Obj] = _identity_convert,
    selectable: Mapping[str, FieldGetter] | None = None,
) -> Behaviour:
    def default(obj: Obj) -> Obj:
        if default_fn is not None:
            default_fn(obj)
        # kube-apiserver decodes a built-in object into its Go type and stores what that
        # encodes: every resource.Quantity in canonical form (a Job's "1000m" cpu is "1")
        result: Obj = sch.canonicalize_quantities(obj, _inlined(component))
        return result

    def prepare(obj: Obj) -> Obj:
        if prepare_fn is not None:
            prepare_fn(obj)
        return obj

    def failure(obj: Obj, old: Obj | None, gates: FeatureGates, write: Write) -> ValidationFailed | None:
        errs = validate_fn(obj, old)
        name = str((obj.get("metadata") or {}).get("name") or "")
        return GroupValidationFailed(group, kind, name, errs) if errs else None

    return Behaviour(
        schema=lambda version: _inlined(component),
        convert=convert_fn,
        default=default,
        prepare_for_create=prepare,
        validate=lambda obj, old, gates: validate_fn(obj, old),
        failure=failure,
        selectable=dict(selectable or {}),
        component=component,
    )


def _ensure_identity(obj: Obj) -> None:
    """Give a new object its uid (and generated name) before the Job selector is derived."""
    meta = obj.setdefault("metadata", {})
    if not meta.get("uid"):
        meta["uid"] = str(uuid.uuid4())
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = str(meta["generateName"]) + uuid.uuid4().hex[:5]


def _default_job(obj: Obj) -> None:
    batch.default_job(obj)
    spec = obj.get("spec")
    if isinstance(spec, dict) and spec.get("selector") is None and spec.get("manualSelector") is not True:
        _ensure_identity(obj)
        batch.prepare_job_for_create(obj)


def _prepare_job(obj: Obj) -> None:
    _ensure_identity(obj)
    batch.prepare_job_for_create(obj)


def _event_getters(prefix: str) -> dict[str, FieldGetter]:
    """Field selectors of Events (evaluated on the stored core/v1 form)."""
    getters: dict[str, FieldGetter] = {
        f"{prefix}.{name}": _path_getter(f"involvedObject.{name}")
        for name in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    }
    getters["reason"] = _path_getter("reason")
    getters["source"] = events.event_source
    getters["type"] = _path_getter("type")
    getters["reportingComponent" if prefix == "involvedObject" else "reportingController"] = _path_getter(
        "reportingComponent"
    )
    return getters


def _core_event_convert(obj: Mapping[str, Any], api_version: str) -> Obj:
    return events.to_core(obj)


def _events_v1_convert(obj: Mapping[str, Any], api_version: str) -> Obj:
    return events.to_core(obj) if api_version == events.CORE_API_VERSION else events.to_events_v1(obj)


def _events_v1_default(obj: Obj) -> None:
    converted = events.to_core(obj)
    obj.clear()
    obj.update(converted)


# --- the served resources ---------------------------------------------------------------------------------


def _cols(*columns: PrinterColumn) -> tuple[PrinterColumn, ...]:
    return columns


_PENDING = PrinterColumn(
    "Pending Workloads", "integer", ".status.pendingWorkloads", description="Number of pending workloads"
)
_ADMITTED_WORKLOADS = "Number of admitted workloads that haven't finished yet"

KUEUE_COLUMNS: Mapping[str, tuple[PrinterColumn, ...]] = {
    "ClusterQueue": _cols(
        PrinterColumn(
            "Cohort", "string", ".spec.cohortName", description="Cohort that this ClusterQueue belongs to"
        ),
        PrinterColumn(
            "Strategy",
            "string",
            ".spec.queueingStrategy",
            1,
            description="The queueing strategy used to prioritize workloads",
        ),
        _PENDING,
        PrinterColumn(
            "Admitted Workloads", "integer", ".status.admittedWorkloads", 1, description=_ADMITTED_WORKLOADS
        ),
    ),
    "LocalQueue": _cols(
        PrinterColumn("ClusterQueue", "string", ".spec.clusterQueue", description="Backing ClusterQueue"),
        _PENDING,
        PrinterColumn(
            "Admitted Workloads", "integer", ".status.admittedWorkloads", description=_ADMITTED_WORKLOADS
        ),
    ),
    "Workload": _cols(
        PrinterColumn(
            "Queue",
            "string",
            ".spec.queueName",
            description="Name of the queue this workload was submitted to",
        ),
        PrinterColumn(
            "Reserved in",
            "string",
            ".status.admission.clusterQueue",
            description="Name of the ClusterQueue where the workload is reserving quota",
        ),
        PrinterColumn(
            "Admitted",
            "string",
            ".status.conditions[?(@.type=='Admitted')].status",
            description="Admission status",
        ),
        PrinterColumn(
            "Finished",
            "string",
            ".status.conditions[?(@.type=='Finished')].status",
            description="Workload finished",
        ),
        PrinterColumn(
            "Age", "date", ".metadata.creationTimestamp", description="Time this workload was created"
        ),
    ),
    "WorkloadPriorityClass": _cols(
        PrinterColumn("Value", "integer", ".value", description="Value of workloadPriorityClass's Priority"),
    ),
    "MultiKueueCluster": _cols(
        PrinterColumn(
            "Connected",
            "string",
            ".status.conditions[?(@.type=='Active')].status",
            description="MultiKueueCluster is connected",
        ),
        PrinterColumn(
            "Age", "date", ".metadata.creationTimestamp", description="Time this workload was created"
        ),
    ),
}
"""Printer columns of the Kueue CRDs (``+kubebuilder:printcolumn`` markers), v1beta2."""

_KUEUE_NAMES: Mapping[str, tuple[str, str, bool, tuple[str, ...], bool]] = {
    # kind: (plural, singular, namespaced, short names, status subresource)
    "ResourceFlavor": ("resourceflavors", "resourceflavor", False, ("flavor", "flavors", "rf"), False),
    "ClusterQueue": ("clusterqueues", "clusterqueue", False, ("cq",), True),
    "Cohort": ("cohorts", "cohort", False, ("co",), True),
    "LocalQueue": ("localqueues", "localqueue", True, ("queue", "queues", "lq"), True),
    "Workload": ("workloads", "workload", True, ("kwl", "kueueworkload", "kueueworkloads"), True),
    "WorkloadPriorityClass": ("workloadpriorityclasses", "workloadpriorityclass", False, ("wpc",), False),
    "AdmissionCheck": ("admissionchecks", "admissioncheck", False, ("ac",), True),
    "ProvisioningRequestConfig": (
        "provisioningrequestconfigs",
        "provisioningrequestconfig",
        False,
        ("prc",),
        False,
    ),
    "MultiKueueConfig": ("multikueueconfigs", "multikueueconfig", False, ("mkconf",), False),
    "MultiKueueCluster": ("multikueueclusters", "multikueuecluster", False, ("mkc",), True),
    "Topology": ("topologies", "topology", False, ("topo",), False),
}

_UNMODELLED_RULES: Mapping[str, Callable[[Obj, Obj | None], list[FieldError]]] = {
    "MultiKueueConfig": _rules_multikueue_config,
    "MultiKueueCluster": _rules_multikueue_cluster,
    "Topology": _rules_topology,
}


def _kueue_info(kind: str) -> ResourceInfo:
    plural, singular, namespaced, short_names, status = _KUEUE_NAMES[kind]
    if kind in _UNMODELLED_RULES:
        behaviour = _schema_behaviour(
            schema=lambda version: crdgen.shared_kueue_schema(kind, version),
            storage_api_version=f"{KUEUE_GROUP}/{crdgen.V1BETA2}",
            kind=kind,
            group=KUEUE_GROUP,
            namespaced=namespaced,
            rules=_UNMODELLED_RULES[kind],
        )
    else:
        behaviour = _kueue_behaviour(kind)
    mutating = kueue_mutating_webhook(kind)
    columns = KUEUE_COLUMNS.get(kind, ())
    version_columns: dict[str, tuple[PrinterColumn, ...]] = {}
    if kind == "ClusterQueue":
        version_columns[crdgen.V1BETA1] = (
            PrinterColumn(
                "Cohort", "string", ".spec.cohort", description="Cohort that this ClusterQueue belongs to"
            ),
            *columns[1:],
        )
    return ResourceInfo(
        group=KUEUE_GROUP,
        kind=kind,
        plural=plural,
        singular=singular,
        namespaced=namespaced,
        versions=(crdgen.V1BETA2, crdgen.V1BETA1),
        storage_version=crdgen.V1BETA2,
        short_names=short_names,
        status_subresource=status,
        printer_columns=columns,
        deprecated_versions={} if kind == "MultiKueueConfig" else {crdgen.V1BETA1: KUEUE_DEPRECATION},
        version_columns=version_columns,
        behaviour=behaviour,
        admission=Admission(f"kueue {kind} webhook", mutate=mutating) if mutating is not None else None,
    )


def _provisioning_request_info() -> ResourceInfo:
    schema = autoscaling.provisioning_request_schema()
    behaviour = _schema_behaviour(
        schema=lambda version: schema,
        storage_api_version=f"{autoscaling.GROUP}/v1",
        kind="ProvisioningRequest",
        group=autoscaling.GROUP,
        namespaced=True,
        rules=autoscaling.validate_provisioning_request_rules,
    )
    return ResourceInfo(
        group=autoscaling.GROUP,
        kind="ProvisioningRequest",
        plural="provisioningrequests",
        singular="provisioningrequest",
        namespaced=True,
        versions=("v1", "v1beta1"),
        storage_version="v1",
        short_names=("provreq", "provreqs"),
        status_subresource=True,
        printer_columns=(PrinterColumn("Age", "date", ".metadata.creationTimestamp"),),
        deprecated_versions={"v1beta1": "autoscaling.k8s.io/v1beta1 API is deprecated"},
        behaviour=behaviour,
    )


def _builtin_infos() -> list[ResourceInfo]:
    return [
        ResourceInfo(
            group="",
            kind="Namespace",
            plural="namespaces",
            singular="namespace",
            namespaced=False,
            versions=("v1",),
            storage_version="v1",
            short_names=("ns",),
            status_subresource=True,
            builtin=True,
            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
            behaviour=_builtin_behaviour(
                group="",
                kind="Namespace",
                component=core.NAMESPACE,
                validate_fn=namespaces.validate_namespace,
                default_fn=namespaces.default_namespace,
                prepare_fn=namespaces.prepare_namespace_for_create,
                selectable={"status.phase": _path_getter("status.phase")},
            ),
        ),
        ResourceInfo(
            group="",
            kind="Event",
            plural="events",
            singular="event",
            namespaced=True,
            versions=("v1",),
            storage_version="v1",
            short_names=("ev",),
            builtin=True,
            behaviour=_builtin_behaviour(
                group="",
                kind="Event",
                component=core.EVENT,
                validate_fn=events.validate_core_event,
                convert_fn=_core_event_convert,
                selectable=_event_getters("involvedObject"),
            ),
        ),
        ResourceInfo(
            group="",
            kind="Pod",
            plural="pods",
            singular="pod",
            namespaced=True,
            versions=("v1",),
            storage_version="v1",
            short_names=("po",),
            categories=("all",),
            status_subresource=True,
            builtin=True,
            extra_subresources=("log",),
            behaviour=_builtin_behaviour(
                group="",
                kind="Pod",
                component=podnode.POD,
                validate_fn=podnode.validate_pod,
                default_fn=podnode.default_pod,
                prepare_fn=podnode.prepare_pod_for_create,
                selectable={name: podnode.pod_field(name) for name in podnode.POD_SELECTABLE},
            ),
            admission=Admission(
                "kube-apiserver LimitRanger",
                plugin_mutate=limitranger.mutate_pod,
                plugin_validate=limitranger.validate_pod,
            ),
        ),
        ResourceInfo(
            group="",
            kind="Node",
            plural="nodes",
            singular="node",
            namespaced=False,
            versions=("v1",),
            storage_version="v1",
            short_names=("no",),
            status_subresource=True,
            builtin=True,
            behaviour=_builtin_behaviour(
                group="",
                kind="Node",
                component=podnode.NODE,
                validate_fn=podnode.validate_node,
                selectable={"spec.unschedulable": _path_getter("spec.unschedulable")},
            ),
        ),
        ResourceInfo(
            group="",
            kind="PodTemplate",
            plural="podtemplates",
            singular="podtemplate",
            namespaced=True,
            versions=("v1",),
            storage_version="v1",
            builtin=True,
            behaviour=_builtin_behaviour(
                group="",
                kind="PodTemplate",
                component=core.POD_TEMPLATE,
                validate_fn=namespaces.validate_pod_template_object,
                default_fn=namespaces.default_pod_template_object,
            ),
        ),
        ResourceInfo(
            group="",
            kind="LimitRange",
            plural="limitranges",
            singular="limitrange",
            namespaced=True,
            versions=("v1",),
            storage_version="v1",
            short_names=("limits",),
            builtin=True,
            behaviour=_builtin_behaviour(
                group="",
                kind="LimitRange",
                component=limitrange.LIMIT_RANGE,
                validate_fn=limitrange.validate_limit_range,
                default_fn=limitrange.default_limit_range,
                prepare_fn=limitrange.prepare_limit_range_for_create,
            ),
        ),
        ResourceInfo(
            group="batch",
            kind="Job",
            plural="jobs",
            singular="job",
            namespaced=True,
            versions=("v1",),
            storage_version="v1",
            categories=("all",),
            status_subresource=True,
            builtin=True,
            behaviour=_builtin_behaviour(
                group="batch",
                kind="Job",
                component=batch.JOB,
                validate_fn=batch.validate_job,
                default_fn=_default_job,
                prepare_fn=_prepare_job,
                selectable={"status.successful": _path_getter("status.succeeded")},
            ),
            admission=job_webhook.admission(),
        ),
        ResourceInfo(
            group="scheduling.k8s.io",
            kind="PriorityClass",
            plural="priorityclasses",
            singular="priorityclass",
            namespaced=False,
            versions=("v1",),
            storage_version="v1",
            short_names=("pc",),
            builtin=True,
            behaviour=_builtin_behaviour(
                group="scheduling.k8s.io",
                kind="PriorityClass",
                component=scheduling.PRIORITY_CLASS,
                validate_fn=scheduling.validate_priority_class,
                default_fn=scheduling.default_priority_class,
            ),
        ),
        ResourceInfo(
            group=node.GROUP,
            kind="RuntimeClass",
            plural="runtimeclasses",
            singular="runtimeclass",
            namespaced=False,
            versions=("v1",),
            storage_version="v1",
            builtin=True,
            behaviour=_builtin_behaviour(
                group=node.GROUP,
                kind="RuntimeClass",
                component=node.RUNTIME_CLASS,
                validate_fn=node.validate_runtime_class,
            ),
        ),
        ResourceInfo(
            group="coordination.k8s.io",
            kind="Lease",
            plural="leases",
            singular="lease",
            namespaced=True,
            versions=("v1",),
            storage_version="v1",
            builtin=True,
            behaviour=_builtin_behaviour(
                group="coordination.k8s.io",
                kind="Lease",
                component=coordination.LEASE,
                validate_fn=coordination.validate_lease,
            ),
        ),
        ResourceInfo(
            group="events.k8s.io",
            kind="Event",
            plural="events",
            singular="event",
            namespaced=True,
            versions=("v1",),
            storage_version="v1",
            short_names=("ev",),
            builtin=True,
            storage_group="",
            behaviour=_builtin_behaviour(
                group="events.k8s.io",
                kind="Event",
                component=events.EVENTS_V1_EVENT,
                validate_fn=events.validate_events_v1_event,
                default_fn=_events_v1_default,
                convert_fn=_events_v1_convert,
                selectable=_event_getters("regarding"),
            ),
        ),
    ]


def build_registry() -> Registry:
    """A fresh registry of every served resource."""
    infos = _builtin_infos()
    infos += [_kueue_info(kind) for kind in crdgen.KUEUE_KINDS]
    infos.append(_provisioning_request_info())
    return Registry(infos)


REGISTRY: Registry = build_registry()
"""The resources served by pykueue's API server."""
