"""What a finding's subject and evidence say about the change that closes it (posture.actions
groups by these). PURE."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from posture.rules.holding import ENV_RESOURCE
from posture.rules.pod.injectors import SIDECARSET
from posture.rules.pod.injectors import sidecarset_of as sidecarset_injector

if TYPE_CHECKING:
    from posture.actions import ActionFinding

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod", "ReplicaSet")


def caps_only_through_volumes(finding: ActionFinding) -> bool:
    """POD-005 reaches /dev/nvidia-caps through host path volumes alone: no toolkit variable
    (NVIDIA_MIG_CONFIG_DEVICES...) that removing the volumes would leave in place."""
    volumes, env = finding.evidence.get("host_path_volumes"), finding.evidence.get("env")
    return bool(volumes) and isinstance(volumes, list) and not env


def env_access_workload(finding: ActionFinding) -> tuple[str, str] | None:
    """(kind, "ns/name") of the one workload whose NVIDIA_VISIBLE_DEVICES makes a pair's
    co-tenancy, when exactly one side holds only through the variable, from one workload."""
    parties = finding.evidence.get("parties")
    if finding.check_id == "POD-010" or not isinstance(parties, list) or len(parties) != 2:
        return None
    found = []
    for party in parties:
        pods = party.get("pods") if isinstance(party, dict) else None
        if not isinstance(pods, list) or not pods:
            continue
        if all(isinstance(p, dict) and p.get("resource") == ENV_RESOURCE for p in pods):
            found.append({str(p.get("workload") or "") for p in pods})
    if len(found) != 1 or len(found[0]) != 1:
        return None
    kind, _, ref = next(iter(found[0])).partition(" ")
    return (kind, ref) if kind and ref else None


def env_only_use(finding: ActionFinding) -> tuple[str, str] | None:
    """(kind, "ns/name") of the one workload a SHARE-004 sharing mode is used by only through
    NVIDIA_VISIBLE_DEVICES (every pod of the use, one workload): removing the variable from it
    (POD-011's action) ends the use, so no approval is to be asked for."""
    through = finding.evidence.get("through_visible_devices")
    if finding.check_id != "SHARE-004" or not isinstance(through, dict):
        return None
    workloads = through.get("workloads")
    if not isinstance(workloads, list) or len(workloads) != 1 or through.get("workload_count") != 1:
        return None
    if through.get("pod_count") != finding.evidence.get("pod_count"):
        return None  # some pods use the mode through the scheduler: an approval's question
    kind, _, ref = str(workloads[0]).partition(" ")
    return (kind, ref) if kind and ref else None


def injector_of(finding: ActionFinding) -> str | None:
    """The mesh ("istio", "linkerd") whose injector added every container a POD-007 names
    (`injected_by` on each): its image is set once in the mesh's injector config, which pins
    it in every workload it injects. None where a container is the workload's own: that
    workload's manifest is changed too, so it keeps its own action."""
    containers = finding.evidence.get("containers")
    if finding.check_id != "POD-007" or not isinstance(containers, list) or not containers:
        return None
    if finding.evidence.get("volumes"):  # an image volume is the workload's own manifest's
        return None
    meshes = {str(c.get("injected_by") or "") if isinstance(c, dict) else "" for c in containers}
    mesh = meshes.pop() if len(meshes) == 1 else ""
    # A SidecarSet's is no mesh's: its own action (sidecarset_of).
    return mesh if mesh and not mesh.startswith(SIDECARSET) else None


def sidecarset_of(finding: ActionFinding) -> str | None:
    """The OpenKruise SidecarSet ("SidecarSet <name>") that injected everything a workload
    finding names (`injected_by` on each container's and volume's entry): it is removed or
    changed there, once for every workload whose pods it injects (the workloads' templates
    hold none of it). None where anything is the workload's own: its manifest is changed too,
    so it keeps its own action."""
    entries = [
        *(finding.evidence.get("containers") or ()),
        *(finding.evidence.get("volumes") or ()),
    ]
    return sidecarset_injector(entries)


def cdi_policy(finding: ActionFinding) -> str | None:
    """The ClusterPolicy whose spec.cdi.enabled decides a STACK-006 node's CDI (false, or unset
    on an Operator that defaults it off or whose version is unknown): setting it there is the
    one change for every node it configures. None where the node's own facts decide (no
    Operator, its toolkit not the Operator's: the `label` STACK-006 then names) or GKE does."""
    if finding.check_id != "STACK-006" or "label" in finding.evidence:
        return None
    if finding.evidence.get("injection"):
        return None
    source = str(finding.evidence.get("source") or "")
    listed = finding.evidence.get("cluster_policies")
    names = [str(p.get("name")) for p in listed if isinstance(p, dict)] if listed else []
    for name in names:
        # Its field (set, or unset and so the Operator's default), not another of its
        # settings read for the node (a device-list strategy where its toolkit is off).
        set_or_unset = (f"{name} spec.cdi.enabled", f"{name} leaves spec.cdi.enabled unset")
        if source.startswith(tuple(f"ClusterPolicy {s}" for s in set_or_unset)):
            return name
    return None


def one_pool(finding: ActionFinding) -> bool:
    """Every pod of the finding's workload runs on one and the same pool."""
    return len(finding.pools) == 1 and not finding.unpooled


def inside_other_pool(finding: ActionFinding) -> bool:
    """A POD-009 finding about pods inside another class's dedicated pool."""
    pods = finding.evidence.get("pods")
    return isinstance(pods, list) and any(
        isinstance(p, dict) and p.get("inside_pool_of") for p in pods
    )


def is_workload(finding: ActionFinding) -> bool:
    """A workload subject: a built-in kind, or whatever controller a pod's owner chain
    resolved to (a LeaderWorkerSet, a Rollout, a Volcano Job...), which pod findings name in
    their evidence's `workload`."""
    return finding.subject_kind in WORKLOAD_KINDS or isinstance(
        finding.evidence.get("workload"), str
    )


def never_sampled(finding: ActionFinding) -> bool:
    """An ATTR-003 of a cluster no DCGM-Exporter sample was ever ingested for (its
    `cluster_telemetry`), on a node an exporter can watch: collecting the cluster's metrics is
    one change for all of them. Not a node whose GPUs go to VMs (no `exporter_runs`): no
    exporter runs there by design, and no ingest closes it."""
    evidence = finding.evidence
    return (
        finding.check_id == "ATTR-003"
        and bool(evidence.get("cluster_telemetry"))
        and "exporter_runs" in evidence
    )


def telemetry_title(cluster: str, members: Sequence[ActionFinding]) -> str:
    """The one change for a cluster no sample was ever ingested for: ingest its metrics where
    its nodes run DCGM-Exporter (GKE's managed one, through Managed Prometheus), deploy it
    first where they do not, saying on how many."""
    ingest = f"`manage.py ingest_dcgm --cluster {cluster} --prometheus URL`"
    runs = sum(1 for f in members if f.evidence.get("exporter_runs") is True)
    missing = sum(1 for f in members if f.evidence.get("exporter_runs") is False)
    if all(f.evidence.get("gke_managed_exporter") for f in members):
        managed = "GKE's managed DCGM metrics (Managed Prometheus)"
        return f"Ingest {managed} for cluster {cluster}: {ingest}"
    if runs and not missing:
        return f"Ingest DCGM-Exporter metrics for cluster {cluster}: {ingest}"
    if missing and not runs:
        return (
            f"Deploy DCGM-Exporter on cluster {cluster}'s GPU nodes, then ingest its metrics: "
            f"{ingest}"
        )
    if missing:
        return (
            f"Ingest DCGM-Exporter metrics for cluster {cluster}: {ingest}; deploy it first on "
            f"the {missing} GPU node(s) that run none"
        )
    return (
        f"Ingest DCGM-Exporter metrics for cluster {cluster}, deploying it where it does not "
        f"run: {ingest}"
    )
