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

Where the last full sync did not read one of the RBAC kinds (`rbac_unread`: an export that left
out Roles or RoleBindings), a `use` grant may sit in what was not read: a control that only the
SCCs not usable as read allow is not denied for certain. It is "cannot tell" (a verdict that
does not cover it, and the SCCs that could be granted, for the evidence), never denied.
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
from posture.rules.k8s.rbac_eval import RBAC_KINDS, can
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


def rbac_unread(inputs: PostureInputs) -> list[str]:
    """The RBAC kinds the cluster's last full sync certainly did not read, in RBAC_KINDS'
    order: a `use` grant of any SCC may be among their objects."""
    return [kind for kind in RBAC_KINDS if kind in inputs.kinds_unread]


def scc_verdicts(
    inputs: PostureInputs,
    namespace: str,
    tenant: TenantInfo,
    sccs: Sequence[AdmissionPolicy],
    unread: Sequence[str] = (),
) -> tuple[list[Verdict], list[dict[str, Any]], list[dict[str, Any]]]:
    """SCC admission's verdicts in the namespace: one for what no usable SCC allows (it
    denies those), one per usable SCC allowing some control (it does not); for the evidence,
    each usable SCC with what it allows and who may use it; and, with RBAC kinds `unread`,
    each SCC not usable as read that allows a control no usable one does (RBAC not read may
    grant it): those controls get a verdict that does not cover them."""
    usable, others = [], []
    for scc in sorted(sccs, key=lambda s: s.name):
        users = _users(inputs, namespace, tenant, scc)
        if users:
            usable.append((scc, scc_allows(scc.spec), users))
        else:
            others.append((scc, scc_allows(scc.spec)))
    evidence = [
        {"scc": scc.name, "allows": list(allows), "usable_by": users}
        for scc, allows, users in usable
    ]
    opened = {c for _, allows, _ in usable for c in allows}
    # Only an SCC allowing something no usable one allows could change a verdict if granted.
    grantable = [
        {"scc": scc.name, "allows": [c for c in allows if c not in opened]}
        for scc, allows in others
        if unread and set(allows) - opened
    ]
    doubted = {c for g in grantable for c in g["allows"]}
    denied = tuple(c for c in CONTROLS if c not in opened and c not in doubted)
    found = [_unread_verdict(unread, grantable, doubted)] if doubted else []
    if not usable and not doubted:
        why = "no SCC is usable by the namespace's pods: SCC admission refuses every pod"
        return [Verdict(SCC_SOURCE, True, why, CONTROLS)], evidence, grantable
    if denied:
        names = ", ".join(scc.name for scc, _, _ in usable)
        # With none usable as read, RBAC not read may grant any SCC: none allows these.
        where = f"usable here ({names})" if usable else "at all"
        why = f"no SCC {where} allows {', '.join(denied)}"
        found.append(Verdict(SCC_SOURCE, True, why, denied))
    for scc, allows, users in usable:
        if allows:
            who = "; ".join(f"{u['subject']} ({u['via']})" for u in users)
            why = f"allows {', '.join(allows)} to pods here; usable by {who}"
            found.append(Verdict(f"{SCC_SOURCE} {scc.name}", False, why))
    return found, evidence, grantable


def _unread_verdict(
    unread: Sequence[str], grantable: list[dict[str, Any]], doubted: set[str]
) -> Verdict:
    """What SCC admission denies as read but cannot be told for certain: no usable SCC
    allows these controls, but a binding not read may grant an SCC that does."""
    controls = ", ".join(c for c in CONTROLS if c in doubted)
    why = (
        f"unknown for {controls}: no SCC usable as read allows them, but {', '.join(unread)} "
        f"were not read, and RBAC may grant `use` of {', '.join(g['scc'] for g in grantable)}"
    )
    return Verdict(SCC_SOURCE, False, why)


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


def opening_said(opening: Sequence[dict[str, Any]]) -> str:
    """ "privileged (usable by ServiceAccount:ns/default)", for a K8S-009 title, from the
    evidence of usable SCCs (scc_verdicts)."""
    parts = []
    for scc in opening:
        users = scc["usable_by"]
        subjects = sorted({str(u["subject"]) for u in users}) if isinstance(users, list) else []
        parts.append(f"{scc['scc']} (usable by {', '.join(subjects)})")
    return "; ".join(parts)


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
