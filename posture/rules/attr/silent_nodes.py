"""ATTR-003: a GPU node that sends no telemetry."""

from __future__ import annotations

from collections.abc import Iterator

from posture.inputs import PostureInputs
from posture.rules.common import tenants_on_node
from posture.rules.gke import gke_managed_exporter
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import node_draft, node_named

GKE_INGEST = (
    "ingest GKE's managed DCGM metrics: Google Cloud Managed Service for Prometheus scrapes this "
    "exporter (ClusterPodMonitoring gke-managed-dcgm-exporter); point `manage.py ingest_dcgm "
    "--prometheus` at its query API, or ingest the exporter's text"
)


@check(
    id="ATTR-003",
    title="GPU node sends no telemetry",
    severity="medium",
    scope="node",
    rationale="Without DCGM-Exporter samples from a GPU node, hijacking and idle allocation "
    "there go unseen, and its usage cannot be charged to anyone.",
    remediation="Check the dcgm-exporter pod on the node (GPU Operator: `dcgmExporter."
    "enabled`), its ServiceMonitor or scrape config, and that the node is not "
    "tainted against it. On GKE, where its managed exporter runs (the evidence's "
    "`gke_managed_exporter`), there is nothing to deploy: ingest its metrics (below).",
    mappings=("CSF 2.0:DE.CM-09", "SP800-53:AU-12"),
    severity_rule="Low where the GPU Operator gives the node's GPUs to VMs "
    "(`nvidia.com/gpu.workload.config` vm-passthrough or vm-vgpu): no DCGM-Exporter runs on such "
    "a host by design, so the gap is said, not an exporter to fix.",
)
def silent_gpu_node(inputs: PostureInputs) -> Iterator[FindingDraft]:
    minutes = inputs.telemetry.settings.get("silent_minutes")
    for silent in inputs.telemetry.silent_nodes:
        last = silent.last_sample.isoformat() if silent.last_sample else None
        evidence = {"node": silent.node, "last_sample": last, "silent_after_minutes": minutes}
        title = f"GPU node {silent.node} has sent no telemetry " + (
            f"since {last[:16]}" if last else "at all"
        )
        severity = ""
        if silent.vm_workload:
            # The GPUs are bound to vfio-pci (passthrough) or split by the vGPU Manager for VMs:
            # the operator deploys no DCGM-Exporter there, and host-side DCGM cannot see inside
            # the guests. What is true is a visibility gap, not a broken exporter.
            title = (
                f"GPU node {silent.node} gives its GPUs to VMs ({silent.vm_workload}): "
                "no host telemetry of their use"
            )
            evidence["why_no_telemetry"] = (
                f"nvidia.com/gpu.workload.config={silent.vm_workload}: the GPU Operator runs no "
                "DCGM-Exporter on a node whose GPUs go to VMs; their use is not seen from the host"
            )
            evidence["not_assessed"] = "compute hijacking (ATTR-001) and usage per tenant"
            evidence["what_would_help"] = (
                "GPU monitoring inside each guest VM (DCGM in the guest) scraped per tenant"
            )
            severity = "low"
        node = node_named(inputs, silent.node)
        if exporter := gke_managed_exporter(inputs, node):
            # GKE runs the exporter there already: what is missing is its metrics here.
            evidence["gke_managed_exporter"] = exporter
            evidence["what_would_help"] = GKE_INGEST
        tenants = tenants_on_node(inputs, silent.node)
        yield node_draft(
            "ATTR-003",
            node,
            tenants=tenants,
            evidence=evidence,
            key="ATTR-003",
            title=title,
            severity=severity,
        )
