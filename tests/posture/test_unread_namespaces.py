"""A sync that certainly did not read Namespaces (an export of a running cluster without them, a
live list refused) keeps tenants' namespaces by label as the last sync that read them stored
them: the tenant keeps its pods, findings and risk, and the run says where the labels come
from (red-team rtpartial k09). A namespace no sync has read stays unowned (fail closed)."""

from __future__ import annotations

import copy
import json

import pytest

from inventory.models import ClusterObject, Pod
from inventory.services import cluster_sync, cluster_sync_from_snapshot
from inventory.sources.kube import KubeSettings, KubeSource
from inventory.sync import cluster_get_or_create
from posture.services import posture_evaluate
from tenants.mapping import TENANT_LABEL
from tenants.services import tenants_apply
from tenants.spec import parse_tenants_document
from tests.conftest import api_client, load_json
from tests.kubeapi import LIST_PATHS, FakeKubeAPI
from tests.posture.test_unread_kinds import COREDNS

pytestmark = pytest.mark.django_db

FROM_LAST = "are from the last sync in which Namespaces were read"


def _tenants() -> None:
    """alpha claims team-alpha by its label only; beta's beta-prod is in the registry."""
    document = load_json("small-tenants.json")
    alpha, beta = document["tenants"]
    alpha["namespaces"], beta["namespaces"] = [], ["beta-prod"]
    tenants_apply(specs=parse_tenants_document(document))


def _items(*, namespaces: bool = True, alpha_label: bool = True) -> list[dict]:
    """The small cluster as `kubectl get ... -A` exports it (kube-system pods), team-alpha
    labelled for alpha; without Namespace objects when not `namespaces`."""
    items = copy.deepcopy(load_json("small-cluster.json")["items"]) + [copy.deepcopy(COREDNS)]
    for obj in items:
        if obj["kind"] == "Namespace" and obj["metadata"]["name"] == "team-alpha":
            obj["metadata"]["labels"] = {TENANT_LABEL: "alpha"} if alpha_label else {}
    return [o for o in items if namespaces or o["kind"] != "Namespace"]


def _sync(cluster, tmp_path, name: str, items: list[dict]):
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    run = cluster_sync_from_snapshot(cluster=cluster, paths=[str(path)])
    posture_evaluate()
    return run


def _alpha_findings(user) -> set[tuple[str, str]]:
    rows = api_client(user).get("/api/v1/findings/?tenant=alpha&status=open").json()["results"]
    return {(row["check"], row["subject_name"]) for row in rows}


def _alpha_risk(user) -> float:
    rows = api_client(user).get("/api/v1/tenants/").json()["results"]
    return next(row["risk"] for row in rows if row["slug"] == "alpha")


def _owner(cluster, namespace: str) -> str | None:
    pod = Pod.objects.filter(cluster=cluster, namespace=namespace).select_related("tenant")[0]
    return pod.tenant.slug if pod.tenant else None


def test_a_tenant_keeps_its_labelled_namespaces_while_namespaces_are_not_read(personas, tmp_path):
    lead = personas["security_lead"]
    _tenants()
    cluster = cluster_get_or_create(name="lab")
    first = _sync(cluster, tmp_path, "full.json", _items())
    assert "Namespace" not in first.kinds_unread and _owner(cluster, "team-alpha") == "alpha"
    findings, risk = _alpha_findings(lead), _alpha_risk(lead)
    assert findings and risk > 0

    # The same pods, no Namespace object: alpha keeps its pods, findings and risk.
    pods = _items(namespaces=False)
    pods.append({**copy.deepcopy(pods[-1]), "metadata": {"name": "x", "namespace": "fresh"}})
    second = _sync(cluster, tmp_path, "pods.json", pods)
    assert _alpha_findings(lead) == findings
    assert _alpha_risk(lead) == risk
    assert _owner(cluster, "team-alpha") == "alpha"
    assert "Namespace" in second.kinds_unread
    assert any(FROM_LAST in w and TENANT_LABEL in w for w in second.warnings), second.warnings
    # Kept, not deleted as gone; a namespace no sync read is no tenant's (fail closed).
    assert ClusterObject.objects.filter(cluster=cluster, kind="namespace").count() == 4
    assert _owner(cluster, "fresh") is None

    # Read again, the label removed: team-alpha is no tenant's now.
    third = _sync(cluster, tmp_path, "unlabelled.json", _items(alpha_label=False))
    assert not any(FROM_LAST in w for w in third.warnings)
    assert _owner(cluster, "team-alpha") is None
    assert not _alpha_findings(lead)


def test_namespaces_never_read_leave_label_claims_unowned_and_say_so(personas, tmp_path):
    _tenants()
    cluster = cluster_get_or_create(name="lab")
    run = _sync(cluster, tmp_path, "pods.json", _items(namespaces=False))
    assert any("no earlier sync read them" in w for w in run.warnings), run.warnings
    assert _owner(cluster, "team-alpha") is None
    assert _owner(cluster, "beta-prod") == "beta"  # the registry's list needs no label


@pytest.fixture
def full_lists(settings):
    settings.GPUPOSTURE_FULL_RESYNC_HOURS = 0


def test_a_live_sync_refused_namespaces_keeps_label_owners(personas, tmp_path, full_lists):
    _tenants()
    cluster = cluster_get_or_create(name="live")
    with FakeKubeAPI(_items()) as api:
        source = KubeSource(
            kubeconfig=str(api.kubeconfig(tmp_path)),
            context="fake",
            settings=KubeSettings(page_size=50, read_timeout=5.0),
        )
        first = cluster_sync(cluster=cluster, source=source)
        assert _owner(cluster, "team-alpha") == "alpha"
        api.forbid(LIST_PATHS["Namespace"])
        second = cluster_sync(cluster=cluster, source=source)
    assert (first.status, second.status, second.mode) == ("succeeded", "succeeded", "full")
    assert "Namespace" in second.kinds_unread
    assert any("HTTP 403" in w and "namespaces" in w for w in second.warnings), second.warnings
    assert any(FROM_LAST in w for w in second.warnings), second.warnings
    assert _owner(cluster, "team-alpha") == "alpha"
