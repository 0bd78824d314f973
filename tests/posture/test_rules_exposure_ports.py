"""K8S-006 evidence: an Ingress or Gateway API route lists the Service ports it routes to, not
every port of the Service (a KubeRay head Service carries GCS 6379, the dashboard 8265 and the
client 10001; its Ingress routes only the dashboard)."""

from __future__ import annotations

from typing import Any

import pytest

import posture.rules.k8s.notebooks  # noqa: F401
from inventory.sources.normalise import normalise
from posture.rules.registry import run_checks
from tests.posture.builders import inputs, tenant

RESEARCH = tenant("research")
HEAD = {"ray.io/cluster": "rc-llm", "ray.io/node-type": "head"}
PORTS = [("gcs-server", 6379), ("dashboard", 8265), ("client", 10001)]


def _head_pod() -> dict[str, Any]:
    container = {
        "name": "ray-head",
        "image": "docker.io/rayproject/ray-ml:2.9.0-gpu",
        "args": ["ray start --head --dashboard-host=0.0.0.0 --block"],
        "ports": [{"name": n, "containerPort": p} for n, p in PORTS],
    }
    meta = {"name": "rc-llm-head-x7k2p", "namespace": "research", "labels": HEAD}
    spec = {"nodeName": "k8s-cpu-02", "containers": [container]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running"},
    }


def _service() -> dict[str, Any]:
    ports = [{"name": n, "port": p, "targetPort": p, "protocol": "TCP"} for n, p in PORTS]
    meta = {"name": "rc-llm-head-svc", "namespace": "research"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {"selector": HEAD, "ports": ports},
    }


def _ingress(port: dict | None) -> dict[str, Any]:
    service = {"name": "rc-llm-head-svc", **({"port": port} if port is not None else {})}
    path = {"path": "/", "pathType": "Prefix", "backend": {"service": service}}
    rule = {"host": "ray-research.corp.example", "http": {"paths": [path]}}
    spec = {"ingressClassName": "nginx", "rules": [rule]}
    meta = {"name": "rc-llm-head-ingress", "namespace": "research"}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta, "spec": spec}


def _route(port: int | None) -> dict[str, Any]:
    ref = {"name": "rc-llm-head-svc", **({"port": port} if port is not None else {})}
    meta = {"name": "ray", "namespace": "research"}
    spec = {
        "parentRefs": [{"name": "public", "namespace": "gateways"}],
        "rules": [{"backendRefs": [ref]}],
    }
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": meta,
        "spec": spec,
    }


def _openshift_route(target: int | str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "host": "ray-research.apps.ocp.example",
        "to": {"kind": "Service", "name": "rc-llm-head-svc", "weight": 100},
    }
    if target is not None:
        spec["port"] = {"targetPort": target}
    meta = {"name": "ray", "namespace": "research"}
    return {"apiVersion": "route.openshift.io/v1", "kind": "Route", "metadata": meta, "spec": spec}


def _routed(route: dict[str, Any]) -> list[int]:
    snapshot = normalise([_head_pod(), _service(), route])
    world = inputs(
        pods=snapshot.pods,
        tenants=(RESEARCH,),
        services=snapshot.services,
        ingresses=snapshot.ingresses,
    )
    (draft,) = run_checks(world, ["K8S-006"])
    (routed,) = draft.evidence["containers"][0]["ingresses"]
    return routed["ports"]


@pytest.mark.parametrize(
    ("route", "ports"),
    [
        (_ingress({"number": 8265}), [8265]),
        (_ingress({"name": "dashboard"}), [8265]),
        (_route(8265), [8265]),
        # What cannot be told lists every port: no port named, a port the Service lacks.
        (_ingress(None), [6379, 8265, 10001]),
        (_ingress({"number": 9999}), [6379, 8265, 10001]),
        (_route(None), [6379, 8265, 10001]),
        # An OpenShift Route's targetPort: a port's name, or the number of the port it targets.
        (_openshift_route("dashboard"), [8265]),
        (_openshift_route(8265), [8265]),
        (_openshift_route(None), [6379, 8265, 10001]),
        (_openshift_route(9999), [6379, 8265, 10001]),
    ],
)
def test_k8s006_an_ingress_lists_the_ports_it_routes_to(route, ports):
    assert _routed(route) == ports
