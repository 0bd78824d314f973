"""Admission control as read from a cluster: PURE dataclasses (no ORM, no network).

What K8S-009 asks ("does anything enforce the class's pod rules in this namespace?") and
DRIFT-005 asks ("is the deployed pack the generated one?") is read into these: one
`AdmissionPolicy` per ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding, Kyverno
ClusterPolicy / Policy / PolicyException or Gatekeeper constraint, each with the scopes it
matches; and one
`AdmissionRead` per kind a live sync tried to list, so a read that failed is known as such
(the check then says "unknown", never "pass"). Pod Security Admission is the namespaces'
own labels (inventory.snapshot.Namespace.labels).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# engines
VAP = "vap"  # ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1)
VAP_BINDING = "vap_binding"  # ValidatingAdmissionPolicyBinding
KYVERNO = "kyverno"  # kyverno.io/v1 ClusterPolicy / Policy
GATEKEEPER = "gatekeeper"  # constraints.gatekeeper.sh/v1beta1, any kind
# Gatekeeper's Config (config.gatekeeper.sh): namespaces its webhook never judges.
GATEKEEPER_CONFIG = "gatekeeper_config"
# Kyverno's PolicyException (kyverno.io/v2, v2beta1, v2alpha1; namespaced): lets what it
# matches past the Kyverno rules it names. Its scopes say where, and `controls` what it lifts.
KYVERNO_EXCEPTION = "kyverno_exception"
# OpenShift's SecurityContextConstraints (security.openshift.io/v1, cluster-scoped): an SCC
# ALLOWS; its fields (it has no spec) are kept as `spec`, judged by posture.rules.k8s.scc.
SCC = "scc"

# AdmissionRead.status
READ = "read"
NOT_SERVED = "not served"  # the CRD or API group is absent: an answer, not a failure
FORBIDDEN = "forbidden"
FAILED = "failed"
# A snapshot of an OpenShift cluster without SecurityContextConstraints (kubectl lists only
# what it is asked for): its pod admission was not seen.
NOT_IN_SNAPSHOT = "not in the snapshot"


@dataclass(frozen=True)
class AdmissionScope:
    """What one policy (or one Kyverno rule, one binding) applies to, and what it does."""

    # VAP binding validationActions (Deny, Warn, Audit); Kyverno Enforce / Audit; Gatekeeper
    # enforcementAction (deny, dryrun, warn). () on a VAP itself: its bindings say.
    actions: tuple[str, ...] = ()
    # Resource names ("pods", "*") for VAP rules; kinds ("Pod", "*", "v1/Pod") elsewhere.
    resources: tuple[str, ...] = ()
    operations: tuple[str, ...] = ()  # VAP rules: CREATE, UPDATE, "*"; () = not said
    namespaces: tuple[str, ...] = ()  # limited to these (Kyverno wildcards allowed); () = any
    excluded_namespaces: tuple[str, ...] = ()
    match_labels: dict[str, str] = field(default_factory=dict)  # the namespaceSelector
    match_expressions: tuple[dict[str, Any], ...] = ()
    # An objectSelector (VAP), resources.selector (Kyverno) or labelSelector (Gatekeeper), or
    # object names (VAP resourceNames, Kyverno names, Gatekeeper match.name): it judges only
    # pods carrying certain labels or names, so a tenant can step around it.
    pod_selector: bool = False
    # Kyverno's validationFailureActionOverrides / a rule's failureActionOverrides: another
    # action in some namespaces, each {"action", "namespaces", "match_labels",
    # "match_expressions"} (namespaces by pattern, or by namespaceSelector), first match wins.
    action_overrides: tuple[dict[str, Any], ...] = ()
    # Namespaces left out by selector (a Kyverno exclude's namespaceSelector), each
    # {"match_labels", "match_expressions"}.
    excluded_selectors: tuple[dict[str, Any], ...] = ()
    # Which pod controls the rule judges (inventory.sources.admission_controls.CONTROLS); on a
    # VAP binding (): its policy says.
    controls: tuple[str, ...] = ()
    # Why the scope does not hold for a tenant's pods though its action says deny (Kyverno
    # `admission: false` or a match / exclude keyed to requesters, a VAP with failurePolicy
    # Ignore), "" when it holds.
    inert: str = ""
    # The Kyverno rule the scope is of ("" elsewhere): a PolicyException names rules.
    rule: str = ""
    # On a PolicyException's scope: how a tenant's pod can meet a match narrowed by what the
    # tenant writes (pod labels or names, images, conditions on the request, requesters);
    # "" when it is not narrowed so.
    narrowed_by: str = ""
    # On a PolicyException's scope: the requesters its match is limited to
    # ("ServiceAccount:ns/name", "Group:name", "User:name", "Role:ns:name", "ClusterRole:name");
    # () when it is not.
    requesters: tuple[str, ...] = ()


@dataclass(frozen=True)
class AdmissionPolicy:
    engine: str
    kind: str
    api_version: str
    namespace: str  # "" for cluster-scoped objects
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)  # gpuposture.io/* only
    policy_name: str = ""  # a VAP binding: the policy it binds
    scopes: tuple[AdmissionScope, ...] = ()
    # The spec as deployed, for DRIFT-005's comparison with the generated pack.
    spec: dict[str, Any] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


@dataclass(frozen=True)
class AdmissionRead:
    """How a live sync's list of one admission kind went (`resource`: group/plural)."""

    resource: str
    status: str
    detail: str = ""
