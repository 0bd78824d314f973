"""K8S-007 when the sync was refused listing a CNI's own policy kinds (a 403: the account lacks
the grant): a Calico GlobalNetworkPolicy in an earlier tier, a Cilium or AdminNetworkPolicy
allow may open a pod a NetworkPolicy restricts, and a Cilium or Calico policy may restrict a
pod nothing read restricts. Either way the finding says it cannot tell, names the kinds and
the grant; a kind not served (404: no CRD) is an answer and changes nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest

import posture.rules  # noqa: F401
from inventory.models import Cluster, SyncRun
from inventory.services import cluster_sync
from inventory.snapshot import NetworkPolicy, Workload
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sync import cluster_get_or_create
from posture.models import Finding
from posture.rules.registry import run_checks
from posture.services import posture_evaluate
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.conftest import load_json
from tests.kubeapi import LIST_PATHS, FakeKubeAPI
from tests.posture.builders import inputs, pod, tenant

ALPHA = tenant("alpha")
GPU = {"nvidia.com/gpu": 1}
GNP = "crd.projectcalico.org/GlobalNetworkPolicy"
DENY_EGRESS = NetworkPolicy("alpha", "deny-egress", policy_types=("Egress",))
FLANNEL = Workload(
    "DaemonSet", "kube-flannel", "kube-flannel-ds", images={"kube-flannel": "flannel:v0.25.1"}
)


def k8s007(*, unread=(), policies=(DENY_EGRESS,), workloads=()):
    world = inputs(
        pods=(pod("alpha", "train", gpu=GPU),),
        tenants=(ALPHA,),
        network_policies=tuple(policies),
        workloads=tuple(workloads),
    )
    return run_checks(replace(world, kinds_unread=frozenset(unread)), only=["K8S-007"])


def test_a_restricted_pod_is_cannot_tell_when_calico_policies_were_not_listed():
    assert k8s007() == []  # read in full: the NetworkPolicy restricts it
    (draft,) = k8s007(unread=[GNP, "PersistentVolume"])
    assert draft.evidence["verdict"] == "unknown"
    assert draft.evidence["gpu_pods_restricted_as_read"] == ["alpha/train"]
    assert draft.evidence["cni_policy_kinds_not_listed"] == [
        {
            "kind": GNP,
            "grant": "grant get/list/watch on globalnetworkpolicies.crd.projectcalico.org "
            "(deploy/rbac.yaml)",
        }
    ]
    assert draft.title == (
        "Namespace alpha of tenant alpha: cannot tell whether egress of 1 of 1 GPU pod(s) is "
        f"restricted: the sync was refused listing {GNP}, whose policies may allow or deny it"
    )
    # Likely restricted, unverified: low, as the other "cannot tell" forms, with the basis.
    assert draft.severity == "low" and "could not list" in draft.evidence["basis"]


def test_an_open_pod_is_cannot_tell_when_cilium_policies_were_not_listed():
    (before,) = k8s007(policies=())
    assert before.evidence["verdict"] == "not restricted" and "cannot tell" not in before.title
    (draft,) = k8s007(policies=(), unread=["cilium.io/CiliumClusterwideNetworkPolicy"])
    assert draft.evidence["verdict"] == "unknown"
    assert draft.evidence["gpu_pods_without_egress_policy"] == ["alpha/train"]
    assert "gpu_pods_restricted_as_read" not in draft.evidence
    assert "cannot tell whether egress of 1 of 1 GPU pod(s)" in draft.title
    assert draft.title.endswith("(no Kubernetes NetworkPolicy restricts it)")
    # No policy known to restrict it: the check's severity, as for a CNI not read at all.
    assert draft.severity == "" and "basis" not in draft.evidence


@pytest.mark.parametrize(
    "unread",
    [
        ["networking.istio.io/Sidecar"],  # limits only the proxy's traffic
        ["gateway.networking.k8s.io/HTTPRoute", "PersistentVolume", "Role"],
    ],
)
def test_kinds_that_decide_no_egress_change_nothing(unread):
    assert k8s007(unread=unread) == []


@pytest.mark.parametrize(
    "kind",
    [
        "k8s.ovn.org/EgressFirewall",
        "network.openshift.io/EgressNetworkPolicy",
        "crd.projectcalico.org/GlobalNetworkSet",
    ],
)
def test_kinds_that_only_restrict_leave_a_restricted_pod_restricted(kind):
    # An egress firewall refused cannot open what the NetworkPolicy denies; it may restrict an
    # open pod, which then cannot be told.
    assert k8s007(unread=[kind]) == []
    (draft,) = k8s007(policies=(), unread=[kind])
    assert draft.evidence["verdict"] == "unknown"


def test_where_the_cni_enforces_no_policy_a_refused_kind_changes_nothing():
    (draft,) = k8s007(unread=[GNP], workloads=(FLANNEL,))
    assert "cni_policy_kinds_not_listed" not in draft.evidence
    assert "does not enforce NetworkPolicy" in draft.title


# -- through the live sync (the fake API server) and posture evaluate --

NAMESPACE = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {"name": "team-alpha", "labels": {"kubernetes.io/metadata.name": "team-alpha"}},
}
GPU_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "train-0", "namespace": "team-alpha", "labels": {"app": "train"}},
    "spec": {
        "nodeName": "gpu-1",
        "containers": [
            {
                "name": "train",
                "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                "resources": {"limits": {"nvidia.com/gpu": "1"}},
            }
        ],
    },
    "status": {"phase": "Running"},
}
DENY_ALL_EGRESS = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "NetworkPolicy",
    "metadata": {"name": "deny-egress", "namespace": "team-alpha"},
    "spec": {"podSelector": {}, "policyTypes": ["Egress"]},
}


def _live(tmp_path, *, forbid=(), not_served=()) -> tuple[SyncRun, list[Finding]]:
    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    with FakeKubeAPI([NAMESPACE, GPU_POD, DENY_ALL_EGRESS]) as api:
        for kind in forbid:
            api.forbid(LIST_PATHS[kind])
        api.not_served |= set(not_served)
        source = KubeSource(
            kubeconfig=str(api.kubeconfig(tmp_path)),
            context="fake",
            settings=KubeSettings(page_size=50, read_timeout=5.0),
        )
        run = cluster_sync(cluster=cluster_get_or_create(name="live"), source=source)
    posture_evaluate(clusters=Cluster.objects.filter(name="live"))
    return run, list(Finding.objects.filter(check_id="K8S-007", status="open"))


@pytest.mark.django_db
def test_a_refused_calico_list_turns_a_restricted_pod_into_cannot_tell(tmp_path):
    run, (finding,) = _live(tmp_path, forbid=["GlobalNetworkPolicy"])
    assert run.status == "succeeded" and GNP in run.kinds_unread
    assert finding.subject_name == "team-alpha" and finding.severity == "low"
    assert finding.evidence["verdict"] == "unknown"
    assert finding.evidence["gpu_pods_restricted_as_read"] == ["team-alpha/train-0"]
    (kind,) = finding.evidence["cni_policy_kinds_not_listed"]
    assert kind["kind"] == GNP and "globalnetworkpolicies.crd.projectcalico.org" in kind["grant"]
    assert f"the sync was refused listing {GNP}" in finding.title


@pytest.mark.django_db
@pytest.mark.parametrize("not_served", [(), ("crd.projectcalico.org",)])
def test_calico_read_or_not_served_leaves_the_restricted_pod_restricted(tmp_path, not_served):
    run, found = _live(tmp_path, not_served=not_served)
    assert run.status == "succeeded" and GNP not in run.kinds_unread
    assert found == []


@pytest.mark.django_db
def test_a_refused_list_of_a_crd_not_installed_is_no_kind_unread(tmp_path):
    # The API server authorizes before it looks: an account without the grant is refused a
    # CRD that is not installed (403, not 404). Discovery says Calico is not served here, so
    # the pods restricted as read stay restricted and no kind reads as unread.
    run, found = _live(
        tmp_path, forbid=["GlobalNetworkPolicy"], not_served=("crd.projectcalico.org",)
    )
    assert run.status == "succeeded" and GNP not in run.kinds_unread
    assert not any("globalnetworkpolicies" in w for w in run.warnings)
    assert found == []
