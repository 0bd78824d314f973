"""A mesh's injected sidecar (DESIGN §5: findings one change closes are one action): Istio's
proxy image is set once in its injector config, so the POD-007 of every workload whose only
unpinned containers Istio injected is one action, not one per workload."""

from __future__ import annotations

import json

import pytest

from posture.actions import actions_for
from posture.models import Action
from tests.posture.test_actions import finding
from tests.posture.test_actions_real_world import (
    action_of,
    gpu_node,
    namespaces,
    open_finding,
    pod,
    world,
)

pytestmark = pytest.mark.django_db

PINNED = "registry.example.internal/a/t@sha256:" + "b" * 64
PROXY = "docker.io/istio/proxyv2:1.27.3"
STATUS = {"initContainers": ["istio-validation"], "containers": ["istio-proxy"]}


def meshed(namespace: str, name: str, node: str, image: str) -> dict:
    """A pod as Istio's injector leaves it: its sidecar and init container added, with
    `sidecar.istio.io/status` naming them."""
    item = pod(namespace, name, node, image)
    item["metadata"]["annotations"] = {"sidecar.istio.io/status": json.dumps(STATUS)}
    spec = item["spec"]
    spec["containers"].append({"name": "istio-proxy", "image": PROXY})
    spec["initContainers"] = [{"name": "istio-validation", "image": PROXY}]
    return item


def test_workloads_whose_only_unpinned_image_is_istios_sidecar_are_one_action(tmp_path):
    """Three pods of two tenants, each with Istio's unpinned sidecar: one finding each (the
    subject is the workload), one action in Istio's injector config for the two whose own
    image is pinned; the third, whose own image is a tag too, keeps its own action."""
    items = [
        gpu_node("gpu-1", "a"),
        *namespaces("team-a", "beta-prod"),
        meshed("team-a", "train", "gpu-1", PINNED),
        meshed("beta-prod", "infer", "gpu-1", PINNED),
        meshed("beta-prod", "tagged", "gpu-1", "registry.example.internal/b/t:1"),
    ]
    world(tmp_path, items)
    train, infer = open_finding("POD-007", "train"), open_finding("POD-007", "infer")
    entries = {c["container"]: c.get("injected_by") for c in train.evidence["containers"]}
    assert entries == {"istio-proxy": "istio", "istio-validation": "istio"}
    mesh = action_of(train)
    assert action_of(infer).pk == mesh.pk
    assert mesh.title == (
        f"Pin the Istio sidecar image {PROXY} by digest in the mesh's injector config "
        "(Helm/IstioOperator global.proxy.image, or the istio-system ConfigMap "
        "istio-sidecar-injector): closes 2 findings, 2 tenants"
    )
    own = action_of(open_finding("POD-007", "tagged"))
    assert own.title == "Pin images by digest from an approved registry in Pod beta-prod/tagged"
    pins = [t for t in Action.objects.values_list("title", flat=True) if "Pin" in t]
    assert len(pins) == 2


def test_a_sidecar_by_name_alone_is_the_workloads_own():
    """A container named istio-proxy with no injector record is the workload's to pin."""
    entry = {"container": "istio-proxy", "image": PROXY, "problems": ["not pinned"]}
    evidence = {"workload": "Deployment team-a/x", "containers": [entry]}
    (action,) = actions_for(
        [finding("POD-007", "Deployment", "x", namespace="team-a", evidence=evidence)]
    )
    assert action.title.startswith("Pin images by digest from an approved registry in ")


def test_an_unpinned_image_volume_keeps_the_workloads_own_action(tmp_path):
    """Istio's sidecar is the only unpinned container, but the workload's own image volume
    is by tag too: pinning the proxy in the injector config would not close the finding."""
    item = meshed("team-a", "train", "gpu-1", PINNED)
    item["spec"]["volumes"] = [{"name": "weights", "image": {"reference": "ghcr.io/a/w:1"}}]
    world(tmp_path, [gpu_node("gpu-1", "a"), *namespaces("team-a", "beta-prod"), item])
    train = open_finding("POD-007", "train")
    assert [v["volume"] for v in train.evidence["volumes"]] == ["weights"]
    assert action_of(train).title == (
        "Pin images by digest from an approved registry in Pod team-a/train"
    )
