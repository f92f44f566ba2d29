"""Namespace and PodTemplate (``core/v1``): defaults and validation.

Namespace: the API server labels it ``kubernetes.io/metadata.name=<name>``, adds the
``kubernetes`` finalizer to ``spec.finalizers`` and sets ``status.phase: Active`` on create;
names are DNS-1123 labels. PodTemplate: pod-template defaults and validation.
"""

from __future__ import annotations

from typing import Any

from pykueue.api.validation import FieldError, not_supported
from pykueue.apiserver.builtin.pods import (
    default_pod_template,
    mapping,
    validate_object_meta,
    validate_pod_template,
)
from pykueue.kube.validation import is_dns1123_label

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
NAMESPACE_FINALIZER = "kubernetes"
NAMESPACE_PHASES = ("Active", "Terminating")


def default_namespace(ns: dict[str, Any]) -> None:
    """Name label (always kept in sync), ``kubernetes`` finalizer and ``Active`` phase."""
    meta = ns.setdefault("metadata", {})
    name = meta.get("name")
    if name:
        meta.setdefault("labels", {})[NAMESPACE_NAME_LABEL] = name
    spec = ns.setdefault("spec", {})
    if isinstance(spec, dict):
        spec.setdefault("finalizers", [NAMESPACE_FINALIZER])
    status = ns.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Active")


def prepare_namespace_for_create(ns: dict[str, Any]) -> None:
    """A new Namespace starts ``Active`` whatever status the client sent."""
    ns["status"] = {"phase": "Active"}


def validate_namespace(ns: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """DNS-label name, metadata, known phase."""
    errs = validate_object_meta(ns, namespaced=False, name_check=is_dns1123_label)
    phase = mapping(ns.get("status")).get("phase")
    if phase is not None and phase not in NAMESPACE_PHASES:
        errs.append(not_supported("status.phase", phase, NAMESPACE_PHASES))
    return errs


def default_pod_template_object(pt: dict[str, Any]) -> None:
    """Defaults of a PodTemplate object's ``template``."""
    template = pt.setdefault("template", {})
    if isinstance(template, dict):
        default_pod_template(template)


def validate_pod_template_object(pt: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """Metadata plus ``ValidatePodTemplateSpec`` of ``template``."""
    return validate_object_meta(pt, namespaced=True) + validate_pod_template(pt.get("template"), "template")
