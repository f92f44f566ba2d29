"""The collections Kueue's controllers use, in the versions they read and write."""

from __future__ import annotations

from pykueue.client.interface import Resource

KUEUE = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
EVENTS = Resource("", "v1", "events", "Event", True)
PODS = Resource("", "v1", "pods", "Pod", True)
NODES = Resource("", "v1", "nodes", "Node", False)
POD_TEMPLATES = Resource("", "v1", "podtemplates", "PodTemplate", True)
JOBS = Resource("batch", "v1", "jobs", "Job", True)
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False)
LIMIT_RANGES = Resource("", "v1", "limitranges", "LimitRange", True)
RUNTIME_CLASSES = Resource("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False)
PROVISIONING_REQUESTS = Resource(
    "autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest", True
)

RESOURCE_FLAVORS = Resource(KUEUE, KUEUE_VERSION, "resourceflavors", "ResourceFlavor", False)
CLUSTER_QUEUES = Resource(KUEUE, KUEUE_VERSION, "clusterqueues", "ClusterQueue", False)
COHORTS = Resource(KUEUE, KUEUE_VERSION, "cohorts", "Cohort", False)
LOCAL_QUEUES = Resource(KUEUE, KUEUE_VERSION, "localqueues", "LocalQueue", True)
WORKLOADS = Resource(KUEUE, KUEUE_VERSION, "workloads", "Workload", True)
WORKLOAD_PRIORITY_CLASSES = Resource(
    KUEUE, KUEUE_VERSION, "workloadpriorityclasses", "WorkloadPriorityClass", False
)
ADMISSION_CHECKS = Resource(KUEUE, KUEUE_VERSION, "admissionchecks", "AdmissionCheck", False)
PROVISIONING_REQUEST_CONFIGS = Resource(
    KUEUE, KUEUE_VERSION, "provisioningrequestconfigs", "ProvisioningRequestConfig", False
)
