"""A namespace nobody claims is claimed first (DESIGN §3, §5; posture/claims.py): every open
finding that affects only the unclassified party and names that namespace as its party's
groups into one "Claim namespace" action, ranked by the risk it removes; a finding that
affects a real tenant too keeps its own action. Pure: findings as the grouping reads them."""

from __future__ import annotations

from posture.actions import actions_for, group_of
from posture.claims import claim_namespace, with_claim_note
from posture.rules.holding import ENV_RESOURCE
from tests.posture.test_actions import finding

ALONE = {"unclassified": "external"}


def pod(check: str, workload: str, namespace: str, severity: str = "critical", **kw: object):
    evidence = {"workload": f"DaemonSet/{namespace}/{workload}", "tenant": "unclassified"}
    return finding(
        check,
        "DaemonSet",
        workload,
        namespace=namespace,
        severity=severity,
        tenants=ALONE,
        evidence=evidence,
        **kw,
    )


def test_one_claim_action_per_unclaimed_namespace_closes_all_its_findings():
    calico = [
        pod("POD-001", "calico-node", "calico-system"),
        pod("POD-003", "calico-node", "calico-system", "high"),
        pod("POD-001", "csi-node-driver", "calico-system"),
        pod("POD-007", "calico-kube-controllers", "calico-system", "medium"),
        finding("TEN-001", "Namespace", "calico-system", tenants=ALONE),
        finding("K8S-007", "Namespace", "calico-system", severity="medium", tenants=ALONE),
    ]
    longhorn = [pod("POD-003", "longhorn-csi-plugin", "longhorn-system", "high")]
    actions = actions_for([*calico, *longhorn])
    assert [a.title for a in actions] == [
        'Claim namespace calico-system: label it gpuposture.io/platform="true" if the platform '
        "team runs it, or add it to its tenant: closes 6 findings",
        'Claim namespace longhorn-system: label it gpuposture.io/platform="true" if the '
        "platform team runs it, or add it to its tenant: closes 1 finding",
    ]
    first = actions[0]
    assert first.finding_ids == tuple(sorted(f.id for f in calico))
    assert first.check_ids == ("K8S-007", "POD-001", "POD-003", "POD-007", "TEN-001")
    assert first.tenants == ("unclassified",) and first.severity == "critical"
    assert first.risk_removed > actions[1].risk_removed  # ranked by the risk it removes


def test_claim_actions_rank_among_the_others_by_risk_removed():
    # A tenant's critical finding outranks a small add-on namespace, not a big one.
    notebook = finding(
        "K8S-006",
        "StatefulSet",
        "fraud-notebook",
        namespace="fraud-detection",
        severity="critical",
        tenants={"fraud": "sensitive"},
        evidence={"workload": "StatefulSet/fraud-detection/fraud-notebook"},
    )
    small = [pod("POD-007", "cert-manager", "cert-manager", "medium")]
    big = [pod("POD-001", f"agent-{i}", "calico-system") for i in range(5)]
    titles = [a.title.split(":")[0] for a in actions_for([notebook, *small, *big])]
    assert titles == [
        "Claim namespace calico-system",
        "Put authentication in front of the notebook or dashboard of StatefulSet "
        "fraud-detection/fraud-notebook",
        "Claim namespace cert-manager",
    ]


def test_a_finding_that_affects_a_real_tenant_too_is_no_claims():
    # A node's upgrade reaches a tenant's pods and the add-on's: the upgrade, not a claim.
    stack = finding(
        "STACK-001",
        "Node",
        "gpu-ex-01",
        tenants={"fraud": "sensitive", "unclassified": "external"},
        evidence={"node": "gpu-ex-01"},
        pools=("sensitive",),
    )
    identity, _ = group_of(stack)
    assert identity[1] == "upgrade"
    # Only the unclassified party on the node, but no namespace named: not a claim either.
    alone = finding("STACK-006", "Node", "gpu-ex-04", tenants=ALONE, pools=("sensitive",))
    assert group_of(alone)[0][1] == "node"
    # A tenant's pod finding in its namespace: its workload's action.
    mine = finding("POD-001", "Deployment", "train", namespace="team-a", tenants={"a": "internal"})
    assert group_of(mine)[0][1] == "workload"


def test_an_rbac_finding_joins_the_claim_of_its_service_accounts_namespace():
    # (fixrbacun's findings on bindings of unclaimed service accounts carry
    # `principal_namespace`: the binding's own namespace is not the party's.)
    evidence = {"principal_namespace": "longhorn-system", "principal": "longhorn-service-account"}
    binding = finding(
        "K8S-003",
        "ClusterRoleBinding",
        "longhorn-bind",
        tenants=ALONE,
        evidence=evidence,
    )
    role_binding = finding(
        "K8S-004",
        "RoleBinding",
        "edit-mig-config",
        namespace="gpu-operator",
        tenants=ALONE,
        evidence=evidence,
    )
    plugin = pod("POD-003", "longhorn-csi-plugin", "longhorn-system", "high")
    (action,) = actions_for([binding, role_binding, plugin])
    assert action.title.startswith("Claim namespace longhorn-system:")
    assert action.finding_ids == tuple(sorted((binding.id, role_binding.id, plugin.id)))
    # The same binding reaching a tenant's principal too is that binding's own fix.
    shared = binding._replace(tenant_weights={"unclassified": 2.0, "acme": 2.0})
    assert group_of(shared)[0][1] == "finding"


def test_a_configmap_binding_or_sharing_mode_claims_nothing():
    # GPU configuration in the GPU Operator's namespace affecting unclassified pods' nodes:
    # the ConfigMap's namespace is the platform's, not the party's.
    config = finding(
        "K8S-004", "ConfigMap", "time-slicing", namespace="gpu-operator", tenants=ALONE
    )
    binding = finding(
        "K8S-005", "RoleBinding", "reads-operator", namespace="gpu-operator", tenants=ALONE
    )
    # A sharing mode's use is filed under its pool, not a namespace: SHARE-004's approval.
    mode = finding("SHARE-004", "SharingMode", "time_slicing", namespace="shared-ts", tenants=ALONE)
    assert [group_of(f)[0][1] for f in (config, binding, mode)] == ["finding"] * 3


def test_the_claim_note_comes_before_the_checks_remediation():
    calico = {"workload": "DaemonSet/calico-system/calico-node"}
    assert claim_namespace(["unclassified"], "DaemonSet", "calico-system", "n", calico) == (
        "calico-system"
    )
    assert not claim_namespace(["unclassified", "acme"], "DaemonSet", "calico-system", "n", calico)
    note = with_claim_note("Remove privileged.", "calico-system")
    assert note.startswith("First claim namespace calico-system: no tenant claims it")
    assert 'gpuposture.io/platform="true"' in note and "gpuposture.io/tenant=" in note
    assert note.endswith("<tenant slug>). Once a tenant's: Remove privileged.")
    assert with_claim_note("Remove privileged.", "") == "Remove privileged."


def test_a_fix_that_also_closes_a_tenants_findings_keeps_the_unclaimed_ones():
    # An unclaimed pod time-shares research's GPU only through NVIDIA_VISIBLE_DEVICES: removing
    # the variable closes its POD-011 and the pair with research, one change; the namespace's
    # other findings are the claim's.
    scratch = "Pod ml-sandbox/gpu-scratch"
    pod011 = finding(
        "POD-011",
        "Pod",
        "gpu-scratch",
        namespace="ml-sandbox",
        tenants=ALONE,
        evidence={"workload": scratch, "tenant": "unclassified"},
    )
    parties = [
        {"party": "research", "pods": [{"pod": "research-llm/t-0", "resource": "nvidia.com/gpu"}]},
        {
            "party": "unclassified",
            "pods": [
                {"pod": "ml-sandbox/gpu-scratch", "resource": ENV_RESOURCE, "workload": scratch}
            ],
        },
    ]
    pair = finding(
        "SHARE-001",
        "Node",
        "pe-l40s-02",
        severity="critical",
        tenants={"research": "internal", "unclassified": "external"},
        evidence={"parties": parties},
    )
    ten = finding("TEN-001", "Namespace", "ml-sandbox", tenants=ALONE)
    by_check = {a.check_ids: a.title for a in actions_for([pod011, pair, ten])}
    assert by_check[("POD-011", "SHARE-001")].startswith(
        "Request GPUs through the scheduler (not NVIDIA_VISIBLE_DEVICES) in Pod ml-sandbox/"
    )
    assert by_check[("TEN-001",)].startswith("Claim namespace ml-sandbox:")
    # Without the pair, the POD-011 is the claim's like the rest.
    (alone,) = actions_for([pod011, ten])
    assert alone.check_ids == ("POD-011", "TEN-001")


def test_a_binding_only_an_unclaimed_namespaces_accounts_use_joins_its_claim():
    """K8S-008 through Argo CD's controller (unclaimed) writing in fraud's namespace: fraud is
    the victim, the claim decides the cause. With a tenant among the grantees, claiming the
    namespace would not close it: it keeps its own action."""
    victims = {"unclassified": "external", "fraud": "sensitive"}
    evidence = {"principal_namespace": "argocd", "grantees": ["unclassified"]}
    argo = finding(
        "K8S-008", "ClusterRoleBinding", "argocd-controller", tenants=victims, evidence=evidence
    )
    assert claim_namespace(victims, "ClusterRoleBinding", "", "argocd-controller", evidence) == (
        "argocd"
    )
    (action,) = actions_for([argo])
    assert action.title.startswith("Claim namespace argocd:")
    mixed = {**evidence, "grantees": ["acme", "unclassified"]}
    both = {**victims, "acme": "external"}
    assert claim_namespace(both, "ClusterRoleBinding", "", "shared", mixed) == ""
    assert (
        claim_namespace(victims, "ClusterRoleBinding", "", "x", {"grantees": ["unclassified"]})
        == ""
    )
