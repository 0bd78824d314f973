"""Kinds the live sync lists beyond the core ones, read as from a snapshot: PersistentVolumes
(a tenant pod's claim bound to a hostPath PV is judged by the PV's path; an account from before
PVs were read still syncs, with a warning saying what goes unjudged), CNI egress policies and
gateway routes."""

from __future__ import annotations

import pytest

from inventory.services import cluster_sync
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sync import cluster_get_or_create
from posture.read_model import cluster_snapshot
from tests.kubeapi import FakeKubeAPI
from tests.posture.test_rules_host_paths import _claiming_pod, _pv

pytestmark = pytest.mark.django_db

VOLUMES = "/api/v1/persistentvolumes"


@pytest.fixture(autouse=True)
def full_lists(settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 0


def _sync(api: FakeKubeAPI, tmp_path, name: str):
    source = KubeSource(
        kubeconfig=str(api.kubeconfig(tmp_path)),
        context="fake",
        settings=KubeSettings(page_size=2, read_timeout=5.0),
    )
    cluster = cluster_get_or_create(name=name)
    return cluster, cluster_sync(cluster=cluster, source=source)


def _claim_volume(cluster):
    (pod,) = cluster_snapshot(cluster).pods
    (volume,) = [v for v in pod.volumes if v.claim]
    return volume


def test_a_claim_bound_to_a_hostpath_pv_is_read_live(tmp_path):
    world = [_claiming_pod("data"), _pv("pv-kubelet", "data", path="/var/lib/kubelet")]
    with FakeKubeAPI(world) as api:
        cluster, run = _sync(api, tmp_path, "live-pv")
        assert VOLUMES in {r.path for r in api.requests}
    assert run.status == "succeeded" and run.warnings == []
    volume = _claim_volume(cluster)
    assert (volume.persistent_volume, volume.pv_path) == ("pv-kubelet", "/var/lib/kubelet")


def test_an_account_that_may_not_list_pvs_syncs_with_a_warning(tmp_path):
    world = [_claiming_pod("data"), _pv("pv-kubelet", "data", path="/var/lib/kubelet")]
    with FakeKubeAPI(world) as api:
        api.forbid(VOLUMES)
        cluster, run = _sync(api, tmp_path, "no-pv-grant")
    assert run.status == "succeeded"
    (warning,) = run.warnings
    assert "PersistentVolume" in warning and "HTTP 403" in warning and "not judged" in warning
    assert _claim_volume(cluster).pv_path is None  # unknown, never assumed
    # Known not read: a check that needs the kind is not judged on this run (posture.judged).
    assert "PersistentVolume" in run.kinds_unread


CILIUM = {
    "apiVersion": "cilium.io/v2",
    "kind": "CiliumNetworkPolicy",
    "metadata": {"name": "deny-world", "namespace": "team-a"},
    "spec": {"endpointSelector": {}, "egressDeny": [{"toEntities": ["world"]}]},
}
ROUTE = {
    "apiVersion": "gateway.networking.k8s.io/v1",
    "kind": "HTTPRoute",
    "metadata": {"name": "notebook", "namespace": "team-a"},
    "spec": {
        "parentRefs": [{"name": "public", "namespace": "gateway-infra"}],
        "hostnames": ["nb.example.com"],
        "rules": [{"backendRefs": [{"name": "notebook", "port": 8888}]}],
    },
}


def test_cni_egress_policies_and_gateway_routes_are_read_live(tmp_path):
    """A CiliumNetworkPolicy and an HTTPRoute reach the checks from the live API as from a
    snapshot (K8S-007 and K8S-006 read them); groups the server does not serve are absent."""
    with FakeKubeAPI([_claiming_pod("data"), CILIUM, ROUTE]) as api:
        cluster, run = _sync(api, tmp_path, "live-network")
    assert run.status == "succeeded" and run.warnings == []
    snapshot = cluster_snapshot(cluster)
    assert [(p.namespace, p.name) for p in snapshot.network_policies] == [("team-a", "deny-world")]
    assert snapshot.network_policies[0].egress_denies_world
    (route,) = snapshot.ingresses
    assert (route.kind, route.hosts, route.services) == (
        "HTTPRoute",
        ("nb.example.com",),
        ("notebook",),
    )


TIER = {
    "apiVersion": "crd.projectcalico.org/v1",
    "kind": "Tier",
    "metadata": {"name": "security"},
    "spec": {"order": 100, "defaultAction": "Pass"},
}


def test_calico_tiers_are_read_live(tmp_path):
    """A Calico Tier's order and end action reach K8S-007 from the live API: which tier's
    policies Calico evaluates first, and what a tier does with what no rule matched."""
    with FakeKubeAPI([_claiming_pod("data"), TIER]) as api:
        cluster, run = _sync(api, tmp_path, "live-tiers")
    assert run.status == "succeeded" and run.warnings == []
    (tier,) = cluster_snapshot(cluster).network_policies
    assert (tier.engine, tier.name, tier.order, tier.egress_steps) == (
        "crd.projectcalico.org/Tier",
        "security",
        100.0,
        ("pass:all",),
    )


NETWORK_SET = {
    "apiVersion": "crd.projectcalico.org/v1",
    "kind": "GlobalNetworkSet",
    "metadata": {"name": "anywhere", "labels": {"role": "anywhere"}},
    "spec": {"nets": ["0.0.0.0/0"]},
}
TO_SET = {
    "apiVersion": "crd.projectcalico.org/v1",
    "kind": "GlobalNetworkPolicy",
    "metadata": {"name": "to-anywhere"},
    "spec": {
        "selector": "all()",
        "types": ["Egress"],
        "egress": [{"action": "Allow", "destination": {"selector": "role == 'anywhere'"}}],
    },
}


def test_calico_global_network_sets_are_read_live(tmp_path):
    """A GlobalNetworkSet of the internet, picked by a rule's destination selector, reaches
    K8S-007 from the live API: the rule allows the internet, not named peers."""
    with FakeKubeAPI([_claiming_pod("data"), NETWORK_SET, TO_SET]) as api:
        cluster, run = _sync(api, tmp_path, "live-sets")
    assert run.status == "succeeded" and run.warnings == []
    (policy,) = cluster_snapshot(cluster).network_policies
    assert (policy.name, policy.egress_steps) == ("to-anywhere", ("allow:all",))


VIRTUAL_SERVICE = {
    "apiVersion": "networking.istio.io/v1beta1",
    "kind": "VirtualService",
    "metadata": {"name": "notebook", "namespace": "team-a"},
    "spec": {
        "hosts": ["nb.example.com"],
        "gateways": ["istio-system/public"],
        "http": [{"route": [{"destination": {"host": "notebook", "port": {"number": 8888}}}]}],
    },
}


GATEWAY_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "istio-ingressgateway-7d9c8-x2x9q",
        "namespace": "istio-system",
        "labels": {"istio": "ingressgateway"},
    },
    "spec": {"containers": [{"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.26.2"}]},
    "status": {"phase": "Running"},
}
PUBLIC_GATEWAY = {
    "apiVersion": "networking.istio.io/v1beta1",
    "kind": "Gateway",
    "metadata": {"name": "public", "namespace": "istio-system"},
    "spec": {"selector": {"istio": "ingressgateway"}},
}
REQUIRE_JWT = {
    "apiVersion": "security.istio.io/v1beta1",
    "kind": "AuthorizationPolicy",
    "metadata": {"name": "require-jwt", "namespace": "istio-system"},
    "spec": {
        "action": "DENY",
        "selector": {"matchLabels": {"istio": "ingressgateway"}},
        "rules": [{"from": [{"source": {"notRequestPrincipals": ["*"]}}]}],
    },
}


def test_an_istio_gateways_authentication_is_read_live(tmp_path):
    """The Gateway a VirtualService names is listed live (resource `gateways`): the policy on
    its pods authenticates the route."""
    world = [_claiming_pod("data"), VIRTUAL_SERVICE, GATEWAY_POD, PUBLIC_GATEWAY, REQUIRE_JWT]
    with FakeKubeAPI(world) as api:
        cluster, run = _sync(api, tmp_path, "live-istio-auth")
    assert run.status == "succeeded" and run.warnings == []
    (route,) = cluster_snapshot(cluster).ingresses
    assert route.auth.startswith(
        "AuthorizationPolicy istio-system/require-jwt: DENY of requests without a valid JWT "
        "(on Gateway istio-system/public (pods of istio-system/istio-ingressgateway-7d9c8-x2x9q))"
    )


def test_an_istio_virtual_service_is_read_live(tmp_path):
    """An Istio VirtualService on a gateway reaches K8S-006 from the live API."""
    with FakeKubeAPI([_claiming_pod("data"), VIRTUAL_SERVICE]) as api:
        cluster, run = _sync(api, tmp_path, "live-istio")
    assert run.status == "succeeded" and run.warnings == []
    (route,) = cluster_snapshot(cluster).ingresses
    assert (route.kind, route.hosts, route.services) == (
        "VirtualService",
        ("nb.example.com",),
        ("notebook",),
    )
