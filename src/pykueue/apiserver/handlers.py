"""Resource request handlers: the kube-apiserver request path for one resource request.

``decode → (patch) → prune/check fields → required fields (in the version written) → convert to
the storage version → default → managedFields → mutating admission (create) → validate →
validating admission → store → convert to the requested version → JSON / YAML / Table``.

Handlers are plain synchronous functions over an :class:`APIRequest`; the HTTP layer calls them
through :meth:`Handlers.handle_async` (on the event-loop thread, large LISTs on a worker thread,
answers once durable); only watch returns a stream. Every failure is an
:class:`~pykueue.kube.status.StatusError` rendered as a ``Status`` by the HTTP layer.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard, TypeVar

import msgspec
import yaml

from pykueue.api.feature_gates import DEFAULT_GATES, FeatureGates
from pykueue.api.kueue import GROUP as KUEUE_GROUP
from pykueue.api.manifests import KubeDumper, KubeLoader
from pykueue.api.unmodelled import unmodelled_features
from pykueue.api.validation import QUANTITY_PATTERN, TYPE_INVALID, FieldError, ValidationFailed
from pykueue.apiserver import errors as E
from pykueue.apiserver import protobuf, watch
from pykueue.apiserver.admission import MAIN_WRITE, Lister, Lookup, Write
from pykueue.apiserver.builtin import schema as sch
from pykueue.apiserver.builtin.schema import json_type
from pykueue.apiserver.discovery import parse_accept
from pykueue.apiserver.namespace_lifecycle import NamespaceLifecycle
from pykueue.kube.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from pykueue.kube.status import StatusError, success_status
from pykueue.store.errors import OBJECT_MODIFIED, conflict, not_found
from pykueue.store.ops import GENERATED_SUFFIX_ALPHABET, MAX_GENERATED_NAME_LENGTH

T = TypeVar("T")
_json_decode = msgspec.json.decode
_json_encode = msgspec.json.encode

JSON = "application/json"
YAML = "application/yaml"
TABLE_V1 = "application/json;as=Table;v=v1;g=meta.k8s.io"
TABLE_V1BETA1 = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
APPLY_PATCH_CBOR = "application/apply-patch+cbor"
FIELD_VALIDATION = ("Strict", "Warn", "Ignore")
PROPAGATION = ("Orphan", "Background", "Foreground")
MAX_MANAGER_LEN = 128
MAX_YAML_NODES = 1_000_000
MAX_NESTING_DEPTH = 100
"""Objects and arrays nested deeper than this are refused (400) when decoded. Go's decoder stops at
10,000 (``exceeded max depth``); the request path here walks objects recursively, so the bound is
set well inside Python's recursion limit and far above any Kubernetes object's real depth."""
BODY_MEDIA_TYPES = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
"""Namespaces the NamespaceLifecycle admission plugin refuses to delete."""
ALLOW_CREATE_ON_UPDATE = frozenset(
    {("coordination.k8s.io", "leases"), ("", "events"), ("events.k8s.io", "events")}
)
VERB_OF_METHOD = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
LARGE_LIST = 500
"""Collections larger than this are listed on a worker thread, not on the event loop."""
LIST_ENCODE_CHUNK = 200
"""Items encoded per call when building a large list body (each call holds the GIL)."""
SKIP_UNCHANGED_MEMBERS = True
"""Whether the pruning walk of a status update skips the members equal to the live object's (the
full walk stays for the tests to compare with)."""
_WALKED_ALWAYS = frozenset({"apiVersion", "kind", "metadata", "status"})
STATUS_ONLY_DEFAULTING = True
"""Whether a status update defaults only the status when the kind can (the general path, which
defaults the whole object, stays for the tests to compare with)."""
ORPHAN_BY_DEFAULT = frozenset({("batch", "jobs")})
"""batch/v1 Jobs orphan their dependents unless the client chooses (``DefaultGarbageCollectionPolicy``)."""


# --- the HTTP layer's view of a request ------------------------------------------------------------


_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})


@dataclass
class APIRequest:
    """A parsed resource request (path already split by the HTTP layer)."""

    method: str
    group: str
    version: str
    resource: str
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    watch_prefix: bool = False
    query: Mapping[str, Sequence[str]] = field(default_factory=dict)
    content_type: str = JSON
    accept: str = JSON
    user_agent: str = ""
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)

    def param(self, name: str) -> str | None:
        """The last value of a query parameter (None if absent)."""
        values = self.query.get(name)
        return values[-1] if values else None

    def flag(self, name: str) -> bool:
        """A boolean query parameter (``true``/``1``)."""
        value = self.param(name)
        return value is not None and value.lower() in ("true", "1")


@dataclass
class APIResponse:
    """What the HTTP layer sends back: an encoded body or a stream."""

    status: int
    body: bytes = b""
    content_type: str = JSON
    warnings: list[str] = field(default_factory=list)
    stream: Any = None  # AsyncIterator[bytes] for watches


@dataclass(frozen=True)
class OutputFormat:
    """The negotiated representation: ``json``, ``yaml``, ``table`` or ``partial`` (metadata only)."""

    kind: str
    content_type: str
    meta_version: str = "v1"


# --- protocols of the modules this one drives -------------------------------------------------------


class ResourceInfo(Protocol):
    """``pykueue.apiserver.resources.ResourceInfo`` (docs/design/control-plane.md §2)."""

    group: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    versions: tuple[str, ...]
    storage_version: str
    short_names: tuple[str, ...]
    categories: tuple[str, ...]
    status_subresource: bool
    builtin: bool
    deprecated_versions: dict[str, str]
    verbs: tuple[str, ...]

    def key(self) -> Any: ...
    def to_storage(self, obj: Mapping[str, Any]) -> dict[str, Any]: ...
    def from_storage(self, obj: Mapping[str, Any], version: str) -> dict[str, Any]: ...
    def default(self, obj: dict[str, Any]) -> dict[str, Any]: ...
    def default_status(self, obj: dict[str, Any]) -> dict[str, Any] | None: ...
    def prepare_for_create(self, obj: dict[str, Any]) -> dict[str, Any]: ...
    def default_for_create(self, obj: dict[str, Any]) -> dict[str, Any]: ...
    def validation_failure(
        self,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        *,
        gates: FeatureGates = DEFAULT_GATES,
        types_checked: bool = False,
        missing: Sequence[FieldError] = (),
        write: Write = MAIN_WRITE,
    ) -> ValidationFailed | None: ...
    @property
    def missing_required_checked(self) -> bool: ...
    def missing_required(
        self, obj: Mapping[str, Any], old: Mapping[str, Any] | None, version: str
    ) -> list[FieldError]: ...
    def admit(
        self,
        obj: dict[str, Any],
        lookup: Lookup,
        *,
        gates: FeatureGates = DEFAULT_GATES,
        lister: Lister | None = None,
    ) -> None: ...
    def admission_failure(
        self,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        lookup: Lookup,
        *,
        gates: FeatureGates = DEFAULT_GATES,
        lister: Lister | None = None,
    ) -> ValidationFailed | None: ...
    def openapi_schema(self, version: str) -> Any: ...
    def openapi_errors(self, obj: Mapping[str, Any], version: str) -> list[FieldError]: ...
    def selectable_fields_for(self, version: str) -> tuple[str, ...]: ...
    def field_value(self, obj: Mapping[str, Any], label: str) -> str | None: ...


class Backend(Protocol):
    """The registry/tables/patch functions the handlers call (adapted in :mod:`app`)."""

    def lookup(self, group: str, version: str, plural: str) -> ResourceInfo | None: ...
    def resources(self) -> Sequence[ResourceInfo]: ...
    def schema_resolver(self, info: ResourceInfo, version: str) -> Resolver: ...
    def to_table(
        self, info: ResourceInfo, objs: list[dict[str, Any]], version: str, include_object: str
    ) -> dict[str, Any]: ...
    def json_patch(self, obj: dict[str, Any], ops: list[Any]) -> dict[str, Any]: ...
    def merge_patch(self, obj: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]: ...
    def strategic_merge_patch(
        self, info: ResourceInfo, version: str, obj: dict[str, Any], patch: dict[str, Any]
    ) -> dict[str, Any]: ...
    def server_side_apply(
        self,
        info: ResourceInfo,
        version: str,
        live: dict[str, Any] | None,
        applied: dict[str, Any],
        manager: str,
        force: bool,
        subresource: str | None = None,
    ) -> dict[str, Any]: ...
    def update_managed_fields(
        self,
        info: ResourceInfo,
        version: str,
        old: dict[str, Any] | None,
        new: dict[str, Any],
        manager: str,
        subresource: str | None,
    ) -> None: ...
    def patch_error(self, err: Exception) -> StatusError | None: ...


# --- media negotiation and body decoding -------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def negotiate(accept: str) -> OutputFormat:
    """Pick the response representation from an ``Accept`` header (protobuf falls back to JSON).

    Memoised (clients send a handful of distinct headers; every request negotiates twice).
    """
    if not accept:
        return OutputFormat("json", JSON)
    fallback = False
    for media in parse_accept(accept):
        as_ = media.params.get("as")
        if media.type in (JSON, "application/*", "*/*", "application/vnd.kubernetes.protobuf"):
            if as_ is None:
                return OutputFormat("json", JSON)
            if as_ == "Table" and media.params.get("g") == "meta.k8s.io":
                ver = media.params.get("v", "v1")
                if ver in ("v1", "v1beta1"):
                    return OutputFormat("table", TABLE_V1 if ver == "v1" else TABLE_V1BETA1, ver)
            if (
                as_ in ("PartialObjectMetadata", "PartialObjectMetadataList")
                and media.params.get("g") == "meta.k8s.io"
            ):
                ver = media.params.get("v", "v1")
                if ver in ("v1", "v1beta1"):
                    return OutputFormat("partial", f"{JSON};as={as_};v={ver};g=meta.k8s.io", ver)
            fallback = True
        elif media.type in (YAML, "application/x-yaml", "text/yaml"):
            return OutputFormat("yaml", YAML)
        elif media.type.startswith("application/vnd.kubernetes.protobuf") or media.type == "application/cbor":
            fallback = True
    if fallback:
        return OutputFormat("json", JSON)
    raise E.not_acceptable()


def media_type(content_type: str) -> str:
    """The bare media type of a ``Content-Type`` header."""
    return content_type.split(";", 1)[0].strip().lower()


def decode_document(body: bytes, content_type: str) -> Any:
    """Decode a JSON, YAML or protobuf request body: 415 for another or no ``Content-Type``, 400
    for a malformed body (bad syntax, invalid UTF-8, nesting deeper than :data:`MAX_NESTING_DEPTH`)."""
    mtype = media_type(content_type)
    if not mtype:  # a browser's no-cors request sends none; kube-apiserver would assume JSON
        raise E.unsupported_media_type(mtype, BODY_MEDIA_TYPES)
    if not body.strip():
        raise E.bad_request("the request body is empty: an object is required")
    if mtype in (JSON, MERGE_PATCH, JSON_PATCH, STRATEGIC_PATCH) or mtype.endswith("+json"):
        try:
            doc = _json_decode(body)
        except UnicodeDecodeError as err:
            raise E.bad_request(f"error decoding JSON: invalid UTF-8 in a string: {err}") from None
        except RecursionError:
            raise E.bad_request(f"error decoding JSON: {_too_deep()}") from None
        except (msgspec.DecodeError, ValueError) as err:
            raise E.bad_request(f"error decoding JSON: {err}") from None
        _check_depth(body, doc, "error decoding JSON")
        return doc
    if mtype in (YAML, "application/x-yaml", "text/yaml", APPLY_PATCH):
        doc = _decode_yaml(body)
        _check_depth(None, doc, "error converting YAML to JSON")  # block style nests without brackets
        return doc
    if mtype == protobuf.CONTENT_TYPE:
        try:
            doc = protobuf.decode_object(body)
        except protobuf.ProtobufError as err:
            if err.unsupported:
                raise E.unsupported_media_type(mtype, f"application/json, application/yaml ({err})") from None
            raise E.bad_request(f"error decoding protobuf: {err}") from None
        except (UnicodeDecodeError, RecursionError, ValueError, msgspec.DecodeError) as err:
            raise E.bad_request(f"error decoding protobuf: {err}") from None
        _check_depth(None, doc, "error decoding protobuf")
        return doc
    raise E.unsupported_media_type(mtype, BODY_MEDIA_TYPES)


def _too_deep() -> str:
    return f"exceeded max depth: objects and arrays may be nested at most {MAX_NESTING_DEPTH} deep"


def _nesting_bound(body: bytes, opened: int | None = None) -> int:
    """An upper bound of how deep the document of a JSON text nests, from C-speed counts
    (``opened``: the text's ``{`` and ``[`` when the caller has counted them).

    Every container on the deepest chain but the innermost holds the next, so is not empty: the
    depth is at most one more than the non-empty containers. Each ``{}``/``[]`` in the text is an
    empty container or lies in a string, whose brackets are counted among the openings too.
    """
    if opened is None:
        opened = body.count(b"{") + body.count(b"[")
    return opened - body.count(b"{}") - body.count(b"[]") + 1


def _shallow_text(body: bytes) -> bool:
    """``_nesting_bound(body) <= MAX_NESTING_DEPTH``, from the openings alone when they are few
    enough: the empty pairs only lower the bound, and their two-byte counts cost three times the
    one-byte ones (as much as decoding the body of a Workload's status PUT)."""
    opened = body.count(b"{") + body.count(b"[")
    if opened < MAX_NESTING_DEPTH:
        return True
    return _nesting_bound(body, opened) <= MAX_NESTING_DEPTH


def _check_depth(body: bytes | None, doc: Any, prefix: str) -> None:
    """400 when ``doc`` nests deeper than :data:`MAX_NESTING_DEPTH` (iterative: no recursion)."""
    if body is not None and _shallow_text(body):
        # Too few brackets in the JSON text to nest that deep (empty ones do not count: the
        # managedFields of an object hold over a hundred, and walking every status update's
        # document was a tenth of its cost).
        return
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_NESTING_DEPTH:
            raise E.bad_request(f"{prefix}: {_too_deep()}")
        stack.extend((child, depth + 1) for child in children)


def _decode_yaml(body: bytes) -> Any:
    try:
        text = body.decode("utf-8")
        docs = [d for d in yaml.load_all(text, Loader=KubeLoader) if d is not None]
    except RecursionError:
        raise E.bad_request(f"error converting YAML to JSON: {_too_deep()}") from None
    except (yaml.YAMLError, UnicodeDecodeError, ValueError) as err:
        raise E.bad_request(f"error converting YAML to JSON: {err}") from None
    if len(docs) != 1:
        raise E.bad_request("error converting YAML to JSON: expected exactly one YAML document")
    if _expanded_size(docs[0], MAX_YAML_NODES) > MAX_YAML_NODES:
        raise E.bad_request("error converting YAML to JSON: yaml: document contains excessive aliasing")
    try:  # only JSON-compatible values (no YAML-specific types such as binary or sets)
        return _json_decode(_json_encode(docs[0]))
    except RecursionError:
        raise E.bad_request(f"error converting YAML to JSON: {_too_deep()}") from None
    except (TypeError, msgspec.EncodeError, msgspec.DecodeError, OverflowError) as err:
        raise E.bad_request(f"error converting YAML to JSON: {err}") from None


_PRINTABLE_ASCII = bytes(range(0x20, 0x7F))
_SPACE_RUN = b" " * 16


def _not_plain(body: bytes) -> bool:
    r"""Whether ``body`` holds a byte outside printable ASCII (line breaks and tabs included), a
    backslash, or a run of 16 spaces: what :func:`_plain_json` leaves to the YAML decoder. Three
    C-speed scans (the regular expression ``[^\x20-\x7e]|\\| {16}`` tried its alternatives at
    every byte: ten times the cost on a runner's 400-byte apply)."""
    return bool(body.translate(None, _PRINTABLE_ASCII)) or b"\\" in body or _SPACE_RUN in body

_MAX_PLAIN_KEY = 1000
"""Keys longer than this are left to the YAML decoder: YAML takes a key only when its ``:``
follows within 1024 characters of its start (libyaml's simple keys)."""


def _plain_json(body: bytes) -> Any:
    """The document of a YAML body that is plain JSON, decoded as JSON; None when the body is
    not, or may decode differently as YAML (then :func:`decode_document` reads it).

    Every apply request of a Go client (``client.Apply``: JSON sent as
    ``application/apply-patch+yaml``) came through the YAML decoder, the largest part of an apply's
    cost. For a JSON object of printable ASCII on one line, without escapes, floats, long keys
    or long runs of spaces, YAML gives the same values as JSON (quoted strings are taken as they
    are, integers, booleans and null resolve alike, duplicate keys keep the last value); anything
    else takes the YAML decoder as before, so its answers (and errors) are unchanged.
    """
    if body[:1] != b"{" or _not_plain(body):
        return None
    if not _shallow_text(body):
        return None
    try:
        doc = _json_decode(body)
    except (msgspec.DecodeError, ValueError, RecursionError):
        return None
    budget = [MAX_YAML_NODES]
    return doc if _plain_value(doc, budget) else None


def _plain_value(value: Any, budget: list[int]) -> bool:
    """Whether ``value`` holds no float and no key YAML could read differently (and, counting
    down ``budget``, no more nodes than :data:`MAX_YAML_NODES`)."""
    budget[0] -= 1
    if budget[0] < 0:
        return False
    if isinstance(value, dict):
        for key, member in value.items():
            if len(key) > _MAX_PLAIN_KEY or not _plain_value(member, budget):
                return False
        return True
    if isinstance(value, list):
        return all(_plain_value(item, budget) for item in value)
    return type(value) is not float


def decode_apply(body: bytes, content_type: str) -> Any:
    """:func:`decode_document` of a server-side apply body, JSON read directly when it is plain."""
    if media_type(content_type) == APPLY_PATCH:
        doc = _plain_json(body)
        if doc is not None:
            return doc
    return decode_document(body, content_type)


def _expanded_size(value: Any, budget: int) -> int:
    """Nodes of ``value`` with aliases expanded, counting no further than ``budget`` (alias bombs)."""
    count = 0
    stack = [value]
    while stack and count <= budget:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


def encode_yaml(obj: Any) -> bytes:
    """YAML rendering of a response object."""
    return yaml.dump(obj, Dumper=KubeDumper, sort_keys=False, allow_unicode=True).encode()


def group_version(group: str, version: str) -> str:
    """``group/version`` (``version`` for core)."""
    return f"{group}/{version}" if group else version


def _draw_generated_name(obj: Mapping[str, Any]) -> bool:
    """Give an object with only ``generateName`` a name as ``BeforeCreate`` does, so validation
    checks ``generateName`` and the generated name with the kind's name rules (True: drawn here)."""
    meta = _meta(obj)
    generate = meta.get("generateName")
    if meta.get("name") or not isinstance(generate, str) or not generate:
        return False
    suffix = "".join(random.choices(GENERATED_SUFFIX_ALPHABET, k=5))
    meta["name"] = generate[:MAX_GENERATED_NAME_LENGTH] + suffix
    return True


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _name_of(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    return str(meta.get("name") or meta.get("generateName") or "")


# --- handlers -----------------------------------------------------------------------------------------


class Handlers:
    """The resource endpoints of the API server."""

    def __init__(
        self,
        store: Any,
        backend: Backend,
        hub: watch.WatchHub,
        *,
        bookmark_interval: float = watch.DEFAULT_BOOKMARK_INTERVAL,
        gates: FeatureGates = DEFAULT_GATES,
    ) -> None:
        self.store = store
        self.backend = backend
        self.hub = hub
        self.bookmark_interval = bookmark_interval
        self.gates = gates
        """The feature gates Kueue's validating webhooks read (upstream's webhooks run in the
        controller manager and read its gates: the Configuration's ``featureGates``)."""
        self._namespace_info = backend.lookup("", "v1", "namespaces")
        self.namespaces = (
            NamespaceLifecycle(store, backend.resources(), self._namespace_info.key())
            if self._namespace_info is not None
            else None
        )
        self._by_resource: dict[tuple[str, str], ResourceInfo] = {}
        for info in backend.resources():
            self._by_resource.setdefault((info.group, info.plural), info)

    # -- dispatch ---------------------------------------------------------------------------------

    def handle(self, req: APIRequest) -> APIResponse:
        """Serve one resource request."""
        info = self._resolve(req)
        negotiate(req.accept)  # 406 before anything is done
        warnings: list[str] = []
        deprecation = info.deprecated_versions.get(req.version) if info.deprecated_versions else None
        if deprecation:
            warnings.append(deprecation)
        try:
            resp = self._route(req, info, warnings)
        except StatusError as err:  # the warnings go out with a failure too (a deprecated version's)
            err.warnings = warnings + [w for w in err.warnings if w not in warnings]
            raise
        if warnings:
            resp.warnings = warnings + [w for w in resp.warnings if w not in warnings]
        return resp

    async def handle_async(self, req: APIRequest) -> APIResponse:
        """:meth:`handle` for the event loop.

        A LIST of a large collection runs on a worker thread (reading, converting and encoding
        tens of thousands of objects would stop every other client for seconds); other requests
        run inline with the store's acknowledgements deferred, and the answer (an error too: a
        409 reveals what exists) waits until everything it may have seen or written is durable.
        """
        try:
            if self.runs_on_thread(req):
                return await asyncio.get_running_loop().run_in_executor(None, self.handle, req)
            return self.handle_deferred(req)
        finally:
            await self.store.wait_visible()

    def handle_deferred(self, req: APIRequest) -> APIResponse:
        """:meth:`handle` on the event loop with the store's acknowledgements deferred: the caller
        answers (an error too) only once ``store.when_visible`` or ``store.wait_visible`` says that
        everything it may have seen or written is durable."""
        with self.store.deferred_acks():
            return self.handle(req)

    def runs_on_thread(self, req: APIRequest) -> bool:
        """Whether :meth:`handle_async` serves ``req`` on a worker thread (a large LIST)."""
        if req.method != "GET" or req.name is not None or req.watch_prefix or req.flag("watch"):
            return False
        info = self.backend.lookup(req.group, req.version, req.resource)
        return info is not None and int(self.store.count(info.key())) > LARGE_LIST

    def _resolve(self, req: APIRequest) -> ResourceInfo:
        info = self.backend.lookup(req.group, req.version, req.resource)
        if info is None:
            raise E.path_not_found()
        if req.subresource is not None and (
            req.subresource != "status" or not info.status_subresource or req.name is None
        ):
            raise E.path_not_found()
        if not info.namespaced and req.namespace is not None:
            raise E.path_not_found()
        return info

    def _route(self, req: APIRequest, info: ResourceInfo, warnings: list[str]) -> APIResponse:
        method = req.method
        if self._verb(req) not in info.verbs:
            raise E.method_not_supported(info.group, info.plural, "")
        needs_ns = info.namespaced and req.namespace is None
        if method == "GET":
            if req.watch_prefix or req.flag("watch"):
                return self.watch_objects(req, info)
            if req.name is None:
                return self.list_objects(req, info)
            return self._require_ns(needs_ns) or self.get(req, info)
        if needs_ns and not (method == "DELETE" and req.name is None):
            raise E.path_not_found()
        if method == "POST":
            if req.name is not None:
                raise E.method_not_supported(info.group, info.plural, "")
            return self.create(req, info, warnings)
        if method in ("PUT", "PATCH") and req.name is None:
            raise E.method_not_supported(info.group, info.plural, "")
        if method == "PUT":
            return self.update(req, info, warnings)
        if method == "PATCH":
            return self.patch(req, info, warnings)
        if method == "DELETE":
            return self.delete(req, info) if req.name is not None else self.delete_collection(req, info)
        raise E.method_not_supported(info.group, info.plural, "")

    @staticmethod
    def _verb(req: APIRequest) -> str:
        """The Kubernetes verb of a request (``RequestInfo.Verb``)."""
        if req.method == "GET":
            if req.watch_prefix or req.flag("watch"):
                return "watch"
            return "get" if req.name is not None else "list"
        if req.method == "DELETE" and req.name is None:
            return "deletecollection"
        return VERB_OF_METHOD.get(req.method, "")

    @staticmethod
    def _require_ns(needs_ns: bool) -> None:
        if needs_ns:
            raise E.path_not_found()

    # -- output -----------------------------------------------------------------------------------

    def to_version(self, info: ResourceInfo, obj: dict[str, Any], version: str) -> dict[str, Any]:
        """A stored object in a served version."""
        return info.from_storage(obj, version)

    def respond(
        self, req: APIRequest, info: ResourceInfo, obj: dict[str, Any], status: int = 200
    ) -> APIResponse:
        """One object (already in the request version) in the negotiated representation.

        The answer to a write of an object that asks for a Kueue feature pykueue does not
        implement carries a ``Warning`` naming it (:mod:`pykueue.api.unmodelled`).
        """
        fmt = negotiate(req.accept)
        if fmt.kind == "table":
            table = self.backend.to_table(info, [obj], req.version, req.param("includeObject") or "Metadata")
            table["apiVersion"] = f"meta.k8s.io/{fmt.meta_version}"
            resp = APIResponse(status, _json_encode(table), fmt.content_type)
        elif fmt.kind == "partial":
            resp = APIResponse(status, _json_encode(partial_metadata(obj, fmt.meta_version)), fmt.content_type)
        elif fmt.kind == "yaml":
            resp = APIResponse(status, encode_yaml(obj), YAML)
        else:
            resp = APIResponse(status, _json_encode(obj), JSON)
        if req.method in _WRITE_METHODS and req.subresource is None:
            resp.warnings.extend(u.message for u in unmodelled_features(info.group, info.kind, obj))
        return resp

    def respond_status(self, req: APIRequest, status: dict[str, Any]) -> APIResponse:
        """A ``Status`` body (JSON or YAML)."""
        fmt = negotiate(req.accept)
        if fmt.kind == "yaml":
            return APIResponse(int(status.get("code", 200)), encode_yaml(status), YAML)
        return APIResponse(int(status.get("code", 200)), _json_encode(status), JSON)

    # -- read -------------------------------------------------------------------------------------

    def get(self, req: APIRequest, info: ResourceInfo) -> APIResponse:
        """GET one object."""
        obj = self._get(info, req.namespace or "", req.name or "")
        return self.respond(req, info, self.to_version(info, obj, req.version))

    def _get(self, info: ResourceInfo, namespace: str, name: str) -> dict[str, Any]:
        try:
            obj: dict[str, Any] = self.store.get(info.key(), namespace, name)
        except Exception as err:
            raise self._store_error(err, info, name) from None
        return obj

    def _selectors(self, req: APIRequest, info: ResourceInfo) -> tuple[LabelSelector, FieldSelector]:
        try:
            labels = parse_label_selector(req.param("labelSelector"))
            fields = parse_field_selector(
                req.param("fieldSelector"),
                self._selectable(info, req.version),
                group=info.group,
                resource=info.plural,
                builtin=info.builtin,
                getter=info.field_value,
            )
        except SelectorError as err:
            raise E.bad_request(str(err)) from None
        return labels, fields

    @staticmethod
    def _selectable(info: ResourceInfo, version: str) -> tuple[str, ...]:
        return tuple(info.selectable_fields_for(version))

    def list_objects(self, req: APIRequest, info: ResourceInfo) -> APIResponse:
        """GET a collection (label/field selectors, limit/continue, all namespaces)."""
        labels, fields = self._selectors(req, info)
        limit = self._int_param(req, "limit")
        self._check_resource_version(req)
        try:
            items, revision, token = self.store.list(
                info.key(),
                req.namespace,
                label_selector=req.param("labelSelector") if not labels.empty else None,
                field_selector=fields.matches if not fields.empty else None,
                limit=limit if limit and limit > 0 else None,
                continue_token=req.param("continue") or None,
            )
        except Exception as err:
            raise self._store_error(err, info, "") from None
        converted = [self.to_version(info, o, req.version) for o in items]
        return self._list_response(req, info, converted, revision, token)

    def _list_response(
        self,
        req: APIRequest,
        info: ResourceInfo,
        items: list[dict[str, Any]],
        revision: int,
        token: str | None,
    ) -> APIResponse:
        meta: dict[str, Any] = {"resourceVersion": str(revision)}
        if token:
            meta["continue"] = token
        fmt = negotiate(req.accept)
        if fmt.kind == "table":
            table = self.backend.to_table(info, items, req.version, req.param("includeObject") or "Metadata")
            table["apiVersion"] = f"meta.k8s.io/{fmt.meta_version}"
            table["metadata"] = meta
            return APIResponse(200, _json_encode(table), fmt.content_type)
        if fmt.kind == "partial":
            body = {
                "kind": "PartialObjectMetadataList",
                "apiVersion": f"meta.k8s.io/{fmt.meta_version}",
                "metadata": meta,
                "items": [partial_metadata(o, fmt.meta_version) for o in items],
            }
            return APIResponse(200, _json_encode(body), fmt.content_type)
        body = {
            "kind": f"{info.kind}List",
            "apiVersion": group_version(info.group, req.version),
            "metadata": meta,
            "items": items,
        }
        if fmt.kind == "yaml":
            return APIResponse(200, encode_yaml(body), YAML)
        if len(items) <= LIST_ENCODE_CHUNK:
            return APIResponse(200, _json_encode(body), JSON)
        # Encoded a chunk at a time, so a LIST on a worker thread lets the event loop run between
        # chunks (one encode call of the whole body would hold the GIL throughout).
        head = _json_encode({**body, "items": []})
        chunks = [
            _json_encode(items[i : i + LIST_ENCODE_CHUNK])[1:-1] for i in range(0, len(items), LIST_ENCODE_CHUNK)
        ]
        return APIResponse(200, head[:-3] + b"[" + b",".join(chunks) + b"]}", JSON)

    @staticmethod
    def _int_param(req: APIRequest, name: str) -> int | None:
        raw = req.param(name)
        if raw is None or raw == "":
            return None
        try:
            return int(raw)
        except ValueError:
            raise E.bad_request(f"{name}: Invalid value: {raw!r}: must be an integer") from None

    def _check_resource_version(self, req: APIRequest) -> int | None:
        raw = req.param("resourceVersion")
        if raw is None or raw == "":
            return None
        try:
            rv = int(raw)
        except ValueError:
            raise E.bad_request(
                f'invalid resource version: strconv.ParseUint: parsing "{raw}": invalid syntax'
            ) from None
        if rv < 0:
            raise E.bad_request(f"invalid resource version: {raw}")
        current = int(self.store.revision)
        if rv > current:
            raise E.too_large_resource_version(rv, current)
        return rv

    # -- watch ------------------------------------------------------------------------------------

    def watch_objects(self, req: APIRequest, info: ResourceInfo) -> APIResponse:
        """A streaming watch (``?watch=true`` or the ``/watch/`` prefix)."""
        labels, fields = self._selectors(req, info)
        timeout = self._int_param(req, "timeoutSeconds")
        fmt = negotiate(req.accept)
        matches = self._watch_predicate(req, labels, fields)
        raw_rv = req.param("resourceVersion") or ""
        send_initial = req.param("sendInitialEvents")
        key = info.key()
        sub = self.hub.subscribe(key.group, key.resource, req.namespace if info.namespaced else None)
        try:
            start, start_rev, error = self._watch_start(req, info, raw_rv, send_initial, matches)
        except BaseException:
            sub.cancel()
            raise
        spec = watch.WatchSpec(
            subscription=sub,
            start_events=start,
            start_revision=start_rev,
            encode_object=self._event_encoder(req, info, fmt),
            bookmark_object=self._bookmark_encoder(info, req.version),
            matches=matches,
            bookmarks=req.flag("allowWatchBookmarks"),
            initial_events_end=send_initial == "true" and req.flag("allowWatchBookmarks"),
            timeout=float(timeout) if timeout is not None and timeout > 0 else None,
            bookmark_interval=self.bookmark_interval,
            error=error,
        )
        content_type = fmt.content_type if fmt.kind in ("json", "table", "partial") else JSON
        return APIResponse(200, content_type=content_type, stream=watch.stream(spec))

    @staticmethod
    def _watch_predicate(
        req: APIRequest, labels: LabelSelector, fields: FieldSelector
    ) -> Callable[[Mapping[str, Any]], bool] | None:
        name = req.name
        if labels.empty and fields.empty and name is None:
            return None

        def matches(obj: Mapping[str, Any]) -> bool:
            if name is not None and _meta(obj).get("name") != name:
                return False
            return labels.matches_object(obj) and fields.matches(obj)

        return matches

    def _watch_start(
        self,
        req: APIRequest,
        info: ResourceInfo,
        raw_rv: str,
        send_initial: str | None,
        matches: Callable[[Mapping[str, Any]], bool] | None,
    ) -> tuple[list[watch.HubEvent], int, bytes | None]:
        """The events to send before live ones, the revision they reach, or an ERROR event."""
        initial = send_initial == "true" or (send_initial is None and raw_rv in ("", "0"))
        if initial:
            items, revision, _ = self.store.list(info.key(), req.namespace)
            events = [
                self._hub_event(info, "ADDED", o, revision) for o in items if matches is None or matches(o)
            ]
            return events, int(revision), None
        if raw_rv in ("", "0"):
            return [], int(self.hub.last_revision), None
        try:
            since = int(raw_rv)
        except ValueError:
            raise E.bad_request(
                f'invalid resource version: strconv.ParseUint: parsing "{raw_rv}": invalid syntax'
            ) from None
        current = int(self.store.revision)
        if since > current:
            return [], since, watch.error_event(E.too_large_resource_version(since, current).status())
        try:
            replayed = self._replay(info, req.namespace, since)
        except Exception as err:
            api_err = self._store_error(err, info, "")
            if api_err.code == 410:
                return [], since, watch.error_event(api_err.status())
            raise api_err from None
        return replayed, since, None

    def _replay(self, info: ResourceInfo, namespace: str | None, since: int) -> list[watch.HubEvent]:
        """Change-log events after ``since`` (raises the store's Expired when compacted away)."""
        w = self.store.watch(info.key(), namespace, since=since)
        events: list[watch.HubEvent] = []
        try:
            while True:
                ev = w.next(0)
                if ev is None:
                    break
                events.append(self._hub_event(info, ev.type, ev.object, ev.revision))
        finally:
            w.close()
        return events

    @staticmethod
    def _hub_event(info: ResourceInfo, etype: str, obj: dict[str, Any], revision: int) -> watch.HubEvent:
        key = info.key()
        ns = str(_meta(obj).get("namespace") or "")
        return watch.HubEvent(etype, obj, int(revision), key.group, key.resource, ns)

    def _event_encoder(
        self, req: APIRequest, info: ResourceInfo, fmt: OutputFormat
    ) -> Callable[[watch.HubEvent], bytes]:
        version = req.version
        include = req.param("includeObject") or "Metadata"
        cache_key = (version, fmt.kind, fmt.meta_version, include)
        # The stored JSON starts with its apiVersion (key order apiVersion, kind, metadata, ...).
        stored_as_served = b'{"apiVersion":' + _json_encode(group_version(info.group, version)) + b","

        def encode(ev: watch.HubEvent) -> bytes:
            cached = ev.encoded.get(cache_key)
            if cached is None and fmt.kind == "json" and ev.raw is not None and ev.raw.startswith(stored_as_served):
                cached = ev.encoded[cache_key] = ev.raw  # what decoding and re-encoding would give
            if cached is None:
                obj = self.to_version(info, ev.object, version)
                if fmt.kind == "table":
                    table = self.backend.to_table(info, [obj], version, include)
                    table["apiVersion"] = f"meta.k8s.io/{fmt.meta_version}"
                    table["metadata"] = {"resourceVersion": str(_meta(obj).get("resourceVersion", ""))}
                    cached = _json_encode(table)
                elif fmt.kind == "partial":
                    cached = _json_encode(partial_metadata(obj, fmt.meta_version))
                else:
                    cached = _json_encode(obj)
                ev.encoded[cache_key] = cached
            return cached

        return encode

    @staticmethod
    def _bookmark_encoder(info: ResourceInfo, version: str) -> Callable[[int, bool], bytes]:
        api_version = group_version(info.group, version)

        def bookmark(revision: int, initial_end: bool) -> bytes:
            meta: dict[str, Any] = {"resourceVersion": str(revision), "creationTimestamp": None}
            if initial_end:
                meta["annotations"] = {watch.INITIAL_EVENTS_END: "true"}
            return _json_encode({"kind": info.kind, "apiVersion": api_version, "metadata": meta})

        return bookmark

    # -- write helpers ----------------------------------------------------------------------------

    def _dry_run(self, req: APIRequest, options: Mapping[str, Any] | None = None) -> bool:
        values = list(req.query.get("dryRun", ()))
        if options and isinstance(options.get("dryRun"), list):
            values += [str(v) for v in options["dryRun"]]
        for value in values:
            if value != "All":
                raise E.bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
        return bool(values)

    @staticmethod
    def _field_validation(req: APIRequest) -> str:
        mode = req.param("fieldValidation") or "Warn"
        if mode not in FIELD_VALIDATION:
            raise E.bad_request(
                f'fieldValidation: Unsupported value: {mode!r}: supported values: "Ignore", "Strict", "Warn"'
            )
        return mode

    @staticmethod
    def _field_manager(req: APIRequest, required: bool = False) -> str:
        manager = req.param("fieldManager")
        if manager is None or manager == "":
            if required:
                raise E.bad_request(
                    "PATCH /apply requests must include a fieldManager (the fieldManager query parameter is required for apply)"
                )
            manager = (req.user_agent or "unknown").split("/", 1)[0]
        if len(manager) > MAX_MANAGER_LEN:
            raise E.bad_request(f"fieldManager: Too long: must have at most {MAX_MANAGER_LEN} bytes")
        return manager

    def _check_identity(self, obj: Any, req: APIRequest, info: ResourceInfo) -> dict[str, Any]:
        """The body is an object of this resource's kind and group version; namespace/name agree with the URL."""
        if not isinstance(obj, dict):
            raise E.bad_request(
                f"the body of the request must be a {info.kind} object, got {type(obj).__name__}"
            )
        expected_gv = group_version(info.group, req.version)
        if obj.get("kind") in (None, ""):  # the decoder defaults both from the endpoint
            obj["kind"] = info.kind
        if obj.get("apiVersion") in (None, ""):
            obj["apiVersion"] = expected_gv
        api_version, kind = obj["apiVersion"], obj["kind"]
        if kind != info.kind:
            raise E.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({info.kind})"
            )
        if api_version != expected_gv:
            raise E.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version ({expected_gv})"
            )
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise E.cannot_handle(
                info.kind,
                req.version,
                "json: cannot unmarshal into Go struct field .metadata of type v1.ObjectMeta",
            )
        self._check_namespace(meta, req, info)
        return obj

    @staticmethod
    def _check_namespace(meta: dict[str, Any], req: APIRequest, info: ResourceInfo) -> None:
        body_ns = meta.get("namespace")
        if info.namespaced:
            if body_ns not in (None, "") and body_ns != req.namespace:
                raise E.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = req.namespace
        elif body_ns not in (None, ""):
            meta.pop("namespace", None)

    def _prune(
        self,
        obj: dict[str, Any],
        info: ResourceInfo,
        version: str,
        mode: str,
        warnings: list[str],
        unchanged: Collection[str] = (),
    ) -> None:
        """Check types and unknown fields against the schema; drop unknown fields (all modes).
        ``unchanged``: top-level members known to need neither (see :meth:`_unchanged_members`)."""
        schema, resolver = info.openapi_schema(version), self.backend.schema_resolver(info, version)
        result = walk_schema(obj, schema, resolver, unchanged, go_quantities=info.builtin)
        if result.metadata_errors:
            raise E.cannot_handle(info.kind, version, "; ".join(result.metadata_errors))
        if result.type_errors:
            if info.builtin:
                detail = "; ".join(
                    f"json: cannot unmarshal {t.got} into Go struct field {info.kind}.{t.path} of type {t.expected}"
                    for t in result.type_errors
                )
                raise E.cannot_handle(info.kind, version, detail)
            # a custom resource's wrong types are OpenAPI errors like the others (reported with
            # them, and with an int-or-string's ``anyOf`` errors); the typed model cannot read it
            raise E.invalid(info.group, info.kind, _name_of(obj), info.openapi_errors(obj, version))
        if not result.unknown:
            return
        messages = [f'unknown field "{p}"' for p in result.unknown]
        if mode == "Strict":
            raise E.cannot_handle(info.kind, version, "strict decoding error: " + ", ".join(messages))
        if mode == "Warn":
            warnings.extend(messages)

    @staticmethod
    def _unchanged_members(
        req: APIRequest, info: ResourceInfo, obj: Mapping[str, Any], live: Mapping[str, Any] | None
    ) -> frozenset[str]:
        """The members of a status update's body that are the live object's, as JSON.

        A status update keeps every member but the status (``PrepareForUpdate``), so what it sent
        of them matters only for the unknown fields and wrong types the pruning walk reports. The
        live object's members were stored by this server, pruned and checked already: a member
        equal to its live value (in the version stored: as encoded, byte for byte) has nothing to
        report, and walking the unchanged spec was a third of a status update's walk.
        """
        if (
            req.subresource != "status"
            or not info.status_subresource
            or live is None
            or live.get("apiVersion") != obj.get("apiVersion")
            or not SKIP_UNCHANGED_MEMBERS
        ):
            return frozenset()
        return frozenset(
            name
            for name, value in obj.items()
            if name not in _WALKED_ALWAYS
            and name in live
            and isinstance(value, dict | list)
            and _json_encode(value) == _json_encode(live[name])
        )

    def _to_storage(self, info: ResourceInfo, obj: dict[str, Any], version: str) -> dict[str, Any]:
        return self._guard(info, obj, lambda: info.to_storage(obj))

    def _default(self, info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        return self._guard(info, obj, lambda: info.default(obj))

    def _validate(
        self,
        info: ResourceInfo,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        version: str,
        missing: Sequence[FieldError] = (),
        write: Write = MAIN_WRITE,
        warnings: list[str] | None = None,
    ) -> None:
        """Validate; the warnings the validation gives (``write.warnings``) go to ``warnings``."""
        # Every request path prunes (and so type-checks) the object before it gets here, except
        # that the pruning walk passes over null list items; an object with a null anywhere (a
        # C-speed check of its JSON; false positives only cost the full check) is checked again.
        types_checked = b"null" not in _json_encode(obj)
        failure = self._guard(
            info,
            obj,
            lambda: info.validation_failure(
                obj, old, gates=self.gates, types_checked=types_checked, missing=missing, write=write
            ),
        )
        if warnings is not None and write.warnings:
            warnings.extend(w for w in dict.fromkeys(write.warnings) if w not in warnings)
        if failure is not None:
            raise E.rejected(info.group, info.kind, _name_of(obj), failure)

    def _admission_validate(
        self, info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        failure = self._guard(
            info,
            obj,
            lambda: info.admission_failure(obj, old, self.lookup, gates=self.gates, lister=self.list_namespace),
        )
        if failure is not None:
            raise E.rejected(info.group, info.kind, _name_of(obj), failure)

    def lookup(self, group: str, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The admission webhooks' read of a stored object (None when missing or not served)."""
        info = self._by_resource.get((group, plural))
        if info is None:
            return None
        try:
            obj: dict[str, Any] = self.store.get(info.key(), namespace if info.namespaced else "", name)
        except Exception as err:
            if getattr(err, "code", None) == 404:
                return None
            raise
        return obj

    def list_namespace(self, group: str, plural: str, namespace: str) -> list[dict[str, Any]]:
        """kube-apiserver's admission plugins' lister: the stored objects of one namespace."""
        info = self._by_resource.get((group, plural))
        if info is None:
            return []
        items, _, _ = self.store.list(info.key(), namespace if info.namespaced else None)
        return list(items)

    def _guard(self, info: ResourceInfo, obj: Mapping[str, Any], fn: Callable[[], T]) -> T:
        """Run a registry function, mapping its validation errors to 422 and decode errors to 400."""
        try:
            return fn()
        except StatusError:
            raise
        except ValidationFailed as err:
            raise E.rejected(info.group, info.kind, _name_of(obj), err) from None
        except ValueError as err:  # ManifestError / ConversionError / DecodeError
            raise E.invalid(
                info.group,
                info.kind,
                _name_of(obj),
                [FieldError("<nil>", TYPE_INVALID, None, str(err))],
                None,
            ) from None

    def _require_namespace_exists(self, info: ResourceInfo, namespace: str | None, name: str = "") -> None:
        if not info.namespaced or self._namespace_info is None or namespace is None:
            return
        if self.store.namespace_exists(namespace):
            if self.namespaces is not None:
                self.namespaces.check_create(info.group, info.plural, namespace, name)
            return
        try:  # not there: the store's own NotFound names it
            self.store.get(self._namespace_info.key(), "", namespace)
        except Exception as err:
            raise self._store_error(err, self._namespace_info, namespace) from None

    def _managed(
        self,
        info: ResourceInfo,
        version: str,
        old_storage: dict[str, Any] | None,
        new_storage: dict[str, Any],
        manager: str,
        subresource: str | None,
    ) -> None:
        """Record the manager's fields (operation Update) in ``new_storage.metadata.managedFields``."""
        new_v = self.to_version(info, new_storage, version)
        old_v = self.to_version(info, old_storage, version) if old_storage is not None else None
        self.backend.update_managed_fields(info, version, old_v, new_v, manager, subresource)
        if new_v is not new_storage:
            _meta_set(new_storage, "managedFields", _meta(new_v).get("managedFields"))

    def _store_error(self, err: Exception, info: ResourceInfo, name: str) -> StatusError:
        if isinstance(err, StatusError):
            return err
        raise err

    # -- create -----------------------------------------------------------------------------------

    def create(self, req: APIRequest, info: ResourceInfo, warnings: list[str]) -> APIResponse:
        """POST: create an object (``dryRun=All`` validates and answers without storing)."""
        dry_run = self._dry_run(req)
        mode = self._field_validation(req)
        manager = self._field_manager(req)
        obj = self._check_identity(decode_document(req.body, req.content_type), req, info)
        self._prune(obj, info, req.version, mode, warnings)
        created = self._create_object(req, info, obj, manager, dry_run, managed=True, warnings=warnings)
        return self.respond(req, info, self.to_version(info, created, req.version), 201)

    def _create_object(
        self,
        req: APIRequest,
        info: ResourceInfo,
        obj: dict[str, Any],
        manager: str,
        dry_run: bool,
        *,
        managed: bool,
        warnings: list[str] | None = None,
    ) -> dict[str, Any]:
        if info.status_subresource:
            obj.pop("status", None)
        # kube-apiserver's NamespaceLifecycle is a mutating admission plugin (``Lifecycle.Admit``,
        # first in ``RecommendedPluginOrder``): its 404 (no such namespace) or 403 (terminating)
        # comes before the strategy's validation (422) and the validating webhooks (403 denied).
        self._require_namespace_exists(info, req.namespace, str(_meta(obj).get("name") or ""))
        if _meta(obj).get("resourceVersion"):
            raise E.bad_request("resourceVersion should not be set on objects to be created")
        missing = info.missing_required(obj, None, req.version)
        try:
            storage = self._to_storage(info, obj, req.version)
            storage = self._guard(info, storage, lambda: info.default_for_create(storage))
        except StatusError:
            if missing:  # the model could not read it without what is missing: say that
                self._validate(info, obj, None, req.version, missing)
            raise
        if managed:
            self._managed(info, req.version, None, storage, manager, None)
        # kube-apiserver's order: managedFields are recorded (so the fields a mutating webhook
        # sets belong to no manager), then the mutating admission (Kueue's defaulting webhooks,
        # the Job webhook), then the object's own validation (a CRD's schema and CEL rules), then
        # the validating admission (Kueue's validating webhooks run with the CRD's validation).
        self._guard(
            info, storage, lambda: info.admit(storage, self.lookup, gates=self.gates, lister=self.list_namespace)
        )
        generated = _draw_generated_name(storage)
        self._validate(info, storage, None, req.version, missing, self._write(req, info, obj, None), warnings)
        if generated:  # validated like the name it stands for; the store draws the real one
            _meta(storage).pop("name", None)  # (retrying on collisions, as kube-apiserver does)
        self._admission_validate(info, storage, None)
        try:
            created: dict[str, Any] = self.store.create(info.key(), storage, dry_run=dry_run)
        except Exception as err:
            raise self._store_error(err, info, _name_of(storage)) from None
        return created

    # -- update -----------------------------------------------------------------------------------

    def update(self, req: APIRequest, info: ResourceInfo, warnings: list[str]) -> APIResponse:
        """PUT: replace an object (or its status)."""
        dry_run = self._dry_run(req)
        mode = self._field_validation(req)
        manager = self._field_manager(req)
        obj = self._check_identity(decode_document(req.body, req.content_type), req, info)
        body_name = _meta(obj).get("name")
        if body_name != req.name:
            raise E.bad_request(
                f"the name of the object ({body_name or ''}) does not match the name on the URL ({req.name})"
            )
        live: dict[str, Any] | None = None
        missing: Exception | None = None
        try:
            live = self.store.get(info.key(), req.namespace or "", req.name or "")
        except Exception as err:
            missing = err
        self._prune(obj, info, req.version, mode, warnings, self._unchanged_members(req, info, obj, live))
        if live is None:  # reported after the body's own errors, as before it was read
            assert missing is not None
            api_err = self._store_error(missing, info, req.name or "")
            if (
                api_err.code == 404
                and (info.group, info.plural) in ALLOW_CREATE_ON_UPDATE
                and req.subresource is None
            ):
                created = self._create_object(
                    req, info, obj, manager, dry_run, managed=True, warnings=warnings
                )
                return self.respond(req, info, self.to_version(info, created, req.version), 201)
            raise api_err from None
        updated = self._update_object(
            req, info, obj, live, manager, dry_run, operation_done=False, warnings=warnings
        )
        return self.respond(req, info, self.to_version(info, updated, req.version))

    def _update_object(
        self,
        req: APIRequest,
        info: ResourceInfo,
        obj: dict[str, Any],
        live: dict[str, Any],
        manager: str,
        dry_run: bool,
        *,
        operation_done: bool,
        warnings: list[str] | None = None,
    ) -> dict[str, Any]:
        """Convert, merge with the live object per subresource, default, validate, store."""
        missing = self._missing_required(req, info, obj, live)
        try:
            incoming = self._to_storage(info, obj, req.version)
        except StatusError:
            if missing:
                self._validate(info, obj, None, req.version, missing)
            raise
        before_defaults = self._merge_subresource(info, req.subresource, incoming, live)
        merged = self._default_update(info, req.subresource, before_defaults, live)
        self._validate(info, merged, live, req.version, missing, self._write(req, info, obj, live), warnings)
        if req.subresource is None:  # the emulated admission webhooks (the Job's) name no subresource
            self._admission_validate(info, merged, live)
        if not operation_done:
            self._managed(info, req.version, live, merged, manager, req.subresource)
        try:
            updated: dict[str, Any] = self.store.update(
                info.key(),
                merged,
                subresource=req.subresource,
                dry_run=dry_run,
                status_subresource=info.status_subresource,
            )
        except Exception as err:
            raise self._store_error(err, info, req.name or "") from None
        return updated

    def _default_update(
        self, info: ResourceInfo, subresource: str | None, before: dict[str, Any], live: dict[str, Any]
    ) -> dict[str, Any]:
        """The defaulted object an update stores (``before``: the live object merged with the
        request per subresource): a status update of a kind that can default its status alone
        keeps the live members as they are; otherwise the whole object is defaulted and the live
        members it rebuilt unchanged are taken back."""
        if subresource == "status" and info.status_subresource and STATUS_ONLY_DEFAULTING:
            defaulted = self._guard(info, before, lambda: info.default_status(before))
            if defaulted is not None:
                return defaulted
        return _reuse_live_members(self._default(info, before), before, live)

    def _write(
        self, req: APIRequest, info: ResourceInfo, obj: dict[str, Any], live: dict[str, Any] | None
    ) -> Write:
        """What :meth:`ResourceInfo.validation_failure` needs of the request: its subresource and,
        for a write in a version other than the storage version, the object as written in that
        version (merged with ``live`` per subresource, the version's schema defaults applied)
        and ``live`` in that version: kube-apiserver validates a custom resource in the version
        written (apiextensions-apiserver's per-version ``customResourceStrategy``). A Kueue kind
        written in the storage version gets the object as written too (merged, no defaults,
        not copied): its CEL rules see a field written empty as present."""
        if info.group != KUEUE_GROUP:
            return Write(subresource=req.subresource, warnings=[])
        if req.version == info.storage_version:  # as written, for the CEL rules' has()
            merged_s = obj if live is None else self._merge_subresource(info, req.subresource, obj, live)
            return Write(req.version, req.subresource, merged_s, warnings=[])
        live_v = self.to_version(info, live, req.version) if live is not None else None
        merged = obj if live_v is None else self._merge_subresource(info, req.subresource, obj, live_v)
        written = copy.deepcopy(merged)
        sch.apply_defaults(written, info.openapi_schema(req.version))
        return Write(req.version, req.subresource, written, live_v, warnings=[])

    def _missing_required(
        self, req: APIRequest, info: ResourceInfo, obj: dict[str, Any], live: dict[str, Any]
    ) -> list[FieldError]:
        """The CRD's required properties the update lacks, checked as kube-apiserver does: on
        what will be stored (the live spec with a new status, or the reverse), in the version
        written, ratcheted against the live object in that version."""
        if not info.missing_required_checked:
            return []
        live_v = self.to_version(info, live, req.version)
        merged_v = self._merge_subresource(info, req.subresource, obj, live_v)
        return info.missing_required(merged_v, live_v, req.version)

    @staticmethod
    def _merge_subresource(
        info: ResourceInfo, subresource: str | None, incoming: dict[str, Any], live: dict[str, Any]
    ) -> dict[str, Any]:
        """What the update will store: status-only for /status, everything but status otherwise."""
        if not info.status_subresource:
            return incoming
        if subresource == "status":
            merged = dict(live)  # the store hands out fresh objects: no deep copy needed
            meta = merged["metadata"] = dict(merged.get("metadata") or {})
            in_meta = _meta(incoming)
            meta["managedFields"] = in_meta.get("managedFields", meta.get("managedFields"))
            if meta["managedFields"] is None:
                meta.pop("managedFields")
            if in_meta.get("resourceVersion"):
                meta["resourceVersion"] = in_meta["resourceVersion"]
            if "status" in incoming:
                merged["status"] = incoming["status"]
            else:
                merged.pop("status", None)
            return merged
        merged = dict(incoming)
        if "status" in live:
            merged["status"] = live["status"]
        else:
            merged.pop("status", None)
        return merged

    # -- patch ------------------------------------------------------------------------------------

    def patch(self, req: APIRequest, info: ResourceInfo, warnings: list[str]) -> APIResponse:
        """PATCH: JSON patch, merge patch, strategic merge patch (built-ins) or server-side apply."""
        ptype = media_type(req.content_type)
        accepted = E.BUILTIN_PATCH_MEDIA_TYPES if info.builtin else E.PATCH_MEDIA_TYPES
        if ptype not in accepted.split(", "):
            raise E.unsupported_media_type(ptype, accepted)
        dry_run = self._dry_run(req)
        mode = self._field_validation(req)
        if ptype == APPLY_PATCH:
            return self._apply(req, info, warnings, dry_run, mode)
        manager = self._field_manager(req)
        patch_doc = decode_document(req.body, req.content_type)
        for _ in range(5):
            live = self._get(info, req.namespace or "", req.name or "")
            live_v = self.to_version(info, live, req.version)  # patch functions do not modify inputs
            patched = self._apply_patch(info, req.version, ptype, live_v, patch_doc)
            obj = self._check_patched(patched, req, info, live_v)
            self._prune(obj, info, req.version, mode, warnings)
            try:
                updated = self._update_object(
                    req, info, obj, live, manager, dry_run, operation_done=False, warnings=warnings
                )
            except StatusError as err:
                if err.reason == "Conflict" and not _meta(
                    patch_doc if isinstance(patch_doc, dict) else {}
                ).get("resourceVersion"):
                    continue
                raise
            return self.respond(req, info, self.to_version(info, updated, req.version))
        raise conflict(info.group, info.plural, req.name or "", OBJECT_MODIFIED)

    def _apply_patch(
        self, info: ResourceInfo, version: str, ptype: str, live: dict[str, Any], doc: Any
    ) -> dict[str, Any]:
        try:
            if ptype == JSON_PATCH:
                if not isinstance(doc, list):
                    raise E.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
                return self.backend.json_patch(live, doc)
            if not isinstance(doc, dict):
                raise E.bad_request(
                    "json: cannot unmarshal array into Go value of type map[string]interface {}"
                )
            if ptype == STRATEGIC_PATCH:
                return self.backend.strategic_merge_patch(info, version, live, doc)
            return self.backend.merge_patch(live, doc)
        except StatusError:
            raise
        except Exception as err:
            mapped = self.backend.patch_error(err)
            if mapped is None:
                raise
            raise mapped from None

    def _check_patched(
        self, patched: Any, req: APIRequest, info: ResourceInfo, live_v: dict[str, Any]
    ) -> dict[str, Any]:
        if not isinstance(patched, dict):
            raise StatusError(422, "Invalid", "the patched object is not a JSON object")
        obj = self._check_identity(patched, req, info)
        meta = _meta(obj)
        if meta.get("name") != req.name:
            errs = [FieldError("metadata.name", "Invalid", meta.get("name"), "field is immutable")]
            raise E.invalid(info.group, info.kind, req.name or "", errs)
        live_meta = _meta(live_v)
        for key in ("uid", "creationTimestamp"):
            if key in live_meta:
                meta[key] = live_meta[key]
        return obj

    def _apply(
        self, req: APIRequest, info: ResourceInfo, warnings: list[str], dry_run: bool, mode: str
    ) -> APIResponse:
        manager = self._field_manager(req, required=True)
        force = req.flag("force")
        applied = self._check_identity(decode_apply(req.body, req.content_type), req, info)
        if _meta(applied).get("name") not in (None, req.name):
            raise E.bad_request(
                f"the name of the object ({_meta(applied).get('name')}) does not match the name on the URL ({req.name})"
            )
        _meta(applied)["name"] = req.name
        self._prune(applied, info, req.version, mode, warnings)
        try:
            live: dict[str, Any] | None = self.store.get(info.key(), req.namespace or "", req.name or "")
        except Exception as err:
            api_err = self._store_error(err, info, req.name or "")
            if api_err.code != 404:
                raise api_err from None
            live = None
        live_v = self.to_version(info, live, req.version) if live is not None else None
        try:
            result = self.backend.server_side_apply(
                info, req.version, live_v, applied, manager, force, req.subresource
            )
        except Exception as err:
            mapped = self.backend.patch_error(err)
            if mapped is None:
                raise
            raise mapped from None
        if live is None:
            if req.subresource is not None:
                raise not_found(info.group, info.plural, req.name or "")
            created = self._create_object(
                req, info, result, manager, dry_run, managed=False, warnings=warnings
            )
            return self.respond(req, info, self.to_version(info, created, req.version), 201)
        obj = self._check_patched(result, req, info, live_v or {})
        precondition = _meta(applied).get("resourceVersion")
        if precondition:
            # The applied resourceVersion is a precondition on every subresource (apiserver's
            # fieldmanager applies to the live object, then the update checks the version before
            # the status strategy resets the rest); a /status apply's result starts from the live
            # metadata, so carry it over.
            _meta(obj)["resourceVersion"] = precondition
        updated = self._update_object(
            req, info, obj, live, manager, dry_run, operation_done=True, warnings=warnings
        )
        return self.respond(req, info, self.to_version(info, updated, req.version))

    # -- delete -----------------------------------------------------------------------------------

    def _delete_options(self, req: APIRequest) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if req.body.strip():
            doc = decode_document(req.body, req.content_type)
            if not isinstance(doc, dict):
                raise E.bad_request("the body of a delete request must be a DeleteOptions object")
            options = doc
        for name in ("propagationPolicy", "gracePeriodSeconds", "orphanDependents"):
            value = req.param(name)
            if value is not None:
                options[name] = value
        return options

    def _propagation(self, info: ResourceInfo, options: Mapping[str, Any]) -> str:
        policy = options.get("propagationPolicy")
        orphan = options.get("orphanDependents")
        if policy is not None:
            if policy not in PROPAGATION:
                raise StatusError(
                    422,
                    "Invalid",
                    f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "{policy}": '
                    'supported values: "Foreground", "Background", "Orphan", "nil"',
                )
            return str(policy)
        if orphan is not None:
            return "Orphan" if str(orphan).lower() in ("true", "1") else "Background"
        return "Orphan" if (info.group, info.plural) in ORPHAN_BY_DEFAULT else "Background"

    def delete(self, req: APIRequest, info: ResourceInfo) -> APIResponse:
        """DELETE one object (finalizers, propagation, preconditions, dryRun)."""
        options = self._delete_options(req)
        dry_run = self._dry_run(req, options)
        propagation = self._propagation(info, options)
        preconditions = (
            options.get("preconditions") if isinstance(options.get("preconditions"), dict) else None
        )
        name = req.name or ""
        if info.plural == "namespaces" and not info.group and name in IMMORTAL_NAMESPACES:
            raise E.forbidden(info.group, info.plural, name, "this namespace may not be deleted")
        try:
            result: dict[str, Any] = self.store.delete(
                info.key(),
                req.namespace or "",
                name,
                propagation=propagation,
                preconditions=preconditions,
                dry_run=dry_run,
            )
        except Exception as err:
            raise self._store_error(err, info, name) from None
        namespace_terminating = info.plural == "namespaces" and not info.group and _meta(result).get("deletionTimestamp")
        if namespace_terminating and not dry_run and self.namespaces is not None:
            self.namespaces.terminate(name)
        return self._delete_response(req, info, result)

    def _delete_response(self, req: APIRequest, info: ResourceInfo, result: dict[str, Any]) -> APIResponse:
        meta = _meta(result)
        held = meta.get("finalizers") or (info.plural == "namespaces" and (result.get("spec") or {}).get("finalizers"))
        marked = bool(meta.get("deletionTimestamp")) and bool(held)
        if marked or not info.builtin:
            return self.respond(req, info, self.to_version(info, result, req.version))
        details: dict[str, Any] = {"name": meta.get("name", req.name)}
        if info.group:
            details["group"] = info.group
        details["kind"] = info.plural
        if meta.get("uid"):
            details["uid"] = meta["uid"]
        return self.respond_status(req, success_status(details))

    def delete_collection(self, req: APIRequest, info: ResourceInfo) -> APIResponse:
        """DELETE a collection (selectors apply); answers the list of deleted objects."""
        options = self._delete_options(req)
        dry_run = self._dry_run(req, options)
        propagation = self._propagation(info, options)
        labels, fields = self._selectors(req, info)
        try:
            items, _, _ = self.store.list(
                info.key(),
                req.namespace,
                label_selector=req.param("labelSelector") if not labels.empty else None,
                field_selector=fields.matches if not fields.empty else None,
            )
        except Exception as err:
            raise self._store_error(err, info, "") from None
        deleted: list[dict[str, Any]] = []
        for obj in items:
            meta = _meta(obj)
            try:
                result = self.store.delete(
                    info.key(),
                    meta.get("namespace") or "",
                    meta.get("name", ""),
                    propagation=propagation,
                    dry_run=dry_run,
                )
            except Exception as err:
                if getattr(err, "code", None) == 404:
                    continue
                raise self._store_error(err, info, meta.get("name", "")) from None
            deleted.append(self.to_version(info, result, req.version))
        return self._list_response(req, info, deleted, int(self.store.revision), None)


# --- schema walk: types and unknown fields ------------------------------------------------------------

Resolver = Callable[[str], "dict[str, Any] | None"]
"""Resolves a ``$ref`` (``#/components/schemas/<name>``) of the kind's OpenAPI document."""

_OBJECT_META_STRINGS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
    }
)
_OBJECT_META_INTS = frozenset({"generation", "deletionGracePeriodSeconds"})
_OBJECT_META_FIELDS = (
    _OBJECT_META_STRINGS
    | _OBJECT_META_INTS
    | {
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "managedFields",
    }
)
_OWNER_REF_FIELDS = {
    "apiVersion": str,
    "kind": str,
    "name": str,
    "uid": str,
    "controller": bool,
    "blockOwnerDeletion": bool,
}
_GO_TYPES = {
    "integer": "int64",
    "number": "float64",
    "string": "string",
    "boolean": "bool",
    "object": "struct",
    "array": "slice",
}


@dataclass(frozen=True)
class TypeProblem:
    """A value of the wrong JSON type."""

    path: str
    expected: str
    got: str


@dataclass
class WalkResult:
    """What :func:`walk_schema` found (unknown fields have already been dropped)."""

    unknown: list[str] = field(default_factory=list)
    type_errors: list[TypeProblem] = field(default_factory=list)
    metadata_errors: list[str] = field(default_factory=list)
    go_quantities: bool = False
    """A built-in kind: the server decodes it into its Go type, whose ``resource.Quantity``
    takes any JSON number (``2.5``, stored as ``2500m``), fraction or not."""


def _is_map(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``, answered without the ABC check for plain dicts (hot path)."""
    return isinstance(value, (dict, Mapping))


def _resolve(schema: Mapping[str, Any], resolver: Resolver, depth: int = 0) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and _is_map(all_of[0]) and "$ref" in all_of[0]:
            ref = all_of[0]["$ref"]
    if ref is None or depth > 20:
        return schema
    target = resolver(str(ref))
    if target is None:
        return {"x-kubernetes-preserve-unknown-fields": True}
    return _resolve(target, resolver, depth + 1)


class _SchemaNode:
    """A resolved schema with what the pruning walk reads from it looked up once.

    Children are compiled on first use (schemas may be large, and a ``$ref`` may recurse).
    """

    __slots__ = ("_additional", "_items", "_props", "additional", "expected", "free", "int_or_string",
                 "items", "nullable", "ok_types", "props", "quantity", "resolver")  # fmt: skip

    def __init__(self, schema: Mapping[str, Any], resolver: Resolver) -> None:
        self.resolver = resolver
        self.int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
        self.quantity = self.int_or_string and schema.get("pattern") == QUANTITY_PATTERN
        expected = schema.get("type")
        self.expected = expected if isinstance(expected, str) else None
        self.nullable = bool(schema.get("nullable"))
        self.ok_types = _OK_TYPES.get("int-or-string" if self.int_or_string else self.expected, _ANY_TYPE)
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        self.free = preserve or (not _is_map(props) and additional in (None, True))
        self.props: Mapping[str, Any] = props if _is_map(props) else {}
        self._props: dict[str, _SchemaNode] = {}
        self.additional: Mapping[str, Any] | None = additional if _is_map(additional) else None
        self._additional: _SchemaNode | None = None
        items = schema.get("items")
        self.items: Mapping[str, Any] | None = items if _is_map(items) else None
        self._items: _SchemaNode | None = None

    def prop(self, key: str) -> _SchemaNode:
        node = self._props.get(key)
        if node is None:
            node = self._props[key] = _compiled(self.props[key], self.resolver)
        return node

    def additional_node(self) -> _SchemaNode:
        if self._additional is None:
            self._additional = _compiled(self.additional or {}, self.resolver)
        return self._additional

    def items_node(self) -> _SchemaNode:
        if self._items is None:
            self._items = _compiled(self.items or {}, self.resolver)
        return self._items


class _AnyType(frozenset[type]):
    """Every type: the ``ok_types`` of a node without a type (``type(v) in`` it is always true)."""

    def __contains__(self, item: object) -> bool:
        return True


_ANY_TYPE: frozenset[type] = _AnyType()
_OK_TYPES: dict[str | None, frozenset[type]] = {
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "boolean": frozenset({bool}),
    "object": frozenset({dict}),
    "array": frozenset({list}),
    "int-or-string": frozenset({int, str}),
}
"""Per schema type, the Python types :func:`_type_ok` always accepts (exactly those types: a bool
is no integer, an integral float takes the full check); a type not named takes the full check."""
_SCALARS = frozenset({str, int, float, bool})
WALK_FAST_TYPES = True
"""Whether the pruning walk decides the common types by :attr:`_SchemaNode.ok_types` (the full
type check stays for the rest, and for the tests to compare with)."""

_COMPILED: dict[tuple[int, int], tuple[Mapping[str, Any], Resolver, _SchemaNode]] = {}
_COMPILED_LIMIT = 65536  # every served schema has ~4,000 nodes


def _compiled(schema: Mapping[str, Any], resolver: Resolver) -> _SchemaNode:
    """The compiled form of ``schema`` (memoised; the registry's schemas are long-lived)."""
    key = (id(schema), id(resolver))
    hit = _COMPILED.get(key)
    if hit is not None and hit[0] is schema and hit[1] is resolver:
        return hit[2]
    if len(_COMPILED) >= _COMPILED_LIMIT:
        _COMPILED.clear()
    node = _SchemaNode(_resolve(schema, resolver), resolver)
    _COMPILED[key] = (schema, resolver, node)  # the references keep the ids from being reused
    return node


def _type_ok(value: Any, node: _SchemaNode) -> str | None:
    """None if the value has the schema's type, else the expected type name."""
    if node.int_or_string:
        ok = (
            (isinstance(value, int) and not isinstance(value, bool))
            or isinstance(value, str)
            or _integral(value)
        )
        return None if ok else "integer,string"
    expected = node.expected
    if expected is None:
        return None
    got = json_type(value)
    if (
        expected == got
        or (expected == "number" and got == "integer")
        or (expected == "integer" and _integral(value))
    ):
        return None
    return expected


def _integral(value: Any) -> bool:
    return isinstance(value, float) and value.is_integer()


def _walk_value(value: Any, node: _SchemaNode, path: str, result: WalkResult) -> None:
    if not (WALK_FAST_TYPES and type(value) in node.ok_types):
        expected = _type_ok(value, node)
        if expected is not None and not (result.go_quantities and node.quantity and isinstance(value, float)):
            result.type_errors.append(TypeProblem(path, expected, json_type(value)))
            return
    if isinstance(value, dict):
        _walk_object(value, node, path, result)
    elif isinstance(value, list) and node.items is not None:
        items = node.items_node()
        for i, item in enumerate(value):
            if item is not None and not _fine_scalar(item, items):
                _walk_value(item, items, f"{path}[{i}]", result)


def _fine_scalar(value: Any, node: _SchemaNode) -> bool:
    """A scalar of a type its node accepts: :func:`_walk_value` would find nothing there (and the
    path it is given need not be built)."""
    kind = type(value)
    return WALK_FAST_TYPES and kind in _SCALARS and kind in node.ok_types


def _walk_object(obj: dict[str, Any], node: _SchemaNode, path: str, result: WalkResult) -> None:
    props = node.props
    fast = WALK_FAST_TYPES
    for key in list(obj):
        value = obj[key]
        if key in props:
            sub = node.prop(key)
            if fast and type(value) in _SCALARS and type(value) in sub.ok_types:
                continue  # :func:`_fine_scalar`, inlined (most members are)
            child = f"{path}.{key}" if path else str(key)
        elif node.additional is not None:
            sub = node.additional_node()
            if fast and type(value) in _SCALARS and type(value) in sub.ok_types:
                continue
            child = f"{path}[{key}]" if path else str(key)
        else:
            if not node.free:
                result.unknown.append(f"{path}.{key}" if path else str(key))
                del obj[key]
            continue
        if value is None:
            if not sub.nullable:
                del obj[key]
            continue
        _walk_value(value, sub, child, result)


def _walk_metadata(meta: dict[str, Any], result: WalkResult) -> None:
    for key in list(meta):
        value = meta[key]
        if key not in _OBJECT_META_FIELDS:
            result.unknown.append(f"metadata.{key}")
            del meta[key]
            continue
        if value is None:
            del meta[key]
            continue
        problem = _metadata_problem(key, value)
        if problem is not None:
            result.metadata_errors.append(
                f"json: cannot unmarshal {problem[1]} into Go struct field ObjectMeta.metadata.{key} of type {problem[0]}"
            )


def _metadata_problem(key: str, value: Any) -> tuple[str, str] | None:
    """(expected Go type, got JSON type) when a metadata field has the wrong type."""
    got = json_type(value)
    if key in _OBJECT_META_STRINGS:
        return None if isinstance(value, str) else ("string", got)
    if key in _OBJECT_META_INTS:
        return None if got == "integer" else ("int64", got)
    if key in ("labels", "annotations"):
        if not isinstance(value, dict):
            return ("map[string]string", got)
        bad = [v for v in value.values() if not isinstance(v, str)]
        return ("string", json_type(bad[0])) if bad else None
    if key == "finalizers":
        if not isinstance(value, list):
            return ("[]string", got)
        bad = [v for v in value if not isinstance(v, str)]
        return ("string", json_type(bad[0])) if bad else None
    if key == "ownerReferences":
        return _owner_refs_problem(value)
    if key == "managedFields" and (
        not isinstance(value, list) or not all(isinstance(v, dict) for v in value)
    ):
        return ("[]v1.ManagedFieldsEntry", got)
    return None


def _owner_refs_problem(value: Any) -> tuple[str, str] | None:
    if not isinstance(value, list):
        return ("[]v1.OwnerReference", json_type(value))
    for ref in value:
        if not isinstance(ref, dict):
            return ("v1.OwnerReference", json_type(ref))
        for name, typ in _OWNER_REF_FIELDS.items():
            v = ref.get(name)
            if v is not None and not isinstance(v, typ):
                return (typ.__name__, json_type(v))
    return None


def walk_schema(
    obj: dict[str, Any],
    schema: Mapping[str, Any],
    resolver: Resolver,
    skip: Collection[str] = (),
    *,
    go_quantities: bool = False,
) -> WalkResult:
    """Check an object against its kind's structural schema; prune unknown fields and nulls.

    ``metadata`` is checked as ``ObjectMeta`` (the server decodes it into the Go type); unknown
    fields are removed from ``obj`` and reported (the caller rejects them under Strict). The
    top-level members named in ``skip`` are left alone. ``go_quantities``: see
    :attr:`WalkResult.go_quantities`.
    """
    result = WalkResult(go_quantities=go_quantities)
    # The compiled top level keeps its members' nodes (looked up once, as :func:`_walk_object`'s
    # are); its ``props`` are the resolved schema's properties.
    root = _compiled(schema, resolver)
    props = root.props
    fast = WALK_FAST_TYPES
    for key in list(obj):
        if key in ("apiVersion", "kind") or key in skip:
            continue
        value = obj[key]
        if key == "metadata":
            if isinstance(value, dict):
                _walk_metadata(value, result)
            continue
        if props.get(key) is None:
            if props and not _resolve(schema, resolver).get("x-kubernetes-preserve-unknown-fields"):
                result.unknown.append(key)
                del obj[key]
            continue
        if value is None:
            del obj[key]
            continue
        sub = root.prop(key)
        if fast and type(value) in _SCALARS and type(value) in sub.ok_types:
            continue  # :func:`_fine_scalar`, inlined: an Event's members are mostly scalars
        _walk_value(value, sub, key, result)
    result.unknown.sort()
    return result


# --- helpers ------------------------------------------------------------------------------------------


def partial_metadata(obj: Mapping[str, Any], meta_version: str) -> dict[str, Any]:
    """``PartialObjectMetadata`` of an object."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"meta.k8s.io/{meta_version}",
        "metadata": _meta(obj),
    }


def _meta_set(obj: dict[str, Any], key: str, value: Any) -> None:
    meta = obj.setdefault("metadata", {})
    if value is None:
        meta.pop(key, None)
    else:
        meta[key] = value


def _reuse_live_members(defaulted: dict[str, Any], before: Mapping[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    """The live object's own top-level members (the spec under a status update, the status under
    an update of the main resource) where defaulting rebuilt them unchanged (the same JSON).

    Defaulting round-trips the object through its typed model, so every member comes back a new
    object; the managed fields' comparison (``patch.typed.compare``) skips a member that is the
    same object on both sides, and walking the unchanged spec was a fifth of a status update.
    """
    for name, value in defaulted.items():
        original = before.get(name)
        if (
            name != "metadata"
            and value is not original
            and isinstance(original, dict | list)
            and original is live.get(name)
            and _json_encode(original) == _json_encode(value)
        ):
            defaulted[name] = original
    return defaulted
