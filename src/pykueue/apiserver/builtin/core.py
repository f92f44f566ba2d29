"""Schemas of the ``core/v1`` types pykueue serves or embeds.

Kinds: Namespace, Event, PodTemplate. Embedded types: PodTemplateSpec / PodSpec / Container and
what they use (affinity, tolerations, volumes, probes, ...). Fields that Kubernetes merges by key
carry the same ``x-kubernetes-patch-strategy`` / ``x-kubernetes-patch-merge-key`` /
``x-kubernetes-list-type`` / ``x-kubernetes-list-map-keys`` metadata as the real API
(containers/initContainers/env/volumes by ``name``, ports by ``containerPort`` (+``protocol``),
volumeMounts by ``mountPath``). The PodSpec is complete (every field and volume source of
Kubernetes v1.35): the Workload CRD embeds it (``pykueue.apiserver.crdgen``), and
tests/apiserver/test_crd_parity.py compares that copy keyword by keyword with upstream's.
"""

from __future__ import annotations

from pykueue.apiserver.builtin import meta
from pykueue.apiserver.builtin.schema import (
    Schema,
    arr,
    boolean,
    define,
    integer,
    map_of,
    obj,
    ref,
    str_list,
    str_map,
    string,
)

CORE = "io.k8s.api.core.v1."
POD_TEMPLATE_SPEC = CORE + "PodTemplateSpec"
POD_SPEC = CORE + "PodSpec"
CONTAINER = CORE + "Container"
EPHEMERAL_CONTAINER = CORE + "EphemeralContainer"
NAMESPACE = CORE + "Namespace"
EVENT = CORE + "Event"
POD_TEMPLATE = CORE + "PodTemplate"
OBJECT_REFERENCE = CORE + "ObjectReference"
EVENT_SOURCE = CORE + "EventSource"
TOLERATION = CORE + "Toleration"
AFFINITY = CORE + "Affinity"

RESTART_POLICIES = ("Always", "OnFailure", "Never")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "PreferNoSchedule")
PROTOCOLS = ("SCTP", "TCP", "UDP")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")


def _c(name: str) -> str:
    return CORE + name


def _quantities(description: str) -> Schema:
    return map_of(ref(meta.QUANTITY), description)


def _local_ref(description: str) -> Schema:
    return obj({"name": string("Name of the referent.", default="")}, description, map_type="atomic")


# --- scheduling constraints -------------------------------------------------------------------------


def _define_scheduling() -> None:
    define(
        _c("NodeSelectorRequirement"),
        obj(
            {
                "key": string("The label key that the selector applies to."),
                "operator": string(
                    "Represents a key's relationship to a set of values: In, NotIn, Exists, DoesNotExist, Gt, Lt.",
                    enum=("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"),
                ),
                "values": str_list("An array of string values."),
            },
            "A node selector requirement: a key, an operator and values.",
            required_fields=("key", "operator"),
        ),
    )
    define(
        _c("NodeSelectorTerm"),
        obj(
            {
                "matchExpressions": arr(
                    ref(_c("NodeSelectorRequirement")),
                    "Node selector requirements by labels.",
                    list_type="atomic",
                ),
                "matchFields": arr(
                    ref(_c("NodeSelectorRequirement")),
                    "Node selector requirements by fields.",
                    list_type="atomic",
                ),
            },
            "A null or empty node selector term matches no objects; the requirements are ANDed.",
            map_type="atomic",
        ),
    )
    define(
        _c("NodeSelector"),
        obj(
            {
                "nodeSelectorTerms": arr(
                    ref(_c("NodeSelectorTerm")),
                    "Required. A list of node selector terms (ORed).",
                    list_type="atomic",
                )
            },
            "A node selector represents the union of the results of one or more label queries.",
            required_fields=("nodeSelectorTerms",),
            map_type="atomic",
        ),
    )
    define(
        _c("PreferredSchedulingTerm"),
        obj(
            {
                "preference": ref(
                    _c("NodeSelectorTerm"), "A node selector term, associated with the weight."
                ),
                "weight": integer("Weight associated with matching the term, in the range 1-100."),
            },
            "A preferred scheduling term with its weight.",
            required_fields=("weight", "preference"),
        ),
    )
    define(
        _c("NodeAffinity"),
        obj(
            {
                "requiredDuringSchedulingIgnoredDuringExecution": ref(
                    _c("NodeSelector"), "Hard node affinity requirements."
                ),
                "preferredDuringSchedulingIgnoredDuringExecution": arr(
                    ref(_c("PreferredSchedulingTerm")), "Soft node affinity preferences.", list_type="atomic"
                ),
            },
            "Node affinity is a group of node affinity scheduling rules.",
        ),
    )
    _define_pod_affinity()
    define(
        AFFINITY,
        obj(
            {
                "nodeAffinity": ref(
                    _c("NodeAffinity"), "Describes node affinity scheduling rules for the pod."
                ),
                "podAffinity": ref(_c("PodAffinity"), "Describes pod affinity scheduling rules."),
                "podAntiAffinity": ref(
                    _c("PodAntiAffinity"), "Describes pod anti-affinity scheduling rules."
                ),
            },
            "Affinity is a group of affinity scheduling rules.",
        ),
    )
    define(
        TOLERATION,
        obj(
            {
                "key": string("Key is the taint key that the toleration applies to."),
                "operator": string(
                    "Operator represents a key's relationship to the value: Exists or Equal (default).",
                    enum=TOLERATION_OPERATORS,
                ),
                "value": string("Value is the taint value the toleration matches to."),
                "effect": string("Effect indicates the taint effect to match.", enum=TAINT_EFFECTS),
                "tolerationSeconds": integer(
                    "The period of time the toleration (of effect NoExecute) tolerates the taint.",
                    fmt="int64",
                ),
            },
            "The pod this Toleration is attached to tolerates any taint that matches the triple "
            "<key,value,effect> using the matching operator.",
        ),
    )
    define(
        _c("TopologySpreadConstraint"),
        obj(
            {
                "maxSkew": integer("MaxSkew describes the degree to which pods may be unevenly distributed."),
                "topologyKey": string("TopologyKey is the key of node labels."),
                "whenUnsatisfiable": string(
                    "How to deal with a pod if it doesn't satisfy the spread constraint.",
                    enum=("DoNotSchedule", "ScheduleAnyway"),
                ),
                "labelSelector": ref(meta.LABEL_SELECTOR, "Finds matching pods."),
                "minDomains": integer("MinDomains indicates a minimum number of eligible domains."),
                "nodeAffinityPolicy": string(
                    "How to treat the pod's nodeAffinity/nodeSelector.", enum=("Honor", "Ignore")
                ),
                "nodeTaintsPolicy": string("How to treat node taints.", enum=("Honor", "Ignore")),
                "matchLabelKeys": str_list(
                    "Pod label keys to select the pods over which spreading is calculated."
                ),
            },
            "TopologySpreadConstraint specifies how to spread matching pods among the given topology.",
            required_fields=("maxSkew", "topologyKey", "whenUnsatisfiable"),
        ),
    )


def _define_pod_affinity() -> None:
    define(
        _c("PodAffinityTerm"),
        obj(
            {
                "labelSelector": ref(meta.LABEL_SELECTOR, "A label query over a set of resources (pods)."),
                "namespaceSelector": ref(meta.LABEL_SELECTOR, "A label query over the set of namespaces."),
                "namespaces": str_list("A static list of namespace names that the term applies to."),
                "topologyKey": string("The topology key of co-located pods."),
                "matchLabelKeys": str_list("Pod label keys merged into labelSelector (In)."),
                "mismatchLabelKeys": str_list("Pod label keys merged into labelSelector (NotIn)."),
            },
            "Defines a set of pods that this pod should be co-located (affinity) or not (anti-affinity) with.",
            required_fields=("topologyKey",),
        ),
    )
    define(
        _c("WeightedPodAffinityTerm"),
        obj(
            {
                "weight": integer("weight associated with matching the term, in the range 1-100."),
                "podAffinityTerm": ref(_c("PodAffinityTerm"), "Required. A pod affinity term."),
            },
            "The weights of all of the matched WeightedPodAffinityTerm fields are added per-node.",
            required_fields=("weight", "podAffinityTerm"),
        ),
    )
    for name, doc in (("PodAffinity", "Pod affinity"), ("PodAntiAffinity", "Pod anti-affinity")):
        define(
            _c(name),
            obj(
                {
                    "requiredDuringSchedulingIgnoredDuringExecution": arr(
                        ref(_c("PodAffinityTerm")), "Hard requirements.", list_type="atomic"
                    ),
                    "preferredDuringSchedulingIgnoredDuringExecution": arr(
                        ref(_c("WeightedPodAffinityTerm")), "Soft preferences.", list_type="atomic"
                    ),
                },
                f"{doc} is a group of inter pod affinity scheduling rules.",
            ),
        )


# --- containers ------------------------------------------------------------------------------------


def _define_env() -> None:
    key_ref = obj(
        {
            "key": string("The key to select."),
            "name": string("Name of the referent.", default=""),
            "optional": boolean("Specify whether the object or its key must be defined."),
        },
        required_fields=("key",),
        map_type="atomic",
    )
    define(
        _c("EnvVarSource"),
        obj(
            {
                "fieldRef": obj(
                    {
                        "apiVersion": string("Version of the schema the FieldPath is written in terms of."),
                        "fieldPath": string("Path of the field to select in the specified API version."),
                    },
                    "Selects a field of the pod.",
                    required_fields=("fieldPath",),
                    map_type="atomic",
                ),
                "resourceFieldRef": obj(
                    {
                        "containerName": string(
                            "Container name: required for volumes, optional for env vars."
                        ),
                        "divisor": ref(
                            meta.QUANTITY, "Specifies the output format of the exposed resources."
                        ),
                        "resource": string("Required: resource to select."),
                    },
                    "Selects a resource of the container.",
                    required_fields=("resource",),
                    map_type="atomic",
                ),
                "configMapKeyRef": {**key_ref, "description": "Selects a key of a ConfigMap."},
                "fileKeyRef": obj(
                    {
                        "key": string("The key within the env file."),
                        "optional": boolean(
                            "Whether the file or its key must exist; when true a missing one leaves the "
                            "variable unset.",
                            default=False,
                        ),
                        "path": string("The path within the volume from which to select the file."),
                        "volumeName": string("The name of the volume mount containing the env file."),
                    },
                    "FileKeyRef selects a key of the env file.",
                    required_fields=("key", "path", "volumeName"),
                    map_type="atomic",
                ),
                "secretKeyRef": {
                    **key_ref,
                    "description": "Selects a key of a secret in the pod's namespace.",
                },
            },
            "EnvVarSource represents a source for the value of an EnvVar.",
        ),
    )
    define(
        _c("EnvVar"),
        obj(
            {
                "name": string("Name of the environment variable."),
                "value": string(
                    "Variable references $(VAR_NAME) are expanded using the previously defined variables."
                ),
                "valueFrom": ref(_c("EnvVarSource"), "Source for the environment variable's value."),
            },
            "EnvVar represents an environment variable present in a Container.",
            required_fields=("name",),
        ),
    )
    source_ref = obj(
        {
            "name": string("Name of the referent.", default=""),
            "optional": boolean("Specify whether it must be defined."),
        },
        map_type="atomic",
    )
    define(
        _c("EnvFromSource"),
        obj(
            {
                "prefix": string("An optional identifier to prepend to each key."),
                "configMapRef": {**source_ref, "description": "The ConfigMap to select from."},
                "secretRef": {**source_ref, "description": "The Secret to select from."},
            },
            "EnvFromSource represents the source of a set of ConfigMaps or Secrets.",
        ),
    )


def _define_probes() -> None:
    define(
        _c("HTTPGetAction"),
        obj(
            {
                "path": string("Path to access on the HTTP server."),
                "port": ref(
                    meta.INT_OR_STRING_NAME, "Name or number of the port to access on the container."
                ),
                "host": string("Host name to connect to, defaults to the pod IP."),
                "scheme": string("Scheme to use for connecting to the host.", enum=("HTTP", "HTTPS")),
                "httpHeaders": arr(
                    obj(
                        {
                            "name": string("The header field name."),
                            "value": string("The header field value."),
                        },
                        required_fields=("name", "value"),
                    ),
                    "Custom headers to set in the request.",
                    list_type="atomic",
                ),
            },
            "HTTPGetAction describes an action based on HTTP Get requests.",
            required_fields=("port",),
        ),
    )
    exec_action = obj(
        {"command": str_list("Command line to execute inside the container.")},
        "Exec specifies a command to execute.",
    )
    tcp = obj(
        {
            "port": ref(meta.INT_OR_STRING_NAME, "Number or name of the port to access on the container."),
            "host": string("Optional: Host name to connect to, defaults to the pod IP."),
        },
        "TCPSocket specifies a connection to a TCP port.",
        required_fields=("port",),
    )
    define(
        _c("Probe"),
        obj(
            {
                "exec": exec_action,
                "httpGet": ref(_c("HTTPGetAction"), "HTTPGet specifies an HTTP GET request to perform."),
                "tcpSocket": tcp,
                "grpc": obj(
                    {
                        "port": integer("Port number of the gRPC service."),
                        "service": string("Service name (gRPC Health Checking Protocol).", default=""),
                    },
                    "GRPC specifies a GRPC HealthCheckRequest.",
                    required_fields=("port",),
                ),
                "initialDelaySeconds": integer(
                    "Seconds after the container has started before probes are initiated."
                ),
                "timeoutSeconds": integer("Seconds after which the probe times out."),
                "periodSeconds": integer("How often (in seconds) to perform the probe."),
                "successThreshold": integer(
                    "Minimum consecutive successes for the probe to be considered successful."
                ),
                "failureThreshold": integer(
                    "Minimum consecutive failures for the probe to be considered failed."
                ),
                "terminationGracePeriodSeconds": integer(
                    "Optional duration in seconds the pod needs to terminate gracefully.", fmt="int64"
                ),
            },
            "Probe describes a health check to be performed against a container.",
        ),
    )
    handler = obj(
        {
            "exec": exec_action,
            "httpGet": ref(_c("HTTPGetAction"), "HTTPGet specifies an HTTP GET request to perform."),
            "tcpSocket": tcp,
            "sleep": obj(
                {"seconds": integer("Seconds is the number of seconds to sleep.", fmt="int64")},
                "Sleep represents a duration that the container should sleep.",
                required_fields=("seconds",),
            ),
        },
        "LifecycleHandler defines a specific action that should be taken in a lifecycle hook.",
    )
    define(_c("LifecycleHandler"), handler)
    define(
        _c("Lifecycle"),
        obj(
            {
                "postStart": ref(_c("LifecycleHandler"), "Called immediately after a container is created."),
                "preStop": ref(
                    _c("LifecycleHandler"), "Called immediately before a container is terminated."
                ),
                "stopSignal": string("StopSignal defines which signal will be sent to a container when it is being stopped."),
            },
            "Lifecycle describes actions that the management system should take in response to container lifecycle events.",
        ),
    )


def _define_security() -> None:
    seccomp = obj(
        {
            "type": string(
                "Indicates which kind of seccomp profile will be applied.",
                enum=("Localhost", "RuntimeDefault", "Unconfined"),
            ),
            "localhostProfile": string("A profile defined in a file on the node."),
        },
        "The seccomp options to use.",
        required_fields=("type",),
    )
    se_linux = obj(
        {
            "level": string("SELinux level label."),
            "role": string("SELinux role label."),
            "type": string("SELinux type label."),
            "user": string("SELinux user label."),
        },
        "The SELinux context to be applied.",
    )
    app_armor = obj(
        {
            "type": string("Indicates which kind of AppArmor profile will be applied."),
            "localhostProfile": string("A profile loaded on the node that should be used."),
        },
        "The AppArmor options to use.",
        required_fields=("type",),
    )
    windows = obj(
        {
            "gmsaCredentialSpec": string("The GMSA credential spec named by gmsaCredentialSpecName, inlined."),
            "gmsaCredentialSpecName": string("The name of the GMSA credential spec to use."),
            "hostProcess": boolean("Whether a container should be run as a 'Host Process' container."),
            "runAsUserName": string("The UserName in Windows to run the entrypoint of the container process."),
        },
        "The Windows-specific settings.",
    )
    define(
        _c("SecurityContext"),
        obj(
            {
                "allowPrivilegeEscalation": boolean(
                    "Whether a process can gain more privileges than its parent process."
                ),
                "privileged": boolean("Run container in privileged mode."),
                "readOnlyRootFilesystem": boolean("Whether this container has a read-only root filesystem."),
                "runAsUser": integer("The UID to run the entrypoint of the container process.", fmt="int64"),
                "runAsGroup": integer("The GID to run the entrypoint of the container process.", fmt="int64"),
                "runAsNonRoot": boolean("Indicates that the container must run as a non-root user."),
                "capabilities": obj(
                    {"add": str_list("Added capabilities."), "drop": str_list("Removed capabilities.")},
                    "The capabilities to add/drop when running containers.",
                ),
                "procMount": string("The type of proc mount to use for the containers."),
                "seccompProfile": seccomp,
                "seLinuxOptions": se_linux,
                "appArmorProfile": app_armor,
                "windowsOptions": windows,
            },
            "SecurityContext holds security configuration that will be applied to a container.",
        ),
    )
    define(
        _c("PodSecurityContext"),
        obj(
            {
                "runAsUser": integer("The UID to run the entrypoint of the container process.", fmt="int64"),
                "runAsGroup": integer("The GID to run the entrypoint of the container process.", fmt="int64"),
                "runAsNonRoot": boolean("Indicates that the container must run as a non-root user."),
                "fsGroup": integer(
                    "A special supplemental group that applies to all containers in a pod.", fmt="int64"
                ),
                "fsGroupChangePolicy": string(
                    "Defines behavior of changing ownership and permission of the volume."
                ),
                "supplementalGroups": arr(
                    integer(fmt="int64"), "Additional groups for the first process.", list_type="atomic"
                ),
                "seccompProfile": seccomp,
                "seLinuxOptions": se_linux,
                "sysctls": arr(
                    obj(
                        {
                            "name": string("Name of a property to set."),
                            "value": string("Value of a property to set."),
                        },
                        required_fields=("name", "value"),
                    ),
                    "Namespaced sysctls used for the pod.",
                    list_type="atomic",
                ),
                "appArmorProfile": app_armor,
                "windowsOptions": windows,
                "seLinuxChangePolicy": string(
                    "How the container's SELinux label is applied to all volumes used by the Pod."
                ),
                "supplementalGroupsPolicy": string(
                    "How supplemental groups of the first container processes are calculated."
                ),
            },
            "PodSecurityContext holds pod-level security attributes and common container settings.",
        ),
    )


def _define_container() -> None:
    define(
        _c("ResourceRequirements"),
        obj(
            {
                "limits": _quantities("Limits describes the maximum amount of compute resources allowed."),
                "requests": _quantities(
                    "Requests describes the minimum amount of compute resources required. If omitted, it "
                    "defaults to Limits if that is explicitly specified."
                ),
                "claims": arr(
                    obj(
                        {
                            "name": string("Name of a resource claim of the pod."),
                            "request": string("The name chosen for a request in the referenced claim."),
                        },
                        required_fields=("name",),
                    ),
                    "Claims lists the names of resources, defined in spec.resourceClaims, used by this container.",
                    list_type="map",
                    map_keys=("name",),
                ),
            },
            "ResourceRequirements describes the compute resource requirements.",
        ),
    )
    define(
        _c("ContainerPort"),
        obj(
            {
                "name": string("If specified, an IANA_SVC_NAME unique within the pod."),
                "containerPort": integer("Number of port to expose on the pod's IP address."),
                "hostPort": integer("Number of port to expose on the host."),
                "hostIP": string("What host IP to bind the external port to."),
                "protocol": string(
                    "Protocol for port. Must be UDP, TCP, or SCTP.", enum=PROTOCOLS, default="TCP"
                ),
            },
            "ContainerPort represents a network port in a single container.",
            required_fields=("containerPort",),
        ),
    )
    define(
        _c("VolumeMount"),
        obj(
            {
                "name": string("This must match the Name of a Volume."),
                "mountPath": string("Path within the container at which the volume should be mounted."),
                "readOnly": boolean("Mounted read-only if true, read-write otherwise."),
                "subPath": string(
                    "Path within the volume from which the container's volume should be mounted."
                ),
                "subPathExpr": string("Expanded path within the volume."),
                "mountPropagation": string(
                    "Determines how mounts are propagated.", enum=("Bidirectional", "HostToContainer", "None")
                ),
                "recursiveReadOnly": string(
                    "Specifies whether read-only mounts should be handled recursively."
                ),
            },
            "VolumeMount describes a mounting of a Volume within a container.",
            required_fields=("name", "mountPath"),
        ),
    )
    define(
        CONTAINER,
        obj(
            _container_properties(),
            "A single application container that you want to run within a pod.",
            required_fields=("name",),
        ),
    )
    define(
        EPHEMERAL_CONTAINER,
        obj(
            {
                **_container_properties(),
                "targetContainerName": string(
                    "The name of the container from PodSpec.Containers whose namespaces this ephemeral "
                    "container targets."
                ),
            },
            "An EphemeralContainer is a temporary container added to an existing Pod for user-initiated "
            "activities such as debugging.",
            required_fields=("name",),
        ),
    )


def _container_properties() -> dict[str, Schema]:
    return {
        "name": string(
            "Name of the container specified as a DNS_LABEL. Each container in a pod must have a unique name."
        ),
        "image": string("Container image name."),
        "command": str_list("Entrypoint array. Not executed within a shell."),
        "args": str_list("Arguments to the entrypoint."),
        "workingDir": string("Container's working directory."),
        "ports": arr(
            ref(_c("ContainerPort")),
            "List of ports to expose from the container.",
            list_type="map",
            map_keys=("containerPort", "protocol"),
            patch_strategy="merge",
            patch_key="containerPort",
        ),
        "envFrom": arr(
            ref(_c("EnvFromSource")),
            "List of sources to populate environment variables in the container.",
            list_type="atomic",
        ),
        "env": arr(
            ref(_c("EnvVar")),
            "List of environment variables to set in the container.",
            list_type="map",
            map_keys=("name",),
            patch_strategy="merge",
            patch_key="name",
        ),
        "resources": ref(
            _c("ResourceRequirements"), "Compute Resources required by this container.", default={}
        ),
        "restartPolicy": string("RestartPolicy of an init container (only Always is allowed, for sidecars)."),
        "volumeMounts": arr(
            ref(_c("VolumeMount")),
            "Pod volumes to mount into the container's filesystem.",
            list_type="map",
            map_keys=("mountPath",),
            patch_strategy="merge",
            patch_key="mountPath",
        ),
        "livenessProbe": ref(_c("Probe"), "Periodic probe of container liveness."),
        "readinessProbe": ref(_c("Probe"), "Periodic probe of container service readiness."),
        "startupProbe": ref(_c("Probe"), "StartupProbe indicates that the Pod has successfully initialized."),
        "lifecycle": ref(
            _c("Lifecycle"),
            "Actions that the management system should take in response to container lifecycle events.",
        ),
        "terminationMessagePath": string(
            "Path at which the file to which the container's termination message will be written is mounted."
        ),
        "terminationMessagePolicy": string(
            "Indicate how the termination message should be populated.",
            enum=("FallbackToLogsOnError", "File"),
        ),
        "imagePullPolicy": string(
            "Image pull policy. One of Always, Never, IfNotPresent.", enum=PULL_POLICIES
        ),
        "securityContext": ref(
            _c("SecurityContext"),
            "SecurityContext defines the security options the container should be run with.",
        ),
        "stdin": boolean(
            "Whether this container should allocate a buffer for stdin in the container runtime."
        ),
        "stdinOnce": boolean(
            "Whether the container runtime should close the stdin channel after it has been opened by a single attach."
        ),
        "tty": boolean("Whether this container should allocate a TTY for itself."),
        "resizePolicy": arr(
            obj(
                {
                    "resourceName": string("Name of the resource to which this resource resize policy applies."),
                    "restartPolicy": string("Restart policy to apply when the specified resource is resized."),
                },
                required_fields=("resourceName", "restartPolicy"),
            ),
            "Resources resize policy for the container.",
            list_type="atomic",
        ),
        "restartPolicyRules": arr(
            obj(
                {
                    "action": string("The action taken on a container exit if the requirements are satisfied."),
                    "exitCodes": obj(
                        {
                            "operator": string("The relationship between the exit code and the values: In or NotIn."),
                            "values": arr(
                                integer(), "The exit codes to match (at most 255).", list_type="set"
                            ),
                        },
                        "The exit codes the rule matches.",
                        required_fields=("operator",),
                    ),
                },
                required_fields=("action",),
            ),
            "Rules that determine whether the container is restarted when it exits.",
            list_type="atomic",
        ),
        "volumeDevices": arr(
            obj(
                {
                    "name": string("Name must match the name of a persistentVolumeClaim in the pod."),
                    "devicePath": string("The path inside of the container that the device will be mapped to."),
                },
                required_fields=("devicePath", "name"),
            ),
            "The list of block devices to be used by the container.",
            list_type="map",
            map_keys=("devicePath",),
            patch_strategy="merge",
            patch_key="devicePath",
        ),
    }


# --- volumes ---------------------------------------------------------------------------------------


def _key_paths() -> Schema:
    return arr(
        obj(
            {
                "key": string("The key to project."),
                "path": string("The relative path of the file to map the key to."),
                "mode": integer("Optional: mode bits used to set permissions on this file."),
            },
            required_fields=("key", "path"),
        ),
        "Items to project into the volume.",
        list_type="atomic",
    )


def _secret_ref(description: str) -> Schema:
    return _local_ref(description)


def _downward_api_items() -> Schema:
    return arr(
        obj(
            {
                "path": string("The relative path name of the file to be created."),
                "fieldRef": obj(
                    {
                        "apiVersion": string("Version of the schema the FieldPath is written in terms of."),
                        "fieldPath": string("Path of the field to select in the specified API version."),
                    },
                    "Selects a field of the pod: only annotations, labels, name, namespace and uid.",
                    required_fields=("fieldPath",),
                    map_type="atomic",
                ),
                "resourceFieldRef": obj(
                    {
                        "containerName": string("Container name: required for volumes."),
                        "divisor": ref(meta.QUANTITY, "Specifies the output format of the exposed resources."),
                        "resource": string("Required: resource to select."),
                    },
                    "Selects a resource of the container.",
                    required_fields=("resource",),
                    map_type="atomic",
                ),
                "mode": integer("Optional: mode bits used to set permissions on this file."),
            },
            "DownwardAPIVolumeFile represents information to create the file containing the pod field.",
            required_fields=("path",),
        ),
        "Items is a list of downward API volume files.",
        list_type="atomic",
    )


def _projection_sources() -> Schema:
    named_items = {
        "name": string("Name of the referent.", default=""),
        "items": _key_paths(),
        "optional": boolean("Specify whether the object or its keys must be defined."),
    }
    return arr(
        obj(
            {
                "clusterTrustBundle": obj(
                    {
                        "labelSelector": ref(meta.LABEL_SELECTOR, "Select all ClusterTrustBundles that match."),
                        "name": string("Select a single ClusterTrustBundle by object name."),
                        "optional": boolean("If true, don't block pod startup if the bundle is unavailable."),
                        "path": string("Relative path from the volume root to write the bundle."),
                        "signerName": string("Select all ClusterTrustBundles that match this signer name."),
                    },
                    "ClusterTrustBundle projects a ClusterTrustBundle's trust anchors into the pod.",
                    required_fields=("path",),
                ),
                "configMap": obj(named_items, "ConfigMap information about the configMap data to project.", map_type="atomic"),
                "downwardAPI": obj(
                    {"items": _downward_api_items()},
                    "DownwardAPI information about the downwardAPI data to project.",
                ),
                "podCertificate": obj(
                    {
                        "certificateChainPath": string("Write the certificate chain at this path."),
                        "credentialBundlePath": string("Write the credential bundle at this path."),
                        "keyPath": string("Write the key at this path."),
                        "keyType": string("The type of keypair Kubelet will generate for the pod."),
                        "maxExpirationSeconds": integer("The maximum lifetime of the certificate."),
                        "signerName": string("Kubelet's generated CSRs will be addressed to this signer."),
                        "userAnnotations": str_map("Annotations passed to the signer in the PodCertificateRequest."),
                    },
                    "Projects an auto-rotating credential bundle into the pod.",
                    required_fields=("keyType", "signerName"),
                ),
                "secret": obj(named_items, "Secret information about the secret data to project.", map_type="atomic"),
                "serviceAccountToken": obj(
                    {
                        "audience": string("The intended audience of the token."),
                        "expirationSeconds": integer("The requested duration of validity of the token.", fmt="int64"),
                        "path": string("The path relative to the mount point of the file to project the token into."),
                    },
                    "ServiceAccountToken projects a service account token.",
                    required_fields=("path",),
                ),
            },
            "Projection that may be projected along with other supported volume types.",
        ),
        "Sources is the list of volume projections.",
        list_type="atomic",
    )


def _pvc_template() -> Schema:
    typed_ref = {
        "apiGroup": string("APIGroup is the group for the resource being referenced."),
        "kind": string("Kind is the type of resource being referenced."),
        "name": string("Name is the name of resource being referenced."),
    }
    return obj(
        {
            "metadata": ref(meta.OBJECT_META, "Labels and annotations copied into the PVC."),
            "spec": obj(
                {
                    "accessModes": str_list("The desired access modes the volume should have."),
                    "dataSource": obj(
                        typed_ref,
                        "An existing VolumeSnapshot or PersistentVolumeClaim to populate the volume from.",
                        required_fields=("kind", "name"),
                        map_type="atomic",
                    ),
                    "dataSourceRef": obj(
                        {**typed_ref, "namespace": string("Namespace is the namespace of resource being referenced.")},
                        "The object from which to populate the volume with data.",
                        required_fields=("kind", "name"),
                    ),
                    "resources": obj(
                        {
                            "limits": _quantities("Limits describes the maximum amount of compute resources allowed."),
                            "requests": _quantities("Requests describes the minimum amount of compute resources required."),
                        },
                        "The minimum resources the volume should have.",
                    ),
                    "selector": ref(meta.LABEL_SELECTOR, "A label query over volumes to consider for binding."),
                    "storageClassName": string("The name of the StorageClass required by the claim."),
                    "volumeAttributesClassName": string("The VolumeAttributesClass used by this claim."),
                    "volumeMode": string("What type of volume is required by the claim."),
                    "volumeName": string("The binding reference to the PersistentVolume backing this claim."),
                },
                "The specification for the PersistentVolumeClaim.",
            ),
        },
        "Will be used to create a stand-alone PVC to provision the volume.",
        required_fields=("spec",),
    )


def _legacy_volume_sources() -> dict[str, Schema]:
    """Volume sources Kubernetes keeps for compatibility (in-tree drivers, most migrated to CSI)."""
    fs_type = string("Filesystem type of the volume that you want to mount.")
    read_only = boolean("Mounted read-only if true.")
    monitors = str_list("A collection of Ceph monitors.")
    return {
        "awsElasticBlockStore": obj(
            {
                "fsType": fs_type,
                "partition": integer("The partition in the volume that you want to mount."),
                "readOnly": read_only,
                "volumeID": string("Unique ID of the persistent disk resource in AWS (Amazon EBS volume)."),
            },
            "Deprecated: an AWS Disk resource attached to the host and exposed to the pod.",
            required_fields=("volumeID",),
        ),
        "azureDisk": obj(
            {
                "cachingMode": string("The Host Caching mode: None, Read Only, Read Write."),
                "diskName": string("The Name of the data disk in the blob storage."),
                "diskURI": string("The URI of data disk in the blob storage."),
                "fsType": string("Filesystem type to mount.", default="ext4"),
                "kind": string("Expected values Shared, Dedicated and Managed."),
                "readOnly": boolean("Mounted read-only if true.", default=False),
            },
            "Deprecated: an Azure Data Disk mount on the host and bind mount to the pod.",
            required_fields=("diskName", "diskURI"),
        ),
        "azureFile": obj(
            {
                "readOnly": read_only,
                "secretName": string("The name of secret that contains Azure Storage Account Name and Key."),
                "shareName": string("The azure share Name."),
            },
            "Deprecated: an Azure File Service mount on the host and bind mount to the pod.",
            required_fields=("secretName", "shareName"),
        ),
        "cephfs": obj(
            {
                "monitors": monitors,
                "path": string("Used as the mounted root, rather than the full Ceph tree."),
                "readOnly": read_only,
                "secretFile": string("The path to key ring for User."),
                "secretRef": _secret_ref("Reference to the authentication secret for User."),
                "user": string("The rados user name."),
            },
            "Deprecated: a Ceph FS mount on the host that shares a pod's lifetime.",
            required_fields=("monitors",),
        ),
        "cinder": obj(
            {
                "fsType": fs_type,
                "readOnly": read_only,
                "secretRef": _secret_ref("Points to a secret object containing parameters used to connect to OpenStack."),
                "volumeID": string("Used to identify the volume in cinder."),
            },
            "Deprecated: a cinder volume attached and mounted on kubelets host machine.",
            required_fields=("volumeID",),
        ),
        "fc": obj(
            {
                "fsType": fs_type,
                "lun": integer("Target lun number."),
                "readOnly": read_only,
                "targetWWNs": str_list("Target worldwide names (WWNs)."),
                "wwids": str_list("Volume world wide identifiers (wwids)."),
            },
            "A Fibre Channel resource that is attached to a kubelet's host machine and then exposed to the pod.",
        ),
        "flexVolume": obj(
            {
                "driver": string("The name of the driver to use for this volume."),
                "fsType": fs_type,
                "options": str_map("Extra command options if any."),
                "readOnly": read_only,
                "secretRef": _secret_ref("Reference to the secret object containing sensitive information."),
            },
            "Deprecated: a generic volume resource that is provisioned/attached using an exec based plugin.",
            required_fields=("driver",),
        ),
        "flocker": obj(
            {
                "datasetName": string("Name of the dataset stored as metadata."),
                "datasetUUID": string("UUID of the dataset."),
            },
            "Deprecated: a Flocker volume attached to a kubelet's host machine.",
        ),
        "gcePersistentDisk": obj(
            {
                "fsType": fs_type,
                "partition": integer("The partition in the volume that you want to mount."),
                "pdName": string("Unique name of the PD resource in GCE."),
                "readOnly": read_only,
            },
            "Deprecated: a GCE Disk resource that is attached to a kubelet's host machine.",
            required_fields=("pdName",),
        ),
        "gitRepo": obj(
            {
                "directory": string("Target directory name."),
                "repository": string("The repository URL."),
                "revision": string("Commit hash for the specified revision."),
            },
            "Deprecated: a git repository at a particular revision.",
            required_fields=("repository",),
        ),
        "glusterfs": obj(
            {
                "endpoints": string("The endpoint name that details Glusterfs topology."),
                "path": string("The Glusterfs volume path."),
                "readOnly": read_only,
            },
            "Deprecated: a Glusterfs mount on the host that shares a pod's lifetime.",
            required_fields=("endpoints", "path"),
        ),
        "iscsi": obj(
            {
                "chapAuthDiscovery": boolean("Whether support iSCSI Discovery CHAP authentication."),
                "chapAuthSession": boolean("Whether support iSCSI Session CHAP authentication."),
                "fsType": fs_type,
                "initiatorName": string("Custom iSCSI Initiator Name."),
                "iqn": string("Target iSCSI Qualified Name."),
                "iscsiInterface": string("iSCSI Interface Name that uses an iSCSI transport.", default="default"),
                "lun": integer("iSCSI Target Lun number."),
                "portals": str_list("iSCSI Target Portal List."),
                "readOnly": read_only,
                "secretRef": _secret_ref("CHAP Secret for iSCSI target and initiator authentication."),
                "targetPortal": string("iSCSI Target Portal."),
            },
            "An ISCSI Disk resource that is attached to a kubelet's host machine and then exposed to the pod.",
            required_fields=("iqn", "lun", "targetPortal"),
        ),
        "photonPersistentDisk": obj(
            {"fsType": fs_type, "pdID": string("ID that identifies Photon Controller persistent disk.")},
            "Deprecated: a PhotonController persistent disk attached and mounted on kubelets host machine.",
            required_fields=("pdID",),
        ),
        "portworxVolume": obj(
            {
                "fsType": fs_type,
                "readOnly": read_only,
                "volumeID": string("Uniquely identifies a Portworx volume."),
            },
            "Deprecated: a portworx volume attached and mounted on kubelets host machine.",
            required_fields=("volumeID",),
        ),
        "quobyte": obj(
            {
                "group": string("Group to map volume access to."),
                "readOnly": read_only,
                "registry": string("The Quobyte registries: host:port pairs, comma separated."),
                "tenant": string("Owner of the Quobyte volume in the Backend."),
                "user": string("User to map volume access to."),
                "volume": string("The name of an already created Quobyte volume."),
            },
            "Deprecated: a Quobyte mount on the host that shares a pod's lifetime.",
            required_fields=("registry", "volume"),
        ),
        "rbd": obj(
            {
                "fsType": fs_type,
                "image": string("The rados image name."),
                "keyring": string("The path to key ring for RBDUser.", default="/etc/ceph/keyring"),
                "monitors": monitors,
                "pool": string("The rados pool name.", default="rbd"),
                "readOnly": read_only,
                "secretRef": _secret_ref("The name of the authentication secret for RBDUser."),
                "user": string("The rados user name.", default="admin"),
            },
            "Deprecated: a Rados Block Device mount on the host that shares a pod's lifetime.",
            required_fields=("image", "monitors"),
        ),
        "scaleIO": obj(
            {
                "fsType": string("Filesystem type to mount.", default="xfs"),
                "gateway": string("The host address of the ScaleIO API Gateway."),
                "protectionDomain": string("The name of the ScaleIO Protection Domain for the configured storage."),
                "readOnly": read_only,
                "secretRef": _secret_ref("References to the secret for ScaleIO user and other sensitive information."),
                "sslEnabled": boolean("Flag to enable/disable SSL communication with Gateway."),
                "storageMode": string("Whether the storage for a volume should be ThickProvisioned or ThinProvisioned.", default="ThinProvisioned"),
                "storagePool": string("The ScaleIO Storage Pool associated with the protection domain."),
                "system": string("The name of the storage system as configured in ScaleIO."),
                "volumeName": string("The name of a volume already created in the ScaleIO system."),
            },
            "Deprecated: a ScaleIO persistent volume attached and mounted on Kubernetes nodes.",
            required_fields=("gateway", "secretRef", "system"),
        ),
        "storageos": obj(
            {
                "fsType": fs_type,
                "readOnly": read_only,
                "secretRef": _secret_ref("The secret to use for obtaining the StorageOS API credentials."),
                "volumeName": string("The human-readable name of the StorageOS volume."),
                "volumeNamespace": string("The scope of the volume within StorageOS."),
            },
            "Deprecated: a StorageOS volume attached and mounted on Kubernetes nodes.",
        ),
        "vsphereVolume": obj(
            {
                "fsType": fs_type,
                "storagePolicyID": string("The storage Policy Based Management (SPBM) profile ID."),
                "storagePolicyName": string("The storage Policy Based Management (SPBM) profile name."),
                "volumePath": string("The path that identifies vSphere volume vmdk."),
            },
            "Deprecated: a vSphere volume attached and mounted on kubelets host machine.",
            required_fields=("volumePath",),
        ),
    }


def _define_volume() -> None:
    define(
        _c("Volume"),
        obj(
            {
                "name": string("Name of the volume. Must be a DNS_LABEL and unique within the pod."),
                "emptyDir": obj(
                    {
                        "medium": string("What type of storage medium should back this directory."),
                        "sizeLimit": ref(
                            meta.QUANTITY, "Total amount of local storage required for this EmptyDir volume."
                        ),
                    },
                    "EmptyDir represents a temporary directory that shares a pod's lifetime.",
                ),
                "configMap": obj(
                    {
                        "name": string("Name of the referent.", default=""),
                        "items": _key_paths(),
                        "defaultMode": integer(
                            "Mode bits used to set permissions on created files by default."
                        ),
                        "optional": boolean("Specify whether the ConfigMap or its keys must be defined."),
                    },
                    "ConfigMap represents a configMap that should populate this volume.",
                    map_type="atomic",
                ),
                "secret": obj(
                    {
                        "secretName": string("Name of the secret in the pod's namespace to use."),
                        "items": _key_paths(),
                        "defaultMode": integer(
                            "Mode bits used to set permissions on created files by default."
                        ),
                        "optional": boolean("Specify whether the Secret or its keys must be defined."),
                    },
                    "Secret represents a secret that should populate this volume.",
                ),
                "hostPath": obj(
                    {
                        "path": string("Path of the directory on the host."),
                        "type": string("Type for HostPath Volume."),
                    },
                    "HostPath represents a pre-existing file or directory on the host machine.",
                    required_fields=("path",),
                ),
                "persistentVolumeClaim": obj(
                    {
                        "claimName": string(
                            "The name of a PersistentVolumeClaim in the same namespace as the pod."
                        ),
                        "readOnly": boolean("Will force the ReadOnly setting in VolumeMounts."),
                    },
                    "A reference to a PersistentVolumeClaim in the same namespace.",
                    required_fields=("claimName",),
                ),
                "projected": obj(
                    {
                        "defaultMode": integer("Mode bits used to set permissions on created files by default."),
                        "sources": _projection_sources(),
                    },
                    "Items for all in one resources secrets, configmaps, and downward API.",
                ),
                "downwardAPI": obj(
                    {
                        "defaultMode": integer("Mode bits used to set permissions on created files by default."),
                        "items": _downward_api_items(),
                    },
                    "DownwardAPI represents downward API about the pod.",
                ),
                "csi": obj(
                    {
                        "driver": string("The name of the CSI driver that handles this volume."),
                        "fsType": string("Filesystem type to mount."),
                        "nodePublishSecretRef": _secret_ref(
                            "Reference to the secret object containing sensitive information for the CSI driver."
                        ),
                        "readOnly": boolean("Specifies a read-only configuration for the volume."),
                        "volumeAttributes": str_map("Driver-specific properties passed to the CSI driver."),
                    },
                    "CSI represents ephemeral storage handled by certain external CSI drivers.",
                    required_fields=("driver",),
                ),
                "ephemeral": obj(
                    {"volumeClaimTemplate": _pvc_template()},
                    "A volume handled by a cluster storage driver, whose lifecycle is tied to the pod.",
                ),
                "nfs": obj(
                    {
                        "path": string("Path that is exported by the NFS server."),
                        "readOnly": boolean("Force the NFS export to be mounted with read-only permissions."),
                        "server": string("The hostname or IP address of the NFS server."),
                    },
                    "NFS represents an NFS mount on the host that shares a pod's lifetime.",
                    required_fields=("path", "server"),
                ),
                "image": obj(
                    {
                        "pullPolicy": string("Policy for pulling OCI objects: Always, Never or IfNotPresent."),
                        "reference": string("Image or artifact reference to be used."),
                    },
                    "An OCI object (a container image or artifact) pulled and mounted on the host machine.",
                ),
                **_legacy_volume_sources(),
            },
            "Volume represents a named volume in a pod that may be accessed by any container in the pod.",
            required_fields=("name",),
        ),
    )


# --- pod spec ---------------------------------------------------------------------------------------


def _define_pod_spec() -> None:
    define(
        POD_SPEC,
        obj(_pod_spec_properties(), "PodSpec is a description of a pod.", required_fields=("containers",)),
    )
    define(
        POD_TEMPLATE_SPEC,
        obj(
            {
                "metadata": ref(meta.OBJECT_META, meta.METADATA_DOC, default={}),
                "spec": ref(POD_SPEC, "Specification of the desired behavior of the pod."),
            },
            "PodTemplateSpec describes the data a pod should have when created from a template.",
        ),
    )


def _named_list(item: str, description: str, *, strategy: str = "merge") -> Schema:
    return arr(
        ref(_c(item)),
        description,
        list_type="map",
        map_keys=("name",),
        patch_strategy=strategy,
        patch_key="name",
    )


def _pod_spec_properties() -> dict[str, Schema]:
    return {
        "volumes": _named_list(
            "Volume",
            "List of volumes that can be mounted by containers belonging to the pod.",
            strategy="merge,retainKeys",
        ),
        "initContainers": _named_list("Container", "List of initialization containers belonging to the pod."),
        "containers": _named_list(
            "Container", "List of containers belonging to the pod. There must be at least one."
        ),
        "restartPolicy": string(
            "Restart policy for all containers within the pod. One of Always, OnFailure, Never. Default to Always.",
            enum=RESTART_POLICIES,
        ),
        "terminationGracePeriodSeconds": integer(
            "Optional duration in seconds the pod needs to terminate gracefully.", fmt="int64"
        ),
        "activeDeadlineSeconds": integer(
            "Optional duration in seconds the pod may be active on the node.", fmt="int64"
        ),
        "dnsPolicy": string("Set DNS policy for the pod. Defaults to ClusterFirst.", enum=DNS_POLICIES),
        "nodeSelector": str_map(
            "NodeSelector is a selector which must be true for the pod to fit on a node.", map_type="atomic"
        ),
        "serviceAccountName": string(
            "ServiceAccountName is the name of the ServiceAccount to use to run this pod."
        ),
        "serviceAccount": string("DeprecatedServiceAccount is a deprecated alias for ServiceAccountName."),
        "automountServiceAccountToken": boolean(
            "Indicates whether a service account token should be automatically mounted."
        ),
        "nodeName": string("A request to schedule this pod onto a specific node."),
        "hostNetwork": boolean("Host networking requested for this pod."),
        "hostPID": boolean("Use the host's pid namespace."),
        "hostIPC": boolean("Use the host's ipc namespace."),
        "shareProcessNamespace": boolean(
            "Share a single process namespace between all of the containers in a pod."
        ),
        "securityContext": ref(
            _c("PodSecurityContext"), "SecurityContext holds pod-level security attributes.", default={}
        ),
        "imagePullSecrets": _named_list(
            "LocalObjectReference", "References to secrets for pulling any of the images."
        ),
        "hostname": string("Specifies the hostname of the Pod."),
        "subdomain": string(
            "If specified, the fully qualified Pod hostname will be <hostname>.<subdomain>.<namespace>.svc."
        ),
        "affinity": ref(AFFINITY, "If specified, the pod's scheduling constraints"),
        "schedulerName": string("If specified, the pod will be dispatched by specified scheduler."),
        "tolerations": arr(ref(TOLERATION), "If specified, the pod's tolerations.", list_type="atomic"),
        "hostAliases": arr(
            obj(
                {
                    "ip": string("IP address of the host file entry."),
                    "hostnames": str_list("Hostnames for the above IP address."),
                },
                required_fields=("ip",),
            ),
            "Hosts and IPs that will be injected into the pod's hosts file.",
            list_type="map",
            map_keys=("ip",),
            patch_strategy="merge",
            patch_key="ip",
        ),
        "priorityClassName": string("If specified, indicates the pod's priority."),
        "priority": integer(
            "The priority value, populated from PriorityClassName by the admission controller."
        ),
        "preemptionPolicy": string(
            "PreemptionPolicy is the Policy for preempting pods with lower priority.",
            enum=("Never", "PreemptLowerPriority"),
        ),
        "dnsConfig": obj(
            {
                "nameservers": str_list("A list of DNS name server IP addresses."),
                "searches": str_list("A list of DNS search domains for host-name lookup."),
                "options": arr(
                    obj({"name": string("Required."), "value": string("Value.")}),
                    "A list of DNS resolver options.",
                    list_type="atomic",
                ),
            },
            "Specifies the DNS parameters of a pod.",
        ),
        "readinessGates": arr(
            obj(
                {"conditionType": string("ConditionType refers to a condition in the pod's condition list.")},
                required_fields=("conditionType",),
            ),
            "If specified, all readiness gates will be evaluated for pod readiness.",
            list_type="atomic",
        ),
        "runtimeClassName": string(
            "RuntimeClassName refers to a RuntimeClass object in the node.k8s.io group."
        ),
        "enableServiceLinks": boolean(
            "Whether information about services should be injected into pod's environment variables."
        ),
        "overhead": _quantities("Overhead represents the resource overhead associated with running a pod."),
        "topologySpreadConstraints": arr(
            ref(_c("TopologySpreadConstraint")),
            "How a group of pods ought to spread across topology domains.",
            list_type="map",
            map_keys=("topologyKey", "whenUnsatisfiable"),
            patch_strategy="merge",
            patch_key="topologyKey",
        ),
        "setHostnameAsFQDN": boolean("If true the pod's hostname will be configured as the pod's FQDN."),
        "os": obj(
            {"name": string("Name is the name of the operating system: linux or windows.")},
            "Specifies the OS of the containers in the pod.",
            required_fields=("name",),
        ),
        "hostUsers": boolean("Use the host's user namespace."),
        "schedulingGates": arr(
            obj({"name": string("Name of the scheduling gate.")}, required_fields=("name",)),
            "SchedulingGates is an opaque list of values that if specified will block scheduling the pod.",
            list_type="map",
            map_keys=("name",),
            patch_strategy="merge",
            patch_key="name",
        ),
        "resources": ref(_c("ResourceRequirements"), "Pod-level resources (requests and limits) of the pod."),
        "ephemeralContainers": arr(
            ref(EPHEMERAL_CONTAINER),
            "List of ephemeral containers run in this pod (added through the ephemeralcontainers subresource).",
            list_type="map",
            map_keys=("name",),
            patch_strategy="merge",
            patch_key="name",
        ),
        "hostnameOverride": string("HostnameOverride specifies an explicit override for the pod's hostname."),
        "resourceClaims": arr(
            obj(
                {
                    "name": string("Name uniquely identifies this resource claim inside the pod."),
                    "resourceClaimName": string("The name of a ResourceClaim object in the same namespace."),
                    "resourceClaimTemplateName": string(
                        "The name of a ResourceClaimTemplate object in the same namespace."
                    ),
                },
                "PodResourceClaim references exactly one ResourceClaim.",
                required_fields=("name",),
            ),
            "ResourceClaims defines which ResourceClaims must be allocated and reserved before the Pod starts.",
            list_type="map",
            map_keys=("name",),
            patch_strategy="merge,retainKeys",
            patch_key="name",
        ),
        "schedulingGroup": obj(
            {"podGroupName": string("The name of the PodGroup this Pod belongs to.")},
            "SchedulingGroup is the group the pod is scheduled with.",
        ),
    }


# --- kinds ------------------------------------------------------------------------------------------


def _define_references() -> None:
    define(
        _c("LocalObjectReference"),
        _local_ref("LocalObjectReference lets you locate the referenced object inside the same namespace."),
    )
    define(
        OBJECT_REFERENCE,
        obj(
            {
                "apiVersion": string("API version of the referent."),
                "fieldPath": string(
                    "If referring to a piece of an object instead of an entire object, a JSONPath into it."
                ),
                "kind": string("Kind of the referent."),
                "name": string("Name of the referent."),
                "namespace": string("Namespace of the referent."),
                "resourceVersion": string(
                    "Specific resourceVersion to which this reference is made, if any."
                ),
                "uid": string("UID of the referent."),
            },
            "ObjectReference contains enough information to let you inspect or modify the referred object.",
            map_type="atomic",
        ),
    )
    define(
        EVENT_SOURCE,
        obj(
            {
                "component": string("Component from which the event is generated."),
                "host": string("Node name on which the event is generated."),
            },
            "EventSource contains information for an event.",
        ),
    )


def _define_namespace() -> None:
    define(
        NAMESPACE,
        obj(
            {
                "apiVersion": meta.api_version_field(),
                "kind": meta.kind_field(),
                "metadata": meta.metadata_field(),
                "spec": obj(
                    {
                        "finalizers": str_list(
                            "Finalizers is an opaque list of values that must be empty to permanently remove object from storage."
                        )
                    },
                    "Spec defines the behavior of the Namespace.",
                ),
                "status": obj(
                    {
                        "phase": string(
                            "Phase is the current lifecycle phase of the namespace.",
                            enum=("Active", "Terminating"),
                        ),
                        "conditions": arr(
                            obj(
                                {
                                    "type": string("Type of namespace controller condition."),
                                    "status": string("Status of the condition, one of True, False, Unknown."),
                                    "lastTransitionTime": ref(meta.TIME),
                                    "reason": string(
                                        "Unique, one-word, CamelCase reason for the condition's last transition."
                                    ),
                                    "message": string(
                                        "Human-readable message indicating details about last transition."
                                    ),
                                },
                                required_fields=("type", "status"),
                            ),
                            "Represents the latest available observations of a namespace's current state.",
                            list_type="map",
                            map_keys=("type",),
                            patch_strategy="merge",
                            patch_key="type",
                        ),
                    },
                    "Status describes the current status of a Namespace.",
                ),
            },
            "Namespace provides a scope for Names. Use of multiple namespaces is optional.",
        ),
        gvk=("", "v1", "Namespace"),
    )


def _define_event() -> None:
    define(
        EVENT,
        obj(
            {
                "apiVersion": meta.api_version_field(),
                "kind": meta.kind_field(),
                "metadata": meta.metadata_field(),
                "involvedObject": ref(OBJECT_REFERENCE, "The object that this event is about.", default={}),
                "reason": string(
                    "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."
                ),
                "message": string("A human-readable description of the status of this operation."),
                "source": ref(EVENT_SOURCE, "The component reporting this event.", default={}),
                "firstTimestamp": ref(meta.TIME, "The time at which the event was first recorded."),
                "lastTimestamp": ref(
                    meta.TIME, "The time at which the most recent occurrence of this event was recorded."
                ),
                "count": integer("The number of times this event has occurred."),
                "type": string(
                    "Type of this event (Normal, Warning), new types could be added in the future"
                ),
                "eventTime": ref(meta.MICRO_TIME, "Time when this Event was first observed."),
                "series": obj(
                    {
                        "count": integer(
                            "Number of occurrences in this series up to the last heartbeat time"
                        ),
                        "lastObservedTime": ref(meta.MICRO_TIME, "Time of the last occurrence observed"),
                    },
                    "Data about the Event series this event represents or nil if it's a singleton Event.",
                ),
                "action": string("What action was taken/failed regarding to the Regarding object."),
                "related": ref(OBJECT_REFERENCE, "Optional secondary object for more complex actions."),
                "reportingComponent": string(
                    "Name of the controller that emitted this Event, e.g. `kubernetes.io/kubelet`.",
                    default="",
                ),
                "reportingInstance": string(
                    "ID of the controller instance, e.g. `kubelet-xyzf`.", default=""
                ),
            },
            "Event is a report of an event somewhere in the cluster.",
            required_fields=("metadata", "involvedObject"),
        ),
        gvk=("", "v1", "Event"),
    )


def _define_pod_template() -> None:
    define(
        POD_TEMPLATE,
        obj(
            {
                "apiVersion": meta.api_version_field(),
                "kind": meta.kind_field(),
                "metadata": meta.metadata_field(),
                "template": ref(
                    POD_TEMPLATE_SPEC,
                    "Template defines the pods that will be created from this pod template.",
                ),
            },
            "PodTemplate describes a template for creating copies of a predefined pod.",
        ),
        gvk=("", "v1", "PodTemplate"),
    )


_define_scheduling()
_define_env()
_define_probes()
_define_security()
_define_container()
_define_volume()
_define_references()
_define_pod_spec()
_define_namespace()
_define_event()
_define_pod_template()
