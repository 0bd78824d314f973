"""One notion of "a GPU pod" across the checks (DESIGN §2: every way a GPU reaches a pod feeds
them): a tenant pod whose only GPU access is an NVIDIA_VISIBLE_DEVICES its node honours is a
GPU workload for egress, admission, quota, identity and unclassified namespaces alike; one
whose node ignores the variable, or where that is unverified, is not (no holding is claimed;
POD-011 says what would happen)."""

from __future__ import annotations

from typing import Any

import pytest

from posture.rules.common import gpu_holdings
from posture.rules.dra_holdings import uses_gpu
from tests.posture.dra_world import (
    MIG_CLASS,
    claim,
    device_class,
    dra_pod,
    mig_device,
    resource_slice,
)
from tests.posture.gpu_access_world import (
    OPERATOR_NS,
    cluster_policy,
    configmap,
    container,
    namespace,
    node,
    pod,
    run,
    world,
)
from tests.posture.test_env_holdings import (
    ALPHA,
    BETA,
    NVD,
    cluster,
    env_pod,
    toolkit,
    whole_gpu,
)

HONOURED, IGNORED, UNVERIFIED = [toolkit()], [toolkit("false")], []


def _env_only(inputs) -> list[bool]:
    return [uses_gpu(inputs, p) for p in inputs.snapshot.pods if p.name == "probe"]


@pytest.mark.parametrize(
    ("node_side", "is_gpu_pod"), [(HONOURED, True), (IGNORED, False), (UNVERIFIED, False)]
)
def test_uses_gpu_counts_a_hold_through_the_variable_only_where_honoured(node_side, is_gpu_pod):
    assert _env_only(cluster(*node_side, env_pod())) == [is_gpu_pod]


@pytest.mark.parametrize("check_id", ["K8S-007", "K8S-009"])
@pytest.mark.parametrize(("node_side", "fires"), [(HONOURED, True), (IGNORED, False)])
def test_egress_and_admission_see_an_env_only_gpu_pod(check_id, node_side, fires):
    found = run(check_id, cluster(*node_side, env_pod(), namespace("alpha")))
    assert [d.tenants for d in found] == ([("alpha",)] if fires else [])
    if fires:
        assert "1 GPU pod(s)" in found[0].title or "1 of 1 GPU pod(s)" in found[0].title


def test_ten001_an_unclassified_namespace_whose_pod_reaches_gpus_through_the_variable():
    (draft,) = run("TEN-001", cluster(toolkit(), env_pod("scratch"), namespace("scratch")))
    assert draft.subject_name == "scratch"
    assert "runs 1 GPU pod(s)" in draft.title
    (entry,) = draft.evidence["gpu_pods"]
    (reach,) = entry["gpu_access_through_visible_devices"]
    assert reach.startswith(f"through {NVD}=all") and "every GPU of the node" in reach


def test_ten001_not_where_the_node_ignores_the_variable():
    assert run("TEN-001", cluster(toolkit("false"), env_pod("scratch"), namespace("scratch"))) == []


def test_k8s001_an_unclassified_namespace_taking_gpus_through_the_variable():
    inputs = cluster(toolkit(), env_pod("scratch"), namespace("scratch"))
    (draft,) = [d for d in run("K8S-001", inputs) if d.subject_name == "scratch"]
    assert draft.tenants == ("unclassified",)
    outside = draft.evidence["gpu_access_outside_quota"]
    assert outside["pods"] == ["scratch/probe"] and outside["pod_count"] == 1
    # The quota it lacks is on what the nodes advertise; no key would count the variable.
    assert [m["expected_key"] for m in draft.evidence["missing"]] == ["requests.nvidia.com/gpu"]


def test_pod010_a_shared_service_account_running_an_env_only_gpu_pod_of_another_tenant():
    def job(name: str, owner: str, *containers: dict[str, Any]) -> dict[str, Any]:
        return pod(
            "pipelines",
            name,
            *containers,
            labels={"gpuposture.io/tenant": owner},
            serviceAccountName="runner",
        )

    probe = container("probe", "nvidia/cuda:12.4.1-base-ubuntu22.04")
    probe["env"] = [{"name": NVD, "value": "all"}]
    objects = [
        namespace("pipelines"),
        job("probe", "alpha", probe),
        job("train", "beta", container(gpu={"nvidia.com/gpu": "1"})),
    ]
    (draft,) = run("POD-010", cluster(toolkit(), *objects))
    assert draft.tenants == ("alpha", "beta")
    # Ignored: alpha's pod is no GPU pod; beta's alone in a namespace nobody owns remains.
    assert [d.tenants for d in run("POD-010", cluster(toolkit("false"), *objects))] == [("beta",)]


# --- a DRA claim and the variable: one party, one holding -------------------------------------


def _dra_world(*extra: dict[str, Any]):
    with_env = dra_pod("alpha", "probe", "alpha-gpu")
    with_env["spec"]["containers"][0]["env"] = [{"name": NVD, "value": "all"}]
    objects = [
        device_class(),
        resource_slice(),
        claim("alpha", "alpha-gpu", ["gpu-0"], reserved_for=["probe"]),
        with_env,
        *extra,
    ]
    return cluster(toolkit(), *objects)


def test_a_pod_with_a_dra_gpu_claim_and_the_variable_holds_its_claim_once():
    inputs = _dra_world()
    held = [h for h in gpu_holdings(inputs, inputs.snapshot.nodes[0]) if h.pod.name == "probe"]
    assert [h.resource for h in held] == ["resourceclaim/alpha/alpha-gpu"]
    assert not any(h.through_env for h in held)


def test_no_time_slicing_is_claimed_for_the_dra_and_env_pod():
    # Its claim's CDI edits set the variable to void: no second, time-sliced hold on every GPU.
    inputs = _dra_world(whole_gpu("beta"))
    for check_id in ("SHARE-001", "SHARE-004"):
        assert [d for d in run(check_id, inputs) if "alpha" in d.tenants] == []


def test_pod011_is_quiet_for_a_pod_whose_dra_claim_requests_its_gpu():
    # The claim is its request, and its CDI edits set the variable to void.
    assert [d for d in run("POD-011", _dra_world()) if "alpha" in d.tenants] == []


# --- `all` on MIG-enabled GPUs: libnvidia-container selects every MIG device too -----------


def _mig_cluster(value: str):
    mig_node = node(
        "gpu-a",
        capacity={"nvidia.com/mig-1g.10gb": "56"},
        labels={"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": "all-1g.10gb"},
    )
    beta = pod("beta", "infer", container(gpu={"nvidia.com/mig-1g.10gb": "1"}))
    return world([mig_node, toolkit(), env_pod(value=value), beta], (ALPHA, BETA))


def test_share001_all_reaches_another_tenants_mig_instance():
    (draft,) = run("SHARE-001", _mig_cluster("all"))
    assert draft.tenants == ("alpha", "beta")
    # rtholdout k17/k20: nobody time-slices a MIG instance; alpha reaches it by the variable.
    assert draft.title == (
        "Tenants alpha and beta share nvidia.com/mig-1g.10gb in node gpu-a, alpha reaching it "
        "through NVIDIA_VISIBLE_DEVICES=all (certain co-residence)"
    )
    assert draft.evidence["co_residence"] == "certain"


def test_a_gpu_index_on_a_mig_enabled_gpu_reaches_no_mig_instance():
    assert run("SHARE-001", _mig_cluster("0")) == []


def test_pod011_names_the_mig_holder_all_reaches():
    (draft,) = run("POD-011", _mig_cluster("all"))
    ((here,),) = (entry["containers"] for entry in draft.evidence["pods"])
    held = here["time_slices_gpus_held_by"]
    assert [(h["tenant"], h["resource"]) for h in held] == [("beta", "nvidia.com/mig-1g.10gb")]


# --- sharing.mps naming a MIG resource: the device plugin refuses it ---------------------------

MPS_ON_MIG = """\
version: v1
flags:
  migStrategy: mixed
sharing:
  mps:
    resources:
    - name: nvidia.com/mig-1g.10gb
      replicas: 2
"""


def _mps_on_mig(*labels: tuple[str, str]):
    mig_node = node(
        "gpu-a",
        capacity={"nvidia.com/mig-1g.10gb": "14"},
        labels={
            "nvidia.com/mig.strategy": "mixed",
            "nvidia.com/device-plugin.config": "a100-mps",
            **dict(labels),
        },
    )
    objects = [
        cluster_policy(devicePlugin={"config": {"name": "plugin-config", "default": "any"}}),
        configmap(OPERATOR_NS, "plugin-config", {"a100-mps": MPS_ON_MIG}),
        mig_node,
        pod("alpha", "a", container(gpu={"nvidia.com/mig-1g.10gb": "1"})),
        pod("beta", "b", container(gpu={"nvidia.com/mig-1g.10gb": "1"})),
    ]
    return world(objects, (ALPHA, BETA))


def test_an_mps_entry_for_a_mig_resource_shares_nothing_by_mps():
    inputs = _mps_on_mig()
    holdings = gpu_holdings(inputs, inputs.snapshot.nodes[0])
    assert {h.mode for h in holdings} == {"mig_gi"}
    assert all("refuses" in h.basis and "not shared by MPS" in h.basis for h in holdings)
    assert run("SHARE-006", inputs) == []


def test_an_mps_entry_for_a_mig_resource_defers_to_gfds_label():
    inputs = _mps_on_mig(("nvidia.com/mig-1g.10gb.sharing-strategy", "time-slicing"))
    (draft,) = run("SHARE-001", inputs)
    assert draft.tenants == ("alpha", "beta")
    assert run("SHARE-006", inputs) == []


@pytest.mark.parametrize(("node_side", "fires"), [(HONOURED, True), (IGNORED, False)])
def test_pod010_cloud_side_counts_an_env_only_gpu_pod(node_side, fires):
    role = "arn:aws:iam::111122223333:role/gpu-jobs"
    probe = env_pod()
    probe["spec"]["containers"][0]["env"].append({"name": "AWS_ROLE_ARN", "value": role})
    train = whole_gpu("beta")
    train["spec"]["containers"][0]["env"] = [{"name": "AWS_ROLE_ARN", "value": role}]
    found = [
        d
        for d in run("POD-010", cluster(*node_side, probe, train))
        if d.subject_kind == "CloudIdentity"
    ]
    assert [d.tenants for d in found] == ([("alpha", "beta")] if fires else [])


MIG_UUID = "MIG-5c6d7e8f-1111-2222-3333-444455556666"


def _dra_mig_cluster(value: str):
    objects = [
        device_class(MIG_CLASS, kind="mig"),
        resource_slice(devices=[mig_device(0, "1g.10gb", MIG_UUID)]),
        claim(
            "beta",
            "beta-mig",
            ["gpu-0-mig-1g.10gb-0"],
            device_class_name=MIG_CLASS,
            reserved_for=["infer"],
        ),
        dra_pod("beta", "infer", "beta-mig"),
        env_pod(value=value),
    ]
    return cluster(toolkit(), *objects)


def test_share001_a_mig_uuid_meets_the_claim_holding_that_device():
    (draft,) = run("SHARE-001", _dra_mig_cluster(MIG_UUID))
    assert draft.tenants == ("alpha", "beta")
    assert "nvidia.com/mig-1g.10gb" in draft.title
    assert draft.evidence["co_residence"] == "certain"


def test_another_mig_uuid_meets_no_one():
    other = "MIG-00000000-1111-2222-3333-444455556666"
    assert run("SHARE-001", _dra_mig_cluster(other)) == []
