"""Which kinds a sync read, and which it certainly did not. PURE.

`kubectl get a,b -A -o json` prints one List: a kind with no object in it leaves no trace, so
from a snapshot file "read" can only be told by objects present. Some kinds exist on every
real cluster, so none of them in a sync means they were not read, with certainty; for the
others none is ambiguous ("none exist" is a real and common state). A live sync knows the
kinds it could not list (refused), and says so (ClusterSnapshot.unlisted).

Of the ambiguous kinds, a snapshot can still prove some were not read: its own objects name
them (`kinds_referenced`). A pod's claim (resourceClaimName, or the claim generated from its
template) is an object, and the kubelet runs no pod whose RuntimeClass does not exist; an
allocated claim's devices (status.allocation) were published by a ResourceSlice. Any of them
named and none of the kind at all means the kind was left out of `kubectl get`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# Kinds every real cluster has objects of: namespaces default and kube-system, the
# kube-root-ca.crt ConfigMap and the `default` ServiceAccount of every namespace, the system:*
# ClusterRoles and their bindings, the Service default/kubernetes, and the Roles and
# RoleBindings of kube-system and kube-public (the bootstrap signer's, the
# extension-apiserver-authentication reader's, the controllers' leader election: kubeadm, EKS,
# GKE and AKS alike), so an export holding none of them did not export namespaced RBAC.
ALWAYS_PRESENT = (
    "ClusterRole",
    "ClusterRoleBinding",
    "ConfigMap",
    "Namespace",
    "Role",
    "RoleBinding",
    "Service",
    "ServiceAccount",
)


def kinds_unread(
    counts: Mapping[str, int],
    unlisted: Iterable[str] = (),
    real_cluster: bool = True,
    referenced: Iterable[str] = (),
) -> list[str]:
    """The kinds a sync certainly did not read: always-present kinds of which it read no
    object (only in an export of a real cluster: see `exported_from_a_real_cluster`), the
    kinds a live list was refused, and the `referenced` kinds (`kinds_referenced`) of which it
    holds not one object, sorted. A kind a live list read to the end is counted, 0 or not: a
    claim deleted between the pods' list and the claims' is no sign of a kind unread, nor are
    a few named claims missing beside others present."""
    missing = {kind for kind in ALWAYS_PRESENT if not counts.get(kind)} if real_cluster else set()
    proven = {kind for kind in referenced if kind not in counts}
    return sorted(missing | proven | set(unlisted))


RESOURCE_CLAIM, RESOURCE_SLICE, RUNTIME_CLASS = "ResourceClaim", "ResourceSlice", "RuntimeClass"
DEVICE_CLASS = "DeviceClass"


def kinds_referenced(
    pod_claims: int,
    allocated_claims: int,
    runtime_classes: Iterable[str | None],
) -> list[str]:
    """The ambiguous kinds a snapshot's own objects prove the cluster had: ResourceClaim when
    pods' claims certainly exist (`pod_claims`, how many), ResourceSlice and DeviceClass when
    claims are allocated (`allocated_claims`: their devices came from slices, by requests
    naming a class, required at every API version), RuntimeClass when a pod names one."""
    found = []
    if pod_claims:
        found.append(RESOURCE_CLAIM)
    if allocated_claims:
        found += [RESOURCE_SLICE, DEVICE_CLASS]
    if any(runtime_classes):
        found.append(RUNTIME_CLASS)
    return found


# Pods only a running cluster has in kube-system, by name: its DNS, kube-proxy, its CNI's agents
# and its control plane's static pods (kubeadm), on every distribution (GKE's kube-dns and anetd,
# EKS's aws-node, AKS's azure-cns). A hand-written world often puts a GPU device plugin in
# kube-system, seldom these.
CLUSTER_PLUMBING = (
    "coredns-",
    "kube-dns-",
    "kube-proxy-",
    "etcd-",
    "kube-apiserver-",
    "kube-controller-manager-",
    "kube-scheduler-",
    "aws-node-",
    "azure-cns-",
    "anetd-",
    "calico-node-",
    "canal-",
    "cilium-",
    "kube-flannel-",
    "kindnet-",
    "antrea-agent-",
    "weave-net-",
    "konnectivity-agent-",
    "rke2-coredns-",  # RKE2's chart-named DNS and CNI
    "rke2-canal-",
    "node-local-dns-",
)


# OpenShift runs no pod in kube-system: its DNS, network and control plane run in namespaces
# of their own, which only a running OpenShift cluster has pods in.
OPENSHIFT_PLUMBING = frozenset(
    {
        "openshift-dns",
        "openshift-etcd",
        "openshift-kube-apiserver",
        "openshift-ovn-kubernetes",
        "openshift-sdn",
        "openshift-multus",
    }
)


# The namespaces where exported_from_a_real_cluster looks (to narrow a query of stored pods).
PLUMBING_NAMESPACES = frozenset({"kube-system", *OPENSHIFT_PLUMBING})


def exported_from_a_real_cluster(pods: Iterable[tuple[str, str]]) -> bool:
    """Whether the snapshot shows itself an export of a running cluster: of its pods
    (namespace, name), kube-system's include its DNS, CNI, kube-proxy or control plane
    (CLUSTER_PLUMBING), or OpenShift's namespaces for them hold pods (OPENSHIFT_PLUMBING).
    Only then does "none of an always-present kind" prove the kind was not exported. A
    hand-written world (a test, a reduced example) without them is taken at its word: what
    it omits is absent, even where it runs a device plugin in kube-system."""
    return any(
        (ns == "kube-system" and name.startswith(CLUSTER_PLUMBING)) or ns in OPENSHIFT_PLUMBING
        for ns, name in pods
    )


def kinds_read(counts: Mapping[str, int], unread: Iterable[str] = ()) -> frozenset[str]:
    """The kinds a sync read: those it read objects of, and those a live list read to the
    end and found none of (counted 0); none of an ambiguous kind in a snapshot file leaves no
    count, so it reads as not read."""
    skipped = set(unread)
    return frozenset(kind for kind in counts if kind not in skipped)


# What a kind proven unread (kinds_referenced) leaves unjudged, and how to export it.
_UNREAD_SAID = {
    RESOURCE_CLAIM: (
        "the snapshot holds pods whose DRA ResourceClaims exist but no ResourceClaim, so the "
        "devices those claims hold, and which tenants share them, are not judged: the "
        "findings of the checks that read claims (the sharing checks, DRA-001, LEAK-002, "
        "K8S-001, POD-011 and the checks of GPU pods) are kept as they were, not re-judged, "
        "and checklist item 2 says unknown; add "
        "resourceclaims,resourceclaimtemplates,resourceslices,deviceclasses to `kubectl get`"
    ),
    RESOURCE_SLICE: (
        "the snapshot's ResourceClaims (its own, or its scheduled pods') are allocated but it "
        "holds no ResourceSlice, so which GPUs a DRA driver publishes on each node is not "
        "read: a node whose GPUs only its slices publish keeps the GPU facts the last sync read "
        "from them (else whether it holds GPUs is unknown), the findings of the checks that "
        "read devices through claims are kept as they were, not re-judged, and checklist items "
        "2, 3, 5 and 8 say unknown; add resourceslices,deviceclasses to `kubectl get`"
    ),
    DEVICE_CLASS: (
        "the snapshot's ResourceClaims (its own, or its scheduled pods') are allocated by "
        "requests naming a DeviceClass but it holds none, so the sharing a class's config sets "
        "(time-slicing, MPS) is read only where the claims' allocation carries it: the "
        "findings of the checks that read devices through claims are kept as they were, not "
        "re-judged; add deviceclasses to `kubectl get`"
    ),
    RUNTIME_CLASS: (
        "the snapshot holds pods that name a RuntimeClass but no RuntimeClass, so a pod's "
        "runtime handler (NVIDIA's runtime that shows a node's GPUs, a Kata VM) is not read: "
        "the findings of the checks that read it (POD-011, STACK-004) are kept as they were, "
        "not re-judged; add runtimeclasses to `kubectl get`"
    ),
}


# Namespaced RBAC an export of a real cluster lacks (ALWAYS_PRESENT): one warning for either.
_RBAC_UNREAD = (
    "the export holds no Role or no RoleBinding, though every cluster has some (kube-system's), "
    "so namespaced RBAC was not exported: the findings of the RBAC checks (K8S-003/004/005/008, "
    "DRA-001) are kept as they were, not re-judged, and on OpenShift K8S-009 cannot tell which "
    "SCCs they grant; add roles,rolebindings to `kubectl get`"
)
_UNREAD_SAID |= {"Role": _RBAC_UNREAD, "RoleBinding": _RBAC_UNREAD}


def unread_warnings(kinds: Iterable[str]) -> list[str]:
    """The run's warnings for the kinds a snapshot proves it did not read (kinds_referenced,
    and namespaced RBAC an export of a real cluster lacks), each said once."""
    return list(dict.fromkeys(_UNREAD_SAID[kind] for kind in kinds if kind in _UNREAD_SAID))
