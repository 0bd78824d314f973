"""How a SHARE-004 or DRIFT-004 title names nodes in no pool an approval can name. PURE.

A sharing approval is scoped to the cluster or to a node pool read from a pool label
(inventory.pools.node_pool); nodes with none are grouped as "no pool" and only a cluster-wide
approval covers them. Such nodes may still be in a pool the reader knows: a trust class's pool
by its taint (DESIGN §3), or one the cluster marks with a label of its own (`acme.com/pool`).
Calling them "nodes in no named pool" is then untrue, so the title names what is known and the
evidence says why an approval for that pool cannot be asked."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from inventory.pools import POOL_LABELS
from posture.inputs import PostureInputs
from posture.rules.class_pools import node_pool_classes
from posture.rules.common import nodes_by_name

VALUES_SHOWN = 3  # pools a title names; the evidence lists them all
UNKNOWN_WORDS = "nodes of no pool gpuposture recognises"
NOTE = (
    "these nodes carry no pool label gpuposture reads (gpuposture.io/pool or a cloud "
    "provider's), so only a cluster-wide approval covers them; label them "
    "gpuposture.io/pool=<name> to approve sharing for that pool alone"
)


def unnamed_pool_words(inputs: PostureInputs, node_names: Iterable[str]) -> str:
    """The title's words for `node_names` (all in no pool an approval names): the pool label of
    the cluster's own every one carries (its values: one finding may span several such pools),
    else the trust-class pool every one is in, else UNKNOWN_WORDS."""
    by_name = nodes_by_name(inputs)
    nodes = [by_name[n] for n in sorted(node_names) if n in by_name]
    if not nodes:
        return UNKNOWN_WORDS
    owns = [own_pool_labels(n.labels) for n in nodes]
    if keys := set.intersection(*(set(own) for own in owns)):
        key = min(keys)
        values = sorted({own[key] for own in owns})
        if len(values) == 1:
            return f"nodes labelled {key}={values[0]}"
        shown = ", ".join(values[:VALUES_SHOWN])
        more = f" and {len(values) - VALUES_SHOWN} more" if len(values) > VALUES_SHOWN else ""
        return f"nodes labelled {key} ({shown}{more})"
    classes = {tuple(node_pool_classes(inputs, n)) for n in nodes}
    if len(classes) == 1 and len(only := next(iter(classes))) == 1:
        return f"nodes of the {only[0]} trust-class pool"
    return UNKNOWN_WORDS


def own_pool_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """Labels a cluster names its pools by that gpuposture does not read (`acme.com/pool`,
    `node-pool`): a key whose name says pool, not one of POOL_LABELS."""
    return {
        key: value
        for key, value in labels.items()
        if value and key not in POOL_LABELS and "pool" in key.rsplit("/", 1)[-1].lower()
    }
