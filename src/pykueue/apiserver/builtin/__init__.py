"""Built-in (non-CRD) kinds: OpenAPI schemas, defaults and validation.

Importing the package registers every component schema in :data:`schema.COMPONENTS`:
apimachinery meta types, core/v1 (Namespace, Event, PodTemplate, LimitRange, PodSpec...), batch/v1
Job, Pod, Node, scheduling.k8s.io/v1 PriorityClass, node.k8s.io/v1 RuntimeClass,
coordination.k8s.io/v1 Lease, events.k8s.io/v1 Event; plus the ProvisioningRequest CRD schema (autoscaling.x-k8s.io), which pykueue serves as a CRD.
"""

from pykueue.apiserver.builtin import (  # noqa: F401  (imported for their component registrations)
    autoscaling,
    batch,
    coordination,
    core,
    events,
    limitrange,
    meta,
    namespaces,
    node,
    podnode,
    pods,
    scheduling,
    schema,
)
