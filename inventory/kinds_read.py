"""Which kinds a sync read, and which it certainly did not. PURE.

`kubectl get a,b -A -o json` prints one List: a kind with no object in it leaves no trace, so
from a snapshot file "read" can only be told by objects present. Some kinds exist on every
real cluster, so none of them in a sync means they were not read, with certainty; for the
others none is ambiguous ("none exist" is a real and common state). A live sync knows the
kinds it could not list (refused), and says so (ClusterSnapshot.unlisted).
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
    counts: Mapping[str, int], unlisted: Iterable[str] = (), real_cluster: bool = True
) -> list[str]:
    """The kinds a sync certainly did not read: always-present kinds of which it read no
    object (only in an export of a real cluster: see `exported_from_a_real_cluster`), and the
    kinds a live list was refused, sorted."""
    missing = {kind for kind in ALWAYS_PRESENT if not counts.get(kind)} if real_cluster else set()
    return sorted(missing | set(unlisted))


def exported_from_a_real_cluster(pod_namespaces: Iterable[str]) -> bool:
    """Whether the snapshot shows itself an export of a running cluster: it holds pods of
    kube-system (its DNS, CNI or kube-proxy run there on every distribution). Only then does
    "none of an always-present kind" prove the kind was not exported. A hand-written world
    (a test, a reduced example) without them is taken at its word: what it omits is absent."""
    return "kube-system" in set(pod_namespaces)


def kinds_read(counts: Mapping[str, int], unread: Iterable[str] = ()) -> frozenset[str]:
    """The kinds a sync read: those it read objects of, and those a live list read to the
    end and found none of (counted 0); none of an ambiguous kind in a snapshot file leaves no
    count, so it reads as not read."""
    skipped = set(unread)
    return frozenset(kind for kind in counts if kind not in skipped)
