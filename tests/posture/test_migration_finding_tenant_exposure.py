"""Migration posture.0023: FindingTenant.exposure, null on every existing link (the finding's
exposure, as before), no link lost. Run with Django's migration executor: back to 0022, a
finding and its links, forward."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.migration_steps import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

BEFORE = [("posture", "0022_finding_accepted_at")]
AFTER = [("posture", "0023_finding_tenant_exposure")]
T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def old_apps():
    apps = migrate(BEFORE)
    yield apps
    migrate_to_latest()


def test_existing_links_are_kept_with_a_null_exposure(old_apps):
    cluster = old_apps.get_model("inventory", "Cluster").objects.create(name="lab")
    trust = old_apps.get_model("tenants", "TrustClass").objects.get(slug="internal")
    Tenant = old_apps.get_model("tenants", "Tenant")  # noqa: N806
    tenants = [Tenant.objects.create(slug=s, name=s, trust_class=trust) for s in ("a", "b")]
    finding = old_apps.get_model("posture", "Finding").objects.create(
        check_id="K8S-008", cluster=cluster, subject_kind="ClusterRoleBinding",
        subject_name="admins", fingerprint="f", title="t", severity="high", exposure=7,
        first_seen=T, last_seen=T,
    )  # fmt: skip
    links = old_apps.get_model("posture", "FindingTenant")
    for tenant in tenants:
        links.objects.create(finding=finding, tenant=tenant)
    apps = migrate(AFTER)
    rows = apps.get_model("posture", "FindingTenant").objects.values_list(
        "finding_id", "tenant__slug", "exposure"
    )
    assert sorted(rows) == [(finding.pk, "a", None), (finding.pk, "b", None)]
    assert apps.get_model("posture", "Finding").objects.get().exposure == 7
