"""ServiceAccounts read from a `kubectl get -o json` snapshot and from the live API: only the
workload-identity annotations are kept, stored, and read back by POD-010. An account that may
not list them syncs with a warning saying what goes unseen."""

from __future__ import annotations

import pytest

from inventory import snapshot as snap
from inventory.services import cluster_sync
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sources.normalise import normalise
from inventory.sync import cluster_get_or_create
from posture.read_model import cluster_snapshot
from tests.kubeapi import FakeKubeAPI

GKE = "iam.gke.io/gcp-service-account"
GSA = "trainer@ml-prod.iam.gserviceaccount.com"
ACCOUNTS = "/api/v1/serviceaccounts"


def service_account(ns: str, name: str, annotations: dict[str, str] | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations or {}},
        # Names of Secrets only; never kept, never followed.
        "secrets": [{"name": f"{name}-token-x7k2p"}],
        "imagePullSecrets": [{"name": "registry"}],
        "automountServiceAccountToken": False,
    }


ANNOTATED = service_account(
    "team-a",
    "trainer",
    {GKE: f"  {GSA} ", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
)


def test_only_the_identity_annotations_are_kept_and_round_trip():
    world = [ANNOTATED, service_account("team-a", "default")]
    snapshot = normalise(world)
    assert snapshot.service_accounts == (
        snap.ServiceAccount("team-a", "default", {}),
        snap.ServiceAccount("team-a", "trainer", {GKE: GSA}),
    )
    data = snap.to_dict(snapshot.service_accounts[1])
    assert data == {"namespace": "team-a", "name": "trainer", "identities": {GKE: GSA}}
    assert snap.from_dict(snap.ServiceAccount, data) == snapshot.service_accounts[1]


def test_a_service_account_without_a_namespace_is_refused_as_other_namespaced_kinds():
    bare = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "x"}}
    with pytest.raises(ValueError, match="no metadata.namespace"):
        normalise([bare])


@pytest.fixture
def full_lists(settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 0


def _sync(api: FakeKubeAPI, tmp_path, name: str):
    source = KubeSource(
        kubeconfig=str(api.kubeconfig(tmp_path)),
        context="fake",
        settings=KubeSettings(page_size=2, read_timeout=5.0),
    )
    cluster = cluster_get_or_create(name=name)
    return cluster, cluster_sync(cluster=cluster, source=source)


@pytest.mark.django_db
@pytest.mark.usefixtures("full_lists")
def test_service_accounts_are_listed_live_stored_and_read_back(tmp_path):
    with FakeKubeAPI([ANNOTATED, service_account("team-a", "default")]) as api:
        cluster, run = _sync(api, tmp_path, "live-sa")
        assert ACCOUNTS in {r.path for r in api.requests}
    assert run.status == "succeeded" and run.warnings == []
    stored = cluster_snapshot(cluster).service_accounts
    assert [(a.namespace, a.name, a.identities) for a in stored] == [
        ("team-a", "default", {}),
        ("team-a", "trainer", {GKE: GSA}),
    ]


@pytest.mark.django_db
@pytest.mark.usefixtures("full_lists")
def test_an_account_that_may_not_list_service_accounts_syncs_with_a_warning(tmp_path):
    # An API server always holds its namespaces: with the accounts forbidden, they are what
    # the read finds (a read that finds nothing at all is refused, inventory.sync_refusal).
    team_a = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    with FakeKubeAPI([ANNOTATED, team_a]) as api:
        api.forbid(ACCOUNTS)
        cluster, run = _sync(api, tmp_path, "no-sa-grant")
    assert run.status == "succeeded"
    (warning,) = run.warnings
    assert "ServiceAccount" in warning and "HTTP 403" in warning and "POD-010" in warning
    assert cluster_snapshot(cluster).service_accounts == ()


@pytest.mark.django_db
def test_a_changed_annotation_arrives_by_watch(tmp_path):
    with FakeKubeAPI([ANNOTATED]) as api:
        source = KubeSource(
            kubeconfig=str(api.kubeconfig(tmp_path)),
            context="fake",
            settings=KubeSettings(page_size=2, read_timeout=5.0, watch_seconds=1),
        )
        cluster = cluster_get_or_create(name="watch-sa")
        assert cluster_sync(cluster=cluster, source=source).mode == "full"
        moved = service_account("team-a", "trainer", {GKE: "other@ml-prod.iam.gserviceaccount.com"})
        api.replace_objects([moved])
        cluster.refresh_from_db()
        run = cluster_sync(cluster=cluster, source=source)
    assert (run.status, run.mode) == ("succeeded", "watch")
    (stored,) = cluster_snapshot(cluster).service_accounts
    assert stored.identities == {GKE: "other@ml-prod.iam.gserviceaccount.com"}
