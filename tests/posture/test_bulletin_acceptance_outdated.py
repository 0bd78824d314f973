"""An accepted bulletin exposure finding (STACK-001..003, -005: one per check and node) covers
the exposures seen when its risk was accepted (docs/findings.md). A later bulletin that lists
a new CVE for the node, asks for a higher fix, or raises its severity opens it again, with an
`outdated` audit event and the reason in its `reopened`; the same bulletin imported again, a
CVE of a branch the node is not on, or a lower severity, leave it accepted.

gpu-ts-1 of the small world runs driver 550.90.07 (R550), one pod of alpha's."""

from __future__ import annotations

import json
from datetime import timedelta
from html import escape

import pytest
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from inventory.bulletins.store import bulletins_import_uploads
from posture.models import Finding
from posture.rules.stack.accepted import exposure_basis, exposure_beyond
from posture.services import posture_evaluate
from tests.conftest import api_client
from tests.csaf_builder import nvidia_advisory, product_version

pytestmark = pytest.mark.django_db


def driver_bulletin(
    tracking: str, fixes: dict[str, str], cve: str, cvss: float = 7.8, version: str = "1"
) -> dict:
    """Our own NVIDIA-shaped driver bulletin: for each branch ("R550") its Tesla fix, one CVE."""
    arch, affected, fixed = [], [], []
    for branch, fix in fixes.items():
        key = f"{tracking}-{branch}"
        prior = product_version("Tesla", f"All driver versions prior to {fix}", f"{key}-a")
        arch.append(
            {
                "category": "architecture",
                "name": f"Linux({branch})",
                "branches": [prior, product_version("Tesla", fix, f"{key}-f")],
            }
        )
        affected.append(f"{key}-a")
        fixed.append(f"{key}-f")
    return nvidia_advisory(
        tracking=tracking,
        title=f"Driver bulletin {tracking}",
        released=(timezone.now() - timedelta(days=1)).isoformat(),
        architectures=arch,
        cve=cve,
        affected=affected,
        fixed=fixed,
        cvss=cvss,
        version=version,
    )


A = driver_bulletin("OWN-A", {"R550": "550.144.03"}, "CVE-2099-1111")


def imported(*documents: dict) -> None:
    files = [(f"{i}.json", json.dumps(d).encode()) for i, d in enumerate(documents)]
    result = bulletins_import_uploads(files=files)
    assert not result.refused, result.refused
    posture_evaluate()


def driver_finding() -> Finding:
    (finding,) = Finding.objects.filter(check_id="STACK-001", subject_name="gpu-ts-1")
    return finding


@pytest.fixture
def accepted(small_world, personas) -> Finding:
    """gpu-ts-1's STACK-001 for bulletin A (CVE-2099-1111, fix 550.144.03), accepted."""
    imported(A)
    finding = driver_finding()
    assert (finding.status, finding.severity) == ("open", "high")
    until = (timezone.now() + timedelta(days=30)).date().isoformat()
    lead = api_client(personas["security_lead"])
    answer = lead.post(
        f"/api/v1/findings/{finding.pk}/accept/",
        {"reason": "maintenance window next month", "until": until},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    finding.refresh_from_db()
    assert finding.status == "accepted"
    return finding


def test_a_new_cve_with_a_higher_fix_opens_the_accepted_finding(accepted, personas):
    imported(driver_bulletin("OWN-B", {"R550": "550.163.01"}, "CVE-2099-2222"))
    again = driver_finding()
    assert (again.pk, again.status) == (accepted.pk, "open")
    assert again.evidence["cves"] == ["CVE-2099-1111", "CVE-2099-2222"]
    event = AuditEvent.objects.get(object_id=str(accepted.pk), action="outdated")
    assert event.actor_name == "system"
    assert (event.before["status"], event.after["status"]) == ("accepted", "open")
    assert event.after["reopened"] == "more exposure than was accepted"
    assert event.after["change"]["new_cves"] == ["CVE-2099-2222"]
    assert event.after["change"]["fixes_raised"] == {"driver": ["550.144.03", "550.163.01"]}
    said = (
        "reopened: more exposure than was accepted "
        "(new CVE-2099-2222; driver fix 550.144.03 -> 550.163.01)"
    )
    assert again.reopened_note == said
    lead = api_client(personas["security_lead"])
    body = lead.get(f"/api/v1/findings/{again.pk}/").json()
    assert (body["status"], body["reopened"]) == ("open", said)
    browser = Client()
    browser.force_login(personas["security_lead"])
    page = browser.get(f"/findings/{again.pk}/").content.decode()
    assert escape(said) in page  # the note, and the history line of the `outdated` event
    assert "new CVE-2099-2222; driver fix 550.144.03 -&gt; 550.163.01 (detected" in page


def test_a_later_critical_score_opens_it_critical(accepted):
    """Bulletin A revised: the same CVE and fix, now CVSS 9.8 (an acceptance of a high risk
    never hides a critical one: an open critical caps the grade)."""
    imported(driver_bulletin("OWN-A", {"R550": "550.144.03"}, "CVE-2099-1111", 9.8, "2"))
    again = driver_finding()
    assert (again.status, again.severity) == ("open", "critical")
    event = AuditEvent.objects.get(object_id=str(accepted.pk), action="outdated")
    assert event.after["change"]["severity"] == ["high", "critical"]
    assert event.after["change"]["new_cves"] == []
    assert again.reopened_note.endswith("(severity high -> critical)")


def test_what_the_acceptance_saw_or_less_leaves_it_accepted(accepted):
    imported(A)  # the same bulletin again
    # A CVE fixed for R535 only: gpu-ts-1 (R550) is not exposed to it.
    imported(driver_bulletin("OWN-C", {"R535": "535.247.01"}, "CVE-2099-3333", 9.8))
    # A revised down to medium, same fix.
    imported(driver_bulletin("OWN-A", {"R550": "550.144.03"}, "CVE-2099-1111", 5.5, "2"))
    again = driver_finding()
    assert (again.status, again.severity, again.reopened_note) == ("accepted", "medium", "")
    assert again.evidence["cves"] == ["CVE-2099-1111"]
    assert not AuditEvent.objects.filter(action="outdated").exists()
    # Back up to high: not above the severity the acceptance saw.
    imported(driver_bulletin("OWN-A", {"R550": "550.144.03"}, "CVE-2099-1111", 7.8, "3"))
    assert driver_finding().status == "accepted"


def test_accepting_again_covers_the_new_exposure(accepted, personas):
    imported(driver_bulletin("OWN-B", {"R550": "550.163.01"}, "CVE-2099-2222"))
    until = (timezone.now() + timedelta(days=30)).date().isoformat()
    lead = api_client(personas["security_lead"])
    lead.post(
        f"/api/v1/findings/{accepted.pk}/accept/",
        {"reason": "both fixes in the next window", "until": until},
        format="json",
    )
    posture_evaluate()
    again = driver_finding()
    assert again.status == "accepted"
    assert again.accepted_basis["cves"] == ["CVE-2099-1111", "CVE-2099-2222"]


def exposure(cves: list[str], fix: str | None, component: str = "driver", **more) -> dict:
    return {"component": component, "cves": cves, "fixed_version": fix, **more}


@pytest.mark.parametrize(
    ("then", "now", "severity", "beyond"),
    [
        ([exposure(["CVE-1"], "550.144.03")], [exposure(["CVE-1"], "550.144.3")], "high", ""),
        ([exposure(["CVE-1"], "550.163.01")], [exposure(["CVE-1"], "550.144.03")], "high", ""),
        ([exposure(["CVE-1", "CVE-2"], "1.2")], [exposure(["CVE-2"], "1.2")], "high", ""),
        ([exposure(["CVE-1"], "1.2")], [exposure(["CVE-1"], "1.2")], "low", ""),
        # an advisory naming no CVE counts by its id
        (
            [exposure([], "1.2", advisory_id="ADV-1")],
            [exposure([], "1.2", advisory_id="ADV-2")],
            "high",
            "new ADV-2",
        ),
        # a fix where the vendor gave none when accepted; a component not asked before
        (
            [exposure(["CVE-1"], None)],
            [exposure(["CVE-1"], "1.2")],
            "high",
            "driver fix none -> 1.2",
        ),
        (
            [exposure(["CVE-1"], "24.9.2", "gpu_operator")],
            [
                exposure(["CVE-1"], "24.9.2", "gpu_operator"),
                exposure(["CVE-1"], "0.17.4", "device_plugin"),
            ],
            "high",
            "device_plugin fix none -> 0.17.4",
        ),
        # a fix that cannot be ordered against the accepted one counts when it differs
        ([exposure(["CVE-1"], "r2")], [exposure(["CVE-1"], "r3")], "high", "driver fix r2 -> r3"),
        (
            [exposure(["CVE-1"], "1.2")],
            [exposure(["CVE-1"], "1.2")],
            "critical",
            "severity high -> critical",
        ),
    ],
)
def test_exposure_beyond(then, now, severity, beyond):
    basis = exposure_basis("STACK-001", {"exposures": then}, "high")
    change = exposure_beyond(basis, "STACK-001", {"exposures": now}, severity)
    assert (change["change"] if change else "") == beyond


def test_only_bulletin_checks_and_a_known_basis_are_judged():
    late = {"late_exposures": [exposure(["CVE-2"], "1.3")]}
    basis = exposure_basis("STACK-005", {"late_exposures": [exposure(["CVE-1"], "1.3")]}, "high")
    assert exposure_beyond(basis, "STACK-005", late, "high")["new_cves"] == ["CVE-2"]
    assert exposure_basis("DRIFT-003", late, "high") is None
    assert exposure_beyond(basis, "DRIFT-003", late, "high") is None
    assert exposure_beyond(None, "STACK-005", late, "critical") is None  # kept as before
