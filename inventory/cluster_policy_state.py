"""What the GPU Operator's ClusterPolicies state about each component it can deploy: whether it
deploys it, the version it asks for, and whether it rolls the driver out itself. PURE.

A policy's `spec` holds what inventory.sources.gpu_operator read (its GpuOperatorSpec fields).
Where several readable ClusterPolicies disagree, the Operator acts on one of them only and the
snapshot does not say which: nothing is stated then (inventory.stack_managers says unknown).
"""

from __future__ import annotations

from collections.abc import Sequence

from inventory.snapshot import GpuOperatorPolicy

# The GpuOperatorSpec field that says whether the Operator deploys each component.
ENABLED_FIELDS = {
    "driver": "driver_enabled",
    "container_toolkit": "toolkit_enabled",
    "device_plugin": "device_plugin_enabled",
    "dcgm_exporter": "dcgm_exporter_enabled",
    "mig_manager": "mig_manager_enabled",
    "vgpu_manager": "vgpu_manager_enabled",  # the driver of a vm-vgpu node (stack_managers)
}


def policy_enabled(policies: Sequence[GpuOperatorPolicy]) -> dict[str, bool | None] | None:
    """component -> `enabled` as the ClusterPolicy states it (None: unstated, the Operator's
    default, on); None when no readable ClusterPolicy exists, or several disagree (the
    Operator acts on one of them only, and the snapshot does not say which). A policy's `spec`
    holds what inventory.sources.gpu_operator read (its GpuOperatorSpec fields)."""
    found = [
        {component: _flag(p.spec.get(field)) for component, field in ENABLED_FIELDS.items()}
        for p in policies
        if not p.error
    ]
    if not found or any(f != found[0] for f in found):
        return None
    return found[0]


# The GpuOperatorSpec field holding the version the ClusterPolicy sets for each component.
VERSION_FIELDS = {
    "driver": "driver_version",
    "container_toolkit": "toolkit_version",
    "device_plugin": "device_plugin_version",
    "dcgm_exporter": "dcgm_exporter_version",
    "mig_manager": "mig_manager_version",
}


def policy_versions(policies: Sequence[GpuOperatorPolicy]) -> dict[str, str]:
    """component -> the version the one readable ClusterPolicy asks for ({} where none is
    readable or several disagree). The driver's only where the policy was read for whether
    NVIDIADriver objects set it instead, and they do not. `dcgm_tag` is the exporter's tag."""
    found = []
    for p in policies:
        if p.error:
            continue
        asked = {c: p.spec.get(f) for c, f in VERSION_FIELDS.items()}
        if "driver_use_crd" not in p.spec or p.spec.get("driver_use_crd") is True:
            asked["driver"] = None
        if p.spec.get("driver_use_precompiled") is True:
            asked["driver"] = None  # a precompiled driver's version names its branch only
        asked["dcgm_tag"] = asked["dcgm_exporter"]
        found.append({c: str(v) for c, v in asked.items() if isinstance(v, str) and v})
    if not found or any(f != found[0] for f in found):
        return {}
    return found[0]


def policy_auto_upgrade(policies: Sequence[GpuOperatorPolicy]) -> bool | None:
    """driver.upgradePolicy.autoUpgrade, where every readable ClusterPolicy states the same."""
    found = {_flag(p.spec.get("driver_auto_upgrade")) for p in policies if not p.error}
    return found.pop() if len(found) == 1 else None


def _flag(value: object) -> bool | None:
    return value if isinstance(value, bool) else None
