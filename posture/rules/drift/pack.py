"""DRIFT-005: the deployed admission policy pack differs from the generated one (judged by
the PURE posture/rules/drift/pack_diff.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inventory.snapshot_admission import NOT_SERVED, READ, AdmissionPolicy
from posture.inputs import PostureInputs
from posture.rules.drift.pack_diff import pack_drift
from posture.rules.drift.pack_lifts import lifted_rules
from posture.rules.k8s.admission import KYVERNO_EXCEPTIONS
from posture.rules.k8s.kyverno_flags import honoured
from posture.rules.registry import MEMBERS_SHOWN, FindingDraft, check
from posture.rules.subjects import subject_draft

# Differences that let through pods the generated pack denies.
WEAKER = ("mode", "weakened", "lifted")


def deployed_object(policy: AdmissionPolicy) -> dict[str, Any]:
    """A stored admission policy back as the Kubernetes object the comparison takes."""
    metadata: dict[str, Any] = {"name": policy.name, "labels": dict(policy.labels)}
    if policy.namespace:
        metadata["namespace"] = policy.namespace
    metadata["annotations"] = dict(policy.annotations)
    return {
        "apiVersion": policy.api_version,
        "kind": policy.kind,
        "metadata": metadata,
        "spec": policy.spec,
    }


@check(
    id="DRIFT-005",
    title="Deployed admission policy pack differs from the generated one",
    severity="medium",
    scope="cluster",
    rationale=(
        "The policy pack gpuposture generates from the tenant registry (classes, namespaces, "
        "approved sharing, exemptions) is what keeps each tenant's pods within its class at "
        "admission. A pack edited in the cluster, left behind after a registry change, or "
        "still in Audit where the class says Enforce lets through the pods it was meant to "
        "deny, while K8S-009 sees a policy and is satisfied. So does a binding or rule "
        "narrowed by hand (a namespace dropped from its selector, resource rules excluded, a "
        "match condition added) and a Kyverno PolicyException naming the pack's rules."
    ),
    remediation=(
        "Download the cluster's pack again (Enforcement page or `manage.py export_policy_pack "
        "--cluster NAME --dialect vap|kyverno`), review the preview of what it would deny, and "
        "apply it; remove deployed objects labelled `app.kubernetes.io/managed-by: gpuposture` "
        "that the pack no longer contains. Move bindings to Deny / policies to Enforce where "
        "the class says Enforce once the Audit results are clean. Delete a PolicyException "
        "naming the pack's rules and record the exemption in gpuposture instead: the pack "
        "then writes it as a match condition, visible and scoped to the workload."
    ),
    mappings=("SP800-53:CM-3",),
)
def policy_pack_drift(inputs: PostureInputs) -> Iterator[FindingDraft]:
    deployed = [deployed_object(p) for p in inputs.snapshot.admission_policies]
    # Every tenant with a namespace in the cluster: the pack guards them all.
    present = {n.name for n in inputs.snapshot.namespaces}
    tenants = [t for t in inputs.tenants if set(t.namespaces) & present]
    # Kyverno's exceptions it honours (its controller's flags), and whether they were read.
    policies, _ignored, honoured_note = honoured(
        inputs.snapshot.pods, inputs.snapshot.admission_policies
    )
    labels = {n.name: n.labels for n in inputs.snapshot.namespaces}
    unread = [
        f"{r.resource} ({r.status}{': ' + r.detail if r.detail else ''})"
        for r in inputs.snapshot.admission_reads
        if r.resource == KYVERNO_EXCEPTIONS and r.status not in (READ, NOT_SERVED)
    ]
    for dialect, expected in sorted(inputs.policy_packs.items()):
        comparison = pack_drift(expected, deployed)
        lifted = lifted_rules(expected, policies, labels) if dialect == "kyverno" else []
        differences = [*comparison.differences, *lifted]
        if not differences:
            continue
        weaker = [d for d in differences if d.change in WEAKER]
        evidence = {
            "dialect": dialect,
            "compared_objects": comparison.compared,
            "differences": [d.as_dict() for d in differences[:MEMBERS_SHOWN]],
            "difference_count": len(differences),
            "not_compared": list(comparison.not_compared)
            + (unread if dialect == "kyverno" else []),
        }
        if lifted and honoured_note:
            evidence["policy_exceptions"] = honoured_note
        title = (
            f"Policy pack ({dialect}) on {inputs.cluster}: {len(differences)} "
            "difference(s) from the generated pack"
            + (f", {len(weaker)} in a weaker mode" if weaker else "")
        )
        yield subject_draft(
            "DRIFT-005",
            kind="PolicyPack",
            name=dialect,
            tenants=tenants,
            evidence=evidence,
            title=title,
            exposure=len(differences),
        )
