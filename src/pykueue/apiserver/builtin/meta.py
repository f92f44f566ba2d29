"""Schemas of ``k8s.io/apimachinery`` types (``meta/v1``, ``resource.Quantity``, ``IntOrString``).

Component names follow the Kubernetes OpenAPI naming (``io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta``).
"""

from __future__ import annotations

from pykueue.api.validation import CONDITION_REASON_PATTERN, CONDITION_TYPE_PATTERN, QUANTITY_PATTERN
from pykueue.apiserver.builtin.schema import (
    INT_OR_STRING,
    Schema,
    arr,
    boolean,
    define,
    free_object,
    integer,
    obj,
    ref,
    str_list,
    str_map,
    string,
)

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
OBJECT_META = META + "ObjectMeta"
LIST_META = META + "ListMeta"
TIME = META + "Time"
MICRO_TIME = META + "MicroTime"
OWNER_REFERENCE = META + "OwnerReference"
MANAGED_FIELDS_ENTRY = META + "ManagedFieldsEntry"
FIELDS_V1 = META + "FieldsV1"
LABEL_SELECTOR = META + "LabelSelector"
LABEL_SELECTOR_REQUIREMENT = META + "LabelSelectorRequirement"
CONDITION = META + "Condition"
STATUS = META + "Status"
STATUS_DETAILS = META + "StatusDetails"
STATUS_CAUSE = META + "StatusCause"
DELETE_OPTIONS = META + "DeleteOptions"
PRECONDITIONS = META + "Preconditions"
WATCH_EVENT = META + "WatchEvent"
PATCH = META + "Patch"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING_NAME = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
RAW_EXTENSION = "io.k8s.apimachinery.pkg.runtime.RawExtension"

API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers should "
    "convert recognized schemas to the latest internal value, and may reject unrecognized values. "
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents. Servers may infer "
    "this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
METADATA_DOC = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
LIST_METADATA_DOC = (
    "Standard list metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name automatically. "
    "Name is primarily intended for creation idempotence and configuration definition. Cannot be "
    "updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
CREATION_TIMESTAMP_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It "
    "is not guaranteed to be set in happens-before order across separate operations. Clients may not "
    "set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. "
    "Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
"""``metav1.ObjectMeta{}.SwaggerDoc()`` texts the server puts into Table column definitions."""


def api_version_field() -> Schema:
    """The ``apiVersion`` property every kind has."""
    return string(API_VERSION_DOC)


def kind_field() -> Schema:
    """The ``kind`` property every kind has."""
    return string(KIND_DOC)


def metadata_field() -> Schema:
    """The ``metadata`` property of a kind (reference to ObjectMeta)."""
    return ref(OBJECT_META, METADATA_DOC, default={})


def _define_scalars() -> None:
    define(TIME, string("Time is a wrapper around time.Time; serialized in RFC 3339 form.", fmt="date-time"))
    define(
        MICRO_TIME,
        string("MicroTime is a version of Time with microsecond level precision.", fmt="date-time"),
    )
    define(
        QUANTITY,
        {
            "description": (
                "Quantity is a fixed-point representation of a number, serialized as a string such as "
                "'100m', '1.5Gi' or '2', or as a JSON number."
            ),
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            INT_OR_STRING: True,
        },
    )
    define(
        INT_OR_STRING_NAME,
        {
            "description": "IntOrString is a type that can hold an int32 or a string.",
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            INT_OR_STRING: True,
        },
    )
    define(RAW_EXTENSION, free_object("RawExtension holds an embedded object of any kind."))
    define(FIELDS_V1, free_object("FieldsV1 stores a set of fields in a data structure like a Trie."))


def _define_object_meta() -> None:
    define(
        OWNER_REFERENCE,
        obj(
            {
                "apiVersion": string("API version of the referent."),
                "kind": string("Kind of the referent."),
                "name": string("Name of the referent."),
                "uid": string("UID of the referent."),
                "controller": boolean("If true, this reference points to the managing controller."),
                "blockOwnerDeletion": boolean(
                    "If true, and if the owner has the foregroundDeletion finalizer, the owner cannot be "
                    "deleted from the key-value store until this reference is removed."
                ),
            },
            "OwnerReference contains enough information to let you identify an owning object.",
            required_fields=("apiVersion", "kind", "name", "uid"),
            map_type="atomic",
        ),
    )
    define(
        MANAGED_FIELDS_ENTRY,
        obj(
            {
                "manager": string("Manager is an identifier of the workflow managing these fields."),
                "operation": string(
                    "Operation is the type of operation which lead to this entry: Apply or Update."
                ),
                "apiVersion": string(
                    "APIVersion defines the version of this resource that this field set applies to."
                ),
                "time": ref(TIME, "Time is the timestamp of when the ManagedFields entry was added."),
                "fieldsType": string("FieldsType is the discriminator for the fields format (FieldsV1)."),
                "fieldsV1": ref(FIELDS_V1, "FieldsV1 holds the first JSON version format."),
                "subresource": string(
                    "Subresource is the name of the subresource used to update the object."
                ),
            },
            "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource "
            "that the fieldset applies to.",
        ),
    )
    define(
        OBJECT_META,
        obj(_object_meta_properties(), "ObjectMeta is metadata that all persisted resources must have."),
    )


def _object_meta_properties() -> dict[str, Schema]:
    return {
        "name": string(NAME_DOC),
        "generateName": string(
            "GenerateName is an optional prefix used by the server to generate a unique name only if "
            "the Name field has not been provided."
        ),
        "namespace": string("Namespace defines the space within which each name must be unique."),
        "selfLink": string("Deprecated: selfLink is a legacy read-only field that is no longer populated."),
        "uid": string("UID is the unique in time and space value for this object. Populated by the system."),
        "resourceVersion": string(
            "An opaque value that represents the internal version of this object, used for optimistic "
            "concurrency and change detection. Populated by the system."
        ),
        "generation": integer(
            "A sequence number representing a specific generation of the desired state.", fmt="int64"
        ),
        "creationTimestamp": ref(TIME, CREATION_TIMESTAMP_DOC),
        "deletionTimestamp": ref(
            TIME, "RFC 3339 date and time at which this resource will be deleted. Set by the server."
        ),
        "deletionGracePeriodSeconds": integer(
            "Number of seconds allowed for this object to gracefully terminate before it is removed.",
            fmt="int64",
        ),
        "labels": str_map(
            "Map of string keys and values that can be used to organize and categorize objects."
        ),
        "annotations": str_map("Annotations is an unstructured key value map stored with a resource."),
        "ownerReferences": arr(
            ref(OWNER_REFERENCE),
            "List of objects depended by this object.",
            list_type="map",
            map_keys=("uid",),
            patch_strategy="merge",
            patch_key="uid",
        ),
        "finalizers": arr(
            {"type": "string"},
            "Must be empty before the object is deleted from the registry.",
            list_type="set",
            patch_strategy="merge",
        ),
        "managedFields": arr(
            ref(MANAGED_FIELDS_ENTRY),
            "ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow.",
            list_type="atomic",
        ),
    }


def _define_selectors_and_conditions() -> None:
    define(
        LABEL_SELECTOR_REQUIREMENT,
        obj(
            {
                "key": string("key is the label key that the selector applies to."),
                "operator": string("operator represents a key's relationship to a set of values."),
                "values": str_list("values is an array of string values."),
            },
            "A label selector requirement is a selector that contains values, a key, and an operator.",
            required_fields=("key", "operator"),
        ),
    )
    define(
        LABEL_SELECTOR,
        obj(
            {
                "matchExpressions": arr(
                    ref(LABEL_SELECTOR_REQUIREMENT),
                    "matchExpressions is a list of label selector requirements. The requirements are ANDed.",
                    list_type="atomic",
                ),
                "matchLabels": str_map("matchLabels is a map of {key,value} pairs."),
            },
            "A label selector is a label query over a set of resources.",
            map_type="atomic",
        ),
    )
    define(CONDITION, condition_schema(time_schema=ref(TIME)))


def condition_schema(time_schema: Schema | None = None) -> Schema:
    """``metav1.Condition`` with its CRD validations (``time_schema`` inlined for CRDs)."""
    return obj(
        {
            "type": string(
                "type of condition in CamelCase or in foo.example.com/CamelCase.",
                max_length=316,
                pattern=CONDITION_TYPE_PATTERN,
            ),
            "status": string(
                "status of the condition, one of True, False, Unknown.", enum=("True", "False", "Unknown")
            ),
            "observedGeneration": integer(
                "observedGeneration represents the .metadata.generation that the condition was set based upon.",
                fmt="int64",
                minimum=0,
            ),
            "lastTransitionTime": time_schema
            or string("lastTransitionTime is the last time the condition transitioned.", fmt="date-time"),
            "reason": string(
                "reason contains a programmatic identifier indicating the reason for the condition's last transition.",
                max_length=1024,
                min_length=1,
                pattern=CONDITION_REASON_PATTERN,
            ),
            "message": string(
                "message is a human readable message indicating details about the transition.",
                max_length=32768,
            ),
        },
        "Condition contains details for one aspect of the current state of this API Resource.",
        required_fields=("lastTransitionTime", "message", "reason", "status", "type"),
    )


def _define_status() -> None:
    define(
        STATUS_CAUSE,
        obj(
            {
                "field": string("The field of the resource that has caused this error."),
                "message": string("A human-readable description of the cause of the error."),
                "reason": string("A machine-readable description of the cause of the error."),
            },
            "StatusCause provides more information about an api.Status failure.",
        ),
    )
    define(
        STATUS_DETAILS,
        obj(
            {
                "causes": arr(
                    ref(STATUS_CAUSE), "The Causes array includes more details.", list_type="atomic"
                ),
                "group": string(
                    "The group attribute of the resource associated with the status StatusReason."
                ),
                "kind": string("The kind attribute of the resource associated with the status StatusReason."),
                "name": string("The name attribute of the resource associated with the status StatusReason."),
                "retryAfterSeconds": integer(
                    "If specified, the time in seconds before the operation should be retried."
                ),
                "uid": string("UID of the resource."),
            },
            "StatusDetails is a set of additional properties that MAY be set by the server.",
        ),
    )
    define(
        STATUS,
        obj(
            {
                "apiVersion": api_version_field(),
                "code": integer("Suggested HTTP return code for this status, 0 if not set."),
                "details": ref(STATUS_DETAILS, "Extended data associated with the reason."),
                "kind": kind_field(),
                "message": string("A human-readable description of the status of this operation."),
                "metadata": ref(LIST_META, LIST_METADATA_DOC, default={}),
                "reason": string(
                    "A machine-readable description of why this operation is in the Failure status."
                ),
                "status": string('Status of the operation. One of: "Success" or "Failure".'),
            },
            "Status is a return value for calls that don't return other objects.",
        ),
    )


def _define_lists_and_options() -> None:
    define(
        LIST_META,
        obj(
            {
                "continue": string(
                    "continue may be set if the user set a limit on the number of items returned."
                ),
                "remainingItemCount": integer(
                    "The number of subsequent items in the list which are not included in this list response.",
                    fmt="int64",
                ),
                "resourceVersion": string(
                    "String that identifies the server's internal version of this object."
                ),
                "selfLink": string(
                    "Deprecated: selfLink is a legacy read-only field that is no longer populated."
                ),
            },
            "ListMeta describes metadata that synthetic resources must have, including lists.",
        ),
    )
    define(
        PRECONDITIONS,
        obj(
            {
                "resourceVersion": string("Specifies the target ResourceVersion"),
                "uid": string("Specifies the target UID."),
            },
            "Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.",
        ),
    )
    define(
        DELETE_OPTIONS,
        obj(
            {
                "apiVersion": api_version_field(),
                "dryRun": str_list("When present, indicates that modifications should not be persisted."),
                "gracePeriodSeconds": integer(
                    "The duration in seconds before the object should be deleted.", fmt="int64"
                ),
                "kind": kind_field(),
                "orphanDependents": boolean("Deprecated: use the PropagationPolicy field."),
                "preconditions": ref(PRECONDITIONS, "Must be fulfilled before a deletion is carried out."),
                "propagationPolicy": string(
                    "Whether and how garbage collection will be performed: Orphan, Background or Foreground."
                ),
            },
            "DeleteOptions may be provided when deleting an API object.",
        ),
    )
    define(
        WATCH_EVENT,
        obj(
            {
                "object": ref(
                    RAW_EXTENSION, "Object is the object of the event: the full object or a Status."
                ),
                "type": string("ADDED, MODIFIED, DELETED, BOOKMARK or ERROR."),
            },
            "Event represents a single event to a watched resource.",
            required_fields=("type", "object"),
        ),
    )
    define(
        PATCH,
        obj(
            description="Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."
        ),
    )


def crd_overrides() -> dict[str, Schema]:
    """How meta types are inlined into CRD schemas (structural forms, as controller-gen writes them)."""
    return {
        TIME: string(fmt="date-time"),
        MICRO_TIME: string(fmt="date-time"),
        QUANTITY: {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            INT_OR_STRING: True,
        },
        INT_OR_STRING_NAME: {"anyOf": [{"type": "integer"}, {"type": "string"}], INT_OR_STRING: True},
    }


STANDARD_COMPONENTS = (DELETE_OPTIONS, STATUS, WATCH_EVENT, PATCH, LIST_META, OBJECT_META)
"""Components every group-version document carries besides its kinds."""

_define_scalars()
_define_object_meta()
_define_selectors_and_conditions()
_define_status()
_define_lists_and_options()
