"""Source: a live cluster through the official `kubernetes` client.

The only module that imports `kubernetes`. Read-only: it lists the kinds below and nothing
else (never Secrets), page by page (`limit` + `continue`), and restarts a list whose continue
token expired (410 Gone). Responses are read as raw JSON (`_preload_content=False`), so the
objects are exactly what `kubectl get -o json` would print, and no time is spent building
client models that normalise would take apart again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from inventory.sources.base import Progress, SourceError

# (kind, API group class, list method). The deploy ClusterRole grants get/list/watch on
# exactly these resources; keep the two in step (tests/test_deploy_rbac.py).
KINDS: tuple[tuple[str, str, str], ...] = (
    ("Node", "CoreV1Api", "list_node"),
    ("Namespace", "CoreV1Api", "list_namespace"),
    ("Pod", "CoreV1Api", "list_pod_for_all_namespaces"),
    ("ResourceQuota", "CoreV1Api", "list_resource_quota_for_all_namespaces"),
    ("ConfigMap", "CoreV1Api", "list_config_map_for_all_namespaces"),
    ("Service", "CoreV1Api", "list_service_for_all_namespaces"),
    ("DaemonSet", "AppsV1Api", "list_daemon_set_for_all_namespaces"),
    ("Deployment", "AppsV1Api", "list_deployment_for_all_namespaces"),
    ("Role", "RbacAuthorizationV1Api", "list_role_for_all_namespaces"),
    ("ClusterRole", "RbacAuthorizationV1Api", "list_cluster_role"),
    ("RoleBinding", "RbacAuthorizationV1Api", "list_role_binding_for_all_namespaces"),
    ("ClusterRoleBinding", "RbacAuthorizationV1Api", "list_cluster_role_binding"),
    ("Ingress", "NetworkingV1Api", "list_ingress_for_all_namespaces"),
    ("NetworkPolicy", "NetworkingV1Api", "list_network_policy_for_all_namespaces"),
)
# Custom resources that may not be installed: (kind, group, version, plural). A 404 means
# the CRD is absent (no GPU Operator), which is an answer, not a failure.
OPTIONAL_CUSTOM_KINDS: tuple[tuple[str, str, str, str], ...] = (
    ("ClusterPolicy", "nvidia.com", "v1", "clusterpolicies"),
)
MAX_LIST_RESTARTS = 3


@dataclass(frozen=True)
class KubeSettings:
    page_size: int = 500
    connect_timeout: float = 5.0
    read_timeout: float = 60.0


class KubeSource:
    def __init__(
        self,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        in_cluster: bool = False,
        settings: KubeSettings | None = None,
    ) -> None:
        if not in_cluster and not kubeconfig:
            raise SourceError("a kubeconfig path or in-cluster access is needed", retryable=False)
        self.kubeconfig, self.context, self.in_cluster = kubeconfig, context, in_cluster
        self.settings = settings or KubeSettings()

    def describe(self) -> str:
        if self.in_cluster:
            return "in-cluster service account"
        return f"kubeconfig {self.kubeconfig}" + (
            f" context {self.context}" if self.context else ""
        )

    def read(self, progress: Progress) -> list[dict[str, Any]]:
        api_client = self._api_client()
        try:
            objects: list[dict[str, Any]] = []
            for kind, group, method in KINDS:
                list_call = getattr(getattr(client, group)(api_client), method)
                objects.extend(self._list_all(kind, list_call, progress))
            custom = client.CustomObjectsApi(api_client)
            for kind, group, version, plural in OPTIONAL_CUSTOM_KINDS:
                objects.extend(self._list_optional(kind, custom, group, version, plural, progress))
            return objects
        finally:
            api_client.close()

    def _api_client(self) -> client.ApiClient:
        configuration = client.Configuration()
        try:
            if self.in_cluster:
                config.load_incluster_config(client_configuration=configuration)
            else:
                config.load_kube_config(
                    config_file=self.kubeconfig,
                    context=self.context or None,
                    client_configuration=configuration,
                )
        except (ConfigException, OSError, TypeError, ValueError) as exc:
            raise SourceError(f"cannot load cluster credentials: {exc}", retryable=False) from exc
        # urllib3 would silently resend a timed-out GET three times; Celery retries instead,
        # with backoff, and the run records each attempt.
        configuration.retries = 1
        return client.ApiClient(configuration)

    def _list_all(self, kind: str, list_call: Any, progress: Progress) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token: str | None = None
        restarts = 0
        while True:
            try:
                body = self._page(kind, list_call, token)
            except ApiException as exc:
                if exc.status == 410 and token and restarts < MAX_LIST_RESTARTS:
                    # The continue token expired: the only consistent answer is a new list.
                    items, token, restarts = [], None, restarts + 1
                    continue
                raise api_error(kind, exc) from exc
            for item in body.get("items") or []:
                if isinstance(item, dict):
                    # Typed lists leave kind out of their items; normalise needs it.
                    item.setdefault("kind", kind)
                items.append(item)
            progress(kind, len(items))
            token = (body.get("metadata") or {}).get("continue") or None
            if not token:
                return items

    def _list_optional(
        self, kind: str, api: Any, group: str, version: str, plural: str, progress: Progress
    ) -> list[dict[str, Any]]:
        def list_call(**kwargs: Any) -> Any:
            return api.list_cluster_custom_object(group, version, plural, **kwargs)

        try:
            return self._list_all(kind, list_call, progress)
        except SourceError as exc:
            if "HTTP 404" in str(exc):
                progress(kind, 0)
                return []
            raise

    def _page(self, kind: str, list_call: Any, token: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "limit": self.settings.page_size,
            "_preload_content": False,
            "_request_timeout": (self.settings.connect_timeout, self.settings.read_timeout),
        }
        if token:
            kwargs["_continue"] = token
        try:
            response = list_call(**kwargs)
            body = json.loads(response.data)
        except urllib3.exceptions.HTTPError as exc:
            raise SourceError(
                f"listing {kind}: cannot reach the API server: {exc}", retryable=True
            ) from exc
        except ValueError as exc:
            raise SourceError(
                f"listing {kind}: the answer is not JSON: {exc}", retryable=True
            ) from exc
        if not isinstance(body, dict):
            raise SourceError(f"listing {kind}: the answer is not a list object", retryable=True)
        return body


def api_error(kind: str, exc: ApiException) -> SourceError:
    """A readable, classified error for an API answer."""
    message = _status_message(exc)
    if exc.status in (401, 403):
        hint = (
            "the credentials were refused"
            if exc.status == 401
            else "the account may not list it (grant get/list/watch, see deploy/)"
        )
        return SourceError(f"listing {kind}: HTTP {exc.status}: {hint}: {message}", retryable=False)
    retryable = exc.status in (408, 410, 429) or (exc.status or 0) >= 500
    return SourceError(f"listing {kind}: HTTP {exc.status}: {message}", retryable=retryable)


def _status_message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body).get("message") or exc.reason)[:500]
    except (TypeError, ValueError, AttributeError):
        return str(exc.reason)[:500]
