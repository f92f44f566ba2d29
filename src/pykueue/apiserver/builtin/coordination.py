"""``coordination.k8s.io/v1`` Lease: schema and validation (``ValidateLease``)."""

from __future__ import annotations

from typing import Any

from pykueue.api.validation import FieldError, invalid
from pykueue.apiserver.builtin import meta
from pykueue.apiserver.builtin.pods import mapping, validate_object_meta
from pykueue.apiserver.builtin.schema import define, integer, obj, ref, string

LEASE = "io.k8s.api.coordination.v1.Lease"
LEASE_SPEC = "io.k8s.api.coordination.v1.LeaseSpec"

define(
    LEASE_SPEC,
    obj(
        {
            "holderIdentity": string(
                "holderIdentity contains the identity of the holder of a current lease."
            ),
            "leaseDurationSeconds": integer(
                "leaseDurationSeconds is a duration that candidates for a lease need to wait to force acquire it."
            ),
            "acquireTime": ref(meta.MICRO_TIME, "acquireTime is a time when the current lease was acquired."),
            "renewTime": ref(
                meta.MICRO_TIME,
                "renewTime is a time when the current holder of a lease has last updated the lease.",
            ),
            "leaseTransitions": integer(
                "leaseTransitions is the number of transitions of a lease between holders."
            ),
            "strategy": string(
                "Strategy indicates the strategy for picking the leader for coordinated leader election."
            ),
            "preferredHolder": string(
                "PreferredHolder signals to a lease holder that the lease has a more optimal holder."
            ),
        },
        "LeaseSpec is a specification of a Lease.",
    ),
)
define(
    LEASE,
    obj(
        {
            "apiVersion": meta.api_version_field(),
            "kind": meta.kind_field(),
            "metadata": meta.metadata_field(),
            "spec": ref(LEASE_SPEC, "spec contains the specification of the Lease.", default={}),
        },
        "Lease defines a lease concept.",
    ),
    gvk=("coordination.k8s.io", "v1", "Lease"),
)


def validate_lease(lease: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """Positive duration, non-negative transitions, preferred holder only with a strategy."""
    errs = validate_object_meta(lease, namespaced=True)
    spec = mapping(lease.get("spec"))
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        errs.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        errs.append(invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    if spec.get("preferredHolder") and not spec.get("strategy"):
        errs.append(
            invalid(
                "spec.preferredHolder",
                spec["preferredHolder"],
                "may only be specified if `strategy` is defined",
            )
        )
    return errs
