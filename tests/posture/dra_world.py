"""DRA objects as `kubectl get -o json` prints them (resource.k8s.io/v1, the schema of the
pinned kubernetes client; v1beta1 where a test says so), spelled as the NVIDIA DRA driver
(gpu.nvidia.com) publishes its devices and reads its opaque GpuConfig."""

from __future__ import annotations

from typing import Any

from tests.posture.gpu_access_world import UUIDS, container

DRIVER = "gpu.nvidia.com"
GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
V1 = "resource.k8s.io/v1"


def device_class(name: str = GPU_CLASS, kind: str = "gpu", **spec: Any) -> dict[str, Any]:
    """A DeviceClass as the NVIDIA DRA driver's Helm chart installs it."""
    expression = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{kind}'"
    return {
        "apiVersion": V1,
        "kind": "DeviceClass",
        "metadata": {"name": name, "uid": f"dc-{name}", "resourceVersion": "1043"},
        "spec": {"selectors": [{"cel": {"expression": expression}}], **spec},
    }


def gpu_device(index: int, product: str = "NVIDIA H100 80GB HBM3") -> dict[str, Any]:
    return {
        "name": f"gpu-{index}",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": UUIDS[index]},
            "index": {"int": index},
            "minor": {"int": index},
            "productName": {"string": product},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": "Hopper"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "driverVersion": {"version": "570.133.20"},
            "cudaDriverVersion": {"version": "12.8.0"},
        },
        "capacity": {"memory": {"value": "81559Mi"}},
    }


def mig_device(parent: int, profile: str, uuid: str) -> dict[str, Any]:
    return {
        "name": f"gpu-{parent}-mig-{profile}-0",
        "attributes": {
            "type": {"string": "mig"},
            "uuid": {"string": uuid},
            "parentUUID": {"string": UUIDS[parent]},
            "parentIndex": {"int": parent},
            "profile": {"string": profile},
            "productName": {"string": "NVIDIA A100-SXM4-40GB"},
        },
        "capacity": {"multiprocessors": {"value": "14"}, "memory": {"value": "4864Mi"}},
    }


def resource_slice(node: str = "gpu-a", devices: list[dict] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": V1,
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{node}-{DRIVER}-x8k2n",
            "generateName": f"{node}-{DRIVER}-",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": "n1"}],
        },
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices if devices is not None else [gpu_device(i) for i in range(4)],
        },
    }


def gpu_config(strategy: str | None, kind: str = "GpuConfig") -> dict[str, Any]:
    """The NVIDIA driver's opaque config; `strategy` TimeSlicing or MPS, None for none."""
    parameters: dict[str, Any] = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": kind}
    if strategy == "TimeSlicing":
        parameters["sharing"] = {"strategy": strategy, "timeSlicingConfig": {"interval": "Long"}}
    elif strategy == "MPS":
        parameters["sharing"] = {
            "strategy": strategy,
            "mpsConfig": {"defaultActiveThreadPercentage": 50},
        }
    return {"opaque": {"driver": DRIVER, "parameters": parameters}}


def claim(
    ns: str,
    name: str,
    devices: list[str] | None,
    *,
    device_class_name: str = GPU_CLASS,
    sharing: str | None = None,
    admin: bool = False,
    reserved_for: list[str] = (),
    node: str = "gpu-a",
    owner_pod: str | None = None,
) -> dict[str, Any]:
    """A v1 ResourceClaim; `devices` allocated (None: not allocated yet)."""
    exactly: dict[str, Any] = {"deviceClassName": device_class_name, "allocationMode": "ExactCount"}
    exactly |= {"count": 1} if not admin else {"adminAccess": True}
    config = [{"requests": ["gpu"], **gpu_config(sharing)}] if sharing else []
    metadata: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{name}"}
    if owner_pod:
        metadata["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": owner_pod, "uid": "p1", "controller": True}
        ]
        metadata["annotations"] = {"resource.kubernetes.io/pod-claim-name": "gpu"}
    obj: dict[str, Any] = {
        "apiVersion": V1,
        "kind": "ResourceClaim",
        "metadata": metadata,
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}], "config": config}},
        "status": {},
    }
    if devices is not None:
        results = [
            {"request": "gpu", "driver": DRIVER, "pool": node, "device": d}
            | ({"adminAccess": True} if admin else {})
            for d in devices
        ]
        allocated_config = [{"source": "FromClaim", **c} for c in config]
        obj["status"] = {
            "allocation": {
                "devices": {"results": results, "config": allocated_config},
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [
                {"resource": "pods", "name": p, "uid": f"uid-{p}"} for p in reserved_for
            ],
        }
    return obj


def claim_template(ns: str, name: str, *, admin: bool = False) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": GPU_CLASS}
    exactly |= {"adminAccess": True} if admin else {"count": 1}
    return {
        "apiVersion": V1,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
    }


def dra_pod(
    ns: str,
    name: str,
    claim_name: str | None = None,
    *,
    template: str | None = None,
    generated: str | None = None,
    node_name: str = "gpu-a",
) -> dict[str, Any]:
    """A pod using a claim by name, or a template (with the claim generated for it)."""
    entry: dict[str, Any] = {"name": "gpu"}
    entry |= {"resourceClaimName": claim_name} if claim_name else {}
    entry |= {"resourceClaimTemplateName": template} if template else {}
    main = container(resources={"claims": [{"name": "gpu"}]})
    status: dict[str, Any] = {"phase": "Running"}
    if generated:
        status["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": generated}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
        "spec": {"nodeName": node_name, "containers": [main], "resourceClaims": [entry]},
        "status": status,
    }
