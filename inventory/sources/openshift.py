"""OpenShift's own namespaces are the platform's, found by evidence. PURE.

An OpenShift 4 cluster runs some sixty `openshift-*` namespaces of its own operators, many with
privileged pods on every node (machine-config-daemon, ovnkube-node, multus, node-exporter,
tuned, the NFD worker). Judged as a tenant's, every OpenShift cluster got critical "privileged
pod of an unclassified tenant" findings for the cluster itself.

OpenShift reserves the names: a project request for `openshift` or `openshift-*` is refused,
and only cluster administrators (and OpenShift's operators) create such namespaces. That
reservation holds only on OpenShift, so the name counts only where the cluster is proven to be
OpenShift, and never by the name itself (DESIGN §3, fail closed): on another cluster anyone
allowed to create namespaces could name one `openshift-anything`.

The proof is a node labelled `node.openshift.io/os_id` (rhcos, rhel, Windows), which OpenShift
sets on every node it manages. Why that and not the others:
- every snapshot and every sync reads nodes, and only who may update nodes (the platform, or the
  node's own kubelet) can write a node label; a tenant cannot;
- SecurityContextConstraints prove it as well but are often not in a snapshot (they need a
  separate `kubectl get`), so many OpenShift snapshots would not be recognised;
- the `openshift.io/sa.scc.uid-range` annotation is on a namespace, and on another cluster
  whoever may edit a namespace (a tenant of its own) could write it;
- an `openshift-*` namespace (what `posture.rules.k8s.scc.is_openshift` accepts to ask for SCCs)
  is the very name this decides on, so it proves nothing here.
A namespace a tenant claims stays the tenant's (tenants.mapping.platform_namespaces).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

OPENSHIFT_NODE_LABEL = "node.openshift.io/os_id"
OPENSHIFT_PREFIX = "openshift-"


def is_openshift_by_nodes(node_labels: Iterable[Mapping[str, str]]) -> bool:
    """The cluster is OpenShift: one of its nodes carries OpenShift's `os_id` label."""
    return any(OPENSHIFT_NODE_LABEL in labels for labels in node_labels)


def is_reserved_name(namespace: str) -> bool:
    """A name OpenShift keeps for itself (`openshift`, `openshift-*`)."""
    return namespace == "openshift" or namespace.startswith(OPENSHIFT_PREFIX)


def openshift_namespaces(
    namespaces: Iterable[str], node_labels: Iterable[Mapping[str, str]]
) -> frozenset[str]:
    """OpenShift's own namespaces among `namespaces`, on a cluster proven to be OpenShift."""
    if not is_openshift_by_nodes(node_labels):
        return frozenset()
    return frozenset(ns for ns in namespaces if is_reserved_name(ns))
