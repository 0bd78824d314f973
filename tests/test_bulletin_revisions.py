"""Issue 16 item 5: every bulletin import, revision replacement and deletion is an audit event
and an import record (who, what changed, which findings it resolved); a revision that weakens
a fix is held until a security lead confirms it."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.test import Client

from audit.models import AuditEvent
from audit.selectors import audit_chain_verify
from inventory.bulletins.store import bulletins_import_paths
from inventory.models import Bulletin, BulletinImport, BulletinRevision, Node
from posture.bulletin_effects import BULLETIN_CHECKS
from posture.models import Finding
from posture.services import posture_evaluate
from tests.conftest import api_client
from tests.realworld import realworld

pytestmark = pytest.mark.django_db

TRACKING = "5630"  # NVIDIA's April 2025 driver bulletin: R550 fixed in 550.163.01
R550 = "driver linux R550 tesla"


def revision(version: str, *, fixed: str = "550.163.01") -> dict:
    """NVIDIA's bulletin as a later revision `version`, its R550 fix moved to `fixed` (the
    lab's node gpu-ts-1 runs 550.90.07: below 550.163.01, above 550.54.14)."""
    text = realworld("csaf", "nvidia-5630.json").read_text().replace("550.163.01", fixed)
    data = json.loads(text)
    data["document"]["tracking"]["version"] = version
    return data


def open_stack(**filters: object) -> list[int]:
    """Open findings of the checks a bulletin drives (below the baseline, past the SLA)."""
    rows = Finding.objects.filter(check_id__in=BULLETIN_CHECKS, status="open", **filters)
    return sorted(rows.values_list("pk", flat=True))


@pytest.fixture
def exposed(small_world):
    """The lab with NVIDIA's bulletin imported and scored: gpu-ts-1 is below its R550 fix."""
    bulletins_import_paths(paths=[str(realworld("csaf", "nvidia-5630.json"))])
    posture_evaluate()
    assert open_stack(subject_name="gpu-ts-1")
    return small_world


def test_a_weakening_revision_is_held_and_traced_until_a_security_lead_confirms_it(
    exposed, personas, django_capture_on_commit_callbacks
):
    """The issue's case: a 'newer revision' posted through the API that would close every
    STACK-001 finding of the node. It is held with an audit event and an import record; the
    findings stay open; a platform engineer or a viewer cannot confirm it; a security lead
    can, and the import of the confirmation names the findings the re-score resolved."""
    before = open_stack()
    plat = api_client(personas["platform_engineer"])
    answer = plat.post("/api/v1/bulletins/", revision("9.0.0", fixed="550.54.14"), format="json")
    assert answer.status_code == 202, answer.json()
    [held] = answer.json()["revisions"]
    assert (
        f"{R550}: fixed version lowered from 550.163.01 to 550.54.14"
        in (held["changes"]["weakening"])
    )
    assert Bulletin.objects.get().version == "1.1.0"  # the stored revision is still in force
    posture_evaluate()
    assert open_stack() == before  # nothing closed

    record = BulletinImport.objects.get(pk=answer.json()["import"])
    assert (record.trigger, record.requested_by, record.counts["held"]) == ("api", "plat", 1)
    [change] = record.changes
    assert change["outcome"] == "held" and change["version_before"] == "1.1.0"
    assert {"product": R550, "before": "550.163.01", "after": "550.54.14"}.items() <= next(
        f for f in change["fixed_versions"] if f["product"] == R550
    ).items()
    hold = AuditEvent.objects.get(action="hold")
    assert (hold.actor_name, hold.object_type) == ("plat", "inventory.bulletinrevision")
    assert hold.before["fixes"][R550]["fixed"] == ["550.163.01"]
    assert hold.after["fixes"][R550]["fixed"] == ["550.54.14"]
    assert AuditEvent.objects.filter(action="import", object_id=str(record.pk)).exists()

    url = f"/api/v1/bulletin-revisions/{held['id']}/confirm/"
    assert plat.post(url, {}, format="json").status_code == 403
    assert api_client(personas["viewer_alpha"]).post(url, {}, format="json").status_code == 403
    page = Client()
    page.force_login(personas["platform_engineer"])
    decide = f"/bulletins/revisions/{held['id']}/decide/"
    assert page.post(decide, {"decision": "confirm"}).status_code == 403
    assert BulletinRevision.objects.get().status == "pending" and open_stack() == before

    lead = api_client(personas["security_lead"])
    with django_capture_on_commit_callbacks(execute=True):  # the re-score, queued on commit
        confirmed = lead.post(url, {"note": "vendor withdrew the fix"}, format="json")
    assert confirmed.status_code == 200, confirmed.json()
    assert Bulletin.objects.get().version == "9.0.0"
    closed = sorted(set(before) - set(open_stack()))
    assert closed and not open_stack(subject_name="gpu-ts-1")
    done = BulletinImport.objects.get(pk=confirmed.json()["import"])
    assert (done.action, done.requested_by, done.counts["replaced"]) == ("confirm", "sec", 1)
    # The re-score after the confirmation (eager here) recorded what it resolved.
    assert done.resolved_findings["count"] == len(closed)
    assert done.resolved_findings["ids"] == closed
    assert (
        AuditEvent.objects.get(action="confirm").after["note"],
        AuditEvent.objects.get(action="replace").after["weakening_confirmed"][0],
    ) == ("vendor withdrew the fix", held["changes"]["weakening"][0])
    again = lead.post(url, {}, format="json")
    assert again.status_code == 400 and "already decided" in again.json()["detail"]
    assert audit_chain_verify().intact


def test_a_revision_that_only_strengthens_is_applied_recorded_and_audited(
    exposed, personas, django_capture_on_commit_callbacks
):
    lead = api_client(personas["security_lead"])
    with django_capture_on_commit_callbacks(execute=True):
        answer = lead.post(
            "/api/v1/bulletins/", revision("2.0.0", fixed="550.172.02"), format="json"
        )
    assert answer.status_code == 201, answer.json()
    assert answer.json()["version"] == "2.0.0" and not BulletinRevision.objects.exists()
    record = BulletinImport.objects.get(trigger="api")
    record.refresh_from_db()
    assert (record.requested_by, record.counts["replaced"], record.bulletins) == (
        "sec",
        1,
        [Bulletin.objects.get().tracking_id],
    )
    [change] = record.changes
    assert change["outcome"] == "replaced" and change["weakening"] == []
    raised = next(f for f in change["fixed_versions"] if f["product"] == R550)
    assert (raised["before"], raised["after"]) == ("550.163.01", "550.172.02")
    replaced = AuditEvent.objects.get(action="replace")
    assert (replaced.actor_name, replaced.object_type) == ("sec", "inventory.bulletin")
    assert replaced.before["version"] == "1.1.0" and replaced.after["version"] == "2.0.0"
    assert record.resolved_findings == {"count": 0, "ids": [], "posture_run": ANY_RUN}
    assert open_stack(subject_name="gpu-ts-1")  # still below the (higher) fix


class _AnyRun:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, int)


ANY_RUN = _AnyRun()


def test_a_rejected_revision_is_never_applied_nor_held_again(exposed, personas, tmp_path):
    path = tmp_path / "revised.json"
    path.write_text(json.dumps(revision("9.0.0", fixed="550.54.14")))
    err = io.StringIO()
    call_command("import_bulletins", str(path), stdout=io.StringIO(), stderr=err)
    assert "held" in err.getvalue() and "fixed version lowered" in err.getvalue()
    call_command("import_bulletins", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    held = BulletinRevision.objects.get()  # offered twice (a feed polled hourly): held once
    assert AuditEvent.objects.filter(action="hold").count() == 1
    page = Client()
    page.force_login(personas["security_lead"])
    shown = page.get(f"/bulletins/revisions/{held.pk}/").content.decode()
    assert "fixed version lowered from 550.163.01 to 550.54.14" in shown and "Reject" in shown
    listed = page.get("/bulletins/").content.decode()
    assert "Revisions waiting for a security lead" in listed
    refused = page.post(f"/bulletins/revisions/{held.pk}/decide/", {"decision": "reject"})
    assert refused.status_code == 302 and BulletinRevision.objects.get().status == "pending"
    page.post(
        f"/bulletins/revisions/{held.pk}/decide/",
        {"decision": "reject", "note": "not a vendor revision: our mirror's mistake"},
    )
    assert BulletinRevision.objects.get().status == "rejected"
    assert AuditEvent.objects.get(action="reject").actor_name == "sec"
    out = io.StringIO()
    call_command("import_bulletins", str(path), stdout=out, stderr=io.StringIO())
    assert "1 unchanged" in out.getvalue() and BulletinRevision.objects.count() == 1
    assert Bulletin.objects.get().version == "1.1.0"


def test_the_cli_applies_a_weakening_revision_only_when_told(
    exposed, tmp_path, django_capture_on_commit_callbacks
):
    path = tmp_path / "revised.json"
    path.write_text(json.dumps(revision("9.0.0", fixed="550.54.14")))
    before = open_stack()
    out = io.StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("import_bulletins", str(path), "--confirm-weakening", stdout=out)
    assert "1 replaced" in out.getvalue() and Bulletin.objects.get().version == "9.0.0"
    record = BulletinImport.objects.filter(trigger="cli").get()
    assert record.requested_by == "manage.py import_bulletins"
    assert record.changes[0]["weakening"] and record.resolved_findings["count"] > 0
    assert set(record.resolved_findings["ids"]) == set(before) - set(open_stack())
    event = AuditEvent.objects.get(action="replace")
    assert event.actor_name == "manage.py import_bulletins" and event.after["weakening_confirmed"]


def test_deleting_a_bulletin_is_a_lead_s_audited_import_with_its_effect(
    exposed, personas, django_capture_on_commit_callbacks
):
    bulletin = Bulletin.objects.get()
    url = f"/api/v1/bulletins/{bulletin.pk}/"
    assert api_client(personas["platform_engineer"]).delete(url).status_code == 403
    before = open_stack()
    with django_capture_on_commit_callbacks(execute=True):
        answer = api_client(personas["security_lead"]).delete(url)
    assert answer.status_code == 200 and not Bulletin.objects.exists()
    record = BulletinImport.objects.get(pk=answer.json()["id"])
    assert (record.action, record.requested_by, record.bulletins) == (
        "delete",
        "sec",
        [bulletin.tracking_id],
    )
    [change] = record.changes
    assert change["outcome"] == "deleted" and R550 in change["products_dropped"]
    assert record.resolved_findings["ids"] == before and not open_stack()
    event = AuditEvent.objects.get(action="delete", object_type="inventory.bulletin")
    assert event.actor_name == "sec" and event.before["fixes"][R550]["fixed"] == ["550.163.01"]
    assert Node.objects.get(name="gpu-ts-1").patch_status != "below_baseline"


def test_deleting_from_the_page_needs_a_lead_and_the_confirmation(exposed, personas):
    bulletin = Bulletin.objects.get()
    plat, lead = Client(), Client()
    plat.force_login(personas["platform_engineer"])
    lead.force_login(personas["security_lead"])
    assert plat.post(f"/bulletins/{bulletin.pk}/delete/", {"confirm": "delete"}).status_code == 403
    assert "Delete " not in plat.get(f"/bulletins/{bulletin.pk}/").content.decode()
    assert (
        'name="confirm" value="delete"' in lead.get(f"/bulletins/{bulletin.pk}/").content.decode()
    )
    lead.post(f"/bulletins/{bulletin.pk}/delete/", {})
    assert Bulletin.objects.exists()  # no confirmation, no deletion
    assert lead.post(f"/bulletins/{bulletin.pk}/delete/", {"confirm": "delete"}).status_code == 302
    assert not Bulletin.objects.exists()
    assert BulletinImport.objects.get(action="delete").trigger == "page"


def test_every_import_path_is_recorded_and_audited(small_world, personas, tmp_path):
    """CLI, page upload, API document (feeds: tests/test_bulletin_imports.py): each leaves an
    import record and an `import` event naming who asked."""
    document = realworld("csaf", "nvidia-5630.json").read_bytes()
    (tmp_path / "a.json").write_bytes(document)
    call_command("import_bulletins", str(tmp_path), stdout=io.StringIO())
    page = Client()
    page.force_login(personas["platform_engineer"])
    upload = io.BytesIO(document)
    upload.name = "nvidia-5630.json"
    page.post("/bulletins/import/", {"files": [upload], "urls": ""})
    api_client(personas["security_lead"]).post(
        "/api/v1/bulletins/", json.loads(document), format="json"
    )
    records = BulletinImport.objects.order_by("id")
    assert [(r.trigger, r.requested_by) for r in records] == [
        ("cli", "manage.py import_bulletins"),
        ("page", "plat"),
        ("api", "sec"),
    ]
    assert [r.counts["imported"] + r.counts["unchanged"] for r in records] == [1, 1, 1]
    events = AuditEvent.objects.filter(action="import").order_by("id")
    assert [(e.actor_name, e.object_id) for e in events] == [
        (r.requested_by, str(r.pk)) for r in records
    ]
    assert AuditEvent.objects.get(action="create", object_type="inventory.bulletin")
