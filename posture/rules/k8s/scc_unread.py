"""K8S-009 on OpenShift when the sync did not read RBAC: "cannot tell", never a pass. PURE.

An SCC is usable in a namespace through an RBAC grant of `use` (scc.py). Where the cluster's
last full sync did not read Roles, RoleBindings, ClusterRoles or ClusterRoleBindings (an
export that left them out), a grant of an SCC allowing privileged, hostPID, hostPath... may sit
in what was not read: scc_verdicts then denies those controls only as read, and says so in a
verdict that covers nothing. Here the namespace's finding names the kinds not read and the
SCCs that could be granted; where they are all that is missing (nothing read opens a control)
it says it cannot tell, weighed low with the basis in the evidence, as K8S-007 does for pods
restricted as read where CNI policy kinds were not listed (egress.py, UNLISTED_BASIS). A
namespace where PSA, a VAP, Kyverno or Gatekeeper denies those controls is covered as before.

Why a finding and not K8S-009 held back (posture.judged, `needs`): `needs` is per check, so it
would hold K8S-009 on every cluster missing RBAC, OpenShift or not, and in every namespace,
including those another control covers; and a check held back on a first sync shows nothing
at all, which reads as a pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from inventory.sources.admission_controls import CONTROLS
from posture.rules.k8s.admission_cover import Verdict, lacking_names
from posture.rules.k8s.scc import opening_said
from posture.rules.registry import FindingDraft

RBAC_GROUP = "rbac.authorization.k8s.io"
UNREAD_RBAC_BASIS = (
    "unverified: no SCC usable here as read allows these controls, but the last full sync did "
    "not read RBAC kinds through which the namespace's pods may be granted `use` of an SCC that "
    "does, so the finding weighs as low, not as a confirmed high (as K8S-007 does for policy "
    "kinds not listed)"
)


def grantable_evidence(
    draft: FindingDraft,
    found: Sequence[Verdict],
    unread: Sequence[str],
    grantable: Sequence[dict[str, Any]],
) -> FindingDraft:
    """The draft with, where an SCC RBAC not read may grant allows a control nothing else
    denies, the kinds not read (`rbac_kinds_not_read`, each with its grant) and those SCCs
    (`sccs_rbac_may_grant`). Where the draft was otherwise known (no admission list failed,
    the namespace's labels read), its title says which controls are open and which unknown;
    where those in doubt are all it lacks, verdict "unknown" and severity low (`basis`)."""
    lacking = lacking_names(found)
    sccs = [
        {"scc": g["scc"], "allows": [c for c in g["allows"] if c in lacking]}
        for g in grantable
        if set(g["allows"]) & set(lacking)
    ]
    if not sccs:
        return draft
    evidence = {
        **draft.evidence,
        "rbac_kinds_not_read": [{"kind": k, "grant": _grant(k)} for k in unread],
        "sccs_rbac_may_grant": sccs,
    }
    if evidence["verdict"] == "unknown":  # its title already says what could not be read
        return replace(draft, evidence=evidence)
    doubted = {c for s in sccs for c in s["allows"]}
    # What a usable SCC opens is known open whatever RBAC was not read: the check's severity.
    known = [c for c in lacking if c not in doubted]
    where = f"Namespace {draft.subject_name} of tenant {evidence['tenant']}"
    said = (
        f"no SCC usable as read allows {', '.join(c for c in CONTROLS if c in doubted)}, but "
        f"{', '.join(unread)} were not read and may grant its pods SCC "
        f"{', '.join(s['scc'] for s in sccs)}"
    )
    if known:
        opening = [
            s
            for s in evidence.get("security_context_constraints") or ()
            if set(s["allows"]) & set(known)
        ]
        title = (
            f"{where}: {evidence['gpu_pods']} GPU pod(s) and nothing at admission denying "
            f"{', '.join(known)} (SCC {opening_said(opening)} allow(s) them); the rest "
            f"unknown ({said})"
        )
        return replace(draft, evidence=evidence, title=title)
    evidence |= {"verdict": "unknown", "basis": UNREAD_RBAC_BASIS}
    title = f"{where}: admission enforcement unknown ({said})"
    return replace(draft, evidence=evidence, title=title, severity="low")


def _grant(kind: str) -> str:
    plural = f"{kind.lower()}s"
    return (
        f"add {plural} to `kubectl get`, or grant get/list/watch on {plural}.{RBAC_GROUP} "
        "(deploy/rbac.yaml), and sync again"
    )
