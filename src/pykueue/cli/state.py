"""A ``pykueue schedule`` state, admitted exactly as ``kubectl apply`` to ``pykueue serve`` admits it.

Every object of the state files goes through the embedded API server's own request pipeline
(:class:`pykueue.apiserver.handlers.Handlers` over a throw-away in-memory store): decoding, CRD
pruning with ``fieldValidation=Strict`` (kubectl's default ``--validate=strict``; ``Ignore`` with
``--validate=false``), defaulting, Kueue's mutating and validating webhooks, and the ``/status``
validation for objects that carry a status. So the dry run refuses what the server refuses, with
the server's words, and sees the objects the server would store.

``batch/v1`` Jobs are admitted by the Job webhook (suspended, defaulted) and turned into the
Workload the Job integration would create for them (``controllers/jobs/batch_job``: name, pod set,
priority class, queue name), as upstream's ``jobframework`` reconciler does on a live cluster.

Objects exported from a cluster carry server-owned metadata (``uid``, ``creationTimestamp``,
``resourceVersion``, ...); a create refuses some of it, so it is removed before the request and the
state's own values are put back afterwards: the dry run orders workloads by the creation times the
state gives, not by when the throw-away store saw them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec

from pykueue.api import kueue as k
from pykueue.api.conversion import object_ref, to_external, to_internal
from pykueue.api.jobs import AncestorSearchError, find_managed_ancestor, is_managed
from pykueue.api.unmodelled import unmodelled_features
from pykueue.apiserver.app import APIServerApp
from pykueue.apiserver.handlers import APIRequest
from pykueue.apiserver.resources import ResourceInfo
from pykueue.controllers.jobs import batch_job as bj
from pykueue.controllers.options import ControllerOptions
from pykueue.core.events import NORMAL, WARNING, Event
from pykueue.core.workload import transitions
from pykueue.core.workload.info import is_finished
from pykueue.kube.status import StatusError
from pykueue.sim.cluster import LOAD_ORDER, stable_uid
from pykueue.store.store import Store

# The kinds a scheduling state is made of (besides batch/v1 Jobs, which become Workloads): the
# simulator's, in its load order.
STATE_KINDS = frozenset(LOAD_ORDER)
JOB_API_VERSION = "batch/v1"
JOB_KIND = "Job"

# Metadata the API server owns: removed before the create, the state's values restored after.
_SERVER_OWNED = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")
_USER_AGENT = "pykueue-schedule"


class StateError(ValueError):
    """An object of the state that the API server (or the Job integration) refuses."""


@dataclass(frozen=True)
class Document:
    """One object of a state file: its data and where it came from."""

    data: dict[str, Any]
    source: str
    index: int


@dataclass(frozen=True)
class AdmittedJob:
    """A ``batch/v1`` Job as the API server stored it, and the key of the Workload made for it."""

    job: dict[str, Any]
    workload_key: str | None
    """``namespace/name`` of its Workload; None when the Job integration does not manage the Job."""


@dataclass(frozen=True)
class AdmittedState:
    """The typed objects to load (with the apiVersion to print each in) and the Jobs seen."""

    objects: list[tuple[k.KueueObject, str]]
    jobs: list[AdmittedJob]
    warnings: list[str]
    """One line per use of a Kueue feature pykueue does not implement (:mod:`pykueue.api.unmodelled`),
    and per managed Job the Job integration makes no Workload for."""
    events: list[Event]
    """The Job integration's Events of the load (``CreatedWorkload``, ``WorkloadPriorityClassNotFound``)."""


def admit_state(
    documents: Sequence[Document], options: ControllerOptions, *, validate: bool = True, now: datetime | None = None
) -> AdmittedState:
    """Run every document through the API server's admission; turn Jobs into their Workloads.

    ``now`` stamps what the Job integration writes at load (a prebuilt Workload out of sync with its
    Job is finished then; default: the current time).

    Raises :class:`StateError` naming the file, the document, the object and the server's reason.
    """
    app = APIServerApp(Store(None, garbage_collection=False))
    app.bootstrap()
    admitter = _Admitter(app, options, "Strict" if validate else "Ignore", now or datetime.now(UTC))
    ordered = sorted(documents, key=lambda d: d.data.get("kind") != "Namespace")  # stable: file order
    # Declared Namespaces are created first, with their labels, so that the objects in them do not
    # create them implicitly before (which would make the declared one "already exists").
    for doc in ordered:
        if doc.data.get("kind") == "Namespace":
            admitter.admit(doc)
        else:
            admitter.ensure_namespace(doc)
    for doc in ordered:
        if doc.data.get("kind") != "Namespace":
            admitter.admit(doc)
    admitter.create_job_workloads()
    return AdmittedState(admitter.objects, admitter.jobs, admitter.warnings, admitter.events)


class _Admitter:
    def __init__(self, app: APIServerApp, options: ControllerOptions, field_validation: str, now: datetime) -> None:
        self.app = app
        self.now = now
        self.options = options
        self.field_validation = field_validation
        self.objects: list[tuple[k.KueueObject, str]] = []
        self.jobs: list[AdmittedJob] = []
        self.warnings: list[str] = []
        self.events: list[Event] = []
        self._job_docs: list[tuple[Document, dict[str, Any]]] = []
        self._namespaces: dict[str, dict[str, str]] = {}
        self._explicit_namespaces: set[str] = set()

    # -- requests -------------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        info: ResourceInfo,
        version: str,
        body: Mapping[str, Any],
        doc: Document,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        meta = body.get("metadata") or {}
        namespace = str(meta.get("namespace") or "") if info.namespaced else None
        req = APIRequest(
            method=method,
            group=info.group,
            version=version,
            resource=info.plural,
            namespace=namespace or None,
            name=str(meta.get("name") or "") if method == "PUT" else None,
            subresource=subresource,
            query={"fieldValidation": [self.field_validation]},
            user_agent=_USER_AGENT,
            body=msgspec.json.encode(body),
        )
        try:
            resp = self.app.handlers.handle(req)
        except StatusError as err:
            raise _state_error(doc, err.message) from None
        decoded: dict[str, Any] = msgspec.json.decode(resp.body) if resp.body else {}
        if resp.status >= 400:
            raise _state_error(doc, str(decoded.get("message") or decoded))
        return decoded

    def _info(self, doc: Document) -> tuple[ResourceInfo, str]:
        api_version, kind = doc.data.get("apiVersion"), doc.data.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str) or not kind or not api_version:
            raise _state_error(doc, "Object 'Kind' or 'apiVersion' is missing")
        info = self.app.backend.registry.by_api_version(api_version, kind)
        if info is None:
            raise _state_error(doc, f'no matches for kind "{kind}" in version "{api_version}"')
        if kind not in STATE_KINDS and (api_version, kind) != (JOB_API_VERSION, JOB_KIND):
            raise _state_error(
                doc,
                f"{kind} is not part of a scheduling state: pykueue schedule reads "
                f"{', '.join(sorted(STATE_KINDS))} and batch/v1 Job",
            )
        return info, api_version.rpartition("/")[2]

    # -- namespaces -----------------------------------------------------------------------------

    def ensure_namespace(self, doc: Document) -> None:
        """Create Namespaces first (explicit ones through admission, implicit ones for content)."""
        if doc.data.get("kind") == "Namespace":
            return
        meta = doc.data.get("metadata")
        ns = meta.get("namespace") if isinstance(meta, dict) else None
        if not isinstance(ns, str) or not ns or ns in self._namespaces:
            return
        existing = self._get_namespace(ns)
        if existing is None:
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            info = self.app.backend.registry.by_api_version("v1", "Namespace")
            assert info is not None
            existing = self._request("POST", info, "v1", body, doc)
        self._namespaces[ns] = dict((existing.get("metadata") or {}).get("labels") or {})

    def _get_namespace(self, name: str) -> dict[str, Any] | None:
        req = APIRequest(method="GET", group="", version="v1", resource="namespaces", name=name,
                         user_agent=_USER_AGENT)
        try:
            resp = self.app.handlers.handle(req)
        except StatusError:
            return None
        if resp.status >= 400:
            return None
        decoded: dict[str, Any] = msgspec.json.decode(resp.body)
        return decoded

    # -- objects --------------------------------------------------------------------------------

    def admit(self, doc: Document) -> None:
        info, version = self._info(doc)
        data = copy.deepcopy(doc.data)
        meta = data.get("metadata")
        if not isinstance(meta, dict):
            raise _state_error(doc, "metadata: Required value: name or generateName is required")
        owned = {key: meta.pop(key) for key in _SERVER_OWNED if key in meta}
        status = data.pop("status", None) if info.status_subresource else None
        stored = self._request("POST", info, version, data, doc)
        if status:
            stored["status"] = status
            stored = self._request("PUT", info, version, stored, doc, subresource="status")
        restored = _restore_metadata(stored, owned)
        where = _location(doc)
        self.warnings.extend(f"{where}: {u.message}" for u in unmodelled_features(info.group, info.kind, restored))
        if doc.data.get("kind") == JOB_KIND:
            self._job_docs.append((doc, restored))
            return
        if doc.data.get("kind") == "Namespace":
            name = str(restored["metadata"]["name"])
            self._namespaces[name] = dict(restored["metadata"].get("labels") or {})
        typed, _ = to_internal(restored)
        self.objects.append((typed, str(doc.data["apiVersion"])))

    # -- the Job integration --------------------------------------------------------------------

    def create_job_workloads(self) -> None:
        """The Workload the Job integration creates for each managed top-level Job (jobframework ``ConstructWorkload``)."""
        wpcs = {
            obj.metadata.name: obj for obj, _ in self.objects if isinstance(obj, k.WorkloadPriorityClass)
        }
        pcs = {obj.metadata.name: obj for obj, _ in self.objects if isinstance(obj, k.PriorityClass)}
        gates = self.options.scheduler.gates
        jobs = {(str(j["metadata"].get("namespace") or ""), str(j["metadata"]["name"])): j for _, j in self._job_docs}
        for doc, job in self._job_docs:
            meta = job["metadata"]
            if not self._managed(job) or self._has_managed_ancestor(job, jobs):
                self.jobs.append(AdmittedJob(job, None))
                continue
            prebuilt = bj.prebuilt_workload_name(job, gates.enabled("WorkloadIdentifierAnnotations"))
            if prebuilt is not None:
                self.jobs.append(AdmittedJob(job, self._use_prebuilt(job, prebuilt)))
                continue
            owned = self._matching_owned_workload(job)
            if owned is not None:
                self.jobs.append(AdmittedJob(job, owned))
                continue
            priority = bj.resolve_priority(job, wpcs.get, pcs.get, pcs.values())
            if isinstance(priority, bj.PriorityError):
                # Upstream's ``ExtractPriority`` fails: no Workload, the Job stays suspended (and a
                # missing WorkloadPriorityClass is a Warning Event on the Job).
                if priority.event_reason is not None:
                    self.events.append(_job_event(job, WARNING, priority.event_reason, priority.message))
                self.warnings.append(f"{_location(doc)}: {priority.message}: the Job integration creates no Workload for it")
                self.jobs.append(AdmittedJob(job, None))
                continue
            wl = bj.construct_workload(
                job,
                priority,
                self.options.label_keys_to_copy,
                partial_admission=gates.enabled("PartialAdmission"),
                short_workload_names=gates.enabled("ShortWorkloadNames"),
            )
            if meta.get("creationTimestamp"):
                wl.metadata = msgspec.structs.replace(wl.metadata, creation_timestamp=meta["creationTimestamp"])
            data: dict[str, Any] = to_external(wl)
            self.admit(Document(data, doc.source, doc.index))
            self.events.append(_job_event(job, NORMAL, bj.EVENT_CREATED_WORKLOAD, bj.created_workload_message(wl)))
            self.jobs.append(AdmittedJob(job, f"{wl.metadata.namespace}/{wl.metadata.name}"))

    def _is_equivalent(self, job: Mapping[str, Any], wl: k.Workload) -> bool:
        """``EquivalentToWorkload`` under this state's gates and ResourceFlavors."""
        gates = self.options.scheduler.gates
        flavors = {obj.metadata.name: obj for obj, _ in self.objects if isinstance(obj, k.ResourceFlavor)}
        return bj.is_equivalent(
            job,
            wl,
            flavors,
            assign_queue_labels=gates.enabled("AssignQueueLabelsForPods"),
            tas_enabled=gates.enabled("TopologyAwareScheduling"),
            partial_admission=gates.enabled("PartialAdmission"),
            finish_orphaned_workloads=gates.enabled("FinishOrphanedWorkloads"),
        )

    def _matching_owned_workload(self, job: dict[str, Any]) -> str | None:
        """``ensureOneWorkload``'s ``FindMatchingWorkloads``: a Workload of the state the Job already
        controls and that matches it is the Job's Workload (none is created). A controlled Workload
        that does not match is left as it is (upstream deletes or rewrites it): a warning says so."""
        meta = job["metadata"]
        ns, name = str(meta.get("namespace") or ""), str(meta["name"])
        for obj, _ in self.objects:
            if not isinstance(obj, k.Workload) or obj.metadata.namespace != ns:
                continue
            owner = next((r for r in obj.metadata.owner_references if r.controller), None)
            if owner is None or (owner.kind, owner.name) != ("Job", name) or owner.api_version.partition("/")[0] != "batch":
                continue
            if self._is_equivalent(job, obj):
                return f"{ns}/{obj.metadata.name}"
            self.warnings.append(
                f'Job "{ns}/{name}": the Workload "{ns}/{obj.metadata.name}" it controls does not match it; '
                "pykueue schedule leaves it as it is and creates the Job's Workload beside it"
            )
        return None

    def _use_prebuilt(self, job: dict[str, Any], name: str) -> str | None:
        """``ensureOneWorkload``'s prebuilt path: the Workload the Job names, made controlled by it
        (``EnsurePrebuiltWorkloadOwnership``), or None when it is missing or controlled by another
        object (``handleJobWithNoWorkload``: the Job stays stopped, nothing is created) or out of
        sync with the Job (``ensurePrebuiltWorkloadInSync`` finishes it ``OutOfSync``)."""
        meta = job["metadata"]
        ns = str(meta.get("namespace") or "")
        found = next(
            (
                (i, obj)
                for i, (obj, _) in enumerate(self.objects)
                if isinstance(obj, k.Workload) and obj.metadata.namespace == ns and obj.metadata.name == name
            ),
            None,
        )
        if found is None:
            self.warnings.append(f'Job "{ns}/{meta["name"]}": its prebuilt Workload "{ns}/{name}" does not exist')
            return None
        i, wl = found
        owner = next((r for r in wl.metadata.owner_references if r.controller), None)
        if owner is not None and owner.uid != meta.get("uid"):
            return None
        adopted = bj.adopt_prebuilt(job, wl)
        if adopted is not None:
            wl = adopted
        if not self._is_equivalent(job, wl):
            if not is_finished(wl):
                wl = transitions.copy_for_status(wl)
                transitions.set_condition(wl, "Finished", "True", bj.FINISHED_OUT_OF_SYNC, bj.PREBUILT_OUT_OF_SYNC, self.now)
            self.objects[i] = (wl, self.objects[i][1])
            return None
        self.objects[i] = (wl, self.objects[i][1])
        return f"{ns}/{name}"

    def _has_managed_ancestor(
        self, job: Mapping[str, Any], jobs: Mapping[tuple[str, str], Mapping[str, Any]]
    ) -> bool:
        """``FindAncestorJobManagedByKueue`` over the state's Jobs: a child of a Kueue-managed Job gets
        no Workload of its own (its ancestor's stands for it); a queued child of an unmanaged Job
        is a top-level Job. A failed walk (missing owner, cycle, too deep) makes no Workload either:
        upstream's reconciler returns the error and retries."""
        ns = str((job.get("metadata") or {}).get("namespace") or "")
        try:
            found = find_managed_ancestor(
                job, lambda name: jobs.get((ns, name)), self.options.manage_jobs_without_queue_name
            )
        except AncestorSearchError:
            return True
        return found is not None

    def _managed(self, job: Mapping[str, Any]) -> bool:
        ns = str((job.get("metadata") or {}).get("namespace") or "")
        labels = self._namespaces.get(ns)  # the server sets kubernetes.io/metadata.name
        selector = self.options.managed_jobs_namespace_selector
        return is_managed(job, labels, selector, self.options.manage_jobs_without_queue_name)


def _restore_metadata(stored: dict[str, Any], owned: Mapping[str, Any]) -> dict[str, Any]:
    """The stored object with the state's own uid, creationTimestamp and generation.

    The throw-away store's uid is random and may have been copied into the object (a Job's
    generated selector and ``controller-uid`` labels); every copy is replaced by the state's uid,
    or a stable one derived from kind/namespace/name, so a dry run prints the same every time.
    """
    meta = stored.get("metadata") or {}
    random_uid = str(meta.get("uid") or "")
    uid = str(owned.get("uid") or stable_uid(str(stored.get("kind")), meta.get("namespace", ""), meta.get("name", "")))
    if random_uid:
        stored = msgspec.json.decode(msgspec.json.encode(stored).replace(random_uid.encode(), uid.encode()))
    meta = stored.setdefault("metadata", {})
    for key in _SERVER_OWNED:
        meta.pop(key, None)
    meta["uid"] = uid
    for key in ("creationTimestamp", "generation"):
        if key in owned:
            meta[key] = owned[key]
    return stored


def _location(doc: Document) -> str:
    ref = object_ref(doc.data) if isinstance(doc.data, dict) else ""
    where = f"{doc.source}: document {doc.index}"
    return f"{where}: {ref}" if ref else where


def _job_event(job: Mapping[str, Any], type_: str, reason: str, note: str) -> Event:
    """An Event of the batch/v1 Job integration about ``job``."""
    meta = job["metadata"]
    return Event(str(meta.get("namespace") or ""), str(meta["name"]), type_, reason, note, kind="Job", controller=bj.JOB_CONTROLLER)


def _state_error(doc: Document, message: str) -> StateError:
    return StateError(f"{_location(doc)}: {message}")

