"""A bulletin's marking: its TLP decides who reads it (fail closed: only TLP:CLEAR / WHITE
reach roles that do not read the whole fleet's posture), and its tracking status decides
whether it is imported at all (a draft never sets a baseline; an interim is shown as such)."""

from __future__ import annotations

import copy

import pytest

from demo.bulletins import toolkit_bulletin
from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.store import ImportResult, bulletin_import
from inventory.models import Bulletin
from tests.conftest import api_client
from tests.inventory.test_vex_api import world  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def marked(tracking_id: str, tlp: str | None, status: str = "final") -> dict:
    data = copy.deepcopy(toolkit_bulletin())
    document = data["document"]
    document["tracking"]["id"] = tracking_id
    document["tracking"]["status"] = status
    if tlp is None:
        document.pop("distribution", None)
    else:
        document["distribution"] = {"tlp": {"label": tlp}}
    return data


def imported(*documents: dict) -> ImportResult:
    result = ImportResult()
    for data in documents:
        bulletin_import(data=data, source="test", result=result)
    return result


@pytest.mark.parametrize(
    ("label", "read"),
    [("WHITE", "WHITE"), ("TLP:CLEAR", "CLEAR"), ("AMBER+STRICT", "AMBER+STRICT"), ("red", "RED")],
)
def test_the_tlp_label_is_read_in_both_csaf_versions(label, read):
    assert parse_advisory(marked("X", label)).tlp == read
    assert parse_advisory(marked("X", None)).tlp is None


def test_a_tenant_viewer_reads_only_clear_bulletins(personas):
    imported(
        marked("PUB-1", "WHITE"),
        marked("PUB-2", "CLEAR"),
        marked("GRN-1", "GREEN"),
        marked("AMB-1", "AMBER"),
        marked("AMS-1", "AMBER+STRICT"),
        marked("RED-1", "RED"),
        marked("NONE-1", None),
    )
    assert Bulletin.objects.count() == 7
    for persona in ("viewer_alpha", "procurement"):
        client = api_client(personas[persona])
        listed = {b["tracking_id"] for b in client.get("/api/v1/bulletins/").json()["results"]}
        assert listed == {"PUB-1", "PUB-2"}, persona
        amber = Bulletin.objects.get(tracking_id="AMB-1")
        assert client.get(f"/api/v1/bulletins/{amber.pk}/").status_code == 404
    lead = api_client(personas["security_lead"])
    assert lead.get("/api/v1/bulletins/").json()["count"] == 7
    red = lead.get(f"/api/v1/bulletins/{Bulletin.objects.get(tracking_id='RED-1').pk}/").json()
    assert red["tlp"] == "RED"
    assert api_client(personas["no_role"]).get("/api/v1/bulletins/").status_code == 403


def test_the_bulletin_page_is_not_found_for_a_viewer_of_an_amber_bulletin(client, personas):
    imported(marked("AMB-1", "AMBER"))
    amber = Bulletin.objects.get(tracking_id="AMB-1")
    client.force_login(personas["viewer_alpha"])
    assert client.get(f"/bulletins/{amber.pk}/").status_code == 404
    assert "AMB-1" not in client.get("/bulletins/").content.decode()
    client.force_login(personas["security_lead"])
    page = client.get(f"/bulletins/{amber.pk}/").content.decode()
    assert "TLP:AMBER" in page


def test_a_reimport_records_the_tlp_of_a_bulletin_stored_without_it():
    imported(marked("PUB-1", "WHITE"))
    Bulletin.objects.update(tlp="")  # stored before the TLP was recorded
    result = imported(marked("PUB-1", "WHITE"))
    assert result.unchanged == ["PUB-1"]
    assert Bulletin.objects.get().tlp == "WHITE"


def test_a_draft_is_refused_and_never_sets_a_baseline(personas):
    result = imported(marked("DRAFT-1", "WHITE", status="draft"))
    assert Bulletin.objects.count() == 0
    [(_, reason)] = result.refused
    assert "draft" in reason and "interim or final" in reason
    response = api_client(personas["security_lead"]).post(
        "/api/v1/bulletins/", marked("DRAFT-2", "WHITE", status="draft"), format="json"
    )
    assert response.status_code == 400
    assert "draft" in response.json()["detail"]
    assert Bulletin.objects.count() == 0


def test_a_document_without_a_status_is_refused_and_never_sets_a_baseline():
    # CSAF requires tracking.status: one that leaves it out does not say it is published.
    unmarked = marked("NOSTATUS-1", "WHITE")
    del unmarked["document"]["tracking"]["status"]
    result = imported(unmarked)
    assert Bulletin.objects.count() == 0
    [(_, reason)] = result.refused
    assert "tracking.status is missing" in reason and "draft, interim or final" in reason


def test_a_draft_revision_leaves_the_final_one_in_place():
    imported(marked("B-1", "WHITE"))
    newer = marked("B-1", "WHITE", status="draft")
    newer["document"]["tracking"]["version"] = "9"
    result = imported(newer)
    assert result.refused and Bulletin.objects.get().version != "9"


def test_an_interim_bulletin_is_imported_and_says_so(client, personas):
    imported(marked("INT-1", "WHITE", status="interim"))
    bulletin = Bulletin.objects.get()
    assert bulletin.tracking_status == "interim" and bulletin.fixes.exists()
    body = api_client(personas["security_lead"]).get(f"/api/v1/bulletins/{bulletin.pk}/").json()
    assert body["tracking_status"] == "interim"
    client.force_login(personas["security_lead"])
    assert "data-interim" in client.get(f"/bulletins/{bulletin.pk}/").content.decode()


def test_an_unknown_tracking_status_is_refused():
    result = imported(marked("ODD-1", "WHITE", status="published"))
    assert Bulletin.objects.count() == 0
    assert "tracking.status" in result.refused[0][1]


def test_the_vex_leaves_out_what_a_viewer_may_not_read(world, personas):  # noqa: F811
    for tracking_id in ("demo-5659", "demo-5616"):
        Bulletin.objects.filter(tracking_id=tracking_id).update(tlp="AMBER")
    lead = api_client(personas["security_lead"]).get("/api/v1/clusters/lab/vex/?format=openvex")
    assert lead.status_code == 200 and lead.json()["statements"]
    viewer = api_client(personas["viewer_alpha"]).get("/api/v1/clusters/lab/vex/?format=openvex")
    statements = viewer.json().get("statements", []) if viewer.status_code == 200 else []
    assert not [s for s in statements if "demo-56" in str(s)]


def test_an_interim_republished_as_final_reads_final():
    imported(marked("INT-1", "WHITE", status="interim"))
    result = imported(marked("INT-1", "WHITE", status="final"))
    assert result.unchanged == ["INT-1"]
    assert Bulletin.objects.get().tracking_status == "final"
