"""Which node pool a node belongs to, from the labels cloud providers and autoscalers set.

PURE. A sharing approval may be scoped to one node pool; a node with none of these labels is
in no named pool, so only cluster-wide approvals cover it.

Only labels the provider itself writes on the Node, whose value names the pool, are read (a
tenant cannot write node labels). Not read, as they never reach the Node: Cluster API's
`cluster.x-k8s.io/deployment-name` and Rancher's `rke.cattle.io/rke-machine-pool-name` (on the
Machine; Cluster API copies only `node.cluster.x-k8s.io/*` and node-role labels to the Node),
OpenShift's `machine.openshift.io/cluster-api-machineset` (on the Machine).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tenants.pool_taints import PoolTaintRules, pool_classes

# First match wins: our own label (set by the platform team) before the providers'.
POOL_LABELS: tuple[str, ...] = (
    "gpuposture.io/pool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "alpha.eksctl.io/nodegroup-name",
    "karpenter.sh/nodepool",
    # Karpenter before v0.32 (v1alpha5 Provisioner): the Provisioner's name.
    "karpenter.sh/provisioner-name",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    # DigitalOcean Kubernetes: the pool's name (doks.digitalocean.com/node-pool-id is its id).
    "doks.digitalocean.com/node-pool",
    # IBM Cloud Kubernetes Service and Red Hat OpenShift on IBM Cloud: the worker pool's name.
    "ibm-cloud.kubernetes.io/worker-pool-name",
    # CoreWeave Kubernetes Service: the NodePool (compute.coreweave.com) the node belongs to.
    "compute.coreweave.com/node-pool",
    # Oracle OKE pools made with the terraform-oci-oke module (OKE itself sets no pool name).
    "oke.oraclecloud.com/pool.name",
    # Alibaba Cloud ACK: the pool's id (np...), the only pool label ACK writes; a pool-scoped
    # approval names the pool by this id.
    "alibabacloud.com/nodepool-id",
    "node.kubernetes.io/pool",
)


def node_pool(labels: Mapping[str, str]) -> str:
    """The node's pool name, or "" when no known pool label is set."""
    for key in POOL_LABELS:
        value = labels.get(key)
        if value:
            return value
    return ""


def fix_pool(
    labels: Mapping[str, str],
    taints: Iterable[tuple[str, str, str]],
    rules: PoolTaintRules,
) -> str:
    """The pool a node's fix rolls out on (one action per pool, posture/actions.py): its named
    pool (node_pool), else on bare metal, where no provider names one, the trust-class pool its
    taints mark (a key of GPUPOSTURE_POOL_TAINT_KEYS or a class's exact taint, DESIGN §3:
    `gpuposture.io/trust-class=internal` -> "internal"; a node tainted for two classes is their
    own pool, "a+b"), else the class its label under such a key names (a pool labels what it
    taints); "" when none, and the node stands alone. Only for grouping fixes: a sharing
    approval scoped to a pool still names a provider's pool (node_pool)."""
    named = node_pool(labels)
    if named:
        return named
    classes = pool_classes(taints, rules)
    if classes:
        return "+".join(classes)
    for key in rules.keys:
        if value := labels.get(key):
            return value
    return ""


def taint_tuples(taints: Iterable[object]) -> list[tuple[str, str, str]]:
    """(key, value, effect) of a node's taints, stored (dicts) or read (objects with those
    attributes); anything else is skipped."""
    found = []
    for taint in taints:
        if isinstance(taint, Mapping):
            key, value, effect = taint.get("key"), taint.get("value"), taint.get("effect")
        else:
            key = getattr(taint, "key", None)
            value, effect = getattr(taint, "value", None), getattr(taint, "effect", None)
        if isinstance(key, str) and isinstance(effect, str):
            found.append((key, value if isinstance(value, str) else "", effect))
    return found
