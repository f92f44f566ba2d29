"""Kueue's webhooks for a real cluster: CRD conversion, defaulting and validation over HTTPS.

``pykueue serve`` runs these in its request path; a real kube-apiserver calls them as webhooks.
The same registry code answers both (:data:`pykueue.apiserver.resources.REGISTRY`: conversion
``ResourceInfo.convert``, validation ``validation_failure``, and the mutating webhooks' ``admit``
and the Job webhook's ``admission_failure``), so a real cluster and ``serve`` agree.

Served paths, as upstream's controller-runtime registration (``pkg/webhooks``,
``pkg/controller/jobs/job/job_webhook.go``):

* ``/convert``: the ConversionReview of every kind upstream converts
  (``config/components/crd/kustomization.yaml``: ``webhook_in_*`` for localqueues,
  clusterqueues, cohorts, workloads, multikueueclusters and resourceflavors);
* ``/mutate-<group>-<version>-<kind>`` and ``/validate-...``: AdmissionReviews of Kueue's mutating
  (``mjob``, ``mclusterqueue``, ``mresourceflavor``, ``mworkload``) and validating (``vjob``,
  ``vclusterqueue``, ``vcohort``, ``vresourceflavor``, ``vworkload``) webhooks. As upstream's
  ``config/components/webhook/manifests.yaml`` and ``serve``, only ``vworkload`` also sees a
  subresource (``workloads/status``: :data:`pykueue.api.validation.WEBHOOK_SUBRESOURCES`).

Registration (:func:`register`): the CRDs' ``spec.conversion`` and the two webhook configurations
(``kueue-mutating-webhook-configuration``, ``kueue-validating-webhook-configuration``) point at the
server either by URL (a controller run outside the cluster: a loopback address) or through a
Service (in-cluster), with the serving CA injected as ``caBundle``, as upstream's internal cert
management does.
"""

from __future__ import annotations

import base64
import copy
import json
import logging
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pykueue.api.conversion import ConversionError, to_internal
from pykueue.api.feature_gates import DEFAULT_GATES, FeatureGates
from pykueue.api.validation import WEBHOOK_SUBRESOURCES, aggregate, validate_webhook
from pykueue.apiserver.resources import REGISTRY, ResourceInfo
from pykueue.client.interface import AlreadyExists, APIError, Client, NotFound, Resource
from pykueue.kube.httpserve import BackgroundServer, ReplyHandler
from pykueue.kube.status import StatusError
from pykueue.runtime.informer import Informer

log = logging.getLogger(__name__)

Obj = dict[str, Any]

KUEUE_GROUP = "kueue.x-k8s.io"
WEBHOOK_VERSION = "v1beta2"

CONVERTED_PLURALS = (
    "localqueues",
    "clusterqueues",
    "cohorts",
    "workloads",
    "multikueueclusters",
    "resourceflavors",
)
"""The CRDs upstream patches with a conversion webhook (``webhook_in_<plural>.yaml``)."""

CONVERT_PATH = "/convert"
MUTATING_CONFIGURATION = "kueue-mutating-webhook-configuration"
VALIDATING_CONFIGURATION = "kueue-validating-webhook-configuration"
EXCLUDED_NAMESPACES = ("kube-system", "kueue-system")
"""Upstream's webhook configurations leave Kueue's own and the system namespace alone."""

CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
MUTATING_CONFIGS = Resource(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False
)
VALIDATING_CONFIGS = Resource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False
)


@dataclass(frozen=True)
class Hook:
    """One admission webhook: its name, the resource it watches and the operations."""

    name: str
    group: str
    version: str
    plural: str
    kind: str
    mutating: bool
    operations: tuple[str, ...]

    @property
    def path(self) -> str:
        """controller-runtime's generated path, e.g. ``/mutate-kueue-x-k8s-io-v1beta2-clusterqueue``."""
        group = (self.group or "core").replace(".", "-")
        verb = "mutate" if self.mutating else "validate"
        return f"/{verb}-{group}-{self.version}-{self.kind.lower()}"


HOOKS: tuple[Hook, ...] = (
    Hook("mjob.kb.io", "batch", "v1", "jobs", "Job", True, ("CREATE",)),
    Hook("vjob.kb.io", "batch", "v1", "jobs", "Job", False, ("CREATE", "UPDATE")),
    Hook("mclusterqueue.kb.io", KUEUE_GROUP, WEBHOOK_VERSION, "clusterqueues", "ClusterQueue", True, ("CREATE",)),
    Hook("vclusterqueue.kb.io", KUEUE_GROUP, WEBHOOK_VERSION, "clusterqueues", "ClusterQueue", False, ("CREATE", "UPDATE")),
    Hook("vcohort.kb.io", KUEUE_GROUP, WEBHOOK_VERSION, "cohorts", "Cohort", False, ("CREATE", "UPDATE")),
    Hook("mresourceflavor.kb.io", KUEUE_GROUP, WEBHOOK_VERSION, "resourceflavors", "ResourceFlavor", True, ("CREATE",)),
    Hook(
        "vresourceflavor.kb.io", KUEUE_GROUP, WEBHOOK_VERSION, "resourceflavors", "ResourceFlavor", False,
        ("CREATE", "UPDATE"),
    ),
    Hook("mworkload.kb.io", KUEUE_GROUP, WEBHOOK_VERSION, "workloads", "Workload", True, ("CREATE",)),
    Hook("vworkload.kb.io", KUEUE_GROUP, WEBHOOK_VERSION, "workloads", "Workload", False, ("CREATE", "UPDATE")),
)  # fmt: skip


# --- the answers ------------------------------------------------------------------------------------


def convert_review(review: Mapping[str, Any]) -> Obj:
    """Answer an ``apiextensions.k8s.io/v1`` ConversionReview."""
    request = review.get("request") or {}
    desired = str(request.get("desiredAPIVersion") or "")
    response: Obj = {"uid": request.get("uid", "")}
    try:
        converted = []
        for obj in request.get("objects") or []:
            info = REGISTRY.by_api_version(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
            if info is None:
                raise ValueError(f'no conversion for {obj.get("apiVersion")}, Kind={obj.get("kind")}')
            converted.append(info.convert(obj, desired) if obj.get("apiVersion") != desired else obj)
        response["convertedObjects"] = converted
        response["result"] = {"status": "Success"}
    except Exception as err:  # any failure is the review's Failure, never a crash
        response["result"] = {"status": "Failure", "message": str(err)}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}


def json_patch(old: Any, new: Any, path: str = "") -> list[Obj]:
    """RFC 6902 operations turning ``old`` into ``new`` (objects walked, other values replaced)."""
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[Obj] = []
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": f"{path}/{_escape(key)}"})
        for key, value in new.items():
            child = f"{path}/{_escape(key)}"
            if key not in old:
                ops.append({"op": "add", "path": child, "value": value})
            else:
                ops += json_patch(old[key], value, child)
        return ops
    if old != new or type(old) is not type(new):
        return [{"op": "replace", "path": path, "value": new}]
    return []


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


CACHED_LOOKUPS = (("kueue.x-k8s.io", "workloadpriorityclasses"), ("kueue.x-k8s.io", "localqueues"))
"""What the Job webhook reads on (nearly) every create, served from informers as upstream's cached
client does: the ``default`` WorkloadPriorityClass and the namespace's ``default`` LocalQueue."""


class Webhooks:
    """The admission and conversion answers; ``client`` serves the Job webhook's lookups."""

    def __init__(self, client: Client, gates: FeatureGates = DEFAULT_GATES) -> None:
        self.client = client
        self.gates = gates
        """The gates Kueue's webhooks read (upstream's, in the controller manager: its own)."""
        self.hooks = {hook.path: hook for hook in HOOKS}
        self.informers: dict[tuple[str, str], Informer] = {}

    def start(self) -> None:
        """Start the informers of :data:`CACHED_LOOKUPS` (lookups fall back to GETs until synced)."""
        for group, plural in CACHED_LOOKUPS:
            info = next(i for i in REGISTRY.all() if i.group == group and i.plural == plural)
            res = Resource(group, WEBHOOK_VERSION, plural, info.kind, info.namespaced)
            informer = Informer(self.client, res, lambda change: None)
            informer.start()
            self.informers[(group, plural)] = informer

    def stop(self) -> None:
        """Stop the informers."""
        for informer in self.informers.values():
            informer.stop()

    def lookup(self, group: str, plural: str, namespace: str, name: str) -> Obj | None:
        """The Job webhook's read of another object (a LocalQueue, a WorkloadPriorityClass, an owner Job)."""
        info = next((i for i in REGISTRY.all() if i.group == group and i.plural == plural), None)
        if info is None:
            return None
        informer = self.informers.get((group, plural))
        if informer is not None and informer.wait_synced(0):
            cached = informer.get((namespace if info.namespaced else "", name))
            return copy.deepcopy(cached) if cached is not None else None
        version = WEBHOOK_VERSION if group == KUEUE_GROUP else info.storage_version
        res = Resource(group, version, plural, info.kind, info.namespaced)
        try:
            return self.client.get(res, name, namespace if info.namespaced else None)
        except NotFound:
            return None

    def review(self, path: str, review: Mapping[str, Any]) -> Obj | None:
        """Answer an AdmissionReview sent to ``path`` (None: no such webhook)."""
        if path == CONVERT_PATH:
            return convert_review(review)
        hook = self.hooks.get(path)
        if hook is None:
            return None
        request = review.get("request") or {}
        response: Obj = {"uid": request.get("uid", ""), "allowed": True}
        try:
            info = REGISTRY.by_kind(hook.group, hook.kind)
            assert info is not None
            obj = request.get("object") or {}
            old = request.get("oldObject") if request.get("operation") == "UPDATE" else None
            if hook.mutating:
                patch = self._mutate(info, obj)
                if patch:
                    response["patchType"] = "JSONPatch"
                    response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
            else:
                failure = self._validate(info, obj, old)
                if failure is not None:
                    response["allowed"] = False
                    response["status"] = {"code": 403, "reason": "Forbidden", "message": failure}
        except StatusError as err:  # a webhook's own denial (e.g. an owner Job not found)
            response["allowed"] = False
            response["status"] = {"code": err.code, "reason": err.reason, "message": err.message}
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}

    def _mutate(self, info: ResourceInfo, obj: Obj) -> list[Obj]:
        if obj.get("metadata", {}).get("deletionTimestamp"):
            return []
        mutated = copy.deepcopy(obj)  # Kueue's defaulting webhooks and the Job's: the admission hooks
        info.admit(mutated, self.lookup, gates=self.gates)
        ops = json_patch(obj, mutated)
        # The webhook only adds or changes what Kueue defaults; identity fields stay the server's.
        return [op for op in ops if not (op["op"] == "remove" and op["path"].startswith("/metadata/"))]

    def _validate(self, info: ResourceInfo, obj: Obj, old: Obj | None) -> str | None:
        if info.group == KUEUE_GROUP:
            # Only the webhook stage: the CRD's OpenAPI schema and CEL rules are the real API
            # server's to enforce (config/crd/ carries them), as upstream splits the two.
            try:
                typed = to_internal(obj)[0]
                old_typed = to_internal(old)[0] if old is not None else None
            except ConversionError:
                return None  # an object the model cannot read fails the CRD's schema instead
            errs = validate_webhook(typed, old_typed, gates=self.gates)
            return str(aggregate(errs)) if errs else None
        denied = info.admission_failure(obj, old, self.lookup, gates=self.gates)
        return str(aggregate(denied.errors)) if denied is not None else None


# --- the HTTPS server ---------------------------------------------------------------------------------


class _Handler(ReplyHandler):
    server: _Server
    # keep-alive: the API server reuses its connections instead of a TLS handshake per review;
    # an idle connection is dropped after two minutes
    protocol_version = "HTTP/1.1"
    timeout = 120

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            review = json.loads(self.rfile.read(length) or b"{}")
            answer = self.server.webhooks.review(self.path.split("?", 1)[0], review)
        except (ValueError, APIError) as err:
            self._send(400, {"message": str(err)})
            return
        if answer is None:
            self._send(404, {"message": f"no webhook at {self.path}"})
            return
        self._send(200, answer)

    def _send(self, code: int, body: Obj) -> None:
        self.reply(code, json.dumps(body).encode(), "application/json")

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("webhook: " + format, *args)


HANDSHAKE_TIMEOUT = 10.0


class _Server(ThreadingHTTPServer):
    """TLS is negotiated in each connection's own thread: a handshake done by ``accept`` in the
    serving loop would let one stalled client block every other request and ``shutdown``."""

    webhooks: Webhooks
    tls: ssl.SSLContext

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(HANDSHAKE_TIMEOUT)
        try:
            conn = self.tls.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError) as err:
            log.debug("webhook: TLS handshake with %s failed: %s", client_address, err)
            return
        try:
            super().finish_request(conn, client_address)
        finally:
            conn.close()


@dataclass(frozen=True)
class CertFiles:
    """The serving certificate, its key and the CA bundle the API server trusts it with."""

    cert: Path
    key: Path
    ca: Path

    def ca_bundle(self) -> str:
        """``caBundle``: base64 of the CA's PEM."""
        return base64.b64encode(self.ca.read_bytes()).decode()


def cert_files(cert_dir: Path | None, work_dir: Path, host: str) -> CertFiles:
    """``--webhook-cert-dir`` (``tls.crt``, ``tls.key``, ``ca.crt`` as controller-runtime names
    them), or a self-signed CA and serving certificate for ``host`` made once in ``work_dir``."""
    if cert_dir is not None:
        ca = cert_dir / "ca.crt"
        return CertFiles(cert_dir / "tls.crt", cert_dir / "tls.key", ca if ca.exists() else cert_dir / "tls.crt")
    from pykueue.apiserver.server import ensure_tls

    directory = work_dir / "webhook-certs"
    directory.mkdir(parents=True, exist_ok=True)
    tls = ensure_tls(directory, host)
    return CertFiles(tls.cert, tls.key, tls.ca)


SECRETS = Resource("", "v1", "secrets", "Secret", True)
DEFAULT_CERT_SECRET = "kueue-webhook-server-cert"


def shared_cert_files(client: Client, namespace: str, secret: str, work_dir: Path, host: str) -> CertFiles:
    """One certificate for every replica behind the webhook Service, kept in a Secret.

    As upstream's internal cert management (``internalCertManagement.webhookSecretName``): the
    first replica makes the CA and serving certificate and stores them; the others (and restarts)
    read the Secret, so the ``caBundle`` registered by any replica verifies them all.
    """
    directory = work_dir / "webhook-certs"
    directory.mkdir(parents=True, exist_ok=True)
    try:
        data = client.get(SECRETS, secret, namespace).get("data") or {}
    except NotFound:
        local = cert_files(None, work_dir, host)
        data = {
            "ca.crt": base64.b64encode(local.ca.read_bytes()).decode(),
            "tls.crt": base64.b64encode(local.cert.read_bytes()).decode(),
            "tls.key": base64.b64encode(local.key.read_bytes()).decode(),
        }
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": secret, "namespace": namespace},
            "type": "kubernetes.io/tls",
            "data": data,
        }
        try:
            client.create(SECRETS, body)
        except AlreadyExists:  # another replica was first: use its certificate
            data = client.get(SECRETS, secret, namespace).get("data") or {}
    for name in ("ca.crt", "tls.crt", "tls.key"):
        path = directory / name
        path.write_bytes(base64.b64decode(data[name]))
        path.chmod(0o600)
    return CertFiles(directory / "tls.crt", directory / "tls.key", directory / "ca.crt")


class WebhookServer:
    """Serves :class:`Webhooks` over HTTPS on ``host:port`` (port 0: a free one)."""

    def __init__(self, webhooks: Webhooks, certs: CertFiles, host: str = "127.0.0.1", port: int = 0) -> None:
        self.certs = certs
        self.httpd = _Server((host, port), _Handler)
        self.httpd.webhooks = webhooks
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(certs.cert), str(certs.key))
        self.httpd.tls = context
        self.host = host
        self._serving = BackgroundServer(self.httpd, "webhooks")
        self.port: int = self._serving.port

    def start(self) -> None:
        """Serve in a background thread."""
        self.httpd.webhooks.start()
        self._serving.start()

    def stop(self) -> None:
        """Stop serving."""
        self._serving.stop()
        self.httpd.webhooks.stop()


# --- registration -------------------------------------------------------------------------------------


def client_config(url: str | None, service: Mapping[str, Any] | None, path: str, ca_bundle: str) -> Obj:
    """A webhook ``clientConfig``: by URL (outside the cluster) or through a Service."""
    config: Obj = {"caBundle": ca_bundle}
    if url is not None:
        config["url"] = url.rstrip("/") + path
    else:
        config["service"] = {**dict(service or {}), "path": path}
    return config


def _subresources(hook: Hook) -> list[str]:
    """The subresources a validating webhook's rule names besides its resource (upstream's
    ``+kubebuilder:webhook`` markers: ``resources=workloads;workloads/status`` for vworkload)."""
    if hook.mutating or hook.group != KUEUE_GROUP:
        return []
    return [f"{hook.plural}/{sub}" for sub in sorted(WEBHOOK_SUBRESOURCES.get(hook.kind, ()))]


def webhook_configurations(url: str | None, service: Mapping[str, Any] | None, ca_bundle: str) -> tuple[Obj, Obj]:
    """The MutatingWebhookConfiguration and ValidatingWebhookConfiguration, as upstream's."""
    mutating: list[Obj] = []
    validating: list[Obj] = []
    for hook in HOOKS:
        entry: Obj = {
            "name": hook.name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": client_config(url, service, hook.path, ca_bundle),
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "sideEffects": "None",
            "rules": [
                {
                    "apiGroups": [hook.group],
                    "apiVersions": [hook.version],
                    "operations": list(hook.operations),
                    "resources": [hook.plural, *_subresources(hook)],
                }
            ],
        }
        if hook.group == "batch":
            entry["namespaceSelector"] = {
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(EXCLUDED_NAMESPACES)}
                ]
            }
        if hook.mutating:
            entry["reinvocationPolicy"] = "Never"
            mutating.append(entry)
        else:
            validating.append(entry)
    meta = {"labels": {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}}
    return (
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": MUTATING_CONFIGURATION, **meta},
            "webhooks": mutating,
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": VALIDATING_CONFIGURATION, **meta},
            "webhooks": validating,
        },
    )


def register(client: Client, url: str | None, service: Mapping[str, Any] | None, ca_bundle: str) -> None:
    """Point the converted CRDs and the two webhook configurations at this server."""
    conversion = {
        "spec": {
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": client_config(url, service, CONVERT_PATH, ca_bundle),
                    "conversionReviewVersions": ["v1"],
                },
            }
        }
    }
    for plural in CONVERTED_PLURALS:
        client.patch(CRDS, f"{plural}.{KUEUE_GROUP}", conversion)
    for res, obj in zip((MUTATING_CONFIGS, VALIDATING_CONFIGS), webhook_configurations(url, service, ca_bundle), strict=True):
        _apply(client, res, obj)


def _apply(client: Client, res: Resource, obj: Obj) -> None:
    name = obj["metadata"]["name"]
    try:
        current = client.get(res, name)
    except NotFound:
        client.create(res, obj)
        return
    replacement = {**obj, "metadata": {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
    client.replace(res, replacement)
