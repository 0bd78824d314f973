"""Tenant containers whose NVIDIA_VISIBLE_DEVICES may reach a busy GPU, for ATTR-001 (its
per-GPU findings, posture.rules.attr.hijack, and its per-node ones judged by count,
posture.rules.attr.hijack_count)."""

from __future__ import annotations

from typing import Any

from posture.inputs import PostureInputs
from posture.rules.common import nodes_by_name, pod_ref
from posture.rules.env_holdings import env_accesses


def env_reach(
    inputs: PostureInputs, hostname: str, uuid: str, gi_id: str = ""
) -> list[dict[str, Any]]:
    """Tenant containers whose NVIDIA_VISIBLE_DEVICES reaches the busy GPU, where the node
    honours it or may (posture.rules.env_holdings): `all`, its UUID, or an index we cannot
    tell from it. A telemetry GPU named by index only is matched by any index. A busy MIG
    instance (`gi_id`) may be any MIG UUID the variable names: DCGM reports instances by their
    parent's UUID and GPU_I_ID only, so those are `which_instance: unknown`."""
    node = nodes_by_name(inputs).get(hostname)
    if node is None:
        return []
    found = []
    for access in env_accesses(inputs, node):
        if access.honoured is False or access.devices == ():
            continue
        mig = bool(gi_id) and any(d.startswith("MIG-") for d in access.devices or ())
        certain = access.every_device or access.devices is None or _may_be(uuid, access.devices)
        if not (certain or mig):
            continue
        found.append(
            {
                "pod": pod_ref(access.pod),
                "tenant": access.tenant.slug,
                "container": access.container.name,
                "value": access.found.get("value"),
                "field": access.found["field"],
                "node_honours_it": "yes" if access.honoured else "unverified",
                **({} if certain else {"which_instance": "unknown"}),
            }
        )
    return found


def _may_be(uuid: str, devices: tuple[str, ...]) -> bool:
    """Whether a device list may name the GPU: its UUID, or an index whose UUID is unknown."""
    return uuid in devices or any(d.startswith("gpu-index:") for d in devices)
