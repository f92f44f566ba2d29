"""Store errors shaped like the Kubernetes API ``Status`` the real apiserver returns.

Every error carries ``code`` (HTTP status), ``reason`` (``metav1.StatusReason``), ``message`` and
``details`` (``metav1.StatusDetails`` as a JSON dict). The constructors below reproduce the
messages of ``k8s.io/apimachinery/pkg/api/errors`` (``NewNotFound``, ``NewConflict``, ...) so
clients that match on them (kubectl, client-go, the Python client) behave as against a cluster.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from pykueue.kube.status import StatusError


class StoreError(StatusError):
    """Base class of the store's errors: a :class:`StatusError` whose code and reason its subclass fixes."""

    code = 500
    reason = "InternalError"

    def __init__(
        self, message: str, details: dict[str, Any] | None = None, *, reason: str | None = None
    ) -> None:
        super().__init__(self.code, self.reason if reason is None else reason, message, details)


class NotFound(StoreError):
    """404 ``NotFound``."""

    code = 404
    reason = "NotFound"


class AlreadyExists(StoreError):
    """409 ``AlreadyExists``."""

    code = 409
    reason = "AlreadyExists"


class Conflict(StoreError):
    """409 ``Conflict`` (stale resourceVersion, failed delete precondition)."""

    code = 409
    reason = "Conflict"


class Expired(StoreError):
    """410 ``Expired`` (too old resource version or continue token).

    ``continue_token``, when set, is the token the apiserver puts in the Status' ``metadata.continue``
    to let the client finish an inconsistent list.
    """

    code = 410
    reason = "Expired"

    def __init__(self, message: str, *, continue_token: str | None = None) -> None:
        super().__init__(message)
        self.continue_token = continue_token
        if continue_token:
            self.metadata["continue"] = continue_token


class Invalid(StoreError):
    """422 ``Invalid`` (field errors in ``details.causes``)."""

    code = 422
    reason = "Invalid"


class BadRequest(StoreError):
    """400 ``BadRequest`` (unparsable continue token, bad name; selectors raise ``kube.selectors.SelectorError``)."""

    code = 400
    reason = "BadRequest"


class InternalError(StoreError):
    """500 (``reason`` empty for raw storage errors, as the apiserver reports them)."""

    code = 500
    reason = "InternalError"


def qualified_resource(group: str, resource: str) -> str:
    """``schema.GroupResource.String()``: ``resource.group`` or ``resource`` for core."""
    return f"{resource}.{group}" if group else resource


def qualified_kind(group: str, kind: str) -> str:
    """``schema.GroupKind.String()``: ``Kind.group`` or ``Kind`` for core."""
    return f"{kind}.{group}" if group else kind


def _details(group: str, kind: str, name: str, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details.update(extra)
    return details


def not_found(group: str, resource: str, name: str) -> NotFound:
    """``errors.NewNotFound``: ``clusterqueues.kueue.x-k8s.io "x" not found``."""
    msg = f'{qualified_resource(group, resource)} "{name}" not found'
    return NotFound(msg, _details(group, resource, name))


def already_exists(group: str, resource: str, name: str) -> AlreadyExists:
    """``errors.NewAlreadyExists``."""
    msg = f'{qualified_resource(group, resource)} "{name}" already exists'
    return AlreadyExists(msg, _details(group, resource, name))


def generate_name_conflict(group: str, resource: str, name: str) -> AlreadyExists:
    """``errors.NewGenerateNameConflict``: every generated name was taken."""
    msg = (
        f'{qualified_resource(group, resource)} "{name}" already exists, the server was not able to '
        "generate a unique name for the object"
    )
    return AlreadyExists(msg, _details(group, resource, name, retryAfterSeconds=1))


def conflict(group: str, resource: str, name: str, cause: str) -> Conflict:
    """``errors.NewConflict``: ``Operation cannot be fulfilled on <gr> "<name>": <cause>``."""
    msg = f'Operation cannot be fulfilled on {qualified_resource(group, resource)} "{name}": {cause}'
    return Conflict(msg, _details(group, resource, name))


OBJECT_MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


@dataclass(frozen=True)
class FieldError:
    """One ``field.Error`` (``type`` is ``FieldValueInvalid``, ``FieldValueRequired`` ...)."""

    type: str
    field: str
    detail: str = ""
    value: Any = None

    _LABELS: ClassVar[dict[str, str]] = {
        "FieldValueInvalid": "Invalid value",
        "FieldValueRequired": "Required value",
        "FieldValueForbidden": "Forbidden",
        "FieldValueNotSupported": "Unsupported value",
    }

    def body(self) -> str:
        """``field.Error.ErrorBody()``."""
        label = self._LABELS.get(self.type, self.type)
        if self.type in ("FieldValueRequired", "FieldValueForbidden"):
            text = label
        elif isinstance(self.value, str):
            text = f"{label}: {json.dumps(self.value)}"
        elif self.value is None:
            text = f"{label}: null"
        else:
            text = f"{label}: {self.value}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def required(field: str, detail: str = "") -> FieldError:
    """``field.Required``."""
    return FieldError("FieldValueRequired", field, detail)


def invalid_value(field: str, value: Any, detail: str) -> FieldError:
    """``field.Invalid``."""
    return FieldError("FieldValueInvalid", field, detail, value)


def forbidden(field: str, detail: str) -> FieldError:
    """``field.Forbidden``."""
    return FieldError("FieldValueForbidden", field, detail)


def invalid(group: str, kind: str, name: str, errors: list[FieldError]) -> Invalid:
    """``errors.NewInvalid``: ``Kind.group "name" is invalid: <aggregate>``."""
    causes = [{"reason": e.type, "message": e.body(), "field": e.field} for e in errors]
    texts: list[str] = []
    for e in errors:
        if str(e) not in texts:
            texts.append(str(e))
    aggregate = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    msg = f'{qualified_kind(group, kind)} "{name}" is invalid'
    if texts:
        msg += f": {aggregate}"
    return Invalid(msg, _details(group, kind, name, causes=causes))


def go_string_slice(values: list[str]) -> str:
    """Go's ``%#v`` of a ``[]string`` (used in a few apiserver messages)."""
    return "[]string{" + ", ".join(json.dumps(v) for v in values) + "}"


class TooLargeResourceVersion(StoreError):
    """504 ``Timeout``: a list or get asked for a revision the store has not reached."""

    code = 504
    reason = "Timeout"

    def __init__(self, requested: int, current: int) -> None:
        super().__init__(
            f"Too large resource version: {requested}, current: {current}",
            {
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1,
            },
        )


LIST_EXPIRED = "The resourceVersion for the provided list is too old."
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a "
    "new list without the continue parameter, or use the continue token in this response to retrieve "
    "the remainder of the results. Continuing with the provided token results in an inconsistent list "
    "- objects that were created, modified, or deleted between the time the first chunk was returned "
    "and now may show up in the list."
)
