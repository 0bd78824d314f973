"""A fake Kubernetes API server: the real list paths, paging, watches and faults, over HTTP.

Why not mock the client: the bugs worth catching live in how the official ``kubernetes``
client speaks HTTP (continue tokens, 410 on expiry, Status bodies, timeouts), so the
client must run unmodified against something that answers like an API server.

    with FakeKubeAPI(objects) as api:
        client = kubernetes.config.new_client_from_config(
            config_file=str(api.kubeconfig(tmp_path)), context="fake"
        )

Items come back in the order given (a real server orders by namespace/name). Every list
path also serves `watch=true` (see tests/kubeapi_watch.py), and /api/v1/nodes/NAME one Node.
Faults, delays and 403s set on /api/v1/nodes apply to its one-Node GETs too.
"""

from __future__ import annotations

import copy
import json
import secrets
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlsplit

import pytest
import yaml

from tests.kubeapi_watch import (
    Stream,
    bookmark,
    hold_seconds,
    stamped,
    truthy,
    watch_events,
    write_stream,
)

TOKEN = "fake-token-not-secret"
READER = "system:serviceaccount:gpuposture:reader"

# kind -> its "all namespaces" list path, as the official client requests it.
LIST_PATHS: dict[str, str] = {
    "Node": "/api/v1/nodes",
    "Pod": "/api/v1/pods",
    "Namespace": "/api/v1/namespaces",
    "ResourceQuota": "/api/v1/resourcequotas",
    "ConfigMap": "/api/v1/configmaps",
    "Service": "/api/v1/services",
    "Secret": "/api/v1/secrets",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "ServiceAccount": "/api/v1/serviceaccounts",
    "RuntimeClass": "/apis/node.k8s.io/v1/runtimeclasses",
    "DaemonSet": "/apis/apps/v1/daemonsets",
    "Deployment": "/apis/apps/v1/deployments",
    "ReplicaSet": "/apis/apps/v1/replicasets",
    "StatefulSet": "/apis/apps/v1/statefulsets",
    "Job": "/apis/batch/v1/jobs",
    "CronJob": "/apis/batch/v1/cronjobs",
    "Role": "/apis/rbac.authorization.k8s.io/v1/roles",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/rolebindings",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "Ingress": "/apis/networking.k8s.io/v1/ingresses",
    "NetworkPolicy": "/apis/networking.k8s.io/v1/networkpolicies",
    "ClusterPolicy": "/apis/nvidia.com/v1/clusterpolicies",
    # Dynamic Resource Allocation: served at `dra_version` (v1 unless a test says otherwise)
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceClaim": "/apis/resource.k8s.io/v1/resourceclaims",
    "ResourceClaimTemplate": "/apis/resource.k8s.io/v1/resourceclaimtemplates",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
    # Admission control. Kyverno's ClusterPolicy shares its kind with NVIDIA's, so its objects
    # are filed by group (`_world_key`); Gatekeeper serves one constraint kind here.
    "ValidatingAdmissionPolicy": (
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
    ),
    "ValidatingAdmissionPolicyBinding": (
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
    ),
    # A CNI's egress policy and a Gateway API route (kube_kinds.NETWORK_CUSTOM_KINDS).
    "CiliumNetworkPolicy": "/apis/cilium.io/v2/ciliumnetworkpolicies",
    "Tier": "/apis/crd.projectcalico.org/v1/tiers",  # Calico's, as stored by its CRDs
    "GlobalNetworkPolicy": "/apis/crd.projectcalico.org/v1/globalnetworkpolicies",
    "GlobalNetworkSet": "/apis/crd.projectcalico.org/v1/globalnetworksets",
    "HTTPRoute": "/apis/gateway.networking.k8s.io/v1/httproutes",
    "VirtualService": "/apis/networking.istio.io/v1beta1/virtualservices",
    "AuthorizationPolicy": "/apis/security.istio.io/v1beta1/authorizationpolicies",
    "Sidecar": "/apis/networking.istio.io/v1beta1/sidecars",
    "Gateway": "/apis/networking.istio.io/v1beta1/gateways",  # Istio's (not Gateway API's)
    "KyvernoClusterPolicy": "/apis/kyverno.io/v1/clusterpolicies",
    "KyvernoPolicy": "/apis/kyverno.io/v1/policies",
    # Served as v2 from Kyverno 1.13 (v2beta1 from 1.11, v2alpha1 from 1.9).
    "KyvernoPolicyException": "/apis/kyverno.io/v2/policyexceptions",
    "K8sPSPPrivilegedContainer": (
        "/apis/constraints.gatekeeper.sh/v1beta1/k8spspprivilegedcontainer"
    ),
    "GatekeeperConfig": "/apis/config.gatekeeper.sh/v1alpha1/configs",
    # OpenShift's pod admission; a test of a plain cluster marks the group not served.
    "SecurityContextConstraints": "/apis/security.openshift.io/v1/securitycontextconstraints",
    # KubeRay: read only as the owners a listed object's chain names (kube_owners), found by
    # discovery of their group/version.
    "RayCluster": "/apis/ray.io/v1/rayclusters",
    "RayService": "/apis/ray.io/v1/rayservices",
    # Katib: an Experiment's Trials own the Jobs that run them.
    "Experiment": "/apis/kubeflow.org/v1beta1/experiments",
    "Trial": "/apis/kubeflow.org/v1beta1/trials",
}
# Kinds served at the cluster scope, as discovery says (`namespaced: false`).
CLUSTER_SCOPED = {
    "Node",
    "Namespace",
    "PersistentVolume",
    "RuntimeClass",
    "ClusterRole",
    "ClusterRoleBinding",
    "ClusterPolicy",
    "DeviceClass",
    "ResourceSlice",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "CiliumClusterwideNetworkPolicy",
    "Tier",
    "GlobalNetworkPolicy",
    "GlobalNetworkSet",
    "KyvernoClusterPolicy",
    "K8sPSPPrivilegedContainer",
    "SecurityContextConstraints",
}
DRA_GROUP = "/apis/resource.k8s.io/"
ADMISSION_GROUP = "/apis/admissionregistration.k8s.io/"  # VAP: v1 from 1.30, v1beta1 before
KYVERNO_GROUP = "/apis/kyverno.io/"  # PolicyException: v2 from Kyverno 1.13, v2beta1 before
GATEKEEPER = "/apis/constraints.gatekeeper.sh/v1beta1"  # its discovery: the constraint kinds
KIND_AT = {path: kind for kind, path in LIST_PATHS.items()}
ROUTES = {*KIND_AT, "/version", "/api", "/apis", GATEKEEPER}
NODES = LIST_PATHS["Node"]

VERSION = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.4",
    "gitCommit": "a78aa47129b8539636eb86a9d00e31b2720fe06b",
    "gitTreeState": "clean",
    "buildDate": "2024-12-10T18:05:27Z",
    "goVersion": "go1.22.9",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def group_version(path: str) -> str:
    # A list's apiVersion: "v1" for /api/v1/nodes, "apps/v1" for /apis/apps/v1/daemonsets.
    return path.split("/", 2)[2].rsplit("/", 1)[0]


# Each group/version's discovery (an APIResourceList of the kinds served there).
DISCOVERY = {f"/apis/{group_version(path)}" for path in KIND_AT if path.startswith("/apis/")}
ROUTES |= DISCOVERY


def status(code: int, reason: str, message: str, details: dict | None = None) -> dict[str, Any]:
    """A metav1.Status, the body the API server sends with every error."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    body |= {"message": message, "reason": reason}
    return body | ({"details": details} if details is not None else {}) | {"code": code}


EXPIRED = status(
    410,
    "Expired",
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter.",
)


def forbidden(path: str, verb: str = "list", name: str = "") -> dict[str, Any]:
    # Worded as RBAC words it, so code that shows the message to a person shows a real one.
    if path not in KIND_AT:
        return status(403, "Forbidden", f'forbidden: User "{READER}" cannot get path "{path}"', {})
    group, plural = group_version(path).rpartition("/")[0], path.rsplit("/", 1)[1]
    subject = f'{plural} "{name}"' if name else plural
    msg = (
        f'{subject} is forbidden: User "{READER}" cannot {verb} resource "{plural}" '
        f'in API group "{group}" at the cluster scope'
    )
    details = ({"name": name} if name else {}) | ({"group": group} if group else {})
    return status(403, "Forbidden", msg, details | {"kind": plural})


def route(path: str) -> str | None:
    """The served path whose faults apply: the path itself, or the node list for one Node."""
    name = path.removeprefix(f"{NODES}/")
    if name != path and name and "/" not in name:
        return NODES
    return path if path in ROUTES else None


class Request(NamedTuple):
    """A request as received: `path` without a trailing slash, `query` one value per key."""

    method: str
    path: str
    query: dict[str, str]


Answer = tuple[int, dict[str, Any] | Stream]  # HTTP status, JSON body or watch events


@dataclass
class _Failure:
    status: int
    times: int
    after_pages: int


class FakeKubeAPI:
    def __init__(self, objects: list[dict[str, Any]]) -> None:
        # How long a watch stays open after its events (capped by its timeoutSeconds); a real
        # server holds it for timeoutSeconds, tests want it short.
        self.watch_hold_seconds = 0.0
        self._lock = threading.Lock()  # handler threads and the test thread share all state
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._requests: list[Request] = []
        self._token: str | None = TOKEN
        self._resource_version = 48213  # an etcd revision; clients must treat it as opaque
        self._worlds: dict[str, dict[str, list[dict]]] = {}  # resourceVersion -> path -> items
        self._event_cache: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        self._cursors: dict[str, tuple[str, str, int]] = {}  # token -> (path, rv, offset)
        self._expire: set[str] = set()
        self._expire_watch: set[str] = set()
        self._failures: dict[str, _Failure] = {}
        self._pages: dict[str, int] = {}  # 200 answers per path (watches too), for after_pages
        self._forbidden: set[str] = set()
        self._delays: dict[str, float] = {}
        # The one version resource.k8s.io is served at ("v1", "v1beta2", "v1beta1"; None: not
        # at all): its lists are the v1 paths' objects under that version's apiVersion.
        self.dra_version: str | None = "v1"
        self.admission_version: str | None = "v1"
        # The version Kyverno's PolicyException is served at ("v2", "v2beta1", "v2alpha1").
        self.exception_version: str | None = "v2"
        # API groups answered 404 (a CRD not installed), e.g. {"kyverno.io"}
        self.not_served: set[str] = set()
        self.replace_objects(objects)

    # -- the world and the faults, all changeable between requests --

    def replace_objects(self, objects: list[dict[str, Any]]) -> None:
        """A new world at a new resourceVersion; continue tokens already handed out keep
        paging their old snapshot, as a consistent list from etcd does."""
        world: dict[str, list[dict]] = {path: [] for path in KIND_AT}
        for obj in objects:
            # A `kubectl get -o json` of several kinds is one `kind: List`: accept it whole.
            for item in obj["items"] if obj.get("kind") == "List" else [obj]:
                key = _world_key(item)
                if key not in LIST_PATHS:
                    raise ValueError(f"FakeKubeAPI does not serve kind {item.get('kind')!r}")
                # Typed lists omit kind and apiVersion on their items.
                stripped = {k: v for k, v in item.items() if k not in ("kind", "apiVersion")}
                world[LIST_PATHS[key]].append(copy.deepcopy(stripped))
        with self._lock:
            self._resource_version += 1
            self._worlds[str(self._resource_version)] = world

    def expire_continue_once(self, path: str) -> None:
        with self._lock:
            self._expire.add(_known(path))

    def expire_watch_once(self, path: str) -> None:
        """The next watch on `path`, whatever its resourceVersion, streams one 410 ERROR."""
        with self._lock:
            self._expire_watch.add(_known(path))

    def fail(self, path: str, status: int = 500, times: int = 1, after_pages: int = 0) -> None:
        with self._lock:
            self._failures[_known(path)] = _Failure(status, times, after_pages)
            self._pages[path] = 0

    def forbid(self, path: str) -> None:
        with self._lock:
            self._forbidden.add(_known(path))

    def allow(self, path: str) -> None:
        with self._lock:
            self._forbidden.discard(path)

    def delay(self, path: str, seconds: float) -> None:
        with self._lock:
            self._delays[_known(path)] = seconds

    def set_token(self, token: str | None) -> None:
        """The bearer token accepted from now on; None accepts any request."""
        with self._lock:
            self._token = token

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    @property
    def resource_version(self) -> str:
        with self._lock:
            return str(self._resource_version)

    # -- lifecycle --

    @property
    def url(self) -> str:
        assert self._server is not None, "FakeKubeAPI is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def kubeconfig(self, tmp_path: Path, token: str = TOKEN) -> Path:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": token}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
            "current-context": "fake",
        }
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        return path

    def start(self) -> FakeKubeAPI:
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None or self._thread is None:
            return
        self._stopping.set()  # wakes delayed and held handlers, so stopping never waits on them
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._server = self._thread = None

    def __enter__(self) -> FakeKubeAPI:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- answering, called from handler threads --

    def _answer(self, method: str, path: str, query: dict[str, str], auth: str | None) -> Answer:
        # As a real API server: a list the account may not make is refused (403) before the
        # server looks for the resource, served or not; discovery stays open to everyone.
        if path in self._forbidden and any(path.startswith(f"/apis/{g}/") for g in self.not_served):
            with self._lock:
                self._requests.append(Request(method, path, query))
            return 403, forbidden(path)
        if any(
            path.startswith(f"/apis/{group}/") or path == f"/apis/{group}"
            for group in self.not_served
        ):
            with self._lock:
                self._requests.append(Request(method, path, query))
            return 404, status(404, "NotFound", "the server could not find the requested resource")
        if path.startswith(DRA_GROUP):
            return self._answer_versioned(DRA_GROUP, self.dra_version, method, path, query, auth)
        if path.startswith(ADMISSION_GROUP):
            served = self.admission_version
            return self._answer_versioned(ADMISSION_GROUP, served, method, path, query, auth)
        if path.startswith(f"{KYVERNO_GROUP}v2") and path.endswith("/policyexceptions"):
            served = self.exception_version
            return self._answer_versioned(
                KYVERNO_GROUP, served, method, path, query, auth, canonical_version="v2"
            )
        return self._answer_path(method, path, query, auth)

    def _answer_path(
        self, method: str, path: str, query: dict[str, str], auth: str | None
    ) -> Answer:
        key = route(path)
        with self._lock:
            self._requests.append(Request(method, path, query))
            delay = self._delays.get(key or "", 0.0)
        if delay:
            self._hold(delay)
        with self._lock:
            code, body = self._decide(method, path, query, auth)
            if code == 200 and key:
                self._pages[key] = self._pages.get(key, 0) + 1
            return code, body

    def _answer_versioned(
        self,
        group: str,
        served: str | None,
        method: str,
        path: str,
        query: dict[str, str],
        auth: str | None,
        canonical_version: str = "v1",
    ) -> Answer:
        """A path of a group served at one version (DRA's, admission's): 404 unless the path
        names `served`; served from the canonical (v1) path's objects, the list saying the
        version asked."""
        version, _, rest = path.removeprefix(group).partition("/")
        # The group/version's own path is its discovery, served at `served` as the lists are.
        canonical = f"{group}{canonical_version}" + (f"/{rest}" if rest else "")
        if version != served or route(canonical) is None:
            with self._lock:
                self._requests.append(Request(method, path, query))
            return 404, status(404, "NotFound", "the server could not find the requested resource")
        code, body = self._answer_path(method, canonical, query, auth)
        group_version = f"{group.strip('/').removeprefix('apis/')}/{version}"
        if isinstance(body, dict) and body.get("kind") == "APIResourceList":
            body = {**body, "groupVersion": group_version}
        elif isinstance(body, dict) and str(body.get("kind", "")).endswith("List"):
            body = {**body, "apiVersion": group_version}
        return code, body

    def _hold(self, seconds: float) -> None:
        # Called outside the lock by handler threads; stop() sets the event to cut it short.
        self._stopping.wait(seconds)

    def _decide(self, method: str, path: str, query: dict[str, str], auth: str | None) -> Answer:
        # The API server's order: authenticate, route, authorize, then serve.
        if self._token is not None and auth != f"Bearer {self._token}":
            return 401, status(401, "Unauthorized", "Unauthorized")
        key = route(path)
        if key is None:
            return 404, status(404, "NotFound", "the server could not find the requested resource")
        watching = truthy(query.get("watch"))
        if method != "GET" or (watching and path not in KIND_AT):
            # Read-only by design: a write reaching here is a bug in the caller.
            msg = "the server does not allow this method on the requested resource"
            return 405, status(405, "MethodNotAllowed", msg)
        name = path.removeprefix(f"{key}/") if key != path else ""
        if key in self._forbidden:
            return 403, forbidden(key, "watch" if watching else "get" if name else "list", name)
        failure = self._failures.get(key)
        if failure and self._pages.get(key, 0) >= failure.after_pages:
            failure.times -= 1
            if failure.times <= 0:
                del self._failures[key]
            cause = "etcdserver: request timed out (injected by FakeKubeAPI)"
            details = {"causes": [{"message": cause}]}
            msg = f"Internal error occurred: {cause}"
            return failure.status, status(failure.status, "InternalError", msg, details)
        if name:
            return self._get_node(name)
        if path in KIND_AT:
            return self._watch(path, query) if watching else self._list(path, query)
        return 200, self._discovery(path)

    def _list(self, path: str, query: dict[str, str]) -> Answer:
        token = query.get("continue")
        if token:
            cursor = self._cursors.get(token)
            if path in self._expire or cursor is None or cursor[0] != path:
                self._expire.discard(path)
                return 410, EXPIRED
            _, rv, offset = cursor
        else:
            rv, offset = str(self._resource_version), 0
        limit = int(query.get("limit") or 0)
        items = self._worlds[rv][path]
        end = offset + limit if limit > 0 else len(items)
        metadata: dict[str, Any] = {"resourceVersion": rv}  # the first page's, on every page
        if end < len(items):
            next_token = secrets.token_urlsafe(24)
            self._cursors[next_token] = (path, rv, end)
            metadata |= {"continue": next_token, "remainingItemCount": len(items) - end}
        return 200, {
            "kind": f"{KIND_AT[path]}List",
            "apiVersion": group_version(path),
            "metadata": metadata,
            "items": items[offset:end],
        }

    def _watch(self, path: str, query: dict[str, str]) -> Answer:
        # The server answers 200 either way: an expired watch is an ERROR event, not a 410.
        since, now = query.get("resourceVersion", ""), str(self._resource_version)
        kind, api_version = KIND_AT[path], group_version(path)
        if path in self._expire_watch or since not in ("", "0", *self._worlds):
            self._expire_watch.discard(path)
            gone = status(410, "Expired", f"too old resource version: {since} ({now})")
            return 200, Stream([{"type": "ERROR", "object": gone}])
        # No resourceVersion or "0" means "start from any": every current object is ADDED.
        events = list(self._changes(path, since, now))
        if truthy(query.get("allowWatchBookmarks")):
            events.append(bookmark(kind, api_version, now))
        return 200, Stream(events, hold_seconds(query, self.watch_hold_seconds))

    def _changes(self, path: str, since: str, now: str) -> list[dict[str, Any]]:
        key = (path, since, now)
        if key not in self._event_cache:
            before = self._worlds[since][path] if since not in ("", "0") else []
            kind, api_version = KIND_AT[path], group_version(path)
            self._event_cache[key] = watch_events(
                before, self._worlds[now][path], kind, api_version, now
            )
        return self._event_cache[key]

    def prepare_watches(self, since: str) -> None:
        """Work out every path's events from `since` to now ahead of the watches, as the real
        API server's watch cache holds them when the changes happen (the bench calls this so
        its timing is the client's, not this fake's diffing)."""
        with self._lock:
            now = str(self._resource_version)
            for path in KIND_AT:
                self._changes(path, since, now)

    def _get_node(self, name: str) -> Answer:
        now = str(self._resource_version)
        for item in self._worlds[now][NODES]:
            if item["metadata"].get("name") == name:
                return 200, stamped(item, "Node", "v1", now)
        details = {"name": name, "kind": "nodes"}
        return 404, status(404, "NotFound", f'nodes "{name}" not found', details)

    def _discovery(self, path: str) -> dict[str, Any]:
        if path == GATEKEEPER:
            resources = [
                {
                    "name": p.rsplit("/", 1)[1],
                    "kind": KIND_AT[p],
                    "namespaced": False,
                    "verbs": ["get", "list", "watch"],
                }
                for p in KIND_AT
                if p.startswith(f"{GATEKEEPER}/")
            ] + [
                {
                    "name": "k8spspprivilegedcontainer/status",
                    "kind": "K8sPSPPrivilegedContainer",
                    "namespaced": False,
                    "verbs": ["get"],
                }
            ]
            return {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": GATEKEEPER.removeprefix("/apis/"),
                "resources": resources,
            }
        if path in DISCOVERY:
            return _resource_list(path)
        if path == "/version":
            return dict(VERSION)
        if path == "/api":
            address = self.url.removeprefix("http://")
            cidrs = [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": cidrs}
        served: dict[str, list[str]] = {}  # group -> its versions (Kyverno's: v1 and v2)
        for gv in sorted({group_version(path) for path in KIND_AT} - {"v1"}):
            served.setdefault(gv.split("/")[0], []).append(gv.split("/")[1])
        groups = [
            {
                "name": name,
                "versions": [{"groupVersion": f"{name}/{v}", "version": v} for v in versions],
                "preferredVersion": {
                    "groupVersion": f"{name}/{versions[0]}",
                    "version": versions[0],
                },
            }
            for name, versions in served.items()
        ]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _resource_list(path: str) -> dict[str, Any]:
    """A group/version's APIResourceList: the kinds this fake lists there."""
    kinds = {p: KIND_AT[p].removeprefix("Kyverno").removeprefix("Gatekeeper") for p in KIND_AT}
    resources = [
        {
            "name": p.rsplit("/", 1)[1],
            "singularName": kinds[p].lower(),
            "kind": kinds[p],
            "namespaced": KIND_AT[p] not in CLUSTER_SCOPED,
            "verbs": ["get", "list", "watch"],
        }
        for p in KIND_AT
        if p.rsplit("/", 1)[0] == path
    ]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": path.removeprefix("/apis/"),
        "resources": resources,
    }


def _world_key(item: dict[str, Any]) -> Any:
    # Kyverno's ClusterPolicy and Policy are filed apart from NVIDIA's ClusterPolicy.
    if str(item.get("apiVersion", "")).startswith("kyverno.io/"):
        return f"Kyverno{item.get('kind')}"
    if str(item.get("apiVersion", "")).startswith("config.gatekeeper.sh/"):
        return f"Gatekeeper{item.get('kind')}"
    return item.get("kind")


def _known(path: str) -> str:
    # A typo in a fault's path would silently inject nothing: refuse it instead.
    if path not in ROUTES:
        raise ValueError(f"FakeKubeAPI does not serve {path!r}; known: {sorted(ROUTES)}")
    return path


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # A client opens a watch per kind at once; the default backlog of 5 would drop the rest
    # of the connects, which the kernel then retries a second later.
    request_queue_size = 64

    def __init__(self, api: FakeKubeAPI) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.api = api

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out hangs up before the delayed answer: expected, not a bug.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        # The client asks for discovery as "/version/", "/api/": the server takes both.
        path = url.path.rstrip("/") or "/"
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        auth = self.headers.get("Authorization")
        code, body = self.server.api._answer(self.command, path, query, auth)
        if isinstance(body, Stream):
            write_stream(self, body, self.server.api._hold)
            return
        payload = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    # Writes are recorded, then refused with 405.
    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean; `requests` is the log


@pytest.fixture
def kube_api() -> Iterator[FakeKubeAPI]:
    """A running, empty fake; fill it with ``replace_objects``. Import it into a test module."""
    with FakeKubeAPI([]) as api:
        yield api
