"""``core/v1`` Pod and Node: schemas, defaults and essential validation.

Pod (``pkg/registry/core/pod/strategy.go``): on create the status is reset to
``{phase: Pending, qosClass}`` (``PrepareForCreate``), the spec gets the pod defaults of
``pkg/apis/core/v1/defaults.go`` (those of a pod template plus ``enableServiceLinks: true`` and
``priority: 0``); an update may change only the fields ``ValidatePodUpdate`` allows (images,
``activeDeadlineSeconds``, added tolerations), the status subresource only the status. Pods are
written by the local job runner (pykueue's kubelet and Job controller); users get, watch, describe
and delete them.

Node: cluster-scoped, name a DNS-1123 subdomain; ``status.capacity`` / ``allocatable`` quantities
and the ``Ready`` condition are written by whoever registers the node (the job runner for the
local machine).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pykueue.api.quantity import Quantity, QuantityError
from pykueue.api.validation import FieldError, forbidden, invalid, not_supported
from pykueue.apiserver.builtin import core, meta
from pykueue.apiserver.builtin.pods import (
    default_pod_template,
    mapping,
    sequence,
    validate_object_meta,
    validate_pod_spec,
)
from pykueue.apiserver.builtin.schema import (
    arr,
    boolean,
    define,
    free_object,
    integer,
    map_of,
    obj,
    ref,
    string,
)

POD = core.CORE + "Pod"
POD_STATUS = core.CORE + "PodStatus"
POD_CONDITION = core.CORE + "PodCondition"
CONTAINER_STATUS = core.CORE + "ContainerStatus"
NODE = core.CORE + "Node"
NODE_SPEC = core.CORE + "NodeSpec"
NODE_STATUS = core.CORE + "NodeStatus"
NODE_CONDITION = core.CORE + "NodeCondition"

POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
QOS_CLASSES = ("Guaranteed", "Burstable", "BestEffort")
_QUANTITY = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def _condition(description: str) -> dict[str, Any]:
    return obj(
        {
            "type": string("Type is the type of the condition."),
            "status": string("Status is the status of the condition. Can be True, False, Unknown."),
            "lastProbeTime": ref(meta.TIME, "Last time we probed the condition."),
            "lastHeartbeatTime": ref(meta.TIME, "Last time we got an update on a given condition."),
            "lastTransitionTime": ref(
                meta.TIME, "Last time the condition transitioned from one status to another."
            ),
            "reason": string("Unique, one-word, CamelCase reason for the condition's last transition."),
            "message": string("Human-readable message indicating details about last transition."),
        },
        description,
        required_fields=("type", "status"),
    )


def _define() -> None:
    define(POD_CONDITION, _condition("PodCondition contains details for the current condition of this pod."))
    define(
        CONTAINER_STATUS,
        obj(
            {
                "name": string("Name is a DNS_LABEL representing the unique name of the container."),
                "state": free_object("State holds details about the container's current condition."),
                "lastState": free_object("LastTerminationState holds the last termination state."),
                "ready": boolean(
                    "Ready specifies whether the container is currently passing its readiness check."
                ),
                "restartCount": integer(
                    "RestartCount holds the number of times the container has been restarted."
                ),
                "image": string("Image is the name of container image that the container is running."),
                "imageID": string("ImageID is the image ID of the container's image."),
                "containerID": string(
                    "ContainerID is the ID of the container in the format '<type>://<container_id>'."
                ),
                "started": boolean(
                    "Started indicates whether the container has finished its postStart lifecycle hook."
                ),
            },
            "ContainerStatus contains details for the current status of this container.",
            required_fields=("name", "ready", "restartCount", "image", "imageID"),
        ),
    )
    ip_list = arr(obj({"ip": string("IP is the IP address assigned.")}), list_type="atomic")
    define(
        POD_STATUS,
        obj(
            {
                "phase": string(
                    "The phase of a Pod is a simple, high-level summary of where the Pod is in its lifecycle."
                ),
                "conditions": arr(
                    ref(POD_CONDITION),
                    "Current service state of pod.",
                    list_type="map",
                    map_keys=("type",),
                    patch_strategy="merge",
                    patch_key="type",
                ),
                "message": string(
                    "A human readable message indicating details about why the pod is in this condition."
                ),
                "reason": string(
                    "A brief CamelCase message indicating details about why the pod is in this state."
                ),
                "nominatedNodeName": string(
                    "nominatedNodeName is set only when this pod preempts other pods on the node."
                ),
                "hostIP": string("hostIP holds the IP address of the host to which the pod is assigned."),
                "hostIPs": ip_list,
                "podIP": string("podIP address allocated to the pod."),
                "podIPs": ip_list,
                "startTime": ref(
                    meta.TIME, "RFC 3339 date and time at which the object was acknowledged by the Kubelet."
                ),
                "initContainerStatuses": arr(ref(CONTAINER_STATUS), list_type="atomic"),
                "containerStatuses": arr(
                    ref(CONTAINER_STATUS),
                    "The list has one entry per container in the manifest.",
                    list_type="atomic",
                ),
                "qosClass": string("The Quality of Service (QOS) classification assigned to the pod."),
            },
            "PodStatus represents information about the status of a pod.",
        ),
    )
    define(
        POD,
        obj(
            {
                "apiVersion": meta.api_version_field(),
                "kind": meta.kind_field(),
                "metadata": meta.metadata_field(),
                "spec": ref(core.POD_SPEC, "Specification of the desired behavior of the pod."),
                "status": ref(POD_STATUS, "Most recently observed status of the pod."),
            },
            "Pod is a collection of containers that can run on a host.",
        ),
        gvk=("", "v1", "Pod"),
    )
    define(NODE_CONDITION, _condition("NodeCondition contains condition information for a node."))
    define(
        NODE_SPEC,
        obj(
            {
                "podCIDR": string("PodCIDR represents the pod IP range assigned to the node."),
                "podCIDRs": arr(string(), list_type="set"),
                "providerID": string("ID of the node assigned by the cloud provider."),
                "unschedulable": boolean("Unschedulable controls node schedulability of new pods."),
                "taints": arr(
                    obj(
                        {
                            "key": string("Required. The taint key to be applied to a node."),
                            "value": string("The taint value corresponding to the taint key."),
                            "effect": string("Required. The effect of the taint on pods."),
                            "timeAdded": ref(meta.TIME),
                        },
                        required_fields=("key", "effect"),
                    ),
                    "If specified, the node's taints.",
                    list_type="atomic",
                ),
            },
            "NodeSpec describes the attributes that a node is created with.",
        ),
    )
    define(
        NODE_STATUS,
        obj(
            {
                "capacity": map_of(dict(_QUANTITY), "Capacity represents the total resources of a node."),
                "allocatable": map_of(
                    dict(_QUANTITY),
                    "Allocatable represents the resources of a node that are available for scheduling.",
                ),
                "phase": string("NodePhase is the recently observed lifecycle phase of the node."),
                "conditions": arr(
                    ref(NODE_CONDITION),
                    "Conditions is an array of current observed node conditions.",
                    list_type="map",
                    map_keys=("type",),
                    patch_strategy="merge",
                    patch_key="type",
                ),
                "addresses": arr(
                    obj(
                        {"type": string("Node address type."), "address": string("The node address.")},
                        required_fields=("type", "address"),
                    ),
                    "List of addresses reachable to the node.",
                    list_type="map",
                    map_keys=("type",),
                ),
                "nodeInfo": obj(
                    {
                        name: string()
                        for name in (
                            "machineID",
                            "systemUUID",
                            "bootID",
                            "kernelVersion",
                            "osImage",
                            "containerRuntimeVersion",
                            "kubeletVersion",
                            "kubeProxyVersion",
                            "operatingSystem",
                            "architecture",
                        )
                    },
                    "Set of ids/uuids to uniquely identify the node.",
                ),
                "daemonEndpoints": free_object("Endpoints of daemons running on the Node."),
            },
            "NodeStatus is information about the current status of a node.",
        ),
    )
    define(
        NODE,
        obj(
            {
                "apiVersion": meta.api_version_field(),
                "kind": meta.kind_field(),
                "metadata": meta.metadata_field(),
                "spec": ref(NODE_SPEC, "Spec defines the behavior of a node."),
                "status": ref(NODE_STATUS, "Most recently observed status of the node."),
            },
            "Node is a worker node in Kubernetes.",
        ),
        gvk=("", "v1", "Node"),
    )


_define()


# --- Pod -------------------------------------------------------------------------------------------


def default_pod(pod: dict[str, Any]) -> None:
    """Pod defaults: the pod-template ones plus ``enableServiceLinks``, ``priority`` and requests
    defaulted to limits."""
    default_pod_template(pod)
    spec = pod.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("priority", 0)
        for field in ("containers", "initContainers"):
            for container in sequence(spec.get(field)):
                _default_requests_to_limits(container)


def _default_requests_to_limits(container: Any) -> None:
    """``SetDefaults_Pod`` (a Pod's, not a template's): a limit without a request is also the request."""
    resources = mapping(mapping(container).get("resources"))
    limits = resources.get("limits")
    if not isinstance(limits, dict) or not limits:
        return
    requests = resources.get("requests")
    requests = dict(requests) if isinstance(requests, dict) else {}
    for name, value in limits.items():
        requests.setdefault(name, value)
    resources["requests"] = requests


def qos_class(spec: Mapping[str, Any]) -> str:
    """``GetPodQOS``: Guaranteed when every container has equal cpu and memory requests and limits,
    BestEffort when none has any, else Burstable."""
    containers = [mapping(c) for c in sequence(spec.get("containers")) + sequence(spec.get("initContainers"))]
    any_set = False
    guaranteed = True
    for container in containers:
        resources = mapping(container.get("resources"))
        requests = mapping(resources.get("requests"))
        limits = mapping(resources.get("limits"))
        for name in ("cpu", "memory"):
            if name in requests or name in limits:
                any_set = True
            limit = limits.get(name)
            request = requests.get(name, limit)
            if limit is None or _quantity(request) != _quantity(limit):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _quantity(value: Any) -> int | None:
    try:
        return int(Quantity.parse(value).value * 1000)
    except (QuantityError, TypeError, ValueError):
        return None


def prepare_pod_for_create(pod: dict[str, Any]) -> None:
    """``podStrategy.PrepareForCreate``: a new pod is Pending with its QoS class, whatever status was sent."""
    pod["status"] = {"phase": "Pending", "qosClass": qos_class(mapping(pod.get("spec")))}


def validate_pod(pod: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """Metadata, ``ValidatePodSpec`` essentials, the phase, and the update rules of the spec."""
    errs = validate_object_meta(pod, namespaced=True)
    spec = mapping(pod.get("spec"))
    errs += validate_pod_spec(spec, "spec")
    phase = mapping(pod.get("status")).get("phase")
    if phase is not None and phase not in POD_PHASES:
        errs.append(not_supported("status.phase", phase, POD_PHASES))
    if old is not None:
        errs += _validate_pod_update(spec, mapping(old.get("spec")))
    return errs


def _validate_pod_update(spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> list[FieldError]:
    """``ValidatePodUpdate``: only images, ``activeDeadlineSeconds`` and added tolerations may change."""
    if _mutable_stripped(spec, old_spec) == _mutable_stripped(old_spec, old_spec):
        old_tolerations = sequence(old_spec.get("tolerations"))
        if sequence(spec.get("tolerations"))[: len(old_tolerations)] == old_tolerations:
            return []
    return [forbidden("spec", POD_UPDATE_FORBIDDEN)]


def _mutable_stripped(spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(spec))
    for field in ("containers", "initContainers"):
        for container in sequence(out.get(field)):
            if isinstance(container, dict):
                container.pop("image", None)
    out.pop("activeDeadlineSeconds", None)
    out.pop("tolerations", None)
    return out


def pod_field(name: str) -> Any:
    """A field-selector getter of a pod (``spec.nodeName``, ``status.phase``...)."""
    section, _, key = name.partition(".")

    def get(pod: Mapping[str, Any]) -> str:
        value = mapping(pod.get(section)).get(key)
        if isinstance(value, bool):
            return "true" if value else "false"
        return "" if value is None else str(value)

    return get


POD_SELECTABLE = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
"""Pod field selectors beyond name and namespace (``pod.ToSelectableFields``)."""


# --- Node ------------------------------------------------------------------------------------------


def validate_node(node: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """Metadata and the resource quantities of ``status.capacity`` / ``allocatable``."""
    errs = validate_object_meta(node, namespaced=False)
    status = mapping(node.get("status"))
    for section in ("capacity", "allocatable"):
        for name, value in mapping(status.get(section)).items():
            if _quantity(value) is None:
                errs.append(invalid(f"status.{section}[{name}]", value, "must be a valid quantity"))
    return errs
