"""OpenShift's SecurityContextConstraints as K8S-009 admission control. PURE.

On OpenShift, pod rules are enforced at admission by SCCs, not by Pod Security Admission (its
label syncer sets only warn/audit). An SCC ALLOWS: the SCC admission plugin admits a pod under
any SCC that the requesting user or the pod's service account may use and that validates it.
So a control (inventory.sources.admission_controls.CONTROLS) is denied in a namespace when no
SCC usable there allows it, and open when one does: the finding names that SCC and who may
use it. An SCC is usable in namespace NS by the tenant when
- its `users` name `system:serviceaccount:NS:<any>` (a tenant runs pods as any account of its
  namespace) or a tenant user, or its `groups` name `system:serviceaccounts:NS`,
  `system:serviceaccounts`, `system:authenticated` or a tenant group;
- or RBAC grants verb `use` on `securitycontextconstraints` (security.openshift.io, the SCC's
  name or all) in NS to one of those subjects: the plugin asks the authorizer in the pod's
  namespace, so a RoleBinding there counts as a ClusterRoleBinding does (rbac_eval.can).
No usable SCC at all: the plugin refuses every pod, which denies every control.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inventory.rbac import ALL_AUTHENTICATED, ALL_SERVICE_ACCOUNTS, SA_USER_PREFIX
from inventory.snapshot import ClusterSnapshot
from inventory.snapshot_admission import SCC, AdmissionPolicy
from inventory.sources.admission_controls import (
    CAPABILITIES,
    CONTROLS,
    HOST_IPC,
    HOST_NETWORK,
    HOST_PATH,
    HOST_PID,
    PRIVILEGED,
)
from posture.inputs import PostureInputs, TenantInfo
from posture.rules.k8s.admission_cover import Verdict
from posture.rules.k8s.rbac_eval import can
from posture.rules.pod.hardening import DANGEROUS_CAPABILITIES

SCC_GROUP = "security.openshift.io"
SCC_RESOURCE = "securitycontextconstraints"
SCC_SOURCE = "SecurityContextConstraints"
_FLAGS = (
    ("allowPrivilegedContainer", PRIVILEGED),
    ("allowHostPID", HOST_PID),
    ("allowHostIPC", HOST_IPC),
    ("allowHostNetwork", HOST_NETWORK),
    ("allowHostDirVolumePlugin", HOST_PATH),
)
# POD-004's capabilities, and "*" (any): an SCC allowing one lets a pod add it.
_RISKY_CAPABILITIES = {"*", *DANGEROUS_CAPABILITIES}
SA_GROUP_PREFIX = "system:serviceaccounts:"


def scc_allows(spec: dict[str, Any]) -> tuple[str, ...]:
    """The controls an SCC lets a pod use. A field left out is false / empty, as the API
    server's defaults make it (`volumes` unset follows allowHostDirVolumePlugin)."""
    found = {control for field, control in _FLAGS if spec.get(field) is True}
    if {str(v) for v in _strings(spec.get("volumes"))} & {"*", "hostPath"}:
        found.add(HOST_PATH)
    for field in ("allowedCapabilities", "defaultAddCapabilities"):
        caps = {c.strip().upper().removeprefix("CAP_") for c in _strings(spec.get(field))}
        if caps & _RISKY_CAPABILITIES:
            found.add(CAPABILITIES)
    return tuple(c for c in CONTROLS if c in found)


def sccs_of(snapshot: ClusterSnapshot) -> list[AdmissionPolicy]:
    return [p for p in snapshot.admission_policies if p.engine == SCC]


def is_openshift(snapshot: ClusterSnapshot) -> bool:
    """OpenShift's own namespaces, its node labels (every OpenShift cluster has both), or a
    Route (route.openshift.io, read as an Ingress of kind Route)."""
    if any(n.name == "openshift" or n.name.startswith("openshift-") for n in snapshot.namespaces):
        return True
    if any(i.kind == "Route" for i in snapshot.ingresses):
        return True
    return any(any(k.startswith("node.openshift.io/") for k in n.labels) for n in snapshot.nodes)


def scc_verdicts(
    inputs: PostureInputs,
    namespace: str,
    tenant: TenantInfo,
    sccs: Sequence[AdmissionPolicy],
) -> tuple[list[Verdict], list[dict[str, Any]]]:
    """SCC admission's verdicts in the namespace: one for what no usable SCC allows (it
    denies those), one per usable SCC allowing some control (it does not); and, for the
    evidence, each usable SCC with what it allows and who may use it."""
    usable = []
    for scc in sorted(sccs, key=lambda s: s.name):
        users = _users(inputs, namespace, tenant, scc)
        if users:
            usable.append((scc, scc_allows(scc.spec), users))
    evidence = [
        {"scc": scc.name, "allows": list(allows), "usable_by": users}
        for scc, allows, users in usable
    ]
    if not usable:
        why = "no SCC is usable by the namespace's pods: SCC admission refuses every pod"
        return [Verdict(SCC_SOURCE, True, why, CONTROLS)], evidence
    opened = {c for _, allows, _ in usable for c in allows}
    denied = tuple(c for c in CONTROLS if c not in opened)
    names = ", ".join(scc.name for scc, _, _ in usable)
    found = []
    if denied:
        why = f"no SCC usable here ({names}) allows {', '.join(denied)}"
        found.append(Verdict(SCC_SOURCE, True, why, denied))
    for scc, allows, users in usable:
        if allows:
            who = "; ".join(f"{u['subject']} ({u['via']})" for u in users)
            why = f"allows {', '.join(allows)} to pods here; usable by {who}"
            found.append(Verdict(f"{SCC_SOURCE} {scc.name}", False, why))
    return found, evidence


def _users(
    inputs: PostureInputs, namespace: str, tenant: TenantInfo, scc: AdmissionPolicy
) -> list[dict[str, str]]:
    """Who among the tenant's pods' requesters and service accounts may use the SCC, and how."""
    found = []
    principals = set(tenant.principals)
    for user in _strings(scc.spec.get("users")):
        if user.startswith(f"{SA_USER_PREFIX}{namespace}:") or f"user:{user}" in principals:
            found.append({"subject": f"User:{user}", "via": f"the SCC's users field ({scc.name})"})
    wide = (f"{SA_GROUP_PREFIX}{namespace}", ALL_SERVICE_ACCOUNTS, ALL_AUTHENTICATED)
    for group in _strings(scc.spec.get("groups")):
        if group in wide or f"group:{group}" in principals:
            found.append(
                {"subject": f"Group:{group}", "via": f"the SCC's groups field ({scc.name})"}
            )
    grants = can(inputs, tenant, "use", SCC_GROUP, SCC_RESOURCE, namespace, scc.name)
    for grant in grants:
        if _reaches(grant.subject, namespace):
            binding = grant.as_evidence()["binding"]
            found.append({"subject": grant.subject, "via": f"{binding} -> {grant.role_name}"})
    return list({(f["subject"], f["via"]): f for f in found}.values())


def _reaches(subject: str, namespace: str) -> bool:
    """Whether a tenant subject may be a pod's requester or service account in `namespace`:
    a service account (or the group of one namespace's) only there."""
    kind, _, name = subject.partition(":")
    if kind == "ServiceAccount":
        return name.split("/", 1)[0] == namespace
    if kind == "User" and name.startswith(SA_USER_PREFIX):
        return name.removeprefix(SA_USER_PREFIX).split(":", 1)[0] == namespace
    if kind == "Group" and name.startswith(SA_GROUP_PREFIX):
        return name.removeprefix(SA_GROUP_PREFIX) == namespace
    return True


def _strings(raw: Any) -> list[str]:
    return [str(v) for v in raw if isinstance(v, str)] if isinstance(raw, list) else []
