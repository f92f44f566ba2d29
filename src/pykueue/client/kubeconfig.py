"""Kubeconfig loading for :class:`pykueue.client.http.HTTPClient`, on top of lightkube's loader.

lightkube parses a kubeconfig into typed clusters/users/contexts and turns a cluster + user into
an ``ssl.SSLContext`` (CA file or inline data, client certificate/key file or inline data,
``insecure-skip-tls-verify``) and an ``httpx2.Auth`` (``token``, ``tokenFile`` re-read on 401 for
rotated service-account tokens, ``exec`` credential plugins, basic auth). What this module adds is
what kubectl does and lightkube does not:

* ``$KUBECONFIG`` as a list of files (``os.pathsep``-separated), merged as kubectl merges them:
  the first file that defines a cluster/user/context name wins, and so does the first
  ``current-context``; missing files in the list are skipped.
* relative file references resolved against the file that holds them (lightkube resolves them
  against one file only, and never resolves ``tokenFile``).
* kubectl's refusal of ``insecure-skip-tls-verify`` together with a CA (lightkube would silently
  verify against the CA), and ``tls-server-name``.
* in-cluster service-account credentials when no kubeconfig file exists (``pykueue controller``
  running in a pod).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import yaml
from lightkube.config.client_adapter import user_auth, verify_cluster
from lightkube.config.kubeconfig import KubeConfig, SingleConfig
from lightkube.config.models import User
from lightkube.core.exceptions import ConfigError

DEFAULT_KUBECONFIG = Path("~/.kube/config")

# Per-entry keys that name files; kubectl resolves them relative to the kubeconfig holding them.
_CLUSTER_FILE_KEYS = ("certificate-authority",)
_USER_FILE_KEYS = ("client-certificate", "client-key", "tokenFile")


class KubeconfigError(Exception):
    """The kubeconfig is missing, unreadable, or asks for something this client cannot do."""


@dataclass(frozen=True)
class ClusterConnection:
    """What an HTTP client needs to reach one cluster as one user."""

    server: str
    ssl_context: ssl.SSLContext
    auth: httpx.Auth | None
    context_name: str
    namespace: str
    tls_server_name: str | None = None


def kubeconfig_files(path: str | Path | None) -> list[Path]:
    """The files to read: ``path``, else every file in ``$KUBECONFIG``, else ``~/.kube/config``."""
    if path is not None:
        return [Path(path).expanduser()]
    env = os.environ.get("KUBECONFIG", "")
    listed = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    if listed:
        return listed
    return [DEFAULT_KUBECONFIG.expanduser()]


def _absolute(entry: Mapping[str, Any], keys: tuple[str, ...], base: Path) -> dict[str, Any]:
    """``entry`` with its relative file references made absolute against ``base``."""
    out = dict(entry)
    for key in keys:
        value = out.get(key)
        if isinstance(value, str) and value and not Path(value).expanduser().is_absolute():
            out[key] = str(base / value)
        elif isinstance(value, str) and value:
            out[key] = str(Path(value).expanduser())
    return out


def _read(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as err:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {err}") from None
    except yaml.YAMLError as err:
        raise KubeconfigError(f"kubeconfig {path} is not valid YAML: {err}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise KubeconfigError(f"kubeconfig {path} is not a mapping")
    return doc


def merge_kubeconfigs(files: list[Path]) -> dict[str, Any]:
    """kubectl's merge of several kubeconfig files (first definition of a name wins)."""
    merged: dict[str, dict[str, Any]] = {"clusters": {}, "users": {}, "contexts": {}}
    current: str | None = None
    for path in files:
        doc = _read(path)
        base = path.resolve().parent
        for section, field, keys in (
            ("clusters", "cluster", _CLUSTER_FILE_KEYS),
            ("users", "user", _USER_FILE_KEYS),
            ("contexts", "context", ()),
        ):
            for named in doc.get(section) or []:
                if not isinstance(named, Mapping) or not named.get("name"):
                    raise KubeconfigError(f"kubeconfig {path}: every entry of {section} needs a name")
                name = str(named["name"])
                if name not in merged[section]:
                    merged[section][name] = _absolute(named.get(field) or {}, keys, base)
        if current is None and doc.get("current-context"):
            current = str(doc["current-context"])
    return {
        "current-context": current,
        **{
            section: [{"name": n, field: entry} for n, entry in merged[section].items()]
            for section, field in (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))
        },
    }


def load_config(path: str | Path | None = None, context: str | None = None) -> SingleConfig:
    """The selected context of the kubeconfig (see :func:`kubeconfig_files`), or in-cluster config."""
    return _select(path, context)[0]


def _select(path: str | Path | None, context: str | None) -> tuple[SingleConfig, dict[str, Any]]:
    """The selected context and its cluster's raw fields (lightkube drops ``tls-server-name``)."""
    files = kubeconfig_files(path)
    existing = [f for f in files if f.is_file()]
    if path is not None and not existing:
        raise KubeconfigError(f"kubeconfig {files[0]} not found")
    try:
        if not existing:
            # No file at all: inside a pod the service account is the configuration, as for client-go.
            if os.environ.get("KUBERNETES_SERVICE_HOST"):
                in_cluster = KubeConfig.from_service_account().get()
                assert in_cluster is not None  # from_service_account always sets a current context
                return in_cluster, {}
            raise KubeconfigError(
                "no kubeconfig found: tried "
                + ", ".join(str(f) for f in files)
                + " (set --kubeconfig or KUBECONFIG)"
            )
        merged = merge_kubeconfigs(existing)
        selected = KubeConfig.from_dict(merged, fname=existing[0]).get(context)
    except ConfigError as err:
        raise KubeconfigError(f"kubeconfig: {err}") from None
    except KeyError as err:  # a context naming an undefined cluster or user
        raise KubeconfigError(f"kubeconfig: context refers to an undefined entry {err}") from None
    except (TypeError, ValueError) as err:  # lightkube's typed decoding of a malformed entry
        raise KubeconfigError(f"kubeconfig: {err}") from None
    if selected is None:
        raise KubeconfigError("kubeconfig: no context selected (no current-context and no --context)")
    raw: dict[str, Any] = next(
        (c["cluster"] for c in merged["clusters"] if c["name"] == selected.context.cluster), {}
    )
    return selected, raw


def load_connection(path: str | Path | None = None, context: str | None = None) -> ClusterConnection:
    """TLS settings, credentials and server URL of the selected context."""
    config, raw = _select(path, context)
    cluster = config.cluster
    if cluster.insecure and (cluster.certificate_auth or cluster.certificate_auth_data):
        # kubectl refuses this combination; lightkube would quietly verify against the CA.
        raise KubeconfigError(
            f"kubeconfig cluster {config.context.cluster}: specifying a root certificates file "
            "with the insecure flag is not allowed"
        )
    user = config.user or User()
    if user.auth_provider:
        raise KubeconfigError(
            f"kubeconfig user {config.context.user}: auth-provider plugins are not supported; "
            "use an exec credential plugin or a token"
        )
    try:
        ctx = verify_cluster(cluster, user, config.abs_file)
        auth = user_auth(user)
    except ConfigError as err:
        raise KubeconfigError(f"kubeconfig: {err}") from None
    except (OSError, ssl.SSLError) as err:  # unreadable CA/cert/key files or bad PEM data
        raise KubeconfigError(f"kubeconfig: cannot load TLS files: {err}") from None
    server_name = raw.get("tls-server-name")
    return ClusterConnection(
        server=cluster.server,
        ssl_context=ctx,
        auth=auth,
        context_name=config.context_name,
        namespace=config.namespace,
        tls_server_name=str(server_name) if server_name else None,
    )
