"""POD-010 read from ServiceAccounts: tenants whose accounts are annotated with one cloud
identity (GKE Workload Identity, IRSA and Azure Workload Identity where the pods carry no env)
act as one principal in the cloud. An account not in the snapshot says nothing."""

from __future__ import annotations

import pytest

import posture.rules  # noqa: F401  (registers the checks)
from inventory.snapshot import ServiceAccount
from tests.posture.builders import container, env, gpu_node, inputs, pod, run, tenant

TEAM = tenant("team", namespaces=("team-a",))
OTHER = tenant("other", namespaces=("other-a",))
GPU = {"nvidia.com/gpu": 1}
GSA = "gpu-jobs@ml-prod.iam.gserviceaccount.com"
ROLE = "arn:aws:iam::111122223333:role/gpu-jobs"
CLIENT = "0b1c2d3e-0000-4000-8000-000000000001"
GKE = "iam.gke.io/gcp-service-account"
IRSA = "eks.amazonaws.com/role-arn"
AZURE = "azure.workload.identity/client-id"


def account(ns: str, name: str, **identities: str) -> ServiceAccount:
    return ServiceAccount(namespace=ns, name=name, identities=dict(identities))


def job(ns: str, name: str, sa: str, *variables, gpu=GPU):
    box = container(gpu=gpu, env=tuple(env(k, v) for k, v in variables))
    return pod(ns, name, containers=(box,), service_account=sa)


# GKE's metadata server runs on the node (its DaemonSet selects this label).
METADATA_SERVER = {"iam.gke.io/gke-metadata-server-enabled": "true"}


def drafts(pods, accounts, node_labels=METADATA_SERVER):
    node = gpu_node(labels=dict(node_labels))
    world = inputs(
        nodes=(node,), pods=tuple(pods), tenants=(TEAM, OTHER), service_accounts=accounts
    )
    return [d for d in run("POD-010", world) if d.subject_kind == "CloudIdentity"]


def test_gke_workload_identity_to_one_google_service_account_is_one_identity():
    accounts = (
        account("team-a", "jobs", **{GKE: GSA}),
        # Google service account e-mails are case-insensitive: the same principal.
        account("other-a", "trainer", **{GKE: GSA.upper()}),
    )
    (draft,) = drafts([job("team-a", "a", "jobs"), job("other-a", "b", "trainer")], accounts)
    assert draft.tenants == ("other", "team")
    assert draft.subject_name == GSA
    assert draft.evidence["kind"] == "Google service account (GKE Workload Identity)"
    assert draft.evidence["field"] == f"annotation {GKE}"
    assert f"annotation {GKE} on ServiceAccount team-a/jobs" in draft.evidence["read_from"]
    other, team = draft.evidence["parties"]
    assert (other["service_accounts"], team["service_accounts"]) == (
        ["other-a/trainer"],
        ["team-a/jobs"],
    )
    assert GKE in draft.title and GSA in draft.title


def test_irsa_annotation_without_the_webhooks_env_is_the_role_still():
    accounts = (account("team-a", "jobs", **{IRSA: ROLE}), account("other-a", "jobs"))
    # The other tenant's pod carries the env (webhook on there), this one only the annotation.
    pods = [job("team-a", "a", "jobs"), job("other-a", "b", "jobs", ("AWS_ROLE_ARN", ROLE))]
    (draft,) = drafts(pods, accounts)
    assert draft.tenants == ("other", "team")
    assert draft.evidence["kind"] == "AWS IAM role (IRSA)"
    assert draft.evidence["field"] == f"annotation {IRSA}; env AWS_ROLE_ARN"


def test_the_env_and_the_annotation_of_one_pod_are_one_identity_not_two():
    accounts = (
        account("team-a", "jobs", **{IRSA: ROLE}),
        account("other-a", "jobs", **{IRSA: ROLE}),
    )
    pods = [
        job("team-a", "a", "jobs", ("AWS_ROLE_ARN", ROLE)),
        job("other-a", "b", "jobs", ("AWS_ROLE_ARN", ROLE)),
    ]
    (draft,) = drafts(pods, accounts)
    assert draft.exposure == 2


@pytest.mark.parametrize(
    ("accounts", "fired_for"),
    [
        # Azure Workload Identity: one client id (GUIDs compare case-insensitively).
        (
            (
                account("team-a", "jobs", **{AZURE: CLIENT}),
                account("other-a", "jobs", **{AZURE: CLIENT.upper()}),
            ),
            ["other", "team"],
        ),
        # Each tenant federated to its own Google service account.
        (
            (
                account("team-a", "jobs", **{GKE: GSA}),
                account("other-a", "jobs", **{GKE: "o@" + GSA}),
            ),
            [],
        ),
        # The other tenant's account is not in the snapshot: nothing known, nothing said.
        ((account("team-a", "jobs", **{GKE: GSA}),), []),
        # No snapshot of ServiceAccounts at all.
        ((), []),
    ],
)
def test_shared_account_identity_table(accounts, fired_for):
    pods = [job("team-a", "a", "jobs"), job("other-a", "b", "jobs")]
    assert sorted(s for d in drafts(pods, accounts) for s in d.tenants) == fired_for


def test_an_annotated_account_whose_pods_hold_no_gpu_is_no_gpu_work():
    accounts = (account("team-a", "jobs", **{GKE: GSA}), account("other-a", "web", **{GKE: GSA}))
    pods = [job("team-a", "a", "jobs"), job("other-a", "b", "web", gpu=None)]
    assert drafts(pods, accounts) == []


def test_the_gke_annotation_takes_effect_only_where_the_metadata_server_runs():
    """Off the metadata server the pod acts as the node's own Google service account, not the
    annotated one: nothing is said of the annotation there (the env-free IRSA case still is)."""
    accounts = (account("team-a", "jobs", **{GKE: GSA}), account("other-a", "jobs", **{GKE: GSA}))
    pods = [job("team-a", "a", "jobs"), job("other-a", "b", "jobs")]
    assert drafts(pods, accounts, node_labels={}) == []
    off = {"iam.gke.io/gke-metadata-server-enabled": "false"}
    assert drafts(pods, accounts, node_labels=off) == []
    on_other_node = [
        job("team-a", "a", "jobs"),
        pod("other-a", "b", node="gone", gpu=GPU, service_account="jobs"),
    ]
    assert drafts(on_other_node, accounts) == []
    irsa = (account("team-a", "jobs", **{IRSA: ROLE}), account("other-a", "jobs", **{IRSA: ROLE}))
    (draft,) = drafts(pods, irsa, node_labels={})
    assert draft.tenants == ("other", "team")


GKE_POOL = {"cloud.google.com/gke-nodepool": "gpu-pool"}


def test_gke_pool_without_the_metadata_server_gives_every_pod_the_nodes_account():
    # Workload metadata mode GCE_METADATA: pods read the node's own token from the Compute
    # Engine metadata server, whatever their ServiceAccounts say.
    accounts = (account("team-a", "jobs", **{GKE: GSA}), account("other-a", "default"))
    pods = [job("team-a", "a", "jobs"), job("other-a", "b", "default")]
    (draft,) = drafts(pods, accounts, node_labels=GKE_POOL)
    assert draft.tenants == ("other", "team")
    assert draft.subject_name == "node pool gpu-pool"
    assert draft.evidence["kind"].startswith("Google service account of the GKE node pool")
    assert draft.evidence["read_from"] == [
        "GKE node gpu-1: no GKE metadata server on the node (Workload Identity off on its pool)"
    ]
    assert "the node's service account" in draft.title


def test_gke_pool_with_the_metadata_server_shares_nothing_but_its_host_network_pods():
    accounts = (account("team-a", "jobs"), account("other-a", "default"))
    labels = {**GKE_POOL, **METADATA_SERVER}
    pods = [job("team-a", "a", "jobs"), job("other-a", "b", "default")]
    assert drafts(pods, accounts, node_labels=labels) == []
    host = [pod(p.namespace, p.name, containers=p.containers, host_network=True) for p in pods]
    (draft,) = drafts(host, accounts, node_labels=labels)
    assert draft.tenants == ("other", "team")
    assert "host-network pod" in draft.evidence["read_from"][0]


def test_a_node_gke_did_not_label_is_not_read_as_gke():
    pods = [job("team-a", "a", "jobs"), job("other-a", "b", "default")]
    assert drafts(pods, (), node_labels={}) == []
