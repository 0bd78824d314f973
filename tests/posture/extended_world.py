"""KEP-5004 (Kubernetes 1.34+): a DeviceClass serves the extended resource `nvidia.com/gpu`
(spec.extendedResourceName), so a pod asking `nvidia.com/gpu: 1` on a node with no such
capacity gets a ResourceClaim the scheduler makes for it, named in the pod's
status.extendedResourceClaimStatus. Objects as `kubectl get -o json` prints them."""

from __future__ import annotations

from typing import Any

from tests.posture.dra_world import claim, device_class, dra_pod, resource_slice
from tests.posture.gpu_access_world import container, namespace, node, pod

EXT_CLAIM = "ext-0-extended-resources-4k2pd"


def extended_pod(
    ns: str, name: str, claim_name: str | None, *, sidecar_gpu: bool = False
) -> dict[str, Any]:
    """A pod asking nvidia.com/gpu in its `main` container; `claim_name` is the claim its
    status names for that request (None: no status names one). `sidecar_gpu` adds a `side`
    container asking one too that the status does not map."""
    containers = [container(gpu={"nvidia.com/gpu": "1"})]
    if sidecar_gpu:
        containers.append(container("side", gpu={"nvidia.com/gpu": "1"}))
    item = pod(ns, name, *containers)
    if claim_name:
        item["status"]["extendedResourceClaimStatus"] = {
            "resourceClaimName": claim_name,
            "requestMappings": [
                {
                    "containerName": "main",
                    "resourceName": "nvidia.com/gpu",
                    "requestName": "container-0-request-0",
                }
            ],
        }
    return item


def generated_claim(ns: str, pod_name: str, name: str, device: str) -> dict[str, Any]:
    """The claim the scheduler made for the pod, owned by it and reserved for it."""
    made = claim(ns, name, [device], reserved_for=[pod_name], owner_pod=pod_name)
    made["metadata"]["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
    return made


def extended_cluster(*, status: bool = True) -> list[dict[str, Any]]:
    """alpha holds gpu-0 by its own claim; beta's ext-0 holds gpu-0 too, through the claim made
    for its nvidia.com/gpu request. The node lists no nvidia.com/gpu capacity (DRA only)."""
    return [
        namespace("alpha"),
        namespace("beta"),
        node("gpu-a", gpus=4),
        device_class(extendedResourceName="nvidia.com/gpu"),
        resource_slice("gpu-a"),
        claim("alpha", "train-gpu", ["gpu-0"], reserved_for=["train-0"]),
        dra_pod("alpha", "train-0", "train-gpu"),
        generated_claim("beta", "ext-0", EXT_CLAIM, "gpu-0"),
        extended_pod("beta", "ext-0", EXT_CLAIM if status else None),
    ]
