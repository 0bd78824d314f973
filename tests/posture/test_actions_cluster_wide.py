"""Changes made once for the whole cluster (DESIGN §5: findings one change closes are one
action): the ClusterPolicy's spec.cdi.enabled (STACK-006) and the GPU Operator's own upgrade
(its one Deployment) close their findings on every node, whatever pools the nodes are in."""

from __future__ import annotations

import pytest

from posture.actions import NODE_FIXES, ActionFinding, actions_for
from posture.models import Action
from tests.posture.test_actions import finding, toolkit_below
from tests.posture.test_actions_real_world import (
    action_of,
    gpu_node,
    namespaces,
    open_finding,
    pod,
    world,
)

OPERATOR_BY = {
    "managed_by": "gpu_operator",
    "change": "gpu_operator",
    "gpu_operator": "Deployment gpu-operator/gpu-operator",
}
APP_IMAGE = "registry.example.internal/a/t@sha256:" + "b" * 64
POLICY = {"name": "cluster-policy", "field": "spec.cdi.enabled", "cdi_enabled": False}


def cdi_off(node: str, pool: str, source: str, **extra: object) -> ActionFinding:
    """STACK-006 as the check writes it: the ClusterPolicy listed, `source` what decided."""
    evidence = {"cdi": "off", "source": source, "cluster_policies": [POLICY], **extra}
    pools = (pool,) if pool else ()
    return finding("STACK-006", "Node", node, severity="low", evidence=evidence, pools=pools)


def test_cdi_off_in_the_clusterpolicy_is_one_action_for_every_node():
    """Five nodes in three pools (two in none), CDI off by ClusterPolicy cluster-policy's
    spec.cdi.enabled: one field closes all five, so one action, not one per pool or node."""
    source = "ClusterPolicy cluster-policy spec.cdi.enabled"
    nodes = [("a100-1", "a"), ("h100-1", "h"), ("h100-2", "h"), ("l4-1", ""), ("t4-1", "")]
    (action,) = actions_for([cdi_off(n, p, source) for n, p in nodes])
    assert action.title == "Enable CDI in ClusterPolicy cluster-policy (spec.cdi.enabled: true)"
    assert len(action.finding_ids) == 5


def test_an_unset_field_the_operator_defaults_off_is_the_same_field_to_set():
    set_off = cdi_off("n-1", "a", "ClusterPolicy cluster-policy spec.cdi.enabled")
    unset = cdi_off(
        "n-2",
        "b",
        "ClusterPolicy cluster-policy leaves spec.cdi.enabled unset: GPU Operator 25.3.2 "
        "defaults it off (on from v25.10.0)",
    )
    (action,) = actions_for([set_off, unset])
    assert action.finding_ids == tuple(sorted((set_off.id, unset.id)))


def test_a_node_off_for_its_own_reason_keeps_its_pools_action():
    """A node whose runtime is not the Operator's toolkit (its own label decides, `label` in
    the evidence), one whose ClusterPolicy does not configure it (another of its settings
    named), and GKE's: none is the field's, each keeps its pool's (or node's) action."""
    policy = cdi_off("n-1", "a", "ClusterPolicy cluster-policy spec.cdi.enabled")
    own_label = cdi_off(
        "n-2",
        "b",
        "nothing states it; ClusterPolicy cluster-policy does not configure it here",
        label="gpuposture.io/cdi",
        value=None,
    )
    strategy = cdi_off(
        "n-3",
        "",
        "ClusterPolicy cluster-policy devicePlugin.env DEVICE_LIST_STRATEGY: deviceListStrategy "
        "cdi-cri lists devices by CDI, which does not say the node's runtime injects them",
    )
    titles = sorted(a.title for a in actions_for([policy, own_label, strategy]))
    assert titles == [
        "Enable CDI in ClusterPolicy cluster-policy (spec.cdi.enabled: true)",
        f"{NODE_FIXES['STACK-006']} on node n-3",
        f"{NODE_FIXES['STACK-006']} on pool b",
    ]


def operator_below(check: str, node: str, pool: str, *extra: dict) -> ActionFinding:
    """`check` on `node`: the GPU Operator 25.3.1 below its fix 25.3.2, and any other moves."""
    operator = {"component": "gpu_operator", "installed": "25.3.1", "fixed_version": "25.3.2"}
    field = "late_exposures" if check == "STACK-005" else "exposures"
    evidence = {field: [operator, *extra], "upgrade_by": OPERATOR_BY}
    return finding(check, "Node", node, pools=(pool,), severity="critical", evidence=evidence)


def test_the_gpu_operators_upgrade_is_one_action_for_the_cluster():
    """One Operator Deployment at 25.3.1, GPU nodes in two pools: its STACK-003 and STACK-005
    on each node close with the one upgrade, which is no change "on pool x"."""
    members = [
        operator_below(check, node, pool)
        for check in ("STACK-003", "STACK-005")
        for node, pool in (("h100-1", "h100"), ("a10-1", "a10"))
    ]
    (action,) = actions_for(members)
    assert action.title == (
        "Upgrade the GPU Operator to 25.3.2 (Deployment gpu-operator/gpu-operator)"
    )
    assert len(action.finding_ids) == 4
    # Where the sync did not see the Deployment, the title names none.
    unseen = [m._replace(evidence={**m.evidence, "upgrade_by": {}}) for m in members]
    (plain,) = actions_for(unseen)
    assert plain.title == "Upgrade the GPU Operator to 25.3.2 (one for the cluster)"


def test_a_pools_upgrade_that_also_needs_the_operator_says_so_apart_from_the_pool():
    """A node's finding that needs the device plugin and the Operator stays in its pool's
    wave (the plugin is per pool), but the title does not say the Operator is upgraded on
    the pool."""
    plugin = {"component": "device_plugin", "installed": "0.17.0", "fixed_version": "0.17.3"}
    both = operator_below("STACK-003", "h100-1", "h100", plugin)
    toolkit = toolkit_below("h100-2", "h100")
    toolkit = toolkit._replace(evidence={**toolkit.evidence, "upgrade_by": OPERATOR_BY})
    (wave,) = actions_for([both, toolkit])
    assert wave.title == (
        "Upgrade the container toolkit to 1.17.8 and the device plugin to 0.17.3 on pool h100 "
        "through the GPU Operator (ClusterPolicy or Helm values), with the GPU Operator itself "
        "to 25.3.2 (Deployment gpu-operator/gpu-operator, one for the cluster)"
    )
    only_operator = operator_below("STACK-003", "a10-1", "a10")
    titles = sorted(a.title for a in actions_for([both, toolkit, only_operator]))
    assert titles[0] == "Upgrade the GPU Operator to 25.3.2 (Deployment gpu-operator/gpu-operator)"
    assert not any("GPU Operator to 25.3.2 on" in t for t in titles)


def operator_world(toolkits: dict[str, tuple[str, str]]) -> list[dict]:
    """GPU nodes (name -> (pool, toolkit version)), the Operator's toolkit pod and alpha's
    pod on each; the GPU Operator 24.9.1 as Deployment gpu-operator/gpu-operator; its
    ClusterPolicy sets spec.cdi.enabled false."""
    items = [*namespaces("team-a", "beta-prod", "gpu-operator")]
    for node, (pool, toolkit) in toolkits.items():
        items += [
            gpu_node(node, pool),
            pod(
                "gpu-operator",
                f"toolkit-{node}",
                node,
                f"nvcr.io/nvidia/k8s/container-toolkit:v{toolkit}",
                gpu=False,
                privileged=True,
                owner="nvidia-container-toolkit-daemonset",
                owner_kind="DaemonSet",
            ),
            pod("team-a", f"train-{node}", node, APP_IMAGE),
        ]
    template = {"containers": [{"name": "o", "image": "nvcr.io/nvidia/gpu-operator:v24.9.1"}]}
    items.append(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "gpu-operator", "namespace": "gpu-operator", "uid": "uid-op"},
            "spec": {"replicas": 1, "template": {"spec": template}},
        }
    )
    items.append(
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy", "uid": "uid-cp"},
            "spec": {"cdi": {"enabled": False}, "toolkit": {"enabled": True}},
        }
    )
    return items


@pytest.mark.django_db
def test_one_operator_and_one_clusterpolicy_field_are_one_action_each(tmp_path, personas):
    """Synced, the real NVIDIA 5616 imported (GPU Operator fix 24.9.2, toolkit fix 1.17.4)
    and scored: nodes in pools pa and pb, their toolkits current, pb's third node's not.
    The Operator's own upgrade closes its findings on both pools; pb's toolkit stays pb's
    wave, which says the Operator apart; CDI off by the ClusterPolicy is one action."""
    nodes = {"gpu-a1": ("pa", "1.17.4"), "gpu-b1": ("pb", "1.17.4"), "gpu-b2": ("pb", "1.17.0")}
    world(tmp_path, operator_world(nodes), "5616")
    operator_only = [open_finding("STACK-003", n) for n in ("gpu-a1", "gpu-b1", "gpu-b2")]
    assert operator_only[0].evidence["upgrade_by"]["gpu_operator"] == (
        "Deployment gpu-operator/gpu-operator"
    )
    (upgrade,) = {action_of(f).pk: action_of(f) for f in operator_only}.values()
    assert upgrade.title == (
        "Upgrade the GPU Operator to 24.9.2 (Deployment gpu-operator/gpu-operator)"
    )
    wave = action_of(open_finding("STACK-002", "gpu-b2"))
    # gpu-b2's SLA breach needs its toolkit and the Operator: in pb's wave, the Operator said
    # apart from the pool.
    assert wave.check_ids == ["STACK-002", "STACK-005"]
    assert wave.title == (
        "Upgrade the container toolkit to 1.17.4 on pool pb through the GPU Operator "
        "(ClusterPolicy or Helm values), with the GPU Operator itself to 24.9.2 (Deployment "
        "gpu-operator/gpu-operator, one for the cluster)"
    )
    titles = list(Action.objects.values_list("title", flat=True))
    assert not any("GPU Operator to 24.9.2 on" in t for t in titles), titles
    cdi = [open_finding("STACK-006", n) for n in nodes]
    (enable,) = {action_of(f).pk: action_of(f) for f in cdi}.values()
    assert enable.title == "Enable CDI in ClusterPolicy cluster-policy (spec.cdi.enabled: true)"


def test_the_operators_nodes_in_no_pool_are_one_upgrade_not_one_per_node():
    """Pooled nodes stay their pool's wave (the rollout plan's unit), but three GPU Operator
    nodes in no pool are no wave each: the one ClusterPolicy change moves their toolkit
    together, so one action, never "on node x". A node whose toolkit is its node image's
    stays apart (another change, another owner)."""
    pooled = toolkit_below("h100-1", "h100")
    loose = [toolkit_below(n, "") for n in ("l40s-1", "l40s-2", "l40s-3")]
    loose = [f._replace(pools=()) for f in loose]
    by = {"managed_by": "pre_installed", "change": "node image"}
    image = toolkit_below("t4-1", "")._replace(pools=())
    image = image._replace(evidence={**image.evidence, "upgrade_by": by})
    members = [
        f._replace(evidence={**f.evidence, "upgrade_by": OPERATOR_BY}) for f in [pooled, *loose]
    ]
    titles = sorted(a.title for a in actions_for([*members, image]))
    assert titles == [
        "Upgrade the container toolkit to 1.17.8 on 3 nodes in no pool through the GPU "
        "Operator (ClusterPolicy or Helm values)",
        "Upgrade the container toolkit to 1.17.8 on node t4-1 by a new node image",
        "Upgrade the container toolkit to 1.17.8 on pool h100 through the GPU Operator "
        "(ClusterPolicy or Helm values)",
    ]
