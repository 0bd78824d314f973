"""What a LEAK-001 from sync history says of the devices that passed (inventory.holdings): the
node's whole GPUs by count, its GPU instances of one MIG profile by count, or one DRA device by
name; why the handover is certain, and which reset would have attested it. PURE."""

from __future__ import annotations

from inventory.holdings import GPU_PREFIX, MIG_PREFIX, SAME_UID, WHOLE, HoldingHandover

# How sync history counts holds, and what it leaves out on purpose (every finding says it).
COUNTED = (
    "devices a tenant holds alone: whole GPUs (nvidia.com/gpu, a VM's passthrough GPUs, and "
    "every GPU of the node for a pod whose NVIDIA_VISIBLE_DEVICES=all the node honours), MIG "
    "GPU instances of their own, and DRA devices one claim holds; time-sliced, MPS-shared and "
    "fractional GPUs are left out: LEAK-001 judges consecutive exclusive tenants, and tenants "
    "on one shared GPU at once are the sharing checks' (SHARE-*)"
)
MIG_RESET = "a GPU reset needs every MIG instance destroyed and clears them all"


def device_of(h: HoldingHandover) -> str:
    """The devices as a title names them: by count, as many as surely passed."""
    name, parent = h.devices.name, h.devices.gpu_uuid
    if name == WHOLE:
        return "A GPU" if h.passed == 1 else f"{h.passed} GPUs"
    if name.startswith(MIG_PREFIX):
        profile = name.removeprefix(MIG_PREFIX)
        if h.passed == 1:
            return f"A MIG GPU instance ({profile})"
        return f"{h.passed} MIG GPU instances ({profile})"
    if name.startswith(GPU_PREFIX):
        return f"GPU {name}"
    if parent:
        return f"MIG device {name} of GPU {parent}"
    return f"DRA device {name.removeprefix('dra:')}"


def device_evidence(h: HoldingHandover, previous: str, next_: str) -> dict[str, object]:
    """The evidence fields that depend on which devices passed."""
    name, gpu = h.devices.name, h.devices.gpu_uuid
    if name == WHOLE:
        return {
            "devices": "the node's whole GPUs, by count",
            "why": _counted_why(h, previous, next_, "GPUs", "GPUs"),
            "looked_for": f"a reset attestation of this node, or of {h.passed} or more of its "
            "GPUs, between the two syncs",
        }
    if name.startswith(MIG_PREFIX):
        resets = -(-h.passed // max(1, h.devices.per_gpu))
        return {
            "devices": f"the node's GPU instances of MIG profile {name}, by count",
            "mig_resource": name,
            "why": _counted_why(h, previous, next_, f"{name} GPU instances", "instances")
            + "; MIG clears no instance's memory between one user and the next",
            "looked_for": f"a reset attestation of this node, or of {resets} or more of its "
            f"GPUs ({MIG_RESET}), between the two syncs",
        }
    found: dict[str, object] = {"devices": f"DRA device {name}", "dra_device": name}
    if gpu:
        found["gpu_uuid"] = gpu
    if gpu and gpu != name:
        found["mig_device"] = name
    found["why"] = (
        f"{previous} held {name} alone (last seen on it by the sync of previous_end), "
        f"{next_} holds it since the sync of next_start: the device is named (a claim's "
        "allocation, or a pod reaching every GPU of the node), so it passed from "
        f"{previous} to {next_}; when between the two syncs, sync history cannot tell (no "
        "telemetry shows it)"
    )
    if not gpu:
        found["looked_for"] = (
            "a reset attestation of this node, or of one of its GPUs, between the two syncs"
        )
    elif gpu == name:
        found["looked_for"] = (
            f"a reset attestation of GPU {gpu} or of this node between the two syncs"
        )
    else:
        found["looked_for"] = (
            f"a reset attestation of GPU {gpu} (its parent; {MIG_RESET}) or of this node "
            "between the two syncs"
        )
    return found


def _counted_why(h: HoldingHandover, previous: str, next_: str, what: str, short: str) -> str:
    k, m, n = h.previous_gpus, h.next_gpus, h.gpu_count
    return (
        f"{previous} held {k} of the node's {n} {what} (last seen on it by the sync of "
        f"previous_end), {next_} holds {m} since the sync of next_start: {k} + {m} > {n}, so "
        f"at least {h.passed} of {previous}'s {short} passed to {next_} whatever other tenants "
        "held; "
        "which ones, and when between the two syncs, sync history cannot tell (no telemetry "
        "shows it)"
    )


def node_identity(h: HoldingHandover) -> str:
    """Whether both syncs saw one machine under the node's name (a name a cloud autoscaler or
    Karpenter gives a new VM is another machine: no handover is recorded across it)."""
    if h.node_identity == SAME_UID:
        return "one machine: the node's Node object (metadata.uid) was the same at both syncs"
    return (
        "not compared: the node's metadata.uid is not known at both syncs (a holding recorded "
        "before uids were kept, or a snapshot without them) and its creationTimestamp does not "
        "show a machine created since; the name is taken for one machine"
    )
