"""The HTTP layer's constructors of ``Status`` errors (``k8s.io/apimachinery/pkg/api/errors``).

Every failure the API server reports is a :class:`pykueue.kube.status.StatusError` (the one Status
error, also raised by the store) with the code, reason, message and details the real kube-apiserver
uses, so kubectl and the official clients print and classify them exactly as against a real cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pykueue.api.validation import (
    DUPLICATE,
    FORBIDDEN,
    INVALID,
    NOT_FOUND,
    NOT_SUPPORTED,
    REQUIRED,
    TOO_LONG,
    TOO_MANY,
    TYPE_INVALID,
    FieldError,
    ValidationFailed,
    aggregate,
)
from pykueue.kube.status import StatusError
from pykueue.store.errors import qualified_resource

CAUSE_REASONS: Mapping[str, str] = {
    INVALID: "FieldValueInvalid",
    REQUIRED: "FieldValueRequired",
    DUPLICATE: "FieldValueDuplicate",
    NOT_SUPPORTED: "FieldValueNotSupported",
    TOO_MANY: "FieldValueTooMany",
    TOO_LONG: "FieldValueTooLong",
    FORBIDDEN: "FieldValueForbidden",
    NOT_FOUND: "FieldValueNotFound",
    TYPE_INVALID: "FieldValueTypeInvalid",
}
"""``metav1.CauseType`` of each field-error type."""

PATCH_MEDIA_TYPES = "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
BUILTIN_PATCH_MEDIA_TYPES = (
    "application/json-patch+json, application/merge-patch+json, "
    "application/strategic-merge-patch+json, application/apply-patch+yaml"
)


def _resource_details(group: str, resource: str, name: str | None = None) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name is not None:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = resource
    return details


# --- constructors, one per apimachinery helper ------------------------------------------------------


def path_not_found() -> StatusError:
    """The answer for a path that serves nothing."""
    return StatusError(404, "NotFound", "the server could not find the requested resource", {})


def causes(errors: Iterable[FieldError]) -> list[dict[str, str]]:
    """``details.causes`` of an Invalid status: one cause per field error."""
    out: list[dict[str, str]] = []
    for err in errors:
        out.append(
            {
                "reason": CAUSE_REASONS.get(err.type, "FieldValueInvalid"),
                "message": err.body(),
                "field": err.field,
            }
        )
    return out


def invalid(
    group: str, kind: str, name: str, errors: Sequence[FieldError], message: str | None = None
) -> StatusError:
    """``NewInvalid``: 422, ``Kind.group "name" is invalid: <errors>``."""
    qualified_kind = f"{kind}.{group}" if group else kind
    text = message or f'{qualified_kind} "{name}" is invalid: {aggregate(errors)}'
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = causes(errors)
    return StatusError(422, "Invalid", text, details)


def rejected(group: str, kind: str, name: str, failure: ValidationFailed) -> StatusError:
    """The Status of a refused object: a denial by one of Kueue's validating webhooks is
    controller-runtime's ``admission.Denied`` (``ValidationResponse``: 403, reason Forbidden) as
    kube-apiserver's ``webhookerrors.ToStatusErr`` reports it (the message prefixed with
    ``admission webhook "<name>" denied the request``, no details); the CRD's own rules are
    ``NewInvalid`` (:func:`invalid`)."""
    if failure.webhook:
        return StatusError(403, "Forbidden", failure.message)
    return invalid(group, kind, failure.name or name, failure.errors, failure.message)


def bad_request(message: str) -> StatusError:
    """``NewBadRequest`` (400)."""
    return StatusError(400, "BadRequest", message)


def cannot_handle(kind: str, version: str, detail: str) -> StatusError:
    """The decoder's 400: ``Kind in version "v" cannot be handled as a Kind: <detail>``."""
    return bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {detail}')


def method_not_supported(group: str, resource: str, verb: str) -> StatusError:
    """``NewMethodNotSupported`` (405)."""
    return StatusError(
        405,
        "MethodNotAllowed",
        f"{verb} is not supported on resources of kind {qualified_resource(group, resource)!r}"
        if verb
        else "the server does not allow this method on the requested resource",
        _resource_details(group, resource),
    )


def unsupported_media_type(content_type: str, accepted: str = PATCH_MEDIA_TYPES) -> StatusError:
    """415, as the real server answers an unknown (or CRD strategic-merge) patch type."""
    return StatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {accepted}",
    )


def not_acceptable(accepted: str = "application/json, application/yaml") -> StatusError:
    """406 for an ``Accept`` header the server cannot satisfy."""
    return StatusError(406, "NotAcceptable", f"only the following media types are accepted: {accepted}")


def unauthorized() -> StatusError:
    """401 (missing or wrong bearer token)."""
    return StatusError(401, "Unauthorized", "Unauthorized")


def forbidden(group: str, resource: str, name: str, detail: str) -> StatusError:
    """``NewForbidden``: ``<resource> "<name>" is forbidden: <detail>`` (no name: ``<resource> is
    forbidden: …``; no resource, e.g. a non-resource path: ``forbidden: …``)."""
    if not resource and not group:
        message = f"forbidden: {detail}"
    elif not name:
        message = f"{qualified_resource(group, resource)} is forbidden: {detail}"
    else:
        message = f'{qualified_resource(group, resource)} "{name}" is forbidden: {detail}'
    return StatusError(403, "Forbidden", message, _resource_details(group, resource, name or None))


def expired(message: str) -> StatusError:
    """410 Gone, reason Expired (too old resource version or continue token)."""
    return StatusError(410, "Expired", message)


def too_large_resource_version(requested: int, current: int) -> StatusError:
    """504 for a watch/list at a resourceVersion the server has not reached."""
    return StatusError(
        504,
        "Timeout",
        f"Too large resource version: {requested}, current: {current}",
        {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        },
    )


def entity_too_large(limit: int) -> StatusError:
    """413 for a request body over the limit."""
    return StatusError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def internal(message: str) -> StatusError:
    """``NewInternalError`` (500)."""
    return StatusError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )
