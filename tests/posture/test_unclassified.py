"""Namespaces nobody owns are not the platform's (issue 17 item 1): pods of a namespace that no
tenant claims and that is not a platform namespace are judged as the system tenant
`unclassified` under the strictest class, and each such namespace with a GPU pod raises TEN-001.
Objects are written as `kubectl get -o json` prints them and read by the normaliser."""

from __future__ import annotations

import pytest

from posture.inputs import PostureInputs
from posture.rules.registry import run_checks
from tests.posture.builders import tenant, trust_class
from tests.posture.gpu_access_world import (
    KAI_RESERVATION_NS,
    OPERATOR_NS,
    UUIDS,
    cluster_policy,
    configmap,
    container,
    kai_fraction_pod,
    kai_reservation_pod,
    namespace,
    node,
    pod,
    run,
    world,
)

ALPHA = tenant("alpha", "internal")
ROOT = container(
    "trainer",
    gpu={"nvidia.com/gpu": "1"},
    securityContext={"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}},
    volumeMounts=[{"name": "dev", "mountPath": "/dev"}],
)
ROOT_VOLUMES = [{"name": "dev", "hostPath": {"path": "/dev", "type": "Directory"}}]


def _root_pod(ns: str, name: str = "trainer-0") -> dict:
    owner = [{"apiVersion": "batch/v1", "kind": "Job", "name": "trainer", "uid": "u-1"}]
    found = pod(ns, name, ROOT, volumes=ROOT_VOLUMES)
    found["metadata"]["ownerReferences"] = owner
    return found


def _world(*objects: dict, tenants=(ALPHA,)) -> PostureInputs:
    return world([node("gpu-a"), namespace("alpha"), *objects], tenants)


def _affected(inputs: PostureInputs, *check_ids: str) -> dict[str, set[tuple[str, ...]]]:
    return {c: {d.tenants for d in run(c, inputs)} for c in check_ids}


def test_root_gpu_pod_in_a_namespace_nobody_owns_is_judged_as_external():
    inputs = _world(namespace("scratch"), _root_pod("scratch"))
    found = _affected(inputs, "POD-001", "POD-003", "POD-004", "TEN-001")
    assert found == {c: {("unclassified",)} for c in found}
    (draft,) = run("POD-001", inputs)
    assert draft.evidence["trust_class"] == "external"
    assert draft.evidence["tenant"] == "unclassified"


def test_ten001_one_finding_per_namespace_listing_its_gpu_pods_and_workloads():
    inputs = _world(
        namespace("scratch", team="ml"),
        _root_pod("scratch", "trainer-0"),
        _root_pod("scratch", "trainer-1"),
        pod("scratch", "cpu-only", container("web", image="nginx:1.27")),
    )
    (draft,) = run("TEN-001", inputs)
    assert (draft.subject_kind, draft.subject_name, draft.severity or "high") == (
        "Namespace",
        "scratch",
        "high",
    )
    evidence = draft.evidence
    assert [p["pod"] for p in evidence["gpu_pods"]] == ["scratch/trainer-0", "scratch/trainer-1"]
    assert evidence["workloads"] == ["Job scratch/trainer"]
    assert (evidence["judged_as_class"], evidence["gpu_pod_count"]) == ("external", 2)
    assert evidence["namespace_labels"] == {"team": "ml"}


@pytest.mark.parametrize(
    ("objects", "why"),
    [
        ([namespace("scratch"), pod("scratch", "web", container(image="nginx:1.27"))], "no GPU"),
        ([_root_pod(OPERATOR_NS)], "the GPU Operator's namespace"),
        ([_root_pod("kube-system")], "a Kubernetes default"),
        (
            [namespace("infra", **{"gpuposture.io/platform": "true"}), _root_pod("infra")],
            "labelled platform",
        ),
        ([_root_pod("alpha")], "claimed by the registry"),
        (
            [namespace("lab", **{"gpuposture.io/tenant": "alpha"}), _root_pod("lab")],
            "claimed by label",
        ),
    ],
)
def test_ten001_stays_quiet(objects, why):
    assert run("TEN-001", _world(*objects)) == [], why


def test_claimed_namespace_pods_are_the_tenants_not_unclassified():
    inputs = _world(namespace("lab", **{"gpuposture.io/tenant": "alpha"}), _root_pod("lab"))
    assert _affected(inputs, "POD-001") == {"POD-001": {("alpha",)}}


def test_nobody_can_claim_the_unclassified_tenant_by_label():
    ns = namespace("scratch", **{"gpuposture.io/tenant": "unclassified"})
    (draft,) = run("TEN-001", _world(ns, _root_pod("scratch")))
    assert draft.subject_name == "scratch"


def test_platform_label_on_a_claimed_namespace_does_not_make_it_platform():
    ns = namespace("alpha", **{"gpuposture.io/platform": "true"})
    inputs = world([node("gpu-a"), ns, _root_pod("alpha")], (ALPHA,))
    assert _affected(inputs, "POD-001") == {"POD-001": {("alpha",)}}


def test_configured_class_judges_unclassified_pods():
    inputs = _world(namespace("scratch"), _root_pod("scratch"))
    relaxed = PostureInputs(
        cluster="test",
        snapshot=inputs.snapshot,
        tenants=inputs.tenants,
        unclassified_class=trust_class("internal"),
    )
    (draft,) = run("POD-001", relaxed)
    assert draft.evidence["trust_class"] == "internal"
    assert run("TEN-001", relaxed)[0].evidence["judged_as_class"] == "internal"


def test_fractions_and_renamed_resources_are_gpu_pods_for_ten001():
    group = "b1d3f0a2-5c4e-4b7a-9e21-7f3c2d1a9b6e"
    inputs = _world(
        namespace("frac"),
        namespace("renamed"),
        kai_fraction_pod("frac", "half", group),
        kai_reservation_pod(group, UUIDS[0]),
        pod("renamed", "ts", container(gpu={"nvidia.com/gpu-ts": "1"})),
    )
    assert {d.subject_name for d in run("TEN-001", inputs)} == {"frac", "renamed"}


def test_kai_reservation_pods_are_placeholders_never_unclassified():
    group = "b1d3f0a2-5c4e-4b7a-9e21-7f3c2d1a9b6e"
    inputs = _world(
        namespace(KAI_RESERVATION_NS),
        kai_reservation_pod(group, UUIDS[0]),
        kai_fraction_pod("alpha", "half", group),
    )
    assert run("TEN-001", inputs) == []
    drafts = run_checks(inputs)
    assert not [d for d in drafts if "unclassified" in d.tenants]


TS_CONFIG = """\
version: v1
sharing:
  timeSlicing:
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""


def test_sharing_a_gpu_with_an_unclassified_party_is_sharing_with_external():
    labels = {
        "nvidia.com/device-plugin.config": "ts",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/gpu.replicas": "4",
    }
    objects = [
        cluster_policy(devicePlugin={"config": {"name": "plugin-config", "default": "ts"}}),
        configmap(OPERATOR_NS, "plugin-config", {"ts": TS_CONFIG}),
        node("gpu-a", gpus=1, capacity={"nvidia.com/gpu": "4"}, labels=labels),
        namespace("alpha"),
        namespace("scratch"),
        pod("alpha", "a", container(gpu={"nvidia.com/gpu": "1"})),
        pod("scratch", "s", container(gpu={"nvidia.com/gpu": "1"})),
    ]
    inputs = world(objects, (ALPHA,))
    (draft,) = run("SHARE-003", inputs)
    assert draft.tenants == ("alpha", "unclassified")
    parties = {p["party"]: p for p in draft.evidence["parties"]}
    assert parties["unclassified"]["trust_class"] == "external"
    assert parties["unclassified"]["is_unclassified"] is True
    assert parties["alpha"].get("is_unclassified") is None
    assert "no tenant owns" in draft.title
    assert {d.tenants for d in run("SHARE-001", inputs)} == {("alpha", "unclassified")}


def test_k8s008_reads_the_claimed_owner_not_unclassified():
    """A tenant's group may edit an unclassified namespace: TEN-001's business, not K8S-008's
    (nobody there is 'another tenant')."""
    alpha = tenant("alpha", "internal")
    alpha = type(alpha)(alpha.slug, alpha.name, alpha.trust_class, ("alpha",), ("group:devs",))
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "devs-edit", "namespace": "scratch"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"}],
    }
    edit = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "edit"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete"]}],
    }
    inputs = world(
        [node("gpu-a"), namespace("alpha"), namespace("scratch"), edit, binding], (alpha,)
    )
    assert run("K8S-008", inputs) == []


def _job(ns: str, name: str, account: str = "runner", **labels: str) -> dict:
    return pod(
        ns, name, container(gpu={"nvidia.com/gpu": "1"}), labels=labels, serviceAccountName=account
    )


@pytest.mark.parametrize(
    ("pods", "fired_for"),
    [
        # Unclassified pods alone under their own namespace's account: TEN-001's, not POD-010's.
        ((_job("scratch", "a"), _job("scratch", "b")), []),
        # A tenant's labelled job beside unlabelled ones under one account in a namespace
        # nobody owns: both parties share the identity.
        (
            (_job("scratch", "a", **{"gpuposture.io/tenant": "alpha"}), _job("scratch", "b")),
            ["alpha", "unclassified"],
        ),
    ],
)
def test_pod010_counts_the_unclassified_party(pods, fired_for):
    inputs = _world(namespace("scratch"), *pods)
    drafts = run("POD-010", inputs)
    assert sorted(slug for d in drafts for slug in d.tenants) == fired_for


def test_k8s001_skips_an_unclassified_namespace_without_gpus_but_judges_one_with():
    idle = _world(namespace("default"), pod("default", "web", container(image="nginx:1.27")))
    assert [d.subject_name for d in run("K8S-001", idle)] == ["alpha"]
    busy = _world(namespace("scratch"), _root_pod("scratch"))
    assert {d.subject_name for d in run("K8S-001", busy)} == {"alpha", "scratch"}


def test_a_reservation_annotation_outside_the_reservation_namespaces_is_no_placeholder():
    """`run.ai/reserve_for_gpu_index` is the pod's own annotation: in a namespace nobody owns it
    must not turn a privileged 8-GPU pod into the platform's unjudged placeholder."""
    miner = pod(
        "scratch",
        "miner",
        container(gpu={"nvidia.com/gpu": "8"}, securityContext={"privileged": True}),
        annotations={"run.ai/reserve_for_gpu_index": UUIDS[0]},
        labels={"runai-gpu-group": "b1d3f0a2-5c4e-4b7a-9e21-7f3c2d1a9b6e"},
    )
    inputs = _world(namespace("scratch"), miner)
    found = _affected(inputs, "TEN-001", "POD-001")
    assert found == {"TEN-001": {("unclassified",)}, "POD-001": {("unclassified",)}}


def test_kai_reservation_pods_in_a_platform_namespace_of_their_own_are_placeholders():
    """KAI's reservation namespace is configurable: listed as the platform's, its reservation
    pods stay placeholders (no platform party holding the GPU the fractions share)."""
    group = "b1d3f0a2-5c4e-4b7a-9e21-7f3c2d1a9b6e"
    reservation = kai_reservation_pod(group, UUIDS[0])
    reservation["metadata"]["namespace"] = "gpu-reservations"
    inputs = _world(
        namespace("gpu-reservations", **{"gpuposture.io/platform": "true"}),
        reservation,
        kai_fraction_pod("alpha", "half", group),
    )
    assert [inputs.is_reservation(p) for p in inputs.snapshot.pods if p.name != "half"] == [True]
    assert run("TEN-001", inputs) == []


def _operator(ns: str, account: str = "gpu-operator") -> dict:
    """The GPU Operator's Deployment as its helm chart installs it (here at zero replicas: a
    decoy needs no pod)."""
    template = {
        "metadata": {"labels": {"app": "gpu-operator"}},
        "spec": {
            "serviceAccountName": account,
            "containers": [container("gpu-operator", "nvcr.io/nvidia/gpu-operator:v24.9.0")],
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "gpu-operator", "namespace": ns},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "gpu-operator"}},
            "template": template,
        },
    }


OPERATOR_BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": "gpu-operator"},
    "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "gpu-operator",
    },
    "subjects": [
        {"kind": "ServiceAccount", "name": "gpu-operator", "namespace": "nvidia-gpu-operator"}
    ],
}


def test_the_operators_image_alone_does_not_make_a_namespace_nobody_owns_the_platforms():
    """Anyone who may create a Deployment can run the operator's image; only an admin can bind
    it cluster-wide. The decoy's namespace stays unclassified, and a ConfigMap there named like
    the ClusterPolicy's device-plugin config is not GPU configuration."""
    objects = [
        node("gpu-a"),
        namespace("alpha"),
        namespace("nvidia-gpu-operator"),
        namespace("scratch"),
        cluster_policy(devicePlugin={"config": {"name": "plugin-config", "default": "ts"}}),
        _operator("nvidia-gpu-operator"),
        OPERATOR_BINDING,
        _operator("scratch"),
        configmap("scratch", "plugin-config", {"ts": TS_CONFIG}),
        _root_pod("scratch"),
    ]
    inputs = world(objects, (ALPHA,))
    assert "nvidia-gpu-operator" in inputs.platform_namespaces
    assert "scratch" not in inputs.platform_namespaces
    assert "scratch" not in inputs.snapshot.platform_namespaces
    assert not [c for c in inputs.snapshot.sharing_configs if c.namespace == "scratch"]
    found = _affected(inputs, "TEN-001", "POD-001")
    assert found == {"TEN-001": {("unclassified",)}, "POD-001": {("unclassified",)}}


def _operand(ns: str) -> dict:
    image = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
    template = {"spec": {"containers": [{"name": "nvidia-device-plugin", "image": image}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": ns},
        "spec": {"template": template},
    }


def test_the_operators_operands_place_it_where_rbac_was_read_but_not_its_binding():
    """A hand-made snapshot with some ClusterRoleBindings but not the operator's: the operand
    DaemonSets the operator creates beside it still make its namespace the platform's, so they
    are not judged as pods of a namespace nobody owns. A decoy Deployment alone still is not."""
    decoy_binding = {**OPERATOR_BINDING, "subjects": [{"kind": "Group", "name": "ops"}]}
    objects = [
        node("gpu-a"),
        namespace("alpha"),
        namespace("nvidia-gpu-operator"),
        namespace("scratch"),
        _operator("nvidia-gpu-operator"),
        _operand("nvidia-gpu-operator"),
        decoy_binding,
        _operator("scratch"),
    ]
    inputs = world(objects, (ALPHA,))
    assert "nvidia-gpu-operator" in inputs.platform_namespaces
    assert "scratch" not in inputs.platform_namespaces


def test_without_rbac_in_the_snapshot_the_operators_image_still_finds_its_namespace():
    objects = [node("gpu-a"), namespace("alpha"), _operator("nvidia-gpu-operator")]
    inputs = world(objects, (ALPHA,))
    assert "nvidia-gpu-operator" in inputs.platform_namespaces


def _gpu_cronjob(ns: str) -> dict:
    template = {"spec": {"restartPolicy": "Never", "containers": [ROOT]}}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly-train", "namespace": ns},
        "spec": {"schedule": "0 2 * * *", "jobTemplate": {"spec": {"template": template}}},
    }


def test_ten001_names_a_gpu_cronjob_between_runs():
    """A GPU workload nobody owns is one between its runs too: TEN-001 does not resolve each
    morning and reopen each night."""
    inputs = _world(namespace("scratch"), _gpu_cronjob("scratch"))
    (draft,) = run("TEN-001", inputs)
    assert draft.subject_name == "scratch" and draft.tenants == ("unclassified",)
    assert draft.evidence["gpu_pod_count"] == 0
    assert draft.evidence["gpu_workloads_with_no_pod_running"] == ["CronJob scratch/nightly-train"]
    assert "no pod running" in draft.title


def test_ten001_ignores_a_cpu_cronjob_and_a_claimed_ones_template():
    cpu = _gpu_cronjob("scratch")
    cpu["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"] = [
        container("web", image="nginx:1.27")
    ]
    inputs = _world(namespace("scratch"), cpu, _gpu_cronjob("alpha"))
    assert run("TEN-001", inputs) == []


def _gpu_job(ns: str, name: str, suspend: bool) -> dict:
    template = {"spec": {"restartPolicy": "Never", "containers": [ROOT]}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {"suspend": suspend, "template": template},
    }


def test_ten001_counts_a_job_kueue_holds_suspended_not_a_finished_one():
    inputs = _world(
        namespace("queued"),
        namespace("done"),
        _gpu_job("queued", "train", suspend=True),
        _gpu_job("done", "train", suspend=False),
    )
    assert [d.subject_name for d in run("TEN-001", inputs)] == ["queued"]


def test_ten001_names_what_capsule_hnc_and_kubeflow_say_without_claiming_by_it():
    """A namespace these controllers label is still nobody's until the tenants file claims it
    (their labels are only as good as whoever may label namespaces), but TEN-001 says whose
    it looks to be: an HNC child of alpha's namespace, a Capsule tenant, a Kubeflow Profile."""
    hnc_child = namespace(
        "alpha-exp",
        **{"alpha.tree.hnc.x-k8s.io/depth": "1", "alpha-exp.tree.hnc.x-k8s.io/depth": "0"},
    )
    capsule = namespace("oil-dev", **{"capsule.clastix.io/tenant": "oil"})
    profile = namespace("kubeflow-ana", **{"app.kubernetes.io/part-of": "kubeflow-profile"})
    rancher = namespace("vision-lab", **{"field.cattle.io/projectId": "p-7xk2q"})
    kiosk = namespace("space-ana", **{"kiosk.sh/account": "ana"})
    names = ("alpha-exp", "oil-dev", "kubeflow-ana", "plain", "vision-lab", "space-ana")
    inputs = _world(
        hnc_child,
        capsule,
        profile,
        rancher,
        kiosk,
        namespace("plain"),
        *(_root_pod(ns) for ns in names),
    )
    drafts = {d.subject_name: d for d in run("TEN-001", inputs)}
    assert set(drafts) == set(names)
    assert drafts["vision-lab"].evidence["owner_hints"]["rancher_project"] == "p-7xk2q"
    assert drafts["space-ana"].evidence["owner_hints"]["kiosk_account"] == "ana"
    assert all(d.tenants == ("unclassified",) for d in drafts.values())
    hnc = drafts["alpha-exp"].evidence["owner_hints"]
    assert hnc["hnc_ancestors"] == [{"namespace": "alpha", "depth": 1, "claimed_by": "alpha"}]
    oil = drafts["oil-dev"].evidence["owner_hints"]
    assert (oil["capsule_tenant"], oil["capsule_tenant_is_ours"]) == ("oil", False)
    assert drafts["kubeflow-ana"].evidence["owner_hints"]["kubeflow_profile"] is True
    assert "owner_hints" not in drafts["plain"].evidence


def _dra_kubelet_plugin(ns: str) -> dict:
    """The NVIDIA DRA driver's kubelet plugin as its chart installs it: privileged, with the
    host's /dev and kubelet plugin directories."""
    spec = {
        "serviceAccountName": "nvidia-dra-driver-gpu-service-account-kubeletplugin",
        "containers": [
            {
                "name": "gpus",
                "image": "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.3.2",
                "securityContext": {"privileged": True},
            }
        ],
        "volumes": [{"name": "dev", "hostPath": {"path": "/dev"}}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-dra-driver-gpu-kubelet-plugin", "namespace": ns},
        "spec": {"template": {"metadata": {"labels": {"app": "kp"}}, "spec": spec}},
    }


def _dra_binding(ns: str) -> dict:
    return {
        **OPERATOR_BINDING,
        "metadata": {"name": "nvidia-dra-driver-gpu-role-binding-kubeletplugin"},
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": "nvidia-dra-driver-gpu-service-account-kubeletplugin",
                "namespace": ns,
            }
        ],
    }


def test_the_dra_drivers_namespace_is_the_platforms_where_its_account_is_bound():
    """The NVIDIA DRA driver's chart installs it in a namespace of its own and binds its
    kubelet plugin's account cluster-wide: that namespace is the GPU stack's, so its privileged
    plugin is not a critical POD-001 of "unclassified". Its image in a namespace no
    ClusterRoleBinding names (a copy anyone could run) makes nothing the platform's."""
    objects = [
        node("gpu-a"),
        namespace("alpha"),
        namespace("nvidia-dra-driver-gpu"),
        namespace("scratch"),
        _dra_kubelet_plugin("nvidia-dra-driver-gpu"),
        _dra_binding("nvidia-dra-driver-gpu"),
        _dra_kubelet_plugin("scratch"),
    ]
    inputs = world(objects, (ALPHA,))
    assert "nvidia-dra-driver-gpu" in inputs.platform_namespaces
    assert "scratch" not in inputs.platform_namespaces
    found = run("POD-001", inputs)
    assert [(d.subject_namespace, d.tenants) for d in found] == [("scratch", ("unclassified",))]


def _standalone_plugin(ns: str) -> dict:
    """The standalone device plugin's chart with a config: the plugin and its config manager
    read the ConfigMap the chart creates, under an account bound cluster-wide (it reads its
    node's labels)."""
    spec = {
        "serviceAccountName": "nvdp-nvidia-device-plugin-service-account",
        "containers": [
            {
                "name": "nvidia-device-plugin-ctr",
                "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.3",
                "env": [{"name": "CONFIG_FILE", "value": "/config/config.yaml"}],
                "volumeMounts": [{"name": "config", "mountPath": "/available-configs"}],
            }
        ],
        "volumes": [{"name": "config", "configMap": {"name": "nvdp-nvidia-device-plugin-configs"}}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvdp-nvidia-device-plugin", "namespace": ns},
        "spec": {"template": {"spec": spec}},
    }


def test_a_standalone_device_plugins_namespace_is_the_platforms_and_its_config_is_read():
    """`helm install nvdp nvdp/nvidia-device-plugin -n nvidia-device-plugin --set config...`:
    no operator. The plugin's namespace, its account bound cluster-wide, is the GPU stack's,
    so its time-slicing config is read (before, only a warning that it was not) and its pods
    are not judged as a namespace nobody owns."""
    ns = "nvidia-device-plugin"
    binding = {
        **OPERATOR_BINDING,
        "metadata": {"name": "nvdp-nvidia-device-plugin-role-binding"},
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": "nvdp-nvidia-device-plugin-service-account",
                "namespace": ns,
            }
        ],
    }
    labels = {"nvidia.com/device-plugin.config": "ts"}
    objects = [
        node("gpu-a", gpus=1, capacity={"nvidia.com/gpu": "4"}, labels=labels),
        namespace("alpha"),
        namespace(ns),
        _standalone_plugin(ns),
        binding,
        configmap(ns, "nvdp-nvidia-device-plugin-configs", {"ts": TS_CONFIG}),
    ]
    inputs = world(objects, (ALPHA,))
    assert ns in inputs.platform_namespaces
    (config,) = inputs.snapshot.sharing_configs
    assert (config.namespace, config.key, config.replicas) == (ns, "ts", 4)
    assert config.fail_requests_greater_than_one  # SHARE-005 reads the real config
    (gpu,) = inputs.snapshot.nodes
    assert (gpu.sharing_strategy, gpu.time_slicing_replicas) == ("time_slicing", 4)
    # Without the binding (a snapshot that read other bindings), the image alone places nothing.
    unbound = [o for o in objects if o is not binding] + [
        {**OPERATOR_BINDING, "subjects": [{"kind": "Group", "name": "ops"}]}
    ]
    assert ns not in world(unbound, (ALPHA,)).platform_namespaces


def test_a_finding_of_an_unclassified_namespace_says_how_it_gets_an_owner():
    inputs = _world(namespace("scratch"), _root_pod("scratch"))
    (draft,) = run("POD-001", inputs)
    assert draft.tenants == ("unclassified",)
    why = draft.evidence["why_unclassified"]
    assert "namespace scratch is claimed by no tenant" in why and "gpuposture.io/platform" in why


def _dcgm_exporter(ns: str) -> dict:
    """NVIDIA's dcgm-exporter chart deployed on its own (no operator): a DaemonSet whose
    exporter runs with SYS_ADMIN (the chart's default, for DCGM profiling metrics)."""
    exporter = {
        "name": "exporter",
        "image": "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04",
        "securityContext": {"runAsUser": 0, "capabilities": {"add": ["SYS_ADMIN"]}},
    }
    spec = {"serviceAccountName": "dcgm-exporter", "containers": [exporter]}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "dcgm-exporter", "namespace": ns},
        "spec": {"template": {"metadata": {"labels": {"app": "dcgm"}}, "spec": spec}},
    }


def _dcgm_role_binding(ns: str) -> dict:
    """The chart's RoleBinding of its `dcgm-exporter-read-cm` Role (always created)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "dcgm-exporter", "namespace": ns},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "dcgm-exporter-read-cm",
        },
        "subjects": [{"kind": "ServiceAccount", "name": "dcgm-exporter", "namespace": ns}],
    }


def test_a_standalone_dcgm_exporters_namespace_is_the_platforms_but_a_tenants_stays_its():
    """`helm install dcgm-exporter -n gpu-monitoring`: the exporter's namespace, with the
    chart's RoleBinding, is the GPU stack's, so its SYS_ADMIN is not a critical POD-004 of
    "unclassified". The same exporter in a tenant's namespace stays the tenant's, and its
    image in a namespace with no binding of the chart's (RBAC read) places nothing."""
    objects = [
        node("gpu-a"),
        namespace("alpha"),
        namespace("gpu-monitoring"),
        namespace("scratch"),
        OPERATOR_BINDING,  # the snapshot read ClusterRoleBindings
        _dcgm_exporter("gpu-monitoring"),
        _dcgm_role_binding("gpu-monitoring"),
        _dcgm_exporter("alpha"),
        _dcgm_role_binding("alpha"),
        _dcgm_exporter("scratch"),
    ]
    inputs = world(objects, (ALPHA,))
    assert "gpu-monitoring" in inputs.platform_namespaces
    assert not {"alpha", "scratch"} & inputs.platform_namespaces
    found = sorted((d.subject_namespace, d.tenants) for d in run("POD-004", inputs))
    assert found == [("alpha", ("alpha",)), ("scratch", ("unclassified",))]
