"""Fix-first actions on worlds synced, imported (the real NVIDIA CSAF bulletins) and scored
through the real path: each action closes exactly what one change closes, and its numbers are
the scores' own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inventory.bulletins.store import bulletins_import_paths
from inventory.services import cluster_sync_from_snapshot
from inventory.sync import cluster_get_or_create
from posture.models import Action, Finding
from posture.services import posture_evaluate
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.realworld import realworld

pytestmark = pytest.mark.django_db

TENANTS = {
    "tenants": [
        {"slug": "alpha", "name": "Alpha", "trust_class": "internal", "namespaces": ["team-a"]},
        {"slug": "beta", "name": "Beta", "trust_class": "external", "namespaces": ["beta-prod"]},
    ]
}


def gpu_node(name: str, pool: str | None, driver: str = "550.90.07") -> dict:
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "1",
        "nvidia.com/cuda.driver-version.full": driver,
        "kubernetes.io/hostname": name,
    }
    if pool:
        labels["gpuposture.io/pool"] = pool
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
        "spec": {},
        "status": {"capacity": {"nvidia.com/gpu": "1"}, "allocatable": {"nvidia.com/gpu": "1"}},
    }


def pod(
    namespace: str,
    name: str,
    node: str,
    image: str,
    *,
    gpu: bool = True,
    owner: str | None = None,
    owner_kind: str = "ReplicaSet",
    privileged: bool = False,
) -> dict:
    container: dict = {"name": "main", "image": image, "resources": {}}
    if gpu:
        container["resources"] = {
            "limits": {"nvidia.com/gpu": "1"},
            "requests": {"nvidia.com/gpu": "1"},
        }
    if privileged:
        container["securityContext"] = {"privileged": True}
    meta: dict = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner_kind, "name": owner, "controller": True}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node, "serviceAccountName": "default", "containers": [container]},
        "status": {"phase": "Running"},
    }


def deployment(namespace: str, name: str, replicaset: str) -> list[dict]:
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-dep-{name}"},
            "spec": {"replicas": 2},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": replicaset,
                "namespace": namespace,
                "uid": f"uid-rs-{replicaset}",
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": name,
                        "controller": True,
                    }
                ],
            },
            "spec": {"replicas": 2},
        },
    ]


def namespaces(*names: str) -> list[dict]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "uid": f"uid-ns-{n}"}}
        for n in names
    ]


def world(tmp_path: Path, items: list[dict], *bulletins: str) -> None:
    """Tenants alpha and beta, the snapshot synced as cluster "rt", the bulletins imported from
    the real NVIDIA CSAF files, and everything scored."""
    tenants_apply(specs=parse_tenants_document(TENANTS))
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="rt"), paths=[path])
    if bulletins:
        files = [str(realworld("csaf", f"nvidia-{n}.json")) for n in bulletins]
        bulletins_import_paths(paths=files)
    posture_evaluate()


def open_finding(check: str, name: str) -> Finding:
    return Finding.objects.get(check_id=check, subject_name=name, status="open")


def action_of(finding: Finding) -> Action:
    (action,) = [a for a in Action.objects.all() if finding.pk in a.finding_ids]
    return action


def test_a_workload_on_two_untainted_pools_is_no_single_pools_taint(tmp_path, personas):
    """POD-009 of a Deployment with a pod on pool pa and one on pool pb: tainting pa leaves
    the pb pod outside its class's pool, so the taint of pa does not close it; the one change
    that does is to the workload (schedule it on its class's pool)."""
    items = [
        gpu_node("gpu-a1", "pa"),
        gpu_node("gpu-b1", "pb"),
        *namespaces("team-a", "beta-prod"),
        *deployment("beta-prod", "infer", "infer-7d9"),
        pod("beta-prod", "infer-7d9-a", "gpu-a1", "docker.io/b/infer:2", owner="infer-7d9"),
        pod("beta-prod", "infer-7d9-b", "gpu-b1", "docker.io/b/infer:2", owner="infer-7d9"),
    ]
    world(tmp_path, items)
    outside = open_finding("POD-009", "infer")
    action = action_of(outside)
    assert not action.title.startswith("Taint pool"), action.title
    assert action.title == "Schedule Deployment beta-prod/infer on its class's tainted pool"
    assert action.finding_ids == [outside.pk]
    # Each pool's own taint still closes its node's K8S-002, and nothing else.
    for node, pool in (("gpu-a1", "pa"), ("gpu-b1", "pb")):
        taint = action_of(open_finding("K8S-002", node))
        assert taint.title.startswith(f"Taint pool {pool}")
        assert taint.check_ids == ["K8S-002"]


def test_a_workload_with_a_pod_on_a_node_in_no_pool_is_no_pools_taint(tmp_path, personas):
    items = [
        gpu_node("gpu-a1", "pa"),
        gpu_node("gpu-x", None),
        *namespaces("team-a", "beta-prod"),
        *deployment("beta-prod", "infer", "infer-7d9"),
        pod("beta-prod", "infer-7d9-a", "gpu-a1", "docker.io/b/infer:2", owner="infer-7d9"),
        pod("beta-prod", "infer-7d9-b", "gpu-x", "docker.io/b/infer:2", owner="infer-7d9"),
    ]
    world(tmp_path, items)
    action = action_of(open_finding("POD-009", "infer"))
    assert action.title == "Schedule Deployment beta-prod/infer on its class's tainted pool"


def test_a_workload_on_one_untainted_pool_is_closed_by_tainting_it(tmp_path, personas):
    items = [
        gpu_node("gpu-a1", "pa"),
        gpu_node("gpu-a2", "pa"),
        *namespaces("team-a", "beta-prod"),
        *deployment("beta-prod", "infer", "infer-7d9"),
        pod("beta-prod", "infer-7d9-a", "gpu-a1", "docker.io/b/infer:2", owner="infer-7d9"),
        pod("beta-prod", "infer-7d9-b", "gpu-a2", "docker.io/b/infer:2", owner="infer-7d9"),
    ]
    world(tmp_path, items)
    outside = open_finding("POD-009", "infer")
    action = action_of(outside)
    assert action.title == "Taint pool pa for class external"
    assert outside.pk in action.finding_ids and "K8S-002" in action.check_ids


def toolkit_pool(toolkits: dict[str, str]) -> list[dict]:
    """GPU nodes of pool pa, each with the container toolkit version given, alpha's pod on each."""
    # The toolkit's namespace is the platform's: only its pods give the nodes their toolkit.
    (operator,) = namespaces("gpu-operator")
    operator["metadata"]["labels"] = {"gpuposture.io/platform": "true"}
    items = [*namespaces("team-a", "beta-prod"), operator]
    for node, toolkit in toolkits.items():
        image = f"nvcr.io/nvidia/k8s/container-toolkit:v{toolkit}"
        items += [
            gpu_node(node, "pa"),
            # One DaemonSet's pods, as a real toolkit runs: one change upgrades them all.
            pod(
                "gpu-operator",
                f"toolkit-{node}",
                node,
                image,
                gpu=False,
                privileged=True,
                owner="nvidia-container-toolkit-daemonset",
                owner_kind="DaemonSet",
            ),
            pod(
                "team-a", f"train-{node}", node, "registry.example.internal/a/t@sha256:" + "b" * 64
            ),
        ]
    return items


def no_fix_advisory(tmp_path: Path) -> Path:
    """A vendor advisory (our own, CSAF 2.0) on the container toolkit up to 1.17.7 that names no
    fix (remediation none_available), as a vendor does for a branch it no longer patches."""
    from tests.inventory.test_csaf_shapes import document, version

    data = document(
        [version("A", "vers:generic/<=1.17.7", "product_version_range")],
        {"known_affected": ["A"]},
        remediations=[{"category": "none_available", "details": "No fix.", "product_ids": ["A"]}],
    )
    path = tmp_path / "no-fix.json"
    path.write_text(json.dumps(data))
    return path


def test_an_exposure_with_no_fixed_version_is_in_no_upgrade(tmp_path, personas):
    """gpu-a1's toolkit 1.17.3 is below the real NVIDIA 5616 fix (1.17.4) and under an advisory
    naming no fix: upgrading pa to 1.17.4 cannot close a finding that keeps the no-fix
    exposure, so no upgrade action may claim it (nor name "a fixed version" that does not
    exist)."""
    world(tmp_path, toolkit_pool({"gpu-a1": "1.17.3"}), "5616")
    bulletins_import_paths(paths=[str(no_fix_advisory(tmp_path))])
    posture_evaluate()
    finding = open_finding("STACK-002", "gpu-a1")
    assert any(e.get("no_fix") for e in finding.evidence["exposures"])
    action = action_of(finding)
    assert not action.title.startswith("Upgrade"), action.title
    assert action.title == (
        "Mitigate or replace the container toolkit 1.17.3 on node gpu-a1: no fixed version for EX-1"
    )
    assert action.finding_ids == [finding.pk]


def test_two_toolkit_bulletins_on_one_pool_name_the_higher_fix(tmp_path, personas):
    """Real NVIDIA 5599 (fix 1.17.1) and 5616 (fix 1.17.4) on a pool whose nodes run 1.17.0 and
    1.17.3: one upgrade of pa to 1.17.4 closes both nodes' STACK-002 (1.17.1 would not close
    5616's), and its risk is what the scores count for them."""
    world(tmp_path, toolkit_pool({"gpu-a1": "1.17.0", "gpu-a2": "1.17.3"}), "5599", "5616")
    findings = [open_finding("STACK-002", n) for n in ("gpu-a1", "gpu-a2")]
    (action,) = {action_of(f).pk: action_of(f) for f in findings}.values()
    assert action.title.startswith("Upgrade the container toolkit to 1.17.4 on pool pa")
    assert set(action.finding_ids) >= {f.pk for f in findings}
    assert action.risk_removed == pytest.approx(score_points(action.finding_ids), abs=0.05)


def score_points(finding_ids: list[int]) -> float:
    """The points every tenant's latest score counts for these findings."""
    from posture.models import TenantScore

    total, wanted = 0.0, set(finding_ids)
    for tenant in {s.tenant_id for s in TenantScore.objects.all()}:
        latest = TenantScore.objects.filter(tenant=tenant).order_by("-computed_at").first()
        total += sum(c["points"] for c in latest.contributions if c["finding_id"] in wanted)
    return total


def test_a_workload_on_nodes_in_no_pool_is_a_workload_fix(tmp_path, personas):
    items = [
        gpu_node("gpu-x", None),
        gpu_node("gpu-y", None),
        *namespaces("team-a", "beta-prod"),
        *deployment("beta-prod", "infer", "infer-7d9"),
        pod("beta-prod", "infer-7d9-a", "gpu-x", "docker.io/b/infer:2", owner="infer-7d9"),
        pod("beta-prod", "infer-7d9-b", "gpu-y", "docker.io/b/infer:2", owner="infer-7d9"),
    ]
    world(tmp_path, items)
    action = action_of(open_finding("POD-009", "infer"))
    assert action.title == "Schedule Deployment beta-prod/infer on its class's tainted pool"


def test_a_pool_on_two_driver_branches_moves_each_within_its_branch(tmp_path, personas):
    """Real NVIDIA 5630 (R535 535.247.01, R550 550.163.01) on a pool whose nodes run
    535.183.01 and 550.90.07: the upgrade names each branch's own fix, never one version for
    both (a node on R535 does not move to R550)."""
    items = toolkit_pool({"gpu-a1": "1.17.8", "gpu-a2": "1.17.8"})
    for item in items:
        if item["kind"] == "Node" and item["metadata"]["name"] == "gpu-a1":
            item["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] = "535.183.01"
    world(tmp_path, items, "5630")
    findings = [open_finding("STACK-001", n) for n in ("gpu-a1", "gpu-a2")]
    (action,) = {action_of(f).pk: action_of(f) for f in findings}.values()
    assert action.title == (
        "Upgrade the GPU driver R535 to 535.247.01 and the GPU driver R550 to 550.163.01 on pool pa"
        # No GPU Operator in this world: the driver is the host's.
        " with the host's packages or a new node image"
    )
    assert action.risk_removed == pytest.approx(score_points(action.finding_ids), abs=0.05)


def test_an_accepted_finding_leaves_its_action_and_the_scores(tmp_path, personas):
    """Accepting gpu-a1's STACK-002 re-scores: the pool's upgrade no longer lists it, its risk
    drops by exactly the points the scores stop counting, and no contribution points at it."""
    from datetime import timedelta

    from django.utils import timezone

    from posture.models import TenantScore
    from posture.services import finding_accept

    world(tmp_path, toolkit_pool({"gpu-a1": "1.17.3", "gpu-a2": "1.17.3"}), "5616")
    accepted = open_finding("STACK-002", "gpu-a1")
    before = action_of(accepted)
    points = score_points([accepted.pk])
    assert points > 0
    finding_accept(
        finding=accepted,
        user=personas["security_lead"],
        reason="compensating control in place",
        until=timezone.now() + timedelta(days=30),
    )
    posture_evaluate()
    after = Action.objects.get(key=before.key)
    assert accepted.pk not in after.finding_ids
    assert after.risk_removed == pytest.approx(before.risk_removed - points, abs=0.05)
    assert after.risk_removed == pytest.approx(score_points(after.finding_ids), abs=0.05)
    for score in TenantScore.objects.filter(
        computed_at=TenantScore.objects.latest("computed_at").computed_at
    ):
        assert accepted.pk not in {c["finding_id"] for c in score.contributions}
        assert score.risk == pytest.approx(sum(c["points"] for c in score.contributions), abs=0.05)


AKS_IMAGE = "AKSUbuntu-2204gen2containerd-202411.12.0"


def aks_pool(driver_enabled: bool | None) -> list[dict]:
    """AKS's GPU node pool pa: the driver comes with the node image (AKS installs it), the
    GPU Operator deploys the toolkit; its ClusterPolicy says `driver.enabled: false` and the
    Operator labels the nodes `nvidia.com/gpu.deploy.driver=pre-installed`."""
    items = toolkit_pool({"gpu-a1": "1.17.0", "gpu-a2": "1.17.0"})
    for item in items:
        if item["kind"] == "Node":
            item["metadata"]["labels"].update(
                {
                    "kubernetes.azure.com/agentpool": "pa",
                    "kubernetes.azure.com/node-image-version": AKS_IMAGE,
                    "nvidia.com/gpu.deploy.driver": "pre-installed",
                    "nvidia.com/gpu.deploy.container-toolkit": "true",
                }
            )
    operator = "nvcr.io/nvidia/gpu-operator:v24.9.0"
    items.append(pod("gpu-operator", "gpu-operator-7d9-x", "gpu-a1", operator, gpu=False))
    driver = {} if driver_enabled is None else {"enabled": driver_enabled}
    items.append(
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy", "uid": "uid-cp"},
            "spec": {"driver": driver, "toolkit": {"enabled": True}},
        }
    )
    return items


def test_a_pre_installed_driver_is_upgraded_by_the_node_image_apart_from_the_operators_toolkit(
    tmp_path, personas
):
    """Real NVIDIA 5630 (driver R550 fix 550.163.01) and 5616 (toolkit fix 1.17.4) on an AKS
    pool whose driver is pre-installed: the Operator ignores `driver.version`, so the driver
    moves with a new node image and the toolkit through the Operator: two changes, two
    actions, and the SLA breach of each node is split the same way."""
    world(tmp_path, aks_pool(driver_enabled=False), "5630", "5616")
    driver = [open_finding("STACK-001", n) for n in ("gpu-a1", "gpu-a2")]
    toolkit = [open_finding("STACK-002", n) for n in ("gpu-a1", "gpu-a2")]
    assert driver[0].evidence["upgrade_by"]["managed_by"] == "pre_installed"
    assert "az aks nodepool upgrade --node-image-only" in driver[0].evidence["upgrade_by"]["how"]
    assert toolkit[0].evidence["upgrade_by"]["managed_by"] == "gpu_operator"
    (image,) = {action_of(f).pk: action_of(f) for f in driver}.values()
    (operator,) = {action_of(f).pk: action_of(f) for f in toolkit}.values()
    assert image.pk != operator.pk
    assert image.title == "Upgrade the GPU driver R550 to 550.163.01 on pool pa by a new node image"
    assert operator.title == (
        "Upgrade the container toolkit to 1.17.4 on pool pa through the GPU Operator "
        "(ClusterPolicy or Helm values)"
    )
    late = Finding.objects.filter(check_id="STACK-005", subject_name="gpu-a1", status="open")
    assert sorted(f.evidence["upgrade_by"]["change"] for f in late) == [
        "gpu_operator",
        "node image",
    ]
    assert {action_of(f).pk for f in late} == {image.pk, operator.pk}


def test_a_driver_the_operator_may_install_but_no_pod_shows_is_of_unknown_management(
    tmp_path, personas
):
    """The ClusterPolicy leaves the driver on (the default) yet no driver pod runs on the node
    and no label says pre-installed: who installs it is unknown, and the action says so rather
    than sending the reader to the ClusterPolicy."""
    items = aks_pool(driver_enabled=None)
    for item in items:
        if item["kind"] == "Node":
            del item["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"]
    world(tmp_path, items, "5630")
    finding = open_finding("STACK-001", "gpu-a1")
    assert finding.evidence["upgrade_by"]["managed_by"] == "unknown"
    title = action_of(finding).title
    assert (
        title.endswith("(who installs it on the node is unknown)") and "ClusterPolicy" not in title
    )


def test_the_cluster_policy_alone_says_the_driver_is_pre_installed(tmp_path, personas):
    """No Operator label on the nodes, only the synced ClusterPolicy's `driver.enabled: false`
    (an Operator older than the label, or labels not exported): the driver is still the node
    image's, never the ClusterPolicy's."""
    items = aks_pool(driver_enabled=False)
    for item in items:
        if item["kind"] == "Node":
            del item["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"]
    world(tmp_path, items, "5630")
    finding = open_finding("STACK-001", "gpu-a1")
    assert finding.evidence["upgrade_by"]["managed_by"] == "pre_installed"
    assert "spec.driver.enabled is false" in finding.evidence["upgrade_by"]["why"]
    assert action_of(finding).title.endswith("on pool pa by a new node image")
