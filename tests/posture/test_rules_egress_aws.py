"""K8S-007 on the AWS VPC CNI: NetworkPolicy is enforced only with both the node agent's
`--enable-network-policy=true` (aws-node DaemonSet) and the network policy controller turned on
in the amazon-vpc-cni ConfigMap, as the EKS docs enable them together. ConfigMaps are read
through normalise as a sync reads them."""

from __future__ import annotations

import pytest

import posture.rules  # noqa: F401
from inventory.sources.normalise import normalise
from posture.rules.k8s.cni_enforcement import enforcement
from posture.rules.registry import run_checks
from tests.posture.builders import inputs, pod
from tests.posture.test_rules_egress_cni import ALPHA, DENY_ALL, aws_node


def amazon_vpc_cni(**data):
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "amazon-vpc-cni", "namespace": "kube-system"},
        "data": {"enable-windows-ipam": "false", **data},
    }


def k8s007(agent_flag, *configmaps):
    world = inputs(
        pods=(pod("alpha", gpu={"nvidia.com/gpu": 1}, labels={"app": "train"}),),
        tenants=(ALPHA,),
        network_policies=(DENY_ALL,),
        workloads=(aws_node(agent_flag),),
        configmaps=normalise(list(configmaps)).configmaps,
    )
    return run_checks(world, only=["K8S-007"])


ON = {"enable-network-policy-controller": "true"}
OFF = {"enable-network-policy-controller": "false"}


def test_agent_and_controller_on_enforce_the_policy():
    assert k8s007("--enable-network-policy=true", amazon_vpc_cni(**ON)) == []


@pytest.mark.parametrize(
    ("flag", "data"),
    [
        # The agent alone: the controller that makes its PolicyEndpoints is off.
        pytest.param("--enable-network-policy=true", OFF, id="agent-only"),
        pytest.param("--enable-network-policy=true", {}, id="agent-controller-unset"),
        # The controller alone: no node agent enforces what it makes.
        pytest.param("--enable-network-policy=false", ON, id="controller-only"),
    ],
)
def test_either_alone_does_not_enforce(flag, data):
    (draft,) = k8s007(flag, amazon_vpc_cni(**data))
    enforced = draft.evidence["network_policy_enforcement"]
    assert enforced["state"] == "not enforced"
    assert enforced["cni"] == "AWS VPC CNI"
    assert "does not enforce NetworkPolicy" in draft.title


def test_agent_on_without_the_configmap_in_the_snapshot_is_unverified():
    # Nothing is said against the policy: it stands, and the state is not claimed enforced.
    assert k8s007("--enable-network-policy=true") == []
    world = inputs(workloads=(aws_node("--enable-network-policy=true"),))
    assert enforcement(world.snapshot.workloads).state == "unverified"
