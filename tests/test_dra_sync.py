"""DRA read from the live API (the official client against the fake API server) and from a
`kubectl get -o json` snapshot, stored and read back by the checks alike. A cluster without
resource.k8s.io is not an error; one whose DRA the account may not list says so on the run."""

from __future__ import annotations

import json

import pytest

from inventory.models import ClusterObject, SyncRun
from inventory.services import cluster_sync
from inventory.sources.files import SnapshotFileSource
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sync import cluster_get_or_create
from posture.read_model import cluster_snapshot
from tests.kubeapi import FakeKubeAPI
from tests.posture.dra_world import claim, claim_template, device_class, dra_pod, resource_slice
from tests.posture.gpu_access_world import UUIDS, namespace, node

pytestmark = pytest.mark.django_db

CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"


@pytest.fixture(autouse=True)
def full_lists(settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 0


def dra_world() -> list[dict]:
    return [
        namespace("alpha"),
        namespace("beta"),
        node("gpu-a", gpus=4),
        device_class(),
        resource_slice("gpu-a"),
        claim("alpha", "train-gpu", ["gpu-0"], sharing="TimeSlicing", reserved_for=["train-0"]),
        claim("beta", "infer-gpu", ["gpu-0"], sharing="TimeSlicing", reserved_for=["infer-0"]),
        claim_template("beta", "one-gpu"),
        dra_pod("alpha", "train-0", "train-gpu"),
        dra_pod("beta", "infer-0", "infer-gpu"),
    ]


def _source(api: FakeKubeAPI, tmp_path) -> KubeSource:
    return KubeSource(
        kubeconfig=str(api.kubeconfig(tmp_path)),
        context="fake",
        settings=KubeSettings(page_size=2, read_timeout=5.0),
    )


def _kinds(cluster) -> dict[str, list[str]]:
    rows = ClusterObject.objects.filter(cluster=cluster, kind__startswith="dra_")
    found: dict[str, list[str]] = {}
    for kind, ns, name in rows.values_list("kind", "namespace", "name"):
        found.setdefault(kind, []).append(f"{ns}/{name}" if ns else name)
    return {k: sorted(v) for k, v in found.items()}


EXPECTED = {
    "dra_claim": ["alpha/train-gpu", "beta/infer-gpu"],
    "dra_claim_template": ["beta/one-gpu"],
    "dra_device_class": ["gpu.nvidia.com"],
    "dra_slice": ["gpu-a-gpu.nvidia.com-x8k2n"],
}


@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1beta1"])
def test_live_dra_is_read_at_the_version_served(tmp_path, version):
    with FakeKubeAPI(dra_world()) as api:
        api.dra_version = version
        source = _source(api, tmp_path)
        cluster = cluster_get_or_create(name="live")
        run = cluster_sync(cluster=cluster, source=source)
    assert run.status == "succeeded" and run.warnings == []
    assert _kinds(cluster) == EXPECTED
    assert source.api_versions == dict.fromkeys(
        ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"), version
    )
    snapshot = cluster_snapshot(cluster)
    assert {c.api_version for c in snapshot.dra_claims} == {f"resource.k8s.io/{version}"}
    (slice_,) = snapshot.dra_slices
    assert slice_.devices[0].attributes["uuid"] == UUIDS[0]
    train = next(p for p in snapshot.pods if p.name == "train-0")
    assert [(c.name, c.claim) for c in train.resource_claims] == [("gpu", "train-gpu")]


@pytest.mark.parametrize(("served", "unread"), [(None, False), ("v1beta1", True)])
def test_a_refused_dra_list_asks_discovery_whether_dra_is_served(tmp_path, served, unread):
    # The API server authorizes a list before it looks for the resource: an account without
    # the grant is refused (403) on a cluster without DRA just as on one with it. Discovery,
    # open to every account, tells them apart (at every version DRA is read at).
    with FakeKubeAPI(dra_world()) as api:
        if served is None:
            api.not_served.add("resource.k8s.io")
        else:
            api.dra_version = served
        api.forbid(CLAIMS)
        cluster = cluster_get_or_create(name="refused")
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
    assert run.status == "succeeded"
    assert ("ResourceClaim" in run.kinds_unread) is unread
    assert any("ResourceClaim" in w and "HTTP 403" in w for w in run.warnings) is unread


def test_a_cluster_without_dra_is_not_an_error(tmp_path):
    with FakeKubeAPI(dra_world()) as api:
        api.dra_version = None
        source = _source(api, tmp_path)
        cluster = cluster_get_or_create(name="no-dra")
        run = cluster_sync(cluster=cluster, source=source)
    assert run.status == "succeeded" and run.warnings == []
    assert _kinds(cluster) == {}
    assert set(source.api_versions.values()) == {"not served"}


def test_dra_the_account_may_not_list_is_a_warning_on_the_run(tmp_path):
    with FakeKubeAPI(dra_world()) as api:
        api.forbid(CLAIMS)
        cluster = cluster_get_or_create(name="forbidden")
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
    assert run.status == "succeeded"
    (warning,) = run.warnings
    assert "ResourceClaim" in warning and "HTTP 403" in warning
    assert "not seen" in warning
    # The other DRA kinds were still read.
    assert "dra_slice" in _kinds(cluster) and "dra_claim" not in _kinds(cluster)
    assert SyncRun.objects.get(pk=run.pk).warnings == run.warnings
    # Known not read (a live list refused): recorded on the run, the other DRA kinds not.
    unread = SyncRun.objects.get(pk=run.pk).kinds_unread
    assert "ResourceClaim" in unread and "ResourceSlice" not in unread


def test_a_snapshot_gives_the_same_dra_as_the_live_api(tmp_path):
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": dra_world()}))
    cluster = cluster_get_or_create(name="file")
    run = cluster_sync(cluster=cluster, source=SnapshotFileSource([str(path)]))
    assert run.status == "succeeded"
    assert _kinds(cluster) == EXPECTED
    (alpha, _beta) = cluster_snapshot(cluster).dra_claims
    assert (alpha.node_name, alpha.reserved_for) == ("gpu-a", ("pods/train-0",))
    assert alpha.allocation_config[0].sharing == "TimeSlicing"


# --- the node page and API: DRA devices held and by whom ------------------------------------


@pytest.fixture
def dra_lab(small_world, tmp_path):
    """The small world with the NVIDIA DRA driver's slice on gpu-ts-1 and a time-sliced GPU
    held by claims of team-alpha and beta-prod."""
    from inventory.services import cluster_sync_from_snapshot
    from posture.services import posture_evaluate
    from tests.conftest import world_snapshot_path

    objects = [
        resource_slice("gpu-ts-1"),
        device_class(),
        claim(
            "team-alpha",
            "trainer-gpu",
            ["gpu-1"],
            sharing="TimeSlicing",
            node="gpu-ts-1",
            reserved_for=["dra-trainer"],
        ),
        claim(
            "beta-prod",
            "secret-infer-gpu",
            ["gpu-1"],
            sharing="TimeSlicing",
            node="gpu-ts-1",
            reserved_for=["secret-infer"],
        ),
        dra_pod("team-alpha", "dra-trainer", "trainer-gpu", node_name="gpu-ts-1"),
        dra_pod("beta-prod", "secret-infer", "secret-infer-gpu", node_name="gpu-ts-1"),
    ]
    path = tmp_path / "dra.json"
    path.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": objects}))
    cluster_sync_from_snapshot(cluster=small_world, paths=[world_snapshot_path(), path])
    posture_evaluate()
    return small_world


def test_node_api_and_page_show_dra_devices_and_who_holds_them(dra_lab, personas):
    from django.test import Client

    from inventory.models import Node
    from tests.conftest import api_client

    node = Node.objects.get(cluster=dra_lab, name="gpu-ts-1")
    lead = api_client(personas["security_lead"]).get(f"/api/v1/nodes/{node.pk}/").json()
    rows = lead["dra_devices"]
    assert [(r["namespace"], r["claim"], r["tenant"], r["mode"]) for r in rows] == [
        ("beta-prod", "secret-infer-gpu", "beta", "time_slicing"),
        ("team-alpha", "trainer-gpu", "alpha", "time_slicing"),
    ]
    assert {r["device_id"] for r in rows} == {UUIDS[1]}
    assert rows[0]["consumers"] == ["secret-infer"]
    # A list leaves it out (its query count stays flat).
    listed = api_client(personas["security_lead"]).get("/api/v1/nodes/").json()
    assert all("dra_devices" not in n for n in listed["results"])

    viewer = api_client(personas["viewer_alpha"]).get(f"/api/v1/nodes/{node.pk}/")
    text = viewer.content.decode()
    assert "trainer-gpu" in text
    for hidden in ("secret-infer", "beta-prod", '"beta"'):
        assert hidden not in text
    browser = Client()
    browser.force_login(personas["viewer_alpha"])
    page = browser.get(f"/nodes/{dra_lab.name}/gpu-ts-1/").content.decode()
    assert "Devices held through DRA claims" in page and "trainer-gpu" in page
    assert "secret-infer" not in page and "beta-prod" not in page


def test_dra_co_tenancy_on_the_node_is_a_share_finding(dra_lab):
    from posture.models import Finding

    findings = Finding.objects.filter(check_id="SHARE-001", status="open")
    assert any(UUIDS[1] in json.dumps(f.evidence) for f in findings)


# --- re-sync by watch --------------------------------------------------------------------------


def test_a_watch_resync_sees_a_new_claim_and_a_cluster_without_dra_still_watches(
    tmp_path, settings
):
    from inventory.sources.kube_kinds import NOT_LISTED, NOT_SERVED

    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 24
    world = dra_world()
    with FakeKubeAPI(world) as api:
        cluster = cluster_get_or_create(name="watched")
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
        assert run.mode == "full"
        cluster.refresh_from_db()
        assert cluster.watch_state["kinds"]["ResourceClaim"] not in ("", NOT_LISTED, NOT_SERVED)
        extra = claim("alpha", "eval-gpu", ["gpu-3"], reserved_for=["eval-0"])
        api.replace_objects([*world, extra])
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
        assert run.mode == "watch", run.warnings
        assert "alpha/eval-gpu" in _kinds(cluster)["dra_claim"]
    with FakeKubeAPI(world) as api:
        api.dra_version = None
        cluster = cluster_get_or_create(name="no-dra-watched")
        cluster_sync(cluster=cluster, source=_source(api, tmp_path))
        cluster.refresh_from_db()
        assert cluster.watch_state["kinds"]["ResourceClaim"] == NOT_SERVED
        assert cluster_sync(cluster=cluster, source=_source(api, tmp_path)).mode == "watch"


def test_a_watch_state_from_before_dra_was_read_lists_everything(tmp_path, settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 24
    with FakeKubeAPI(dra_world()) as api:
        cluster = cluster_get_or_create(name="upgraded")
        cluster_sync(cluster=cluster, source=_source(api, tmp_path))
        cluster.refresh_from_db()
        kinds = {k: v for k, v in cluster.watch_state["kinds"].items() if "Resource" not in k}
        kinds.pop("DeviceClass")
        cluster.watch_state = {**cluster.watch_state, "kinds": kinds}
        cluster.save(update_fields=["watch_state"])
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
    assert run.mode == "full"
    assert any("DeviceClass" in w or "Resource" in w for w in run.warnings)


def test_dra001_is_in_the_catalogue_with_rationale_remediation_and_mappings(dra_lab, personas):
    from django.test import Client

    from tests.conftest import api_client

    lead = api_client(personas["security_lead"])
    entry = lead.get("/api/v1/checks/dra-001/").json()
    assert (entry["id"], entry["severity"]) == ("DRA-001", "critical")
    assert "adminAccess" in entry["rationale"] and "admin-access" in entry["remediation"]
    assert set(entry["mappings"]) == {"SP800-53:AC-6", "SP800-53:SC-4"}
    browser = Client()
    browser.force_login(personas["auditor"])
    assert "DRA-001" in browser.get("/checks/").content.decode()


def test_the_node_page_keeps_a_whole_gpu_whole_under_a_platform_monitoring_claim(tmp_path):
    """A kube-system adminAccess claim (a monitoring agent) reaches the GPU a tenant's claim
    holds whole: the page says exclusive, and names the platform's reach in the basis."""
    from inventory.dra_node import node_dra_devices
    from inventory.models import Node

    objects = [
        namespace("alpha"),
        namespace("kube-system"),
        node("gpu-a", gpus=4),
        device_class(),
        resource_slice("gpu-a"),
        claim("alpha", "train-gpu", ["gpu-0"], reserved_for=["train-0"]),
        dra_pod("alpha", "train-0", "train-gpu"),
        claim("kube-system", "dcgm", ["gpu-0"], admin=True, reserved_for=["dcgm-0"]),
        dra_pod("kube-system", "dcgm-0", "dcgm"),
    ]
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    cluster = cluster_get_or_create(name="monitored")
    assert cluster_sync(cluster=cluster, source=SnapshotFileSource([str(path)])).status == (
        "succeeded"
    )
    rows = node_dra_devices(Node.objects.get(cluster=cluster, name="gpu-a"))
    modes = {(r["namespace"], r["mode"]) for r in rows}
    assert modes == {("alpha", "exclusive"), ("kube-system", "time_slicing")}
    (alpha,) = [r for r in rows if r["namespace"] == "alpha"]
    assert "platform's adminAccess claim kube-system/dcgm" in alpha["basis"]


def test_a_node_dra_time_slices_reads_so_after_a_full_sync_and_a_watch_resync(tmp_path, settings):
    """GFD says `none`; the two tenants' TimeSlicing claims share gpu-0: the node is
    time-sliced in the inventory (list filter, checklist), and a watch that re-reads the
    node (its labels changed) reads the stored claims as the full sync did."""
    from inventory.models import Node

    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 24
    world = dra_world()
    world[2]["metadata"]["labels"]["nvidia.com/gpu.sharing-strategy"] = "none"
    with FakeKubeAPI(world) as api:
        cluster = cluster_get_or_create(name="dra-shared")
        assert cluster_sync(cluster=cluster, source=_source(api, tmp_path)).mode == "full"
        row = Node.objects.get(cluster=cluster, name="gpu-a")
        assert row.sharing_strategy == "time_slicing"
        assert "DRA" in row.data["sharing_basis"]
        world[2]["metadata"]["labels"]["team"] = "ml"
        api.replace_objects(world)
        run = cluster_sync(cluster=cluster, source=_source(api, tmp_path))
        assert run.mode == "watch", run.warnings
        row = Node.objects.get(cluster=cluster, name="gpu-a")
        assert row.labels.get("team") == "ml"
        assert row.sharing_strategy == "time_slicing"
