"""What the NVIDIA DRA driver (gpu.nvidia.com) and its users add to the demo world: the
DeviceClass, the node's ResourceSlice, ResourceClaims (one time-sliced GPU shared by two
tenants, an adminAccess claim), a ResourceClaimTemplate and the pods using them.

Spelled as resource.k8s.io/v1 objects read back from the API (`kubectl get -o json`): the
allocation results, the config as allocated, the node selector, `reservedFor`, and the pods'
`resourceClaimStatuses`. Pure Python: no Django, no network.
"""

from __future__ import annotations

from dataclasses import dataclass

from demo import k8s_objects as k8s
from demo.k8s_base import Ids, Obj, meta, obj
from demo.telemetry import uuid_of

DRIVER = "gpu.nvidia.com"
API = "resource.k8s.io/v1"
ADMIN_LABEL = "resource.kubernetes.io/admin-access"
IMAGE = "registry.example.internal/{}@sha256:" + "4b1e9c0d7a2f6e35" * 4


@dataclass(frozen=True)
class Claim:
    """A claim of `ns` on GPU `index` of `node`, used by the bare pod `pod` (its app image)."""

    ns: str
    name: str
    node: str
    index: int
    pod: str
    image: str
    sharing: str | None = None  # the GpuConfig's sharing strategy: TimeSlicing or MPS
    admin: bool = False
    template: str | None = None  # generated for the pod from this ResourceClaimTemplate


def dra_objects(
    ids: Ids, node: str, gpus: int, model: str, claims: tuple[Claim, ...], tolerations: list[Obj]
) -> list[Obj]:
    """The class, the node's slice, each claim (and its template) and the pod using it."""
    items = [_device_class(ids), slice_of(ids, node, gpus, model)]
    for c in claims:
        if c.template:
            items.append(_template(ids, c))
        items += [_claim(ids, c), _pod(ids, c, tolerations)]
    return items


def _device_class(ids: Ids) -> Obj:
    expression = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'gpu'"
    spec = {"selectors": [{"cel": {"expression": expression}}]}
    return obj(API, "DeviceClass", meta(ids, "DeviceClass", DRIVER), spec=spec)


def slice_of(
    ids: Ids,
    node: str,
    gpus: int,
    model: str,
    *,
    driver: str = "570.133.20",
    architecture: str = "Hopper",
    compute: str = "9.0.0",
    memory: str = "81559Mi",
    cuda: str = "12.8.0",
) -> Obj:
    """The node's ResourceSlice: its GPUs as the kubelet plugin publishes them (NVML's product
    name, the driver version in semver)."""
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {
                "type": {"string": "gpu"},
                "uuid": {"string": uuid_of(node, i)},
                "index": {"int": i},
                "minor": {"int": i},
                "productName": {"string": model},
                "brand": {"string": "Nvidia"},
                "architecture": {"string": architecture},
                "cudaComputeCapability": {"version": compute},
                "driverVersion": {"version": driver},
                "cudaDriverVersion": {"version": cuda},
            },
            "capacity": {"memory": {"value": memory}},
        }
        for i in range(gpus)
    ]
    m = meta(ids, "ResourceSlice", f"{node}-{DRIVER}-{ids.suffix()}", owner=("v1", "Node", node))
    spec = {
        "driver": DRIVER,
        "nodeName": node,
        "devices": devices,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
    }
    return obj(API, "ResourceSlice", m, spec=spec)


def _requests(c: Claim) -> dict:
    exactly: Obj = {"deviceClassName": DRIVER, "allocationMode": "ExactCount", "count": 1}
    if c.admin:
        exactly["adminAccess"] = True
    config = []
    if c.sharing:
        sharing = {"strategy": c.sharing, "timeSlicingConfig": {"interval": "Long"}}
        parameters = {
            "apiVersion": "resource.nvidia.com/v1beta1",
            "kind": "GpuConfig",
            "sharing": sharing,
        }
        config = [{"requests": ["gpu"], "opaque": {"driver": DRIVER, "parameters": parameters}}]
    return {"requests": [{"name": "gpu", "exactly": exactly}], "config": config}


def _template(ids: Ids, c: Claim) -> Obj:
    m = meta(ids, "ResourceClaimTemplate", c.template or "", c.ns)
    return obj(API, "ResourceClaimTemplate", m, spec={"spec": {"devices": _requests(c)}})


def _claim(ids: Ids, c: Claim) -> Obj:
    owner = ("v1", "Pod", c.pod) if c.template else None
    m = meta(ids, "ResourceClaim", c.name, c.ns, owner=owner)
    if c.template:
        m["annotations"] = {"resource.kubernetes.io/pod-claim-name": "gpu"}
    requests = _requests(c)
    result: Obj = {"request": "gpu", "driver": DRIVER, "pool": c.node, "device": f"gpu-{c.index}"}
    if c.admin:
        result["adminAccess"] = True
    selector = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [c.node]}]}
        ]
    }
    allocation = {
        "devices": {
            "results": [result],
            "config": [{"source": "FromClaim", **entry} for entry in requests["config"]],
        },
        "nodeSelector": selector,
    }
    reserved = [{"resource": "pods", "name": c.pod, "uid": ids.uid(f"Pod/{c.ns}/{c.pod}")}]
    return obj(
        API,
        "ResourceClaim",
        m,
        spec={"devices": requests},
        status={"allocation": allocation, "reservedFor": reserved},
    )


def _pod(ids: Ids, c: Claim, tolerations: list[Obj]) -> Obj:
    ctr = k8s.container(
        c.pod, IMAGE.format(c.image), cpu="4", memory="32Gi", security=k8s.HARDENED_CONTAINER
    )
    ctr["resources"]["claims"] = [{"name": "gpu"}]
    pod = k8s.pod(
        ids,
        c.pod,
        c.ns,
        node=c.node,
        containers=[ctr],
        labels={"app": c.pod},
        tolerations=tolerations,
        pod_security=k8s.HARDENED_POD,
        restart_policy="Never",
    )
    entry = {"name": "gpu"}
    entry |= (
        {"resourceClaimTemplateName": c.template} if c.template else {"resourceClaimName": c.name}
    )
    pod["spec"]["resourceClaims"] = [entry]
    pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": c.name}]
    return pod
