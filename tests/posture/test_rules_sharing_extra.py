"""SHARE-002, SHARE-006..008, LEAK-002, STACK-006, ATTR-002 over hand-built nodes and pods."""

from __future__ import annotations

from dataclasses import replace

import pytest

import posture.rules  # noqa: F401  (registers the existing checks)
import posture.rules.leak.leftoverlocals  # noqa: F401
import posture.rules.share  # noqa: F401
from inventory.snapshot import GpuOperatorPolicy, Node, SharingConfig
from posture.rules.leak.leftoverlocals import leftoverlocals_match
from posture.rules.registry import run_checks
from tests.posture.builders import (
    container,
    gpu_node,
    host_path,
    inputs,
    pod,
    run,
    sliced_node,
    tenant,
)

TEAM = tenant("team", namespaces=("team-a",))
OTHER = tenant("other", namespaces=("other-a",))
SENS = tenant("sec", "sensitive")
SENS2 = tenant("sec2", "sensitive")
EXT = tenant("ext", "external")
TRUSTED = tenant("trusted", "internal_trusted")
GPU = {"nvidia.com/gpu": 1}
TENANTS = (TEAM, OTHER, SENS, SENS2, EXT, TRUSTED)


def _world(node: Node, *pods, **snapshot):
    return inputs(nodes=(node,), pods=pods, tenants=TENANTS, **snapshot)


def _fired_for(check_id: str, node: Node, *pods, **snapshot) -> list[str | None]:
    """Every tenant some finding affects (None for a finding that affects none)."""
    drafts = run(check_id, _world(node, *pods, **snapshot))
    return sorted({s for d in drafts for s in d.tenants or (None,)}, key=lambda t: t or "")


def mig_node(capacity: dict[str, int], gpus: int | None = 1, **fields) -> Node:
    return gpu_node(
        "gpu-1",
        gpu_count=gpus,
        gpu_capacity=capacity,
        sharing_strategy="mig",
        mig_strategy="mixed",
        **fields,
    )


def mps_node(gpus: int = 1, replicas: int = 4) -> Node:
    return gpu_node(
        "gpu-1",
        gpu_count=gpus,
        gpu_capacity={"nvidia.com/gpu": gpus * replicas},
        sharing_strategy="mps",
        time_slicing_replicas=replicas,
    )


CI_3G = "nvidia.com/mig-1c.3g.40gb"

# --- SHARE-002 -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "resources", "fired_for"),
    [
        # Two tenants on compute instances of the 3g.40gb profile.
        (mig_node({CI_3G: 3}), (CI_3G, CI_3G), ["other", "team"]),
        (
            mig_node({CI_3G: 1, "nvidia.com/mig-2c.3g.40gb": 1}),
            (CI_3G, "nvidia.com/mig-2c.3g.40gb"),
            ["other", "team"],
        ),
        # Whole GPU instances are separate hardware partitions.
        (mig_node({"nvidia.com/mig-3g.40gb": 2}), ("nvidia.com/mig-3g.40gb",) * 2, []),
        (mig_node({"nvidia.com/mig-1g.10gb": 7}), ("nvidia.com/mig-1g.10gb",) * 2, []),
        # Different GPU-instance profiles cannot be the same GPU instance.
        (
            mig_node({CI_3G: 1, "nvidia.com/mig-1c.2g.20gb": 1}),
            (CI_3G, "nvidia.com/mig-1c.2g.20gb"),
            [],
        ),
        # Time-sliced compute instances are SHARE-001's business.
        (sliced_node(gpu_capacity={CI_3G: 8}), (CI_3G, CI_3G), []),
    ],
)
def test_share002_table(node, resources, fired_for):
    team, other = resources
    pods = (pod("team-a", "a", gpu={team: 1}), pod("other-a", "b", gpu={other: 1}))
    assert _fired_for("SHARE-002", node, *pods) == fired_for


def test_share002_same_tenant_or_platform_peer_does_not_fire():
    node = mig_node({CI_3G: 3})
    same = (pod("team-a", "a", gpu={CI_3G: 1}), pod("team-a", "b", gpu={CI_3G: 1}))
    platform = (pod("team-a", "a", gpu={CI_3G: 1}), pod("kube-system", "b", gpu={CI_3G: 1}))
    assert _fired_for("SHARE-002", node, *same) == []
    assert _fired_for("SHARE-002", node, *platform) == []


@pytest.mark.parametrize(
    ("resource", "capacity", "gpus", "verdict", "bound"),
    [
        (CI_3G, {CI_3G: 3}, 1, "possible", 2),  # two 3g instances fit on one GPU
        ("nvidia.com/mig-1c.4g.40gb", {"nvidia.com/mig-1c.4g.40gb": 4}, 1, "certain", 1),
        (CI_3G, {CI_3G: 2}, None, "possible", 2),
        (CI_3G, {}, None, "possible", None),
    ],
)
def test_share002_co_residence(resource, capacity, gpus, verdict, bound):
    node = mig_node(capacity, gpus)
    pods = (pod("team-a", "a", gpu={resource: 1}), pod("other-a", "b", gpu={resource: 1}))
    (pair,) = run("SHARE-002", _world(node, *pods))
    assert pair.tenants == ("other", "team")
    (on_node,) = pair.evidence["nodes"]
    assert (pair.evidence["co_residence"], on_node["gpu_instances_at_most"]) == (verdict, bound)
    assert [p["party"] for p in pair.evidence["parties"]] == ["other", "team"]
    profile = resource.removeprefix("nvidia.com/mig-1c.")
    assert (pair.evidence["gpu_instance_profile"], pair.key) == (profile, f"{profile}:other:team")


# --- SHARE-006 -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "pods", "fired_for"),
    [
        (
            mps_node(),
            (pod("team-a", "a", gpu=GPU), pod("other-a", "b", gpu=GPU)),
            ["other", "team"],
        ),
        (mps_node(), (pod("team-a", "a", gpu=GPU), pod("team-a", "b", gpu=GPU)), []),
        (mps_node(), (pod("team-a", "a", gpu=GPU), pod("kube-system", "b", gpu=GPU)), []),
        (mps_node(), (pod("team-a", "a", gpu=GPU), pod("other-a", "b")), []),  # b holds no GPU
        (sliced_node(), (pod("team-a", "a", gpu=GPU), pod("other-a", "b", gpu=GPU)), []),
        (gpu_node(), (pod("team-a", "a", gpu=GPU), pod("other-a", "b", gpu=GPU)), []),
    ],
)
def test_share006_table(node, pods, fired_for):
    assert _fired_for("SHARE-006", node, *pods) == fired_for


def test_share006_mig_devices_on_an_mps_node_are_not_mps():
    node = gpu_node(
        "gpu-1", sharing_strategy="mps", gpu_count=1, gpu_capacity={"nvidia.com/mig-3g.40gb": 2}
    )
    mig = {"nvidia.com/mig-3g.40gb": 1}
    assert (
        _fired_for("SHARE-006", node, pod("team-a", "a", gpu=mig), pod("other-a", "b", gpu=mig))
        == []
    )


def test_share006_single_gpu_is_certain_co_residence():
    pods = (pod("team-a", "a", gpu=GPU), pod("other-a", "b", gpu=GPU))
    (draft,) = run("SHARE-006", _world(mps_node(), *pods))
    assert draft.tenants == ("other", "team")
    assert draft.evidence["co_residence"] == "certain"
    assert draft.evidence["sharing_mode"] == "mps"


# --- SHARE-007 -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "peer_ns", "fired"),
    [
        (sliced_node(), "team-a", True),  # internal, lower rank
        (sliced_node(), "ext", True),  # external is lower than sensitive
        (sliced_node(), "kube-system", True),  # platform pods holding GPUs
        (mps_node(), "team-a", True),
        (sliced_node(), "sec2", False),  # another sensitive tenant: same rank (SHARE-003's)
        (gpu_node(), "team-a", False),  # exclusive GPUs
        (mig_node({CI_3G: 3}), "team-a", False),  # SHARE-002's
    ],
)
def test_share007_table(node, peer_ns, fired):
    gpu = {CI_3G: 1} if node.sharing_strategy == "mig" else GPU
    pods = (pod("sec", "s", gpu=gpu), pod(peer_ns, "peer", gpu=gpu))
    drafts = run("SHARE-007", _world(node, *pods))
    assert len(drafts) == (1 if fired else 0)
    if fired:
        assert "sec" in drafts[0].tenants and drafts[0].evidence["sensitive_tenant"] == "sec"
        assert drafts[0].severity in ("", "critical")


def test_share007_lists_only_lower_parties_and_names_the_platform():
    pods = (
        pod("sec", "s", gpu=GPU),
        pod("sec2", "s2", gpu=GPU),
        pod("team-a", "t", gpu=GPU),
        pod("gpu-operator", "op", gpu=GPU),
    )
    drafts = run("SHARE-007", _world(sliced_node(), *pods))
    # One finding per sensitive tenant and lower party: never between the two sensitive ones.
    pairs = {tuple(p["party"] for p in d.evidence["parties"]): d for d in drafts}
    assert set(pairs) == {
        ("platform", "sec"),
        ("sec", "team"),
        ("platform", "sec2"),
        ("sec2", "team"),
    }
    platform = pairs[("platform", "sec")]
    assert platform.tenants == ("sec",)
    assert [(p["trust_class"], p["is_platform"]) for p in platform.evidence["parties"]] == [
        ("platform", True),
        ("sensitive", False),
    ]
    assert platform.title == (
        "Sensitive tenant sec shares nvidia.com/gpu by time_slicing with platform pods in "
        "node gpu-1"
    )
    assert pairs[("sec", "team")].tenants == ("sec", "team")
    assert "sec2" not in pairs[("sec", "team")].title


def test_share007_lone_sensitive_tenant_or_no_gpu_peer():
    assert _fired_for("SHARE-007", sliced_node(), pod("sec", "s", gpu=GPU)) == []
    assert (
        _fired_for("SHARE-007", sliced_node(), pod("sec", "s", gpu=GPU), pod("team-a", "t")) == []
    )


# --- SHARE-008 -----------------------------------------------------------------------------

VGPU = gpu_node("gpu-1", sharing_strategy="vgpu")


@pytest.mark.parametrize(
    ("node", "namespace", "gpu", "fired_for"),
    [
        (VGPU, "ext", GPU, ["ext"]),
        (VGPU, "sec", GPU, ["sec"]),
        # internal may share by vgpu_fixed / vgpu_equal, not best effort (DESIGN §3)
        (VGPU, "team-a", GPU, ["team"]),
        (VGPU, "trusted", GPU, []),  # internal_trusted allows vgpu_best_effort
        (VGPU, "ext", None, []),  # holds no GPU
        (gpu_node(), "ext", GPU, []),
        (sliced_node(), "sec", GPU, []),
    ],
)
def test_share008_table(node, namespace, gpu, fired_for):
    assert _fired_for("SHARE-008", node, pod(namespace, gpu=gpu)) == fired_for


def test_share008_reads_the_class_as_the_admin_edited_it():
    """Whether a class needs predictable performance is its allowed modes, not its slug: an
    internal class edited to allow vgpu_best_effort needs none, an internal_trusted class
    edited to forbid it does."""
    lenient = replace(
        TEAM.trust_class, allowed_modes=(*TEAM.trust_class.allowed_modes, "vgpu_best_effort")
    )
    strict = replace(
        TRUSTED.trust_class,
        allowed_modes=tuple(
            m for m in TRUSTED.trust_class.allowed_modes if m != "vgpu_best_effort"
        ),
    )
    tenants = (replace(TEAM, trust_class=lenient), replace(TRUSTED, trust_class=strict))
    world = inputs(
        nodes=(VGPU,),
        pods=(pod("team-a", "a", gpu=GPU), pod("trusted", "t", gpu=GPU)),
        tenants=tenants,
    )
    (draft,) = run("SHARE-008", world)
    assert draft.tenants == ("trusted",)


def test_share008_says_the_scheduler_is_unknown():
    (draft,) = run("SHARE-008", _world(VGPU, pod("ext", gpu=GPU)))
    assert draft.evidence["vgpu_scheduler"] == "unknown scheduler, assumed best effort"


# --- LEAK-002 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "labels", "vendor"),
    [
        ("NVIDIA-A100-SXM4-80GB", {}, None),
        ("Tesla-T4", {}, None),
        ("NVIDIA-H100-80GB-HBM3", {}, None),
        (None, {"amd.com/gpu.product-name": "AMD_Instinct_MI250X"}, "AMD"),
        (None, {"amd.com/gpu.product-name": "Instinct_MI300X_OAM"}, "AMD"),
        (None, {"beta.amd.com/gpu.family.AI": "1"}, "AMD"),
        ("AMD Radeon PRO W7900", {}, "AMD"),
        ("Apple M2 Max", {}, "Apple"),
        ("Qualcomm Adreno 740", {}, "Qualcomm"),
        ("Imagination PowerVR BXS-4-64", {}, "Imagination"),
        ("Intel Data Center GPU Max 1550", {}, None),
        (None, {"feature.node.kubernetes.io/pci-1002.present": "true"}, None),
    ],
)
def test_leftoverlocals_models(model, labels, vendor):
    match = leftoverlocals_match(Node("n", labels=labels, gpu_model=model))
    assert (match["vendor"] if match else None) == vendor


AMD = Node("amd-1", labels={"amd.com/gpu.product-name": "AMD_Instinct_MI210"})


AMD_GPU = (container(accelerators={"amd.com/gpu": "1"}),)
PRIVILEGED = (container(privileged=True),)


def _amd(namespace: str, name: str, containers=AMD_GPU, **fields):
    return pod(namespace, name, node="amd-1", containers=containers, **fields)


@pytest.mark.parametrize(
    ("pods", "how"),
    [
        # A privileged pod reaches every GPU of the node, the other tenant's included.
        (
            (_amd("team-a", "a"), _amd("other-a", "b", containers=PRIVILEGED)),
            "pod other-a/b reaches every GPU: privileged container main",
        ),
        # So does a hostPath over /dev/kfd (the AMD compute interface) or /dev.
        (
            (_amd("team-a", "a"), _amd("other-a", "b", volumes=(host_path("kfd", "/dev/kfd"),))),
            "pod other-a/b reaches every GPU: hostPath volume kfd (/dev/kfd)",
        ),
    ],
)
def test_leak002_a_tenant_reaching_every_gpu_beside_another(pods, how):
    (draft,) = run("LEAK-002", _world(AMD, *pods))
    assert draft.tenants == ("other", "team")  # one finding per node, both tenants on it
    assert draft.evidence["affected_by"]["vendor"] == "AMD"
    assert "VU#446598" in draft.evidence["advisory"]
    by = {t["tenant"]: t["reaches_gpus_by"] for t in draft.evidence["tenants_on_node"]}
    assert by == {"other": how, "team": "pod team-a/a holds amd.com/gpu=1"}


@pytest.mark.parametrize(
    ("node", "pods"),
    [
        (AMD, (pod("team-a", "a", node="amd-1"), pod("team-a", "b", node="amd-1"))),
        (AMD, (pod("team-a", "a", node="amd-1"), pod("kube-system", "b", node="amd-1"))),
        # Whole AMD GPUs, one per tenant: nothing is shared (a handover is LEAK-001's).
        (AMD, (_amd("team-a", "a"), _amd("other-a", "b"))),
        # Pods with no GPU and no device access do not reach the GPUs.
        (AMD, (pod("team-a", "a", node="amd-1"), pod("other-a", "b", node="amd-1"))),
        # The only pod reaching every GPU is the one tenant's.
        (AMD, (_amd("team-a", "a", containers=PRIVILEGED), pod("other-a", "b", node="amd-1"))),
        (gpu_node(), (pod("team-a", "a", gpu=GPU), pod("other-a", "b", gpu=GPU))),  # NVIDIA
        (sliced_node(), (pod("team-a", "a", gpu=GPU), pod("other-a", "b", gpu=GPU))),
    ],
)
def test_leak002_negative(node, pods):
    assert run("LEAK-002", _world(node, *pods)) == []


# --- STACK-006 -----------------------------------------------------------------------------


def _policy(cdi: bool | None) -> GpuOperatorPolicy:
    return GpuOperatorPolicy("cluster-policy", spec={"cdi_enabled": cdi, "cdi_default": None})


@pytest.mark.parametrize(
    ("labels", "policies", "fires"),
    [
        ({}, (), True),
        ({"gpuposture.io/cdi": "enabled"}, (), False),
        ({"gpuposture.io/cdi": "TRUE"}, (), False),
        ({"gpuposture.io/cdi": "false"}, (), True),
        ({}, (_policy(True),), False),
        ({}, (_policy(False),), True),
        ({}, (_policy(None),), True),
        ({"gpuposture.io/cdi": "enabled"}, (_policy(False),), True),  # the policy decides
    ],
)
def test_stack006_table(labels, policies, fires):
    node = gpu_node(labels=labels)
    drafts = run("STACK-006", _world(node, gpu_operator_policies=policies))
    assert [d.tenants for d in drafts] == ([()] if fires else [])


@pytest.mark.parametrize(
    ("operator", "fires", "cdi"),
    [
        ("25.10.0", False, None),
        ("v25.10.1", False, None),
        ("25.3.4", True, "off"),
        (None, True, "unknown"),
    ],
)
def test_stack006_an_unset_cdi_field_means_what_the_operators_version_makes_it(
    operator, fires, cdi
):
    """GPU Operator v25.10.0 turned an unset spec.cdi.enabled on (off before): the upstream
    sample ClusterPolicy leaves it `cdi: {}`."""
    node = gpu_node(gpu_operator_version=operator)
    drafts = run("STACK-006", _world(node, gpu_operator_policies=(_policy(None),)))
    assert [d.evidence["cdi"] for d in drafts] == ([cdi] if fires else [])
    if cdi == "off":
        assert "does not use CDI" in drafts[0].title and "25.3.4" in drafts[0].evidence["source"]
    if cdi == "unknown":
        assert "is not shown to use CDI" in drafts[0].title


def test_stack006_a_standalone_plugin_naming_cdi_devices_uses_cdi():
    """No operator: the device plugin's own config says deviceListStrategy cdi-cri, so the
    runtime injects the CDI devices the plugin names."""
    cdi_config = SharingConfig(
        "kube-system",
        "nvidia-device-plugin",
        "config.yaml",
        "none",
        device_list_strategy="cdi-cri",
    )
    envvar_config = replace(cdi_config, device_list_strategy="envvar")
    node = gpu_node()
    assert run("STACK-006", _world(node, sharing_configs=(cdi_config,))) == []
    (draft,) = run("STACK-006", _world(node, sharing_configs=(envvar_config,)))
    assert draft.evidence["cdi"] == "unknown"


def test_stack006_for_the_tenants_on_the_node_and_cpu_nodes_skipped():
    cpu = Node("cpu-1")
    world = inputs(
        nodes=(gpu_node(), cpu),
        pods=(pod("team-a", "a", gpu=GPU), pod("other-a", "b", node="cpu-1")),
        tenants=TENANTS,
        gpu_operator_policies=(_policy(None),),
    )
    (draft,) = run("STACK-006", world)
    assert (draft.tenants, draft.subject_name) == (("team",), "gpu-1")
    (state,) = draft.evidence["cluster_policies"]
    assert state["field"] == "spec.cdi.enabled" and state["cdi_enabled"] is None


# --- ATTR-002 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "pods", "fired_for"),
    [
        (sliced_node(), (pod("team-a", "a", gpu=GPU),), ["team"]),
        (
            sliced_node(),
            (pod("team-a", "a", gpu=GPU), pod("other-a", "b", gpu=GPU)),
            ["other", "team"],
        ),
        (mps_node(), (pod("team-a", "a", gpu=GPU),), ["team"]),
        # HAMi fractions share the GPU by time-slicing whatever the node says.
        (
            gpu_node(),
            (pod("team-a", "a", gpu={"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4000}),),
            ["team"],
        ),
        (gpu_node(), (pod("team-a", "a", gpu=GPU),), []),
        (sliced_node(), (pod("kube-system", "a", gpu=GPU),), []),
        (sliced_node(), (pod("team-a", "a"),), []),
        (
            mig_node({"nvidia.com/mig-3g.40gb": 2}),
            (pod("team-a", "a", gpu={"nvidia.com/mig-3g.40gb": 1}),),
            [],
        ),
    ],
)
def test_attr002_table(node, pods, fired_for):
    assert _fired_for("ATTR-002", node, *pods) == fired_for


def test_attr002_evidence_names_neighbours_and_dcgm():
    pods = (
        pod("team-a", "a", gpu=GPU),
        pod("other-a", "b", gpu=GPU),
        pod("kube-system", "c", gpu=GPU),
    )
    (draft,) = run("ATTR-002", _world(sliced_node(), *pods))
    assert draft.tenants == ("other", "team")
    assert [e["tenant"] for e in draft.evidence["tenant_pods"]] == ["other", "team"]
    assert draft.evidence["platform_gpu_holdings"] == 1
    assert "DCGM-Exporter" in draft.evidence["attribution"]


# --- all of them ---------------------------------------------------------------------------

NEW = ("SHARE-002", "SHARE-006", "SHARE-007", "SHARE-008", "LEAK-002", "STACK-006", "ATTR-002")


def test_new_checks_run_through_the_registry_with_node_labels_as_subject_labels():
    node = sliced_node(labels={"pool": "shared"})
    pods = (pod("sec", "s", gpu=GPU), pod("team-a", "t", gpu=GPU))
    drafts = run_checks(_world(node, *pods), only=NEW)
    assert {d.check_id for d in drafts} == {"SHARE-007", "STACK-006", "ATTR-002"}
    assert all(d.subject_labels == {"pool": "shared"} for d in drafts)


def test_leak002_nvidia_holdings_on_a_mixed_node_are_not_the_affected_gpus():
    # A node with NVIDIA GPUs and AMD labels: whole NVIDIA GPUs of two tenants share no AMD GPU.
    mixed = gpu_node(labels={"amd.com/gpu.product-name": "AMD_Instinct_MI210"})
    pods = (pod("team-a", "a", gpu=GPU), pod("other-a", "b", gpu=GPU))
    assert run("LEAK-002", _world(mixed, *pods)) == []
