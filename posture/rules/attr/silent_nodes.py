"""ATTR-003: a GPU node that sends no telemetry, or of a cluster none was ever ingested for."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inventory.snapshot import Node
from posture.inputs import PostureInputs
from posture.rules.common import kubernetes_node, tenants_on_node
from posture.rules.gke import gke_managed_exporter
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import node_draft, node_named
from telemetry.hijack import SilentNode

GKE_INGEST = (
    "ingest GKE's managed DCGM metrics: Google Cloud Managed Service for Prometheus scrapes this "
    "exporter (ClusterPodMonitoring gke-managed-dcgm-exporter); point `manage.py ingest_dcgm "
    "--prometheus` at its query API, or ingest the exporter's text"
)
# In the evidence of every ATTR-003 of a cluster no sample was ever ingested for: the actions
# group them into one change for the cluster (posture.action_shapes.never_sampled).
NEVER_SAMPLED = "none: no DCGM-Exporter sample has been ingested for this cluster"


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
    "`gke_managed_exporter`), there is nothing to deploy: ingest its metrics (below). "
    "Where no sample was ever ingested for the cluster (`cluster_telemetry`), every GPU node "
    "has this finding and one action covers them: ingest the cluster's metrics (`manage.py "
    "ingest_dcgm --cluster NAME --prometheus URL`), after deploying DCGM-Exporter where the "
    "evidence's `dcgm_exporter` says none runs.",
    mappings=("CSF 2.0:DE.CM-09", "SP800-53:AU-12"),
    severity_rule="Low where the GPU Operator gives the node's GPUs to VMs "
    "(`nvidia.com/gpu.workload.config` vm-passthrough or vm-vgpu): no DCGM-Exporter runs on such "
    "a host by design, so the gap is said, not an exporter to fix.",
)
def silent_gpu_node(inputs: PostureInputs) -> Iterator[FindingDraft]:
    minutes = inputs.telemetry.settings.get("silent_minutes")
    for silent in inputs.telemetry.silent_nodes:
        node = node_named(inputs, silent.node)
        if not kubernetes_node(node):
            continue  # no scheduler there: no exporter DaemonSet to miss, no hijack to judge
        last = silent.last_sample.isoformat() if silent.last_sample else None
        evidence = {"node": silent.node, "last_sample": last, "silent_after_minutes": minutes}
        since = f"since {last[:16]}" if last else "at all"
        title, severity = f"GPU node {silent.node} has sent no telemetry {since}", ""
        if silent.vm_workload:
            title, severity = _vm_gap(silent, evidence), "low"
        else:
            evidence |= _exporter_evidence(node)
        if not inputs.telemetry.sampled:
            # Nothing was ever ingested for the cluster: the node's telemetry was never read,
            # so nothing watches it (its hijack detection is blind); one action for the cluster.
            evidence["cluster_telemetry"] = NEVER_SAMPLED
            evidence["not_assessed"] = (
                "compute hijacking (ATTR-001), idle allocation and usage per tenant"
            )
            if not silent.vm_workload:
                title = _never_sampled_title(node.name, evidence["exporter_runs"])
        if exporter := gke_managed_exporter(inputs, node):
            # GKE runs the exporter there already: what is missing is its metrics here.
            evidence["gke_managed_exporter"] = exporter
            evidence["what_would_help"] = GKE_INGEST
        tenants = tenants_on_node(inputs, silent.node)
        yield node_draft(
            "ATTR-003",
            node,
            inputs=inputs,
            tenants=tenants,
            evidence=evidence,
            key="ATTR-003",
            title=title,
            severity=severity,
        )


def _vm_gap(silent: SilentNode, evidence: dict[str, Any]) -> str:
    """The title of a node whose GPUs go to VMs, its evidence filled in. The GPUs are bound to
    vfio-pci (passthrough) or split by the vGPU Manager for VMs: the operator deploys no
    DCGM-Exporter there, and host-side DCGM cannot see inside the guests. What is true is a
    visibility gap, not a broken exporter."""
    evidence["why_no_telemetry"] = (
        f"nvidia.com/gpu.workload.config={silent.vm_workload}: the GPU Operator runs no "
        "DCGM-Exporter on a node whose GPUs go to VMs; their use is not seen from the host"
    )
    evidence["not_assessed"] = "compute hijacking (ATTR-001) and usage per tenant"
    evidence["what_would_help"] = (
        "GPU monitoring inside each guest VM (DCGM in the guest) scraped per tenant"
    )
    return (
        f"GPU node {silent.node} gives its GPUs to VMs ({silent.vm_workload}): "
        "no host telemetry of their use"
    )


def _exporter_evidence(node: Node) -> dict[str, Any]:
    """Whether DCGM-Exporter runs on the node, as the sync read it (inventory.components
    presence): its pod (`exporter_runs` True: the gap is in collecting its metrics), a
    DaemonSet with no pod here or none at all (False: an exporter to make run), or not known
    (None: the snapshot does not show)."""
    deployed = node.deployed.get("dcgm_exporter")
    absent = node.not_installed.get("dcgm_exporter")
    if deployed and deployed.startswith("pod "):
        return {"dcgm_exporter": f"runs on the node ({deployed})", "exporter_runs": True}
    if deployed or absent:
        said = f"not running on the node: {deployed or absent}"
        return {"dcgm_exporter": said, "exporter_runs": False}
    said = "unknown: the last sync does not show whether it runs here"
    return {"dcgm_exporter": said, "exporter_runs": None}


def _never_sampled_title(node: str, runs: bool | None) -> str:
    if runs:
        said = "DCGM-Exporter runs there, but no sample was ever ingested for its cluster"
    elif runs is False:
        said = "no DCGM-Exporter runs there, and no sample was ever ingested for its cluster"
    else:
        said = "no DCGM-Exporter sample was ever ingested for its cluster"
    return f"GPU node {node} has no telemetry: {said}"
