"""``autoscaling.x-k8s.io`` ProvisioningRequest (the cluster-autoscaler CRD), v1 and v1beta1.

Both versions share one structural schema; ``spec.provisioningClassName``, ``spec.podSets`` and
``spec.parameters`` are immutable (CEL ``self == oldSelf``, message ``Value is immutable``).
"""

from __future__ import annotations

from typing import Any

from pykueue.api.validation import DNS_SUBDOMAIN_PATTERN, FieldError, cel
from pykueue.apiserver.builtin import meta
from pykueue.apiserver.builtin.pods import mapping
from pykueue.apiserver.builtin.schema import Schema, arr, integer, map_of, obj, str_map, string

GROUP = "autoscaling.x-k8s.io"
IMMUTABLE_MSG = "Value is immutable"
IMMUTABLE_RULE = [{"message": IMMUTABLE_MSG, "rule": "self == oldSelf"}]
CHECK_CAPACITY_CLASS = "check-capacity.autoscaling.x-k8s.io"
BEST_EFFORT_ATOMIC_CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
_IMMUTABLE_FIELDS = (("provisioningClassName", "string"), ("podSets", "array"), ("parameters", "object"))


def provisioning_request_schema() -> Schema:
    """The structural schema of a ProvisioningRequest (CRD form, no references)."""
    pod_set = obj(
        {
            "podTemplateRef": obj(
                {
                    "name": string(
                        "Name of the referenced PodTemplate (same namespace).",
                        max_length=253,
                        pattern=DNS_SUBDOMAIN_PATTERN,
                    )
                },
                "PodTemplateRef is a reference to a PodTemplate object that is representing pods that "
                "will consume this reservation (must be within the same namespace).",
                required_fields=("name",),
            ),
            "count": integer(
                "Count contains the number of pods that will be created with a given template.", minimum=1
            ),
        },
        "PodSet represents one group of pods for Provisioning Request to provision capacity.",
        required_fields=("count", "podTemplateRef"),
    )
    spec = obj(
        {
            "provisioningClassName": string(
                "ProvisioningClassName describes the different modes of provisioning the resources "
                f"(e.g. {CHECK_CAPACITY_CLASS}, {BEST_EFFORT_ATOMIC_CLASS}).",
                max_length=253,
                pattern=DNS_SUBDOMAIN_PATTERN,
                validations=IMMUTABLE_RULE,
            ),
            "podSets": arr(
                pod_set,
                "PodSets lists groups of pods for which we would like to provision resources.",
                min_items=1,
                max_items=32,
                validations=IMMUTABLE_RULE,
            ),
            "parameters": map_of(
                string("Parameter is limited to 255 characters.", max_length=255),
                "Parameters contains all other parameters classes may require.",
                max_properties=100,
                validations=IMMUTABLE_RULE,
            ),
        },
        "Spec contains specification of the ProvisioningRequest object. The spec is immutable.",
        required_fields=("podSets", "provisioningClassName"),
    )
    status = obj(
        {
            "conditions": arr(
                meta.condition_schema(),
                "Conditions represent the observations of a Provisioning Request's current state.",
                list_type="map",
                map_keys=("type",),
            ),
            "provisioningClassDetails": str_map(
                "ProvisioningClassDetails contains all other values custom provisioning classes may want to pass to end users.",
                max_properties=64,
            ),
        },
        "Status of the ProvisioningRequest. CA constantly reconciles this field.",
    )
    status["properties"]["provisioningClassDetails"]["additionalProperties"]["maxLength"] = 32768
    return obj(
        {
            "apiVersion": meta.api_version_field(),
            "kind": meta.kind_field(),
            "metadata": obj(),
            "spec": spec,
            "status": status,
        },
        "ProvisioningRequest is a way to express additional capacity that we would like to provision "
        "in the cluster. Cluster Autoscaler can use this information in its calculations and signal "
        "if the capacity is available in the cluster or actively add capacity if needed.",
        required_fields=("spec",),
    )


def validate_provisioning_request_rules(pr: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """The CEL immutability rules (the structural checks run generically)."""
    if old is None:
        return []
    spec, old_spec = mapping(pr.get("spec")), mapping(old.get("spec"))
    return [
        cel(f"spec.{field}", type_name, IMMUTABLE_MSG)
        for field, type_name in _IMMUTABLE_FIELDS
        if field in old_spec and spec.get(field) != old_spec.get(field)
    ]
