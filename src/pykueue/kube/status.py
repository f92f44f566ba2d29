"""The one Kubernetes ``Status`` error (``k8s.io/apimachinery/pkg/api/errors.StatusError``).

Raised by the store, rendered by the apiserver, parsed back by the client: every layer that speaks
the API's failures uses :class:`StatusError` and its one renderer :meth:`StatusError.status`, so
code, reason, message and details travel unchanged from where an error is raised to the wire.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class StatusError(Exception):
    """An API failure: the ``code``, ``reason``, ``message`` and ``details`` of a ``meta/v1`` ``Status``.

    ``metadata`` is the Status' list metadata (``continue`` of an Expired list). An empty ``reason``
    is ``StatusReasonUnknown`` and is omitted from the body, as the real server omits it.
    """

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.warnings: list[str] = []
        """The request's warnings: kube-apiserver sends its ``Warning`` headers with a failure too."""

    def status(self) -> dict[str, Any]:
        """The ``Status`` body (``status: Failure``), keys in ``metav1.Status`` field order."""
        return failure_status(self.code, self.reason, self.message, self.details, self.metadata)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code}, {self.reason!r}, {self.message!r})"


def failure_status(
    code: int,
    reason: str,
    message: str,
    details: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``Status`` object for a failed request."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": dict(metadata or {}),
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
