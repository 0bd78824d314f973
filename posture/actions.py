"""Fix these first: open findings grouped into the ACTIONS that close them (DESIGN §5). PURE.

An action is one change a platform team makes; it closes every finding in it at once:
- an upgrade of one pool's nodes by one change (STACK-001/002/003 below the baseline,
  STACK-005 past the SLA): the pool is the rollout plan's unit (inventory/patching/rollout.py),
  the change is who manages the components (`upgrade_by`, inventory/stack_managers.py): the
  GPU Operator, a new node image or host packages, a chart of its own, or unknown; two changes
  are two actions, often for two owners. The GPU Operator's nodes in no pool are one wave
  together (one ClusterPolicy change moves them all; "on N nodes in no pool"), never one
  action per node. The title names each component move as the plan keys it (a
  component, the driver by branch) with the highest fixed version named (or "past" the bound
  of a range closed above whose fixed version is unknown, where no named version passes it:
  inventory.patching.targets), and the change; a finding with an exposure no version closes
  (the vendor says it has no fix, or its range has no upper end and no fixed version) is no
  upgrade's (it stays open after any): it is its own action, to mitigate or replace;
- the vGPU Manager's upgrade on the hypervisors of vGPU guests (a STACK-001 whose evidence says
  `where_to_fix`: posture.rules.stack.hypervisor), per Manager version and fix, no pool's;
- the GPU Operator's own upgrade (a finding whose only move is the Operator): one Deployment
  for the cluster, so one action for every node, never "on pool x"; a pool's upgrade that also
  needs it says so apart from the pool;
- the metrics of a cluster no DCGM-Exporter sample was ever ingested for: one ingest (the
  exporter deployed first where none runs) closes the ATTR-003 of every GPU node of it;
- one setting of one pool's nodes (STACK-004/006/008, ATTR-003), or of the ClusterPolicy that
  configures them (STACK-008 where the GPU Operator's toolkit runs: its subject; STACK-006
  where its spec.cdi.enabled decides the node's CDI);
- one pool tainted for its tenant class (K8S-002 of its nodes, POD-009 of a workload whose pods
  all run on it); a POD-009 workload whose pods run on several pools (or on a node in no pool)
  is no one taint's (nor one on nodes in no pool): its one change is to the workload; it
  helps no tenant of another class there (posture.action_taints);
- one setting of a mesh's sidecar injector (POD-007 of every workload whose only unpinned
  containers the mesh injected, as the pod's annotations record): Istio's or Linkerd's proxy
  image is set there, not in the workloads;
- one change of an OpenKruise SidecarSet (the findings of one workload check whose every
  container and volume that SidecarSet injected, as the pods' annotations record: a host path
  it mounts, a privileged sidecar, ...), one action per SidecarSet and check;
- one fix of one workload (the POD-* findings of one check on one workload, every container;
  POD-005 reaching /dev/nvidia-caps only through host path volumes is POD-003's removal; a
  co-tenancy pair or a SHARE-004 sharing-mode use made only through one workload's
  NVIDIA_VISIBLE_DEVICES is POD-011's removal of the variable there);
- one co-tenancy pair separated on one pool (every co-tenancy check of that pair there);
- one namespace nobody claims, claimed (posture.claims): every finding that affects only the
  unclassified party and names that namespace as its party's, whatever its check; this comes
  first, since the other changes would be made to the wrong party's workloads, unless the
  finding's own change closes a real tenant's findings too (it stays in that action);
- otherwise the finding alone.

Risk removed is what the score would lose: the sum of its findings' risk points for each tenant
they affect (with that tenant's own exposure where it has one), from posture.scoring's own
function. Shares are of the total over every open finding (all risk, and all critical risk).
The key is a short hash of the group's identity,
stable across runs, and names no tenant (a tenant viewer may read it in a link).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from inventory.patching.rollout import component_key
from posture.action_risk import finding_tenant_risk, percent
from posture.action_shapes import (
    caps_only_through_volumes,
    cdi_policy,
    env_access_workload,
    env_only_use,
    injector_of,
    inside_other_pool,
    is_workload,
    never_sampled,
    one_pool,
    sidecarset_of,
    telemetry_title,
)
from posture.action_taints import must_leave, taint_title, tenants_not_helped
from posture.action_upgrades import (
    component_name,
    hypervisor_upgrade,
    hypervisor_upgrade_title,
    operator_only,
    operator_upgrade_title,
    unfixed_exposures,
    unknown_versions_title,
    upgrade_action_title,
    upgrade_by,
)
from posture.action_words import credentials_fix, injector_title, sidecarset_title
from posture.claims import claim_namespace, claim_title
from posture.rules.pod.injectors import SIDECARSET
from posture.scoring import SEVERITY_ORDER

UPGRADE_CHECKS = ("STACK-001", "STACK-002", "STACK-003", "STACK-005")
TAINT_CHECKS = ("K8S-002", "POD-009")
# The change each workload check asks for, as the start of an imperative title.
WORKLOAD_FIXES = {
    "POD-001": "Remove privileged from",
    "POD-002": "Remove hostPID, hostIPC and hostNetwork from",
    "POD-003": "Remove the host path volumes from",
    "POD-004": "Drop SYS_ADMIN and other dangerous capabilities from",
    "POD-005": "Remove /dev/nvidia-caps access from",
    "POD-006": "Set GPU limits equal to requests in",
    "POD-007": "Pin images by digest from an approved registry in",
    "POD-008": "Move literal credentials out of the env of",
    "POD-011": "Request GPUs through the scheduler (not NVIDIA_VISIBLE_DEVICES) in",
    "K8S-006": "Put authentication in front of the notebook or dashboard of",
    "DRA-001": "Remove the DRA admin-access claim from",
}
# Node checks whose fix is one setting of the pool's nodes.
NODE_FIXES = {
    "STACK-004": "Make the driver, toolkit and device plugin versions known",
    "STACK-006": "Inject GPUs through CDI (and regenerate the spec after MIG changes)",
    "STACK-008": "Make the container toolkit ignore NVIDIA_VISIBLE_DEVICES from unprivileged pods",
    "ATTR-003": "Deploy DCGM-Exporter",
}
# The upgrade identity's "where" of the GPU Operator's nodes that are in no pool.
OPERATOR_UNPOOLED = "gpu-operator nodes in no pool"
NODE_SETTING_SUBJECTS = ("Node", "NodePool", "ClusterPolicy")
# What the co-tenancy checks share, for the title: "stop time-slicing a with b on pool x".
PAIR_VERBS = {"SHARE-001": "time-slicing", "SHARE-006": "MPS-sharing", "SHARE-002": "MIG-sharing"}


NO_EXPOSURES: Mapping[str, int] = MappingProxyType({})  # every tenant at the finding's


class ActionFinding(NamedTuple):
    """An open finding as the grouping reads it. A named tuple, not a frozen dataclass: one is
    built per open finding at every regrouping, and a frozen dataclass's __init__ sets its 13
    fields through object.__setattr__ (0.1 s of a 26,000-finding regrouping)."""

    id: int
    check_id: str
    severity: str
    cluster: str
    subject_kind: str
    subject_namespace: str
    subject_name: str
    title: str
    evidence: Mapping[str, Any]
    exposure: int
    tenant_weights: Mapping[str, float]  # tenant slug -> its class's risk weight
    pools: tuple[str, ...] = ()  # the pools of the nodes it is on (a workload's pods')
    unpooled: bool = False  # some of a workload's pods run on a node in no pool
    # tenant slug -> its own exposure where not `exposure` (FindingTenant.exposure)
    tenant_exposures: Mapping[str, int] = NO_EXPOSURES


@dataclass(frozen=True)
class Action:
    key: str
    title: str
    cluster: str
    severity: str  # the worst of its findings
    check_ids: tuple[str, ...]
    finding_ids: tuple[int, ...]
    tenant_risk: dict[str, float]  # tenant slug -> risk points it removes for that tenant
    risk_removed: float
    critical_risk_removed: float
    share_of_risk: float = 0.0  # percent of all open risk
    share_of_critical: float = 0.0  # percent of all open critical risk
    # tenant slug -> the critical part of its risk removed (a tenant viewer's shares)
    tenant_critical: dict[str, float] = field(default_factory=dict)

    @property
    def tenants(self) -> tuple[str, ...]:
        return tuple(sorted(self.tenant_risk))


def _where(finding: ActionFinding) -> str:
    """The pool the subject is in ("pool x"), or the node itself when it has none."""
    if finding.subject_kind == "NodePool":
        return f"pool {finding.subject_name}"
    if finding.subject_kind == "ClusterPolicy":
        return f"ClusterPolicy {finding.subject_name}"
    if finding.pools:
        return f"pool {finding.pools[0]}"
    return f"node {finding.subject_name}"


def _pair(finding: ActionFinding) -> tuple[str, str] | None:
    parties = finding.evidence.get("parties")
    if not isinstance(parties, list) or len(parties) != 2:
        return None
    first, second = sorted(str(p.get("party", "")) for p in parties)
    return first, second


def group_of(finding: ActionFinding, *, claim: bool = True) -> tuple[tuple[str, ...], str]:
    """(identity, title) of the action that closes the finding (`claim=False`: the one that
    would, were its namespace claimed; actions_for weighs the two)."""
    check, cluster = finding.check_id, finding.cluster
    subject = (finding.subject_kind, finding.subject_namespace, finding.subject_name)
    if claim and (namespace := claim_namespace(finding.tenant_weights, *subject, finding.evidence)):
        # Nobody claims its namespace: saying whose it is comes before any other change (a
        # platform add-on's findings close, a tenant's get that tenant's remediation).
        return (cluster, "claim", namespace), namespace
    where = _where(finding)
    if check in UPGRADE_CHECKS and (manager := hypervisor_upgrade(finding)) is not None:
        # A vGPU guest's hypervisor vGPU Manager: upgraded on the hypervisors, outside the
        # cluster; no rollout of the guest's pool closes it.
        return (cluster, "hypervisor", *manager), hypervisor_upgrade_title(*manager)
    unfixed = unfixed_exposures(finding) if check in UPGRADE_CHECKS else []
    if never_sampled(finding):
        # No sample was ever ingested for the cluster: collecting its metrics (deploying the
        # exporter first where none runs) closes every GPU node's ATTR-003 at once.
        return (cluster, "telemetry"), ""
    if check == "ATTR-003" and finding.evidence.get("gke_managed_exporter"):
        # GKE runs its managed exporter there: nothing to deploy, its metrics to ingest.
        title = f"Ingest GKE's managed DCGM metrics (Managed Prometheus) for {where}"
        return (cluster, "node", check, where), title
    if unfixed:
        # No upgrade closes it: an exposure the vendor says has no fix, or an open range with
        # no fixed version, stays (a closed one closes past its bound: the pool's upgrade).
        names = sorted(
            {
                f"{component_name(component_key(e))} {e.get('installed', '')}".strip()
                for e in unfixed
            }
        )
        advisories = sorted({str(e.get("advisory_id") or "?") for e in unfixed})
        title = (
            f"Mitigate or replace {' and '.join(names)} on node {finding.subject_name}: "
            f"no fixed version for {', '.join(advisories)}"
        )
        return (cluster, "finding", str(finding.id)), title
    if check in UPGRADE_CHECKS and finding.subject_kind == "Node" and operator_only(finding):
        # The GPU Operator is one Deployment for the cluster: its one upgrade closes these on
        # every node, whatever pool they are in.
        return (cluster, "operator"), ""
    if check in UPGRADE_CHECKS and finding.subject_kind == "Node":
        # One rollout of the pool by one change closes them all (the title, built from every
        # member, says which components move to what). The GPU Operator's change keeps the
        # identity (so the key) the pool's one upgrade had before `upgrade_by` was recorded.
        change = upgrade_by(finding).get("change")
        extra = [str(change)] if change and change != "gpu_operator" else []
        if change == "gpu_operator" and not finding.pools:
            # A node in no pool is no wave of its own where the GPU Operator moves its
            # components: the Operator's nodes outside every pool take one action together.
            where = OPERATOR_UNPOOLED
        return (cluster, "upgrade", where, *extra), ""
    if (policy := cdi_policy(finding)) is not None:
        # The ClusterPolicy's spec.cdi.enabled decides CDI on every node it configures: one
        # field set there closes the finding on each of them, whatever their pools.
        where = f"ClusterPolicy {policy}"
        return (cluster, "node", check, where), f"Enable CDI in {where} (spec.cdi.enabled: true)"
    if check in NODE_FIXES and finding.subject_kind in NODE_SETTING_SUBJECTS:
        # A node check that names the pool or ClusterPolicy its fix is made in (STACK-008)
        # groups as its nodes would: one setting there.
        joiner = "in" if finding.subject_kind == "ClusterPolicy" else "on"
        return (cluster, "node", check, where), f"{NODE_FIXES[check]} {joiner} {where}"
    if check == "POD-009" and inside_other_pool(finding):
        # The pool is tainted already: the workload's toleration let it in.
        ref = f"{finding.subject_namespace}/{finding.subject_name}".lstrip("/")
        identity = (cluster, "workload", check, finding.subject_kind, ref)
        return identity, f"Keep {finding.subject_kind} {ref} out of another class's pool"
    if check in TAINT_CHECKS and (finding.subject_kind == "Node" or one_pool(finding)):
        return (cluster, "taint", where), f"Taint {where}"
    if check == "POD-009" and is_workload(finding):
        # Its pods run on several pools, or on nodes in none: no one pool's taint reaches them
        # all, so the one change is to the workload.
        ref = f"{finding.subject_namespace}/{finding.subject_name}".lstrip("/")
        identity = (cluster, "workload", check, finding.subject_kind, ref)
        return identity, f"Schedule {finding.subject_kind} {ref} on its class's tainted pool"
    if (workload := env_access_workload(finding) or env_only_use(finding)) is not None:
        # One side reaches the GPUs through NVIDIA_VISIBLE_DEVICES outside the scheduler:
        # removing the variable from that workload ends the co-tenancy (POD-011's action).
        kind, ref = workload
        identity = (cluster, "workload", "POD-011", kind, ref)
        return identity, f"{WORKLOAD_FIXES['POD-011']} {kind} {ref}"
    # POD-010's parties share an identity, not a GPU: no "stop sharing GPUs" pair action.
    pair = _pair(finding) if check != "POD-010" else None
    if pair is not None:
        verb = PAIR_VERBS.get(check, "sharing GPUs between")
        names = f"{pair[0] or 'platform pods'} with {pair[1] or 'platform pods'}"
        if verb == "sharing GPUs between":
            names = names.replace(" with ", " and ")
        identity = (cluster, "pair", finding.subject_kind, finding.subject_name, *pair)
        return identity, f"Stop {verb} {names} on {where}"
    if (mesh := injector_of(finding)) is not None:
        # Only the mesh's injected sidecar is unpinned: one setting of the injector pins it in
        # every workload it injects (the title counts them).
        return (cluster, "injector", mesh), ""
    if check in WORKLOAD_FIXES and (sidecarset := sidecarset_of(finding)) is not None:
        # Everything it names was injected by one SidecarSet: removed there once, for every
        # workload whose pods it injects (the title counts them).
        fix = credentials_fix(finding.evidence) if check == "POD-008" else WORKLOAD_FIXES[check]
        return (cluster, "injector", sidecarset, check), f"{fix} {sidecarset}"
    if check in WORKLOAD_FIXES and is_workload(finding):
        ref = f"{finding.subject_namespace}/{finding.subject_name}".lstrip("/")
        if check == "POD-005" and caps_only_through_volumes(finding):
            # Its only route to /dev/nvidia-caps is host path volumes (/, /dev or under the
            # caps), each one POD-003 names too: removing them closes both, one action.
            check = "POD-003"
        identity = (cluster, "workload", check, finding.subject_kind, ref)
        fix = credentials_fix(finding.evidence) if check == "POD-008" else WORKLOAD_FIXES[check]
        return identity, f"{fix} {finding.subject_kind} {ref}"
    return (cluster, "finding", str(finding.id)), f"Fix {check}: {finding.title}"


def action_key(identity: tuple[str, ...]) -> str:
    """16 hex digits of the identity: stable across runs, no tenant name readable in it."""
    return hashlib.sha256("|".join(identity).encode()).hexdigest()[:16]


def actions_for(findings: Iterable[ActionFinding]) -> list[Action]:
    """Group open findings into actions, most risk removed first (then key, for ties)."""
    groups: dict[tuple[str, ...], list[ActionFinding]] = defaultdict(list)
    titles: dict[tuple[str, ...], str] = {}
    claimed = []
    for finding in findings:
        identity, title = group_of(finding)
        if identity[1] == "claim":
            claimed.append((finding, identity, title))
            continue
        groups[identity].append(finding)
        titles.setdefault(identity, title)
    for finding, identity, title in claimed:
        # The finding's own fix closes a real tenant's findings too (a POD-011 whose variable
        # makes a co-tenancy with a tenant): that one change is the action, as before a claim.
        own, own_title = group_of(finding, claim=False)
        if own in groups:
            identity, title = own, own_title
        groups[identity].append(finding)
        titles.setdefault(identity, title)
    risks: dict[tuple[str, int, float], float] = {}  # see finding_tenant_risk
    built = [
        _action(identity, titles[identity], members, risks) for identity, members in groups.items()
    ]
    total = sum(a["risk_removed"] for a in built)
    critical = sum(a["critical_risk_removed"] for a in built)
    shared = [
        Action(
            **a,
            share_of_risk=percent(a["risk_removed"], total),
            share_of_critical=percent(a["critical_risk_removed"], critical),
        )
        for a in built
    ]
    return sorted(shared, key=lambda a: (-a.risk_removed, a.key))


def _action(
    identity: tuple[str, ...],
    title: str,
    members: list[ActionFinding],
    risks: dict[tuple[str, int, float], float],
) -> dict[str, Any]:
    """An Action's fields but its shares (which need every action's risk first)."""
    tenant_risk: dict[str, float] = defaultdict(float)
    tenant_critical: dict[str, float] = defaultdict(float)
    critical = 0.0
    # A pool's taint does not help a tenant of another class there: its pods stay (NoSchedule
    # evicts nobody), now inside another class's pool (posture.action_taints).
    not_helped = tenants_not_helped(members) if identity[1] == "taint" else {}
    for finding in members:
        points = finding_tenant_risk(finding, risks)
        if not_helped:
            points = {t: v for t, v in points.items() if t not in not_helped}
        for tenant, value in points.items():
            tenant_risk[tenant] += value
        if finding.severity == "critical":
            critical += sum(points.values())
            for tenant, value in points.items():
                tenant_critical[tenant] += value
    if identity[1] == "taint":
        title = taint_title(identity[2], members) + must_leave(not_helped)
    elif identity[1] == "upgrade":
        where = identity[2]
        nodes = sorted({f.subject_name for f in members})
        if where == OPERATOR_UNPOOLED:
            where = f"node {nodes[0]}" if len(nodes) == 1 else f"{len(nodes)} nodes in no pool"
        title = upgrade_action_title(members, where)
    elif identity[1] == "operator":
        title = operator_upgrade_title(members)
    elif identity[1] == "claim":
        title = claim_title(identity[2], len(members))
    elif identity[1] == "injector" and identity[2].startswith(SIDECARSET):
        title = sidecarset_title(title, members)
    elif identity[1] == "injector":
        title = injector_title(identity[2], members)
    elif identity[1] == "telemetry":
        title = telemetry_title(identity[0], members)
    elif identity[1] == "node" and identity[2] == "STACK-004":
        # Only what is unknown on the pool's nodes (a driver nvidia-smi gave is not).
        title = unknown_versions_title(members, identity[3]) or title
    return {
        "key": action_key(identity),
        "title": title,
        "cluster": members[0].cluster,
        "severity": min((f.severity for f in members), key=SEVERITY_ORDER.index),
        "check_ids": tuple(sorted({f.check_id for f in members})),
        "finding_ids": tuple(sorted(f.id for f in members)),
        "tenant_risk": {t: round(v, 2) for t, v in sorted(tenant_risk.items())},
        "risk_removed": round(sum(tenant_risk.values()), 2),
        "critical_risk_removed": round(critical, 2),
        "tenant_critical": {t: round(v, 2) for t, v in sorted(tenant_critical.items())},
    }
