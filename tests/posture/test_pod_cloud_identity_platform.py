"""POD-010: a tenant's GPU pod that acts as the cloud identity of a platform workload (the
Karpenter controller's IRSA role in kube-system) holds the platform's cloud permissions. The
platform's pod holds no GPU: it counts all the same; the finding affects the tenant, names the
platform's workload; its severity stays the check's (DESIGN §5: medium)."""

from __future__ import annotations

import posture.rules  # noqa: F401  (registers the checks)
from tests.posture.builders import container, env, gpu_node, inputs, pod, run, tenant

VAULT = tenant("vault", "sensitive", namespaces=("vault",))
ML = tenant("ml", namespaces=("ml",))
GPU = {"nvidia.com/gpu": 1}
KARPENTER = "arn:aws:iam::111122223333:role/KarpenterController"


def _pod(ns: str, name: str, role: str, *, gpu=GPU, sa: str = "jobs", node: str = "gpu-1"):
    box = container(gpu=gpu, env=(env("AWS_ROLE_ARN", role),))
    return pod(ns, name, node=node, containers=(box,), service_account=sa)


def _drafts(*pods):
    world = inputs(nodes=(gpu_node(),), pods=pods, tenants=(VAULT, ML))
    return [d for d in run("POD-010", world) if d.subject_kind == "CloudIdentity"]


def _controller():
    return _pod("kube-system", "karpenter-0", KARPENTER, gpu=None, sa="karpenter", node="cpu-1")


def test_a_tenant_gpu_pod_under_the_platform_controllers_role():
    (draft,) = _drafts(_controller(), _pod("vault", "v", KARPENTER, sa="trainer"))
    assert draft.tenants == ("vault",)
    assert draft.subject_name == KARPENTER
    assert draft.severity == ""  # the check's own: medium
    assert draft.evidence["platform_service_accounts"] == ["kube-system/karpenter"]
    assert "platform's cloud identity" in draft.title and "kube-system/karpenter" in draft.title
    platform, vault = draft.evidence["parties"]
    assert (platform["party"], vault["party"]) == ("platform", "vault")
    assert draft.tenant_exposures == {"vault": 1}  # the platform is no tenant


def test_nothing_without_a_tenant_gpu_pod_under_the_platforms_role():
    # A tenant's pod without a GPU is not GPU work; the platform alone shares with nobody.
    assert _drafts(_controller(), _pod("vault", "v", KARPENTER, gpu=None)) == []
    assert _drafts(_controller()) == []
    # The tenant's own role, not the platform's.
    assert _drafts(_controller(), _pod("vault", "v", KARPENTER + "-vault")) == []


def test_two_tenants_sharing_a_role_with_no_platform_stay_medium():
    role = "arn:aws:iam::111122223333:role/gpu-jobs"
    (draft,) = _drafts(_pod("vault", "v", role), _pod("ml", "m", role))
    assert draft.severity == ""  # the check's own: medium
    assert "platform_service_accounts" not in draft.evidence
