"""Network policies of a CNI's own API (Cilium, Calico, Antrea, AdminNetworkPolicy, OVN-Kubernetes
and OpenShift egress firewalls, GKE FQDNNetworkPolicy). PURE.

gpuposture evaluates only `networking.k8s.io/v1` NetworkPolicy. A cluster may restrict egress
with these instead, so they are kept by name and kind (not their rules): K8S-007 then says
that a GPU pod's egress is unknown rather than stating that nothing restricts it. Which object
is which is told by its API group: Calico's namespaced kind is also called `NetworkPolicy`.
"""

from __future__ import annotations

from typing import Any

from inventory.snapshot import NetworkPolicy
from inventory.sources.raw import meta, name_of, text

# (API group, kind) -> namespaced?
CNI_POLICY_KINDS: dict[tuple[str, str], bool] = {
    ("cilium.io", "CiliumNetworkPolicy"): True,
    ("cilium.io", "CiliumClusterwideNetworkPolicy"): False,
    ("crd.projectcalico.org", "NetworkPolicy"): True,
    ("projectcalico.org", "NetworkPolicy"): True,
    ("crd.projectcalico.org", "GlobalNetworkPolicy"): False,
    ("projectcalico.org", "GlobalNetworkPolicy"): False,
    ("crd.antrea.io", "NetworkPolicy"): True,
    ("crd.antrea.io", "ClusterNetworkPolicy"): False,
    ("policy.networking.k8s.io", "AdminNetworkPolicy"): False,
    ("policy.networking.k8s.io", "BaselineAdminNetworkPolicy"): False,
    # Its successor in the same group (v1alpha2), one kind for both tiers.
    ("policy.networking.k8s.io", "ClusterNetworkPolicy"): False,
    # Namespaced egress firewalls: OVN-Kubernetes (OpenShift 4's default network) and
    # OpenShift SDN deny or allow destinations by CIDR or DNS name for the whole namespace.
    ("k8s.ovn.org", "EgressFirewall"): True,
    ("network.openshift.io", "EgressNetworkPolicy"): True,
    # GKE Dataplane V2's egress allow-list by domain name.
    ("networking.gke.io", "FQDNNetworkPolicy"): True,
}


def cni_policy_kind(obj: dict[str, Any]) -> str | None:
    """ "group/Kind" when the object is a CNI's own network policy, else None."""
    api_version = text(obj.get("apiVersion"), "") or ""
    key = (api_version.rpartition("/")[0], text(obj.get("kind"), "") or "")
    return f"{key[0]}/{key[1]}" if key in CNI_POLICY_KINDS else None


def cni_policy_namespace(obj: dict[str, Any]) -> str:
    """Its namespace; "" for a cluster-wide kind, whatever stray namespace a manifest gives."""
    group, _, kind = (cni_policy_kind(obj) or "").partition("/")
    if not CNI_POLICY_KINDS.get((group, kind), False):
        return ""
    return text(meta(obj).get("namespace"), "") or ""


def cni_policy_from(obj: dict[str, Any]) -> NetworkPolicy:
    """The policy by name, kind and namespace ("" for a cluster-wide one); its selector and
    rules are not read, so it selects no pod here and restricts nothing by itself."""
    return NetworkPolicy(
        namespace=cni_policy_namespace(obj),
        name=name_of(obj),
        selects_all_pods=False,
        engine=cni_policy_kind(obj) or "",
    )
