"""NVIDIA_VISIBLE_DEVICES outside the scheduler is a GPU holding (DESIGN §2): where the node
honours it, the container time-shares the GPUs it names with whoever holds them, and every
sharing check sees it."""

from __future__ import annotations

from typing import Any

import pytest

from posture.rules.common import gpu_holdings
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import (
    OPERATOR_NS,
    UUIDS,
    container,
    hami_pod,
    node,
    pod,
    run,
    world,
)

NVD = "NVIDIA_VISIBLE_DEVICES"
ACCEPT = "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"
ALPHA, BETA, GAMMA = tenant("alpha"), tenant("beta"), tenant("gamma")


def toolkit(accept: str | None = None) -> dict[str, Any]:
    """The GPU Operator's toolkit pod on gpu-a: unset runs the toolkit's default (true)."""
    env = [{"name": "RUNTIME", "value": "containerd"}]
    if accept is not None:
        env.append({"name": ACCEPT, "value": accept})
    ctr = container(
        "nvidia-container-toolkit-ctr",
        "nvcr.io/nvidia/k8s/container-toolkit:v1.17.5-ubuntu20.04",
        env=env,
    )
    return pod(OPERATOR_NS, "nvidia-container-toolkit-daemonset-gpu-a", ctr)


def env_pod(ns: str = "alpha", value: str = "all", **fields: Any) -> dict[str, Any]:
    """A container that asks for no GPU and names GPUs in the variable."""
    probe = container("probe", "nvidia/cuda:12.4.1-base-ubuntu22.04", **fields)
    probe["env"] = [{"name": NVD, "value": value}]
    return pod(ns, "probe", probe)


def whole_gpu(ns: str, name: str = "train") -> dict[str, Any]:
    return pod(ns, name, container(gpu={"nvidia.com/gpu": "1"}))


def gpu_node(**labels: str) -> dict[str, Any]:
    return node("gpu-a", capacity={"nvidia.com/gpu": "8"}, labels=labels)


def cluster(*objects: dict[str, Any], tenants=(ALPHA, BETA, GAMMA), labels=None):
    return world([gpu_node(**(labels or {})), *objects], tenants)


# --- the holding itself -----------------------------------------------------------------------


def test_all_on_a_node_that_honours_it_holds_every_gpu_by_time_slicing():
    inputs = cluster(toolkit(), env_pod())
    (holding,) = gpu_holdings(inputs, inputs.snapshot.nodes[0])
    assert (holding.tenant.slug, holding.pool, holding.mode) == (
        "alpha",
        "nvidia.com/gpu",
        "time_slicing",
    )
    assert holding.every_device and holding.count == 8
    assert holding.basis.startswith(f"through {NVD}=all")


@pytest.mark.parametrize("value", ["void", "none", ""])
def test_a_variable_that_names_no_gpu_holds_none(value):
    inputs = cluster(toolkit(), env_pod(value=value))
    assert gpu_holdings(inputs, inputs.snapshot.nodes[0]) == []


def test_a_container_that_requests_a_gpu_is_counted_once():
    probe = container("probe", gpu={"nvidia.com/gpu": "1"}, env=[{"name": NVD, "value": "all"}])
    inputs = cluster(toolkit(), pod("alpha", "probe", probe))
    (holding,) = gpu_holdings(inputs, inputs.snapshot.nodes[0])
    assert holding.resource == "nvidia.com/gpu" and holding.count == 1


def test_a_platform_pod_setting_it_holds_nothing():
    exporter = pod(OPERATOR_NS, "dcgm-exporter-x", container("dcgm-exporter"))
    exporter["spec"]["containers"][0]["env"] = [{"name": NVD, "value": "all"}]
    inputs = cluster(toolkit(), exporter)
    assert gpu_holdings(inputs, inputs.snapshot.nodes[0]) == []


def test_indices_map_to_uuids_only_where_the_node_lists_them():
    inputs = cluster(toolkit(), env_pod(value="0,3"))
    (holding,) = gpu_holdings(inputs, inputs.snapshot.nodes[0])
    assert holding.devices == ("gpu-index:0", "gpu-index:3") and holding.count == 2
    assert "has no UUID in the node's inventory" in holding.basis


# --- co-tenancy: SHARE-001, -003, -006, -007 ---------------------------------------------------


def test_share001_env_access_beside_another_tenants_whole_gpu():
    found = run("SHARE-001", cluster(toolkit(), env_pod(), whole_gpu("beta")))
    (draft,) = found
    assert draft.tenants == ("alpha", "beta")
    assert draft.evidence["co_residence"] == "certain"
    text = repr(draft.evidence)
    assert f"through {NVD}=all" in text and "reaches every GPU of the node gpu-a" in text


@pytest.mark.parametrize(
    ("objects", "privileged", "fires"),
    [
        ([toolkit()], False, True),
        ([toolkit("true")], False, True),
        ([toolkit("false")], False, False),
        # The toolkit honours the variable from a privileged container whatever it says.
        ([toolkit("false")], True, True),
        # Nothing shows whether the node acts on it: no co-tenancy claimed.
        ([], False, False),
    ],
)
def test_share001_only_where_the_node_honours_the_variable(objects, privileged, fires):
    probe = env_pod(securityContext={"privileged": True}) if privileged else env_pod()
    found = run("SHARE-001", cluster(*objects, probe, whole_gpu("beta")))
    assert bool(found) is fires


def test_whole_gpus_beside_an_env_access_do_not_meet_each_other():
    inputs = cluster(toolkit(), env_pod(), whole_gpu("beta"), whole_gpu("gamma"))
    pairs = sorted(d.tenants for d in run("SHARE-001", inputs))
    assert pairs == [("alpha", "beta"), ("alpha", "gamma")]


def test_an_index_meets_only_the_holder_of_that_gpu():
    # The node's DRA driver publishes GPU 0's UUID; HAMi placed beta on GPU 0, gamma on GPU 5.
    slice_ = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "gpu-a-gpu.nvidia.com-x"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": "gpu-a",
            "pool": {"name": "gpu-a", "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{i}",
                    "attributes": {
                        "type": {"string": "gpu"},
                        "uuid": {"string": UUIDS[i]},
                        "index": {"int": i},
                    },
                }
                for i in range(8)
            ],
        },
    }
    beta = hami_pod("beta", "on-0", UUIDS[0], **{"nvidia.com/gpumem": "3000"})
    gamma = hami_pod("gamma", "on-5", UUIDS[5], **{"nvidia.com/gpumem": "3000"})
    inputs = cluster(toolkit(), env_pod(value="0"), beta, gamma, slice_)
    (holding,) = [h for h in gpu_holdings(inputs, inputs.snapshot.nodes[0]) if h.through_env]
    assert holding.devices == (UUIDS[0],)
    # gamma's GPU 5 is nobody else's: alpha meets beta only, and beta never meets gamma.
    (draft,) = run("SHARE-001", inputs)
    assert draft.tenants == ("alpha", "beta")
    assert draft.evidence["co_residence"] == "certain"
    # It names one GPU, not all: the title says the variable without claiming `=all`.
    assert draft.title.endswith(
        "alpha reaching it through NVIDIA_VISIBLE_DEVICES (certain co-residence)"
    )


def test_share003_the_mode_an_external_class_forbids():
    outsider = tenant("alpha", "external")
    inputs = cluster(toolkit(), env_pod(), whole_gpu("beta"), tenants=(outsider, BETA))
    (draft,) = run("SHARE-003", inputs)
    assert draft.tenants == ("alpha", "beta")
    # The mode the class forbids, and how it is reached: the variable, not a config.
    assert draft.title == (
        "Tenants alpha and beta share nvidia.com/gpu in node gpu-a, alpha reaching it through "
        "NVIDIA_VISIBLE_DEVICES=all (time_slicing), which trust classes external and internal "
        "forbid"
    )


def test_share007_a_sensitive_tenants_whole_gpu_reached_by_env_access():
    clinic = tenant("beta", "sensitive")
    inputs = cluster(toolkit(), env_pod(), whole_gpu("beta"), tenants=(ALPHA, clinic))
    (draft,) = run("SHARE-007", inputs)
    assert draft.tenants == ("alpha", "beta")
    assert draft.title == (
        "Sensitive tenant beta shares nvidia.com/gpu with alpha (internal) in node gpu-a, "
        "alpha reaching it through NVIDIA_VISIBLE_DEVICES=all"
    )


def test_env_access_beside_mps_clients_time_slices_with_them():
    # The env container is no client of the MPS server (it has not its pipe directory): it
    # time-shares the GPU with the server, so SHARE-001 says it, and SHARE-006 still only
    # pairs MPS clients.
    mps = {"nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas": "4"}
    inputs = world(
        [
            node("gpu-a", gpus=1, capacity={"nvidia.com/gpu": "4"}, labels=mps),
            toolkit(),
            env_pod(),
            whole_gpu("beta"),
        ],
        (ALPHA, BETA),
    )
    (draft,) = run("SHARE-001", inputs)
    assert draft.tenants == ("alpha", "beta")
    assert run("SHARE-006", inputs) == []


# --- approval, pool, attribution ---------------------------------------------------------------


def test_share004_env_access_is_time_slicing_nobody_approved():
    (draft,) = run("SHARE-004", cluster(toolkit(), env_pod(), whole_gpu("beta")))
    assert draft.tenants == ("alpha",)
    assert draft.evidence["observed_mode"] == "time_slicing"
    assert draft.evidence["pods"] == ["alpha/probe"]


def test_attr002_env_access_cannot_be_attributed():
    (draft,) = run("ATTR-002", cluster(toolkit(), env_pod()))
    assert draft.tenants == ("alpha",)
    assert "time_slicing" in draft.evidence["sharing_modes"]


def test_share004_says_the_use_is_through_the_variable():
    (draft,) = run("SHARE-004", cluster(toolkit(), env_pod()))
    assert draft.evidence["through_visible_devices"]["pods"] == ["alpha/probe"]


def test_pod009_env_access_inside_another_classs_pool():
    clinic = tenant("beta", "sensitive")
    taint = {"key": "gpuposture.io/trust-class", "value": "sensitive", "effect": "NoSchedule"}
    tainted = gpu_node()
    tainted["spec"]["taints"] = [taint]
    inputs = world([tainted, toolkit(), env_pod(), whole_gpu("beta")], (ALPHA, clinic))
    (draft,) = [d for d in run("POD-009", inputs) if "alpha" in d.tenants]
    assert draft.tenants == ("alpha", "beta")
    (reach,) = draft.evidence["gpu_access_through_visible_devices"]
    assert reach.startswith(f"through {NVD}=all")


def test_pod009_ignores_env_access_the_node_does_not_honour():
    clinic = tenant("beta", "sensitive")
    taint = {"key": "gpuposture.io/trust-class", "value": "sensitive", "effect": "NoSchedule"}
    tainted = gpu_node()
    tainted["spec"]["taints"] = [taint]
    inputs = world([tainted, toolkit("false"), env_pod()], (ALPHA, clinic))
    assert run("POD-009", inputs) == []


# --- POD-011 says the co-tenancy, honoured or not ------------------------------------------


def test_pod011_names_the_holders_it_time_slices_with():
    (draft,) = run("POD-011", cluster(toolkit(), env_pod(), whole_gpu("beta")))
    assert draft.title.endswith("; it time-slices GPUs 1 other pod(s) hold")
    (entry,) = draft.evidence["pods"]
    (here,) = entry["containers"]  # what the container does on this pod's node
    assert (here["container"], here["honoured_here"]) == ("probe", "yes")
    (held,) = here["time_slices_gpus_held_by"]
    assert (held["tenant"], held["pod"], held["sharing_mode"]) == (
        "beta",
        "beta/train",
        "exclusive",
    )


def test_pod011_unverified_says_what_it_would_share_and_no_share_finding():
    inputs = cluster(env_pod(), whole_gpu("beta"))
    (draft,) = run("POD-011", inputs)
    assert draft.title.endswith("; if the node honours it, it time-slices GPUs 1 other pod(s) hold")
    ((here,),) = (entry["containers"] for entry in draft.evidence["pods"])
    assert here["honoured_here"] == "unverified"
    assert [h["pod"] for h in here["would_time_slice_gpus_held_by"]] == ["beta/train"]
    assert run("SHARE-001", inputs) == [] and run("SHARE-004", inputs) == []


def test_pod011_privileged_container_is_honoured_on_a_hardened_node():
    probe = env_pod(securityContext={"privileged": True})
    (draft,) = run("POD-011", cluster(toolkit("false"), probe, whole_gpu("beta")))
    (entry,) = draft.evidence["pods"]
    assert entry["node_honours_visible_devices"] == "no"
    (here,) = entry["containers"]
    assert here["honoured_here"] == "yes"
    assert "privileged" in here["honoured_because"]


# --- ATTR-001: a busy GPU only an env-access pod can be using --------------------------------


def _busy(uuid: str):
    from datetime import UTC, datetime, timedelta

    from telemetry.evidence import TelemetryFacts
    from telemetry.hijack import Hijack

    start = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
    run_ = Hijack(
        ("gpu-a", uuid, ""), "gpu-a", uuid, "", start, start + timedelta(minutes=30), 97.0, 99.0, ()
    )
    return TelemetryFacts(sampled=True, hijacks=(run_,))


def test_attr001_names_the_pod_that_may_reach_the_busy_gpu_where_that_is_unverified():
    # Where the node honours the variable, telemetry.facts takes the hold as explaining the
    # busy GPU (tests/telemetry/test_env_explains.py): no run reaches ATTR-001. Unverified, the
    # pod explains nothing and is named as the suspect.
    from dataclasses import replace

    inputs = replace(cluster(env_pod()), telemetry=_busy(UUIDS[2]))
    (draft,) = run("ATTR-001", inputs)
    assert "with no scheduled workload" in draft.title
    assert draft.title.endswith("; 1 pod(s) may reach it through NVIDIA_VISIBLE_DEVICES")
    (reach,) = draft.evidence["reached_through_visible_devices"]
    assert (reach["pod"], reach["value"], reach["node_honours_it"]) == (
        "alpha/probe",
        "all",
        "unverified",
    )
    assert draft.tenants == ("alpha",)


def test_attr002_names_the_env_hold_that_explains_a_busy_gpu():
    from dataclasses import replace

    busy = _busy(UUIDS[2])
    (run_,) = busy.hijacks
    explained = replace(run_, held_note="pod(s) alpha/probe (NVIDIA_VISIBLE_DEVICES=all) ...")
    facts = replace(busy, hijacks=(), env_explained=(explained,))
    inputs = replace(cluster(toolkit(), env_pod()), telemetry=facts)
    assert run("ATTR-001", inputs) == []
    (draft,) = run("ATTR-002", inputs)
    (shown,) = draft.evidence["busy_gpus_explained_by_visible_devices"]
    assert (shown["gpu_uuid"], shown["peak_busy_percent"]) == (UUIDS[2], 99.0)
    assert shown["held_by"].startswith("pod(s) alpha/probe")


def test_attr001_unchanged_where_the_node_ignores_the_variable():
    from dataclasses import replace

    inputs = replace(cluster(toolkit("false"), env_pod()), telemetry=_busy(UUIDS[2]))
    (draft,) = run("ATTR-001", inputs)
    assert "reached_through_visible_devices" not in draft.evidence


def test_attr002_the_whole_gpu_beside_an_env_access_cannot_be_attributed_either():
    (draft,) = run("ATTR-002", cluster(toolkit(), env_pod(), whole_gpu("beta")))
    assert draft.tenants == ("alpha", "beta")
    assert draft.evidence["env_access_pods"] == ["alpha/probe"]


def test_attr002_a_whole_gpu_beside_an_ignored_variable_stays_attributable():
    assert run("ATTR-002", cluster(toolkit("false"), env_pod(), whole_gpu("beta"))) == []


def test_a_running_pods_finished_init_container_holds_nothing():
    probe = container("probe", "nvidia/cuda:12.4.1-base-ubuntu22.04")
    probe["env"] = [{"name": NVD, "value": "all"}]
    inputs = cluster(toolkit(), pod("alpha", "probe", container(), initContainers=[probe]))
    assert gpu_holdings(inputs, inputs.snapshot.nodes[0]) == []
    # A native sidecar runs beside the app for the pod's life: it holds.
    sidecar = {**probe, "restartPolicy": "Always"}
    inputs = cluster(toolkit(), pod("alpha", "probe", container(), initContainers=[sidecar]))
    (holding,) = gpu_holdings(inputs, inputs.snapshot.nodes[0])
    assert holding.every_device


# --- the action that ends it --------------------------------------------------------------------


def test_the_co_tenancy_an_env_access_makes_is_closed_by_the_workloads_pod011_action():
    # Not "stop time-slicing alpha with beta": beta asked the scheduler for a whole GPU; alpha's
    # variable is the one change that ends the co-tenancy, as POD-011 says.
    from posture.actions import group_of
    from tests.posture.test_actions import finding

    inputs = cluster(toolkit(), env_pod(), whole_gpu("beta"))
    (pair,) = run("SHARE-001", inputs)
    (pod011,) = run("POD-011", inputs)
    pair_action = group_of(
        finding("SHARE-001", pair.subject_kind, pair.subject_name, evidence=pair.evidence)
    )
    own_action = group_of(
        finding(
            "POD-011",
            pod011.subject_kind,
            pod011.subject_name,
            namespace=pod011.subject_namespace,
            evidence=pod011.evidence,
        )
    )
    assert pair_action == own_action
    assert pair_action[1] == (
        "Request GPUs through the scheduler (not NVIDIA_VISIBLE_DEVICES) in Pod alpha/probe"
    )


def test_two_env_accesses_sharing_a_gpu_stay_a_pair_action():
    from posture.actions import group_of
    from tests.posture.test_actions import finding

    inputs = cluster(toolkit(), env_pod(), env_pod("beta"))
    (pair,) = run("SHARE-001", inputs)
    identity, title = group_of(
        finding("SHARE-001", pair.subject_kind, pair.subject_name, evidence=pair.evidence)
    )
    assert "pair" in identity and title.startswith("Stop time-slicing alpha with beta")
