"""Bottlerocket GPU nodes: what their OS image carries and how a fix reaches them. PURE.

Bottlerocket's nvidia variants (osImage "Bottlerocket OS 1.26.2 (aws-k8s-1.31-nvidia)") carry
the NVIDIA driver, the container toolkit and the device plugin (a host service, no pod) in the
OS image. None of them is upgraded on its own: a newer Bottlerocket release of the variant
moves them together, by whatever launches the nodes (a Karpenter EC2NodeClass, an EKS node
group's AMI release, or Bottlerocket's update operator). Never an EKS-optimized AMI, which is
another OS.
"""

from __future__ import annotations

from collections.abc import Mapping

BOTTLEROCKET_PLUGIN = "Bottlerocket's nvidia variant runs the device plugin as a host service"


def bottlerocket(os_image: str | None) -> bool:
    return "bottlerocket" in (os_image or "").lower()


def bottlerocket_nvidia(os_image: str | None) -> bool:
    """An nvidia variant (aws-k8s-1.31-nvidia): its image runs NVIDIA's device plugin."""
    return bottlerocket(os_image) and "-nvidia" in (os_image or "").lower()


def bottlerocket_plugin_host(os_image: str | None) -> str:
    """Where the device plugin of a Bottlerocket nvidia variant is, for the node's inventory:
    a host service no pod shows and whose version no label or image tag gives."""
    return (
        f"{BOTTLEROCKET_PLUGIN} of its OS image ({os_image}), no pod: its version follows the "
        "Bottlerocket release, which does not state it"
    )


def bottlerocket_how(labels: Mapping[str, str], what: str) -> str:
    """How a Bottlerocket node gets a fixed driver, toolkit or device plugin (`what`): a newer
    release of its nvidia variant, through whatever launches the nodes."""
    fixed = f"a Bottlerocket release whose nvidia variant carries the fixed {what}"
    if any(k.startswith(("karpenter.k8s.aws/", "karpenter.sh/")) for k in labels):
        return (
            f"move the Karpenter EC2NodeClass's amiSelectorTerms to {fixed} (alias "
            "`bottlerocket@v<version>`); Karpenter replaces the drifted nodes"
        )
    if any(k.startswith("eks.amazonaws.com/") for k in labels):
        return (
            f"update the node group to {fixed} (its Bottlerocket AMI release version: aws eks "
            "update-nodegroup-version --release-version), or let Bottlerocket's update operator "
            "move the nodes"
        )
    return (
        f"update the nodes to {fixed} (Bottlerocket's update operator, or apiclient update on "
        "each node): the OS image carries it"
    )
