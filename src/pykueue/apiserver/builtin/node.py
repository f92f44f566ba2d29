"""``node.k8s.io/v1`` RuntimeClass: schema and validation.

Validation is ``ValidateRuntimeClass`` / ``ValidateRuntimeClassUpdate``
(``pkg/apis/node/validation``): a DNS-1123 label ``handler`` (immutable), ``overhead.podFixed``
checked as container resource limits (paths ``overhead.limits[...]``, as upstream reuses
``ValidateContainerResourceRequirements``), ``scheduling.nodeSelector`` as labels and
``scheduling.tolerations`` as a pod's tolerations, without duplicates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pykueue.api.validation import (
    FIELD_IMMUTABLE_MSG,
    FieldError,
    duplicate,
    idx,
    invalid,
    validate_labels,
)
from pykueue.apiserver.builtin import meta
from pykueue.apiserver.builtin.core import TOLERATION
from pykueue.apiserver.builtin.pods import (
    go_toleration,
    mapping,
    sequence,
    validate_object_meta,
    validate_tolerations,
)
from pykueue.apiserver.builtin.resourcenames import validate_limits
from pykueue.apiserver.builtin.schema import arr, define, map_of, obj, ref, str_map, string
from pykueue.kube.validation import is_dns1123_label

GROUP = "node.k8s.io"
RUNTIME_CLASS = "io.k8s.api.node.v1.RuntimeClass"
OVERHEAD = "io.k8s.api.node.v1.Overhead"
SCHEDULING = "io.k8s.api.node.v1.Scheduling"

define(
    OVERHEAD,
    obj(
        {
            "podFixed": map_of(
                ref(meta.QUANTITY),
                "podFixed represents the fixed resource overhead associated with running a pod.",
            ),
        },
        "Overhead structure represents the resource overhead associated with running a pod.",
    ),
)
define(
    SCHEDULING,
    obj(
        {
            "nodeSelector": str_map(
                "nodeSelector lists labels that must be present on nodes that support this RuntimeClass. "
                "Pods using this RuntimeClass can only be scheduled to a node matched by this selector. The "
                "RuntimeClass nodeSelector is merged with a pod's existing nodeSelector. Any conflicts will "
                "cause the pod to be rejected in admission.",
                map_type="atomic",
            ),
            "tolerations": arr(
                ref(TOLERATION),
                "tolerations are appended (excluding duplicates) to pods running with this RuntimeClass "
                "during admission, effectively unioning the set of nodes tolerated by the pod and the "
                "RuntimeClass.",
                list_type="atomic",
            ),
        },
        "Scheduling specifies the scheduling constraints for nodes supporting a RuntimeClass.",
    ),
)
define(
    RUNTIME_CLASS,
    obj(
        {
            "apiVersion": meta.api_version_field(),
            "kind": meta.kind_field(),
            "metadata": meta.metadata_field(),
            "handler": string(
                "handler specifies the underlying runtime and configuration that the CRI implementation will "
                "use to handle pods of this class. The possible values are specific to the node & CRI "
                "configuration.  It is assumed that all handlers are available on every node, and handlers of "
                'the same name are equivalent on every node. For example, a handler called "runc" might '
                "specify that the runc OCI runtime (using native Linux containers) will be used to run the "
                "containers in a pod. The Handler must be lowercase, conform to the DNS Label (RFC 1123) "
                "requirements, and is immutable."
            ),
            "overhead": ref(
                OVERHEAD,
                "overhead represents the resource overhead associated with running a pod for a given "
                "RuntimeClass. For more details, see\n "
                "https://kubernetes.io/docs/concepts/scheduling-eviction/pod-overhead/",
            ),
            "scheduling": ref(
                SCHEDULING,
                "scheduling holds the scheduling constraints to ensure that pods running with this "
                "RuntimeClass are scheduled to nodes that support it. If scheduling is nil, this RuntimeClass "
                "is assumed to be supported by all nodes.",
            ),
        },
        "RuntimeClass defines a class of container runtime supported in the cluster. The RuntimeClass is "
        "used to determine which container runtime is used to run all containers in a pod. RuntimeClasses "
        "are manually defined by a user or cluster provisioner, and referenced in the PodSpec. The Kubelet "
        "is responsible for resolving the RuntimeClassName reference before running the pod.  For more "
        "details, see https://kubernetes.io/docs/concepts/containers/runtime-class/",
        required_fields=("handler",),
    ),
    gvk=(GROUP, "v1", "RuntimeClass"),
)


def validate_runtime_class(rc: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """``ValidateRuntimeClass``, plus the immutable ``handler`` of ``ValidateRuntimeClassUpdate``."""
    errs = validate_object_meta(rc, namespaced=False)
    handler = rc.get("handler") or ""
    errs += [invalid("handler", handler, msg) for msg in is_dns1123_label(str(handler))]
    overhead = rc.get("overhead")
    if isinstance(overhead, dict):
        errs += validate_limits(mapping(overhead.get("podFixed")), "overhead")
    scheduling = rc.get("scheduling")
    if isinstance(scheduling, dict):
        errs += _validate_scheduling(scheduling, "scheduling")
    if old is not None and handler != (old.get("handler") or ""):
        errs.append(invalid("handler", handler, FIELD_IMMUTABLE_MSG))
    return errs


def _validate_scheduling(scheduling: Mapping[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    selector = scheduling.get("nodeSelector")
    if isinstance(selector, dict):
        errs += validate_labels({str(k): str(v) for k, v in selector.items()}, f"{path}.nodeSelector")
    tolerations = [mapping(t) for t in sequence(scheduling.get("tolerations"))]
    errs += validate_tolerations(tolerations, f"{path}.tolerations")
    seen: set[tuple[str, str, str, str]] = set()
    for i, toleration in enumerate(tolerations):
        list_key = (
            str(toleration.get("key") or ""),
            str(toleration.get("operator") or ""),
            str(toleration.get("value") or ""),
            str(toleration.get("effect") or ""),
        )
        if list_key in seen:
            errs.append(duplicate(idx(f"{path}.tolerations", i), go_toleration(toleration)))
        seen.add(list_key)
    return errs
