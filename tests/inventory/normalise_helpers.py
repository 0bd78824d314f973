"""Builders shared by the normalise() tests: raw Kubernetes objects, as a live API gives them."""

from __future__ import annotations

from typing import Any

from inventory.sources.normalise import normalise

# --- small builders for our own objects ------------------------------------------------------


def node(name: str, labels: dict[str, str] | None = None, **status: Any) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": status.pop("taints", [])},
        "status": {"capacity": status.pop("capacity", {}), **status},
    }


def pod(
    namespace: str,
    name: str,
    *containers: dict[str, Any],
    node_name: str | None = None,
    phase: str = "Running",
    **spec: Any,
) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node_name, "containers": list(containers), **spec},
        "status": {"phase": phase},
    }


def platform_namespace(name: str) -> dict[str, Any]:
    """A Namespace labelled the platform's: only its pods give a node its GPU stack."""
    labels = {"gpuposture.io/platform": "true"}
    return {"kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def ctr(name: str, image: str = "registry.example.com/ml/trainer:2.1", **fields: Any) -> dict:
    return {"name": name, "image": image, **fields}


def configmap(namespace: str, name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def controller(kind: str, namespace: str, name: str, image: str, **meta: Any) -> dict:
    return {
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": {"template": {"spec": {"containers": [{"name": name, "image": image}]}}},
    }


# The platform namespace of these tests' GPU Operator, named as GPUPOSTURE_PLATFORM_NAMESPACES
# would name it: most of them have no operator Deployment that would show it (only ConfigMaps
# in platform namespaces can be GPU configuration, tenants.mapping.platform_namespaces).
PLATFORM = {"configured_platform": ("gpu-operator",)}


def only_node(objects: list[dict[str, Any]]):
    (result,) = normalise(objects, **PLATFORM).nodes
    return result


def with_config_volumes(obj: dict[str, Any], *configmaps: str) -> dict[str, Any]:
    """A controller whose pods mount these ConfigMaps (as the device plugin mounts its config)."""
    volumes = [{"name": name, "configMap": {"name": name}} for name in configmaps]
    obj["spec"]["template"]["spec"]["volumes"] = volumes
    return obj


# Time-slicing 4 replicas of each GPU with no failRequestsGreaterThanOne: what SHARE-005 fires on.
TIME_SLICING_LOOSE = """\
version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""

TIME_SLICING = """\
version: v1
sharing:
  timeSlicing:
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
    - name: nvidia.com/mig-1g.10gb
      replicas: 2
"""
