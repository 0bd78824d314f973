"""A tenant scored from clusters that hold nothing of it: scored (docs/scoring.md), but said to
be unobserved (`observed: false`, a caveat on its page and its overview row), and its page
never says "Not scored yet." beside the score it shows."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from inventory.models import Cluster
from posture.models import Finding, PostureRun
from tenants.models import Tenant
from tests.conftest import api_client

pytestmark = pytest.mark.django_db

TENANTS = """
tenants:
  - slug: alpha
    name: Team Alpha
    trust_class: internal
    namespaces: [team-alpha]
  - slug: delta
    name: Customer Delta
    trust_class: external
    namespaces: [cust-d]
  - slug: epsilon
    name: Team Epsilon
    trust_class: internal
  - slug: zeta
    name: Team Zeta
    trust_class: internal
    namespaces: [dr-batch]
"""
CAVEAT = "nothing of this tenant was seen on any cluster read"


def _namespace(name: str, labels: dict | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, **labels_of(labels)},
    }


def labels_of(labels: dict | None) -> dict:
    return {"labels": labels} if labels else {}


SNAPSHOT = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        _namespace("team-alpha"),
        _namespace("cust-d"),  # delta's, empty: seen all the same
        _namespace("lab-research", {"gpuposture.io/tenant": "epsilon"}),  # claimed by label
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "trainer", "namespace": "team-alpha", "uid": "uid-trainer"},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            "status": {"phase": "Running"},
        },
    ],
}


@pytest.fixture
def world(tmp_path: Path, personas):
    """prod read (alpha's pod, delta's empty namespace, epsilon's labelled one), zeta's
    namespace on no cluster read, and dr-site registered but never synced; scored."""
    (tmp_path / "tenants.yaml").write_text(TENANTS)
    call_command("apply_tenants", str(tmp_path / "tenants.yaml"), stdout=StringIO())
    (tmp_path / "prod.json").write_text(json.dumps(SNAPSHOT))
    quiet = {"stdout": StringIO(), "stderr": StringIO()}
    call_command(
        "sync_cluster", "--cluster", "prod", "--snapshot", str(tmp_path / "prod.json"), **quiet
    )
    Cluster.objects.create(name="dr-site", source=Cluster.Source.KUBECONFIG, kubeconfig_path="/x")
    call_command("score", **quiet)
    return personas


def _text(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def test_the_api_says_which_scored_tenants_were_observed(world):
    client = api_client(world["security_lead"])
    rows = {r["slug"]: r for r in client.get("/api/v1/tenants/").json()["results"]}
    assert {s: (r["scored"], r["observed"]) for s, r in rows.items()} == {
        "alpha": (True, True),  # a pod
        "delta": (True, True),  # a namespace of its list, seen empty
        "epsilon": (True, True),  # a namespace labelled for it
        "zeta": (True, False),  # scored 100 / A from what was read, none of it zeta's
    }
    assert (rows["zeta"]["score"], rows["zeta"]["grade"]) == (100, "A")  # still scored
    posture = client.get(f"/api/v1/tenants/{rows['zeta']['id']}/posture/").json()
    assert (posture["scored"], posture["observed"]) == (True, False)
    alpha = client.get(f"/api/v1/tenants/{rows['alpha']['id']}/posture/").json()
    assert alpha["observed"] is True
    schema = Client()
    schema.force_login(world["auditor"])
    openapi = schema.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for name in ("Posture", "TenantWithScore"):
        assert "observed" in openapi["components"]["schemas"][name]["required"], name


def test_a_finding_affecting_a_tenant_makes_it_observed(world):
    zeta = Tenant.objects.get(slug="zeta")
    finding = Finding.objects.create(
        check_id="K8S-003",
        severity="high",
        cluster=Cluster.objects.get(name="prod"),
        subject_kind="ClusterRoleBinding",
        subject_name="zeta-node-labeler",
        fingerprint="prod-k8s-003-zeta",
        title="group:zeta may patch nodes",
        first_seen=timezone.now(),
        last_seen=timezone.now(),
    )
    finding.tenants.add(zeta)
    client = api_client(world["security_lead"])
    rows = {r["slug"]: r for r in client.get("/api/v1/tenants/").json()["results"]}
    assert rows["zeta"]["observed"] is True
    Finding.objects.filter(pk=finding.pk).update(status=Finding.Status.RESOLVED)
    rows = {r["slug"]: r for r in client.get("/api/v1/tenants/").json()["results"]}
    assert rows["zeta"]["observed"] is False  # a cause gone is no observation of now


def test_a_tenant_on_no_cluster_says_when_it_was_scored_not_that_it_was_not(world):
    client = Client()
    client.force_login(world["security_lead"])
    page = _text(client, "/tenants/zeta/")
    assert "A 100 /100" in page  # the score it has
    assert "Not scored yet" not in page  # and no claim that it has none
    run = PostureRun.objects.latest("finished_at")
    assert f"Last scored {run.finished_at:%Y-%m-%d %H:%M:%S} UTC" in page


def test_an_unobserved_tenants_page_and_row_carry_the_caveat(world):
    client = Client()
    client.force_login(world["security_lead"])
    page = _text(client, "/tenants/zeta/")
    assert "Nothing of this tenant was seen on any cluster read" in page
    assert "not read yet: dr-site" in page  # where its namespaces may be
    assert CAVEAT not in _text(client, "/tenants/alpha/").lower()
    assert "data-not-observed" not in client.get("/tenants/alpha/").content.decode()

    for url in ("/", "/tenants/"):
        text = _text(client, url)
        row = text[text.index("Team Zeta") :][:300]
        assert CAVEAT in row, url
        assert text.count(CAVEAT) == 1, url  # zeta's row only


def test_the_api_lists_the_namespaces_a_tenant_owns_by_label(world):
    """DESIGN §7: a tenant owns the namespaces its registry entry lists or a cluster labels
    `gpuposture.io/tenant` for it; §8: tenants expose `namespaces`."""
    client = api_client(world["security_lead"])
    rows = {r["slug"]: r for r in client.get("/api/v1/tenants/").json()["results"]}
    assert (rows["epsilon"]["namespaces"], rows["epsilon"]["labelled_namespaces"]) == (
        ["lab-research"],
        ["lab-research"],
    )
    assert (rows["alpha"]["namespaces"], rows["alpha"]["labelled_namespaces"]) == (
        ["team-alpha"],
        [],
    )


def test_a_get_put_back_leaves_a_labelled_namespace_claimed_by_its_label(world):
    client = api_client(world["security_lead"])
    epsilon = Tenant.objects.get(slug="epsilon")
    url = f"/api/v1/tenants/{epsilon.pk}/"
    read = client.get(url).json()
    answer = client.put(url, {**read, "name": "Team Epsilon 2"}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["namespaces"] == ["lab-research"]
    assert not epsilon.namespaces.exists()  # still the label's, not copied into the registry
