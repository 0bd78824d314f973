"""K8S-004 on a ConfigMap that the device plugin or MIG Manager reads as its config, wherever
it runs: a standalone plugin chart in a namespace nobody labelled platform still shares GPUs by
its ConfigMap, so a tenant that may write it is reported, the evidence saying which workload
reads it. It was not when the GPU Operator's own ConfigMaps were read (the namespace stand-in
is skipped then). A ConfigMap an ordinary pod mounts, and a tenant's own plugin in its own
namespace, stay out of it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from inventory.services import cluster_sync_from_snapshot
from inventory.snapshot import Container, Namespace, Pod, Role, Volume, Workload
from inventory.sync import cluster_get_or_create
from posture.models import Finding
from posture.rules.k8s.rbac_gpu_targets import UNMOUNTED
from posture.rules.registry import run_checks
from posture.services import posture_evaluate
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.conftest import api_client, load_json
from tests.posture.test_rules_rbac import DEVS, OPS, cluster_role, crb, rb, rule, sa, world

NVDP = "nvidia-device-plugin"  # the standalone chart's namespace: unclassified here
PLUGIN = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
MIG_MANAGER = "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.10.0"
CM_EDIT = Role("Role", "cm-edit", NVDP, (rule(resources=("configmaps",), verbs=("patch",)),))


def _daemonset(image=PLUGIN, refs=("nvdp-config",), ns=NVDP, name="nvdp-nvidia-device-plugin"):
    return Workload("DaemonSet", ns, name, images={"ctr": image}, config_refs=refs)


def _k8s004(workloads=(), pods=(), roles=(CM_EDIT,), binding_ns=NVDP):
    inputs = world(roles, [rb(binding_ns, "alpha-cm", "cm-edit", DEVS, kind="Role")])
    operator = inputs.snapshot.workloads  # the operator's plugin, its ConfigMaps read
    snapshot = replace(
        inputs.snapshot,
        namespaces=(*inputs.snapshot.namespaces, Namespace(NVDP)),
        workloads=(*operator, *workloads),
        pods=tuple(pods),
    )
    return run_checks(replace(inputs, snapshot=snapshot), only=["K8S-004"])


def test_the_configmap_a_standalone_plugin_mounts_is_guarded_outside_the_platform():
    (draft,) = _k8s004([_daemonset()])
    assert draft.severity == ""  # the check's own: high
    assert "target_seen" not in draft.evidence  # the grant reaches the object itself
    (reached,) = draft.evidence["objects"]
    assert reached["object"] == f"ConfigMap {NVDP}/nvdp-config"
    assert reached["purpose"] == "device_plugin"
    assert reached["why"].startswith(
        f"DaemonSet {NVDP}/nvdp-nvidia-device-plugin runs the NVIDIA device plugin and reads "
        "this ConfigMap"
    )


def test_the_mig_managers_configmap_is_guarded_as_mig_configuration():
    (draft,) = _k8s004([_daemonset(MIG_MANAGER, ("mig-parted-config",), name="mig-manager")])
    (reached,) = draft.evidence["objects"]
    assert reached["object"] == f"ConfigMap {NVDP}/mig-parted-config"
    assert reached["purpose"] == "mig_parted"
    assert "NVIDIA MIG Manager" in reached["why"]


def test_a_plugin_pod_whose_daemonset_was_not_read_names_its_pod():
    volume = Volume("config", kind="configMap", config_map="nvdp-config")
    plugin = Pod(NVDP, "nvdp-abcde", containers=(Container("ctr", PLUGIN),), volumes=(volume,))
    (draft,) = _k8s004(pods=[plugin])
    (reached,) = draft.evidence["objects"]
    assert reached["object"] == f"ConfigMap {NVDP}/nvdp-config"
    assert reached["why"].startswith(f"pod {NVDP}/nvdp-abcde runs the NVIDIA device plugin")


def test_named_beside_every_configmap_of_another_namespace():
    # No sharing ConfigMap read: every ConfigMap of the operator's namespace stands in for them,
    # which says nothing of the one the plugin pod mounts elsewhere: both are named.
    volume = Volume("config", kind="configMap", config_map="nvdp-config")
    plugin = Pod(NVDP, "nvdp-abcde", containers=(Container("ctr", PLUGIN),), volumes=(volume,))
    cluster_wide = cluster_role("cm-edit", rule(resources=("configmaps",), verbs=("patch",)))
    inputs = world([cluster_wide], [crb("alpha-cm", "cm-edit", DEVS)])
    snapshot = replace(
        inputs.snapshot,
        namespaces=(*inputs.snapshot.namespaces, Namespace(NVDP)),
        configmaps=(),
        pods=(plugin,),
    )
    (draft,) = run_checks(replace(inputs, snapshot=snapshot), only=["K8S-004"])
    assert [o["object"] for o in draft.evidence["objects"]] == [
        f"ConfigMap {NVDP}/nvdp-config",
        f"every ConfigMap in namespace {OPS}",
    ]
    assert draft.evidence["target_seen"] is False  # the stand-in's, said as before


def _ordinary(name="app-config"):
    volume = Volume("config", kind="configMap", config_map=name)
    return Pod(NVDP, "web", containers=(Container("web", "example.com/web:1"),), volumes=(volume,))


@pytest.mark.parametrize(
    "world_of",
    [
        pytest.param(
            lambda: _k8s004(pods=[_ordinary()], workloads=[_daemonset(refs=())]),
            id="ordinary-pod-mounts-it",
        ),
        pytest.param(
            lambda: _k8s004(
                [_daemonset(ns="alpha")],
                roles=[replace(CM_EDIT, namespace="alpha")],
                binding_ns="alpha",
            ),
            id="tenants-own-plugin-in-its-namespace",
        ),
        pytest.param(
            lambda: _k8s004([_daemonset(refs=("kube-root-ca.crt",))]),
            id="service-account-ca",
        ),
    ],
)
def test_no_finding_where_no_gpu_stack_reads_it_or_the_tenant_owns_it(world_of):
    assert world_of() == []


def test_the_operators_own_configmaps_keep_no_why():
    # In the platform's namespace a ConfigMap the stack reads is plainly its configuration.
    roles = [replace(CM_EDIT, namespace=OPS)]
    (draft,) = _k8s004([_daemonset()], roles=roles, binding_ns=OPS)
    assert all("why" not in o for o in draft.evidence["objects"])


# --- through a sync, as the red-team world had it ----------------------------------------------

TS4 = (
    "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
    "    - name: nvidia.com/gpu\n      replicas: 4\n"
)


def _snapshot(tmp_path, node_label: str | None) -> str:
    capacity = {"cpu": "32", "nvidia.com/gpu": "4"}
    labels = {"nvidia.com/gpu.count": "1"}
    if node_label:
        labels["nvidia.com/device-plugin.config"] = node_label
    container = {
        "name": "nvidia-device-plugin-ctr",
        "image": PLUGIN,
        "env": [{"name": "CONFIG_FILE", "value": "/config/config.yaml"}],
        "volumeMounts": [{"name": "config", "mountPath": "/config"}],
    }
    manager = {
        "name": "nvidia-device-plugin-sidecar",
        "image": PLUGIN,
        "command": ["config-manager"],
        "volumeMounts": [{"name": "available-configs", "mountPath": "/available-configs"}],
    }
    template = {
        "spec": {
            "containers": [container, manager],
            "volumes": [
                {"name": "available-configs", "configMap": {"name": "nvdp-config"}},
                {"name": "config", "emptyDir": {}},
            ],
        }
    }
    ns_meta = {"name": "cm-edit", "namespace": NVDP}
    items = [
        {"kind": "Namespace", "metadata": {"name": "team-alpha"}},
        {"kind": "Namespace", "metadata": {"name": NVDP}},
        {"kind": "Namespace", "metadata": {"name": "kube-system"}},
        {
            "kind": "Node",
            "metadata": {"name": "gpu-1", "labels": labels},
            "status": {"capacity": capacity, "allocatable": capacity},
        },
        # A sharing ConfigMap the platform holds: the namespace stand-in is not used.
        {
            "kind": "ConfigMap",
            "metadata": {"name": "platform-sharing", "namespace": "kube-system"},
            "data": {"whole": "version: v1\n", "ts-2": TS4.replace("4\n", "2\n")},
        },
        # The plugin's own: time-slices by 4.
        {
            "kind": "ConfigMap",
            "metadata": {"name": "nvdp-config", "namespace": NVDP},
            "data": {"default": TS4},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "nvdp-nvidia-device-plugin", "namespace": NVDP},
            "spec": {"template": template},
        },
        # RBAC was read (a ClusterRoleBinding, none the plugin's): its image alone makes the
        # namespace no platform one.
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "metrics-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "view",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "metrics", "namespace": "kube-system"}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": ns_meta,
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "alpha-nvdp-cm", "namespace": NVDP},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-edit"},
            "subjects": [{"kind": "Group", "name": "alpha-devs"}],
        },
    ]
    path = tmp_path / "nvdp.json"
    path.write_text(json.dumps({"kind": "List", "items": items}))
    return str(path)


@pytest.mark.django_db
@pytest.mark.parametrize("node_label", [None, "default"], ids=["no-label", "label-selects-it"])
def test_a_tenant_that_may_patch_the_plugins_configmap_is_reported(tmp_path, personas, node_label):
    tenants_apply(specs=parse_tenants_document(load_json("small-tenants.json")))
    cluster = cluster_get_or_create(name="nvdp")
    cluster_sync_from_snapshot(cluster=cluster, paths=[_snapshot(tmp_path, node_label)])
    posture_evaluate()
    (finding,) = Finding.objects.filter(cluster=cluster, check_id="K8S-004", status="open")
    assert finding.severity == "high"
    assert [t.slug for t in finding.tenants.all()] == ["alpha"]
    (reached,) = finding.evidence["objects"]
    assert reached["object"] == f"ConfigMap {NVDP}/nvdp-config"
    # Mounted by the plugin: not the "no plugin mounts it" of a ConfigMap a label selects.
    assert reached["why"].startswith(f"DaemonSet {NVDP}/nvdp-nvidia-device-plugin runs")
    assert reached["why"] != UNMOUNTED
    item7 = api_client(personas["security_lead"]).get("/api/v1/clusters/nvdp/checklist/").json()[6]
    assert item7["status"] == "fail"


def test_an_escalation_reaching_beyond_the_direct_grant_is_still_named():
    # alpha may patch the plugin's ConfigMap itself, and may run pods in the plugin's namespace
    # as an account that may patch the ClusterPolicy: the ClusterPolicy is written only by
    # that path, so the path is named; the finding must not read as a direct write of it.
    role = Role(
        "Role",
        "cm-and-pods",
        NVDP,
        (
            rule(resources=("configmaps",), verbs=("patch",)),
            rule(resources=("pods",), verbs=("create",)),
        ),
    )
    writer = cluster_role(
        "policy-writer", rule(groups=("nvidia.com",), resources=("clusterpolicies",))
    )
    inputs = world(
        [role, writer],
        [
            rb(NVDP, "alpha-cm", "cm-and-pods", DEVS, kind="Role"),
            crb("plugin-policy", "policy-writer", sa(NVDP, "nvdp")),
        ],
    )
    snapshot = replace(
        inputs.snapshot,
        namespaces=(*inputs.snapshot.namespaces, Namespace(NVDP)),
        workloads=(*inputs.snapshot.workloads, _daemonset()),
    )
    (draft,) = run_checks(replace(inputs, snapshot=snapshot), only=["K8S-004"])
    reached = {r["object"] for r in draft.evidence["objects"]}
    assert f"ConfigMap {NVDP}/nvdp-config" in reached
    assert "ClusterPolicy cluster-policy" in reached
    (path,) = draft.evidence["escalation"]
    assert path.startswith("may run pods in") and NVDP in path
    assert path in draft.title
