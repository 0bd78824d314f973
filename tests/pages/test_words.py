"""Codes read as words wherever a person reads them (issue 19 item 11): sharing modes, the
checklist's evidence as rows, audit events naming related objects instead of ids."""

from __future__ import annotations

import pytest
from django.test import Client

from audit.services import audit_record
from gpuposture.base.labels import evidence_rows, words
from tenants.models import Tenant
from tenants.policy import SHARING_MODES


def test_every_sharing_mode_has_words_and_unknown_codes_stay_readable():
    assert words("mig_gi") == "MIG GPU instance"
    assert words("time_slicing") == "time-slicing"
    assert all(words(mode) != mode for mode in SHARING_MODES if "_" in mode)
    assert words("some_new_code") == "some new code"
    assert words("SHARE-001") == "SHARE-001"
    assert words(None) == "" and words(3) == "3"


def test_evidence_rows_make_a_table_of_class_to_modes():
    rows = evidence_rows(
        {
            "classes": {"internal": ["exclusive", "mig_gi"]},
            "without_modes": [],
            "gpu_nodes_checked": 4,
        }
    )
    assert rows[0] == {
        "label": "trust class → sharing modes it allows",
        "kind": "table",
        "value": [("internal", "whole GPU (exclusive), MIG GPU instance")],
    }
    assert rows[1]["value"] == "none"
    assert rows[2] == {"label": "GPU nodes checked", "kind": "text", "value": "4"}


@pytest.mark.django_db
def test_cluster_checklist_shows_evidence_as_rows_not_json(small_world, personas):
    client = Client()
    client.force_login(personas["security_lead"])
    html = client.get("/clusters/lab/").content.decode()
    checklist = html.split("Practitioner checklist")[1].split("</section>")[0]
    assert "trust class → sharing modes it allows" in checklist
    assert "MIG GPU instance" in checklist
    assert "mig_gi" not in checklist and "{" not in checklist


@pytest.mark.django_db
def test_audit_log_names_related_objects(small_world, personas):
    from tenants.models import SharingRequest

    alpha = Tenant.objects.get(slug="alpha")
    request = SharingRequest.objects.create(
        tenant=alpha,
        cluster=small_world,
        mode="mig_gi",
        justification="j",
        requested_by=personas["viewer_alpha"],
    )
    audit_record(
        actor=personas["platform_engineer"],
        action="update",
        obj=request,
        before={"decided_by": None, "tenant": alpha.pk},
        after={
            "decided_by": personas["platform_engineer"].pk,
            "tenant": alpha.pk,
            "cluster": small_world.pk,
        },
    )
    client = Client()
    client.force_login(personas["auditor"])
    html = client.get("/audit/").content.decode()
    row = html.split('id="event-')[1].split("</tr>")[0]
    assert "<ins>plat</ins>" in row  # decided_by: the username, not the id
    assert "<ins>lab</ins>" in row  # cluster: its name
