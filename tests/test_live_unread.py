"""A kind a live sync may fail to read without failing (refused DRA, PersistentVolumes,
ServiceAccounts, CNI policies; any admission kind) is said on every run that did not read it,
the watch re-syncs after the full list included, and read again as soon as it can be (the
official client against the fake API server)."""

from __future__ import annotations

import pytest

from inventory.services import cluster_sync
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sync import cluster_get_or_create
from posture.read_model import cluster_snapshot
from tests.kubeapi import LIST_PATHS, FakeKubeAPI
from tests.posture.test_rules_host_paths import _claiming_pod, _pv

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def watches(settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 24


def _world() -> list[dict]:
    return [_claiming_pod("data"), _pv("pv-kubelet", "data", path="/var/lib/kubelet")]


def _sync(api: FakeKubeAPI, tmp_path, cluster):
    source = KubeSource(
        kubeconfig=str(api.kubeconfig(tmp_path)),
        context="fake",
        settings=KubeSettings(page_size=50, read_timeout=5.0),
    )
    return cluster_sync(cluster=cluster, source=source)


# (kind as the fake API serves it, as the sync labels it, what the run's warning names)
REFUSED = [
    ("PersistentVolume", "PersistentVolume", "PersistentVolume could not be listed"),
    ("ServiceAccount", "ServiceAccount", "ServiceAccount could not be listed"),
    ("RuntimeClass", "RuntimeClass", "RuntimeClass could not be listed"),
    ("ResourceClaim", "ResourceClaim", "ResourceClaim (resource.k8s.io) could not be listed"),
    ("CiliumNetworkPolicy", "cilium.io/CiliumNetworkPolicy", "CiliumNetworkPolicy could not"),
    ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicy", "K8S-009 judges admission"),
]


@pytest.mark.parametrize(("kind", "label", "said"), REFUSED)
def test_a_kind_refused_at_the_full_list_is_said_by_every_watch_and_read_once_granted(
    tmp_path, kind, label, said
):
    with FakeKubeAPI(_world()) as api:
        api.forbid(LIST_PATHS[kind])
        cluster = cluster_get_or_create(name="refused")
        first = _sync(api, tmp_path, cluster)
        assert first.mode == "full" and any(said in w for w in first.warnings), first.warnings
        # Still refused: each watch re-sync says it did not read the kind either.
        for _ in range(2):
            run = _sync(api, tmp_path, cluster)
            assert (run.status, run.mode) == ("succeeded", "watch")
            assert any(said in w and "HTTP 403" in w for w in run.warnings), run.warnings
        # Granted: the next sync reads it (a full list, saying why), then watches it.
        api.allow(LIST_PATHS[kind])
        asked = len(api.requests)
        granted = _sync(api, tmp_path, cluster)
        assert LIST_PATHS[kind] in {r.path for r in api.requests[asked:]}
        assert granted.mode == "full"
        assert granted.warnings == [
            f"listed everything: {label} can be listed now; the last full list could not"
        ]
        after = _sync(api, tmp_path, cluster)
    assert (after.mode, after.warnings) == ("watch", [])


def test_a_pv_granted_after_the_first_sync_is_judged_at_the_next_sync(tmp_path):
    with FakeKubeAPI(_world()) as api:
        api.forbid(LIST_PATHS["PersistentVolume"])
        cluster = cluster_get_or_create(name="granted")
        _sync(api, tmp_path, cluster)
        api.allow(LIST_PATHS["PersistentVolume"])
        _sync(api, tmp_path, cluster)
    (pod,) = cluster_snapshot(cluster).pods
    (volume,) = [v for v in pod.volumes if v.claim]
    assert volume.pv_path == "/var/lib/kubelet"


def test_kinds_not_served_stay_unsaid_and_the_cluster_still_watches(tmp_path):
    with FakeKubeAPI(_world()) as api:
        api.dra_version = None
        api.not_served = {"admissionregistration.k8s.io", "cilium.io"}
        cluster = cluster_get_or_create(name="older")
        assert _sync(api, tmp_path, cluster).warnings == []
        before = len(api.requests)
        run = _sync(api, tmp_path, cluster)
        watch_requests = api.requests[before:]
    assert (run.mode, run.warnings) == ("watch", [])
    # A kind not served is asked again at the next full list, not at every watch re-sync.
    asked = {r.path for r in watch_requests if r.query.get("watch") != "true"}
    assert not [p for p in asked if "cilium.io" in p or "resource.k8s.io" in p], sorted(asked)


def test_refused_admission_policies_are_a_warning_naming_k8s009(tmp_path):
    with FakeKubeAPI(_world()) as api:
        api.forbid(LIST_PATHS["ValidatingAdmissionPolicy"])
        api.forbid(LIST_PATHS["ValidatingAdmissionPolicyBinding"])
        run = _sync(api, tmp_path, cluster_get_or_create(name="no-vap"))
    assert run.status == "succeeded"
    assert len(run.warnings) == 2, run.warnings
    plurals = ("validatingadmissionpolicies", "validatingadmissionpolicybindings")
    for warning, plural in zip(run.warnings, plurals, strict=True):
        assert warning.startswith(f"admissionregistration.k8s.io/{plural} could not be listed")
        assert "K8S-009 judges admission control as unknown" in warning and "HTTP 403" in warning


@pytest.mark.parametrize("kind", ["ResourceClaim", "PersistentVolume", "ValidatingAdmissionPolicy"])
def test_a_kind_refused_during_a_watch_is_said_and_watched_again_later(tmp_path, kind):
    with FakeKubeAPI(_world()) as api:
        cluster = cluster_get_or_create(name="revoked")
        assert _sync(api, tmp_path, cluster).warnings == []
        api.forbid(LIST_PATHS[kind])
        run = _sync(api, tmp_path, cluster)
        assert (run.status, run.mode) == ("succeeded", "watch")
        (warning,) = run.warnings
        assert warning.startswith(f"{kind} could not be watched") and "HTTP 403" in warning
        assert "as the last full list read them" in warning
        api.allow(LIST_PATHS[kind])
        again = _sync(api, tmp_path, cluster)
    assert (again.mode, again.warnings) == ("watch", [])
