"""Which admission kinds a live sync lists, and what a failed list of one means. PURE.

inventory.sources.kube makes the calls (the only module importing the client); this module
names the kinds and turns an answer into an AdmissionRead, so a read that failed is stored as
such and K8S-009 says "unknown" for it instead of passing on an empty list.
"""

from __future__ import annotations

from typing import Any

from inventory.snapshot_admission import FAILED, FORBIDDEN, NOT_SERVED, READ, AdmissionRead

# (listing label, group, version, plural, kind). The label is the key of the list's watch
# position: Kyverno's ClusterPolicy must not share one with the GPU Operator's.
ADMISSION_CUSTOM_KINDS: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "ValidatingAdmissionPolicy",
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
    ),
    (
        "ValidatingAdmissionPolicyBinding",
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("KyvernoClusterPolicy", "kyverno.io", "v1", "clusterpolicies", "ClusterPolicy"),
    ("KyvernoPolicy", "kyverno.io", "v1", "policies", "Policy"),
    # What lets pods past Kyverno's rules (K8S-009 takes the controls it lifts out).
    ("KyvernoPolicyException", "kyverno.io", "v2", "policyexceptions", "PolicyException"),
    # Gatekeeper's Config: the namespaces its webhook exempts (K8S-009 reads them).
    ("GatekeeperConfig", "config.gatekeeper.sh", "v1alpha1", "configs", "Config"),
    # OpenShift's SecurityContextConstraints: its pod admission (PSA is warn/audit only there
    # by default). Not served off OpenShift, which is an answer like any absent CRD.
    (
        "SecurityContextConstraints",
        "security.openshift.io",
        "v1",
        "securitycontextconstraints",
        "SecurityContextConstraints",
    ),
)
# Versions to ask for when one is not served, in turn: ValidatingAdmissionPolicy is GA (v1)
# from Kubernetes 1.30, and served only as v1beta1 on 1.28 and 1.29; Kyverno serves
# PolicyException as v2 from 1.13, v2beta1 from 1.11 and only v2alpha1 on 1.9 and 1.10.
FALLBACK_VERSIONS: dict[tuple[str, str], str] = {
    ("admissionregistration.k8s.io", "v1"): "v1beta1",
    ("kyverno.io", "v2"): "v2beta1",
    ("kyverno.io", "v2beta1"): "v2alpha1",
}
# Gatekeeper makes one CRD per ConstraintTemplate in this group: its kinds are discovered.
GATEKEEPER_GROUP_VERSION = ("constraints.gatekeeper.sh", "v1beta1")
GATEKEEPER_PREFIX = "Gatekeeper:"  # listing label: GATEKEEPER_PREFIX + the constraint kind
ADMISSION_LABELS = {label: (g, v, p, k) for label, g, v, p, k in ADMISSION_CUSTOM_KINDS}


def is_admission_label(label: str) -> bool:
    return label in ADMISSION_LABELS or label.startswith(GATEKEEPER_PREFIX)


def resource_of(label: str, plural: str = "") -> str:
    if label in ADMISSION_LABELS:
        group, _, plural, _ = ADMISSION_LABELS[label]
        return f"{group}/{plural}"
    return f"{GATEKEEPER_GROUP_VERSION[0]}/{plural or label.removeprefix(GATEKEEPER_PREFIX)}"


def read_outcome(resource: str, error: str | None) -> AdmissionRead:
    """AdmissionRead for a list that succeeded (error None) or failed with `error`, the
    SourceError's text ("... HTTP 404 ...")."""
    if error is None:
        return AdmissionRead(resource=resource, status=READ)
    if "HTTP 404" in error:
        return AdmissionRead(resource=resource, status=NOT_SERVED)
    status = FORBIDDEN if ("HTTP 403" in error or "HTTP 401" in error) else FAILED
    return AdmissionRead(resource=resource, status=status, detail=error[:500])


def fix_item(label: str, item: dict[str, Any]) -> dict[str, Any]:
    """A listed item with its own kind and apiVersion (a list may leave them out, and the
    lister fills in the label)."""
    if label in ADMISSION_LABELS:
        group, version, _, kind = ADMISSION_LABELS[label]
    else:
        (group, version), kind = GATEKEEPER_GROUP_VERSION, label.removeprefix(GATEKEEPER_PREFIX)
    if item.get("kind") in (None, label):
        item["kind"] = kind
    if not isinstance(item.get("apiVersion"), str) or "/" not in item["apiVersion"]:
        item["apiVersion"] = f"{group}/{version}"
    return item


def constraint_kinds(discovery: Any) -> list[tuple[str, str]]:
    """(kind, plural) of each constraint CRD in an APIResourceList (subresources left out)."""
    resources = discovery.get("resources") if isinstance(discovery, dict) else None
    found = []
    for r in resources if isinstance(resources, list) else []:
        name, kind = (r.get("name"), r.get("kind")) if isinstance(r, dict) else (None, None)
        if isinstance(name, str) and isinstance(kind, str) and "/" not in name:
            found.append((kind, name))
    return sorted(found)
