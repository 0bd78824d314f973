"""Istio's Gateways and the pods that serve them (istio_auth.py). PURE.

A VirtualService names Gateways; a Gateway's `selector` picks the gateway pods (the
istio-ingressgateway Deployment, a Gateway of Kubeflow's or Knative's on it) in any namespace,
Istio's default. What authenticates a route's requests is what applies to those pods: an
AuthorizationPolicy (or EnvoyFilter) in their namespace, or in Istio's root namespace (there a
selector matches workloads of every namespace), selecting them by labels or selecting every
workload of its namespace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inventory.snapshot import Pod
from inventory.sources.raw import dicts, dig, meta, name_of, str_dict, text

ISTIO_NETWORKING = "networking.istio.io"
ROOT_NAMESPACE = "istio-system"  # meshConfig.rootNamespace's default


def is_istio_gateway(obj: dict[str, Any]) -> bool:
    return _group_kind(obj) == (ISTIO_NETWORKING, "Gateway")


def is_envoy_filter(obj: dict[str, Any]) -> bool:
    return _group_kind(obj) == (ISTIO_NETWORKING, "EnvoyFilter")


def _group_kind(obj: dict[str, Any]) -> tuple[str, str]:
    api_version = text(obj.get("apiVersion"), "") or ""
    return api_version.rpartition("/")[0], text(obj.get("kind"), "") or ""


@dataclass(frozen=True)
class GatewayPods:
    """A Gateway ("namespace/name") and the pods serving it; `pods` empty where the Gateway
    object was not read or selects no pod (its workload is then unknown)."""

    gateway: str
    pods: tuple[Pod, ...] = ()

    @property
    def identities(self) -> tuple[tuple[str, str], ...] | None:
        """The pods' (namespace, service account): who the backend's sidecar sees."""
        if not self.pods:
            return None
        return tuple(sorted({(p.namespace, p.service_account) for p in self.pods}))

    def describe(self) -> str:
        if not self.pods:
            return f"Gateway {self.gateway} (not read, or selecting no pod: its pods unknown)"
        names = sorted({f"{p.namespace}/{_workload_name(p)}" for p in self.pods})
        return f"Gateway {self.gateway} (pods of {', '.join(names)})"


def gateway_pods(
    names: tuple[str, ...], gateways: list[dict[str, Any]], pods: list[Pod]
) -> list[GatewayPods]:
    """Each Gateway named ("namespace/name") with the pods its selector picks."""
    by_name = {f"{meta(g).get('namespace')}/{name_of(g)}": g for g in gateways}
    found = []
    for name in names:
        gateway = by_name.get(name)
        selector = str_dict(dig(gateway, "spec").get("selector")) if gateway else {}
        chosen = tuple(p for p in pods if selector and _selects(selector, p.labels))
        found.append(GatewayPods(name, chosen))
    return found


def applies_to(obj: dict[str, Any], pods: tuple[Pod, ...]) -> bool | None:
    """Whether an AuthorizationPolicy, RequestAuthentication or EnvoyFilter applies to every
    one of the pods (True), to none (False), or to some, or by a `targetRef` not evaluated
    (None)."""
    where = text(meta(obj).get("namespace"), "") or ""
    spec = dig(obj, "spec")
    if spec.get("targetRef") or spec.get("targetRefs"):
        reaches = [p for p in pods if where in (p.namespace, ROOT_NAMESPACE)]
        return None if reaches else False
    # AuthorizationPolicy's `selector.matchLabels`; EnvoyFilter's `workloadSelector.labels`.
    selector = str_dict(dig(spec, "selector").get("matchLabels")) or str_dict(
        dig(spec, "workloadSelector").get("labels")
    )
    chosen = [
        p
        for p in pods
        if (p.namespace == where or where == ROOT_NAMESPACE)
        and (_selects(selector, p.labels) if selector else p.namespace == where)
    ]
    # A root-namespace policy without a selector is mesh-wide: it applies everywhere.
    if where == ROOT_NAMESPACE and not selector:
        chosen = list(pods)
    if not chosen:
        return False
    return True if len(chosen) == len(pods) else None


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _workload_name(pod: Pod) -> str:
    """The pod's controller by name (a ReplicaSet's Deployment by dropping its hash)."""
    if pod.owner_kind == "ReplicaSet" and pod.owner_name and "-" in pod.owner_name:
        return pod.owner_name.rsplit("-", 1)[0]
    return pod.owner_name or pod.name


def headers_set(route: dict[str, Any]) -> set[str]:
    """The request headers a VirtualService sets, adds or removes itself (on a route or a
    destination): a client does not choose those."""
    found: set[str] = set()
    for http in dicts(dig(route, "spec").get("http")):
        for place in [http, *dicts(http.get("route"))]:
            request = dig(place, "headers", "request")
            for op in ("set", "add"):
                found.update(str_dict(request.get(op)))
            found.update(h for h in request.get("remove") or () if isinstance(h, str))
    return found
