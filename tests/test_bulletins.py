"""Importing CSAF bulletins: every real file imports or is refused with a reason, revisions
replace older ones, malformed documents lose nothing else, and nodes get a patch status and
STACK- findings from them."""

from __future__ import annotations

import copy
import io
import json

import pytest
from django.core.management import CommandError, call_command

from inventory.bulletins.patch_refresh import fixes_from_db
from inventory.bulletins.store import ImportResult, bulletin_import, bulletins_import_paths
from inventory.models import Bulletin, BulletinFix, Node
from posture.models import Finding
from posture.services import posture_evaluate
from tests.realworld import realworld

pytestmark = pytest.mark.django_db


def document(tracking: str) -> dict:
    return json.loads(realworld("csaf", f"nvidia-{tracking}.json").read_text())


def test_every_real_file_imports_or_is_refused_with_a_reason():
    result = bulletins_import_paths(paths=[str(realworld("csaf"))])
    assert len(result.imported) + len(result.refused) == 29
    assert all(reason for _, reason in result.refused)
    bulletin = Bulletin.objects.get(tracking_id__icontains="5614")
    assert {"CVE-2024-53869", "CVE-2024-0146"} <= set(bulletin.cves)
    fixes = {
        (f.branch, f.fixed_version)
        for f in bulletin.fixes.filter(kind="driver", platform="linux", line="tesla")
    }
    assert {("R570", "570.86.15"), ("R550", "550.144.03"), ("R535", "535.230.02")} <= fixes
    toolkit = Bulletin.objects.get(tracking_id__icontains="5582").fixes.get(
        kind="container_toolkit"
    )
    assert (toolkit.affected_op, toolkit.affected_version) == ("<=", "1.16.1")
    again = bulletins_import_paths(paths=[str(realworld("csaf"))])
    assert not again.imported and len(again.unchanged) == len(result.imported)  # idempotent


def test_a_newer_revision_replaces_an_older_one():
    data = document("5630")
    result = ImportResult()
    bulletin_import(data=data, source="a", result=result)
    older = copy.deepcopy(data)
    older["document"]["tracking"]["version"] = "0.9.0"
    bulletin_import(data=older, source="b", result=result)
    assert result.unchanged == [data["document"]["tracking"]["id"]]
    newer = copy.deepcopy(data)
    newer["document"]["tracking"]["version"] = "9.0.0"
    newer["document"]["title"] = "Revised bulletin"
    bulletin_import(data=newer, source="c", result=result)
    assert Bulletin.objects.get().title == "Revised bulletin"
    assert result.replaced == [data["document"]["tracking"]["id"]]


def test_a_malformed_document_is_refused_and_the_rest_of_the_batch_lands(tmp_path):
    (tmp_path / "good.json").write_text(json.dumps(document("5616")))
    (tmp_path / "not-json.json").write_text("{nope")
    bad = document("5599")
    del bad["document"]["tracking"]
    (tmp_path / "no-tracking.json").write_text(json.dumps(bad))
    out, err = io.StringIO(), io.StringIO()
    call_command("import_bulletins", str(tmp_path), stdout=out, stderr=err)
    assert "1 imported" in out.getvalue() and "2 refused" in out.getvalue()
    assert "not readable JSON" in err.getvalue() and "tracking" in err.getvalue()
    assert Bulletin.objects.count() == 1
    # A feed on a private address is refused by the SSRF guard before any connection.
    with pytest.raises(CommandError, match="private"):
        call_command("import_bulletins", "https://10.0.0.7/provider-metadata.json")


def test_nodes_get_patch_status_and_stack_findings(small_world):
    node = Node.objects.get(name="gpu-ts-1")
    assert node.patch_status == "unknown"  # no bulletins yet: nothing is claimed
    bulletins_import_paths(
        paths=[str(realworld("csaf", f"nvidia-{n}.json")) for n in ("5614", "5630")]
    )
    node.refresh_from_db()
    assert node.patch_status == "below_baseline"  # 550.90.07 < 550.163.01
    driver = [e for e in node.patch_exposures if e["component"] == "driver"]
    assert {e["fixed_version"] for e in driver} >= {"550.163.01"}
    posture_evaluate()
    finding = Finding.objects.get(check_id="STACK-001", tenants__slug="alpha")
    assert finding.evidence["move_to"] == "550.163.01"
    assert "CVE-2025-23244" in finding.evidence["cves"]
    assert Finding.objects.filter(check_id="STACK-005", status="open").exists()  # 2025 fixes


def test_bulletin_api_and_pages(small_world, personas):
    from django.test import Client

    from tests.conftest import api_client

    lead = api_client(personas["security_lead"])
    created = lead.post("/api/v1/bulletins/", document("5630"), format="json")
    assert created.status_code == 201 and created.json()["fixes"]
    refused = lead.post("/api/v1/bulletins/", {"document": {"csaf_version": "1.2"}}, format="json")
    assert refused.status_code == 400 and "CSAF" in refused.json()["detail"]
    assert (
        api_client(personas["auditor"])
        .post("/api/v1/bulletins/", document("5616"), format="json")
        .status_code
        == 403
    )
    assert Node.objects.get(name="gpu-ts-1").patch_status == "below_baseline"
    client = Client()
    client.force_login(personas["platform_engineer"])
    bulletin = Bulletin.objects.get()
    assert "gpu-ts-1" in client.get(f"/bulletins/{bulletin.pk}/").content.decode()
    page = client.get("/patch/").content.decode()
    assert "lab / no pool label" in page and "driver 550.163.01" in page
    # The list shows the aggregate severity as a labelled badge and filters it from a list.
    listed = client.get("/bulletins/?severity=high").content.decode()
    assert 'title="severity high">high</span>' in listed and bulletin.tracking_id in listed
    assert '<option value="high" selected>high</option>' in listed
    assert bulletin.tracking_id not in client.get("/bulletins/?severity=low").content.decode()
    assert lead.get("/api/v1/bulletins/?severity=HIGH").json()["count"] == 1


def own_toolkit_advisory(version: str, released: str, operator: bool) -> dict:
    """Our own small advisory: toolkit <= 1.17.7 fixed in 1.17.8 (and the operator's, when
    `operator`), first out on 2025-07-15."""
    branches = [
        ("NVIDIA Container Toolkit", "t", "1.17.7", "1.17.8"),
        *([("NVIDIA GPU Operator", "o", "25.3.1", "25.3.2")] if operator else []),
    ]
    tree = [
        {
            "category": "product_version",
            "name": label,
            "product": {"product_id": f"{key}-{state}", "name": name},
        }
        for label, key, affected, fixed in branches
        for state, name in (("a", f"All versions up to and including {affected}"), ("f", fixed))
    ]
    return {
        "document": {
            "category": "csaf_security_advisory",
            "csaf_version": "2.0",
            "title": "Toolkit advisory",
            "tracking": {
                "id": "OWN-1",
                "status": "final",
                "version": version,
                "initial_release_date": "2025-07-15T00:00:00Z",
                "current_release_date": released,
            },
        },
        "product_tree": {
            "branches": [{"category": "architecture", "name": "Linux", "branches": tree}]
        },
        "vulnerabilities": [
            {
                "cve": "CVE-2099-0002",
                "product_status": {
                    "known_affected": [f"{key}-a" for _, key, _, _ in branches],
                    "fixed": [f"{key}-f" for _, key, _, _ in branches],
                },
            }
        ],
    }


def test_a_revision_keeps_the_publication_date_of_the_fixes_it_carries_over():
    result = ImportResult()
    bulletin_import(
        data=own_toolkit_advisory("1", "2025-07-15T00:00:00Z", False), source="a", result=result
    )
    bulletin_import(
        data=own_toolkit_advisory("2", "2025-08-12T00:00:00Z", True), source="b", result=result
    )
    assert result.replaced == ["OWN-1"]
    released = {f.kind: f.released.date().isoformat() for f in BulletinFix.objects.all()}
    # The toolkit fix was out on 07-15; the operator's came with revision 2.
    assert released == {"container_toolkit": "2025-07-15", "gpu_operator": "2025-08-12"}


def test_a_document_without_a_title_does_not_stop_the_batch(tmp_path):
    untitled = own_toolkit_advisory("1", "2025-07-15T00:00:00Z", False)
    del untitled["document"]["title"]
    (tmp_path / "a-untitled.json").write_text(json.dumps(untitled))
    (tmp_path / "b-good.json").write_text(json.dumps(document("5616")))
    result = bulletins_import_paths(paths=[str(tmp_path)])
    assert len(result.imported) == 2
    assert Bulletin.objects.get(tracking_id="OWN-1").fixes.count() == 1


def test_fixes_stored_before_their_publication_was_recorded_read_the_first_release():
    result = ImportResult()
    first = own_toolkit_advisory("1", "2025-08-12T00:00:00Z", False)
    bulletin_import(data=first, source="a", result=result)
    BulletinFix.objects.update(released=None)  # as rows stored before the column existed
    (fix,) = fixes_from_db()
    assert fix.released.startswith("2025-07-15")  # initial release, not the current one
    bulletin_import(
        data=own_toolkit_advisory("2", "2025-09-01T00:00:00Z", True), source="b", result=result
    )
    released = {f.kind: f.released.date().isoformat() for f in BulletinFix.objects.all()}
    assert released == {"container_toolkit": "2025-07-15", "gpu_operator": "2025-09-01"}
