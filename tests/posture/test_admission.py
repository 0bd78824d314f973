"""K8S-009 over real-shaped admission objects (normalised as a sync reads them): Pod Security
Admission labels, ValidatingAdmissionPolicies through their bindings, Kyverno and Gatekeeper;
a failed read makes it say unknown, never pass."""

from __future__ import annotations

from dataclasses import replace

import pytest

import posture.rules  # noqa: F401
from inventory.snapshot_admission import AdmissionRead
from inventory.sources.normalise import normalise
from posture.rules.registry import run_checks
from tests.posture.admission_world import (
    binding,
    kyverno,
    namespace,
    psp_constraints,
    selector,
    vap,
)
from tests.posture.builders import inputs, pod, tenant

ALPHA = tenant("alpha", "external")
GPU = {"nvidia.com/gpu": 1}
EXTERNAL = selector(**{"gpuposture.io/trust-class": "external"})
NOT_SYSTEM = {
    "matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
    ]
}


def world(objects, pods=None, reads=()):
    """The cluster of `objects` with alpha's GPU pod; namespaces as the objects label them."""
    read = normalise(objects)
    base = inputs(pods=pods or (pod("alpha", gpu=GPU),), tenants=(ALPHA,))
    labelled = {n.name: n for n in read.namespaces}
    namespaces = tuple(labelled.get(n.name, n) for n in base.snapshot.namespaces)
    snapshot = replace(
        base.snapshot,
        namespaces=namespaces,
        admission_policies=read.admission_policies,
        admission_reads=tuple(reads),
    )
    return replace(base, snapshot=snapshot)


def k8s009(objects, **kwargs):
    return run_checks(world(objects, **kwargs), only=["K8S-009"])


def with_pod_selector(obj, block, key="objectSelector"):
    obj["spec"].setdefault(block, {})[key] = {"matchLabels": {"admission": "checked"}}
    return obj


def labelled_alpha(**extra):
    ns = namespace("alpha")
    ns["metadata"]["labels"] |= extra
    return ns


@pytest.mark.parametrize(
    ("objects", "fires"),
    [
        pytest.param([namespace("alpha")], True, id="nothing"),
        pytest.param([namespace("alpha", enforce="baseline")], False, id="psa-baseline"),
        pytest.param([namespace("alpha", enforce="restricted")], False, id="psa-restricted"),
        pytest.param([namespace("alpha", enforce="privileged")], True, id="psa-privileged"),
        pytest.param(
            [namespace("alpha", audit="restricted", warn="restricted")], True, id="psa-audit-warn"
        ),
        pytest.param([namespace("alpha"), vap(), binding()], False, id="vap-deny"),
        pytest.param(
            [namespace("alpha"), vap(), binding(actions=("Audit", "Warn"))], True, id="vap-audit"
        ),
        pytest.param([namespace("alpha"), binding()], True, id="binding-without-its-policy"),
        pytest.param(
            [namespace("alpha"), vap(resources=("deployments",)), binding()],
            True,
            id="vap-not-on-pods",
        ),
        pytest.param(
            [namespace("alpha"), vap(), binding(namespace_selector=EXTERNAL)],
            True,
            id="binding-selects-other-namespaces",
        ),
        pytest.param(
            [
                labelled_alpha(**{"gpuposture.io/trust-class": "external"}),
                vap(),
                binding(namespace_selector=EXTERNAL),
            ],
            False,
            id="binding-selects-the-class-label",
        ),
        pytest.param(
            [namespace("alpha"), vap(namespace_selector=EXTERNAL), binding()],
            True,
            id="policy-selects-other-namespaces",
        ),
        pytest.param(
            [namespace("alpha"), vap(), binding(namespace_selector=NOT_SYSTEM)],
            False,
            id="binding-not-in-expression",
        ),
        pytest.param(
            [namespace("alpha"), vap(), with_pod_selector(binding(), "matchResources")],
            True,
            id="binding-judges-labelled-pods-only",
        ),
        pytest.param([namespace("alpha"), kyverno()], False, id="kyverno-enforce"),
        pytest.param([namespace("alpha"), kyverno(action="Audit")], True, id="kyverno-audit"),
        pytest.param(
            [namespace("alpha"), kyverno(namespaces=("team-*",))], True, id="kyverno-elsewhere"
        ),
        pytest.param(
            [namespace("alpha"), kyverno(namespaces=("alph*",))], False, id="kyverno-wildcard"
        ),
        pytest.param(
            [namespace("alpha"), kyverno(exclude=("alpha",))], True, id="kyverno-excludes-it"
        ),
        pytest.param(
            [namespace("alpha"), kyverno(kinds=("Deployment",))], True, id="kyverno-not-on-pods"
        ),
        pytest.param(
            [namespace("alpha"), kyverno(kind="Policy", policy_namespace="alpha")],
            False,
            id="kyverno-policy-in-namespace",
        ),
        pytest.param(
            [namespace("alpha"), kyverno(kind="Policy", policy_namespace="beta")],
            True,
            id="kyverno-policy-in-another-namespace",
        ),
        pytest.param(
            [namespace("alpha"), kyverno(overrides=[{"action": "Audit", "namespaces": ["al*"]}])],
            True,
            id="kyverno-enforce-overridden-to-audit-here",
        ),
        pytest.param(
            [namespace("alpha"), kyverno(overrides=[{"action": "Audit", "namespaces": ["beta"]}])],
            False,
            id="kyverno-enforce-overridden-elsewhere",
        ),
        pytest.param(
            [
                namespace("alpha"),
                kyverno(overrides=[{"action": "Audit", "namespaceSelector": selector(tier="lab")}]),
            ],
            False,
            id="kyverno-override-selects-other-namespaces",
        ),
        pytest.param(
            [
                namespace("alpha"),
                kyverno(
                    rule_overrides=[
                        {
                            "action": "Audit",
                            "namespaceSelector": selector(
                                **{"kubernetes.io/metadata.name": "alpha"}
                            ),
                        }
                    ]
                ),
            ],
            True,
            id="kyverno-rule-override-selects-it",
        ),
        pytest.param(
            [
                namespace("alpha"),
                kyverno(action="Audit", overrides=[{"action": "Enforce", "namespaces": ["alpha"]}]),
            ],
            False,
            id="kyverno-audit-enforced-here",
        ),
        pytest.param([namespace("alpha"), *psp_constraints()], False, id="gatekeeper-default-deny"),
        pytest.param(
            [
                namespace("alpha"),
                *(with_pod_selector(c, "match", "labelSelector") for c in psp_constraints()),
            ],
            True,
            id="gatekeeper-labelled-pods-only",
        ),
        pytest.param(
            [namespace("alpha"), *psp_constraints(action="dryrun")], True, id="gatekeeper-dryrun"
        ),
        pytest.param(
            [namespace("alpha"), *psp_constraints(excluded=("alpha",))],
            True,
            id="gatekeeper-excluded",
        ),
        pytest.param(
            [namespace("alpha"), *psp_constraints(kinds=("Service",))],
            True,
            id="gatekeeper-not-pods",
        ),
    ],
)
def test_k8s009_fires_only_where_nothing_denies_bad_pods(objects, fires):
    drafts = k8s009(objects)
    assert bool(drafts) is fires
    if fires:
        (draft,) = drafts
        assert (draft.subject_kind, draft.subject_name, draft.tenants) == (
            "Namespace",
            "alpha",
            ("alpha",),
        )
        assert draft.evidence["verdict"] == "not enforced"
        # Evidence names everything looked at, each with why it does not count.
        looked_at = [v["looked_at"] for v in draft.evidence["looked_at"]]
        assert looked_at[0] == "PSA"
        assert not any(v["enforces"] for v in draft.evidence["looked_at"])


def test_evidence_says_why_each_policy_does_not_count():
    objects = [
        namespace("alpha", audit="restricted"),
        vap(),
        binding(actions=("Audit",)),
        kyverno(action="Audit"),
    ]
    (draft,) = k8s009(objects)
    why = {v["looked_at"]: v["why"] for v in draft.evidence["looked_at"]}
    assert "no enforce label" in why["PSA"]
    assert "without Deny" in why["ValidatingAdmissionPolicyBinding gpuposture-pod-rules-external"]
    assert "does not block" in why["ClusterPolicy gpuposture-pod-rules"]
    assert draft.evidence["pod_security_labels"] == {
        "pod-security.kubernetes.io/audit": "restricted"
    }


def test_namespaces_without_gpu_pods_or_of_the_platform_are_not_judged():
    assert k8s009([namespace("alpha")], pods=(pod("alpha"),)) == []
    assert k8s009([namespace("kube-system")], pods=(pod("kube-system", gpu=GPU),)) == []


FORBIDDEN = AdmissionRead(
    "kyverno.io/clusterpolicies",
    "forbidden",
    "listing KyvernoClusterPolicy: HTTP 403: clusterpolicies.kyverno.io is forbidden",
)


def test_a_policy_list_that_failed_makes_it_unknown_not_a_pass():
    (draft,) = k8s009([namespace("alpha")], reads=(FORBIDDEN,))
    assert draft.evidence["verdict"] == "unknown"
    assert "unknown" in draft.title and "kyverno.io/clusterpolicies" in draft.title
    assert draft.evidence["policy_reads"][0]["status"] == "forbidden"


def test_what_was_read_still_counts_when_another_list_failed():
    assert k8s009([namespace("alpha", enforce="baseline")], reads=(FORBIDDEN,)) == []
    assert k8s009([namespace("alpha"), vap(), binding()], reads=(FORBIDDEN,)) == []


def test_a_crd_not_served_is_an_answer_not_unknown():
    absent = AdmissionRead("kyverno.io/clusterpolicies", "not served")
    (draft,) = k8s009([namespace("alpha")], reads=(absent,))
    assert draft.evidence["verdict"] == "not enforced"
