"""Does the cluster's CNI enforce NetworkPolicy? Told from the node-agent DaemonSets of the
snapshot (K8S-007). PURE.

A NetworkPolicy is only an object: the API server accepts it whatever the network does, and a
CNI without a policy engine restricts nothing with it. So K8S-007 trusts a policy's restriction
only where no agent says the opposite:

- "enforced": a policy engine's agent runs (Cilium, GKE Dataplane V2's anetd, Calico and
  Canal, Antrea, OVN-Kubernetes, Weave Net's weave-npc, kube-router, Azure NPM,
  kube-network-policies, AWS's network policy agent with `--enable-network-policy=true` and
  the amazon-vpc-cni ConfigMap's `enable-network-policy-controller: "true"`,
  kindnetd from kind v0.24 on, Kube-OVN);
- "not enforced": no such agent, but a CNI that has none runs: flannel alone (Canal pairs it
  with Calico), the AWS VPC CNI without its agent enabled (its `aws-eks-nodeagent` container
  ships with `--enable-network-policy=false`, and before v1.14 did not exist) or with the
  agent but the ConfigMap's policy controller off, kindnetd
  before kind v0.24 (kind issue #3705); or GKE / AKS, told by their own kube-system
  DaemonSets, with none of the engines above (MANAGED);
- "unverified": neither is seen (a snapshot without kube-system's DaemonSets, or the AWS
  agent enabled without the amazon-vpc-cni ConfigMap in the snapshot, k3s whose
  flannel and policy controller live in its own binary, a CNI not listed here). Nothing is
  said against the policies then; the evidence names the state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from inventory.snapshot import ConfigMap, Container, Workload
from inventory.sources.cni_config import AWS_POLICY_CONTROLLER as AWS_CONTROLLER
from inventory.sources.cni_config import AWS_VPC_CNI as AWS_CONFIGMAP
from inventory.sources.cni_config import AWS_VPC_CNI_PURPOSE

ENFORCED, NOT_ENFORCED, UNVERIFIED = "enforced", "not enforced", "unverified"


@dataclass(frozen=True)
class Enforcement:
    state: str
    cni: str = ""  # the agent it was told from ("Calico", "flannel"), "" when unverified
    seen: str = ""  # "DaemonSet namespace/name (image)"


# (name, image markers, DaemonSet or container names): agents that enforce NetworkPolicy.
ENGINES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    # Any registry's cilium image (quay.io/cilium/cilium, Isovalent's, Bitnami's).
    ("Cilium", ("cilium/cilium", "/cilium:", "/cilium@"), ("cilium", "cilium-agent")),
    # GKE Dataplane V2 is Cilium, run as anetd in kube-system: policy is always on there.
    ("GKE Dataplane V2", (), ("anetd",)),
    # Also GKE's legacy network-policy enforcement and Canal's calico-node container.
    ("Calico", ("calico/node", "calico-node", "tigera/cnx-node"), ("calico-node",)),
    ("Antrea", ("antrea/antrea",), ("antrea-agent",)),
    ("OVN-Kubernetes", ("ovn-kubernetes", "ovnkube"), ("ovnkube-node",)),
    ("Kube-OVN", ("kubeovn/kube-ovn",), ("kube-ovn-cni",)),
    ("Weave Net", ("weave-npc",), ()),
    ("kube-router", ("kube-router",), ("kube-router",)),
    ("Azure NPM", ("azure-npm",), ("azure-npm",)),
    ("kube-network-policies", ("kube-network-policies",), ()),
)
# CNIs with no policy engine of their own.
FLANNEL = ("flannel",)
AWS_VPC_CNI = "amazon-k8s-cni"
AWS_AGENT = "aws-network-policy-agent"
KINDNET = "kindnetd"
# kindnetd's tags are build dates: kind v0.23 shipped v20240513 (no policy, kind #3705),
# kind v0.24 v20240813 with kube-network-policies built in. aojea/kindnet from v1.3.0.
KINDNET_BEFORE, KINDNET_FROM = "20240513", "20240813"


def enforcement(workloads: Iterable[Workload], configmaps: Iterable[ConfigMap] = ()) -> Enforcement:
    """Whether NetworkPolicy is enforced, from the DaemonSets and the CNI settings kept from
    ConfigMaps (see the module's docstring)."""
    daemonsets = [w for w in workloads if w.kind == "DaemonSet"]
    controller = _aws_controller(configmaps)
    without: list[Enforcement] = []
    undecided: list[Enforcement] = []
    for ds in daemonsets:
        images = {name: image.lower() for name, image in ds.images.items()}
        seen = f"DaemonSet {ds.namespace}/{ds.name}"
        for name, markers, ds_names in ENGINES:
            # By the DaemonSet's or a container's name too: RKE2's Canal runs calico-node from
            # rancher/hardened-calico, its Cilium rancher/mirrored-cilium-cilium.
            named = ds.name in ds_names or any(n in ds_names for n in images)
            hit = named or any(m in i for m in markers for i in images.values())
            if hit and not _disabled(name, ds):
                return Enforcement(ENFORCED, name, seen)
        for image in images.values():
            state = _base_cni(image, ds, controller)
            if state is None:
                continue
            entry = Enforcement(state[0], state[1], f"{seen} ({image}){state[2]}")
            if state[0] == ENFORCED:
                return entry
            (without if state[0] == NOT_ENFORCED else undecided).append(entry)
    if undecided:
        return undecided[0]
    if without:
        return without[0]
    return _managed_without_engine(daemonsets)


# Managed platforms whose default network has no policy engine: GKE's Dataplane V1 without
# network policy enforcement (Dataplane V2 runs anetd, the legacy enforcement calico-node),
# AKS with kubenet or Azure CNI and no network policy option (Azure NPM, Calico or Cilium).
# Told by the platform's own kube-system DaemonSets: seeing them means kube-system's
# DaemonSets are in the snapshot, so the absence of every engine above is a fact.
MANAGED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("GKE without Dataplane V2 or network policy enforcement", ("gke.gcr.io/", "gke-release")),
    (
        "AKS without a network policy engine",
        ("mcr.microsoft.com/oss/kubernetes/kube-proxy", "azure-cns", "mcr.microsoft.com/aks/"),
    ),
)


def _managed_without_engine(daemonsets: list[Workload]) -> Enforcement:
    for name, markers in MANAGED:
        for ds in daemonsets:
            if ds.namespace != "kube-system":
                continue
            image = next((i for i in ds.images.values() if any(m in i for m in markers)), None)
            if image is not None:
                return Enforcement(
                    NOT_ENFORCED, name, f"DaemonSet {ds.namespace}/{ds.name} ({image})"
                )
    return Enforcement(UNVERIFIED)


def _base_cni(image: str, ds: Workload, controller: str | None) -> tuple[str, str, str] | None:
    """(state, CNI, what else it was told from) for the agent of a CNI without a policy engine
    of its own; None else."""
    if any(m in image for m in FLANNEL):
        return NOT_ENFORCED, "flannel", ""
    if AWS_VPC_CNI in image:
        state = _aws_vpc_cni(ds, controller)
        told = f"; ConfigMap {'/'.join(AWS_CONFIGMAP)} {AWS_CONTROLLER}={controller}"
        return state, "AWS VPC CNI", told if controller is not None else ""
    if KINDNET in image or "/kindnet:" in image:
        return _kindnet(image), "kindnet", ""
    return None


def _aws_vpc_cni(ds: Workload, controller: str | None) -> str:
    """The VPC CNI enforces through the aws-eks-nodeagent container (v1.14 on), and only with
    `--enable-network-policy=true` (the shipped manifest sets it false) and the network policy
    controller on: `enable-network-policy-controller: "true"` in the amazon-vpc-cni ConfigMap,
    which EKS reads to run it in its control plane (the EKS docs turn on both together). The
    agent alone has no PolicyEndpoints to enforce; the controller alone, no agent to enforce
    them. The agent on and the ConfigMap not in the snapshot: unverified."""
    agents = [c for c in _containers(ds) if AWS_AGENT in c.image.lower()]
    if not agents:
        return NOT_ENFORCED if ds.template is not None else UNVERIFIED
    flags = [_flag(c, "--enable-network-policy") for c in agents]
    if "true" in flags:
        if controller is None:
            return UNVERIFIED
        return ENFORCED if controller == "true" else NOT_ENFORCED
    return NOT_ENFORCED if "false" in flags else UNVERIFIED


def _aws_controller(configmaps: Iterable[ConfigMap]) -> str | None:
    """The amazon-vpc-cni ConfigMap's enable-network-policy-controller ("false" when the map is
    there without it: the controller is off by default); None when the map is not seen."""
    for cm in configmaps:
        if (cm.namespace, cm.name) == AWS_CONFIGMAP and cm.purpose == AWS_VPC_CNI_PURPOSE:
            return cm.data.get(AWS_CONTROLLER, "false")
    return None


def _kindnet(image: str) -> str:
    tag = image.rpartition(":")[2]
    dated = re.match(r"v?(\d{8})", tag)
    if dated:
        if dated.group(1) >= KINDNET_FROM:
            return ENFORCED
        return NOT_ENFORCED if dated.group(1) <= KINDNET_BEFORE else UNVERIFIED
    release = re.match(r"v?(\d+)\.(\d+)", tag)
    if release:
        version = (int(release.group(1)), int(release.group(2)))
        return ENFORCED if version >= (1, 3) else NOT_ENFORCED
    return UNVERIFIED


def _disabled(engine: str, ds: Workload) -> bool:
    """kube-router may run as a router only: `--run-firewall=false` turns its policy off."""
    if engine != "kube-router":
        return False
    return any(_flag(c, "--run-firewall") == "false" for c in _containers(ds))


def _containers(ds: Workload) -> tuple[Container, ...]:
    if ds.template is None:
        return ()
    return ds.template.containers  # init containers included (Container.init)


def _flag(container: Container, flag: str) -> str | None:
    """The value of `--flag=value` (or `--flag value`) among its command and args, lowered."""
    words = [*container.command, *container.args]
    for i, word in enumerate(words):
        if word.startswith(flag + "="):
            return word.partition("=")[2].strip().lower()
        if word == flag and i + 1 < len(words):
            return words[i + 1].strip().lower()
    return None
