"""Whether what a full sync read can stand for the cluster at all. PURE.

An export that holds nothing (kubectl on the wrong context, a selector that matched nothing)
or leaves out the nodes or the pods the cluster's last good state had (`kubectl get pods`
alone) is no picture of the cluster: applied, it deletes every node or pod and so resolves
every finding, a false all-clear for every tenant. Such a sync fails with the reason and the
last good state stays (DESIGN: bad input loses nothing).

A kind with no count at all left no trace in the export (it was not asked for); a live list
that read a kind to the end counts it 0 (inventory.kinds_read), which is what the cluster
holds, so only "no objects at all" refuses a live read.
"""

from __future__ import annotations

from collections.abc import Mapping

EXPORT_HINT = (
    "export them with the rest (`kubectl get nodes,pods,namespaces,... -A -o json`, "
    "docs/clusters.md) and sync again"
)
KEPT = "the last good state is kept"


def sync_refusal(
    counts: Mapping[str, int],
    *,
    stored_nodes: int,
    stored_pods: int,
    real_cluster: bool,
    exported_plumbing: bool = True,
) -> str | None:
    """Why a full sync that read `counts` (objects per kind) must not be applied over a
    cluster whose last good state has `stored_nodes` nodes and `stored_pods` pods; None when
    it may. `real_cluster`: that state ran the cluster's own DNS, CNI or control-plane pods
    (kube-system's, or OpenShift's namespaces for them: inventory.kinds_read);
    `exported_plumbing`: this export holds such pods."""
    if not any(counts.values()):
        return (
            "the snapshot holds no objects at all (kubectl on the wrong context, or a filter "
            f"that matched nothing?): an empty list is no cluster; {KEPT}"
        )
    if "Node" not in counts and stored_nodes:
        return (
            f"the snapshot holds no Node object, while the cluster's last good sync had "
            f"{_count(stored_nodes, 'node')}: {EXPORT_HINT}; {KEPT}"
        )
    # A running cluster always runs pods (its DaemonSets' at least, on every node): none
    # where the last good sync had some means the export did not ask for them. A hand-written
    # world (none of a cluster's own pods) is taken at its word: all its pods may go.
    if "Pod" not in counts and stored_pods and real_cluster:
        return (
            f"the snapshot holds no Pod object, while the cluster's last good sync had "
            f"{_count(stored_pods, 'pod')} (a running cluster always runs pods): "
            f"{EXPORT_HINT}; {KEPT}"
        )
    # Pods, but none of the cluster's own where the last good sync had them: the pods of some
    # namespaces only (`kubectl get pods -n team-a`); every other tenant's would look fixed.
    if "Pod" in counts and stored_pods and real_cluster and not exported_plumbing:
        return (
            "the snapshot holds pods but none of the cluster's own DNS, network or control "
            "plane (kube-system's, or OpenShift's openshift-dns and the like), while the "
            "cluster's last good sync ran them: it holds the pods of some namespaces only "
            "(`kubectl get pods -n ...`), and every other namespace's would read as gone; "
            f"export the pods of every namespace (`-A`) with the rest and sync again; {KEPT}"
        )
    return None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
