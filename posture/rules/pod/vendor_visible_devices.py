"""POD-011 on other vendors' nodes: GPU access outside the scheduler through the visible-devices
variable of a vendor runtime modelled on NVIDIA's (DESIGN §2). PURE.

Two runtimes inject the devices a container's environment names, as the NVIDIA Container Toolkit
does with NVIDIA_VISIBLE_DEVICES:
- Intel Gaudi's habana-container-runtime (containerd's default runtime in Intel's Gaudi install
  guide) mounts the Gaudis HABANA_VISIBLE_DEVICES names;
- AMD's Container Toolkit (amd-container-runtime) mounts the GPUs AMD_VISIBLE_DEVICES names,
  where it is the node's default runtime (or the pod's RuntimeClass).
gpuposture reads neither runtime's configuration, so on a node holding that vendor's devices a
container setting the variable without requesting one is reported with the access unverified
(high, as an unverified NVIDIA node is). A node without the vendor's devices gives the variable
nothing to reach: never reported there. ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES only narrow
the devices a container already has (/dev/kfd and /dev/dri come from the device plugin): they
grant nothing and are not read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inventory.env_seal import SEALED_VALUE
from inventory.snapshot import Container, EnvConfigMap, Node, Pod
from posture.rules.common import container_path
from posture.rules.pod.container_findings import ContainerHit

# Values that hand over no device (as NVIDIA_VISIBLE_DEVICES' "void" and "none").
OFF = ("", "void", "none")


@dataclass(frozen=True)
class VendorVariable:
    variable: str
    vendor: str
    resource_prefix: str  # the vendor's device-plugin resources
    runtime: str
    why: str


VENDOR_VARIABLES = (
    VendorVariable(
        "HABANA_VISIBLE_DEVICES",
        "Intel Gaudi",
        "habana.ai/",
        "habana-container-runtime",
        "habana-container-runtime (containerd's default runtime in Intel's Gaudi install "
        "guide) mounts the Gaudis HABANA_VISIBLE_DEVICES names into any container that sets "
        "it; gpuposture does not read the node's runtime configuration",
    ),
    VendorVariable(
        "AMD_VISIBLE_DEVICES",
        "AMD",
        "amd.com/",
        "amd-container-runtime",
        "AMD's Container Toolkit (amd-container-runtime) mounts the GPUs AMD_VISIBLE_DEVICES "
        "names into the container where it is the node's default runtime or the pod's "
        "RuntimeClass; gpuposture does not read the node's runtime configuration",
    ),
)


def vendor_facts(node: Node) -> dict[str, Any]:
    """The pod's entry in `pods` on a node of another vendor's devices."""
    return {"node_accelerators": dict(node.accelerator_resources)}


def vendor_hits(
    node: Node,
    pod: Pod,
    containers: Iterable[Container],
    configmaps: Mapping[tuple[str, str], EnvConfigMap],
) -> list[ContainerHit]:
    """The containers of `pod` that set the visible-devices variable of a vendor whose devices
    `node` holds, without requesting one of that vendor's devices."""
    vendors = [v for v in VENDOR_VARIABLES if _holds(node, v.resource_prefix)]
    hits = []
    for container in containers if vendors else ():
        for vendor in vendors:
            if _asks(container, vendor.resource_prefix):
                continue  # the device plugin's allocation (not judged here)
            found = _read(container, vendor.variable, pod.namespace, configmaps)
            if found is None:
                continue
            hits.append(_hit(pod, container, vendor, found))
            break  # one entry per container
    return hits


def _hit(
    pod: Pod, container: Container, vendor: VendorVariable, found: dict[str, Any]
) -> ContainerHit:
    path = container_path(pod, container)
    evidence = {
        "container": container.name,
        "init_container": container.init,
        "image": container.image,
        "variable": vendor.variable,
        **found,
        "field": f"{path}.{found['field']}",
        "gpu_requests": {},
        "gpu_limits": {},
    }
    facts = {
        "vendor": vendor.vendor,
        "honoured_here": "unverified",
        "honoured_because": vendor.why,
    }
    note = f"; honoured where {vendor.runtime} runs the node's containers (unverified)"
    return ContainerHit(container, evidence, "high", facts, note)


def _holds(node: Node, prefix: str) -> bool:
    return any(name.startswith(prefix) for name in node.accelerator_resources)


def _asks(container: Container, prefix: str) -> bool:
    return any(
        name.startswith(prefix) and str(qty).strip() not in ("0", "")
        for name, qty in container.accelerators.items()
    )


def _read(
    container: Container,
    variable: str,
    namespace: str,
    configmaps: Mapping[tuple[str, str], EnvConfigMap],
) -> dict[str, Any] | None:
    """Where the container's `variable` comes from and what it is (None: unset or off). The
    last `env` entry of the name wins over `envFrom`; a value the sync did not keep (a Secret,
    a ConfigMap's value, a literal sealed before the variable was read) counts as set."""
    explicit = [(i, var) for i, var in enumerate(container.env) if var.name == variable]
    if explicit:
        index, var = explicit[-1]
        value = None if var.value == SEALED_VALUE else var.value
        if value is not None and value.strip().lower() in OFF:
            return None
        read = "literal" if value is not None else f"unknown: from {var.value_from or 'a'}"
        if var.value == SEALED_VALUE:
            read = "unknown: the literal was stored sealed (synced before it was read)"
        return {
            "field": f"env[{index}]",
            "value": value,
            "value_from": var.value_from,
            "value_read": read,
        }
    for index, (kind, name, prefix) in reversed(list(enumerate(container.env_from_sources()))):
        configmap = configmaps.get((namespace, name))
        key = variable[len(prefix) :] if variable.startswith(prefix) else None
        if kind == "configMapRef" and configmap is not None and key in configmap.keys:
            return {
                "field": f"envFrom[{index}]",
                "value": None,
                "value_from": "envFrom configMapRef",
                "value_read": f"unknown: ConfigMap {namespace}/{name} key {key} (value not kept)",
            }
    return None
