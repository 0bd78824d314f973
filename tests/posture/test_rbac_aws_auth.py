"""EKS's aws-auth ConfigMap maps an IAM role to Kubernetes groups: a tenant whose workloads
assume the role (IRSA) holds what those groups hold. `system:masters` needs no binding (the
API server authorises it before RBAC): the RBAC checks say the tenant may do everything,
through aws-auth. Before, aws-auth was not kept and nothing was said."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.test import Client

import posture.rules  # noqa: F401  (registers the checks)
from inventory.models import SyncRun
from inventory.sources.aws_auth import AWS_AUTH_PURPOSE
from inventory.sources.normalise import normalise
from posture.inputs import PostureInputs
from posture.rules.registry import run_checks
from tests.posture import test_rules_cross_tenant as xt
from tests.posture.gpu_access_world import container, node, pod

ROLE = "arn:aws:iam::111122223333:role/gpu-jobs"
PATCH_NODES = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["patch"]}]


def aws_auth(role: str, *groups: str, username: str = "gpu-jobs") -> dict:
    listed = "".join(f"  - {g}\n" for g in groups)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": xt.meta("aws-auth", "kube-system"),
        "data": {
            "mapRoles": "- rolearn: arn:aws:iam::111122223333:role/eks-node-role\n"
            "  username: system:node:{{EC2PrivateDNSName}}\n"
            "  groups:\n  - system:bootstrappers\n  - system:nodes\n"
            f"- rolearn: {role}\n  username: {username}\n  groups:\n{listed}",
            "mapUsers": "- userarn: arn:aws:iam::111122223333:user/ops\n  groups: [ops]\n",
        },
    }


def irsa_account(ns: str, name: str, role: str) -> dict:
    annotations = {"eks.amazonaws.com/role-arn": role}
    return {"kind": "ServiceAccount", "metadata": xt.meta(name, ns, annotations=annotations)}


def findings(*objects: dict, check: str = "K8S-003") -> list:
    snapshot = normalise([*xt.BASE, node("gpu-a"), *objects])
    inputs = PostureInputs("lab", snapshot, (xt.ALPHA, xt.BETA, xt.CLIN))
    return run_checks(inputs, only=[check])


def test_a_tenant_role_mapped_to_system_masters_may_patch_nodes():
    (found,) = findings(aws_auth(ROLE, "system:masters"), irsa_account("alpha", "jobs", ROLE))
    assert found.tenants == ("alpha",)
    assert (found.subject_kind, found.subject_namespace, found.subject_name) == (
        "ConfigMap",
        "kube-system",
        "aws-auth",
    )
    assert "Group:system:masters" in found.title and "aws-auth" in found.title
    (grant,) = found.evidence["grants"]
    assert ROLE in grant["via"] and "ServiceAccount alpha/jobs" in grant["via"]
    # Every right follows: writing the other tenants' namespaces (K8S-008) among them.
    objects = (aws_auth(ROLE, "system:masters"), irsa_account("alpha", "jobs", ROLE))
    writes = findings(*objects, check="K8S-008")
    assert [(f.subject_name, f.tenants) for f in writes] == [
        ("aws-auth", ("alpha", "beta", "clin"))
    ]


def test_a_mapped_group_bound_to_write_rights_is_the_tenants():
    objects = (
        aws_auth(ROLE, "gpu-admins"),
        xt.cluster_role("node-patcher", PATCH_NODES),
        xt.binding("gpu-admins-patch", "node-patcher", "Group:gpu-admins"),
        pod("alpha", "train-0", container(env=[{"name": "AWS_ROLE_ARN", "value": ROLE}])),
    )
    (found,) = findings(*objects)
    assert found.tenants == ("alpha",)
    assert found.subject_name == "gpu-admins-patch"
    (grant,) = found.evidence["grants"]
    assert grant["subject"] == "Group:gpu-admins"
    assert "pod alpha/train-0 (env AWS_ROLE_ARN)" in grant["via"]


def test_roles_no_tenant_assumes_reach_nobody():
    objects = (
        aws_auth(ROLE, "system:masters"),
        irsa_account("alpha", "jobs", ROLE + "-other"),
        irsa_account("kube-system", "karpenter", ROLE),  # the platform's, not a tenant's
    )
    assert findings(*objects) == []


def test_the_sync_keeps_only_the_role_mappings():
    snapshot = normalise([*xt.BASE, aws_auth(ROLE, "system:masters")])
    (kept,) = [c for c in snapshot.configmaps if c.purpose == AWS_AUTH_PURPOSE]
    assert json.loads(kept.data[ROLE]) == {"groups": ["system:masters"], "username": "gpu-jobs"}
    assert set(kept.data) == {ROLE, "arn:aws:iam::111122223333:role/eks-node-role"}


def test_an_irsa_role_with_an_iam_path_is_matched_to_aws_auths_role_without():
    pathed = "arn:aws:iam::111122223333:role/teams/gpu-jobs"
    (found,) = findings(aws_auth(ROLE, "system:masters"), irsa_account("alpha", "jobs", pathed))
    assert found.tenants == ("alpha",)
    assert "Group:system:masters" in found.title
    (grant,) = found.evidence["grants"]
    assert ROLE in grant["via"] and pathed in grant["via"]  # both ARNs as written


def test_a_role_of_another_account_or_name_is_not_matched_by_its_last_segment():
    other_account = "arn:aws:iam::999999999999:role/teams/gpu-jobs"
    other_name = "arn:aws:iam::111122223333:role/gpu-jobs/other"
    assert not findings(
        aws_auth(ROLE, "system:masters"),
        irsa_account("alpha", "jobs", other_account),
        irsa_account("beta", "jobs", other_name),
    )


def unreadable_aws_auth(map_roles: str) -> dict:
    found = aws_auth(ROLE, "system:masters")
    found["data"]["mapRoles"] = map_roles
    return found


@pytest.mark.parametrize("map_roles", ["- rolearn: [unclosed\n  groups: {", "rolearn: x\n"])
def test_an_unreadable_map_roles_is_a_sync_warning(map_roles):
    snapshot = normalise([*xt.BASE, unreadable_aws_auth(map_roles)])
    (warning,) = [w for w in snapshot.warnings if "aws-auth" in w]
    assert "kube-system/aws-auth mapRoles could not be read" in warning


@pytest.mark.django_db
def test_the_run_and_the_cluster_page_show_an_unreadable_aws_auth(tmp_path, personas):
    world = {"kind": "List", "items": [*xt.BASE, node("gpu-a"), unreadable_aws_auth("- [")]}
    (tmp_path / "world.json").write_text(json.dumps(world))
    call_command("sync_cluster", cluster="lab", snapshot=[str(tmp_path / "world.json")])
    run = SyncRun.objects.get(cluster__name="lab")
    assert run.status == "succeeded"
    (warning,) = [w for w in run.warnings if "aws-auth" in w]
    assert "kube-system/aws-auth mapRoles could not be read" in warning
    client = Client()
    client.force_login(personas["platform_engineer"])
    page = client.get("/clusters/lab/").content.decode()
    assert "kube-system/aws-auth mapRoles could not be read" in page


def test_a_readable_aws_auth_warns_nothing():
    snapshot = normalise([*xt.BASE, aws_auth(ROLE, "system:masters")])
    assert not [w for w in snapshot.warnings if "aws-auth" in w]
