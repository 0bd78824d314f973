"""STACK-001 for the vGPU Manager on a vGPU guest's hypervisor (inventory.patching.hypervisor).

The vGPU Manager is the boundary between the VMs that share a GPU: its flaws include
guest-to-host escapes and leaks across VMs. A guest whose GFD labels show a Manager below the
bulletin baseline of its branch is exposed through it, whatever its own driver is, so it gets a
finding of its own beside the guest driver's (key `STACK-001 hypervisor`): the fix is made on
the hypervisor, outside the cluster, so no upgrade of the guest's pool closes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from inventory.patching.hypervisor import READ_FROM
from inventory.patching.status import BELOW_BASELINE
from inventory.patching.targets import target
from inventory.snapshot import Node
from posture.inputs import PostureInputs
from posture.rules.common import sorted_nodes, tenants_on_node
from posture.rules.registry import FindingDraft
from posture.rules.subjects import bulletin_draft

KEY = "STACK-001 hypervisor"
# The evidence's `where_to_fix`: posture.actions makes it an action of its own.
WHERE_TO_FIX = "the hypervisor (outside the cluster)"


def hypervisor_drafts(
    inputs: PostureInputs, severity_of: Callable[[list[dict]], str]
) -> Iterator[FindingDraft]:
    """One STACK-001 per guest whose hypervisor's vGPU Manager is below the baseline of its
    branch (`severity_of`: STACK-001's, from the exposures' CVSS); quiet where it is at or
    above it, unknown, or not labelled."""
    for node in sorted_nodes(inputs):
        record = (inputs.patch.get(node.name) or {}).get("hypervisor_manager")
        if not isinstance(record, dict) or record.get("status") != BELOW_BASELINE:
            continue
        exposures = [e for e in record.get("exposures") or () if isinstance(e, dict)]
        if exposures:
            yield _draft(inputs, node, record, exposures, severity_of(exposures))


def _draft(
    inputs: PostureInputs, node: Node, record: dict, exposures: list[dict], severity: str
) -> FindingDraft:
    version = str(record["version"])
    # The highest fixed version named, when it passes every closed range whose fixed version
    # is unknown (NVIDIA 5703's R535 row); else the bound to move past (inventory.patching.targets).
    moved = target(exposures)
    fixed_in = moved.version
    evidence = {
        "node": node.name,
        "host_driver": (
            f"the vGPU Manager {version} on the hypervisor that hosts {node.name}: NVIDIA's "
            "host driver of the VMs that share its GPU, as GPU Feature Discovery labels the "
            "guest; judged by the bulletins' Linux KVM vGPU Manager rows of its branch (NVIDIA "
            "numbers them alike for vSphere and Citrix Hypervisor). Not the guest's own driver"
        ),
        "vgpu_manager": version,
        "read_from": READ_FROM,
        "branch_label": record.get("branch_label"),
        "fixed_in": fixed_in,
        "fixed_past": str(moved.past) if moved.past else None,
        "where_to_fix": WHERE_TO_FIX,
        "advisories": sorted({str(e.get("advisory_id")) for e in exposures}),
        "cves": sorted({c for e in exposures for c in e.get("cves") or ()}),
        "exposures": exposures,
        # Also said of the judgement: a branch a later bulletin leaves out, say.
        "notes": list(record.get("notes") or ()),
    }
    baseline = f" ({fixed_in})" if fixed_in else ""
    title = (
        f"vGPU Manager {version} on the hypervisor of {node.name} below the bulletin "
        f"baseline{baseline}"
    )
    return bulletin_draft(
        "STACK-001",
        node,
        key=KEY,
        inputs=inputs,
        tenants=tenants_on_node(inputs, node.name),
        evidence=evidence,
        title=title,
        severity=severity,
    )
