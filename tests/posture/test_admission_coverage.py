"""K8S-009 counts what a policy judges, not only that it denies: a namespace is covered when
the enforcing policies together refuse privileged containers, host namespaces, hostPath and
added capabilities; partial coverage is a finding that names what is missing."""

from __future__ import annotations

import pytest

from tests.posture.admission_world import (
    CONTAINERS_ONLY_PRIVILEGED_CEL,
    PRIVILEGED_CEL,
    binding,
    constraint,
    gatekeeper_config,
    kyverno,
    namespace,
    psp_constraints,
    selector,
    vap,
)
from tests.posture.test_admission import k8s009

REQUIRE_LABELS = {"pattern": {"metadata": {"labels": {"team": "?*"}}}}
DROP_ALL = {
    "pattern": {"spec": {"containers": [{"securityContext": {"capabilities": {"drop": ["ALL"]}}}]}}
}


def pss(level="baseline", *excluded):
    body = {"level": level, "version": "latest"}
    if excluded:
        body["exclude"] = [{"controlName": c, "images": ["nvcr.io/*"]} for c in excluded]
    return {"podSecurity": body}


def scoped(*pairs):
    return {
        "enforcementAction": "scoped",
        "scopedEnforcementActions": [
            {"action": action, "enforcementPoints": [{"name": point}]} for action, point in pairs
        ],
    }


def with_spec(objects, **fields):
    for obj in objects:
        obj["spec"].update(fields)
    return objects


def with_rule(obj, **fields):
    for rule in obj["spec"]["rules"]:
        for key, value in fields.items():
            if key == "exclude":
                rule["exclude"] = value
            else:
                rule["match"]["any"][0]["resources"][key] = value
    return obj


@pytest.mark.parametrize(
    ("objects", "verdict", "missing"),
    [
        pytest.param(
            [namespace("alpha"), vap(expression=PRIVILEGED_CEL), binding()],
            "partial",
            [
                "hostPID (POD-002)",
                "hostIPC (POD-002)",
                "hostNetwork (POD-002)",
                "hostPath (POD-003)",
                "capabilities (POD-004)",
            ],
            id="vap-privileged-only",
        ),
        pytest.param(
            [namespace("alpha"), kyverno(validate=REQUIRE_LABELS)],
            "not enforced",
            None,
            id="kyverno-enforces-labels-only",
        ),
        pytest.param(
            [namespace("alpha"), kyverno(validate=DROP_ALL)],
            "not enforced",
            None,
            id="kyverno-drop-all-is-not-no-add",
        ),
        pytest.param(
            [namespace("alpha"), kyverno(validate=pss("baseline", "Capabilities"))],
            "partial",
            ["capabilities (POD-004)"],
            id="kyverno-pss-excludes-capabilities",
        ),
        pytest.param(
            [namespace("alpha"), kyverno(validate=pss("restricted", "HostPath Volumes"))],
            None,
            None,
            id="kyverno-pss-restricted-volume-types-still-refuse-hostpath",
        ),
        pytest.param(
            [namespace("alpha"), kyverno(validate=pss("privileged"))],
            "not enforced",
            None,
            id="kyverno-pss-privileged-level",
        ),
        pytest.param([namespace("alpha"), kyverno(validate=pss())], None, None, id="kyverno-pss"),
        pytest.param(
            [namespace("alpha"), with_spec([kyverno()], admission=False)[0]],
            "not enforced",
            None,
            id="kyverno-background-only",
        ),
        pytest.param(
            [namespace("alpha"), with_rule(kyverno(), operations=["UPDATE"])],
            "not enforced",
            None,
            id="kyverno-update-only",
        ),
        pytest.param(
            [
                namespace("alpha"),
                with_rule(
                    kyverno(),
                    exclude={
                        "any": [
                            {
                                "resources": {
                                    "namespaceSelector": selector(
                                        **{"kubernetes.io/metadata.name": "alpha"}
                                    )
                                }
                            }
                        ]
                    },
                ),
            ],
            "not enforced",
            None,
            id="kyverno-exclude-selects-it",
        ),
        pytest.param(
            [
                namespace("alpha"),
                with_rule(
                    kyverno(),
                    exclude={"any": [{"resources": {"selector": selector(exempt="true")}}]},
                ),
            ],
            "not enforced",
            None,
            id="kyverno-excludes-pods-by-their-labels",
        ),
        pytest.param(
            [
                namespace("alpha"),
                *with_spec(
                    psp_constraints(),
                    **scoped(("deny", "validation.gatekeeper.sh"), ("warn", "gator.gatekeeper.sh")),
                ),
            ],
            None,
            None,
            id="gatekeeper-scoped-deny-at-webhook",
        ),
        pytest.param(
            [
                namespace("alpha"),
                *with_spec(
                    psp_constraints(),
                    **scoped(("deny", "audit.gatekeeper.sh"), ("warn", "validation.gatekeeper.sh")),
                ),
            ],
            "not enforced",
            None,
            id="gatekeeper-scoped-warn-at-webhook",
        ),
        pytest.param(
            [namespace("alpha"), *psp_constraints(), gatekeeper_config("kube-*", "alph*")],
            "not enforced",
            None,
            id="gatekeeper-config-exempts-it",
        ),
        pytest.param(
            [
                namespace("alpha"),
                *psp_constraints(),
                gatekeeper_config("alpha", processes=("audit",)),
            ],
            None,
            None,
            id="gatekeeper-config-exempts-it-from-audit-only",
        ),
        pytest.param(
            [
                namespace("alpha"),
                *psp_constraints()[:-1],
                constraint(kind="K8sPSPCapabilities", parameters={"allowedCapabilities": ["*"]}),
            ],
            "partial",
            ["capabilities (POD-004)"],
            id="gatekeeper-capabilities-allows-all",
        ),
        pytest.param(
            [
                namespace("alpha"),
                *psp_constraints()[:3],
                constraint(
                    kind="K8sPSPHostFilesystem",
                    parameters={"allowedHostPaths": [{"pathPrefix": "/dev", "readOnly": False}]},
                ),
                psp_constraints()[4],
            ],
            "partial",
            ["hostPath (POD-003)"],
            id="gatekeeper-hostfilesystem-allows-dev",
        ),
        pytest.param(
            [namespace("alpha"), *with_spec(psp_constraints(), match={"scope": "Cluster"})],
            "not enforced",
            None,
            id="gatekeeper-cluster-scoped-only",
        ),
        pytest.param(
            [namespace("alpha"), vap(failure_policy="Ignore"), binding()],
            "not enforced",
            None,
            id="vap-failure-policy-ignore",
        ),
        pytest.param(
            [namespace("alpha"), vap(expression=PRIVILEGED_CEL), binding(), *psp_constraints()[1:]],
            None,
            None,
            id="vap-and-gatekeeper-together",
        ),
    ],
)
def test_k8s009_counts_what_each_policy_judges(objects, verdict, missing):
    drafts = k8s009(objects)
    if verdict is None:
        assert drafts == []
        return
    (draft,) = drafts
    assert draft.evidence["verdict"] == verdict
    if missing is not None:
        assert draft.evidence["missing_controls"] == missing
        assert "only part of the pod rules" in draft.title


def test_gatekeeper_ignore_label_exempts_the_namespace():
    ns = namespace("alpha")
    ns["metadata"]["labels"]["admission.gatekeeper.sh/ignore"] = "no-self-managing"
    (draft,) = k8s009([ns, *psp_constraints()])
    assert "admission.gatekeeper.sh/ignore" in draft.evidence["looked_at"][1]["why"]


def test_vap_excluding_pods_does_not_match_them():
    policy = vap()
    policy["spec"]["matchConstraints"]["excludeResourceRules"] = [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"], "resources": ["pods"]}
    ]
    (draft,) = k8s009([namespace("alpha"), policy, binding()])
    assert draft.evidence["verdict"] == "not enforced"


def test_partial_evidence_names_who_enforces_what():
    (draft,) = k8s009([namespace("alpha"), vap(expression=PRIVILEGED_CEL), binding()])
    assert draft.evidence["enforced_controls"] == {
        "privileged": ["ValidatingAdmissionPolicyBinding gpuposture-pod-rules-external"]
    }


def test_a_rule_judging_containers_but_not_init_containers_does_not_cover_privileged():
    objects = [namespace("alpha"), vap(expression=CONTAINERS_ONLY_PRIVILEGED_CEL), binding()]
    (draft,) = k8s009(objects)
    assert draft.evidence["verdict"] == "not enforced"
    assert "judges none of" in draft.evidence["looked_at"][1]["why"]


def test_a_psa_level_the_api_server_cannot_parse_is_enforced_as_restricted():
    assert k8s009([namespace("alpha", enforce="Baseline")]) == []
    (draft,) = k8s009([namespace("alpha", enforce="privileged")])
    assert draft.evidence["verdict"] == "not enforced"


@pytest.mark.parametrize(
    ("match_extra", "exclude"),
    [
        pytest.param(
            {"subjects": [{"kind": "Group", "name": "alpha-devs"}]}, None, id="match-users"
        ),
        pytest.param({"clusterRoles": ["tenant-edit"]}, None, id="match-roles"),
        pytest.param(
            {},
            {
                "any": [
                    {"subjects": [{"kind": "Group", "name": "system:serviceaccounts:kube-system"}]}
                ]
            },
            id="exclude-controllers",
        ),
        pytest.param(
            {},
            {
                "any": [
                    {
                        "subjects": [
                            {
                                "kind": "ServiceAccount",
                                "name": "kuberay-operator",
                                "namespace": "ray-system",
                            }
                        ]
                    }
                ]
            },
            id="exclude-an-operator",
        ),
    ],
)
def test_kyverno_rules_keyed_to_requesters_miss_pods_controllers_create(match_extra, exclude):
    policy = kyverno()
    rule = policy["spec"]["rules"][0]
    rule["match"]["any"][0] |= match_extra
    if exclude:
        rule["exclude"] = exclude
    (draft,) = k8s009([namespace("alpha"), policy])
    assert draft.evidence["verdict"] == "not enforced"


def test_kyverno_excluding_cluster_admins_still_counts():
    policy = kyverno()
    policy["spec"]["rules"][0]["exclude"] = {"any": [{"clusterRoles": ["cluster-admin"]}]}
    assert k8s009([namespace("alpha"), policy]) == []


def test_a_gatekeeper_constraint_exempting_images_holds_for_nobody():
    exempt = {"exemptImages": ["nvcr.io/nvidia/*"]}
    objects = [
        namespace("alpha"),
        constraint(kind="K8sPSPPrivilegedContainer", parameters=exempt),
        *psp_constraints()[1:],
    ]
    (draft,) = k8s009(objects)
    assert draft.evidence["missing_controls"] == ["privileged (POD-001)"]


def test_policies_judging_pods_by_name_only_do_not_count():
    policy = vap()
    policy["spec"]["matchConstraints"]["resourceRules"][0]["resourceNames"] = ["train-0"]
    (draft,) = k8s009([namespace("alpha"), policy, binding()])
    assert "names" in draft.evidence["looked_at"][1]["why"]
    named = with_rule(kyverno(), names=["train-*"])
    assert k8s009([namespace("alpha"), named])[0].evidence["verdict"] == "not enforced"
    gk = with_spec(
        psp_constraints(),
        match={"kinds": [{"apiGroups": [""], "kinds": ["Pod"]}], "name": "train-*"},
    )
    assert k8s009([namespace("alpha"), *gk])[0].evidence["verdict"] == "not enforced"


@pytest.mark.parametrize(
    ("param_ref", "fires"),
    [
        ({"name": "limits", "parameterNotFoundAction": "Allow"}, True),
        ({"name": "limits", "parameterNotFoundAction": "Deny"}, False),
        ({"name": "limits", "namespace": "policy", "parameterNotFoundAction": "Allow"}, False),
    ],
)
def test_vap_params_the_tenant_can_delete_switch_it_off(param_ref, fires):
    policy, bound = vap(), binding()
    policy["spec"]["paramKind"] = {"apiVersion": "v1", "kind": "ConfigMap"}
    bound["spec"]["paramRef"] = param_ref
    assert bool(k8s009([namespace("alpha"), policy, bound])) is fires
