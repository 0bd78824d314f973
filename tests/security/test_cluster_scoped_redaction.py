"""A namespace's owner is a cluster's fact (its label), not a name's: `shared-batch` is vega's
on eks-infer (labelled), orbit's on gke-train (labelled) and nobody's on aks-prod (the
unclassified party's). Vega's viewer reads its own finding on eks-infer with its subject named
(hold-out rtmulti k36: it read "(another tenant's namespace)"), and never reads the unclassified
`shared-batch` of aks-prod named, though the name is theirs on eks-infer (it leaked). Orbit's
namespace on the viewer's own cluster stays hidden, and a row of no cluster keeps every
cluster's names hidden (tenants.cluster_scope)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import api_client, content, make_user
from tests.posture.gpu_access_world import container, namespace, node, pod
from tests.security.test_unclaimed_party_redaction import ROCM, _mi300

pytestmark = pytest.mark.django_db

SHARED = "shared-batch"
SCRATCH = "nb-scratch"  # vega's on eks-infer (labelled), nobody's on aks-prod, nobody else's
HIDDEN_NS, HIDDEN_OBJ = "(another tenant's namespace)", "(another tenant's object)"
PRIVILEGED = {"securityContext": {"privileged": True}}
GPU, AMD = {"nvidia.com/gpu": "1"}, {"amd.com/gpu": "1"}
EXPORTS = ("json", "csv", "sarif")


def _sync(name: str, items: list[dict], tmp_path) -> object:
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create

    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster = cluster_get_or_create(name=name)
    cluster_sync_from_snapshot(cluster=cluster, paths=[path])
    return cluster


@pytest.fixture
def three_clusters(personas, tmp_path):
    from posture.services import posture_evaluate
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    viewer = make_user("viewer-vega", "tenant_viewer")
    document = {
        "tenants": [
            {
                "slug": "vega",
                "name": "Vega",
                "trust_class": "internal",
                "namespaces": ["vega-home"],
                "viewers": ["viewer-vega"],
            },
            {"slug": "orbit", "name": "Orbit", "trust_class": "external", "namespaces": []},
        ]
    }
    tenants_apply(specs=parse_tenants_document(document))
    _sync(
        "eks-infer",
        [
            node("gpu-a"),
            namespace(SHARED, **{"gpuposture.io/tenant": "vega"}),
            namespace("orbit-lab", **{"gpuposture.io/tenant": "orbit"}),
            namespace(SCRATCH, **{"gpuposture.io/tenant": "vega"}),
            # Claimed by its label alone, no pod in it; and a label naming no tenant.
            namespace("orbit-quiet", **{"gpuposture.io/tenant": "orbit"}),
            namespace("ghost-ns", **{"gpuposture.io/tenant": "nobody"}),
            pod(SHARED, "scorer-0", container(gpu=GPU, **PRIVILEGED)),
            pod(SCRATCH, "notebook-0", container(gpu=GPU)),
            pod("orbit-lab", "probe-0", container(gpu=GPU, **PRIVILEGED)),
        ],
        tmp_path,
    )
    _sync(
        "gke-train",
        [
            node("gpu-a"),
            namespace(SHARED, **{"gpuposture.io/tenant": "orbit"}),
            pod(SHARED, "trainer-0", container(gpu=GPU, **PRIVILEGED)),
        ],
        tmp_path,
    )
    _sync(
        "aks-prod",
        [
            _mi300(),
            namespace("vega-home"),
            namespace(SHARED),
            namespace(SCRATCH),
            # LEAK-002: vega's GPU pod beside a privileged pod no tenant claims.
            pod("vega-home", "train-0", container(gpu=AMD, image=ROCM), node_name="mi300-a"),
            pod(SHARED, "stray-0", container(image=ROCM), node_name="mi300-a"),
            pod(SCRATCH, "stray-1", container(image=ROCM, **PRIVILEGED), node_name="mi300-a"),
        ],
        tmp_path,
    )
    posture_evaluate()
    return viewer


def _findings(viewer) -> list[dict]:
    response = api_client(viewer).get("/api/v1/findings/?page_size=200")
    assert response.status_code == 200
    return response.json()["results"]


def test_own_finding_names_its_subject_though_the_name_is_another_tenants_elsewhere(
    three_clusters,
):
    rows = _findings(three_clusters)
    found = [r for r in rows if r["cluster"] == "eks-infer" and r["check"] == "POD-001"]
    # Orbit's privileged probe-0 on vega's node reaches vega too (posture.rules.pod.neighbours):
    # vega's viewer reads it with orbit's names hidden, beside its own.
    assert sorted((r["subject_namespace"], r["subject_name"]) for r in found) == [
        (HIDDEN_NS, HIDDEN_OBJ),
        (SHARED, "scorer-0"),
    ]
    own = [r for r in found if r["subject_namespace"] == SHARED]
    assert own[0]["tenants"] == ["vega"]
    detail = api_client(three_clusters).get(f"/api/v1/findings/{own[0]['id']}/").json()
    assert (detail["subject_namespace"], detail["subject_name"]) == (SHARED, "scorer-0")
    for kind in EXPORTS:
        text = content(
            api_client(three_clusters).get(
                f"/api/v1/findings/export/?format={kind}&cluster=eks-infer"
            )
        ).decode()
        assert "scorer-0" in text, kind


def test_the_finding_page_names_the_viewers_own_subject(three_clusters):
    from django.test import Client

    from posture.models import Finding

    own = Finding.objects.get(
        cluster__name="eks-infer",
        check_id="POD-001",
        tenants__slug="vega",
        subject_namespace=SHARED,
    )
    page = Client()
    page.force_login(three_clusters)
    text = page.get(f"/findings/{own.pk}/").content.decode()
    assert f"{SHARED}/scorer-0" in text or "scorer-0" in text
    assert HIDDEN_NS not in text


def test_an_unclassified_namespace_named_like_the_viewers_own_elsewhere_is_hidden(
    three_clusters,
):
    rows = [r for r in _findings(three_clusters) if r["cluster"] == "aks-prod"]
    assert rows, "the viewer reads a finding on aks-prod"
    text = json.dumps(rows)
    for name in (SHARED, "stray-0", SCRATCH, "stray-1"):
        assert name not in text, name
    assert f"{HIDDEN_OBJ} reaches every GPU" in text  # the co-tenancy names the pod, hidden
    for kind in EXPORTS:
        export = content(
            api_client(three_clusters).get(
                f"/api/v1/findings/export/?format={kind}&cluster=aks-prod"
            )
        ).decode()
        for name in (SHARED, "stray-0", SCRATCH, "stray-1"):
            assert name not in export, (kind, name)


def test_another_tenants_namespace_on_the_viewers_cluster_and_rows_of_no_cluster_stay_hidden(
    three_clusters,
):
    from inventory.models import Cluster
    from inventory.presenter import hidden_scope_for, present
    from posture.models import Finding

    scope = hidden_scope_for(three_clusters)
    ids = dict(Cluster.objects.values_list("name", "pk"))
    eks, gke, aks = (scope.in_cluster(ids[n]) for n in ("eks-infer", "gke-train", "aks-prod"))
    assert "orbit-lab" in eks.namespaces and SHARED not in eks.namespaces
    assert SHARED in gke.namespaces and SHARED in aks.namespaces
    assert "vega-home" not in aks.namespaces
    assert SCRATCH in aks.namespaces and SCRATCH not in eks.namespaces
    assert scope.in_cluster("eks-infer") is eks  # by name, built once
    # No cluster (or one the viewer may not see): every cluster's names, as before.
    assert SHARED in scope.namespaces and "orbit-lab" in scope.namespaces
    for cluster in (None, 10_000, "nowhere"):
        row = {"cluster": cluster, "subject_namespace": SHARED, "subject_name": "x", "title": ""}
        present(scope, row, Finding)
        assert (row["subject_namespace"], row["subject_name"]) == (HIDDEN_NS, HIDDEN_OBJ)
    rows = _findings(three_clusters)
    assert not [r for r in rows if r["cluster"] == "gke-train"]
    assert "orbit-lab" not in json.dumps(rows) and "probe-0" not in json.dumps(rows)


def test_the_viewers_search_finds_its_own_namespace_where_it_is_theirs_only(three_clusters):
    """A search matches what the viewer is shown: their own shared-batch on eks-infer, not the
    unclassified nb-scratch on aks-prod."""
    api = api_client(three_clusters)
    found = api.get(f"/api/v1/findings/?q={SHARED}&page_size=200").json()["results"]
    assert {(r["cluster"], r["subject_name"]) for r in found} >= {("eks-infer", "scorer-0")}
    assert all(r["cluster"] == "eks-infer" for r in found)
    scratch = api.get("/api/v1/findings/?q=stray-1&page_size=200").json()["results"]
    assert scratch == []


def test_a_namespace_another_tenant_claims_by_label_alone_is_hidden(three_clusters):
    """No pod in it: its label alone says whose it is in that cluster (rtself5 k05-k14: it
    was shown); a label naming no tenant claims nothing, so it is the unclassified party's."""
    from inventory.models import Cluster
    from inventory.presenter import hidden_scope_for, present
    from posture.models import Finding

    scope = hidden_scope_for(three_clusters)
    eks = scope.in_cluster(Cluster.objects.get(name="eks-infer").pk)
    assert {"orbit-quiet", "ghost-ns"} <= eks.namespaces
    assert {"orbit-quiet", "ghost-ns"} <= scope.namespaces
    row = {"cluster": "eks-infer", "subject_namespace": "orbit-quiet", "subject_name": "edit"}
    row["title"] = "RoleBinding orbit-quiet/edit grants group vega-devs edit"
    present(scope, row, Finding)
    assert (row["subject_namespace"], row["subject_name"]) == (HIDDEN_NS, HIDDEN_OBJ)
    assert "orbit-quiet" not in row["title"]


def test_rows_of_no_cluster_hide_a_name_unclassified_anywhere(three_clusters):
    """Fail closed: nb-scratch is the viewer's on eks-infer and nobody's on aks-prod, so a row
    that names no cluster (a notification's title by default) hides it."""
    from inventory.presenter import hidden_scope_for

    assert SCRATCH in hidden_scope_for(three_clusters).namespaces


def test_a_notification_title_is_redacted_by_its_findings_cluster(three_clusters):
    from notifications.collect import Viewer

    viewer = Viewer.of(three_clusters)
    assert SCRATCH in viewer.text(f"POD-001 pod {SCRATCH}/notebook-0", "eks-infer")
    assert SCRATCH not in viewer.text(f"POD-001 pod {SCRATCH}/stray-1", "aks-prod")


def test_a_stray_label_on_a_registered_namespace_moves_no_name(personas, tmp_path):
    """A registered namespace is its tenant's in every cluster, whatever its label says (the
    label claims only namespaces the registry gives no one): `vega-home` labelled for orbit
    stays hidden from orbit's viewer and named for vega's (rtcapsule k71, k75: the label
    showed vega's object names to orbit's viewer and hid vega's own namespace from vega's)."""
    from inventory.presenter import hidden_scope_for
    from tenants.services import tenants_apply
    from tenants.spec import parse_tenants_document

    document = {
        "tenants": [
            {
                "slug": "vega",
                "name": "Vega",
                "trust_class": "internal",
                "namespaces": ["vega-home"],
                "viewers": ["viewer-vega"],
            },
            {
                "slug": "orbit",
                "name": "Orbit",
                "trust_class": "external",
                "namespaces": ["orbit-home"],
                "viewers": ["viewer-orbit"],
            },
        ]
    }
    vega, orbit = (
        make_user("viewer-vega", "tenant_viewer"),
        make_user("viewer-orbit", "tenant_viewer"),
    )
    tenants_apply(specs=parse_tenants_document(document))
    cluster = _sync(
        "eks-infer",
        [
            node("gpu-a"),
            namespace("vega-home", **{"gpuposture.io/tenant": "orbit"}),
            namespace("orbit-home"),
            pod("vega-home", "train-0", container(gpu=GPU)),
            pod("orbit-home", "serve-0", container(gpu=GPU)),
        ],
        tmp_path,
    )
    assert "vega-home" not in hidden_scope_for(vega).in_cluster(cluster.pk).namespaces
    assert "vega-home" in hidden_scope_for(orbit).in_cluster(cluster.pk).namespaces
    assert "vega-home" in hidden_scope_for(orbit).namespaces
