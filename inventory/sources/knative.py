"""Knative Serving's routing, as real clusters write it (K8S-006). PURE.

A Knative revision (a KServe InferenceService's predictor in serverless mode) is published by
its networking layer: net-istio writes VirtualServices (mesh_routes.py), net-contour
HTTPProxies, net-gateway-api HTTPRoutes, all read as such; net-kourier reads Knative's own
Ingress (`networking.internal.knative.dev`, KIngress) and writes nothing else, so a KIngress of
Kourier's class is read here as the route. Every route ends at the revision's public Service,
which has no selector: Knative's ServerlessService writes its endpoints, the revision's pods
(or the activator, which forwards to the same pods). Those pods' queue-proxy sidecar takes the
traffic and forwards it to the user container (posture.rules.k8s.knative_reach).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from inventory.snapshot import Ingress, Pod
from inventory.sources.raw import dicts, dig, labels_of, meta, name_of, str_dict, str_tuple, text

KNATIVE_NETWORKING = "networking.internal.knative.dev"
SERVICE_TYPE = "networking.internal.knative.dev/serviceType"
REVISION = "serving.knative.dev/revision"
CLASS_KEYS = ("networking.knative.dev/ingress.class", "networking.knative.dev/ingress-class")
KOURIER = "kourier.ingress.networking.knative.dev"
# Classes whose own objects are read as routes (VirtualService, HTTPProxy, HTTPRoute); the
# default class (none written) is Istio's (config-network `ingress-class`).
READ_ELSEWHERE = (
    "",
    "istio.ingress.networking.knative.dev",
    "contour.ingress.networking.knative.dev",
    "gateway-api.ingress.networking.knative.dev",
)
# net-kourier's external authorization: the controller's environment (older releases) or its
# config-kourier ConfigMap.
KOURIER_EXTAUTHZ_ENV = "KOURIER_EXTAUTHZ_HOST"
KOURIER_CONFIG = "config-kourier"
KOURIER_EXTAUTHZ_KEY = "extauthz-host"


def public_revision_selector(obj: dict[str, Any]) -> dict[str, str]:
    """The pods behind a Knative revision's public Service (no selector of its own: its
    endpoints are written by the ServerlessService), by their revision label; {} for any
    other Service."""
    labels = labels_of(obj)
    if str_dict(dig(obj, "spec").get("selector")) or labels.get(SERVICE_TYPE) != "Public":
        return {}
    revision = labels.get(REVISION)
    return {REVISION: revision} if revision else {}


def is_kingress(obj: dict[str, Any]) -> bool:
    api_version = text(obj.get("apiVersion"), "") or ""
    return obj.get("kind") == "Ingress" and api_version.rpartition("/")[0] == KNATIVE_NETWORKING


def kingress_class(obj: dict[str, Any]) -> str:
    annotations = str_dict(meta(obj).get("annotations"))
    return next((annotations[k] for k in CLASS_KEYS if annotations.get(k)), "")


def kingress_from(obj: dict[str, Any], namespace: str) -> Ingress | None:
    """A KIngress of a class whose own objects are not read (Kourier's), as a route: the
    Services its rules for outside the cluster (visibility ExternalIP, the default) split
    traffic to. None for a class read through its own objects."""
    ingress_class = kingress_class(obj)
    if ingress_class in READ_ELSEWHERE:
        return None
    hosts: set[str] = set()
    refs: set[tuple[str, str, str]] = set()
    for rule in dicts(dig(obj, "spec").get("rules")):
        if (text(rule.get("visibility"), "") or "ExternalIP") != "ExternalIP":
            continue  # ClusterLocal: the internal gateway only
        hosts.update(h for h in str_tuple(rule.get("hosts")) if h)
        for path in dicts(dig(rule, "http").get("paths")):
            for split in dicts(path.get("splits")):
                name = text(split.get("serviceName"), "") or ""
                port = text(split.get("servicePort"), "") or "*"
                if name:
                    refs.add((text(split.get("serviceNamespace"), "") or namespace, name, port))
    auth = "" if ingress_class == KOURIER else f"unknown: Knative ingress class {ingress_class}"
    return Ingress(
        namespace=namespace,
        name=name_of(obj),
        ingress_class=ingress_class,
        hosts=tuple(sorted(hosts)),
        services=tuple(sorted({n for ns, n, _ in refs if ns == namespace})),
        kind="KIngress",
        remote_services=tuple(sorted({f"{ns}/{n}" for ns, n, _ in refs if ns != namespace})),
        auth=auth + " (its gateway's authentication is not read)" if auth else "",
        backend_ports=tuple(sorted({f"{n}:{p}" for ns, n, p in refs if ns == namespace})),
    )


def with_kourier_auth(
    routes: list[Ingress], pods: list[Pod], configmaps: list[tuple[str, str, Any]]
) -> list[Ingress]:
    """Kourier's KIngress routes, with net-kourier's external authorization (which covers
    every route of its gateway) as their `auth` where it is configured."""
    extauthz = kourier_extauthz(pods, configmaps)
    if not extauthz:
        return routes
    return [
        replace(r, auth=extauthz) if r.kind == "KIngress" and r.ingress_class == KOURIER else r
        for r in routes
    ]


def kourier_extauthz(pods: list[Pod], configmaps: list[tuple[str, str, Any]]) -> str:
    """How net-kourier is told to authorize every request, "" where it is not."""
    for pod in pods:
        for container in pod.containers:
            for env in container.env:
                if env.name == KOURIER_EXTAUTHZ_ENV and env.value:
                    return f"net-kourier external authorization ({env.name}={env.value})"
    for namespace, name, data in configmaps:
        host = (data or {}).get(KOURIER_EXTAUTHZ_KEY) if isinstance(data, dict) else None
        if name == KOURIER_CONFIG and isinstance(host, str) and host.strip():
            return f"net-kourier external authorization ({namespace}/{name} extauthz-host={host})"
    return ""
