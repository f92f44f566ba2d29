"""Kueue features that pykueue does not implement, found in the objects that ask for them.

pykueue serves these fields and kinds (so manifests written for Kueue apply), but its scheduler
does not act on them. Users are told instead of being silently ignored: the API server answers a
write with a ``Warning`` header, the controllers record a ``Warning`` Event on the object, and
``pykueue schedule`` prints a warning. The README lists the same features.

The checks are plain reads of the JSON object, cheap enough for every write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pykueue.api.jobs import TOPOLOGY_REQUEST_ANNOTATIONS, sub

TAS: Final = "Topology Aware Scheduling"
MULTIKUEUE: Final = "MultiKueue"
MULTIKUEUE_CONTROLLER: Final = "kueue.x-k8s.io/multikueue"
ELASTIC: Final = "Elastic Jobs (workload slices)"
ELASTIC_JOB_ANNOTATION: Final = "kueue.x-k8s.io/elastic-job"
SLICE_REPLACEMENT_ANNOTATION: Final = "kueue.x-k8s.io/workload-slice-replacement-for"
EVENT_REASON: Final = "UnsupportedFeature"
KUEUE_GROUP: Final = "kueue.x-k8s.io"


@dataclass(frozen=True, slots=True)
class Unmodelled:
    """One use of a feature pykueue does not implement."""

    feature: str
    field: str
    consequence: str

    @property
    def message(self) -> str:
        """The text of the warning and of the Event."""
        return f"pykueue does not implement {self.feature}: {self.field} is ignored; {self.consequence}"


def unmodelled_features(group: str, kind: str, obj: Mapping[str, Any]) -> list[Unmodelled]:
    """The unimplemented features ``obj`` (of ``group``/``kind``, any served version) asks for."""
    if group == "batch" and kind == "Job":
        return _job(obj)
    if group != KUEUE_GROUP:
        return []
    spec = sub(obj, "spec")
    if kind == "Workload":
        found = [
            Unmodelled(TAS, f"spec.podSets[{i}].topologyRequest", "the workload is admitted without a topology assignment")
            for i, ps in enumerate(spec.get("podSets") or [])
            if isinstance(ps, Mapping) and ps.get("topologyRequest")
        ]
        if SLICE_REPLACEMENT_ANNOTATION in (sub(obj, "metadata").get("annotations") or {}):
            found.append(
                Unmodelled(
                    ELASTIC,
                    f"metadata.annotations[{SLICE_REPLACEMENT_ANNOTATION}]",
                    "the workload is scheduled on its own, not in place of the slice it names",
                )
            )
        return found
    if kind == "ResourceFlavor" and spec.get("topologyName"):
        return [Unmodelled(TAS, "spec.topologyName", "workloads get quota on this flavor without a topology assignment")]
    if kind == "Topology":
        return [Unmodelled(TAS, "Topology", "no ResourceFlavor uses it for placement")]
    if kind == "AdmissionCheck" and spec.get("controllerName") == MULTIKUEUE_CONTROLLER:
        return [
            Unmodelled(
                MULTIKUEUE,
                f"spec.controllerName: {MULTIKUEUE_CONTROLLER}",
                "no controller sets this check's state, so workloads that need it stay pending",
            )
        ]
    if kind in ("MultiKueueConfig", "MultiKueueCluster"):
        return [Unmodelled(MULTIKUEUE, kind, "no workload is dispatched to other clusters")]
    return []


def _job(job: Mapping[str, Any]) -> list[Unmodelled]:
    annotations = sub(sub(sub(job, "spec"), "template"), "metadata").get("annotations") or {}
    found = [
        Unmodelled(TAS, f"spec.template.metadata.annotations[{key}]", "the job is admitted without a topology assignment")
        for key in TOPOLOGY_REQUEST_ANNOTATIONS
        if key in annotations
    ]
    if (sub(job, "metadata").get("annotations") or {}).get(ELASTIC_JOB_ANNOTATION) == "true":
        found.append(
            Unmodelled(
                ELASTIC,
                f"metadata.annotations[{ELASTIC_JOB_ANNOTATION}]",
                "scaling the job is not modelled: no new workload slice is admitted in place of the old one",
            )
        )
    return found
