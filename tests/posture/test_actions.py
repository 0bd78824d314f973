"""Fix-first actions (posture/actions.py): which open findings one change closes, and the risk
it removes. Pure: findings as the grouping reads them, evidence shaped as the checks write it."""

from __future__ import annotations

import pytest

from posture.actions import ActionFinding, actions_for, group_of
from posture.scoring import finding_risk

WEIGHTS = {"internal": 1.0, "sensitive": 4.0, "external": 2.0}
_ids = iter(range(1, 10_000))


def finding(
    check: str,
    kind: str,
    name: str,
    *,
    namespace: str = "",
    severity: str = "high",
    tenants: dict[str, str] | None = None,
    evidence: dict | None = None,
    pools: tuple[str, ...] = (),
    exposure: int = 1,
    cluster: str = "prod",
) -> ActionFinding:
    tenants = tenants if tenants is not None else {"alpha": "internal"}
    return ActionFinding(
        id=next(_ids),
        check_id=check,
        severity=severity,
        cluster=cluster,
        subject_kind=kind,
        subject_namespace=namespace,
        subject_name=name,
        title=f"{check} on {name}",
        evidence=evidence or {},
        exposure=exposure,
        tenant_weights={slug: WEIGHTS[cls] for slug, cls in tenants.items()},
        pools=pools,
    )


def toolkit_below(node: str, pool: str, fixed: str = "1.17.8", **kw: object) -> ActionFinding:
    exposure = {
        "component": "container_toolkit",
        "installed": "1.16.1",
        "fixed_version": fixed,
        "advisory_id": "NVIDIA-5659",
        "cves": ["CVE-2025-23266"],
        "severity": "critical",
    }
    evidence = {
        "node": node,
        "components": ["container_toolkit 1.16.1"],
        "move_to": fixed,
        "exposures": [exposure],
    }
    return finding(
        "STACK-002", "Node", node, severity="critical", evidence=evidence, pools=(pool,), **kw
    )


def privileged(
    workload: str, container: str, *, kind: str = "Deployment", replicas: int = 1
) -> ActionFinding:
    pods = [{"pod": f"team-a/{workload}-{i}", "node": "gpu-1"} for i in range(replicas)]
    evidence = {
        "workload": f"{kind}/team-a/{workload}",
        "tenant": "alpha",
        "container": container,
        "replicas": replicas,
        "pods": pods,
    }
    return finding(
        "POD-001",
        kind,
        workload,
        namespace="team-a",
        severity="critical",
        evidence=evidence,
        exposure=replicas,
    )


def test_a_pools_toolkit_upgrade_is_one_action_over_its_nodes():
    nodes = [toolkit_below(f"h100-{i}", "h100-a", tenants={f"t{i}": "internal"}) for i in range(4)]
    other_pool = toolkit_below("l40s-1", "l40s")
    actions = actions_for([*nodes, other_pool])
    assert len(actions) == 2
    top = actions[0]
    assert top.title == "Upgrade the container toolkit to 1.17.8 on pool h100-a"
    assert top.finding_ids == tuple(sorted(f.id for f in nodes))
    assert top.tenants == ("t0", "t1", "t2", "t3") and top.check_ids == ("STACK-002",)
    assert actions[1].title == "Upgrade the container toolkit to 1.17.8 on pool l40s"


def test_a_pools_upgrade_targets_the_highest_fix_and_closes_the_sla_breach_too():
    late = {"component": "driver", "installed": "550.90.07", "fixed_version": "550.163.01"}
    sla = finding(
        "STACK-005",
        "Node",
        "h100-1",
        pools=("h100-a",),
        evidence={"node": "h100-1", "late_exposures": [late]},
    )
    driver = finding(
        "STACK-001",
        "Node",
        "h100-2",
        pools=("h100-a",),
        evidence={"exposures": [{**late, "fixed_version": "550.127.05"}]},
    )
    (action,) = actions_for(
        [
            toolkit_below("h100-1", "h100-a", fixed="1.17.4"),
            toolkit_below("h100-2", "h100-a"),
            sla,
            driver,
        ]
    )
    assert action.title == (
        "Upgrade the GPU driver R550 to 550.163.01 and the container toolkit to 1.17.8 "
        "on pool h100-a"
    )
    assert action.check_ids == ("STACK-001", "STACK-002", "STACK-005")


def test_a_deployments_privileged_replicas_are_one_action_every_container_included():
    one = privileged("trainer", "main", replicas=12)
    sidecar = privileged("trainer", "sidecar", replicas=12)
    (action,) = actions_for([one, sidecar])
    assert action.title == "Remove privileged from Deployment team-a/trainer"
    assert action.finding_ids == (one.id, sidecar.id)


def test_a_resolved_controllers_containers_are_one_action_too():
    # The owner chain may end at a controller the built-in kinds do not name.
    one = privileged("llm", "leader", kind="LeaderWorkerSet", replicas=4)
    other = privileged("llm", "worker", kind="LeaderWorkerSet", replicas=4)
    (action,) = actions_for([one, other])
    assert action.title == "Remove privileged from LeaderWorkerSet team-a/llm"


def test_different_fixes_are_different_actions():
    host_pid = finding("POD-002", "Deployment", "trainer", namespace="team-a")
    other_workload = privileged("serving", "main")
    actions = actions_for([privileged("trainer", "main"), host_pid, other_workload])
    assert sorted(a.title for a in actions) == [
        "Remove hostPID, hostIPC and hostNetwork from Deployment team-a/trainer",
        "Remove privileged from Deployment team-a/serving",
        "Remove privileged from Deployment team-a/trainer",
    ]
    # The same pool in another cluster is another change.
    assert len(actions_for([toolkit_below("n1", "a"), toolkit_below("n1", "a", cluster="dr")])) == 2


DEV_VOLUME = {"volume": "dev", "field": "spec.volumes[0].hostPath.path", "host_path": "/dev"}


def test_one_host_path_dev_volume_is_one_action_for_pod003_and_pod005():
    # hostPath /dev: POD-003 names the volume, POD-005 reaches /dev/nvidia-caps through it
    # alone; removing the volume closes both.
    host_path = finding("POD-003", "Deployment", "llm-finetune", namespace="research")
    caps = finding(
        "POD-005",
        "Deployment",
        "llm-finetune",
        namespace="research",
        severity="critical",
        evidence={"host_path_volumes": [DEV_VOLUME], "env": []},
    )
    (action,) = actions_for([host_path, caps])
    assert action.title == "Remove the host path volumes from Deployment research/llm-finetune"
    assert action.check_ids == ("POD-003", "POD-005")
    assert action.severity == "critical"


def test_pod005_through_a_toolkit_variable_stays_its_own_action():
    # NVIDIA_MIG_CONFIG_DEVICES stays after the volume goes: two changes.
    host_path = finding("POD-003", "Deployment", "llm-finetune", namespace="research")
    env = [{"container": "trainer", "name": "NVIDIA_MIG_CONFIG_DEVICES", "value": "all"}]
    caps = finding(
        "POD-005",
        "Deployment",
        "llm-finetune",
        namespace="research",
        evidence={"host_path_volumes": [DEV_VOLUME], "env": env},
    )
    assert sorted(a.title for a in actions_for([host_path, caps])) == [
        "Remove /dev/nvidia-caps access from Deployment research/llm-finetune",
        "Remove the host path volumes from Deployment research/llm-finetune",
    ]


def test_a_pools_taint_closes_its_nodes_and_the_pods_outside_their_class_pool():
    nodes = [finding("K8S-002", "Node", f"l40s-{i}", pools=("l40s",)) for i in range(2)]
    outside = finding(
        "POD-009",
        "StatefulSet",
        "imaging",
        namespace="clinical",
        tenants={"clinical": "sensitive"},
        pools=("l40s",),
        evidence={"trust_class": "sensitive", "pods": [{"node": "l40s-1"}]},
    )
    (action,) = actions_for([*nodes, outside])
    assert action.title == "Taint pool l40s for class sensitive"
    assert action.check_ids == ("K8S-002", "POD-009") and len(action.finding_ids) == 3


def test_a_pool_running_several_classes_is_split_not_given_several_taints():
    """One node carries one class's taint: the action says the pool must be split."""
    on_node = [
        {"tenant": "acme", "trust_class": "external"},
        {"tenant": "genomics", "trust_class": "sensitive"},
    ]
    untainted = finding(
        "K8S-002", "Node", "l40s-01", pools=("l40s",), evidence={"tenants_on_node": on_node}
    )
    (action,) = actions_for([untainted])
    assert action.title == (
        "Taint pool l40s per class: one pool per class, it runs external, sensitive"
    )


def test_a_co_tenancy_pair_on_a_pool_is_one_action_per_pair():
    def pair(check: str, first: str, second: str) -> ActionFinding:
        parties = [{"party": first}, {"party": second}]
        return finding(
            check,
            "NodePool",
            "shared-ts",
            severity="critical",
            tenants={first: "internal", second: "internal"},
            evidence={"parties": parties},
        )

    actions = actions_for(
        [
            pair("SHARE-001", "research", "analytics"),
            pair("SHARE-003", "analytics", "research"),
            pair("SHARE-001", "analytics", "orbital"),
        ]
    )
    assert sorted(a.title for a in actions) == [
        "Stop time-slicing analytics with orbital on pool shared-ts",
        "Stop time-slicing analytics with research on pool shared-ts",
    ]


def test_anything_else_is_its_own_action_named_after_the_finding():
    identity, title = group_of(finding("K8S-001", "Namespace", "team-a"))
    assert title == "Fix K8S-001: K8S-001 on team-a" and identity[1] == "finding"


def test_risk_removed_is_the_sum_of_its_findings_risk_for_each_tenant():
    shared = toolkit_below(
        "h100-1", "h100-a", tenants={"clinical": "sensitive", "alpha": "internal"}
    )
    alone = toolkit_below("h100-2", "h100-a", exposure=8)
    (action,) = actions_for([shared, alone])
    expected_clinical = finding_risk(severity="critical", exposure=1, class_weight=4.0)
    expected_alpha = finding_risk(severity="critical", exposure=1, class_weight=1.0) + finding_risk(
        severity="critical", exposure=8, class_weight=1.0
    )
    assert action.tenant_risk == {"alpha": expected_alpha, "clinical": expected_clinical}
    assert action.risk_removed == pytest.approx(expected_alpha + expected_clinical)
    assert action.critical_risk_removed == action.risk_removed
    assert action.severity == "critical"


def test_actions_are_ranked_by_risk_removed_with_shares_of_all_and_of_critical_risk():
    sensitive = toolkit_below("h100-1", "h100-a", tenants={"clinical": "sensitive"})
    high = finding("K8S-001", "Namespace", "team-a", severity="high")
    low = finding("POD-007", "Deployment", "web", namespace="team-a", severity="low")
    actions = actions_for([low, high, sensitive])
    assert [a.finding_ids for a in actions] == [(sensitive.id,), (high.id,), (low.id,)]
    total = sum(a.risk_removed for a in actions)
    assert actions[0].share_of_risk == round(100 * actions[0].risk_removed / total, 1)
    assert actions[0].share_of_critical == 100.0 and actions[1].share_of_critical == 0.0


def test_keys_are_stable_and_name_no_tenant():
    def pair(first: str, second: str) -> ActionFinding:
        parties = [{"party": first}, {"party": second}]
        both = {"alpha": "internal", "beta": "internal"}
        return finding("SHARE-001", "NodePool", "p", evidence={"parties": parties}, tenants=both)

    first = actions_for([pair("alpha", "beta")])
    again = actions_for([pair("beta", "alpha")])
    assert first[0].key == again[0].key
    assert len(first[0].key) == 16 and "alpha" not in first[0].key


def below_fix(node: str, pool: str, late: dict, upgrade_by: dict):
    """STACK-001 on `node` of `pool`: one component below its fix, upgraded by `upgrade_by`."""
    evidence = {"exposures": [late], "upgrade_by": upgrade_by}
    return finding("STACK-001", "Node", node, pools=(pool,), evidence=evidence)


def test_no_findings_no_actions():
    assert actions_for([]) == []


def test_components_upgraded_by_different_changes_are_different_actions():
    """A pre-installed driver moves with a new node image; the Operator's toolkit through the
    ClusterPolicy: on one pool, two actions, each naming how."""
    image = {"managed_by": "pre_installed", "change": "node image"}
    operator = {"managed_by": "gpu_operator", "change": "gpu_operator"}
    late = {"component": "driver", "installed": "550.127.05", "fixed_version": "550.163.01"}
    driver = below_fix("nc-1", "nc", late, image)
    toolkit = toolkit_below("nc-1", "nc")
    toolkit = toolkit._replace(evidence={**toolkit.evidence, "upgrade_by": operator})
    titles = sorted(a.title for a in actions_for([driver, toolkit]))
    assert titles == [
        "Upgrade the GPU driver R550 to 550.163.01 on pool nc by a new node image",
        "Upgrade the container toolkit to 1.17.8 on pool nc through the GPU Operator "
        "(ClusterPolicy or Helm values)",
    ]


def test_a_driver_the_clusterpolicy_already_asks_for_is_a_rollout_to_finish():
    """gpu-ts1 runs driver 580.126.09 while the ClusterPolicy asks for 580.159.03, the fix:
    the version is set; the Operator's rollout to the node is what is not done. Same key."""
    exposure = {"component": "driver", "installed": "580.126.09", "fixed_version": "580.159.03"}
    by = {"managed_by": "gpu_operator", "change": "gpu_operator"}
    before = finding(
        "STACK-001", "Node", "gpu-ts1", evidence={"exposures": [exposure], "upgrade_by": by}
    )
    pending = {**by, "rollout_pending": {"driver": "580.159.03"}}
    after = before._replace(evidence={**before.evidence, "upgrade_by": pending})
    (old,), (new,) = actions_for([before]), actions_for([after])
    assert old.key == new.key
    assert new.title == (
        "Finish the GPU Operator's rollout of the GPU driver R580 580.159.03 on node gpu-ts1: "
        "the ClusterPolicy already asks for it"
    )
    # With the toolkit's version still to set on the same node: one change, both said.
    toolkit = toolkit_below("gpu-ts1", "")._replace(
        pools=(), evidence={**toolkit_below("gpu-ts1", "").evidence, "upgrade_by": by}
    )
    (both,) = actions_for([after, toolkit])
    assert both.title == (
        "Upgrade the container toolkit to 1.17.8 on node gpu-ts1 through the GPU Operator "
        "(ClusterPolicy or Helm values); finish its rollout of the GPU driver R580 580.159.03 "
        "(the ClusterPolicy already asks for it)"
    )


def test_a_rollout_to_another_branch_names_the_branch_asked_for():
    """A node on R570 whose ClusterPolicy asks for 580.159.03 (fixed on R580, its own branch):
    what the Operator rolls out is R580's driver, never "R570 580.159.03"."""
    exposure = {
        "component": "driver",
        "branch": "R570",
        "installed": "570.172.08",
        "fixed_version": "570.211.01",
    }
    by = {
        "managed_by": "gpu_operator",
        "change": "gpu_operator",
        "rollout_pending": {"driver": "580.159.03"},
    }
    moving = finding(
        "STACK-001", "Node", "gpu-one", evidence={"exposures": [exposure], "upgrade_by": by}
    )
    (action,) = actions_for([moving])
    assert action.title == (
        "Finish the GPU Operator's rollout of the GPU driver R580 580.159.03 on node gpu-one: "
        "the ClusterPolicy already asks for it"
    )


def test_the_operators_upgrade_keeps_the_key_the_pools_upgrade_had():
    """Links to an action (`?action=KEY`) made before the change was recorded still lead to
    the pool's GPU Operator upgrade."""
    before = toolkit_below("nc-1", "nc")
    after = before._replace(
        evidence={
            **before.evidence,
            "upgrade_by": {"managed_by": "gpu_operator", "change": "gpu_operator"},
        }
    )
    (old,), (new,) = actions_for([before]), actions_for([after])
    assert old.key == new.key and new.title.endswith(
        "through the GPU Operator (ClusterPolicy or Helm values)"
    )


def test_a_gke_managed_plugin_is_upgraded_by_the_gke_node_pool_not_its_daemonset():
    """GKE's device plugin and driver: one node pool upgrade, said so in the action's title."""
    gke = {"managed_by": "gke", "change": "node image"}
    late = {"component": "device_plugin", "installed": "0.14.0", "fixed_version": "0.17.1"}
    plugin = below_fix("gke-1", "l4", late, gke)
    (action,) = actions_for([plugin])
    assert action.title.endswith("on pool l4 by a GKE node pool upgrade (its GKE version)")


def test_a_vgpu_hosts_driver_upgrade_names_the_vgpu_manager():
    """On vGPU hosts STACK-001's `driver` is the vGPU Manager (evidence `host_driver`): the
    pool's upgrade says so, and a pool mixing them with plain GPU hosts names both."""
    operator = {"managed_by": "gpu_operator", "change": "gpu_operator"}
    late = {"component": "driver", "installed": "550.90.05", "fixed_version": "550.163.02"}
    hosts = [below_fix(name, "vg", late, operator) for name in ("vg-1", "vg-2")]
    hosts = [f._replace(evidence={**f.evidence, "host_driver": "the vGPU Manager"}) for f in hosts]
    (action,) = actions_for(hosts)
    assert action.title.startswith("Upgrade the vGPU Manager R550 to 550.163.02 on pool vg")
    plain = below_fix("vg-3", "vg", late, operator)
    (mixed,) = actions_for([*hosts, plain])
    assert mixed.title.startswith(
        "Upgrade the GPU driver R550 (the vGPU Manager on the vGPU hosts) to 550.163.02 on pool vg"
    )
    (alone,) = actions_for([plain])
    assert alone.title.startswith("Upgrade the GPU driver R550 to 550.163.02 on pool vg")


def test_the_unknown_versions_action_names_only_what_is_unknown_on_the_pools_nodes():
    def unknown(node: str, pool: tuple[str, ...], fields: list[str]) -> ActionFinding:
        return finding(
            "STACK-004", "Node", node, severity="medium", evidence={"unknown": fields}, pools=pool
        )

    # Bottlerocket: nvidia-smi gave the driver; the toolkit and device plugin stay unknown.
    (action,) = actions_for(
        [unknown("br-1", ("br",), ["container_toolkit_version", "device_plugin_version"])]
    )
    assert action.title == "Make the container toolkit and device plugin versions known on pool br"
    # Two nodes of one pool, one action: what either lacks, the stack from the bottom up.
    (action,) = actions_for(
        [
            unknown("a-1", ("a",), ["container_toolkit_version"]),
            unknown("a-2", ("a",), ["firmware_version", "driver_version"]),
        ]
    )
    assert action.title == (
        "Make the GPU driver, container toolkit and GPU firmware versions known on pool a"
    )
    (action,) = actions_for([unknown("n-1", (), ["driver_version"])])
    assert action.title == "Make the GPU driver version known on node n-1"
