"""K8S-009 and Kyverno PolicyExceptions: an exception naming a policy's rule and matching pods
in a namespace lifts that rule's controls there (all of them, or those of its `podSecurity`
control names); one narrowed by what a tenant writes (pod labels, names, images, conditions)
lifts them too, and the evidence says why."""

from __future__ import annotations

from typing import Any

import pytest

from tests.posture.admission_world import kyverno, namespace
from tests.posture.builders import container, pod
from tests.posture.test_admission import k8s009

PRIVILEGED_PATTERN = {
    "pattern": {
        "spec": {
            "=(initContainers)": [{"=(securityContext)": {"=(privileged)": "false"}}],
            "containers": [{"=(securityContext)": {"=(privileged)": "false"}}],
        }
    }
}
HOST_NAMESPACES_PATTERN = {
    "pattern": {"spec": {"=(hostPID)": "false", "=(hostIPC)": "false", "=(hostNetwork)": "false"}}
}


def exception(
    *pairs: tuple[str, list[str]],
    namespaces: tuple[str, ...] = ("alpha",),
    kinds: tuple[str, ...] = ("Pod", "Deployment", "ReplicaSet"),
    version: str = "v2",
    **extra: Any,
) -> dict[str, Any]:
    """A PolicyException in the kyverno namespace exempting `pairs` (policy, rule names)."""
    resources: dict[str, Any] = {"kinds": list(kinds)}
    if namespaces:
        resources["namespaces"] = list(namespaces)
    resources |= extra.pop("resources", {})
    spec: dict[str, Any] = {
        "exceptions": [{"policyName": p, "ruleNames": rules} for p, rules in pairs],
        "match": {"any": [{"resources": resources}]},
        **extra,
    }
    return {
        "apiVersion": f"kyverno.io/{version}",
        "kind": "PolicyException",
        "metadata": {"name": "research-profiling", "namespace": "kyverno"},
        "spec": spec,
    }


def split_baseline() -> list[dict[str, Any]]:
    """The kyverno-policies baseline as separate policies, each rule named like upstream's."""
    # hostPath and capabilities: privileged and host namespaces are the two policies' alone,
    # as in kyverno-policies.
    no_add = {"=(securityContext)": {"=(capabilities)": {"X(add)": "null"}}}
    rest = {
        "pattern": {
            "spec": {
                "=(volumes)": [{"X(hostPath)": "null"}],
                "=(initContainers)": [no_add],
                "containers": [no_add],
            }
        }
    }
    policies = [
        kyverno("disallow-privileged-containers", validate=PRIVILEGED_PATTERN),
        kyverno("disallow-host-namespaces", validate=HOST_NAMESPACES_PATTERN),
        kyverno("gpuposture-rest", validate=rest),
    ]
    names = ("privileged-containers", "host-namespaces", "rest")
    for policy, rule in zip(policies, names, strict=True):
        policy["spec"]["rules"][0]["name"] = rule
    return policies


RESEARCH_EXCEPTION = exception(
    ("disallow-privileged-containers", ["privileged-containers", "autogen-privileged-containers"]),
    ("disallow-host-namespaces", ["host-namespaces", "autogen-host-namespaces"]),
)


def research(objects):
    """K8S-009 for the tenant namespace (named alpha in these worlds)."""
    return k8s009([namespace("alpha"), *objects])


def test_split_baseline_alone_covers_the_namespace():
    assert research(split_baseline()) == []


@pytest.mark.parametrize("version", ["v2", "v2beta1", "v2alpha1"])
def test_an_exception_for_the_namespace_lifts_the_rules_it_names(version):
    # Before: the PolicyException was not read and K8S-009 said privileged was enforced.
    changed = {**RESEARCH_EXCEPTION, "apiVersion": f"kyverno.io/{version}"}
    (draft,) = research([*split_baseline(), changed])
    assert draft.evidence["verdict"] == "partial"
    assert draft.evidence["missing_controls"] == [
        "privileged (POD-001)",
        "hostPID (POD-002)",
        "hostIPC (POD-002)",
        "hostNetwork (POD-002)",
    ]
    why = {v["looked_at"]: v["why"] for v in draft.evidence["looked_at"]}
    said = why["ClusterPolicy disallow-privileged-containers"]
    assert "PolicyException kyverno/research-profiling (rule privileged-containers) lifts" in said


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param({"namespaces": ("other",)}, id="another-namespace"),
        pytest.param({"kinds": ("Deployment",)}, id="deployments-only"),
    ],
)
def test_an_exception_elsewhere_or_for_other_kinds_lifts_nothing_here(changed):
    other = exception(
        ("disallow-privileged-containers", ["privileged-containers"]),
        ("disallow-host-namespaces", ["host-namespaces"]),
        **changed,
    )
    assert research([*split_baseline(), other]) == []


def test_an_exception_naming_only_autogen_rules_leaves_the_pod_rule():
    autogen = exception(("disallow-privileged-containers", ["autogen-privileged-containers"]))
    assert research([*split_baseline(), autogen]) == []


def test_rule_name_wildcards_and_namespaced_policies():
    policy = kyverno(
        "no-privileged", kind="Policy", policy_namespace="alpha", validate=PRIVILEGED_PATTERN
    )
    others = split_baseline()[1:]
    assert research([policy, *others]) == []
    wrong = exception(("no-privileged", ["*"]))  # a ClusterPolicy of that name: none
    assert research([policy, *others, wrong]) == []
    (draft,) = research([policy, *others, exception(("alpha/no-privileged", ["*"]))])
    assert draft.evidence["missing_controls"] == ["privileged (POD-001)"]


def test_a_match_narrowed_by_pod_labels_is_one_the_tenant_meets():
    narrowed = exception(
        ("disallow-privileged-containers", ["privileged-containers"]),
        namespaces=(),
        resources={"selector": {"matchLabels": {"profiling": "allowed"}}},
    )
    (draft,) = research([*split_baseline(), narrowed])
    assert draft.evidence["missing_controls"] == ["privileged (POD-001)"]
    why = " ".join(v["why"] for v in draft.evidence["looked_at"])
    assert "pods by their labels: a tenant can meet it" in why


@pytest.mark.parametrize(
    ("pod_security", "missing"),
    [
        pytest.param(
            [{"controlName": "Privileged Containers", "images": ["nvcr.io/nvidia/*"]}],
            ["privileged (POD-001)"],
            id="privileged-by-image",
        ),
        pytest.param([{"controlName": "Running as Non-root"}], None, id="a-control-not-judged"),
        pytest.param(
            [
                {
                    "controlName": "Capabilities",
                    "images": ["*/istio/proxyv2*"],
                    "restrictedField": "spec.initContainers[*].securityContext.capabilities.add",
                    "values": ["NET_ADMIN", "NET_RAW"],
                }
            ],
            None,
            id="capabilities-narrow-values",
        ),
    ],
)
def test_pod_security_exemptions_lift_their_controls_only(pod_security, missing):
    pss = kyverno("psa", validate={"podSecurity": {"level": "baseline", "version": "latest"}})
    pss["spec"]["rules"][0]["name"] = "baseline"
    lifted = exception(("psa", ["baseline"]), namespaces=(), podSecurity=pod_security)
    drafts = research([pss, lifted])
    if missing is None:
        assert drafts == []
    else:
        (draft,) = drafts
        assert draft.evidence["missing_controls"] == missing


CONTROLLERS = "kube-system"


@pytest.mark.parametrize(
    ("subjects", "lifted"),
    [
        pytest.param([{"kind": "ServiceAccount", "name": "runner", "namespace": "alpha"}], True),
        pytest.param(
            [{"kind": "ServiceAccount", "name": "replicaset-controller", "namespace": CONTROLLERS}],
            True,
            id="the-controller-making-deployments-pods",
        ),
        pytest.param([{"kind": "Group", "name": "research-admins"}], True, id="a-group"),
        pytest.param(
            [{"kind": "ServiceAccount", "name": "argo-server", "namespace": "argo"}],
            False,
            id="another-namespaces-account",
        ),
        pytest.param([{"kind": "Group", "name": "system:nodes"}], False, id="system-nodes"),
    ],
)
def test_an_exception_for_some_requesters_lifts_where_the_tenant_may_be_one(subjects, lifted):
    only = exception(("disallow-privileged-containers", ["privileged-containers"]), namespaces=())
    only["spec"]["match"]["any"][0]["subjects"] = subjects
    drafts = research([*split_baseline(), only])
    assert bool(drafts) is lifted
    if lifted:
        why = " ".join(v["why"] for v in drafts[0].evidence["looked_at"])
        assert "requests by" in why and "a tenant can meet it" in why


def kyverno_pod(image: str, *args: str):
    """Kyverno's admission controller pod, with its container's flags."""
    from dataclasses import replace

    main = replace(container("kyverno"), image=image, args=args)
    return pod("kyverno", "kyverno-admission-controller-7d9f", node="cpu-1", containers=(main,))


@pytest.mark.parametrize(
    ("image", "args", "lifted", "said"),
    [
        pytest.param(
            "reg.kyverno.io/kyverno/kyverno:v1.13.4",
            ("--enablePolicyException=true", "--exceptionNamespace=*"),
            True,
            "kyverno/kyverno-admission-controller-7d9f runs with --enablePolicyException",
            id="enabled-any-namespace",
        ),
        pytest.param(
            "reg.kyverno.io/kyverno/kyverno:v1.13.4",
            ("--enablePolicyException=false",),
            False,
            "not applied: kyverno/kyverno-admission-controller-7d9f runs with "
            "--enablePolicyException=false",
            id="disabled",
        ),
        pytest.param(
            "ghcr.io/kyverno/kyverno:v1.10.3",
            (),
            False,
            "where exceptions are off by default",
            id="off-by-default-before-1.11",
        ),
        pytest.param(
            "ghcr.io/kyverno/kyverno:v1.12.5",
            ("--enablePolicyException=true", "--exceptionNamespace=policy-exceptions"),
            False,
            "honours exceptions only in namespace policy-exceptions",
            id="created-outside-the-exception-namespace",
        ),
        pytest.param(
            "ghcr.io/kyverno/kyverno:v1.12.5",
            ("--enablePolicyException", "--exceptionNamespace=kyverno"),
            True,
            "and --exceptionNamespace=kyverno",
            id="created-in-the-exception-namespace",
        ),
    ],
)
def test_kyverno_flags_decide_whether_an_exception_is_applied(image, args, lifted, said):
    pods = (pod("alpha", gpu={"nvidia.com/gpu": 1}), kyverno_pod(image, *args))
    # hostPath and capabilities are left open, so there is a finding either way.
    objects = [namespace("alpha"), *split_baseline()[:2], RESEARCH_EXCEPTION]
    (draft,) = k8s009(objects, pods=pods)
    assert ("privileged (POD-001)" in draft.evidence["missing_controls"]) is lifted
    why = " ".join(v["why"] for v in draft.evidence["looked_at"])
    assert said in why


def test_an_exception_kyverno_ignores_is_named_as_not_applied():
    pods = (
        pod("alpha", gpu={"nvidia.com/gpu": 1}),
        kyverno_pod("ghcr.io/kyverno/kyverno:v1.12.5", "--enablePolicyException=false"),
    )
    # Something else is missing (hostPath), so the finding shows what was looked at.
    objects = [namespace("alpha"), *split_baseline()[:2], RESEARCH_EXCEPTION]
    (draft,) = k8s009(objects, pods=pods)
    assert {"privileged (POD-001)", "hostPID (POD-002)"}.isdisjoint(
        draft.evidence["missing_controls"]
    )
    (ignored,) = [v for v in draft.evidence["looked_at"] if v["looked_at"].startswith("Policy")]
    assert ignored["why"] == (
        "not applied: kyverno/kyverno-admission-controller-7d9f runs with "
        "--enablePolicyException=false"
    )
