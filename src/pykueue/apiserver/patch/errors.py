"""Errors raised by the patch engine, carrying the ``Status`` the real kube-apiserver returns.

Mapping of failures to HTTP codes (mirrors ``k8s.io/apiserver/pkg/endpoints/handlers/patch.go``):

* JSON patch (RFC 6902) documents that are not a list of operations: **400 BadRequest**.
* JSON patch operations that cannot be applied (``test`` failures, missing paths, bad indexes):
  **422 Invalid** with the generic message ``the server rejected our request due to an error in
  our request`` (the real server builds this with ``NewGenericServerResponse`` and drops the
  detail; :attr:`PatchError.detail` keeps it for logs and tests).
* More than 10000 JSON patch operations: **413 RequestEntityTooLarge**.
* Strategic merge patch format errors (``$retainKeys``, ``$setElementOrder``,
  ``$deleteFromPrimitiveList`` of the wrong shape): **400 BadRequest**; lists of lists:
  **422 Invalid**; every other strategic-merge failure (missing merge key, unknown ``$patch``
  directive, ...) is a plain Go error in the real server and therefore **500** with an empty
  reason (``StatusReasonUnknown``) and the raw error text as message.
* Server-side apply conflicts: **409 Conflict** (:class:`ApplyConflict`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pykueue.kube.status import StatusError

INVALID_MESSAGE = "the server rejected our request due to an error in our request"


class PatchError(StatusError):
    """A patch failure: a :class:`StatusError` that keeps the engine's own ``detail`` for logs and tests.

    ``causes`` become the Status' ``details.causes``; ``str()`` is the detail (the message the
    client sees may be the generic one, see :func:`invalid`).
    """

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        detail: str = "",
        causes: Sequence[Mapping[str, str]] = (),
    ) -> None:
        self.causes: list[dict[str, str]] = [dict(c) for c in causes]
        super().__init__(code, reason, message, {"causes": self.causes} if self.causes else None)
        self.detail = detail or message

    def __str__(self) -> str:
        return self.detail


def invalid(detail: str) -> PatchError:
    """422 ``Invalid`` as ``NewGenericServerResponse(422, ...)`` builds it (detail not exposed)."""
    return PatchError(422, "Invalid", INVALID_MESSAGE, detail=detail)


def bad_request(message: str) -> PatchError:
    """400 ``BadRequest`` with ``message``."""
    return PatchError(400, "BadRequest", message)


def internal(message: str) -> PatchError:
    """500 with an empty reason: how the server reports a plain (non-Status) Go error."""
    return PatchError(500, "", message)


class ApplyConflict(PatchError):
    """Server-side apply conflicts (409 ``Conflict``).

    ``conflicts`` lists ``(manager, field path)`` pairs, e.g. ``("kubectl", ".spec.replicas")``;
    ``message`` and ``causes`` use the real server's wording (``Apply failed with 1 conflict:
    conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas``).
    """

    def __init__(
        self, conflicts: Sequence[tuple[str, str]], message: str, causes: Sequence[Mapping[str, str]]
    ) -> None:
        super().__init__(409, "Conflict", message, causes=causes)
        self.conflicts: list[tuple[str, str]] = list(conflicts)
