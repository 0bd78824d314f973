"""NVIDIA_VISIBLE_DEVICES in a pod whose RuntimeClass handler runs it in a Kata guest VM, on a
container-mode node whose toolkit honours the variable, beside another tenant's runc pod
holding a GPU. The host's NVIDIA Container Toolkit acts only for the containerd handler it is
installed as; a Kata handler (kata-qemu-nvidia-gpu, -snp, -tdx, ...) starts a VM that gets a
GPU only by passthrough of a resource it requests. So the variable reaches no host GPU there:
no POD-011, no holding, no SHARE-001 (rtconfidential k27, k29, k47). The same pod under runc is
the control. Our own world: a render farm node, tenants `studio` and `lab`."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.env_holds import every_gpu_holders
from inventory.env_holds import node_envvar_access as inventory_envvar_access
from inventory.snapshot import Pod
from inventory.sources.nvidia_runtime import vm_runtime
from posture.rules.common import gpu_holdings
from tests.posture.builders import tenant
from tests.posture.gpu_access_world import cluster_policy, container, node, pod, run, world

STUDIO = tenant("studio")
LAB = tenant("lab")
NVD = "NVIDIA_VISIBLE_DEVICES"
ACCEPT = "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"
# The node's toolkit accepts the variable from unprivileged containers: under runc it is
# honoured, so only the runtime handler can keep it from reaching a GPU.
ACCEPTING = cluster_policy(toolkit={"env": [{"name": ACCEPT, "value": "true"}]})


def runtime_class(name: str, handler: str) -> dict[str, Any]:
    return {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": name},
        "handler": handler,
    }


def _farm_node() -> dict[str, Any]:
    labels = {
        "nvidia.com/gpu.workload.config": "container",
        "nvidia.com/gpu.deploy.container-toolkit": "true",
    }
    return node("gpu-a", gpus=2, capacity={"nvidia.com/gpu": "2"}, labels=labels)


def _renderer() -> dict[str, Any]:
    """`studio`'s runc pod holding one GPU through the device plugin."""
    return pod("studio", "renderer-0", container("render", gpu={"nvidia.com/gpu": "1"}))


def _probe(runtime: str | None, privileged: bool = False) -> dict[str, Any]:
    """`lab`'s pod naming every GPU in the variable, requesting none."""
    fields: dict[str, Any] = {"env": [{"name": NVD, "value": "all"}]}
    if privileged:
        fields["securityContext"] = {"privileged": True}
    spec = {"runtimeClassName": runtime} if runtime else {}
    return pod("lab", "env-probe", container("probe", "busybox:1.36", **fields), **spec)


def _inputs(*objects: dict[str, Any]) -> Any:
    return world([_farm_node(), _renderer(), ACCEPTING, *objects], (STUDIO, LAB))


KATA_CLASSES = [
    # (class name, its RuntimeClass object's handler; None: the object is not in the snapshot)
    ("kata-qemu-nvidia-gpu", "kata-qemu-nvidia-gpu"),
    ("confidential-gpu", "kata-qemu-nvidia-gpu-snp"),
    ("kata-qemu-nvidia-gpu-tdx", None),
    ("kata", "kata-qemu"),
]


@pytest.mark.parametrize(("name", "handler"), KATA_CLASSES)
@pytest.mark.parametrize("privileged", [False, True])
def test_a_kata_pod_reaches_no_host_gpu_through_the_variable(name, handler, privileged):
    classes = [runtime_class(name, handler)] if handler else []
    inputs = _inputs(*classes, _probe(name, privileged))
    assert run("POD-011", inputs) == []
    assert not any(h.through_env for h in gpu_holdings(inputs, inputs.snapshot.nodes[0]))
    assert run("SHARE-001", inputs) == []
    # No check pairs the two tenants because of it.
    paired = [
        (check, d.tenants)
        for check in ("SHARE-001", "SHARE-003", "SHARE-006", "SHARE-007")
        for d in run(check, inputs)
        if {"studio", "lab"} <= set(d.tenants)
    ]
    assert paired == []


def test_the_same_pod_under_runc_time_slices_the_other_tenants_gpu():
    """The control: nothing but the handler differs."""
    inputs = _inputs(runtime_class("runc-class", "runc"), _probe("runc-class"))
    (draft,) = run("POD-011", inputs)
    (entry,) = draft.evidence["pods"]
    (container_entry,) = entry["containers"]
    assert container_entry["honoured_here"] == "yes"
    (share,) = run("SHARE-001", inputs)
    assert set(share.tenants) == {"studio", "lab"}


def test_a_class_named_like_kata_whose_handler_is_runc_is_judged_as_runc():
    """The RuntimeClass object's handler wins over the class's name."""
    inputs = _inputs(runtime_class("kata-fast", "runc"), _probe("kata-fast"))
    assert len(run("POD-011", inputs)) == 1


def test_the_sync_history_counts_no_kata_pod_as_holding_every_gpu():
    """LEAK-001's holder record (inventory.env_holds) reads the variable the same way."""
    inputs = _inputs(
        runtime_class("kata-qemu-nvidia-gpu", "kata-qemu-nvidia-gpu"),
        _probe("kata-qemu-nvidia-gpu"),
        pod("studio", "runc-probe", container("probe", env=[{"name": NVD, "value": "all"}])),
    )
    snapshot = inputs.snapshot
    (farm,) = snapshot.nodes
    access = inventory_envvar_access(
        farm,
        snapshot.pods,
        snapshot.sharing_configs,
        snapshot.gpu_operator_policies,
        tenant_claimed=inputs.tenant_claimed,
    )
    holders = every_gpu_holders(
        snapshot.pods, access, {}, platform=frozenset(), claimed=frozenset()
    )
    assert holders == {"studio"}


@pytest.mark.parametrize(
    ("runtime_class_name", "handler", "in_vm"),
    [
        ("kata-qemu-nvidia-gpu-snp", "kata-qemu-nvidia-gpu-snp", True),
        ("kata-clh", None, True),  # no object: the class's name stands for its handler
        ("gvisor", "runsc", False),  # a sandbox, not a VM: judged as before
        ("nvidia", "nvidia", False),
        ("kata-look-alike", "runc", False),
        (None, None, False),
    ],
)
def test_which_pods_run_in_a_guest_vm(runtime_class_name, handler, in_vm):
    found = vm_runtime(Pod("ns", "p", runtime_class=runtime_class_name, runtime_handler=handler))
    assert bool(found) is in_vm
    if in_vm:
        assert f"RuntimeClass {runtime_class_name}" in found
