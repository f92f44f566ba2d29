"""Kubernetes ``Status`` errors (``k8s.io/apimachinery/pkg/api/errors``) for the HTTP layer.

Every failure the API server reports is an :class:`APIError` rendered as a ``meta/v1`` ``Status``
object with the code, reason, message and details the real kube-apiserver uses, so kubectl and
the official clients print and classify them exactly as against a real cluster.
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
    aggregate,
)

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

CONFLICT_MESSAGE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)
PATCH_MEDIA_TYPES = "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
BUILTIN_PATCH_MEDIA_TYPES = (
    "application/json-patch+json, application/merge-patch+json, "
    "application/strategic-merge-patch+json, application/apply-patch+yaml"
)


class APIError(Exception):
    """An API failure, rendered as a ``Status`` object."""

    def __init__(
        self, code: int, reason: str, message: str, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.status_override: dict[str, Any] | None = None

    def status(self) -> dict[str, Any]:
        """The ``Status`` object (``status: Failure``)."""
        if self.status_override is not None:
            return dict(self.status_override)
        return failure_status(self.code, self.reason, self.message, self.details)

    def __repr__(self) -> str:
        return f"APIError({self.code}, {self.reason!r}, {self.message!r})"


def failure_status(code: int, reason: str, message: str, details: Mapping[str, Any] | None) -> dict[str, Any]:
    """A ``Status`` object for a failed request."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
    }
    if reason:
        status["reason"] = reason
    if details:
        status["details"] = dict(details)
    status["code"] = code
    return status


def success_status(details: Mapping[str, Any] | None = None, code: int = 200) -> dict[str, Any]:
    """A ``Status`` object with ``status: Success`` (e.g. the answer to some deletes)."""
    status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        status["details"] = dict(details)
    status["code"] = code
    return status


def qualified_resource(group: str, resource: str) -> str:
    """``resource.group`` (just ``resource`` for the core group), as in error messages."""
    return f"{resource}.{group}" if group else resource


def _resource_details(group: str, resource: str, name: str | None = None) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name is not None:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = resource
    return details


# --- constructors, one per apimachinery helper ------------------------------------------------------


def not_found(group: str, resource: str, name: str) -> APIError:
    """``NewNotFound``: ``clusterqueues.kueue.x-k8s.io "x" not found``."""
    return APIError(
        404,
        "NotFound",
        f'{qualified_resource(group, resource)} "{name}" not found',
        _resource_details(group, resource, name),
    )


def path_not_found() -> APIError:
    """The answer for a path that serves nothing."""
    return APIError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(group: str, resource: str, name: str) -> APIError:
    """``NewAlreadyExists``."""
    return APIError(
        409,
        "AlreadyExists",
        f'{qualified_resource(group, resource)} "{name}" already exists',
        _resource_details(group, resource, name),
    )


def conflict(group: str, resource: str, name: str, detail: str = CONFLICT_MESSAGE) -> APIError:
    """``NewConflict``: ``Operation cannot be fulfilled on <resource> "<name>": <detail>``."""
    return APIError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified_resource(group, resource)} "{name}": {detail}',
        _resource_details(group, resource, name),
    )


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
) -> APIError:
    """``NewInvalid``: 422, ``Kind.group "name" is invalid: <errors>``."""
    qualified_kind = f"{kind}.{group}" if group else kind
    text = message or f'{qualified_kind} "{name}" is invalid: {aggregate(errors)}'
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = causes(errors)
    return APIError(422, "Invalid", text, details)


def bad_request(message: str) -> APIError:
    """``NewBadRequest`` (400)."""
    return APIError(400, "BadRequest", message)


def cannot_handle(kind: str, version: str, detail: str) -> APIError:
    """The decoder's 400: ``Kind in version "v" cannot be handled as a Kind: <detail>``."""
    return bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {detail}')


def method_not_supported(group: str, resource: str, verb: str) -> APIError:
    """``NewMethodNotSupported`` (405)."""
    return APIError(
        405,
        "MethodNotAllowed",
        f"{verb} is not supported on resources of kind {qualified_resource(group, resource)!r}"
        if verb
        else "the server does not allow this method on the requested resource",
        _resource_details(group, resource),
    )


def unsupported_media_type(content_type: str, accepted: str = PATCH_MEDIA_TYPES) -> APIError:
    """415, as the real server answers an unknown (or CRD strategic-merge) patch type."""
    return APIError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {accepted}",
    )


def not_acceptable(accepted: str = "application/json, application/yaml") -> APIError:
    """406 for an ``Accept`` header the server cannot satisfy."""
    return APIError(406, "NotAcceptable", f"only the following media types are accepted: {accepted}")


def unauthorized() -> APIError:
    """401 (missing or wrong bearer token)."""
    return APIError(401, "Unauthorized", "Unauthorized")


def forbidden(group: str, resource: str, name: str, detail: str) -> APIError:
    """``NewForbidden``: ``<resource> "<name>" is forbidden: <detail>`` (no name: ``<resource> is
    forbidden: …``; no resource, e.g. a non-resource path: ``forbidden: …``)."""
    if not resource and not group:
        message = f"forbidden: {detail}"
    elif not name:
        message = f"{qualified_resource(group, resource)} is forbidden: {detail}"
    else:
        message = f'{qualified_resource(group, resource)} "{name}" is forbidden: {detail}'
    return APIError(403, "Forbidden", message, _resource_details(group, resource, name or None))


def expired(message: str) -> APIError:
    """410 Gone, reason Expired (too old resource version or continue token)."""
    return APIError(410, "Expired", message)


def too_large_resource_version(requested: int, current: int) -> APIError:
    """504 for a watch/list at a resourceVersion the server has not reached."""
    return APIError(
        504,
        "Timeout",
        f"Too large resource version: {requested}, current: {current}",
        {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        },
    )


def entity_too_large(limit: int) -> APIError:
    """413 for a request body over the limit."""
    return APIError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def internal(message: str) -> APIError:
    """``NewInternalError`` (500)."""
    return APIError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


def from_store_error(err: Any, group: str, resource: str, name: str) -> APIError:
    """Map a :class:`pykueue.store.StoreError` to an :class:`APIError` (keeping its own fields)."""
    code = int(getattr(err, "code", 500))
    reason = str(getattr(err, "reason", "") or "InternalError")
    message = str(getattr(err, "message", "") or str(err))
    details = getattr(err, "details", None)
    if not isinstance(details, Mapping) or not details:
        details = _resource_details(group, resource, name) if code in (404, 409) else {}
    api_err = APIError(code, reason, message, details)
    to_status = getattr(err, "to_status", None)
    if callable(to_status):
        status = to_status()
        if isinstance(status, dict) and status.get("code") == code:
            api_err.status_override = status
    return api_err
