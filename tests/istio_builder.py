"""Istio's ingress-gateway objects for tests that read routes through a Gateway: the object
shape, the gateway's pod (as Istio's default install labels it) and a Gateway selecting it.
Written after Istio's default profile and Kubeflow's common/istio manifests."""

from __future__ import annotations

from typing import Any

GATEWAY_LABELS = {"app": "istio-ingressgateway", "istio": "ingressgateway"}
GATEWAY_SA = "istio-ingressgateway-service-account"
GATEWAY_POD = "istio-ingressgateway-7d9c8-x2x9q"


def kube_object(
    api_version: str, kind: str, name: str, namespace: str, spec: dict, **metadata: Any
) -> dict[str, Any]:
    """One object as `kubectl get -o json` prints it (metadata beyond name and namespace as
    keyword arguments: labels, ownerReferences...)."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, **metadata},
        "spec": spec,
    }


def ingress_gateway_pod() -> dict[str, Any]:
    """istio-system's ingress-gateway pod, owned by its Deployment's ReplicaSet."""
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "istio-ingressgateway-7d9c8"}
    return kube_object(
        "v1",
        "Pod",
        GATEWAY_POD,
        "istio-system",
        {"serviceAccountName": GATEWAY_SA, "containers": [{"name": "istio-proxy", "image": "p"}]},
        labels=GATEWAY_LABELS,
        ownerReferences=[{**owner, "controller": True, "uid": "u1"}],
    )


def istio_gateway(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    """A Gateway bound to the ingress-gateway pods (its servers, if any, as `servers=`)."""
    selector = {"istio": GATEWAY_LABELS["istio"]}
    return kube_object(
        "networking.istio.io/v1", "Gateway", name, namespace, {"selector": selector, **spec}
    )
