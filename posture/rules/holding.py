"""One pod's hold on GPUs of a node: what every sharing check reads (posture.rules.common
gathers them per node from each way a GPU reaches a pod)."""

from __future__ import annotations

from dataclasses import dataclass

from inventory.snapshot import Pod
from posture.inputs import TenantInfo

# Device identities are GPU or MIG UUIDs ("GPU-...", "MIG-..."), or a scheduler's own name for
# a device ("kai-group:<group>"): only identities of one kind can tell two holdings apart.
UUID_PREFIXES = ("GPU-", "MIG-")
# The resource name of a hold through NVIDIA_VISIBLE_DEVICES outside the scheduler
# (posture.rules.env_holdings): no resource is requested, the variable is the hold.
ENV_RESOURCE = "env:NVIDIA_VISIBLE_DEVICES"
EVERY_GPU = "every GPU of the node"  # what `all` reaches, as evidence says it


@dataclass(frozen=True)
class GpuHolding:
    """One pod's hold on one GPU resource of a node, and how that resource is shared."""

    pod: Pod
    tenant: TenantInfo | None  # None: a platform pod
    resource: str  # as the pod asks for it ("nvidia.com/gpu.shared", "gpu-fraction")
    pool: str  # the physical pool it draws from ("nvidia.com/gpu")
    count: int
    mode: str  # DESIGN §2 sharing mode, or "unknown" (the MIG layout is not known)
    # The physical devices it holds, where the scheduler says (a KAI reservation, HAMi's
    # allocation); None: any device of the pool.
    devices: tuple[str, ...] | None = None
    basis: str = ""  # why this mode, when not the node's plain sharing strategy
    # NVIDIA_VISIBLE_DEVICES=all: every GPU of the node, whoever else holds one.
    every_device: bool = False
    # The workload behind an env access ("Deployment ns/name"): the one change that ends it
    # is to that workload (POD-011's action), whomever it time-shares with.
    workload: str = ""
    # The DeviceClass a DRA claim's device was allocated from ("gpu.nvidia.com"): a DRA
    # holding's pool is the internal key "nvidia.com/gpu", which titles must not show as a
    # resource the cluster advertises (posture.rules.share.dra_names).
    device_class: str = ""
    # The mode the holder chose, where another's reach forces `mode` on it (a DRA claim whose
    # device another tenant's adminAccess claim reaches is time-shared by it): the mode an
    # approval of the holder's would cover, so SHARE-004 asks the reacher, not the reached.
    # "": `mode` is the holder's own.
    own_mode: str = ""

    @property
    def chosen_mode(self) -> str:
        """The mode the holder shares by of its own doing (own_mode, else mode)."""
        return self.own_mode or self.mode

    @property
    def through_env(self) -> bool:
        """Held through NVIDIA_VISIBLE_DEVICES, not allocated by any scheduler."""
        return self.resource == ENV_RESOURCE


def device_kind(device: str) -> str:
    """ "uuid" for a GPU or MIG UUID, else the scheduler prefix ("kai-group")."""
    if device.startswith(UUID_PREFIXES):
        return "uuid"
    return device.partition(":")[0]
