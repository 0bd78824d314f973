"""K8S-007 and Istio's mesh-wide outboundTrafficPolicy (meshConfig in the `istio` ConfigMap of
istio-system, key `mesh`): REGISTRY_ONLY limits the egress of pods running the sidecar, which
is said as "mesh-restricted" with its reason, never as restricted. ConfigMaps are read
through normalise as a sync reads them."""

from __future__ import annotations

import pytest

import posture.rules  # noqa: F401
from inventory.snapshot import Container
from inventory.sources.normalise import normalise
from posture.rules.registry import run_checks
from tests.posture.builders import container, inputs, pod, tenant

ALPHA = tenant("alpha")
GPU = {"nvidia.com/gpu": 1}
TRAIN = container(gpu=GPU)
PROXY = Container(name="istio-proxy", image="docker.io/istio/proxyv2:1.24.2")


def mesh_config(mesh, name="istio"):
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "istio-system"},
        "data": {"mesh": mesh, "meshNetworks": "networks: {}"},
    }


REGISTRY_ONLY = "defaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\n" + (
    "outboundTrafficPolicy:\n  mode: REGISTRY_ONLY\n"
)


def k8s007(*configmaps, containers=(TRAIN, PROXY)):
    world = inputs(
        pods=(pod("alpha", containers=containers),),
        tenants=(ALPHA,),
        configmaps=normalise(list(configmaps)).configmaps,
    )
    return run_checks(world, only=["K8S-007"])


def test_registry_only_with_the_sidecar_is_mesh_restricted_not_restricted():
    (draft,) = k8s007(mesh_config(REGISTRY_ONLY))
    assert draft.evidence["verdict"] == "mesh-restricted"
    assert draft.evidence["mesh_restricted_pods"] == ["alpha/p"]
    assert draft.evidence["mesh_config"] == ["istio-system/istio"]
    assert "UID 1337" in draft.evidence["mesh_note"]
    assert "limited only by Istio's mesh-wide REGISTRY_ONLY" in draft.title


@pytest.mark.parametrize(
    ("configmaps", "containers"),
    [
        # A pod without the sidecar: nothing in the mesh stands in its way.
        pytest.param((mesh_config(REGISTRY_ONLY),), (TRAIN,), id="not-injected"),
        # Istio's default, and no mode written.
        pytest.param(
            (mesh_config("outboundTrafficPolicy:\n  mode: ALLOW_ANY\n"),),
            (TRAIN, PROXY),
            id="allow-any",
        ),
        pytest.param((mesh_config("accessLogFile: /dev/stdout\n"),), (TRAIN, PROXY), id="unset"),
        # A revision whose mesh allows any: which one the pod follows is not read.
        pytest.param(
            (mesh_config(REGISTRY_ONLY), mesh_config("{}", name="istio-canary")),
            (TRAIN, PROXY),
            id="revision-allows",
        ),
    ],
)
def test_without_registry_only_over_the_sidecar_the_pod_is_not_restricted(configmaps, containers):
    (draft,) = k8s007(*configmaps, containers=containers)
    assert draft.evidence["verdict"] == "not restricted"
    assert "mesh_restricted_pods" not in draft.evidence


def raw_pod(annotations):
    """A GPU pod with the istio-proxy sidecar, read through normalise as a sync reads it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "alpha", "annotations": annotations},
        "spec": {
            "nodeName": "gpu-1",
            "containers": [
                {"name": "train", "image": "t", "resources": {"limits": GPU}},
                {"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.24.2"},
            ],
        },
        "status": {"phase": "Running"},
    }


@pytest.mark.parametrize(
    ("annotations", "mesh_restricted"),
    [
        pytest.param({}, True, id="no-annotation"),
        pytest.param(
            {"traffic.sidecar.istio.io/excludeOutboundIPRanges": "10.0.0.0/8, 0.0.0.0/0"},
            False,
            id="exclude-everywhere",
        ),
        pytest.param(
            {"traffic.sidecar.istio.io/excludeOutboundIPRanges": "169.254.169.254/32"},
            True,
            id="exclude-one-address",
        ),
        pytest.param(
            {"traffic.sidecar.istio.io/excludeOutboundPorts": "443"}, False, id="exclude-port"
        ),
        pytest.param(
            {"traffic.sidecar.istio.io/includeOutboundIPRanges": "10.0.0.0/8"},
            False,
            id="include-cluster-only",
        ),
        pytest.param(
            {"traffic.sidecar.istio.io/includeOutboundIPRanges": "*"}, True, id="include-all"
        ),
    ],
)
def test_a_pod_whose_annotations_skip_the_sidecar_is_not_mesh_restricted(
    annotations, mesh_restricted
):
    snapshot = normalise([mesh_config(REGISTRY_ONLY), raw_pod(annotations)])
    world = inputs(pods=snapshot.pods, tenants=(ALPHA,), configmaps=snapshot.configmaps)
    (draft,) = run_checks(world, only=["K8S-007"])
    assert draft.evidence["verdict"] == ("mesh-restricted" if mesh_restricted else "not restricted")
    assert ("mesh_restricted_pods" in draft.evidence) is mesh_restricted
