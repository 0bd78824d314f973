"""K8S-007 where the CNI decides: a CNI that does not enforce NetworkPolicy, and CNI rules that
open the internet whatever a NetworkPolicy restricts. Hand-built read models; the agents'
images and flags restate each project's published manifests."""

from __future__ import annotations

from dataclasses import replace

import pytest

import posture.rules  # noqa: F401
from inventory.models import ClusterObject
from inventory.snapshot import Container, NetworkPolicy, Pod, Workload
from inventory.sources.normalise import normalise
from inventory.sync_rows import OBJECT_KINDS
from posture.models import Finding
from posture.rules.registry import TITLE_MAX, run_checks
from tests.posture.builders import inputs, pod, tenant

ALPHA = tenant("alpha")
GPU = {"nvidia.com/gpu": 1}
DENY_ALL = NetworkPolicy("alpha", "deny-egress", {}, True, ("Egress",), 0, 0)


def ds(name, *containers, namespace="kube-system"):
    images = {c.name: c.image for c in containers}
    template = Pod(namespace, name, containers=tuple(containers))
    return Workload("DaemonSet", namespace, name, images=images, template=template)


def c(name, image, *args):
    return Container(name, image, args=tuple(args))


FLANNEL = ds("kube-flannel-ds", c("kube-flannel", "ghcr.io/flannel-io/flannel:v0.26.1"))
CANAL = ds(
    "canal",
    c("calico-node", "docker.io/calico/node:v3.29.0"),
    c("kube-flannel", "quay.io/coreos/flannel:v0.15.1"),
)
AWS = "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni:v1.19.2"
AWS_AGENT = "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon/aws-network-policy-agent:v1.2.0"


def aws_node(*agent_args):
    containers = [c("aws-node", AWS)]
    if agent_args != ("absent",):
        containers.append(c("aws-eks-nodeagent", AWS_AGENT, *agent_args))
    return ds("aws-node", *containers)


def k8s007(workloads=(), policies=(DENY_ALL,), pods=None):
    world = inputs(
        pods=pods or (pod("alpha", gpu=GPU, labels={"app": "train"}),),
        tenants=(ALPHA,),
        network_policies=tuple(policies),
        workloads=tuple(workloads),
    )
    return run_checks(world, only=["K8S-007"])


@pytest.mark.parametrize(
    ("workloads", "cni"),
    [
        pytest.param([FLANNEL], "flannel", id="flannel-alone"),
        pytest.param([aws_node("--enable-network-policy=false")], "AWS VPC CNI", id="aws-off"),
        pytest.param([aws_node("absent")], "AWS VPC CNI", id="aws-before-1.14"),
        pytest.param(
            [ds("kindnet", c("kindnet-cni", "docker.io/kindest/kindnetd:v20240513-cd2ac642"))],
            "kindnet",
            id="kindnet-kind-0.23",
        ),
        pytest.param(
            [
                FLANNEL,
                ds(
                    "kube-router",
                    c(
                        "kube-router",
                        "docker.io/cloudnativelabs/kube-router:v2.2",
                        "--run-firewall=false",
                    ),
                ),
            ],
            "flannel",
            id="kube-router-firewall-off",
        ),
        pytest.param(
            [ds("fluentbit-gke", c("fluentbit", "gke.gcr.io/fluent-bit:v1.8.12-gke.38"))],
            "GKE without Dataplane V2 or network policy enforcement",
            id="gke-dataplane-v1",
        ),
        pytest.param(
            [
                ds(
                    "azure-cns",
                    c("cns-container", "mcr.microsoft.com/containernetworking/azure-cns:v1.6.5"),
                )
            ],
            "AKS without a network policy engine",
            id="aks-no-engine",
        ),
    ],
)
def test_k8s007_a_cni_that_does_not_enforce_undoes_the_policy(workloads, cni):
    (draft,) = k8s007(workloads)
    assert draft.tenants == ("alpha",)
    assert draft.evidence["verdict"] == "not restricted"
    assert draft.evidence["gpu_pods_without_egress_policy"] == ["alpha/p"]
    enforcement = draft.evidence["network_policy_enforcement"]
    assert (enforcement["state"], enforcement["cni"]) == ("not enforced", cni)
    assert f"CNI ({cni}) does not enforce NetworkPolicy" in draft.title


@pytest.mark.parametrize(
    "workloads",
    [
        pytest.param([], id="no-cni-seen"),
        pytest.param([CANAL], id="canal"),
        pytest.param(
            [
                ds(
                    "rke2-canal",
                    c("calico-node", "rancher/hardened-calico:v3.29.2-build20250306"),
                    c("kube-flannel", "rancher/hardened-flannel:v0.26.5-build20250306"),
                )
            ],
            id="rke2-canal",
        ),
        pytest.param(
            [FLANNEL, ds("cilium-agent", c("cilium-agent", "docker.io/bitnami/cilium:1.16.3"))],
            id="flannel+cilium-chained",
        ),
        pytest.param(
            [FLANNEL, ds("calico-node", c("calico-node", "calico/node:v3.28"))], id="flannel+calico"
        ),
        pytest.param([aws_node("--enable-network-policy=true")], id="aws-on"),
        pytest.param(
            [ds("kindnet", c("kindnet-cni", "docker.io/kindest/kindnetd:v20240813-c6f155d6"))],
            id="kindnet-kind-0.24",
        ),
        pytest.param(
            [ds("anetd", c("cilium-agent", "gke.gcr.io/cilium/cilium:v1.14"))], id="gke-dpv2"
        ),
        pytest.param(
            [
                ds("fluentbit-gke", c("fluentbit", "gke.gcr.io/fluent-bit:v1.8.12-gke.38")),
                ds("calico-node", c("calico-node", "gke.gcr.io/calico/node:v3.26.3-gke.4")),
            ],
            id="gke-legacy-enforcement",
        ),
        pytest.param(
            [
                ds("azure-cns", c("cns", "mcr.microsoft.com/containernetworking/azure-cns:v1.6.5")),
                ds(
                    "azure-npm",
                    c("azure-npm", "mcr.microsoft.com/containernetworking/azure-npm:v1.5"),
                ),
            ],
            id="aks-azure-npm",
        ),
        # A platform DaemonSet outside kube-system says nothing of the cluster's network.
        pytest.param(
            [ds("x", c("x", "gke.gcr.io/fluent-bit:v1"), namespace="tools")], id="not-kube-system"
        ),
        # The agent is there but its flag not written: the snapshot cannot tell.
        pytest.param([aws_node()], id="aws-flag-unwritten"),
    ],
)
def test_k8s007_a_policy_stands_where_enforcement_is_seen_or_unverified(workloads):
    assert k8s007(workloads) == []


def test_k8s007_says_enforcement_is_unverified_when_no_cni_agent_is_seen():
    (draft,) = k8s007(policies=())
    assert draft.evidence["verdict"] == "not restricted"
    assert draft.evidence["network_policy_enforcement"]["state"] == "unverified"
    assert "does not enforce" not in draft.title


def cni_open(engine, name="open", namespace="alpha", selector=None):
    return NetworkPolicy(
        namespace,
        name,
        selector or {},
        not selector,
        ("Egress",),
        engine=engine,
        egress_allows_all=True,
    )


@pytest.mark.parametrize(
    ("allow", "ref"),
    [
        pytest.param(
            cni_open("cilium.io/CiliumNetworkPolicy", selector={"app": "train"}),
            "cilium.io/CiliumNetworkPolicy alpha/open",
            id="cilium",
        ),
        pytest.param(
            replace(
                cni_open("projectcalico.org/GlobalNetworkPolicy", namespace=""),
                tier="default",
                selector_expr="all()",
                egress_steps=("allow:all",),
            ),
            "projectcalico.org/GlobalNetworkPolicy cluster-wide open",
            id="calico-gnp",
        ),
        pytest.param(
            cni_open(
                "policy.networking.k8s.io/AdminNetworkPolicy",
                namespace="",
                selector={"io.kubernetes.pod.namespace": "alpha"},
            ),
            "policy.networking.k8s.io/AdminNetworkPolicy cluster-wide open",
            id="anp",
        ),
    ],
)
def test_k8s007_a_cni_rule_opening_the_internet_undoes_the_policy(allow, ref):
    (draft,) = k8s007(policies=(DENY_ALL, allow))
    assert draft.evidence["verdict"] == "not restricted"
    assert draft.evidence["cni_policies_allowing_internet"] == [ref]
    assert draft.evidence["gpu_pods_without_egress_policy"] == ["alpha/p"]
    assert "allowed egress to the internet by" in draft.title


@pytest.mark.parametrize(
    "allow",
    [
        pytest.param(
            cni_open("cilium.io/CiliumNetworkPolicy", selector={"app": "web"}), id="other-pods"
        ),
        pytest.param(cni_open("cilium.io/CiliumNetworkPolicy", namespace="beta"), id="other-ns"),
        pytest.param(
            cni_open(
                "policy.networking.k8s.io/AdminNetworkPolicy",
                namespace="",
                selector={"io.kubernetes.pod.namespace": "beta"},
            ),
            id="anp-other-ns",
        ),
    ],
)
def test_k8s007_a_cni_rule_for_other_pods_leaves_the_policy_standing(allow):
    assert k8s007(policies=(DENY_ALL, allow)) == []


def test_k8s007_a_cilium_deny_is_inert_where_no_cilium_agent_runs():
    deny = NetworkPolicy(
        "alpha",
        "deny-world",
        selects_all_pods=True,
        engine="cilium.io/CiliumNetworkPolicy",
        egress_denies_world=True,
    )
    (draft,) = k8s007([FLANNEL], policies=(deny,))
    assert draft.evidence["network_policy_enforcement"]["state"] == "not enforced"
    # No engine runs to act on it: the verdict is "not restricted", not "unknown".
    assert draft.evidence["verdict"] == "not restricted"


def fqdn_only(selector=None, namespace="alpha"):
    """A CiliumNetworkPolicy read as limiting egress to named hosts (toFQDNs)."""
    return NetworkPolicy(
        namespace,
        "to-hf",
        selector or {},
        not selector,
        ("Egress",),
        engine="cilium.io/CiliumNetworkPolicy",
    )


CILIUM = ds("cilium", c("cilium-agent", "quay.io/cilium/cilium:v1.16.5"))


def test_k8s007_a_cilium_egress_to_named_hosts_restricts_the_pod():
    assert k8s007([CILIUM], policies=(fqdn_only({"app": "train"}),)) == []


def test_k8s007_a_networkpolicy_allowing_all_undoes_a_cilium_fqdn_restriction():
    allow_all = NetworkPolicy(
        "alpha", "allow-all", {}, True, ("Egress",), 0, 1, egress_allows_all=True
    )
    (draft,) = k8s007([CILIUM], policies=(fqdn_only(), allow_all))
    assert draft.evidence["verdict"] == "not restricted"


def test_k8s007_a_cilium_fqdn_rule_for_other_pods_leaves_the_pod_open():
    (draft,) = k8s007([CILIUM], policies=(fqdn_only({"app": "web"}),))
    # Read, and known not to select the pod: not "unknown".
    assert draft.evidence["verdict"] == "not restricted"
    assert "unevaluated_policies" not in draft.evidence


def cnp_allow_list(kind="CiliumNetworkPolicy", namespace="alpha"):
    """Cilium's default deny for egress but DNS to kube-dns and the namespace's own pods."""
    meta = {"name": "egress-restrict", **({"namespace": namespace} if namespace else {})}
    dns = {
        "toEndpoints": [
            {
                "matchLabels": {
                    "k8s:io.kubernetes.pod.namespace": "kube-system",
                    "k8s:k8s-app": "kube-dns",
                }
            }
        ],
        "toPorts": [{"ports": [{"port": "53", "protocol": "ANY"}]}],
    }
    spec = {"endpointSelector": {}, "egress": [dns, {"toEndpoints": [{}]}]}
    return {"apiVersion": "cilium.io/v2", "kind": kind, "metadata": meta, "spec": spec}


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(cnp_allow_list(), id="cnp"),
        pytest.param(cnp_allow_list("CiliumClusterwideNetworkPolicy", namespace=None), id="ccnp"),
    ],
)
def test_k8s007_a_cilium_egress_allow_list_without_the_internet_restricts(obj):
    world = inputs(
        pods=(pod("alpha", gpu=GPU),),
        tenants=(ALPHA,),
        network_policies=normalise([obj]).network_policies,
    )
    assert run_checks(world, only=["K8S-007"]) == []


ALLOW_ALL = NetworkPolicy(
    "alpha", "allow-all-egress", {}, True, ("Egress",), 0, 1, egress_allows_all=True
)
CALICO = ds("calico-node", c("calico-node", "docker.io/calico/node:v3.29.0"))


def test_k8s007_title_names_the_networkpolicy_allowing_all_egress():
    # `egress: [{}]` beside a deny: the title says which policy opens everything.
    (draft,) = k8s007(policies=(DENY_ALL, ALLOW_ALL))
    assert draft.title == (
        "Namespace alpha of tenant alpha: 1 of 1 GPU pod(s) allowed all egress by "
        "NetworkPolicy allow-all-egress"
    )


def test_k8s007_title_names_the_allow_all_policy_where_calicos_own_are_unread():
    # Calico runs, none of its own policies read: only one of them (a lower order deny) could
    # still restrict the pods, so the title names the allow-all and then what is unknown.
    (draft,) = k8s007([CALICO], policies=(DENY_ALL, ALLOW_ALL))
    assert draft.evidence["verdict"] == "unknown"
    assert draft.title == (
        "Namespace alpha of tenant alpha: NetworkPolicy allow-all-egress allows all egress of "
        "1 of 1 GPU pod(s); whether another policy restricts it cannot be told: the cluster "
        "runs Calico, whose own network policies were not read"
    )


def cnp_specs(*rules):
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": {"name": "per-app", "namespace": "alpha"},
        "specs": list(rules),
    }


def app(name):
    return {"endpointSelector": {"matchLabels": {"app": name}}}


TO_HF = {"egress": [{"toFQDNs": [{"matchName": "huggingface.co"}]}]}
TO_WORLD = {"egress": [{"toEntities": ["world"]}]}
TWO_PODS = (
    pod("alpha", gpu=GPU, labels={"app": "train"}),
    pod("alpha", name="web", gpu=GPU, labels={"app": "web"}),
)


def per_app(*rules):
    world = inputs(
        pods=TWO_PODS,
        tenants=(ALPHA,),
        network_policies=normalise([cnp_specs(*rules)]).network_policies,
        workloads=(CILIUM,),
    )
    return run_checks(world, only=["K8S-007"])


def test_k8s007_cilium_specs_for_different_pods_each_restrict_their_own():
    assert per_app({**app("train"), **TO_HF}, {**app("web"), **TO_HF}) == []


def test_k8s007_cilium_specs_for_different_pods_open_only_the_pods_of_the_opening_rule():
    (draft,) = per_app({**app("train"), **TO_HF}, {**app("web"), **TO_WORLD})
    assert draft.evidence["gpu_pods_without_egress_policy"] == ["alpha/web"]
    assert draft.evidence["verdict"] == "not restricted"
    assert draft.evidence["cni_policies_allowing_internet"] == [
        "cilium.io/CiliumNetworkPolicy alpha/per-app specs[1]"
    ]


def test_k8s007_a_cilium_spec_not_read_leaves_its_pods_unknown():
    # The web rule's egress to a CIDR group is not read: unknown for web, train restricted.
    group = {"egress": [{"toCIDRSet": [{"cidrGroupRef": "partners"}]}]}
    (draft,) = per_app({**app("train"), **TO_HF}, {**app("web"), **group})
    assert draft.evidence["gpu_pods_without_egress_policy"] == ["alpha/web"]
    assert draft.evidence["verdict"] == "unknown"
    assert draft.evidence["unevaluated_policies"] == [
        "cilium.io/CiliumNetworkPolicy alpha/per-app specs[1]"
    ]


LONG = "p" * 253  # the longest name Kubernetes allows an object


@pytest.mark.parametrize("kind", ["CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy"])
def test_k8s007_a_cilium_rule_of_the_longest_name_is_named_whole_and_the_title_fits(kind):
    obj = {**cnp_specs({**app("train"), **TO_HF}, {**app("web"), **TO_WORLD}), "kind": kind}
    obj["metadata"] = {"name": LONG, **({"namespace": "alpha"} if kind[6] == "N" else {})}
    read = normalise([obj]).network_policies
    # Stored one row per rule, by "engine/name specs[i]": within the column, not cut.
    rows = [OBJECT_KINDS["network_policies"][2](p) for p in read]
    assert {name for _, name in rows} == {f"cilium.io/{kind}/{LONG} specs[{i}]" for i in (0, 1)}
    assert all(len(name) <= ClusterObject._meta.get_field("name").max_length for _, name in rows)
    world = inputs(pods=TWO_PODS, tenants=(ALPHA,), network_policies=read, workloads=(CILIUM,))
    (draft,) = run_checks(world, only=["K8S-007"])
    (ref,) = draft.evidence["cni_policies_allowing_internet"]
    assert ref.endswith(f"{LONG} specs[1]")  # the evidence names it whole
    # The title would not fit Finding.title: it counts the policy, the evidence names it.
    assert len(draft.title) <= Finding._meta.get_field("title").max_length == TITLE_MAX
    assert draft.title == (
        "Namespace alpha of tenant alpha: 1 of 2 GPU pod(s) allowed egress to the internet by "
        "1 CNI policy named in the evidence, whatever a NetworkPolicy restricts"
    )
