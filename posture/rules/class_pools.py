"""Which trust class a GPU node's pool is for: the one helper K8S-002 and POD-009 read
(tenants.pool_taints holds the rule; the inputs carry the configured keys and exact taints)."""

from __future__ import annotations

from inventory.snapshot import Node
from posture.inputs import PostureInputs
from tenants.pool_taints import SEPARATING_EFFECTS, pool_classes

# Every GPU pod and the whole GPU Operator tolerate this key, so it keeps CPU pods off GPU
# nodes but does not separate one tenant class from another.
GENERIC_GPU_TAINT = "nvidia.com/gpu"


def node_pool_classes(inputs: PostureInputs, node: Node) -> list[str]:
    """The classes the node's taints mark its pool for, sorted; [] when none does."""
    taints = ((t.key, t.value or "", t.effect) for t in node.taints)
    return pool_classes(taints, inputs.pool_taint_rules)


def tainted_for(inputs: PostureInputs, node: Node, class_slug: str) -> bool:
    """Whether the node sits in `class_slug`'s tainted pool, and in no other class's: a node
    tainted for two classes (`trust-class=external` and `trust-class=sensitive`) admits only
    pods that tolerate both, so whatever runs there tolerates another class's taint and the
    node is neither class's dedicated pool."""
    return node_pool_classes(inputs, node) == [class_slug]


def expected_taints(inputs: PostureInputs, class_slug: str) -> list[str]:
    """The taints that would put a node in the class's pool, as evidence names them."""
    rules = inputs.pool_taint_rules
    keyed = [f"{key}={class_slug}:NoSchedule (or NoExecute)" for key in rules.keys]
    return keyed + list(rules.exact.get(class_slug, ()))


def class_labels(inputs: PostureInputs, node: Node) -> dict[str, str]:
    """The node's labels under the configured class keys (a pool labels what it taints)."""
    return {k: v for k in inputs.pool_taint_rules.keys if (v := node.labels.get(k)) is not None}


def unrelated_taints(inputs: PostureInputs, node: Node) -> list[str]:
    """Separating taints that mark no class pool: listed so a reader sees why they do not count
    (those under a pool taint key naming no class are class_taints_naming_none's)."""
    rules = inputs.pool_taint_rules
    return [
        f"{t.key}={t.value or ''}:{t.effect}"
        for t in node.taints
        if t.effect in SEPARATING_EFFECTS
        and t.key != GENERIC_GPU_TAINT  # evidence names it under "ignored"
        and not rules.classes_of(t.key, t.value or "", t.effect)
        and not rules.names_no_class(t.key, t.value or "", t.effect)
    ]


def class_taints(inputs: PostureInputs, node: Node) -> list[str]:
    """The node's taints that mark a class pool, as evidence names them."""
    rules = inputs.pool_taint_rules
    return [
        f"{t.key}={t.value or ''}:{t.effect}"
        for t in node.taints
        if rules.classes_of(t.key, t.value or "", t.effect)
    ]


def class_taints_naming_none(inputs: PostureInputs, node: Node) -> list[str]:
    """The node's taints under a pool taint key whose value is no trust class (a typo such as
    `externel`, or a class never created): meant to mark a class pool, they mark none."""
    rules = inputs.pool_taint_rules
    return [
        f"{t.key}={t.value or ''}:{t.effect}"
        for t in node.taints
        if rules.names_no_class(t.key, t.value or "", t.effect)
    ]


def naming_none_note(inputs: PostureInputs, node: Node) -> str:
    """Why evidence lists the node's class_taints_naming_none apart."""
    rules = inputs.pool_taint_rules
    values = sorted(
        {
            repr(t.value or "")
            for t in node.taints
            if rules.names_no_class(t.key, t.value or "", t.effect)
        }
    )
    return (
        f"the value of a pool taint key names the trust class, and no trust class is called "
        f"{' or '.join(values)} (the classes: {', '.join(sorted(rules.classes))}): the node "
        "is in no class's pool; correct the value, or create the class"
    )
