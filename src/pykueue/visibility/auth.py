"""Delegated authentication and authorization of the visibility server (cluster mode).

Upstream's visibility server is a ``genericapiserver`` built from ``genericoptions.NewRecommendedOptions``,
so it authenticates and authorizes every request by delegating to kube-apiserver
(``k8s.io/apiserver/pkg/server/options`` ``DelegatingAuthenticationOptions`` and
``DelegatingAuthorizationOptions``; ``pkg/authentication/authenticatorfactory/delegating.go``):

* **front proxy** (``requestheader``): a client certificate signed by the ``requestheader-client-ca-file``
  of the ``kube-system/extension-apiserver-authentication`` ConfigMap whose CN is one of its
  ``requestheader-allowed-names`` (any CN when the list is empty) is the aggregator; only then are
  the ``X-Remote-User``/``X-Remote-Group``/``X-Remote-Extra-*`` headers (the names the ConfigMap
  lists) believed;
* **client certificates** signed by the ConfigMap's ``client-ca-file``: user CN, groups O;
* **bearer tokens**: a ``TokenReview``; a token it does not accept is 401;
* otherwise **anonymous** (``system:anonymous``), which authorization then refuses unless RBAC
  allows it;
* **authorization**: ``/healthz``, ``/livez``, ``/readyz`` always; ``system:masters`` always;
  everything else by a ``SubjectAccessReview`` (answers cached 10 s, as the delegating options'
  ``AllowCacheTTL``/``DenyCacheTTL``).

The ConfigMap is read when the server starts (upstream also follows later changes of it).
Verification of a presented certificate's chain happens in the TLS handshake against the union of
both CAs; which of them signed the leaf (directly) decides how it authenticates. Unlike Go's
server, which accepts any certificate and lets the authenticators fail with 401, a certificate
signed by neither CA fails the handshake.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

from pykueue.apiserver import errors as E
from pykueue.client.interface import APIError, Client, NotFound, Resource
from pykueue.kube.status import StatusError

log = logging.getLogger(__name__)

AUTH_CONFIGMAP_NAMESPACE = "kube-system"
AUTH_CONFIGMAP_NAME = "extension-apiserver-authentication"
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False)
SUBJECT_ACCESS_REVIEWS = Resource("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False)

ANONYMOUS_USER = "system:anonymous"
UNAUTHENTICATED_GROUP = "system:unauthenticated"
AUTHENTICATED_GROUP = "system:authenticated"
MASTERS_GROUP = "system:masters"
ALWAYS_ALLOW_PATHS = frozenset({"/healthz", "/readyz", "/livez"})
CACHE_TTL = 10.0
"""``DelegatingAuthenticationOptions.CacheTTL`` and the authorizer's allow/deny cache TTLs."""

_VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class Unauthorized(Exception):
    """The credentials presented were not accepted (401)."""


@dataclass(frozen=True)
class UserInfo:
    """``user.Info``."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


ANONYMOUS = UserInfo(ANONYMOUS_USER, groups=(UNAUTHENTICATED_GROUP,))


@dataclass(frozen=True)
class RequestInfo:
    """``request.RequestInfo`` (``RequestInfoFactory.NewRequestInfo``) of the parts authorization reads."""

    path: str
    verb: str
    resource_request: bool = False
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


def request_info(method: str, path: str, query: Mapping[str, Sequence[str]]) -> RequestInfo:
    """Resource or non-resource request, as ``RequestInfoFactory`` reads ``/apis/{group}/{version}/...``."""
    parts = [p for p in path.strip("/").split("/") if p]
    if len(parts) < 4 or parts[0] != "apis":
        return RequestInfo(path=path, verb=method.lower())
    group, version, rest = parts[1], parts[2], parts[3:]
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in ("status", "finalize"):  # namespaceSubresources
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""
    verb = _VERBS.get(method.upper(), method.lower())
    if not name and verb == "get":
        verb = "watch" if (query.get("watch") or [""])[0] in ("1", "true") else "list"
    elif not name and verb == "delete":
        verb = "deletecollection"
    return RequestInfo(path, verb, True, group, version, namespace, resource, subresource, name)


def forbidden_status(user: UserInfo, info: RequestInfo, reason: str) -> StatusError:
    """``responsewriters.Forbidden``: ``forbiddenMessage`` (+ ``: reason``) in ``NewForbidden``."""
    if not info.resource_request:
        msg = f'User "{user.name}" cannot {info.verb} path "{info.path}"'
    else:
        resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
        where = f'in the namespace "{info.namespace}"' if info.namespace else "at the cluster scope"
        msg = f'User "{user.name}" cannot {info.verb} resource "{resource}" in API group "{info.api_group}" {where}'
    if reason:
        msg = f"{msg}: {reason}"
    return E.forbidden(info.api_group, info.resource, info.name, msg)


@dataclass(frozen=True)
class RequestHeaderConfig:
    """The ``requestheader-*`` keys of the authentication ConfigMap."""

    cas: tuple[x509.Certificate, ...]
    allowed_names: tuple[str, ...] = ()
    username_headers: tuple[str, ...] = ("X-Remote-User",)
    uid_headers: tuple[str, ...] = ()
    group_headers: tuple[str, ...] = ("X-Remote-Group",)
    extra_prefixes: tuple[str, ...] = ("X-Remote-Extra-",)


@dataclass(frozen=True)
class AuthenticationConfig:
    """What ``lookupMissingConfigInCluster`` reads: the client CA and the request-header settings."""

    client_cas: tuple[x509.Certificate, ...] = ()
    request_header: RequestHeaderConfig | None = None
    ca_pem: str = ""
    """Every CA above, PEM, for the TLS server to verify presented certificates with."""


def _json_list(text: str | None) -> tuple[str, ...]:
    import json

    if not text:
        return ()
    value = json.loads(text)
    return tuple(str(v) for v in value or ())


def _pem_certs(text: str | None) -> tuple[x509.Certificate, ...]:
    return tuple(x509.load_pem_x509_certificates(text.encode())) if text and text.strip() else ()


def config_from_configmap(data: Mapping[str, str]) -> AuthenticationConfig:
    """The ConfigMap's ``data`` (as kube-apiserver writes it: JSON lists for the header names)."""
    client_pem = data.get("client-ca-file") or ""
    rh_pem = data.get("requestheader-client-ca-file") or ""
    request_header = None
    if rh_pem.strip():
        request_header = RequestHeaderConfig(
            cas=_pem_certs(rh_pem),
            allowed_names=_json_list(data.get("requestheader-allowed-names")),
            username_headers=_json_list(data.get("requestheader-username-headers")) or ("X-Remote-User",),
            uid_headers=_json_list(data.get("requestheader-uid-headers")),
            group_headers=_json_list(data.get("requestheader-group-headers")) or ("X-Remote-Group",),
            extra_prefixes=_json_list(data.get("requestheader-extra-headers-prefix")) or ("X-Remote-Extra-",),
        )
    ca_pem = "\n".join(p.strip() for p in (client_pem, rh_pem) if p.strip())
    return AuthenticationConfig(_pem_certs(client_pem), request_header, ca_pem)


def load_cluster_config(client: Client) -> AuthenticationConfig:
    """``kube-system/extension-apiserver-authentication``; none there: tokens only (as upstream)."""
    try:
        cm = client.get(CONFIGMAPS, AUTH_CONFIGMAP_NAME, AUTH_CONFIGMAP_NAMESPACE)
    except NotFound:
        return AuthenticationConfig()
    except APIError as err:
        if err.code != 403:
            raise
        raise RuntimeError(
            f"cannot read configmap {AUTH_CONFIGMAP_NAMESPACE}/{AUTH_CONFIGMAP_NAME} ({err}); bind the role "
            "extension-apiserver-authentication-reader in kube-system to the controller's user "
            "(config/visibility/role_binding.yaml)"
        ) from err
    return config_from_configmap(cm.get("data") or {})


def _issued_by(leaf: x509.Certificate, cas: Sequence[x509.Certificate]) -> bool:
    for ca in cas:
        try:
            leaf.verify_directly_issued_by(ca)
        except Exception:  # InvalidSignature, another issuer's name, an unsupported key type
            continue
        return True
    return False


def _common_name(cert: x509.Certificate) -> str:
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if names else ""


class _TTLCache:
    def __init__(self, ttl: float, clock: Callable[[], float]) -> None:
        self.ttl = ttl
        self.clock = clock
        self._items: dict[Any, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            hit = self._items.get(key)
            if hit is None or hit[0] < self.clock():
                self._items.pop(key, None)
                return None
            return hit[1]

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            if len(self._items) > 4096:  # bounded: drop what expired, else everything
                now = self.clock()
                self._items = {k: v for k, v in self._items.items() if v[0] >= now}
                if len(self._items) > 4096:
                    self._items.clear()
            self._items[key] = (self.clock() + self.ttl, value)


class DelegatedAuth:
    """Authenticates and authorizes visibility requests through kube-apiserver."""

    def __init__(
        self, client: Client, config: AuthenticationConfig, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self.config = config
        self._tokens = _TTLCache(CACHE_TTL, clock)
        self._decisions = _TTLCache(CACHE_TTL, clock)

    @classmethod
    def from_cluster(cls, client: Client) -> DelegatedAuth:
        return cls(client, load_cluster_config(client))

    # --- authentication ---------------------------------------------------------------------------------

    def authenticate(self, peer_der: bytes | None, headers: Message) -> UserInfo:
        """The request's user; :class:`Unauthorized` when credentials were presented and refused."""
        errors: list[str] = []
        if peer_der:
            leaf = x509.load_der_x509_certificate(peer_der)
            rh = self.config.request_header
            if rh is not None and _issued_by(leaf, rh.cas):
                cn = _common_name(leaf)
                if rh.allowed_names and cn not in rh.allowed_names:
                    errors.append(f"x509: subject with cn={cn} is not in the allowed list")
                else:
                    user = self._from_headers(rh, headers)
                    if user is not None:
                        return user
            if self.config.client_cas and _issued_by(leaf, self.config.client_cas):
                groups = tuple(str(a.value) for a in leaf.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME))
                return _with_authenticated(UserInfo(_common_name(leaf), groups=groups))
            errors.append("verifying certificate failed")
        token = _bearer(headers)
        if token is not None:
            user = self._token_review(token)
            if user is not None:
                return user
            errors.append("invalid bearer token")
        if errors:
            raise Unauthorized("; ".join(errors))
        return ANONYMOUS

    @staticmethod
    def _from_headers(rh: RequestHeaderConfig, headers: Message) -> UserInfo | None:
        name = next((v for h in rh.username_headers for v in headers.get_all(h) or () if v), "")
        if not name:
            return None
        uid = next((v for h in rh.uid_headers for v in headers.get_all(h) or () if v), "")
        groups = tuple(v for h in rh.group_headers for v in headers.get_all(h) or ())
        extra: dict[str, tuple[str, ...]] = {}
        for header, value in headers.items():
            for prefix in rh.extra_prefixes:
                if header.lower().startswith(prefix.lower()):
                    key = urllib.parse.unquote(header[len(prefix) :].lower())
                    extra[key] = (*extra.get(key, ()), value)
        return _with_authenticated(UserInfo(name, uid, groups, extra))

    def _token_review(self, token: str) -> UserInfo | None:
        cached = self._tokens.get(token)
        if cached is not None:
            return cached if isinstance(cached, UserInfo) else None
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        try:
            status = self.client.create(TOKEN_REVIEWS, review).get("status") or {}
        except APIError as err:
            log.warning("visibility: TokenReview failed: %s", err)
            return None  # not cached: the next request asks again
        user: UserInfo | None = None
        if status.get("authenticated"):
            u = status.get("user") or {}
            extra = {k: tuple(v or ()) for k, v in (u.get("extra") or {}).items()}
            user = _with_authenticated(UserInfo(u.get("username", ""), u.get("uid", ""), tuple(u.get("groups") or ()), extra))
        self._tokens.put(token, user if user is not None else False)
        return user

    # --- authorization ------------------------------------------------------------------------------------

    def authorize(self, user: UserInfo, info: RequestInfo) -> tuple[bool, str]:
        """(allowed, reason): the always-allowed paths and group, else a SubjectAccessReview."""
        if not info.resource_request and info.path in ALWAYS_ALLOW_PATHS:
            return True, ""
        if MASTERS_GROUP in user.groups:
            return True, ""
        key = (user.name, user.uid, user.groups, tuple(sorted(user.extra.items())), info)
        cached = self._decisions.get(key)
        if cached is not None:
            return tuple(cached)
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups)}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}
        if info.resource_request:
            attrs = {
                "namespace": info.namespace,
                "verb": info.verb,
                "group": info.api_group,
                "version": info.api_version,
                "resource": info.resource,
                "subresource": info.subresource,
                "name": info.name,
            }
            spec["resourceAttributes"] = {k: v for k, v in attrs.items() if v}
        else:
            spec["nonResourceAttributes"] = {"path": info.path, "verb": info.verb}
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        try:
            status = self.client.create(SUBJECT_ACCESS_REVIEWS, review).get("status") or {}
        except APIError as err:
            # The webhook authorizer's error: refused (not cached), with the reason.
            return False, f"authorization error: {err}"
        decision = (bool(status.get("allowed")) and not status.get("denied"), str(status.get("reason") or ""))
        self._decisions.put(key, decision)
        return decision


def _with_authenticated(user: UserInfo) -> UserInfo:
    """``group.NewAuthenticatedGroupAdder``."""
    if AUTHENTICATED_GROUP in user.groups or user.name == ANONYMOUS_USER:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, AUTHENTICATED_GROUP), user.extra)


def _bearer(headers: Message) -> str | None:
    value = headers.get("Authorization") or ""
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()
