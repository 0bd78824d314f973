"""POD-010 across namespaces: tenants' ServiceAccounts federated to one cloud role."""

from __future__ import annotations

import pytest

import posture.rules  # noqa: F401  (registers the checks)
from inventory.env_seal import literal_env
from tests.posture.builders import container, env, gpu_node, inputs, pod, run, tenant

TEAM = tenant("team", namespaces=("team-a",))
OTHER = tenant("other", namespaces=("other-a",))
GPU = {"nvidia.com/gpu": 1}
ROLE = "arn:aws:iam::111122223333:role/gpu-jobs"


def _job(ns: str, name: str, *variables, gpu=GPU, sa: str = "jobs"):
    box = container(gpu=gpu, env=tuple(env(k, v) for k, v in variables))
    return pod(ns, name, containers=(box,), service_account=sa)


def _drafts(*pods):
    world = inputs(nodes=(gpu_node(),), pods=pods, tenants=(TEAM, OTHER))
    return [d for d in run("POD-010", world) if d.subject_kind == "CloudIdentity"]


def test_two_tenants_irsa_to_one_role_is_one_shared_identity():
    (draft,) = _drafts(
        _job("team-a", "a", ("AWS_ROLE_ARN", ROLE)),
        _job("other-a", "b", ("AWS_ROLE_ARN", ROLE), sa="trainer"),
    )
    assert draft.tenants == ("other", "team")
    assert draft.subject_name == ROLE
    other, team = draft.evidence["parties"]
    assert other["service_accounts"] == ["other-a/trainer"]
    assert team["service_accounts"] == ["team-a/jobs"]
    assert draft.exposure == 2
    assert draft.tenant_exposures == {"other": 1, "team": 1}  # each tenant's own share


@pytest.mark.parametrize(
    ("pods", "fired_for"),
    [
        # Each tenant federated to its own role.
        (
            (
                _job("team-a", "a", ("AWS_ROLE_ARN", ROLE)),
                _job("other-a", "b", ("AWS_ROLE_ARN", ROLE + "-other")),
            ),
            [],
        ),
        # One tenant, the same role from two of its pods.
        (
            (
                _job("team-a", "a", ("AWS_ROLE_ARN", ROLE)),
                _job("team-a", "b", ("AWS_ROLE_ARN", ROLE)),
            ),
            [],
        ),
        # Azure Workload Identity: the same client id in two tenants' pods.
        (
            (
                _job("team-a", "a", ("AZURE_CLIENT_ID", "0b1c2d3e-0000-4000-8000-000000000001")),
                _job("other-a", "b", ("AZURE_CLIENT_ID", "0b1c2d3e-0000-4000-8000-000000000001")),
            ),
            ["other", "team"],
        ),
        # A tenant's GPU pod acts as the platform's role.
        (
            (
                _job("team-a", "a", ("AWS_ROLE_ARN", ROLE)),
                _job("tools", "p", ("AWS_ROLE_ARN", ROLE)),
            ),
            ["team"],
        ),
        # The other tenant's pod holds no GPU: not GPU work under the role.
        (
            (
                _job("team-a", "a", ("AWS_ROLE_ARN", ROLE)),
                _job("other-a", "b", ("AWS_ROLE_ARN", ROLE), gpu=None),
            ),
            [],
        ),
    ],
)
def test_shared_cloud_identity_table(pods, fired_for):
    assert sorted(slug for d in _drafts(*pods) for slug in d.tenants) == fired_for


@pytest.mark.parametrize("name", ["AWS_ROLE_ARN", "AZURE_CLIENT_ID"])
def test_the_sync_keeps_the_identity_it_judges(name):
    value = ROLE if name == "AWS_ROLE_ARN" else "0b1c2d3e-0000-4000-8000-000000000001"
    assert literal_env(name, value).value == value


def test_a_long_identity_fits_the_subject_and_stays_distinct():
    long_a, long_b = ROLE + "x" * 400, ROLE + "y" * 400
    pods = [
        _job(ns, f"{ns}-{v[-1]}", ("AWS_ROLE_ARN", v))
        for v in (long_a, long_b)
        for ns in ("team-a", "other-a")
    ]
    drafts = _drafts(*pods)
    names = {d.subject_name for d in drafts}
    assert len(names) == 2 and all(len(n) <= 320 for n in names)
    assert {d.evidence["cloud_identity"] for d in drafts} == {long_a, long_b}
