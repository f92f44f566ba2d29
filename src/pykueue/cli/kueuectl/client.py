"""The kueuectl commands' view of a cluster: the project's HTTP client plus the few requests it
needs (selectors and paging, dry runs, discovery, the visibility API)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pykueue.client import resources as R
from pykueue.client.http import HTTPClient
from pykueue.client.interface import APIError, Resource

LIST_LIMIT_ENV = "KUEUECTL_LIST_REQUEST_LIMIT"
DEFAULT_LIST_LIMIT = 100
"""``defaultListRequestLimit`` (objects per LIST request; ``KUEUECTL_LIST_REQUEST_LIMIT``)."""
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2"


class CommandError(Exception):
    """A failure printed as ``Error: <message>`` (cobra's report of a RunE error), exit code 1."""


def add_connection_flags(p: argparse.ArgumentParser) -> None:
    """The kubeconfig flags of ``genericclioptions.ConfigFlags`` the commands use."""
    g = p.add_argument_group("connection")
    g.add_argument("--kubeconfig", help="Path to the kubeconfig file to use for CLI requests.")
    g.add_argument("--context", help="The name of the kubeconfig context to use")
    g.add_argument("-n", "--namespace", help="If present, the namespace scope for this CLI request")


@dataclass
class Cluster:
    """An HTTP client and the namespace the command works in."""

    http: HTTPClient
    namespace: str

    @staticmethod
    def connect(args: argparse.Namespace) -> Cluster:
        from pykueue.client.kubeconfig import KubeconfigError

        try:
            http = HTTPClient.from_kubeconfig(args.kubeconfig, args.context)
        except KubeconfigError as err:
            raise CommandError(str(err)) from None
        return Cluster(http, args.namespace or http.namespace or "default")

    def close(self) -> None:
        self.http.close()

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self.http.get(res, name, namespace)

    def pages(
        self, res: Resource, namespace: str | None, label_selector: str, field_selector: str, limit: int
    ) -> Iterator[dict[str, Any]]:
        """LIST pages (``limit`` objects each, ``continue`` until done), as kueuectl's Run loops."""
        params: dict[str, str] = {}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        if limit > 0:
            params["limit"] = str(limit)
        path = res.path(namespace if res.namespaced else None)
        while True:
            page = self.http.request("GET", path, params=params)
            page.setdefault("kind", f"{res.kind}List")
            page.setdefault("apiVersion", res.api_version)
            for item in page.get("items") or []:
                item.setdefault("kind", res.kind)
                item.setdefault("apiVersion", res.api_version)
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return
            params["continue"] = str(token)

    def create(self, res: Resource, obj: dict[str, Any], dry_run: bool) -> dict[str, Any]:
        namespace = (obj.get("metadata") or {}).get("namespace")
        params = {"dryRun": "All"} if dry_run else None
        return self.http.request("POST", res.path(namespace if res.namespaced else None), params=params, body=obj)

    def merge_patch(
        self, res: Resource, name: str, namespace: str | None, patch: dict[str, Any], dry_run: bool
    ) -> dict[str, Any]:
        params = {"dryRun": "All"} if dry_run else None
        return self.http.request(
            "PATCH",
            res.path(namespace if res.namespaced else None, name),
            params=params,
            body=patch,
            content_type="application/merge-patch+json",
        )

    def pending_workloads(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any] | None:
        """A ``PendingWorkloadsSummary`` (None when the queue, or the whole API, is not found)."""
        try:
            return self.http.request("GET", VISIBILITY + path, params=params)
        except APIError as err:
            if err.code == 404:
                return None
            raise

    def resources_for(self, api_version: str) -> list[dict[str, Any]] | None:
        """``ServerResourcesForGroupVersion`` (None when the group version is not served)."""
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        try:
            return list(self.http.request("GET", path).get("resources") or [])
        except APIError as err:
            if err.code == 404:
                return None
            raise

    def preferred_group_versions(self) -> list[str]:
        """``v1`` and every group's preferred version (legacy discovery)."""
        groups = self.http.request("GET", "/apis").get("groups") or []
        return ["v1", *(g["preferredVersion"]["groupVersion"] for g in groups if g.get("preferredVersion"))]


KUEUE_KINDS = {
    "clusterqueue": R.CLUSTER_QUEUES,
    "localqueue": R.LOCAL_QUEUES,
    "workload": R.WORKLOADS,
    "resourceflavor": R.RESOURCE_FLAVORS,
}
