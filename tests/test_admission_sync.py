"""Admission control read from the live API (the official client against the fake API server)
and from a `kubectl get -o json` snapshot: VAPs and bindings, Kyverno, Gatekeeper constraints
(discovered), PSA labels; absent CRDs are an answer, a list the account may not make is
recorded and makes K8S-009 say unknown."""

from __future__ import annotations

import json

import pytest

import posture.rules  # noqa: F401
from inventory.models import ClusterObject
from inventory.services import cluster_sync
from inventory.sources.files import SnapshotFileSource
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sync import cluster_get_or_create
from posture.inputs import TenantInfo
from posture.read_model import posture_inputs
from posture.rules.registry import run_checks
from tests.kubeapi import FakeKubeAPI
from tests.posture.admission_world import (
    binding,
    constraint,
    gatekeeper_config,
    kyverno,
    namespace,
    selector,
    vap,
)
from tests.posture.builders import trust_class
from tests.posture.gpu_access_world import container, node, pod

pytestmark = pytest.mark.django_db

KYVERNO_POLICIES = "/apis/kyverno.io/v1/clusterpolicies"
CLASS = {"gpuposture.io/trust-class": "external"}
TENANTS = tuple(
    TenantInfo(slug, slug.title(), trust_class("external"), (slug,))
    for slug in ("alpha", "beta", "gamma")
)


@pytest.fixture(autouse=True)
def full_lists(settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 0


def gpu_pod(ns: str) -> dict:
    return pod(ns, f"{ns}-train", container(resources={"limits": {"nvidia.com/gpu": "1"}}))


def admission_world() -> list[dict]:
    """alpha: nothing enforces; beta: PSA baseline; gamma: a Deny binding selecting its class
    label. A Kyverno policy in Audit and a Gatekeeper constraint in dryrun block nothing."""
    gamma = namespace("gamma")
    gamma["metadata"]["labels"] |= CLASS
    return [
        node("gpu-a", gpus=4),
        namespace("alpha"),
        namespace("beta", enforce="baseline", **{"enforce-version": "v1.31"}),
        gamma,
        gpu_pod("alpha"),
        gpu_pod("beta"),
        gpu_pod("gamma"),
        vap(),
        binding(namespace_selector=selector(**CLASS)),
        kyverno(action="Audit"),
        constraint(action="dryrun"),
    ]


def _source(api: FakeKubeAPI, tmp_path) -> KubeSource:
    return KubeSource(
        kubeconfig=str(api.kubeconfig(tmp_path)),
        context="fake",
        settings=KubeSettings(page_size=2, read_timeout=5.0),
    )


def _policies(cluster) -> list[str]:
    rows = ClusterObject.objects.filter(cluster=cluster, kind="admission_policy")
    return sorted(
        f"{ns}/{name}" if ns else name for ns, name in rows.values_list("namespace", "name")
    )


def _reads(cluster) -> dict[str, str]:
    rows = ClusterObject.objects.filter(cluster=cluster, kind="admission_read")
    return {row["resource"]: row["status"] for row in rows.values_list("data", flat=True)}


def _k8s009(cluster) -> dict[str, str]:
    drafts = run_checks(posture_inputs(cluster, tenants=TENANTS), only=["K8S-009"])
    return {d.subject_name: d.evidence["verdict"] for d in drafts}


POLICIES = [
    "ClusterPolicy/gpuposture-pod-rules",
    "K8sPSPPrivilegedContainer/no-privileged",
    "ValidatingAdmissionPolicy/gpuposture-pod-rules",
    "ValidatingAdmissionPolicyBinding/gpuposture-pod-rules-external",
]


def test_live_admission_objects_are_read_and_judged(tmp_path):
    with FakeKubeAPI(admission_world()) as api:
        cluster = cluster_get_or_create(name="live")
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
    assert run.status == "succeeded", run.error
    assert _policies(cluster) == POLICIES
    assert _reads(cluster) == {
        "admissionregistration.k8s.io/validatingadmissionpolicies": "read",
        "admissionregistration.k8s.io/validatingadmissionpolicybindings": "read",
        "kyverno.io/clusterpolicies": "read",
        "kyverno.io/policies": "read",
        "kyverno.io/policyexceptions": "read",
        "config.gatekeeper.sh/configs": "read",
        "constraints.gatekeeper.sh/k8spspprivilegedcontainer": "read",
        "security.openshift.io/securitycontextconstraints": "read",
    }
    # Kyverno's ClusterPolicy is not taken for the GPU Operator's.
    assert not ClusterObject.objects.filter(cluster=cluster, kind="gpu_operator_policy").exists()
    assert _k8s009(cluster) == {"alpha": "not enforced"}


def test_a_cluster_serving_vap_only_as_v1beta1_is_read_there(tmp_path):
    """Kubernetes 1.28 and 1.29 serve ValidatingAdmissionPolicy only as v1beta1: the policy
    and its binding are read there (before, 'not served', and K8S-009 judged without them)."""
    with FakeKubeAPI(admission_world()) as api:
        api.admission_version = "v1beta1"
        cluster = cluster_get_or_create(name="k8s-1-29")
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
    assert run.status == "succeeded", run.error
    assert _policies(cluster) == POLICIES
    assert _reads(cluster)["admissionregistration.k8s.io/validatingadmissionpolicies"] == "read"


def test_a_snapshot_gives_the_same_admission_objects_as_the_live_api(tmp_path):
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": admission_world()}))
    cluster = cluster_get_or_create(name="file")
    run = cluster_sync(cluster=cluster, source=SnapshotFileSource([str(path)]))
    assert run.status == "succeeded"
    assert _policies(cluster) == POLICIES
    assert _reads(cluster) == {}  # a file holds what it holds: nothing failed to be read
    assert _k8s009(cluster) == {"alpha": "not enforced"}


def test_absent_crds_are_not_an_error(tmp_path):
    with FakeKubeAPI(admission_world()[:7]) as api:
        api.not_served = {
            "kyverno.io",
            "constraints.gatekeeper.sh",
            "config.gatekeeper.sh",
            "security.openshift.io",  # not OpenShift
        }
        cluster = cluster_get_or_create(name="plain")
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
    assert run.status == "succeeded" and run.warnings == []
    assert _reads(cluster) == {
        "admissionregistration.k8s.io/validatingadmissionpolicies": "read",
        "admissionregistration.k8s.io/validatingadmissionpolicybindings": "read",
        "kyverno.io/clusterpolicies": "not served",
        "kyverno.io/policies": "not served",
        "kyverno.io/policyexceptions": "not served",
        "config.gatekeeper.sh/configs": "not served",
        "constraints.gatekeeper.sh": "not served",
        "security.openshift.io/securitycontextconstraints": "not served",
    }
    assert _k8s009(cluster) == {"alpha": "not enforced", "gamma": "not enforced"}


def test_a_list_the_account_may_not_make_is_recorded_and_makes_k8s009_unknown(tmp_path):
    with FakeKubeAPI(admission_world()) as api:
        api.forbid(KYVERNO_POLICIES)
        cluster = cluster_get_or_create(name="forbidden")
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
    assert run.status == "succeeded"
    assert _reads(cluster)["kyverno.io/clusterpolicies"] == "forbidden"
    # The rest was read: PSA and the Deny binding still protect beta and gamma.
    assert "ValidatingAdmissionPolicyBinding/gpuposture-pod-rules-external" in _policies(cluster)
    assert _k8s009(cluster) == {"alpha": "unknown"}


def test_a_watch_resync_sees_a_new_binding(tmp_path, settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 24
    world = admission_world()
    with FakeKubeAPI(world) as api:
        cluster = cluster_get_or_create(name="watched")
        assert cluster_sync(cluster=cluster, source=_source(api, tmp_path)).mode == "full"
        everyone = binding(name="gpuposture-pod-rules-all")
        api.replace_objects([*world, everyone])
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
        assert run.mode == "watch", run.warnings
    assert "ValidatingAdmissionPolicyBinding/gpuposture-pod-rules-all" in _policies(cluster)
    assert _k8s009(cluster) == {}


@pytest.mark.parametrize(
    ("fault", "resource", "status"),
    [
        ("forbid-discovery", "constraints.gatekeeper.sh", "forbidden"),
        (
            "fail-bindings",
            "admissionregistration.k8s.io/validatingadmissionpolicybindings",
            "failed",
        ),
    ],
)
def test_other_failed_reads_are_recorded_too(tmp_path, fault, resource, status):
    from tests.kubeapi import GATEKEEPER, LIST_PATHS

    with FakeKubeAPI(admission_world()) as api:
        if fault == "forbid-discovery":
            api.forbid(GATEKEEPER)
        else:
            api.fail(LIST_PATHS["ValidatingAdmissionPolicyBinding"], status=500, times=10)
        cluster = cluster_get_or_create(name=fault)
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
    assert run.status == "succeeded"
    assert _reads(cluster)[resource] == status
    verdicts = _k8s009(cluster)
    assert verdicts["alpha"] == "unknown"
    # Without the binding, gamma is judged too: unknown, never passed.
    assert verdicts.get("gamma", "unknown") == "unknown" and "beta" not in verdicts


def test_gatekeeper_config_read_live_exempts_namespaces_from_constraints(tmp_path):
    """Gatekeeper's Config (config.gatekeeper.sh) exempting alpha from its webhook: the
    constraint denying privileged pods there never judges them (without the Config it covers
    that one control: partial)."""
    world = [node("gpu-a", gpus=4), namespace("alpha"), gpu_pod("alpha"), constraint()]
    verdicts = {}
    for name, extra in (("gk", [gatekeeper_config("kube-*", "alpha")]), ("gk-plain", [])):
        with FakeKubeAPI(world + extra) as api:
            api.not_served = {"kyverno.io"}
            cluster = cluster_get_or_create(name=name)
            run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
        assert run.status == "succeeded", run.error
        assert _reads(cluster)["config.gatekeeper.sh/configs"] == "read"
        verdicts[name] = _k8s009(cluster)
    assert verdicts == {"gk": {"alpha": "not enforced"}, "gk-plain": {"alpha": "partial"}}


@pytest.mark.parametrize("served", ["v2", "v2beta1", "v2alpha1"])
def test_a_kyverno_policy_exception_read_live_lifts_its_rule_in_the_namespace(tmp_path, served):
    """Kyverno enforcing the baseline everywhere, and a PolicyException (served at the version
    the Kyverno release serves it) letting alpha's pods past it: alpha is not covered."""
    policy = kyverno(name="baseline")
    rule = policy["spec"]["rules"][0]["name"]
    exception = {
        "apiVersion": "kyverno.io/v2",
        "kind": "PolicyException",
        "metadata": {"name": "alpha-profiling", "namespace": "kyverno"},
        "spec": {
            "exceptions": [{"policyName": "baseline", "ruleNames": [rule]}],
            "match": {"any": [{"resources": {"kinds": ["Pod"], "namespaces": ["alpha"]}}]},
        },
    }
    world = [node("gpu-a", gpus=4), namespace("alpha"), gpu_pod("alpha"), policy, exception]
    with FakeKubeAPI(world) as api:
        api.exception_version = served
        cluster = cluster_get_or_create(name=f"polex-{served}")
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
    assert run.status == "succeeded", run.error
    assert _reads(cluster)["kyverno.io/policyexceptions"] == "read"
    assert "kyverno/PolicyException/alpha-profiling" in _policies(cluster)
    assert _k8s009(cluster) == {"alpha": "not enforced"}


def test_unreadable_policy_exceptions_make_a_kyverno_covered_namespace_unknown(tmp_path):
    """The reader may list Kyverno's policies but not its exceptions (deploy/rbac.yaml not
    re-applied): what the policies enforce is unknown, never passed."""
    world = [node("gpu-a", gpus=4), namespace("alpha"), gpu_pod("alpha"), kyverno()]
    with FakeKubeAPI(world) as api:
        api.forbid("/apis/kyverno.io/v2/policyexceptions")
        cluster = cluster_get_or_create(name="polex-forbidden")
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
    assert run.status == "succeeded", run.error
    assert _reads(cluster)["kyverno.io/policyexceptions"] == "forbidden"
    assert _k8s009(cluster) == {"alpha": "unknown"}
