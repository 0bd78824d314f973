"""Why a node component's version was not read, and which input would tell: the reason a
bulletin fix that concerns it is recorded with (PatchStatus.unread), which a VEX states as
`under_investigation` (inventory.bulletins.vex.statements). PURE.

A component known not installed is not here (it is "not affected, component not present");
only one the node runs, or may run, whose version is unknown."""

from __future__ import annotations

VERSION_NOT_READ = "version_not_read"  # the reason code
HOST_ONLY = (
    "nvidia-smi -q -x does not show it, and the Kubernetes API does not list this node: a "
    "sync of the cluster that lists the node would tell"
)
_SMI = "importing `nvidia-smi -q -x` for the node (manage.py import_nvidia_smi)"
WOULD_TELL = {
    "driver": (
        f"{_SMI}, or GPU Feature Discovery's nvidia.com/cuda.driver-version.full label, would tell"
    ),
    "firmware": f"the Kubernetes API never shows the VBIOS: {_SMI} would tell",
    "container_toolkit": (
        "the toolkit's pod on the node, with a version-tagged image, would tell; a toolkit the "
        "node image carries has the version that image release ships (its release notes name it)"
    ),
}
PODS = (
    "a pod of it on the node with a version-tagged image (not `latest` or a bare digest) would tell"
)


def why_not_read(
    kind: str, raw: str | None, *, host_only: bool, gpu_model: str | None, model: str | None
) -> str:
    """`raw`: what was read, where it is not a version; `model`: the GPU model a firmware fix
    names."""
    if host_only:
        return HOST_ONLY
    if kind == "firmware" and gpu_model is None:
        return (
            f"nor its GPU model, and the bulletin names firmware for {model or 'a GPU model'}: "
            f"{_SMI} would tell both"
        )
    said = f"it reads {raw!r}, which no bulletin range can be compared with; " if raw else ""
    return said + WOULD_TELL.get(kind, PODS)
