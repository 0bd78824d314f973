"""K8S-007 beside Cilium policies that cannot restrict a pod's egress: a host firewall
(nodeSelector) and policies with no egress section. The manifests restate Cilium's Rule
(one of endpointSelector and nodeSelector; egress and egressDeny "if omitted or empty, this
rule does not apply at egress"; enableDefaultDeny) and its host-policy docs."""

from __future__ import annotations

from dataclasses import replace

import pytest

import posture.rules  # noqa: F401
from inventory.snapshot import Container, Pod, Workload
from inventory.sources.normalise import normalise
from posture.rules.registry import run_checks
from tests.posture.builders import inputs, pod, tenant

ALPHA = tenant("alpha")
GPU = {"nvidia.com/gpu": 1}
CILIUM_IMAGE = "quay.io/cilium/cilium:v1.16.5"
CILIUM = Workload(
    "DaemonSet",
    "kube-system",
    "cilium",
    images={"cilium-agent": CILIUM_IMAGE},
    template=Pod("kube-system", "cilium", containers=(Container("cilium-agent", CILIUM_IMAGE),)),
)
HOST_FW = "cilium.io/CiliumClusterwideNetworkPolicy cluster-wide host-fw-default"


def ccnp(name="host-fw-default", **spec):
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumClusterwideNetworkPolicy",
        "metadata": {"name": name},
        **({"spec": spec} if spec else {}),
    }


def cnp(name="ingress-only", **spec):
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": {"name": name, "namespace": "alpha"},
        **({"spec": spec} if spec else {}),
    }


FROM_CLUSTER = [{"fromEntities": ["cluster"]}]
TO_CLUSTER = [{"toEntities": ["cluster", "kube-apiserver"]}]
# A partner CIDR group: a rule gpuposture does not read (cni_policies.py).
TO_GROUP = [{"toCIDRSet": [{"cidrGroupRef": "partners"}]}]


def k8s007(*objs, pods=None):
    world = inputs(
        pods=pods or (pod("alpha", gpu=GPU),),
        tenants=(ALPHA,),
        network_policies=normalise(list(objs)).network_policies,
        workloads=(CILIUM,),
    )
    return run_checks(world, only=["K8S-007"])


@pytest.mark.parametrize(
    "obj",
    [
        # The default host firewall nearly every Cilium cluster has: nodes, ingress only.
        pytest.param(ccnp(nodeSelector={}, ingress=FROM_CLUSTER), id="host-fw-ingress"),
        # A host firewall restricting the nodes' own egress: not the pods'.
        pytest.param(
            ccnp(nodeSelector={"matchLabels": {"node-role": "gpu"}}, egress=TO_CLUSTER),
            id="host-fw-egress",
        ),
        pytest.param(cnp(endpointSelector={}, ingress=FROM_CLUSTER), id="cnp-ingress-only"),
        pytest.param(
            ccnp("empty-egress", endpointSelector={}, ingress=FROM_CLUSTER, egress=[]),
            id="ccnp-empty-egress",
        ),
        pytest.param(
            {
                **ccnp("fw-and-ingress"),
                "specs": [
                    {"endpointSelector": {}, "ingress": FROM_CLUSTER},
                    {"nodeSelector": {}, "egress": TO_GROUP},
                ],
            },
            id="specs-ingress-and-host-egress",
        ),
    ],
)
def test_k8s007_a_cilium_policy_that_cannot_restrict_pod_egress_keeps_medium(obj):
    # Before: "cannot tell whether egress ... is restricted: ... which gpuposture does not
    # evaluate", severity low. These policies restrict no pod's egress: the namespace's GPU
    # pods are known open, the check's medium.
    (draft,) = k8s007(obj)
    assert draft.evidence["verdict"] == "not restricted"
    assert "unevaluated_policies" not in draft.evidence
    assert draft.severity != "low" and "basis" not in draft.evidence
    assert "cannot tell" not in draft.title


@pytest.mark.parametrize(
    "obj",
    [
        # An egress rule for pods that gpuposture does not read.
        pytest.param(cnp("partners", endpointSelector={}, egress=TO_GROUP), id="pod-egress"),
        pytest.param(cnp("deny", endpointSelector={}, egressDeny=TO_GROUP), id="pod-egress-deny"),
        # No egress rule, but egress default deny asked for explicitly: it blocks all egress.
        pytest.param(
            cnp("lockdown", endpointSelector={}, enableDefaultDeny={"egress": True}),
            id="default-deny-egress",
        ),
        pytest.param(
            {
                **ccnp("mixed"),
                "specs": [
                    {"nodeSelector": {}, "ingress": FROM_CLUSTER},
                    {"endpointSelector": {}, "egress": TO_GROUP},
                ],
            },
            id="specs-host-and-pod-egress",
        ),
    ],
)
def test_k8s007_a_cilium_policy_that_may_restrict_pod_egress_stays_unevaluated(obj):
    (draft,) = k8s007(obj)
    assert draft.evidence["verdict"] == "unknown"
    assert len(draft.evidence["unevaluated_policies"]) == 1
    assert draft.severity == "low"


def test_k8s007_a_host_firewall_with_egress_stays_unevaluated_for_host_network_pods():
    # A hostNetwork pod sends as the node: a host policy's egress rules govern it.
    host_fw = ccnp(nodeSelector={}, ingress=FROM_CLUSTER, egress=TO_CLUSTER)
    (draft,) = k8s007(host_fw, pods=(pod("alpha", gpu=GPU, host_network=True),))
    assert draft.evidence["unevaluated_policies"] == [HOST_FW]
    assert draft.severity == "low"
    # The same ingress-only host firewall restricts no one's egress, hostNetwork or not.
    ingress_only = ccnp(nodeSelector={}, ingress=FROM_CLUSTER)
    (draft,) = k8s007(ingress_only, pods=(pod("alpha", gpu=GPU, host_network=True),))
    assert "unevaluated_policies" not in draft.evidence


def test_k8s007_the_host_firewall_does_not_hide_a_policy_that_may_restrict():
    host_fw = ccnp(nodeSelector={}, ingress=FROM_CLUSTER)
    (draft,) = k8s007(host_fw, cnp("partners", endpointSelector={}, egress=TO_GROUP))
    assert draft.evidence["unevaluated_policies"] == [
        "cilium.io/CiliumNetworkPolicy alpha/partners"
    ]


def test_k8s007_a_cilium_policy_stored_before_its_subjects_were_read_stays_unevaluated():
    # A sync from before egress_subjects was kept: nothing says it spares the pods.
    (stored,) = normalise([ccnp(nodeSelector={}, ingress=FROM_CLUSTER)]).network_policies
    world = inputs(
        pods=(pod("alpha", gpu=GPU),),
        tenants=(ALPHA,),
        network_policies=(replace(stored, egress_subjects=""),),
        workloads=(CILIUM,),
    )
    (draft,) = run_checks(world, only=["K8S-007"])
    assert draft.evidence["unevaluated_policies"] == [HOST_FW]
