"""A tenant's use of a sharing mode (SHARE-004, DRIFT-004) has the tenant in its subject, so two
tenants' uses of one mode in one pool are two subjects a tool reading the API tells apart
(DESIGN §5). Findings stored under the old subject (the mode alone, the tenant only in the
key) are moved in place by migration posture.0017: the next score finds them, same id,
first_seen and acceptance, and opens no duplicate."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.apps import apps
from django.utils import timezone

from posture.finding_digests import subject_fingerprint
from posture.models import Finding
from posture.services import finding_accept, posture_evaluate
from tests.conftest import api_client

pytestmark = pytest.mark.django_db
MIGRATION = importlib.import_module("posture.migrations.0017_mode_use_subject_names_tenant")


def _subjects(client) -> list[tuple[str, str, str, list[str]]]:
    rows = client.get("/api/v1/findings/?check=SHARE-004&status=open").json()["results"]
    return sorted(
        (r["subject_kind"], r["subject_namespace"], r["subject_name"], r["tenants"]) for r in rows
    )


def test_each_tenants_use_of_a_mode_is_its_own_subject_in_the_api(small_world, personas):
    # alpha and beta time-slice one GPU, neither with an approval: two SHARE-004 findings,
    # each naming whose use it is where a tool keyed on the subject reads.
    subjects = _subjects(api_client(personas["security_lead"]))
    assert [(kind, name, tenants) for kind, _, name, tenants in subjects] == [
        ("SharingMode", "alpha/time_slicing", ["alpha"]),
        ("SharingMode", "beta/time_slicing", ["beta"]),
    ]
    assert len({subject[:3] for subject in subjects}) == 2


def _store_as_before(finding: Finding) -> None:
    """The finding as the old rule stored it: SharingMode <mode> in the pool, key the tenant."""
    mode = finding.subject_name.partition("/")[2]
    subject = (finding.subject_kind, finding.subject_namespace, mode, finding.key)
    finding.subject_name = mode
    finding.fingerprint = subject_fingerprint(finding.cluster.name, finding.check_id, subject)
    finding.save(update_fields=["subject_name", "fingerprint"])


def test_stored_findings_keep_their_id_first_seen_and_acceptance(small_world, personas):
    earlier = timezone.now() - timedelta(days=40)
    old = list(Finding.objects.filter(check_id="SHARE-004").order_by("key"))
    assert [f.key for f in old] == ["alpha", "beta"]
    for finding in old:
        _store_as_before(finding)
    Finding.objects.filter(check_id="SHARE-004").update(first_seen=earlier)
    until = timezone.now() + timedelta(days=30)
    lead, reason = personas["security_lead"], "lab nodes, no tenant data"
    finding_accept(finding=old[0], user=lead, reason=reason, until=until)
    MIGRATION.forward(apps, None)
    posture_evaluate()
    stored = Finding.objects.filter(check_id="SHARE-004")
    assert stored.count() == 2  # no duplicate opened under the new subject
    after = {f.key: f for f in stored}
    assert [after[f.key].pk for f in old] == [f.pk for f in old]
    assert {f.first_seen for f in after.values()} == {earlier}
    assert (after["alpha"].status, after["alpha"].accepted_until) == ("accepted", until)
    assert after["beta"].status == "open"
    assert after["beta"].subject_name == "beta/time_slicing"
    # Rerunning it changes nothing; backward gives the old subject back.
    MIGRATION.forward(apps, None)
    assert Finding.objects.get(pk=old[1].pk).subject_name == "beta/time_slicing"
    MIGRATION.backward(apps, None)
    assert Finding.objects.get(pk=old[1].pk).fingerprint == old[1].fingerprint
