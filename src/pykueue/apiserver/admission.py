"""Admission control that reads other objects: the seam between the registry and the store.

Most of a resource's behaviour (:class:`pykueue.apiserver.resources.Behaviour`) is a pure
function of the object, so the registry can be used without a store (``pykueue schedule``, unit
tests, the CRD generator). Some of Kueue's webhooks are not: the batch/v1 Job webhook defaults
the queue-name label only when the namespace has a LocalQueue named ``default``, and walks the
Job's owners. Those webhooks get a :data:`Lookup` from the request handlers for the duration of
one request instead of holding the store themselves, which keeps the registry free of state and
of a dependency on :mod:`pykueue.store`.

Order in the request path (as kube-apiserver): defaulting → create-time preparation →
managedFields → **mutating admission** (create only: kube-apiserver's LimitRanger on Pods, the Job
webhook, and Kueue's defaulting webhooks of ClusterQueue, ResourceFlavor and Workload) → built-in or CRD validation →
**validating admission** (create and main-resource update; ``/status`` writes are not sent to the
webhooks emulated here, whose rules name only the main resource) → store. (Kueue's own kinds'
validating webhooks run with the CRD validation, :class:`Write` telling them the subresource.)
managedFields are recorded before the mutating webhooks, so fields a webhook sets are owned by
no manager, as on a real cluster; the validation sees what the mutating webhooks made of the
object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykueue.api.feature_gates import FeatureGates
from pykueue.api.validation import ValidationFailed

Obj = dict[str, Any]

Lookup = Callable[[str, str, str, str], "Obj | None"]
"""``lookup(group, plural, namespace, name)``: the stored object (storage version) or None.

``namespace`` is ignored for cluster-scoped resources; resources the server does not serve read
as missing. The returned dict is the caller's own copy.
"""

Lister = Callable[[str, str, str], "list[Obj]"]
"""``lister(group, plural, namespace)``: the stored objects of one namespace (storage version; none
for a resource the server does not serve). kube-apiserver's own admission plugins read listers
(LimitRanger lists the namespace's LimitRanges)."""

Mutator = Callable[[Obj, Lookup, FeatureGates], None]
"""Mutating admission on create: changes the (storage-version) object in place; the gates are the
server's (Kueue's webhooks read the controller manager's feature gates).

Raises :class:`pykueue.kube.status.StatusError` to deny the request with a specific status.
"""

Validator = Callable[[Obj, "Obj | None", Lookup, FeatureGates], "ValidationFailed | None"]
"""Validating admission: ``(new, old or None on create, lookup, gates)`` → the denial, or None."""

PluginMutator = Callable[[Obj, Lister], None]
"""A kube-apiserver admission plugin's mutation on create (in place)."""

PluginValidator = Callable[[Obj, "Obj | None", Lister], None]
"""A kube-apiserver admission plugin's validation: raises its :class:`StatusError` denial."""


@dataclass(frozen=True)
class Admission:
    """The admission webhooks of one resource that need to read the cluster."""

    name: str
    """What the webhooks emulate (for logs and docs), e.g. ``kueue batch/v1 Job webhook``."""
    mutate: Mutator | None = None
    validate: Validator | None = None
    plugin_mutate: PluginMutator | None = None
    """kube-apiserver's own mutating plugin (e.g. LimitRanger), run before :attr:`mutate` as the
    plugins run before the webhooks."""
    plugin_validate: PluginValidator | None = None
    """kube-apiserver's own validating plugin, run before :attr:`validate`."""


@dataclass(frozen=True)
class Write:
    """The request a validated object comes from (kube-apiserver's admission attributes).

    ``version``: the version it was written in (empty: the storage version); ``subresource``:
    None for the main resource; ``written``/``written_old``: the object as written in
    ``version`` (merged with the stored object per subresource, that version's defaults applied)
    and the stored object in ``version`` — set when ``version`` is not the storage version, whose
    CRD schema and rules then apply (:func:`pykueue.api.validation.validate_written_schema`).
    A write in the storage version may carry ``written`` alone (merged, without defaults): the
    CEL rules read which fields it has (:func:`pykueue.api.validation.has_written`).
    """

    version: str = ""
    subresource: str | None = None
    written: Obj | None = None
    written_old: Obj | None = None
    warnings: list[str] | None = None
    """Where the validation puts the request's warnings (a CEL rule's error on a value the update
    left as it was: kube-apiserver's ratcheting turns it into a warning); None: dropped."""


MAIN_WRITE = Write()
"""A write of the main resource in the storage version."""
