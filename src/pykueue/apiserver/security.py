"""Who may talk to the API server and what they may do: authentication, RBAC-lite, Host and Origin.

Every request passes :meth:`RequestGuard.check` before it is routed:

* **Host** (DNS rebinding): a browser tricked into resolving an attacker's name to 127.0.0.1 sends
  that name in ``Host``. Only IP literals, ``localhost``, the machine's host name and the bind
  address are served — the names the serving certificate covers — so a rebound name gets 403.
* **Origin** (cross-site requests): browsers send ``Origin`` on cross-origin requests (and on
  same-origin writes). Only the server's own origin (``scheme://Host``) is accepted, so a page of
  another site cannot drive the API even where a request needs no preflight.
* **Authentication**: bearer tokens, compared in constant time (``hmac.compare_digest`` against
  every known token, never stopping early). ``/healthz``, ``/livez``, ``/readyz`` and ``/version``
  stay open, as kube-apiserver's ``system:public-info-viewer`` role allows them to anyone.
* **Authorization** (RBAC-lite): the admin user may do everything; the read-only user may
  ``get``, ``list`` and ``watch`` (kube-apiserver's ``view``-like verbs) and gets kube-apiserver's
  403 ``Forbidden`` for anything else (``forbiddenMessage`` in
  k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go).

Without tokens (``pykueue serve --insecure-loopback``) authentication and authorization are off;
the Host and Origin checks stay on, since they are what protects a plain-HTTP loopback port from
web pages.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pykueue.apiserver import errors as E
from pykueue.kube.status import StatusError
from pykueue.store.errors import qualified_resource

ADMIN_USER = "pykueue-admin"
READONLY_USER = "pykueue-readonly"
READ_VERBS = frozenset({"get", "list", "watch"})
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
DEFAULT_PORTS = {"http": 80, "https": 443}
HOST_CACHE_SIZE = 256


@dataclass(frozen=True)
class User:
    """An authenticated user (``user.Info``) and whether it may only read."""

    name: str
    groups: tuple[str, ...]
    read_only: bool


ADMIN = User(ADMIN_USER, ("system:masters", "system:authenticated"), read_only=False)
READONLY = User(READONLY_USER, ("system:authenticated",), read_only=True)


class TokenAuthenticator:
    """Bearer tokens → users (``--token-auth-file``-style, in memory)."""

    def __init__(self, tokens: Mapping[str, User]) -> None:
        self._tokens = [(token.encode(), user) for token, user in tokens.items() if token]

    def __bool__(self) -> bool:
        return bool(self._tokens)

    def authenticate(self, authorization: str) -> User | None:
        """The user of an ``Authorization: Bearer <token>`` header (None: no valid token)."""
        scheme, _, credential = authorization.partition(" ")
        if scheme.lower() != "bearer":
            return None
        presented = credential.strip().encode()
        found: User | None = None
        for token, user in self._tokens:  # every token compared, so timing says nothing
            if hmac.compare_digest(presented, token) and found is None:
                found = user
        return found


def served_names(bind_host: str) -> frozenset[str]:
    """Host names (not IP literals) accepted in ``Host``: localhost, the machine's name, the bind name."""
    names = {"localhost", socket.gethostname().lower()}
    bare = bind_host.strip("[]").lower().rstrip(".")
    if bare and not _is_ip(bare):
        names.add(bare)
    return frozenset(n for n in names if n)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def split_host(value: str) -> str:
    """The host of a ``Host`` header value (``name[:port]``, ``[v6][:port]``), lower-cased."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    host, _, _ = value.partition(":")
    return host.rstrip(".")


@dataclass(frozen=True)
class RequestAttributes:
    """``authorizer.Attributes`` of a request (``RequestInfoFactory.NewRequestInfo``)."""

    verb: str
    path: str
    resource_request: bool
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


def request_attributes(method: str, path: str, query: Mapping[str, list[str]]) -> RequestAttributes:
    """The verb and resource of a request, as kube-apiserver's request-info resolver derives them."""
    parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")] if path.strip("/") else []
    verb = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
            "DELETE": "delete"}.get(method, method.lower())  # fmt: skip
    if len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    elif len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    else:
        return RequestAttributes(verb=_non_resource_verb(method), path=path, resource_request=False)
    if not rest:
        return RequestAttributes(verb=_non_resource_verb(method), path=path, resource_request=False)
    watch = rest[0] == "watch"
    if watch:
        rest = rest[1:]
    namespace = ""
    if len(rest) >= 2 and rest[0] == "namespaces":
        namespace = rest[1]
        if len(rest) >= 3 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
        else:  # the Namespace object itself (its name is also the request's namespace)
            rest = ["namespaces", *rest[1:]]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    watch_values = query.get("watch")
    if watch or (verb == "get" and watch_values and watch_values[-1].lower() in ("true", "1")):
        verb = "watch"
    elif verb == "get" and not name:
        verb = "list"
    elif verb == "delete" and not name:
        verb = "deletecollection"
    return RequestAttributes(
        verb=verb, path=path, resource_request=True, group=group, version=version, resource=resource,
        subresource=subresource, namespace=namespace, name=name,
    )  # fmt: skip


def _non_resource_verb(method: str) -> str:
    # Non-resource requests use the lower-cased HTTP method as the verb ("get", "post", ...).
    return "get" if method == "HEAD" else method.lower()


def forbidden(user: User, attrs: RequestAttributes) -> StatusError:
    """kube-apiserver's 403 for a request its authorizer denied (``responsewriters.Forbidden``)."""
    if not attrs.resource_request:
        message = f'User "{user.name}" cannot {attrs.verb} path "{attrs.path}"'
        return StatusError(403, "Forbidden", f"forbidden: {message}", {})
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    scope = (
        f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    )
    message = (
        f'User "{user.name}" cannot {attrs.verb} resource "{resource}" '
        f'in API group "{attrs.group}" {scope}'
    )
    qualified = qualified_resource(attrs.group, attrs.resource)
    details: dict[str, object] = {}
    if attrs.name:
        details["name"] = attrs.name
        text = f'{qualified} "{attrs.name}" is forbidden: {message}'
    else:
        text = f"{qualified} is forbidden: {message}"
    if attrs.group:
        details["group"] = attrs.group
    details["kind"] = attrs.resource
    return StatusError(403, "Forbidden", text, details)


class RequestGuard:
    """Host, Origin, authentication and authorization of one request (see the module docstring)."""

    def __init__(self, tokens: Mapping[str, User] | None = None, names: Iterable[str] = ()) -> None:
        self.authenticator = TokenAuthenticator(tokens or {})
        self.names = frozenset(names) or served_names("")
        self._hosts: dict[str, bool] = {}

    @property
    def authenticating(self) -> bool:
        """Whether requests need a token."""
        return bool(self.authenticator)

    def check(
        self, method: str, path: str, scheme: str, headers: Mapping[str, str], query_string: bytes = b""
    ) -> User | None:
        """The request's user (None when authentication is off); raises the refusal's ``StatusError``."""
        host = headers.get("host")
        if host is not None and not self.host_allowed(host):
            raise StatusError(
                403, "Forbidden", f'forbidden: Host "{host}" is not an address this server is served on '
                "(refused to prevent DNS rebinding; use localhost, an IP address or this machine's name)",
                {},
            )  # fmt: skip
        origin = headers.get("origin")
        if origin is not None and not self.same_origin(origin, scheme, host):
            raise StatusError(
                403, "Forbidden", f'forbidden: cross-origin request from "{origin}" refused', {}
            )
        if not self.authenticating:
            return None
        authorization = headers.get("authorization")
        user = self.authenticator.authenticate(authorization or "")
        if user is None:
            # Anonymous requests may read the public paths; a wrong token is a 401 everywhere
            # (kube-apiserver's authenticators fail the request instead of falling back).
            if authorization is None and path in PUBLIC_PATHS and method in ("GET", "HEAD"):
                return None
            raise E.unauthorized()
        if user.read_only:
            query = urllib.parse.parse_qs(query_string.decode("latin-1"), keep_blank_values=True)
            attrs = request_attributes(method, path, query)
            if attrs.verb not in READ_VERBS:
                raise forbidden(user, attrs)
        return user

    def host_allowed(self, value: str) -> bool:
        """IP literals, ``localhost``, this machine's name and the bind name (see the module docstring)."""
        known = self._hosts.get(value)
        if known is None:
            host = split_host(value)
            known = _is_ip(host) or host in self.names
            if len(self._hosts) < HOST_CACHE_SIZE:  # bounded: Host values are client-chosen
                self._hosts[value] = known
        return known

    @staticmethod
    def same_origin(origin: str, scheme: str, host: str | None) -> bool:
        """Whether ``Origin`` is ``scheme://Host`` (default ports compared as equal)."""
        if host is None:
            return False
        parsed = urllib.parse.urlsplit(origin.strip().lower())
        if parsed.scheme != scheme or not parsed.hostname or parsed.path not in ("", "/"):
            return False
        try:
            origin_port = parsed.port or DEFAULT_PORTS.get(scheme)
            served = urllib.parse.urlsplit(f"{scheme}://{host.strip().lower()}")
            served_port = served.port or DEFAULT_PORTS.get(scheme)
        except ValueError:
            return False
        return parsed.hostname == served.hostname and origin_port == served_port
